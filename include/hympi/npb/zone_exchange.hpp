#pragma once
// Zone boundary exchange (NPB-MZ exch_qbc): every zone sends its first interior plane next to each
// x/y face to the neighbour across it, which stores it in its boundary plane. Zones on the same
// rank copy directly; zones on other ranks go in one aggregated message per rank pair.
#include "hympi/core/requests.hpp"
#include "hympi/npb/zone_grid.hpp"
#include "hympi/npb/zone_partition.hpp"

#include <mpi.h>

#include <cstddef>
#include <span>
#include <vector>

namespace hympi {

/// This process's rank in `comm`, the rank `partition` numbers it by; throws InvalidArgument when `comm` does not
/// have partition.num_ranks() ranks and MpiError when an MPI call fails.
[[nodiscard]] int partition_rank(const ZonePartition& partition, MPI_Comm comm);

/// Exchanges zone boundary planes. Fields are stored per zone as [nz][ny][padded_nx(nx)][ncomp]
/// doubles, one pointer per zone of this rank in partition.zones_of(rank) order.
class ZoneExchange {
 public:
  /// Plans the copies and messages of this rank; `comm` must have partition.num_ranks() ranks and
  /// `grid` must outlive the exchange.
  /// Throws InvalidArgument on a size mismatch and MpiError when an MPI call fails.
  ZoneExchange(const ZoneGrid& grid, const ZonePartition& partition, MPI_Comm comm, int ncomp = 5);
  ZoneExchange(const ZoneExchange&) = delete;
  ZoneExchange& operator=(const ZoneExchange&) = delete;

  /// Starts the receives, packs and starts the inter-rank sends, then does the intra-rank copies.
  /// Throws InvalidArgument when a zone of this rank has no field, Error when the previous
  /// begin() has not been ended, MpiError when MPI fails.
  void begin(std::span<double* const> fields);
  /// Waits for the messages and unpacks them into the receiving zones' boundary planes.
  /// Throws Error without a begin(), MpiError when MPI fails.
  void end(std::span<double* const> fields);
  /// begin() then end().
  void exchange(std::span<double* const> fields) {
    begin(fields);
    end(fields);
  }

  /// Doubles this rank sends per exchange to other ranks.
  [[nodiscard]] std::size_t doubles_sent() const noexcept;
  /// Doubles copied between zones of this rank per exchange.
  [[nodiscard]] std::size_t doubles_copied() const noexcept { return copied_; }
  /// Number of ranks this rank exchanges messages with.
  [[nodiscard]] int peers() const noexcept { return static_cast<int>(links_.size()); }

 private:
  // One face plane travelling from a zone of the sender to the neighbour's boundary.
  struct Segment {
    int zone;  // global id of the zone the data lives in (source on send, target on receive)
    ZoneFace face;
    bool out;  // true: read interior plane; false: write boundary plane
  };
  struct Link {
    int peer;
    std::vector<Segment> send;
    std::vector<Segment> recv;
    std::vector<double> send_buf;
    std::vector<double> recv_buf;
  };

  [[nodiscard]] std::size_t face_doubles(int zone, ZoneFace face) const;
  void copy_face(double* field, int zone, ZoneFace face, bool out, double* buf, bool to_buf) const;

  const ZoneGrid& grid_;
  MPI_Comm comm_;
  int rank_;
  int ncomp_;
  std::vector<int> local_index_;  // global zone id -> position in fields, -1 if not ours
  std::vector<Link> links_;
  std::vector<std::pair<int, ZoneFace>> intra_;  // (source zone, face) copied within this rank
  // After links_, whose buffers they point into: destroyed first. Receives are started before
  // the sends are packed, so peers' messages can land while this rank packs.
  PersistentRequests receives_;
  PersistentRequests sends_;
  std::size_t copied_ = 0;
};

}  // namespace hympi
