#include "hympi/core/memory.hpp"

#include <sys/mman.h>

#include <new>

namespace hympi {

namespace {

constexpr std::size_t kHugePageBytes = std::size_t{2} << 20;

std::align_val_t alignment_for(std::size_t bytes) {
  return std::align_val_t{bytes >= kHugePageMinBytes ? kHugePageBytes : kUntouchedAlignment};
}

}  // namespace

void* allocate_untouched(std::size_t bytes) {
  void* p = ::operator new[](bytes, alignment_for(bytes));
#ifdef MADV_HUGEPAGE
  // The stencils walk 12 rows in 4 planes at once, a plane apart in memory, so with 4 KiB pages
  // every step needs new TLB entries; huge pages made the memory-bound 256^3 SpMV 11-17 % faster
  // on a Zen 3 VM whose kernel grants them only on request (docs/performance.md). STREAM's
  // arrays get them too, so that the bound is measured on the same pages. Advice comes before
  // the first touch, which still decides the NUMA domain (per 2 MiB page). Failure only means
  // small pages, so it is not checked.
  if (bytes >= kHugePageMinBytes) (void)madvise(p, bytes, MADV_HUGEPAGE);
#endif
  return p;
}

void free_untouched(void* p, std::size_t bytes) noexcept { ::operator delete[](p, alignment_for(bytes)); }

}  // namespace hympi
