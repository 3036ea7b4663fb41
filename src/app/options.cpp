#include "hympi/app/options.hpp"

#include <CLI/CLI.hpp>
#include <charconv>
#include <cstdlib>
#include <iostream>
#include <limits>
#include <system_error>
#include <type_traits>
#include <utility>

#include "hympi/core/error.hpp"

namespace hympi {

namespace {

/// CLI11 2.1 turns an integer beyond its type's range into the type's largest value (`--size 99999999999999999999`
/// ran as 9223372036854775807, and that n^3 overflowed): such a value is refused as typed. Text that is not an
/// integer at all is left to CLI11's own conversion, which names it.
template <class Integer>
CLI::Validator within_range() {
  return CLI::Validator(
      [](std::string& text) -> std::string {
        Integer parsed{};
        const auto result = std::from_chars(text.data(), text.data() + text.size(), parsed);
        if (result.ec != std::errc::result_out_of_range) return "";
        return "'" + text + "' is out of range (" + std::to_string(std::numeric_limits<Integer>::min()) + " to " +
               std::to_string(std::numeric_limits<Integer>::max()) + ")";
      },
      "");
}

/// An empty text read as the option not given (`--restart ''` ran without a restart) or as 0: refused, as hympi's
/// Python side refuses an empty path.
CLI::Validator not_empty() {
  return CLI::Validator(
      [](std::string& text) -> std::string {
        return text.find_first_not_of(" \t") == std::string::npos
                   ? "an empty value (give one, or leave the option out for its default)"
                   : "";
      },
      "");
}

template <class T>
struct ElementOf {
  using type = T;
};
template <class T>
struct ElementOf<std::vector<T>> {
  using type = T;
};

}  // namespace

Option& Option::show_default() {
  option_->capture_default_str();
  return *this;
}

Option& Option::values(int count) {
  option_->expected(count);
  return *this;
}

Option& Option::separator(char separator) {
  option_->delimiter(separator);
  return *this;
}

Option& Option::one_of(const std::vector<std::string>& names) {
  option_->check(CLI::IsMember(names));
  return *this;
}

Option& Option::check(const std::string& type, std::function<std::string(const std::string&)> check) {
  option_->check(CLI::Validator([check = std::move(check)](std::string& text) { return check(text); }, type));
  return *this;
}

Option& Option::type_name(const std::string& name) {
  option_->type_name(name);
  return *this;
}

Option& Option::excludes(const Option& other) {
  option_->excludes(other.option_);
  return *this;
}

bool Option::given() const { return option_->count() > 0; }

template <class T>
Option OptionSet::add(const std::string& name, T& value, const std::string& help) {
  CLI::Option* option = cli_->add_option(name, value, help);
  using Element = typename ElementOf<T>::type;
  // Numbers too: CLI11 reads '' as 0 (`--size ''` was refused as "grid size must be >= 1, got 0").
  option->check(not_empty());
  if constexpr (std::is_integral_v<Element>) option->check(within_range<Element>());
  return Option(*option);
}

// The value types the apps declare; another is a link error naming it.
template Option OptionSet::add(const std::string&, int&, const std::string&);
template Option OptionSet::add(const std::string&, long&, const std::string&);
template Option OptionSet::add(const std::string&, long long&, const std::string&);
template Option OptionSet::add(const std::string&, unsigned long&, const std::string&);
template Option OptionSet::add(const std::string&, double&, const std::string&);
template Option OptionSet::add(const std::string&, std::string&, const std::string&);
template Option OptionSet::add(const std::string&, std::vector<int>&, const std::string&);
template Option OptionSet::add(const std::string&, std::vector<long>&, const std::string&);
template Option OptionSet::add(const std::string&, std::vector<std::string>&, const std::string&);

Option OptionSet::flag(const std::string& name, bool& value, const std::string& help) {
  return Option(*cli_->add_flag(name, value, help));
}

bool OptionSet::given(const std::string& name) const { return cli_->count(name) > 0; }

CommandLine::CommandLine(const std::string& description, const std::string& prog)
    : cli_(std::make_unique<CLI::App>(description, prog)), prog_(prog), options_(*cli_) {}

CommandLine::~CommandLine() = default;

std::optional<int> launcher_integer(std::initializer_list<const char*> names, int minimum) noexcept {
  for (const char* name : names) {
    const char* value = std::getenv(name);
    if (value == nullptr || *value == '\0') continue;
    char* end = nullptr;
    const long number = std::strtol(value, &end, 10);
    if (*end == '\0' && number >= minimum && number <= std::numeric_limits<int>::max()) return static_cast<int>(number);
  }
  return std::nullopt;
}

int launched_rank() noexcept {
  return launcher_integer({"OMPI_COMM_WORLD_RANK", "PMIX_RANK", "PMI_RANK", "SLURM_PROCID"}, 0).value_or(0);
}

std::optional<int> CommandLine::parse(int argc, char** argv) {
  try {
    cli_->parse(argc, argv);
  } catch (const CLI::CallForHelp&) {
    if (launched_rank() == 0) std::cout << cli_->help();
    return 0;
  } catch (const CLI::ParseError& e) {
    if (launched_rank() == 0) print_error(prog_, e.what());
    return 2;
  }
  return std::nullopt;
}

}  // namespace hympi
