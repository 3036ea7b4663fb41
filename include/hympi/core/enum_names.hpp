#pragma once
// Text names of enums, from the contract (contract.toml [enum.*], generated into hympi/contract.hpp):
// one to_string and one parse for every enum instead of a hand-written pair each.
#include <cstddef>
#include <span>
#include <string>
#include <string_view>
#include <utility>

#include "hympi/contract.hpp"
#include "hympi/core/error.hpp"

namespace hympi {

/// The contract's names of enum E. Each named enum declares, next to it and in its own namespace,
/// `contract::ENames<E> enum_names(E);` (never defined: only its type is used); argument-dependent lookup finds
/// it there, so an enum of a nested namespace (locality, npb, transpose) is named without reopening hympi.
template <class E>
using EnumNames = decltype(enum_names(std::declval<E>()));

/// An enum whose names the contract declares.
template <class E>
concept NamedEnum = requires {
  EnumNames<E>::values;
  EnumNames<E>::what;
};

namespace detail {
/// Whether the contract lists the enumerators 0, 1, 2, ... in declaration order (checked at compile time).
template <NamedEnum E>
consteval bool names_in_declaration_order() {
  std::size_t i = 0;
  for (const auto& [value, text] : EnumNames<E>::values)
    if (static_cast<std::size_t>(value) != i++ || text.empty()) return false;
  return true;
}
}  // namespace detail

/// The contract's name of `value`; "unknown" only for a value outside the enum (a cast gone wrong).
template <NamedEnum E>
[[nodiscard]] std::string to_string(E value) {
  static_assert(detail::names_in_declaration_order<E>(), "contract.toml lists this enum out of order");
  for (const auto& [v, text] : EnumNames<E>::values)
    if (v == value) return std::string(text);
  return "unknown";
}

/// The contract's entry of the enum called `enum_name` (e.g. "BindPolicy"), or nullptr when it declares none.
[[nodiscard]] const contract::EnumInfo* declared_enum(std::string_view enum_name);

/// How a text that is none of an enum's names is refused: "unknown WHAT 'TEXT' (expected a, b or c)".
[[nodiscard]] std::string unknown_name(std::string_view what, std::span<const std::string_view> names,
                                       std::string_view text);

/// The enumerator named `text` (or one of its aliases); throws InvalidArgument naming the value and
/// listing the names otherwise, e.g. "unknown binding 'x' (expected none, core, numa or package)".
template <NamedEnum E>
[[nodiscard]] E parse_enum(std::string_view text) {
  for (const auto& [value, name] : EnumNames<E>::values)
    if (name == text) return value;
  for (const auto& [value, name] : EnumNames<E>::aliases)
    if (name == text) return value;
  throw InvalidArgument(unknown_name(EnumNames<E>::what, EnumNames<E>::texts, text));
}

}  // namespace hympi
