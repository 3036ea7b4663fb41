#include "hympi/npb/zone_exchange.hpp"

#include "hympi/core/error.hpp"

#include <algorithm>
#include <array>

namespace hympi {

namespace {
constexpr std::array<ZoneFace, 4> kFaces{ZoneFace::west, ZoneFace::east, ZoneFace::south, ZoneFace::north};
constexpr int kTag = 4242;
}  // namespace

int partition_rank(const ZonePartition& partition, MPI_Comm comm) {
  int rank = 0;
  int size = 0;
  HYMPI_MPI(MPI_Comm_rank(comm, &rank));
  HYMPI_MPI(MPI_Comm_size(comm, &size));
  if (size != partition.num_ranks())
    throw InvalidArgument("communicator has " + std::to_string(size) + " ranks but the partition " +
                          std::to_string(partition.num_ranks()));
  return rank;
}

ZoneExchange::ZoneExchange(const ZoneGrid& grid, const ZonePartition& partition, MPI_Comm comm, int ncomp)
    : grid_(grid), comm_(comm), rank_(partition_rank(partition, comm)), ncomp_(ncomp) {
  if (ncomp < 1) throw InvalidArgument("components per point " + std::to_string(ncomp) + " must be >= 1");
  local_index_.assign(static_cast<std::size_t>(grid.num_zones()), -1);
  const auto& mine = partition.zones_of(rank_);
  for (std::size_t i = 0; i < mine.size(); ++i) local_index_[mine[i]] = static_cast<int>(i);

  for (int peer = 0; peer < partition.num_ranks(); ++peer) {
    if (peer == rank_) continue;
    Link link{peer, {}, {}, {}, {}};
    // Both sides list segments in the sender's zone order, so no headers travel with the data.
    for (int z : mine) {
      for (ZoneFace f : kFaces) {
        if (partition.owner(grid.zone(z).next(f)) == peer) link.send.push_back({z, f, true});
      }
    }
    for (int z : partition.zones_of(peer)) {
      for (ZoneFace f : kFaces) {
        const int target = grid.zone(z).next(f);
        if (partition.owner(target) == rank_) link.recv.push_back({target, opposite(f), false});
      }
    }
    if (link.send.empty() && link.recv.empty()) continue;
    std::size_t ns = 0;
    std::size_t nr = 0;
    for (const auto& s : link.send) ns += face_doubles(s.zone, s.face);
    for (const auto& s : link.recv) nr += face_doubles(s.zone, s.face);
    link.send_buf.resize(ns);
    link.recv_buf.resize(nr);
    links_.push_back(std::move(link));
  }
  for (int z : mine) {
    for (ZoneFace f : kFaces) {
      if (partition.owner(grid.zone(z).next(f)) == rank_) {
        intra_.emplace_back(z, f);
        copied_ += face_doubles(z, f);
      }
    }
  }
  // Buffers are final now, so the persistent requests can point into them.
  for (Link& l : links_) {
    if (!l.recv_buf.empty()) receives_.add_receive(l.recv_buf, l.peer, kTag, comm_);
    if (!l.send_buf.empty()) sends_.add_send(l.send_buf, l.peer, kTag, comm_);
  }
}

std::size_t ZoneExchange::face_doubles(int zone, ZoneFace face) const {
  const Zone& z = grid_.zone(zone);
  const bool xface = face == ZoneFace::west || face == ZoneFace::east;
  return static_cast<std::size_t>(xface ? z.ny - 2 : z.nx - 2) * (z.nz - 2) * ncomp_;
}

std::size_t ZoneExchange::doubles_sent() const noexcept {
  std::size_t n = 0;
  for (const auto& l : links_) n += l.send_buf.size();
  return n;
}

void ZoneExchange::copy_face(double* field, int zone, ZoneFace face, bool out, double* buf, bool to_buf) const {
  const Zone& z = grid_.zone(zone);
  const std::size_t pitch = static_cast<std::size_t>(padded_nx(z.nx)) * ncomp_;
  const std::size_t plane = pitch * z.ny;
  const int nc = ncomp_;
  if (face == ZoneFace::west || face == ZoneFace::east) {
    int i = 0;
    if (face == ZoneFace::west) i = out ? 1 : 0;
    else i = out ? z.nx - 2 : z.nx - 1;
    const int rows = z.ny - 2;
#pragma omp parallel for schedule(static) if (rows * (z.nz - 2) > 4096)
    for (int k = 1; k < z.nz - 1; ++k) {
      for (int j = 1; j < z.ny - 1; ++j) {
        double* p = field + k * plane + j * pitch + static_cast<std::size_t>(i) * nc;
        double* q = buf + (static_cast<std::size_t>(k - 1) * rows + (j - 1)) * nc;
        if (to_buf) std::copy(p, p + nc, q);
        else std::copy(q, q + nc, p);
      }
    }
  } else {
    int j = 0;
    if (face == ZoneFace::south) j = out ? 1 : 0;
    else j = out ? z.ny - 2 : z.ny - 1;
    const int cols = z.nx - 2;
    const std::size_t run = static_cast<std::size_t>(cols) * nc;
#pragma omp parallel for schedule(static) if (cols * (z.nz - 2) > 4096)
    for (int k = 1; k < z.nz - 1; ++k) {
      double* p = field + k * plane + j * pitch + nc;
      double* q = buf + static_cast<std::size_t>(k - 1) * run;
      if (to_buf) std::copy(p, p + run, q);
      else std::copy(q, q + run, p);
    }
  }
}

void ZoneExchange::begin(std::span<double* const> fields) {
  auto field_of = [&](int zone) {
    const int li = local_index_[zone];
    if (li < 0 || li >= static_cast<int>(fields.size())) {
      throw InvalidArgument("no field passed for zone " + std::to_string(zone));
    }
    return fields[static_cast<std::size_t>(li)];
  };
  // Checked before packing: the send buffers of an active exchange are still in flight. (Only
  // the receives are active when a previous begin() threw while packing.)
  if (receives_.active() || sends_.active()) throw Error("ZoneExchange::begin called twice without end");
  receives_.start();
  for (auto& l : links_) {
    if (l.send_buf.empty()) continue;
    double* pos = l.send_buf.data();
    for (const auto& s : l.send) {
      copy_face(field_of(s.zone), s.zone, s.face, true, pos, true);
      pos += face_doubles(s.zone, s.face);
    }
  }
  sends_.start();
  // Intra-rank faces go straight from the source zone's interior plane to the target's boundary
  // plane through one face-sized staging buffer; since sources are interior and targets boundary
  // planes, the order of the copies does not matter, even for a zone that is its own neighbour.
  std::vector<double> stage;
  for (const auto& [zone, face] : intra_) {
    const int target = grid_.zone(zone).next(face);
    stage.resize(face_doubles(zone, face));
    copy_face(field_of(zone), zone, face, true, stage.data(), true);
    copy_face(field_of(target), target, opposite(face), false, stage.data(), false);
  }
}

void ZoneExchange::end(std::span<double* const> fields) {
  if (!sends_.active()) throw Error("ZoneExchange::end called without begin");
  receives_.wait();
  sends_.wait();
  for (auto& l : links_) {
    double* pos = l.recv_buf.data();
    for (const auto& s : l.recv) {
      const int li = local_index_[s.zone];
      copy_face(fields[static_cast<std::size_t>(li)], s.zone, s.face, false, pos, false);
      pos += face_doubles(s.zone, s.face);
    }
  }
}

}  // namespace hympi
