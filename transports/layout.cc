#include "transports/layout.h"

#include <algorithm>
#include <charconv>
#include <map>

namespace hvd::transports {

std::vector<int> groups_of(const std::vector<std::string>& hosts) {
  std::map<std::string, int> index;  // host -> host index
  std::vector<int> groups;
  groups.reserve(hosts.size());
  for (const auto& host : hosts) {
    groups.push_back(index.emplace(host, static_cast<int>(index.size())).first->second);
  }
  return groups;
}

Layout layout_of_groups(const std::vector<int>& groups, int rank, const std::string& host) {
  Layout out;
  out.rank = rank;
  out.size = static_cast<int>(groups.size());
  out.host = host;
  for (size_t r = 0; r < groups.size(); ++r) {
    const auto g = static_cast<size_t>(groups[r]);
    if (g >= out.hosts.size()) out.hosts.resize(g + 1);
    out.hosts[g].push_back(static_cast<int>(r));
  }
  out.host_count = static_cast<int>(out.hosts.size());
  out.host_index = groups.at(static_cast<size_t>(rank));
  const auto& mine = out.hosts[static_cast<size_t>(out.host_index)];
  out.local_size = static_cast<int>(mine.size());
  for (size_t i = 0; i < mine.size(); ++i) {
    if (mine[i] == rank) out.local_rank = static_cast<int>(i);
  }
  // Horovod's cross rank: among the ranks of this local rank, in rank order.
  const auto local = static_cast<size_t>(out.local_rank);
  out.cross_rank = 0;
  out.cross_size = 0;
  for (const auto& h : out.hosts) {
    out.homogeneous &= h.size() == mine.size();
    if (h.size() <= local) continue;
    ++out.cross_size;
    if (h[local] < rank) ++out.cross_rank;
  }
  return out;
}

Layout layout_of(const std::vector<std::string>& hosts, int rank) {
  return layout_of_groups(groups_of(hosts), rank, hosts.at(static_cast<size_t>(rank)));
}

std::string encode_groups(const std::vector<int>& groups) {
  struct Run {
    int group, count;
  };
  std::vector<Run> runs;
  for (int g : groups) {
    if (!runs.empty() && runs.back().group == g) {
      ++runs.back().count;
    } else {
      runs.push_back({g, 1});
    }
  }
  std::string out;
  int next = 0;  // the next host not seen yet
  for (size_t i = 0; i < runs.size();) {
    if (!out.empty()) out += ',';
    if (runs[i].group != next) {
      out += std::to_string(runs[i].group) + "*" + std::to_string(runs[i].count);
      ++i;
      continue;
    }
    // New hosts in turn with the same number of ranks each.
    size_t k = 1;
    while (i + k < runs.size() && runs[i + k].group == next + static_cast<int>(k) &&
           runs[i + k].count == runs[i].count) {
      ++k;
    }
    out += std::to_string(runs[i].count) + "@" + std::to_string(k);
    next += static_cast<int>(k);
    i += k;
  }
  return out;
}

common::Result<std::vector<int>> decode_groups(const std::string& text, int size) {
  std::vector<int> groups;
  groups.reserve(static_cast<size_t>(std::max(size, 0)));
  int next = 0;
  size_t from = 0;
  while (from < text.size()) {
    size_t comma = text.find(',', from);
    if (comma == std::string::npos) comma = text.size();
    const std::string token = text.substr(from, comma - from);
    from = comma + 1;
    auto bad = [&] {
      return common::internal_error("the layout's token '" + token.substr(0, 64) +
                                    "' is not 'n@k' or 'i*n' of a world of " +
                                    std::to_string(size) + " ranks");
    };
    const size_t op = token.find_first_of("@*");
    if (op == std::string::npos) return bad();
    int a = 0, b = 0;
    auto [pa, ea] = std::from_chars(token.data(), token.data() + op, a);
    auto [pb, eb] = std::from_chars(token.data() + op + 1, token.data() + token.size(), b);
    if (ea != std::errc() || eb != std::errc() || pa != token.data() + op ||
        pb != token.data() + token.size() || a < 0 || b < 1) {
      return bad();
    }
    const int64_t adds = token[op] == '@' ? int64_t{a} * b : b;
    if (static_cast<int64_t>(groups.size()) + adds > size) return bad();
    if (token[op] == '@') {
      if (a < 1) return bad();
      for (int h = 0; h < b; ++h, ++next) groups.insert(groups.end(), static_cast<size_t>(a), next);
    } else {
      if (a > next) return bad();
      if (a == next) ++next;
      groups.insert(groups.end(), static_cast<size_t>(b), a);
    }
  }
  if (static_cast<int>(groups.size()) != size) {
    return common::internal_error("the layout holds " + std::to_string(groups.size()) +
                                  " ranks, not " + std::to_string(size));
  }
  return groups;
}

common::Result<Layout> exchange_layout(const TransportContext& context) {
  if (context.size == 1) return layout_of({context.host}, 0);
  if (context.store == nullptr) {
    return common::invalid_argument("the layout of a world of " + std::to_string(context.size) +
                                    " ranks needs a store");
  }
  const std::string prefix = context.key_prefix + "layout/";
  HVD_RETURN_IF_ERROR(context.store->set(prefix + std::to_string(context.rank), context.host));
  auto failed = [&](const common::Status& status) {
    return common::Status(status.code(), "rank " + std::to_string(context.rank) + " of " +
                                              std::to_string(context.size) +
                                              ": the ranks' hosts did not arrive: " +
                                              status.message());
  };
  std::string text;
  if (context.rank == 0) {
    std::vector<std::string> keys;
    for (int r = 0; r < context.size; ++r) keys.push_back(prefix + std::to_string(r));
    auto hosts = context.store->get(keys, context.timeout);
    if (!hosts.is_ok()) return failed(hosts.status());
    text = encode_groups(groups_of(*hosts));
    HVD_RETURN_IF_ERROR(context.store->set(prefix + "all", text));
  } else {
    auto all = context.store->get({prefix + "all"}, context.timeout);
    if (!all.is_ok()) return failed(all.status());
    text = std::move(all->front());
  }
  auto groups = decode_groups(text, context.size);
  if (!groups.is_ok()) return groups.status();
  return layout_of_groups(*groups, context.rank, context.host);
}

}  // namespace hvd::transports
