#pragma once
// Storage for large arrays that first touch places: aligned, untouched, huge-page backed.
#include <cstddef>
#include <memory>
#include <type_traits>

namespace hympi {

/// Every untouched array starts a 64-byte cache line at least.
inline constexpr std::size_t kUntouchedAlignment = 64;
/// Arrays of at least this many bytes are 2 MiB aligned and backed by transparent huge pages
/// where the kernel offers them (its `madvise` mode included).
inline constexpr std::size_t kHugePageMinBytes = std::size_t{8} << 20;

/// Untouched storage of `bytes` (see kHugePageMinBytes). Throws std::bad_alloc.
void* allocate_untouched(std::size_t bytes);
/// Releases storage from allocate_untouched(bytes).
void free_untouched(void* p, std::size_t bytes) noexcept;

/// Frees what allocate_untouched gave, knowing its size.
template <class T>
struct UntouchedDelete {
  std::size_t bytes = 0;
  void operator()(T* p) const noexcept { free_untouched(p, bytes); }
};

/// An array of trivial elements whose pages nobody has touched yet: the threads that first
/// write it decide its NUMA placement.
template <class T>
using UntouchedArray = std::unique_ptr<T[], UntouchedDelete<T>>;

/// `n` uninitialised elements of T.
template <class T>
UntouchedArray<T> make_untouched_array(std::size_t n) {
  static_assert(std::is_trivial_v<T>, "untouched arrays hold trivial types (raw memory)");
  return UntouchedArray<T>(static_cast<T*>(allocate_untouched(n * sizeof(T))), UntouchedDelete<T>{n * sizeof(T)});
}

}  // namespace hympi
