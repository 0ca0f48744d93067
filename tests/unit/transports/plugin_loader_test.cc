// The transport plugin loader over the test plugins of plugins/ (built in
// HVD_TEST_PLUGIN_DIR): loading, the adapter to Transport, ABI version
// acceptance and refusal, and one clear error for each way a plugin fails.
#include <catch2/catch.hpp>

#include <cstring>
#include <string>
#include <vector>

#include "daemon/rendezvous/kv_store.h"
#include "transports/plugin/known_plugins.h"
#include "transports/plugin/plugin_loader.h"
#include "transports/plugin/plugin_transport.h"

namespace hvd::transports::plugin {

namespace {

std::string plugin_path(const std::string& variant) {
  return std::string(HVD_TEST_PLUGIN_DIR) + "/libhvd_test_plugin" + variant + ".so";
}

TransportRegistry registry_with(const std::string& variant, const char* name = "testcpu") {
  TransportRegistry registry;
  static std::vector<std::string> paths;  // KnownPlugin holds C strings
  paths.push_back(plugin_path(variant));
  register_plugin(registry, KnownPlugin{name, DeviceKind::kCpu, paths.back().c_str()});
  return registry;
}

}  // namespace

TEST_CASE("plugin loader: loads a plugin and reads its description", "[plugin]") {
  auto loaded = LoadedPlugin::load(plugin_path(""));
  REQUIRE(loaded.is_ok());
  CHECK(loaded.value()->name() == "testcpu");
  CHECK(loaded.value()->device() == DeviceKind::kCpu);
  CHECK(loaded.value()->abi_version() == HVD_TRANSPORT_PLUGIN_ABI_VERSION);
  CHECK(loaded.value()->path() == plugin_path(""));
  CHECK(loaded.value()->can_run().available);
}

TEST_CASE("plugin loader: a plugin's transport runs the ops of its world", "[plugin]") {
  TransportRegistry registry = registry_with("");
  REQUIRE(registry.list().size() == 1);
  CHECK(registry.list()[0].availability.available);

  daemon::KvStore store;
  TransportContext context;
  context.store = &store;
  context.key_prefix = "job1/";
  auto transport = registry.create(DeviceKind::kCpu, "testcpu", context);
  REQUIRE(transport.is_ok());
  CHECK(store.check({"job1/testcpu/id"}).value());  // create() went through the store
  Transport& t = *transport.value();
  CHECK(t.name() == "testcpu");
  CHECK(t.size() == 1);

  std::vector<float> data{1, 2, 3};
  CHECK(t.allreduce({data.data(), 12}, DataType::kFloat32, ReduceOp::kSum).is_ok());
  CHECK(data == std::vector<float>{1, 2, 3});
  CHECK(t.broadcast({data.data(), 12}, 0).is_ok());
  std::vector<float> out(3);
  const std::vector<int64_t> counts{12};
  CHECK(t.allgatherv({data.data(), 12}, {out.data(), 12}, counts).is_ok());
  CHECK(out == data);
  CHECK(t.barrier().is_ok());

  // The shared argument checks come before the plugin.
  CHECK(t.broadcast({data.data(), 12}, 1).code() == common::StatusCode::kInvalidArgument);

  // A refusal (HVD_ERR_INVALID_ARGUMENT: nothing ran) fails that op only,
  // as the shared checks do: the transport stays usable (nccl refuses int16).
  Status refused = t.allreduce({data.data(), 12}, DataType::kInt16, ReduceOp::kSum);
  CHECK(refused.to_string() == "InvalidArgument: testcpu allreduce on rank 0: no int16 in tests");
  CHECK(t.barrier().is_ok());

  // Any other plugin error is a Status naming the transport, the op and the
  // rank; it stays set.
  Status failed = t.allreduce({data.data(), 12}, DataType::kFloat32, ReduceOp::kProduct);
  CHECK(failed.to_string() == "Unimplemented: testcpu allreduce on rank 0: no product in tests");
  CHECK(t.barrier().message() == failed.message());
}

TEST_CASE("plugin loader: abort fails later calls, the first reason wins", "[plugin]") {
  auto transport = registry_with("").create("testcpu", TransportContext{});
  REQUIRE(transport.is_ok());
  Transport& t = *transport.value();
  t.abort(common::aborted("the world changed"));
  t.abort(common::timeout_error("second"));
  Status after = t.barrier();
  CHECK(after.code() == common::StatusCode::kAborted);
  CHECK(after.message() == "testcpu transport on rank 0 was aborted: the world changed");
}

TEST_CASE("plugin loader: a plugin's create() error comes back", "[plugin]") {
  TransportContext two;
  two.size = 2;
  auto refused = registry_with("").create("testcpu", two);
  REQUIRE_FALSE(refused.is_ok());
  CHECK(refused.status().to_string() ==
        "InvalidArgument: transport 'testcpu' on rank 0 could not connect: only a world of one");
}

TEST_CASE("plugin loader: a too-new ABI version is refused naming both", "[plugin]") {
  auto loaded = LoadedPlugin::load(plugin_path("_too_new"));
  REQUIRE_FALSE(loaded.is_ok());
  CHECK(loaded.status().code() == common::StatusCode::kFailedPrecondition);
  CHECK(loaded.status().message() ==
        "transport plugin " + plugin_path("_too_new") + " has ABI version " +
            std::to_string(HVD_TRANSPORT_PLUGIN_ABI_VERSION + 1) +
            ", newer than this hvd's version " + std::to_string(HVD_TRANSPORT_PLUGIN_ABI_VERSION) +
            ": use a plugin built for this hvd, or a newer hvd");
  // The registry entry is then unavailable, with that reason.
  auto entries = registry_with("_too_new").list();
  CHECK_FALSE(entries[0].availability.available);
  CHECK(entries[0].availability.reason == loaded.status().message());
}

TEST_CASE("plugin loader: versions and struct sizes it knows are accepted", "[plugin]") {
  auto loaded = LoadedPlugin::load(plugin_path(""));
  REQUIRE(loaded.is_ok());
  hvd_transport_plugin_t api = loaded.value()->api();
  for (uint32_t v = HVD_TRANSPORT_PLUGIN_ABI_OLDEST; v <= HVD_TRANSPORT_PLUGIN_ABI_VERSION; ++v) {
    INFO("ABI version " << v);
    api.abi_version = v;
    api.struct_size = static_cast<uint32_t>(required_struct_size(v));
    CHECK(validate(api, "p").is_ok());
    api.struct_size -= 1;  // a field of its version missing
    CHECK_THAT(validate(api, "p").message(), Catch::Contains("is below the"));
  }
  api = loaded.value()->api();
  api.abi_version = 0;
  CHECK(validate(api, "p").message() ==
        "transport plugin p has ABI version 0, older than the oldest 1 this hvd accepts");
  api = loaded.value()->api();
  api.barrier = nullptr;
  CHECK(validate(api, "p").message() == "transport plugin p leaves a function pointer null");
  api = loaded.value()->api();
  api.device = 7;
  CHECK(validate(api, "p").message() == "transport plugin p names an unknown device 7");
}

TEST_CASE("plugin loader: a CUDA plugin of ABI version 2 must have the device functions",
          "[plugin]") {
  auto loaded = LoadedPlugin::load(plugin_path(""));
  REQUIRE(loaded.is_ok());
  hvd_transport_plugin_t api = loaded.value()->api();  // a CPU plugin: no device_* functions
  CHECK(validate(api, "p").is_ok());
  api.device = HVD_PLUGIN_DEVICE_CUDA;
  CHECK(validate(api, "p").message() ==
        "transport plugin p (CUDA, ABI version 2) leaves a device_* function null");
  api.abi_version = 1;  // version 1 had none
  api.struct_size = static_cast<uint32_t>(required_struct_size(1));
  CHECK(validate(api, "p").is_ok());
}

namespace {
int32_t no_open(int32_t, int64_t, void**, hvd_plugin_status*) { return HVD_ERR_UNAVAILABLE; }
void no_close(void*) {}
int32_t no_alloc(void*, size_t, int32_t, void**, hvd_plugin_status*) { return HVD_ERR_UNAVAILABLE; }
void no_free(void*, void*, int32_t) {}
int32_t no_copy(void*, const hvd_plugin_copy*, size_t, void*, hvd_plugin_status*) { return 1; }
int32_t no_scale(void*, void*, size_t, int32_t, int32_t, double, void*, hvd_plugin_status*) {
  return 1;
}
int32_t no_sync(void*, void*, hvd_plugin_status*) { return 1; }
int32_t no_comm(void*, void**, hvd_plugin_status*) { return 1; }
int32_t no_wait(void*, void*, void*, void*, hvd_plugin_status*) { return 1; }
}  // namespace

TEST_CASE("plugin loader: a CUDA plugin of ABI version 3 must have the communication stream",
          "[plugin]") {
  auto loaded = LoadedPlugin::load(plugin_path(""));
  REQUIRE(loaded.is_ok());
  hvd_transport_plugin_t api = loaded.value()->api();
  api.device = HVD_PLUGIN_DEVICE_CUDA;
  api.device_open = no_open;
  api.device_close = no_close;
  api.device_alloc = no_alloc;
  api.device_free = no_free;
  api.device_copy = no_copy;
  api.device_scale = no_scale;
  api.device_synchronize = no_sync;
  api.abi_version = 3;
  CHECK(validate(api, "p").message() ==
        "transport plugin p (CUDA, ABI version 3) leaves device_comm_stream or "
        "device_stream_wait null");
  api.abi_version = 2;  // version 2 had neither
  api.struct_size = static_cast<uint32_t>(required_struct_size(2));
  CHECK(validate(api, "p").is_ok());
  api.abi_version = 3;
  api.struct_size = static_cast<uint32_t>(required_struct_size(3));
  api.device_comm_stream = no_comm;
  api.device_stream_wait = no_wait;
  CHECK(validate(api, "p").is_ok());
}

namespace {
int32_t no_event_create(void*, void**, hvd_plugin_status*) { return 1; }
void no_event_destroy(void*, void*) {}
int32_t no_event_record(void*, void*, void*, hvd_plugin_status*) { return 1; }
int32_t no_event_query(void*, void*, int32_t*, hvd_plugin_status*) { return 1; }
}  // namespace

TEST_CASE("plugin loader: a CUDA plugin of ABI version 4 must have the events", "[plugin]") {
  auto loaded = LoadedPlugin::load(plugin_path(""));
  REQUIRE(loaded.is_ok());
  hvd_transport_plugin_t api = loaded.value()->api();
  api.device = HVD_PLUGIN_DEVICE_CUDA;
  api.device_open = no_open;
  api.device_close = no_close;
  api.device_alloc = no_alloc;
  api.device_free = no_free;
  api.device_copy = no_copy;
  api.device_scale = no_scale;
  api.device_synchronize = no_sync;
  api.device_comm_stream = no_comm;
  api.device_stream_wait = no_wait;
  api.abi_version = 4;
  CHECK(validate(api, "p").message() ==
        "transport plugin p (CUDA, ABI version 4) leaves a device_event_* function or "
        "device_copy_on_device null");
  api.abi_version = 3;  // version 3 had none of them
  api.struct_size = static_cast<uint32_t>(required_struct_size(3));
  CHECK(validate(api, "p").is_ok());
  api.abi_version = 4;
  api.struct_size = static_cast<uint32_t>(required_struct_size(4));
  api.device_event_create = no_event_create;
  api.device_event_destroy = no_event_destroy;
  api.device_event_record = no_event_record;
  api.device_event_query = no_event_query;
  api.device_copy_on_device = no_copy;
  CHECK(validate(api, "p").is_ok());
  CHECK(required_struct_size(3) < required_struct_size(4));
  CHECK(required_struct_size(4) == sizeof(hvd_transport_plugin_t));
}

TEST_CASE("plugin loader: async_error fails the transport for good", "[plugin]") {
  auto transport = registry_with("").create("testcpu", TransportContext{});
  REQUIRE(transport.is_ok());
  auto* t = dynamic_cast<PluginTransport*>(transport.value().get());
  REQUIRE(t != nullptr);
  CHECK(t->async_error().is_ok());
  std::vector<float> data{1, 2, 3};
  // The call succeeds; its failure shows later (testcpu: HVD_OP_MAX).
  CHECK(t->allreduce({data.data(), 12}, DataType::kFloat32, ReduceOp::kMax).is_ok());
  Status later = t->async_error();
  CHECK(later.to_string() ==
        "Unavailable: testcpu asynchronous error on rank 0: a peer went away after the call");
  CHECK(t->barrier().message() == later.message());  // latched
  CHECK(t->async_error().message() == later.message());
}

TEST_CASE("plugin loader: shrink without the library's support is kUnimplemented", "[plugin]") {
  auto transport = registry_with("").create("testcpu", TransportContext{});
  REQUIRE(transport.is_ok());
  auto* t = dynamic_cast<PluginTransport*>(transport.value().get());
  REQUIRE(t != nullptr);
  const std::vector<int> none;
  auto shrunk = t->shrink(TransportContext{}, none);
  REQUIRE_FALSE(shrunk.is_ok());
  CHECK(shrunk.status().to_string() ==
        "Unimplemented: transport 'testcpu' on rank 0 could not shrink: no shrink in this "
        "library");
  CHECK(t->barrier().is_ok());  // the transport stays usable
}

TEST_CASE("plugin loader: a library without the symbol is not a plugin", "[plugin]") {
  auto loaded = LoadedPlugin::load(plugin_path("_no_symbol"));
  REQUIRE_FALSE(loaded.is_ok());
  CHECK(loaded.status().code() == common::StatusCode::kNotFound);
  CHECK_THAT(loaded.status().message(),
             Catch::StartsWith("transport plugin " + plugin_path("_no_symbol") +
                               " exports no hvd_transport_plugin (") &&
                 Catch::EndsWith("): not an hvd transport plugin"));
}

TEST_CASE("plugin loader: a missing library gives dlopen's reason", "[plugin]") {
  auto loaded = LoadedPlugin::load("/nonexistent/libhvd_nothing.so");
  REQUIRE_FALSE(loaded.is_ok());
  CHECK(loaded.status().code() == common::StatusCode::kNotFound);
  CHECK(loaded.status().message() ==
        "transport plugin /nonexistent/libhvd_nothing.so cannot be loaded: "
        "/nonexistent/libhvd_nothing.so: cannot open shared object file: No such file or "
        "directory");

  // A bare name is looked for beside this module first, and the message says where.
  TransportRegistry registry;
  register_plugin(registry, KnownPlugin{"nothing", DeviceKind::kCuda, "libhvd_nothing.so"});
  auto entry = registry.list().at(0);
  CHECK_FALSE(entry.availability.available);
  CHECK_THAT(entry.availability.reason,
             Catch::StartsWith("transport plugin libhvd_nothing.so cannot be loaded: "
                               "libhvd_nothing.so: cannot open shared object file") &&
                 Catch::Contains("(also looked in "));
}

TEST_CASE("plugin loader: can_run() false gives its reason", "[plugin]") {
  TransportRegistry registry = registry_with("_cannot_run");
  auto entry = registry.list().at(0);
  CHECK_FALSE(entry.availability.available);
  CHECK(entry.availability.reason == "test plugin: no such device here");
  auto refused = registry.create("testcpu", TransportContext{});
  CHECK(refused.status().to_string() ==
        "FailedPrecondition: transport 'testcpu' cannot run here: "
        "test plugin: no such device here");
}

TEST_CASE("plugin loader: a plugin must be the transport it is declared as", "[plugin]") {
  auto entry = registry_with("", "other").list().at(0);
  CHECK_FALSE(entry.availability.available);
  CHECK(entry.availability.reason == "transport plugin " + plugin_path("") +
                                         " is 'testcpu' (cpu), expected 'other' (cpu)");
}

}  // namespace hvd::transports::plugin

namespace hvd::transports::plugin {

TEST_CASE("plugin list: NAME:DEVICE:LIBRARY entries, each bad one named", "[plugin]") {
  auto none = parse_plugin_list("  ");
  REQUIRE(none.is_ok());
  CHECK(none.value().empty());
  auto two = parse_plugin_list("fake:cuda:/opt/lib/libfake.so, mine : cpu : libmine.so,");
  REQUIRE(two.is_ok());
  REQUIRE(two.value().size() == 2);
  CHECK(two.value()[0].name == "fake");
  CHECK(two.value()[0].device == DeviceKind::kCuda);
  CHECK(two.value()[0].library == "/opt/lib/libfake.so");
  CHECK(two.value()[1].name == "mine");
  CHECK(two.value()[1].device == DeviceKind::kCpu);
  CHECK(two.value()[1].library == "libmine.so");

  auto message = [](const char* text) { return parse_plugin_list(text).status().message(); };
  CHECK(message("fake:cuda") ==
        "transport_plugins: 'fake:cuda' is not NAME:DEVICE:LIBRARY (e.g. mine:cuda:libmine.so)");
  CHECK(message("ok:cuda:a.so,fake:gpu:b.so") ==
        "transport_plugins: device 'gpu' in 'fake:gpu:b.so' is neither cpu nor cuda");
  CHECK(message(":cuda:b.so") == "transport_plugins: ':cuda:b.so' has an empty name or library");
}

TEST_CASE("plugin list: a listed plugin becomes a lazily loaded registry entry", "[plugin]") {
  auto listed = parse_plugin_list("testcpu:cpu:" + plugin_path(""));
  REQUIRE(listed.is_ok());
  TransportRegistry registry;
  register_plugin(registry, listed.value()[0]);
  CHECK(registry.names(DeviceKind::kCpu) == std::vector<std::string>{"testcpu"});
  CHECK(registry.availability("testcpu").available);
  CHECK_FALSE(registry.availability("other").available);
}

}  // namespace hvd::transports::plugin
