#include "hympi/h5/h5.hpp"

#include <algorithm>
#include <array>
#include <bit>
#include <cstring>
#include <exception>
#include <future>
#include <vector>

#include <fcntl.h>
#include <sys/stat.h>
#include <sys/statvfs.h>
#include <unistd.h>

#include <cerrno>

#include <filesystem>

#include "h5_handles.hpp"
#include "hympi/core/checksum.hpp"
#include "hympi/core/comm.hpp"

namespace hympi::h5 {

namespace detail {

std::string error_stack_message() {
  struct Walk {
    std::string innermost;
    std::string outermost;
  } walk;
  H5Ewalk2(
      H5E_DEFAULT, H5E_WALK_UPWARD,
      [](unsigned n, const H5E_error2_t* e, void* data) -> herr_t {
        auto* w = static_cast<Walk*>(data);
        const std::string text = e->desc != nullptr ? e->desc : "";
        if (n == 0) w->innermost = text;
        w->outermost = text;
        return 0;
      },
      &walk);
  H5Eclear2(H5E_DEFAULT);
  if (walk.innermost.empty()) return walk.outermost;
  if (walk.outermost.empty() || walk.outermost == walk.innermost) return walk.innermost;
  return walk.outermost + ": " + walk.innermost;
}

void agree(MPI_Comm comm, const LocalOutcome& outcome) {
  int size = 0, rank = 0;
  MPI_Comm_size(comm, &size);
  MPI_Comm_rank(comm, &rank);
  const int mine = outcome.failed ? rank : size;
  int first = size;
  HYMPI_MPI(MPI_Allreduce(&mine, &first, 1, MPI_INT, MPI_MIN, comm));
  if (first == size) return;
  // The lowest failing rank's message and kind, the same on every rank.
  int kind = outcome.bad_file ? 1 : 0;
  int length = static_cast<int>(outcome.message.size());
  HYMPI_MPI(MPI_Bcast(&kind, 1, MPI_INT, first, comm));
  HYMPI_MPI(MPI_Bcast(&length, 1, MPI_INT, first, comm));
  std::string message = rank == first ? outcome.message : std::string(static_cast<std::size_t>(length), ' ');
  HYMPI_MPI(MPI_Bcast(message.data(), length, MPI_CHAR, first, comm));
  if (kind == 1) throw BadFile(message);
  throw IoError(message);
}

}  // namespace detail

namespace {

/// Throws IoError when an HDF5 call returned a negative value, with `what` and HDF5's own words.
template <class T>
T checked(T result, const std::string& what) {
  if (result < 0) {
    const std::string detail = error_stack_message();
    throw IoError(what + (detail.empty() ? "" : ": " + detail));
  }
  return result;
}

std::string on(const std::string& path, const std::string& name) {
  return "dataset '" + name + "' of " + path;
}

template <class T>
std::uint64_t bits_of(T value) {
  if constexpr (sizeof(T) == 8) return std::bit_cast<std::uint64_t>(value);
  else return std::bit_cast<std::uint32_t>(value);
}

Handle file_access(MPI_Comm comm, const H5Options& options) {
  Handle fapl(checked(H5Pcreate(H5P_FILE_ACCESS), "H5Pcreate"), H5Pclose);
  MPI_Info info = MPI_INFO_NULL;
  if (!options.hints.empty()) {
    HYMPI_MPI(MPI_Info_create(&info));
    for (const auto& [key, value] : options.hints) HYMPI_MPI(MPI_Info_set(info, key.c_str(), value.c_str()));
  }
  const herr_t set = H5Pset_fapl_mpio(fapl.get(), comm, info);
  if (info != MPI_INFO_NULL) MPI_Info_free(&info);  // HDF5 keeps its own copy
  checked(set, "H5Pset_fapl_mpio");
  if (options.sieve_bytes > 0) checked(H5Pset_sieve_buf_size(fapl.get(), options.sieve_bytes), "sieve buffer");
  if (options.alignment > 0)
    checked(H5Pset_alignment(fapl.get(), options.alignment_threshold, options.alignment), "alignment");
  // Metadata read by one rank and broadcast, written collectively: no metadata storms, and every rank
  // sees the same answer (so failures are the same on every rank).
  checked(H5Pset_all_coll_metadata_ops(fapl.get(), true), "collective metadata reads");
  checked(H5Pset_coll_metadata_write(fapl.get(), true), "collective metadata writes");
  return fapl;
}

Handle transfer(bool collective) {
  Handle dxpl(checked(H5Pcreate(H5P_DATASET_XFER), "H5Pcreate"), H5Pclose);
  checked(H5Pset_dxpl_mpio(dxpl.get(), collective ? H5FD_MPIO_COLLECTIVE : H5FD_MPIO_INDEPENDENT), "transfer mode");
  return dxpl;
}

/// The on-disk shape of a block's dataset: (z, y, x[, components]).
std::vector<hsize_t> disk_dims(const std::array<long, 3>& global, int components) {
  std::vector<hsize_t> dims{hsize_t(global[2]), hsize_t(global[1]), hsize_t(global[0])};
  if (components > 1) dims.push_back(hsize_t(components));
  return dims;
}

/// A run of the block's z planes [begin, end) (local indexes): the unit each H5Dwrite / H5Dread moves.
struct Planes {
  long begin = 0, end = 0;
  [[nodiscard]] bool empty() const { return end <= begin; }
};

/// Planes per slab: about `slab_bytes` of packed data, so the packing buffer stays small, is touched once
/// and reused (new memory is what costs: a full-size buffer doubled a checkpoint's time in a VM).
long planes_per_slab(const Block3& block, std::size_t element_bytes, std::size_t slab_bytes) {
  const auto e = block.memory.extent;
  const long plane = e[0] * e[1] * block.memory.components * long(element_bytes);
  return std::max(1L, long(slab_bytes) / std::max(1L, plane));
}

/// Selects slab `planes` of the block in `space`, or nothing for an empty slab.
void select_planes(hid_t space, const Block3& block, Planes planes) {
  if (block.box.empty() || planes.empty()) {
    checked(H5Sselect_none(space), "H5Sselect_none");
    return;
  }
  const auto size = block.box.size();
  std::vector<hsize_t> start{hsize_t(block.box.low[2] + planes.begin), hsize_t(block.box.low[1]),
                             hsize_t(block.box.low[0])};
  std::vector<hsize_t> count{hsize_t(planes.end - planes.begin), hsize_t(size[1]), hsize_t(size[0])};
  if (block.memory.components > 1) {
    start.push_back(0);
    count.push_back(hsize_t(block.memory.components));
  }
  checked(H5Sselect_hyperslab(space, H5S_SELECT_SET, start.data(), nullptr, count.data(), nullptr), "hyperslab");
}

/// A dense memory space of `count` elements (a scalar space selecting nothing when 0).
Handle memory_space(long count) {
  if (count == 0) {
    Handle space(checked(H5Screate(H5S_SCALAR), "H5Screate"), H5Sclose);
    checked(H5Sselect_none(space.get()), "H5Sselect_none");
    return space;
  }
  const hsize_t n = hsize_t(count);
  return {checked(H5Screate_simple(1, &n, nullptr), "H5Screate_simple"), H5Sclose};
}

/// Walks slab `planes` of `block` value by value: `move(memory, dense)` copies one value between the field's strided
/// memory (offset `memory` in its data) and the dense slab buffer of the disk type (offset `dense`, x fastest), either
/// way, and returns it as the disk stores it; the result is the checksum of those values.
template <class Move>
std::uint64_t move_slab(const Block3& block, Planes planes, Move move) {
  const MemoryLayout3& m = block.memory;
  const auto e = m.extent;
  const long c = m.components, step = m.step_x();
  const long gx = block.global[0], gy = block.global[1];
  std::uint64_t sum = 0;
#pragma omp parallel for collapse(2) schedule(static) reduction(+ : sum)
  for (long k = planes.begin; k < planes.end; ++k)
    for (long j = 0; j < e[1]; ++j) {
      const long row = m.offset + k * m.stride_z + j * m.stride_y;
      const long dense = (((k - planes.begin) * e[1] + j) * e[0]) * c;
      const long gz = block.box.low[2] + k, gyy = block.box.low[1] + j;
      const std::uint64_t first = std::uint64_t(((gz * gy + gyy) * gx + block.box.low[0]) * c);
      for (long i = 0; i < e[0]; ++i)
        for (long v = 0; v < c; ++v)
          // The core's constexpr hash, inlined here: the exported h5::element_hash is a call per value, which
          // was a quarter of a checkpoint's staging time (perf, rb3d 256^3).
          sum += hympi::element_hash(first + std::uint64_t(i * c + v),
                                     bits_of(move(row + i * step + v, dense + i * c + v)));
    }
  return sum;
}

/// Copies the values of slab `planes` out of strided memory into a dense buffer of the disk type, x
/// fastest, and returns the checksum of what was packed.
template <class T>
std::uint64_t pack(const Block3& block, std::span<const double> data, Planes planes, T* to) {
  const double* from = data.data();
  return move_slab(block, planes, [from, to](long memory, long dense) {
    const T value = static_cast<T>(from[memory]);
    to[dense] = value;
    return value;
  });
}

/// The inverse of pack(): scatters slab `planes` from a dense buffer read from disk into strided memory;
/// returns the checksum of the values as stored on disk.
template <class T>
std::uint64_t unpack(const Block3& block, const std::vector<T>& in, Planes planes, std::span<double> data) {
  const T* from = in.data();
  double* to = data.data();
  return move_slab(block, planes, [from, to](long memory, long dense) {
    const T value = from[dense];
    to[memory] = static_cast<double>(value);
    return value;
  });
}

/// Moves the block slab by slab through one bounded buffer: `move(planes, count)` transfers one slab of
/// `count` elements (an empty one where this rank has no slab left). Every rank makes the same number of
/// calls, the largest rank's, as collective transfers need.
template <class Move>
void for_each_slab(MPI_Comm comm, const Block3& block, std::size_t element_bytes, std::size_t slab_bytes,
                   Move&& move) {
  const long per_slab = planes_per_slab(block, element_bytes, slab_bytes);
  const long planes = block.box.empty() ? 0 : block.memory.extent[2];
  const long mine = (planes + per_slab - 1) / per_slab;
  long calls = 0;
  HYMPI_MPI(MPI_Allreduce(&mine, &calls, 1, MPI_LONG, MPI_MAX, comm));
  const long plane_elements = block.memory.extent[0] * block.memory.extent[1] * block.memory.components;
  for (long call = 0; call < calls; ++call) {
    const Planes slab{std::min(planes, call * per_slab), std::min(planes, (call + 1) * per_slab)};
    move(slab, (slab.end - slab.begin) * plane_elements);
  }
}

/// Packs the whole block into `staging` as dataset bytes from `dataset_offset` of the file store it, row by row
/// in file order, and records where each row goes; returns the checksum of the packed values.
template <class T>
std::uint64_t stage_block(const Block3& block, std::span<const double> data, std::uint64_t dataset_offset,
                          StagedData& staging) {
  if (block.box.empty()) return 0;
  const auto e = block.memory.extent;
  const long c = block.memory.components;
  const std::size_t row = std::size_t(e[0] * c) * sizeof(T);
  const long gx = block.global[0], gy = block.global[1];
  const auto file_offset = [&](long k, long j) {
    const long first = (((block.box.low[2] + k) * gy + block.box.low[1] + j) * gx + block.box.low[0]) * c;
    return dataset_offset + std::uint64_t(first) * sizeof(T);
  };
  // A block of whole rows but not whole planes (split in y) is one run of the file per plane, the runs apart:
  // each plane is staged at its own place, congruent to its run's, so that every run's whole blocks can go
  // direct. Otherwise the block is one run (split in z), or its runs are rows, too short to matter.
  if (e[0] == gx && e[1] < gy && e[2] > 1) {
    std::uint64_t sum = 0;
    for (long k = 0; k < e[2]; ++k) {
      const std::size_t offset = staging.reserve(row * std::size_t(e[1]), file_offset(k, 0));
      sum += pack(block, data, Planes{k, k + 1}, reinterpret_cast<T*>(staging.data() + offset));
      staging.add_piece(file_offset(k, 0), offset, row * std::size_t(e[1]));
    }
    return sum;
  }
  std::size_t offset = staging.reserve(row * std::size_t(e[1] * e[2]), file_offset(0, 0));
  const std::uint64_t sum = pack(block, data, Planes{0, e[2]}, reinterpret_cast<T*>(staging.data() + offset));
  for (long k = 0; k < e[2]; ++k)
    for (long j = 0; j < e[1]; ++j, offset += row) staging.add_piece(file_offset(k, j), offset, row);
  return sum;
}

/// Where dataset `name`'s data start in the file; throws IoError when HDF5 has not placed them.
std::uint64_t data_address(hid_t dataset, const std::string& where) {
  const haddr_t at = H5Dget_offset(dataset);
  if (at == HADDR_UNDEF) throw IoError(where + " has no place in the file yet");
  return std::uint64_t(at);
}

constexpr const char* kChecksum = "hympi_checksum";

void write_checksum(hid_t dataset, std::uint64_t sum) {
  Handle space(checked(H5Screate(H5S_SCALAR), "H5Screate"), H5Sclose);
  Handle attr(checked(H5Acreate2(dataset, kChecksum, H5T_STD_U64LE, space.get(), H5P_DEFAULT, H5P_DEFAULT),
                      "create checksum attribute"),
              H5Aclose);
  checked(H5Awrite(attr.get(), H5T_NATIVE_UINT64, &sum), "write checksum attribute");
}

std::uint64_t stored_checksum(hid_t dataset, const std::string& where) {
  if (H5Aexists(dataset, kChecksum) <= 0) throw BadFile(where + " has no checksum (not written by hympi)");
  Handle attr(H5Aopen(dataset, kChecksum, H5P_DEFAULT), H5Aclose);
  std::uint64_t sum = 0;
  if (!attr.valid() || H5Aread(attr.get(), H5T_NATIVE_UINT64, &sum) < 0)
    throw BadFile(where + ": unreadable checksum: " + error_stack_message());
  return sum;
}

std::uint64_t sum_over(MPI_Comm comm, std::uint64_t local) {
  std::uint64_t total = 0;
  HYMPI_MPI(MPI_Allreduce(&local, &total, 1, MPI_UINT64_T, MPI_SUM, comm));
  return total;
}

long total_over(MPI_Comm comm, long local) {
  long total = 0;
  HYMPI_MPI(MPI_Allreduce(&local, &total, 1, MPI_LONG, MPI_SUM, comm));
  return total;
}

Handle dataset_creation(const std::vector<hsize_t>& dims, const H5Options& options) {
  Handle dcpl(checked(H5Pcreate(H5P_DATASET_CREATE), "H5Pcreate"), H5Pclose);
  // Every element is written: filling the dataset first would write it twice.
  checked(H5Pset_fill_time(dcpl.get(), H5D_FILL_TIME_NEVER), "fill time");
  // Parallel HDF5 places contiguous datasets at creation anyway; said here because a staged write needs the
  // place (H5Dget_offset) before any data.
  if (options.chunk[0] == 0) checked(H5Pset_alloc_time(dcpl.get(), H5D_ALLOC_TIME_EARLY), "allocation time");
  if (options.chunk[0] > 0 && dims.size() >= 3) {
    std::vector<hsize_t> chunk(dims.size());
    for (std::size_t d = 0; d < dims.size(); ++d)
      chunk[d] = d < 3 ? std::min<hsize_t>(dims[d], hsize_t(options.chunk[2 - d])) : dims[d];  // dims are (z, y, x)
    for (auto& c : chunk) c = std::max<hsize_t>(c, 1);
    checked(H5Pset_chunk(dcpl.get(), int(chunk.size()), chunk.data()), "chunk shape");
  }
  return dcpl;
}

Handle link_creation() {
  Handle lcpl(checked(H5Pcreate(H5P_LINK_CREATE), "H5Pcreate"), H5Pclose);
  checked(H5Pset_create_intermediate_group(lcpl.get(), 1), "intermediate groups");
  return lcpl;
}

/// Creates dataset `name` (and missing parent groups) of `dims` elements of `disk_type`.
Handle create_dataset(hid_t file, const std::string& name, const std::vector<hsize_t>& dims, const H5Options& options,
                      hid_t disk_type) {
  Handle space(checked(H5Screate_simple(int(dims.size()), dims.data(), nullptr), "H5Screate_simple"), H5Sclose);
  const Handle dcpl = dataset_creation(dims, options);
  const Handle lcpl = link_creation();
  return {checked(H5Dcreate2(file, name.c_str(), disk_type, space.get(), lcpl.get(), dcpl.get(), H5P_DEFAULT),
                  "create"),
          H5Dclose};
}

/// Throws IoError naming `what` when the file system of `path` has less than `bytes` (plus room for metadata) free.
/// Checked before writing because a write that fails inside HDF5's collective metadata flush leaves the
/// ranks in different collectives: the file could then be neither closed nor abandoned.
void require_space(const std::string& path, const std::string& what, double bytes, std::size_t alignment) {
  const std::filesystem::path parent = std::filesystem::path(path).has_parent_path()
                                           ? std::filesystem::path(path).parent_path()
                                           : std::filesystem::path(".");
  struct statvfs fs {};
  if (::statvfs(parent.c_str(), &fs) != 0) return;  // no answer: let the write itself report
  const double free_bytes = double(fs.f_bavail) * double(fs.f_frsize);
  const double needed = bytes + double(alignment) + 1048576.0;
  if (free_bytes < needed)
    throw IoError("no space for " + what + ": it needs " + std::to_string(long(needed)) +
                  " bytes, the file system of " + parent.string() + " has " + std::to_string(long(free_bytes)) +
                  " free");
}

/// Elements of a dataset of `dims`.
long element_count(const std::vector<hsize_t>& dims) {
  long count = 1;
  for (auto d : dims) count *= long(d);
  return count;
}

/// Collective: rank 0 checks the space a dataset of `bytes` needs (require_space); every rank throws alike.
void agree_on_space(MPI_Comm comm, const std::string& path, const std::string& dataset, double bytes,
                    std::size_t alignment, bool& agreed_failure) {
  agree(comm, attempt([&] {
          if (Comm(comm, false).rank() == 0) require_space(path, on(path, dataset), bytes, alignment);
        }),
        agreed_failure);
}

/// Opens dataset `name` for reading; throws BadFile naming the file when it is missing or unreadable.
Handle open_dataset(hid_t file, const std::string& path, const std::string& name) {
  if (H5Lexists(file, name.c_str(), H5P_DEFAULT) <= 0) {
    H5Eclear2(H5E_DEFAULT);
    throw BadFile(path + " has no dataset '" + name + "'");
  }
  Handle dataset(H5Dopen2(file, name.c_str(), H5P_DEFAULT), H5Dclose);
  if (!dataset.valid()) throw BadFile("cannot open " + on(path, name) + ": " + error_stack_message());
  return dataset;
}

/// The dimensions of a dataspace.
std::vector<hsize_t> extent_of(hid_t space) {
  const int rank = H5Sget_simple_extent_ndims(space);
  std::vector<hsize_t> dims(std::size_t(std::max(rank, 0)));
  if (rank > 0) H5Sget_simple_extent_dims(space, dims.data(), nullptr);
  return dims;
}

/// Selects the `n` elements from `offset` of a 1D dataspace (nothing when n is 0).
void select_range(hid_t space, long offset, long n) {
  if (n == 0) {
    checked(H5Sselect_none(space), "H5Sselect_none");
    return;
  }
  const hsize_t start = hsize_t(offset), count = hsize_t(n);
  checked(H5Sselect_hyperslab(space, H5S_SELECT_SET, &start, nullptr, &count, nullptr), "hyperslab");
}

/// Collective: when the ranks' reads together covered all `total` elements of a dataset, their checksum
/// must be the stored one; throws BadFile (on every rank alike) naming `where` otherwise.
void verify_checksum(MPI_Comm comm, long read_here, std::uint64_t sum_here, long total, std::uint64_t stored,
                     const std::string& where, bool& agreed_failure) {
  // Only a read of every element can be checked against the checksum of the whole dataset.
  const long covered = total_over(comm, read_here);
  const std::uint64_t sum = sum_over(comm, sum_here);
  if (covered == total && sum != stored) {
    agreed_failure = true;
    throw BadFile(where + " fails its checksum: the file is corrupted");
  }
}

/// The checksum of one dataset as write() and write_vector() compute it, read serially: the global index of an
/// element is its row-major position on disk ((z, y, x[, component]) or the vector index), its bits those of
/// the stored type. Reads whole outer planes, about 8 MiB at a time.
std::uint64_t serial_checksum(hid_t dataset, const std::string& where) {
  const Handle space(checked(H5Dget_space(dataset), "H5Dget_space"), H5Sclose);
  const std::vector<hsize_t> dims = extent_of(space.get());
  if (dims.empty()) throw BadFile(where + " is not an array");
  const Handle type(checked(H5Dget_type(dataset), "H5Dget_type"), H5Tclose);
  const bool single = H5Tget_size(type.get()) == 4;
  const std::size_t bytes = single ? sizeof(float) : sizeof(double);
  long plane = 1;
  for (std::size_t d = 1; d < dims.size(); ++d) plane *= long(dims[d]);
  const long per_read = std::max(1L, long((8u << 20) / bytes) / std::max(1L, plane));
  std::vector<double> doubles;
  std::vector<float> floats;
  std::uint64_t sum = 0;
  for (long first = 0; first < long(dims[0]); first += per_read) {
    const long planes = std::min(per_read, long(dims[0]) - first);
    std::vector<hsize_t> start(dims.size(), 0), count = dims;
    start[0] = hsize_t(first);
    count[0] = hsize_t(planes);
    checked(H5Sselect_hyperslab(space.get(), H5S_SELECT_SET, start.data(), nullptr, count.data(), nullptr),
            "hyperslab");
    const long n = planes * plane;
    const Handle memory = memory_space(n);
    void* buffer = nullptr;
    if (single) {
      floats.resize(std::size_t(n));
      buffer = floats.data();
    } else {
      doubles.resize(std::size_t(n));
      buffer = doubles.data();
    }
    if (H5Dread(dataset, single ? H5T_NATIVE_FLOAT : H5T_NATIVE_DOUBLE, memory.get(), space.get(), H5P_DEFAULT,
                buffer) < 0)
      throw BadFile("cannot read " + where + ": " + error_stack_message());
    const std::uint64_t base = std::uint64_t(first * plane);
    for (long i = 0; i < n; ++i)
      sum += element_hash(base + std::uint64_t(i),
                          single ? bits_of(floats[std::size_t(i)]) : bits_of(doubles[std::size_t(i)]));
  }
  return sum;
}

}  // namespace

namespace detail {

void verify_stored_checksums(hid_t file, const std::string& path) {
  const SilencedErrors quiet;
  std::vector<std::string> datasets;
  const auto visit = [](hid_t, const char* name, const H5O_info_t* info, void* data) -> herr_t {
    if (info->type == H5O_TYPE_DATASET) static_cast<std::vector<std::string>*>(data)->push_back(name);
    return 0;
  };
  if (H5Ovisit2(file, H5_INDEX_NAME, H5_ITER_NATIVE, visit, &datasets, H5O_INFO_BASIC) < 0)
    throw BadFile("cannot list the datasets of " + path + ": " + error_stack_message());
  for (const std::string& name : datasets) {
    const std::string where = on(path, name);
    const Handle dataset = open_dataset(file, path, name);
    const std::uint64_t stored = stored_checksum(dataset.get(), where);
    std::uint64_t sum = 0;
    try {
      sum = serial_checksum(dataset.get(), where);
    } catch (const IoError& e) {
      // A selection HDF5 refused in a file it opened: the file's fault, as a failed read is.
      throw BadFile(where + ": " + e.what());
    }
    if (sum != stored) throw BadFile(where + " fails its checksum: the file is corrupted");
  }
}

}  // namespace detail

std::uint64_t element_hash(std::uint64_t global_index, std::uint64_t value_bits) {
  // One definition for every checksum in the library (core/checksum.hpp): files written before keep verifying.
  return hympi::element_hash(global_index, value_bits);
}

std::string to_string(Precision precision) {
  return precision == Precision::single_precision ? "single" : "double";
}

Precision parse_precision(const std::string& text) {
  if (text == "double") return Precision::double_precision;
  if (text == "single") return Precision::single_precision;
  throw InvalidArgument("unknown precision '" + text + "' (double or single)");
}

void H5Options::validate() const {
  const bool any_chunk = chunk[0] != 0 || chunk[1] != 0 || chunk[2] != 0;
  for (long c : chunk)
    if (c < 0 || (any_chunk && c == 0))
      throw InvalidArgument("chunk shape must be three positive extents (or none), got " + std::to_string(chunk[0]) +
                            "," + std::to_string(chunk[1]) + "," + std::to_string(chunk[2]));
  if (alignment > 0 && alignment_threshold == 0) throw InvalidArgument("alignment threshold must be >= 1");
  // Beyond it the file's first dataset would start past what file systems allow (writev fails with EFBIG).
  if (alignment > kMaxAlignment)
    throw InvalidArgument("--h5-alignment must be at most " + std::to_string(kMaxAlignment) + " bytes (4 GiB), got " +
                          std::to_string(alignment));
  for (const auto& [key, value] : hints)
    if (key.empty()) throw InvalidArgument("MPI-IO hint with an empty key (value '" + value + "')");
}

nlohmann::json H5Options::to_json() const {
  nlohmann::json h = nlohmann::json::object();
  for (const auto& [key, value] : hints) h[key] = value;
  const bool chunked = chunk[0] > 0;
  return {{"sieve_bytes", sieve_bytes},
          {"slab_bytes", slab_bytes},
          {"alignment", alignment},
          {"chunk", chunked ? nlohmann::json(chunk) : nlohmann::json(nullptr)},
          {"transfer", collective ? "collective" : "independent"},
          {"hints", h}};
}

std::pair<std::string, std::string> parse_hint(const std::string& text) {
  const auto eq = text.find('=');
  if (eq == std::string::npos || eq == 0)
    throw InvalidArgument("MPI-IO hint '" + text + "' is not KEY=VALUE");
  return {text.substr(0, eq), text.substr(eq + 1)};
}

MemoryLayout3 MemoryLayout3::dense(const std::array<long, 3>& extent, int components) {
  return {extent, extent[0] * components, extent[0] * extent[1] * components, 0, components, 0};
}

long MemoryLayout3::required_size() const {
  if (extent[0] <= 0 || extent[1] <= 0 || extent[2] <= 0) return 0;
  return offset + (extent[2] - 1) * stride_z + (extent[1] - 1) * stride_y + (extent[0] - 1) * step_x() + components;
}

void Block3::validate(const std::string& dataset) const {
  for (int d = 0; d < 3; ++d)
    if (global[std::size_t(d)] < 1)
      throw InvalidArgument("dataset '" + dataset + "': global size must be positive on every axis");
  if (memory.components < 1) throw InvalidArgument("dataset '" + dataset + "': components must be >= 1");
  if (box.empty()) return;
  for (std::size_t d = 0; d < 3; ++d) {
    if (box.low[d] < 0 || box.high[d] > global[d])
      throw InvalidArgument("dataset '" + dataset + "': block outside the global grid");
    if (memory.extent[d] != box.high[d] - box.low[d])
      throw InvalidArgument("dataset '" + dataset + "': memory extent does not match the block");
  }
}

File::File(MPI_Comm comm, std::string path, const H5Options& options, long file_id)
    : comm_(comm), path_(std::move(path)), options_(options), file_(file_id),
      unwinding_at_open_(std::uncaught_exceptions()) {}

File File::create(MPI_Comm comm, const std::string& path, const H5Options& options) {
  const SilencedErrors quiet;
  // Making the file writes its superblock and root group, and closing it flushes them: on a full disk that close
  // fails, HDF5 keeps the handle it could not close and crashes on it in MPI_Finalize. So the room for the file's
  // own metadata is checked first, as each dataset's room is before the dataset is made.
  agree(comm, attempt([&] {
          if (Comm(comm, false).rank() == 0) require_space(path, path, 0.0, 0);
        }));
  hid_t id = H5I_INVALID_HID;
  agree(comm, attempt([&] {
          const Handle fapl = file_access(comm, options);
          id = H5Fcreate(path.c_str(), H5F_ACC_TRUNC, H5P_DEFAULT, fapl.get());
          if (id < 0) throw IoError("cannot create " + path + ": " + error_stack_message());
        }));
  return {comm, path, options, id};
}

File File::open(MPI_Comm comm, const std::string& path, const H5Options& options) {
  SilencedErrors quiet;
  hid_t id = H5I_INVALID_HID;
  const LocalOutcome outcome = attempt([&] {
    const Handle fapl = file_access(comm, options);
    id = H5Fopen(path.c_str(), H5F_ACC_RDONLY, fapl.get());
    if (id < 0) quiet.keep();
    if (id < 0) throw BadFile("cannot open " + path + " (missing, truncated or not HDF5): " + error_stack_message());
  });
  if (outcome.failed && id >= 0) H5Fclose(id);  // opened here, failed elsewhere: not ours to keep
  agree(comm, outcome);
  return {comm, path, options, id};
}

File::File(File&& o) noexcept
    : comm_(o.comm_), path_(std::move(o.path_)), options_(std::move(o.options_)),
      file_(std::exchange(o.file_, -1)), unwinding_at_open_(o.unwinding_at_open_), agreed_failure_(o.agreed_failure_),
      staging_(std::exchange(o.staging_, nullptr)) {}

File& File::operator=(File&& o) noexcept {
  if (this != &o) {
    close_quietly();
    comm_ = o.comm_;
    path_ = std::move(o.path_);
    options_ = std::move(o.options_);
    file_ = std::exchange(o.file_, -1);
    unwinding_at_open_ = o.unwinding_at_open_;
    agreed_failure_ = o.agreed_failure_;
    staging_ = std::exchange(o.staging_, nullptr);
  }
  return *this;
}

File::~File() { close_quietly(); }

void File::stage_into(StagedData& staging) {
  if (options_.chunk[0] > 0)
    throw InvalidArgument(path_ + ": staged writes need contiguous datasets, not chunk shape " +
                          nlohmann::json(options_.chunk).dump());
  staging_ = &staging;
}

std::size_t direct_io_alignment(const std::string& path) {
  struct statx about {};
  if (::statx(AT_FDCWD, path.c_str(), 0, STATX_DIOALIGN, &about) != 0 || (about.stx_mask & STATX_DIOALIGN) == 0 ||
      about.stx_dio_offset_align == 0)
    return 0;
  const auto page = std::size_t(::sysconf(_SC_PAGESIZE));
  return std::max({std::size_t(about.stx_dio_offset_align), std::size_t(about.stx_dio_mem_align), page});
}

void AlignedDelete::operator()(std::byte* memory) const noexcept {
  ::operator delete[](memory, std::align_val_t(alignment));
}

std::size_t StagedData::reserve(std::size_t bytes, std::uint64_t file_offset) {
  constexpr std::size_t element = alignof(double);
  std::size_t start = (used_ + element - 1) / element * element;
  if (alignment_ > 0 && file_offset % element == 0)
    start = used_ + std::size_t((file_offset + alignment_ - used_ % alignment_) % alignment_);
  if (start + bytes > capacity_) {
    // Page-aligned at least, as O_DIRECT wants its memory; the first checkpoint grows it once per dataset, and the
    // new pages are first touched by the packing, not by a zero fill.
    const std::size_t unit = std::max(alignment_, std::size_t(::sysconf(_SC_PAGESIZE)));
    const std::size_t capacity = (std::max(start + bytes, capacity_ + capacity_ / 4) + unit - 1) / unit * unit;
    std::unique_ptr<std::byte[], AlignedDelete> grown(
        static_cast<std::byte*>(::operator new[](capacity, std::align_val_t(unit))), AlignedDelete{unit});
    if (used_ > 0) std::memcpy(grown.get(), buffer_.get(), used_);
    buffer_ = std::move(grown);
    capacity_ = capacity;
  }
  used_ = start + bytes;
  return start;
}

void StagedData::add_piece(std::uint64_t file_offset, std::size_t offset, std::size_t bytes) {
  if (!pieces_.empty()) {
    Piece& last = pieces_.back();
    if (last.file_offset + last.bytes == file_offset && last.offset + last.bytes == offset) {
      last.bytes += bytes;
      return;
    }
  }
  pieces_.push_back({file_offset, offset, bytes});
}

namespace {

/// pwrites `bytes` from `from` at `file_offset`, through short writes and EINTR; returns 0 or the errno that
/// stopped it, with `done` the bytes written.
int write_fully(int fd, const std::byte* from, std::size_t bytes, std::uint64_t file_offset, std::size_t& done) {
  done = 0;
  while (done < bytes) {
    const ssize_t n = ::pwrite(fd, from + done, bytes - done, off_t(file_offset + done));
    if (n < 0 && errno == EINTR) continue;
    if (n < 0) return errno;
    if (n == 0) return EIO;
    done += std::size_t(n);
  }
  return 0;
}

}  // namespace

StagedWrite StagedData::write_into(const std::string& path) const {
  const auto fail = [&path](const std::string& what, int error) {
    return IoError("cannot " + what + " " + path + ": " + std::strerror(error));
  };
  OpenFile file(::open(path.c_str(), O_WRONLY | O_CLOEXEC));
  if (!file.valid()) throw fail("open", errno);
  StagedWrite report;
  // The alignment the ranks agreed on when the file's datasets were placed (one file system asked once per run).
  const std::size_t alignment = alignment_;
  OpenFile direct(alignment > 0 ? ::open(path.c_str(), O_WRONLY | O_DIRECT | O_CLOEXEC) : -1);
  if (alignment == 0)
    report.buffered_reason = "the file system reports no direct I/O alignment";
  else if (!direct.valid())
    report.buffered_reason = std::string("O_DIRECT refused: ") + std::strerror(errno);
  const auto buffered = [&](const std::byte* from, std::size_t bytes, std::uint64_t file_offset) {
    std::size_t done = 0;
    if (const int error = write_fully(file.get(), from, bytes, file_offset, done); error != 0)
      throw fail("write", error);
    report.buffered_bytes += double(bytes);
  };
  for (const Piece& piece : pieces_) {
    const std::byte* from = buffer_.get() + piece.offset;
    const std::uint64_t begin = piece.file_offset, end = begin + piece.bytes;
    // The whole blocks of the piece go direct, when the buffer holds them at an aligned address too (a piece
    // staged without its file offset's alignment, or shorter than a block, goes through the page cache).
    const std::uint64_t bulk_begin = direct.valid() ? (begin + alignment - 1) / alignment * alignment : end;
    const std::uint64_t bulk_end = direct.valid() ? end / alignment * alignment : end;
    if (bulk_begin >= bulk_end ||
        reinterpret_cast<std::uintptr_t>(from + (bulk_begin - begin)) % alignment != 0) {
      buffered(from, piece.bytes, begin);
      continue;
    }
    const std::byte* bulk = from + (bulk_begin - begin);
    buffered(from, bulk_begin - begin, begin);
    std::size_t done = 0;
    const int error = write_fully(direct.get(), bulk, bulk_end - bulk_begin, bulk_begin, done);
    report.direct_bytes += double(done);
    if (error == EINVAL) {  // refused after all (an alignment the file system did not report): the page cache
      report.buffered_reason = std::string("O_DIRECT write refused: ") + std::strerror(error);
      direct.close();
      buffered(bulk + done, bulk_end - bulk_begin - done, bulk_begin + done);
    } else if (error != 0) {
      throw fail("write", error);
    }
    buffered(from + (bulk_end - begin), end - bulk_end, bulk_end);
  }
  // O_DIRECT bypasses the page cache but not the disk's own cache, nor does it write the file's metadata: the
  // fsync makes both durable, as it does the buffered parts.
  if (::fsync(file.get()) != 0) throw fail("sync", errno);
  if (direct.valid() && !direct.close()) throw fail("close", errno);
  if (!file.close()) throw fail("close", errno);
  return report;
}

void File::close_quietly() noexcept {
  if (file_ < 0) return;
  // H5Fclose is collective: while an exception the other ranks may not share unwinds, closing would wait
  // for them forever; the process is about to abort then, and the handle dies with it.
  if (std::uncaught_exceptions() > unwinding_at_open_ && !agreed_failure_) return;
  const SilencedErrors quiet;
  H5Fclose(hid_t(file_));
  H5Eclear2(H5E_DEFAULT);
  file_ = -1;
}

void File::close() {
  if (file_ < 0) return;
  const SilencedErrors quiet;
  const hid_t id = hid_t(std::exchange(file_, -1));
  // Flush first (MPI_File_sync: the data reach the disk, not only the page cache), then close.
  LocalOutcome outcome;
  if (staging_ == nullptr)
    outcome = attempt([&] { checked(H5Fflush(id, H5F_SCOPE_GLOBAL), "cannot flush " + path_); });
  const LocalOutcome closed = attempt([&] { checked(H5Fclose(id), "cannot close " + path_); });
  if (!outcome.failed) outcome = closed;
  agree(comm_, outcome, agreed_failure_);
}

void File::write(const std::string& name, const Block3& block, std::span<const double> data, Precision precision) {
  block.validate(name);
  if (!block.box.empty() && static_cast<long>(data.size()) < block.memory.required_size())
    throw InvalidArgument(on(path_, name) + ": the buffer is smaller than its memory layout");
  const SilencedErrors quiet;
  const auto dims = disk_dims(block.global, block.memory.components);
  const bool single = precision == Precision::single_precision;
  std::uint64_t local_sum = 0;
  Handle dataset;
  agree_on_space(comm_, path_, name, double(element_count(dims)) * (single ? 4.0 : 8.0), options_.alignment,
                 agreed_failure_);
  agree(comm_, attempt([&] {
          dataset = create_dataset(hid_t(file_), name, dims, options_, single ? H5T_IEEE_F32LE : H5T_IEEE_F64LE);
        }), agreed_failure_);
  LocalOutcome outcome;
  std::vector<double> doubles;
  std::vector<float> floats;
  const std::size_t element_bytes = single ? sizeof(float) : sizeof(double);
  if (staging_ != nullptr) {
    outcome = attempt([&] {
      const std::uint64_t at = data_address(dataset.get(), on(path_, name));
      local_sum = single ? stage_block<float>(block, data, at, *staging_)
                         : stage_block<double>(block, data, at, *staging_);
    });
  } else {
    for_each_slab(comm_, block, element_bytes, options_.slab_bytes, [&](Planes planes, long count) {
      // A rank whose slab failed still takes part in the remaining collective transfers (with nothing).
      const LocalOutcome slab = attempt([&] {
        if (outcome.failed) {
          planes = {};
          count = 0;
        }
        if (single) {
          floats.resize(std::max(floats.size(), std::size_t(count)));
          local_sum += pack(block, data, planes, floats.data());
        } else {
          doubles.resize(std::max(doubles.size(), std::size_t(count)));
          local_sum += pack(block, data, planes, doubles.data());
        }
        Handle space(checked(H5Dget_space(dataset.get()), "H5Dget_space"), H5Sclose);
        select_planes(space.get(), block, planes);
        const Handle memory = memory_space(count);
        const Handle dxpl = transfer(options_.collective);
        const double dummy = 0;
        const void* buffer = single ? static_cast<const void*>(floats.data()) : static_cast<const void*>(doubles.data());
        checked(H5Dwrite(dataset.get(), single ? H5T_NATIVE_FLOAT : H5T_NATIVE_DOUBLE, memory.get(), space.get(),
                         dxpl.get(), count > 0 ? buffer : &dummy),
                "write");
      });
      if (slab.failed && !outcome.failed) outcome = slab;
    });
  }
  agree(comm_, as_io_failure("cannot write " + on(path_, name), outcome), agreed_failure_);
  const std::uint64_t sum = sum_over(comm_, local_sum);
  agree(comm_, attempt([&] { write_checksum(dataset.get(), sum); }), agreed_failure_);
}

void File::read(const std::string& name, const Block3& block, std::span<double> data) {
  block.validate(name);
  if (!block.box.empty() && static_cast<long>(data.size()) < block.memory.required_size())
    throw InvalidArgument(on(path_, name) + ": the buffer is smaller than its memory layout");
  const SilencedErrors quiet;
  const std::string where = on(path_, name);
  const auto expected = disk_dims(block.global, block.memory.components);
  std::uint64_t local_sum = 0, stored = 0;
  bool single = false;
  Handle opened;
  agree(comm_, attempt([&] {
          opened = open_dataset(hid_t(file_), path_, name);
          const Handle space(H5Dget_space(opened.get()), H5Sclose);
          if (extent_of(space.get()) != expected) throw BadFile(where + " has other dimensions than this run's field");
          const Handle type(H5Dget_type(opened.get()), H5Tclose);
          single = H5Tget_size(type.get()) == 4;
          stored = stored_checksum(opened.get(), where);
        }),
        agreed_failure_);
  LocalOutcome outcome;
  // Two buffers so the unpack and checksum of one slab (a thread of its own, no HDF5 or MPI calls in it)
  // overlap the read of the next: done one after the other, the checksum pass cost as much as the read.
  std::array<std::vector<double>, 2> doubles;
  std::array<std::vector<float>, 2> floats;
  std::future<std::uint64_t> unpacking;  // the previous slab's, reading from the other buffer
  const auto finish_unpack = [&] {
    if (unpacking.valid()) local_sum += unpacking.get();
  };
  std::size_t next_buffer = 0;
  for_each_slab(comm_, block, single ? sizeof(float) : sizeof(double), options_.slab_bytes,
                [&](Planes planes, long count) {
    const LocalOutcome slab = attempt([&] {
      if (outcome.failed) {
        planes = {};
        count = 0;
      }
      const std::size_t b = next_buffer;
      next_buffer = 1 - next_buffer;
      Handle space(checked(H5Dget_space(opened.get()), "H5Dget_space"), H5Sclose);
      select_planes(space.get(), block, planes);
      const Handle memory = memory_space(count);
      const Handle dxpl = transfer(options_.collective);
      void* buffer = nullptr;
      if (single) {
        floats[b].resize(std::max(floats[b].size(), std::size_t(count)));
        buffer = floats[b].data();
      } else {
        doubles[b].resize(std::max(doubles[b].size(), std::size_t(count)));
        buffer = doubles[b].data();
      }
      double dummy = 0;
      if (H5Dread(opened.get(), single ? H5T_NATIVE_FLOAT : H5T_NATIVE_DOUBLE, memory.get(), space.get(), dxpl.get(),
                  count > 0 ? buffer : &dummy) < 0)
        throw BadFile("cannot read " + where + ": " + error_stack_message());
      finish_unpack();
      if (count > 0)
        unpacking = std::async(std::launch::async, [&block, &data, &doubles, &floats, single, b, planes] {
          return single ? unpack(block, floats[b], planes, data) : unpack(block, doubles[b], planes, data);
        });
    });
    if (slab.failed && !outcome.failed) outcome = slab;
  });
  const LocalOutcome last = attempt(finish_unpack);
  if (last.failed && !outcome.failed) outcome = last;
  agree(comm_, outcome, agreed_failure_);
  verify_checksum(comm_, block.box.count() * block.memory.components, local_sum, element_count(expected), stored,
                  where, agreed_failure_);
}

void File::write_vector(const std::string& name, long global_size, long offset, std::span<const double> values) {
  const long n = long(values.size());
  // A vector is a block of (n, 1, 1) at (offset, 0, 0) of a (global_size, 1, 1) grid; disk shape (1, 1, N)
  // would be odd for readers, so vectors get their own 1D datasets.
  if (offset < 0 || offset + n > global_size)
    throw InvalidArgument(on(path_, name) + ": part [" + std::to_string(offset) + "," + std::to_string(offset + n) +
                          ") outside the vector of " + std::to_string(global_size));
  const SilencedErrors quiet;
  const std::vector<hsize_t> dims{hsize_t(global_size)};
  std::uint64_t local_sum = 0;
  for (long i = 0; i < n; ++i) local_sum += element_hash(std::uint64_t(offset + i), bits_of(values[std::size_t(i)]));
  const std::uint64_t sum = sum_over(comm_, local_sum);
  agree_on_space(comm_, path_, name, double(global_size) * 8.0, options_.alignment, agreed_failure_);
  const LocalOutcome outcome = attempt([&] {
    Handle dataset = create_dataset(hid_t(file_), name, dims, H5Options{}, H5T_IEEE_F64LE);
    write_checksum(dataset.get(), sum);
    if (staging_ != nullptr) {
      if (values.empty()) return;
      const std::uint64_t at = data_address(dataset.get(), on(path_, name)) + std::uint64_t(offset) * sizeof(double);
      const std::size_t start = staging_->reserve(values.size_bytes(), at);
      std::memcpy(staging_->data() + start, values.data(), values.size_bytes());
      staging_->add_piece(at, start, values.size_bytes());
      return;
    }
    Handle space(checked(H5Dget_space(dataset.get()), "H5Dget_space"), H5Sclose);
    select_range(space.get(), offset, n);
    const Handle memory = memory_space(n);
    const Handle dxpl = transfer(options_.collective);
    const double dummy = 0;
    checked(H5Dwrite(dataset.get(), H5T_NATIVE_DOUBLE, memory.get(), space.get(), dxpl.get(),
                     n > 0 ? values.data() : &dummy),
            "write");
  });
  agree(comm_, as_io_failure("cannot write " + on(path_, name), outcome), agreed_failure_);
}

void File::read_vector(const std::string& name, long offset, std::span<double> values) {
  const SilencedErrors quiet;
  const std::string where = on(path_, name);
  const long n = long(values.size());
  std::uint64_t local_sum = 0, stored = 0;
  long global_size = 0;
  agree(comm_, attempt([&] {
          const Handle dataset = open_dataset(hid_t(file_), path_, name);
          const Handle space(H5Dget_space(dataset.get()), H5Sclose);
          const std::vector<hsize_t> dims = extent_of(space.get());
          if (dims.size() != 1) throw BadFile(where + " is not a vector");
          global_size = long(dims[0]);
          if (offset < 0 || offset + n > global_size)
            throw BadFile(where + " holds " + std::to_string(global_size) + " values, this run needs [" +
                          std::to_string(offset) + "," + std::to_string(offset + n) + ")");
          stored = stored_checksum(dataset.get(), where);
          select_range(space.get(), offset, n);
          const Handle memory = memory_space(n);
          const Handle dxpl = transfer(options_.collective);
          double dummy = 0;
          if (H5Dread(dataset.get(), H5T_NATIVE_DOUBLE, memory.get(), space.get(), dxpl.get(),
                      n > 0 ? values.data() : &dummy) < 0)
            throw BadFile("cannot read " + where + ": " + error_stack_message());
          for (long i = 0; i < n; ++i)
            local_sum += element_hash(std::uint64_t(offset + i), bits_of(values[std::size_t(i)]));
        }),
        agreed_failure_);
  verify_checksum(comm_, n, local_sum, global_size, stored, where, agreed_failure_);
}

bool File::exists(const std::string& name) const {
  const SilencedErrors quiet;
  // H5Lexists fails (rather than answering no) when a parent group is missing: walk the path.
  std::string prefix;
  std::size_t start = name.front() == '/' ? 1 : 0;
  while (start <= name.size()) {
    const std::size_t slash = std::min(name.find('/', start), name.size());
    prefix.push_back('/');
    prefix.append(name, start, slash - start);
    if (H5Lexists(hid_t(file_), prefix.c_str(), H5P_DEFAULT) <= 0) {
      H5Eclear2(H5E_DEFAULT);
      return false;
    }
    start = slash + 1;
  }
  return true;
}

}  // namespace hympi::h5
