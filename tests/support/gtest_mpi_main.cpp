// GoogleTest main for MPI tests: every rank runs every test, rank 0 prints the usual report, the other ranks
// only their failures (else a check failing on rank 2 alone fails the run without a word), and the exit code is
// nonzero if any rank saw a failure.
#include <gtest/gtest.h>
#include <mpi.h>
#include <omp.h>

#include <iostream>
#include <string>

namespace {

/// Prints each failed check of this rank, named by rank and test.
class FailurePrinter : public ::testing::EmptyTestEventListener {
 public:
  explicit FailurePrinter(int rank) : rank_(rank) {}
  // Kept here: UnitTest::current_test_info() takes the lock the failure is reported under.
  void OnTestStart(const ::testing::TestInfo& test) override {
    test_ = std::string(test.test_suite_name()) + "." + test.name();
  }
  void OnTestPartResult(const ::testing::TestPartResult& result) override {
    if (!result.failed()) return;
    std::cerr << "[rank " << rank_ << "] " << test_ << " failed at " << (result.file_name() ? result.file_name() : "?")
              << ":" << result.line_number() << "\n"
              << result.message() << std::endl;
  }

 private:
  int rank_;
  std::string test_;
};

}  // namespace

int main(int argc, char** argv) {
  ::testing::InitGoogleTest(&argc, argv);
  int provided = 0;
  MPI_Init_thread(&argc, &argv, MPI_THREAD_FUNNELED, &provided);
  MPI_Comm_set_errhandler(MPI_COMM_WORLD, MPI_ERRORS_RETURN);
  int rank = 0;
  MPI_Comm_rank(MPI_COMM_WORLD, &rank);
  if (rank != 0) {
    auto& listeners = ::testing::UnitTest::GetInstance()->listeners();
    delete listeners.Release(listeners.default_result_printer());
    listeners.Append(new FailurePrinter(rank));  // owned by the listeners from here
  }
  const int local = RUN_ALL_TESTS();
  int global = 0;
  MPI_Allreduce(&local, &global, 1, MPI_INT, MPI_MAX, MPI_COMM_WORLD);
  MPI_Finalize();
  return global;
}
