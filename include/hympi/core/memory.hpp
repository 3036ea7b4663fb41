#pragma once
// Storage for large arrays that first touch places: aligned, untouched, huge-page backed.
#include <cstddef>
#include <memory>
#include <new>
#include <type_traits>
#include <vector>

namespace hympi {

/// Bytes of a cache line on the CPUs we run on (x86-64, and the 64-byte lines of Arm's server cores).
inline constexpr std::size_t kCacheLineBytes = 64;
/// Every untouched array starts a cache line at least.
inline constexpr std::size_t kUntouchedAlignment = kCacheLineBytes;
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

/// Storage that starts a cache line, for arrays written with streaming stores: those go past the caches
/// in one write only for whole, aligned lines. Unlike allocate_untouched, it asks for no huge pages.
template <class T>
struct LineAlignedAllocator {
  using value_type = T;
  LineAlignedAllocator() = default;
  /// Implicit, as the allocator requirements' rebinding copies expect.
  template <class U>
  LineAlignedAllocator(const LineAlignedAllocator<U>& /*other*/) noexcept {}
  [[nodiscard]] T* allocate(std::size_t n) {
    return static_cast<T*>(::operator new(n * sizeof(T), std::align_val_t{kCacheLineBytes}));
  }
  void deallocate(T* p, std::size_t /*n*/) noexcept { ::operator delete(p, std::align_val_t{kCacheLineBytes}); }
  friend bool operator==(const LineAlignedAllocator&, const LineAlignedAllocator&) = default;
};

/// A vector whose elements start a cache line.
template <class T>
using LineAlignedVector = std::vector<T, LineAlignedAllocator<T>>;

}  // namespace hympi
