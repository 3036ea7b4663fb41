#pragma once
// A C library's handle owned through std::unique_ptr, with the library's free function as the deleter, so that
// the handle's type gets its moves and destructor from unique_ptr instead of writing them out again.
#include <memory>
#include <type_traits>

namespace hympi {

/// Calls `Free` on the handle (unique_ptr never passes a null one).
template <auto Free>
struct FreeWith {
  template <class T>
  void operator()(T* handle) const noexcept {
    Free(handle);
  }
};

/// Owns the handle `Pointer` (e.g. hwloc_bitmap_t) that `Free` releases.
template <class Pointer, auto Free>
using Owned = std::unique_ptr<std::remove_pointer_t<Pointer>, FreeWith<Free>>;

}  // namespace hympi
