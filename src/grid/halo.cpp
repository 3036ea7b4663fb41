#include "hympi/grid/halo.hpp"

#include <omp.h>

#include "hympi/core/error.hpp"

namespace hympi {

namespace {

int direction_id(const std::array<int, 3>& o) { return (o[0] + 1) + 3 * (o[1] + 1) + 9 * (o[2] + 1); }

/// Copies row (j, k) of `box` between the grid and its buffer, x fastest.
template <bool ToBuffer>
inline void copy_row(double* base, const Grid3D<double>& grid, const Box3& box, double* buf, long j, long k) {
  const auto n = box.size();
  double* row = base + grid.index(box.low[0], box.low[1] + j, box.low[2] + k);
  double* b = buf + (k * n[1] + j) * n[0];
  for (long i = 0; i < n[0]; ++i) {
    if constexpr (ToBuffer)
      b[i] = row[i];
    else
      row[i] = b[i];
  }
}

/// Copies every link's box between the grid and the link's buffer. Outside a parallel region
/// all links share one team (one fork/join per exchange, not one per neighbour: up to 26);
/// inside one (a communication thread) the calling thread copies alone.
template <bool ToBuffer, class Links>
void copy_links(Grid3D<double>& grid, Links& links) {
  if (links.empty()) return;
  double* base = grid.data().data();
  if (omp_in_parallel() != 0) {
    for (auto& link : links) {
      const Box3& box = ToBuffer ? link.send_box : link.recv_box;
      double* buf = ToBuffer ? link.send_buffer.data() : link.recv_buffer.data();
      const auto n = box.size();
      for (long k = 0; k < n[2]; ++k)
        for (long j = 0; j < n[1]; ++j) copy_row<ToBuffer>(base, grid, box, buf, j, k);
    }
    return;
  }
#pragma omp parallel
  for (auto& link : links) {
    const Box3& box = ToBuffer ? link.send_box : link.recv_box;
    double* buf = ToBuffer ? link.send_buffer.data() : link.recv_buffer.data();
    const auto n = box.size();
    // Links touch disjoint memory, so threads move on to the next link without waiting.
#pragma omp for collapse(2) schedule(static) nowait
    for (long k = 0; k < n[2]; ++k)
      for (long j = 0; j < n[1]; ++j) copy_row<ToBuffer>(base, grid, box, buf, j, k);
  }
}

}  // namespace

HaloExchange::HaloExchange(const CartDecomposition& cart, const Grid3D<double>& grid, HaloPattern pattern) {
  const int g = grid.ghost();
  const auto min_extent = cart.min_local_extent();
  for (int d = 0; d < 3; ++d)
    if (g < 1 || g > min_extent[d])
      throw InvalidArgument("ghost width " + std::to_string(g) + " must be between 1 and the smallest block extent " +
                            std::to_string(min_extent[d]) + " on axis " + std::to_string(d));
  const auto n = grid.extent();
  for (int oz = -1; oz <= 1; ++oz)
    for (int oy = -1; oy <= 1; ++oy)
      for (int ox = -1; ox <= 1; ++ox) {
        const std::array<int, 3> o{ox, oy, oz};
        const int nonzero = (ox != 0) + (oy != 0) + (oz != 0);
        if (nonzero == 0 || (pattern == HaloPattern::faces && nonzero != 1)) continue;
        const int peer = cart.neighbour(o);
        if (peer == MPI_PROC_NULL) continue;
        Link link{peer, o, {}, {}, {}, {}};
        for (int d = 0; d < 3; ++d) {
          const long lo_send = o[d] < 0 ? 0 : (o[d] > 0 ? n[d] - g : 0);
          const long hi_send = o[d] < 0 ? g : n[d];
          const long lo_recv = o[d] < 0 ? -g : (o[d] > 0 ? n[d] : 0);
          const long hi_recv = o[d] < 0 ? 0 : (o[d] > 0 ? n[d] + g : n[d]);
          link.send_box.low[d] = lo_send;
          link.send_box.high[d] = hi_send;
          link.recv_box.low[d] = lo_recv;
          link.recv_box.high[d] = hi_recv;
        }
        link.send_buffer.resize(static_cast<std::size_t>(link.send_box.count()));
        link.recv_buffer.resize(static_cast<std::size_t>(link.recv_box.count()));
        links_.push_back(std::move(link));
      }
  // Buffers are final now, so the persistent requests can point into them.
  for (Link& link : links_) {
    // The peer at o sends us what it sends in direction -o: tag by the sender's direction.
    const std::array<int, 3> back{-link.offset[0], -link.offset[1], -link.offset[2]};
    requests_.add_receive(link.recv_buffer, link.peer, direction_id(back), cart.comm());
    requests_.add_send(link.send_buffer, link.peer, direction_id(link.offset), cart.comm());
  }
}

void HaloExchange::begin(Grid3D<double>& grid) {
  // Checked before packing: the send buffers of an active exchange are still in flight.
  if (requests_.active()) throw Error("HaloExchange::begin called twice without end");
  copy_links<true>(grid, links_);
  requests_.start();
}

void HaloExchange::end(Grid3D<double>& grid) {
  if (!requests_.active()) throw Error("HaloExchange::end called without begin");
  requests_.wait();
  copy_links<false>(grid, links_);
}

std::size_t HaloExchange::bytes_sent() const {
  std::size_t bytes = 0;
  for (const Link& link : links_) bytes += link.send_buffer.size() * sizeof(double);
  return bytes;
}

}  // namespace hympi
