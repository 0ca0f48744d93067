// The one conversion between placements and the Join messages of
// proto/hvd/v1/rendezvous.proto: a worker asks to join as a Placement (its
// rank, the size it expects, its host and where it sits on it), and the
// round's JoinResult comes back in the reply.
#pragma once

#include <string>

#include "common/placement.h"
#include "daemon/rendezvous/join_result.h"
#include "hvd/v1/rendezvous.pb.h"

namespace hvd::daemon {

// Sets the request's rank, size, host, local rank and local size (the
// service computes the cross ranks).
void to_request(const common::Placement& placement, hvd::v1::JoinRequest* request);
// The request's placement; local rank 0 of 1 when it gives no local size
// (local_size 0 or less). No cross rank: the round computes it.
common::Placement from_request(const hvd::v1::JoinRequest& request);

// Everything but the host, which the reply does not carry.
void to_reply(const JoinResult& result, hvd::v1::JoinReply* reply);
// The reply's world, placed on `host` (the one the worker joined from).
JoinResult from_reply(const hvd::v1::JoinReply& reply, std::string host);

}  // namespace hvd::daemon
