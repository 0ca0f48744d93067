// The data planes (runtime/engine/data_plane.h): the device plane over a
// host-memory DeviceWork gives the host plane's results, and does its work
// through the device (allocations, batched copies, one scaling of the fused
// buffer, waits), on the batch's stream; engine-allocated outputs live in
// the device's memory and are copied out through it.
#include <catch2/catch.hpp>

#include <cstdint>
#include <cstring>
#include <type_traits>
#include <memory>
#include <vector>

#include "runtime/engine/device_data_plane.h"
#include "runtime/engine/host_data_plane.h"
#include "tests/unit/runtime/host_device_work.h"

namespace hvd::runtime::engine {

namespace {

using testing::HostDeviceWork;

// A StreamedTransport that records the stream it was given.
struct StreamSink : transports::StreamedTransport {
  void set_stream(void* s) override { stream = s; }
  void* stream = reinterpret_cast<void*>(0x1);
};

void* const kStream = reinterpret_cast<void*>(0xabc);

}  // namespace

TEMPLATE_TEST_CASE("data plane: device packing and unpacking equal the host's", "[data_plane]",
                   float, int32_t, double) {
  const DataType type = std::is_same_v<TestType, float>     ? DataType::kFloat32
                        : std::is_same_v<TestType, double> ? DataType::kFloat64
                                                            : DataType::kInt32;
  auto work = std::make_shared<HostDeviceWork>();
  StreamSink sink;
  DeviceDataPlane device(work, &sink);
  HostDataPlane host;
  const OpStream streams[] = {{kStream, nullptr}};
  REQUIRE(device.begin(streams).is_ok());
  CHECK(sink.stream == kStream);

  std::vector<TestType> a{1, 2, 3}, b{10, 20};
  std::vector<TestType> da(3), db(2), ha(3), hb(2);
  // b's rank joined: its part is the identity (of max here, unscaled).
  std::vector<FusionPart> dparts{{a.data(), da.data(), 3}, {nullptr, db.data(), 2}};
  std::vector<FusionPart> hparts{{a.data(), ha.data(), 3}, {nullptr, hb.data(), 2}};
  auto dp = device.pack(dparts, type, ReduceOp::kMax, 3.0);
  auto hp = host.pack(hparts, type, ReduceOp::kMax, 3.0);
  REQUIRE(dp.is_ok());
  REQUIRE(hp.is_ok());
  // The same values; on the device each entry starts at a multiple of 16.
  const size_t a_bytes = 3 * sizeof(TestType);
  const size_t b_at = (a_bytes + 15) / 16 * 16;
  CHECK(dp.value() == b_at + (2 * sizeof(TestType) + 15) / 16 * 16);
  CHECK(std::memcmp(device.fusion(), host.fusion(), a_bytes) == 0);
  CHECK(std::memcmp(device.fusion() + b_at, host.fusion() + a_bytes, 2 * sizeof(TestType)) == 0);
  CHECK(work->allocs == 1);          // the device fusion buffer
  CHECK(work->pinned_allocs == 1);   // the identity's pinned scratch
  CHECK(work->copies == 2);          // the inputs in one batch, then the identities
  CHECK(work->scales == 1);          // the prescale, once for the whole buffer
  REQUIRE(device.unpack(dparts, type, 2, 0.5).is_ok());
  REQUIRE(host.unpack(hparts, type, 2, 0.5).is_ok());
  CHECK(da == ha);
  CHECK(db == hb);
  CHECK(work->copies == 3);  // the outputs in one batch
  CHECK(work->copy_entries == 1 + 1 + 2);
  for (void* s : work->streams) CHECK(s == kStream);
  auto ended = device.end();  // no events: the batch is waited for
  REQUIRE(ended.is_ok());
  CHECK(ended.value() == nullptr);
  CHECK(work->synced == std::vector<void*>{kStream});
  CHECK(work->classified_entries == 1);  // only the identity's (pinned host) entry
}

TEST_CASE("data plane: in-place scaling and finishing go through the device", "[data_plane]") {
  auto work = std::make_shared<HostDeviceWork>();
  DeviceDataPlane device(work, nullptr);
  std::vector<int64_t> in{7, -7, 9}, out(3);
  REQUIRE(device.scale(out.data(), in.data(), 3, DataType::kInt64, 0.5).is_ok());
  CHECK(out == std::vector<int64_t>{3, -3, 4});
  REQUIRE(device.finish(out.data(), 3, DataType::kInt64, 2, 1.0).is_ok());
  CHECK(out == std::vector<int64_t>{1, -1, 2});
  CHECK(work->copies == 1);
  CHECK(work->scales == 2);
}

TEST_CASE("data plane: bool has no arithmetic on the device either, as on the host",
          "[data_plane]") {
  auto work = std::make_shared<HostDeviceWork>();
  DeviceDataPlane device(work, nullptr);
  HostDataPlane host;
  uint8_t flags[2] = {1, 0};
  auto d = device.finish(flags, 2, DataType::kBool, 2, 1.0);
  auto h = host.finish(flags, 2, DataType::kBool, 2, 1.0);
  REQUIRE_FALSE(d.is_ok());
  CHECK(d.code() == common::StatusCode::kInvalidArgument);
  CHECK(d.message() == h.message());
  CHECK(work->scales == 0);  // refused before anything was enqueued
}

TEST_CASE("data plane: device outputs live in device memory and copy out through it",
          "[data_plane]") {
  auto work = std::make_shared<HostDeviceWork>();
  {
    DeviceDataPlane device(work, nullptr);
    const OpStream streams[] = {{kStream, nullptr}};
    REQUIRE(device.begin(streams).is_ok());
    auto made = device.allocate(3 * sizeof(float), {3});
    REQUIRE(made.is_ok());
    OpOutput out = std::move(made).value();
    CHECK(out.data == nullptr);
    REQUIRE(out.device != nullptr);
    CHECK(out.memory() == out.device->data());
    const float values[3] = {1, 2, 3};
    std::memcpy(out.memory(), values, sizeof(values));  // host memory, in this test
    float copied[3] = {};
    const int syncs = work->syncs;
    void* const caller = reinterpret_cast<void*>(0xca11);
    REQUIRE(out.device->copy_to(copied, sizeof(copied), caller, true).is_ok());
    CHECK(std::memcmp(copied, values, sizeof(values)) == 0);
    CHECK(work->syncs == syncs + 1);  // the copy was waited for, on the op's stream
    CHECK(work->synced.back() == kStream);
    // ...after the caller's stream's work so far (dst may be a block its
    // allocator just handed back while earlier kernels still read it).
    REQUIRE(!work->waits.empty());
    CHECK((work->waits.back().waiter == kStream && work->waits.back().stream == caller &&
           work->waits.back().event == nullptr));
    CHECK(work->live == 1);
  }
  CHECK(work->live == 0);  // the output and the plane freed their memory through the device
}

TEST_CASE("data plane: the fusion buffer grows in device memory, the old one freed",
          "[data_plane]") {
  auto work = std::make_shared<HostDeviceWork>();
  DeviceDataPlane device(work, nullptr);
  REQUIRE(device.reserve(16).is_ok());
  REQUIRE(device.reserve(8).is_ok());
  CHECK(work->allocs == 1);
  REQUIRE(device.reserve(1000).is_ok());
  CHECK(work->allocs == 2);
  CHECK(work->live == 1);
}

TEST_CASE("data plane: without a communication stream, a batch from several streams runs on "
          "the first and waits for the others first", "[data_plane]") {
  auto work = std::make_shared<HostDeviceWork>();
  StreamSink sink;
  DeviceDataPlane device(work, &sink);
  void* const other = reinterpret_cast<void*>(0xdef);
  const OpStream streams[] = {{kStream, nullptr}, {other, nullptr}};
  REQUIRE(device.begin(streams).is_ok());
  CHECK(sink.stream == kStream);
  CHECK(work->synced == std::vector<void*>{other});
  CHECK(work->waits.empty());
}

TEST_CASE("data plane: with a communication stream, everything runs there after device-side "
          "waits for each op's ready event or stream, never on the framework's stream",
          "[data_plane]") {
  void* const comm = reinterpret_cast<void*>(0xc0);
  auto work = std::make_shared<HostDeviceWork>(0, comm);
  StreamSink sink;
  DeviceDataPlane device(work, &sink);
  void* const other = reinterpret_cast<void*>(0xdef);
  void* const event = reinterpret_cast<void*>(0xe1);
  const OpStream streams[] = {{kStream, event}, {other, nullptr}};
  REQUIRE(device.begin(streams).is_ok());
  CHECK(sink.stream == comm);  // the collective
  REQUIRE(work->waits.size() == 2);
  CHECK((work->waits[0].waiter == comm && work->waits[0].stream == kStream &&
         work->waits[0].event == event));
  CHECK((work->waits[1].waiter == comm && work->waits[1].stream == other &&
         work->waits[1].event == nullptr));
  CHECK(work->synced.empty());  // no host wait to start the batch

  std::vector<float> a{1, 2, 3}, out(3);
  std::vector<FusionPart> parts{{a.data(), out.data(), 3}};
  REQUIRE(device.pack(parts, DataType::kFloat32, ReduceOp::kSum, 2.0).is_ok());
  REQUIRE(device.unpack(parts, DataType::kFloat32, 1, 1.0).is_ok());
  REQUIRE(device.end().is_ok());
  CHECK(out == std::vector<float>{2, 4, 6});
  for (void* s : work->streams) CHECK(s == comm);  // copies and scaling
  CHECK(work->synced == std::vector<void*>{comm});
}

}  // namespace hvd::runtime::engine
