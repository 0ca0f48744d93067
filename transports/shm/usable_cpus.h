// The CPUs this process may run on (its affinity mask; the hardware's count
// where the mask cannot be read). Ranks of a segment that outnumber them are
// "crowded": their waits sleep longer between looks (waiter.h,
// segment_rendezvous.cc).
#pragma once

namespace hvd::transports::shm {

int usable_cpus();

}  // namespace hvd::transports::shm
