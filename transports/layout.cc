#include "transports/layout.h"

#include <map>

namespace hvd::transports {

Layout layout_of(const std::vector<std::string>& hosts, int rank) {
  Layout out;
  out.rank = rank;
  out.size = static_cast<int>(hosts.size());
  out.host = hosts.at(static_cast<size_t>(rank));
  std::map<std::string, int> index;  // host -> cross rank
  for (size_t r = 0; r < hosts.size(); ++r) {
    auto [it, added] = index.emplace(hosts[r], static_cast<int>(out.hosts.size()));
    if (added) out.hosts.emplace_back();
    out.hosts[static_cast<size_t>(it->second)].push_back(static_cast<int>(r));
  }
  out.cross_size = static_cast<int>(out.hosts.size());
  out.cross_rank = index.at(out.host);
  const auto& mine = out.hosts[static_cast<size_t>(out.cross_rank)];
  out.local_size = static_cast<int>(mine.size());
  for (size_t i = 0; i < mine.size(); ++i) {
    if (mine[i] == rank) out.local_rank = static_cast<int>(i);
  }
  for (const auto& host : out.hosts) out.homogeneous &= host.size() == mine.size();
  return out;
}

common::Result<Layout> exchange_layout(const TransportContext& context) {
  if (context.size == 1) return layout_of({context.host}, 0);
  if (context.store == nullptr) {
    return common::invalid_argument("the layout of a world of " + std::to_string(context.size) +
                                    " ranks needs a store");
  }
  const std::string prefix = context.key_prefix + "layout/";
  HVD_RETURN_IF_ERROR(context.store->set(prefix + std::to_string(context.rank), context.host));
  std::vector<std::string> keys;
  for (int r = 0; r < context.size; ++r) keys.push_back(prefix + std::to_string(r));
  auto hosts = context.store->get(keys, context.timeout);
  if (!hosts.is_ok()) {
    return common::Status(hosts.status().code(),
                          "rank " + std::to_string(context.rank) + " of " +
                              std::to_string(context.size) +
                              ": the ranks' hosts did not arrive: " + hosts.status().message());
  }
  return layout_of(*hosts, context.rank);
}

}  // namespace hvd::transports
