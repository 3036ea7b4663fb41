#pragma once
// Numbers as a command line, a config file or an environment variable writes them, read the way hympi's Python side
// reads them (hympi.numbers): ASCII digits, an optional sign, for a real number a point and an exponent. strtol and
// strtod also take leading blanks and strtod hexadecimal ("0x1p3" seconds): a value the CLI refuses would then be
// taken by the apps under plain mpirun, and a value read two ways is two settings.
#include <optional>
#include <string_view>

namespace hympi {

/// `text` as an integer ([+-]?[0-9]+); nullopt for anything else or a value beyond long long.
std::optional<long long> ascii_integer(std::string_view text) noexcept;

/// `text` as a real number ([+-]?, digits with an optional point, an optional exponent; inf, infinity and nan for
/// the caller's own range check; beyond double's range inf or 0, as Python's float()); nullopt for anything else.
std::optional<double> ascii_number(std::string_view text);

}  // namespace hympi
