#pragma once
// Collective parallel HDF5 I/O of distributed fields, in one file with the global layout.
//
// Every dataset of a 3D field has the dimensions (z, y, x) of the global grid (x fastest, as
// h5py, h5dump and ParaView read it), plus a trailing component axis for fields with several
// values per point. Each rank writes or reads the hyperslab of its block (ghosts excluded), so a
// file written by one decomposition reads back into any other. Every dataset carries an
// order-independent checksum of its values by global index ("hympi_checksum"), verified whenever
// a read covers the whole dataset.
#include <mpi.h>

#include <array>
#include <cstddef>
#include <cstdint>
#include <memory>
#include <nlohmann/json.hpp>
#include <span>
#include <string>
#include <utility>
#include <vector>

#include "hympi/core/error.hpp"
#include "hympi/grid/box.hpp"
#include "hympi/grid/grid3d.hpp"

namespace hympi::h5 {

/// An HDF5 or file-system operation failed (disk full, unwritable directory, ...): exit code 1.
/// The message names the file (and the dataset, where there is one) and what HDF5 or the system said.
class IoError : public Error {
 public:
  using Error::Error;
};

/// A file is not what was asked for (missing, truncated, corrupted, another app's or another size's
/// checkpoint): bad input, exit code 2. Thrown on every rank alike, so apps can stop without MPI_Abort.
class BadFile : public InvalidArgument {
 public:
  using InvalidArgument::InvalidArgument;
};

/// Element type on disk: checkpoints keep doubles (bitwise restart), snapshots single precision.
enum class Precision { double_precision, single_precision };
/// "double" or "single".
[[nodiscard]] std::string to_string(Precision precision);
/// Parses "double" or "single"; throws InvalidArgument naming the text otherwise.
Precision parse_precision(const std::string& text);

/// How files are written and read; recorded in HYMPI_RESULT (to_json) and in every file.
struct H5Options {
  /// MPI-IO data sieve buffer of the HDF5 file access list (H5Pset_sieve_buf_size); 0 keeps HDF5's 64 KiB.
  std::size_t sieve_bytes = 0;
  /// The largest `alignment` validate() accepts: 4 GiB, more than any file system's stripe or block.
  static constexpr std::size_t kMaxAlignment = std::size_t{1} << 32;
  /// Datasets of at least `alignment_threshold` bytes start at multiples of this (H5Pset_alignment); 0: none.
  std::size_t alignment = 0;
  std::size_t alignment_threshold = 1;
  /// Chunk shape (x, y, z) of 3D datasets; all zero: contiguous storage (the default).
  std::array<long, 3> chunk{0, 0, 0};
  /// Collective transfers (MPI_File_write_at_all); false: independent, each rank on its own.
  bool collective = true;
  /// Bytes each rank packs per H5Dwrite / H5Dread (whole z planes, at least one): the bounded buffer a
  /// field goes through, so a checkpoint allocates no second copy of the field.
  std::size_t slab_bytes = 8u << 20;
  /// MPI-IO hints (MPI_Info), e.g. romio_cb_write=enable, cb_buffer_size=16777216.
  std::vector<std::pair<std::string, std::string>> hints;
  /// Throws InvalidArgument naming the first bad value (negative chunk, empty hint key, ...).
  void validate() const;
  [[nodiscard]] nlohmann::json to_json() const;
};

/// Parses "KEY=VALUE" into a hint; throws InvalidArgument naming the text when there is no '=' or no key.
std::pair<std::string, std::string> parse_hint(const std::string& text);

/// Where a rank's block sits in its memory: the owned points of a (z, y, x) box inside a larger strided
/// storage (Grid3D with ghosts and padded rows), `components` values per point, interleaved.
struct MemoryLayout3 {
  std::array<long, 3> extent{0, 0, 0};  ///< owned points per axis (x, y, z)
  long stride_y = 0;                    ///< elements between consecutive rows
  long stride_z = 0;                    ///< elements between consecutive planes
  long offset = 0;                      ///< element index of the first owned point
  int components = 1;                   ///< values per point on disk, contiguous in memory
  /// Elements between consecutive points of a row; 0: `components` (interleaved fields). A larger stride
  /// with components = 1 picks one component of an interleaved field (offset then names the component).
  long point_stride = 0;
  /// A dense block of `extent` points (x fastest), `components` values each.
  static MemoryLayout3 dense(const std::array<long, 3>& extent, int components = 1);
  /// The owned points of `grid`.
  template <class T>
  static MemoryLayout3 of(const Grid3D<T>& grid) {
    return {grid.extent(), grid.stride_y(), grid.stride_z(), grid.index(0, 0, 0), 1, 0};
  }
  /// Elements between consecutive points of a row.
  [[nodiscard]] long step_x() const { return point_stride > 0 ? point_stride : components; }
  /// Elements a buffer must hold for this layout.
  [[nodiscard]] long required_size() const;
};

/// One distributed 3D dataset as a rank sees it: the global size, the rank's box in it (global indexes,
/// possibly empty: the rank then takes part without data) and where that box lives in memory.
struct Block3 {
  std::array<long, 3> global{0, 0, 0};  ///< global points per axis (x, y, z)
  Box3 box;
  MemoryLayout3 memory;
  /// The block of a Grid3D: its box and owned points.
  template <class T>
  static Block3 of(const Grid3D<T>& grid, const std::array<long, 3>& global) {
    return {global, grid.box(), MemoryLayout3::of(grid)};
  }
  /// Throws InvalidArgument when the box is not inside the global size or the memory layout does not fit it.
  void validate(const std::string& dataset) const;
};

/// How StagedData::write_into went: the bytes written with O_DIRECT (from the staging buffer straight to the disk,
/// no copy into the page cache, which on a machine without a spare core takes CPU from the solver) and those
/// written through the page cache (the unaligned heads and tails of pieces, and everything where direct I/O cannot
/// be had), and why none went direct ("" when direct I/O was available).
struct StagedWrite {
  double direct_bytes = 0;
  double buffered_bytes = 0;
  std::string buffered_reason;
};

/// The alignment O_DIRECT needs for the regular file `path`: the larger of the file offset and memory alignments
/// its file system reports (statx STATX_DIOALIGN), raised to the page size so that no page of the file is written
/// both directly and through the page cache. 0 when the file system reports none (tmpfs, kernels before 6.1) or
/// `path` cannot be asked: writes then go through the page cache.
[[nodiscard]] std::size_t direct_io_alignment(const std::string& path);

/// Frees memory allocated with operator new[] at `alignment`.
struct AlignedDelete {
  std::size_t alignment = 1;
  void operator()(std::byte* memory) const noexcept;
};

/// The raw data of a File that stages its writes (File::stage_into): each rank's values, packed as the file stores
/// them, and where each piece goes in the file once it is closed. A checkpoint's background writer puts them
/// there with POSIX I/O alone (write_into), so the solver thread goes on while the bytes reach the disk.
class StagedData {
 public:
  /// `bytes` of the buffer from `offset` belong at byte `file_offset` of the file.
  struct Piece {
    std::uint64_t file_offset = 0;
    std::size_t offset = 0;
    std::size_t bytes = 0;
  };
  StagedData() = default;
  /// Stages each piece at the same offset modulo `alignment` (direct_io_alignment; 0: none) as its place in the
  /// file, so that its whole blocks can go direct.
  explicit StagedData(std::size_t alignment) : alignment_(alignment) {}
  /// Room for `bytes` more that go to `file_offset` of the file: at an offset congruent to it modulo the
  /// alignment when it is a multiple of 8 (doubles are packed there), else at the next multiple of 8. Grows the
  /// buffer keeping what it holds, without touching the new memory (the packing touches it, once). Returns where
  /// they start in the buffer.
  std::size_t reserve(std::size_t bytes, std::uint64_t file_offset);
  /// Records that `bytes` of the buffer at `offset` go to `file_offset`, extending the last piece when both follow
  /// it.
  void add_piece(std::uint64_t file_offset, std::size_t offset, std::size_t bytes);
  [[nodiscard]] std::byte* data() const { return buffer_.get(); }
  /// Forgets the staged pieces, keeping the buffer's memory (kept from one checkpoint to the next: new memory is
  /// what a write pays most for in a VM, docs/performance.md).
  void clear() {
    used_ = 0;
    pieces_.clear();
  }
  /// Writes every piece into the existing file `path` and fsyncs it; no MPI, no HDF5. The whole blocks of the
  /// staging alignment go with O_DIRECT, the rest (everything, staged without one) through the page cache. Throws
  /// IoError naming the file and the system's reason.
  StagedWrite write_into(const std::string& path) const;

 private:
  std::unique_ptr<std::byte[], AlignedDelete> buffer_;
  std::size_t capacity_ = 0;
  std::size_t used_ = 0;  ///< bytes of the buffer staged so far
  std::size_t alignment_ = 0;
  std::vector<Piece> pieces_;
};

/// An open HDF5 file shared by every rank of a communicator (RAII: closes on destruction). All
/// calls are collective over the communicator and must come in the same order on every rank.
class File {
 public:
  /// Creates (truncates) `path` for writing; throws IoError naming the path when it cannot.
  static File create(MPI_Comm comm, const std::string& path, const H5Options& options);
  /// Opens `path` read-only; throws BadFile when it is missing or not a readable HDF5 file.
  static File open(MPI_Comm comm, const std::string& path, const H5Options& options);
  File(File&&) noexcept;
  File& operator=(File&&) noexcept;
  File(const File&) = delete;
  File& operator=(const File&) = delete;
  /// Closes without flushing errors to the caller (use close() to see them).
  ~File();

  [[nodiscard]] const std::string& path() const { return path_; }

  /// Writes each rank's block of a 3D field to dataset `name` (created here) as `precision` with its
  /// checksum; throws IoError naming the file and dataset on failure, InvalidArgument for a bad block.
  void write(const std::string& name, const Block3& block, std::span<const double> data,
             Precision precision = Precision::double_precision);
  /// Reads each rank's block of dataset `name` into `data` (converting to double); throws BadFile when
  /// the dataset is missing, has other dimensions or fails its checksum (checked when the blocks cover it).
  void read(const std::string& name, const Block3& block, std::span<double> data);
  /// Writes a distributed 1D vector: this rank's `values` start at global index `offset` of `global_size`.
  /// Throws like write().
  void write_vector(const std::string& name, long global_size, long offset, std::span<const double> values);
  /// Reads this rank's part of a 1D vector written by write_vector; throws like read().
  void read_vector(const std::string& name, long offset, std::span<double> values);
  /// Whether dataset (or group path) `name` exists.
  [[nodiscard]] bool exists(const std::string& name) const;

  /// Sets attribute `key` of the file's root group (or of object `object`) to `value`, stored as a
  /// JSON string; every rank must pass the same value. Throws IoError.
  void set_attribute(const std::string& key, const nlohmann::json& value, const std::string& object = "/");
  /// Sets a numeric attribute (readable as a plain number by any HDF5 tool); throws IoError.
  void set_number(const std::string& key, double value, const std::string& object = "/");
  /// Sets a string attribute; throws IoError.
  void set_text(const std::string& key, const std::string& value, const std::string& object = "/");
  /// Reads an attribute as JSON: numbers as numbers, set_attribute's JSON parsed, other strings as strings;
  /// throws BadFile naming the file and key when it is missing or unreadable.
  [[nodiscard]] nlohmann::json attribute(const std::string& key, const std::string& object = "/") const;
  [[nodiscard]] bool has_attribute(const std::string& key, const std::string& object = "/") const;

  /// From now on write() and write_vector() create their datasets (contiguous, allocated at once), checksum and
  /// record them as before, but pack each rank's values into `staging` instead of writing them: the caller writes
  /// them with StagedData::write_into after close(). Throws InvalidArgument for chunked datasets (their place in
  /// the file is not known before HDF5 writes them).
  void stage_into(StagedData& staging);

  /// Flushes and closes (collective); throws IoError when the data could not be written out. A staging file is
  /// closed without its sync: its data are not in it yet, and the sync after write_into covers both.
  void close();

  /// Closes after a failure every rank agreed on (collective) or, while another exception unwinds, leaves
  /// the handle open rather than wait for ranks that are not closing; never throws.
  void close_quietly() noexcept;

 private:
  File(MPI_Comm comm, std::string path, const H5Options& options, long file_id);
  MPI_Comm comm_ = MPI_COMM_NULL;
  std::string path_;
  H5Options options_;
  long file_ = -1;  ///< hid_t; HDF5's headers stay out of hympi's
  int unwinding_at_open_ = 0;  ///< std::uncaught_exceptions() when opened
  /// Set when this File threw an error every rank agreed on: all ranks are unwinding together, so
  /// closing collectively on the way out is safe.
  bool agreed_failure_ = false;
  StagedData* staging_ = nullptr;  ///< where write() packs instead of writing (stage_into), or none
};

/// The order-independent checksum write() stores: a sum over elements of a hash of (global index,
/// value bits as stored), so any decomposition of the same data gives the same value.
std::uint64_t element_hash(std::uint64_t global_index, std::uint64_t value_bits);

}  // namespace hympi::h5
