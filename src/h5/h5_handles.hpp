#pragma once
// Internal to hympi::h5: RAII for HDF5 identifiers and file descriptors, HDF5's error stack as one message, and the
// agreement step that turns a failure on any rank into the same exception on every rank.
#include <hdf5.h>
#include <mpi.h>
#include <unistd.h>

#include <exception>
#include <string>
#include <utility>

#include "hympi/h5/h5.hpp"

namespace hympi::h5::detail {

/// Owns one HDF5 identifier and closes it with the matching H5?close.
class Handle {
 public:
  using Closer = herr_t (*)(hid_t);
  Handle() = default;
  Handle(hid_t id, Closer closer) : id_(id), closer_(closer) {}
  Handle(Handle&& o) noexcept : id_(std::exchange(o.id_, H5I_INVALID_HID)), closer_(o.closer_) {}
  Handle& operator=(Handle&& o) noexcept {
    if (this != &o) {
      reset();
      id_ = std::exchange(o.id_, H5I_INVALID_HID);
      closer_ = o.closer_;
    }
    return *this;
  }
  Handle(const Handle&) = delete;
  Handle& operator=(const Handle&) = delete;
  ~Handle() { reset(); }
  [[nodiscard]] hid_t get() const { return id_; }
  [[nodiscard]] bool valid() const { return id_ >= 0; }
  void reset() noexcept {
    if (id_ >= 0 && closer_ != nullptr) closer_(id_);
    id_ = H5I_INVALID_HID;
  }

 private:
  hid_t id_ = H5I_INVALID_HID;
  Closer closer_ = nullptr;
};

/// A POSIX file descriptor, closed on destruction unless close() was called (and checked) first.
class OpenFile {
 public:
  explicit OpenFile(int fd) : fd_(fd) {}
  OpenFile(const OpenFile&) = delete;
  OpenFile& operator=(const OpenFile&) = delete;
  ~OpenFile() {
    if (fd_ >= 0) ::close(fd_);
  }
  [[nodiscard]] int get() const { return fd_; }
  [[nodiscard]] bool valid() const { return fd_ >= 0; }
  /// Closes it; false (errno set) when close(2) failed.
  bool close() { return ::close(std::exchange(fd_, -1)) == 0; }
  /// Hands the descriptor to the caller, who closes it.
  [[nodiscard]] int release() { return std::exchange(fd_, -1); }

 private:
  int fd_;
};

/// Silences HDF5's automatic error printing for its lifetime (errors become hympi exceptions instead)
/// and restores the previous handler after, unless keep() was called.
class SilencedErrors {
 public:
  SilencedErrors() {
    H5Eget_auto2(H5E_DEFAULT, &function_, &data_);
    H5Eset_auto2(H5E_DEFAULT, nullptr, nullptr);
  }
  SilencedErrors(const SilencedErrors&) = delete;
  SilencedErrors& operator=(const SilencedErrors&) = delete;
  ~SilencedErrors() {
    if (!kept_) H5Eset_auto2(H5E_DEFAULT, function_, data_);
  }
  /// Leaves the printing off for the rest of the process, after a file whose open failed: HDF5 1.10 then holds
  /// objects of it it cannot free (HDF5 issue #3790, fixed in 1.14.5), and at exit it would print "HDF5: infinite
  /// loop closing library" and a line of their kinds after hympi's one-line refusal of the file.
  void keep() noexcept { kept_ = true; }

 private:
  H5E_auto2_t function_ = nullptr;
  void* data_ = nullptr;
  bool kept_ = false;
};

/// The most specific messages of HDF5's current error stack (innermost first), or "" when empty;
/// clears the stack.
std::string error_stack_message();

/// Reads attribute `key` of `object` in the open file `file` (named `path` in messages) as JSON: numbers as
/// numbers, JSON text parsed, other strings as strings; throws BadFile naming the file and key when it is
/// missing or unreadable. No MPI: File::attribute and the serial checkpoint check share it.
nlohmann::json read_attribute(hid_t file, const std::string& path, const std::string& key, const std::string& object);
/// Whether `object` of `file` has attribute `key`; never throws.
bool has_attribute(hid_t file, const std::string& key, const std::string& object);
/// Serially (no MPI) recomputes the checksum of every dataset of the open file `file` (named `path`) and
/// compares it with the one stored beside it; throws BadFile naming the dataset when one has none or differs.
void verify_stored_checksums(hid_t file, const std::string& path);

/// Outcome of one rank's part of a collective step, before the ranks agree on it.
struct LocalOutcome {
  bool failed = false;
  bool bad_file = false;  ///< the file's fault (BadFile) rather than the system's (IoError)
  std::string message;
};

/// Collective: when any rank's outcome failed, every rank throws the same exception (BadFile or IoError)
/// with the message of the lowest failing rank; otherwise returns.
void agree(MPI_Comm comm, const LocalOutcome& outcome);

/// agree() for a File's step: `agreed_failure` is true while the agreed exception propagates, so the File
/// may close collectively on the way out (every rank is unwinding with it).
inline void agree(MPI_Comm comm, const LocalOutcome& outcome, bool& agreed_failure) {
  agreed_failure = true;
  agree(comm, outcome);
  agreed_failure = false;
}

/// Runs `step` on this rank, turning HDF5 failures and hympi errors into an outcome the ranks agree on.
template <class F>
LocalOutcome attempt(F&& step) {
  try {
    step();
    return {};
  } catch (const BadFile& e) {
    return {true, true, e.what()};
  } catch (const std::exception& e) {
    return {true, false, e.what()};
  }
}

/// `outcome` with `context` in front of its message, as the system's failure (IoError): a write that failed
/// is never the file's fault.
inline LocalOutcome as_io_failure(const std::string& context, const LocalOutcome& outcome) {
  return outcome.failed ? LocalOutcome{true, false, context + ": " + outcome.message} : outcome;
}

}  // namespace hympi::h5::detail

namespace hympi::h5 {
// The h5 sources call these by their short names.
using detail::agree;
using detail::as_io_failure;
using detail::attempt;
using detail::error_stack_message;
using detail::Handle;
using detail::LocalOutcome;
using detail::OpenFile;
using detail::SilencedErrors;
}  // namespace hympi::h5
