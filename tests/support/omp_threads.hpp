#pragma once
// Test helper shared by the MPI test suites.
#include <omp.h>

namespace hympi::test {

/// Sets the OpenMP thread count for a scope and restores it on exit (MPI tests start with 1).
class Threads {
 public:
  explicit Threads(int n) : saved_(omp_get_max_threads()) { omp_set_num_threads(n); }
  ~Threads() { omp_set_num_threads(saved_); }
  Threads(const Threads&) = delete;
  Threads& operator=(const Threads&) = delete;

 private:
  int saved_;
};

}  // namespace hympi::test
