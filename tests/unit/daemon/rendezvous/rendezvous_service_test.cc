#include <catch2/catch.hpp>

#include <grpcpp/grpcpp.h>

#include <future>
#include <set>

#include "proto/grpc_server.h"
#include "daemon/rendezvous/rendezvous_service.h"
#include "hvd/v1/rendezvous.grpc.pb.h"
#include "proto/rpc_auth.h"
#include "tests/unit/daemon/test_util.h"

using namespace std::chrono_literals;
using hvd::daemon::GrpcServer;
using hvd::daemon::RendezvousService;
using hvd::daemon::test::value_of;
namespace v1 = hvd::v1;

namespace {

constexpr char kToken[] = "job-token-for-tests";

struct Rendezvous {
  // elastic_min > 0: an elastic job (rounds of at least that many workers).
  explicit Rendezvous(int size, int elastic_min = 0, int slots = 0) : service(kToken, size) {
    if (elastic_min > 0) service.enable_elastic(elastic_min, slots);
    auto started = GrpcServer::start("127.0.0.1", 0, {&service});
    REQUIRE(started.is_ok());
    server = std::move(started).value();
    stub = v1::Rendezvous::NewStub(
        grpc::CreateChannel(server->address(), grpc::InsecureChannelCredentials()));
  }
  ~Rendezvous() {
    service.close();
    server->shutdown(1000ms);
  }

  RendezvousService service;
  std::unique_ptr<GrpcServer> server;
  std::unique_ptr<v1::Rendezvous::Stub> stub;
};

// A context with a deadline and, unless empty, the token.
std::unique_ptr<grpc::ClientContext> context(const std::string& token = kToken,
                                             std::chrono::milliseconds deadline = 10000ms) {
  auto ctx = std::make_unique<grpc::ClientContext>();
  ctx->set_deadline(std::chrono::system_clock::now() + deadline);
  if (!token.empty()) hvd::proto::attach_token(*ctx, token);
  return ctx;
}

// Calls every method with the token given; returns the status codes.
std::vector<grpc::StatusCode> call_every_method(v1::Rendezvous::Stub& stub,
                                                const std::string& token) {
  std::vector<grpc::StatusCode> codes;
  {
    v1::JoinRequest req;
    req.set_rank(0);
    req.set_size(2);
    req.set_timeout_ms(100);
    v1::JoinReply reply;
    codes.push_back(stub.Join(context(token).get(), req, &reply).error_code());
  }
  {
    v1::SetRequest req;
    req.set_key("k");
    v1::SetReply reply;
    codes.push_back(stub.Set(context(token).get(), req, &reply).error_code());
  }
  {
    v1::GetRequest req;
    req.add_keys("k");
    req.set_timeout_ms(100);
    v1::GetReply reply;
    codes.push_back(stub.Get(context(token).get(), req, &reply).error_code());
  }
  {
    v1::AddRequest req;
    req.set_key("n");
    v1::AddReply reply;
    codes.push_back(stub.Add(context(token).get(), req, &reply).error_code());
  }
  {
    v1::CheckRequest req;
    req.add_keys("k");
    v1::CheckReply reply;
    codes.push_back(stub.Check(context(token).get(), req, &reply).error_code());
  }
  {
    v1::DeleteRequest req;
    req.set_key("k");
    v1::DeleteReply reply;
    codes.push_back(stub.Delete(context(token).get(), req, &reply).error_code());
  }
  {
    v1::HeartbeatRequest req;
    v1::HeartbeatReply reply;
    codes.push_back(stub.Heartbeat(context(token).get(), req, &reply).error_code());
  }
  {
    v1::MembershipWatchRequest req;
    auto ctx = context(token, 1000ms);
    auto reader = stub.Watch(ctx.get(), req);
    v1::MembershipEvent event;
    while (reader->Read(&event)) {
    }
    codes.push_back(reader->Finish().error_code());
  }
  return codes;
}

}  // namespace

TEST_CASE("Rendezvous refuses every call without the right token") {
  Rendezvous r(2);
  const std::vector<grpc::StatusCode> refused(8, grpc::StatusCode::UNAUTHENTICATED);
  CHECK(call_every_method(*r.stub, "") == refused);
  CHECK(call_every_method(*r.stub, "wrong-token") == refused);
  CHECK(r.service.rounds().missing() == std::vector<int>{0, 1});
  CHECK_FALSE(value_of(r.service.store().check({"k"})));
}

TEST_CASE("Rendezvous key-value calls round trip") {
  Rendezvous r(1);
  v1::SetRequest set;
  set.set_key("addr/0");
  set.set_value(std::string("10.0.0.1:\0port", 14));
  v1::SetReply set_reply;
  REQUIRE(r.stub->Set(context().get(), set, &set_reply).ok());

  v1::GetRequest get;
  get.add_keys("addr/0");
  get.set_timeout_ms(1000);
  v1::GetReply get_reply;
  REQUIRE(r.stub->Get(context().get(), get, &get_reply).ok());
  REQUIRE(get_reply.values_size() == 1);
  CHECK(get_reply.values(0) == std::string("10.0.0.1:\0port", 14));

  v1::AddRequest add;
  add.set_key("count");
  add.set_delta(3);
  v1::AddReply add_reply;
  REQUIRE(r.stub->Add(context().get(), add, &add_reply).ok());
  CHECK(add_reply.value() == 3);
  REQUIRE(r.stub->Add(context().get(), add, &add_reply).ok());
  CHECK(add_reply.value() == 6);
  add.set_key("addr/0");
  CHECK(r.stub->Add(context().get(), add, &add_reply).error_code() ==
        grpc::StatusCode::INVALID_ARGUMENT);

  v1::CheckRequest check;
  check.add_keys("addr/0");
  check.add_keys("count");
  v1::CheckReply check_reply;
  REQUIRE(r.stub->Check(context().get(), check, &check_reply).ok());
  CHECK(check_reply.ready());

  v1::DeleteRequest del;
  del.set_key("count");
  v1::DeleteReply del_reply;
  REQUIRE(r.stub->Delete(context().get(), del, &del_reply).ok());
  CHECK(del_reply.deleted());
  REQUIRE(r.stub->Delete(context().get(), del, &del_reply).ok());
  CHECK_FALSE(del_reply.deleted());
  REQUIRE(r.stub->Check(context().get(), check, &check_reply).ok());
  CHECK_FALSE(check_reply.ready());
}

TEST_CASE("Rendezvous Get waits for a key and times out with DEADLINE_EXCEEDED") {
  Rendezvous r(1);
  auto waiter = std::async(std::launch::async, [&] {
    v1::GetRequest get;
    get.add_keys("late");
    get.set_timeout_ms(5000);
    v1::GetReply reply;
    auto status = r.stub->Get(context().get(), get, &reply);
    return status.ok() && reply.values_size() == 1 && reply.values(0) == "v";
  });
  std::this_thread::sleep_for(50ms);
  REQUIRE(r.service.store().set("late", "v").is_ok());
  REQUIRE(waiter.wait_for(5s) == std::future_status::ready);
  CHECK(waiter.get());

  v1::GetRequest get;
  get.add_keys("never");
  get.set_timeout_ms(200);
  v1::GetReply reply;
  const auto start = std::chrono::steady_clock::now();
  auto status = r.stub->Get(context().get(), get, &reply);
  CHECK(std::chrono::steady_clock::now() - start < 3s);
  CHECK(status.error_code() == grpc::StatusCode::DEADLINE_EXCEEDED);
  CHECK(status.error_message() == "timed out after 200 ms waiting for keys: never");
}

TEST_CASE("Rendezvous rejects bad keys with INVALID_ARGUMENT") {
  Rendezvous r(2);
  v1::SetRequest set;
  v1::SetReply set_reply;
  CHECK(r.stub->Set(context().get(), set, &set_reply).error_code() ==
        grpc::StatusCode::INVALID_ARGUMENT);
  set.set_key(std::string(5000, 'k'));
  CHECK(r.stub->Set(context().get(), set, &set_reply).error_code() ==
        grpc::StatusCode::INVALID_ARGUMENT);

  v1::GetRequest get;
  v1::GetReply get_reply;
  CHECK(r.stub->Get(context().get(), get, &get_reply).error_code() ==
        grpc::StatusCode::INVALID_ARGUMENT);
  for (int i = 0; i < 1025; ++i) get.add_keys("k" + std::to_string(i));
  CHECK(r.stub->Get(context().get(), get, &get_reply).error_code() ==
        grpc::StatusCode::INVALID_ARGUMENT);

  v1::CheckRequest check;
  check.add_keys("");
  v1::CheckReply check_reply;
  CHECK(r.stub->Check(context().get(), check, &check_reply).error_code() ==
        grpc::StatusCode::INVALID_ARGUMENT);

  v1::HeartbeatRequest beat;
  beat.set_rank(2);
  v1::HeartbeatReply beat_reply;
  CHECK(r.stub->Heartbeat(context().get(), beat, &beat_reply).error_code() ==
        grpc::StatusCode::INVALID_ARGUMENT);
  beat.set_rank(1);
  REQUIRE(r.stub->Heartbeat(context().get(), beat, &beat_reply).ok());
  CHECK(beat_reply.round() == -1);  // the last round formed: none yet

  v1::JoinRequest join;
  join.set_rank(5);
  join.set_size(2);
  v1::JoinReply join_reply;
  auto status = r.stub->Join(context().get(), join, &join_reply);
  CHECK(status.error_code() == grpc::StatusCode::INVALID_ARGUMENT);
  CHECK(status.error_message() == "rank 5 is out of range for size 2");
}

TEST_CASE("Rendezvous Join of two clients from two threads") {
  Rendezvous r(2);
  auto join = [&] {
    v1::JoinRequest req;
    req.set_rank(-1);
    req.set_size(2);
    req.set_host("localhost");
    req.set_pid(::getpid());
    req.set_timeout_ms(5000);
    v1::JoinReply reply;
    auto status = r.stub->Join(context().get(), req, &reply);
    return std::make_pair(status.error_code(), reply);
  };
  auto a = std::async(std::launch::async, join);
  auto b = std::async(std::launch::async, join);
  REQUIRE(a.wait_for(10s) == std::future_status::ready);
  REQUIRE(b.wait_for(10s) == std::future_status::ready);
  auto [code_a, reply_a] = a.get();
  auto [code_b, reply_b] = b.get();
  REQUIRE(code_a == grpc::StatusCode::OK);
  REQUIRE(code_b == grpc::StatusCode::OK);
  CHECK(std::set<int>{reply_a.rank(), reply_b.rank()} == std::set<int>{0, 1});
  CHECK(reply_a.size() == 2);
  CHECK(reply_a.round() == 0);
  CHECK(reply_b.round() == 0);
}

TEST_CASE("Rendezvous deletes a round's keys once the next round has formed") {
  Rendezvous r(1);
  auto join = [&] {
    v1::JoinRequest req;
    req.set_rank(0);
    req.set_size(1);
    req.set_timeout_ms(5000);
    v1::JoinReply reply;
    REQUIRE(r.stub->Join(context().get(), req, &reply).ok());
    return reply.round();
  };
  REQUIRE(join() == 0);
  REQUIRE(r.service.store().set("round0/cpu/rank0", "addr").is_ok());
  REQUIRE(r.service.store().set("round0/ps1/rank0", "addr").is_ok());
  REQUIRE(r.service.store().set("round10/cpu/rank0", "kept").is_ok());
  REQUIRE(r.service.store().set("hvd/finished", "kept").is_ok());
  REQUIRE(join() == 1);  // shutdown + init: round 1 formed, round 0's keys go
  CHECK_FALSE(r.service.store().check({"round0/cpu/rank0"}).value());
  CHECK_FALSE(r.service.store().check({"round0/ps1/rank0"}).value());
  CHECK(r.service.store().check({"round10/cpu/rank0", "hvd/finished"}).value());
}

TEST_CASE("Rendezvous watches joined ranks through heartbeats until they leave") {
  Rendezvous r(1);
  const auto t = std::chrono::steady_clock::now;
  CHECK(r.service.liveness().silent(0ms, t() + 1h).empty());  // not joined yet
  v1::JoinRequest join;
  join.set_rank(0);
  join.set_size(1);
  join.set_timeout_ms(5000);
  v1::JoinReply joined;
  REQUIRE(r.stub->Join(context().get(), join, &joined).ok());
  CHECK(r.service.liveness().silent(1h, t()).empty());
  CHECK(r.service.liveness().silent(0ms, t() + 1s) == std::vector<int>{0});
  v1::HeartbeatRequest beat;
  beat.set_rank(0);
  v1::HeartbeatReply reply;
  auto before = t();
  REQUIRE(r.stub->Heartbeat(context().get(), beat, &reply).ok());
  CHECK(*r.service.liveness().quiet_for(0, t()) <= t() - before);
  beat.set_leaving(true);
  REQUIRE(r.stub->Heartbeat(context().get(), beat, &reply).ok());
  CHECK(r.service.liveness().silent(0ms, t() + 1h).empty());
}

TEST_CASE("Rendezvous of an elastic job knows workers by slot, up to --max-np") {
  Rendezvous r(1, 1, 3);  // -np 1 --min-np 1 --max-np 3
  v1::JoinRequest join;
  join.set_rank(0);
  join.set_size(3);
  join.set_prev_rank(0);
  join.set_timeout_ms(5000);
  v1::JoinReply joined;
  REQUIRE(r.stub->Join(context().get(), join, &joined).ok());
  // A worker started later in slot 2 beats (and is watched) like the first.
  v1::HeartbeatRequest beat;
  beat.set_rank(2);
  v1::HeartbeatReply reply;
  REQUIRE(r.stub->Heartbeat(context().get(), beat, &reply).ok());
  beat.set_rank(3);
  auto refused = r.stub->Heartbeat(context().get(), beat, &reply);
  CHECK(refused.error_code() == grpc::StatusCode::INVALID_ARGUMENT);
  CHECK(refused.error_message() == "rank 3 is out of range for size 3");
  join.set_rank(3);
  join.set_prev_rank(-1);
  refused = r.stub->Join(context().get(), join, &joined);
  CHECK(refused.error_code() == grpc::StatusCode::INVALID_ARGUMENT);
  CHECK(refused.error_message() == "slot 3 is out of range for 3 slots");
}

TEST_CASE("Rendezvous: a member lost before it wrote its keys ends the waits on its round") {
  // Issue 27 item 4: round 0 formed with slots 0 and 1; slot 1 dies before
  // its transport key exists. Slot 0's Get of it fails at once (ABORTED,
  // naming the round and the slot) instead of at its deadline, and the
  // round is marked lost for the worker to see.
  Rendezvous r(2, 1, 2);
  auto join = [&](int slot) {
    return std::async(std::launch::async, [&r, slot] {
      v1::JoinRequest req;
      req.set_rank(slot);
      req.set_size(2);
      req.set_prev_rank(slot);
      req.set_timeout_ms(5000);
      v1::JoinReply reply;
      return r.stub->Join(context().get(), req, &reply);
    });
  };
  auto a = join(0);
  auto b = join(1);
  REQUIRE(a.get().ok());
  REQUIRE(b.get().ok());
  auto waiter = std::async(std::launch::async, [&] {
    v1::GetRequest get;
    get.add_keys("round0/cpu/addr/1");
    get.set_timeout_ms(20000);
    v1::GetReply reply;
    auto ctx = context(kToken, 30000ms);
    return r.stub->Get(ctx.get(), get, &reply);
  });
  std::this_thread::sleep_for(100ms);
  const auto start = std::chrono::steady_clock::now();
  r.service.hosts_changed({}, {}, {1});
  REQUIRE(waiter.wait_for(5s) == std::future_status::ready);
  CHECK(std::chrono::steady_clock::now() - start < 2s);
  auto status = waiter.get();
  CHECK(status.error_code() == grpc::StatusCode::ABORTED);
  CHECK(status.error_message() ==
        "key 'round0/cpu/addr/1' will not come: round 0 lost slot(s) 1");
  CHECK(value_of(r.service.store().get({"round0/lost"}, 100ms)) ==
        std::vector<std::string>{"round 0 lost slot(s) 1"});
}

TEST_CASE("Rendezvous Join times out naming the missing rank") {
  Rendezvous r(2);
  v1::JoinRequest req;
  req.set_rank(1);
  req.set_size(2);
  req.set_timeout_ms(200);
  v1::JoinReply reply;
  auto status = r.stub->Join(context().get(), req, &reply);
  CHECK(status.error_code() == grpc::StatusCode::DEADLINE_EXCEEDED);
  CHECK(status.error_message() == "timed out after 200 ms: rank 0 of 2 has not joined");
  CHECK(r.service.rounds().missing() == std::vector<int>{0, 1});
}

TEST_CASE("Rendezvous close wakes a blocked Get with CANCELLED") {
  Rendezvous r(1);
  auto waiter = std::async(std::launch::async, [&] {
    v1::GetRequest get;
    get.add_keys("never");
    get.set_timeout_ms(30000);
    v1::GetReply reply;
    return r.stub->Get(context().get(), get, &reply).error_code();
  });
  std::this_thread::sleep_for(100ms);
  r.service.close();
  REQUIRE(waiter.wait_for(5s) == std::future_status::ready);
  CHECK(waiter.get() == grpc::StatusCode::CANCELLED);
}

namespace {

// Joins `slot` (its rank in the last round: prev) to an elastic job.
std::future<grpc::StatusCode> join_slot(Rendezvous& r, int slot, int prev) {
  return std::async(std::launch::async, [&r, slot, prev] {
    v1::JoinRequest req;
    req.set_rank(slot);
    req.set_size(2);
    req.set_prev_rank(prev);
    req.set_host("h" + std::to_string(slot));
    req.set_timeout_ms(10000);
    v1::JoinReply reply;
    return r.stub->Join(context().get(), req, &reply).error_code();
  });
}

void wait_watchers(Rendezvous& r, size_t n) {
  for (int i = 0; i < 500 && r.service.watchers() != n; ++i) std::this_thread::sleep_for(10ms);
  REQUIRE(r.service.watchers() == n);
}

}  // namespace

TEST_CASE("Rendezvous Watch streams host changes; close ends the stream at once") {
  Rendezvous r(2, 1);
  auto a = join_slot(r, 0, 0);
  auto b = join_slot(r, 1, 1);
  REQUIRE(a.get() == grpc::StatusCode::OK);
  REQUIRE(b.get() == grpc::StatusCode::OK);
  v1::MembershipWatchRequest req;
  req.set_slot(0);
  req.set_round(0);
  auto ctx = context(kToken, 30000ms);
  auto reader = r.stub->Watch(ctx.get(), req);
  wait_watchers(r, 1);

  r.service.hosts_changed({"h3"}, {}, {});
  v1::MembershipEvent event;
  REQUIRE(reader->Read(&event));
  CHECK(event.kind() == v1::MembershipEvent::ADDED);
  CHECK(event.round() == 0);
  CHECK(event.sequence() == 1);
  REQUIRE(event.hosts_size() == 1);
  CHECK(event.hosts(0) == "h3");

  r.service.hosts_changed({}, {"h1", "h9"}, {1, 7});
  REQUIRE(reader->Read(&event));
  CHECK(event.kind() == v1::MembershipEvent::REMOVED);
  CHECK(event.sequence() == 2);
  CHECK(event.hosts_size() == 2);
  CHECK(std::vector<int>(event.slots().begin(), event.slots().end()) == std::vector<int>{1, 7});
  CHECK(std::vector<int>(event.member_slots().begin(), event.member_slots().end()) ==
        std::vector<int>{1});
  CHECK(r.service.liveness().silent(0ms, std::chrono::steady_clock::now() + 1h) ==
        std::vector<int>{0});  // slot 1 is no longer watched

  auto closer = std::async(std::launch::async, [&] {
    std::this_thread::sleep_for(100ms);
    r.service.close();
  });
  const auto start = std::chrono::steady_clock::now();
  CHECK_FALSE(reader->Read(&event));
  CHECK(reader->Finish().error_code() == grpc::StatusCode::CANCELLED);
  CHECK(std::chrono::steady_clock::now() - start < 2s);
  closer.get();
}

TEST_CASE("Rendezvous Watch opened after a member of its round was lost tells it at once") {
  Rendezvous r(2, 1);
  auto a = join_slot(r, 0, 0);
  auto b = join_slot(r, 1, 1);
  REQUIRE(a.get() == grpc::StatusCode::OK);
  REQUIRE(b.get() == grpc::StatusCode::OK);
  r.service.hosts_changed({}, {}, {1});  // before slot 0 watches
  v1::MembershipWatchRequest req;
  req.set_slot(0);
  req.set_round(0);
  auto ctx = context(kToken, 30000ms);
  auto reader = r.stub->Watch(ctx.get(), req);
  v1::MembershipEvent event;
  REQUIRE(reader->Read(&event));
  CHECK(event.kind() == v1::MembershipEvent::REMOVED);
  CHECK(event.round() == 0);
  CHECK(std::vector<int>(event.member_slots().begin(), event.member_slots().end()) ==
        std::vector<int>{1});
  ctx->TryCancel();
}

TEST_CASE("Rendezvous Watch tells a member at once that a worker waits to join") {
  Rendezvous r(2, 1);
  auto a = join_slot(r, 0, 0);
  auto b = join_slot(r, 1, 1);
  REQUIRE(a.get() == grpc::StatusCode::OK);
  REQUIRE(b.get() == grpc::StatusCode::OK);
  r.service.lost(1);
  auto newcomer = join_slot(r, 1, -1);  // waits: slot 0 has not rejoined
  v1::MembershipWatchRequest req;
  req.set_slot(0);
  req.set_round(0);
  v1::MembershipEvent event;
  bool told = false;
  for (int i = 0; i < 50 && !told; ++i) {  // until the newcomer's join reached the service
    auto ctx = context(kToken, 200ms);
    auto reader = r.stub->Watch(ctx.get(), req);
    // (First, maybe, the REMOVED event of slot 1: it was lost before this watch.)
    while (!told && reader->Read(&event)) told = event.kind() == v1::MembershipEvent::ADDED;
    if (told) ctx->TryCancel();
    reader->Finish();
  }
  REQUIRE(told);
  CHECK(event.kind() == v1::MembershipEvent::ADDED);
  CHECK(std::vector<int>(event.slots().begin(), event.slots().end()) == std::vector<int>{1});
  wait_watchers(r, 0);  // the cancelled streams' handlers returned

  // Slot 0 rejoins: the round forms with the newcomer; a watcher of round 1
  // hears nothing of round 0.
  auto rejoin = join_slot(r, 0, 0);
  REQUIRE(rejoin.get() == grpc::StatusCode::OK);
  REQUIRE(newcomer.get() == grpc::StatusCode::OK);
  req.set_round(1);
  auto ctx = context(kToken, 300ms);
  auto reader = r.stub->Watch(ctx.get(), req);
  CHECK_FALSE(reader->Read(&event));
  CHECK(reader->Finish().error_code() == grpc::StatusCode::DEADLINE_EXCEEDED);
}

TEST_CASE("GrpcServer reports the address it listens on and refuses a bad one") {
  RendezvousService service(kToken, 1);
  auto started = GrpcServer::start("127.0.0.1", 0, {&service});
  REQUIRE(started.is_ok());
  auto& server = started.value();
  CHECK(server->port() > 0);
  CHECK(server->address() == "127.0.0.1:" + std::to_string(server->port()));

  // The same port again cannot be bound.
  RendezvousService other(kToken, 1);
  auto clash = GrpcServer::start("127.0.0.1", server->port(), {&other});
  REQUIRE_FALSE(clash.is_ok());
  CHECK(clash.status().code() == hvd::common::StatusCode::kUnavailable);
  CHECK(clash.status().message().find("cannot listen on 127.0.0.1:" +
                                      std::to_string(server->port())) == 0);
  server->shutdown(100ms);
  server->shutdown(100ms);  // idempotent
}
