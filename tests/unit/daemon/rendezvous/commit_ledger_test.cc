#include "daemon/rendezvous/commit_ledger.h"

#include <catch2/catch.hpp>

namespace hvd::daemon {

TEST_CASE("commit ledger: a round restarted from the start after every holder died",
          "[commit_ledger]") {
  CommitLedger ledger;
  ledger.restarted(0, 0, 0);  // the first round: a fresh start is no loss
  ledger.restarted(1, 0, 0);
  for (int64_t commit = 1; commit <= 12; ++commit) {
    ledger.held(0, 0, commit);
    ledger.held(1, 0, commit);
  }
  CHECK(ledger.take_losses().empty());
  CHECK(ledger.highest() == 12);
  // Both workers died; two spares took their slots and started from nothing.
  ledger.restarted(1, 1, 0);
  ledger.restarted(0, 1, 0);
  auto losses = ledger.take_losses();
  REQUIRE(losses.size() == 1);  // once, not per member
  CHECK(losses[0].commit == 12);
  CHECK(losses[0].holders == std::vector<int>{0, 1});
  CHECK(losses[0].restart == 0);
  CHECK(losses[0].round == 1);
  CHECK(ledger.take_losses().empty());
  // The job goes on from there: its new commits are no loss either.
  ledger.held(0, 1, 1);
  ledger.held(1, 1, 1);
  ledger.restarted(0, 1, 0);  // a beat still carrying the restart
  CHECK(ledger.take_losses().empty());
  CHECK(ledger.highest() == 1);
}

TEST_CASE("commit ledger: a survivor holding the last commit is no loss", "[commit_ledger]") {
  CommitLedger ledger;
  ledger.held(0, 0, 5);
  ledger.held(1, 0, 5);
  ledger.restarted(0, 1, 5);  // rank 1 died; its replacement took slot 1
  ledger.restarted(1, 1, 5);
  CHECK(ledger.take_losses().empty());
  // A worker ahead of the others by one commit survives: the round
  // restarts from its commit.
  ledger.held(0, 1, 6);
  ledger.held(1, 1, 7);
  ledger.restarted(0, 2, 7);
  CHECK(ledger.take_losses().empty());
}

TEST_CASE("commit ledger: a lone holder that died names its commit and the survivors' one",
          "[commit_ledger]") {
  CommitLedger ledger;
  ledger.held(0, 3, 8);
  ledger.held(1, 3, 8);
  ledger.held(2, 3, 9);  // only slot 2 got to commit 9, then died
  ledger.restarted(0, 4, 8);
  auto losses = ledger.take_losses();
  REQUIRE(losses.size() == 1);
  CHECK(losses[0].commit == 9);
  CHECK(losses[0].holders == std::vector<int>{2});
  CHECK(losses[0].restart == 8);
}

TEST_CASE("commit ledger: holders over several rounds without a sync between them",
          "[commit_ledger]") {
  CommitLedger ledger;
  ledger.held(0, 0, 4);
  ledger.held(1, 0, 4);
  // Round 1 formed without a sync (hosts were only removed); slot 3 reports
  // commit 4 in it. Round 2 starts from nothing.
  ledger.held(3, 1, 4);
  ledger.restarted(4, 2, 0);
  auto losses = ledger.take_losses();
  REQUIRE(losses.size() == 1);
  CHECK(losses[0].commit == 4);
  CHECK(losses[0].holders == std::vector<int>{0, 1, 3});
}

TEST_CASE("commit ledger: reports of rounds before the last sync are stale", "[commit_ledger]") {
  CommitLedger ledger;
  ledger.restarted(0, 2, 0);
  // A dead worker's last beat of round 1, still on its way, then a late sync
  // report of round 1: neither counts.
  ledger.held(1, 1, 30);
  ledger.restarted(1, 1, 0);
  CHECK(ledger.highest() == 0);
  ledger.restarted(0, 3, 0);
  CHECK(ledger.take_losses().empty());
  // A member's sync report late behind another member's next commit, in the
  // same round, is no loss either.
  ledger.held(1, 3, 1);
  ledger.restarted(0, 3, 0);
  CHECK(ledger.take_losses().empty());
}

TEST_CASE("commit ledger: a second loss later in the job is told again", "[commit_ledger]") {
  CommitLedger ledger;
  ledger.held(0, 0, 3);
  ledger.restarted(0, 1, 0);
  ledger.held(0, 1, 2);
  ledger.restarted(0, 2, 0);
  auto losses = ledger.take_losses();
  REQUIRE(losses.size() == 2);
  CHECK(losses[0].commit == 3);
  CHECK(losses[0].round == 1);
  CHECK(losses[1].commit == 2);
  CHECK(losses[1].round == 2);
}

}  // namespace hvd::daemon
