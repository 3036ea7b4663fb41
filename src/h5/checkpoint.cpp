#include "hympi/h5/checkpoint.hpp"

#include <fcntl.h>
#include <sys/file.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <chrono>
#include <cstdio>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <iomanip>
#include <numeric>
#include <sstream>
#include <system_error>
#include <thread>

#include "h5_handles.hpp"
#include "hympi/core/checksum.hpp"
#include "hympi/core/comm.hpp"

#ifndef HYMPI_VERSION
#error "HYMPI_VERSION must be defined by the build"
#endif

namespace hympi::h5 {

namespace fs = std::filesystem;

namespace {

/// Makes a rename durable: the directory entry is on disk once this returns.
void sync_directory(const fs::path& file) {
  const fs::path dir = file.has_parent_path() ? file.parent_path() : fs::path(".");
  const OpenFile opened(::open(dir.c_str(), O_RDONLY | O_DIRECTORY | O_CLOEXEC));
  if (opened.valid()) ::fsync(opened.get());
}

/// Renames `from` onto `to` (atomic on POSIX file systems) and syncs the directory; the failure naming both.
LocalOutcome rename_durably(const std::string& from, const std::string& to) {
  if (std::rename(from.c_str(), to.c_str()) != 0)
    return {true, false, "cannot rename " + from + " to " + to + ": " + std::strerror(errno)};
  sync_directory(to);
  return {};
}

/// Collective: rank 0 renames `from` onto `to` (rename_durably); every rank throws IoError naming both when it
/// failed.
void publish(MPI_Comm comm, const std::string& from, const std::string& to) {
  agree(comm, Comm(comm, false).rank() == 0 ? rename_durably(from, to) : LocalOutcome{});
}

double file_bytes(const std::string& path) {
  std::error_code ec;
  const auto size = fs::file_size(path, ec);
  return ec ? 0.0 : double(size);
}

/// Writes `text` to `path` by way of a temporary file and a rename (rank 0 only), so readers never
/// see half a sidecar; throws IoError.
void write_atomically(const std::string& path, const std::string& text) {
  const std::string temporary = path + ".tmp";
  {
    std::ofstream out(temporary, std::ios::trunc);
    out << text;
    out.flush();
    if (!out) throw IoError("cannot write " + temporary);
  }
  if (std::rename(temporary.c_str(), path.c_str()) != 0)
    throw IoError("cannot rename " + temporary + " to " + path + ": " + std::strerror(errno));
}

/// The dataset a snapshot field is written to: "<grid>/<name>", or "<name>" on the only mesh.
std::string dataset_of(const SnapshotField& field) {
  return field.grid.empty() ? field.name : field.grid + "/" + field.name;
}

/// The attribute that holds header_checksum().
constexpr const char* kHeaderChecksum = "header_checksum";

/// The header as the root attributes of a checkpoint hold it, `get` reading one attribute (File::attribute or
/// the serial reader), and the header checksum it stores; throws BadFile naming `path` when the format, an
/// attribute or the checksum is missing or of the wrong type. One decoder for the launched app and the check
/// before launch.
std::pair<CheckpointHeader, std::string> decode_header(const std::string& path,
                                                       const std::function<bool(const std::string&)>& has,
                                                       const std::function<nlohmann::json(const std::string&)>& get) {
  if (!has("format") || get("format") != kCheckpointFormat)
    throw BadFile(path + " is not a hympi checkpoint (no format \"" + kCheckpointFormat + "\")");
  // Checkpoints written before the header had a checksum are refused: what they carry cannot be told from a
  // damaged header, and a restart from one could only be trusted after its verification failed or not.
  if (!has(kHeaderChecksum))
    throw BadFile(path + " has no header checksum (written by an older hympi): start the run anew");
  CheckpointHeader header;
  try {
    header.app = get("app").get<std::string>();
    header.global_size = get("global_size");
    header.step = static_cast<long>(get("step").get<double>());
    header.time = get("time").get<double>();
    header.layout = get("layout").get<std::string>();
    header.state = get("state");
    const nlohmann::json stored = get(kHeaderChecksum);
    return {header, stored.is_string() ? stored.get<std::string>() : stored.dump()};
  } catch (const nlohmann::json::exception& e) {
    throw BadFile(path + ": damaged checkpoint header (" + e.what() + ")");
  }
}

/// Everything a restart demands of a decoded header: this app's and this size's first (another run's intact
/// checkpoint is named as such), then intact (its checksum), then the app's own `check`. Throws BadFile naming
/// `path`.
void check_header(const std::string& path, const CheckpointHeader& header, const std::string& stored_checksum,
                  const std::string& app, const nlohmann::json& global_size, const HeaderCheck& check) {
  if (header.app != app) throw BadFile(path + " is a checkpoint of " + header.app + ", not of " + app);
  if (header.global_size != global_size)
    throw BadFile(path + " is a checkpoint of size " + header.global_size.dump() + ", this run's is " +
                  global_size.dump());
  if (stored_checksum != header_checksum(header))
    throw BadFile(path + ": checkpoint header fails its checksum (step, time, layout or state changed): the file "
                  "is corrupted");
  if (check) check(path, header);
}

/// The direct I/O alignment (direct_io_alignment) of the file system checkpoint `path` is written to, asked by
/// rank 0 of a file it creates under the checkpoint's temporary name and removes again (the run holds the
/// checkpoint's lock, so that name is no other run's), and the same on every rank: the datasets' places in the
/// file are agreed before it is created. 0 when it cannot be told.
std::size_t agreed_direct_alignment(MPI_Comm comm, const std::string& path) {
  unsigned long alignment = 0;
  if (Comm(comm, false).rank() == 0) {
    const std::string probe = CheckpointWriter::temporary_of(path);
    const OpenFile created(::open(probe.c_str(), O_WRONLY | O_CREAT | O_CLOEXEC, 0644));
    if (created.valid()) {
      alignment = direct_io_alignment(probe);
      ::unlink(probe.c_str());
    }
  }
  HYMPI_MPI(MPI_Bcast(&alignment, 1, MPI_UNSIGNED_LONG, 0, comm));
  return std::size_t(alignment);
}

/// `options` with every dataset of at least `alignment` bytes starting on a multiple of it, so that the bulk of
/// each rank's part of it can be written with O_DIRECT; an alignment the options ask for already is kept when it
/// is a multiple.
H5Options aligned_for_direct_io(H5Options options, std::size_t alignment) {
  if (alignment == 0 || (options.alignment > 0 && options.alignment % alignment == 0)) return options;
  options.alignment_threshold = options.alignment > 0 ? std::min(options.alignment_threshold, alignment) : alignment;
  options.alignment = options.alignment > 0 ? std::lcm(options.alignment, alignment) : alignment;
  return options;
}

void require_directory(const std::string& option, const std::string& path) {
  const fs::path parent = fs::path(path).has_parent_path() ? fs::path(path).parent_path() : fs::path(".");
  std::error_code ec;  // a name the system refuses to look up (too long) is bad input, not a filesystem_error
  if (!fs::is_directory(parent, ec))
    throw InvalidArgument(option + " " + path + ": directory " + parent.string() +
                          (ec ? " cannot be examined (" + ec.message() + ")" : " does not exist"));
}

/// Refuses an existing `path` that an output would replace by renaming a finished file onto it, unless it is a
/// regular file: the rename would put a file in place of a device or FIFO (/dev/null included), and would replace
/// a symbolic link itself instead of writing where it points.
void require_replaceable(const std::string& option, const std::string& path) {
  std::error_code ec;
  const fs::file_status status = fs::symlink_status(path, ec);
  if (status.type() == fs::file_type::not_found || status.type() == fs::file_type::regular) return;
  if (status.type() == fs::file_type::symlink)
    throw InvalidArgument(option + " " + path + " is a symbolic link (to " + fs::read_symlink(path, ec).string() +
                          "): the finished file is renamed onto the name, which would replace the link; name the "
                          "file it points to");
  throw InvalidArgument(option + " " + path + " " + file_problem(path) + ", not a file an output may replace");
}

/// The names a snapshot series of `prefix` writes: PREFIX-<step>.h5 (six digits or more), PREFIX.xmf and
/// PREFIX.snapshots.json, in PREFIX's directory.
bool is_snapshot_file(const std::string& prefix, const std::string& path) {
  std::error_code ec;
  const fs::path series = fs::weakly_canonical(fs::absolute(prefix, ec), ec);
  const fs::path file = fs::weakly_canonical(fs::absolute(path, ec), ec);
  if (ec || series.parent_path() != file.parent_path()) return false;
  const std::string stem = series.filename().string(), name = file.filename().string();
  if (name == stem + ".xmf" || name == stem + ".snapshots.json") return true;
  if (!name.starts_with(stem + "-") || !name.ends_with(".h5")) return false;
  const std::string step = name.substr(stem.size() + 1, name.size() - stem.size() - 4);
  return step.size() >= 6 && std::all_of(step.begin(), step.end(), [](char c) { return c >= '0' && c <= '9'; });
}

}  // namespace

std::string option_writing_over(const IoOptions& io, const std::string& path) {
  std::error_code ec;
  if (path.empty() || !fs::exists(path, ec)) return "";
  if (!io.checkpoint_path.empty() && fs::equivalent(io.checkpoint_path, path, ec)) return "--checkpoint";
  return !io.snapshot_prefix.empty() && is_snapshot_file(io.snapshot_prefix, path) ? "--snapshot" : "";
}

CheckpointWriter::CheckpointWriter(MPI_Comm comm, const std::string& path, const H5Options& options,
                                   const CheckpointHeader& header)
    : comm_(comm), path_(path), file_(File::create(comm, temporary_of(path), options)) {
  try {
    file_.set_text("format", kCheckpointFormat);
    file_.set_text("app", header.app);
    file_.set_attribute("global_size", header.global_size);
    file_.set_number("step", double(header.step));
    file_.set_number("time", header.time);
    file_.set_text("layout", header.layout);
    file_.set_text("hympi_version", HYMPI_VERSION);
    file_.set_attribute("state", header.state);
    file_.set_attribute("h5_options", options.to_json());
    file_.set_text(kHeaderChecksum, header_checksum(header));
  } catch (...) {
    // The destructor does not run for a constructor that throws: drop the temporary here.
    file_.close_quietly();
    if (Comm(comm_, false).rank() == 0) std::remove(temporary_path().c_str());
    throw;
  }
}

CheckpointWriter::~CheckpointWriter() {
  if (released_) return;
  file_.close_quietly();
  if (Comm(comm_, false).rank() == 0) std::remove(temporary_path().c_str());
}

void CheckpointWriter::commit() {
  file_.close();
  publish(comm_, temporary_path(), path_);
  released_ = true;
}

void CheckpointWriter::hand_over() {
  file_.close();
  released_ = true;
}

CheckpointReader::CheckpointReader(MPI_Comm comm, const std::string& path, const H5Options& options,
                                   const std::string& app, const nlohmann::json& global_size,
                                   const HeaderCheck& check)
    : file_(File::open(comm, path, options)) {
  // Every rank reads the same attributes (collective metadata reads), so every rank throws alike.
  try {
    const auto [header, stored] = decode_header(
        path, [&](const std::string& key) { return file_.has_attribute(key); },
        [&](const std::string& key) { return file_.attribute(key); });
    check_header(path, header, stored, app, global_size, check);
    header_ = header;
  } catch (const BadFile&) {
    file_.close();
    throw;
  }
}

std::string header_checksum(const CheckpointHeader& header) {
  // Over the values as a reader decodes them (the state's JSON text re-dumped is the same text), so the
  // checksum does not depend on how HDF5 stores the attributes, only on what they say.
  const std::string text = nlohmann::json::array({header.app, header.global_size, header.step, header.time,
                                                  header.layout, header.state})
                               .dump();
  std::uint64_t sum = 0;
  for (std::size_t i = 0; i < text.size(); ++i)
    sum += element_hash(i, static_cast<unsigned char>(text[i]));
  return checksum_hex(sum);
}

CheckpointHeader check_checkpoint_file(const std::string& path, const std::string& app,
                                       const nlohmann::json& global_size, const HeaderCheck& check) {
  detail::SilencedErrors quiet;
  // The default (sec2) driver: one process, no MPI, as h5dump reads it.
  const detail::Handle file(H5Fopen(path.c_str(), H5F_ACC_RDONLY, H5P_DEFAULT), H5Fclose);
  if (!file.valid()) quiet.keep();
  if (!file.valid())
    throw BadFile("cannot open " + path + " (missing, truncated or not HDF5): " + detail::error_stack_message());
  const auto [header, stored] = decode_header(
      path, [&](const std::string& key) { return detail::has_attribute(file.get(), key, "/"); },
      [&](const std::string& key) { return detail::read_attribute(file.get(), path, key, "/"); });
  check_header(path, header, stored, app, global_size, check);
  detail::verify_stored_checksums(file.get(), path);
  return header;
}

SnapshotSeries::SnapshotSeries(MPI_Comm comm, std::string prefix, H5Options options)
    : comm_(comm), prefix_(std::move(prefix)), options_(std::move(options)) {
  if (prefix_.empty()) throw InvalidArgument("snapshot prefix is empty");
  require_directory("--snapshot", prefix_);
}

double SnapshotSeries::write(long step, double time, std::span<const SnapshotField> fields) {
  std::ostringstream name;
  name << prefix_ << "-" << std::setw(6) << std::setfill('0') << step << ".h5";
  const std::string path = name.str();
  try {
    File file = File::create(comm_, path + ".tmp", options_);
    file.set_number("step", double(step));
    file.set_number("time", time);
    file.set_text("hympi_version", HYMPI_VERSION);
    for (const auto& f : fields)
      file.write(dataset_of(f), f.block, f.data, Precision::single_precision);
    file.close();
  } catch (...) {
    // As a checkpoint's: a half-written snapshot left behind would take the space the next run needs.
    if (Comm(comm_, false).rank() == 0) std::remove((path + ".tmp").c_str());
    throw;
  }
  publish(comm_, path + ".tmp", path);
  Entry entry{step, time, fs::path(path).filename().string(), {}};
  for (const auto& f : fields) {
    const std::string grid = f.grid.empty() ? "mesh" : f.grid;
    auto it = std::find_if(entry.grids.begin(), entry.grids.end(),
                           [&](const nlohmann::json& g) { return g["name"] == grid; });
    if (it == entry.grids.end()) {
      entry.grids.push_back({{"name", grid},
                             {"global", f.block.global},
                             {"origin", f.origin},
                             {"spacing", f.spacing},
                             {"fields", nlohmann::json::array()}});
      it = std::prev(entry.grids.end());
    }
    (*it)["fields"].push_back({{"name", f.name}, {"dataset", "/" + dataset_of(f)}});
  }
  std::erase_if(entries_, [&](const Entry& e) { return e.step == step; });
  entries_.push_back(std::move(entry));
  agree(comm_, detail::attempt([&] {
          if (Comm(comm_, false).rank() == 0) write_sidecars();
        }));
  return file_bytes(path);
}

void SnapshotSeries::write_sidecars() const {
  nlohmann::json index = nlohmann::json::array();
  std::ostringstream x;
  x << std::setprecision(17);
  x << "<?xml version=\"1.0\" ?>\n<!DOCTYPE Xdmf SYSTEM \"Xdmf.dtd\" []>\n<Xdmf Version=\"3.0\">\n <Domain>\n"
    << "  <Grid Name=\"snapshots\" GridType=\"Collection\" CollectionType=\"Temporal\">\n";
  for (const auto& e : entries_) {
    index.push_back({{"step", e.step}, {"time", e.time}, {"file", e.file}, {"grids", e.grids}});
    const bool several = e.grids.size() > 1;
    if (several)
      x << "   <Grid Name=\"step_" << e.step << "\" GridType=\"Collection\" CollectionType=\"Spatial\">\n"
        << "    <Time Value=\"" << e.time << "\"/>\n";
    for (const auto& g : e.grids) {
      const auto global = g["global"].get<std::array<long, 3>>();
      const auto origin = g["origin"].get<std::array<double, 3>>();
      const auto spacing = g["spacing"].get<std::array<double, 3>>();
      // XDMF lists axes slowest first: (z, y, x), as the datasets are stored.
      const std::string dims =
          std::to_string(global[2]) + " " + std::to_string(global[1]) + " " + std::to_string(global[0]);
      x << "    <Grid Name=\"" << g["name"].get<std::string>() << "\" GridType=\"Uniform\">\n";
      if (!several) x << "     <Time Value=\"" << e.time << "\"/>\n";
      x << "     <Topology TopologyType=\"3DCoRectMesh\" Dimensions=\"" << dims << "\"/>\n"
        << "     <Geometry GeometryType=\"ORIGIN_DXDYDZ\">\n"
        << "      <DataItem Dimensions=\"3\" NumberType=\"Float\" Precision=\"8\" Format=\"XML\">" << origin[2] << " "
        << origin[1] << " " << origin[0] << "</DataItem>\n"
        << "      <DataItem Dimensions=\"3\" NumberType=\"Float\" Precision=\"8\" Format=\"XML\">" << spacing[2] << " "
        << spacing[1] << " " << spacing[0] << "</DataItem>\n"
        << "     </Geometry>\n";
      for (const auto& f : g["fields"])
        x << "     <Attribute Name=\"" << f["name"].get<std::string>() << "\" AttributeType=\"Scalar\" Center=\"Node\">\n"
          << "      <DataItem Dimensions=\"" << dims << "\" NumberType=\"Float\" Precision=\"4\" Format=\"HDF\">"
          << e.file << ":" << f["dataset"].get<std::string>() << "</DataItem>\n     </Attribute>\n";
      x << "    </Grid>\n";
    }
    if (several) x << "   </Grid>\n";
  }
  x << "  </Grid>\n </Domain>\n</Xdmf>\n";
  write_atomically(prefix_ + ".xmf", x.str());
  write_atomically(prefix_ + ".snapshots.json", index.dump(1) + "\n");
}

void IoOptions::validate() const {
  h5.validate();
  if (checkpoint_every < 0) throw InvalidArgument("--checkpoint-every must be >= 0, got " + std::to_string(checkpoint_every));
  if (snapshot_every < 0) throw InvalidArgument("--snapshot-every must be >= 0, got " + std::to_string(snapshot_every));
  if (checkpoint_every > 0 && checkpoint_path.empty())
    throw InvalidArgument("--checkpoint-every " + std::to_string(checkpoint_every) + " needs --checkpoint PATH");
  if (snapshot_every > 0 && snapshot_prefix.empty())
    throw InvalidArgument("--snapshot-every " + std::to_string(snapshot_every) + " needs --snapshot PREFIX");
  // A path without a cadence (or with cadence 0) would be accepted and nothing written: say so instead.
  if (checkpoint_every == 0 && !checkpoint_path.empty())
    throw InvalidArgument("--checkpoint " + checkpoint_path + " writes nothing without --checkpoint-every N (N >= 1)");
  if (snapshot_every == 0 && !snapshot_prefix.empty())
    throw InvalidArgument("--snapshot " + snapshot_prefix + " writes nothing without --snapshot-every N (N >= 1)");
  if (!checkpoint_path.empty()) {
    require_directory("--checkpoint", checkpoint_path);
    std::error_code ec;
    if (fs::is_directory(checkpoint_path, ec))
      throw InvalidArgument("--checkpoint " + checkpoint_path + " is a directory, not a file name");
    if (ec && ec != std::errc::no_such_file_or_directory)
      throw InvalidArgument("--checkpoint " + checkpoint_path + " cannot be examined (" + ec.message() + ")");
    require_replaceable("--checkpoint", checkpoint_path);
  }
  if (!snapshot_prefix.empty()) {
    require_directory("--snapshot", snapshot_prefix);
    std::error_code ec;
    if (fs::path(snapshot_prefix).filename().empty() || fs::is_directory(snapshot_prefix, ec))
      throw InvalidArgument("--snapshot " + snapshot_prefix + " names a directory; give the start of the files' "
                            "names (" + (fs::path(snapshot_prefix) / "run").lexically_normal().string() + ")");
    require_replaceable("--snapshot", snapshot_prefix + ".xmf");
    require_replaceable("--snapshot", snapshot_prefix + ".snapshots.json");
    // A restart file (or the checkpoint) named like a snapshot would be overwritten by the series.
    for (const auto& [option, path] : {std::pair{"--restart", &restart_path}, {"--checkpoint", &checkpoint_path}})
      if (!path->empty() && is_snapshot_file(snapshot_prefix, *path))
        throw InvalidArgument(std::string(option) + " " + *path + " is one of the files --snapshot " + snapshot_prefix +
                              " writes");
  }
  if (!restart_path.empty()) {
    // file_problem asks without throwing: a name too long to look up is bad input like a missing file.
    const std::string problem = file_problem(restart_path);
    if (problem == "does not exist") throw BadFile("--restart " + restart_path + ": no such file");
    if (!problem.empty()) throw BadFile("--restart " + restart_path + ": " + problem);
  }
}

nlohmann::json IoOptions::to_json() const {
  return {{"checkpoint", checkpoint_path},
          {"checkpoint_every", checkpoint_every},
          {"restart", restart_path},
          {"snapshot", snapshot_prefix},
          {"snapshot_every", snapshot_every},
          {"h5", h5.to_json()}};
}

namespace {

/// Whether `fd` is still the file at `path`: a holder that let go unlinks the lock file, and a waiter that opened
/// it before then holds a lock on a file nobody else will ever open, so it must open the path again.
bool still_linked(int fd, const std::string& path) {
  struct stat opened {}, named {};
  return ::fstat(fd, &opened) == 0 && ::stat(path.c_str(), &named) == 0 && opened.st_dev == named.st_dev &&
         opened.st_ino == named.st_ino;
}

}  // namespace

CheckpointLock::CheckpointLock(MPI_Comm comm, const std::string& path, double wait_s) {
  LocalOutcome outcome;
  if (Comm(comm, false).rank() == 0) {
    const std::string lock = lock_path(path);
    const auto deadline = std::chrono::steady_clock::now() + std::chrono::duration<double>(wait_s);
    for (;;) {
      OpenFile opened(::open(lock.c_str(), O_RDWR | O_CREAT | O_CLOEXEC, 0644));
      if (!opened.valid()) {
        outcome = {true, false, "cannot open " + lock + ": " + std::strerror(errno)};
        break;
      }
      if (::flock(opened.get(), LOCK_EX | LOCK_NB) == 0) {
        if (still_linked(opened.get(), lock)) {
          fd_ = opened.release();
          break;
        }
        continue;  // the holder let go and removed it: take the new one
      }
      const int error = errno;
      opened.close();
      if (error == ENOLCK || error == EOPNOTSUPP || error == ENOSYS) break;
      if ((error != EWOULDBLOCK && error != EINTR) || std::chrono::steady_clock::now() >= deadline) {
        outcome = {true, false,
                   error == EWOULDBLOCK
                       ? "checkpoint " + path + " is being written by another process (it holds " + lock + " after " +
                             std::to_string(int(wait_s)) + " s); two runs must not share a checkpoint"
                       : "cannot lock " + lock + ": " + std::strerror(error)};
        break;
      }
      std::this_thread::sleep_for(std::chrono::milliseconds(50));
    }
    if (fd_ >= 0) lock_ = lock;
  }
  agree(comm, outcome);
}

CheckpointLock::~CheckpointLock() {
  if (fd_ < 0) return;
  // Removed while still held, so no run is left a lock file; a waiter that opened it checks still_linked.
  ::unlink(lock_.c_str());
  ::close(fd_);
}

BackgroundWriter::~BackgroundWriter() { wait_quietly(); }

void BackgroundWriter::wait_quietly() noexcept {
  if (!job_.valid()) return;
  try {
    (void)job_.get();
  } catch (...) {  // NOLINT(bugprone-empty-catch): the caller is unwinding already
  }
}

void BackgroundWriter::start(std::function<void()> job) {
  (void)wait();
  job_ = std::async(std::launch::async, [job = std::move(job)] {
    const auto begin = std::chrono::steady_clock::now();
    job();
    return std::chrono::duration<double>(std::chrono::steady_clock::now() - begin).count();
  });
}

double BackgroundWriter::wait() {
  if (!job_.valid()) return 0.0;
  return job_.get();  // invalidates job_ even when it rethrows the job's exception
}

bool BackgroundWriter::ended() const {
  return job_.valid() && job_.wait_for(std::chrono::seconds(0)) == std::future_status::ready;
}

WriteAgreement::WriteAgreement(MPI_Comm comm) : comm_(Comm::duplicate(comm)) {}

void WriteAgreement::start(int state) {
  if (pending()) throw Error("a write agreement is pending already");
  state_ = state;
  HYMPI_MPI(MPI_Iallreduce(&state_, &result_, 1, MPI_INT, MPI_MIN, comm_.get(), &request_));
}

bool WriteAgreement::test() {
  if (!pending()) return false;
  int done = 0;
  HYMPI_MPI(MPI_Test(&request_, &done, MPI_STATUS_IGNORE));
  return done != 0;
}

void WriteAgreement::wait() {
  if (pending()) HYMPI_MPI(MPI_Wait(&request_, MPI_STATUS_IGNORE));
}

IoSession::IoSession(MPI_Comm comm, IoOptions options, std::string app, nlohmann::json global_size,
                     std::string layout, HeaderCheck check)
    : comm_(comm), options_(std::move(options)), app_(std::move(app)), global_size_(std::move(global_size)),
      layout_(std::move(layout)), check_(std::move(check)), checkpoint_h5_(options_.h5) {
  if (restarting()) {
    const double start = MPI_Wtime();
    restart_.emplace(comm_, options_.restart_path, options_.h5, app_, global_size_, check_);
    restart_open_s_ = MPI_Wtime() - start;
  }
  if (!options_.checkpoint_path.empty()) {
    lock_.emplace(comm_, options_.checkpoint_path);
    agreement_.emplace(comm_);
    // Chunked datasets are written by HDF5 on the solver thread, not staged.
    if (options_.h5.chunk[0] == 0) {
      const std::size_t alignment = agreed_direct_alignment(comm_, options_.checkpoint_path);
      checkpoint_h5_ = aligned_for_direct_io(options_.h5, alignment);
      staging_ = StagedData(alignment);
    }
  }
  if (!options_.snapshot_prefix.empty()) snapshots_.emplace(comm_, options_.snapshot_prefix, options_.h5);
}

bool IoSession::checkpoint_due(long step) const {
  // A checkpoint of the step a run restarted from would only rewrite the file it came from.
  return options_.checkpoint_every > 0 && step > 0 && step % options_.checkpoint_every == 0 &&
         step != totals_.restart_step;
}

bool IoSession::snapshot_due(long step) const {
  return options_.snapshot_every > 0 && step % options_.snapshot_every == 0;
}

CheckpointHeader IoSession::restart(const std::function<void(File&, const CheckpointHeader&)>& read) {
  const double start = MPI_Wtime();
  if (!restart_) {
    restart_.emplace(comm_, options_.restart_path, options_.h5, app_, global_size_, check_);
    restart_open_s_ = 0;
  }
  CheckpointReader& reader = *restart_;
  try {
    read(reader.file(), reader.header());
  } catch (const nlohmann::json::exception& e) {
    // The header is the same on every rank, so every rank gets here alike: a state the app cannot read is the
    // file's fault (exit 2), never an abort.
    reader.file().close();
    throw BadFile(options_.restart_path + ": checkpoint state unreadable (" + e.what() + ")");
  }
  reader.file().close();
  const CheckpointHeader header = reader.header();
  restart_.reset();
  totals_.restart_s = restart_open_s_ + MPI_Wtime() - start;
  totals_.restart_bytes = file_bytes(options_.restart_path);
  totals_.restart_step = header.step;
  return header;
}

IoSession::~IoSession() {
  // Waited for first: rank 0's rename, if still in flight, writes rename_failure_, a member destroyed before
  // background_ is.
  background_.wait_quietly();
  // Unwinding (or finish() never called): the write has ended, but no collective may run here to publish it.
  if (!in_flight_ || published_) return;
  if (Comm(comm_, false).rank() == 0) std::remove(CheckpointWriter::temporary_of(options_.checkpoint_path).c_str());
}

void IoSession::checkpoint(long step, double time, const nlohmann::json& state,
                           const std::function<void(File&)>& write) {
  const double start = MPI_Wtime();
  publish_in_flight();
  CheckpointWriter writer(comm_, options_.checkpoint_path, checkpoint_h5_,
                          CheckpointHeader{app_, global_size_, step, time, layout_, state});
  if (options_.h5.chunk[0] > 0) {
    write(writer.file());
    writer.commit();
    totals_.checkpoints += 1;
    totals_.checkpoint_bytes += file_bytes(options_.checkpoint_path);
  } else {
    staging_.clear();
    writer.file().stage_into(staging_);
    write(writer.file());
    writer.hand_over();
    in_flight_step_ = step;
    in_flight_ = true;
    published_ = failed_ = write_ended_ = write_failed_ = false;
    rename_failure_.clear();
    background_.start([this, temporary = writer.temporary_path()] { written_ = staging_.write_into(temporary); });
    step_writing_ = true;
  }
  totals_.checkpoint_s += MPI_Wtime() - start;
}

void IoSession::progress() {
  count_step();
  if (in_flight_ && !published_ && !failed_) {
    const double start = MPI_Wtime();
    if (!agreement_->pending()) agreement_->start(write_state(false));
    if (agreement_->test()) agreed(agreement_->result());
    totals_.checkpoint_s += MPI_Wtime() - start;
  }
  // Whether the next step runs beside the writer follows from this agreement, the same on every rank (a checkpoint
  // started during the step counts it too). Rank 0's rename after it (a journal commit, mostly waiting) counts quiet.
  step_writing_ = in_flight_ && !published_ && !failed_;
  io_seconds_at_step_start_ = totals_.checkpoint_s + totals_.snapshot_s;
  step_start_ = MPI_Wtime();
}

void IoSession::count_step() {
  if (step_start_ < 0) return;
  const double seconds =
      MPI_Wtime() - step_start_ - (totals_.checkpoint_s + totals_.snapshot_s - io_seconds_at_step_start_);
  // Before the first checkpoint a run warms up (first touches, the caches): those steps count only as a reference.
  const bool counted = totals_.checkpoints > 0 || in_flight_;
  if (!step_writing_) {
    recent_quiet_[recent_quiet_count_++ % recent_quiet_.size()] = seconds;
    if (counted) {
      totals_.steps_quiet += 1;
      totals_.steps_quiet_s += seconds;
    }
    return;
  }
  totals_.steps_writing += 1;
  totals_.steps_writing_s += seconds;
  auto recent = recent_quiet_;  // a copy: nth_element reorders, the ring keeps its order
  const auto end = recent.begin() + static_cast<long>(std::min(recent_quiet_count_, recent.size()));
  if (end == recent.begin()) return;  // no quiet step yet to compare with: the app checkpointed every step
  const auto middle = recent.begin() + (end - recent.begin()) / 2;
  std::nth_element(recent.begin(), middle, end);
  totals_.steps_writing_excess_s += seconds - *middle;
}

int IoSession::write_state(bool wait) {
  if (!write_ended_) {
    if (!wait && !background_.ended()) return WriteAgreement::kStillWriting;
    const LocalOutcome outcome = attempt([&] { write_seconds_ = background_.wait(); });
    write_ended_ = true;
    write_failed_ = outcome.failed;
    write_failure_ = outcome.message;
    // Measured before this rank says "written": until then nobody renames the temporary file.
    write_bytes_ = outcome.failed ? 0.0 : file_bytes(CheckpointWriter::temporary_of(options_.checkpoint_path));
  }
  return write_failed_ ? WriteAgreement::kWriteFailed : WriteAgreement::kWritten;
}

void IoSession::agreed(int result) {
  if (result == WriteAgreement::kWritten) {
    // Every rank's part is on disk: publishing cannot wait for a collective, so rank 0 renames now and a failure
    // is said at the next checkpoint() or finish(). The rename goes to the background writer, whose write has
    // ended: its directory sync is a journal commit (~25 ms on ext4) that the solver thread need not wait for.
    published_ = true;
    if (Comm(comm_, false).rank() == 0)
      background_.start([this, temporary = CheckpointWriter::temporary_of(options_.checkpoint_path),
                         path = options_.checkpoint_path] {
        rename_failure_ = rename_durably(temporary, path).message;
      });
  } else if (result == WriteAgreement::kWriteFailed) {
    failed_ = true;
  }
}

void IoSession::finish() {
  const double start = MPI_Wtime();
  publish_in_flight();
  totals_.checkpoint_s += MPI_Wtime() - start;
}

void IoSession::publish_in_flight() {
  // Every rank started the checkpoint in flight together, so every rank gets here alike.
  if (!in_flight_) return;
  // Ends the agreements progress() began. Each rank starts the next only when the one before said "still writing",
  // so every rank issues the same ones; once each has waited for its own writer, the next says written or failed.
  while (!published_ && !failed_) {
    if (!agreement_->pending()) agreement_->start(write_state(true));
    agreement_->wait();
    agreed(agreement_->result());
  }
  in_flight_ = false;
  if (failed_) {
    const std::string temporary = CheckpointWriter::temporary_of(options_.checkpoint_path);
    (void)write_state(true);  // this rank's own writer may still run: the file goes only after every one ended
    // Some rank's write failed: every rank throws its reason (the lowest failing rank's).
    try {
      agree(comm_, as_io_failure("checkpoint of step " + std::to_string(in_flight_step_),
                                 LocalOutcome{write_failed_, false, write_failure_}));
    } catch (const IoError&) {
      if (Comm(comm_, false).rank() == 0) std::remove(temporary.c_str());
      throw;
    }
  }
  // Rank 0's rename, if still in flight; rename_durably reports its failures rather than throw them.
  double rename_seconds = 0;
  const LocalOutcome renamed = attempt([&] { rename_seconds = background_.wait(); });
  if (renamed.failed && rename_failure_.empty()) rename_failure_ = renamed.message;
  agree(comm_, LocalOutcome{!rename_failure_.empty(), false, rename_failure_});
  totals_.checkpoints += 1;
  totals_.checkpoint_background_s += write_seconds_ + rename_seconds;
  totals_.checkpoint_direct_bytes += written_.direct_bytes;
  totals_.checkpoint_buffered_bytes += written_.buffered_bytes;
  if (!written_.buffered_reason.empty()) totals_.checkpoint_buffered_reason = written_.buffered_reason;
  totals_.checkpoint_bytes += write_bytes_;
}

void IoSession::snapshot(long step, double time, std::span<const SnapshotField> fields) {
  if (!snapshots_) throw InvalidArgument("snapshot asked for without --snapshot PREFIX");
  const double start = MPI_Wtime();
  totals_.snapshot_bytes += snapshots_->write(step, time, fields);
  totals_.snapshots += 1;
  totals_.snapshot_s += MPI_Wtime() - start;
}

nlohmann::json IoSession::to_json() const {
  nlohmann::json out = options_.to_json();
  out.update({{"checkpoints", totals_.checkpoints},
              {"checkpoint_s", totals_.checkpoint_s},
              {"checkpoint_bytes", totals_.checkpoint_bytes},
              {"checkpoint_background_s", totals_.checkpoint_background_s},
              {"checkpoint_direct_bytes", totals_.checkpoint_direct_bytes},
              {"checkpoint_buffered_bytes", totals_.checkpoint_buffered_bytes},
              {"checkpoint_buffered_reason", totals_.checkpoint_buffered_reason},
              {"snapshots", totals_.snapshots},
              {"snapshot_s", totals_.snapshot_s},
              {"snapshot_bytes", totals_.snapshot_bytes},
              {"restart_s", totals_.restart_s},
              {"restart_bytes", totals_.restart_bytes},
              {"restart_step", totals_.restart_step},
              {"steps_writing", totals_.steps_writing},
              {"steps_writing_s", totals_.steps_writing_s},
              {"steps_quiet", totals_.steps_quiet},
              {"steps_quiet_s", totals_.steps_quiet_s},
              {"steps_writing_excess_s", totals_.steps_writing_excess_s}});
  return out;
}

}  // namespace hympi::h5
