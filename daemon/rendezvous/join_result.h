// What a rank learns when it joins the job's rendezvous (Rendezvous.Join).
#pragma once

#include <cstdint>

#include "common/placement.h"

namespace hvd::daemon {

// The world a rank is placed in by the rendezvous round: its rank, the
// size, and the layout computed over every rank of the round (Horovod's
// cross rank: among the ranks with this local rank, this one's index in rank
// order; cross size: how many there are); the host it joined from.
struct JoinResult : common::Placement {
  int64_t round = 0;  // grows with every re-formed world; transports prefix keys with it
};

}  // namespace hvd::daemon
