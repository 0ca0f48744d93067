// Least privilege of rendezvous credentials (issue 29 item 3): the workers'
// credentials (worker_credentials.h), what each may do (worker_rights.h) and
// the store's owners and quotas (kv_store.h).
#include <catch2/catch.hpp>

#include <regex>

#include "daemon/rendezvous/hot_spares.h"
#include "daemon/rendezvous/kv_store.h"
#include "daemon/rendezvous/worker_credentials.h"
#include "daemon/rendezvous/worker_rights.h"
#include "tests/unit/daemon/test_util.h"

using hvd::common::StatusCode;
using hvd::daemon::Caller;
using hvd::daemon::HotSpares;
using hvd::daemon::JobCredentials;
using hvd::daemon::KvStore;
using hvd::daemon::worker_credential;
using hvd::daemon::WorkerRights;
using hvd::daemon::test::value_of;

namespace {

constexpr char kToken[] = "0123456789abcdef0123456789abcdef0123456789abcdef0123456789abcdef";

}  // namespace

TEST_CASE("worker credentials: one per id, made from the job's token") {
  const std::string three = worker_credential(kToken, 3);
  CHECK(std::regex_match(three, std::regex("slot-3\\.[0-9a-f]{64}")));
  CHECK(worker_credential(kToken, 3) == three);
  CHECK(worker_credential(kToken, 4) != three);
  CHECK(worker_credential("another job's token", 3) != three);
  CHECK(three.find(kToken) == std::string::npos);
}

TEST_CASE("JobCredentials tells the job's token and each worker's credential apart") {
  JobCredentials credentials(kToken);
  CHECK(credentials.caller(kToken)->job());
  for (int id : {0, 1, 7, 65536}) {
    auto caller = credentials.caller(worker_credential(kToken, id));
    REQUIRE(caller);
    CHECK(caller->id == id);
    // Twice: the second time from what it remembers.
    CHECK(credentials.caller(worker_credential(kToken, id))->id == id);
  }
  const std::string three = worker_credential(kToken, 3);
  const std::string mac = three.substr(three.find('.'));
  SECTION("refused") {
    std::vector<std::string> wrong = {
        "",
        "slot-",
        "slot-3",
        "slot-3.",
        "slot-4" + mac,              // another id with slot 3's mac
        "slot-03" + mac,             // not the text the mac covers
        "slot-+3" + mac,
        "slot--3" + mac,
        "slot-99999999999" + mac,    // over an int
        three.substr(0, three.size() - 1),
        three + "0",
        worker_credential("another job's token", 3),
        std::string(kToken) + "x",
        "Slot-3" + mac,
    };
    std::string flipped = three;
    flipped.back() = flipped.back() == '0' ? '1' : '0';
    wrong.push_back(flipped);
    for (const auto& credential : wrong) {
      INFO(credential);
      CHECK_FALSE(credentials.caller(credential));
    }
  }
  SECTION("a wrong credential of a known id stays wrong") {
    REQUIRE(credentials.caller(three));
    std::string flipped = three;
    flipped.back() = flipped.back() == '0' ? '1' : '0';
    CHECK_FALSE(credentials.caller(flipped));
    CHECK(credentials.caller(three)->id == 3);
  }
}

TEST_CASE("WorkerRights: a worker joins and heartbeats only as its slot") {
  HotSpares spares;
  WorkerRights rights(2, spares);
  const Caller job;
  const Caller slot0{0};
  const Caller slot1{1};
  CHECK_FALSE(rights.may_join(job, 0));
  CHECK_FALSE(rights.may_join(job, -1));
  CHECK_FALSE(rights.may_join(slot1, 1));
  CHECK(*rights.may_join(slot1, 0) ==
        "the credential of slot 1 may join only for its own slot, not for slot 0");
  CHECK(rights.may_join(slot1, -1));
  CHECK_FALSE(rights.may_heartbeat(job, 1));
  CHECK_FALSE(rights.may_heartbeat(slot0, 0));
  CHECK(*rights.may_heartbeat(slot1, 0) ==
        "the credential of slot 1 may send heartbeats only for its own slot, not for slot 0");
}

TEST_CASE("WorkerRights: a spare acts for the slot it was promoted into, and only then") {
  HotSpares spares;
  WorkerRights rights(2, spares);  // --max-np 2: spares from id 2
  const Caller spare{5};
  CHECK_FALSE(rights.slot_of(spare));
  CHECK_FALSE(rights.may_await_promotion(spare, 5));
  CHECK(*rights.may_await_promotion(spare, 6) ==
        "the credential of spare 5 (not promoted) may not wait for the promotion of spare 6");
  CHECK(*rights.may_await_promotion(Caller{1}, 5) ==
        "the credential of slot 1 may not wait for the promotion of spare 5");
  CHECK(*rights.may_join(spare, 1) ==
        "the credential of spare 5 (not promoted) may join only for its own slot, not for slot 1");
  CHECK(rights.may_write(spare, "round0/cpu/1"));
  spares.promote(5, 1);
  CHECK(rights.slot_of(spare) == 1);
  CHECK_FALSE(rights.may_join(spare, 1));
  CHECK_FALSE(rights.may_heartbeat(spare, 1));
  CHECK(*rights.may_heartbeat(spare, 0) ==
        "the credential of spare 5 (promoted into slot 1) may send heartbeats only for its own "
        "slot, not for slot 0");
  rights.joined(1, 3);
  CHECK_FALSE(rights.may_write(spare, "round3/cpu/1"));
  // Ids at or above the slots are spares only: raising --max-np makes them slots.
  rights.set_slots(8);
  CHECK(rights.slot_of(spare) == 5);
}

TEST_CASE("WorkerRights: a worker writes only keys of the round its slot joined last") {
  HotSpares spares;
  WorkerRights rights(2, spares);
  const Caller slot1{1};
  CHECK(*rights.may_write(slot1, "round0/cpu/1") ==
        "the credential of slot 1 may write no key before its slot has joined a round "
        "('round0/cpu/1')");
  rights.joined(1, 0);
  CHECK_FALSE(rights.may_write(slot1, "round0/cpu/1"));
  CHECK_FALSE(rights.may_write(slot1, "round0/ps1/h/local0/shm/segment"));
  CHECK(*rights.may_write(slot1, "round1/cpu/1") ==
        "the credential of slot 1 may write only keys of its round, under 'round0/', not "
        "'round1/cpu/1'");
  CHECK(rights.may_write(slot1, "hvd/finished"));
  CHECK(rights.may_write(slot1, "round0"));
  CHECK(*rights.may_write(slot1, "round0/lost") ==
        "'round0/lost' is the rendezvous service's own key: no worker may write it");
  CHECK(*rights.may_write(slot1, std::string("x\n\x1b", 3)) ==
        "the credential of slot 1 may write only keys of its round, under 'round0/', not "
        "'x\\x0a\\x1b'");
  rights.joined(1, 1);  // the next round: the last one's keys are no longer its
  CHECK(rights.may_write(slot1, "round0/cpu/1"));
  CHECK_FALSE(rights.may_write(slot1, "round1/cpu/1"));
  CHECK_FALSE(rights.may_write(Caller{}, "round0/lost"));
  CHECK_FALSE(rights.may_write(Caller{}, "anything"));
}

TEST_CASE("WorkerRights: a large refused Set bars the slot's Set calls until its next round") {
  HotSpares spares;
  WorkerRights rights(2, spares);
  const Caller slot1{1};
  rights.joined(1, 0);
  rights.refused(slot1, WorkerRights::kLargeWriteBytes, "small enough");
  rights.refused(Caller{}, 1 << 20, "the job is never barred");
  CHECK_FALSE(rights.barred(slot1));
  CHECK_FALSE(rights.barred(Caller{}));
  rights.refused(slot1, 1 << 20, "over its quota");
  rights.refused(slot1, 2 << 20, "the first reason stays");
  CHECK(*rights.barred(slot1) ==
        "the Set calls of slot 1 are refused until it joins another round: a Set of 1048576 "
        "bytes was refused (over its quota)");
  CHECK_FALSE(rights.barred(Caller{0}));
  // A spare promoted into the slot is the slot's worker too.
  spares.promote(7, 1);
  CHECK(rights.barred(Caller{7}));
  rights.joined(1, 1);
  CHECK_FALSE(rights.barred(slot1));
}

TEST_CASE("KvStore: a slot changes and deletes only the keys it wrote first") {
  KvStore store;
  REQUIRE(store.set_by(0, "round0/cpu/0", "rank 0's").is_ok());
  auto refused = store.set_by(1, "round0/cpu/0", "forged");
  CHECK(refused.code() == StatusCode::kUnauthenticated);
  CHECK(refused.message() ==
        "key 'round0/cpu/0' belongs to slot 0: slot 1 may change only keys it wrote");
  CHECK(store.remove_by(1, "round0/cpu/0").status().code() == StatusCode::kUnauthenticated);
  CHECK(value_of(store.get({"round0/cpu/0"}, std::chrono::milliseconds(0)))[0] == "rank 0's");
  // Its own: changed, counted, deleted.
  REQUIRE(store.set_by(0, "round0/cpu/0", "again").is_ok());
  CHECK(value_of(store.add_by(1, "round0/n", 2)) == 2);
  CHECK(store.add_by(0, "round0/n", 1).status().code() == StatusCode::kUnauthenticated);
  CHECK(value_of(store.add_by(1, "round0/n", 3)) == 5);
  // The job's keys are no slot's; the job may change anyone's.
  REQUIRE(store.set("round0/lost", "why").is_ok());
  CHECK(store.set_by(1, "round0/lost", "no").message() ==
        "key 'round0/lost' belongs to the job: slot 1 may change only keys it wrote");
  REQUIRE(store.set("round0/cpu/0", "job's").is_ok());
  CHECK(value_of(store.remove("round0/n")));
  CHECK(value_of(store.remove_by(0, "round0/cpu/0")));
  CHECK_FALSE(value_of(store.remove_by(1, "round0/cpu/0")));
  // A key deleted is anyone's to write again.
  CHECK(store.set_by(1, "round0/cpu/0", "now 1's").is_ok());
}

TEST_CASE("KvStore quotas bound the store in all and per slot, naming the quota") {
  KvStore store;
  const size_t entry = KvStore::kEntryBytes;
  store.set_quotas({.bytes = 10000, .keys = 4}, {.bytes = 2000 + entry, .keys = 2});
  // Keys of 1 byte: "a" with 999 bytes costs 1000 + kEntryBytes.
  REQUIRE(store.set_by(1, "a", std::string(999, 'x')).is_ok());
  REQUIRE(store.set_by(1, "b", std::string(10, 'x')).is_ok());
  CHECK(store.usage_of(1).keys == 2);
  CHECK(store.usage_of(1).bytes == 1000 + 11 + 2 * entry);
  auto over = store.set_by(1, "c", "");
  CHECK(over.code() == StatusCode::kFailedPrecondition);
  CHECK(over.message() ==
        "slot 1's keys would be 3 keys, over the store quota of a slot (2 keys)");
  over = store.set_by(1, "b", std::string(1000, 'x'));
  CHECK(over.code() == StatusCode::kFailedPrecondition);
  CHECK(over.message() == "slot 1's keys would take " + std::to_string(2001 + 2 * entry) +
                              " bytes of the rendezvous store, over the store quota of a slot (" +
                              std::to_string(2000 + entry) + " bytes)");
  // Shrinking is always allowed, and frees room.
  REQUIRE(store.set_by(1, "a", "").is_ok());
  REQUIRE(store.set_by(1, "b", std::string(1000, 'x')).is_ok());
  // The job's quota: every owner together.
  REQUIRE(store.set_by(2, "d", std::string(1990, 'x')).is_ok());
  REQUIRE(store.set("e", "").is_ok());
  over = store.set("f", "");
  CHECK(over.message() == "the job's keys would be 5 keys, over the store quota of the job (4 keys)");
  CHECK(store.usage().keys == 4);
  over = store.set("e", std::string(10000, 'x'));
  CHECK(over.message() == "the job's keys would take " +
                              std::to_string(store.usage().bytes + 10000) +
                              " bytes of the rendezvous store, over the store quota of the job "
                              "(10000 bytes)");
  // A refused write leaves nothing behind, and deleting makes room again.
  CHECK_FALSE(value_of(store.check({"f"})));
  CHECK(value_of(store.remove_by(2, "d")));
  CHECK(store.usage_of(2).keys == 0);
  REQUIRE(store.set("f", "").is_ok());
  // A round's keys deleted together are counted off their owners.
  CHECK(store.remove_prefix("") == 4);
  CHECK(store.usage().bytes == 0);
  CHECK(store.usage_of(1).bytes == 0);
}
