// How the ranks of a world come to share one segment, through the
// TransportContext's store (keys under context.key_prefix + "shm/"):
//  1. every rank publishes its host identity (boot id and the device and
//     inode of /dev/shm: ranks share memory only when both agree) and its
//     host name; all ranks read all of them and refuse alike
//     (kFailedPrecondition naming the ranks) unless they share one host;
//  2. rank 0 creates the segment under a fresh name ("/hvd-" + the key
//     prefix made safe + "-" + 16 random hex digits) and publishes the name
//     (or why it could not create it); the others attach;
//  3. each rank records its pid in its slot and counts itself attached; the
//     last to attach shm_unlink()s the name (then counts once more, so that
//     every rank returns with the name gone), so no /dev/shm file outlives
//     the job whatever happens to the processes afterwards (a rank that
//     times out waiting for the others removes it as well);
//  4. every rank waits until all are attached (context.timeout).
// A world of one needs no store.
#pragma once

#include <cstddef>

#include "common/status.h"
#include "transports/registry.h"
#include "transports/shm/segment.h"

namespace hvd::transports::shm {

common::Result<Segment> join_segment(const TransportContext& context, size_t staging_bytes);

}  // namespace hvd::transports::shm
