// What a rank learns when it joins the job's rendezvous (Rendezvous.Join).
#pragma once

#include <cstdint>

namespace hvd::common {

// The world a rank is placed in by the rendezvous round: its rank, the
// size, and the layout computed over every rank of the round (Horovod's
// cross rank: among the ranks with this local rank, this one's index in rank
// order; cross size: how many there are).
struct JoinResult {
  int rank = 0;
  int size = 0;
  int64_t epoch = 0;  // grows with every re-formed world; transports prefix keys with it
  int local_rank = 0;
  int local_size = 1;
  int cross_rank = 0;
  int cross_size = 1;
};

// Where a worker says it sits on its host, reported at Join.
struct Placement {
  int local_rank = 0;
  int local_size = 1;
};

}  // namespace hvd::common
