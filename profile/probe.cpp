// The probe half of libhympi-profile: with HYMPI_PROBE_DIR set, every process it is preloaded into writes
// DIR/probe-<host>-<pid>.json once, at MPI_Finalize, or at exit for a program that never finalizes or never
// calls MPI. It says what MPI world the process saw, how long it ran and spent inside MPI, its peak memory, and
// for the main thread and each thread created with pthread_create (in creation order, 0 = main): which library
// created it (libgomp's team threads are how a GCC binary's OpenMP threads are seen: libgomp has no OMPT), its
// CPU time, the part of it spent before MPI_Init returned, its binding and the PUs it was seen running on.
//
// Threads are learnt by interposing pthread_create (the real one found with dlsym(RTLD_NEXT)); a sampler thread
// of our own, started with the real pthread_create so it never counts itself, wakes every kSampleMs and asks hwloc
// where each live thread last ran and what it is bound to. One Probe object holds this per process: an
// interposition library has no caller to hand state to, so the preloaded process's state lives in one
// function-local static, like the profiler's own State.
#include <dlfcn.h>
#include <hwloc.h>
#include <hwloc/linux.h>
#include <mpi.h>
#include <pthread.h>
#include <signal.h>
#include <sys/resource.h>
#include <sys/syscall.h>
#include <unistd.h>

#include <atomic>
#include <cerrno>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <ctime>
#include <mutex>
#include <string>
#include <vector>

#include "probe.hpp"

namespace {

using Clock = std::chrono::steady_clock;
using CreateFn = int (*)(pthread_t*, const pthread_attr_t*, void* (*)(void*), void*);

// Often enough to see a thread on each PU it uses for more than a few scheduler quanta; rare enough that the
// sampler's own cost stays far below the 2 % of wall time the probe may cost (bench/probe).
constexpr long kSampleMs = 20;

struct Thread {
  pid_t tid = 0;
  pthread_t handle{};
  std::string creator;  // the shared object whose code called pthread_create ("" for the main thread)
  bool alive = true;
  double cpu_s = 0.0;  // at its end, once it ended
  // At MPI_Init's return (0 for a thread born after it): the start-up's share, which is no computing. Open MPI's
  // MPI_Init takes ~0.08 s of the main thread's CPU; beside it a short run's OpenMP threads look idle.
  double init_cpu_s = 0.0;
  double born_s = 0.0, ended_s = -1.0;
  hwloc_bitmap_t used = nullptr;   // PUs it was seen running on
  hwloc_bitmap_t bound = nullptr;  // its binding at the last sample
};

struct Probe {
  std::mutex mutex;
  std::string dir;
  hwloc_topology_t topology = nullptr;
  std::vector<Thread> threads;
  pthread_t sampler{};
  bool sampling = false;
  std::atomic<bool> stop{false};
  std::atomic<bool> written{false};
  // The probe's own cost: the sampler's CPU time, set as it ends (read after the join), and the CPU time its start
  // took on the main thread (the hwloc topology load).
  double sampler_cpu_s = 0.0;
  double start_cpu_s = 0.0;
  Clock::time_point start = Clock::now();
  bool spawned = false;  // told at MPI_Init: a process can disconnect from its parent before it ends
};

CreateFn real_create() {
  static const auto fn = reinterpret_cast<CreateFn>(dlsym(RTLD_NEXT, "pthread_create"));
  return fn;
}

std::size_t add_thread(Probe& p, std::string creator);

// The process's probe, or null when HYMPI_PROBE_DIR is unset (then the library only profiles). Made on the main
// thread, which it records first (thread 0): before main() only the main thread runs, and a library whose
// constructor runs before ours and starts threads (OpenBLAS's pool) calls our pthread_create on it.
Probe* probe() {
  static Probe* p = [] {
    const char* dir = std::getenv("HYMPI_PROBE_DIR");
    if (dir == nullptr || *dir == '\0') return static_cast<Probe*>(nullptr);
    auto* made = new Probe{};  // lives until exit: threads may outlive main
    std::lock_guard lock(made->mutex);
    add_thread(*made, "");
    return made;
  }();
  return p;
}

double since_start(const Probe& p) { return std::chrono::duration<double>(Clock::now() - p.start).count(); }

double cpu_seconds(clockid_t clock) {
  timespec t{};
  return clock_gettime(clock, &t) == 0 ? double(t.tv_sec) + 1e-9 * double(t.tv_nsec) : 0.0;
}

double thread_cpu_seconds(pthread_t handle) {
  clockid_t clock{};
  return pthread_getcpuclockid(handle, &clock) == 0 ? cpu_seconds(clock) : 0.0;
}

// Adds the calling thread (mutex held); returns its index.
std::size_t add_thread(Probe& p, std::string creator) {
  Thread t;
  t.tid = static_cast<pid_t>(syscall(SYS_gettid));
  t.handle = pthread_self();
  t.creator = std::move(creator);
  t.born_s = since_start(p);
  t.used = hwloc_bitmap_alloc();
  t.bound = hwloc_bitmap_alloc();
  p.threads.push_back(t);
  return p.threads.size() - 1;
}

void sample(Probe& p) {
  hwloc_bitmap_t where = hwloc_bitmap_alloc();
  std::lock_guard lock(p.mutex);
  for (Thread& t : p.threads) {
    if (!t.alive) continue;
    if (hwloc_linux_get_tid_last_cpu_location(p.topology, t.tid, where) == 0) hwloc_bitmap_or(t.used, t.used, where);
    hwloc_linux_get_tid_cpubind(p.topology, t.tid, t.bound);
  }
  hwloc_bitmap_free(where);
}

void* sampler_main(void* raw) {
  Probe& p = *static_cast<Probe*>(raw);
  sigset_t all;
  sigfillset(&all);
  pthread_sigmask(SIG_BLOCK, &all, nullptr);  // the program's signals go to its own threads, never to ours
  while (!p.stop.load(std::memory_order_relaxed)) {
    sample(p);
    timespec pause{0, kSampleMs * 1000000L};
    nanosleep(&pause, nullptr);
  }
  p.sampler_cpu_s = cpu_seconds(CLOCK_THREAD_CPUTIME_ID);
  return nullptr;
}

// Records a thread's end (its CPU time, while the thread can still read its own clock).
struct ThreadEnd {
  std::size_t index;
  ~ThreadEnd() {
    Probe* p = probe();
    const double cpu = cpu_seconds(CLOCK_THREAD_CPUTIME_ID);
    std::lock_guard lock(p->mutex);
    Thread& t = p->threads[index];
    t.alive = false;
    t.cpu_s = cpu;
    t.ended_s = since_start(*p);
  }
};

struct Start {
  void* (*fn)(void*);
  void* arg;
  std::string creator;
};

void* trampoline(void* raw) {
  Start start = *static_cast<Start*>(raw);
  delete static_cast<Start*>(raw);
  Probe* p = probe();
  std::size_t index = 0;
  {
    std::lock_guard lock(p->mutex);
    index = add_thread(*p, start.creator);
  }
  const ThreadEnd end{index};  // runs at return and at pthread_exit (glibc unwinds the thread)
  return start.fn(start.arg);
}

std::string object_of(const void* address) {
  Dl_info info{};
  return dladdr(address, &info) != 0 && info.dli_fname != nullptr ? info.dli_fname : "";
}

std::string escaped(const std::string& text) {
  std::string out;
  for (const char c : text) {
    if (c == '"' || c == '\\') out += '\\';
    if (static_cast<unsigned char>(c) >= 0x20) out += c;
  }
  return out;
}

std::string list_of(hwloc_const_bitmap_t set) {
  char* text = nullptr;
  if (hwloc_bitmap_list_asprintf(&text, set) < 0 || text == nullptr) return "";
  std::string out(text);
  std::free(text);
  return out;
}

void stop_sampler(Probe& p) {
  if (!p.sampling) return;
  p.stop.store(true);
  pthread_join(p.sampler, nullptr);
  p.sampling = false;
}

}  // namespace

namespace hympi_probe {

void on_init(bool spawned) {
  Probe* p = probe();
  if (p == nullptr) return;
  std::lock_guard lock(p->mutex);
  p->spawned = spawned;
  for (Thread& t : p->threads) {
    hwloc_bitmap_zero(t.used);
    if (t.alive) t.init_cpu_s = thread_cpu_seconds(t.handle);
  }
}

void write(const MpiFigures& mpi) {
  Probe* p = probe();
  if (p == nullptr) return;
  stop_sampler(*p);
  sample(*p);  // the last look, after the sampler stopped
  std::lock_guard lock(p->mutex);
  if (p->written.exchange(true)) return;
  char host[256] = {};
  gethostname(host, sizeof host - 1);
  rusage usage{};
  getrusage(RUSAGE_SELF, &usage);
  const std::string path = p->dir + "/probe-" + host + "-" + std::to_string(getpid()) + ".json";
  std::FILE* f = open_output(path);
  if (f == nullptr) return;
  std::fprintf(f, "{\"format\": \"hympi-probe\", \"version\": 1, \"host\": \"%s\", \"pid\": %d,\n",
               escaped(host).c_str(), int(getpid()));
  std::fprintf(f, " \"mpi\": {\"initialized\": %s, \"rank\": %d, \"size\": %d, \"spawned\": %s, \"wall_s\": %.6f, "
                  "\"mpi_s\": %.6f, \"bytes_sent\": %llu, \"messages_sent\": %llu},\n",
               mpi.initialized ? "true" : "false", mpi.rank, mpi.size, p->spawned ? "true" : "false", mpi.wall_s,
               mpi.mpi_s, static_cast<unsigned long long>(mpi.bytes_sent),
               static_cast<unsigned long long>(mpi.messages_sent));
  std::fprintf(f, " \"wall_s\": %.6f, \"max_rss_kib\": %ld, \"sampler_cpu_s\": %.6f, \"start_cpu_s\": %.6f,\n"
                  " \"threads\": [",
               since_start(*p), usage.ru_maxrss, p->sampler_cpu_s, p->start_cpu_s);
  for (std::size_t i = 0; i < p->threads.size(); ++i) {
    const Thread& t = p->threads[i];
    const double cpu = t.alive ? thread_cpu_seconds(t.handle) : t.cpu_s;
    const double life = (t.alive ? since_start(*p) : t.ended_s) - t.born_s;
    std::fprintf(f, "%s\n  {\"index\": %zu, \"tid\": %d, \"creator\": \"%s\", \"cpu_s\": %.6f, \"init_cpu_s\": %.6f, "
                    "\"wall_s\": %.6f, \"bound\": \"%s\", \"used\": \"%s\"}",
                 i == 0 ? "" : ",", i, int(t.tid), escaped(t.creator).c_str(), cpu, t.init_cpu_s, life,
                 list_of(t.bound).c_str(), list_of(t.used).c_str());
  }
  std::fprintf(f, "\n ]}\n");
  finish_output(f, path);
}

std::FILE* open_output(const std::string& path) {
  const std::string tmp = path + ".tmp";
  std::FILE* f = std::fopen(tmp.c_str(), "w");
  if (f == nullptr) std::fprintf(stderr, "libhympi-profile: cannot write %s: %s\n", tmp.c_str(), std::strerror(errno));
  return f;
}

void finish_output(std::FILE* f, const std::string& path) {
  const std::string tmp = path + ".tmp";
  const bool written = std::ferror(f) == 0;
  const bool ok = std::fclose(f) == 0 && written;
  if (!ok || std::rename(tmp.c_str(), path.c_str()) != 0) {
    std::fprintf(stderr, "libhympi-profile: cannot write %s: %s\n", path.c_str(), std::strerror(errno));
    std::remove(tmp.c_str());
  }
}

}  // namespace hympi_probe

extern "C" {

int pthread_create(pthread_t* thread, const pthread_attr_t* attr, void* (*fn)(void*), void* arg) {
  Probe* p = probe();
  if (p == nullptr || p->written) return real_create()(thread, attr, fn, arg);
  auto* start = new Start{fn, arg, object_of(__builtin_return_address(0))};
  const int rc = real_create()(thread, attr, trampoline, start);
  if (rc != 0) delete start;
  return rc;
}

}  // extern "C"

namespace {

__attribute__((constructor)) void start_probe() {
  Probe* p = probe();
  if (p == nullptr) return;
  const double started = cpu_seconds(CLOCK_THREAD_CPUTIME_ID);
  p->dir = std::getenv("HYMPI_PROBE_DIR");
  hwloc_topology_init(&p->topology);
  hwloc_topology_set_all_types_filter(p->topology, HWLOC_TYPE_FILTER_KEEP_NONE);  // PUs are all it needs
  hwloc_topology_set_type_filter(p->topology, HWLOC_OBJ_PU, HWLOC_TYPE_FILTER_KEEP_ALL);
  hwloc_topology_load(p->topology);
  p->start_cpu_s = cpu_seconds(CLOCK_THREAD_CPUTIME_ID) - started;
  p->sampling = real_create()(&p->sampler, nullptr, sampler_main, p) == 0;
  // A child that forks off without exec has no sampler and is no rank: it writes nothing and joins nothing.
  pthread_atfork(nullptr, nullptr, [] {
    Probe* child = probe();
    child->sampling = false;
    child->written.store(true);
  });
}

// A process that never reached MPI_Finalize (no MPI at all, or an exit before it) writes at exit.
__attribute__((destructor)) void finish_probe() {
  Probe* p = probe();
  if (p == nullptr || p->written) return;
  int initialized = 0, finalized = 0;
  PMPI_Initialized(&initialized);
  PMPI_Finalized(&finalized);
  hympi_probe::MpiFigures mpi;
  if (initialized != 0 && finalized == 0) {
    PMPI_Comm_rank(MPI_COMM_WORLD, &mpi.rank);
    PMPI_Comm_size(MPI_COMM_WORLD, &mpi.size);
    mpi.initialized = true;
  }
  hympi_probe::write(mpi);
}

}  // namespace
