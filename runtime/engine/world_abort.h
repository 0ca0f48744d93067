// The abort of a whole world (Runtime::abort; docs/engine.md, "Abort"): the
// first reason, kept for good, and the step that hands it to every process
// set's engine, which aborts its transport with it. Thread-safe; nothing
// here waits for peers or the network.
#pragma once

#include <memory>
#include <mutex>
#include <vector>

#include "common/status.h"
#include "runtime/engine/process_sets.h"

namespace hvd::runtime::engine {

class WorldAbort {
 public:
  // Records `reason` unless an abort is recorded already (the first reason
  // wins); true when this call recorded it. An OK reason is recorded as
  // kAborted "aborted (no reason given)".
  bool trigger(common::Status reason);
  bool aborted() const;
  // The recorded reason; OK while there is none.
  common::Status reason() const;

 private:
  mutable std::mutex mu_;
  common::Status reason_;
};

// Aborts the engine of every set in `sets` this process is a member of
// (SetEngine::abort: its transport, its queue, its pending ops).
void abort_sets(const std::vector<std::shared_ptr<const ProcessSet>>& sets,
                const common::Status& reason);

}  // namespace hvd::runtime::engine
