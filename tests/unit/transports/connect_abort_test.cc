// A transport's connect ends at its timeout, or at once when its
// ConnectAbort fires (an elastic round lost while it connects), also when a
// peer published its addresses and then never connected (it died): gloo's
// own connect waited for it 5x the timeout.
#include <catch2/catch.hpp>

#include <arpa/inet.h>
#include <gloo/transport/tcp/address.h>
#include <netinet/in.h>

#include <chrono>
#include <cstring>
#include <future>
#include <memory>
#include <string>
#include <thread>
#include <vector>

#include "daemon/rendezvous/kv_store.h"
#include "transports/connect_abort.h"
#include "transports/registry.h"
#include "transports/table/transport_table.h"

namespace hvd::transports {
namespace {

using Clock = std::chrono::steady_clock;
using common::StatusCode;

// What a peer that died after publishing leaves in the store: rank 1's
// address for rank 0, which nobody listens on and which sorts after rank
// 0's (so rank 0 is the side that waits to be connected to).
std::string dead_peer_addresses() {
  sockaddr_storage storage{};
  auto& in = reinterpret_cast<sockaddr_in&>(storage);
  in.sin_family = AF_INET;
  in.sin_port = htons(65535);
  in.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  auto bytes = ::gloo::transport::tcp::Address(storage).bytes();
  return std::string(bytes.begin(), bytes.end());
}

// Rank 0 of a 2-rank gloo world whose rank 1 published its address and
// died (dead_peer_addresses()).
struct DeadPeerWorld {
  explicit DeadPeerWorld(std::chrono::milliseconds timeout) {
    REQUIRE(store.set("round1/cpu/1", dead_peer_addresses()).is_ok());
    context.rank = 0;
    context.size = 2;
    context.store = &store;
    context.key_prefix = "round1/cpu/";
    context.timeout = timeout;
  }
  common::Result<std::unique_ptr<Transport>> connect() const {
    return builtin_registry().create(DeviceKind::kCpu, "gloo", context);
  }

  daemon::KvStore store;
  TransportContext context;
};

long long ms_since(Clock::time_point start) {
  return std::chrono::duration_cast<std::chrono::milliseconds>(Clock::now() - start).count();
}

}  // namespace

TEST_CASE("ConnectAbort: the first reason wins and reaches every subscriber, late ones at once",
          "[transports][connect_abort]") {
  ConnectAbort abort;
  std::vector<std::string> heard;
  auto first = abort.subscribe([&](const common::Status& why) { heard.push_back(why.message()); });
  {
    auto gone = abort.subscribe([&](const common::Status&) { heard.push_back("unsubscribed"); });
  }
  CHECK_FALSE(abort.fired());
  abort.fire(common::aborted("slot(s) 3 of rendezvous round 2 left the job"));
  abort.fire(common::aborted("a second reason"));
  CHECK(abort.fired());
  CHECK(abort.reason().message() == "slot(s) 3 of rendezvous round 2 left the job");
  auto late = abort.subscribe([&](const common::Status& why) { heard.push_back("late: " + why.message()); });
  CHECK(heard == std::vector<std::string>{"slot(s) 3 of rendezvous round 2 left the job",
                                          "late: slot(s) 3 of rendezvous round 2 left the job"});
}

TEST_CASE("gloo: a peer that published its address and never connects ends the connect at the "
          "transport timeout", "[transports][connect_abort][gloo]") {
  DeadPeerWorld world(std::chrono::seconds(1));
  const auto start = Clock::now();
  auto transport = world.connect();
  const auto took = ms_since(start);
  REQUIRE_FALSE(transport.is_ok());
  INFO(transport.status().message());
  CHECK(transport.status().code() == StatusCode::kTimeout);
  CHECK_THAT(transport.status().message(), Catch::Contains("ranks 1 did not connect within 1000 ms"));
  CHECK(took >= 900);
  CHECK(took < 4000);  // gloo's own wait: 5 s
}

TEST_CASE("gloo: a fired ConnectAbort ends a connect waiting for a dead peer at once, with its reason",
          "[transports][connect_abort][gloo]") {
  DeadPeerWorld world(std::chrono::seconds(30));
  world.context.abort = std::make_shared<ConnectAbort>();
  auto fired = std::async(std::launch::async, [abort = world.context.abort] {
    std::this_thread::sleep_for(std::chrono::milliseconds(300));
    abort->fire(common::aborted("slot(s) 1 of rendezvous round 1 left the job"));
  });
  const auto start = Clock::now();
  auto transport = world.connect();
  const auto took = ms_since(start);
  fired.get();
  REQUIRE_FALSE(transport.is_ok());
  INFO(transport.status().message());
  CHECK(transport.status().code() == StatusCode::kAborted);
  CHECK_THAT(transport.status().message(),
             Catch::Contains("could not connect to its peers: slot(s) 1 of rendezvous round 1 left the job"));
  CHECK(took < 10000);  // the timeout is 30 s (150 s in gloo's own wait)
}

TEST_CASE("gloo: an abort fired before the connect ends it before it waits",
          "[transports][connect_abort][gloo]") {
  DeadPeerWorld world(std::chrono::seconds(30));
  world.context.abort = std::make_shared<ConnectAbort>();
  world.context.abort->fire(common::aborted("lost"));
  const auto start = Clock::now();
  auto transport = world.connect();
  REQUIRE_FALSE(transport.is_ok());
  CHECK(transport.status().code() == StatusCode::kAborted);
  CHECK(ms_since(start) < 5000);
}

}  // namespace hvd::transports
