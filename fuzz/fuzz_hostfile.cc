// Hostfiles (launcher/host_spec.h): parse_hostfile_text. Checks: an
// accepted file names each host once with 1..kMaxWorkersPerHost slots and
// reads back equal when written as `host slots=N` lines; an error starts
// with the file name and is one printable line.
#include <cstddef>
#include <cstdint>
#include <set>
#include <string>
#include <string_view>

#include "common/job_limits.h"
#include "fuzz_check.h"
#include "launcher/host_spec.h"

using hvd::fuzz::one_line_printable;

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  const std::string_view text(reinterpret_cast<const char*>(data), size);
  constexpr std::string_view kFile = "hosts.txt";

  auto hosts = hvd::launcher::parse_hostfile_text(text, kFile);
  if (!hosts.is_ok()) {
    const std::string& message = hosts.status().message();
    FUZZ_CHECK(one_line_printable(message), message);
    FUZZ_CHECK(message.rfind(std::string(kFile) + ":", 0) == 0, "error without the file name: " + message);
    return 0;
  }
  FUZZ_CHECK(!hosts->empty(), "an accepted hostfile has no hosts");
  std::set<std::string> names;
  std::string rewritten;
  for (const auto& h : *hosts) {
    FUZZ_CHECK(!h.host.empty(), "an accepted host has an empty name");
    FUZZ_CHECK(h.slots >= 1 && h.slots <= hvd::common::kMaxWorkersPerHost, h.host);
    FUZZ_CHECK(names.insert(h.host).second, "host listed twice: " + h.host);
    const bool v6 = h.host.find(':') != std::string::npos;
    rewritten += (v6 ? "[" + h.host + "]" : h.host) + " slots=" + std::to_string(h.slots) + "\n";
  }
  auto again = hvd::launcher::parse_hostfile_text(rewritten, kFile);
  FUZZ_CHECK(again.is_ok(), rewritten + " -> " + again.status().message());
  FUZZ_CHECK(*again == *hosts, "the rewritten hostfile does not read back: " + rewritten);
  return 0;
}
