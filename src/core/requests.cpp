#include "hympi/core/requests.hpp"

#include <limits>
#include <string>
#include <utility>

#include "hympi/core/error.hpp"

namespace hympi {

PersistentRequests::PersistentRequests(PersistentRequests&& other) noexcept
    : requests_(std::move(other.requests_)),
      is_receive_(std::move(other.is_receive_)),
      active_(std::exchange(other.active_, false)) {
  other.requests_.clear();
  other.is_receive_.clear();
}

PersistentRequests& PersistentRequests::operator=(PersistentRequests&& other) noexcept {
  if (this != &other) {
    release();
    requests_ = std::move(other.requests_);
    is_receive_ = std::move(other.is_receive_);
    active_ = std::exchange(other.active_, false);
    other.requests_.clear();
    other.is_receive_.clear();
  }
  return *this;
}

PersistentRequests::~PersistentRequests() { release(); }

void PersistentRequests::release() noexcept {
  int finalized = 0;
  MPI_Finalized(&finalized);
  if (!finalized) {
    if (active_) {
      // Errors are ignored: a destructor cannot report them, and this path runs while unwinding.
      for (std::size_t i = 0; i < requests_.size(); ++i) {
        if (is_receive_[i]) MPI_Cancel(&requests_[i]);
      }
      MPI_Waitall(static_cast<int>(requests_.size()), requests_.data(), MPI_STATUSES_IGNORE);
    }
    for (MPI_Request& r : requests_) {
      if (r != MPI_REQUEST_NULL) MPI_Request_free(&r);
    }
  }
  requests_.clear();
  is_receive_.clear();
  active_ = false;
}

void PersistentRequests::check_inactive(const char* what) const {
  if (active_) throw Error(std::string("PersistentRequests::") + what + " called while the requests are active");
}

void PersistentRequests::add(void* buffer, std::size_t count, MPI_Datatype type, int peer, int tag, MPI_Comm comm,
                             bool receive) {
  check_inactive(receive ? "add_receive" : "add_send");
  if (count > static_cast<std::size_t>(std::numeric_limits<int>::max()))
    throw Error("PersistentRequests: a message of " + std::to_string(count) + " elements exceeds MPI's int count");
  MPI_Request r = MPI_REQUEST_NULL;
  const int n = static_cast<int>(count);
  if (receive) {
    HYMPI_MPI(MPI_Recv_init(buffer, n, type, peer, tag, comm, &r));
  } else {
    HYMPI_MPI(MPI_Send_init(buffer, n, type, peer, tag, comm, &r));
  }
  requests_.push_back(r);
  is_receive_.push_back(receive);
}

void PersistentRequests::add_receive(std::span<double> buffer, int source, int tag, MPI_Comm comm) {
  add(buffer.data(), buffer.size(), MPI_DOUBLE, source, tag, comm, true);
}

void PersistentRequests::add_send(std::span<const double> buffer, int dest, int tag, MPI_Comm comm) {
  // MPI_Send_init takes a non-const pointer in MPI-2 bindings; the send never writes it.
  add(const_cast<double*>(buffer.data()), buffer.size(), MPI_DOUBLE, dest, tag, comm, false);
}

void PersistentRequests::add_receive(std::span<float> buffer, int source, int tag, MPI_Comm comm) {
  add(buffer.data(), buffer.size(), MPI_FLOAT, source, tag, comm, true);
}

void PersistentRequests::add_send(std::span<const float> buffer, int dest, int tag, MPI_Comm comm) {
  add(const_cast<float*>(buffer.data()), buffer.size(), MPI_FLOAT, dest, tag, comm, false);
}

void PersistentRequests::start() {
  check_inactive("start");
  if (!requests_.empty()) HYMPI_MPI(MPI_Startall(static_cast<int>(requests_.size()), requests_.data()));
  active_ = true;
}

void PersistentRequests::wait() {
  if (!active_) throw Error("PersistentRequests::wait called without start");
  // Inactive from here on even if the wait fails: the requests are then in an unknown state and
  // the destructor must not wait for them a second time.
  active_ = false;
  if (!requests_.empty()) {
    HYMPI_MPI(MPI_Waitall(static_cast<int>(requests_.size()), requests_.data(), MPI_STATUSES_IGNORE));
  }
}

}  // namespace hympi
