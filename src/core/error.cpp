#include "hympi/core/error.hpp"

#include <mpi.h>

#include <cerrno>
#include <cstdio>
#include <cstring>
#include <filesystem>
#include <iostream>
#include <sstream>

namespace hympi {

namespace {
std::string describe(const std::string& call, int code, int rank, const std::source_location& where) {
  char text[MPI_MAX_ERROR_STRING] = {};
  int length = 0;
  if (MPI_Error_string(code, text, &length) != MPI_SUCCESS) text[0] = '\0';
  std::ostringstream os;
  os << call << " failed on rank " << rank << " (" << where.file_name() << ":" << where.line()
     << "): " << text;
  return os.str();
}
}  // namespace

MpiError::MpiError(const std::string& call, int code, int rank, const std::source_location& where)
    : Error(describe(call, code, rank, where)), code_(code) {}

namespace {
/// Bytes of the valid UTF-8 sequence (not a control character) starting at `at`, 0 for none.
std::size_t utf8_sequence(std::string_view text, std::size_t at) {
  const auto byte = [&](std::size_t i) { return static_cast<unsigned char>(text[i]); };
  const unsigned char lead = byte(at);
  if (lead >= 0x20 && lead < 0x7F) return 1;
  const std::size_t length = lead >= 0xC2 && lead <= 0xDF ? 2 : lead >= 0xE0 && lead <= 0xEF ? 3
                             : lead >= 0xF0 && lead <= 0xF4 ? 4 : 0;
  if (length == 0 || at + length > text.size()) return 0;
  for (std::size_t i = 1; i < length; ++i)
    if ((byte(at + i) & 0xC0) != 0x80) return 0;
  // Overlong forms, UTF-16 surrogates and code points past U+10FFFF are not UTF-8.
  const unsigned char second = byte(at + 1);
  if ((lead == 0xE0 && second < 0xA0) || (lead == 0xED && second >= 0xA0) || (lead == 0xF0 && second < 0x90) ||
      (lead == 0xF4 && second >= 0x90))
    return 0;
  return length;
}
}  // namespace

std::string printable(std::string_view text, std::size_t limit) {
  std::string out;
  for (std::size_t at = 0; at < text.size();) {
    if (out.size() >= limit) return out + "...";
    if (const std::size_t length = utf8_sequence(text, at); length > 0) {
      out.append(text.substr(at, length));
      at += length;
      continue;
    }
    static constexpr char kHex[] = "0123456789abcdef";
    const auto b = static_cast<unsigned char>(text[at++]);
    out += {'\\', 'x', kHex[b >> 4], kHex[b & 0xF]};
  }
  return out;
}

std::string file_problem(const std::string& path) {
  namespace fs = std::filesystem;
  std::error_code ec;
  const fs::file_status status = fs::status(path, ec);  // follows links, as opening the file would
  switch (status.type()) {
    case fs::file_type::regular:
      return "";
    case fs::file_type::not_found:
      return "does not exist";
    case fs::file_type::directory:
      return "is a directory";
    case fs::file_type::fifo:
      return "is a FIFO";
    case fs::file_type::character:
    case fs::file_type::block:
      return "is a device";
    case fs::file_type::socket:
      return "is a socket";
    case fs::file_type::none:  // stat itself failed (a directory on the way without search permission)
      return "cannot be examined (" + ec.message() + ")";
    default:
      return "is not a regular file";
  }
}

int flushed_output(std::string_view prog, int exit_code) {
  errno = 0;
  std::cout.flush();
  const int cxx_error = errno;
  const bool failed = std::cout.fail() || std::fflush(stdout) != 0 || std::ferror(stdout) != 0;
  if (!failed) return exit_code;
  const int error = errno != 0 ? errno : cxx_error;
  print_error(prog, std::string("cannot write the output to standard output") +
                        (error != 0 ? std::string(": ") + std::strerror(error) : std::string()));
  return exit_code == 0 ? 1 : exit_code;
}

void print_error(std::string_view prog, std::string_view message, std::string_view kind) {
  std::string line;
  line.reserve(prog.size() + kind.size() + message.size() + 4);
  line.append(prog).append(": ").append(kind).append(": ").append(message).append("\n");
  std::cerr.flush();  // what was said before stays before
  std::fwrite(line.data(), 1, line.size(), stderr);  // stderr is unbuffered: one write of the whole line
  std::fflush(stderr);
}

void check_mpi(int code, const char* call, const std::source_location& where) {
  if (code == MPI_SUCCESS) return;
  int rank = -1;
  int initialized = 0;
  MPI_Initialized(&initialized);
  if (initialized) MPI_Comm_rank(MPI_COMM_WORLD, &rank);
  throw MpiError(call, code, rank, where);
}

}  // namespace hympi
