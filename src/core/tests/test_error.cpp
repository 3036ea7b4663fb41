#include <gtest/gtest.h>
#include <omp.h>

#include <atomic>
#include <string>

#include "hympi/core/error.hpp"

using hympi::ParallelErrors;

TEST(ParallelErrors, EveryThreadThrowingGivesOneExceptionAfterTheRegion) {
  ParallelErrors errors;
  std::atomic<int> reached{0};
#pragma omp parallel num_threads(2)
  {
    errors.capture([] { throw hympi::InvalidArgument("thread " + std::to_string(omp_get_thread_num())); });
    reached.fetch_add(1);
  }
  EXPECT_EQ(reached.load(), 2);  // no thread was terminated by its exception
  EXPECT_THROW(errors.rethrow(), hympi::InvalidArgument);
}

TEST(ParallelErrors, ThreadsThatThrowStillShareTheLaterLoops) {
  ParallelErrors errors;
  constexpr int kIterations = 64;
  std::atomic<int> done{0};
#pragma omp parallel num_threads(2)
  {
    errors.capture([] {
      if (omp_get_thread_num() == 0) throw hympi::TopologyError("thread 0 failed");
    });
#pragma omp for schedule(static)
    for (int i = 0; i < kIterations; ++i) done.fetch_add(1);
  }
  EXPECT_EQ(done.load(), kIterations);
  try {
    errors.rethrow();
    FAIL() << "the captured error was lost";
  } catch (const hympi::TopologyError& e) {
    EXPECT_STREQ(e.what(), "thread 0 failed");
  }
}

TEST(ParallelErrors, NothingCapturedRethrowsNothing) {
  ParallelErrors errors;
  int sum = 0, team = 0;
#pragma omp parallel num_threads(2) reduction(+ : sum)
  {
    errors.capture([&] { sum += 1; });
#pragma omp single
    team = omp_get_num_threads();
  }
  EXPECT_NO_THROW(errors.rethrow());
  EXPECT_EQ(sum, team);  // every thread ran its work
}

TEST(Printable, KeepsUtf8AndWritesEveryOtherByteAsHex) {
  using hympi::printable;
  EXPECT_EQ(printable("rb3d.h5"), "rb3d.h5");
  const std::string utf8 = "d\xc3\xa9j\xc3\xa0 \xe2\x82\xac \xf0\x9f\x98\x80";  // 2-, 3- and 4-byte sequences
  EXPECT_EQ(printable(utf8), utf8);
  EXPECT_EQ(printable(std::string("a\nb\tc\0d\x7f", 8)), "a\\x0ab\\x09c\\x00d\\x7f");
  // A lone continuation byte, a truncated sequence, an overlong '/', a UTF-16 surrogate, past U+10FFFF.
  EXPECT_EQ(printable("\x80"), "\\x80");
  EXPECT_EQ(printable("\xe2\x82"), "\\xe2\\x82");
  EXPECT_EQ(printable("\xc0\xaf"), "\\xc0\\xaf");
  EXPECT_EQ(printable("\xed\xa0\x80"), "\\xed\\xa0\\x80");
  EXPECT_EQ(printable("\xf4\x90\x80\x80"), "\\xf4\\x90\\x80\\x80");
  EXPECT_EQ(printable(std::string(100, 'x'), 10), std::string(10, 'x') + "...");
  EXPECT_EQ(printable(std::string(10, 'x'), 10), std::string(10, 'x'));
}
