#include "hympi/spmv3d/operator.hpp"

#include "hympi/spmv3d/stencil.hpp"

namespace hympi {

double spmv3d_nonzeros(const std::array<long, 3>& global) {
  double nnz = 1;
  for (long n : global) nnz *= static_cast<double>(3 * n - 2);
  return nnz;
}

Operator27::Operator27(const CartDecomposition& cart, const Spmv3dOptions& options)
    : cart_(cart),
      ghost_(options.ghost),
      op_(options.op),
      driver_(cart, Grid3D<double>(cart.local_box(), options.ghost), HaloPattern::full, 1, options.overlap,
              options.op == SpmvOperator::csr ? UntiledRows::single_planes : UntiledRows::plane_pairs) {
  if (op_ == SpmvOperator::csr) csr_ = Csr27(cart.local_box(), cart.global(), ghost_);
  // What a product streams past y's lines per rank: y, and the matrix the CSR product reads between two rows of y.
  const double swept = 8.0 * static_cast<double>(cart.local_box().count()) + (op_ == SpmvOperator::csr ? csr_.bytes() : 0.0);
  const bool can = op_ == SpmvOperator::csr ? Csr27::can_stream() : stencil27_can_stream();
  streaming_ = can && (options.streaming_stores == StreamingStores::on ||
                       (options.streaming_stores == StreamingStores::automatic && swept >= kSpmv3dStreamingBytes));
}

double Operator27::bytes_per_apply() const {
  // Bytes as moved through memory, so that the product's GB/s compares with a triad's bytes as moved
  // (triad_moved_gbs). The matrix (values 8 B and column index 4 B per nonzero, a row start per row) is read
  // once: it is far larger than the caches wherever a bound matters. x is read once over the points its columns
  // reach: the owned ones and the ghosts within one layer inside the global grid (the halo's; wider ghost layers
  // and the walls' are never read). Once, because the 27-point reuse spans three planes of x, which stay in L2
  // while the product sweeps them. The exchange's own copies of the halo are communication (t_comm), not counted:
  // at 96^3 a face is 0.03 % of the product's bytes. y is written once, and read before (write-allocate)
  // unless the product streams its stores past the caches.
  const Box3& box = cart_.local_box();
  Box3 reached = box;
  for (int d = 0; d < 3; ++d) {
    --reached.low[d];
    ++reached.high[d];
  }
  reached = reached.intersect(Box3{{0, 0, 0}, cart_.global()});
  const double y_bytes = (streaming_ ? 8.0 : 16.0) * static_cast<double>(box.count());
  return 8.0 * static_cast<double>(reached.count()) + y_bytes + (op_ == SpmvOperator::csr ? csr_.bytes() : 0.0);
}

OverlapTimes Operator27::apply(Grid3D<double>& x, Grid3D<double>& y) {
  const double* xp = x.data().data();
  double* yp = y.data().data();
  if (op_ == SpmvOperator::stencil) {
    const bool streaming = streaming_;
    const GridIndexing& indexing = x.indexing();
    return driver_.apply(x, [xp, yp, &indexing, streaming](const Box3& b) { stencil27_apply(xp, yp, indexing, b, streaming); });
  }
  const Csr27& csr = csr_;
  const bool streaming = streaming_;
  return driver_.apply(x, [xp, yp, &csr, streaming](const Box3& b) { csr.apply(xp, yp, b, streaming); });
}

}  // namespace hympi
