// Which host names and addresses mean "this machine". Workers on the local
// machine are started by the agent embedded in hvdrun; any other host needs a
// running hvd-agent.
#pragma once

#include <string>
#include <string_view>
#include <vector>

namespace hvd::launcher {

struct LocalIdentity {
  std::string hostname;                // gethostname()
  std::vector<std::string> addresses;  // of every local interface (getifaddrs), numeric

  // The identity of the machine hvdrun runs on.
  static LocalIdentity current();
};

// True for localhost, 127.x.y.z, ::1, the host name or its short form (the
// part before the first '.'), and any address of a local interface. Names are
// compared without regard to case; addresses by value (so "::0:1" is "::1").
// No DNS lookups.
bool is_local_host(std::string_view host, const LocalIdentity& identity);

}  // namespace hvd::launcher
