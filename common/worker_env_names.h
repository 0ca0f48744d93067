// The environment contract between whoever starts a worker (hvdrun's agents)
// and the runtime inside it. Declared once here; docs/environment.md explains it.
#pragma once

namespace hvd::common::env {

inline constexpr char kRank[] = "HVD_RANK";
inline constexpr char kSize[] = "HVD_SIZE";
inline constexpr char kLocalRank[] = "HVD_LOCAL_RANK";
inline constexpr char kLocalSize[] = "HVD_LOCAL_SIZE";
inline constexpr char kCrossRank[] = "HVD_CROSS_RANK";
inline constexpr char kCrossSize[] = "HVD_CROSS_SIZE";
// host:port of the job's Rendezvous service.
inline constexpr char kRendezvousAddr[] = "HVD_RENDEZVOUS_ADDR";
// The credential every rendezvous call of the worker carries. Never logged.
// Under hvdrun the worker's own (daemon/rendezvous/worker_credentials.h,
// derived from the job's token, which hvdrun keeps); under a foreign
// launcher the job's token itself, the same on every rank.
inline constexpr char kJobToken[] = "HVD_JOB_TOKEN";
inline constexpr char kJobId[] = "HVD_JOB_ID";
// The host name the launcher knows this worker's host by (for messages).
inline constexpr char kHostname[] = "HVD_HOSTNAME";
// Local address the worker's transports listen on.
inline constexpr char kBindAddress[] = "HVD_BIND_ADDRESS";
// "1": the worker is in an elastic job: HVD_RANK is its slot, and its rank,
// size and layout come from each rendezvous round (daemon/rendezvous/rounds.h).
inline constexpr char kElastic[] = "HVD_ELASTIC";
// "1": the worker replaces one that failed: it is new to the job's rounds.
inline constexpr char kReplacement[] = "HVD_REPLACEMENT";
// A hot spare's id (hvdrun --spares; at least --max-np): the worker has no
// slot (no HVD_RANK) until hvdrun promotes it; hvd.init() waits for that.
inline constexpr char kSpare[] = "HVD_SPARE";

}  // namespace hvd::common::env
