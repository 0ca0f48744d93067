// Where a Slurm step's ranks reach rank 0's node (runtime/discovery/slurm_node_address.h):
// SLURM_NODE_ALIASES, then the NodeAddr Slurm reports, then the name; how
// detect_launcher uses that; and the helper that runs scontrol.
#include <catch2/catch.hpp>

#include <chrono>
#include <optional>
#include <string>
#include <vector>

#include "tests/unit/runtime/fake_env.h"
#include "runtime/discovery/command_output.h"
#include "runtime/discovery/launcher_env.h"
#include "runtime/discovery/slurm_node_address.h"

namespace hvd::runtime {

using testing::Env;
using testing::lookup_in;
using std::chrono::milliseconds;

namespace {

// Rank `rank` of a step of 4 tasks on nodes n1 and n2 (names that resolve nowhere).
Env two_nodes(int rank) {
  return {{"SLURM_PROCID", std::to_string(rank)},
          {"SLURM_NTASKS", "4"},
          {"SLURM_LOCALID", std::to_string(rank % 2)},
          {"SLURM_NODEID", std::to_string(rank / 2)},
          {"SLURM_STEP_NUM_NODES", "2"},
          {"SLURM_STEP_NODELIST", "n[1-2]"},
          {"SLURM_STEP_TASKS_PER_NODE", "2(x2)"},
          {"SLURMD_NODENAME", rank < 2 ? "n1" : "n2"},
          {"SLURM_JOB_ID", "12"},
          {"SLURM_STEP_ID", "0"}};
}

// A fake Slurm: NodeAddr of n1 and n2, and the nodes it was asked about.
struct FakeSlurm {
  std::vector<std::string> asked;
  NodeAddrQuery query() {
    return [this](const std::string& node) -> std::optional<std::string> {
      asked.push_back(node);
      if (node == "n1") return std::string("10.78.0.11");
      if (node == "n2") return std::string("10.78.0.12");
      return std::nullopt;
    };
  }
};

LauncherWorld world_of(const Env& env, const NodeAddrQuery& query) {
  auto world = detect_launcher(lookup_in(env), query);
  INFO(world.status().message());
  REQUIRE(world.is_ok());
  REQUIRE(world->has_value());
  return **world;
}

}  // namespace

TEST_CASE("slurm node address: SLURM_NODE_ALIASES", "[slurm_node_address]") {
  const char aliases[] = "ec0:1.2.3.4:foo,ec1:[2001:db8::5]:bar,ec2:10.0.0.9:ec2";
  CHECK(slurm_alias_address(aliases, "ec0") == "1.2.3.4");
  CHECK(slurm_alias_address(aliases, "ec1") == "2001:db8::5");
  CHECK(slurm_alias_address(aliases, "ec2") == "10.0.0.9");
  CHECK_FALSE(slurm_alias_address(aliases, "ec").has_value());
  CHECK_FALSE(slurm_alias_address(aliases, "foo").has_value());  // a hostname, not a node name
  CHECK_FALSE(slurm_alias_address("(null)", "ec0").has_value());
  CHECK_FALSE(slurm_alias_address("", "ec0").has_value());
  CHECK_FALSE(slurm_alias_address("ec0", "ec0").has_value());
  CHECK_FALSE(slurm_alias_address("ec0::foo", "ec0").has_value());
  CHECK_FALSE(slurm_alias_address("ec0:[::1:foo", "ec0").has_value());
  CHECK(slurm_alias_address("ec0:[::1:foo,ec0:1.1.1.1:x", "ec0") == "1.1.1.1");
}

TEST_CASE("slurm node address: scontrol's NodeAddr", "[slurm_node_address]") {
  const std::string line =
      "NodeName=h1 Arch=x86_64 CoresPerSocket=1 CPUAlloc=0 CPUTot=4 NodeAddr=10.78.0.11 "
      "NodeHostName=h1 Version=22.05.8 OS=Linux Partitions=debug\n";
  CHECK(scontrol_node_addr(line, "h1") == "10.78.0.11");
  CHECK_FALSE(scontrol_node_addr(line, "h2").has_value());  // another node's record
  CHECK(scontrol_node_addr("NodeName=h2 NodeAddr=h2 State=IDLE", "h2") == "h2");
  CHECK_FALSE(scontrol_node_addr("NodeName=h2 State=IDLE", "h2").has_value());
  CHECK_FALSE(scontrol_node_addr("NodeName=h2 NodeAddr= State=IDLE", "h2").has_value());
  CHECK_FALSE(scontrol_node_addr("NodeName=h2 NodeAddr=(null)", "h2").has_value());
  CHECK_FALSE(scontrol_node_addr("Node h2 not found", "h2").has_value());
  CHECK_FALSE(scontrol_node_addr("", "h2").has_value());
  // Only whole tokens count.
  CHECK_FALSE(scontrol_node_addr("NodeName=h2 XNodeAddr=1.2.3.4", "h2").has_value());
}

TEST_CASE("slurm node address: the choice", "[slurm_node_address]") {
  FakeSlurm slurm;
  auto a = choose_slurm_node_address("n1", "SLURM_STEP_NODELIST", "n1:10.9.0.1:n1", slurm.query());
  CHECK(a.host == "10.9.0.1");
  CHECK(a.origin ==
        "the address SLURM_NODE_ALIASES gives Slurm node n1, the first of SLURM_STEP_NODELIST");
  CHECK(slurm.asked.empty());  // the environment first: no scontrol

  a = choose_slurm_node_address("n1", "SLURM_NODELIST", "n7:10.9.0.7:n7", slurm.query());
  CHECK(a.host == "10.78.0.11");
  CHECK(a.origin == "the NodeAddr of Slurm node n1, the first of SLURM_NODELIST");
  CHECK(slurm.asked == std::vector<std::string>{"n1"});

  a = choose_slurm_node_address("n9", "SLURM_STEP_NODELIST", nullptr, slurm.query());
  CHECK(a.host == "n9");
  CHECK(a.origin == "Slurm node n9, the first of SLURM_STEP_NODELIST, by name: Slurm gave no "
                    "address for it");
  a = choose_slurm_node_address("n1", "SLURM_STEP_NODELIST", nullptr, {});
  CHECK(a.host == "n1");
}

TEST_CASE("slurm node address: a step on several nodes meets at rank 0's NodeAddr",
          "[slurm_node_address][launcher_env]") {
  FakeSlurm slurm;
  for (int rank = 0; rank < 4; ++rank) {
    LauncherWorld w = world_of(two_nodes(rank), slurm.query());
    CHECK(w.rendezvous_host == "10.78.0.11");
    CHECK(w.rendezvous_origin == "the NodeAddr of Slurm node n1, the first of SLURM_STEP_NODELIST");
    CHECK(w.host == (rank < 2 ? "n1" : "n2"));
  }
  CHECK(slurm.asked == std::vector<std::string>(4, "n1"));  // rank 0's node, by every rank

  // No query: the name.
  CHECK(world_of(two_nodes(1), {}).rendezvous_host == "n1");
  // The aliases come first.
  Env env = two_nodes(3);
  env["SLURM_NODE_ALIASES"] = "n1:10.5.0.1:n1,n2:10.5.0.2:n2";
  CHECK(world_of(env, slurm.query()).rendezvous_host == "10.5.0.1");
  CHECK(slurm.asked.size() == 4);
}

TEST_CASE("slurm node address: overrides and one node ask Slurm nothing",
          "[slurm_node_address][launcher_env]") {
  FakeSlurm slurm;
  Env env = two_nodes(2);
  env["HVD_RENDEZVOUS_HOST"] = "10.1.1.1";
  LauncherWorld w = world_of(env, slurm.query());
  CHECK(w.rendezvous_host == "10.1.1.1");
  CHECK(w.rendezvous_origin == "HVD_RENDEZVOUS_HOST");
  env = two_nodes(2);
  env["HVD_RENDEZVOUS_ADDR"] = "head:4000";
  CHECK(world_of(env, slurm.query()).rendezvous_origin == "HVD_RENDEZVOUS_ADDR");
  // The whole step on one node: loopback.
  env = {{"SLURM_PROCID", "1"}, {"SLURM_NTASKS", "2"}, {"SLURM_STEP_NODELIST", "n2"},
         {"SLURMD_NODENAME", "n2"}};
  w = world_of(env, slurm.query());
  CHECK(w.rendezvous_host == "127.0.0.1");
  CHECK(w.host == "n2");
  CHECK(slurm.asked.empty());
}

TEST_CASE("slurm node address: the token comes from the node's name, not the address found",
          "[slurm_node_address][launcher_env]") {
  // A rank whose query failed (it meets at the name) still derives the token
  // of those that found the NodeAddr.
  FakeSlurm slurm;
  const std::string token = world_of(two_nodes(0), slurm.query()).job_token;
  CHECK(world_of(two_nodes(3), {}).job_token == token);
  Env env = two_nodes(0);
  env["SLURM_STEP_NODELIST"] = "n[2-3]";
  CHECK(world_of(env, slurm.query()).job_token != token);
}

TEST_CASE("command output: output, failures, timeout", "[slurm_node_address]") {
  auto out = command_output({"sh", "-c", "echo NodeName=x; echo NodeAddr=y >&2"}, milliseconds(10000));
  REQUIRE(out.is_ok());
  CHECK(out.value() == "NodeName=x\n");  // stderr is dropped

  auto failed = command_output({"sh", "-c", "exit 3"}, milliseconds(10000));
  REQUIRE_FALSE(failed.is_ok());
  CHECK(failed.status().message() == "'sh -c exit 3' exited with 3");

  auto missing = command_output({"hvd-no-such-command"}, milliseconds(10000));
  REQUIRE_FALSE(missing.is_ok());
  CHECK(missing.status().code() == common::StatusCode::kNotFound);
  CHECK_THAT(missing.status().message(), Catch::StartsWith("cannot run 'hvd-no-such-command'"));

  const auto begin = std::chrono::steady_clock::now();
  auto slow = command_output({"sleep", "10"}, milliseconds(300));
  CHECK(std::chrono::steady_clock::now() - begin < std::chrono::seconds(5));
  REQUIRE_FALSE(slow.is_ok());
  CHECK(slow.status().code() == common::StatusCode::kTimeout);
  CHECK(slow.status().message() == "'sleep 10' did not finish within 300 ms");

  // Output past the limit is dropped, and the command still finishes.
  auto big = command_output({"sh", "-c", "head -c 200000 /dev/zero"}, milliseconds(10000));
  REQUIRE(big.is_ok());
  CHECK(big.value().size() == kMaxCommandOutput);
}

}  // namespace hvd::runtime
