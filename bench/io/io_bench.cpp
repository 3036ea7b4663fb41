// hympi-bench-io: write and read one checkpoint of a distributed 3D double field through hympi::h5's
// CheckpointWriter / CheckpointReader, once per option set (sieve buffer, alignment, collective or
// independent transfers, MPI-IO hints, the slab h5 packs per transfer), and print one `HYMPI_BENCH {json}`
// line per case (rank 0).
//
// A case times what a solver pays for a checkpoint: create the temporary file and its header, write the
// field (packing, checksum, H5Dwrite), then commit() = H5Fflush (MPI_File_sync: the data reach the disk),
// H5Fclose, rename onto the final name and fsync of the directory. The read is a restart's: open with the
// header checks, read the field (checksum verified, the blocks cover it) and close. Before the read, rank 0
// drops the file's pages from the page cache (posix_fadvise DONTNEED; clean pages after the sync), so the
// read comes from the disk like a restart after the writing job ended; the resident share mincore() sees
// after the drop is reported (resident_before_read). Every value read back is compared with the value
// written, and both checksums (h5::element_hash summed over the global indexes, any decomposition gives
// the same) are reported: a case whose read-back differs is not verified and the exit code is 1.
// Phases (medians over --reps): header_s (create + header), data_s (File::write: pack, checksum, H5Dwrite
// into the page cache), commit_s (flush = fsync of the data, close, rename, fsync of the directory);
// open_s (open + header checks) and read_data_s (File::read: H5Dread, unpack, checksum); checksum_s is
// one pass of the same hash over the field alone (the CPU share of data_s and read_data_s). A last line
// ("bench":"io-memory") times the first touch of fresh memory of a rank's block size after every case:
// what h5's per-call staging buffer and the page cache's new pages cost where memory comes lazily
// (a VM whose free pages go back to the host).
// Exit 2 for bad arguments (one line), 1 for an I/O failure or a wrong read-back.
#include <fcntl.h>
#include <mpi.h>
#include <omp.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <sys/statvfs.h>
#include <unistd.h>

#include <algorithm>
#include <array>
#include <cmath>
#include <cstdint>
#include <cstdio>
#include <cstring>
#include <filesystem>
#include <nlohmann/json.hpp>
#include <string>
#include <string_view>
#include <vector>

#include "hympi/core/error.hpp"
#include "hympi/grid/cart.hpp"
#include "hympi/h5/checkpoint.hpp"
#include "hympi/h5/h5.hpp"
#include "bench_main.hpp"

namespace {

namespace fs = std::filesystem;
using hympi::Box3;
using hympi::InvalidArgument;
namespace h5 = hympi::h5;

constexpr const char* kProg = "hympi-bench-io";
constexpr double kGB = 1e9;

struct Args {
  std::array<long, 3> global{512, 512, 256};  ///< (x, y, z): 512 MiB of doubles
  std::string dir = ".";
  int split = -1;  ///< axis the ranks split (0 x, 1 y, 2 z); -1: as the apps decompose (choose_process_grid)
  std::vector<std::string> sieve{"0", "fs"};
  std::vector<std::string> alignment{"0", "fs"};
  std::vector<std::string> transfer{"collective", "independent"};
  std::vector<std::string> hints{"none"};
  std::vector<std::string> slab{"8M"};
  int reps = 1;
  bool keep = false;
};

using hympi::bench::parse_positive;

// Points of the global grid per axis: three of them multiply in 64-bit arithmetic without wrapping.
constexpr long kMaxExtent = 1L << 20;

std::vector<std::string> split_list(std::string_view text, const std::string& option) {
  std::vector<std::string> out;
  std::size_t start = 0;
  while (start <= text.size()) {
    const std::size_t comma = std::min(text.find(',', start), text.size());
    out.emplace_back(text.substr(start, comma - start));
    if (out.back().empty()) throw InvalidArgument(option + ": empty entry in '" + std::string(text) + "'");
    start = comma + 1;
  }
  return out;
}

/// A byte size: "fs" (the file system's block), "0", N, NK, NM (binary units); throws InvalidArgument.
std::size_t byte_size(const std::string& text, std::size_t fs_block, const std::string& option) {
  if (text == "fs") return fs_block;
  if (text == "0") return 0;
  std::size_t scale = 1;
  std::string digits = text;
  if (!digits.empty() && (digits.back() == 'K' || digits.back() == 'M')) {
    scale = digits.back() == 'K' ? 1024 : 1024 * 1024;
    digits.pop_back();
  }
  return static_cast<std::size_t>(parse_positive<long>(digits, option, 1L << 40)) * scale;
}

/// Bytes h5 packs per transfer (H5Options::slab_bytes): a size, or "full" for the whole block in one
/// transfer through one full-size buffer (what h5 did before it moved fields slab by slab).
std::size_t slab_size(const std::string& text) {
  if (text == "full") return std::size_t(1) << 40;  // larger than any block: one slab
  const std::size_t bytes = byte_size(text, 0, "--slab");
  if (bytes == 0) throw InvalidArgument("--slab: 0 (expected a size or full)");
  return bytes;
}

/// The MPI-IO hints of a hint set: none, or cb (collective buffering on for reads and writes, 16 MiB
/// buffer: ROMIO's names; Open MPI's default OMPIO takes its own MCA parameters instead, so compare
/// under OMPI_MCA_io=romio321).
std::vector<std::pair<std::string, std::string>> hint_set(const std::string& name) {
  if (name == "none") return {};
  if (name == "cb")
    return {{"romio_cb_write", "enable"}, {"romio_cb_read", "enable"}, {"cb_buffer_size", "16777216"}};
  throw InvalidArgument("--hints: unknown set '" + name + "' (expected none or cb)");
}

const char* kUsage =
    "--global X Y Z | --mib M, --dir DIR, --split auto|x|y|z, --sieve LIST, --alignment LIST "
    "(sizes: 0, fs, N, NK, NM), --transfer collective,independent, --hints none,cb, --slab LIST (sizes or full), "
    "--reps N, --keep";

/// Parses the command line; throws InvalidArgument naming the bad argument.
Args parse_args(int argc, char** argv) {
  Args args;
  hympi::bench::refuse_repeated_options(argc, argv);
  for (int i = 1; i < argc; ++i) {
    const std::string arg = argv[i];
    const auto value = [&]() {
      if (i + 1 >= argc) throw InvalidArgument(arg + " needs a value");
      return std::string_view(argv[++i]);
    };
    if (arg == "--global") {
      if (i + 3 >= argc) throw InvalidArgument("--global needs 3 values (X Y Z)");
      for (auto& n : args.global) n = parse_positive<long>(argv[++i], arg, kMaxExtent);
    } else if (arg == "--mib") {
      // 512 x 512 doubles are 2 MiB per z plane.
      const long mib = parse_positive<long>(value(), arg, 2 * kMaxExtent);
      if (mib % 2 != 0) throw InvalidArgument("--mib: " + std::to_string(mib) + " is odd (2 MiB per plane)");
      args.global = {512, 512, mib / 2};
    } else if (arg == "--dir") {
      args.dir = std::string(value());
    } else if (arg == "--split") {
      const std::string_view axis = value();
      if (axis == "auto") args.split = -1;
      else if (axis == "x") args.split = 0;
      else if (axis == "y") args.split = 1;
      else if (axis == "z") args.split = 2;
      else throw InvalidArgument("--split: '" + std::string(axis) + "' (expected auto, x, y or z)");
    } else if (arg == "--sieve") {
      args.sieve = split_list(value(), arg);
    } else if (arg == "--alignment") {
      args.alignment = split_list(value(), arg);
    } else if (arg == "--transfer") {
      args.transfer = split_list(value(), arg);
      for (const auto& t : args.transfer)
        if (t != "collective" && t != "independent")
          throw InvalidArgument("--transfer: '" + t + "' (expected collective or independent)");
    } else if (arg == "--hints") {
      args.hints = split_list(value(), arg);
      for (const auto& h : args.hints) (void)hint_set(h);
    } else if (arg == "--slab") {
      args.slab = split_list(value(), arg);
      for (const auto& x : args.slab) (void)slab_size(x);
    } else if (arg == "--reps") {
      args.reps = parse_positive<int>(value(), arg);
    } else if (arg == "--keep") {
      args.keep = true;
    } else {
      throw InvalidArgument("unknown argument '" + arg + "' (expected " + kUsage + ")");
    }
  }
  if (!fs::is_directory(args.dir)) throw InvalidArgument("--dir " + args.dir + " is not a directory");
  return args;
}

/// The value written at global point (x, y, z): not a float, different everywhere.
double value_at(long x, long y, long z) { return std::sqrt(2.0) * double(x + 1) + double(y) / 3.0 + 1e-3 * double(z); }

/// Order-independent checksum of a rank's block (as h5 stores one), summed over the ranks.
std::uint64_t checksum(MPI_Comm comm, const Box3& box, const std::array<long, 3>& global,
                       const std::vector<double>& data) {
  const auto n = box.size();
  std::uint64_t local = 0;
#pragma omp parallel for reduction(+ : local) schedule(static)
  for (long k = 0; k < n[2]; ++k)
    for (long j = 0; j < n[1]; ++j)
      for (long i = 0; i < n[0]; ++i) {
        const long gx = box.low[0] + i, gy = box.low[1] + j, gz = box.low[2] + k;
        const auto index = static_cast<std::uint64_t>(gx + global[0] * (gy + global[1] * gz));
        std::uint64_t bits = 0;
        std::memcpy(&bits, &data[static_cast<std::size_t>(i + n[0] * (j + n[1] * k))], sizeof bits);
        local += h5::element_hash(index, bits);
      }
  std::uint64_t total = 0;
  MPI_Allreduce(&local, &total, 1, MPI_UINT64_T, MPI_SUM, comm);
  return total;
}

/// Drops the file's pages from the page cache (rank 0; they are clean after the commit's sync) and returns
/// the share still resident (mincore), -1 when it cannot be told.
double drop_from_cache(const std::string& path) {
  const int fd = ::open(path.c_str(), O_RDONLY);
  if (fd < 0) return -1;
  ::fdatasync(fd);
  ::posix_fadvise(fd, 0, 0, POSIX_FADV_DONTNEED);
  struct stat st {};
  double resident = -1;
  if (::fstat(fd, &st) == 0 && st.st_size > 0) {
    void* map = ::mmap(nullptr, static_cast<std::size_t>(st.st_size), PROT_READ, MAP_SHARED, fd, 0);
    if (map != MAP_FAILED) {
      const long page = ::sysconf(_SC_PAGESIZE);
      std::vector<unsigned char> pages(static_cast<std::size_t>((st.st_size + page - 1) / page));
      if (::mincore(map, static_cast<std::size_t>(st.st_size), pages.data()) == 0)
        resident = double(std::count_if(pages.begin(), pages.end(), [](unsigned char p) { return p & 1; })) /
                   double(pages.size());
      ::munmap(map, static_cast<std::size_t>(st.st_size));
    }
  }
  ::close(fd);
  return resident;
}

double median(std::vector<double> v) {
  std::sort(v.begin(), v.end());
  const std::size_t m = v.size() / 2;
  return v.size() % 2 ? v[m] : 0.5 * (v[m - 1] + v[m]);
}

struct Case {
  std::string sieve, alignment, transfer, hints, slab;
};

int run(const Args& args, MPI_Comm comm) {
  int rank = 0, ranks = 1;
  MPI_Comm_rank(comm, &rank);
  MPI_Comm_size(comm, &ranks);
  struct statvfs vfs {};
  if (::statvfs(args.dir.c_str(), &vfs) != 0)
    throw InvalidArgument("--dir " + args.dir + ": statvfs failed: " + std::strerror(errno));
  const auto fs_block = static_cast<std::size_t>(vfs.f_bsize);

  std::array<int, 3> dims{1, 1, 1};
  if (args.split >= 0) dims[static_cast<std::size_t>(args.split)] = ranks;
  else dims = hympi::choose_process_grid(ranks, args.global);
  if (dims[0] > args.global[0] || dims[1] > args.global[1] || dims[2] > args.global[2])
    throw InvalidArgument("the grid is too small for " + std::to_string(ranks) + " ranks along the split axis");
  std::array<int, 3> coords{rank % dims[0], (rank / dims[0]) % dims[1], rank / (dims[0] * dims[1])};
  double largest = 1.0;  // the largest rank's block, from the split, before any rank allocates its own
  for (std::size_t d = 0; d < 3; ++d) largest *= double((args.global[d] + dims[d] - 1) / dims[d]);
  hympi::bench::check_memory(3.0 * 8.0 * largest, ranks,
                             "--global " + std::to_string(args.global[0]) + " " + std::to_string(args.global[1]) +
                                 " " + std::to_string(args.global[2]) +
                                 " (three copies of a rank's block, 8 B a point)");
  const Box3 box = hympi::block_range(args.global, dims, coords);
  const auto extent = box.size();
  const h5::Block3 block{args.global, box, h5::MemoryLayout3::dense(extent)};
  std::vector<double> field(static_cast<std::size_t>(box.count())), back(field.size());
#pragma omp parallel for schedule(static)
  for (long k = 0; k < extent[2]; ++k)
    for (long j = 0; j < extent[1]; ++j)
      for (long i = 0; i < extent[0]; ++i)
        field[static_cast<std::size_t>(i + extent[0] * (j + extent[1] * k))] =
            value_at(box.low[0] + i, box.low[1] + j, box.low[2] + k);
  // The checksum h5 computes while packing and unpacking, timed alone: the CPU share of a write or a read.
  MPI_Barrier(comm);
  const double c0 = MPI_Wtime();
  const std::uint64_t written_sum = checksum(comm, box, args.global, field);
  const double checksum_s = MPI_Wtime() - c0;
  const double field_bytes = 8.0 * double(args.global[0]) * double(args.global[1]) * double(args.global[2]);
  const nlohmann::json size = {args.global[0], args.global[1], args.global[2]};
  const std::string path = (fs::path(args.dir) / ("hympi-bench-io-" + std::to_string(::getpid()) + ".h5")).string();
  std::string shared_path(path);
  shared_path.resize(4096, '\0');
  MPI_Bcast(shared_path.data(), 4096, MPI_CHAR, 0, comm);  // rank 0's pid names the file
  const std::string file = shared_path.c_str();

  std::vector<Case> cases;
  for (const auto& b : args.slab)
    for (const auto& t : args.transfer)
      for (const auto& h : args.hints)
        for (const auto& a : args.alignment)
          for (const auto& s : args.sieve) cases.push_back({s, a, t, h, b});

  bool all_verified = true;
  for (const Case& c : cases) {
    h5::H5Options options;
    options.sieve_bytes = byte_size(c.sieve, fs_block, "--sieve");
    options.alignment = byte_size(c.alignment, fs_block, "--alignment");
    options.collective = c.transfer == "collective";
    options.hints = hint_set(c.hints);
    options.slab_bytes = slab_size(c.slab);
    options.validate();
    std::vector<double> write_s, header_s, data_s, commit_s, read_s, open_s, read_data_s, resident;
    double file_bytes = 0;
    bool verified = true;
    std::uint64_t read_sum = 0;
    for (int rep = 0; rep < args.reps; ++rep) {
      MPI_Barrier(comm);
      const double t0 = MPI_Wtime();
      {
        h5::CheckpointWriter writer(comm, file, options, {"bench-io", size, rep, 0.0,
                                                          std::to_string(ranks) + "x" +
                                                              std::to_string(omp_get_max_threads()),
                                                          nlohmann::json::object()});
        const double t1 = MPI_Wtime();
        writer.file().write("u", block, field);
        const double t2 = MPI_Wtime();
        writer.commit();
        MPI_Barrier(comm);
        const double t3 = MPI_Wtime();
        header_s.push_back(t1 - t0);
        data_s.push_back(t2 - t1);
        commit_s.push_back(t3 - t2);
        write_s.push_back(t3 - t0);
      }
      double drop = 0;
      if (rank == 0) {
        file_bytes = double(fs::file_size(file));
        drop = drop_from_cache(file);
      }
      resident.push_back(drop);
      std::fill(back.begin(), back.end(), 0.0);
      MPI_Barrier(comm);
      const double r0 = MPI_Wtime();
      {
        h5::CheckpointReader reader(comm, file, options, "bench-io", size);
        const double r1 = MPI_Wtime();
        reader.file().read("u", block, back);
        const double r2 = MPI_Wtime();
        reader.file().close();
        open_s.push_back(r1 - r0);
        read_data_s.push_back(r2 - r1);
      }
      MPI_Barrier(comm);
      read_s.push_back(MPI_Wtime() - r0);
      read_sum = checksum(comm, box, args.global, back);
      int same = std::memcmp(back.data(), field.data(), field.size() * sizeof(double)) == 0 ? 1 : 0;
      MPI_Allreduce(MPI_IN_PLACE, &same, 1, MPI_INT, MPI_LAND, comm);
      verified = verified && same == 1 && read_sum == written_sum;
    }
    if (rank == 0 && !args.keep) fs::remove(file);
    all_verified = all_verified && verified;
    if (rank == 0) {
      const double w = median(write_s), r = median(read_s);
      const std::string name =
          c.transfer + "/sieve=" + c.sieve + "/align=" + c.alignment + "/hints=" + c.hints + "/slab=" + c.slab;
      const nlohmann::json record{
          {"bench", "io"},
          {"ranks", ranks},
          {"threads", omp_get_max_threads()},
          {"global", args.global},
          {"process_grid", dims},
          {"field_bytes", field_bytes},
          {"file_bytes", file_bytes},
          {"fs_block", fs_block},
          {"dir", fs::absolute(args.dir).string()},
          {"case", name},
          {"options", options.to_json()},
          {"reps", args.reps},
          {"write_s", w},
          {"read_s", r},
          {"write_gbs", field_bytes / w / kGB},
          {"read_gbs", field_bytes / r / kGB},
          {"write_samples_s", write_s},
          {"read_samples_s", read_s},
          {"header_s", median(header_s)},
          {"data_s", median(data_s)},
          {"commit_s", median(commit_s)},
          {"open_s", median(open_s)},
          {"read_data_s", median(read_data_s)},
          {"checksum_s", checksum_s},
          {"resident_before_read", *std::max_element(resident.begin(), resident.end())},
          {"checksum_written", std::to_string(written_sum)},
          {"checksum_read", std::to_string(read_sum)},
          {"verified", verified}};
      std::printf("HYMPI_BENCH %s\n", record.dump().c_str());
      std::fflush(stdout);
    }
  }
  // After every case, so that no case gets pages this freed: a fresh buffer of the block's size, touched.
  MPI_Barrier(comm);
  double touch_s = MPI_Wtime();
  {
    std::vector<double> fresh(field.size(), 1.0);
    touch_s = MPI_Wtime() - touch_s;
    volatile double sink = fresh.empty() ? 0.0 : fresh.back();
    (void)sink;
  }
  MPI_Allreduce(MPI_IN_PLACE, &touch_s, 1, MPI_DOUBLE, MPI_MAX, comm);
  if (rank == 0) {
    const double bytes = 8.0 * double(field.size());
    const nlohmann::json record{{"bench", "io-memory"}, {"ranks", ranks}, {"threads", omp_get_max_threads()},
                                {"bytes_per_rank", bytes}, {"first_touch_s", touch_s},
                                {"first_touch_gbs", bytes / touch_s / kGB}};
    std::printf("HYMPI_BENCH %s\n", record.dump().c_str());
  }
  return all_verified ? 0 : 1;
}

}  // namespace

int main(int argc, char** argv) {
  // hympi::h5 throws its errors on every rank alike: one line, exit 1, no abort.
  return hympi::bench::run_main<h5::IoError>(kProg, kUsage, argc, argv,
                                             [&] { return run(parse_args(argc, argv), MPI_COMM_WORLD); });
}
