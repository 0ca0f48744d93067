// Foreign launchers' variables (runtime/launcher_env.h) and how read_world()
// uses them when HVD_RANK/HVD_SIZE are absent.
#include <catch2/catch.hpp>

#include <optional>
#include <string>

#include "tests/unit/runtime/fake_env.h"
#include "runtime/discovery/job_token.h"
#include "runtime/discovery/launcher_env.h"
#include "runtime/discovery/world.h"

namespace hvd::runtime {

using testing::Env;
using testing::lookup_in;

namespace {

const char kSecret[] = "a-secret-job-token";

std::optional<LauncherWorld> detect(const Env& env) {
  auto world = detect_launcher(lookup_in(env));
  INFO(world.status().message());
  REQUIRE(world.is_ok());
  return world.value();
}

LauncherWorld world_of(const Env& env) {
  auto world = detect(env);
  REQUIRE(world.has_value());
  return *world;
}

std::string error_of(const Env& env) {
  auto world = detect_launcher(lookup_in(env));
  REQUIRE_FALSE(world.is_ok());
  CHECK(world.status().code() == common::StatusCode::kInvalidArgument);
  CHECK_THAT(world.status().message(), !Catch::Contains(kSecret));
  return world.status().message();
}

Env torchrun_env() {
  return {{"RANK", "3"},         {"WORLD_SIZE", "4"},          {"LOCAL_RANK", "1"},
          {"LOCAL_WORLD_SIZE", "2"}, {"GROUP_RANK", "1"},       {"GROUP_WORLD_SIZE", "2"},
          {"MASTER_ADDR", "10.1.2.3"}, {"MASTER_PORT", "29500"}, {"TORCHELASTIC_RUN_ID", "run7"}};
}

Env openmpi_env(int rank, int size, int local_rank, int local_size) {
  return {{"OMPI_COMM_WORLD_RANK", std::to_string(rank)},
          {"OMPI_COMM_WORLD_SIZE", std::to_string(size)},
          {"OMPI_COMM_WORLD_LOCAL_RANK", std::to_string(local_rank)},
          {"OMPI_COMM_WORLD_LOCAL_SIZE", std::to_string(local_size)}};
}

// One node, `size` tasks, as srun sets them.
Env slurm_env(int rank, int size) {
  return {{"SLURM_PROCID", std::to_string(rank)},
          {"SLURM_NTASKS", std::to_string(size)},
          {"SLURM_LOCALID", std::to_string(rank)},
          {"SLURM_NODEID", "0"},
          {"SLURM_NNODES", "1"},
          {"SLURM_STEP_NODELIST", "node07"},
          {"SLURM_TASKS_PER_NODE", std::to_string(size)},
          {"SLURM_JOB_ID", "4242"},
          {"SLURM_STEP_ID", "3"}};
}

// Four nodes node[01-04] with 2, 2, 2 and 1 tasks (block distribution).
Env slurm_uneven(int rank) {
  static const int node_of[] = {0, 0, 1, 1, 2, 2, 3};
  static const int local_of[] = {0, 1, 0, 1, 0, 1, 0};
  return {{"SLURM_PROCID", std::to_string(rank)},
          {"SLURM_NTASKS", "7"},
          {"SLURM_LOCALID", std::to_string(local_of[rank])},
          {"SLURM_NODEID", std::to_string(node_of[rank])},
          {"SLURM_NNODES", "4"},
          {"SLURM_JOB_NODELIST", "node[01-04]"},
          {"SLURM_TASKS_PER_NODE", "2(x3),1"},
          {"SLURM_JOB_ID", "100"}};
}

}  // namespace

// ---- detection ----

TEST_CASE("launcher env: nothing detected without a launcher's rank", "[launcher_env]") {
  CHECK_FALSE(detect({}).has_value());
  // An salloc shell: the allocation's variables, but no task of a step.
  CHECK_FALSE(detect({{"SLURM_NTASKS", "4"}, {"SLURM_JOB_ID", "5"}}).has_value());
  CHECK_FALSE(detect({{"OMPI_MCA_ess_base_jobid", "77"}}).has_value());
  CHECK_FALSE(detect({{"MASTER_ADDR", "h"}, {"MASTER_PORT", "1"}}).has_value());
}

TEST_CASE("launcher env: the innermost launcher wins", "[launcher_env]") {
  Env env = slurm_env(0, 1);
  for (const auto& [k, v] : openmpi_env(1, 2, 1, 2)) env[k] = v;
  CHECK(world_of(env).launcher == "openmpi");  // mpirun inside an sbatch script
  for (const auto& [k, v] : torchrun_env()) env[k] = v;
  CHECK(world_of(env).launcher == "torchrun");  // srun torchrun ...
}

// ---- torchrun ----

TEST_CASE("launcher env: torchrun", "[launcher_env]") {
  LauncherWorld w = world_of(torchrun_env());
  CHECK(w.launcher == "torchrun");
  CHECK(w.rank == 3);
  CHECK(w.size == 4);
  CHECK(w.local_rank == 1);
  CHECK(w.local_size == 2);
  CHECK(w.cross_rank == 1);
  CHECK(w.cross_size == 2);
  CHECK(w.rendezvous_host == "10.1.2.3");
  CHECK(w.rendezvous_port == 29501);  // MASTER_PORT is torchrun's own store
  CHECK(w.rendezvous_addr() == "10.1.2.3:29501");
  CHECK(w.job_id == "torchrun-run7");
  CHECK(w.token_derived);
  CHECK_THAT(w.job_token, Catch::StartsWith("derived-"));
}

TEST_CASE("launcher env: torchrun without GROUP_* derives the node", "[launcher_env]") {
  Env env = torchrun_env();
  env.erase("GROUP_RANK");
  env.erase("GROUP_WORLD_SIZE");
  env["RANK"] = "5";
  env["WORLD_SIZE"] = "6";
  env["LOCAL_RANK"] = "2";
  env["LOCAL_WORLD_SIZE"] = "3";
  LauncherWorld w = world_of(env);
  CHECK(w.cross_rank == 1);
  CHECK(w.cross_size == 2);
}

TEST_CASE("launcher env: RANK/WORLD_SIZE alone is one process per host", "[launcher_env]") {
  // A Kubernetes PyTorchJob: no LOCAL_* variables, one process per pod.
  Env env{{"RANK", "2"}, {"WORLD_SIZE", "3"}, {"MASTER_ADDR", "job-master-0"},
          {"MASTER_PORT", "23456"}};
  LauncherWorld w = world_of(env);
  CHECK(w.local_rank == 0);
  CHECK(w.local_size == 1);
  CHECK(w.cross_rank == 2);
  CHECK(w.cross_size == 3);
  CHECK(w.rendezvous_addr() == "job-master-0:23457");
  CHECK(w.job_id == "torchrun-none");
}

TEST_CASE("launcher env: torchrun on one host needs no MASTER_ADDR", "[launcher_env]") {
  Env env{{"RANK", "0"}, {"WORLD_SIZE", "2"}, {"LOCAL_RANK", "0"}, {"LOCAL_WORLD_SIZE", "2"},
          {"MASTER_PORT", "29500"}};
  CHECK(world_of(env).rendezvous_addr() == "127.0.0.1:29501");
}

TEST_CASE("launcher env: a world of one needs no rendezvous", "[launcher_env]") {
  LauncherWorld w = world_of({{"RANK", "0"}, {"WORLD_SIZE", "1"}});
  CHECK(w.size == 1);
  CHECK(w.rendezvous_addr().empty());
  CHECK(w.job_token.empty());
  w = world_of({{"SLURM_PROCID", "0"}, {"SLURM_NTASKS", "1"}});
  CHECK(w.launcher == "slurm");
  CHECK(w.rendezvous_addr().empty());
}

TEST_CASE("launcher env: torchrun errors name the variable", "[launcher_env]") {
  CHECK(error_of({{"RANK", "1"}}) == "RANK='1' is set but WORLD_SIZE is not");
  CHECK(error_of({{"WORLD_SIZE", "2"}}) == "WORLD_SIZE='2' is set but RANK is not");
  CHECK(error_of({{"RANK", "abc"}, {"WORLD_SIZE", "2"}}) == "RANK='abc' is not a whole number");
  CHECK(error_of({{"RANK", "0"}, {"WORLD_SIZE", "2x"}}) == "WORLD_SIZE='2x' is not a whole number");
  CHECK(error_of({{"RANK", "0"}, {"WORLD_SIZE", "0"}}) ==
        "WORLD_SIZE='0' is not in [1, 2147483647]");
  CHECK(error_of({{"RANK", "-1"}, {"WORLD_SIZE", "2"}}) == "RANK='-1' is not in [0, 2147483647]");
  CHECK(error_of({{"RANK", "2"}, {"WORLD_SIZE", "2"}}) == "RANK='2' is not in [0, WORLD_SIZE=2)");

  Env env = torchrun_env();
  env.erase("LOCAL_WORLD_SIZE");
  CHECK(error_of(env) == "LOCAL_RANK='1' is set but LOCAL_WORLD_SIZE is not");
  env = torchrun_env();
  env["LOCAL_WORLD_SIZE"] = "8";
  CHECK(error_of(env) == "LOCAL_WORLD_SIZE='8' exceeds WORLD_SIZE=4");
  env = torchrun_env();
  env["LOCAL_RANK"] = "two";
  CHECK(error_of(env) == "LOCAL_RANK='two' is not a whole number");
  env = torchrun_env();
  env["GROUP_RANK"] = "2";
  CHECK(error_of(env) == "GROUP_RANK='2' is not in [0, 1]");
  env = torchrun_env();
  env["GROUP_WORLD_SIZE"] = "3";
  CHECK(error_of(env) ==
        "GROUP_WORLD_SIZE='3' nodes of LOCAL_WORLD_SIZE=2 processes do not make WORLD_SIZE=4");
  env = torchrun_env();
  env.erase("GROUP_WORLD_SIZE");
  env["WORLD_SIZE"] = "5";
  CHECK(error_of(env) == "WORLD_SIZE='5' is not a multiple of LOCAL_WORLD_SIZE='2'");
  env = torchrun_env();
  env.erase("MASTER_ADDR");
  CHECK_THAT(error_of(env), Catch::StartsWith("MASTER_ADDR is not set") &&
                                Catch::Contains("HVD_RENDEZVOUS_HOST"));
  env = torchrun_env();
  env.erase("MASTER_PORT");
  CHECK_THAT(error_of(env), Catch::StartsWith("MASTER_PORT is not set") &&
                                Catch::Contains("HVD_RENDEZVOUS_PORT"));
  env = torchrun_env();
  env["MASTER_PORT"] = "65535";
  CHECK(error_of(env) == "MASTER_PORT='65535' is not in [1, 65534]");
  env["MASTER_PORT"] = "http";
  CHECK(error_of(env) == "MASTER_PORT='http' is not a whole number");
}

// ---- Open MPI ----

TEST_CASE("launcher env: Open MPI on one host", "[launcher_env]") {
  LauncherWorld w = world_of(openmpi_env(1, 2, 1, 2));
  CHECK(w.launcher == "openmpi");
  CHECK(w.rank == 1);
  CHECK(w.size == 2);
  CHECK(w.local_rank == 1);
  CHECK(w.local_size == 2);
  CHECK(w.cross_rank == 0);
  CHECK(w.cross_size == 1);
  CHECK(w.rendezvous_host == "127.0.0.1");
  CHECK(w.rendezvous_port >= kForeignPortBase);
  CHECK(w.rendezvous_port < kForeignPortBase + kForeignPortRange);
  CHECK(w.job_id == "openmpi-0");
}

TEST_CASE("launcher env: Open MPI's port follows its job id", "[launcher_env]") {
  Env env = openmpi_env(0, 2, 0, 2);
  int without = world_of(env).rendezvous_port;
  env["OMPI_MCA_ess_base_jobid"] = "3473801217";
  LauncherWorld w = world_of(env);
  CHECK(w.job_id == "openmpi-3473801217");
  CHECK(w.rendezvous_port >= kForeignPortBase);
  CHECK(w.rendezvous_port < kForeignPortBase + kForeignPortRange);
  CHECK(w.rendezvous_port == world_of(env).rendezvous_port);
  env["OMPI_MCA_ess_base_jobid"] = "3473801218";
  int other = world_of(env).rendezvous_port;
  CHECK((w.rendezvous_port != without || w.rendezvous_port != other));
  env["MASTER_ADDR"] = "10.0.0.9";
  env["MASTER_PORT"] = "4000";
  CHECK(world_of(env).rendezvous_addr() == "10.0.0.9:4000");
}

TEST_CASE("launcher env: Open MPI across hosts", "[launcher_env]") {
  Env env = openmpi_env(3, 4, 1, 2);
  CHECK_THAT(error_of(env), Catch::Contains("OMPI_COMM_WORLD_LOCAL_SIZE=2 of OMPI_COMM_WORLD_SIZE=4") &&
                                Catch::Contains("set HVD_RENDEZVOUS_HOST"));
  env["HVD_RENDEZVOUS_HOST"] = "head";
  LauncherWorld w = world_of(env);
  CHECK(w.rendezvous_host == "head");
  CHECK(w.cross_rank == 1);  // provisional: the rendezvous round settles it
  CHECK(w.cross_size == 2);
}

TEST_CASE("launcher env: Open MPI errors name the variable", "[launcher_env]") {
  CHECK(error_of({{"OMPI_COMM_WORLD_RANK", "0"}}) ==
        "OMPI_COMM_WORLD_RANK='0' is set but OMPI_COMM_WORLD_SIZE is not");
  CHECK(error_of({{"OMPI_COMM_WORLD_RANK", "0"}, {"OMPI_COMM_WORLD_SIZE", "2"}}) ==
        "OMPI_COMM_WORLD_RANK='0' is set but OMPI_COMM_WORLD_LOCAL_RANK and "
        "OMPI_COMM_WORLD_LOCAL_SIZE are not");
  Env env = openmpi_env(0, 2, 0, 2);
  env["OMPI_COMM_WORLD_SIZE"] = "two";
  CHECK(error_of(env) == "OMPI_COMM_WORLD_SIZE='two' is not a whole number");
  env = openmpi_env(0, 2, 0, 2);
  env["OMPI_COMM_WORLD_LOCAL_SIZE"] = "3";
  CHECK(error_of(env) == "OMPI_COMM_WORLD_LOCAL_SIZE='3' exceeds OMPI_COMM_WORLD_SIZE=2");
  env = openmpi_env(0, 2, 0, 2);
  env["OMPI_COMM_WORLD_LOCAL_RANK"] = "2";
  CHECK(error_of(env) == "OMPI_COMM_WORLD_LOCAL_RANK='2' is not in [0, OMPI_COMM_WORLD_LOCAL_SIZE=2)");
  env = openmpi_env(0, 2, 0, 2);
  env.erase("OMPI_COMM_WORLD_LOCAL_RANK");
  CHECK(error_of(env) ==
        "OMPI_COMM_WORLD_LOCAL_SIZE='2' is set but OMPI_COMM_WORLD_LOCAL_RANK is not");
  env = openmpi_env(0, 2, 0, 2);
  env["MASTER_PORT"] = "70000";
  CHECK(error_of(env) == "MASTER_PORT='70000' is not in [1, 65535]");
}

// ---- Slurm ----

TEST_CASE("launcher env: Slurm on one node", "[launcher_env]") {
  LauncherWorld w = world_of(slurm_env(2, 3));
  CHECK(w.launcher == "slurm");
  CHECK(w.rank == 2);
  CHECK(w.size == 3);
  CHECK(w.local_rank == 2);
  CHECK(w.local_size == 3);
  CHECK(w.cross_rank == 0);
  CHECK(w.cross_size == 1);
  CHECK(w.rendezvous_host == "127.0.0.1");  // the whole step is on this node: no name needed
  CHECK(w.rendezvous_origin == "every task of the step is on this node");
  CHECK(w.rendezvous_port == kForeignPortBase + (4242 * 31 + 3) % kForeignPortRange);
  CHECK(w.job_id == "slurm-4242.3");
  CHECK(w.token_derived);
}

TEST_CASE("launcher env: Slurm's optional variables", "[launcher_env]") {
  // One node: SLURM_LOCALID, SLURM_NODEID, the node count and the layout may be missing.
  LauncherWorld w = world_of({{"SLURM_PROCID", "1"}, {"SLURM_NTASKS", "2"}});
  CHECK(w.local_rank == 1);
  CHECK(w.local_size == 2);
  CHECK(w.rendezvous_host == "127.0.0.1");
  CHECK(w.rendezvous_port == kForeignPortBase);
  CHECK(w.job_id == "slurm-0.0");
}

TEST_CASE("launcher env: Slurm on even nodes", "[launcher_env]") {
  Env env{{"SLURM_PROCID", "3"},      {"SLURM_NTASKS", "4"},
          {"SLURM_LOCALID", "1"},     {"SLURM_NODEID", "1"},
          {"SLURM_JOB_NUM_NODES", "2"}, {"SLURM_NODELIST", "gpu[08-09]"},
          {"SLURM_JOB_NODELIST", "gpu[01-09]"}};
  LauncherWorld w = world_of(env);  // no SLURM_TASKS_PER_NODE: 4 tasks over 2 nodes
  CHECK(w.local_rank == 1);
  CHECK(w.local_size == 2);
  CHECK(w.cross_rank == 1);
  CHECK(w.cross_size == 2);
  CHECK(w.rendezvous_host == "gpu08");  // the step's nodes before the job's
  env["SLURM_STEP_NODELIST"] = "gpu09,gpu08";
  CHECK(world_of(env).rendezvous_host == "gpu09");
}

TEST_CASE("launcher env: Slurm on uneven nodes (Horovod's cross rank)", "[launcher_env]") {
  // node01: ranks 0 1, node02: 2 3, node03: 4 5, node04: 6.
  struct Expect {
    int rank, local_size, cross_rank, cross_size;
  };
  for (Expect e : {Expect{0, 2, 0, 4}, Expect{1, 2, 0, 3}, Expect{3, 2, 1, 3}, Expect{4, 2, 2, 4},
                   Expect{5, 2, 2, 3}, Expect{6, 1, 3, 4}}) {
    INFO("rank " << e.rank);
    LauncherWorld w = world_of(slurm_uneven(e.rank));
    CHECK(w.local_size == e.local_size);
    CHECK(w.cross_rank == e.cross_rank);
    CHECK(w.cross_size == e.cross_size);
    CHECK(w.rendezvous_host == "node01");
  }
  Env env = slurm_uneven(6);
  env["SLURM_STEP_TASKS_PER_NODE"] = "3,2,1,1";  // the step's layout before the job's
  env["SLURM_LOCALID"] = "0";
  LauncherWorld w = world_of(env);
  CHECK(w.local_size == 1);
  env["SLURM_NODEID"] = "0";
  env["SLURM_LOCALID"] = "2";
  w = world_of(env);
  CHECK(w.local_size == 3);
  CHECK(w.cross_rank == 0);
  CHECK(w.cross_size == 1);
}

TEST_CASE("launcher env: Slurm errors name the variable", "[launcher_env]") {
  Env env = slurm_env(0, 3);
  env["SLURM_NTASKS"] = "abc";
  CHECK(error_of(env) == "SLURM_NTASKS='abc' is not a whole number");
  env = slurm_env(0, 3);
  env.erase("SLURM_NTASKS");
  CHECK(error_of(env) == "SLURM_PROCID='0' is set but SLURM_NTASKS is not");
  env = slurm_env(0, 3);
  env["SLURM_PROCID"] = "3";
  CHECK(error_of(env) == "SLURM_PROCID='3' is not in [0, SLURM_NTASKS=3)");
  env = slurm_env(0, 3);
  env["SLURM_PROCID"] = "x";
  CHECK(error_of(env) == "SLURM_PROCID='x' is not a whole number");
  env = slurm_env(0, 3);
  env["SLURM_LOCALID"] = "3";
  CHECK(error_of(env) == "SLURM_LOCALID='3' is not in [0, 2]");
  env = slurm_env(0, 3);
  env["SLURM_NODEID"] = "1";
  CHECK(error_of(env) == "SLURM_NODEID='1' is not in [0, 0]");
  env = slurm_env(0, 3);
  env["SLURM_NNODES"] = "many";
  CHECK(error_of(env) == "SLURM_NNODES='many' is not a whole number");
  env = slurm_env(0, 3);
  env["SLURM_NNODES"] = "2";
  CHECK(error_of(env) == "SLURM_TASKS_PER_NODE='3' lists 1 nodes but SLURM_NNODES='2'");
  env = slurm_env(0, 3);
  env["SLURM_TASKS_PER_NODE"] = "2";
  CHECK(error_of(env) == "SLURM_TASKS_PER_NODE='2' adds up to 2 tasks but SLURM_NTASKS=3");
  env = slurm_env(0, 3);
  env["SLURM_TASKS_PER_NODE"] = "3(x";
  CHECK_THAT(error_of(env), Catch::StartsWith("SLURM_TASKS_PER_NODE='3(x' is not a valid"));
  env = slurm_env(0, 3);
  env.erase("SLURM_TASKS_PER_NODE");
  env["SLURM_NNODES"] = "2";
  env["SLURM_NODEID"] = "1";
  CHECK(error_of(env) ==
        "SLURM_TASKS_PER_NODE is not set and SLURM_NTASKS=3 does not divide evenly over "
        "SLURM_NNODES='2'");
  env = slurm_uneven(2);
  env.erase("SLURM_NODEID");
  CHECK(error_of(env) == "SLURM_NODEID is not set (the step has 4 nodes)");
  env = slurm_uneven(2);
  env.erase("SLURM_LOCALID");
  CHECK(error_of(env) == "SLURM_LOCALID is not set (the step has 4 nodes)");
  env = slurm_uneven(6);
  env["SLURM_LOCALID"] = "1";  // node04 has one task
  CHECK(error_of(env) == "SLURM_LOCALID='1' is not in [0, 0]");
  env = slurm_env(0, 3);
  env["SLURM_JOB_ID"] = "12a";
  CHECK(error_of(env) == "SLURM_JOB_ID='12a' is not a whole number");
  env = slurm_env(0, 3);
  env["SLURM_STEP_ID"] = "-2";
  CHECK_THAT(error_of(env), Catch::StartsWith("SLURM_STEP_ID='-2' is not in [0, "));
  env = slurm_env(0, 3);
  env["SLURM_STEP_NODELIST"] = "node[1-";
  CHECK_THAT(error_of(env), Catch::StartsWith("SLURM_STEP_NODELIST='node[1-' is not a valid "
                                              "Slurm host list"));
  env = slurm_uneven(0);
  env.erase("SLURM_JOB_NODELIST");
  CHECK_THAT(error_of(env), Catch::StartsWith("none of SLURM_STEP_NODELIST, SLURM_NODELIST and "
                                              "SLURM_JOB_NODELIST is set") &&
                                Catch::Contains("HVD_RENDEZVOUS_HOST"));
}

TEST_CASE("launcher env: an override spares a broken node list", "[launcher_env]") {
  Env env = slurm_env(0, 3);
  env["SLURM_STEP_NODELIST"] = "node[1-";
  env["HVD_RENDEZVOUS_HOST"] = "login1";
  CHECK(world_of(env).rendezvous_host == "login1");
}

// ---- the HVD_* overrides and the token ----

TEST_CASE("launcher env: HVD_RENDEZVOUS_ADDR, _HOST and _PORT override", "[launcher_env]") {
  Env env = slurm_env(0, 3);
  env["HVD_RENDEZVOUS_PORT"] = "31000";
  CHECK(world_of(env).rendezvous_addr() == "127.0.0.1:31000");
  env["HVD_RENDEZVOUS_HOST"] = "10.9.9.9";
  CHECK(world_of(env).rendezvous_addr() == "10.9.9.9:31000");
  env["HVD_RENDEZVOUS_ADDR"] = "head:4100";
  CHECK(world_of(env).rendezvous_addr() == "head:4100");
  env["HVD_RENDEZVOUS_ADDR"] = "[::1]:4100";
  LauncherWorld w = world_of(env);
  CHECK(w.rendezvous_host == "::1");
  CHECK(w.rendezvous_addr() == "[::1]:4100");

  env = torchrun_env();
  env["HVD_RENDEZVOUS_PORT"] = "29600";
  CHECK(world_of(env).rendezvous_addr() == "10.1.2.3:29600");
}

TEST_CASE("launcher env: malformed overrides name the variable", "[launcher_env]") {
  Env env = slurm_env(0, 3);
  env["HVD_RENDEZVOUS_PORT"] = "high";
  CHECK(error_of(env) == "HVD_RENDEZVOUS_PORT='high' is not a whole number");
  env["HVD_RENDEZVOUS_PORT"] = "0";
  CHECK(error_of(env) == "HVD_RENDEZVOUS_PORT='0' is not in [1, 65535]");
  env = slurm_env(0, 3);
  env["HVD_RENDEZVOUS_HOST"] = "";
  CHECK(error_of(env) == "HVD_RENDEZVOUS_HOST is empty");
  for (const char* bad : {"head", "head:", ":4000", "head:0", "head:99999", "head:12ab"}) {
    env = slurm_env(0, 3);
    env["HVD_RENDEZVOUS_ADDR"] = bad;
    CHECK(error_of(env) == std::string("HVD_RENDEZVOUS_ADDR='") + bad + "' is not host:port");
  }
  env = slurm_env(0, 3);
  env["HVD_JOB_TOKEN"] = "";
  CHECK(error_of(env) == "HVD_JOB_TOKEN is empty");
}

TEST_CASE("launcher env: HVD_JOB_TOKEN and HVD_JOB_ID", "[launcher_env]") {
  Env env = openmpi_env(0, 2, 0, 2);
  env["HVD_JOB_TOKEN"] = kSecret;
  env["HVD_JOB_ID"] = "nightly";
  LauncherWorld w = world_of(env);
  CHECK(w.job_token == kSecret);
  CHECK_FALSE(w.token_derived);
  CHECK(w.job_id == "nightly");
  // The secret never shows in an error.
  env["OMPI_COMM_WORLD_SIZE"] = "x";
  error_of(env);
}

TEST_CASE("launcher env: every rank derives the same token, each job its own",
          "[launcher_env]") {
  const std::string token = world_of(slurm_env(0, 3)).job_token;
  CHECK(world_of(slurm_env(2, 3)).job_token == token);
  CHECK(token.size() == std::string("derived-").size() + 64);
  Env env = slurm_env(0, 3);
  env["SLURM_STEP_ID"] = "4";
  CHECK(world_of(env).job_token != token);
  env = slurm_env(0, 3);
  env["HVD_RENDEZVOUS_PORT"] = "31000";
  CHECK(world_of(env).job_token != token);
  CHECK(world_of(torchrun_env()).job_token != world_of(openmpi_env(0, 2, 0, 2)).job_token);
  CHECK(derive_job_token("x") == derive_job_token("x"));
  CHECK(derive_job_token("") ==
        "derived-e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855");
}

// ---- read_world() under a foreign launcher ----

TEST_CASE("world: a foreign launcher's world", "[launcher_env][world]") {
  auto world = read_world(lookup_in(slurm_env(1, 3)));
  REQUIRE(world.is_ok());
  CHECK(world->launcher == "slurm");
  CHECK(world->foreign());
  CHECK(world->rank == 1);
  CHECK(world->size == 3);
  CHECK(world->local_size == 3);
  CHECK(world->rendezvous_addr ==
        "127.0.0.1:" + std::to_string(kForeignPortBase + (4242 * 31 + 3) % kForeignPortRange));
  CHECK(world->rendezvous_host == "127.0.0.1");
  CHECK(world->has_rendezvous());
  CHECK(world->token_derived);
  CHECK(world->bind_address == "127.0.0.1");  // every rank on this host
  CHECK(world->job_id == "slurm-4242.3");
  CHECK_FALSE(world->host.empty());
}

TEST_CASE("world: HVD_BIND_ADDRESS and the routed address across hosts", "[launcher_env][world]") {
  Env env = slurm_uneven(2);
  env["HVD_RENDEZVOUS_HOST"] = "127.0.0.1";
  env["HVD_BIND_ADDRESS"] = "10.7.0.2";
  auto world = read_world(lookup_in(env));
  REQUIRE(world.is_ok());
  CHECK(world->bind_address == "10.7.0.2");
  env.erase("HVD_BIND_ADDRESS");
  world = read_world(lookup_in(env));
  // A loopback route is of no use to other hosts: the default route's source
  // address, or an interface's, or an error that says what to set.
  if (world.is_ok()) {
    CHECK_FALSE(world->bind_address.empty());
    CHECK_THAT(world->bind_address, !Catch::StartsWith("127."));
  } else {
    CHECK_THAT(world.status().message(), Catch::Contains("HVD_BIND_ADDRESS"));
  }
}

TEST_CASE("world: HVD_RANK wins over a foreign launcher", "[launcher_env][world]") {
  Env env = slurm_env(1, 3);
  env["HVD_RANK"] = "0";
  env["HVD_SIZE"] = "1";
  auto world = read_world(lookup_in(env));
  REQUIRE(world.is_ok());
  CHECK_FALSE(world->foreign());
  CHECK(world->size == 1);
  CHECK_FALSE(world->has_rendezvous());
}

TEST_CASE("world: a foreign launcher's errors come through read_world", "[launcher_env][world]") {
  Env env = slurm_env(1, 3);
  env["SLURM_NTASKS"] = "abc";
  auto world = read_world(lookup_in(env));
  REQUIRE_FALSE(world.is_ok());
  CHECK(world.status().message() == "SLURM_NTASKS='abc' is not a whole number");
}

}  // namespace hvd::runtime
