#include <catch2/catch.hpp>

#include <future>
#include <thread>

#include "daemon/rendezvous/kv_store.h"
#include "tests/unit/daemon/test_util.h"

using namespace std::chrono_literals;
using hvd::common::StatusCode;
using hvd::daemon::KvStore;
using hvd::daemon::test::value_of;

TEST_CASE("KvStore set then get returns the values in key order") {
  KvStore store;
  REQUIRE(store.set("a", "1").is_ok());
  REQUIRE(store.set("b", std::string("two\0bytes", 9)).is_ok());
  auto got = store.get({"b", "a"}, 100ms);
  REQUIRE(got.is_ok());
  REQUIRE(got->size() == 2);
  CHECK((*got)[0] == std::string("two\0bytes", 9));
  CHECK((*got)[1] == "1");
  REQUIRE(store.set("a", "3").is_ok());  // overwrite
  CHECK(store.get({"a"}, 100ms)->at(0) == "3");
}

TEST_CASE("KvStore get waits for a key set later by another thread") {
  KvStore store;
  auto waiter = std::async(std::launch::async, [&] { return store.get({"late"}, 5000ms); });
  std::this_thread::sleep_for(50ms);
  REQUIRE(store.set("late", "here").is_ok());
  REQUIRE(waiter.wait_for(5s) == std::future_status::ready);
  auto got = waiter.get();
  REQUIRE(got.is_ok());
  CHECK(got->at(0) == "here");
}

TEST_CASE("KvStore get times out naming the missing keys") {
  KvStore store;
  REQUIRE(store.set("present", "x").is_ok());
  const auto start = std::chrono::steady_clock::now();
  auto got = store.get({"present", "missing1", "missing2"}, 200ms);
  const auto elapsed = std::chrono::steady_clock::now() - start;
  REQUIRE_FALSE(got.is_ok());
  CHECK(got.status().code() == StatusCode::kTimeout);
  CHECK(got.status().message() == "timed out after 200 ms waiting for keys: missing1, missing2");
  CHECK(elapsed >= 200ms);
  CHECK(elapsed < 1500ms);
}

TEST_CASE("KvStore get gives up when its cancel check says so") {
  KvStore store;
  std::atomic<bool> cancelled{false};
  auto waiter = std::async(std::launch::async, [&] {
    return store.get({"never"}, 10000ms, [&] { return cancelled.load(); });
  });
  std::this_thread::sleep_for(50ms);
  cancelled = true;
  REQUIRE(waiter.wait_for(2s) == std::future_status::ready);
  CHECK(waiter.get().status().code() == StatusCode::kCancelled);
}

TEST_CASE("KvStore add counts from zero and rejects non-integers") {
  KvStore store;
  CHECK(value_of(store.add("n", 0)) == 0);
  CHECK(value_of(store.add("c", 5)) == 5);
  CHECK(value_of(store.add("c", -2)) == 3);
  CHECK(store.get({"c"}, 10ms)->at(0) == "3");
  REQUIRE(store.set("text", "abc").is_ok());
  auto bad = store.add("text", 1);
  REQUIRE_FALSE(bad.is_ok());
  CHECK(bad.status().code() == StatusCode::kInvalidArgument);
  CHECK(bad.status().message().find("'text'") != std::string::npos);
  REQUIRE(store.set("partial", "12x").is_ok());
  CHECK_FALSE(store.add("partial", 1).is_ok());
}

TEST_CASE("KvStore add wakes a get waiting for the counter") {
  KvStore store;
  auto waiter = std::async(std::launch::async, [&] { return store.get({"counter"}, 5000ms); });
  std::this_thread::sleep_for(20ms);
  REQUIRE(store.add("counter", 1).is_ok());
  REQUIRE(waiter.wait_for(5s) == std::future_status::ready);
  CHECK(waiter.get()->at(0) == "1");
}

TEST_CASE("KvStore check never waits and remove reports whether the key existed") {
  KvStore store;
  CHECK_FALSE(value_of(store.check({"k"})));
  REQUIRE(store.set("k", "v").is_ok());
  CHECK(value_of(store.check({"k"})));
  CHECK_FALSE(value_of(store.check({"k", "other"})));
  CHECK(value_of(store.remove("k")));
  CHECK_FALSE(value_of(store.remove("k")));
  CHECK_FALSE(value_of(store.check({"k"})));
}

TEST_CASE("KvStore close wakes a waiting get with kCancelled and fails later calls") {
  KvStore store;
  auto waiter = std::async(std::launch::async, [&] { return store.get({"never"}, 10000ms); });
  std::this_thread::sleep_for(50ms);
  store.close();
  REQUIRE(waiter.wait_for(2s) == std::future_status::ready);
  CHECK(waiter.get().status().code() == StatusCode::kCancelled);
  CHECK(store.set("a", "b").code() == StatusCode::kCancelled);
  CHECK(store.get({"a"}, 10ms).status().code() == StatusCode::kCancelled);
  CHECK(store.add("a", 1).status().code() == StatusCode::kCancelled);
  CHECK(store.check({"a"}).status().code() == StatusCode::kCancelled);
  CHECK(store.remove("a").status().code() == StatusCode::kCancelled);
}

TEST_CASE("KvStore abort_prefix fails waiting and later gets of missing keys under it") {
  KvStore store;
  REQUIRE(store.set("round2/cpu/addr/0", "a").is_ok());
  auto waiter = std::async(std::launch::async, [&] {
    return store.get({"round2/cpu/addr/0", "round2/cpu/addr/1"}, 10000ms);
  });
  std::this_thread::sleep_for(50ms);
  const auto start = std::chrono::steady_clock::now();
  store.abort_prefix("round2/", "round 2 lost slot(s) 1");
  REQUIRE(waiter.wait_for(2s) == std::future_status::ready);
  CHECK(std::chrono::steady_clock::now() - start < 1s);
  auto got = waiter.get();
  CHECK(got.status().code() == StatusCode::kAborted);
  CHECK(got.status().message() ==
        "key 'round2/cpu/addr/1' will not come: round 2 lost slot(s) 1");
  // Keys already there are served; other prefixes are untouched.
  CHECK(store.get({"round2/cpu/addr/0"}, 100ms).is_ok());
  CHECK(store.get({"round3/x"}, 50ms).status().code() == StatusCode::kTimeout);
  CHECK(store.get({"round2/late"}, 5000ms).status().code() == StatusCode::kAborted);
  // The round's clean-up forgets the abort with its keys.
  store.remove_prefix("round2/");
  CHECK(store.get({"round2/late"}, 50ms).status().code() == StatusCode::kTimeout);
}
