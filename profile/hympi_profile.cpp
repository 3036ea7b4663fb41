// libhympi-profile: a PMPI interposition library that records, per pair of MPI_COMM_WORLD ranks,
// the bytes and messages of point-to-point traffic, plus per-rank collective calls, and writes
// them as one JSON matrix file when the program calls MPI_Finalize. For a predictor it also
// records per-kind message-size histograms and, per rank, the wall time spent inside MPI calls.
//
// Use: LD_PRELOAD=libhympi-profile.so HYMPI_PROFILE_OUT=profile.json mpirun ... (or `hympi
// profile -- CMD`). Works on programs built without it, in C, C++ and Fortran (mpif.h / use mpi).
//
// What counts: the *sender* records every message it starts (blocking, nonblocking, persistent
// at each MPI_Start, the send half of MPI_Sendrecv), so row i of the matrix is what rank i sent.
// Destinations are translated to MPI_COMM_WORLD ranks (sub- and inter-communicators included);
// MPI_PROC_NULL is skipped. Collectives are not folded into the matrix (their real traffic
// depends on the algorithm the MPI library picks) but listed separately: calls and send-buffer
// bytes per rank and per collective.
//
// Size histograms: bins with the lower edges kBinEdges. Kind "p2p" bins every message counted in
// the matrix; each collective bins, per call, the send bytes it adds to its "send_bytes" count.
//
// Time: every intercepted call (sends, receives, waits, tests, probes, collectives) is timed with
// a tick counter (see ticks()) summed into one atomic per process: no lock on the timing path.
// A call made from inside another intercepted one (e.g. MPICH's Fortran bindings calling the C
// MPI_Send) is neither timed nor recorded twice: only the outermost call on a thread counts. Calls
// overlapping on several threads (MPI_THREAD_MULTIPLE) are summed per thread, so mpi_time_s can
// then exceed wall_time_s. wall_time_s runs from the return of MPI_Init/MPI_Init_thread to the entry
// of MPI_Finalize (start-up and shut-down are not the program's time).
//
// Fortran: Open MPI's mpif.h bindings (mpi_send_ ...) call PMPI_Send directly, so a C-only PMPI
// layer never sees Fortran traffic. The Fortran symbols are therefore intercepted too and
// forwarded to the library's own pmpi_*_ entry points, looked up at call time with dlsym (a C
// program never loads the Fortran bindings, so they cannot be linked in).
#include <dlfcn.h>
#include <mpi.h>
#if defined(__x86_64__) || defined(__i386__)
#include <x86intrin.h>
#endif

#include <atomic>
#include <cerrno>
#include <chrono>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <mutex>
#include <string>
#include <unordered_map>
#include <vector>

#include "hympi/contract.hpp"
#include "probe.hpp"

namespace {

// Collectives we list; the order is the order of the JSON output.
enum Collective : int {
  kBarrier,
  kBcast,
  kReduce,
  kAllreduce,
  kGather,
  kGatherv,
  kScatter,
  kScatterv,
  kAllgather,
  kAllgatherv,
  kAlltoall,
  kAlltoallv,
  kReduceScatter,
  kReduceScatterBlock,
  kScan,
  kExscan,
  kNumCollectives
};
constexpr const char* kCollectiveNames[kNumCollectives] = {
    "MPI_Barrier",  "MPI_Bcast",     "MPI_Reduce",    "MPI_Allreduce",        "MPI_Gather", "MPI_Gatherv",
    "MPI_Scatter",  "MPI_Scatterv",  "MPI_Allgather", "MPI_Allgatherv",       "MPI_Alltoall", "MPI_Alltoallv",
    "MPI_Reduce_scatter", "MPI_Reduce_scatter_block", "MPI_Scan", "MPI_Exscan"};

// Message-size bins (contract.toml [profile]): bin i holds sizes in [kBinEdges[i], kBinEdges[i + 1]); the last is
// open.
constexpr auto& kBinEdges = hympi::contract::kProfileSizeBins;
constexpr int kNumBins = static_cast<int>(kBinEdges.size());
// Histogram kinds: point-to-point first, then one per collective in Collective order.
constexpr int kP2p = 0;
constexpr int kNumKinds = 1 + kNumCollectives;

// Per-rank counts gathered at MPI_Finalize: (calls, send bytes) per collective, then the histograms.
constexpr int kHistogramBase = 2 * kNumCollectives;
constexpr int kCountsPerRank = kHistogramBase + kNumKinds * kNumBins;

int size_bin(std::uint64_t bytes) {
  int bin = 0;
  while (bin + 1 < kNumBins && bytes >= kBinEdges[bin + 1]) ++bin;
  return bin;
}

using Clock = std::chrono::steady_clock;

// The per-call timing path reads a tick counter: x86's TSC costs a fraction of steady_clock::now()
// (about 40 vs 100 ns on a virtual machine, twice per call). Ticks become seconds with the rate
// measured against steady_clock between MPI_Init and MPI_Finalize (invariant TSC: constant rate).
// Elsewhere the ticks are steady_clock's own, and that rate comes out as its period.
std::uint64_t ticks() {
#if defined(__x86_64__) || defined(__i386__)
  return __rdtsc();
#else
  return static_cast<std::uint64_t>(Clock::now().time_since_epoch().count());
#endif
}

struct Persistent {
  int dest = MPI_PROC_NULL;  // world rank
  std::uint64_t bytes = 0;
};

struct State {
  std::mutex mutex;  // MPI_THREAD_MULTIPLE programs may send from several threads
  bool ready = false;
  bool written = false;
  int rank = 0, size = 0;
  std::vector<std::uint64_t> bytes, messages;  // this rank's row
  std::uint64_t coll_calls[kNumCollectives] = {};
  std::uint64_t coll_bytes[kNumCollectives] = {};
  std::uint64_t histogram[kNumKinds][kNumBins] = {};
  std::atomic<std::uint64_t> mpi_ticks{0};  // outside the mutex: the timing path takes no lock
  bool started = false;
  // Started by another job's MPI_Comm_spawn: its world is not the launched one, whose matrix HYMPI_PROFILE_OUT holds.
  bool spawned = false;
  Clock::time_point start;  // return of MPI_Init, else the first call seen
  std::uint64_t start_ticks = 0;
  std::unordered_map<MPI_Request, Persistent> persistent;
  // Group-rank -> world-rank tables of the communicators seen, dropped when one is freed.
  std::unordered_map<MPI_Comm, std::vector<int>> translation;
};

State& state() {
  static State s;  // never destroyed before MPI_Finalize: function-local static
  return s;
}

// Intercepted calls open on this thread: 1 inside an outermost call, more when the MPI library
// calls back into an intercepted entry point. Per thread by nature, hence thread_local.
thread_local int call_depth = 0;

// Times one intercepted call (only the outermost on its thread) into State::mpi_ticks.
class InMpi {
 public:
  InMpi() : outer_(call_depth++ == 0), start_(outer_ ? ticks() : 0) {}
  ~InMpi() {
    --call_depth;
    if (outer_) state().mpi_ticks.fetch_add(ticks() - start_, std::memory_order_relaxed);
  }
  InMpi(const InMpi&) = delete;
  InMpi& operator=(const InMpi&) = delete;

 private:
  bool outer_;
  std::uint64_t start_;
};

// True inside a call made from another intercepted call: its traffic is the outer call's.
bool nested() { return call_depth > 1; }

// Starts the wall clock (mutex held); MPI_Init's return restarts it, the first call seen otherwise.
void start_clock(State& s) {
  s.start = Clock::now();
  s.start_ticks = ticks();
  s.started = true;
}

// Must be called with the mutex held and after MPI_Init.
void ensure_ready(State& s) {
  if (s.ready) return;
  PMPI_Comm_rank(MPI_COMM_WORLD, &s.rank);
  PMPI_Comm_size(MPI_COMM_WORLD, &s.size);
  s.bytes.assign(static_cast<std::size_t>(s.size), 0);
  s.messages.assign(static_cast<std::size_t>(s.size), 0);
  if (!s.started) start_clock(s);
  s.ready = true;
}

std::uint64_t type_bytes(MPI_Datatype type, std::uint64_t count) {
  MPI_Count size = 0;
  if (type == MPI_DATATYPE_NULL || PMPI_Type_size_x(type, &size) != MPI_SUCCESS || size < 0) return 0;
  return count * static_cast<std::uint64_t>(size);
}

// World rank of `rank` in `comm` (remote group for inter-communicators), or -1.
int world_rank(State& s, MPI_Comm comm, int rank) {
  if (rank == MPI_PROC_NULL || rank < 0) return -1;
  if (comm == MPI_COMM_WORLD) return rank < s.size ? rank : -1;
  auto it = s.translation.find(comm);
  if (it == s.translation.end()) {
    int inter = 0;
    PMPI_Comm_test_inter(comm, &inter);
    MPI_Group group = MPI_GROUP_NULL, world = MPI_GROUP_NULL;
    if ((inter ? PMPI_Comm_remote_group(comm, &group) : PMPI_Comm_group(comm, &group)) != MPI_SUCCESS) return -1;
    PMPI_Comm_group(MPI_COMM_WORLD, &world);
    int n = 0;
    PMPI_Group_size(group, &n);
    std::vector<int> local(static_cast<std::size_t>(n)), global(static_cast<std::size_t>(n), -1);
    for (int i = 0; i < n; ++i) local[static_cast<std::size_t>(i)] = i;
    PMPI_Group_translate_ranks(group, n, local.data(), world, global.data());
    PMPI_Group_free(&group);
    PMPI_Group_free(&world);
    for (int& g : global)
      if (g == MPI_UNDEFINED) g = -1;  // a process outside MPI_COMM_WORLD (dynamic processes)
    it = s.translation.emplace(comm, std::move(global)).first;
  }
  return rank < static_cast<int>(it->second.size()) ? it->second[static_cast<std::size_t>(rank)] : -1;
}

// One point-to-point message to world rank `dest` (mutex held, ready).
void add_message(State& s, int dest, std::uint64_t bytes) {
  s.bytes[static_cast<std::size_t>(dest)] += bytes;
  s.messages[static_cast<std::size_t>(dest)] += 1;
  s.histogram[kP2p][size_bin(bytes)] += 1;
}

void record_send(int dest, MPI_Comm comm, std::uint64_t count, MPI_Datatype type) {
  if (dest == MPI_PROC_NULL || nested()) return;
  State& s = state();
  std::lock_guard lock(s.mutex);
  ensure_ready(s);
  const int w = world_rank(s, comm, dest);
  if (w < 0) return;
  add_message(s, w, type_bytes(type, count));
}

void record_persistent(MPI_Request request, int dest, MPI_Comm comm, std::uint64_t count, MPI_Datatype type) {
  if (nested()) return;
  State& s = state();
  std::lock_guard lock(s.mutex);
  ensure_ready(s);
  const int w = dest == MPI_PROC_NULL ? -1 : world_rank(s, comm, dest);
  s.persistent[request] = {w, type_bytes(type, count)};
}

void record_start(MPI_Request request) {
  if (nested()) return;
  State& s = state();
  std::lock_guard lock(s.mutex);
  auto it = s.persistent.find(request);
  if (it == s.persistent.end() || it->second.dest < 0) return;  // a receive, or to MPI_PROC_NULL
  ensure_ready(s);
  add_message(s, it->second.dest, it->second.bytes);
}

void forget_request(MPI_Request request) {
  State& s = state();
  std::lock_guard lock(s.mutex);
  s.persistent.erase(request);
}

void forget_comm(MPI_Comm comm) {
  State& s = state();
  std::lock_guard lock(s.mutex);
  s.translation.erase(comm);  // the handle may be reused for a different communicator
}

void record_collective(Collective which, std::uint64_t bytes) {
  if (nested()) return;
  State& s = state();
  std::lock_guard lock(s.mutex);
  ensure_ready(s);
  s.coll_calls[which] += 1;
  s.coll_bytes[which] += bytes;
  s.histogram[1 + which][size_bin(bytes)] += 1;
}

void record_init() {
  // Asked now: MPI_Comm_get_parent answers MPI_COMM_NULL once the program has disconnected from its parent.
  MPI_Comm parent = MPI_COMM_NULL;
  PMPI_Comm_get_parent(&parent);
  hympi_probe::on_init(parent != MPI_COMM_NULL);
  State& s = state();
  std::lock_guard lock(s.mutex);
  start_clock(s);
  s.spawned = parent != MPI_COMM_NULL;
}

int comm_size(MPI_Comm comm) {
  int n = 0;
  int inter = 0;
  PMPI_Comm_test_inter(comm, &inter);
  if (inter) PMPI_Comm_remote_size(comm, &n);
  else PMPI_Comm_size(comm, &n);
  return n;
}

int comm_rank(MPI_Comm comm) {
  int r = 0;
  PMPI_Comm_rank(comm, &r);
  return r;
}

std::uint64_t sum_counts(const int* counts, int n) {
  std::uint64_t total = 0;
  for (int i = 0; i < n && counts != nullptr; ++i) total += static_cast<std::uint64_t>(counts[i]);
  return total;
}

void write_matrix(FILE* f, const char* key, const std::vector<std::uint64_t>& all, int n) {
  std::fprintf(f, "  \"%s\": [\n", key);
  for (int i = 0; i < n; ++i) {
    std::fprintf(f, "    [");
    for (int j = 0; j < n; ++j)
      std::fprintf(f, "%s%llu", j ? ", " : "",
                   static_cast<unsigned long long>(all[static_cast<std::size_t>(i) * n + j]));
    std::fprintf(f, "]%s\n", i + 1 < n ? "," : "");
  }
  std::fprintf(f, "  ],\n");
}

void write_uint_list(FILE* f, const std::vector<std::uint64_t>& all, int stride, int index, int n) {
  std::fprintf(f, "[");
  for (int r = 0; r < n; ++r)
    std::fprintf(f, "%s%llu", r ? ", " : "",
                 static_cast<unsigned long long>(all[static_cast<std::size_t>(r) * stride + index]));
  std::fprintf(f, "]");
}

void write_uints(FILE* f, const std::uint64_t* values, int count) {
  std::fprintf(f, "[");
  for (int i = 0; i < count; ++i) std::fprintf(f, "%s%llu", i ? ", " : "", static_cast<unsigned long long>(values[i]));
  std::fprintf(f, "]");
}

// "size_bins" and "histograms" (counts summed over ranks, only kinds with an event) from the
// gathered count rows (kCountsPerRank each).
void write_histograms(FILE* f, const std::vector<std::uint64_t>& all_counts, int n) {
  std::fprintf(f, "  \"size_bins\": ");
  write_uints(f, kBinEdges.data(), kNumBins);
  std::fprintf(f, ",\n  \"histograms\": {");
  bool first = true;
  for (int k = 0; k < kNumKinds; ++k) {
    std::uint64_t sums[kNumBins] = {}, total = 0;
    for (int r = 0; r < n; ++r) {
      const std::uint64_t* row = &all_counts[static_cast<std::size_t>(r) * kCountsPerRank + kHistogramBase];
      for (int b = 0; b < kNumBins; ++b) {
        sums[b] += row[k * kNumBins + b];
        total += row[k * kNumBins + b];
      }
    }
    if (total == 0) continue;
    std::fprintf(f, "%s\n    \"%s\": ", first ? "" : ",", k == kP2p ? "p2p" : kCollectiveNames[k - 1]);
    write_uints(f, sums, kNumBins);
    first = false;
  }
  std::fprintf(f, "%s},\n", first ? "" : "\n  ");
}

// Column `index` of the gathered (MPI time, wall time) pairs as one JSON list of seconds.
void write_times(FILE* f, const char* key, const std::vector<double>& all_times, int index, int n) {
  std::fprintf(f, "  \"%s\": [", key);
  for (int r = 0; r < n; ++r)
    std::fprintf(f, "%s%.6f", r ? ", " : "", all_times[2 * static_cast<std::size_t>(r) + index]);
  std::fprintf(f, "]");
}

std::string json_escape(const char* text) {
  std::string out;
  for (const char* p = text; *p != '\0'; ++p) {
    if (*p == '"' || *p == '\\') out += '\\';
    if (static_cast<unsigned char>(*p) < 0x20) continue;
    out += *p;
  }
  return out;
}

// Gathers every row on rank 0 of MPI_COMM_WORLD and writes the file (collective; before
// PMPI_Finalize, while the world communicator still works).
void dump() {
  State& s = state();
  std::vector<std::uint64_t> row, all_rows, counts, all_counts;
  double times[2] = {};  // seconds in MPI, seconds from MPI_Init to MPI_Finalize
  {
    std::lock_guard lock(s.mutex);
    if (s.written) return;
    s.written = true;
    ensure_ready(s);
    row.reserve(2 * static_cast<std::size_t>(s.size));
    row.insert(row.end(), s.bytes.begin(), s.bytes.end());
    row.insert(row.end(), s.messages.begin(), s.messages.end());
    for (int c = 0; c < kNumCollectives; ++c) {
      counts.push_back(s.coll_calls[c]);
      counts.push_back(s.coll_bytes[c]);
    }
    for (const auto& kind : s.histogram) counts.insert(counts.end(), std::begin(kind), std::end(kind));
    static_assert(sizeof s.histogram / sizeof s.histogram[0][0] == kCountsPerRank - kHistogramBase);
    times[1] = std::chrono::duration<double>(Clock::now() - s.start).count();
    const std::uint64_t wall_ticks = ticks() - s.start_ticks;
    if (wall_ticks > 0)
      times[0] = times[1] * static_cast<double>(s.mpi_ticks.load(std::memory_order_relaxed)) /
                 static_cast<double>(wall_ticks);
  }
  hympi_probe::MpiFigures mine{true, s.rank, s.size, times[1], times[0], 0, 0};
  for (std::size_t j = 0; j < s.bytes.size(); ++j) {
    mine.bytes_sent += s.bytes[j];
    mine.messages_sent += s.messages[j];
  }
  hympi_probe::write(mine);  // this process's own file first: it needs no other rank
  // Every process of a spawned world is spawned, so all of them leave the gathers out together.
  if (s.spawned) return;
  const int n = s.size;
  std::vector<double> all_times;
  if (s.rank == 0) {
    all_rows.resize(row.size() * static_cast<std::size_t>(n));
    all_counts.resize(counts.size() * static_cast<std::size_t>(n));
    all_times.resize(2 * static_cast<std::size_t>(n));
  }
  PMPI_Gather(row.data(), static_cast<int>(row.size()), MPI_UINT64_T, all_rows.data(), static_cast<int>(row.size()),
              MPI_UINT64_T, 0, MPI_COMM_WORLD);
  PMPI_Gather(counts.data(), static_cast<int>(counts.size()), MPI_UINT64_T, all_counts.data(),
              static_cast<int>(counts.size()), MPI_UINT64_T, 0, MPI_COMM_WORLD);
  PMPI_Gather(times, 2, MPI_DOUBLE, all_times.data(), 2, MPI_DOUBLE, 0, MPI_COMM_WORLD);
  if (s.rank != 0) return;

  std::vector<std::uint64_t> bytes(static_cast<std::size_t>(n) * n), messages(bytes.size());
  for (int i = 0; i < n; ++i)
    for (int j = 0; j < n; ++j) {
      const std::size_t base = static_cast<std::size_t>(i) * 2 * n;
      bytes[static_cast<std::size_t>(i) * n + j] = all_rows[base + j];
      messages[static_cast<std::size_t>(i) * n + j] = all_rows[base + n + j];
    }
  const char* env = std::getenv("HYMPI_PROFILE_OUT");
  const std::string path = env != nullptr && *env != '\0' ? env : "hympi-profile.json";
  std::FILE* f = hympi_probe::open_output(path);
  if (f == nullptr) return;
  char library[MPI_MAX_LIBRARY_VERSION_STRING] = {};
  int length = 0;
  PMPI_Get_library_version(library, &length);
  std::string first_line(library);
  first_line = first_line.substr(0, first_line.find_first_of("\n,"));
  std::fprintf(f, "{\n  \"format\": \"hympi-profile\",\n  \"version\": 1,\n  \"ranks\": %d,\n", n);
  std::fprintf(f, "  \"mpi_library\": \"%s\",\n", json_escape(first_line.c_str()).c_str());
  std::fprintf(f, "  \"units\": {\"bytes\": \"B sent by row rank to column rank\", \"messages\": \"count\"},\n");
  write_matrix(f, "bytes", bytes, n);
  write_matrix(f, "messages", messages, n);
  std::fprintf(f, "  \"collectives\": {\n");
  bool first = true;
  for (int c = 0; c < kNumCollectives; ++c) {
    std::uint64_t total = 0;
    for (int r = 0; r < n; ++r) total += all_counts[static_cast<std::size_t>(r) * kCountsPerRank + 2 * c];
    if (total == 0) continue;  // list only what the program used
    std::fprintf(f, "%s    \"%s\": {\"calls\": ", first ? "" : ",\n", kCollectiveNames[c]);
    write_uint_list(f, all_counts, kCountsPerRank, 2 * c, n);
    std::fprintf(f, ", \"send_bytes\": ");
    write_uint_list(f, all_counts, kCountsPerRank, 2 * c + 1, n);
    std::fprintf(f, "}");
    first = false;
  }
  std::fprintf(f, "%s  },\n", first ? "" : "\n");
  write_histograms(f, all_counts, n);
  write_times(f, "mpi_time_s", all_times, 0, n);
  std::fprintf(f, ",\n");
  write_times(f, "wall_time_s", all_times, 1, n);
  std::fprintf(f, "\n}\n");
  hympi_probe::finish_output(f, path);
}

// Fortran entry points of the MPI library, found at call time (see the file comment).
template <class Fn>
Fn fortran_pmpi(const char* name) {
  void* sym = dlsym(RTLD_DEFAULT, name);
  if (sym == nullptr) {
    std::fprintf(stderr, "libhympi-profile: MPI Fortran symbol %s not found\n", name);
    std::abort();
  }
  return reinterpret_cast<Fn>(sym);
}

}  // namespace

// ---- C bindings -------------------------------------------------------------------------------
extern "C" {

// A C wrapper: inside MPI for the timing, RECORD (a statement on the arguments, (void)0 for none), then the
// library's PMPI_<NAME> with the arguments untouched.
#define HYMPI_WRAP_C(NAME, PARAMS, ARGS, RECORD) \
  int MPI_##NAME PARAMS {                        \
    const InMpi in_mpi;                          \
    RECORD;                                      \
    return PMPI_##NAME ARGS;                     \
  }

#define HYMPI_SEND_C(NAME)                                                                                    \
  HYMPI_WRAP_C(NAME, (const void* buf, int count, MPI_Datatype type, int dest, int tag, MPI_Comm comm),         \
               (buf, count, type, dest, tag, comm), record_send(dest, comm, static_cast<std::uint64_t>(count), type))
HYMPI_SEND_C(Send)
HYMPI_SEND_C(Bsend)
HYMPI_SEND_C(Ssend)
HYMPI_SEND_C(Rsend)

#define HYMPI_ISEND_C(NAME)                                                                                   \
  HYMPI_WRAP_C(NAME,                                                                                          \
               (const void* buf, int count, MPI_Datatype type, int dest, int tag, MPI_Comm comm, MPI_Request* req), \
               (buf, count, type, dest, tag, comm, req),                                                       \
               record_send(dest, comm, static_cast<std::uint64_t>(count), type))
HYMPI_ISEND_C(Isend)
HYMPI_ISEND_C(Ibsend)
HYMPI_ISEND_C(Issend)
HYMPI_ISEND_C(Irsend)

#define HYMPI_SEND_INIT_C(NAME)                                                                                  \
  int MPI_##NAME(const void* buf, int count, MPI_Datatype type, int dest, int tag, MPI_Comm comm, MPI_Request* req) { \
    const InMpi in_mpi;                                                                                               \
    const int rc = PMPI_##NAME(buf, count, type, dest, tag, comm, req);                                            \
    if (rc == MPI_SUCCESS) record_persistent(*req, dest, comm, static_cast<std::uint64_t>(count), type);           \
    return rc;                                                                                                     \
  }
HYMPI_SEND_INIT_C(Send_init)
HYMPI_SEND_INIT_C(Bsend_init)
HYMPI_SEND_INIT_C(Ssend_init)
HYMPI_SEND_INIT_C(Rsend_init)

HYMPI_WRAP_C(Start, (MPI_Request* request), (request), record_start(*request))
HYMPI_WRAP_C(Startall, (int count, MPI_Request requests[]), (count, requests),
             for (int i = 0; i < count; ++i) record_start(requests[i]))
HYMPI_WRAP_C(Request_free, (MPI_Request* request), (request), forget_request(*request))
HYMPI_WRAP_C(Comm_free, (MPI_Comm* comm), (comm), forget_comm(*comm))
HYMPI_WRAP_C(Comm_disconnect, (MPI_Comm* comm), (comm), forget_comm(*comm))
HYMPI_WRAP_C(Sendrecv,
             (const void* sbuf, int scount, MPI_Datatype stype, int dest, int stag, void* rbuf, int rcount,
              MPI_Datatype rtype, int source, int rtag, MPI_Comm comm, MPI_Status* status),
             (sbuf, scount, stype, dest, stag, rbuf, rcount, rtype, source, rtag, comm, status),
             record_send(dest, comm, static_cast<std::uint64_t>(scount), stype))
HYMPI_WRAP_C(Sendrecv_replace,
             (void* buf, int count, MPI_Datatype type, int dest, int stag, int source, int rtag, MPI_Comm comm,
              MPI_Status* status),
             (buf, count, type, dest, stag, source, rtag, comm, status),
             record_send(dest, comm, static_cast<std::uint64_t>(count), type))

// Receives, completions and probes: no traffic of their own to record, only their time.
#define HYMPI_TIMED_C(NAME, PARAMS, ARGS) HYMPI_WRAP_C(NAME, PARAMS, ARGS, (void)0)
HYMPI_TIMED_C(Recv, (void* buf, int count, MPI_Datatype type, int source, int tag, MPI_Comm comm, MPI_Status* status),
              (buf, count, type, source, tag, comm, status))
HYMPI_TIMED_C(Irecv, (void* buf, int count, MPI_Datatype type, int source, int tag, MPI_Comm comm, MPI_Request* req),
              (buf, count, type, source, tag, comm, req))
HYMPI_TIMED_C(Wait, (MPI_Request* req, MPI_Status* status), (req, status))
HYMPI_TIMED_C(Waitall, (int count, MPI_Request reqs[], MPI_Status statuses[]), (count, reqs, statuses))
HYMPI_TIMED_C(Waitany, (int count, MPI_Request reqs[], int* index, MPI_Status* status), (count, reqs, index, status))
HYMPI_TIMED_C(Waitsome, (int count, MPI_Request reqs[], int* outcount, int indices[], MPI_Status statuses[]),
              (count, reqs, outcount, indices, statuses))
HYMPI_TIMED_C(Test, (MPI_Request* req, int* flag, MPI_Status* status), (req, flag, status))
HYMPI_TIMED_C(Testall, (int count, MPI_Request reqs[], int* flag, MPI_Status statuses[]), (count, reqs, flag, statuses))
HYMPI_TIMED_C(Testany, (int count, MPI_Request reqs[], int* index, int* flag, MPI_Status* status),
              (count, reqs, index, flag, status))
HYMPI_TIMED_C(Testsome, (int count, MPI_Request reqs[], int* outcount, int indices[], MPI_Status statuses[]),
              (count, reqs, outcount, indices, statuses))
HYMPI_TIMED_C(Probe, (int source, int tag, MPI_Comm comm, MPI_Status* status), (source, tag, comm, status))
HYMPI_TIMED_C(Iprobe, (int source, int tag, MPI_Comm comm, int* flag, MPI_Status* status),
              (source, tag, comm, flag, status))

int MPI_Init(int* argc, char*** argv) {
  const int rc = PMPI_Init(argc, argv);
  record_init();
  return rc;
}

int MPI_Init_thread(int* argc, char*** argv, int required, int* provided) {
  const int rc = PMPI_Init_thread(argc, argv, required, provided);
  record_init();
  return rc;
}

int MPI_Barrier(MPI_Comm comm) {
  const InMpi in_mpi;
  record_collective(kBarrier, 0);
  return PMPI_Barrier(comm);
}

int MPI_Bcast(void* buf, int count, MPI_Datatype type, int root, MPI_Comm comm) {
  const InMpi in_mpi;
  record_collective(kBcast, comm_rank(comm) == root ? type_bytes(type, static_cast<std::uint64_t>(count)) : 0);
  return PMPI_Bcast(buf, count, type, root, comm);
}

int MPI_Reduce(const void* sbuf, void* rbuf, int count, MPI_Datatype type, MPI_Op op, int root, MPI_Comm comm) {
  const InMpi in_mpi;
  record_collective(kReduce, type_bytes(type, static_cast<std::uint64_t>(count)));
  return PMPI_Reduce(sbuf, rbuf, count, type, op, root, comm);
}

int MPI_Allreduce(const void* sbuf, void* rbuf, int count, MPI_Datatype type, MPI_Op op, MPI_Comm comm) {
  const InMpi in_mpi;
  record_collective(kAllreduce, type_bytes(type, static_cast<std::uint64_t>(count)));
  return PMPI_Allreduce(sbuf, rbuf, count, type, op, comm);
}

int MPI_Scan(const void* sbuf, void* rbuf, int count, MPI_Datatype type, MPI_Op op, MPI_Comm comm) {
  const InMpi in_mpi;
  record_collective(kScan, type_bytes(type, static_cast<std::uint64_t>(count)));
  return PMPI_Scan(sbuf, rbuf, count, type, op, comm);
}

int MPI_Exscan(const void* sbuf, void* rbuf, int count, MPI_Datatype type, MPI_Op op, MPI_Comm comm) {
  const InMpi in_mpi;
  record_collective(kExscan, type_bytes(type, static_cast<std::uint64_t>(count)));
  return PMPI_Exscan(sbuf, rbuf, count, type, op, comm);
}

int MPI_Gather(const void* sbuf, int scount, MPI_Datatype stype, void* rbuf, int rcount, MPI_Datatype rtype, int root,
               MPI_Comm comm) {
  const InMpi in_mpi;
  // MPI_IN_PLACE at the root: the root's contribution is already in place, rcount x rtype of it.
  record_collective(kGather, sbuf == MPI_IN_PLACE ? type_bytes(rtype, static_cast<std::uint64_t>(rcount))
                                                  : type_bytes(stype, static_cast<std::uint64_t>(scount)));
  return PMPI_Gather(sbuf, scount, stype, rbuf, rcount, rtype, root, comm);
}

int MPI_Gatherv(const void* sbuf, int scount, MPI_Datatype stype, void* rbuf, const int rcounts[], const int displs[],
                MPI_Datatype rtype, int root, MPI_Comm comm) {
  const InMpi in_mpi;
  const std::uint64_t mine = sbuf == MPI_IN_PLACE
                                 ? type_bytes(rtype, static_cast<std::uint64_t>(rcounts[comm_rank(comm)]))
                                 : type_bytes(stype, static_cast<std::uint64_t>(scount));
  record_collective(kGatherv, mine);
  return PMPI_Gatherv(sbuf, scount, stype, rbuf, rcounts, displs, rtype, root, comm);
}

int MPI_Scatter(const void* sbuf, int scount, MPI_Datatype stype, void* rbuf, int rcount, MPI_Datatype rtype, int root,
                MPI_Comm comm) {
  const InMpi in_mpi;
  const bool is_root = comm_rank(comm) == root;
  record_collective(kScatter, is_root ? type_bytes(stype, static_cast<std::uint64_t>(scount) * comm_size(comm)) : 0);
  return PMPI_Scatter(sbuf, scount, stype, rbuf, rcount, rtype, root, comm);
}

int MPI_Scatterv(const void* sbuf, const int scounts[], const int displs[], MPI_Datatype stype, void* rbuf, int rcount,
                 MPI_Datatype rtype, int root, MPI_Comm comm) {
  const InMpi in_mpi;
  const bool is_root = comm_rank(comm) == root;
  record_collective(kScatterv, is_root ? type_bytes(stype, sum_counts(scounts, comm_size(comm))) : 0);
  return PMPI_Scatterv(sbuf, scounts, displs, stype, rbuf, rcount, rtype, root, comm);
}

int MPI_Allgather(const void* sbuf, int scount, MPI_Datatype stype, void* rbuf, int rcount, MPI_Datatype rtype,
                  MPI_Comm comm) {
  const InMpi in_mpi;
  record_collective(kAllgather, sbuf == MPI_IN_PLACE ? type_bytes(rtype, static_cast<std::uint64_t>(rcount))
                                                     : type_bytes(stype, static_cast<std::uint64_t>(scount)));
  return PMPI_Allgather(sbuf, scount, stype, rbuf, rcount, rtype, comm);
}

int MPI_Allgatherv(const void* sbuf, int scount, MPI_Datatype stype, void* rbuf, const int rcounts[],
                   const int displs[], MPI_Datatype rtype, MPI_Comm comm) {
  const InMpi in_mpi;
  const std::uint64_t mine = sbuf == MPI_IN_PLACE
                                 ? type_bytes(rtype, static_cast<std::uint64_t>(rcounts[comm_rank(comm)]))
                                 : type_bytes(stype, static_cast<std::uint64_t>(scount));
  record_collective(kAllgatherv, mine);
  return PMPI_Allgatherv(sbuf, scount, stype, rbuf, rcounts, displs, rtype, comm);
}

int MPI_Alltoall(const void* sbuf, int scount, MPI_Datatype stype, void* rbuf, int rcount, MPI_Datatype rtype,
                 MPI_Comm comm) {
  const InMpi in_mpi;
  const std::uint64_t n = static_cast<std::uint64_t>(comm_size(comm));
  record_collective(kAlltoall, sbuf == MPI_IN_PLACE ? type_bytes(rtype, static_cast<std::uint64_t>(rcount) * n)
                                                    : type_bytes(stype, static_cast<std::uint64_t>(scount) * n));
  return PMPI_Alltoall(sbuf, scount, stype, rbuf, rcount, rtype, comm);
}

int MPI_Alltoallv(const void* sbuf, const int scounts[], const int sdispls[], MPI_Datatype stype, void* rbuf,
                  const int rcounts[], const int rdispls[], MPI_Datatype rtype, MPI_Comm comm) {
  const InMpi in_mpi;
  const int n = comm_size(comm);
  record_collective(kAlltoallv, sbuf == MPI_IN_PLACE ? type_bytes(rtype, sum_counts(rcounts, n))
                                                     : type_bytes(stype, sum_counts(scounts, n)));
  return PMPI_Alltoallv(sbuf, scounts, sdispls, stype, rbuf, rcounts, rdispls, rtype, comm);
}

int MPI_Reduce_scatter(const void* sbuf, void* rbuf, const int rcounts[], MPI_Datatype type, MPI_Op op,
                       MPI_Comm comm) {
  const InMpi in_mpi;
  record_collective(kReduceScatter, type_bytes(type, sum_counts(rcounts, comm_size(comm))));
  return PMPI_Reduce_scatter(sbuf, rbuf, rcounts, type, op, comm);
}

int MPI_Reduce_scatter_block(const void* sbuf, void* rbuf, int rcount, MPI_Datatype type, MPI_Op op, MPI_Comm comm) {
  const InMpi in_mpi;
  record_collective(kReduceScatterBlock,
                    type_bytes(type, static_cast<std::uint64_t>(rcount) * static_cast<std::uint64_t>(comm_size(comm))));
  return PMPI_Reduce_scatter_block(sbuf, rbuf, rcount, type, op, comm);
}

int MPI_Finalize() {
  dump();
  return PMPI_Finalize();
}

// ---- Fortran bindings (mpif.h and `use mpi`; gfortran's trailing-underscore names) ------------
// Arguments are passed through untouched to the MPI library's pmpi_*_ twin; only counts, types,
// ranks and communicators are converted (f2c) to record the message.
using F = MPI_Fint;

// A Fortran wrapper: inside MPI for the timing, RECORD (a statement on the arguments, (void)0 for none), then the
// library's pmpi_<lower>_ with the arguments untouched.
#define HYMPI_WRAP_F(lower, PARAMS, ARGS, RECORD)                               \
  void mpi_##lower##_ PARAMS {                                                  \
    const InMpi in_mpi;                                                         \
    static const auto next = fortran_pmpi<void(*) PARAMS>("pmpi_" #lower "_"); \
    RECORD;                                                                     \
    next ARGS;                                                                  \
  }
// What a send records: `count` elements of `type` to `dest` in `comm`.
#define HYMPI_RECORD_SEND_F(count, type) \
  record_send(*dest, MPI_Comm_f2c(*comm), static_cast<std::uint64_t>(*count), MPI_Type_f2c(*type))

#define HYMPI_SEND_F(lower)                                                                                  \
  HYMPI_WRAP_F(lower, (void* buf, F* count, F* type, F* dest, F* tag, F* comm, F* ierr),                       \
               (buf, count, type, dest, tag, comm, ierr), HYMPI_RECORD_SEND_F(count, type))
HYMPI_SEND_F(send)
HYMPI_SEND_F(bsend)
HYMPI_SEND_F(ssend)
HYMPI_SEND_F(rsend)

#define HYMPI_ISEND_F(lower)                                                                                 \
  HYMPI_WRAP_F(lower, (void* buf, F* count, F* type, F* dest, F* tag, F* comm, F* req, F* ierr),              \
               (buf, count, type, dest, tag, comm, req, ierr), HYMPI_RECORD_SEND_F(count, type))
HYMPI_ISEND_F(isend)
HYMPI_ISEND_F(ibsend)
HYMPI_ISEND_F(issend)
HYMPI_ISEND_F(irsend)

// A persistent send is recorded only once the library has made its request (the request's handle is its key).
#define HYMPI_SEND_INIT_F(lower)                                                                          \
  void mpi_##lower##_(void* buf, F* count, F* type, F* dest, F* tag, F* comm, F* req, F* ierr) {           \
    const InMpi in_mpi;                                                                                    \
    using Fn = void (*)(void*, F*, F*, F*, F*, F*, F*, F*);                                                \
    static Fn next = fortran_pmpi<Fn>("pmpi_" #lower "_");                                                 \
    next(buf, count, type, dest, tag, comm, req, ierr);                                                    \
    if (*ierr == MPI_SUCCESS)                                                                              \
      record_persistent(MPI_Request_f2c(*req), *dest, MPI_Comm_f2c(*comm), static_cast<std::uint64_t>(*count), \
                        MPI_Type_f2c(*type));                                                              \
  }
HYMPI_SEND_INIT_F(send_init)
HYMPI_SEND_INIT_F(bsend_init)
HYMPI_SEND_INIT_F(ssend_init)
HYMPI_SEND_INIT_F(rsend_init)

HYMPI_WRAP_F(start, (F* req, F* ierr), (req, ierr), record_start(MPI_Request_f2c(*req)))
HYMPI_WRAP_F(startall, (F* count, F* reqs, F* ierr), (count, reqs, ierr),
             for (F i = 0; i < *count; ++i) record_start(MPI_Request_f2c(reqs[i])))
HYMPI_WRAP_F(request_free, (F* req, F* ierr), (req, ierr), forget_request(MPI_Request_f2c(*req)))
HYMPI_WRAP_F(comm_free, (F* comm, F* ierr), (comm, ierr), forget_comm(MPI_Comm_f2c(*comm)))
HYMPI_WRAP_F(sendrecv,
             (void* sbuf, F* scount, F* stype, F* dest, F* stag, void* rbuf, F* rcount, F* rtype, F* source, F* rtag,
              F* comm, F* status, F* ierr),
             (sbuf, scount, stype, dest, stag, rbuf, rcount, rtype, source, rtag, comm, status, ierr),
             HYMPI_RECORD_SEND_F(scount, stype))
HYMPI_WRAP_F(sendrecv_replace,
             (void* buf, F* count, F* type, F* dest, F* stag, F* source, F* rtag, F* comm, F* status, F* ierr),
             (buf, count, type, dest, stag, source, rtag, comm, status, ierr), HYMPI_RECORD_SEND_F(count, type))

// Receives, completions and probes, forwarded untouched: only their time counts.
#define HYMPI_TIMED_F(lower, PARAMS, ARGS) HYMPI_WRAP_F(lower, PARAMS, ARGS, (void)0)
HYMPI_TIMED_F(recv, (void* buf, F* count, F* type, F* source, F* tag, F* comm, F* status, F* ierr),
              (buf, count, type, source, tag, comm, status, ierr))
HYMPI_TIMED_F(irecv, (void* buf, F* count, F* type, F* source, F* tag, F* comm, F* req, F* ierr),
              (buf, count, type, source, tag, comm, req, ierr))
HYMPI_TIMED_F(wait, (F* req, F* status, F* ierr), (req, status, ierr))
HYMPI_TIMED_F(waitall, (F* count, F* reqs, F* statuses, F* ierr), (count, reqs, statuses, ierr))
HYMPI_TIMED_F(waitany, (F* count, F* reqs, F* index, F* status, F* ierr), (count, reqs, index, status, ierr))
HYMPI_TIMED_F(waitsome, (F* count, F* reqs, F* outcount, F* indices, F* statuses, F* ierr),
              (count, reqs, outcount, indices, statuses, ierr))
HYMPI_TIMED_F(test, (F* req, F* flag, F* status, F* ierr), (req, flag, status, ierr))
HYMPI_TIMED_F(testall, (F* count, F* reqs, F* flag, F* statuses, F* ierr), (count, reqs, flag, statuses, ierr))
HYMPI_TIMED_F(testany, (F* count, F* reqs, F* index, F* flag, F* status, F* ierr),
              (count, reqs, index, flag, status, ierr))
HYMPI_TIMED_F(probe, (F* source, F* tag, F* comm, F* status, F* ierr), (source, tag, comm, status, ierr))
HYMPI_TIMED_F(iprobe, (F* source, F* tag, F* comm, F* flag, F* status, F* ierr),
              (source, tag, comm, flag, status, ierr))

void mpi_init_(F* ierr) {
  using Fn = void (*)(F*);
  static Fn next = fortran_pmpi<Fn>("pmpi_init_");
  next(ierr);
  record_init();
}

void mpi_init_thread_(F* required, F* provided, F* ierr) {
  using Fn = void (*)(F*, F*, F*);
  static Fn next = fortran_pmpi<Fn>("pmpi_init_thread_");
  next(required, provided, ierr);
  record_init();
}

// Fortran collectives: counted with the send-buffer size their arguments declare (Fortran's
// MPI_IN_PLACE is a common-block address we cannot recognise portably, so it is not special-cased).
// `count`: how many `type` elements this rank contributes.
#define HYMPI_RECORD_COLLECTIVE_F(which, type, count) \
  record_collective(which, type_bytes(MPI_Type_f2c(*type), static_cast<std::uint64_t>(count)))

HYMPI_WRAP_F(barrier, (F* comm, F* ierr), (comm, ierr), record_collective(kBarrier, 0))
HYMPI_WRAP_F(bcast, (void* buf, F* count, F* type, F* root, F* comm, F* ierr), (buf, count, type, root, comm, ierr),
             HYMPI_RECORD_COLLECTIVE_F(kBcast, type, comm_rank(MPI_Comm_f2c(*comm)) == *root ? *count : 0))
HYMPI_WRAP_F(reduce, (void* sbuf, void* rbuf, F* count, F* type, F* op, F* root, F* comm, F* ierr),
             (sbuf, rbuf, count, type, op, root, comm, ierr), HYMPI_RECORD_COLLECTIVE_F(kReduce, type, *count))

#define HYMPI_REDUCE_ALL_F(lower, which)                                                          \
  HYMPI_WRAP_F(lower, (void* sbuf, void* rbuf, F* count, F* type, F* op, F* comm, F* ierr),        \
               (sbuf, rbuf, count, type, op, comm, ierr), HYMPI_RECORD_COLLECTIVE_F(which, type, *count))
HYMPI_REDUCE_ALL_F(allreduce, kAllreduce)
HYMPI_REDUCE_ALL_F(scan, kScan)
HYMPI_REDUCE_ALL_F(exscan, kExscan)

HYMPI_WRAP_F(gather, (void* sbuf, F* scount, F* stype, void* rbuf, F* rcount, F* rtype, F* root, F* comm, F* ierr),
             (sbuf, scount, stype, rbuf, rcount, rtype, root, comm, ierr),
             HYMPI_RECORD_COLLECTIVE_F(kGather, stype, *scount))
HYMPI_WRAP_F(scatter, (void* sbuf, F* scount, F* stype, void* rbuf, F* rcount, F* rtype, F* root, F* comm, F* ierr),
             (sbuf, scount, stype, rbuf, rcount, rtype, root, comm, ierr),
             HYMPI_RECORD_COLLECTIVE_F(kScatter, stype, comm_rank(MPI_Comm_f2c(*comm)) == *root
                                                            ? static_cast<std::uint64_t>(*scount) *
                                                                  static_cast<std::uint64_t>(comm_size(MPI_Comm_f2c(*comm)))
                                                            : 0))
HYMPI_WRAP_F(allgather, (void* sbuf, F* scount, F* stype, void* rbuf, F* rcount, F* rtype, F* comm, F* ierr),
             (sbuf, scount, stype, rbuf, rcount, rtype, comm, ierr),
             HYMPI_RECORD_COLLECTIVE_F(kAllgather, stype, *scount))
HYMPI_WRAP_F(alltoall, (void* sbuf, F* scount, F* stype, void* rbuf, F* rcount, F* rtype, F* comm, F* ierr),
             (sbuf, scount, stype, rbuf, rcount, rtype, comm, ierr),
             HYMPI_RECORD_COLLECTIVE_F(kAlltoall, stype, static_cast<std::uint64_t>(*scount) *
                                                             static_cast<std::uint64_t>(comm_size(MPI_Comm_f2c(*comm)))))
HYMPI_WRAP_F(alltoallv,
             (void* sbuf, F* scounts, F* sdispls, F* stype, void* rbuf, F* rcounts, F* rdispls, F* rtype, F* comm,
              F* ierr),
             (sbuf, scounts, sdispls, stype, rbuf, rcounts, rdispls, rtype, comm, ierr),
             HYMPI_RECORD_COLLECTIVE_F(kAlltoallv, stype, sum_counts(scounts, comm_size(MPI_Comm_f2c(*comm)))))

void mpi_finalize_(F* ierr) {
  using Fn = void (*)(F*);
  static Fn next = fortran_pmpi<Fn>("pmpi_finalize_");
  dump();
  next(ierr);
}

}  // extern "C"
