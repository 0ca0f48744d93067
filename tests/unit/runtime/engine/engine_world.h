// Ranks as threads for engine tests: each rank has its own gloo transport
// (over one in-process key-value store), its own handle table and its own
// SetEngine with its engine thread, as a process would. Rank bodies report
// problems as text (Catch2 is not thread-safe); every wait has a deadline.
#pragma once

#include <chrono>
#include <functional>
#include <memory>
#include <string>
#include <vector>

#include "daemon/rendezvous/kv_store.h"
#include "runtime/engine/handle_table.h"
#include "runtime/engine/set_engine.h"
#include "runtime/engine/active_timeline.h"
#include "transports/transport.h"

namespace hvd::runtime::engine::testing {

struct WorldOptions {
  int size = 2;
  SetEngineOptions engine;          // per-rank fields (rank, global_ranks) are filled in
  std::vector<int> global_ranks;    // default 0..size-1
  std::chrono::milliseconds transport_timeout{5000};
  std::string key_prefix = "engine-test/";
  std::string transport = "gloo";  // the registry's name of every rank's transport
  // Wraps a rank's transport (fault injection); identity when empty.
  std::function<std::unique_ptr<transports::Transport>(int, std::unique_ptr<transports::Transport>)>
      wrap;
  // Rank whose engine records into `timeline` (-1: none).
  int timeline_rank = -1;
  const ActiveTimeline* timeline = nullptr;
};

class EngineWorld {
 public:
  // Connects every rank (in parallel) and starts the engines; a failure
  // to connect throws std::runtime_error.
  EngineWorld(const WorldOptions& options, daemon::KvStore& store);
  explicit EngineWorld(const WorldOptions& options);
  ~EngineWorld();  // stops every engine still running

  int size() const { return static_cast<int>(engines_.size()); }
  SetEngine& engine(int r) { return *engines_[static_cast<size_t>(r)]; }
  HandleTable& handles(int r) { return *handles_[static_cast<size_t>(r)]; }
  // Stops rank r's engine (collective: the others stop in the same cycle).
  void stop(int r);

 private:
  void start(const WorldOptions& options, daemon::KvStore& store);

  std::unique_ptr<daemon::KvStore> own_store_;
  std::vector<std::unique_ptr<HandleTable>> handles_;
  std::vector<std::unique_ptr<SetEngine>> engines_;
};

// body(rank) on one thread per rank, each returning "" or a problem, which
// come back as "rank R: problem" lines. A thread that misses the deadline
// ends the process with status 1 (it still uses this frame) instead of hanging.
std::vector<std::string> on_ranks(int size, const std::function<std::string(int)>& body,
                                  std::chrono::seconds deadline = std::chrono::seconds(60));

// The problems on_ranks() returned, one per line (for INFO).
std::string problem_lines(const std::vector<std::string>& problems);

// A request with the fields most tests need.
Request request(const std::string& name, OpType type, DataType dtype, std::vector<int64_t> shape,
                ReduceOp op = ReduceOp::kSum);

// Enqueues on rank r: the handle, or the refusal.
common::Result<int64_t> submit(EngineWorld& world, int r, Request request, const void* input,
                               void* output);
common::Result<std::vector<int64_t>> submit_group(EngineWorld& world, int r,
                                                  std::vector<Request> requests,
                                                  std::vector<const void*> inputs,
                                                  std::vector<void*> outputs);
// Waits up to 30 s: the op's status (kTimeout when it hangs).
common::Status wait(EngineWorld& world, int r, int64_t handle);

}  // namespace hvd::runtime::engine::testing

// Fails the test case (with the problems as its INFO) unless on_ranks()
// returned none.
#define CHECK_NO_PROBLEMS(problems)                                          \
  do {                                                                       \
    auto _p = (problems);                                                    \
    INFO(::hvd::runtime::engine::testing::problem_lines(_p));                \
    CHECK(_p.empty());                                                       \
  } while (0)
