// Integration worker for foreign launchers (Slurm, Open MPI variables set by
// the test, no hvdrun): joins through hvd_init() (rank 0 hosts the
// rendezvous), prints what it is, checks an allreduce, shuts down, joins
// again and checks once more.
//
// Prints "foreign_check: rank R size S local_rank L local_size LS
// cross_rank C cross_size CS" and "foreign_check: rank R OK", exit 0; on a
// failure one line naming it (init errors as "foreign_check: init failed:
// <message>"), exit 1.
#include <hvd/c_api.h>

#include <cinttypes>
#include <cstdio>

namespace {

bool sum_check(int round) {
  const int64_t n = hvd_size();
  int64_t v = hvd_rank() + 1;
  if (hvd_allreduce(&v, 1, HVD_INT64, HVD_OP_SUM) != HVD_OK) {
    std::printf("foreign_check: round %d: allreduce failed: %s\n", round, hvd_last_error());
    return false;
  }
  if (v != n * (n + 1) / 2) {
    std::printf("foreign_check: round %d: allreduce gave %" PRId64 ", expected %" PRId64 "\n",
                round, v, n * (n + 1) / 2);
    return false;
  }
  return true;
}

}  // namespace

int main() {
  std::setvbuf(stdout, nullptr, _IOLBF, 0);
  for (int round = 0; round < 2; ++round) {
    if (hvd_init() != HVD_OK) {
      std::printf("foreign_check: init failed: %s\n", hvd_last_error());
      return 1;
    }
    if (round == 0) {
      std::printf("foreign_check: rank %d size %d local_rank %d local_size %d cross_rank %d "
                  "cross_size %d\n",
                  hvd_rank(), hvd_size(), hvd_local_rank(), hvd_local_size(), hvd_cross_rank(),
                  hvd_cross_size());
    }
    if (!sum_check(round)) return 1;
    if (hvd_shutdown() != HVD_OK) {
      std::printf("foreign_check: shutdown failed: %s\n", hvd_last_error());
      return 1;
    }
  }
  if (hvd_init() != HVD_OK) return 1;
  std::printf("foreign_check: rank %d OK\n", hvd_rank());
  hvd_shutdown();
  return 0;
}
