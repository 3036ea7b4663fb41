#pragma once
// The matrix-free 27-point operator's row kernels (hand-vectorised for AVX-512 and AVX2 + FMA).
#include "hympi/grid/box.hpp"
#include "hympi/grid/grid3d.hpp"

namespace hympi {

/// y = A x for HPCG's operator (27 x - the 3x3x3 box sum of x, i.e. 26 on the diagonal and -1
/// off it) on the points of `box` (local coordinates) of two vectors with `indexing`; x's ghosts
/// must hold the neighbours' values (0 past the global grid's walls). Each value is one fixed
/// expression of x, the same bits for every box, instruction set and indexing. `streaming`
/// writes y with non-temporal stores where rows start on a cache line and fences after them;
/// never fails.
void stencil27_apply(const double* x, double* y, const GridIndexing& indexing, const Box3& box, bool streaming);

/// Whether stencil27_apply can stream stores in this build (it has vector kernels); never fails.
bool stencil27_can_stream() noexcept;

}  // namespace hympi
