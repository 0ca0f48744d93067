// The C ABI of libhvd.so in a world of one (no launcher): what Python's
// ctypes binding will see.
#include <catch2/catch.hpp>

#include <cstdlib>
#include <string>
#include <thread>
#include <vector>

#include "hvd/c_api.h"

namespace {

void clear_environment() {
  for (const char* name : {"HVD_RANK", "HVD_SIZE", "HVD_LOCAL_RANK", "HVD_LOCAL_SIZE",
                           "HVD_CROSS_RANK", "HVD_CROSS_SIZE", "HVD_RENDEZVOUS_ADDR",
                           "HVD_JOB_TOKEN", "HVD_CPU_TRANSPORT", "HVD_LOG_LEVEL"}) {
    unsetenv(name);
  }
}

// Leaves the process's runtime shut down whatever the test did.
struct ShutdownAfter {
  ~ShutdownAfter() { hvd_shutdown(); }
};

}  // namespace

TEST_CASE("c api: calls before init", "[c_api]") {
  clear_environment();
  REQUIRE(hvd_shutdown() == HVD_OK);  // a no-op when not initialized
  CHECK(hvd_is_initialized() == 0);
  CHECK(hvd_rank() == -1);
  CHECK(hvd_size() == -1);
  CHECK(hvd_local_rank() == -1);
  CHECK(hvd_cross_size() == -1);
  int32_t x = 1;
  CHECK(hvd_allreduce(&x, 1, HVD_INT32, HVD_OP_SUM) == HVD_ERR_FAILED_PRECONDITION);
  CHECK(std::string(hvd_last_error()) == "hvd is not initialized: call hvd_init() first");
  CHECK(hvd_barrier() == HVD_ERR_FAILED_PRECONDITION);
}

TEST_CASE("c api: a world of one", "[c_api]") {
  clear_environment();
  ShutdownAfter cleanup;
  REQUIRE(hvd_init() == HVD_OK);
  REQUIRE(hvd_init() == HVD_OK);  // already initialized: a no-op
  CHECK(hvd_is_initialized() == 1);
  CHECK(hvd_rank() == 0);
  CHECK(hvd_size() == 1);
  CHECK(hvd_local_rank() == 0);
  CHECK(hvd_local_size() == 1);
  CHECK(hvd_cross_rank() == 0);
  CHECK(hvd_cross_size() == 1);

  std::vector<int32_t> ints{-3, 4};
  REQUIRE(hvd_allreduce(ints.data(), 2, HVD_INT32, HVD_OP_AVERAGE) == HVD_OK);
  CHECK(ints == std::vector<int32_t>{-3, 4});
  std::vector<float> floats{1.5f, 2.5f};
  REQUIRE(hvd_allreduce(floats.data(), 2, HVD_FLOAT32, HVD_OP_MAX) == HVD_OK);
  CHECK(floats == std::vector<float>{1.5f, 2.5f});
  REQUIRE(hvd_broadcast(floats.data(), 2, HVD_FLOAT32, 0) == HVD_OK);
  std::vector<double> in{1.0, 2.0, 3.0};
  std::vector<double> out(3);
  REQUIRE(hvd_allgather(in.data(), 3, HVD_FLOAT64, out.data(), nullptr) == HVD_OK);
  CHECK(out == in);
  int64_t counts[] = {3};
  REQUIRE(hvd_allgather(in.data(), 3, HVD_FLOAT64, out.data(), counts) == HVD_OK);
  REQUIRE(hvd_barrier() == HVD_OK);
  REQUIRE(hvd_allreduce(nullptr, 0, HVD_INT64, HVD_OP_SUM) == HVD_OK);
}

TEST_CASE("c api: argument errors", "[c_api]") {
  clear_environment();
  ShutdownAfter cleanup;
  REQUIRE(hvd_init() == HVD_OK);
  int32_t x = 1;
  CHECK(hvd_allreduce(&x, 1, 42, HVD_OP_SUM) == HVD_ERR_INVALID_ARGUMENT);
  CHECK(std::string(hvd_last_error()) == "allreduce: 42 is not a data type code (0..9)");
  CHECK(hvd_allreduce(&x, 1, HVD_INT32, 9) == HVD_ERR_INVALID_ARGUMENT);
  CHECK(hvd_broadcast(&x, 1, HVD_INT32, 1) == HVD_ERR_INVALID_ARGUMENT);
  CHECK(std::string(hvd_last_error()) == "broadcast: root 1 is out of range for a world of size 1");
  CHECK(hvd_allreduce(&x, 1, HVD_BOOL, HVD_OP_AVERAGE) == HVD_ERR_INVALID_ARGUMENT);
  CHECK(std::string(hvd_last_error()) == "allreduce: average is not defined for bool");
  uint16_t half = 0x3c00;  // float16 1.0: reduced (a world of one leaves it as it is)
  CHECK(hvd_allreduce(&half, 1, HVD_FLOAT16, HVD_OP_SUM) == HVD_OK);
  CHECK(half == 0x3c00);
  int64_t wrong[] = {2};
  CHECK(hvd_allgather(&x, 1, HVD_INT32, &x, wrong) == HVD_ERR_INVALID_ARGUMENT);
  CHECK(std::string(hvd_last_error()) == "allgather: counts[0] is 2 but this rank contributes 1");

  // The last error belongs to the thread that failed.
  std::string other = "unset";
  std::thread([&] { other = hvd_last_error(); }).join();
  CHECK(other.empty());
  // The world still works after refused calls.
  CHECK(hvd_allreduce(&x, 1, HVD_INT32, HVD_OP_SUM) == HVD_OK);
}

TEST_CASE("c api: shutdown then init again", "[c_api]") {
  clear_environment();
  ShutdownAfter cleanup;
  for (int round = 0; round < 3; ++round) {
    REQUIRE(hvd_init() == HVD_OK);
    int64_t v = 7;
    REQUIRE(hvd_allreduce(&v, 1, HVD_INT64, HVD_OP_SUM) == HVD_OK);
    CHECK(v == 7);
    REQUIRE(hvd_shutdown() == HVD_OK);
    CHECK(hvd_is_initialized() == 0);
  }
}

TEST_CASE("c api: a malformed environment fails init with the variable named", "[c_api]") {
  clear_environment();
  setenv("HVD_RANK", "one", 1);
  setenv("HVD_SIZE", "2", 1);
  CHECK(hvd_init() == HVD_ERR_INVALID_ARGUMENT);
  CHECK(std::string(hvd_last_error()) == "HVD_RANK='one' is not a whole number");
  CHECK(hvd_is_initialized() == 0);
  clear_environment();
  setenv("HVD_LOG_LEVEL", "loud", 1);
  CHECK(hvd_init() == HVD_ERR_INVALID_ARGUMENT);
  CHECK_THAT(std::string(hvd_last_error()), Catch::Contains("HVD_LOG_LEVEL"));
  clear_environment();
  setenv("HVD_CPU_TRANSPORT", "mpi", 1);
  CHECK(hvd_init() == HVD_ERR_NOT_FOUND);
  CHECK(std::string(hvd_last_error()) == "unknown transport 'mpi' (registered: gloo)");
  clear_environment();
}

TEST_CASE("c api: constants and version", "[c_api]") {
  int64_t value = -1;
  REQUIRE(hvd_constant("HVD_FLOAT32", &value) == HVD_OK);
  CHECK(value == HVD_FLOAT32);
  REQUIRE(hvd_constant("HVD_OP_PRODUCT", &value) == HVD_OK);
  CHECK(value == HVD_OP_PRODUCT);
  REQUIRE(hvd_constant("HVD_ERR_INTERNAL", &value) == HVD_OK);
  CHECK(value == HVD_ERR_INTERNAL);
  CHECK(hvd_constant("HVD_FLOAT128", &value) == HVD_ERR_NOT_FOUND);
  CHECK(std::string(hvd_last_error()) == "hvd_constant: no constant named 'HVD_FLOAT128'");
  CHECK(hvd_constant(nullptr, &value) == HVD_ERR_INVALID_ARGUMENT);
  CHECK(std::string(hvd_version()) == HVD_TEST_EXPECTED_VERSION);
}
