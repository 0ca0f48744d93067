// Credentials of rendezvous calls (docs/security.md, "Rendezvous calls").
// hvdrun keeps the job's token to itself and hands each worker it launches
// a credential of its own in HVD_JOB_TOKEN, derived from the token:
//
//   slot-<id>.<64 hex>    HMAC-SHA256(job token, "hvd-rendezvous-slot-v1\n" + id)
//
// where <id> is what the worker was launched as: its slot (HVD_RANK) or, for
// a hot spare, its spare id (HVD_SPARE). The service recomputes the mac, so
// it needs nothing but the job's token; a worker cannot make another's
// credential from its own. What each may do: worker_rights.h.
#pragma once

#include <mutex>
#include <optional>
#include <string>
#include <string_view>
#include <unordered_map>

namespace hvd::daemon {

// The credential of the worker launched as `id` (>= 0). Secret: never log it.
std::string worker_credential(std::string_view job_token, int id);

// Who a rendezvous call comes from.
struct Caller {
  static constexpr int kJob = -1;
  // The worker's launch id (its slot, or a spare's id), or kJob: the job's
  // token itself (hvdrun; every rank of a job a foreign launcher started).
  int id = kJob;
  bool job() const { return id == kJob; }
};

// The credentials of one job: its token and every worker credential derived
// from it. Thread-safe; checks in time independent of the credential's mac.
class JobCredentials {
 public:
  explicit JobCredentials(std::string job_token);

  // Whom `credential` (the bearer value a call carries) stands for; nullopt
  // when it is not one of this job's.
  std::optional<Caller> caller(std::string_view credential) const;

 private:
  const std::string token_;
  mutable std::mutex mu_;
  // The credentials of the ids that have presented a valid one (at most one
  // entry per worker of the job: a wrong credential is never remembered).
  mutable std::unordered_map<int, std::string> known_;
};

}  // namespace hvd::daemon
