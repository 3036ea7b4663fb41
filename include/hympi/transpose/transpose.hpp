#pragma once
// Plane <-> pencil global transpose of a real 3D array (issue 16; the three sub-steps of Sillero et al.,
// "Hybrid OpenMP-MPI turbulent boundary layer code over 32k cores", §2.3: pack with a realignment and an optional
// cast to float, one exchange, a cache-blocked local transpose).
#include <mpi.h>

#include <array>
#include <cstddef>
#include <cstdint>
#include <nlohmann/json.hpp>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "hympi/core/comm.hpp"
#include "hympi/core/enum_names.hpp"
#include "hympi/core/memory.hpp"

namespace hympi::transpose {

/// How the blocks travel: one MPI_Alltoallv, one MPI_Alltoall with every block padded to the largest,
/// or pairwise point-to-point (MPI_Sendrecv, one partner per step: rank XOR step when the rank count is a
/// power of two, rank +- step otherwise).
enum class TransposeExchange { alltoallv, alltoall, pairwise };
/// The precision of the data on the wire: compute stays in double, single halves the bytes sent.
enum class WirePrecision { double_precision, single_precision };

contract::TransposeExchangeNames<TransposeExchange> enum_names(TransposeExchange);
contract::WirePrecisionNames<WirePrecision> enum_names(WirePrecision);

using hympi::to_string;  // "alltoallv", "alltoall", "pairwise"; "double", "single" (found by ADL)

/// Tile of the local blocked transpose: `rows` along x, `cols` along the (z, y) lines; 0 x 0 = automatic
/// (measured once per shape and thread count on first use, then cached in the Transpose).
struct TileShape {
  int rows = 0, cols = 0;
  /// Write the output with streaming (non-temporal) stores, whole cache lines past the caches, where the
  /// CPU has AVX and a written row starts a line; through the caches otherwise.
  bool streaming = false;
  /// Whether this asks for the automatic choice.
  [[nodiscard]] bool automatic() const noexcept { return rows == 0 && cols == 0; }
  friend bool operator==(const TileShape&, const TileShape&) = default;
};

/// Parses "RxC" (both >= 1), "RxC:streaming" or "auto"; throws InvalidArgument naming the text otherwise.
[[nodiscard]] TileShape parse_tile_shape(std::string_view text);
/// The text parse_tile_shape reads back into `tile`.
[[nodiscard]] std::string to_string(const TileShape& tile);

/// Options of one Transpose; printable into HYMPI_RESULT.
struct TransposeOptions {
  TransposeExchange exchange = TransposeExchange::alltoallv;
  WirePrecision wire = WirePrecision::double_precision;
  TileShape tile{};       ///< local blocked transpose tile, planes -> pencils; 0 x 0 = automatic
  int pack_threads = 0;   ///< OpenMP threads of the pack and local transpose steps; 0 = omp_get_max_threads()
  bool tile_auto = false;  ///< set by Transpose once it has measured an automatic tile into `tile` or `backward_tile`
  /// Local blocked transpose tile, pencils -> planes; 0 x 0 = automatic. Each direction has its own: the two read
  /// and write the same arrays the other way round, and the best tiles differed (a tall tile writing the pencils
  /// with streaming stores took twice a square one's time reading them back, on an Intel Xeon VM).
  TileShape backward_tile{};
  /// Sets both directions' tiles to `both`: what one tile option (hympi-pencil --tile) means.
  void set_tiles(TileShape both) noexcept { tile = backward_tile = both; }
  /// {"exchange","wire","tile","backward_tile","tile_auto":bool,"pack_threads"}, each tile as to_string
  /// writes it; tile_auto is true for an automatic or a measured tile. Never fails.
  [[nodiscard]] nlohmann::json to_json() const;
  /// Throws InvalidArgument naming the first bad value (negative threads, a tile with one side 0 or < 0).
  void validate() const;
};

/// A half-open range [begin, end) of indices.
struct Extent {
  long begin = 0, end = 0;
  /// end - begin.
  [[nodiscard]] long size() const noexcept { return end - begin; }
  friend bool operator==(const Extent&, const Extent&) = default;
};

/// Block split of `n` items over `parts` parts, the remainder to the first parts: the extent of part
/// `index`. Throws InvalidArgument when parts < 1 or index is outside [0, parts).
[[nodiscard]] Extent block_extent(long n, int parts, int index);

/// Seconds accumulated in each step of every transpose so far (both directions) and what they sent.
struct TransposeTimes {
  double pack_s = 0;      ///< realignment + cast (planes -> pencils) or local transpose (pencils -> planes)
  double exchange_s = 0;  ///< the MPI exchange
  double unpack_s = 0;    ///< local transpose (planes -> pencils) or realignment + cast (pencils -> planes)
  std::uint64_t bytes_sent = 0;  ///< bytes handed to MPI for other ranks (alltoall: padding included)
  long count = 0;                ///< transposes done (each direction counts one)
  /// pack_s + exchange_s + unpack_s.
  [[nodiscard]] double total_s() const noexcept { return pack_s + exchange_s + unpack_s; }
  /// Every field plus "total_s"; never fails.
  [[nodiscard]] nlohmann::json to_json() const;
};

/// A real 3D array nz x ny x nx (z fastest in planes) distributed as planes or pencils over `comm`.
/// Planes: rank r owns x in planes_x(r) (block split of nx, remainder to the first ranks), local index
///         z + nz*(y + ny*(x - x.begin)).  nz counts doubles: a spectral field with K complex modes
///         is nz = 2K (re, im interleaved), so the transpose moves any real array.
/// Pencils: the (z, y) lines, line index l = z + nz*y, block split of nz*ny over ranks (remainder to the
///         first ranks); local index x + nx*(l - lines.begin).
/// Both directions are collective over `comm` (a duplicate the object owns) and must be called from
/// outside any OpenMP region: they open their own with pack_threads threads.
class Transpose {
 public:
  /// n = {nx, ny, nz}. Collective. Throws InvalidArgument naming the value when an extent is < 1, nx is
  /// smaller than the number of ranks, ny*nz is, a block is too large for MPI's int counts, or an
  /// option is bad (TransposeOptions::validate); MpiError when duplicating `comm` fails.
  Transpose(std::array<long, 3> n, MPI_Comm comm, const TransposeOptions& options);

  /// The checks of the constructor that need no communicator, for `ranks` ranks: so an app can refuse a grid
  /// before MPI starts (its --validate-ranks) with the words the constructor would use. Throws InvalidArgument
  /// when an extent is < 1, nx or ny*nz is smaller than `ranks`, or a block, an offset or a buffer of the
  /// exchange is too large for MPI's int counts.
  static void check_extents(std::array<long, 3> n, int ranks, TransposeExchange exchange);

  /// x planes this rank owns.
  [[nodiscard]] Extent planes_x() const noexcept { return planes_x(rank_); }
  /// x planes rank `rank` owns; throws InvalidArgument for a rank outside the communicator.
  [[nodiscard]] Extent planes_x(int rank) const { return block_extent(n_[0], ranks_, rank); }
  /// (z, y) lines this rank owns as pencils.
  [[nodiscard]] Extent pencil_lines() const noexcept { return pencil_lines(rank_); }
  /// (z, y) lines rank `rank` owns; throws InvalidArgument for a rank outside the communicator.
  [[nodiscard]] Extent pencil_lines(int rank) const { return block_extent(lines_, ranks_, rank); }
  /// Local doubles of the planes layout (planes_x().size() * ny * nz).
  [[nodiscard]] std::size_t plane_size() const noexcept;
  /// Local doubles of the pencils layout (pencil_lines().size() * nx).
  [[nodiscard]] std::size_t pencil_size() const noexcept;
  /// {nx, ny, nz}.
  [[nodiscard]] const std::array<long, 3>& shape() const noexcept { return n_; }
  /// The communicator the transposes run on (the owned duplicate).
  [[nodiscard]] MPI_Comm comm() const noexcept { return comm_.get(); }

  /// Planes -> pencils; collective. Throws InvalidArgument when a span's size is not plane_size() /
  /// pencil_size() (checked before any communication), MpiError when MPI fails.
  void planes_to_pencils(std::span<const double> planes, std::span<double> pencils);
  /// Pencils -> planes; collective. Throws as planes_to_pencils.
  void pencils_to_planes(std::span<const double> pencils, std::span<double> planes);

  /// The options, with each automatic tile resolved once it has been measured (the first transpose in its
  /// direction) and pack_threads resolved at construction.
  [[nodiscard]] const TransposeOptions& options() const noexcept { return options_; }
  /// Seconds and bytes accumulated since construction or the last reset_times().
  [[nodiscard]] TransposeTimes times() const noexcept { return times_; }
  /// Starts the accumulation of times() again (e.g. after a warm-up).
  void reset_times() noexcept { times_ = {}; }

 private:
  template <class T>
  void forward(std::span<const double> planes, std::span<double> pencils);
  template <class T>
  void backward(std::span<const double> pencils, std::span<double> planes);
  template <class T>
  void exchange(const T* send, T* recv, bool forward);
  template <class T>
  struct Buffers {
    T *send, *recv, *own;
  };
  template <class T>
  Buffers<T> buffers() noexcept;
  /// Measures the candidates with `run` and sets `tile` (one direction's) to the best.
  template <class Run>
  void choose_tile(const Run& run, TileShape& tile);
  void check_sizes(std::size_t planes, std::size_t pencils, const char* direction) const;

  std::array<long, 3> n_;
  long lines_;  ///< ny * nz
  Comm comm_;
  int rank_ = 0, ranks_ = 1;
  TransposeOptions options_;
  TransposeTimes times_;
  // Per peer rank, in elements of the wire type: the forward direction sends send_counts_[d] starting
  // at send_displs_[d]; the backward direction swaps the roles of the two tables.
  std::vector<int> send_counts_, send_displs_, recv_counts_, recv_displs_;
  std::vector<Extent> peer_lines_;       ///< pencil_lines(r) of every rank r
  int padded_block_ = 0;                 ///< alltoall: every block's size, the largest block
  std::vector<std::size_t> row_offset_;  ///< offset of x row in the receive buffer (forward) layout
  // Starting cache lines, so that the local transpose's streaming stores write whole lines into them.
  LineAlignedVector<double> send_d_, recv_d_;  // wire = double
  // wire = single; own_f_: this rank's own block, rounded to float like the blocks that travel (with a
  // double wire the local transpose reads and writes the own block in the planes).
  LineAlignedVector<float> send_f_, recv_f_, own_f_;
};

}  // namespace hympi::transpose
