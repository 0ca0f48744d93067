// The worker's heartbeat (daemon/rendezvous/liveness.h): from the moment the worker has
// joined its job until shutdown, a thread tells the job's Rendezvous service
// every `interval` that this rank is alive, and says once, at stop(), that
// it leaves. It needs no GIL and no engine: a rank busy in Python or blocked
// in a collective still beats; a stopped process (SIGSTOP) or a hung host
// does not, which is how hvdrun tells them apart. Failed calls are logged
// at debug level and retried next interval: the launcher decides. Beats
// also carry the commit of the elastic state the worker holds, once it
// reported one (held()), and, given a stats source, the worker's op
// counters at most once a second (hvdrun --metrics-port; docs/metrics.md).
#pragma once

#include <chrono>
#include <condition_variable>
#include <cstdint>
#include <functional>
#include <mutex>
#include <optional>
#include <thread>

#include "daemon/rendezvous/rendezvous_client.h"

namespace hvd::runtime {

class Heartbeat {
 public:
  // The worker's op counters now (called on the heartbeat's thread).
  using StatsSource = std::function<hvd::v1::RankStats()>;
  static constexpr std::chrono::seconds kStatsInterval{1};

  // Starts beating for `rank` of `round` at once, then `interval` after
  // each beat's answer; with `stats`, beats carry its counters at most every
  // kStatsInterval. A beat may take `patience` (at least `interval`) to be
  // answered, riding out a reconnect: the service counts it when it handles
  // it, and one beat in flight a rank keeps a swamped service's queue at
  // one beat per rank. (Deadlines of one interval expired half of a
  // 1024-rank job's beats on 2 cores, the service handling calls already
  // given up, and starved ranks of every answer for 50 s: issue 31.)
  Heartbeat(RendezvousClient& client, int rank, int64_t round, std::chrono::milliseconds interval,
            StatsSource stats = {}, std::chrono::milliseconds patience = {});
  // stop()s.
  ~Heartbeat();
  Heartbeat(const Heartbeat&) = delete;
  Heartbeat& operator=(const Heartbeat&) = delete;

  // Ends the thread (a beat in flight is cancelled: it may wait up to its
  // patience) and sends the leaving heartbeat (bounded by the interval).
  // Idempotent.
  void stop();

  // The worker holds `commit` of its elastic state now (hvd_elastic_committed;
  // synced: its round restarted from it): the next beat, sent at once (at
  // most every 20 ms), and every later one carry it, and the commit the
  // round restarted from once there is one. Never blocks on the service.
  void held(HeldCommit commit);

  // Tests only (HVD_TEST_FAULT heartbeat:pause=S, runtime/fault_point.h):
  // the thread sends no beat for `pause` once, from its next beat on, while
  // the process runs on: a CPU-starved worker as hvdrun sees it.
  void pause_once(std::chrono::milliseconds pause);
  // The interval for a liveness timeout: ten beats per timeout, at least
  // every half second and at most ten times a second.
  static std::chrono::milliseconds interval_for(std::chrono::milliseconds timeout);
  // The whole job's beats the rendezvous serves a second, at most, as far
  // as the timeout allows (issue 31: a beat costs the server about 50 us of
  // CPU on the 2-core VM; 4096 a second, about 20% of a core).
  static constexpr int kJobBeatsPerSecond = 4096;
  // The interval of one of `world_size` ranks: interval_for(timeout), longer
  // in a large job so that all ranks together beat at most
  // kJobBeatsPerSecond times a second (world_size / 4096 s: 4 s at 16k
  // ranks, 16 s at 64k), but never longer than a third of the timeout (a
  // running worker is never late: three beats per timeout). To keep a 64k
  // job's beats within the budget, its timeout must be at least 48 s
  // (HVD_HEARTBEAT_TIMEOUT_SECONDS; docs/scale.md).
  static std::chrono::milliseconds interval_for(std::chrono::milliseconds timeout, int world_size);
  // A beat's patience for a liveness timeout: all of it. A beat answered
  // that late still counts when the service handles it; one given up
  // sooner puts the rank at the back of a swamped service's queue again.
  static std::chrono::milliseconds patience_for(std::chrono::milliseconds timeout);

 private:
  void run();

  RendezvousClient& client_;
  const int rank_;
  const int64_t round_;
  const std::chrono::milliseconds interval_;
  const std::chrono::milliseconds patience_;
  const StatsSource stats_;
  std::chrono::steady_clock::time_point stats_sent_{};  // heartbeat thread only
  std::mutex mu_;
  std::condition_variable wake_;
  bool stopping_ = false;
  CommitReport commits_;  // what beats carry
  std::chrono::milliseconds pause_{0};  // pause_once()
  bool beat_now_ = false;             // held() since the last beat
  grpc::ClientContext* in_flight_ = nullptr;  // the beat being sent; stop() cancels it
  std::thread thread_;  // last: starts after everything above exists
};

}  // namespace hvd::runtime
