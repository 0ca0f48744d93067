// gRPC Rendezvous service of one job: membership barrier plus key-value
// store. Every call must carry the job token (UNAUTHENTICATED otherwise).
// Handlers only translate; the state lives in Membership and KvStore.
#pragma once

#include <string>

#include "daemon/elastic_rounds.h"
#include "daemon/kv_store.h"
#include "daemon/liveness.h"
#include "daemon/membership.h"
#include "hvd/v1/rendezvous.grpc.pb.h"

namespace hvd::daemon {

class RendezvousService final : public hvd::v1::Rendezvous::Service {
 public:
  RendezvousService(std::string job_token, int world_size);

  Membership& membership() { return membership_; }
  // Elastic jobs: joins form ElasticRounds instead of the fixed-size
  // barrier (call before serving). lost(slot): that worker died.
  void enable_elastic(int min_size);
  bool elastic() const { return rounds_ != nullptr; }
  void lost(int slot) {
    if (rounds_) rounds_->lost(slot);
  }
  const Liveness& liveness() const { return liveness_; }
  // Stops watching `rank` until it joins again (its worker was replaced).
  void forget(int rank) { liveness_.left(rank); }
  KvStore& store() { return store_; }

  // Wakes blocked Join and Get calls (kCancelled) so the server can stop.
  void close();

  grpc::Status Join(grpc::ServerContext* ctx, const hvd::v1::JoinRequest* req,
                    hvd::v1::JoinReply* reply) override;
  grpc::Status Set(grpc::ServerContext* ctx, const hvd::v1::SetRequest* req,
                   hvd::v1::SetReply* reply) override;
  grpc::Status Get(grpc::ServerContext* ctx, const hvd::v1::GetRequest* req,
                   hvd::v1::GetReply* reply) override;
  grpc::Status Add(grpc::ServerContext* ctx, const hvd::v1::AddRequest* req,
                   hvd::v1::AddReply* reply) override;
  grpc::Status Check(grpc::ServerContext* ctx, const hvd::v1::CheckRequest* req,
                     hvd::v1::CheckReply* reply) override;
  grpc::Status Delete(grpc::ServerContext* ctx, const hvd::v1::DeleteRequest* req,
                      hvd::v1::DeleteReply* reply) override;
  grpc::Status Heartbeat(grpc::ServerContext* ctx, const hvd::v1::HeartbeatRequest* req,
                         hvd::v1::HeartbeatReply* reply) override;

 private:
  const std::string token_;
  Membership membership_;
  std::unique_ptr<ElasticRounds> rounds_;  // elastic jobs only
  Liveness liveness_;
  KvStore store_;
};

}  // namespace hvd::daemon
