// What a rank learns when it joins the job's rendezvous (Rendezvous.Join).
#pragma once

#include <cstdint>

namespace hvd::common {

struct JoinResult {
  int rank = 0;
  int size = 0;
  int64_t epoch = 0;  // grows with every re-formed world; transports prefix keys with it
};

}  // namespace hvd::common
