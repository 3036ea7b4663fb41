#include "hympi/mpit/cvars.hpp"

#include <algorithm>
#include <cstring>
#include <sstream>
#include <utility>

namespace hympi::mpit {

namespace {

std::string error_name(int code) {
  static constexpr std::pair<int, const char*> kNames[] = {
      {MPI_T_ERR_MEMORY, "MPI_T_ERR_MEMORY"},
      {MPI_T_ERR_NOT_INITIALIZED, "MPI_T_ERR_NOT_INITIALIZED"},
      {MPI_T_ERR_CANNOT_INIT, "MPI_T_ERR_CANNOT_INIT"},
      {MPI_T_ERR_INVALID_INDEX, "MPI_T_ERR_INVALID_INDEX"},
      {MPI_T_ERR_INVALID_ITEM, "MPI_T_ERR_INVALID_ITEM"},
      {MPI_T_ERR_INVALID_HANDLE, "MPI_T_ERR_INVALID_HANDLE"},
      {MPI_T_ERR_OUT_OF_HANDLES, "MPI_T_ERR_OUT_OF_HANDLES"},
      {MPI_T_ERR_OUT_OF_SESSIONS, "MPI_T_ERR_OUT_OF_SESSIONS"},
      {MPI_T_ERR_INVALID_SESSION, "MPI_T_ERR_INVALID_SESSION"},
      {MPI_T_ERR_CVAR_SET_NOT_NOW, "MPI_T_ERR_CVAR_SET_NOT_NOW"},
      {MPI_T_ERR_CVAR_SET_NEVER, "MPI_T_ERR_CVAR_SET_NEVER"},
      {MPI_T_ERR_INVALID_NAME, "MPI_T_ERR_INVALID_NAME"},
      {MPI_T_ERR_INVALID, "MPI_T_ERR_INVALID"},
  };
  for (const auto& [value, name] : kNames)
    if (value == code) return name;
  return "MPI_T error " + std::to_string(code);
}

std::string describe(const std::string& call, int code, const std::source_location& where) {
  std::ostringstream os;
  os << call << " failed (" << where.file_name() << ":" << where.line() << "): " << error_name(code);
  return os.str();
}

/// The text after the common prefix of MPI_T's scope, verbosity and binding constants, lowercased.
const char* scope_name(int scope) {
  switch (scope) {
    case MPI_T_SCOPE_CONSTANT: return "constant";
    case MPI_T_SCOPE_READONLY: return "readonly";
    case MPI_T_SCOPE_LOCAL: return "local";
    case MPI_T_SCOPE_GROUP: return "group";
    case MPI_T_SCOPE_GROUP_EQ: return "group_eq";
    case MPI_T_SCOPE_ALL: return "all";
    case MPI_T_SCOPE_ALL_EQ: return "all_eq";
    default: return "unknown";
  }
}

const char* verbosity_name(int verbosity) {
  switch (verbosity) {
    case MPI_T_VERBOSITY_USER_BASIC: return "user_basic";
    case MPI_T_VERBOSITY_USER_DETAIL: return "user_detail";
    case MPI_T_VERBOSITY_USER_ALL: return "user_all";
    case MPI_T_VERBOSITY_TUNER_BASIC: return "tuner_basic";
    case MPI_T_VERBOSITY_TUNER_DETAIL: return "tuner_detail";
    case MPI_T_VERBOSITY_TUNER_ALL: return "tuner_all";
    case MPI_T_VERBOSITY_MPIDEV_BASIC: return "mpidev_basic";
    case MPI_T_VERBOSITY_MPIDEV_DETAIL: return "mpidev_detail";
    case MPI_T_VERBOSITY_MPIDEV_ALL: return "mpidev_all";
    default: return "unknown";
  }
}

const char* bind_name(int bind) {
  switch (bind) {
    case MPI_T_BIND_NO_OBJECT: return "no_object";
    case MPI_T_BIND_MPI_COMM: return "mpi_comm";
    case MPI_T_BIND_MPI_DATATYPE: return "mpi_datatype";
    case MPI_T_BIND_MPI_ERRHANDLER: return "mpi_errhandler";
    case MPI_T_BIND_MPI_FILE: return "mpi_file";
    case MPI_T_BIND_MPI_GROUP: return "mpi_group";
    case MPI_T_BIND_MPI_OP: return "mpi_op";
    case MPI_T_BIND_MPI_REQUEST: return "mpi_request";
    case MPI_T_BIND_MPI_WIN: return "mpi_win";
    case MPI_T_BIND_MPI_MESSAGE: return "mpi_message";
    case MPI_T_BIND_MPI_INFO: return "mpi_info";
    default: return "unknown";
  }
}

/// Formats `count` elements of type T from `bytes` in decimal (integers) or shortest round-trip form.
template <class T>
std::string join_numbers(const std::vector<unsigned char>& bytes, int count) {
  std::string out;
  for (int i = 0; i < count; ++i) {
    T value{};
    std::memcpy(&value, bytes.data() + static_cast<std::size_t>(i) * sizeof(T), sizeof(T));
    if (i > 0) out += ',';
    if constexpr (std::is_floating_point_v<T>) {
      std::ostringstream os;
      os.precision(17);
      os << value;
      out += os.str();
    } else {
      out += std::to_string(value);
    }
  }
  return out;
}

/// How a cvar of one MPI datatype is named, sized and printed.
struct Kind {
  const char* name;
  std::size_t element_size;
  std::string (*format)(const std::vector<unsigned char>&, int);
  bool integer;
};

std::string format_bools(const std::vector<unsigned char>& bytes, int count) {
  std::string out;
  for (int i = 0; i < count; ++i) {
    if (i > 0) out += ',';
    out += bytes[static_cast<std::size_t>(i)] != 0 ? "true" : "false";
  }
  return out;
}

std::string format_string(const std::vector<unsigned char>& bytes, int /*count*/) {
  const auto* text = reinterpret_cast<const char*>(bytes.data());
  return {text, strnlen(text, bytes.size())};
}

std::optional<Kind> kind_of(MPI_Datatype type) {
  if (type == MPI_INT) return Kind{"int", sizeof(int), join_numbers<int>, true};
  if (type == MPI_UNSIGNED) return Kind{"unsigned", sizeof(unsigned), join_numbers<unsigned>, true};
  if (type == MPI_LONG) return Kind{"long", sizeof(long), join_numbers<long>, true};
  if (type == MPI_UNSIGNED_LONG) return Kind{"unsigned_long", sizeof(unsigned long), join_numbers<unsigned long>, true};
  if (type == MPI_LONG_LONG) return Kind{"long_long", sizeof(long long), join_numbers<long long>, true};
  if (type == MPI_UNSIGNED_LONG_LONG)
    return Kind{"unsigned_long_long", sizeof(unsigned long long), join_numbers<unsigned long long>, true};
  if (type == MPI_DOUBLE) return Kind{"double", sizeof(double), join_numbers<double>, false};
  // C's _Bool: one byte on every ABI MPI libraries ship for; read as bytes so any nonzero is true.
  if (type == MPI_C_BOOL) return Kind{"bool", 1, format_bools, false};
  if (type == MPI_CHAR) return Kind{"string", 1, format_string, false};
  return std::nullopt;
}

/// The names of an enum's items and the value each stands for.
std::vector<std::pair<std::string, int>> enum_items(MPI_T_enum type) {
  int items = 0, name_length = 0;
  HYMPI_MPIT(MPI_T_enum_get_info(type, &items, nullptr, &name_length));
  std::vector<std::pair<std::string, int>> out;
  for (int i = 0; i < items; ++i) {
    int value = 0, length = 0;
    HYMPI_MPIT(MPI_T_enum_get_item(type, i, &value, nullptr, &length));
    std::string name(static_cast<std::size_t>(std::max(length, 1)), '\0');
    HYMPI_MPIT(MPI_T_enum_get_item(type, i, &value, name.data(), &length));
    name.resize(strnlen(name.c_str(), name.size()));
    out.emplace_back(std::move(name), value);
  }
  return out;
}

/// Reads the cvar behind `handle` as text; an integer that one of `items` stands for reads as that item's name.
/// Nullopt for a cvar the library holds no value for.
std::optional<std::string> read_value(const CvarHandle& handle, const Kind& kind,
                       const std::vector<std::pair<std::string, int>>& items) {
  const int count = std::max(handle.count(), 0);
  // Open MPI declares every string cvar 2048 chars long and strcpy()s its value in: the buffer must
  // hold `count` elements (a fixed small buffer is what crashed PMPI_T_cvar_read), plus a NUL of ours.
  std::vector<unsigned char> bytes(static_cast<std::size_t>(std::max(count, 1)) * kind.element_size + 1, 0);
  // Open MPI 4.1 answers INVALID_INDEX for a string cvar that has no value at all (e.g. "vprotocol").
  const int rc = MPI_T_cvar_read(handle.get(), bytes.data());
  if (rc == MPI_T_ERR_INVALID_INDEX) return std::nullopt;
  check_mpit(rc, "MPI_T_cvar_read");
  bytes.back() = 0;
  // MPI_T_enum_get_item gives int values: an enum cvar is an int (Open MPI) or unsigned one.
  if (kind.integer && kind.element_size == sizeof(int) && !items.empty() && count == 1) {
    int value = 0;
    std::memcpy(&value, bytes.data(), sizeof value);
    for (const auto& [name, item] : items)
      if (item == value) return name;
  }
  return kind.format(bytes, count);
}

/// Cvar `index` described and read; nullopt for an index the library has withdrawn.
std::optional<Cvar> describe_cvar(const Session& session, int index) {
  int name_length = 0, description_length = 0, verbosity = 0, bind = 0, scope = 0;
  MPI_Datatype type = MPI_DATATYPE_NULL;
  MPI_T_enum enumtype = MPI_T_ENUM_NULL;
  const int rc = MPI_T_cvar_get_info(index, nullptr, &name_length, &verbosity, &type, &enumtype, nullptr,
                                     &description_length, &bind, &scope);
  // Open MPI keeps the indices of closed components' variables but answers them with INVALID_INDEX.
  if (rc == MPI_T_ERR_INVALID_INDEX) return std::nullopt;
  check_mpit(rc, "MPI_T_cvar_get_info");
  std::string name(static_cast<std::size_t>(std::max(name_length, 1)), '\0');
  std::string description(static_cast<std::size_t>(std::max(description_length, 1)), '\0');
  HYMPI_MPIT(MPI_T_cvar_get_info(index, name.data(), &name_length, &verbosity, &type, &enumtype, description.data(),
                                 &description_length, &bind, &scope));
  name.resize(strnlen(name.c_str(), name.size()));
  description.resize(strnlen(description.c_str(), description.size()));

  Cvar cvar;
  cvar.name = std::move(name);
  cvar.description = std::move(description);
  cvar.scope = scope_name(scope);
  cvar.verbosity = verbosity_name(verbosity);
  cvar.bind = bind_name(bind);
  const auto items = enumtype == MPI_T_ENUM_NULL ? std::vector<std::pair<std::string, int>>{} : enum_items(enumtype);
  for (const auto& item : items) cvar.enum_items.push_back(item.first);
  const auto kind = kind_of(type);
  cvar.datatype = kind ? kind->name : "other";
  if (bind == MPI_T_BIND_NO_OBJECT) {
    const CvarHandle handle(session, index);
    cvar.count = handle.count();
    if (kind) cvar.value = read_value(handle, *kind, items);
  }
  return cvar;
}

}  // namespace

MpiTError::MpiTError(const std::string& call, int code, const std::source_location& where)
    : Error(describe(call, code, where)), code_(code) {}

void check_mpit(int code, const char* call, const std::source_location& where) {
  if (code != MPI_SUCCESS) throw MpiTError(call, code, where);
}

Session::Session() {
  int provided = 0;
  HYMPI_MPIT(MPI_T_init_thread(MPI_THREAD_SINGLE, &provided));
}

Session::~Session() {
#if defined(MPICH_VERSION)
  // MPICH's MPI_Init starts MPI_T without counting itself, so the last MPI_T_finalize before MPI_Finalize
  // frees the control variables the running library still reads: a later collective, or the next
  // MPI_T_init_thread, dereferences NULL (pmodels/mpich#7954, fixed after 5.0.1; seen here with 4.0.2).
  // While MPI runs, MPI_Finalize ends MPI_T as well, so the session is left open.
  int initialized = 0;
  int finalized = 0;
  MPI_Initialized(&initialized);
  MPI_Finalized(&finalized);
  if (initialized != 0 && finalized == 0) return;
#endif
  MPI_T_finalize();
}

CvarHandle::CvarHandle(const Session& /*session*/, int index) {
  HYMPI_MPIT(MPI_T_cvar_handle_alloc(index, nullptr, &handle_, &count_));
}

CvarHandle::~CvarHandle() { MPI_T_cvar_handle_free(&handle_); }

nlohmann::json Cvar::to_json() const {
  return {{"name", name},
          {"datatype", datatype},
          {"count", count},
          {"value", value ? nlohmann::json(*value) : nlohmann::json(nullptr)},
          {"enum", enum_items},
          {"scope", scope},
          {"verbosity", verbosity},
          {"bind", bind},
          {"description", description}};
}

std::vector<Cvar> list_cvars(const Session& session) {
  int num = 0;
  HYMPI_MPIT(MPI_T_cvar_get_num(&num));
  std::vector<Cvar> out;
  out.reserve(static_cast<std::size_t>(num));
  for (int index = 0; index < num; ++index)
    if (auto cvar = describe_cvar(session, index)) out.push_back(std::move(*cvar));
  return out;
}

std::map<std::string, std::optional<std::string>> read_cvars(const Session& session,
                                                              std::span<const std::string> names) {
  std::map<std::string, std::optional<std::string>> out;
  for (const auto& name : names) {
    int index = 0;
    const int rc = MPI_T_cvar_get_index(name.c_str(), &index);
    if (rc == MPI_T_ERR_INVALID_NAME) {
      out[name] = std::nullopt;
      continue;
    }
    check_mpit(rc, "MPI_T_cvar_get_index");
    const auto cvar = describe_cvar(session, index);
    out[name] = cvar ? cvar->value : std::nullopt;
  }
  return out;
}

nlohmann::json read_cvars_json(const Session& session, std::span<const std::string> names) {
  nlohmann::json out = nlohmann::json::object();
  for (const auto& [name, value] : read_cvars(session, names))
    out[name] = value ? nlohmann::json(*value) : nlohmann::json(nullptr);
  return out;
}

}  // namespace hympi::mpit
