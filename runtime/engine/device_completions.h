// The completion path of a set's device batches (docs/engine.md, "Device
// completion"; DDP's Work, Horovod's finalizer thread). The engine thread
// launches a batch on the device's communication stream, records its
// DeviceEvent, hands the batch here and goes straight back to negotiating
// and launching the next one. A thread of this class's own (started at the
// first batch) waits for the oldest batch's events without blocking the
// device (polling: yields, then 20 us and 200 us sleeps), asks the
// transport for asynchronous errors meanwhile, and completes the batch's
// ops. Batches complete in the order they were launched (one stream per
// device orders them there too). At most max_in_flight are in flight: add()
// waits on the engine thread until the oldest completes.
//
// Failures: an event's error, the transport's asynchronous error (asked
// while the batch runs and once more when its events completed: a failed or
// aborted collective's event completes too), or a batch not complete within
// `timeout` of its launch fail the set:
// on_failure(status) is called once (the set engine aborts its transports,
// so that their kernels end) and this batch and every later one complete
// with that failure once their events completed (after the abort the
// stream drains), or at the latest `timeout` after the failure; the ops'
// tensors may then still be written on the device, which is logged. So a
// handle never completes while the device may still write its tensors,
// except after a device that does not drain (memory safety, docs/gpu.md).
// A batch whose launch failed midway comes with its failure and completes
// the same way.
#pragma once

#include <chrono>
#include <condition_variable>
#include <deque>
#include <functional>
#include <memory>
#include <mutex>
#include <string>
#include <thread>
#include <vector>

#include "common/status.h"
#include "runtime/engine/device_event.h"
#include "runtime/engine/tensor_queue.h"
#include "runtime/engine/timeline.h"
#include "transports/device_work.h"

namespace hvd::runtime::engine {

class DeviceCompletions {
 public:
  using Clock = std::chrono::steady_clock;

  struct Batch {
    // Every one must complete (a group may span devices).
    std::vector<std::shared_ptr<DeviceEvent>> events;
    // Asked for asynchronous errors while the batch runs; they outlive it.
    std::vector<transports::StreamedTransport*> watched;
    std::vector<Entry> entries;             // the ops
    std::vector<common::Status> statuses;   // each op's own (OK, or its error)
    // Whether each op still holds its name in the queue (a launched op gave
    // it up at launch: the next step's op of that name may come at once).
    std::vector<char> named;
    bool group = false;                     // complete together
    common::Status failure;                 // the launch's, when it failed midway
    std::shared_ptr<Timeline> timeline;     // "DEVICE" spans end at completion
  };
  // Completes a batch's ops (statuses already hold any failure); on the
  // completion thread, or on the engine thread in drain().
  using Complete = std::function<void(Batch&)>;
  using OnFailure = std::function<void(const common::Status&)>;

  DeviceCompletions(std::string name, size_t max_in_flight, std::chrono::milliseconds timeout,
                    Complete complete, OnFailure on_failure);
  // drain()s, then stops the thread.
  ~DeviceCompletions();
  DeviceCompletions(const DeviceCompletions&) = delete;
  DeviceCompletions& operator=(const DeviceCompletions&) = delete;

  // Engine thread: hands a launched batch over, after waiting while
  // max_in_flight batches are in flight.
  void add(Batch batch);
  // Engine thread: until every batch handed over completed (bounded: each
  // completes within 2 x timeout of its launch).
  void drain();
  size_t in_flight() const;

 private:
  void run();
  // Waits for the front batch (mu_ not held): its completion status.
  common::Status wait_for(Batch& batch, Clock::time_point launched);
  void fail(const common::Status& status);  // the first failure wins

  const std::string name_;
  const size_t max_in_flight_;
  const std::chrono::milliseconds timeout_;
  Complete complete_;
  OnFailure on_failure_;

  mutable std::mutex mu_;
  std::condition_variable changed_;
  std::deque<std::pair<Batch, Clock::time_point>> batches_;  // with their launch time
  bool busy_ = false;   // the thread holds the front batch
  bool stop_ = false;
  common::Status failure_;  // OK until the first failure
  std::thread thread_;
};

}  // namespace hvd::runtime::engine
