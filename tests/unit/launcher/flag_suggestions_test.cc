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
