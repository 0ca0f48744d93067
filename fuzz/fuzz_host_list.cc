// -H host lists (launcher/host_spec.h): parse_host_list and
// parse_host_token. Checks: an accepted list names each host once with
// 1..kMaxWorkersPerHost slots and reads back equal from describe_hosts'
// spelling; every error message is one printable line.
#include <cstddef>
#include <cstdint>
#include <set>
#include <string>
#include <string_view>

#include "common/job_limits.h"
#include "fuzz_check.h"
#include "launcher/host_spec.h"

using hvd::fuzz::one_line_printable;
using hvd::launcher::HostSlots;

namespace {

void check_host(const HostSlots& h) {
  FUZZ_CHECK(!h.host.empty(), "an accepted host has an empty name");
  FUZZ_CHECK(h.slots >= 1 && h.slots <= hvd::common::kMaxWorkersPerHost, h.host);
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  const std::string_view text(reinterpret_cast<const char*>(data), size);

  auto hosts = hvd::launcher::parse_host_list(text);
  if (!hosts.is_ok()) {
    FUZZ_CHECK(one_line_printable(hosts.status().message()), hosts.status().message());
  } else {
    FUZZ_CHECK(!hosts->empty(), "an accepted host list is empty");
    std::set<std::string> names;
    for (const auto& h : *hosts) {
      check_host(h);
      FUZZ_CHECK(names.insert(h.host).second, "host listed twice: " + h.host);
    }
    const std::string spelled = hvd::launcher::describe_hosts(*hosts);
    auto again = hvd::launcher::parse_host_list(spelled);
    FUZZ_CHECK(again.is_ok(), spelled + " -> " + again.status().message());
    FUZZ_CHECK(*again == *hosts, "describe_hosts does not read back: " + spelled);
  }

  // One token, with a default slot count taken from the first byte.
  const int default_slots = size > 0 ? 1 + data[0] % 8 : 1;
  auto token = hvd::launcher::parse_host_token(text, default_slots);
  if (token.is_ok()) {
    check_host(*token);
  } else {
    FUZZ_CHECK(one_line_printable(token.status().message()), token.status().message());
  }
  return 0;
}
