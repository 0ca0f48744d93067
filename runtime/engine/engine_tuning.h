// Autotune inside one set engine (docs/autotune.md, "Every rank in step"):
// the parameters the engine runs with (fusion threshold, cycle time, the
// transport's chunk) and, on rank 0 of the global set with autotune on, the
// parameter manager that measures cycles and picks new ones.
//
// Rank 0 puts its parameters and a generation number in its negotiation
// header (outgoing()); after each exchange every rank hands the header of
// rank 0 to apply(), which switches to those parameters when the generation
// changed, before the cycle's plan runs. So every rank fuses with the same
// threshold and chunks with the same size from the same cycle on. Engine
// thread only.
#pragma once

#include <cstdint>
#include <memory>
#include <optional>
#include <string>

#include "runtime/autotune/parameter_manager.h"
#include "runtime/engine/message_codec.h"
#include "runtime/engine/response.h"
#include "runtime/engine/tensor_queue.h"
#include "transports/transport.h"

namespace hvd::runtime::engine {

struct AutotuneOptions {
  autotune::TunerOptions tuner;
  std::string log_file;  // empty: none
};

class EngineTuning {
 public:
  // `tuner`: set on the rank that tunes (rank 0 of the global set, autotune
  // on), unset elsewhere.
  EngineTuning(double cycle_time_ms, int64_t fusion_threshold, transports::Transport& transport,
               const std::optional<AutotuneOptions>& tuner);

  double cycle_time_ms() const { return cycle_time_ms_; }
  int64_t fusion_threshold() const { return fusion_threshold_; }

  // What this rank puts in its header (all zeros unless it tunes).
  const TuneFields& outgoing() const { return outgoing_; }
  // Rank 0's header fields of this cycle: switch when their generation is new.
  void apply(const TuneFields& agreed);

  // Rank 0: before the plan runs, what it will move; after, the cycle's
  // busy time (from its oldest op's enqueue or `previous_end`, whichever is
  // later, to `end`), handed to the parameter manager.
  void before_run(const CyclePlan& plan);
  void after_run(Clock::time_point previous_end, Clock::time_point end);

 private:
  transports::Transport& transport_;
  double cycle_time_ms_;
  int64_t fusion_threshold_;
  uint32_t applied_generation_ = 0;
  bool skip_next_ = false;  // the cycle of a switch is not measured
  TuneFields outgoing_;
  std::unique_ptr<autotune::ParameterManager> manager_;
  int64_t cycle_bytes_ = 0;
  Clock::time_point oldest_{};
};

}  // namespace hvd::runtime::engine
