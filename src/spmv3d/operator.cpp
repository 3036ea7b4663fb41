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
      driver_(cart, Grid3D<double>(cart.local_box(), options.ghost), HaloPattern::full, 1, options.overlap) {
  const double y_bytes = 8.0 * static_cast<double>(cart.local_box().count());
  streaming_ = stencil27_can_stream() &&
               (options.streaming_stores == StreamingStores::on ||
                (options.streaming_stores == StreamingStores::automatic && y_bytes >= kSpmv3dStreamingBytes));
  if (op_ == SpmvOperator::csr) csr_ = Csr27(cart.local_box(), cart.global(), ghost_);
}

double Operator27::bytes_per_apply() const {
  const double points = static_cast<double>(cart_.local_box().count());
  // x read and y written once (write-allocate not counted, as in STREAM).
  return 16.0 * points + (op_ == SpmvOperator::csr ? csr_.bytes() : 0.0);
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
  return driver_.apply(x, [xp, yp, &csr](const Box3& b) { csr.apply(xp, yp, b); });
}

}  // namespace hympi
