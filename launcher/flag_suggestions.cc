#include "launcher/flag_suggestions.h"

#include <algorithm>
#include <string_view>
#include <utility>

namespace hvd::launcher {

namespace {

// Other launchers' spellings of -np (mpirun's -n, torchrun's
// --nproc-per-node), which edit distance would match to something else.
constexpr std::pair<std::string_view, std::string_view> kForeignSpellings[] = {
    {"-n", "--np"}, {"--n", "--np"}, {"--nproc_per_node", "--np"}, {"--nproc-per-node", "--np"}};

// How a user writes the flag CLI11 knows as `name`: -np (cli.cc spells it
// --np for CLI11).
std::string as_typed(const std::string& name) { return name == "--np" ? "-np" : name; }

}  // namespace

size_t edit_distance(const std::string& a, const std::string& b) {
  std::vector<size_t> row(b.size() + 1);
  for (size_t j = 0; j <= b.size(); ++j) row[j] = j;
  for (size_t i = 1; i <= a.size(); ++i) {
    size_t diagonal = row[0];
    row[0] = i;
    for (size_t j = 1; j <= b.size(); ++j) {
      const size_t above = row[j];
      row[j] = std::min({row[j] + 1, row[j - 1] + 1, diagonal + (a[i - 1] == b[j - 1] ? 0 : 1)});
      diagonal = above;
    }
  }
  return row[b.size()];
}

std::string did_you_mean(const CLI::App& app, const std::vector<std::string>& options) {
  // The first flag no option of `app` takes.
  std::string unknown;
  for (const std::string& arg : options) {
    if (arg.size() < 2 || arg[0] != '-' || arg == "--") continue;
    const std::string name = arg.substr(0, arg.find('='));
    if (app.get_option_no_throw(name) == nullptr) {
      unknown = name;
      break;
    }
  }
  if (unknown.empty()) return "";
  for (const auto& [foreign, ours] : kForeignSpellings) {
    if (unknown == foreign && app.get_option_no_throw(std::string(ours)) != nullptr) {
      return " (did you mean " + as_typed(std::string(ours)) + "?)";
    }
  }
  std::string best;
  size_t best_distance = 0;
  for (const CLI::Option* opt : app.get_options()) {
    std::vector<std::string> names;
    for (const std::string& l : opt->get_lnames()) names.push_back(as_typed("--" + l));
    for (const std::string& s : opt->get_snames()) names.push_back("-" + s);
    for (const std::string& name : names) {
      // A flag cut short (--gloo-timeout for --gloo-timeout-seconds) is close too.
      const size_t d = name.rfind(unknown, 0) == 0 ? 1 : edit_distance(unknown, name);
      if (best.empty() || d < best_distance) {
        best = name;
        best_distance = d;
      }
    }
  }
  // Close: a typo or two, or a third of a long name.
  const size_t limit = std::max<size_t>(2, unknown.size() / 3);
  if (best.empty() || best_distance > limit) return "";
  return " (did you mean " + best + "?)";
}

}  // namespace hvd::launcher
