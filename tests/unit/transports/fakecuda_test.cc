// fakecuda (plugins/fake_cuda_*.c), the CUDA model the CI tests run
// against, through the loader: ABI version 4's asynchronous collectives
// (a call returns before the collective ran; an event says when it did),
// events, asynchronous errors, copies without classification, the shrink,
// and the caching allocator model that fails a block reused without an
// ordering wait. Two ranks are two transports of one process over one
// in-process store, each on a stream of its own.
#include <dlfcn.h>

#include <catch2/catch.hpp>

#include <chrono>
#include <cstring>
#include <memory>
#include <string>
#include <thread>
#include <vector>

#include "daemon/rendezvous/kv_store.h"
#include "transports/device_work.h"
#include "transports/plugin/plugin_device.h"
#include "transports/plugin/plugin_loader.h"
#include "transports/plugin/plugin_transport.h"

namespace hvd::transports::plugin {

namespace {

using namespace std::chrono_literals;

std::string fakecuda_path(const std::string& variant = "") {
  return std::string(HVD_TEST_PLUGIN_DIR) + "/libhvd_fake_cuda" + variant + "_plugin.so";
}

// The test exports of the loaded fakecuda (fakecuda_* functions).
template <typename Fn>
Fn* export_of(const std::string& path, const char* name) {
  void* library = dlopen(path.c_str(), RTLD_NOW | RTLD_NOLOAD);
  REQUIRE(library != nullptr);
  void* symbol = dlsym(library, name);
  dlclose(library);
  REQUIRE(symbol != nullptr);
  return reinterpret_cast<Fn*>(symbol);
}

struct Fakecuda {
  std::shared_ptr<LoadedPlugin> plugin;
  std::unique_ptr<DeviceWork> device;
  std::string path = fakecuda_path();

  Fakecuda() {
    auto loaded = LoadedPlugin::load(path);
    REQUIRE(loaded.is_ok());
    plugin = loaded.value();
    auto opened = PluginDevice::open(plugin, 0, 10s);
    REQUIRE(opened.is_ok());
    device = std::move(opened).value();
  }
  long long calls(const char* op) {
    return export_of<long long(const char*)>(path, "fakecuda_calls")(op);
  }
  long long device_calls(const char* kind) {
    return export_of<long long(const char*)>(path, "fakecuda_device_calls")(kind);
  }
  void* stream() { return export_of<void*()>(path, "fakecuda_stream_create")(); }
  void destroy_stream(void* s) { export_of<void(void*)>(path, "fakecuda_stream_destroy")(s); }
  int32_t synchronize(void* s) {
    return export_of<int32_t(void*)>(path, "fakecuda_stream_synchronize")(s);
  }
  int32_t write(void* s, void* dst, const void* src, size_t bytes, long delay_us) {
    return export_of<int32_t(void*, void*, const void*, size_t, long)>(
        path, "fakecuda_stream_write")(s, dst, src, bytes, delay_us);
  }
  void* cached_alloc(size_t bytes, void* s) {
    return export_of<void*(size_t, void*)>(path, "fakecuda_cached_alloc")(bytes, s);
  }
  void cached_free(void* p, void* s) {
    export_of<void(void*, void*)>(path, "fakecuda_cached_free")(p, s);
  }
  long long violations() { return export_of<long long()>(path, "fakecuda_violations")(); }

  // Rank `rank` of a world of `size` over `store`.
  std::unique_ptr<Transport> connect(daemon::KvStore& store, const std::string& prefix, int rank,
                                     int size, std::chrono::milliseconds timeout = 10s) {
    TransportContext context;
    context.store = &store;
    context.key_prefix = prefix;
    context.rank = rank;
    context.size = size;
    context.timeout = timeout;
    context.device = 0;
    auto made = PluginTransport::connect(plugin, context);
    REQUIRE(made.is_ok());
    return std::move(made).value();
  }

  // Polls `event` until done (true) or `limit` passes (false).
  bool wait_event(void* event, std::chrono::milliseconds limit = 10s) {
    const auto deadline = std::chrono::steady_clock::now() + limit;
    while (std::chrono::steady_clock::now() < deadline) {
      auto done = device->event_query(event);
      REQUIRE(done.is_ok());
      if (done.value()) return true;
      std::this_thread::sleep_for(1ms);
    }
    return false;
  }
};

void set_stream(Transport& t, void* stream) {
  dynamic_cast<StreamedTransport&>(t).set_stream(stream);
}

}  // namespace

TEST_CASE("fakecuda: version 4 has events and version 3 has none", "[fakecuda]") {
  auto v3 = LoadedPlugin::load(fakecuda_path("_v3"));
  REQUIRE(v3.is_ok());
  CHECK(v3.value()->abi_version() == 3);
  CHECK_FALSE(v3.value()->has_events());
  CHECK_FALSE(v3.value()->has_async_error());
  CHECK_FALSE(v3.value()->has_shrink());
  auto old_device = PluginDevice::open(v3.value(), 0, 1s);
  REQUIRE(old_device.is_ok());
  CHECK_FALSE(old_device.value()->has_events());
  CHECK(old_device.value()->event_create().status().code() ==
        common::StatusCode::kFailedPrecondition);

  Fakecuda fake;
  CHECK(fake.plugin->abi_version() == 4);
  CHECK(fake.plugin->has_events());
  CHECK(fake.plugin->has_async_error());
  CHECK(fake.plugin->has_shrink());
  REQUIRE(fake.device->has_events());
  auto event = fake.device->event_create();
  REQUIRE(event.is_ok());
  CHECK(fake.device->event_query(event.value()).value());  // never recorded: done
  void* s = fake.stream();
  std::vector<char> dst(8, 0);
  const std::vector<char> src(8, 7);
  REQUIRE(fake.write(s, dst.data(), src.data(), 8, 100000) == HVD_OK);  // 100 ms late
  REQUIRE(fake.device->event_record(event.value(), s).is_ok());
  CHECK_FALSE(fake.device->event_query(event.value()).value());  // does not block
  CHECK(fake.wait_event(event.value()));
  CHECK(dst == src);
  fake.device->event_destroy(event.value());
  fake.destroy_stream(s);
}

TEST_CASE("fakecuda: an allreduce returns before it ran and its event says when it did",
          "[fakecuda]") {
  Fakecuda fake;
  daemon::KvStore store;
  auto r0 = fake.connect(store, "async/", 0, 2);
  auto r1 = fake.connect(store, "async/", 1, 2);
  void* s0 = fake.device->comm_stream();
  void* s1 = fake.stream();
  set_stream(*r0, s0);
  set_stream(*r1, s1);
  auto* d0 = static_cast<float*>(fake.device->alloc(8, false).value());
  auto* d1 = static_cast<float*>(fake.device->alloc(8, false).value());
  d0[0] = 1, d0[1] = 2, d1[0] = 10, d1[1] = 20;
  const long long before = fake.calls("allreduce");

  // Rank 1 has not called yet: a blocking allreduce would wait for it.
  const auto start = std::chrono::steady_clock::now();
  REQUIRE(r0->allreduce({d0, 8}, DataType::kFloat32, ReduceOp::kSum).is_ok());
  CHECK(std::chrono::steady_clock::now() - start < 2s);
  CHECK((d0[0] == 1 && d0[1] == 2));  // not run yet
  void* event = fake.device->event_create().value();
  REQUIRE(fake.device->event_record(event, s0).is_ok());
  CHECK_FALSE(fake.device->event_query(event).value());

  REQUIRE(r1->allreduce({d1, 8}, DataType::kFloat32, ReduceOp::kSum).is_ok());
  REQUIRE(fake.wait_event(event));
  CHECK((d0[0] == 11 && d0[1] == 22));
  REQUIRE(fake.synchronize(s1) == HVD_OK);
  CHECK((d1[0] == 11 && d1[1] == 22));
  CHECK(fake.calls("allreduce") == before + 2);
  auto* streamed = dynamic_cast<StreamedTransport*>(r0.get());
  CHECK(streamed->async_error().is_ok());
  // A barrier still blocks the host until every rank is there.
  std::thread other([&] { CHECK(r1->barrier().is_ok()); });
  CHECK(r0->barrier().is_ok());
  other.join();

  fake.device->event_destroy(event);
  fake.device->free(d0, false);
  fake.device->free(d1, false);
  r0.reset();
  r1.reset();
  fake.destroy_stream(s1);
}

TEST_CASE("fakecuda: a collective that fails later shows in async_error and abort ends it",
          "[fakecuda]") {
  Fakecuda fake;
  daemon::KvStore store;
  auto r0 = fake.connect(store, "fails/", 0, 2, 30s);  // rank 1 never comes
  set_stream(*r0, fake.device->comm_stream());
  std::vector<float> data{1, 2};
  REQUIRE(r0->allreduce({data.data(), 8}, DataType::kFloat32, ReduceOp::kSum).is_ok());
  auto* streamed = dynamic_cast<StreamedTransport*>(r0.get());
  CHECK(streamed->async_error().is_ok());  // still waiting for its peer
  void* event = fake.device->event_create().value();
  REQUIRE(fake.device->event_record(event, fake.device->comm_stream()).is_ok());

  // The abort ends the blocked exchange within a 50 ms slice, not at 30 s.
  const auto start = std::chrono::steady_clock::now();
  r0->abort(common::aborted("a peer died"));
  REQUIRE(fake.wait_event(event, 5s));
  CHECK(std::chrono::steady_clock::now() - start < 2s);
  Status failed = streamed->async_error();
  CHECK(failed.code() == common::StatusCode::kAborted);
  CHECK(r0->barrier().message() == failed.message());
  // The comm stream carries the failed item's error.
  CHECK(fake.device->synchronize(fake.device->comm_stream()).code() != common::StatusCode::kOk);
  fake.device->event_destroy(event);
}

TEST_CASE("fakecuda: copy_on_device classifies nothing and copy classifies every entry",
          "[fakecuda]") {
  Fakecuda fake;
  void* s = fake.stream();
  std::vector<int> a{1, 2, 3}, b(3), c(3);
  const DeviceCopy copies[2] = {{b.data(), a.data(), 12}, {c.data(), a.data(), 12}};
  const long long classified = fake.device_calls("classified");
  const long long on_device = fake.device_calls("copy_on_device");
  const long long all_copies = fake.device_calls("copy");
  REQUIRE(fake.device->copy_on_device(copies, s).is_ok());
  REQUIRE(fake.synchronize(s) == HVD_OK);
  CHECK((b == a && c == a));
  CHECK(fake.device_calls("classified") == classified);
  CHECK(fake.device_calls("copy_on_device") == on_device + 1);
  CHECK(fake.device_calls("copy") == all_copies + 1);
  REQUIRE(fake.device->copy(copies, s).is_ok());
  CHECK(fake.device_calls("classified") == classified + 2);
  REQUIRE(fake.synchronize(s) == HVD_OK);
  fake.destroy_stream(s);
}

TEST_CASE("fakecuda: shrink makes a world of the survivors", "[fakecuda]") {
  Fakecuda fake;
  daemon::KvStore store;
  auto r0 = fake.connect(store, "big/", 0, 2);
  TransportContext survivors;
  survivors.store = &store;
  survivors.key_prefix = "small/";
  survivors.size = 1;
  survivors.timeout = 10s;
  const std::vector<int> excluded{1};
  auto shrunk = dynamic_cast<PluginTransport&>(*r0).shrink(survivors, excluded);
  REQUIRE(shrunk.is_ok());
  CHECK(shrunk.value()->size() == 1);
  set_stream(*shrunk.value(), fake.device->comm_stream());
  std::vector<float> data{3, 4};
  REQUIRE(shrunk.value()->allreduce({data.data(), 8}, DataType::kFloat32, ReduceOp::kSum).is_ok());
  REQUIRE(fake.device->synchronize(fake.device->comm_stream()).is_ok());
  CHECK(data == std::vector<float>{3, 4});
  const std::vector<int> self{0};
  CHECK(dynamic_cast<PluginTransport&>(*r0).shrink(survivors, self).status().code() ==
        common::StatusCode::kInvalidArgument);
}

TEST_CASE("fakecuda: a cached block reused without an ordering wait fails and with one works",
          "[fakecuda]") {
  Fakecuda fake;
  std::vector<char> payload(64, 1);
  for (const bool ordered : {false, true}) {
    INFO((ordered ? "ordered" : "unordered"));
    void* framework = fake.stream();  // the caller's stream, the block's pool
    void* comm = fake.stream();       // another stream still using the block
    void* block = fake.cached_alloc(64, framework);
    // Work on `comm` that writes the block 100 ms from now.
    REQUIRE(fake.write(comm, block, payload.data(), 64, 100000) == HVD_OK);
    void* event = fake.device->event_create().value();
    if (ordered) {  // what record_stream / a stream wait does before the free
      REQUIRE(fake.device->event_record(event, comm).is_ok());
      REQUIRE(fake.device->stream_wait(framework, nullptr, event).is_ok());
    }
    fake.cached_free(block, framework);
    void* again = fake.cached_alloc(64, framework);
    CHECK(again == block);  // handed out at once, as torch's allocator does
    const long long before = fake.violations();
    std::vector<char> mine(64, 2);
    REQUIRE(fake.write(framework, again, mine.data(), 64, 0) == HVD_OK);
    const int32_t result = fake.synchronize(framework);
    REQUIRE(fake.synchronize(comm) == HVD_OK);
    if (ordered) {
      CHECK(result == HVD_OK);
      CHECK(fake.violations() == before);
      CHECK(std::memcmp(again, mine.data(), 64) == 0);
    } else {
      CHECK(result != HVD_OK);
      CHECK(fake.violations() == before + 1);
    }
    fake.cached_free(again, framework);
    fake.device->event_destroy(event);
    fake.destroy_stream(framework);
    fake.destroy_stream(comm);
  }
}

}  // namespace hvd::transports::plugin
