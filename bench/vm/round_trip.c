/* How far apart two PUs are right now: every INTERVAL_MS both threads, bound to their PU with hwloc, wake at the
 * same moment and pass a cache line back and forth 200 times, timed in batches of 10; one line per sample on
 * stdout, "<CLOCK_MONOTONIC seconds> <round trip in ns of the fastest batch>". The fastest batch is the hardware's
 * (a batch that waited for a descheduled thread is only slower), so a sample reads the distance between the cores
 * the PUs were on; timing 10 round trips at once keeps the clock's own cost out of it.
 *
 * Why: on a VM the host may put its virtual CPUs on cores that share a cache or on different dies, and move them
 * between the two while a run goes on (docs/performance.md, "LU-MZ's slow mode: where the host puts the vCPUs").
 *
 * Usage: round_trip SECONDS PU_A PU_B [INTERVAL_MS] (PUs by OS index). */
#define _POSIX_C_SOURCE 200809L
#include <hwloc.h>
#include <pthread.h>
#include <stdbool.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <time.h>

enum { kBatches = 20, kBatch = 10, kRounds = kBatches * kBatch };

/* The ball only grows: the main thread throws odd values, the partner returns each as the next even one. */
static _Alignas(64) _Atomic long ball;
static hwloc_topology_t topology;
static struct timespec start;
static long interval_ns;
static unsigned pu_b;

static double seconds(const struct timespec* t) { return (double)t->tv_sec + 1e-9 * (double)t->tv_nsec; }

static double now(void) {
  struct timespec t;
  clock_gettime(CLOCK_MONOTONIC, &t);
  return seconds(&t);
}

/* The first tick of the sampling schedule (start + k * interval) after the present. */
static struct timespec next_tick(void) {
  const double elapsed = now() - seconds(&start);
  const long k = (long)(elapsed * 1e9 / (double)interval_ns) + 1;
  const long long ns = (long long)start.tv_nsec + (long long)k * interval_ns;
  struct timespec t = {start.tv_sec + (time_t)(ns / 1000000000LL), (long)(ns % 1000000000LL)};
  return t;
}

static int bind_to(unsigned pu) {
  hwloc_bitmap_t set = hwloc_bitmap_alloc();
  hwloc_bitmap_only(set, pu);
  const int rc = hwloc_set_cpubind(topology, set, HWLOC_CPUBIND_THREAD | HWLOC_CPUBIND_STRICT);
  hwloc_bitmap_free(set);
  return rc;
}

/* Returns each odd value thrown within one interval of its wake, up to kRounds a sample; CAS, so that a late return
 * never overwrites a newer throw (the thrower gave up on the old one). Spinning no longer than an interval keeps
 * the probe's cost to the runs beside it small when the other thread is late. */
static void* partner(void* unused) {
  (void)unused;
  if (bind_to(pu_b) != 0) {
    fprintf(stderr, "round_trip: cannot bind to PU %u\n", pu_b);
    exit(2);
  }
  for (;;) {
    const struct timespec wake = next_tick();
    clock_nanosleep(CLOCK_MONOTONIC, TIMER_ABSTIME, &wake, NULL);
    const double deadline = now() + 1e-9 * (double)interval_ns;
    long answered = 0, spins = 0;
    while (answered < kRounds) {
      long value = atomic_load_explicit(&ball, memory_order_acquire);
      if ((value & 1) && atomic_compare_exchange_strong(&ball, &value, value + 1)) ++answered;
      if (++spins % 4096 == 0 && now() > deadline) break;
    }
  }
  return NULL;
}

/* Throws `value` (odd) and waits for its return; false when none came within an interval. */
static bool round_trip(long value) {
  atomic_store_explicit(&ball, value, memory_order_release);
  const double deadline = now() + 1e-9 * (double)interval_ns;
  long spins = 0;
  while (atomic_load_explicit(&ball, memory_order_acquire) != value + 1) {
    if (++spins % 4096 == 0 && now() > deadline) return false;
  }
  return true;
}

int main(int argc, char** argv) {
  if (argc < 4 || argc > 5) {
    fprintf(stderr, "usage: round_trip SECONDS PU_A PU_B [INTERVAL_MS]\n");
    return 2;
  }
  const double duration = atof(argv[1]);
  const unsigned pu_a = (unsigned)atoi(argv[2]);
  pu_b = (unsigned)atoi(argv[3]);
  interval_ns = 1000000L * (argc == 5 ? atol(argv[4]) : 100);
  if (duration <= 0 || interval_ns <= 0 || pu_a == pu_b) {
    fprintf(stderr, "round_trip: need SECONDS > 0, INTERVAL_MS > 0 and two different PUs\n");
    return 2;
  }
  if (hwloc_topology_init(&topology) != 0 || hwloc_topology_load(topology) != 0) {
    fprintf(stderr, "round_trip: hwloc cannot load the topology\n");
    return 2;
  }
  if (bind_to(pu_a) != 0) {
    fprintf(stderr, "round_trip: cannot bind to PU %u\n", pu_a);
    return 2;
  }
  clock_gettime(CLOCK_MONOTONIC, &start);
  pthread_t thread;
  pthread_create(&thread, NULL, partner, NULL);
  long value = 1;
  while (now() - seconds(&start) < duration) {
    const struct timespec wake = next_tick();
    clock_nanosleep(CLOCK_MONOTONIC, TIMER_ABSTIME, &wake, NULL);
    double fastest = -1.0;
    for (long b = 0; b < kBatches; ++b) {
      const double t0 = now();
      bool complete = true;
      for (long i = 0; i < kBatch && complete; ++i, value += 2) complete = round_trip(value);
      if (!complete) break; /* the partner is not answering this sample */
      const double ns = 1e9 * (now() - t0) / kBatch;
      if (fastest < 0 || ns < fastest) fastest = ns;
    }
    /* A sample without a whole batch (the partner was stopped or late) says nothing about the distance. */
    if (fastest >= 0) {
      printf("%.3f %.0f\n", seconds(&wake), fastest);
      fflush(stdout);
    }
  }
  return 0; /* the partner thread ends with the process */
}
