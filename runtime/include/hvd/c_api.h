/* The C ABI of libhvd.so. Every function is safe to call from any thread.
 * Functions returning int return 0 on success or an HVD_ERR_* code; the
 * message of the last failure on the calling thread is hvd_last_error().
 * The numeric constants are stable: Python (ctypes) reads them through
 * hvd_constant() rather than copying them, and libhvd checks each against
 * its C++ counterpart at compile time (runtime/c_api_constants.cc).
 *
 * Versioning (HVD_ABI_VERSION, hvd_abi_version()). Structs passed in (so
 * far hvd_op) start with `uint32_t struct_size`, the sizeof the caller was
 * compiled with. Fields are only ever appended, never reordered, resized or
 * removed; appending one raises HVD_ABI_VERSION. libhvd accepts any
 * struct_size from the oldest layout it supports (HVD_OP_MIN_SIZE) up to its
 * own sizeof: fields a shorter struct lacks take their defaults (stream:
 * NULL). A larger struct_size (a caller built against a newer header) is
 * accepted when every byte past libhvd's own struct is zero (the caller left
 * the newer fields at their defaults), and refused otherwise with
 * HVD_ERR_INVALID_ARGUMENT, "hvd_op is N bytes, newer than this libhvd (M
 * bytes): ...". A struct_size below HVD_OP_MIN_SIZE (0: never set) is
 * refused with a message saying so. Arrays of structs (hvd_enqueue_group)
 * are strided by the first element's struct_size, which every element must
 * share. Constants are never renumbered. */
#ifndef HVD_C_API_H_
#define HVD_C_API_H_

#include <stddef.h>
#include <stdint.h>

#include "hvd/codes.h"

#ifdef __cplusplus
extern "C" {
#endif

#define HVD_EXPORT __attribute__((visibility("default")))

/* The version of this C ABI (structs and functions). 1: hvd_op with
 * struct_size and stream. 2: hvd_handle_take_output, hvd_output_free.
 * 3: hvd_op.ready_event. 4: hvd_elastic_committed. 5: hvd_wait_on_stream,
 * hvd_handle_copy_output_on (stream-ordered completion of device ops). */
#define HVD_ABI_VERSION 5

/* Element types (HVD_UINT8..HVD_BOOL), reduce operations (HVD_OP_*) and
 * error codes (HVD_OK, HVD_ERR_*): hvd/codes.h, shared with the transports. */

/* Joins the job described by the HVD_* environment (or a world of size 1
 * when there is none). Calling it when already initialized is a no-op. */
HVD_EXPORT int hvd_init(void);
/* Tears down the transport and leaves the job; init() may be called again. */
HVD_EXPORT int hvd_shutdown(void);
HVD_EXPORT int hvd_is_initialized(void);
/* Fails the current world now, from any thread, without waiting for peers
 * (elastic recovery: the world changed or broke). Every pending op, and
 * every later one, fails promptly with HVD_ERR_ABORTED and the message
 * "hvd was aborted on rank R: <reason>" (reason NULL or "": "no reason
 * given"). Idempotent: the first reason wins. hvd_shutdown() afterwards
 * takes no collective step; hvd_init() then joins a new world. Returns
 * HVD_OK, also when hvd is not initialized (nothing to abort). */
HVD_EXPORT int hvd_abort(const char* reason);

/* -1 when not initialized. In an elastic job (hvdrun --min-np/--max-np)
 * rank, size and the layout may change at every hvd_init(): each is the
 * rendezvous round's. */
HVD_EXPORT int hvd_rank(void);
HVD_EXPORT int hvd_size(void);
HVD_EXPORT int hvd_local_rank(void);
HVD_EXPORT int hvd_local_size(void);
HVD_EXPORT int hvd_cross_rank(void);
HVD_EXPORT int hvd_cross_size(void);
/* Elastic jobs: the membership changes the job's rendezvous told of since
 * the last call (its watch stream), a bit mask: HVD_HOSTS_ADDED (a worker
 * waits to join a new rendezvous round: the members should shut down and
 * init again to let it in), HVD_HOSTS_REMOVED (hosts left the job). 0 when
 * nothing changed, outside elastic jobs and when not initialized. Makes no
 * call to the rendezvous. */
#define HVD_HOSTS_ADDED 1
#define HVD_HOSTS_REMOVED 2
HVD_EXPORT int hvd_elastic_host_updates(void);
/* Elastic jobs: this worker holds commit number `commit` of its elastic
 * state (hvd.elastic's job-wide count of State.commit(); 0: the start,
 * nothing committed); `synced` non-zero when the sync that restarted its
 * round gave it (not its own commit). Told to hvdrun on the next heartbeat,
 * sent at once, without waiting for it: hvdrun says so when a round
 * restarts below the job's last commit (docs/elastic.md, "Lost state").
 * HVD_OK, also when not initialized or without a launcher (nothing to
 * tell); HVD_ERR_INVALID_ARGUMENT for a negative commit. */
HVD_EXPORT int hvd_elastic_committed(int64_t commit, int synced);

/* In place over `count` elements. */
HVD_EXPORT int hvd_allreduce(void* data, int64_t count, int dtype, int op);
/* In place: root's `count` elements replace everyone's. */
HVD_EXPORT int hvd_broadcast(void* data, int64_t count, int dtype, int root);
/* Rank r contributes counts[r] elements (counts has hvd_size() entries; NULL
 * means every rank contributes `count`); `out` receives them in rank order. */
HVD_EXPORT int hvd_allgather(const void* in, int64_t count, int dtype, void* out,
                             const int64_t* counts);
HVD_EXPORT int hvd_barrier(void);

/* ---- Asynchronous operations (the engine; docs/engine.md) ----------------
 * hvd_enqueue() hands an op to the engine thread and returns a handle at once;
 * the engine negotiates with the other ranks of the op's process set, fuses
 * and runs it, and completes the handle. Buffers must stay valid and untouched
 * until the handle is done; the shape and name are copied. The blocking
 * functions above are enqueue + wait. */

/* Op types (hvd_op.op_type). */
#define HVD_OPTYPE_ALLREDUCE 0
#define HVD_OPTYPE_ALLGATHER 1
#define HVD_OPTYPE_BROADCAST 2
#define HVD_OPTYPE_ALLTOALL 3
#define HVD_OPTYPE_REDUCESCATTER 4
#define HVD_OPTYPE_BARRIER 5
#define HVD_OPTYPE_JOIN 6

#define HVD_DEVICE_CPU (-1)
#define HVD_GLOBAL_PROCESS_SET 0

typedef struct hvd_op {
  /* sizeof(hvd_op) as the caller was compiled (see "Versioning" above);
   * hvd_op_defaults() sets it. */
  uint32_t struct_size;
  int32_t op_type;
  /* Identifies the op across ranks. NULL or "": auto-named from the op type
   * and a per-process counter (agrees across ranks only when every rank
   * enqueues its unnamed ops in the same order). */
  const char* name;
  const void* input;
  /* allreduce, broadcast: where the result goes (may equal input: in place).
   * allgather, alltoall, reducescatter: NULL; the engine allocates the
   * output, read it with hvd_handle_output_shape / hvd_handle_copy_output. */
  void* output;
  const int64_t* shape; /* ndim entries; the first is the row count */
  int32_t ndim;
  int32_t dtype;
  /* HVD_DEVICE_CPU or a CUDA device ordinal (ranks may use different
   * ordinals; CPU and CUDA must agree across ranks). Ops with a device >= 0
   * run on the GPU transport (setting gpu_transport, docs/gpu.md). */
  int32_t device;
  int32_t reduce_op;    /* allreduce, reducescatter */
  double prescale_factor;  /* applied before the reduction; 0 means 1 */
  double postscale_factor; /* applied after it (Average divides as well); 0 means 1 */
  int32_t root_rank;    /* broadcast: rank within the process set */
  const int64_t* splits; /* alltoall: rows for each rank of the set; NULL: even */
  int32_t process_set_id;
  /* ---- appended fields (absent below, defaults given) ---- */
  /* The framework's CUDA stream the tensors are ordered on (cudaStream_t,
   * opaque to libhvd); NULL: the default stream. Must be NULL for CPU ops.
   * Default NULL. */
  void* stream;
  /* ABI version 3. An event the framework recorded on `stream` when it
   * enqueued the op (cudaEvent_t, opaque to libhvd; it must live until the
   * op completes): the device's communication stream waits for it before
   * it reads the tensors, so the op overlaps the compute queued after it.
   * NULL: the engine waits for `stream`'s work as of the batch's start.
   * Must be NULL for CPU ops. Default NULL. */
  void* ready_event;
} hvd_op;

/* The smallest struct_size libhvd accepts: the layout up to process_set_id
 * (the fields before `stream`). */
#define HVD_OP_MIN_SIZE offsetof(hvd_op, stream)

/* An op of `op_type` with struct_size set, on the CPU, in the global process
 * set, every other field zero: start from it and set what the op needs. */
static inline hvd_op hvd_op_defaults(int32_t op_type) {
  hvd_op op;
  /* Zero every byte, padding included, so a newer libhvd never reads
   * garbage; then the non-zero defaults. */
  unsigned char* bytes = (unsigned char*)&op;
  for (size_t i = 0; i < sizeof(op); ++i) bytes[i] = 0;
  op.struct_size = (uint32_t)sizeof(hvd_op);
  op.op_type = op_type;
  op.device = HVD_DEVICE_CPU;
  op.process_set_id = HVD_GLOBAL_PROCESS_SET;
  return op;
}

/* op->struct_size must be set (see "Versioning"; hvd_op_defaults() does).
 * *handle receives a handle >= 1. Argument errors are returned at once, as
 * are HVD_ERR_ALREADY_EXISTS for a name already in flight on the set, an
 * error for a set this rank is not a member of, and the engine's error once
 * it stopped (shutdown) or failed (a dead peer). */
HVD_EXPORT int hvd_enqueue(const hvd_op* op, int64_t* handle);
/* The n ops are negotiated together and complete together (grouped ops).
 * `ops` is an array strided by ops[0].struct_size; every op has that size. */
HVD_EXPORT int hvd_enqueue_group(const hvd_op* ops, int32_t n, int64_t* handles);
/* 1 when the op is done (successfully or not), 0 while pending,
 * -HVD_ERR_NOT_FOUND for an unknown handle. */
HVD_EXPORT int hvd_poll(int64_t handle);
/* Waits until the op is done and returns its status (message in
 * hvd_last_error()). timeout_seconds > 0: HVD_ERR_TIMEOUT if still pending
 * then (the handle stays valid); <= 0: no limit of its own (the engine
 * fails ops whose peers die within the transport timeout). */
HVD_EXPORT int hvd_wait(int64_t handle, double timeout_seconds);
/* Stream-ordered completion of a device op (docs/gpu.md, "Asynchronous
 * completion"): waits on the host only until the op is launched on its
 * device (negotiated, enqueued on the device's communication stream), then
 * makes `stream` (a cudaStream_t of the op's device; NULL: the legacy
 * default stream) wait on the device for the op's completion, and returns
 * HVD_OK without waiting for it: work the caller enqueues on `stream`
 * afterwards runs once the op is done. The op's outputs (shape, splits,
 * hvd_handle_copy_output_on) can be read from then on. An op done already
 * returns its status, as hvd_wait does; a CPU op, or a device whose plugin
 * has no events (ABI version 3), is waited for as hvd_wait does.
 * timeout_seconds as hvd_wait's. A failure on the device after this
 * returned fails the set (every later call on this rank says why) and the
 * op's handle; the op's tensors are written no more once the handle is
 * done (hvd_poll), so keep them referenced until then. */
HVD_EXPORT int hvd_wait_on_stream(int64_t handle, void* stream, double timeout_seconds);
/* hvd_handle_copy_output for a launched or finished device op, enqueued on
 * `stream` (which first waits on the device for the op) and not waited
 * for: the copy is ordered on `stream` like the caller's own kernels. A
 * host op's output is copied at once, as hvd_handle_copy_output does. */
HVD_EXPORT int hvd_handle_copy_output_on(int64_t handle, void* dst, int64_t bytes, void* stream);
/* Shape of an engine-allocated output of a finished (or launched) op. */
HVD_EXPORT int hvd_handle_output_shape(int64_t handle, int64_t* shape, int32_t max_ndim,
                                       int32_t* ndim);
/* Copies the engine-allocated output (exactly its size in bytes) to dst.
 * A device op's output is in device memory: dst must then be device memory
 * (a CUDA tensor of the op's device); the copy runs on the legacy default
 * stream after the op, through the GPU transport's device functions, and is
 * waited for (within the transport timeout) before this returns. */
HVD_EXPORT int hvd_handle_copy_output(int64_t handle, void* dst, int64_t bytes);
/* Hands the engine-allocated host output of a finished op to the caller
 * without a copy: *data points at its *bytes bytes (the size
 * hvd_handle_output_shape describes), which stay valid until
 * hvd_output_free(*token) — callable from any thread, also after
 * hvd_shutdown() or hvd_release() of the handle. The handle has no output
 * bytes afterwards (hvd_handle_copy_output then fails). An output in device
 * memory, an empty one or one already taken: HVD_ERR_INVALID_ARGUMENT. */
HVD_EXPORT int hvd_handle_take_output(int64_t handle, void** data, int64_t* bytes, void** token);
/* Frees an output taken with hvd_handle_take_output (NULL: nothing). */
HVD_EXPORT void hvd_output_free(void* token);
/* alltoall: rows received from each rank of the set (n = the set's size). */
HVD_EXPORT int hvd_handle_received_splits(int64_t handle, int64_t* splits, int32_t n);
/* join: the rank that joined last. */
HVD_EXPORT int hvd_handle_join_result(int64_t handle, int32_t* last_rank);
/* Forgets a finished op and frees what the engine allocated for it. */
HVD_EXPORT int hvd_release(int64_t handle);

/* ---- Process sets --------------------------------------------------------
 * Collective: every rank calls it with the same ranks, in the same order of
 * calls; *id receives the new set's id (> 0). */
HVD_EXPORT int hvd_add_process_set(const int32_t* ranks, int32_t n, int32_t* id);
HVD_EXPORT int hvd_remove_process_set(int32_t id);
/* This rank's rank in the set, or -1 when not a member; the set's size.
 * Both return -HVD_ERR_NOT_FOUND for an unknown set (and another negated
 * HVD_ERR_* code when not initialized), with hvd_last_error() set. */
HVD_EXPORT int hvd_process_set_rank(int32_t id);
HVD_EXPORT int hvd_process_set_size(int32_t id);
/* The set's global ranks into ranks[0..n). */
HVD_EXPORT int hvd_process_set_ranks(int32_t id, int32_t* ranks, int32_t n);

/* ---- Timeline (docs/engine.md) -------------------------------------------
 * Rank 0 writes the Chrome-trace file; on other ranks these are no-ops. Safe
 * while ops run. */
HVD_EXPORT int hvd_start_timeline(const char* path);
/* Returns once the file is complete (every op that finished before the call
 * recorded, the JSON array closed). */
HVD_EXPORT int hvd_stop_timeline(void);

/* Looks up the constant called `name` ("HVD_FLOAT32", "HVD_OP_SUM",
 * "HVD_ERR_TIMEOUT", "HVD_ABI_VERSION", ...) into *value: HVD_OK, or
 * HVD_ERR_NOT_FOUND when there is no such constant. hvd_op's layout as this
 * libhvd was compiled is there too, for bindings that build the struct
 * themselves (Python): "hvd_op.size" (its sizeof), "hvd_op.min_size"
 * (HVD_OP_MIN_SIZE) and "hvd_op.offset.<field>" for each field
 * ("hvd_op.offset.stream"). */
HVD_EXPORT int hvd_constant(const char* name, int64_t* value);

/* HVD_ABI_VERSION as this libhvd was compiled. */
HVD_EXPORT int hvd_abi_version(void);

/* Build and environment queries, named as horovod.common.basics names them:
 * "gloo_built", "gloo_enabled", "mpi_built", "mpi_enabled",
 * "mpi_threads_supported", "nccl_built", "cuda_built", "rocm_built",
 * "ccl_built", "ddl_built". Returns 1 or 0 (nccl_built: below), also before hvd_init():
 * gloo_built is 1; gloo_enabled is 1 when the CPU transport (setting
 * cpu_transport, HVD_CPU_TRANSPORT) is gloo; cuda_built is 1 when the NCCL
 * plugin, libhvd_nccl.so, lies beside this libhvd.so, and nccl_built is then
 * NCCL's version code as Horovod gives it (NCCL_VERSION_CODE of the NCCL the
 * plugin was built against: 2.28.9 is 22809; 1 when this libhvd.so was built
 * without a plugin of its own), else 0; the MPI,
 * ROCm, oneCCL and DDL ones are 0. -HVD_ERR_NOT_FOUND for another name,
 * -HVD_ERR_INVALID_ARGUMENT for NULL or a malformed HVD_* setting (message
 * in hvd_last_error()). */
HVD_EXPORT int hvd_build_feature(const char* name);

/* The message of the last failed call on this thread ("" if none). */
HVD_EXPORT const char* hvd_last_error(void);
HVD_EXPORT const char* hvd_version(void);

#ifdef __cplusplus
}
#endif

#endif /* HVD_C_API_H_ */
