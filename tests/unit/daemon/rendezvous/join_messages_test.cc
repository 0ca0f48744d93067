#include "daemon/rendezvous/join_messages.h"

#include <catch2/catch.hpp>

namespace hvd::daemon {

TEST_CASE("join messages: a placement travels in a JoinRequest, without its cross rank") {
  const common::Placement sent{.rank = 3, .size = 6, .local_rank = 1, .local_size = 2,
                               .cross_rank = 1, .cross_size = 3, .host = "h2"};
  hvd::v1::JoinRequest request;
  to_request(sent, &request);
  CHECK(request.rank() == 3);
  CHECK(request.size() == 6);
  CHECK(request.host() == "h2");
  common::Placement received = from_request(request);
  CHECK(received == common::Placement{.rank = 3, .size = 6, .local_rank = 1, .local_size = 2,
                                      .host = "h2"});
}

TEST_CASE("join messages: a request without a local size places the worker alone on its host") {
  hvd::v1::JoinRequest request;
  request.set_rank(-1);
  request.set_size(4);
  request.set_local_rank(5);
  request.set_local_size(0);
  common::Placement received = from_request(request);
  CHECK(received.rank == -1);
  CHECK(received.size == 4);
  CHECK(std::make_pair(received.local_rank, received.local_size) == std::make_pair(0, 1));
}

TEST_CASE("join messages: the round's world travels in a JoinReply, the host stays with the worker") {
  JoinResult world;
  world.rank = 4;
  world.size = 6;
  world.round = 7;
  world.local_rank = 1;
  world.local_size = 3;
  world.cross_rank = 1;
  world.cross_size = 2;
  world.host = "service side";
  hvd::v1::JoinReply reply;
  to_reply(world, &reply);
  JoinResult back = from_reply(reply, "h1");
  CHECK(back.round == 7);
  world.host = "h1";
  CHECK(static_cast<const common::Placement&>(back) == world);
}

}  // namespace hvd::daemon
