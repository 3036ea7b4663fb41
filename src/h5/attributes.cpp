// Attributes of a File: small metadata (the app, sizes, steps, options) that any HDF5 tool can read.
#include <vector>

#include "h5_handles.hpp"
#include "hympi/h5/h5.hpp"

namespace hympi::h5 {

namespace {

Handle open_object(hid_t file, const std::string& object) {
  return {H5Oopen(file, object.c_str(), H5P_DEFAULT), H5Oclose};
}

/// Writes `key` on `object` (replacing an older value) with the given type and buffer.
void put(hid_t file, const std::string& object, const std::string& key, hid_t type, const void* value) {
  const Handle target = open_object(file, object);
  if (!target.valid()) throw IoError("no object '" + object + "': " + error_stack_message());
  if (H5Aexists(target.get(), key.c_str()) > 0) H5Adelete(target.get(), key.c_str());
  Handle space(H5Screate(H5S_SCALAR), H5Sclose);
  Handle attr(H5Acreate2(target.get(), key.c_str(), type, space.get(), H5P_DEFAULT, H5P_DEFAULT), H5Aclose);
  if (!attr.valid() || H5Awrite(attr.get(), type, value) < 0)
    throw IoError("cannot write attribute '" + key + "': " + error_stack_message());
}

Handle string_type(std::size_t length) {
  Handle type(H5Tcopy(H5T_C_S1), H5Tclose);
  H5Tset_size(type.get(), std::max<std::size_t>(length, 1));
  H5Tset_strpad(type.get(), H5T_STR_NULLPAD);
  return type;
}

}  // namespace

void File::set_attribute(const std::string& key, const nlohmann::json& value, const std::string& object) {
  set_text(key, value.dump(), object);
}

void File::set_text(const std::string& key, const std::string& value, const std::string& object) {
  const SilencedErrors quiet;
  agree(comm_, as_io_failure(path_, attempt([&] {
          const Handle type = string_type(value.size());
          const std::string padded = value.empty() ? std::string(1, '\0') : value;
          put(hid_t(file_), object, key, type.get(), padded.data());
        })),
        agreed_failure_);
}

void File::set_number(const std::string& key, double value, const std::string& object) {
  const SilencedErrors quiet;
  agree(comm_, as_io_failure(path_, attempt([&] { put(hid_t(file_), object, key, H5T_NATIVE_DOUBLE, &value); })),
        agreed_failure_);
}

bool File::has_attribute(const std::string& key, const std::string& object) const {
  return detail::has_attribute(hid_t(file_), key, object);
}

nlohmann::json File::attribute(const std::string& key, const std::string& object) const {
  // Collective metadata reads: rank 0 reads, every rank gets the same bytes, so the outcome is the same.
  return detail::read_attribute(hid_t(file_), path_, key, object);
}

namespace detail {

nlohmann::json read_attribute(hid_t file, const std::string& path, const std::string& key, const std::string& object) {
  const SilencedErrors quiet;
  const std::string where = "attribute '" + key + "' of " + path;
  const Handle target = open_object(file, object);
  if (!target.valid() || H5Aexists(target.get(), key.c_str()) <= 0) {
    H5Eclear2(H5E_DEFAULT);
    throw BadFile(path + " has no " + where.substr(0, where.find(" of ")));
  }
  Handle attr(H5Aopen(target.get(), key.c_str(), H5P_DEFAULT), H5Aclose);
  Handle type(H5Aget_type(attr.get()), H5Tclose);
  if (!attr.valid() || !type.valid()) throw BadFile("cannot read " + where + ": " + error_stack_message());
  if (H5Tget_class(type.get()) == H5T_STRING) {
    if (H5Tis_variable_str(type.get()) > 0) throw BadFile(where + " is not a hympi attribute");
    std::string text(H5Tget_size(type.get()), '\0');
    if (H5Aread(attr.get(), type.get(), text.data()) < 0)
      throw BadFile("cannot read " + where + ": " + error_stack_message());
    text.resize(text.find('\0') == std::string::npos ? text.size() : text.find('\0'));
    nlohmann::json parsed = nlohmann::json::parse(text, nullptr, false);
    return parsed.is_discarded() ? nlohmann::json(text) : parsed;
  }
  double value = 0;
  if (H5Aread(attr.get(), H5T_NATIVE_DOUBLE, &value) < 0)
    throw BadFile("cannot read " + where + ": " + error_stack_message());
  return value;
}

bool has_attribute(hid_t file, const std::string& key, const std::string& object) {
  const SilencedErrors quiet;
  const Handle target = open_object(file, object);
  const bool found = target.valid() && H5Aexists(target.get(), key.c_str()) > 0;
  H5Eclear2(H5E_DEFAULT);
  return found;
}

}  // namespace detail

}  // namespace hympi::h5
