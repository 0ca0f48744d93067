// Host discovery script output (launcher/host_discovery.h):
// parse_discovery_output, with --slots-per-host and need_hosts taken from
// the first byte. Checks: accepted hosts are named once, with 1 slot or
// more (the script's own counts at most kMaxWorkersPerHost, like the
// default), and there is one when need_hosts; an error names the script and
// is one printable line.
#include <cstddef>
#include <cstdint>
#include <set>
#include <string>
#include <string_view>

#include "common/job_limits.h"
#include "fuzz_check.h"
#include "launcher/host_discovery.h"

using hvd::fuzz::one_line_printable;

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  if (size == 0) return 0;
  // Bits 0-6: --slots-per-host (0 included: hvdrun refuses it earlier, the
  // parser must not trip on it either); bit 7: need_hosts.
  const int default_slots = data[0] & 0x7f;
  const bool need_hosts = (data[0] & 0x80) == 0;
  const std::string_view text(reinterpret_cast<const char*>(data + 1), size - 1);
  constexpr std::string_view kScript = "./discover.sh";

  auto hosts = hvd::launcher::parse_discovery_output(text, default_slots, kScript, need_hosts);
  if (!hosts.is_ok()) {
    const std::string& message = hosts.status().message();
    FUZZ_CHECK(one_line_printable(message), message);
    FUZZ_CHECK(message.rfind("--host-discovery-script ./discover.sh: ", 0) == 0,
               "error without the script: " + message);
    return 0;
  }
  FUZZ_CHECK(!need_hosts || !hosts->empty(), "accepted output without hosts");
  std::set<std::string> names;
  for (const auto& h : *hosts) {
    FUZZ_CHECK(!h.host.empty(), "an accepted host has an empty name");
    FUZZ_CHECK(h.slots <= hvd::common::kMaxWorkersPerHost, h.host);
    FUZZ_CHECK(h.slots >= 1 || h.slots == default_slots, h.host);
    FUZZ_CHECK(names.insert(h.host).second, "host listed twice: " + h.host);
  }
  return 0;
}
