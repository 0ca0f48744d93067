// Asynchronous device completion (issue 28): the device plane's end()
// records an event instead of waiting, DeviceCompletions completes batches
// off the engine thread (in order, bounded in flight, failures drained),
// a set engine launches batch N+1 while batch N still runs on the device
// and shows a launched op's output and event before it is done; device
// outputs come from a pool (no allocation per op) and are copied out on the
// caller's stream after it waited for the op; fused entries are aligned to
// 16 bytes; the ops' tensors are copied without classification. Over
// HostDeviceWork (host memory) with events the test holds back.
#include <catch2/catch.hpp>

#include <atomic>
#include <chrono>
#include <cstring>
#include <fstream>
#include <future>
#include <map>
#include <sstream>
#include <memory>
#include <thread>
#include <vector>

#include <unistd.h>

#include "runtime/engine/active_timeline.h"
#include "runtime/engine/device_completions.h"
#include "runtime/engine/device_data_plane.h"
#include "runtime/engine/set_engine.h"
#include "tests/unit/runtime/engine/json_lite.h"
#include "tests/unit/runtime/host_device_work.h"

namespace hvd::runtime::engine {

namespace {

using namespace std::chrono_literals;
using common::Status;
using testing::HostDeviceWork;

void* const kComm = reinterpret_cast<void*>(0xc0);
void* const kCaller = reinterpret_cast<void*>(0xca11);

// A world of one rank, on any memory: collectives copy or do nothing; it
// takes streams (as a GPU transport does) and can report an async error.
class SoloTransport final : public transports::Transport, public transports::StreamedTransport {
 public:
  std::string_view name() const override { return "solo"; }
  int rank() const override { return 0; }
  int size() const override { return 1; }
  Status allreduce(transports::Buffer, DataType, ReduceOp) override { return checked(); }
  Status allgatherv(transports::ConstBuffer in, transports::Buffer out,
                    std::span<const int64_t>) override {
    if (in.size > 0) std::memmove(out.data, in.data, in.size);
    return checked();
  }
  Status broadcast(transports::Buffer, int) override { return checked(); }
  Status alltoallv(transports::ConstBuffer in, std::span<const int64_t>, transports::Buffer out,
                   std::span<const int64_t>) override {
    if (in.size > 0) std::memmove(out.data, in.data, in.size);
    return checked();
  }
  Status reducescatter(transports::ConstBuffer in, transports::Buffer out,
                       std::span<const int64_t>, DataType, ReduceOp) override {
    if (out.size > 0) std::memmove(out.data, in.data, out.size);
    return checked();
  }
  Status barrier() override { return checked(); }
  void abort(Status reason) override {
    std::lock_guard lock(mu_);
    if (aborted_.is_ok()) aborted_ = reason;
  }
  void set_stream(void* stream) override { stream_ = stream; }
  Status async_error() override {
    std::lock_guard lock(mu_);
    return async_error_;
  }
  void fail_later(Status error) {
    std::lock_guard lock(mu_);
    async_error_ = std::move(error);
  }
  bool aborted() const {
    std::lock_guard lock(mu_);
    return !aborted_.is_ok();
  }

 private:
  Status checked() {
    std::lock_guard lock(mu_);
    return aborted_;
  }
  mutable std::mutex mu_;
  Status aborted_;
  Status async_error_;
  void* stream_ = nullptr;
};

// A batch of one op named `name` (its handle from `handles`).
DeviceCompletions::Batch batch_of(HandleTable& handles, const std::string& name,
                                  std::shared_ptr<DeviceEvent> event) {
  DeviceCompletions::Batch b;
  b.events.push_back(std::move(event));
  Entry e;
  e.request.name = name;
  e.handle = handles.create();
  b.entries.push_back(std::move(e));
  b.statuses.push_back(Status::ok());
  b.named.push_back(0);
  return b;
}

// A DeviceCompletions callback that completes the batch's handles.
DeviceCompletions::Complete completing(HandleTable& handles) {
  return [&handles](DeviceCompletions::Batch& b) {
    for (size_t i = 0; i < b.entries.size(); ++i) {
      handles.complete(b.entries[i].handle, b.statuses[i]);
    }
  };
}

std::shared_ptr<DeviceEvent> recorded(const std::shared_ptr<HostDeviceWork>& work) {
  auto event = DeviceEvent::record(work, kComm);
  REQUIRE(event.is_ok());
  return event.value();
}

template <class Predicate>
bool eventually(Predicate p, std::chrono::milliseconds within = 5000ms) {
  const auto deadline = std::chrono::steady_clock::now() + within;
  while (std::chrono::steady_clock::now() < deadline) {
    if (p()) return true;
    std::this_thread::sleep_for(1ms);
  }
  return p();
}

}  // namespace

TEST_CASE("device plane: fused entries start at multiples of 16 bytes, whatever the counts "
          "before them", "[device_completion]") {
  auto work = std::make_shared<HostDeviceWork>(0, kComm, true);
  DeviceDataPlane device(work, nullptr);
  const OpStream streams[] = {{kCaller, nullptr}};
  REQUIRE(device.begin(streams).is_ok());
  // float16 counts 3, 5 and 1: 6, 10 and 2 bytes.
  std::vector<uint16_t> a(3, 1), b(5, 2), c(1, 3), ra(3), rb(5), rc(1);
  std::vector<FusionPart> parts{{a.data(), ra.data(), 3}, {b.data(), rb.data(), 5},
                                {c.data(), rc.data(), 1}};
  auto packed = device.pack(parts, DataType::kFloat16, ReduceOp::kSum, 1.0);
  REQUIRE(packed.is_ok());
  CHECK(packed.value() == 48);
  REQUIRE(work->copied.size() == 3);
  const auto* base = device.fusion();
  CHECK(static_cast<const uint8_t*>(work->copied[0].dst) - base == 0);
  CHECK(static_cast<const uint8_t*>(work->copied[1].dst) - base == 16);
  CHECK(static_cast<const uint8_t*>(work->copied[2].dst) - base == 32);
  REQUIRE(device.unpack(parts, DataType::kFloat16, 1, 1.0).is_ok());
  CHECK(ra == a);
  CHECK(rb == b);
  CHECK(rc == c);
  CHECK(static_cast<const uint8_t*>(work->copied[4].src) - base == 16);
}

TEST_CASE("device plane: the ops' tensors are copied without classifying each entry",
          "[device_completion]") {
  auto work = std::make_shared<HostDeviceWork>(0, kComm, true);
  DeviceDataPlane device(work, nullptr);
  const OpStream streams[] = {{kCaller, nullptr}};
  REQUIRE(device.begin(streams).is_ok());
  std::vector<float> a(4, 1.0f), b(3, 2.0f), out(4), out2(3);
  std::vector<FusionPart> parts{{a.data(), out.data(), 4}, {b.data(), out2.data(), 3}};
  REQUIRE(device.pack(parts, DataType::kFloat32, ReduceOp::kSum, 2.0).is_ok());
  REQUIRE(device.unpack(parts, DataType::kFloat32, 1, 1.0).is_ok());
  REQUIRE(device.scale(out.data(), a.data(), 4, DataType::kFloat32, 1.0).is_ok());
  REQUIRE(device.copy(out2.data(), b.data(), sizeof(float) * 3).is_ok());
  CHECK(work->copies == 4);
  CHECK(work->classified_entries == 0);
}

TEST_CASE("device plane: with events, end() records the batch's event and waits for nothing; "
          "outputs come from a pool and are copied on the caller's stream after the op",
          "[device_completion]") {
  auto work = std::make_shared<HostDeviceWork>(0, kComm, true);
  DeviceDataPlane device(work, nullptr);
  const OpStream streams[] = {{kCaller, nullptr}};
  REQUIRE(device.begin(streams).is_ok());
  auto made = device.allocate(100, {25});
  REQUIRE(made.is_ok());
  OpOutput out = std::move(made).value();
  const int allocs = work->allocs;
  auto ended = device.end();
  REQUIRE(ended.is_ok());
  std::shared_ptr<DeviceEvent> done = ended.value();
  REQUIRE(done != nullptr);
  CHECK(work->synced.empty());  // no host wait at the end of the batch
  CHECK(work->recorded == std::vector<void*>{kComm});
  out.device->launched(done);

  std::vector<float> values(25, 7.0f), copied(25);
  std::memcpy(out.memory(), values.data(), 100);
  const size_t waits = work->waits.size();
  REQUIRE(out.device->copy_to(copied.data(), 100, kCaller, false).is_ok());
  CHECK(copied == values);
  // The caller's stream waited on the device for the op, then copied there.
  REQUIRE(work->waits.size() == waits + 1);
  CHECK((work->waits.back().waiter == kCaller && work->waits.back().stream == kComm &&
         work->waits.back().event != nullptr));
  CHECK(work->streams.back() == kCaller);
  CHECK(work->synced.empty());
  CHECK(work->recorded.back() == kCaller);  // the block's last use

  // The block goes back to the pool: the next output of that size reuses
  // it once its last use is done, with no allocation.
  out = OpOutput{};
  auto again = device.allocate(100, {25});
  REQUIRE(again.is_ok());
  CHECK(work->allocs == allocs);
  // A block whose last use is still running on a stream is not handed out.
  work->hold_events();
  again.value().device->launched(done);
  REQUIRE(again.value().device->copy_to(copied.data(), 100, kCaller, false).is_ok());
  again = common::Result<OpOutput>(OpOutput{});
  auto third = device.allocate(100, {25});
  REQUIRE(third.is_ok());
  CHECK(work->allocs == allocs + 1);
  work->release_events();
}

TEST_CASE("device completions: batches complete off the caller's thread, in order, when their "
          "events do; at most max_in_flight in flight", "[device_completion]") {
  auto work = std::make_shared<HostDeviceWork>(0, kComm, true);
  HandleTable handles;
  std::vector<int64_t> order;
  std::mutex order_mu;
  std::atomic<int> failures{0};
  DeviceCompletions completions(
      "test set", 2, 5000ms,
      [&](DeviceCompletions::Batch& b) {
        std::lock_guard lock(order_mu);
        for (size_t i = 0; i < b.entries.size(); ++i) {
          order.push_back(b.entries[i].handle);
          handles.complete(b.entries[i].handle, b.statuses[i]);
        }
      },
      [&](const Status&) { ++failures; });
  work->hold_events();
  auto first = batch_of(handles, "first", recorded(work));
  auto second = batch_of(handles, "second", recorded(work));
  auto third = batch_of(handles, "third", recorded(work));
  const int64_t h1 = first.entries[0].handle, h2 = second.entries[0].handle,
                h3 = third.entries[0].handle;
  completions.add(std::move(first));
  completions.add(std::move(second));
  CHECK(completions.in_flight() == 2);
  auto adding = std::async(std::launch::async, [&] { completions.add(std::move(third)); });
  CHECK(adding.wait_for(200ms) == std::future_status::timeout);  // the bound holds it
  std::this_thread::sleep_for(50ms);
  CHECK_FALSE(handles.poll(h1).value());  // the device still runs them
  work->release_events();
  CHECK(adding.wait_for(5s) == std::future_status::ready);
  completions.drain();
  CHECK(handles.poll(h3).value());
  CHECK(order == std::vector<int64_t>{h1, h2, h3});
  CHECK(handles.wait(h2, 1s).is_ok());
  CHECK(failures == 0);
}

TEST_CASE("device completions: a batch past the timeout fails the set, and its ops complete "
          "only once the device drained", "[device_completion]") {
  auto work = std::make_shared<HostDeviceWork>(0, kComm, true);
  SoloTransport transport;
  HandleTable handles;
  std::atomic<int> failures{0};
  DeviceCompletions completions(
      "test set", 4, 300ms,
      completing(handles),
      [&](const Status& s) {
        ++failures;
        transport.abort(s);
      });
  work->hold_events();
  auto b = batch_of(handles, "stuck", recorded(work));
  b.watched.push_back(&transport);
  const int64_t h = b.entries[0].handle;
  completions.add(std::move(b));
  REQUIRE(eventually([&] { return failures.load() == 1; }));
  CHECK(transport.aborted());
  // Failed, but the device has not drained: the handle is not done (its
  // tensors may still be written)...
  std::this_thread::sleep_for(100ms);
  CHECK_FALSE(handles.poll(h).value());
  // ...until the stream drains (after the abort, its kernels end).
  work->release_events();
  REQUIRE(eventually([&] { return handles.poll(h).value(); }));
  Status s = handles.wait(h, 1s);
  CHECK(s.code() == common::StatusCode::kTimeout);
  CHECK(s.message().find("did not complete within 300 ms on the device") != std::string::npos);
}

TEST_CASE("device completions: an asynchronous error of the transport fails the batch; a "
          "device that never drains completes it at the drain deadline", "[device_completion]") {
  auto work = std::make_shared<HostDeviceWork>(0, kComm, true);
  SoloTransport transport;
  HandleTable handles;
  std::atomic<int> failures{0};
  DeviceCompletions completions(
      "test set", 4, 300ms,
      completing(handles),
      [&](const Status&) { ++failures; });
  work->hold_events();
  auto b = batch_of(handles, "peer gone", recorded(work));
  b.watched.push_back(&transport);
  const int64_t h = b.entries[0].handle;
  const auto start = std::chrono::steady_clock::now();
  completions.add(std::move(b));
  transport.fail_later(common::unavailable("nccl: a peer is gone"));
  REQUIRE(eventually([&] { return failures.load() == 1; }));
  CHECK(std::chrono::steady_clock::now() - start < 300ms);  // not the timeout: the error
  REQUIRE(eventually([&] { return handles.poll(h).value(); }, 3000ms));
  CHECK(std::chrono::steady_clock::now() - start >= 300ms);  // the drain deadline
  CHECK(handles.wait(h, 1s).message() == "nccl: a peer is gone");
  work->release_events();
}

TEST_CASE("device completions: a batch whose events completed after its collective failed "
          "fails, never completes OK", "[device_completion]") {
  // The transport failed (an asynchronous error, or an abort from outside
  // the set) and the kernels then ended: the events complete, the tensors
  // hold what the failed collective left. The completion thread looks at
  // the transport once more before it completes the batch.
  auto work = std::make_shared<HostDeviceWork>(0, kComm, true);
  SoloTransport transport;
  HandleTable handles;
  std::atomic<int> failures{0};
  DeviceCompletions completions("test set", 4, 10000ms, completing(handles),
                                [&](const Status&) { ++failures; });
  work->hold_events();
  auto b = batch_of(handles, "left half done", recorded(work));
  b.watched.push_back(&transport);
  const int64_t h = b.entries[0].handle;
  transport.fail_later(common::unavailable("fakecuda: rank 1's data will not come"));
  work->release_events();  // done at once: no look at the transport while it waited
  completions.add(std::move(b));
  REQUIRE(eventually([&] { return handles.poll(h).value(); }));
  CHECK(handles.wait(h, 1s).message() == "fakecuda: rank 1's data will not come");
  CHECK(failures.load() == 1);
}

TEST_CASE("set engine: a device op is launched and readable before the device is done; the next "
          "batch, of the same name, is negotiated and launched while it runs",
          "[device_completion]") {
  auto work = std::make_shared<HostDeviceWork>(0, kComm, true);
  auto* device_transport = new SoloTransport();
  HandleTable handles;
  SetEngineOptions o;
  o.global_ranks = {0};
  o.device_timeout = 10000ms;
  o.connect_device = [&](int) -> common::Result<transports::DeviceLink> {
    transports::DeviceLink link;
    link.transport.reset(device_transport);
    link.work = work;
    return link;
  };
  const std::string trace = "/tmp/hvd-device-completion-" + std::to_string(getpid()) + ".json";
  ActiveTimeline timeline;
  auto opened = Timeline::open(trace, 0);
  REQUIRE(opened.is_ok());
  timeline.exchange(std::shared_ptr<Timeline>(std::move(opened).value()));
  SetEngine engine(std::move(o), std::make_unique<SoloTransport>(), handles, &timeline);
  auto submit = [&](std::vector<float>& data) {
    Entry e;
    e.request.name = "grad";
    e.request.op_type = OpType::kAllreduce;
    e.request.dtype = DataType::kFloat32;
    e.request.shape = {static_cast<int64_t>(data.size())};
    e.request.reduce_op = ReduceOp::kSum;
    e.request.device = 0;
    e.input = data.data();
    e.output = data.data();
    e.stream = kCaller;
    e.handle = handles.create();
    e.enqueued = std::chrono::steady_clock::now();
    const int64_t h = e.handle;
    REQUIRE(engine.enqueue(e).is_ok());
    return h;
  };
  work->hold_events();
  std::vector<float> step1(8, 1.0f), step2(8, 2.0f);
  const int64_t h1 = submit(step1);
  std::shared_ptr<DeviceEvent> event;
  REQUIRE(handles.wait_launched(h1, 10s, &event).is_ok());
  REQUIRE(event != nullptr);  // launched, not done
  CHECK_FALSE(handles.poll(h1).value());
  // The next step's op of the same name is accepted and launched while the
  // first is still on the device.
  const int64_t h2 = submit(step2);
  std::shared_ptr<DeviceEvent> event2;
  REQUIRE(handles.wait_launched(h2, 10s, &event2).is_ok());
  REQUIRE(event2 != nullptr);
  CHECK_FALSE(handles.poll(h1).value());
  CHECK(work->synced.empty());  // the engine thread never waited for the device
  work->release_events();
  CHECK(handles.wait(h1, 10s).is_ok());
  CHECK(handles.wait(h2, 10s).is_ok());
  CHECK(step1 == std::vector<float>(8, 1.0f));
  CHECK(step2 == std::vector<float>(8, 2.0f));
  engine.stop(common::aborted("test over"));

  // The timeline: the first op's DEVICE span (row grad/device) ends after
  // the second op of that name was negotiated and launched.
  timeline.exchange(nullptr);  // closes the file
  std::ifstream in(trace);
  std::stringstream text;
  text << in.rdbuf();
  std::remove(trace.c_str());
  const std::string json = text.str();
  test::JsonParser parser(json);
  auto doc = parser.parse();
  INFO(parser.error());
  REQUIRE(doc.has_value());
  std::map<double, std::string> rows;  // tid -> row
  for (const auto& e : doc->array) {
    if (e.str("ph") == "M" && e.str("name") == "thread_name") rows[e.num("tid")] = e.get("args")->str("name");
  }
  std::vector<double> negotiated, device_ends;
  for (const auto& e : doc->array) {
    const std::string row = rows.count(e.num("tid")) ? rows[e.num("tid")] : "";
    if (row == "grad" && e.str("name") == "NEGOTIATE" && e.str("ph") == "B") {
      negotiated.push_back(e.num("ts"));
    }
    if (row == "grad/device" && e.str("ph") == "E") device_ends.push_back(e.num("ts"));
  }
  REQUIRE(negotiated.size() == 2);
  REQUIRE(device_ends.size() == 2);
  CHECK(negotiated[1] < device_ends[0]);
}

}  // namespace hvd::runtime::engine
