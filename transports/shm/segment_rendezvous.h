// How the ranks of a world come to share one segment, through the
// TransportContext's store (keys under context.key_prefix + "shm/"):
//  1. every rank publishes its identity: the kernel's boot id, its pid
//     namespace, the device and inode of /dev/shm, its host name; all ranks
//     read all of them and refuse alike (kFailedPrecondition naming the rank)
//     unless they share one kernel and either one pid namespace or one
//     /dev/shm;
//  2. rank 0 creates the segment and publishes where it is with the random
//     nonce of its header (or why it could not create it); the others attach
//     and check the nonce. In one pid namespace the segment is anonymous
//     (memfd) and "where" is /proc/<rank 0's pid>/fd/<n>: no name exists, so
//     nothing can outlive the processes, whenever they die. Otherwise it is
//     a POSIX name ("/hvd-" + the key prefix made safe + "-" + 16 random hex
//     digits);
//  3. each rank records its pid in its slot and counts itself attached; the
//     last to attach shm_unlink()s a POSIX name (then counts once more, so
//     that every rank returns with the name gone; a rank that times out
//     waiting for the others removes it as well);
//  4. every rank waits until all are attached; rank 0 then closes the
//     anonymous segment's descriptor.
// Waits (for rank 0's segment, for the others to attach) last
// common::scaled_timeout(context.timeout, context.size): the ranks of one
// host start one after another (common/scaled_timeout.h).
// A world of one needs no store.
#pragma once

#include <cstddef>

#include "common/status.h"
#include "transports/registry.h"
#include "transports/shm/segment.h"

namespace hvd::transports::shm {

common::Result<Segment> join_segment(const TransportContext& context, size_t staging_bytes);

}  // namespace hvd::transports::shm
