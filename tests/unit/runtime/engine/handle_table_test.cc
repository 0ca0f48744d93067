#include "runtime/engine/handle_table.h"

#include <catch2/catch.hpp>

#include <chrono>
#include <thread>

namespace hvd::runtime::engine {

namespace {
using namespace std::chrono_literals;
using common::StatusCode;
}  // namespace

TEST_CASE("handle table: ids, poll, complete, wait", "[handle_table]") {
  HandleTable t(100);
  int64_t a = t.create();
  int64_t b = t.create();
  CHECK(a == 100);
  CHECK(b == 101);
  CHECK(t.next_id() == 102);
  CHECK(t.poll(a).value() == false);
  CHECK(t.poll(999).status().code() == StatusCode::kNotFound);

  t.complete(a, common::Status::ok());
  CHECK(t.poll(a).value() == true);
  CHECK(t.wait(a, std::nullopt).is_ok());
  t.complete(b, common::invalid_argument("mismatched shape"));
  auto s = t.wait(b, std::chrono::duration<double>(1));
  CHECK(s.code() == StatusCode::kInvalidArgument);
  CHECK(s.message() == "mismatched shape");
  // A second completion does not overwrite the first.
  t.complete(b, common::Status::ok());
  CHECK_FALSE(t.wait(b, std::nullopt).is_ok());
}

TEST_CASE("handle table: wait with a timeout keeps the handle", "[handle_table]") {
  HandleTable t;
  int64_t h = t.create();
  auto start = std::chrono::steady_clock::now();
  auto s = t.wait(h, std::chrono::duration<double>(0.05));
  CHECK(s.code() == StatusCode::kTimeout);
  CHECK_THAT(s.message(), Catch::Contains("still pending"));
  CHECK(std::chrono::steady_clock::now() - start >= 50ms);
  CHECK(t.poll(h).value() == false);

  std::thread completer([&] {
    std::this_thread::sleep_for(30ms);
    OpOutput out;
    out.shape = {2, 3};
    out.bytes = 24;
    out.data.reset(new uint8_t[24]());
    t.complete(h, common::Status::ok(), std::move(out));
  });
  CHECK(t.wait(h, std::chrono::duration<double>(10)).is_ok());
  completer.join();
  std::vector<int64_t> shape;
  REQUIRE(t.inspect(h, [&](const FinishedOp& op) {
             shape = op.output.shape;
             return common::Status::ok();
           }).is_ok());
  CHECK(shape == std::vector<int64_t>{2, 3});
}

TEST_CASE("handle table: release and discard", "[handle_table]") {
  HandleTable t;
  int64_t h = t.create();
  auto s = t.release(h);
  CHECK(s.code() == StatusCode::kFailedPrecondition);
  CHECK(t.inspect(h, [](const FinishedOp&) { return common::Status::ok(); }).code() ==
        StatusCode::kFailedPrecondition);
  t.complete(h, common::Status::ok());
  CHECK(t.release(h).is_ok());
  CHECK(t.release(h).code() == StatusCode::kNotFound);
  CHECK(t.wait(h, std::nullopt).code() == StatusCode::kNotFound);
  CHECK(t.size() == 0);

  int64_t d = t.create();
  t.discard(d);
  CHECK(t.poll(d).status().code() == StatusCode::kNotFound);
}

TEST_CASE("handle table: a group completes at once", "[handle_table]") {
  HandleTable t;
  std::vector<HandleTable::Completion> group(3);
  for (auto& c : group) c.id = t.create();
  group[1].status = common::invalid_argument("bad");
  std::thread waiter([&] {
    CHECK(t.wait(group[0].id, std::chrono::duration<double>(10)).is_ok());
    // Every other member is done by the time the first one is.
    CHECK(t.poll(group[2].id).value());
  });
  std::this_thread::sleep_for(20ms);
  int64_t bad = group[1].id;
  t.complete_all(group);
  waiter.join();
  CHECK(t.wait(bad, std::nullopt).code() == StatusCode::kInvalidArgument);
}

}  // namespace hvd::runtime::engine
