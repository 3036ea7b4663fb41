#include "hympi/core/environment.hpp"

#include <omp.h>

#include <algorithm>
#include <array>
#include <cctype>
#include <charconv>
#include <cstdlib>
#include <cstring>
#include <initializer_list>
#include <limits>
#include <string>
#include <string_view>
#include <vector>

#include "hympi/contract.hpp"
#include "hympi/core/error.hpp"
#include "hympi/core/numbers.hpp"
#include "hympi/core/topology.hpp"

namespace hympi {

namespace {
constexpr std::array<ThreadLevel, 4> kLevels = {ThreadLevel::single, ThreadLevel::funneled,
                                                ThreadLevel::serialized, ThreadLevel::multiple};

int to_mpi(ThreadLevel level) {
  switch (level) {
    case ThreadLevel::single: return MPI_THREAD_SINGLE;
    case ThreadLevel::funneled: return MPI_THREAD_FUNNELED;
    case ThreadLevel::serialized: return MPI_THREAD_SERIALIZED;
    case ThreadLevel::multiple: return MPI_THREAD_MULTIPLE;
  }
  return MPI_THREAD_SINGLE;
}

ThreadLevel from_mpi(int level) {
  for (ThreadLevel l : kLevels)
    if (to_mpi(l) == level) return l;
  return ThreadLevel::single;
}
}  // namespace

int virtual_nodes_from_env() {
  const char* text = std::getenv("HYMPI_VIRTUAL_NODES");
  if (text == nullptr || *text == '\0') return 1;
  const auto value = ascii_integer(text);
  if (!value || *value < 1 || *value > std::numeric_limits<int>::max())
    throw InvalidArgument(std::string("HYMPI_VIRTUAL_NODES must be a positive integer, got '") + text + "'");
  return static_cast<int>(*value);
}

int default_threads(int cores_per_node, int ranks_per_node) {
  if (cores_per_node < 1 || ranks_per_node < 1)
    throw InvalidArgument("cannot share " + std::to_string(cores_per_node) + " cores among " +
                          std::to_string(ranks_per_node) + " ranks");
  return std::max(1, cores_per_node / ranks_per_node);
}

int machine_default_threads(int machine_cores, int machine_ranks, int virtual_nodes) {
  if (machine_cores < 1) throw InvalidArgument("cores per machine must be >= 1, got " + std::to_string(machine_cores));
  if (machine_ranks < 1) throw InvalidArgument("ranks per machine must be >= 1, got " + std::to_string(machine_ranks));
  if (virtual_nodes < 1) throw InvalidArgument("virtual nodes must be >= 1, got " + std::to_string(virtual_nodes));
  const int nodes = std::min(virtual_nodes, machine_ranks);
  // More virtual nodes than cores leaves a node less than a core: it still counts as one.
  const int cores = std::max(1, machine_cores / nodes);
  return default_threads(cores, (machine_ranks + nodes - 1) / nodes);
}

bool omp_threads_explicit() {
  const char* text = std::getenv("OMP_NUM_THREADS");
  return text != nullptr && *text != '\0';
}

namespace {

/// The comma-separated items of `text`, blanks around each trimmed (libgomp allows them).
std::vector<std::string> openmp_list(std::string_view text) {
  std::vector<std::string> items;
  std::size_t start = 0;
  for (;;) {
    const std::size_t comma = std::min(text.find(',', start), text.size());
    std::string_view item = text.substr(start, comma - start);
    while (!item.empty() && std::isspace(static_cast<unsigned char>(item.front()))) item.remove_prefix(1);
    while (!item.empty() && std::isspace(static_cast<unsigned char>(item.back()))) item.remove_suffix(1);
    items.emplace_back(item);
    if (comma == text.size()) return items;
    start = comma + 1;
  }
}

}  // namespace

void check_openmp_environment() {
  if (const char* text = std::getenv("OMP_NUM_THREADS"); text != nullptr && *text != '\0') {
    bool first = true;
    for (const std::string& item : openmp_list(text)) {
      long value = 0;
      const auto [end, ec] = std::from_chars(item.data(), item.data() + item.size(), value);
      if (ec != std::errc() || end != item.data() + item.size() || value < 1)
        throw InvalidArgument("OMP_NUM_THREADS must be a thread count >= 1 (or a comma-separated list of them), got '" +
                              printable(text) + "'");
      if (first && value > contract::kMaxNodePus)
        throw InvalidArgument("OMP_NUM_THREADS=" + item + " exceeds hympi's limit of " +
                              std::to_string(contract::kMaxNodePus) + " threads on one node (" +
                              std::string(contract::kMaxNodePusReason) + ")");
      first = false;
    }
  }
  if (const char* text = std::getenv("OMP_PROC_BIND"); text != nullptr && *text != '\0') {
    const auto items = openmp_list(text);
    const auto lower = [](std::string word) {
      for (char& c : word) c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
      return word;
    };
    const auto is = [&](const std::string& item, std::initializer_list<std::string_view> words) {
      return std::find(words.begin(), words.end(), lower(item)) != words.end();
    };
    const bool valid = (items.size() == 1 && is(items[0], {"true", "false"})) ||
                       std::all_of(items.begin(), items.end(), [&](const std::string& item) {
                         return is(item, {"primary", "master", "close", "spread"});
                       });
    if (!valid)
      throw InvalidArgument("OMP_PROC_BIND must be true, false or a comma-separated list of primary, master, close "
                            "and spread, got '" + printable(text) + "'");
  }
  // The place-list grammar is the runtime's own; a list it could not read, or whose places all lie outside the
  // process's CPU set, leaves it with no places.
  if (const char* text = std::getenv("OMP_PLACES"); text != nullptr && *text != '\0' && omp_get_num_places() == 0)
    throw InvalidArgument("OMP_PLACES='" + printable(text) + "' gives the OpenMP runtime no place (not threads, "
                          "cores, sockets, ll_caches, numa_domains or {..} lists of PUs this process may run on)");
}

NodeMap::NodeMap(MPI_Comm comm, int virtual_nodes, MPI_Comm machine) {
  if (virtual_nodes < 1)
    throw InvalidArgument("virtual nodes must be >= 1, got " + std::to_string(virtual_nodes));
  int rank = 0;
  HYMPI_MPI(MPI_Comm_rank(comm, &rank));
  if (machine == MPI_COMM_NULL) {
    MPI_Comm shared = MPI_COMM_NULL;
    HYMPI_MPI(MPI_Comm_split_type(comm, MPI_COMM_TYPE_SHARED, rank, MPI_INFO_NULL, &shared));
    machine_ = Comm(shared);
  } else {
    machine_ = Comm::duplicate(machine);
  }
  machine_rank_ = machine_.rank();
  machine_size_ = machine_.size();

  // Virtual nodes: contiguous blocks of the machine's ranks, so rank order maps to node order.
  nodes_on_machine_ = std::min(virtual_nodes, machine_size_);
  node_on_machine_ = static_cast<int>(static_cast<long long>(machine_rank_) * nodes_on_machine_ / machine_size_);
  node_ = Comm::split(machine_.get(), node_on_machine_, machine_rank_);
  node_rank_ = node_.rank();
  node_size_ = node_.size();

  const int leader = node_rank_ == 0 ? 1 : 0;
  HYMPI_MPI(MPI_Allreduce(&leader, &num_nodes_, 1, MPI_INT, MPI_SUM, comm));
  int before = 0;
  HYMPI_MPI(MPI_Exscan(&leader, &before, 1, MPI_INT, MPI_SUM, comm));
  if (rank == 0) before = 0;  // MPI_Exscan leaves rank 0's output undefined.
  node_id_ = before;
  HYMPI_MPI(MPI_Bcast(&node_id_, 1, MPI_INT, 0, node_.get()));
}

Environment::Environment(int& argc, char**& argv, const EnvironmentOptions& options) {
  // Validate before MPI_Init so a bad value never leaves MPI half-initialised.
  virtual_nodes_ = options.virtual_nodes > 0 ? options.virtual_nodes : virtual_nodes_from_env();
  int provided = MPI_THREAD_SINGLE;
  HYMPI_MPI(MPI_Init_thread(&argc, &argv, to_mpi(options.thread_level), &provided));
  MPI_Comm_set_errhandler(MPI_COMM_WORLD, MPI_ERRORS_RETURN);
  provided_ = from_mpi(provided);
  try {
    if (provided < to_mpi(options.thread_level))
      throw Error("MPI provides thread level '" + to_string(provided_) + "' but '" +
                  to_string(options.thread_level) + "' was requested");
    HYMPI_MPI(MPI_Comm_rank(MPI_COMM_WORLD, &rank_));
    HYMPI_MPI(MPI_Comm_size(MPI_COMM_WORLD, &size_));

    nodes_.emplace(MPI_COMM_WORLD, virtual_nodes_);

    char name[MPI_MAX_PROCESSOR_NAME] = {};
    int length = 0;
    HYMPI_MPI(MPI_Get_processor_name(name, &length));
    host_.assign(name, static_cast<std::size_t>(length));
    if (nodes_->nodes_on_machine() > 1) host_ += "/vn" + std::to_string(nodes_->node_on_machine());

    char version[MPI_MAX_LIBRARY_VERSION_STRING] = {};
    HYMPI_MPI(MPI_Get_library_version(version, &length));
    mpi_library_ = version;
    mpi_library_ = mpi_library_.substr(0, mpi_library_.find_first_of("\n,"));

    if (!omp_threads_explicit()) {
      // The OpenMP runtime alone would start one thread per PU in every rank, so the ranks of a
      // node would pile onto the same cores. Choose per machine, then agree on the smallest, so
      // every rank runs the same count (apps validate and report one layout).
      int mine = 0;  // 0: this rank could not count its cores; every rank must still reach the reduction
      std::string why = "another rank could not count its cores for the default thread count";
      try {
        mine = machine_default_threads(Topology::this_machine().cores(), machine_size(), virtual_nodes_);
      } catch (const std::exception& e) {
        why = e.what();
      }
      int agreed = mine;
      HYMPI_MPI(MPI_Allreduce(&mine, &agreed, 1, MPI_INT, MPI_MIN, MPI_COMM_WORLD));
      if (agreed < 1) throw TopologyError(why);
      omp_set_num_threads(agreed);
      threads_default_ = true;
    }
    threads_ = omp_get_max_threads();
  } catch (...) {
    nodes_.reset();
    MPI_Finalize();
    throw;
  }
}

Environment::~Environment() {
  nodes_.reset();
  MPI_Finalize();
}

std::vector<std::string> Environment::hosts() const {
  constexpr int kWidth = 256;
  std::array<char, kWidth> mine{};
  std::strncpy(mine.data(), host_.c_str(), kWidth - 1);
  std::vector<char> all(static_cast<std::size_t>(kWidth) * static_cast<std::size_t>(size_));
  HYMPI_MPI(MPI_Allgather(mine.data(), kWidth, MPI_CHAR, all.data(), kWidth, MPI_CHAR, MPI_COMM_WORLD));
  std::vector<std::string> out;
  for (int r = 0; r < size_; ++r) {
    std::string h(all.data() + static_cast<std::size_t>(r) * kWidth);
    bool seen = false;
    for (const auto& o : out) seen = seen || o == h;
    if (!seen) out.push_back(h);
  }
  return out;
}

}  // namespace hympi
