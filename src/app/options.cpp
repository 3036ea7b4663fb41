#include "hympi/app/options.hpp"

#include <CLI/CLI.hpp>
#include <iostream>
#include <utility>

namespace hympi {

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
  return Option(*cli_->add_option(name, value, help));
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

std::optional<int> CommandLine::parse(int argc, char** argv) {
  try {
    cli_->parse(argc, argv);
  } catch (const CLI::CallForHelp&) {
    std::cout << cli_->help();
    return 0;
  } catch (const CLI::ParseError& e) {
    std::cerr << prog_ << ": error: " << e.what() << "\n";
    return 2;
  }
  return std::nullopt;
}

}  // namespace hympi
