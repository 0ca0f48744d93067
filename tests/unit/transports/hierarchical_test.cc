// The layout of a world (transports/layout.h), the hierarchical transport
// over threads given host names (two "hosts" of two ranks: shm inside each,
// gloo across), and what "auto" picks.
#include <catch2/catch.hpp>

#include <numeric>
#include <string>
#include <vector>

#include "rank_threads.h"
#include "transports/layout.h"

namespace hvd::transports {

using testing::describe;
using testing::Problems;
using testing::RankOptions;
using testing::run_ranks;

TEST_CASE("layout: hosts by their lowest rank, local ranks in rank order") {
  const std::vector<std::string> hosts{"b", "a", "b", "a", "c"};
  Layout l = layout_of(hosts, 2);
  CHECK((l.rank == 2 && l.size == 5 && l.host == "b"));
  CHECK(l.host_index == 0);
  CHECK(l.host_count == 3);
  CHECK(l.local_rank == 1);
  CHECK(l.local_size == 2);
  // Horovod's cross rank: ranks 2 and 3 have local rank 1 (host c has none).
  CHECK((l.cross_rank == 0 && l.cross_size == 2));
  CHECK_FALSE(l.homogeneous);
  CHECK(l.hosts == std::vector<std::vector<int>>{{0, 2}, {1, 3}, {4}});
  l = layout_of({"a", "a", "b", "b"}, 3);
  CHECK((l.local_rank == 1 && l.local_size == 2 && l.host_index == 1 && l.host_count == 2));
  CHECK((l.cross_rank == 1 && l.cross_size == 2));
  CHECK(l.homogeneous);
  l = layout_of({"", "", ""}, 1);
  CHECK((l.host_count == 1 && l.local_size == 3 && l.local_rank == 1));
  CHECK((l.host_index == 0 && l.cross_rank == 0 && l.cross_size == 1));
}

TEST_CASE("layout: the host index numbers hosts, the cross rank counts ranks in rank order") {
  // a holds ranks 0 and 3, b ranks 1 and 2: local rank 1 is rank 3 on host
  // 0 and rank 2 on host 1, so rank 3's cross rank is 1 (Horovod's: rank 2
  // comes first), its host index 0.
  const Layout l = layout_of({"a", "b", "b", "a"}, 3);
  CHECK((l.host_index == 0 && l.host_count == 2 && l.local_rank == 1 && l.local_size == 2));
  CHECK((l.cross_rank == 1 && l.cross_size == 2));
  const Layout two = layout_of({"a", "b", "b", "a"}, 2);
  CHECK((two.host_index == 1 && two.local_rank == 1 && two.cross_rank == 0));
}

TEST_CASE("layout: the hosts' ranks as rank 0 publishes them, run-length encoded") {
  // 64k ranks, 8 per host in rank order: one token (issue 31).
  std::vector<int> blocks;
  for (int r = 0; r < 65536; ++r) blocks.push_back(r / 8);
  CHECK(encode_groups(blocks) == "8@8192");
  auto back = decode_groups("8@8192", 65536);
  REQUIRE(back.is_ok());
  CHECK(*back == blocks);
  // Round robin over hosts, uneven hosts, a host seen again.
  for (const std::vector<std::string>& hosts :
       {std::vector<std::string>{"b", "a", "b", "a", "c"}, {"a", "a", "b", "b", "b", "c"},
        {"a"}, {"a", "b", "c", "a", "a", "d", "d"}}) {
    const std::vector<int> groups = groups_of(hosts);
    auto decoded = decode_groups(encode_groups(groups), static_cast<int>(hosts.size()));
    REQUIRE(decoded.is_ok());
    CHECK(*decoded == groups);
    for (int r = 0; r < static_cast<int>(hosts.size()); ++r) {
      const Layout a = layout_of(hosts, r);
      const Layout b = layout_of_groups(*decoded, r, hosts[static_cast<size_t>(r)]);
      CHECK((a.hosts == b.hosts && a.host_index == b.host_index && a.host_count == b.host_count &&
             a.cross_rank == b.cross_rank && a.cross_size == b.cross_size &&
             a.local_rank == b.local_rank && a.local_size == b.local_size &&
             a.homogeneous == b.homogeneous));
    }
  }
  CHECK(encode_groups(groups_of({"b", "a", "b", "a", "c"})) == "1@2,0*1,1*1,1@1");
  // Bad text names the token.
  for (const char* bad : {"8@", "x@1", "2*1", "4@2", "1@1,,", "1@-1"}) {
    auto r = decode_groups(bad, 4);
    CHECK_FALSE(r.is_ok());
  }
  CHECK(decode_groups("2*1", 4).status().message().find("'2*1'") != std::string::npos);
}

namespace {

RankOptions two_hosts(const std::string& transport, int size) {
  RankOptions options;
  options.transport = transport;
  options.size = size;
  options.host = [size](int rank) { return "h" + std::to_string(rank * 2 / size); };
  return options;
}

}  // namespace

TEST_CASE("hierarchical: allreduce over two hosts of two ranks, every size and op") {
  auto problems = run_ranks(two_hosts("hierarchical", 4), [](int rank, auto& t, Problems& p) {
    if (t->name() != "hierarchical") p.push_back("name " + std::string(t->name()));
    for (size_t n : {size_t{1}, size_t{3}, size_t{4}, size_t{1000}, size_t{100003}}) {
      std::vector<float> data(n);
      std::iota(data.begin(), data.end(), static_cast<float>(rank));
      Status s = t->allreduce({data.data(), n * 4}, DataType::kFloat32, ReduceOp::kSum);
      if (!s.is_ok()) p.push_back(s.to_string());
      for (size_t i = 0; i < n; ++i) {
        const float want = 4.0f * static_cast<float>(i) + 6.0f;  // ranks 0..3 add 0+1+2+3
        if (data[i] != want) {
          p.push_back("n " + std::to_string(n) + " element " + std::to_string(i) + ": " +
                      std::to_string(data[i]));
          break;
        }
      }
      std::vector<int64_t> m(n, rank);
      s = t->allreduce({m.data(), n * 8}, DataType::kInt64, ReduceOp::kMax);
      if (!s.is_ok() || m[n - 1] != 3) p.push_back("max: " + s.to_string());
    }
    // The other ops run on the flat world.
    std::vector<int32_t> b(5, rank == 2 ? 7 : 0);
    if (!t->broadcast({b.data(), 20}, 2).is_ok() || b[4] != 7) p.push_back("broadcast");
    if (!t->barrier().is_ok()) p.push_back("barrier");
  });
  INFO(describe(problems));
  for (const auto& p : problems) CHECK(p.empty());
}

TEST_CASE("hierarchical: uneven hosts are refused alike, naming the counts") {
  RankOptions options;
  options.transport = "hierarchical";
  options.size = 3;
  options.host = [](int rank) { return rank < 2 ? "a" : "b"; };
  auto problems = run_ranks(options, [](int, auto&, Problems&) {});
  for (const auto& p : problems) {
    REQUIRE(p.size() == 1);
    CHECK_THAT(p[0], Catch::Contains("hierarchical collectives need the same number of ranks on "
                                     "every host; the hosts have 2, 1"));
  }
}

TEST_CASE("auto: shm on one host, hierarchical on hosts of several ranks, else gloo") {
  for (auto [size, hosts_of, want] :
       {std::tuple{2, 1, "shm"}, std::tuple{4, 2, "hierarchical"}, std::tuple{2, 2, "gloo"}}) {
    RankOptions options;
    options.transport = "auto";
    options.size = size;
    const int per_host = size / hosts_of;
    options.host = [per_host](int rank) { return "h" + std::to_string(rank / per_host); };
    const std::string expected = want;
    auto problems = run_ranks(options, [&](int, auto& t, Problems& p) {
      if (t->name() != expected) p.push_back("picked " + std::string(t->name()));
    });
    INFO(size << " ranks on " << hosts_of << " host(s): " << describe(problems));
    for (const auto& p : problems) CHECK(p.empty());
  }
}

}  // namespace hvd::transports
