// The failure contract of transport.h, kept once for every transport: derive
// from TransportBase and implement the collectives (the do_* functions) and
// how an abort wakes them (on_abort); the base does the rest.
//
// Every public collective runs, in this order:
//  1. the shared argument checks (argument_checks.h), then check_reduction
//     for allreduce and reducescatter: kInvalidArgument, before any byte
//     moves; the transport stays usable;
//  2. the latch: a transport that failed or was aborted returns that Status
//     at once;
//  3. do_*, with checked arguments. Its outcome: OK; kInvalidArgument, a
//     refusal that ran nothing on any rank (a plugin that cannot reduce
//     int16), returned as it is, the transport still usable; anything else
//     fails the transport for good: the first such Status is latched (and
//     on_failure runs, once), and this call and every later one return the
//     latched Status (an abort's, when one came first).
// abort(), from any thread, any number of times: the first call latches
// aborted_status() (superseding an earlier failure, which it names), then
// runs on_abort() to wake whatever call is blocked; later calls do nothing.
// A blocked do_* that the abort makes fail may return any error: the call
// returns the abort's Status.
#pragma once

#include <mutex>
#include <string>
#include <string_view>

#include "transports/transport.h"

namespace hvd::transports {

// "rank R of S": how transports name a rank of their world in messages.
std::string where(int rank, int size);

class TransportBase : public Transport {
 public:
  Status allreduce(Buffer data, DataType type, ReduceOp op) final;
  Status allgatherv(ConstBuffer in, Buffer out, std::span<const int64_t> counts) final;
  Status broadcast(Buffer data, int root) final;
  Status alltoallv(ConstBuffer in, std::span<const int64_t> send_counts, Buffer out,
                   std::span<const int64_t> recv_counts) final;
  Status reducescatter(ConstBuffer in, Buffer out, std::span<const int64_t> recv_counts,
                       DataType type, ReduceOp op) final;
  Status barrier() final;
  void abort(Status reason) final;

 protected:
  // The collectives proper (transport.h), called with checked arguments
  // while the transport has not failed; see above for what they return.
  virtual Status do_allreduce(Buffer data, DataType type, ReduceOp op) = 0;
  virtual Status do_allgatherv(ConstBuffer in, Buffer out, std::span<const int64_t> counts) = 0;
  virtual Status do_broadcast(Buffer data, int root) = 0;
  virtual Status do_alltoallv(ConstBuffer in, std::span<const int64_t> send_counts, Buffer out,
                              std::span<const int64_t> recv_counts) = 0;
  virtual Status do_reducescatter(ConstBuffer in, Buffer out,
                                  std::span<const int64_t> recv_counts, DataType type,
                                  ReduceOp op) = 0;
  virtual Status do_barrier() = 0;

  enum class Reduction { kAllreduce, kReducescatter };
  // kInvalidArgument for a reduction this transport has no function for,
  // checked with the arguments (before the latch). Default: every one.
  virtual Status check_reduction(Reduction collective, DataType type, ReduceOp op) const;

  // The Status of every call after abort(reason); `earlier` is the failure
  // it supersedes (OK: none). Default: the reason's code (kAborted for an
  // OK reason) and "the <name> transport on rank R of S was aborted:
  // <reason's message, or 'no reason given'>", then " (it had already
  // failed: <earlier's message>)" after a failure. Called under the lock.
  virtual Status aborted_status(const Status& reason, const Status& earlier) const;
  // After abort latched `aborted`: make every blocked call return promptly
  // and never wait for peers (transport.h). `reason` as abort() got it.
  virtual void on_abort(const Status& reason, const Status& aborted) = 0;
  // After the first failure (not an abort) was latched, once: e.g. let the
  // peers see this rank leave. Default: nothing.
  virtual void on_failure(const Status& error);

  // The latched failure (OK while none).
  Status failure() const;
  // Latches `error` unless a failure is latched already (then on_failure
  // runs); returns the latched one. For failures outside the collectives
  // (while connecting).
  Status fail(Status error);
  // `error` as "<name> <op> failed on rank R of S: <message>", its code
  // kept; OK and kInvalidArgument (a refusal) as they are.
  Status failed(std::string_view op, const Status& error) const;

 private:
  // The latch (step 2 above) around `body`, a call of a do_* function.
  template <typename Body>
  Status run(Body&& body);

  mutable std::mutex mutex_;  // guards failure_ and aborted_
  Status failure_;
  bool aborted_ = false;
};

}  // namespace hvd::transports
