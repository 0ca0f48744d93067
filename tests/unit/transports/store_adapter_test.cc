#include <catch2/catch.hpp>

#include <gloo/common/error.h>

#include <chrono>
#include <string>
#include <vector>

#include "daemon/rendezvous/kv_store.h"
#include "transports/gloo/factory.h"
#include "transports/gloo/store_adapter.h"

namespace hvd::transports::gloo {

using namespace std::chrono_literals;

TEST_CASE("store adapter: keys get the world's prefix, values stay binary", "[store_adapter]") {
  daemon::KvStore store;
  StoreAdapter adapter(store, "epoch2/cpu/", 1s);
  std::vector<char> bytes{'a', '\0', 'b'};
  adapter.set("1", bytes);
  CHECK(store.check({"epoch2/cpu/1"}).value());
  adapter.wait({"1"});
  adapter.wait({"1"}, 100ms);
  CHECK(adapter.get("1") == bytes);
  CHECK(adapter.first_error().is_ok());
}

TEST_CASE("store adapter: a missing key throws gloo's IoException and keeps the Status",
          "[store_adapter]") {
  daemon::KvStore store;
  StoreAdapter adapter(store, "p/", 50ms);
  CHECK_THROWS_AS(adapter.wait({"3"}, 50ms), ::gloo::IoException);
  CHECK(adapter.first_error().code() == common::StatusCode::kTimeout);
  CHECK_THAT(adapter.first_error().message(), Catch::Contains("p/3"));
  store.close();
  CHECK_THROWS_WITH(adapter.get("3"), Catch::Contains("rendezvous store: Cancelled"));
  CHECK(adapter.first_error().code() == common::StatusCode::kTimeout);  // the first one stays
}

TEST_CASE("gloo: connecting without the other ranks times out, naming this rank", "[transport]") {
  daemon::KvStore store;
  TransportContext context;
  context.rank = 0;
  context.size = 2;
  context.store = &store;
  context.key_prefix = "lonely/";
  context.timeout = 500ms;
  auto start = std::chrono::steady_clock::now();
  auto transport = create(context);
  REQUIRE_FALSE(transport.is_ok());
  CHECK(std::chrono::steady_clock::now() - start < 5s);
  CHECK(transport.status().code() == common::StatusCode::kTimeout);
  CHECK_THAT(transport.status().message(),
             Catch::StartsWith("gloo transport: rank 0 of 2 could not connect to its peers: "));
  CHECK_THAT(transport.status().message(), Catch::Contains("lonely/1"));
}

TEST_CASE("gloo: a bind address that is not this host's is refused", "[transport]") {
  TransportContext context;
  context.bind_address = "no-such-host.invalid";
  auto transport = create(context);
  REQUIRE_FALSE(transport.is_ok());
  CHECK(transport.status().code() == common::StatusCode::kInvalidArgument);
  CHECK_THAT(transport.status().message(), Catch::Contains("cannot listen on 'no-such-host.invalid'"));
  CHECK_THAT(transport.status().message(), Catch::Contains("it does not resolve"));
}

// Checked before gloo sees it (Debian's gloo crashed on a name that does not
// resolve): resolved, then one of this host's addresses; gloo gets the number.
TEST_CASE("gloo: a bind address is resolved and must be this host's", "[transport]") {
  TransportContext context;
  context.bind_address = "192.0.2.1";  // TEST-NET-1: nobody's
  auto foreign = create(context);
  REQUIRE_FALSE(foreign.is_ok());
  CHECK(foreign.status().code() == common::StatusCode::kInvalidArgument);
  CHECK_THAT(foreign.status().message(),
             Catch::Contains("cannot listen on '192.0.2.1': it is not an address of this host "
                             "(it has: ") &&
                 Catch::Contains("127.0.0.1"));
  context.bind_address = "0.0.0.0";
  CHECK_FALSE(create(context).is_ok());
  context.bind_address = "localhost";
  CHECK(create(context).is_ok());
  context.bind_address = "127.0.0.2";  // all of 127/8 is this host
  CHECK(create(context).is_ok());
}

}  // namespace hvd::transports::gloo
