#include "launcher/state_loss.h"

#include <catch2/catch.hpp>
#include <map>
#include <string>
#include <vector>

#include "launcher/cli.h"

namespace hvd::launcher {

namespace {

std::map<std::string, std::string> g_env;

const char* fake_getenv(const char* name) {
  auto it = g_env.find(name);
  return it == g_env.end() ? nullptr : it->second.c_str();
}

CliOutcome parse(const std::vector<std::string>& args) {
  return parse_command_line(args, fake_getenv);
}

}  // namespace

TEST_CASE("state loss: --on-state-loss is restart by default, fail by flag or variable",
          "[state_loss]") {
  g_env.clear();
  const std::vector<std::string> job = {"-np", "2", "--min-np", "2", "--max-np", "2", "w"};
  auto plain = parse(job);
  REQUIRE(std::holds_alternative<LaunchOptions>(plain));
  CHECK(on_state_loss(std::get<LaunchOptions>(plain).settings).value() == OnStateLoss::kRestart);

  std::vector<std::string> failing = {"--on-state-loss", "fail"};
  failing.insert(failing.end(), job.begin(), job.end());
  auto flagged = parse(failing);
  REQUIRE(std::holds_alternative<LaunchOptions>(flagged));
  CHECK(on_state_loss(std::get<LaunchOptions>(flagged).settings).value() == OnStateLoss::kFail);

  g_env["HVD_ON_STATE_LOSS"] = "fail";
  auto from_env = parse(job);
  REQUIRE(std::holds_alternative<LaunchOptions>(from_env));
  CHECK(on_state_loss(std::get<LaunchOptions>(from_env).settings).value() == OnStateLoss::kFail);
  g_env.clear();
}

TEST_CASE("state loss: a bad --on-state-loss is a usage error naming it", "[state_loss]") {
  g_env.clear();
  auto bad = parse({"-np", "2", "--min-np", "1", "--on-state-loss", "resume", "w"});
  auto* exit = std::get_if<CliExit>(&bad);
  REQUIRE(exit != nullptr);
  CHECK(exit->code == 2);
  CHECK(exit->err == "hvdrun: error: --on-state-loss: 'resume' is not restart or fail\n");

  g_env["HVD_ON_STATE_LOSS"] = "Restart";
  auto env = parse({"-np", "2", "w"});
  exit = std::get_if<CliExit>(&env);
  REQUIRE(exit != nullptr);
  CHECK(exit->code == 2);
  CHECK(exit->err == "hvdrun: error: HVD_ON_STATE_LOSS: 'Restart' is not restart or fail\n");
  g_env.clear();
}

TEST_CASE("state loss: the line names the commit, its holders and where the job goes on",
          "[state_loss]") {
  daemon::CommitLedger::Loss both{12, {0, 1}, 0, 3};
  CHECK(describe_loss(both, OnStateLoss::kRestart) ==
        "commit 12 (the last, held by ranks 0, 1) was lost with them; the job starts again "
        "from commit 0 (the start)");
  CHECK(describe_loss(both, OnStateLoss::kFail) ==
        "commit 12 (the last, held by ranks 0, 1) was lost with them; ending the job "
        "(--on-state-loss fail)");
  daemon::CommitLedger::Loss one{9, {2}, 8, 4};
  CHECK(describe_loss(one, OnStateLoss::kRestart) ==
        "commit 9 (the last, held by rank 2) was lost with it; the job starts again from "
        "commit 8");
}

}  // namespace hvd::launcher
