#include "launcher/flag_suggestions.h"

#include <catch2/catch.hpp>

#include "launcher/output_hints.h"

namespace hvd::launcher {
namespace {

void add_flags(CLI::App& app) {
  static int n = 0;
  static std::string s;
  app.add_option("-n,--num-proc", n);
  app.add_option("--fusion-threshold-mb", s);
  app.add_option("--gloo-timeout-seconds", s);
  app.add_flag("--verbose");
}

}  // namespace

TEST_CASE("flag suggestions: edit distance", "[cli]") {
  CHECK(edit_distance("", "") == 0);
  CHECK(edit_distance("abc", "abc") == 0);
  CHECK(edit_distance("abc", "abd") == 1);
  CHECK(edit_distance("treshold", "threshold") == 1);
  CHECK(edit_distance("", "abc") == 3);
  CHECK(edit_distance("kitten", "sitting") == 3);
}

TEST_CASE("flag suggestions: the closest known flag, or nothing", "[cli]") {
  CLI::App app;
  add_flags(app);
  CHECK(did_you_mean(app, {"--fusion-treshold-mb", "5"}) ==
        " (did you mean --fusion-threshold-mb?)");
  CHECK(did_you_mean(app, {"--verbose", "--gloo-timeout=5"}) ==
        " (did you mean --gloo-timeout-seconds?)");  // cut short, with =VALUE
  CHECK(did_you_mean(app, {"--verbos"}) == " (did you mean --verbose?)");
  CHECK(did_you_mean(app, {"--zzzz"}).empty());      // nothing close
  CHECK(did_you_mean(app, {"--verbose", "-n", "2"}).empty());  // every flag known
}

TEST_CASE("flag suggestions: mpirun's -n and torchrun's --nproc-per-node get -np", "[cli]") {
  CLI::App app;
  static int np = 0;
  app.add_option("--np", np);  // -np, as cli.cc gives it to CLI11
  app.set_help_flag("-h,--help");
  CHECK(did_you_mean(app, {"-n", "2"}) == " (did you mean -np?)");  // not -h
  CHECK(did_you_mean(app, {"--nproc_per_node=2"}) == " (did you mean -np?)");
  CHECK(did_you_mean(app, {"-nq"}) == " (did you mean -np?)");  // a typo of -np, as typed
  CLI::App without;                                              // no -np: no suggestion of it
  add_flags(without);
  CHECK(did_you_mean(without, {"--nproc-per-node"}).empty());
}

TEST_CASE("output hints: a worker without horovod gets --horovod-compat once", "[cli]") {
  OutputHints hints(false);
  CHECK_FALSE(hints.on_line("Traceback (most recent call last):"));
  auto hint = hints.on_line("ModuleNotFoundError: No module named 'horovod'");
  REQUIRE(hint);
  CHECK(hint->find("--horovod-compat") != std::string::npos);
  CHECK_FALSE(hints.on_line("ModuleNotFoundError: No module named 'horovod'"));  // once
  OutputHints compat(true);  // --horovod-compat given: not the cause
  CHECK_FALSE(compat.on_line("ModuleNotFoundError: No module named 'horovod.torch'"));
  OutputHints other(false);
  CHECK(other.on_line("ModuleNotFoundError: No module named 'horovod.torch'"));
  CHECK_FALSE(OutputHints(false).on_line("ModuleNotFoundError: No module named 'horovodx'"));
}

}  // namespace hvd::launcher

namespace hvd::launcher {
namespace {

TEST_CASE("output hints: a worker without torch or numpy gets its interpreter named, once",
          "[cli]") {
  OutputHints venv(false, "/opt/venv/bin/python3");
  auto hint = venv.on_line("ModuleNotFoundError: No module named 'torch'");
  REQUIRE(hint);
  CHECK(*hint ==
        "the workers ran /opt/venv/bin/python3, which cannot import torch: give hvdrun a Python "
        "that has torch and numpy, e.g. /usr/bin/python3 (Debian's python3-torch)");
  CHECK_FALSE(venv.on_line("ModuleNotFoundError: No module named 'numpy'"));  // one hint
  OutputHints compat(true, "python3");  // --horovod-compat does not matter here
  auto numpy = compat.on_line("ModuleNotFoundError: No module named 'numpy'");
  REQUIRE(numpy);
  CHECK_THAT(*numpy, Catch::StartsWith("the workers ran python3") &&
                         Catch::Contains("which cannot import numpy"));
  auto debian = OutputHints(false, "/usr/bin/python3")
                    .on_line("ModuleNotFoundError: No module named 'torch'");
  REQUIRE(debian);
  CHECK_THAT(*debian, Catch::Contains("install Debian's python3-torch"));
  auto shell = OutputHints(false, "sh").on_line("No module named 'torch'");
  REQUIRE(shell);
  CHECK_THAT(*shell, Catch::StartsWith("the workers' Python cannot import torch"));
  CHECK_FALSE(OutputHints(false, "python3").on_line("No module named 'torchvision'"));
}

TEST_CASE("output hints: find_in_path", "[cli]") {
  CHECK(find_in_path("/x/python", "/usr/bin") == "/x/python");
  CHECK(find_in_path("sh", "/nonexistent:/bin") == "/bin/sh");
  CHECK(find_in_path("no-such-program-hvd", "/bin:/usr/bin").empty());
}

}  // namespace
}  // namespace hvd::launcher
