#pragma once
// Checkpoints (atomic: temporary name, flush, rename), restart, and snapshots for viewing.
#include <mpi.h>

#include <array>
#include <functional>
#include <future>
#include <optional>
#include <nlohmann/json.hpp>
#include <span>
#include <string>
#include <vector>

#include "hympi/core/comm.hpp"
#include "hympi/h5/h5.hpp"

namespace hympi::h5 {

/// The format attribute of every hympi checkpoint; a file without it is not one.
inline constexpr const char* kCheckpointFormat = "hympi-checkpoint/1";

/// What a checkpoint records about the run that wrote it, as root attributes of the file.
struct CheckpointHeader {
  std::string app;           ///< the app that wrote it; restart demands the same
  nlohmann::json global_size;  ///< the problem size; restart demands the same (any JSON the app chooses)
  long step = 0;             ///< iterations or time steps done
  double time = 0.0;         ///< simulated time (0 for iterative solvers)
  std::string layout;        ///< ranks x threads that wrote it, e.g. "2x1"
  nlohmann::json state = nlohmann::json::object();  ///< the app's small state (residual history, scalars)
};

/// The checksum "header_checksum" a checkpoint stores over its header (app, size, step, time, layout, state), as
/// 16 hex digits: a changed digit in any of them is refused on restart rather than surfacing later as a failed
/// verification. Never throws.
[[nodiscard]] std::string header_checksum(const CheckpointHeader& header);

/// What a restart demands of a checkpoint's header beyond its app and size (the step bound of this run, the
/// state the app needs); throws BadFile naming `path`. The app's launched run and the check before launch
/// (check_checkpoint_file) call the same one.
using HeaderCheck = std::function<void(const std::string& path, const CheckpointHeader& header)>;

/// Checks the checkpoint `path` without MPI (HDF5 serially, one process), as a restart would: an HDF5 file with
/// hympi's format, written by `app` for `global_size`, its header checksum intact, `check` satisfied and every
/// dataset's checksum right. Returns its header; throws BadFile naming the file and what is wrong (a missing
/// `path` as "cannot open": IoOptions::validate names it first in the apps). Reads the whole file once.
CheckpointHeader check_checkpoint_file(const std::string& path, const std::string& app,
                                       const nlohmann::json& global_size, const HeaderCheck& check);

/// Writes one checkpoint: to "<path>.tmp", and only commit() (flush, close, rename) puts it under
/// `path`, so a kill or a failure during the write leaves the previous checkpoint untouched.
class CheckpointWriter {
 public:
  /// Creates the temporary file and writes the header (collective); throws IoError naming the file.
  CheckpointWriter(MPI_Comm comm, const std::string& path, const H5Options& options, const CheckpointHeader& header);
  CheckpointWriter(const CheckpointWriter&) = delete;
  CheckpointWriter& operator=(const CheckpointWriter&) = delete;
  /// Removes the temporary file unless commit() succeeded.
  ~CheckpointWriter();
  /// The file to write the datasets into.
  File& file() { return file_; }
  /// Flushes, closes and renames the temporary file onto the final path (collective); throws IoError
  /// (every rank alike) when any of it fails, leaving the previous checkpoint in place.
  void commit();
  /// Closes the file (collective) and leaves "<path>.tmp" to the caller, who writes the data the file staged
  /// (File::stage_into), syncs it and renames it; the destructor no longer removes it.
  void hand_over();
  [[nodiscard]] const std::string& path() const { return path_; }
  [[nodiscard]] std::string temporary_path() const { return temporary_of(path_); }
  /// Where checkpoint `path` is written before it is published: its writer, the background writer that renames it
  /// and every clean-up name the same file.
  [[nodiscard]] static std::string temporary_of(const std::string& path) { return path + ".tmp"; }

 private:
  MPI_Comm comm_;
  std::string path_;
  File file_;
  bool released_ = false;  ///< committed or handed over: the temporary is no longer this writer's to remove
};

/// One job at a time on a thread of its own, overlapping its caller: a checkpoint's data going to disk while the
/// solver goes on. Jobs make no MPI or HDF5 calls (the app may hold only MPI_THREAD_FUNNELED, and HDF5 is not
/// thread-safe): POSIX I/O alone. A job's exception never leaves its thread; wait() hands it to the caller.
class BackgroundWriter {
 public:
  BackgroundWriter() = default;
  BackgroundWriter(const BackgroundWriter&) = delete;
  BackgroundWriter& operator=(const BackgroundWriter&) = delete;
  /// wait_quietly().
  ~BackgroundWriter();
  /// Waits for the job in flight (wait(), rethrowing its failure instead of starting), then starts `job`: at
  /// most one in flight.
  void start(std::function<void()> job);
  /// Waits for the job in flight, dropping its failure: for a caller that is unwinding already.
  void wait_quietly() noexcept;
  /// Waits for the job in flight, if any, and rethrows its exception (with its reason); returns the seconds it
  /// ran on its thread (0 when none was in flight).
  double wait();
  /// Whether a job was started and not yet waited for.
  [[nodiscard]] bool in_flight() const { return job_.valid(); }
  /// Whether the job in flight has ended (wait() then returns at once); false when none is in flight.
  [[nodiscard]] bool ended() const;

 private:
  std::future<double> job_;
};

/// Nonblocking agreements on whether every rank's background write of a checkpoint has ended, and how
/// (IoSession::progress): the minimum over the ranks of each one's state (kWriteFailed, kStillWriting, kWritten),
/// on a duplicate of the session's communicator, so that these collectives keep one order among themselves on every
/// rank whatever the app's own collectives do between them. Destroyed with one pending (a run unwinding), it leaves
/// the request to the end of MPI rather than wait for ranks that may be gone (MPI forbids freeing it).
class WriteAgreement {
 public:
  static constexpr int kWriteFailed = -1;
  static constexpr int kStillWriting = 0;
  static constexpr int kWritten = 1;
  /// Duplicates `comm` (collective).
  explicit WriteAgreement(MPI_Comm comm);
  WriteAgreement(const WriteAgreement&) = delete;
  WriteAgreement& operator=(const WriteAgreement&) = delete;
  /// Starts an agreement on this rank's `state`; throws Error while one is pending, MpiError when MPI refuses.
  void start(int state);
  /// Whether the pending agreement has completed (its result then in result()); false when none is pending.
  [[nodiscard]] bool test();
  /// Waits for the pending agreement; nothing when none is pending.
  void wait();
  [[nodiscard]] bool pending() const noexcept { return request_ != MPI_REQUEST_NULL; }
  /// The last completed agreement's minimum state.
  [[nodiscard]] int result() const noexcept { return result_; }

 private:
  Comm comm_;
  MPI_Request request_ = MPI_REQUEST_NULL;
  int state_ = kStillWriting;   ///< the send buffer, kept until the agreement completes
  int result_ = kStillWriting;  ///< the receive buffer
};

/// How long a run waits for another process to let go of its checkpoint (CheckpointLock): a killed sweep's launch
/// is still dying when the resumed sweep starts, and its launcher ends it within seconds.
inline constexpr double kCheckpointLockWaitS = 30.0;

/// An exclusive lock on "<path>.lock", held while a run writes checkpoint `path`: two processes writing the same
/// checkpoint would rename each other's temporary file away (a killed sweep's launch still running beside its
/// resume). Rank 0 holds it with flock, which the kernel releases when the process dies, even by SIGKILL.
/// Collective; waits up to `wait_s` for a holder to go, then every rank throws IoError naming the file. The holder
/// removes the lock file when it lets go. A file system without flock (ENOLCK, EOPNOTSUPP: some NFS mounts) gets no
/// lock rather than no checkpoints.
class CheckpointLock {
 public:
  CheckpointLock(MPI_Comm comm, const std::string& path, double wait_s = kCheckpointLockWaitS);
  CheckpointLock(const CheckpointLock&) = delete;
  CheckpointLock& operator=(const CheckpointLock&) = delete;
  ~CheckpointLock();
  /// The lock file of checkpoint `path`.
  [[nodiscard]] static std::string lock_path(const std::string& path) { return path + ".lock"; }

 private:
  int fd_ = -1;       ///< rank 0's open lock file while it holds the lock, else -1
  std::string lock_;  ///< its path (rank 0, while held)
};

/// Opens a checkpoint for restart and checks it belongs to this run.
class CheckpointReader {
 public:
  /// Opens `path` (collective) and reads its header; throws BadFile naming the file when it is missing,
  /// not a hympi checkpoint, has a damaged header (its checksum) or none, was written by another app or for
  /// another global size, or fails `check` (when given).
  CheckpointReader(MPI_Comm comm, const std::string& path, const H5Options& options, const std::string& app,
                   const nlohmann::json& global_size, const HeaderCheck& check = {});
  [[nodiscard]] const CheckpointHeader& header() const { return header_; }
  File& file() { return file_; }

 private:
  File file_;
  CheckpointHeader header_;
};

/// One field of a snapshot: written as dataset "<grid>/<name>" (or "<name>" when grid is empty).
struct SnapshotField {
  std::string grid;  ///< the mesh it lives on (one per zone in multi-zone apps); "" for the only mesh
  std::string name;
  Block3 block;
  std::span<const double> data;
  std::array<double, 3> origin{0, 0, 0};   ///< coordinates (x, y, z) of global point (0, 0, 0)
  std::array<double, 3> spacing{1, 1, 1};  ///< mesh spacing (x, y, z)
};

/// Single-precision snapshots "<prefix>-<step>.h5" for viewing, with "<prefix>.xmf" (XDMF, one time
/// series: ParaView and VisIt open it) and "<prefix>.snapshots.json" (step, time, file) kept current.
class SnapshotSeries {
 public:
  /// Throws InvalidArgument for an empty prefix or a missing directory.
  SnapshotSeries(MPI_Comm comm, std::string prefix, H5Options options);
  /// Writes the fields at `step`/`time` and rewrites the sidecars (collective); throws IoError naming the file.
  /// Returns the bytes of the snapshot file.
  double write(long step, double time, std::span<const SnapshotField> fields);

 private:
  struct Entry {
    long step;
    double time;
    std::string file;
    std::vector<nlohmann::json> grids;
  };
  void write_sidecars() const;
  MPI_Comm comm_;
  std::string prefix_;
  H5Options options_;
  std::vector<Entry> entries_;
};

/// The I/O options of one app run, from its command line.
struct IoOptions {
  std::string checkpoint_path;  ///< where checkpoints go ("" = none)
  int checkpoint_every = 0;     ///< a checkpoint after every this many steps (0: none)
  std::string restart_path;     ///< a checkpoint to start from ("" = from the initial state)
  std::string snapshot_prefix;  ///< where snapshots go ("" = none)
  int snapshot_every = 0;       ///< a snapshot after every this many steps (0: none)
  H5Options h5;
  /// Throws InvalidArgument naming the bad value (a cadence without a path, a path without a cadence >= 1, a
  /// missing directory, a restart file that does not exist, an output path that is a link, device or FIFO, a
  /// restart file or checkpoint that the snapshots would overwrite).
  void validate() const;
  [[nodiscard]] bool any() const { return !checkpoint_path.empty() || !restart_path.empty() || !snapshot_prefix.empty(); }
  [[nodiscard]] nlohmann::json to_json() const;
};

/// The option ("--checkpoint" or "--snapshot") whose output would write over the existing file `path` (an input:
/// a config or data file), "" for none: `path` is the checkpoint file or one of the snapshot series' names. The
/// restart file is the checkpoint's input by design and is not asked about.
[[nodiscard]] std::string option_writing_over(const IoOptions& io, const std::string& path);

/// What an app's I/O cost: written to HYMPI_RESULT's "io".
struct IoTotals {
  int checkpoints = 0;
  double checkpoint_s = 0, checkpoint_bytes = 0;  ///< checkpoint_s: what the solver thread spent on them
  double checkpoint_background_s = 0;             ///< writing and syncing them on the background thread
  double checkpoint_direct_bytes = 0;             ///< of those written in the background, with O_DIRECT
  double checkpoint_buffered_bytes = 0;           ///< and through the page cache
  std::string checkpoint_buffered_reason;         ///< why none went direct ("" when direct I/O was available)
  int snapshots = 0;
  double snapshot_s = 0, snapshot_bytes = 0;
  double restart_s = 0, restart_bytes = 0;
  long restart_step = -1;  ///< the step restarted from (-1: none)
  /// The solver's steps (the time between two progress() calls, less the checkpoints' and snapshots' own) from the
  /// first checkpoint on, split by whether a checkpoint was being written during them, and what the steps beside the
  /// writer took beyond the median of the quiet steps just before each (steps_writing_excess_s): the writer's cost to
  /// the solver's threads, measured within one run, so a noisy machine's drift over minutes touches neither side. A
  /// median, not a mean: apps do extra work every few steps (rb3d's residual every 10, 4 steps' worth), which a mean
  /// of the quiet steps would spread over all of them; such a step beside the writer counts in full (an overestimate).
  long steps_writing = 0, steps_quiet = 0;
  double steps_writing_s = 0, steps_quiet_s = 0, steps_writing_excess_s = 0;
};

/// The checkpoints, restart and snapshots of one app run: the cadence, the header every file gets,
/// and the time and bytes each took.
class IoSession {
 public:
  /// `global_size` and `app` go into every checkpoint and are demanded on restart, with `check` (may be empty).
  /// A restart file is opened and its header checked here (collective; BadFile naming it), before the app prints
  /// or computes anything: the NPB-MZ apps printed their banner before refusing one.
  IoSession(MPI_Comm comm, IoOptions options, std::string app, nlohmann::json global_size, std::string layout,
            HeaderCheck check = {});
  IoSession(const IoSession&) = delete;
  IoSession& operator=(const IoSession&) = delete;
  /// Waits for a checkpoint still in flight and removes its temporary file: without finish() (a run that
  /// fails) it is never published.
  ~IoSession();
  [[nodiscard]] const IoOptions& options() const { return options_; }
  [[nodiscard]] bool restarting() const { return !options_.restart_path.empty(); }
  /// Whether a checkpoint is due after `step` steps.
  [[nodiscard]] bool checkpoint_due(long step) const;
  /// Whether a snapshot is due after `step` steps.
  [[nodiscard]] bool snapshot_due(long step) const;
  /// Calls `read` with the restart file the constructor opened and checked and returns its header, then closes it
  /// (once: a second call reopens it); throws BadFile (bad file) or IoError (read failed).
  CheckpointHeader restart(const std::function<void(File&, const CheckpointHeader&)>& read);
  /// Starts a checkpoint of `step`, `write` filling in the datasets (collective): the header, the datasets' layout
  /// and checksums and each rank's values (copied to a staging buffer) are taken now, and a background thread
  /// writes the values into "<path>.tmp" and syncs it while the caller goes on. The checkpoint before, if still
  /// in flight, is waited for and published (renamed onto the path) first. Throws IoError (every rank alike)
  /// naming the file and the reason, this checkpoint's or the one before's. Chunked datasets (--h5-chunk) are
  /// written here, before returning, as their place in the file is not known beforehand.
  void checkpoint(long step, double time, const nlohmann::json& state, const std::function<void(File&)>& write);
  /// Publishes the checkpoint in flight as soon as every rank's part of it is on disk, rather than at the next
  /// checkpoint: a run killed in between then loses less than an interval (collective, never blocks: call it once per
  /// step, every rank alike: the time between two calls is a step, IoTotals::steps_writing and steps_quiet). It tests
  /// a nonblocking agreement (WriteAgreement) and, while some rank is still writing, starts the next; when all have
  /// written, rank 0's background writer renames the file onto the path and syncs its directory. A failed write or
  /// rename is reported by the next checkpoint() or finish(), as without progress().
  void progress();
  /// Waits for the checkpoint in flight and publishes it (collective); throws IoError like checkpoint(). Every
  /// run calls it before it reports: its last checkpoint is then on disk under its name.
  void finish();
  /// Writes a snapshot of `fields`; throws IoError.
  void snapshot(long step, double time, std::span<const SnapshotField> fields);
  [[nodiscard]] const IoTotals& totals() const { return totals_; }
  /// options() and totals() as HYMPI_RESULT's "io".
  [[nodiscard]] nlohmann::json to_json() const;

 private:
  MPI_Comm comm_;
  IoOptions options_;
  std::string app_;
  nlohmann::json global_size_;
  std::string layout_;
  HeaderCheck check_;
  /// Waits for the background write of the checkpoint in flight, agrees on its outcome and, when every rank's
  /// part is on disk, renames it onto the checkpoint path (collective); throws IoError otherwise.
  void publish_in_flight();
  /// This rank's WriteAgreement state of the checkpoint in flight; with `wait`, waits for its writer first.
  int write_state(bool wait);
  /// Acts on an agreement's result: all written, rank 0 renames (published_); a write failed (failed_).
  void agreed(int result);
  std::optional<CheckpointReader> restart_;  ///< the restart file, opened and checked, until restart() reads it
  double restart_open_s_ = 0;                ///< the seconds its opening took, counted in totals_.restart_s
  std::optional<CheckpointLock> lock_;  ///< held from construction while checkpoints are written
  H5Options checkpoint_h5_;             ///< options_.h5, datasets aligned for direct I/O (aligned_for_direct_io)
  StagedData staging_;                  ///< the values of the checkpoint in flight, reused by the next
  StagedWrite written_;                 ///< how the background writer wrote it: read after its wait()
  BackgroundWriter background_;         ///< declared after lock_: waited for before the lock goes
  std::optional<WriteAgreement> agreement_;  ///< with checkpoints: the agreements that publish one early
  long in_flight_step_ = 0;             ///< the step of the checkpoint in flight
  bool in_flight_ = false;              ///< a checkpoint was started and is neither published nor reported failed
  bool published_ = false;              ///< the one in flight was renamed onto the path (by rank 0)
  bool failed_ = false;                 ///< some rank's write of it failed: the next checkpoint() or finish() says so
  bool write_ended_ = false;            ///< this rank's writer of the one in flight was waited for
  bool write_failed_ = false;           ///< and failed, for write_failure_
  std::string write_failure_;
  double write_seconds_ = 0, write_bytes_ = 0;  ///< this rank's writer's time, and the file's size it left
  std::string rename_failure_;          ///< rank 0's failed rename of the one in flight ("" for none); set by its
                                        ///< background writer, read after its wait()
  std::optional<SnapshotSeries> snapshots_;
  IoTotals totals_;
  /// Counts the step that ends now into totals_.steps_writing or steps_quiet (from the first checkpoint on) and a
  /// quiet one into recent_quiet_.
  void count_step();
  /// Where the step under way began: progress()'s end, its clock and the I/O seconds spent by then (subtracted).
  double step_start_ = -1, io_seconds_at_step_start_ = 0;
  /// The last quiet steps' seconds (before the first checkpoint too), a ring: the reference of a step beside the writer.
  std::array<double, 64> recent_quiet_{};
  std::size_t recent_quiet_count_ = 0;
  bool step_writing_ = false;  ///< a checkpoint was written during the step under way
};

}  // namespace hympi::h5
