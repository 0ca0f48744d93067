// Multihost test and start-up benchmark worker: joins the job, prints who it
// is and when init finished, then optionally sleeps, allreduces and leaves.
//
//   hvdrun -H h1:2,h2:2 build/bin/init_stamp [--sleep SECONDS]
//
// After hvd_init(), one line:
//   init_stamp: rank R size N local L/LS cross C/CS host H bind B pid P t_init_ns T
// T is CLOCK_MONOTONIC in nanoseconds (one clock for every process of the
// machine, network namespaces included). Then an allreduce of the rank
// numbers is checked ("init_stamp: rank R sum OK" or "... sum BAD got X"),
// --sleep keeps the worker alive after init (for kill / Ctrl-C tests), and
// the worker shuts down. Exit 0, 1 on a failure, 2 on bad arguments.
#include <hvd/c_api.h>
#include <time.h>
#include <unistd.h>

#include <cstdio>
#include <cstdlib>
#include <cstring>

namespace {

const char* env_or(const char* name, const char* fallback) {
  const char* v = std::getenv(name);
  return v != nullptr ? v : fallback;
}

}  // namespace

int main(int argc, char** argv) {
  std::setvbuf(stdout, nullptr, _IOLBF, 0);
  double sleep_seconds = 0;
  for (int i = 1; i < argc; ++i) {
    if (std::strcmp(argv[i], "--sleep") == 0 && i + 1 < argc) {
      sleep_seconds = std::atof(argv[++i]);
    } else {
      std::fprintf(stderr, "init_stamp: unexpected argument '%s'\nusage: init_stamp [--sleep S]\n",
                   argv[i]);
      return 2;
    }
  }
  if (hvd_init() != HVD_OK) {
    std::printf("init_stamp: init failed: %s\n", hvd_last_error());
    return 1;
  }
  timespec ts{};
  clock_gettime(CLOCK_MONOTONIC, &ts);
  const long long t_ns = static_cast<long long>(ts.tv_sec) * 1000000000LL + ts.tv_nsec;
  const int rank = hvd_rank();
  const int size = hvd_size();
  std::printf("init_stamp: rank %d size %d local %d/%d cross %d/%d host %s bind %s pid %d "
              "t_init_ns %lld\n",
              rank, size, hvd_local_rank(), hvd_local_size(), hvd_cross_rank(), hvd_cross_size(),
              env_or("HVD_HOSTNAME", "-"), env_or("HVD_BIND_ADDRESS", "-"),
              static_cast<int>(getpid()), t_ns);
  if (sleep_seconds > 0) {
    struct timespec nap{static_cast<time_t>(sleep_seconds),
                        static_cast<long>((sleep_seconds - static_cast<time_t>(sleep_seconds)) * 1e9)};
    nanosleep(&nap, nullptr);
  }
  int failures = 0;
  long long value = rank;
  if (hvd_allreduce(&value, 1, HVD_INT64, HVD_OP_SUM) != HVD_OK) {
    std::printf("init_stamp: rank %d allreduce failed: %s\n", rank, hvd_last_error());
    ++failures;
  } else if (value != static_cast<long long>(size) * (size - 1) / 2) {
    std::printf("init_stamp: rank %d sum BAD got %lld\n", rank, value);
    ++failures;
  } else {
    std::printf("init_stamp: rank %d sum OK\n", rank);
  }
  if (hvd_shutdown() != HVD_OK) {
    std::printf("init_stamp: rank %d shutdown failed: %s\n", rank, hvd_last_error());
    ++failures;
  }
  return failures > 0 ? 1 : 0;
}
