#pragma once
// Test helper: an exception's exact message, for the checks that the user reads one clear line.
#include <gtest/gtest.h>

#include <string>

namespace hympi::test {

/// Expects `call()` to throw E whose what() is exactly `message`; a call that returns, or throws anything else,
/// fails the test.
template <class E, class Call>
void expect_throws_message(Call call, const std::string& message) {
  try {
    call();
    ADD_FAILURE() << "nothing thrown; expected: " << message;
  } catch (const E& e) {
    EXPECT_EQ(std::string(e.what()), message);
  }
}

}  // namespace hympi::test
