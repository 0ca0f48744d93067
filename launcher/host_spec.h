// Host lists: `-H host:slots,...` and hostfiles (`host slots=N` lines).
// Errors are kInvalidArgument with a one-line message that quotes the bad
// token (hostfile errors start with "FILE:LINE: ").
#pragma once

#include <string>
#include <string_view>
#include <vector>

#include "common/status.h"

namespace hvd::launcher {

using common::Result;
using common::Status;

struct HostSlots {
  std::string host;  // as the user wrote it, IPv6 brackets removed
  int slots = 1;

  bool operator==(const HostSlots&) const = default;
};

// One host token: `host`, `host:N`, `[v6addr]`, `[v6addr]:N`, or a bare IPv6
// address (two colons or more, slots 1). `default_slots` applies when the
// token names no count.
Result<HostSlots> parse_host_token(std::string_view token, int default_slots = 1);

// `s` without leading and trailing blanks (space, tab, CR, LF).
std::string_view trim(std::string_view s);

// The value of -H: comma-separated host tokens, blanks around them ignored.
// Each host may appear once.
Result<std::vector<HostSlots>> parse_host_list(std::string_view text);

// Hostfile text; `file_name` prefixes error messages. One host per line:
// `host slots=N`, `host:N` or `host` (1 slot); `#` starts a comment; blank
// lines are skipped. At least one host is required.
Result<std::vector<HostSlots>> parse_hostfile_text(std::string_view text,
                                                   std::string_view file_name);

// Reads and parses a hostfile.
Result<std::vector<HostSlots>> parse_hostfile(const std::string& path);

// "a:2, b:2, c:1"
std::string describe_hosts(const std::vector<HostSlots>& hosts);

}  // namespace hvd::launcher
