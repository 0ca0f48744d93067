// "Did you mean": for a command line with a flag hvdrun does not know, the
// closest flag it knows (edit distance), as " (did you mean --x?)", or an
// empty string when nothing is close.
#pragma once

#include <string>
#include <vector>

#include <CLI/CLI.hpp>

namespace hvd::launcher {

// `options`: the arguments before the command, as given to app.parse().
std::string did_you_mean(const CLI::App& app, const std::vector<std::string>& options);

// Levenshtein distance (insertions, deletions, substitutions).
size_t edit_distance(const std::string& a, const std::string& b);

}  // namespace hvd::launcher
