/* A library whose constructor starts a thread before main(), as OpenBLAS's starts its thread pool: linked into a
   program, its constructor runs before the probe's, on the main thread. The thread waits until the process ends. */
#include <pthread.h>
#include <unistd.h>

static void *wait_for_exit(void *arg) {
  (void)arg;
  for (;;) pause();
  return NULL;
}

__attribute__((constructor)) static void start_thread_early(void) {
  pthread_t thread;
  if (pthread_create(&thread, NULL, wait_for_exit, NULL) == 0) pthread_detach(thread);
}
