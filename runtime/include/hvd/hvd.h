// The C++ API of hvd: a header-only layer over the C ABI (c_api.h), so that
// C++ and Python programs drive the same runtime through the same calls.
// Failures throw hvd::Error carrying the code and the runtime's message.
//
// Blocking calls (allreduce, broadcast, allgather, ...) return when the op is
// done; the *_async ones return a Handle at once (the buffers must stay valid
// and untouched until it is done). Tensors are spans of elements; a `shape`
// (default: one dimension, the span's size) gives their rows for allgather,
// alltoall and reducescatter, which work on the first dimension.
#pragma once

#include <cstdint>
#include <span>
#include <stdexcept>
#include <string>
#include <type_traits>
#include <utility>
#include <vector>

#include "hvd/c_api.h"

namespace hvd {

class Error : public std::runtime_error {
 public:
  Error(int code, const std::string& message) : std::runtime_error(message), code_(code) {}
  int code() const { return code_; }

 private:
  int code_;
};

enum class ReduceOp : int {
  kSum = HVD_OP_SUM,
  kAverage = HVD_OP_AVERAGE,
  kMin = HVD_OP_MIN,
  kMax = HVD_OP_MAX,
  kProduct = HVD_OP_PRODUCT,
};

// 16-bit floating point elements, as raw bit patterns (IEEE binary16 and
// bfloat16); the runtime computes with them in float.
struct float16 {
  uint16_t bits = 0;
};
struct bfloat16 {
  uint16_t bits = 0;
};

namespace detail {
inline void check(int code) {
  if (code != HVD_OK) throw Error(code, hvd_last_error());
}
}  // namespace detail

// The HVD_* element type of T.
template <typename T>
constexpr int data_type_of() {
  using U = std::remove_const_t<T>;
  if constexpr (std::is_same_v<U, bool>) return HVD_BOOL;
  else if constexpr (std::is_same_v<U, uint8_t>) return HVD_UINT8;
  else if constexpr (std::is_same_v<U, int8_t>) return HVD_INT8;
  else if constexpr (std::is_same_v<U, int16_t>) return HVD_INT16;
  else if constexpr (std::is_same_v<U, int32_t>) return HVD_INT32;
  else if constexpr (std::is_same_v<U, int64_t>) return HVD_INT64;
  else if constexpr (std::is_same_v<U, float16>) return HVD_FLOAT16;
  else if constexpr (std::is_same_v<U, bfloat16>) return HVD_BFLOAT16;
  else if constexpr (std::is_same_v<U, float>) return HVD_FLOAT32;
  else if constexpr (std::is_same_v<U, double>) return HVD_FLOAT64;
  else static_assert(sizeof(T) == 0, "hvd: unsupported element type");
}

inline void init() { detail::check(hvd_init()); }
inline void shutdown() { detail::check(hvd_shutdown()); }
inline bool is_initialized() { return hvd_is_initialized() != 0; }
inline int rank() { return hvd_rank(); }
inline int size() { return hvd_size(); }
inline int local_rank() { return hvd_local_rank(); }
inline int local_size() { return hvd_local_size(); }
inline int cross_rank() { return hvd_cross_rank(); }
inline int cross_size() { return hvd_cross_size(); }

// ---- Process sets ----------------------------------------------------------

class ProcessSet {
 public:
  ProcessSet() = default;  // the global set
  explicit ProcessSet(int32_t id) : id_(id) {}
  int32_t id() const { return id_; }
  // This process's rank in the set; -1 when it is not a member.
  int rank() const { return checked(hvd_process_set_rank(id_)); }
  int size() const { return checked(hvd_process_set_size(id_)); }
  bool included() const { return rank() >= 0; }
  std::vector<int32_t> ranks() const {
    std::vector<int32_t> out(static_cast<size_t>(size()));
    detail::check(hvd_process_set_ranks(id_, out.data(), static_cast<int32_t>(out.size())));
    return out;
  }
  bool operator==(const ProcessSet& other) const { return id_ == other.id_; }

 private:
  static int checked(int value) {
    if (value < -1) throw Error(-value, hvd_last_error());
    return value;
  }
  int32_t id_ = HVD_GLOBAL_PROCESS_SET;
};

inline const ProcessSet global_process_set{};

// Collective: every rank calls it with the same ranks.
inline ProcessSet add_process_set(std::span<const int32_t> ranks) {
  int32_t id = -1;
  detail::check(hvd_add_process_set(ranks.data(), static_cast<int32_t>(ranks.size()), &id));
  return ProcessSet(id);
}
inline ProcessSet add_process_set(const std::vector<int32_t>& ranks) {
  return add_process_set(std::span<const int32_t>(ranks));
}
inline void remove_process_set(const ProcessSet& set) {
  detail::check(hvd_remove_process_set(set.id()));
}

// ---- Handles ---------------------------------------------------------------

// One async op. Move-only; destroying a Handle whose op is still running
// waits for it first (its buffers may be about to go away), then releases it.
class Handle {
 public:
  Handle() = default;
  explicit Handle(int64_t id) : id_(id) {}
  Handle(Handle&& other) noexcept : id_(std::exchange(other.id_, 0)) {}
  Handle& operator=(Handle&& other) noexcept {
    if (this != &other) {
      reset();
      id_ = std::exchange(other.id_, 0);
    }
    return *this;
  }
  Handle(const Handle&) = delete;
  Handle& operator=(const Handle&) = delete;
  ~Handle() { reset(); }

  bool valid() const { return id_ > 0; }
  int64_t id() const { return id_; }
  // True when the op is done (successfully or not).
  bool poll() const {
    int done = hvd_poll(id_);
    if (done < 0) throw Error(-done, hvd_last_error());
    return done == 1;
  }
  // Waits until done; throws the op's error. timeout_seconds > 0: throws
  // Error(HVD_ERR_TIMEOUT) if still pending then (the op goes on).
  void wait(double timeout_seconds = 0) const { detail::check(hvd_wait(id_, timeout_seconds)); }

  // The engine-allocated result of allgather, alltoall and reducescatter.
  std::vector<int64_t> output_shape() const {
    wait();
    int64_t shape[16] = {};
    int32_t ndim = 0;
    detail::check(hvd_handle_output_shape(id_, shape, 16, &ndim));
    std::vector<int64_t> out;
    for (int32_t i = 0; i < ndim && i < 16; ++i) out.push_back(shape[i]);
    return out;
  }
  template <typename T>
  std::vector<T> output() const {
    int64_t elements = 1;
    for (int64_t d : output_shape()) elements *= d;
    std::vector<T> out(static_cast<size_t>(elements));
    detail::check(hvd_handle_copy_output(id_, out.data(), elements * static_cast<int64_t>(sizeof(T))));
    return out;
  }
  // alltoall: rows received from each rank of the set.
  std::vector<int64_t> received_splits(int set_size) const {
    wait();
    std::vector<int64_t> out(static_cast<size_t>(set_size));
    detail::check(hvd_handle_received_splits(id_, out.data(), set_size));
    return out;
  }
  // join: the rank that joined last.
  int join_result() const {
    wait();
    int32_t last = -1;
    detail::check(hvd_handle_join_result(id_, &last));
    return last;
  }

 private:
  void reset() noexcept {
    if (id_ <= 0) return;
    if (hvd_poll(id_) == 0) (void)hvd_wait(id_, 0);
    (void)hvd_release(id_);
    id_ = 0;
  }
  int64_t id_ = 0;
};

// Name (empty: auto-named; agrees across ranks only if every rank enqueues
// its unnamed ops in the same order), scaling and process set of an op.
struct OpOptions {
  std::string name;
  double prescale_factor = 1.0;   // allreduce, reducescatter (floating types)
  double postscale_factor = 1.0;  // idem
  ProcessSet process_set{};
  // A CUDA device ordinal for device memory (the GPU transport, docs/gpu.md),
  // and the CUDA stream it is ordered on (null: the default stream).
  int device = HVD_DEVICE_CPU;
  void* stream = nullptr;
};

namespace detail {

inline hvd_op make_op(int type, const OpOptions& o) {
  hvd_op op = hvd_op_defaults(type);
  op.name = o.name.empty() ? nullptr : o.name.c_str();
  op.prescale_factor = o.prescale_factor;
  op.postscale_factor = o.postscale_factor;
  op.process_set_id = o.process_set.id();
  op.device = o.device;
  op.stream = o.stream;
  return op;
}

// The shape to send: `shape`, or one dimension of `elements`.
inline std::vector<int64_t> shape_of(size_t elements, std::vector<int64_t> shape) {
  if (shape.empty()) return {static_cast<int64_t>(elements)};
  int64_t product = 1;
  for (int64_t d : shape) product *= d;
  if (product != static_cast<int64_t>(elements)) {
    throw Error(HVD_ERR_INVALID_ARGUMENT, "hvd: the shape holds " + std::to_string(product) +
                                              " elements but the tensor has " +
                                              std::to_string(elements));
  }
  return shape;
}

inline Handle enqueue(const hvd_op& op) {
  int64_t id = 0;
  check(hvd_enqueue(&op, &id));
  return Handle(id);
}

inline std::vector<Handle> enqueue_group(const std::vector<hvd_op>& ops) {
  std::vector<int64_t> ids(ops.size());
  check(hvd_enqueue_group(ops.data(), static_cast<int32_t>(ops.size()), ids.data()));
  std::vector<Handle> handles;
  for (int64_t id : ids) handles.emplace_back(id);
  return handles;
}

inline OpOptions member_options(const OpOptions& o, size_t i) {
  OpOptions m = o;
  if (!m.name.empty()) m.name += "." + std::to_string(i);
  return m;
}

inline void wait_all(const std::vector<Handle>& handles) {
  for (const Handle& h : handles) h.wait();
}

}  // namespace detail

// ---- Allreduce ---------------------------------------------------------------

// In place.
template <typename T>
Handle allreduce_async(std::span<T> data, ReduceOp op = ReduceOp::kSum, const OpOptions& o = {}) {
  hvd_op d = detail::make_op(HVD_OPTYPE_ALLREDUCE, o);
  int64_t n = static_cast<int64_t>(data.size());
  d.input = data.data();
  d.output = data.data();
  d.shape = &n;
  d.ndim = 1;
  d.dtype = data_type_of<T>();
  d.reduce_op = static_cast<int>(op);
  return detail::enqueue(d);
}

template <typename T>
void allreduce(std::span<T> data, ReduceOp op = ReduceOp::kSum) {
  detail::check(hvd_allreduce(data.data(), static_cast<int64_t>(data.size()), data_type_of<T>(),
                              static_cast<int>(op)));
}

template <typename T>
void allreduce(std::span<T> data, ReduceOp op, const OpOptions& o) {
  allreduce_async<T>(data, op, o).wait();
}

// Negotiated together, completed together (one fused call where they fit).
// With a name, member i is called "<name>.<i>".
namespace detail {
// One group of 1-D ops of `type`; E is T (allreduce, in place) or const T.
template <typename E>
std::vector<Handle> enqueue_group_of(int type, const std::vector<std::span<E>>& tensors,
                                     ReduceOp op, const OpOptions& o) {
  std::vector<hvd_op> ops;
  std::vector<OpOptions> names;  // owns the member names the ops point into
  std::vector<int64_t> sizes(tensors.size());
  for (size_t i = 0; i < tensors.size(); ++i) names.push_back(member_options(o, i));
  for (size_t i = 0; i < tensors.size(); ++i) {
    hvd_op d = make_op(type, names[i]);
    sizes[i] = static_cast<int64_t>(tensors[i].size());
    d.input = tensors[i].data();
    if constexpr (!std::is_const_v<E>) d.output = tensors[i].data();
    d.shape = &sizes[i];
    d.ndim = 1;
    d.dtype = data_type_of<std::remove_const_t<E>>();
    d.reduce_op = static_cast<int>(op);
    ops.push_back(d);
  }
  return enqueue_group(ops);
}
}  // namespace detail

template <typename T>
std::vector<Handle> grouped_allreduce_async(const std::vector<std::span<T>>& tensors,
                                            ReduceOp op = ReduceOp::kSum, const OpOptions& o = {}) {
  return detail::enqueue_group_of<T>(HVD_OPTYPE_ALLREDUCE, tensors, op, o);
}

template <typename T>
void grouped_allreduce(const std::vector<std::span<T>>& tensors, ReduceOp op = ReduceOp::kSum,
                       const OpOptions& o = {}) {
  detail::wait_all(grouped_allreduce_async<T>(tensors, op, o));
}

// ---- Broadcast ---------------------------------------------------------------

// In place: root's elements replace everyone's (root: a rank of the set).
template <typename T>
Handle broadcast_async(std::span<T> data, int root, const OpOptions& o = {}) {
  hvd_op d = detail::make_op(HVD_OPTYPE_BROADCAST, o);
  int64_t n = static_cast<int64_t>(data.size());
  d.input = data.data();
  d.output = data.data();
  d.shape = &n;
  d.ndim = 1;
  d.dtype = data_type_of<T>();
  d.root_rank = root;
  return detail::enqueue(d);
}

template <typename T>
void broadcast(std::span<T> data, int root) {
  detail::check(
      hvd_broadcast(data.data(), static_cast<int64_t>(data.size()), data_type_of<T>(), root));
}

template <typename T>
void broadcast(std::span<T> data, int root, const OpOptions& o) {
  broadcast_async<T>(data, root, o).wait();
}

// ---- Allgather ---------------------------------------------------------------

// Every rank's rows in rank order; first dimensions may differ across ranks.
template <typename T>
Handle allgather_async(std::span<const T> in, std::vector<int64_t> shape = {},
                       const OpOptions& o = {}) {
  hvd_op d = detail::make_op(HVD_OPTYPE_ALLGATHER, o);
  std::vector<int64_t> s = detail::shape_of(in.size(), std::move(shape));
  d.input = in.data();
  d.shape = s.data();
  d.ndim = static_cast<int32_t>(s.size());
  d.dtype = data_type_of<T>();
  return detail::enqueue(d);
}

// Every rank's elements in rank order; ranks may contribute different counts.
template <typename T>
std::vector<T> allgather(std::span<const T> in) {
  return allgather_async<T>(in).template output<T>();
}

template <typename T>
std::vector<T> allgather(std::span<const T> in, const OpOptions& o) {
  return allgather_async<T>(in, {}, o).template output<T>();
}

template <typename T>
std::vector<Handle> grouped_allgather_async(const std::vector<std::span<const T>>& tensors,
                                            const OpOptions& o = {}) {
  return detail::enqueue_group_of<const T>(HVD_OPTYPE_ALLGATHER, tensors, ReduceOp::kSum, o);
}

// ---- Alltoall ----------------------------------------------------------------

// splits[r] rows go to rank r of the set (empty: an even split); the result
// concatenates the rows received from each rank, in rank order.
template <typename T>
Handle alltoall_async(std::span<const T> in, std::span<const int64_t> splits = {},
                      std::vector<int64_t> shape = {}, const OpOptions& o = {}) {
  hvd_op d = detail::make_op(HVD_OPTYPE_ALLTOALL, o);
  std::vector<int64_t> s = detail::shape_of(in.size(), std::move(shape));
  d.input = in.data();
  d.shape = s.data();
  d.ndim = static_cast<int32_t>(s.size());
  d.dtype = data_type_of<T>();
  d.splits = splits.empty() ? nullptr : splits.data();
  return detail::enqueue(d);
}

template <typename T>
std::vector<T> alltoall(std::span<const T> in, std::span<const int64_t> splits = {},
                        std::vector<int64_t>* received_splits = nullptr, const OpOptions& o = {}) {
  Handle h = alltoall_async<T>(in, splits, {}, o);
  std::vector<T> out = h.template output<T>();
  if (received_splits != nullptr) *received_splits = h.received_splits(o.process_set.size());
  return out;
}

// ---- Reducescatter -------------------------------------------------------------

// Reduces the ranks' tensors and keeps this rank's share of the rows: rank r
// of n gets rows/n rows, the first rows % n ranks one more.
template <typename T>
Handle reducescatter_async(std::span<const T> in, ReduceOp op = ReduceOp::kSum,
                           std::vector<int64_t> shape = {}, const OpOptions& o = {}) {
  hvd_op d = detail::make_op(HVD_OPTYPE_REDUCESCATTER, o);
  std::vector<int64_t> s = detail::shape_of(in.size(), std::move(shape));
  d.input = in.data();
  d.shape = s.data();
  d.ndim = static_cast<int32_t>(s.size());
  d.dtype = data_type_of<T>();
  d.reduce_op = static_cast<int>(op);
  return detail::enqueue(d);
}

template <typename T>
std::vector<T> reducescatter(std::span<const T> in, ReduceOp op = ReduceOp::kSum,
                             const OpOptions& o = {}) {
  return reducescatter_async<T>(in, op, {}, o).template output<T>();
}

template <typename T>
std::vector<Handle> grouped_reducescatter_async(const std::vector<std::span<const T>>& tensors,
                                                ReduceOp op = ReduceOp::kSum,
                                                const OpOptions& o = {}) {
  return detail::enqueue_group_of<const T>(HVD_OPTYPE_REDUCESCATTER, tensors, op, o);
}

// ---- Barrier, join, timeline ---------------------------------------------------

inline void barrier() { detail::check(hvd_barrier()); }

inline void barrier(const ProcessSet& set) {
  OpOptions o;
  o.process_set = set;
  detail::enqueue(detail::make_op(HVD_OPTYPE_BARRIER, o)).wait();
}

// This rank has no more work: the others' allreduces go on without it (it
// contributes zeros). Returns, once every rank has joined, the rank that
// joined last.
inline int join(const ProcessSet& set = global_process_set) {
  OpOptions o;
  o.process_set = set;
  return detail::enqueue(detail::make_op(HVD_OPTYPE_JOIN, o)).join_result();
}

// Rank 0 writes a Chrome-trace timeline to `path` (a no-op on other ranks).
inline void start_timeline(const std::string& path) { detail::check(hvd_start_timeline(path.c_str())); }
inline void stop_timeline() { detail::check(hvd_stop_timeline()); }

// The library's version, e.g. "0.1.0".
inline std::string version() { return hvd_version(); }

}  // namespace hvd
