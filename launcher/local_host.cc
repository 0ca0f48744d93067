#include "launcher/local_host.h"

#include <arpa/inet.h>
#include <netinet/in.h>
#include <sys/socket.h>
#include <unistd.h>

#include <algorithm>
#include <array>
#include <cctype>
#include <optional>

#include "common/local_interfaces.h"

namespace hvd::launcher {

namespace {

std::string lower(std::string_view s) {
  std::string out(s);
  std::transform(out.begin(), out.end(), out.begin(),
                 [](unsigned char c) { return static_cast<char>(std::tolower(c)); });
  return out;
}

std::string short_name(std::string_view name) {
  return std::string(name.substr(0, name.find('.')));
}

// An address in binary form: family plus 4 or 16 bytes.
struct Address {
  int family = AF_UNSPEC;
  std::array<unsigned char, 16> bytes{};
  bool operator==(const Address&) const = default;
};

std::optional<Address> parse_address(std::string_view text) {
  std::string s(text.substr(0, text.find('%')));  // drop an IPv6 scope id
  Address a;
  if (inet_pton(AF_INET, s.c_str(), a.bytes.data()) == 1) {
    a.family = AF_INET;
    return a;
  }
  if (inet_pton(AF_INET6, s.c_str(), a.bytes.data()) == 1) {
    a.family = AF_INET6;
    return a;
  }
  return std::nullopt;
}

bool is_loopback(const Address& a) {
  if (a.family == AF_INET) return a.bytes[0] == 127;
  static const std::array<unsigned char, 16> kV6Loopback = {0, 0, 0, 0, 0, 0, 0, 0,
                                                            0, 0, 0, 0, 0, 0, 0, 1};
  if (a.bytes == kV6Loopback) return true;
  // ::ffff:127.x.y.z
  static const std::array<unsigned char, 12> kMapped = {0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0xff, 0xff};
  return std::equal(kMapped.begin(), kMapped.end(), a.bytes.begin()) && a.bytes[12] == 127;
}

}  // namespace

LocalIdentity LocalIdentity::current() {
  LocalIdentity id;
  std::array<char, 256> name{};
  if (gethostname(name.data(), name.size() - 1) == 0) id.hostname = name.data();
  for (const common::InterfaceAddress& a : common::interface_addresses()) {
    id.addresses.push_back(a.address);
  }
  return id;
}

bool is_local_host(std::string_view host, const LocalIdentity& identity) {
  if (host.empty()) return false;
  if (auto address = parse_address(host)) {
    if (is_loopback(*address)) return true;
    return std::any_of(identity.addresses.begin(), identity.addresses.end(),
                       [&](const std::string& local) { return parse_address(local) == address; });
  }
  std::string name = lower(host);
  if (name == "localhost" || name == "localhost.localdomain" || name == "ip6-localhost")
    return true;
  if (identity.hostname.empty()) return false;
  std::string own = lower(identity.hostname);
  return name == own || name == short_name(own);
}

}  // namespace hvd::launcher
