// Horovod's cross ranks of a rendezvous round, from every rank's local rank:
// among the ranks with this rank's local rank, this one's index in rank
// order (cross_rank), and their number (cross_size). Shared by the fixed
// membership barrier and the elastic rounds.
#pragma once

#include <vector>

#include "daemon/rendezvous/join_result.h"

namespace hvd::daemon {

// `worlds[r]` is rank r's world with its local rank set; fills in the cross
// rank and size of each.
void set_cross_ranks(std::vector<JoinResult>& worlds);

}  // namespace hvd::daemon
