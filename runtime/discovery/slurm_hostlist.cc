#include "runtime/discovery/slurm_hostlist.h"

#include <charconv>
#include <cstdint>

namespace hvd::runtime {

namespace {

using common::invalid_argument;
using common::Result;
using common::Status;

// Splits at commas outside brackets; kInvalidArgument-free: bracket errors are
// found when a piece is parsed.
std::vector<std::string_view> split_top_level(std::string_view list) {
  std::vector<std::string_view> pieces;
  int depth = 0;
  size_t start = 0;
  for (size_t i = 0; i < list.size(); ++i) {
    if (list[i] == '[') ++depth;
    if (list[i] == ']') --depth;
    if (list[i] == ',' && depth == 0) {
      pieces.push_back(list.substr(start, i - start));
      start = i + 1;
    }
  }
  pieces.push_back(list.substr(start));
  return pieces;
}

bool all_digits(std::string_view s) {
  if (s.empty() || s.size() > 18) return false;
  for (char c : s) {
    if (c < '0' || c > '9') return false;
  }
  return true;
}

uint64_t to_number(std::string_view digits) {
  uint64_t v = 0;
  std::from_chars(digits.data(), digits.data() + digits.size(), v);
  return v;
}

std::string padded(uint64_t value, size_t width) {
  std::string s = std::to_string(value);
  if (s.size() < width) s.insert(0, width - s.size(), '0');
  return s;
}

class Expander {
 public:
  Expander(std::string_view list, std::string_view variable) : list_(list), variable_(variable) {}

  Status error(std::string_view token, const std::string& reason) const {
    return invalid_argument(std::string(variable_) + "='" + std::string(list_) +
                            "' is not a valid Slurm host list: " + reason + " in '" +
                            std::string(token) + "'");
  }

  // The values of one bracket group's body ("01-03,7"), formatted.
  Result<std::vector<std::string>> range_values(std::string_view token, std::string_view body) {
    std::vector<std::string> values;
    for (std::string_view item : split_top_level(body)) {
      size_t dash = item.find('-');
      std::string_view lo = item.substr(0, dash);
      std::string_view hi = dash == std::string_view::npos ? lo : item.substr(dash + 1);
      if (!all_digits(lo) || !all_digits(hi)) {
        return error(token, "range '" + std::string(item) + "' is not N or N-M");
      }
      uint64_t a = to_number(lo), b = to_number(hi);
      if (a > b) return error(token, "range '" + std::string(item) + "' runs backwards");
      if (b - a >= kMaxSlurmListEntries - values.size()) {
        return error(token, "more than " + std::to_string(kMaxSlurmListEntries) + " hosts");
      }
      for (uint64_t v = a; v <= b; ++v) values.push_back(padded(v, lo.size()));
    }
    return values;
  }

  // Appends every name `token` stands for to `out`.
  Status expand(std::string_view token, std::vector<std::string>& out) {
    if (token.empty()) return error(token, "an empty name");
    std::vector<std::string> names{""};
    size_t i = 0;
    while (i < token.size()) {
      if (token[i] == ']') return error(token, "a ']' without '['");
      if (token[i] != '[') {
        size_t end = token.find_first_of("[]", i);
        if (end == std::string_view::npos) end = token.size();
        for (std::string& n : names) n.append(token.substr(i, end - i));
        i = end;
        continue;
      }
      size_t close = token.find(']', i);
      if (close == std::string_view::npos) return error(token, "a '[' without ']'");
      std::string_view body = token.substr(i + 1, close - i - 1);
      if (body.find('[') != std::string_view::npos) return error(token, "nested '['");
      auto values = range_values(token, body);
      if (!values.is_ok()) return values.status();
      if (names.size() * values->size() + out.size() > kMaxSlurmListEntries) {
        return error(token, "more than " + std::to_string(kMaxSlurmListEntries) + " hosts");
      }
      std::vector<std::string> product;
      for (const std::string& n : names) {
        for (const std::string& v : values.value()) product.push_back(n + v);
      }
      names = std::move(product);
      i = close + 1;
    }
    out.insert(out.end(), names.begin(), names.end());
    return Status::ok();
  }

 private:
  std::string_view list_;
  std::string_view variable_;
};

}  // namespace

Result<std::vector<std::string>> expand_slurm_hostlist(std::string_view list,
                                                       std::string_view variable) {
  Expander expander(list, variable);
  if (list.empty()) return expander.error(list, "no hosts");
  std::vector<std::string> hosts;
  for (std::string_view token : split_top_level(list)) {
    HVD_RETURN_IF_ERROR(expander.expand(token, hosts));
  }
  return hosts;
}

Result<std::vector<int>> expand_slurm_tasks_per_node(std::string_view list,
                                                     std::string_view variable) {
  auto error = [&](std::string_view token) {
    return invalid_argument(std::string(variable) + "='" + std::string(list) +
                            "' is not a valid Slurm task count list (like '2(x3),1'): bad entry '" +
                            std::string(token) + "'");
  };
  std::vector<int> counts;
  size_t start = 0;
  while (true) {
    size_t comma = list.find(',', start);
    std::string_view token = list.substr(start, comma == std::string_view::npos
                                                    ? std::string_view::npos
                                                    : comma - start);
    std::string_view count = token, repeat = "1";
    if (size_t paren = token.find('('); paren != std::string_view::npos) {
      if (token.size() < paren + 4 || token.substr(paren, 2) != "(x" || token.back() != ')') {
        return error(token);
      }
      count = token.substr(0, paren);
      repeat = token.substr(paren + 2, token.size() - paren - 3);
    }
    if (!all_digits(count) || !all_digits(repeat) || count.size() > 9) return error(token);
    uint64_t n = to_number(count), times = to_number(repeat);
    if (n == 0 || times == 0) return error(token);
    if (times > kMaxSlurmListEntries - counts.size()) return error(token);
    counts.insert(counts.end(), times, static_cast<int>(n));
    if (comma == std::string_view::npos) break;
    start = comma + 1;
  }
  return counts;
}

}  // namespace hvd::runtime
