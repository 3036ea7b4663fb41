#pragma once
// The MPI library's control variables (MPI_T cvars): what can be tuned, and what a run really used.
//
// MPI_T reports errors by return code and never through an MPI error handler, so every MPI_T call
// goes through check_mpit (HYMPI_MPIT), which throws MpiTError naming the call.
#include <mpi.h>

#include <map>
#include <nlohmann/json.hpp>
#include <optional>
#include <source_location>
#include <span>
#include <string>
#include <vector>

#include "hympi/core/error.hpp"

namespace hympi::mpit {

/// An MPI_T call returned an error code (MPI_T_ERR_*).
class MpiTError : public Error {
 public:
  /// Records the failing call text and its MPI_T error code.
  MpiTError(const std::string& call, int code, const std::source_location& where);
  /// The MPI_T error code returned by the call.
  [[nodiscard]] int code() const noexcept { return code_; }

 private:
  int code_;
};

/// Throws MpiTError when `code` is not MPI_SUCCESS; use through HYMPI_MPIT.
void check_mpit(int code, const char* call, const std::source_location& where = std::source_location::current());

/// One MPI_T tool-interface session: MPI_T_init_thread on construction, MPI_T_finalize on destruction
/// (under MPICH while MPI runs, MPI_Finalize ends it instead: see ~Session).
///
/// Works before, during or after MPI_Init; sessions nest (the MPI library counts them), so any number
/// may be alive at once. Use a session's cvars from one thread at a time.
class Session {
 public:
  /// Initialises MPI_T; throws MpiTError when the library refuses.
  Session();
  ~Session();
  Session(const Session&) = delete;
  Session& operator=(const Session&) = delete;
};

/// A handle on one cvar not bound to an MPI object (MPI_T_cvar_handle_alloc / _free).
class CvarHandle {
 public:
  /// Allocates a handle on cvar `index`; throws MpiTError for an invalid index.
  CvarHandle(const Session& session, int index);
  ~CvarHandle();
  CvarHandle(const CvarHandle&) = delete;
  CvarHandle& operator=(const CvarHandle&) = delete;
  /// Elements the cvar holds (for a string: the buffer size in chars).
  [[nodiscard]] int count() const noexcept { return count_; }
  [[nodiscard]] MPI_T_cvar_handle get() const noexcept { return handle_; }

 private:
  MPI_T_cvar_handle handle_ = MPI_T_CVAR_HANDLE_NULL;
  int count_ = 0;
};

/// One control variable as the MPI library describes it.
struct Cvar {
  std::string name;
  /// int, unsigned, long, unsigned_long, long_long, unsigned_long_long, double, bool or string
  /// (another MPI datatype: its MPI name, lowercased, without "mpi_"; its value is then not read).
  std::string datatype;
  int count = 0;
  /// Current value as text: an enum's item name, true/false, a decimal number, the string; elements of a
  /// count > 1 cvar joined by ','. Absent for a cvar bound to an MPI object or of another datatype.
  std::optional<std::string> value;
  std::vector<std::string> enum_items;  ///< names of its enum's items, empty when it has none
  std::string scope;                    ///< MPI_T_SCOPE_* lowercased without the prefix, e.g. "readonly"
  std::string verbosity;                ///< MPI_T_VERBOSITY_* likewise, e.g. "user_basic"
  std::string bind;                     ///< MPI_T_BIND_* likewise, e.g. "no_object", "mpi_comm"
  std::string description;

  /// {"name", "datatype", "count", "value" (string or null), "enum", "scope", "verbosity", "bind",
  /// "description"}.
  [[nodiscard]] nlohmann::json to_json() const;
};

/// Every cvar the library has now, in index order (a library's withdrawn indices are left out). Component
/// cvars exist only while their component is open (Open MPI's shared-memory ones need >= 2 ranks).
/// Throws MpiTError when an MPI_T call fails.
[[nodiscard]] std::vector<Cvar> list_cvars(const Session& session);

/// The current value of each named cvar (nullopt: no such cvar, or one list_cvars gives no value for).
/// Throws MpiTError when an MPI_T call other than the name lookup fails.
[[nodiscard]] std::map<std::string, std::optional<std::string>> read_cvars(const Session& session,
                                                                          std::span<const std::string> names);

/// read_cvars as a JSON object: name -> value text, or null.
[[nodiscard]] nlohmann::json read_cvars_json(const Session& session, std::span<const std::string> names);

}  // namespace hympi::mpit

/// Checks an MPI_T call (which returns MPI_T_ERR_* codes and does not call an error handler).
#define HYMPI_MPIT(call) ::hympi::mpit::check_mpit((call), #call)
