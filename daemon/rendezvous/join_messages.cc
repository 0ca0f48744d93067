#include "daemon/rendezvous/join_messages.h"

#include <utility>

namespace hvd::daemon {

void to_request(const common::Placement& placement, hvd::v1::JoinRequest* request) {
  request->set_rank(placement.rank);
  request->set_size(placement.size);
  request->set_host(placement.host);
  request->set_local_rank(placement.local_rank);
  request->set_local_size(placement.local_size);
}

common::Placement from_request(const hvd::v1::JoinRequest& request) {
  common::Placement placement;
  placement.rank = request.rank();
  placement.size = request.size();
  placement.host = request.host();
  if (request.local_size() > 0) {
    placement.local_rank = request.local_rank();
    placement.local_size = request.local_size();
  }
  return placement;
}

void to_reply(const JoinResult& result, hvd::v1::JoinReply* reply) {
  reply->set_rank(result.rank);
  reply->set_size(result.size);
  reply->set_round(result.round);
  reply->set_local_rank(result.local_rank);
  reply->set_local_size(result.local_size);
  reply->set_cross_rank(result.cross_rank);
  reply->set_cross_size(result.cross_size);
}

JoinResult from_reply(const hvd::v1::JoinReply& reply, std::string host) {
  JoinResult result;
  result.rank = reply.rank();
  result.size = reply.size();
  result.round = reply.round();
  result.local_rank = reply.local_rank();
  result.local_size = reply.local_size();
  result.cross_rank = reply.cross_rank();
  result.cross_size = reply.cross_size();
  result.host = std::move(host);
  return result;
}

}  // namespace hvd::daemon
