#include "daemon/rendezvous/round_layout.h"

#include <map>

namespace hvd::daemon {

void set_cross_ranks(std::vector<JoinResult>& worlds) {
  std::map<int, int> with_local_rank;  // local rank -> ranks seen so far
  for (JoinResult& w : worlds) w.cross_rank = with_local_rank[w.local_rank]++;
  for (JoinResult& w : worlds) w.cross_size = with_local_rank[w.local_rank];
}

}  // namespace hvd::daemon
