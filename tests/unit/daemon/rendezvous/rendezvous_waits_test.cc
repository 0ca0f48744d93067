// The Rendezvous service's waiting calls hold no thread (gRPC's callback
// API, issue 31): many waiting Gets with the process's thread count
// bounded; a cancelled wait is removed; close() ends every wait.
#include <catch2/catch.hpp>

#include <grpcpp/grpcpp.h>

#include <dirent.h>

#include <atomic>
#include <future>
#include <thread>

#include "daemon/rendezvous/rendezvous_service.h"
#include "daemon/rendezvous/wait_timer.h"
#include "hvd/v1/rendezvous.grpc.pb.h"
#include "proto/grpc_server.h"
#include "proto/rpc_auth.h"

using namespace std::chrono_literals;
using hvd::daemon::GrpcServer;
using hvd::daemon::RendezvousService;
using hvd::daemon::WaitTimer;
namespace v1 = hvd::v1;

namespace {

constexpr char kToken[] = "job-token-for-wait-tests";

int thread_count() {
  int n = 0;
  if (DIR* dir = opendir("/proc/self/task")) {
    while (dirent* e = readdir(dir)) n += e->d_name[0] != '.';
    closedir(dir);
  }
  return n;
}

bool eventually(const std::function<bool()>& cond, std::chrono::milliseconds within = 10000ms) {
  const auto until = std::chrono::steady_clock::now() + within;
  while (!cond()) {
    if (std::chrono::steady_clock::now() > until) return false;
    std::this_thread::sleep_for(5ms);
  }
  return true;
}

struct Served {
  explicit Served(int size, int elastic_min = 0) : service(kToken, size) {
    if (elastic_min > 0) service.enable_elastic(elastic_min);
    auto started = GrpcServer::start("127.0.0.1", 0, {&service});
    REQUIRE(started.is_ok());
    server = std::move(started).value();
    stub = v1::Rendezvous::NewStub(
        grpc::CreateChannel(server->address(), grpc::InsecureChannelCredentials()));
  }
  ~Served() {
    service.close();
    server->shutdown(1000ms);
  }
  RendezvousService service;
  std::unique_ptr<GrpcServer> server;
  std::unique_ptr<v1::Rendezvous::Stub> stub;
};

// An async Get of `key` on `cq`, tagged with itself.
struct PendingGet {
  grpc::ClientContext ctx;
  v1::GetRequest req;
  v1::GetReply reply;
  grpc::Status status;
  std::unique_ptr<grpc::ClientAsyncResponseReader<v1::GetReply>> call;

  void start(v1::Rendezvous::Stub& stub, grpc::CompletionQueue& cq, const std::string& key) {
    ctx.set_deadline(std::chrono::system_clock::now() + 60s);
    hvd::proto::attach_token(ctx, kToken);
    req.add_keys(key);
    req.set_timeout_ms(60'000);
    call = stub.AsyncGet(&ctx, req, &cq);
    call->Finish(&reply, &status, this);
  }
};

// Takes `n` completions off `cq`.
std::vector<PendingGet*> drain(grpc::CompletionQueue& cq, size_t n) {
  std::vector<PendingGet*> done;
  void* tag = nullptr;
  bool ok = false;
  while (done.size() < n &&
         cq.AsyncNext(&tag, &ok, std::chrono::system_clock::now() + 20s) ==
             grpc::CompletionQueue::NextStatus::GOT_EVENT) {
    done.push_back(static_cast<PendingGet*>(tag));
  }
  return done;
}

}  // namespace

TEST_CASE("Rendezvous: 2000 waiting Gets hold no server thread") {
  Served r(1);
  const int before = thread_count();
  constexpr size_t kGets = 2000;
  // Two connections: one takes up to 1024 calls at once (GrpcServer).
  std::vector<std::unique_ptr<v1::Rendezvous::Stub>> stubs;
  for (int i = 0; i < 2; ++i) {
    grpc::ChannelArguments args;
    args.SetInt("hvd.test.connection", i);
    stubs.push_back(v1::Rendezvous::NewStub(grpc::CreateCustomChannel(
        r.server->address(), grpc::InsecureChannelCredentials(), args)));
  }
  grpc::CompletionQueue cq;
  std::vector<std::unique_ptr<PendingGet>> gets;
  for (size_t i = 0; i < kGets; ++i) {
    gets.push_back(std::make_unique<PendingGet>());
    gets.back()->start(*stubs[i % 2], cq, "later");
  }
  REQUIRE(eventually([&] { return r.service.waiting_calls() == kGets; }));
  CHECK(r.service.store().waiting_gets() == kGets);
  // A synchronous server would run a thread per waiting call.
  const int during = thread_count();
  INFO("threads before " << before << ", with " << kGets << " Gets waiting " << during);
  CHECK(during < before + 64);
  REQUIRE(r.service.store().set("later", "now").is_ok());
  auto done = drain(cq, kGets);
  REQUIRE(done.size() == kGets);
  for (PendingGet* g : done) {
    REQUIRE(g->status.ok());
    CHECK(g->reply.values(0) == "now");
  }
  CHECK(r.service.waiting_calls() == 0);
  cq.Shutdown();
}

TEST_CASE("Rendezvous: a cancelled waiting Get or Join is removed") {
  Served r(2);
  grpc::CompletionQueue cq;
  PendingGet get;
  get.start(*r.stub, cq, "never");
  REQUIRE(eventually([&] { return r.service.store().waiting_gets() == 1; }));
  get.ctx.TryCancel();
  auto done = drain(cq, 1);
  REQUIRE(done.size() == 1);
  CHECK(done[0]->status.error_code() == grpc::StatusCode::CANCELLED);
  CHECK(eventually([&] { return r.service.store().waiting_gets() == 0; }));
  CHECK(eventually([&] { return r.service.waiting_calls() == 0; }));

  // A Join given up is withdrawn: the rank may join again.
  grpc::ClientContext ctx;
  hvd::proto::attach_token(ctx, kToken);
  v1::JoinRequest req;
  req.set_rank(0);
  req.set_size(2);
  req.set_timeout_ms(60'000);
  v1::JoinReply reply;
  std::promise<grpc::Status> joined;
  r.stub->async()->Join(&ctx, &req, &reply,
                        [&](grpc::Status s) { joined.set_value(std::move(s)); });
  REQUIRE(eventually([&] { return r.service.waiting_calls() == 1; }));
  CHECK(r.service.rounds().missing() == std::vector<int>{1});
  ctx.TryCancel();
  CHECK(joined.get_future().get().error_code() == grpc::StatusCode::CANCELLED);
  CHECK(eventually([&] { return r.service.rounds().missing().size() == 2; }));
  CHECK(eventually([&] { return r.service.waiting_calls() == 0; }));
}

TEST_CASE("Rendezvous: close() ends every waiting call and Watch stream") {
  Served r(4, /*elastic_min=*/4);
  grpc::CompletionQueue cq;
  std::vector<std::unique_ptr<PendingGet>> gets;
  for (int i = 0; i < 50; ++i) {
    gets.push_back(std::make_unique<PendingGet>());
    gets.back()->start(*r.stub, cq, "never");
  }
  // Three of four slots join: their Joins wait.
  struct Joining {
    grpc::ClientContext ctx;
    v1::JoinRequest req;
    v1::JoinReply reply;
    std::promise<grpc::Status> status;
  };
  std::vector<std::unique_ptr<Joining>> joins;
  for (int slot = 0; slot < 3; ++slot) {
    auto j = std::make_unique<Joining>();
    hvd::proto::attach_token(j->ctx, kToken);
    j->req.set_rank(slot);
    j->req.set_size(4);
    j->req.set_prev_rank(-1);
    j->req.set_host("h");
    j->req.set_timeout_ms(60'000);
    r.stub->async()->Join(&j->ctx, &j->req, &j->reply,
                          [p = &j->status](grpc::Status s) { p->set_value(std::move(s)); });
    joins.push_back(std::move(j));
  }
  grpc::ClientContext watch_ctx;
  hvd::proto::attach_token(watch_ctx, kToken);
  v1::MembershipWatchRequest watch_req;
  auto stream = r.stub->Watch(&watch_ctx, watch_req);
  REQUIRE(eventually([&] { return r.service.waiting_calls() == 53 && r.service.watchers() == 1; }));

  const auto start = std::chrono::steady_clock::now();
  r.service.close();
  auto done = drain(cq, gets.size());
  REQUIRE(done.size() == gets.size());
  for (PendingGet* g : done) CHECK(g->status.error_code() == grpc::StatusCode::CANCELLED);
  for (auto& j : joins) {
    CHECK(j->status.get_future().get().error_code() == grpc::StatusCode::CANCELLED);
  }
  v1::MembershipEvent event;
  while (stream->Read(&event)) {
  }
  CHECK(stream->Finish().error_code() == grpc::StatusCode::CANCELLED);
  CHECK(std::chrono::steady_clock::now() - start < 5s);
  CHECK(r.service.waiting_calls() == 0);
  cq.Shutdown();
}

TEST_CASE("WaitTimer runs functions in time order on one thread; cancel drops one") {
  WaitTimer timer;
  std::mutex mu;
  std::vector<int> ran;
  const auto now = WaitTimer::Clock::now();
  auto record = [&](int i) {
    return [&, i] {
      std::lock_guard lock(mu);
      ran.push_back(i);
    };
  };
  timer.at(now + 60ms, record(3));
  const uint64_t dropped = timer.at(now + 40ms, record(2));
  timer.at(now + 20ms, record(1));
  timer.cancel(dropped);
  REQUIRE(eventually([&] {
    std::lock_guard lock(mu);
    return ran.size() == 2;
  }));
  std::lock_guard lock(mu);
  CHECK(ran == std::vector<int>{1, 3});
  CHECK(timer.pending() == 0);
}
