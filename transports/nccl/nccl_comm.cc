#include "transports/nccl/nccl_comm.h"

#include <dlfcn.h>

#include <vector>

#include "transports/nccl/nccl_hints.h"
#include "transports/nccl/plugin_status.h"

namespace hvd::transports::nccl {

namespace {

using Clock = std::chrono::steady_clock;

std::string cuda_error(const char* call, cudaError_t error) {
  return std::string(call) + " failed: " + cudaGetErrorName(error) + " (" +
         cudaGetErrorString(error) + ")";
}

std::string nccl_error(ncclComm_t comm, ncclResult_t result) {
  std::string text = ncclGetErrorString(result);
  const char* last = comm != nullptr ? ncclGetLastError(comm) : nullptr;
  if (last != nullptr && *last != '\0') text += std::string(": ") + last;
  return text;
}

// ncclCommShrink's flags (NCCL >= 2.27), for a nccl.h without them.
#ifndef NCCL_SHRINK_DEFAULT
#define NCCL_SHRINK_DEFAULT 0x00
#endif
#ifndef NCCL_SHRINK_ABORT
#define NCCL_SHRINK_ABORT 0x01
#endif

using ShrinkFn = ncclResult_t (*)(ncclComm_t comm, int* exclude_ranks, int exclude_count,
                                  ncclComm_t* new_comm, ncclConfig_t* config, int flags);

// ncclCommShrink of the libnccl this plugin runs with (the one that defines
// ncclGetVersion), or null when that NCCL is older than 2.27: looked up at
// run time, so a plugin built with a newer nccl.h still loads with it.
ShrinkFn find_shrink() {
  static const ShrinkFn found = [] {
    Dl_info info{};
    void* symbol = nullptr;
    if (dladdr(reinterpret_cast<void*>(&ncclGetVersion), &info) != 0 &&
        info.dli_fname != nullptr) {
      if (void* nccl = dlopen(info.dli_fname, RTLD_NOW | RTLD_LOCAL | RTLD_NOLOAD)) {
        symbol = dlsym(nccl, "ncclCommShrink");
        dlclose(nccl);
      }
    }
    if (symbol == nullptr) symbol = dlsym(RTLD_DEFAULT, "ncclCommShrink");
    return reinterpret_cast<ShrinkFn>(symbol);
  }();
  return found;
}

}  // namespace

NcclComm::NcclComm(int rank, int size, int device, std::chrono::milliseconds timeout)
    : rank_(rank), size_(size), device_(device), timeout_(timeout) {}

NcclComm* NcclComm::create(const hvd_plugin_world& world, hvd_plugin_status* status) {
  int device = world.device;
  if (device < 0) {
    const cudaError_t error = cudaGetDevice(&device);
    if (error != cudaSuccess) {
      report(status, HVD_ERR_UNAVAILABLE, "nccl on rank " + std::to_string(world.rank) + ": " +
                                              cuda_error("cudaGetDevice", error));
      return nullptr;
    }
  }
  auto* comm = new NcclComm(world.rank, world.size, device,
                            std::chrono::milliseconds(world.timeout_ms > 0 ? world.timeout_ms
                                                                            : 30000));
  if (comm->connect(world, status) != HVD_OK) {
    delete comm;
    return nullptr;
  }
  return comm;
}

int32_t NcclComm::prepare(hvd_plugin_status* status) {
  const std::string me = "nccl on rank " + std::to_string(rank_) + " (CUDA device " +
                         std::to_string(device_) + "): ";
  cudaError_t error = cudaSetDevice(device_);
  if (error != cudaSuccess) {
    return report(status, HVD_ERR_UNAVAILABLE, me + cuda_error("cudaSetDevice", error));
  }
  error = cudaEventCreateWithFlags(&done_, cudaEventDisableTiming);
  if (error != cudaSuccess) {
    return report(status, HVD_ERR_INTERNAL, me + cuda_error("cudaEventCreate", error));
  }
  error = cudaMalloc(&scratch_, sizeof(int32_t));
  if (error != cudaSuccess) {
    return report(status, HVD_ERR_INTERNAL, me + cuda_error("cudaMalloc", error));
  }
  return HVD_OK;
}

int32_t NcclComm::connect(const hvd_plugin_world& world, hvd_plugin_status* status) {
  const std::string me = "nccl on rank " + std::to_string(rank_) + " (CUDA device " +
                         std::to_string(device_) + "): ";
  if (prepare(status) != HVD_OK) return status->code;

  // Rank 0 makes the communicator's id; the others read it from the store.
  ncclUniqueId id;
  const std::string key = std::string(world.key_prefix != nullptr ? world.key_prefix : "") +
                          "nccl/unique_id";
  if (rank_ == 0) {
    const ncclResult_t r = ncclGetUniqueId(&id);
    if (r != ncclSuccess) return report(status, HVD_ERR_UNAVAILABLE, me + "ncclGetUniqueId failed: " + nccl_error(nullptr, r));
    if (size_ > 1 && world.store.set(world.store.self, key.c_str(), &id, sizeof(id), status) != HVD_OK) {
      return status->code;
    }
  } else {
    size_t length = 0;
    if (world.store.get(world.store.self, key.c_str(), timeout_.count(), &id, sizeof(id), &length,
                        status) != HVD_OK) {
      return status->code;
    }
    if (length != sizeof(id)) {
      return report(status, HVD_ERR_INTERNAL, me + "the ncclUniqueId in the store has " +
                                                  std::to_string(length) + " bytes, not " +
                                                  std::to_string(sizeof(id)));
    }
  }

  ncclConfig_t config = NCCL_CONFIG_INITIALIZER;
  config.blocking = 0;  // every wait below has a deadline
  {
    std::lock_guard<std::mutex> lock(comm_mu_);
    const ncclResult_t r = ncclCommInitRankConfig(&comm_, size_, id, rank_, &config);
    if (r != ncclSuccess && r != ncclInProgress) {
      return fail_locked(HVD_ERR_UNAVAILABLE,
                         with_hint("ncclCommInitRankConfig failed: " + nccl_error(comm_, r)),
                         status);
    }
  }
  const std::string what = "connecting " + std::to_string(size_) + " ranks";
  if (wait_issued(what, Clock::now() + timeout_, status) == HVD_OK) return HVD_OK;
  return report(status, status->code, with_hint(status->message));
}

NcclComm::~NcclComm() {
  std::thread aborter;
  {
    std::lock_guard<std::mutex> lock(comm_mu_);
    if (comm_ != nullptr) {
      // Ops return once issued: the last one may still run (its event not
      // complete). ncclCommDestroy would wait for it without a deadline;
      // abort it instead. Otherwise nothing is in flight: destroy is local.
      cudaSetDevice(device_);
      const bool idle = done_ == nullptr || cudaEventQuery(done_) == cudaSuccess;
      if (!idle || ncclCommDestroy(comm_) != ncclSuccess) ncclCommAbort(comm_);
      comm_ = nullptr;
    }
    aborter = std::move(aborter_);
  }
  if (aborter.joinable()) aborter.join();  // the abort ends before the memory goes
  if (done_ != nullptr) cudaEventDestroy(done_);
  if (scratch_ != nullptr) cudaFree(scratch_);
}

int32_t NcclComm::barrier(void* stream, hvd_plugin_status* status) {
  return run("barrier", stream,
             [this](ncclComm_t comm, cudaStream_t s) {
               return ncclAllReduce(scratch_, scratch_, 1, ncclInt32, ncclSum, comm, s);
             },
             status, /*wait=*/true);
}

int32_t NcclComm::async_error(hvd_plugin_status* status) {
  if (failed(status) != HVD_OK) return status->code;
  std::unique_lock<std::mutex> lock(comm_mu_, std::try_to_lock);
  if (!lock.owns_lock()) return report(status, HVD_OK, "");  // a call is issuing: ask later
  if (comm_ == nullptr) return failed(status);
  ncclResult_t state = ncclSuccess;
  const ncclResult_t r = ncclCommGetAsyncError(comm_, &state);
  if (r != ncclSuccess) state = r;
  if (state == ncclSuccess || state == ncclInProgress) return report(status, HVD_OK, "");
  // Recorded, not aborted here: every later op fails with it, and the
  // engine either aborts the communicator (abort()) or, in an elastic job
  // that lost members, shrinks it (NCCL_SHRINK_ABORT ends the collectives
  // still running), which an aborted communicator could not.
  record_failure(HVD_ERR_UNAVAILABLE,
                 "NCCL reported an asynchronous error: " + nccl_error(comm_, state));
  return failed(status);
}

NcclComm* NcclComm::shrink(const hvd_plugin_world& world, const int32_t* excluded,
                           int32_t n_excluded, hvd_plugin_status* status) {
  const ShrinkFn shrink_fn = find_shrink();
  if (shrink_fn == nullptr) {
    int code = 0;
    ncclGetVersion(&code);
    report(status, HVD_ERR_UNIMPLEMENTED,
           "nccl on rank " + std::to_string(rank_) + ": the loaded NCCL (version code " +
               std::to_string(code) + ") has no ncclCommShrink (NCCL >= 2.27)");
    return nullptr;
  }
  if (world.size != size_ - n_excluded) {
    report(status, HVD_ERR_INVALID_ARGUMENT,
           "nccl on rank " + std::to_string(rank_) + ": shrink to " +
               std::to_string(world.size) + " ranks from " + std::to_string(size_) + " less " +
               std::to_string(n_excluded));
    return nullptr;
  }
  auto* shrunk = new NcclComm(world.rank, world.size, device_,
                              std::chrono::milliseconds(world.timeout_ms > 0 ? world.timeout_ms
                                                                              : timeout_.count()));
  if (shrunk->prepare(status) != HVD_OK) {
    delete shrunk;
    return nullptr;
  }
  {
    std::lock_guard<std::mutex> lock(comm_mu_);
    if (comm_ == nullptr) {
      failed(status);
      delete shrunk;
      return nullptr;
    }
    // NCCL_SHRINK_ABORT ends what still runs on this communicator: after an
    // asynchronous error, a failure recorded, or while an op is in flight
    // (its peers are gone: it would never complete).
    ncclResult_t state = ncclSuccess;
    ncclCommGetAsyncError(comm_, &state);
    hvd_plugin_status recorded{};
    const bool healthy = (state == ncclSuccess || state == ncclInProgress) &&
                         failed(&recorded) == HVD_OK &&
                         (done_ == nullptr || cudaEventQuery(done_) == cudaSuccess);
    const int flags = healthy ? NCCL_SHRINK_DEFAULT : NCCL_SHRINK_ABORT;
    ncclConfig_t config = NCCL_CONFIG_INITIALIZER;
    config.blocking = 0;  // every wait has a deadline
    std::vector<int> ranks(excluded, excluded + n_excluded);
    std::lock_guard<std::mutex> new_lock(shrunk->comm_mu_);
    const ncclResult_t r = shrink_fn(comm_, ranks.data(), n_excluded, &shrunk->comm_, &config,
                                     flags);
    if (r != ncclSuccess && r != ncclInProgress) {
      report(status, HVD_ERR_UNAVAILABLE,
             "nccl on rank " + std::to_string(rank_) + ": ncclCommShrink failed: " +
                 nccl_error(comm_, r));
      if (shrunk->comm_ != nullptr) ncclCommAbort(shrunk->comm_);
      shrunk->comm_ = nullptr;
      delete shrunk;
      return nullptr;
    }
  }
  const std::string what = "shrinking to " + std::to_string(world.size) + " ranks";
  if (shrunk->wait_issued(what, Clock::now() + shrunk->timeout_, status) != HVD_OK) {
    delete shrunk;
    return nullptr;
  }
  return shrunk;
}

int32_t NcclComm::failed(hvd_plugin_status* status) {
  std::lock_guard<std::mutex> lock(state_mu_);
  return failed_code_ == HVD_OK ? HVD_OK : report(status, failed_code_, failed_message_);
}

void NcclComm::abort_comm_locked() {
  if (comm_ == nullptr) return;
  ncclComm_t comm = comm_;
  comm_ = nullptr;  // nothing else calls NCCL on it from here on
  aborter_ = std::thread([comm] { ncclCommAbort(comm); });
}

void NcclComm::record_failure(int32_t code, const std::string& reason) {
  std::lock_guard<std::mutex> lock(state_mu_);
  if (failed_code_ != HVD_OK) return;  // the first failure wins
  failed_code_ = code;
  failed_message_ = "nccl on rank " + std::to_string(rank_) + " (CUDA device " +
                    std::to_string(device_) + "): " + reason;
}

int32_t NcclComm::fail_locked(int32_t code, const std::string& reason, hvd_plugin_status* status) {
  record_failure(code, reason);
  abort_comm_locked();
  return failed(status);
}

void NcclComm::abort(int32_t code, const std::string& reason) {
  // Recorded before comm_mu_ is taken: an op waiting for its stream sees it
  // at its next poll, however long another call holds comm_mu_.
  record_failure(code == HVD_OK ? HVD_ERR_ABORTED : code,
                 "aborted: " + (reason.empty() ? std::string("no reason given") : reason));
  std::lock_guard<std::mutex> lock(comm_mu_);
  abort_comm_locked();
}

int32_t NcclComm::wait_issued(const std::string& what, Clock::time_point deadline,
                              hvd_plugin_status* status) {
  for (int round = 0;; ++round) {
    if (failed(status) != HVD_OK) return status->code;
    std::unique_lock<std::mutex> lock(comm_mu_, std::try_to_lock);
    if (lock.owns_lock()) {
      if (comm_ == nullptr) return failed(status);
      ncclResult_t state = ncclSuccess;
      const ncclResult_t r = ncclCommGetAsyncError(comm_, &state);
      if (r != ncclSuccess) state = r;
      if (state == ncclSuccess) return HVD_OK;
      if (state != ncclInProgress) {
        return fail_locked(HVD_ERR_UNAVAILABLE, what + " failed: " + nccl_error(comm_, state), status);
      }
      if (Clock::now() > deadline) {
        return fail_locked(HVD_ERR_TIMEOUT,
                           what + " did not finish within " + std::to_string(timeout_.count()) +
                               " ms (a peer is gone or stuck); the communicator was aborted",
                           status);
      }
    }
    lock = {};
    poll_pause(round);
  }
}

int32_t NcclComm::wait_event(const std::string& what, Clock::time_point deadline,
                             hvd_plugin_status* status) {
  for (int round = 0;; ++round) {
    if (failed(status) != HVD_OK) return status->code;  // an abort ends the wait at once
    const cudaError_t ready = cudaEventQuery(done_);
    if (ready == cudaSuccess) return failed(status);
    std::unique_lock<std::mutex> lock(comm_mu_, std::try_to_lock);
    if (lock.owns_lock()) {
      if (comm_ == nullptr) return failed(status);
      if (ready != cudaErrorNotReady) {
        return fail_locked(HVD_ERR_INTERNAL, what + ": " + cuda_error("cudaEventQuery", ready),
                           status);
      }
      ncclResult_t state = ncclSuccess;
      ncclCommGetAsyncError(comm_, &state);
      if (state != ncclSuccess && state != ncclInProgress) {
        return fail_locked(HVD_ERR_UNAVAILABLE,
                           what + ": NCCL reported an asynchronous error: " +
                               nccl_error(comm_, state),
                           status);
      }
      if (Clock::now() > deadline) {
        return fail_locked(HVD_ERR_TIMEOUT,
                           what + " did not complete within " + std::to_string(timeout_.count()) +
                               " ms (a peer is gone or stuck); the communicator was aborted",
                           status);
      }
    }
    lock = {};
    poll_pause(round);
  }
}

int32_t NcclComm::run(const std::string& what, void* stream,
                      const std::function<ncclResult_t(ncclComm_t, cudaStream_t)>& issue,
                      hvd_plugin_status* status, bool wait) {
  const auto deadline = Clock::now() + timeout_;
  auto* cuda_stream = static_cast<cudaStream_t>(stream);
  {
    std::lock_guard<std::mutex> lock(comm_mu_);
    if (failed(status) != HVD_OK) return status->code;
    const cudaError_t error = cudaSetDevice(device_);  // per thread: the engine's may differ
    if (error != cudaSuccess) {
      return fail_locked(HVD_ERR_INTERNAL, what + ": " + cuda_error("cudaSetDevice", error), status);
    }
    const ncclResult_t r = issue(comm_, cuda_stream);
    if (r != ncclSuccess && r != ncclInProgress) {
      return fail_locked(HVD_ERR_INTERNAL, what + " failed: " + nccl_error(comm_, r), status);
    }
  }
  if (wait_issued(what, deadline, status) != HVD_OK) return status->code;
  {
    std::lock_guard<std::mutex> lock(comm_mu_);
    if (failed(status) != HVD_OK) return status->code;
    const cudaError_t error = cudaEventRecord(done_, cuda_stream);
    if (error != cudaSuccess) {
      return fail_locked(HVD_ERR_INTERNAL, what + ": " + cuda_error("cudaEventRecord", error), status);
    }
  }
  // Issued: the engine learns completion from its own event (ABI version
  // 4). done_ tells the destructor whether the last op is still running.
  if (!wait) return report(status, HVD_OK, "");
  return wait_event(what, deadline, status);
}

}  // namespace hvd::transports::nccl
