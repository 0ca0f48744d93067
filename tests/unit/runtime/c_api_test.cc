// The C ABI of libhvd.so in a world of one (no launcher): what Python's
// ctypes binding will see.
#include <dlfcn.h>
#include <unistd.h>

#include <catch2/catch.hpp>
#include <cstddef>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <iterator>
#include <string>
#include <thread>
#include <vector>

#include "hvd/c_api.h"

namespace {

void clear_environment() {
  for (const char* name : {"HVD_RANK", "HVD_SIZE", "HVD_LOCAL_RANK", "HVD_LOCAL_SIZE",
                           "HVD_CROSS_RANK", "HVD_CROSS_SIZE", "HVD_RENDEZVOUS_ADDR",
                           "HVD_JOB_TOKEN", "HVD_CPU_TRANSPORT", "HVD_GPU_TRANSPORT",
                           "HVD_TRANSPORT_PLUGINS", "HVD_LOG_LEVEL",
                           "HVD_START_TIMEOUT"}) {
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
  CHECK(hvd_elastic_committed(3, 0) == HVD_OK);  // nothing to tell
}

TEST_CASE("c api: hvd_elastic_committed outside a launched job", "[c_api]") {
  clear_environment();
  ShutdownAfter cleanup;
  REQUIRE(hvd_init() == HVD_OK);
  CHECK(hvd_elastic_committed(0, 1) == HVD_OK);  // no rendezvous: nobody to tell
  CHECK(hvd_elastic_committed(12, 0) == HVD_OK);
  CHECK(hvd_elastic_committed(-1, 0) == HVD_ERR_INVALID_ARGUMENT);
  CHECK(std::string(hvd_last_error()) == "hvd_elastic_committed: commit -1 is negative");
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
  CHECK(std::string(hvd_last_error()) == "unknown transport 'mpi' (registered: auto, gloo, hierarchical, shm)");
  clear_environment();
}

// The folder of the libhvd.so this test runs against.
std::filesystem::path loaded_library_dir() {
  Dl_info info{};
  REQUIRE(dladdr(reinterpret_cast<void*>(&hvd_init), &info) != 0);
  return std::filesystem::absolute(info.dli_fname).parent_path();
}

TEST_CASE("c api: build features, before and after init", "[c_api]") {
  clear_environment();
  const bool nccl = std::filesystem::exists(loaded_library_dir() / "libhvd_nccl.so");
  auto check_all = [&] {
    CHECK(hvd_build_feature("gloo_built") == 1);
    CHECK(hvd_build_feature("gloo_enabled") == 1);
    // Horovod's answer: NCCL's version code (2.28.9: 22809), 0 without it.
    CHECK(hvd_build_feature("nccl_built") == (nccl ? HVD_TEST_NCCL_VERSION_CODE : 0));
    CHECK(hvd_build_feature("cuda_built") == (nccl ? 1 : 0));
    for (const char* name : {"mpi_built", "mpi_enabled", "mpi_threads_supported", "rocm_built",
                             "ccl_built", "ddl_built"}) {
      INFO(name);
      CHECK(hvd_build_feature(name) == 0);
    }
  };
  check_all();
  {
    ShutdownAfter cleanup;
    REQUIRE(hvd_init() == HVD_OK);
    check_all();
  }
  CHECK(hvd_build_feature("adasum_built") == -HVD_ERR_NOT_FOUND);
  CHECK(std::string(hvd_last_error()) == "hvd_build_feature: no feature named 'adasum_built'");
  CHECK(hvd_build_feature(nullptr) == -HVD_ERR_INVALID_ARGUMENT);
  CHECK(std::string(hvd_last_error()) == "hvd_build_feature: name is null");
}

TEST_CASE("c api: gloo_enabled follows the cpu_transport setting", "[c_api]") {
  clear_environment();
  setenv("HVD_CPU_TRANSPORT", "shm", 1);
  CHECK(hvd_build_feature("gloo_enabled") == 0);
  CHECK(hvd_build_feature("gloo_built") == 1);
  clear_environment();
  setenv("HVD_START_TIMEOUT", "soon", 1);  // what init would refuse, named
  CHECK(hvd_build_feature("gloo_enabled") == -HVD_ERR_INVALID_ARGUMENT);
  CHECK_THAT(std::string(hvd_last_error()), Catch::Contains("HVD_START_TIMEOUT"));
  clear_environment();
}

TEST_CASE("c api: nccl_built and cuda_built see libhvd_nccl.so beside libhvd.so", "[c_api]") {
  clear_environment();
  // A copy of libhvd.so in a folder of its own, loaded beside this one.
  char dir_template[] = "/tmp/hvd_nccl_probe_XXXXXX";
  REQUIRE(mkdtemp(dir_template) != nullptr);
  const std::filesystem::path dir(dir_template);
  std::filesystem::copy_file(loaded_library_dir() / "libhvd.so", dir / "libhvd.so");
  std::ofstream(dir / "libhvd_nccl.so").close();  // presence is what counts
  void* copy = dlopen((dir / "libhvd.so").c_str(), RTLD_NOW | RTLD_LOCAL);
  REQUIRE(copy != nullptr);
  auto feature = reinterpret_cast<int (*)(const char*)>(dlsym(copy, "hvd_build_feature"));
  REQUIRE(feature != nullptr);
  REQUIRE(feature != &hvd_build_feature);  // really the copy
  CHECK(feature("nccl_built") == HVD_TEST_NCCL_VERSION_CODE);
  CHECK(feature("nccl_built") >= 2700);  // code that checks for NCCL's alltoall
  CHECK(feature("cuda_built") == 1);
  CHECK(feature("gloo_built") == 1);
  std::filesystem::remove(dir / "libhvd_nccl.so");
  CHECK(feature("nccl_built") == 0);
  CHECK(feature("cuda_built") == 0);
  std::filesystem::create_directory(dir / "libhvd_nccl.so");  // not a library
  CHECK(feature("nccl_built") == 0);
  std::filesystem::remove_all(dir);
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
  struct Known {
    const char* name;
    int64_t value;
  };
  for (Known k : {Known{"HVD_OPTYPE_ALLREDUCE", HVD_OPTYPE_ALLREDUCE},
                  Known{"HVD_OPTYPE_ALLGATHER", HVD_OPTYPE_ALLGATHER},
                  Known{"HVD_OPTYPE_BROADCAST", HVD_OPTYPE_BROADCAST},
                  Known{"HVD_OPTYPE_ALLTOALL", HVD_OPTYPE_ALLTOALL},
                  Known{"HVD_OPTYPE_REDUCESCATTER", HVD_OPTYPE_REDUCESCATTER},
                  Known{"HVD_OPTYPE_BARRIER", HVD_OPTYPE_BARRIER},
                  Known{"HVD_OPTYPE_JOIN", HVD_OPTYPE_JOIN}, Known{"HVD_DEVICE_CPU", HVD_DEVICE_CPU},
                  Known{"HVD_GLOBAL_PROCESS_SET", HVD_GLOBAL_PROCESS_SET}}) {
    INFO(k.name);
    value = 12345;
    REQUIRE(hvd_constant(k.name, &value) == HVD_OK);
    CHECK(value == k.value);
  }
}

namespace {

hvd_op make(int32_t type, void* input, void* output, const int64_t* shape, int32_t ndim,
            int32_t dtype = HVD_FLOAT32, const char* name = nullptr) {
  hvd_op op = hvd_op_defaults(type);
  op.name = name;
  op.input = input;
  op.output = output;
  op.shape = shape;
  op.ndim = ndim;
  op.dtype = dtype;
  return op;
}

}  // namespace

TEST_CASE("c api: async ops and handles in a world of one", "[c_api]") {
  clear_environment();
  ShutdownAfter cleanup;
  REQUIRE(hvd_init() == HVD_OK);

  std::vector<float> data{1.0f, 2.0f, 3.0f, 4.0f};
  int64_t shape2[] = {2, 2};
  hvd_op ar = make(HVD_OPTYPE_ALLREDUCE, data.data(), data.data(), shape2, 2, HVD_FLOAT32, "w");
  ar.reduce_op = HVD_OP_AVERAGE;
  ar.prescale_factor = 2.0;
  ar.postscale_factor = 0.25;
  int64_t h = 0;
  REQUIRE(hvd_enqueue(&ar, &h) == HVD_OK);
  CHECK(h >= 1);
  REQUIRE(hvd_wait(h, 10) == HVD_OK);
  CHECK(hvd_poll(h) == 1);
  CHECK(data == std::vector<float>{0.5f, 1.0f, 1.5f, 2.0f});
  int64_t out_shape[4];
  int32_t ndim = -1;
  // allreduce writes in place: its engine output is empty.
  CHECK(hvd_handle_output_shape(h, out_shape, 4, &ndim) == HVD_OK);
  CHECK(ndim == 0);
  REQUIRE(hvd_release(h) == HVD_OK);
  CHECK(hvd_poll(h) == -HVD_ERR_NOT_FOUND);
  CHECK(hvd_release(h) == HVD_ERR_NOT_FOUND);

  // Integers scale as Horovod's do: float64 products, truncated.
  std::vector<int32_t> ints{7, -7, 5};
  int64_t three[] = {3};
  hvd_op ir = make(HVD_OPTYPE_ALLREDUCE, ints.data(), ints.data(), three, 1, HVD_INT32);
  ir.reduce_op = HVD_OP_SUM;
  ir.prescale_factor = 0.5;   // 3, -3, 2
  ir.postscale_factor = 2.5;  // 7, -7, 5
  REQUIRE(hvd_enqueue(&ir, &h) == HVD_OK);
  REQUIRE(hvd_wait(h, 10) == HVD_OK);
  CHECK(ints == std::vector<int32_t>{7, -7, 5});
  REQUIRE(hvd_release(h) == HVD_OK);

  // allgather: the engine allocates the output.
  std::vector<int16_t> rows{1, 2, 3, 4, 5, 6};
  int64_t shape3[] = {3, 2};
  hvd_op ag = make(HVD_OPTYPE_ALLGATHER, rows.data(), nullptr, shape3, 2, HVD_INT16);
  REQUIRE(hvd_enqueue(&ag, &h) == HVD_OK);
  REQUIRE(hvd_wait(h, 10) == HVD_OK);
  REQUIRE(hvd_handle_output_shape(h, out_shape, 4, &ndim) == HVD_OK);
  CHECK(ndim == 2);
  CHECK(out_shape[0] == 3);
  CHECK(out_shape[1] == 2);
  CHECK(hvd_handle_output_shape(h, out_shape, 1, &ndim) == HVD_ERR_INVALID_ARGUMENT);
  std::vector<int16_t> copy(6);
  CHECK(hvd_handle_copy_output(h, copy.data(), 10) == HVD_ERR_INVALID_ARGUMENT);
  CHECK_THAT(std::string(hvd_last_error()), Catch::Contains("12 bytes"));
  REQUIRE(hvd_handle_copy_output(h, copy.data(), 12) == HVD_OK);
  CHECK(copy == rows);
  int64_t splits[1];
  CHECK(hvd_handle_received_splits(h, splits, 1) == HVD_ERR_INVALID_ARGUMENT);
  int32_t last = -1;
  CHECK(hvd_handle_join_result(h, &last) == HVD_ERR_INVALID_ARGUMENT);
  REQUIRE(hvd_release(h) == HVD_OK);

  // The output handed over instead of copied: valid after the handle is
  // released, until hvd_output_free; taken once only.
  REQUIRE(hvd_enqueue(&ag, &h) == HVD_OK);
  REQUIRE(hvd_wait(h, 10) == HVD_OK);
  void* taken = nullptr;
  void* token = nullptr;
  int64_t bytes = 0;
  CHECK(hvd_handle_take_output(h, &taken, &bytes, nullptr) == HVD_ERR_INVALID_ARGUMENT);
  REQUIRE(hvd_handle_take_output(h, &taken, &bytes, &token) == HVD_OK);
  CHECK(bytes == 12);
  CHECK(token != nullptr);
  CHECK(hvd_handle_take_output(h, &taken, &bytes, &token) == HVD_ERR_INVALID_ARGUMENT);
  CHECK_THAT(std::string(hvd_last_error()), Catch::Contains("no host output to take"));
  REQUIRE(hvd_release(h) == HVD_OK);
  CHECK(std::vector<int16_t>(static_cast<int16_t*>(taken), static_cast<int16_t*>(taken) + 6) == rows);
  hvd_output_free(token);
  hvd_output_free(nullptr);
  CHECK(hvd_handle_take_output(h, &taken, &bytes, &token) == HVD_ERR_NOT_FOUND);

  // alltoall with splits, reducescatter, barrier, join.
  hvd_op a2a = make(HVD_OPTYPE_ALLTOALL, rows.data(), nullptr, shape3, 2, HVD_INT16);
  int64_t all_rows[] = {3};
  a2a.splits = all_rows;
  REQUIRE(hvd_enqueue(&a2a, &h) == HVD_OK);
  REQUIRE(hvd_wait(h, 10) == HVD_OK);
  REQUIRE(hvd_handle_received_splits(h, splits, 1) == HVD_OK);
  CHECK(splits[0] == 3);
  REQUIRE(hvd_release(h) == HVD_OK);
  hvd_op rs = make(HVD_OPTYPE_REDUCESCATTER, rows.data(), nullptr, shape3, 2, HVD_INT16);
  REQUIRE(hvd_enqueue(&rs, &h) == HVD_OK);
  REQUIRE(hvd_wait(h, 10) == HVD_OK);
  REQUIRE(hvd_handle_copy_output(h, copy.data(), 12) == HVD_OK);
  CHECK(copy == rows);
  REQUIRE(hvd_release(h) == HVD_OK);
  hvd_op join = make(HVD_OPTYPE_JOIN, nullptr, nullptr, nullptr, 0);
  REQUIRE(hvd_enqueue(&join, &h) == HVD_OK);
  REQUIRE(hvd_wait(h, 10) == HVD_OK);
  REQUIRE(hvd_handle_join_result(h, &last) == HVD_OK);
  CHECK(last == 0);
  REQUIRE(hvd_release(h) == HVD_OK);

  // A group: every handle comes back; they complete together.
  std::vector<double> g1{1.0}, g2{2.0, 3.0};
  int64_t s1[] = {1}, s2[] = {2};
  hvd_op group[] = {make(HVD_OPTYPE_ALLREDUCE, g1.data(), g1.data(), s1, 1, HVD_FLOAT64, "g1"),
                    make(HVD_OPTYPE_ALLGATHER, g2.data(), nullptr, s2, 1, HVD_FLOAT64, "g2")};
  int64_t hs[2] = {0, 0};
  REQUIRE(hvd_enqueue_group(group, 2, hs) == HVD_OK);
  REQUIRE(hvd_wait(hs[1], 10) == HVD_OK);
  CHECK(hvd_poll(hs[0]) == 1);
  CHECK(hvd_release(hs[0]) == HVD_OK);
  CHECK(hvd_release(hs[1]) == HVD_OK);
  CHECK(hvd_enqueue_group(group, 0, hs) == HVD_ERR_INVALID_ARGUMENT);
}

TEST_CASE("c api: enqueue refuses bad ops at once", "[c_api]") {
  clear_environment();
  ShutdownAfter cleanup;
  REQUIRE(hvd_init() == HVD_OK);
  float x[4] = {};
  int64_t one[] = {1};
  int64_t h = 0;
  auto refused = [&](hvd_op op, int code, const std::string& fragment) {
    INFO(fragment);
    CHECK(hvd_enqueue(&op, &h) == code);
    CHECK_THAT(std::string(hvd_last_error()), Catch::Contains(fragment));
  };
  hvd_op op = make(9, x, x, one, 1);
  refused(op, HVD_ERR_INVALID_ARGUMENT, "9 is not an op type");
  int64_t negative[] = {-2};
  refused(make(HVD_OPTYPE_ALLREDUCE, x, x, negative, 1), HVD_ERR_INVALID_ARGUMENT, "negative");
  refused(make(HVD_OPTYPE_ALLREDUCE, x, x, nullptr, 1), HVD_ERR_INVALID_ARGUMENT, "shape is null");
  refused(make(HVD_OPTYPE_ALLREDUCE, x, nullptr, one, 1), HVD_ERR_INVALID_ARGUMENT, "output is null");
  refused(make(HVD_OPTYPE_ALLGATHER, x, x, one, 1), HVD_ERR_INVALID_ARGUMENT, "output must be null");
  refused(make(HVD_OPTYPE_ALLGATHER, nullptr, nullptr, one, 1), HVD_ERR_INVALID_ARGUMENT, "input is null");
  refused(make(HVD_OPTYPE_ALLGATHER, x, nullptr, one, 0), HVD_ERR_INVALID_ARGUMENT, "at least one dimension");
  op = make(HVD_OPTYPE_ALLREDUCE, x, x, one, 1, HVD_BOOL);
  op.prescale_factor = 0.5;
  refused(op, HVD_ERR_INVALID_ARGUMENT, "scale factors other than 1 do not apply to bool");
  op = make(HVD_OPTYPE_BROADCAST, x, x, one, 1);
  op.root_rank = 3;
  refused(op, HVD_ERR_INVALID_ARGUMENT, "root 3 is out of range for a world of size 1");
  op = make(HVD_OPTYPE_ALLREDUCE, x, x, one, 1);
  op.stream = x;
  refused(op, HVD_ERR_INVALID_ARGUMENT, "a stream is given but the op is on the CPU");
  op = make(HVD_OPTYPE_ALLREDUCE, x, x, one, 1);
  op.ready_event = x;
  refused(op, HVD_ERR_INVALID_ARGUMENT, "a ready_event is given but the op is on the CPU");
  op = make(HVD_OPTYPE_ALLREDUCE, x, x, one, 1);
  op.device = -3;
  refused(op, HVD_ERR_INVALID_ARGUMENT, "device -3 is neither HVD_DEVICE_CPU nor");
  op = make(HVD_OPTYPE_ALLREDUCE, x, x, one, 1);
  op.struct_size = 0;
  refused(op, HVD_ERR_INVALID_ARGUMENT, "hvd_enqueue: hvd_op: struct_size is 0");
  op = make(HVD_OPTYPE_ALLREDUCE, x, x, one, 1);
  op.process_set_id = 5;
  refused(op, HVD_ERR_NOT_FOUND, "no process set 5");
  int64_t four[] = {4};
  op = make(HVD_OPTYPE_ALLTOALL, x, nullptr, four, 1);
  int64_t bad_splits[] = {3};
  op.splits = bad_splits;
  refused(op, HVD_ERR_INVALID_ARGUMENT, "splits add up to 3 rows but the tensor has 4");
  CHECK(hvd_enqueue(nullptr, &h) == HVD_ERR_INVALID_ARGUMENT);

  // Unknown handles.
  CHECK(hvd_wait(987654, 1) == HVD_ERR_NOT_FOUND);
  CHECK(hvd_poll(987654) == -HVD_ERR_NOT_FOUND);
  CHECK(hvd_handle_copy_output(987654, x, 4) == HVD_ERR_NOT_FOUND);
}

TEST_CASE("c api: the ABI version and hvd_op's layout are readable", "[c_api]") {
  CHECK(hvd_abi_version() == HVD_ABI_VERSION);
  int64_t value = -1;
  REQUIRE(hvd_constant("HVD_ABI_VERSION", &value) == HVD_OK);
  CHECK(value == HVD_ABI_VERSION);
  REQUIRE(hvd_constant("hvd_op.size", &value) == HVD_OK);
  CHECK(value == static_cast<int64_t>(sizeof(hvd_op)));
  REQUIRE(hvd_constant("hvd_op.min_size", &value) == HVD_OK);
  CHECK(value == static_cast<int64_t>(HVD_OP_MIN_SIZE));
  REQUIRE(hvd_constant("hvd_op.offset.stream", &value) == HVD_OK);
  CHECK(value == static_cast<int64_t>(offsetof(hvd_op, stream)));
  REQUIRE(hvd_constant("hvd_op.offset.struct_size", &value) == HVD_OK);
  CHECK(value == 0);
  CHECK(hvd_constant("hvd_op.offset.nothing", &value) == HVD_ERR_NOT_FOUND);
  hvd_op op = hvd_op_defaults(HVD_OPTYPE_BROADCAST);
  CHECK(op.struct_size == sizeof(hvd_op));
  CHECK(op.device == HVD_DEVICE_CPU);
  CHECK(op.process_set_id == HVD_GLOBAL_PROCESS_SET);
  CHECK(op.stream == nullptr);
}

TEST_CASE("c api: device ops fail with the GPU transport's reason, CPU ops go on", "[c_api]") {
  clear_environment();
  setenv("HVD_GPU_TRANSPORT", "nccl", 1);
  ShutdownAfter cleanup;
  REQUIRE(hvd_init() == HVD_OK);
  unsetenv("HVD_GPU_TRANSPORT");
  float x[2] = {1, 2};
  int64_t two[] = {2};
  for (int attempt = 0; attempt < 2; ++attempt) {  // the reason stays; no retry
    hvd_op op = make(HVD_OPTYPE_ALLREDUCE, x, x, two, 1, HVD_FLOAT32, "on.device");
    op.device = 0;
    int64_t h = 0;
    REQUIRE(hvd_enqueue(&op, &h) == HVD_OK);
    CHECK(hvd_wait(h, 30) == HVD_ERR_FAILED_PRECONDITION);
    // No GPU on the test machines (and no nccl collectives yet anywhere).
    CHECK_THAT(std::string(hvd_last_error()),
               Catch::StartsWith("HVD_GPU_TRANSPORT=nccl cannot run here: "));
    CHECK(hvd_release(h) == HVD_OK);
  }
  hvd_op cpu = make(HVD_OPTYPE_ALLREDUCE, x, x, two, 1, HVD_FLOAT32, "on.cpu");
  int64_t h = 0;
  REQUIRE(hvd_enqueue(&cpu, &h) == HVD_OK);
  CHECK(hvd_wait(h, 30) == HVD_OK);
  CHECK(hvd_release(h) == HVD_OK);
  CHECK(x[1] == 2.0f);
}

TEST_CASE("c api: a bad HVD_GPU_TRANSPORT fails hvd_init naming it", "[c_api]") {
  clear_environment();
  setenv("HVD_GPU_TRANSPORT", "bogus", 1);
  ShutdownAfter cleanup;
  CHECK(hvd_init() == HVD_ERR_INVALID_ARGUMENT);
  unsetenv("HVD_GPU_TRANSPORT");
  CHECK_THAT(std::string(hvd_last_error()),
             Catch::StartsWith("HVD_GPU_TRANSPORT (gpu_transport) 'bogus' is not a transport "
                               "for CUDA tensors; choose one of: auto, gloo, nccl"));
  setenv("HVD_TRANSPORT_PLUGINS", "mine:tpu:libmine.so", 1);
  CHECK(hvd_init() == HVD_ERR_INVALID_ARGUMENT);
  unsetenv("HVD_TRANSPORT_PLUGINS");
  CHECK(std::string(hvd_last_error()) ==
        "transport_plugins: device 'tpu' in 'mine:tpu:libmine.so' is neither cpu nor cuda");
}

TEST_CASE("c api: process sets and the timeline in a world of one", "[c_api]") {
  clear_environment();
  ShutdownAfter cleanup;
  REQUIRE(hvd_init() == HVD_OK);
  CHECK(hvd_process_set_size(HVD_GLOBAL_PROCESS_SET) == 1);
  CHECK(hvd_process_set_rank(HVD_GLOBAL_PROCESS_SET) == 0);
  int32_t ranks[] = {0};
  int32_t id = -1;
  REQUIRE(hvd_add_process_set(ranks, 1, &id) == HVD_OK);
  CHECK(id == 1);
  CHECK(hvd_process_set_size(id) == 1);
  int32_t got[2] = {-1, -1};
  REQUIRE(hvd_process_set_ranks(id, got, 2) == HVD_OK);
  CHECK(got[0] == 0);
  int64_t v = 21;
  int64_t one[] = {1};
  hvd_op op = make(HVD_OPTYPE_ALLREDUCE, &v, &v, one, 1, HVD_INT64);
  op.process_set_id = id;
  int64_t h = 0;
  REQUIRE(hvd_enqueue(&op, &h) == HVD_OK);
  REQUIRE(hvd_wait(h, 10) == HVD_OK);
  REQUIRE(hvd_release(h) == HVD_OK);
  int32_t out_of_range[] = {1};
  CHECK(hvd_add_process_set(out_of_range, 1, &id) == HVD_ERR_INVALID_ARGUMENT);
  CHECK(hvd_remove_process_set(HVD_GLOBAL_PROCESS_SET) == HVD_ERR_INVALID_ARGUMENT);
  REQUIRE(hvd_remove_process_set(1) == HVD_OK);
  CHECK(hvd_process_set_size(1) == -HVD_ERR_NOT_FOUND);
  CHECK(hvd_remove_process_set(1) == HVD_ERR_NOT_FOUND);

  char dir[] = "/tmp/hvd_c_api_timeline_XXXXXX";
  REQUIRE(mkdtemp(dir) != nullptr);
  std::string path = std::string(dir) + "/t.json";
  REQUIRE(hvd_start_timeline(path.c_str()) == HVD_OK);
  REQUIRE(hvd_allreduce(&v, 1, HVD_INT64, HVD_OP_SUM) == HVD_OK);
  REQUIRE(hvd_stop_timeline() == HVD_OK);
  CHECK(hvd_start_timeline("/nonexistent-dir/t.json") == HVD_ERR_INVALID_ARGUMENT);
  std::ifstream in(path);
  std::string text((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
  CHECK(text.find("ALLREDUCE") != std::string::npos);
  std::filesystem::remove_all(dir);
}

TEST_CASE("c api: handles die with their runtime and are not reused", "[c_api]") {
  clear_environment();
  ShutdownAfter cleanup;
  REQUIRE(hvd_init() == HVD_OK);
  float x = 1;
  int64_t one[] = {1};
  hvd_op op = make(HVD_OPTYPE_ALLREDUCE, &x, &x, one, 1, HVD_FLOAT32, "first");
  int64_t h = 0;
  REQUIRE(hvd_enqueue(&op, &h) == HVD_OK);
  REQUIRE(hvd_wait(h, 10) == HVD_OK);
  REQUIRE(hvd_shutdown() == HVD_OK);
  CHECK(hvd_wait(h, 1) == HVD_ERR_FAILED_PRECONDITION);
  REQUIRE(hvd_init() == HVD_OK);
  CHECK(hvd_poll(h) == -HVD_ERR_NOT_FOUND);  // the old runtime's handles are gone
  int64_t h2 = 0;
  REQUIRE(hvd_enqueue(&op, &h2) == HVD_OK);
  CHECK(h2 > h);
  REQUIRE(hvd_wait(h2, 10) == HVD_OK);
}
