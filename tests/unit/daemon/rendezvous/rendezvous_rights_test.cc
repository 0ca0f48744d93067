// The Rendezvous service over gRPC with workers' credentials (issue 29 item
// 3): a worker writes and deletes only its own keys, heartbeats and joins
// only as its slot, and cannot fill hvdrun's memory; the job's token still
// may do everything.
#include <grpcpp/grpcpp.h>

#include <catch2/catch.hpp>
#include <future>
#include <vector>

#include "daemon/rendezvous/rendezvous_service.h"
#include "daemon/rendezvous/worker_credentials.h"
#include "hvd/v1/rendezvous.grpc.pb.h"
#include "proto/grpc_server.h"
#include "proto/rpc_auth.h"

using namespace std::chrono_literals;
using hvd::daemon::GrpcServer;
using hvd::daemon::RendezvousService;
using hvd::daemon::worker_credential;
namespace v1 = hvd::v1;

namespace {

constexpr char kToken[] = "rendezvous-rights-test-token-0123456789";

struct Job {
  explicit Job(int size) : service(kToken, size) {
    auto started =
        GrpcServer::start("127.0.0.1", 0, {&service}, hvd::daemon::rendezvous_server_options());
    REQUIRE(started.is_ok());
    server = std::move(started).value();
    grpc::ChannelArguments args;
    args.SetMaxSendMessageSize(-1);
    stub = v1::Rendezvous::NewStub(
        grpc::CreateCustomChannel(server->address(), grpc::InsecureChannelCredentials(), args));
  }
  ~Job() {
    service.close();
    server->shutdown(1000ms);
  }

  std::unique_ptr<grpc::ClientContext> as(const std::string& credential) const {
    auto ctx = std::make_unique<grpc::ClientContext>();
    ctx->set_deadline(std::chrono::system_clock::now() + 20s);
    hvd::proto::attach_token(*ctx, credential);
    return ctx;
  }
  grpc::Status join(const std::string& credential, int rank) {
    v1::JoinRequest req;
    req.set_rank(rank);
    req.set_size(service.rounds().rules().slots);
    req.set_timeout_ms(10000);
    v1::JoinReply reply;
    return stub->Join(as(credential).get(), req, &reply);
  }
  grpc::Status set(const std::string& credential, const std::string& key, std::string value) {
    v1::SetRequest req;
    req.set_key(key);
    req.set_value(std::move(value));
    v1::SetReply reply;
    return stub->Set(as(credential).get(), req, &reply);
  }
  grpc::Status remove(const std::string& credential, const std::string& key) {
    v1::DeleteRequest req;
    req.set_key(key);
    v1::DeleteReply reply;
    return stub->Delete(as(credential).get(), req, &reply);
  }
  grpc::Status heartbeat(const std::string& credential, int rank, bool leaving = false) {
    v1::HeartbeatRequest req;
    req.set_rank(rank);
    req.set_leaving(leaving);
    v1::HeartbeatReply reply;
    return stub->Heartbeat(as(credential).get(), req, &reply);
  }

  RendezvousService service;
  std::unique_ptr<GrpcServer> server;
  std::unique_ptr<v1::Rendezvous::Stub> stub;
};

}  // namespace

TEST_CASE("Rendezvous: a worker's credential writes, deletes and heartbeats only its own") {
  Job job(2);
  const std::string slot0 = worker_credential(kToken, 0);
  const std::string slot1 = worker_credential(kToken, 1);
  // Not as another slot: the job would wait for the real one in vain.
  auto as_other = job.join(slot1, 0);
  CHECK(as_other.error_code() == grpc::StatusCode::PERMISSION_DENIED);
  CHECK(as_other.error_message() ==
        "Rendezvous.Join refused: the credential of slot 1 may join only for its own slot, not "
        "for slot 0");
  auto first = std::async(std::launch::async, [&] { return job.join(slot0, 0); });
  REQUIRE(job.join(slot1, 1).ok());
  REQUIRE(first.get().ok());
  REQUIRE(job.set(slot0, "round0/cpu/0", "rank 0's address").ok());
  REQUIRE(job.set(slot1, "round0/cpu/1", "rank 1's address").ok());

  auto forged = job.set(slot1, "round0/cpu/0", "rank 1's address");
  CHECK(forged.error_code() == grpc::StatusCode::PERMISSION_DENIED);
  CHECK(forged.error_message() ==
        "Rendezvous.Set refused: key 'round0/cpu/0' belongs to slot 0: slot 1 may change only "
        "keys it wrote");
  auto deleted = job.remove(slot1, "round0/cpu/0");
  CHECK(deleted.error_code() == grpc::StatusCode::PERMISSION_DENIED);
  auto job_level = job.set(slot1, "hvd/finished", "2");
  CHECK(job_level.error_code() == grpc::StatusCode::PERMISSION_DENIED);
  CHECK(job_level.error_message() ==
        "Rendezvous.Set refused: the credential of slot 1 may write only keys of its round, "
        "under 'round0/', not 'hvd/finished'");
  CHECK(job.service.store().get({"round0/cpu/0"}, 0ms).value()[0] == "rank 0's address");

  auto beat = job.heartbeat(slot1, 0);
  CHECK(beat.error_code() == grpc::StatusCode::PERMISSION_DENIED);
  CHECK(beat.error_message() ==
        "Rendezvous.Heartbeat refused: the credential of slot 1 may send heartbeats only for its "
        "own slot, not for slot 0");
  CHECK(job.heartbeat(slot1, 0, /*leaving=*/true).error_code() ==
        grpc::StatusCode::PERMISSION_DENIED);
  CHECK(job.service.liveness().quiet_for(0, std::chrono::steady_clock::now()));  // still watched
  CHECK(job.heartbeat(slot1, 1).ok());
  CHECK(job.remove(slot1, "round0/cpu/1").ok());

  // The job's token (hvdrun; ranks of a foreign launcher) may do it all.
  CHECK(job.set(kToken, "round0/cpu/0", "changed").ok());
  CHECK(job.set(kToken, "hvd/finished", "1").ok());
  CHECK(job.heartbeat(kToken, 0).ok());
  CHECK(job.remove(kToken, "round0/cpu/0").ok());
}

TEST_CASE("Rendezvous: a worker's flood of Set calls stops at its store quota") {
  Job job(2);
  const std::string slot1 = worker_credential(kToken, 1);
  auto first = std::async(std::launch::async, [&] { return job.join(kToken, 0); });
  REQUIRE(job.join(slot1, 1).ok());
  REQUIRE(first.get().ok());
  const auto quotas = hvd::daemon::store_quotas(2);
  CHECK(quotas.per_slot.bytes == (8u << 20) + 2048);
  // As much as the quota, not more.
  int taken = 0;
  grpc::Status status;
  for (int i = 0; i < 20 && status.ok(); ++i) {
    status = job.set(slot1, "round0/flood/" + std::to_string(i), std::string(1 << 20, 'x'));
    taken += status.ok() ? 1 : 0;
  }
  CHECK(taken == 8);  // 8 x (1 MiB + key + KvStore::kEntryBytes) fit in 8 MiB + 2 KiB
  CHECK(status.error_code() == grpc::StatusCode::RESOURCE_EXHAUSTED);
  CHECK_THAT(status.error_message(),
             Catch::StartsWith("Rendezvous.Set refused: slot 1's keys would take 943"));
  CHECK_THAT(status.error_message(),
             Catch::EndsWith("bytes of the rendezvous store, over the store quota of a slot "
                             "(8390656 bytes)"));
  CHECK(job.service.store().usage().bytes <= quotas.per_slot.bytes);
  // That refused Set was large: the slot's next ones are refused on their
  // headers, their bodies unread, small or not.
  for (size_t bytes : {size_t{15} << 20, size_t{1}}) {
    auto barred = job.set(slot1, "round0/more", std::string(bytes, 'x'));
    CHECK(barred.error_code() == grpc::StatusCode::RESOURCE_EXHAUSTED);
    CHECK_THAT(barred.error_message(),
               Catch::StartsWith("Rendezvous.Set refused: the Set calls of slot 1 are refused "
                                 "until it joins another round: a Set of 1048576 bytes was "
                                 "refused (Rendezvous.Set refused: slot 1's keys would take "));
  }
  // Deleting its keys still works.
  CHECK(job.remove(slot1, "round0/flood/0").ok());
  // The others still have room.
  CHECK(job.set(kToken, "round0/cpu/0", std::string(1 << 20, 'x')).ok());
}

TEST_CASE("Rendezvous: a worker's concurrent Set calls are received one at a time") {
  Job job(2);
  const std::string slot1 = worker_credential(kToken, 1);
  auto first = std::async(std::launch::async, [&] { return job.join(kToken, 0); });
  REQUIRE(job.join(slot1, 1).ok());
  REQUIRE(first.get().ok());
  SECTION("an honest worker's concurrent small Sets all get through") {
    std::vector<std::future<grpc::Status>> sets;
    for (int i = 0; i < 8; ++i) {
      sets.push_back(std::async(std::launch::async, [&, i] {
        return job.set(slot1, "round0/small/" + std::to_string(i), std::string(1024, 'x'));
      }));
    }
    for (auto& s : sets) CHECK(s.get().ok());
  }
  SECTION("a flood of 20 concurrent 15 MiB Sets: one body reaches the quota check") {
    std::vector<std::future<grpc::Status>> sets;
    for (int i = 0; i < 20; ++i) {
      sets.push_back(std::async(std::launch::async, [&, i] {
        return job.set(slot1, "round0/flood/" + std::to_string(i), std::string(15 << 20, 'f'));
      }));
    }
    int at_quota = 0;
    int on_headers = 0;
    for (auto& s : sets) {
      const grpc::Status status = s.get();
      CHECK(status.error_code() == grpc::StatusCode::RESOURCE_EXHAUSTED);
      const std::string& m = status.error_message();
      if (m.rfind("Rendezvous.Set refused: slot 1's keys would take", 0) == 0) ++at_quota;
      if (m.rfind("Rendezvous.Set refused: the Set calls of slot 1 are", 0) == 0) ++on_headers;
    }
    // The first taken was refused at the quota; the ones that waited behind
    // it (or found 16 waiting) on their headers.
    CHECK(at_quota == 1);
    CHECK(on_headers == 19);
    CHECK(job.service.store().usage().bytes < (1u << 20));  // no flood value stored
  }
}
