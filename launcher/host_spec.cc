#include "launcher/host_spec.h"

#include <cctype>
#include <charconv>
#include <chrono>
#include <set>

#include "common/input_file.h"
#include "common/job_limits.h"
#include "common/printable.h"

namespace hvd::launcher {

using common::invalid_argument;

namespace {

bool is_blank(char c) { return c == ' ' || c == '\t' || c == '\r' || c == '\n'; }

// Quoted, with bytes outside printable ASCII as \xNN: the text comes from a
// file or a script and goes to the terminal.
std::string quote(std::string_view s) { return "'" + common::printable(s) + "'"; }

// A hostfile is small; a pipe (--hostfile <(...)) must end within this long.
constexpr size_t kMaxHostfileBytes = 16 << 20;
constexpr std::chrono::seconds kHostfilePipeTimeout{30};

// Letters, digits and . - _ for names; ':' and '%' (scope) for IPv6 addresses.
bool valid_host_name(std::string_view host, bool ipv6) {
  if (host.empty()) return false;
  for (char c : host) {
    bool ok = std::isalnum(static_cast<unsigned char>(c)) || c == '.' || c == '-' || c == '_' ||
              (ipv6 && (c == ':' || c == '%'));
    if (!ok) return false;
  }
  return true;
}

Result<int> parse_slot_count(std::string_view text, std::string_view token) {
  int n = 0;
  auto [ptr, ec] = std::from_chars(text.data(), text.data() + text.size(), n);
  if (text.empty() || ec != std::errc() || ptr != text.data() + text.size() || n <= 0) {
    return invalid_argument("bad slot count " + quote(text) + " in " + quote(token) +
                            " (expected a whole number greater than 0)");
  }
  if (n > common::kMaxWorkersPerHost) {
    return invalid_argument("slot count " + quote(text) + " in " + quote(token) +
                            " is more than one host runs (at most " +
                            std::to_string(common::kMaxWorkersPerHost) + ")");
  }
  return n;
}

struct ParsedToken {
  HostSlots host;
  bool has_count = false;  // the token itself named the slot count
};

Result<ParsedToken> parse_token(std::string_view raw, int default_slots) {
  std::string_view token = trim(raw);
  if (token.empty()) return invalid_argument("empty host entry");
  std::string_view host;
  std::string_view count;
  bool has_count = false;
  bool ipv6 = false;
  if (token.front() == '[') {
    size_t close = token.find(']');
    if (close == std::string_view::npos) {
      return invalid_argument("missing ']' in host " + quote(token));
    }
    host = token.substr(1, close - 1);
    // An address has a colon; without one the brackets hold a plain name
    // ("[a%b]" is neither, and describe_hosts would write it unbracketed).
    ipv6 = host.find(':') != std::string_view::npos;
    std::string_view rest = token.substr(close + 1);
    if (!rest.empty()) {
      if (rest.front() != ':')
        return invalid_argument("unexpected " + quote(rest) + " after ']' in " + quote(token));
      count = rest.substr(1);
      has_count = true;
    }
  } else {
    size_t first = token.find(':');
    size_t last = token.rfind(':');
    if (first != last) {
      host = token;  // a bare IPv6 address such as ::1
      ipv6 = true;
    } else if (first != std::string_view::npos) {
      host = trim(token.substr(0, first));
      count = trim(token.substr(first + 1));
      has_count = true;
    } else {
      host = token;
    }
  }
  if (host.empty()) return invalid_argument("missing host name in " + quote(token));
  if (!valid_host_name(host, ipv6)) return invalid_argument("bad host name " + quote(host));
  ParsedToken out{HostSlots{std::string(host), default_slots}, has_count};
  if (has_count) {
    auto n = parse_slot_count(count, token);
    if (!n.is_ok()) return n.status();
    out.host.slots = *n;
  }
  return out;
}

}  // namespace

std::string_view trim(std::string_view s) {
  while (!s.empty() && is_blank(s.front())) s.remove_prefix(1);
  while (!s.empty() && is_blank(s.back())) s.remove_suffix(1);
  return s;
}

Result<HostSlots> parse_host_token(std::string_view token, int default_slots) {
  auto parsed = parse_token(token, default_slots);
  if (!parsed.is_ok()) return parsed.status();
  return parsed->host;
}

Result<std::vector<HostSlots>> parse_host_list(std::string_view text) {
  if (trim(text).empty()) return invalid_argument("empty host list");
  std::vector<HostSlots> hosts;
  std::set<std::string> seen;
  size_t start = 0;
  while (true) {
    size_t comma = text.find(',', start);
    std::string_view entry = text.substr(
        start, comma == std::string_view::npos ? std::string_view::npos : comma - start);
    if (trim(entry).empty()) {
      return invalid_argument("empty host entry in " + quote(text));
    }
    auto host = parse_host_token(entry);
    if (!host.is_ok()) return host.status();
    if (!seen.insert(host->host).second) {
      return invalid_argument("host " + quote(host->host) + " is listed twice");
    }
    hosts.push_back(std::move(host).value());
    if (comma == std::string_view::npos) break;
    start = comma + 1;
  }
  return hosts;
}

Result<std::vector<HostSlots>> parse_hostfile_text(std::string_view text,
                                                   std::string_view file_name) {
  std::vector<HostSlots> hosts;
  std::set<std::string> seen;
  int line_no = 0;
  size_t start = 0;
  while (start <= text.size()) {
    size_t nl = text.find('\n', start);
    std::string_view line =
        text.substr(start, nl == std::string_view::npos ? std::string_view::npos : nl - start);
    start = nl == std::string_view::npos ? text.size() + 1 : nl + 1;
    ++line_no;
    if (size_t hash = line.find('#'); hash != std::string_view::npos) line = line.substr(0, hash);
    line = trim(line);
    if (line.empty()) continue;

    const std::string where =
        common::printable(file_name) + ":" + std::to_string(line_no) + ": ";
    std::vector<std::string_view> words;
    size_t pos = 0;
    while (pos < line.size()) {
      while (pos < line.size() && is_blank(line[pos])) ++pos;
      size_t end = pos;
      while (end < line.size() && !is_blank(line[end])) ++end;
      if (end > pos) words.push_back(line.substr(pos, end - pos));
      pos = end;
    }

    auto parsed = parse_token(words[0], 1);
    if (!parsed.is_ok()) return invalid_argument(where + parsed.status().message());
    HostSlots host = parsed->host;
    bool slots_seen = parsed->has_count;
    for (size_t i = 1; i < words.size(); ++i) {
      std::string_view word = words[i];
      constexpr std::string_view kSlots = "slots=";
      if (word.substr(0, kSlots.size()) != kSlots) {
        return invalid_argument(where + "unexpected " + quote(word) + " (expected 'slots=N')");
      }
      if (slots_seen) {
        return invalid_argument(where + "slots of " + quote(host.host) + " given twice at " +
                                quote(word));
      }
      auto n = parse_slot_count(word.substr(kSlots.size()), word);
      if (!n.is_ok()) return invalid_argument(where + n.status().message());
      host.slots = *n;
      slots_seen = true;
    }
    if (!seen.insert(host.host).second) {
      return invalid_argument(where + "host " + quote(host.host) + " is listed twice");
    }
    hosts.push_back(std::move(host));
  }
  if (hosts.empty()) {
    return invalid_argument(common::printable(file_name) + ": no hosts in the hostfile");
  }
  return hosts;
}

Result<std::vector<HostSlots>> parse_hostfile(const std::string& path) {
  common::InputRules rules;
  rules.what = "hostfile";
  rules.max_bytes = kMaxHostfileBytes;
  rules.timeout = kHostfilePipeTimeout;
  rules.allow_pipe = true;
  auto text = common::read_input_file(path, rules);
  if (!text.is_ok()) {
    if (text.status().code() == common::StatusCode::kNotFound) {
      return invalid_argument("cannot read hostfile " + quote(path));
    }
    return invalid_argument(text.status().message());
  }
  return parse_hostfile_text(*text, path);
}

std::string describe_hosts(const std::vector<HostSlots>& hosts) {
  std::string out;
  for (const auto& h : hosts) {
    if (!out.empty()) out += ", ";
    bool v6 = h.host.find(':') != std::string::npos;
    out += (v6 ? "[" + h.host + "]" : h.host) + ":" + std::to_string(h.slots);
  }
  return out;
}

}  // namespace hvd::launcher
