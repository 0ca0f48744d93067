// TransportBase: the order of the checks, the first-failure latch and abort,
// over a fake transport whose collectives return what the test says (the
// real transports: transport_conformance_test.cc, transport_abort_test.cc).
#include <catch2/catch.hpp>

#include <string>
#include <vector>

#include "transports/transport_base.h"

namespace hvd::transports {

namespace {

using common::StatusCode;

class FakeTransport final : public TransportBase {
 public:
  std::string_view name() const override { return "fake"; }
  int rank() const override { return 1; }
  int size() const override { return 2; }

  Status next;  // what the next collective returns
  int runs = 0;
  std::vector<std::string> failures;  // on_failure's
  std::vector<std::string> aborts;    // on_abort's
  Status failure_now() const { return failure(); }
  Status fail_now(Status error) { return fail(std::move(error)); }

 private:
  Status collective() {
    ++runs;
    return failed("op", next);
  }
  Status do_allreduce(Buffer, DataType, ReduceOp) override { return collective(); }
  Status do_allgatherv(ConstBuffer, Buffer, std::span<const int64_t>) override { return collective(); }
  Status do_broadcast(Buffer, int) override { return collective(); }
  Status do_alltoallv(ConstBuffer, std::span<const int64_t>, Buffer,
                      std::span<const int64_t>) override {
    return collective();
  }
  Status do_reducescatter(ConstBuffer, Buffer, std::span<const int64_t>, DataType,
                          ReduceOp) override {
    return collective();
  }
  Status do_barrier() override { return collective(); }
  Status check_reduction(Reduction collective, DataType, ReduceOp op) const override {
    if (collective == Reduction::kAllreduce && op == ReduceOp::kAverage) {
      return common::invalid_argument("no average");
    }
    return Status::ok();
  }
  void on_failure(const Status& error) override { failures.push_back(error.message()); }
  void on_abort(const Status& reason, const Status& aborted) override {
    aborts.push_back(reason.message() + " -> " + aborted.message());
  }
};

}  // namespace

TEST_CASE("TransportBase runs a collective and keeps no failure after success", "[transport_base]") {
  FakeTransport t;
  CHECK(t.barrier().is_ok());
  CHECK(t.runs == 1);
  CHECK(t.failure_now().is_ok());
}

TEST_CASE("TransportBase latches the first failure and names op and rank", "[transport_base]") {
  FakeTransport t;
  t.next = common::unavailable("peer gone");
  Status first = t.barrier();
  CHECK(first.code() == StatusCode::kUnavailable);
  CHECK(first.message() == "fake op failed on rank 1 of 2: peer gone");
  t.next = common::timeout_error("later");
  CHECK(t.barrier().message() == first.message());  // not run again
  CHECK(t.runs == 1);
  CHECK(t.failures == std::vector<std::string>{first.message()});
  // A failure outside the collectives does not replace it either.
  CHECK(t.fail_now(common::internal_error("connect")).message() == first.message());
  CHECK(t.failures.size() == 1);
}

TEST_CASE("TransportBase: a refusal fails its op only", "[transport_base]") {
  FakeTransport t;
  t.next = common::invalid_argument("cannot reduce int16");
  Status refused = t.barrier();
  CHECK(refused.code() == StatusCode::kInvalidArgument);
  CHECK(refused.message() == "cannot reduce int16");  // as it is
  CHECK(t.failure_now().is_ok());
  CHECK(t.failures.empty());
  t.next = Status::ok();
  CHECK(t.barrier().is_ok());
}

TEST_CASE("TransportBase checks arguments and reductions before the latch", "[transport_base]") {
  FakeTransport t;
  t.next = common::unavailable("peer gone");
  REQUIRE_FALSE(t.barrier().is_ok());
  std::vector<char> data(8);
  Status root = t.broadcast({data.data(), data.size()}, 2);
  CHECK(root.code() == StatusCode::kInvalidArgument);
  CHECK(root.message() == "broadcast root 2 is not a rank of a world of size 2");
  Status average = t.allreduce({data.data(), data.size()}, DataType::kFloat32, ReduceOp::kAverage);
  CHECK(average.message() == "no average");
  // reducescatter's recv counts must split the input: 4 bytes each.
  const std::vector<int64_t> counts{4, 4};
  CHECK(t.reducescatter({data.data(), 8}, {data.data(), 4}, counts, DataType::kFloat32,
                        ReduceOp::kAverage)
            .code() == StatusCode::kUnavailable);  // the fake refuses average for allreduce only
  CHECK(t.runs == 1);
}

TEST_CASE("TransportBase: the first abort wins and supersedes a failure", "[transport_base]") {
  FakeTransport t;
  t.next = common::unavailable("peer gone");
  REQUIRE_FALSE(t.barrier().is_ok());
  t.abort(common::failed_precondition("the world changed"));
  t.abort(common::aborted("again"));
  Status aborted = t.failure_now();
  CHECK(aborted.code() == StatusCode::kFailedPrecondition);
  CHECK(aborted.message() ==
        "the fake transport on rank 1 of 2 was aborted: the world changed (it had already "
        "failed: fake op failed on rank 1 of 2: peer gone)");
  CHECK(t.aborts == std::vector<std::string>{"the world changed -> " + aborted.message()});
  CHECK(t.barrier().message() == aborted.message());
  CHECK(t.runs == 1);
}

TEST_CASE("TransportBase: what an abort makes a call fail with is the abort", "[transport_base]") {
  FakeTransport t;
  t.abort(Status::ok());
  Status aborted = t.failure_now();
  CHECK(aborted.code() == StatusCode::kAborted);
  CHECK(aborted.message() == "the fake transport on rank 1 of 2 was aborted: no reason given");
  // A failure reported after the abort (a call it woke) returns the abort.
  CHECK(t.fail_now(common::unavailable("socket closed")).message() == aborted.message());
  CHECK(t.failures.empty());
}

}  // namespace hvd::transports
