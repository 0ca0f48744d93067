// The C ABI (include/hvd/c_api.h) over one process-wide Runtime. Exceptions
// never cross it: each entry point turns them into an error code and the
// calling thread's last-error message.
#include "hvd/c_api.h"

#include <cstdlib>
#include <cstring>
#include <memory>
#include <shared_mutex>
#include <string>
#include <string_view>

#include "runtime/runtime.h"

namespace {

using hvd::common::Status;
using hvd::common::StatusCode;
using hvd::runtime::Runtime;

// The process's runtime. Collectives and queries hold the lock shared (the
// Runtime serialises collectives itself); init and shutdown hold it
// exclusively, so a runtime is never destroyed under a running call.
struct Holder {
  std::shared_mutex mu;
  std::unique_ptr<Runtime> runtime;
};

// The one process-wide object of libhvd. Never destroyed: a program that
// exits without hvd_shutdown() must not tear sockets and threads down from
// static destructors; the kernel reclaims them.
Holder& holder() {
  static Holder* instance = new Holder;
  return *instance;
}

std::string& last_error() {
  thread_local std::string message;
  return message;
}

int fail(const Status& status) {
  last_error() = status.message();
  return static_cast<int>(status.code());
}

// Runs `body` (returning a Status), catching everything.
template <typename Body>
int guarded(Body&& body) noexcept {
  try {
    Status status = body();
    return status.is_ok() ? HVD_OK : fail(status);
  } catch (const std::exception& e) {
    return fail(Status(StatusCode::kInternal, std::string("unexpected error: ") + e.what()));
  } catch (...) {
    return fail(Status(StatusCode::kInternal, "unexpected error"));
  }
}

// Runs a collective on the initialized runtime.
template <typename Body>
int with_runtime(Body&& body) noexcept {
  return guarded([&]() -> Status {
    Holder& h = holder();
    std::shared_lock lock(h.mu);
    if (!h.runtime) {
      return hvd::common::failed_precondition("hvd is not initialized: call hvd_init() first");
    }
    return body(*h.runtime);
  });
}

// A WorldInfo field, or -1 when not initialized.
template <typename Field>
int query(Field field) noexcept {
  try {
    Holder& h = holder();
    std::shared_lock lock(h.mu);
    return h.runtime ? field(h.runtime->world()) : -1;
  } catch (...) {
    return -1;
  }
}

struct Constant {
  const char* name;
  int64_t value;
};

#define HVD_CONSTANT(name) Constant{#name, name}
constexpr Constant kConstants[] = {
    HVD_CONSTANT(HVD_UINT8), HVD_CONSTANT(HVD_INT8), HVD_CONSTANT(HVD_INT16),
    HVD_CONSTANT(HVD_INT32), HVD_CONSTANT(HVD_INT64), HVD_CONSTANT(HVD_FLOAT16),
    HVD_CONSTANT(HVD_BFLOAT16), HVD_CONSTANT(HVD_FLOAT32), HVD_CONSTANT(HVD_FLOAT64),
    HVD_CONSTANT(HVD_BOOL), HVD_CONSTANT(HVD_OP_SUM), HVD_CONSTANT(HVD_OP_AVERAGE),
    HVD_CONSTANT(HVD_OP_MIN), HVD_CONSTANT(HVD_OP_MAX), HVD_CONSTANT(HVD_OP_PRODUCT),
    HVD_CONSTANT(HVD_OK), HVD_CONSTANT(HVD_ERR_INVALID_ARGUMENT), HVD_CONSTANT(HVD_ERR_NOT_FOUND),
    HVD_CONSTANT(HVD_ERR_ALREADY_EXISTS), HVD_CONSTANT(HVD_ERR_TIMEOUT),
    HVD_CONSTANT(HVD_ERR_UNAVAILABLE), HVD_CONSTANT(HVD_ERR_ABORTED),
    HVD_CONSTANT(HVD_ERR_UNAUTHENTICATED), HVD_CONSTANT(HVD_ERR_FAILED_PRECONDITION),
    HVD_CONSTANT(HVD_ERR_CANCELLED), HVD_CONSTANT(HVD_ERR_UNIMPLEMENTED),
    HVD_CONSTANT(HVD_ERR_INTERNAL),
};
#undef HVD_CONSTANT

}  // namespace

extern "C" {

int hvd_init(void) {
  return guarded([]() -> Status {
    Holder& h = holder();
    std::unique_lock lock(h.mu);
    if (h.runtime) return Status::ok();
    auto runtime = Runtime::init([](const char* name) { return std::getenv(name); });
    if (!runtime.is_ok()) return runtime.status();
    h.runtime = std::move(runtime).value();
    return Status::ok();
  });
}

int hvd_shutdown(void) {
  return guarded([]() -> Status {
    Holder& h = holder();
    std::unique_lock lock(h.mu);
    h.runtime.reset();
    return Status::ok();
  });
}

int hvd_is_initialized(void) {
  return query([](const hvd::runtime::WorldInfo&) { return 1; }) == 1 ? 1 : 0;
}

int hvd_rank(void) { return query([](const auto& w) { return w.rank; }); }
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

int hvd_constant(const char* name, int64_t* value) {
  return guarded([&]() -> Status {
    if (name == nullptr || value == nullptr) {
      return hvd::common::invalid_argument("hvd_constant: name and value must not be null");
    }
    for (const auto& c : kConstants) {
      if (std::strcmp(c.name, name) == 0) {
        *value = c.value;
        return Status::ok();
      }
    }
    return hvd::common::not_found("hvd_constant: no constant named '" + std::string(name) + "'");
  });
}

const char* hvd_last_error(void) { return last_error().c_str(); }

const char* hvd_version(void) { return HVD_VERSION_STRING; }

}  // extern "C"
