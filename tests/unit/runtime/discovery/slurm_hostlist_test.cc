#include <catch2/catch.hpp>

#include <string>
#include <vector>

#include "runtime/discovery/slurm_hostlist.h"

namespace hvd::runtime {

namespace {

using Hosts = std::vector<std::string>;

Hosts hosts_of(const std::string& list) {
  auto hosts = expand_slurm_hostlist(list, "SLURM_STEP_NODELIST");
  INFO(list << ": " << hosts.status().message());
  REQUIRE(hosts.is_ok());
  return hosts.value();
}

std::string hostlist_error(const std::string& list) {
  auto hosts = expand_slurm_hostlist(list, "SLURM_JOB_NODELIST");
  REQUIRE_FALSE(hosts.is_ok());
  CHECK(hosts.status().code() == common::StatusCode::kInvalidArgument);
  CHECK_THAT(hosts.status().message(),
             Catch::StartsWith("SLURM_JOB_NODELIST='" + list + "' is not a valid Slurm host list"));
  return hosts.status().message();
}

std::vector<int> tasks_of(const std::string& list) {
  auto tasks = expand_slurm_tasks_per_node(list, "SLURM_TASKS_PER_NODE");
  INFO(list << ": " << tasks.status().message());
  REQUIRE(tasks.is_ok());
  return tasks.value();
}

std::string tasks_error(const std::string& list) {
  auto tasks = expand_slurm_tasks_per_node(list, "SLURM_TASKS_PER_NODE");
  REQUIRE_FALSE(tasks.is_ok());
  CHECK_THAT(tasks.status().message(), Catch::StartsWith("SLURM_TASKS_PER_NODE='" + list + "'"));
  return tasks.status().message();
}

}  // namespace

TEST_CASE("slurm hostlist: plain names", "[slurm_hostlist]") {
  CHECK(hosts_of("node1") == Hosts{"node1"});
  CHECK(hosts_of("a,b,c") == Hosts{"a", "b", "c"});
  CHECK(hosts_of("gpu-5.cluster.example") == Hosts{"gpu-5.cluster.example"});
}

TEST_CASE("slurm hostlist: ranges keep their zero padding", "[slurm_hostlist]") {
  CHECK(hosts_of("node[01-03,7],gpu5,x[1-2]-ib") ==
        Hosts{"node01", "node02", "node03", "node7", "gpu5", "x1-ib", "x2-ib"});
  CHECK(hosts_of("n[8-11]") == Hosts{"n8", "n9", "n10", "n11"});
  CHECK(hosts_of("n[098-101]") == Hosts{"n098", "n099", "n100", "n101"});
  CHECK(hosts_of("n[5]") == Hosts{"n5"});
  CHECK(hosts_of("[1-2]") == Hosts{"1", "2"});
}

TEST_CASE("slurm hostlist: several bracket groups multiply", "[slurm_hostlist]") {
  CHECK(hosts_of("r[1-2]n[1-2]") == Hosts{"r1n1", "r1n2", "r2n1", "r2n2"});
  CHECK(hosts_of("r[1-2]-n[01,03]-ib") ==
        Hosts{"r1-n01-ib", "r1-n03-ib", "r2-n01-ib", "r2-n03-ib"});
}

TEST_CASE("slurm hostlist: malformed lists name the variable and the token", "[slurm_hostlist]") {
  CHECK_THAT(hostlist_error("node[01-03"), Catch::Contains("a '[' without ']' in 'node[01-03'"));
  CHECK_THAT(hostlist_error("a,node01-03]"), Catch::Contains("a ']' without '[' in 'node01-03]'"));
  CHECK_THAT(hostlist_error("n[3-1]"), Catch::Contains("range '3-1' runs backwards in 'n[3-1]'"));
  CHECK_THAT(hostlist_error("n[a-b]"), Catch::Contains("range 'a-b' is not N or N-M in 'n[a-b]'"));
  CHECK_THAT(hostlist_error("n[1-]"), Catch::Contains("in 'n[1-]'"));
  CHECK_THAT(hostlist_error("n[]"), Catch::Contains("in 'n[]'"));
  CHECK_THAT(hostlist_error("n[1,,2]"), Catch::Contains("in 'n[1,,2]'"));
  CHECK_THAT(hostlist_error("n[[1-2]]"), Catch::Contains("nested '[' in 'n[[1-2]]'"));
  CHECK_THAT(hostlist_error("a,,b"), Catch::Contains("an empty name in ''"));
  CHECK_THAT(hostlist_error(""), Catch::Contains("no hosts"));
  CHECK_THAT(hostlist_error("n[1-1-2]"), Catch::Contains("in 'n[1-1-2]'"));
}

TEST_CASE("slurm hostlist: a huge range is refused", "[slurm_hostlist]") {
  CHECK_THAT(hostlist_error("n[1-99999999]"), Catch::Contains("more than"));
  CHECK_THAT(hostlist_error("a[1-2000]b[1-2000]"), Catch::Contains("more than"));
}

TEST_CASE("slurm tasks per node: counts and repeats", "[slurm_hostlist]") {
  CHECK(tasks_of("4") == std::vector<int>{4});
  CHECK(tasks_of("2(x3),1") == std::vector<int>{2, 2, 2, 1});
  CHECK(tasks_of("1,3(x2)") == std::vector<int>{1, 3, 3});
  CHECK(tasks_of("8(x1)") == std::vector<int>{8});
}

TEST_CASE("slurm tasks per node: malformed lists name the entry", "[slurm_hostlist]") {
  CHECK_THAT(tasks_error("abc"), Catch::EndsWith("bad entry 'abc'"));
  CHECK_THAT(tasks_error("2(x3"), Catch::EndsWith("bad entry '2(x3'"));
  CHECK_THAT(tasks_error("2(3)"), Catch::EndsWith("bad entry '2(3)'"));
  CHECK_THAT(tasks_error("2(x)"), Catch::EndsWith("bad entry '2(x)'"));
  CHECK_THAT(tasks_error("2,,1"), Catch::EndsWith("bad entry ''"));
  CHECK_THAT(tasks_error("0"), Catch::EndsWith("bad entry '0'"));
  CHECK_THAT(tasks_error("2(x0)"), Catch::EndsWith("bad entry '2(x0)'"));
  CHECK_THAT(tasks_error("-1"), Catch::EndsWith("bad entry '-1'"));
  CHECK_THAT(tasks_error(""), Catch::EndsWith("bad entry ''"));
  CHECK_THAT(tasks_error("1(x99999999)"), Catch::EndsWith("bad entry '1(x99999999)'"));
}

}  // namespace hvd::runtime
