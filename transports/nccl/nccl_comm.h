// One NCCL communicator for one world (a process set), as the plugin's
// handle. Created non-blocking (ncclConfig_t.blocking = 0) so that nothing
// waits without a deadline: the ncclUniqueId travels through the job's
// rendezvous store (rank 0 sets it), connecting and every op are bounded by
// the world's timeout, and abort() may come from any thread.
//
// An op enqueues its NCCL calls on the caller's stream (the engine's
// communication stream; NULL: the legacy default stream), waits until they
// are issued (the non-blocking communicator's ncclInProgress, bounded by the
// timeout), records an event and returns (ABI version 4): the engine learns
// completion from an event of its own and asks async_error() meanwhile. A
// failure NCCL reports asynchronously (ncclCommGetAsyncError) fails this
// and every later op with a message naming the rank, and leaves the
// communicator to the engine: it aborts it (abort(), ncclCommAbort) or, in
// an elastic job that lost members, shrinks it first. A failed op or a
// barrier that does not complete in time (barrier() still waits on the
// host) aborts it at once. The destructor aborts rather than destroys a
// communicator whose last op has not completed. shrink() makes the
// communicator of the survivors with ncclCommShrink (NCCL >= 2.27, found
// with dlsym at run time; HVD_ERR_UNIMPLEMENTED without it), with
// NCCL_SHRINK_ABORT when this one failed or still runs an op.
//
// Every call on the communicator holds comm_mu_ briefly (non-blocking NCCL
// calls return at once), so ncclCommAbort never races with another call.
// A failure is recorded first (state_mu_, which waits read without comm_mu_)
// and the communicator is then aborted on a thread of its own: ncclCommAbort
// may block while the stream is held (a stuck kernel, a host function), and
// the op that suffers the failure, or that an abort() ends, must return
// promptly all the same. The destructor joins that thread.
#pragma once

#include <cuda_runtime_api.h>
#include <nccl.h>

#include <chrono>
#include <functional>
#include <mutex>
#include <string>
#include <thread>

#include "transports/plugin/transport_plugin.h"

namespace hvd::transports::nccl {

class NcclComm {
 public:
  // nullptr with *status set on failure.
  static NcclComm* create(const hvd_plugin_world& world, hvd_plugin_status* status);
  ~NcclComm();

  NcclComm(const NcclComm&) = delete;
  NcclComm& operator=(const NcclComm&) = delete;

  int rank() const { return rank_; }
  int size() const { return size_; }

  // Runs `issue` (NCCL calls on the communicator and the stream it is
  // given) under the lock, waits until they are issued and records the
  // comm's event after them; with `wait`, also waits for the stream's work
  // to complete. `what` names the op in errors ("allreduce of 4096 bytes").
  int32_t run(const std::string& what, void* stream,
              const std::function<ncclResult_t(ncclComm_t, cudaStream_t)>& issue,
              hvd_plugin_status* status, bool wait = false);

  // An allreduce of one int on a scratch word of device memory, waited for.
  int32_t barrier(void* stream, hvd_plugin_status* status);

  // The recorded failure, else ncclCommGetAsyncError's (an error is then
  // recorded and the communicator aborted). Never blocks: while another
  // call holds the communicator, only the recorded failure is looked at.
  int32_t async_error(hvd_plugin_status* status);

  // The communicator of `world` (the survivors) from this one without
  // `excluded`, by ncclCommShrink (NCCL_SHRINK_ABORT when this one failed or
  // an op is still in flight); nullptr with *status set (HVD_ERR_UNIMPLEMENTED
  // when the loaded NCCL has no ncclCommShrink). This one stays valid.
  NcclComm* shrink(const hvd_plugin_world& world, const int32_t* excluded, int32_t n_excluded,
                   hvd_plugin_status* status);

  // Fails the communicator for good; the first reason wins.
  void abort(int32_t code, const std::string& reason);

 private:
  NcclComm(int rank, int size, int device, std::chrono::milliseconds timeout);

  // The event and the scratch word (before the communicator exists).
  int32_t prepare(hvd_plugin_status* status);
  int32_t connect(const hvd_plugin_world& world, hvd_plugin_status* status);
  // Polls until the communicator's pending calls are issued (not
  // ncclInProgress) or `deadline`: the outcome as a status code.
  int32_t wait_issued(const std::string& what, std::chrono::steady_clock::time_point deadline,
                      hvd_plugin_status* status);
  int32_t wait_event(const std::string& what, std::chrono::steady_clock::time_point deadline,
                     hvd_plugin_status* status);
  // The failure recorded so far, copied to *status; 0 when none. Never
  // waits for comm_mu_.
  int32_t failed(hvd_plugin_status* status);
  // Records a failure under state_mu_ (the first wins; the message names
  // the rank and device).
  void record_failure(int32_t code, const std::string& reason);
  // Records the failure and aborts the communicator on the aborter thread;
  // the caller holds comm_mu_. Reports it in *status.
  int32_t fail_locked(int32_t code, const std::string& reason, hvd_plugin_status* status);
  // ncclCommAbort of comm_ on aborter_ (comm_ is null from here on); the
  // caller holds comm_mu_.
  void abort_comm_locked();

  const int rank_;
  const int size_;
  const int device_;
  const std::chrono::milliseconds timeout_;
  std::mutex comm_mu_;
  ncclComm_t comm_ = nullptr;     // null once aborted
  cudaEvent_t done_ = nullptr;    // recorded after each op
  void* scratch_ = nullptr;       // one int of device memory, for barrier()
  std::thread aborter_;           // runs ncclCommAbort; guarded by comm_mu_
  std::mutex state_mu_;           // guards the two below
  int32_t failed_code_ = 0;       // HVD_OK until failed or aborted
  std::string failed_message_;
};

}  // namespace hvd::transports::nccl
