// The C ABI (include/hvd/c_api.h) over one process-wide Runtime. Exceptions
// never cross it: each entry point turns them into an error code and the
// calling thread's last-error message.
#include "hvd/c_api.h"

#include <dlfcn.h>

#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <memory>
#include <mutex>
#include <optional>
#include <string>
#include <string_view>

#include "config/settings.h"
#include "runtime/c_api_constants.h"
#include "runtime/op_abi.h"
#include "runtime/runtime.h"
#include "transports/table/transport_table.h"

namespace {

using hvd::common::Status;
using hvd::common::StatusCode;
using hvd::runtime::Runtime;

// The process's runtime. Calls take a reference under a short lock and run
// without it, so a thread waiting on a handle never blocks hvd_shutdown(),
// which stops the engines (failing what is pending) and lets go of the
// runtime; the last call still using it destroys it.
struct Holder {
  std::mutex mu;  // guards `runtime` and `next_handle`
  std::shared_ptr<Runtime> runtime;
  int64_t next_handle = 1;  // handle ids never repeat across init/shutdown
  int64_t generation = 0;   // runtimes created so far
  bool exit_hook = false;   // shutdown_at_exit registered
  std::mutex lifecycle;     // one init or shutdown at a time
};

// The one process-wide object of libhvd. Never destroyed: nothing is torn
// down from static destructors (a program that exits without hvd_shutdown()
// gets it from an atexit hook, see shutdown_at_exit; one that dies leaves the
// rest to the kernel).
Holder& holder() {
  static Holder* instance = new Holder;
  return *instance;
}

std::shared_ptr<Runtime> current() {
  Holder& h = holder();
  std::lock_guard lock(h.mu);
  return h.runtime;
}

std::string& last_error() {
  thread_local std::string message;
  return message;
}

int fail(const Status& status) {
  last_error() = status.message();
  return static_cast<int>(status.code());
}

Status exception_status(const std::exception* e) {
  return Status(StatusCode::kInternal,
                e != nullptr ? std::string("unexpected error: ") + e->what() : "unexpected error");
}

// Runs `body` (returning a Status), catching everything.
template <typename Body>
int guarded(Body&& body) noexcept {
  try {
    Status status = body();
    return status.is_ok() ? HVD_OK : fail(status);
  } catch (const std::exception& e) {
    return fail(exception_status(&e));
  } catch (...) {
    return fail(exception_status(nullptr));
  }
}

Status not_initialized() {
  return hvd::common::failed_precondition("hvd is not initialized: call hvd_init() first");
}

// Runs `body` on the initialized runtime.
template <typename Body>
int with_runtime(Body&& body) noexcept {
  return guarded([&]() -> Status {
    std::shared_ptr<Runtime> rt = current();
    if (!rt) return not_initialized();
    return body(*rt);
  });
}

// A WorldInfo field, or -1 when not initialized.
template <typename Field>
int query(Field field) noexcept {
  try {
    std::shared_ptr<Runtime> rt = current();
    return rt ? field(rt->world()) : -1;
  } catch (...) {
    return -1;
  }
}

// Runs `body` (returning Result<int>): its value, or -code with the last
// error set; exceptions become -HVD_ERR_INTERNAL.
template <typename Body>
int value_or_negated_code(Body&& body) noexcept {
  try {
    hvd::common::Result<int> value = body();
    return value.is_ok() ? value.value() : -fail(value.status());
  } catch (const std::exception& e) {
    return -fail(exception_status(&e));
  } catch (...) {
    return -fail(exception_status(nullptr));
  }
}

// A process set's figure: the value, or -code (with the last error set).
template <typename Body>
int set_query(int32_t id, Body&& body) noexcept {
  return value_or_negated_code([&]() -> hvd::common::Result<int> {
    std::shared_ptr<Runtime> rt = current();
    if (!rt) return not_initialized();
    auto set = rt->process_set(id);
    if (!set.is_ok()) return set.status();
    return body(*set.value());
  });
}


// ---- Build and environment queries (hvd_build_feature) ----

// The folder this libhvd.so was loaded from, made absolute when the library
// is loaded (a relative path names the working directory of that moment).
// Asked about a function of internal linkage: an exported one may resolve to
// another copy of libhvd.so loaded earlier.
const std::filesystem::path& library_dir() {
  static const auto* dir = [] {
    Dl_info info{};
    std::error_code ec;
    std::filesystem::path path;
    if (dladdr(reinterpret_cast<void*>(&library_dir), &info) != 0 &&
        info.dli_fname != nullptr) {
      path = std::filesystem::absolute(info.dli_fname, ec).parent_path();
    }
    return new std::filesystem::path(std::move(path));
  }();
  return *dir;
}
[[maybe_unused]] const bool kLibraryDirKnown = !library_dir().empty();

// The NCCL plugin (CUDA tensors: the transport table's first CUDA row) is a
// library of its own beside libhvd.so.
int nccl_plugin_present() {
  const auto* row = hvd::transports::find_transport(hvd::transports::default_gpu_transport());
  if (row == nullptr || row->plugin_library.empty()) return 0;
  std::error_code ec;
  const auto& dir = library_dir();
  return !dir.empty() && std::filesystem::is_regular_file(dir / row->plugin_library, ec) ? 1 : 0;
}

// Whether CPU collectives may use gloo, from the environment as hvd_init()
// reads it (the transport table: gloo, and auto and hierarchical, gloo
// across hosts; not shm).
hvd::common::Result<int> gloo_enabled() {
  hvd::config::Settings settings;
  HVD_RETURN_IF_ERROR(settings.apply_environment([](const char* n) { return std::getenv(n); }));
  return hvd::transports::gloo_may_carry(settings.get("cpu_transport")) ? 1 : 0;
}

struct Feature {
  const char* name;
  hvd::common::Result<int> (*answer)();
};

hvd::common::Result<int> yes() { return 1; }
hvd::common::Result<int> no() { return 0; }
hvd::common::Result<int> with_nccl_plugin() { return nccl_plugin_present(); }
// As Horovod: NCCL's version code (2.28.9: 22809) when the plugin is there,
// the one this build compiled it against; 1 when this libhvd.so was built
// without the plugin (a foreign one beside it: its version is unknown here).
hvd::common::Result<int> nccl_version_code() {
  constexpr int kCode = HVD_NCCL_VERSION_CODE;
  return nccl_plugin_present() == 0 ? 0 : (kCode > 0 ? kCode : 1);
}

constexpr Feature kFeatures[] = {
    {"gloo_built", yes},
    {"gloo_enabled", gloo_enabled},
    {"mpi_built", no},
    {"mpi_enabled", no},
    {"mpi_threads_supported", no},
    {"nccl_built", nccl_version_code},
    {"cuda_built", with_nccl_plugin},  // CUDA tensors go through the NCCL plugin
    {"rocm_built", no},
    {"ccl_built", no},
    {"ddl_built", no},
};

// A program that exits without hvd_shutdown(): stop the engines while the
// process is still whole. Registered after the logger exists, so it runs
// before the logger's static destruction, and engine threads never log into
// a destroyed logger (nor do peers see sockets vanish mid-cycle: they learn
// that this rank shut down).
void shutdown_at_exit() { (void)hvd_shutdown(); }

// hvd_handle_copy_output(_on): a device output on `stream`, waited for with
// `wait`; a host output copied at once.
int copy_output(int64_t handle, void* dst, int64_t bytes, void* stream, bool wait,
                const char* call) {
  return with_runtime([&](Runtime& rt) {
    return rt.handles().inspect(handle, [&](const hvd::runtime::engine::FinishedOp& op) -> Status {
      if (!op.status.is_ok()) return op.status;
      if (bytes < 0 || static_cast<size_t>(bytes) != op.output.bytes) {
        return hvd::common::invalid_argument(std::string(call) + ": the output has " +
                                             std::to_string(op.output.bytes) + " bytes, not " +
                                             std::to_string(bytes));
      }
      if (bytes > 0) {
        if (dst == nullptr) return hvd::common::invalid_argument(std::string(call) + ": dst is null");
        if (op.output.device) return op.output.device->copy_to(dst, op.output.bytes, stream, wait);
        std::memcpy(dst, op.output.data.get(), op.output.bytes);
      }
      return Status::ok();
    });
  });
}

}  // namespace

extern "C" {

int hvd_init(void) {
  return guarded([]() -> Status {
    Holder& h = holder();
    std::lock_guard lifecycle(h.lifecycle);
    int64_t first_handle = 1;
    int64_t generation = 0;
    {
      std::lock_guard lock(h.mu);
      if (h.runtime) return Status::ok();
      first_handle = h.next_handle;
      generation = h.generation;
    }
    auto runtime = Runtime::init([](const char* name) { return std::getenv(name); }, first_handle,
                                 generation);
    if (!runtime.is_ok()) return runtime.status();
    std::lock_guard lock(h.mu);
    h.runtime = std::shared_ptr<Runtime>(std::move(runtime).value());
    ++h.generation;
    if (!h.exit_hook) h.exit_hook = std::atexit(shutdown_at_exit) == 0;
    return Status::ok();
  });
}

int hvd_shutdown(void) {
  return guarded([]() -> Status {
    Holder& h = holder();
    std::lock_guard lifecycle(h.lifecycle);
    std::shared_ptr<Runtime> rt;
    {
      std::lock_guard lock(h.mu);
      rt = std::move(h.runtime);
      h.runtime.reset();
      if (rt) h.next_handle = rt->handles().next_id() + 1000;
    }
    if (rt) rt->shutdown();  // stops the engines; waiters wake with an error
    return Status::ok();
  });
}

int hvd_abort(const char* reason) {
  return guarded([reason]() -> Status {
    std::shared_ptr<Runtime> rt = current();
    if (!rt) return Status::ok();  // nothing to abort
    rt->abort(hvd::common::aborted(reason != nullptr && *reason != '\0' ? reason
                                                                         : "no reason given"));
    return Status::ok();
  });
}

int hvd_is_initialized(void) {
  return query([](const hvd::runtime::WorldInfo&) { return 1; }) == 1 ? 1 : 0;
}

int hvd_rank(void) { return query([](const auto& w) { return w.rank; }); }

int hvd_elastic_host_updates(void) {
  try {
    std::shared_ptr<Runtime> rt = current();
    return rt ? rt->host_updates() : 0;
  } catch (...) {
    return 0;
  }
}
int hvd_elastic_committed(int64_t commit, int synced) {
  return guarded([&]() -> Status {
    if (commit < 0) {
      return hvd::common::invalid_argument("hvd_elastic_committed: commit " +
                                           std::to_string(commit) + " is negative");
    }
    std::shared_ptr<Runtime> rt = current();
    if (rt) rt->commit_held({commit, synced != 0});
    return Status::ok();
  });
}

int hvd_size(void) { return query([](const auto& w) { return w.size; }); }
int hvd_local_rank(void) { return query([](const auto& w) { return w.local_rank; }); }
int hvd_local_size(void) { return query([](const auto& w) { return w.local_size; }); }
int hvd_cross_rank(void) { return query([](const auto& w) { return w.cross_rank; }); }
int hvd_cross_size(void) { return query([](const auto& w) { return w.cross_size; }); }

int hvd_allreduce(void* data, int64_t count, int dtype, int op) {
  return with_runtime([&](Runtime& rt) { return rt.allreduce(data, count, dtype, op); });
}

int hvd_broadcast(void* data, int64_t count, int dtype, int root) {
  return with_runtime([&](Runtime& rt) { return rt.broadcast(data, count, dtype, root); });
}

int hvd_allgather(const void* in, int64_t count, int dtype, void* out, const int64_t* counts) {
  return with_runtime([&](Runtime& rt) { return rt.allgather(in, count, dtype, out, counts); });
}

int hvd_barrier(void) {
  return with_runtime([](Runtime& rt) { return rt.barrier(); });
}

int hvd_enqueue(const hvd_op* op, int64_t* handle) {
  return with_runtime([&](Runtime& rt) -> Status {
    if (op == nullptr || handle == nullptr) {
      return hvd::common::invalid_argument("hvd_enqueue: op and handle must not be null");
    }
    auto read = hvd::runtime::read_op(op, "hvd_enqueue");
    if (!read.is_ok()) return read.status();
    auto h = rt.enqueue(read.value());
    if (!h.is_ok()) return h.status();
    *handle = h.value();
    return Status::ok();
  });
}

int hvd_enqueue_group(const hvd_op* ops, int32_t n, int64_t* handles) {
  return with_runtime([&](Runtime& rt) -> Status {
    auto read = hvd::runtime::read_ops(ops, n, "hvd_enqueue_group");
    if (!read.is_ok()) return read.status();
    return rt.enqueue_group(read.value(), handles);
  });
}

int hvd_poll(int64_t handle) {
  return value_or_negated_code([&]() -> hvd::common::Result<int> {
    std::shared_ptr<Runtime> rt = current();
    if (!rt) return not_initialized();
    auto done = rt->handles().poll(handle);
    if (!done.is_ok()) return done.status();
    return done.value() ? 1 : 0;
  });
}

int hvd_wait(int64_t handle, double timeout_seconds) {
  return with_runtime([&](Runtime& rt) {
    std::optional<std::chrono::duration<double>> timeout;
    if (timeout_seconds > 0) timeout = std::chrono::duration<double>(timeout_seconds);
    return rt.handles().wait(handle, timeout);
  });
}

int hvd_wait_on_stream(int64_t handle, void* stream, double timeout_seconds) {
  return with_runtime([&](Runtime& rt) {
    std::optional<std::chrono::duration<double>> timeout;
    if (timeout_seconds > 0) timeout = std::chrono::duration<double>(timeout_seconds);
    std::shared_ptr<hvd::runtime::engine::DeviceEvent> event;
    Status s = rt.handles().wait_launched(handle, timeout, &event);
    if (!s.is_ok() || !event) return s;  // done (or failed, or timed out)
    return event->order(stream);
  });
}

int hvd_handle_copy_output_on(int64_t handle, void* dst, int64_t bytes, void* stream) {
  return copy_output(handle, dst, bytes, stream, false, "hvd_handle_copy_output_on");
}

int hvd_handle_output_shape(int64_t handle, int64_t* shape, int32_t max_ndim, int32_t* ndim) {
  return with_runtime([&](Runtime& rt) {
    return rt.handles().inspect(handle, [&](const hvd::runtime::engine::FinishedOp& op) -> Status {
      if (!op.status.is_ok()) return op.status;
      const auto& s = op.output.shape;
      if (ndim != nullptr) *ndim = static_cast<int32_t>(s.size());
      if (s.size() > static_cast<size_t>(std::max<int32_t>(max_ndim, 0)) ||
          (shape == nullptr && !s.empty())) {
        return hvd::common::invalid_argument(
            "hvd_handle_output_shape: the output has " + std::to_string(s.size()) +
            " dimensions but there is room for " + std::to_string(shape == nullptr ? 0 : max_ndim));
      }
      if (!s.empty()) std::memcpy(shape, s.data(), s.size() * sizeof(int64_t));
      return Status::ok();
    });
  });
}

int hvd_handle_copy_output(int64_t handle, void* dst, int64_t bytes) {
  return copy_output(handle, dst, bytes, nullptr, true, "hvd_handle_copy_output");
}

int hvd_handle_take_output(int64_t handle, void** data, int64_t* bytes, void** token) {
  return with_runtime([&](Runtime& rt) -> Status {
    if (data == nullptr || bytes == nullptr || token == nullptr) {
      return hvd::common::invalid_argument("hvd_handle_take_output: data, bytes and token must not be null");
    }
    auto taken = rt.handles().take_host_output(handle);
    if (!taken.is_ok()) return taken.status();
    auto* owned = new hvd::runtime::engine::HostBuffer(std::move(taken.value().data));
    *data = owned->get();
    *bytes = static_cast<int64_t>(taken.value().bytes);
    *token = owned;
    return Status::ok();
  });
}

void hvd_output_free(void* token) { delete static_cast<hvd::runtime::engine::HostBuffer*>(token); }

int hvd_handle_received_splits(int64_t handle, int64_t* splits, int32_t n) {
  return with_runtime([&](Runtime& rt) {
    return rt.handles().inspect(handle, [&](const hvd::runtime::engine::FinishedOp& op) -> Status {
      if (!op.status.is_ok()) return op.status;
      const auto& s = op.output.received_splits;
      if (s.empty()) {
        return hvd::common::invalid_argument("hvd_handle_received_splits: handle " +
                                             std::to_string(handle) + " is not an alltoall");
      }
      if (splits == nullptr || n < 0 || static_cast<size_t>(n) < s.size()) {
        return hvd::common::invalid_argument("hvd_handle_received_splits: needs room for " +
                                             std::to_string(s.size()) + " splits");
      }
      std::memcpy(splits, s.data(), s.size() * sizeof(int64_t));
      return Status::ok();
    });
  });
}

int hvd_handle_join_result(int64_t handle, int32_t* last_rank) {
  return with_runtime([&](Runtime& rt) {
    return rt.handles().inspect(handle, [&](const hvd::runtime::engine::FinishedOp& op) -> Status {
      if (!op.status.is_ok()) return op.status;
      if (op.output.join_last_rank < 0) {
        return hvd::common::invalid_argument("hvd_handle_join_result: handle " +
                                             std::to_string(handle) + " is not a join");
      }
      if (last_rank == nullptr) {
        return hvd::common::invalid_argument("hvd_handle_join_result: last_rank is null");
      }
      *last_rank = op.output.join_last_rank;
      return Status::ok();
    });
  });
}

int hvd_release(int64_t handle) {
  return with_runtime([&](Runtime& rt) { return rt.handles().release(handle); });
}

int hvd_add_process_set(const int32_t* ranks, int32_t n, int32_t* id) {
  return with_runtime([&](Runtime& rt) -> Status {
    if (id == nullptr || n < 0 || (ranks == nullptr && n > 0)) {
      return hvd::common::invalid_argument(
          "hvd_add_process_set: needs n >= 0 ranks and somewhere to put the id");
    }
    auto added = rt.add_process_set(std::span<const int32_t>(ranks, static_cast<size_t>(n)));
    if (!added.is_ok()) return added.status();
    *id = added.value();
    return Status::ok();
  });
}

int hvd_remove_process_set(int32_t id) {
  return with_runtime([&](Runtime& rt) { return rt.remove_process_set(id); });
}

int hvd_process_set_rank(int32_t id) {
  return set_query(id, [](const hvd::runtime::engine::ProcessSet& s) { return s.rank; });
}

int hvd_process_set_size(int32_t id) {
  return set_query(id, [](const hvd::runtime::engine::ProcessSet& s) { return s.size(); });
}

int hvd_process_set_ranks(int32_t id, int32_t* ranks, int32_t n) {
  return with_runtime([&](Runtime& rt) -> Status {
    auto set = rt.process_set(id);
    if (!set.is_ok()) return set.status();
    const auto& members = set.value()->ranks;
    if (ranks == nullptr || n < 0 || static_cast<size_t>(n) < members.size()) {
      return hvd::common::invalid_argument("hvd_process_set_ranks: process set " +
                                           std::to_string(id) + " has " +
                                           std::to_string(members.size()) + " ranks");
    }
    for (size_t i = 0; i < members.size(); ++i) ranks[i] = members[i];
    return Status::ok();
  });
}

int hvd_start_timeline(const char* path) {
  return with_runtime([&](Runtime& rt) -> Status {
    if (path == nullptr) return hvd::common::invalid_argument("hvd_start_timeline: path is null");
    return rt.start_timeline(path);
  });
}

int hvd_stop_timeline(void) {
  return with_runtime([](Runtime& rt) { return rt.stop_timeline(); });
}

int hvd_constant(const char* name, int64_t* value) {
  return guarded([&]() -> Status {
    if (name == nullptr || value == nullptr) {
      return hvd::common::invalid_argument("hvd_constant: name and value must not be null");
    }
    if (auto found = hvd::runtime::find_constant(name)) {
      *value = *found;
      return Status::ok();
    }
    return hvd::common::not_found("hvd_constant: no constant named '" + std::string(name) + "'");
  });
}

int hvd_build_feature(const char* name) {
  return value_or_negated_code([&]() -> hvd::common::Result<int> {
    if (name == nullptr) return hvd::common::invalid_argument("hvd_build_feature: name is null");
    for (const auto& feature : kFeatures) {
      if (std::strcmp(feature.name, name) == 0) return feature.answer();
    }
    return hvd::common::not_found("hvd_build_feature: no feature named '" + std::string(name) +
                                  "'");
  });
}

const char* hvd_last_error(void) { return last_error().c_str(); }

const char* hvd_version(void) { return HVD_VERSION_STRING; }

int hvd_abi_version(void) { return HVD_ABI_VERSION; }

}  // extern "C"
