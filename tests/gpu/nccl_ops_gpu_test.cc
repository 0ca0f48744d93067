// The nccl transport on a real GPU (ctest label gpu): built only with
// libhvd_nccl.so; exits 77 (ctest: skipped) saying why when no CUDA device
// is usable here, which is always the case in CI.
//
//   nccl_ops_gpu_test ops      every op x dtype on device memory, one rank
//                              (NCCL refuses two ranks on one GPU)
//   nccl_ops_gpu_test timeout  HVD_NCCL_TEST_STALL_MS holds the stream past
//                              the transport timeout: the allreduce returns
//                              once issued (ABI version 4), the barrier after
//                              it fails naming the rank, the communicator is
//                              aborted, later ops fail at once
//   nccl_ops_gpu_test abort    abort() from another thread ends a barrier
//                              stalled behind an issued allreduce
//   nccl_ops_gpu_test device   the device_* functions (ABI version 2): batched
//                              copies of odd sizes and alignments, staging
//                              through pinned host memory, and device_scale
//                              equal to runtime/engine/scale.h's finish_reduction
//                              for every type but float16, which follows
//                              Horovod's CUDA kernels (factor in half)
#include <cuda_runtime_api.h>

#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <string>
#include <thread>
#include <vector>

#include "common/half.h"
#include "runtime/engine/scale.h"
#include "transports/plugin/known_plugins.h"
#include "transports/plugin/plugin_loader.h"
#include "transports/registry.h"
#include "transports/table/transport_table.h"

namespace {

using hvd::common::DataType;
using hvd::common::ReduceOp;
using hvd::common::Status;
using hvd::transports::Buffer;
using hvd::transports::ConstBuffer;
using hvd::transports::DeviceKind;
using hvd::transports::Transport;
using hvd::transports::TransportContext;
using hvd::transports::TransportRegistry;

int failures = 0;

void expect(bool ok, const std::string& what) {
  if (!ok) {
    std::fprintf(stderr, "FAILED: %s\n", what.c_str());
    ++failures;
  }
}

void expect_ok(const Status& s, const std::string& what) {
  expect(s.is_ok(), what + ": " + s.to_string());
}

struct Device {
  void* p = nullptr;
  explicit Device(size_t bytes) { cudaMalloc(&p, bytes); }
  ~Device() { cudaFree(p); }
};

std::vector<unsigned char> pattern(size_t bytes, int seed) {
  std::vector<unsigned char> v(bytes);
  for (size_t i = 0; i < bytes; ++i) v[i] = static_cast<unsigned char>((i * 7 + seed) % 61);
  return v;
}

std::vector<unsigned char> round_trip(Device& d, const std::vector<unsigned char>& host,
                                      const std::function<Status()>& op, const std::string& what) {
  cudaMemcpy(d.p, host.data(), host.size(), cudaMemcpyHostToDevice);
  expect_ok(op(), what);
  std::vector<unsigned char> back(host.size());
  cudaMemcpy(back.data(), d.p, back.size(), cudaMemcpyDeviceToHost);
  return back;
}

std::unique_ptr<Transport> connect(std::chrono::milliseconds timeout) {
  TransportRegistry registry = hvd::transports::builtin_registry();
  TransportContext context;
  context.device = 0;
  context.timeout = timeout;
  context.key_prefix = "gpu-test/";
  auto transport = registry.create(DeviceKind::kCuda, "nccl", context);
  if (!transport.is_ok()) {
    std::fprintf(stderr, "FAILED: connect: %s\n", transport.status().to_string().c_str());
    std::exit(1);
  }
  return std::move(transport).value();
}

int run_ops() {
  auto t = connect(std::chrono::milliseconds(30000));
  const size_t bytes = 1 << 20;
  Device d(bytes);
  Device out(bytes);
  const auto input = pattern(bytes, 3);
  const std::pair<DataType, const char*> types[] = {
      {DataType::kUInt8, "uint8"},     {DataType::kInt8, "int8"},
      {DataType::kInt32, "int32"},     {DataType::kInt64, "int64"},
      {DataType::kFloat16, "float16"}, {DataType::kBFloat16, "bfloat16"},
      {DataType::kFloat32, "float32"}, {DataType::kFloat64, "float64"}};
  for (const auto& [type, name] : types) {
    for (ReduceOp op : {ReduceOp::kSum, ReduceOp::kMin, ReduceOp::kMax, ReduceOp::kProduct}) {
      const std::string what = std::string("allreduce ") + name;
      auto back = round_trip(d, input, [&] { return t->allreduce({d.p, bytes}, type, op); }, what);
      expect(back == input, what + ": one rank's reduction is its input");
    }
  }
  Status int16 = t->allreduce({d.p, bytes}, DataType::kInt16, ReduceOp::kSum);
  expect(!int16.is_ok() && int16.to_string().find("int16") != std::string::npos,
         "int16 refused naming it: " + int16.to_string());

  auto back = round_trip(d, input, [&] { return t->broadcast({d.p, bytes}, 0); }, "broadcast");
  expect(back == input, "broadcast keeps root's data");

  const int64_t counts[] = {static_cast<int64_t>(bytes)};
  cudaMemcpy(d.p, input.data(), bytes, cudaMemcpyHostToDevice);
  expect_ok(t->allgatherv({d.p, bytes}, {out.p, bytes}, counts), "allgather");
  std::vector<unsigned char> gathered(bytes);
  cudaMemcpy(gathered.data(), out.p, bytes, cudaMemcpyDeviceToHost);
  expect(gathered == input, "allgather of one rank is its input");

  cudaMemset(out.p, 0, bytes);
  expect_ok(t->alltoallv({d.p, bytes}, counts, {out.p, bytes}, counts), "alltoall");
  cudaMemcpy(gathered.data(), out.p, bytes, cudaMemcpyDeviceToHost);
  expect(gathered == input, "alltoall of one rank is its input");

  cudaMemset(out.p, 0, bytes);
  expect_ok(t->reducescatter({d.p, bytes}, {out.p, bytes}, counts, DataType::kFloat32,
                             ReduceOp::kSum),
            "reducescatter");
  cudaMemcpy(gathered.data(), out.p, bytes, cudaMemcpyDeviceToHost);
  expect(gathered == input, "reducescatter of one rank is its input");

  expect_ok(t->barrier(), "barrier");
  std::printf("ops: %d failure(s)\n", failures);
  return failures == 0 ? 0 : 1;
}

int run_timeout() {
  auto t = connect(std::chrono::milliseconds(1000));
  Device d(4096);
  const auto start = std::chrono::steady_clock::now();
  // Issued, not waited for (ABI version 4): the barrier behind it waits.
  expect_ok(t->allreduce({d.p, 4096}, DataType::kFloat32, ReduceOp::kSum), "issuing");
  Status s = t->barrier();
  const double took = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  expect(!s.is_ok(), "a stalled op fails");
  expect(s.code() == hvd::common::StatusCode::kTimeout, "as a timeout: " + s.to_string());
  expect(s.to_string().find("rank 0") != std::string::npos, "naming the rank: " + s.to_string());
  expect(took < 5.0, "within the timeout and a little: took " + std::to_string(took) + " s");
  Status later = t->barrier();
  expect(!later.is_ok() && later.to_string() == s.to_string(),
         "later ops fail with the same status: " + later.to_string());
  std::printf("timeout: %s (%.2f s); %d failure(s)\n", s.to_string().c_str(), took, failures);
  return failures == 0 ? 0 : 1;
}

int run_abort() {
  auto t = connect(std::chrono::milliseconds(60000));
  Device d(4096);
  std::thread aborter([&] {
    std::this_thread::sleep_for(std::chrono::milliseconds(300));
    t->abort(Status(hvd::common::StatusCode::kAborted, "elastic reset"));
  });
  const auto start = std::chrono::steady_clock::now();
  expect_ok(t->allreduce({d.p, 4096}, DataType::kFloat32, ReduceOp::kSum), "issuing");
  Status s = t->barrier();  // waits behind the stalled allreduce
  const double took = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  aborter.join();
  expect(s.code() == hvd::common::StatusCode::kAborted, "aborted: " + s.to_string());
  expect(s.to_string().find("elastic reset") != std::string::npos, "with the reason");
  expect(took < 2.0, "promptly: took " + std::to_string(took) + " s");
  std::printf("abort: %s (%.2f s); %d failure(s)\n", s.to_string().c_str(), took, failures);
  return failures == 0 ? 0 : 1;
}

// float16 on the device as Horovod's CUDA kernels scale it: the factor
// (an Average's 1 / size folded in) rounded to half first, the product of
// two halves (exact in float) rounded to half once.
void horovod_cuda_half_scale(unsigned char* data, size_t count, double factor) {
  auto* v = reinterpret_cast<uint16_t*>(data);
  const float f = hvd::common::half_to_float(hvd::common::float_to_half(static_cast<float>(factor)));
  for (size_t i = 0; i < count; ++i) {
    v[i] = hvd::common::float_to_half(hvd::common::half_to_float(v[i]) * f);
  }
}

// The device_* functions of the loaded nccl plugin.
class DeviceApi {
 public:
  explicit DeviceApi(const hvd_transport_plugin_t& api) : api_(api) {
    hvd_plugin_status status{};
    if (api_.device_open(0, 30000, &context_, &status) != HVD_OK) {
      std::fprintf(stderr, "FAILED: device_open: %s\n", status.message);
      std::exit(1);
    }
  }
  ~DeviceApi() { api_.device_close(context_); }
  void* alloc(size_t bytes, bool pinned) {
    void* p = nullptr;
    hvd_plugin_status status{};
    expect(api_.device_alloc(context_, bytes, pinned ? 1 : 0, &p, &status) == HVD_OK,
           std::string("device_alloc: ") + status.message);
    return p;
  }
  void free(void* p, bool pinned) { api_.device_free(context_, p, pinned ? 1 : 0); }
  void copy(const std::vector<hvd_plugin_copy>& copies) {
    hvd_plugin_status status{};
    expect(api_.device_copy(context_, copies.data(), copies.size(), nullptr, &status) == HVD_OK,
           std::string("device_copy: ") + status.message);
  }
  int32_t scale(void* data, size_t count, int32_t dtype, int divisor, double factor,
                hvd_plugin_status* status) {
    return api_.device_scale(context_, data, count, dtype, divisor, factor, nullptr, status);
  }
  void sync() {
    hvd_plugin_status status{};
    expect(api_.device_synchronize(context_, nullptr, &status) == HVD_OK,
           std::string("device_synchronize: ") + status.message);
  }

 private:
  const hvd_transport_plugin_t& api_;
  void* context_ = nullptr;
};

int run_device() {
  auto loaded = hvd::transports::plugin::LoadedPlugin::load("libhvd_nccl.so");
  if (!loaded.is_ok()) {
    for (const auto& dir : hvd::transports::plugin::plugin_directories()) {
      loaded = hvd::transports::plugin::LoadedPlugin::load((dir / "libhvd_nccl.so").string());
      if (loaded.is_ok()) break;
    }
  }
  expect(loaded.is_ok(), "libhvd_nccl.so loads");
  if (!loaded.is_ok()) return 1;
  DeviceApi device(loaded.value()->api());

  // Batched device-to-device copies: 200 entries (several launches), odd
  // sizes and offsets, into one buffer (a fusion buffer's pack), and back.
  const size_t entries = 200;
  std::vector<size_t> sizes(entries);
  size_t total = 0;
  for (size_t i = 0; i < entries; ++i) total += sizes[i] = (i * 977) % 5003 + (i % 3);
  auto* src = static_cast<unsigned char*>(device.alloc(total + 16, false));
  auto* packed = static_cast<unsigned char*>(device.alloc(total + 16, false));
  auto* pinned = static_cast<unsigned char*>(device.alloc(total + 16, true));
  const auto input = pattern(total, 11);
  std::memcpy(pinned, input.data(), total);
  device.copy({{src + 1, pinned, total}});  // host to device, odd offset
  std::vector<hvd_plugin_copy> pack;
  size_t offset = 0;
  for (size_t i = 0; i < entries; ++i) {
    pack.push_back({packed + offset, src + 1 + offset, sizes[i]});
    offset += sizes[i];
  }
  device.copy(pack);
  std::memset(pinned, 0, total);
  device.copy({{pinned, packed, total}});  // device to host
  device.sync();
  expect(std::memcmp(pinned, input.data(), total) == 0, "batched copies keep every byte");

  // device_scale against the host's finish_reduction, every type.
  const std::pair<DataType, int32_t> types[] = {
      {DataType::kUInt8, HVD_UINT8},     {DataType::kInt8, HVD_INT8},
      {DataType::kInt16, HVD_INT16},     {DataType::kInt32, HVD_INT32},
      {DataType::kInt64, HVD_INT64},     {DataType::kFloat16, HVD_FLOAT16},
      {DataType::kBFloat16, HVD_BFLOAT16}, {DataType::kFloat32, HVD_FLOAT32},
      {DataType::kFloat64, HVD_FLOAT64}};
  const size_t count = 3001;
  for (const auto& [type, code] : types) {
    const size_t bytes = count * hvd::common::data_type_size(type);
    for (const auto& [divisor, factor] : {std::pair{1, 1.0}, {3, 1.0}, {1, 0.37}, {4, 2.5}}) {
      auto host = pattern(bytes, 5);
      std::memcpy(pinned, host.data(), bytes);
      device.copy({{src, pinned, bytes}});
      hvd_plugin_status status{};
      expect(device.scale(src, count, code, divisor, factor, &status) == HVD_OK,
             std::string("device_scale: ") + status.message);
      device.copy({{pinned, src, bytes}});
      device.sync();
      if (type == DataType::kFloat16) {
        horovod_cuda_half_scale(host.data(), count, factor / divisor);
      } else {
        expect_ok(hvd::runtime::finish_reduction(host.data(), host.data(), count, type, divisor,
                                                 factor),
                  "host finish_reduction");
      }
      expect(std::memcmp(pinned, host.data(), bytes) == 0,
             "device_scale equals finish_reduction for type " + std::to_string(code) +
                 ", divisor " + std::to_string(divisor) + ", factor " + std::to_string(factor));
    }
  }
  hvd_plugin_status refused{};
  expect(device.scale(src, 4, HVD_BOOL, 2, 1.0, &refused) == HVD_ERR_INVALID_ARGUMENT,
         "bool averages are refused");
  device.free(src, false);
  device.free(packed, false);
  device.free(pinned, true);
  std::printf("device: %d failure(s)\n", failures);
  return failures == 0 ? 0 : 1;
}

}  // namespace

int main(int argc, char** argv) {
  const std::string mode = argc > 1 ? argv[1] : "ops";
  TransportRegistry registry = hvd::transports::builtin_registry();
  for (const auto& entry : registry.list()) {
    if (entry.name == "nccl" && !entry.availability.available) {
      std::printf("SKIP: the nccl transport cannot run here: %s\n",
                  entry.availability.reason.c_str());
      return 77;
    }
  }
  if (mode == "ops") return run_ops();
  if (mode == "timeout") return run_timeout();
  if (mode == "abort") return run_abort();
  if (mode == "device") return run_device();
  std::fprintf(stderr, "nccl_ops_gpu_test: unknown mode '%s' (ops, timeout, abort, device)\n", mode.c_str());
  return 2;
}
