#include "daemon/rendezvous/heartbeat.h"

#include <catch2/catch.hpp>

#include <arpa/inet.h>
#include <netinet/in.h>
#include <sys/socket.h>
#include <unistd.h>

#include <functional>
#include <thread>

#include "daemon/rendezvous/rendezvous_service.h"
#include "proto/grpc_server.h"

using namespace std::chrono_literals;

namespace hvd::runtime {

namespace {

constexpr char kToken[] = "job-token-for-tests";

// Polls `done` for up to 5 s.
bool soon(const std::function<bool()>& done) {
  const auto deadline = std::chrono::steady_clock::now() + 5s;
  while (!done() && std::chrono::steady_clock::now() < deadline) {
    std::this_thread::sleep_for(5ms);
  }
  return done();
}

// A loopback port nobody listens on (bound, then let go).
int free_port() {
  const int fd = ::socket(AF_INET, SOCK_STREAM, 0);
  REQUIRE(fd >= 0);
  sockaddr_in address{};
  address.sin_family = AF_INET;
  address.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  REQUIRE(::bind(fd, reinterpret_cast<sockaddr*>(&address), sizeof address) == 0);
  socklen_t length = sizeof address;
  REQUIRE(::getsockname(fd, reinterpret_cast<sockaddr*>(&address), &length) == 0);
  ::close(fd);
  return ntohs(address.sin_port);
}

}  // namespace

TEST_CASE("heartbeat: the commit a worker holds reaches the rendezvous's ledger at once",
          "[heartbeat]") {
  daemon::RendezvousService service(kToken, 1);
  auto server = daemon::GrpcServer::start("127.0.0.1", 0, {&service});
  REQUIRE(server.is_ok());
  RendezvousClient client(server.value()->address(), kToken, 5s);
  daemon::CommitLedger& ledger = service.commits();
  {
    // An hour between beats: only held() makes it beat again within the test.
    Heartbeat beat(client, 0, 0, 1h);
    beat.held({7, false});
    CHECK(soon([&] { return ledger.highest() == 7; }));
  }
  // The next round restarted from the start although this worker's slot
  // held commit 7 (its process died, another took the slot).
  Heartbeat beat(client, 0, 1, 1h);
  beat.held({0, true});
  beat.held({1, false});  // the next commit, before a beat went out: the restart still goes
  std::vector<daemon::CommitLedger::Loss> losses;
  CHECK(soon([&] {
    auto more = ledger.take_losses();
    losses.insert(losses.end(), more.begin(), more.end());
    return !losses.empty();
  }));
  REQUIRE(losses.size() == 1);
  CHECK(losses[0].commit == 7);
  CHECK(losses[0].holders == std::vector<int>{0});
  CHECK(losses[0].restart == 0);
  beat.stop();
  service.close();
  server.value()->shutdown(1000ms);
}

}  // namespace hvd::runtime

namespace hvd::runtime {

TEST_CASE("heartbeat: a beat waits out a service that is not reachable yet, within its patience",
          "[heartbeat]") {
  const int port = free_port();  // nobody on it, for now
  RendezvousClient client("127.0.0.1:" + std::to_string(port), kToken, 5s,
                          /*max_reconnect_backoff=*/200ms);
  daemon::RendezvousService service(kToken, 1);
  // An hour between beats: the one beat held() sends must arrive, although
  // the service comes up only after it went out (a reconnect; a swamped
  // service answers as late).
  Heartbeat beat(client, 0, 0, 1h, {}, 1h);
  beat.held({3, false});
  std::this_thread::sleep_for(700ms);
  auto server = daemon::GrpcServer::start("127.0.0.1", port, {&service});
  REQUIRE(server.is_ok());
  CHECK(soon([&] { return service.commits().highest() == 3; }));
  beat.stop();
  service.close();
  server.value()->shutdown(1000ms);
}

TEST_CASE("heartbeat: stop() cancels a beat that waits for an unreachable service", "[heartbeat]") {
  RendezvousClient client("127.0.0.1:" + std::to_string(free_port()), kToken, 5s,
                          /*max_reconnect_backoff=*/200ms);
  Heartbeat beat(client, 0, 0, 1h, {}, 1h);  // its first beat would wait an hour
  std::this_thread::sleep_for(300ms);
  const auto start = std::chrono::steady_clock::now();
  beat.stop();  // and the leaving beat fails at once: no connection
  CHECK(std::chrono::steady_clock::now() - start < 5s);
}

TEST_CASE("heartbeat: a beat may take the whole liveness timeout") {
  CHECK(Heartbeat::patience_for(5000ms) == 5000ms);
}

TEST_CASE("heartbeat: a large job beats less often, within a third of its timeout") {
  // Small jobs: ten beats per timeout, at least every half second.
  CHECK(Heartbeat::interval_for(5000ms, 8) == 500ms);
  CHECK(Heartbeat::interval_for(5000ms, 1024) == 500ms);
  // The job's beats at most kJobBeatsPerSecond a second...
  CHECK(Heartbeat::interval_for(60s, 16384) == 4000ms);
  CHECK(Heartbeat::interval_for(60s, 65536) == 16000ms);
  // ... while the timeout allows: a running worker is never late.
  CHECK(Heartbeat::interval_for(5000ms, 65536) == 1666ms);
  CHECK(Heartbeat::interval_for(48s, 65536) == 16000ms);
}

}  // namespace hvd::runtime
