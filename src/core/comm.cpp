#include "hympi/core/comm.hpp"

#include <utility>

#include "hympi/core/error.hpp"

namespace hympi {

Comm::Comm(Comm&& other) noexcept
    : comm_(std::exchange(other.comm_, MPI_COMM_NULL)), owned_(std::exchange(other.owned_, false)) {}

Comm& Comm::operator=(Comm&& other) noexcept {
  if (this != &other) {
    release();
    comm_ = std::exchange(other.comm_, MPI_COMM_NULL);
    owned_ = std::exchange(other.owned_, false);
  }
  return *this;
}

Comm::~Comm() { release(); }

void Comm::release() noexcept {
  int finalized = 0;
  MPI_Finalized(&finalized);
  if (owned_ && !finalized && comm_ != MPI_COMM_NULL && comm_ != MPI_COMM_WORLD &&
      comm_ != MPI_COMM_SELF) {
    MPI_Comm_free(&comm_);
  }
  comm_ = MPI_COMM_NULL;
  owned_ = false;
}

int Comm::rank() const {
  int r = 0;
  HYMPI_MPI(MPI_Comm_rank(comm_, &r));
  return r;
}

int Comm::size() const {
  int s = 0;
  HYMPI_MPI(MPI_Comm_size(comm_, &s));
  return s;
}

Comm Comm::duplicate(MPI_Comm comm) {
  MPI_Comm out = MPI_COMM_NULL;
  HYMPI_MPI(MPI_Comm_dup(comm, &out));
  return Comm(out);
}

Comm Comm::split(MPI_Comm comm, int color, int key) {
  MPI_Comm out = MPI_COMM_NULL;
  HYMPI_MPI(MPI_Comm_split(comm, color, key, &out));
  return Comm(out);
}

bool decide_on_root(MPI_Comm comm, const std::function<bool()>& decide) {
  enum : int { no = 0, yes = 1, failed = 2 };
  int rank = 0;
  HYMPI_MPI(MPI_Comm_rank(comm, &rank));
  int answer = no;
  std::exception_ptr error;
  if (rank == 0) {
    try {
      answer = decide() ? yes : no;
    } catch (...) {
      error = std::current_exception();
      answer = failed;
    }
  }
  HYMPI_MPI(MPI_Bcast(&answer, 1, MPI_INT, 0, comm));
  if (error) std::rethrow_exception(error);
  if (answer == failed) throw Error("rank 0 failed while deciding a verdict for all ranks");
  return answer == yes;
}

double max_over(MPI_Comm comm, double value) {
  double out = 0;
  HYMPI_MPI(MPI_Allreduce(&value, &out, 1, MPI_DOUBLE, MPI_MAX, comm));
  return out;
}

std::uint64_t max_over(MPI_Comm comm, std::uint64_t value) {
  std::uint64_t out = 0;
  HYMPI_MPI(MPI_Allreduce(&value, &out, 1, MPI_UINT64_T, MPI_MAX, comm));
  return out;
}

}  // namespace hympi
