#include <catch2/catch.hpp>

#include <optional>
#include <stdexcept>
#include <string>
#include <vector>

#include "runtime/engine/response_cache.h"

namespace hvd::runtime::engine {
namespace {

Request request(const std::string& name, std::vector<int64_t> shape = {4}) {
  Request r;
  r.name = name;
  r.shape = std::move(shape);
  return r;
}

}  // namespace

TEST_CASE("response cache: lookup and find_name", "[response_cache]") {
  ResponseCache cache(4);
  CHECK(cache.capacity() == 4);
  CHECK(cache.size() == 0);
  CHECK_FALSE(cache.lookup(request("a")).has_value());
  CHECK(cache.put(request("a")) == std::optional<size_t>(0));
  CHECK(cache.put(request("b")) == std::optional<size_t>(1));
  CHECK(cache.size() == 2);
  CHECK(cache.lookup(request("a")) == std::optional<size_t>(0));
  CHECK(cache.lookup(request("b")) == std::optional<size_t>(1));
  CHECK(cache.find_name("b") == std::optional<size_t>(1));
  CHECK_FALSE(cache.find_name("c").has_value());
  // Same name, another signature: find_name finds it, lookup does not.
  CHECK_FALSE(cache.lookup(request("a", {5})).has_value());
  CHECK(cache.find_name("a") == std::optional<size_t>(0));
  // The submitting rank is not part of the signature.
  Request other_rank = request("a");
  other_rank.rank = 3;
  CHECK(cache.lookup(other_rank) == std::optional<size_t>(0));
  CHECK(cache.occupied(0));
  CHECK(cache.occupied(1));
  CHECK_FALSE(cache.occupied(2));
  CHECK_FALSE(cache.occupied(100));
  CHECK(cache.at(1).name == "b");
  CHECK_THROWS_AS(cache.at(2), std::logic_error);
  CHECK_THROWS_AS(cache.at(100), std::logic_error);
  CHECK_THROWS_AS(cache.touch(3), std::logic_error);
}

TEST_CASE("response cache: put of a known name replaces its bit", "[response_cache]") {
  ResponseCache cache(2);
  cache.put(request("a"));
  cache.put(request("b"));
  // Replacing "a" keeps bit 0 and makes "a" most recent...
  CHECK(cache.put(request("a", {8})) == std::optional<size_t>(0));
  CHECK(cache.size() == 2);
  CHECK(cache.at(0).shape == std::vector<int64_t>{8});
  CHECK(cache.lookup(request("a", {8})) == std::optional<size_t>(0));
  CHECK_FALSE(cache.lookup(request("a")).has_value());
  // ...so "b" is evicted next.
  CHECK(cache.put(request("c")) == std::optional<size_t>(1));
  CHECK_FALSE(cache.find_name("b").has_value());
  CHECK(cache.find_name("a") == std::optional<size_t>(0));
}

TEST_CASE("response cache: LRU eviction with capacity 2", "[response_cache]") {
  ResponseCache cache(2);
  CHECK(cache.put(request("a")) == std::optional<size_t>(0));
  CHECK(cache.put(request("b")) == std::optional<size_t>(1));
  CHECK(cache.put(request("c")) == std::optional<size_t>(0));  // evicts a
  CHECK_FALSE(cache.find_name("a").has_value());
  CHECK(cache.put(request("d")) == std::optional<size_t>(1));  // evicts b
  CHECK_FALSE(cache.find_name("b").has_value());
  CHECK(cache.at(0).name == "c");
  CHECK(cache.at(1).name == "d");
  CHECK(cache.size() == 2);
}

TEST_CASE("response cache: LRU eviction with capacity 3", "[response_cache]") {
  ResponseCache cache(3);
  cache.put(request("a"));  // 0
  cache.put(request("b"));  // 1
  cache.put(request("c"));  // 2
  CHECK(cache.put(request("d")) == std::optional<size_t>(0));  // evicts a
  CHECK(cache.put(request("e")) == std::optional<size_t>(1));  // evicts b
  CHECK(cache.put(request("f")) == std::optional<size_t>(2));  // evicts c
  CHECK(cache.put(request("g")) == std::optional<size_t>(0));  // evicts d
  CHECK(cache.at(0).name == "g");
  CHECK(cache.at(1).name == "e");
  CHECK(cache.at(2).name == "f");
}

TEST_CASE("response cache: touch changes the eviction order", "[response_cache]") {
  ResponseCache cache(3);
  cache.put(request("a"));  // 0
  cache.put(request("b"));  // 1
  cache.put(request("c"));  // 2
  cache.touch(0);           // order now (least recent first): b, c, a
  CHECK(cache.put(request("d")) == std::optional<size_t>(1));  // evicts b
  CHECK(cache.find_name("a") == std::optional<size_t>(0));
  cache.touch(2);  // order now: a, d, c
  CHECK(cache.put(request("e")) == std::optional<size_t>(0));  // evicts a
  CHECK(cache.put(request("f")) == std::optional<size_t>(1));  // evicts d
  CHECK(cache.find_name("c") == std::optional<size_t>(2));
  CHECK(cache.put(request("g")) == std::optional<size_t>(2));  // evicts c
}

TEST_CASE("response cache: erase frees the bit for reuse", "[response_cache]") {
  ResponseCache cache(4);
  cache.put(request("a"));  // 0
  cache.put(request("b"));  // 1
  cache.put(request("c"));  // 2
  cache.erase(1);
  CHECK_FALSE(cache.occupied(1));
  CHECK_FALSE(cache.find_name("b").has_value());
  CHECK(cache.size() == 2);
  cache.erase(1);  // already free: nothing happens
  cache.erase(42);
  CHECK(cache.size() == 2);
  cache.erase(0);
  // Lowest free bit first.
  CHECK(cache.put(request("d")) == std::optional<size_t>(0));
  CHECK(cache.put(request("e")) == std::optional<size_t>(1));
  CHECK(cache.put(request("f")) == std::optional<size_t>(3));
  // Full now; an erased entry is not evicted again, and "c" is the oldest.
  CHECK(cache.put(request("g")) == std::optional<size_t>(2));
  CHECK_FALSE(cache.find_name("c").has_value());
  CHECK(cache.size() == 4);
  // Erase everything, then fill again from bit 0.
  for (size_t s = 0; s < 4; ++s) cache.erase(s);
  CHECK(cache.size() == 0);
  CHECK(cache.put(request("h")) == std::optional<size_t>(0));
  CHECK(cache.put(request("d")) == std::optional<size_t>(1));
}

TEST_CASE("response cache: capacity 0 disables it", "[response_cache]") {
  ResponseCache cache(0);
  CHECK_FALSE(cache.put(request("a")).has_value());
  CHECK_FALSE(cache.lookup(request("a")).has_value());
  CHECK_FALSE(cache.find_name("a").has_value());
  CHECK(cache.size() == 0);
  CHECK_FALSE(cache.occupied(0));
  CHECK_THROWS_AS(cache.at(0), std::logic_error);
  cache.erase(0);
}

TEST_CASE("response cache: identical call sequences give identical bits", "[response_cache]") {
  // Two "ranks" apply the same pseudo-random sequence of puts, touches and
  // erases; every bit number and every final entry agrees.
  auto run = [](uint32_t seed) {
    ResponseCache cache(5);
    std::vector<std::string> log;
    uint32_t state = seed;
    auto next = [&state] {
      state = state * 1664525u + 1013904223u;
      return state >> 16;
    };
    for (int step = 0; step < 2000; ++step) {
      uint32_t what = next() % 4;
      std::string name = "t" + std::to_string(next() % 9);
      if (what <= 1) {
        auto bit = cache.put(request(name, {static_cast<int64_t>(next() % 2)}));
        log.push_back("put " + name + " " + std::to_string(bit.value()));
      } else if (what == 2) {
        if (auto bit = cache.find_name(name)) {
          cache.touch(*bit);
          log.push_back("touch " + std::to_string(*bit));
        }
      } else if (auto bit = cache.find_name(name)) {
        cache.erase(*bit);
        log.push_back("erase " + std::to_string(*bit));
      }
      REQUIRE(cache.size() <= cache.capacity());
    }
    for (size_t s = 0; s < cache.capacity(); ++s) {
      log.push_back(cache.occupied(s) ? cache.at(s).name : "-");
    }
    return log;
  };
  auto first = run(7);
  auto second = run(7);
  CHECK(first == second);
  CHECK(first.size() > 1000);
}

TEST_CASE("response cache: agrees with a naive model", "[response_cache]") {
  // The model: bits with a last-use stamp; a new name takes the lowest free
  // bit, else the bit with the oldest stamp.
  for (size_t capacity : {1u, 2u, 3u, 8u}) {
    CAPTURE(capacity);
    ResponseCache cache(capacity);
    std::vector<std::optional<std::string>> names(capacity);
    std::vector<int64_t> stamps(capacity, 0);
    int64_t clock = 0;
    uint32_t state = 12345;
    auto next = [&state] {
      state = state * 1664525u + 1013904223u;
      return state >> 16;
    };
    auto model_find = [&](const std::string& name) -> std::optional<size_t> {
      for (size_t s = 0; s < capacity; ++s) {
        if (names[s] == name) return s;
      }
      return std::nullopt;
    };
    for (int step = 0; step < 5000; ++step) {
      uint32_t what = next() % 5;
      std::string name = "t" + std::to_string(next() % (capacity * 2 + 1));
      auto found = model_find(name);
      REQUIRE(cache.find_name(name) == found);
      if (what <= 2) {
        size_t bit = 0;
        if (found) {
          bit = *found;
        } else {
          std::optional<size_t> free_slot;
          for (size_t s = 0; s < capacity && !free_slot; ++s) {
            if (!names[s]) free_slot = s;
          }
          if (free_slot) {
            bit = *free_slot;
          } else {
            for (size_t s = 1; s < capacity; ++s) {
              if (stamps[s] < stamps[bit]) bit = s;
            }
          }
        }
        names[bit] = name;
        stamps[bit] = ++clock;
        REQUIRE(cache.put(request(name)) == std::optional<size_t>(bit));
      } else if (what == 3 && found) {
        stamps[*found] = ++clock;
        cache.touch(*found);
      } else if (what == 4 && found) {
        names[*found].reset();
        cache.erase(*found);
      }
      size_t occupied = 0;
      for (size_t s = 0; s < capacity; ++s) {
        REQUIRE(cache.occupied(s) == names[s].has_value());
        if (names[s]) {
          ++occupied;
          REQUIRE(cache.at(s).name == *names[s]);
        }
      }
      REQUIRE(cache.size() == occupied);
    }
  }
}

}  // namespace hvd::runtime::engine
