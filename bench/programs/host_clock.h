// The bench programs' host clocks: wall seconds, and CPU seconds of the process
// (CLOCK_PROCESS_CPUTIME_ID: all its threads) or of the calling thread (CLOCK_THREAD_CPUTIME_ID).
#pragma once
#include <chrono>
#include <ctime>

static double now() {
  return std::chrono::duration<double>(std::chrono::steady_clock::now().time_since_epoch()).count();
}

static double cpu(clockid_t which) {
  timespec t;
  clock_gettime(which, &t);
  return t.tv_sec + t.tv_nsec * 1e-9;
}
