/* The transport plugin ABI: what a separately built shared library (such as
 * libhvd_nccl.so) exports so that libhvd.so can load it with dlopen/dlsym
 * and use it as a Transport, without linking anything the plugin needs
 * (CUDA, NCCL). Plain C, versioned like NCCL's net plugins:
 *
 *  - the library exports one object, HVD_TRANSPORT_PLUGIN_SYMBOL, of type
 *    hvd_transport_plugin_t, whose first two fields are struct_size and
 *    abi_version;
 *  - a loader accepts every version from HVD_TRANSPORT_PLUGIN_ABI_OLDEST to
 *    its own HVD_TRANSPORT_PLUGIN_ABI_VERSION (struct_size tells which
 *    fields exist) and refuses a newer one with an error naming both;
 *  - fields are only ever appended; a new field means a new abi_version
 *    (version 2 appended the device_* functions, version 3 the device's
 *    communication stream, version 4 completion on the device: events,
 *    collectives that return once enqueued, asynchronous errors, copies
 *    without classification, the in-place shrink).
 *
 * Data types, reduce ops and error codes are the HVD_* constants of
 * hvd/codes.h (common/include/; libhvd.so's C ABI uses the same). Every op
 * blocks until done or failed (a CUDA plugin: until the op is enqueued on
 * `stream`, or the caller's stream when NULL) and
 * returns HVD_OK or an HVD_ERR_* code with a message in *status.
 * HVD_ERR_INVALID_ARGUMENT means the op was refused before anything ran
 * (a type the plugin cannot reduce, counts that do not fit): the transport
 * stays usable. Any other error fails the transport for good (the loader
 * fails every later call with it). Counts are in bytes. Ops on one handle come from one thread at a time; abort() may
 * come from any thread. */
#ifndef HVD_TRANSPORT_PLUGIN_H_
#define HVD_TRANSPORT_PLUGIN_H_

#include <stddef.h>
#include <stdint.h>

#include "hvd/codes.h"

#ifdef __cplusplus
extern "C" {
#endif

#define HVD_TRANSPORT_PLUGIN_ABI_VERSION 4u
#define HVD_TRANSPORT_PLUGIN_ABI_OLDEST 1u
#define HVD_TRANSPORT_PLUGIN_SYMBOL "hvd_transport_plugin"

/* Devices whose memory a plugin's ops take (hvd::transports::DeviceKind). */
#define HVD_PLUGIN_DEVICE_CPU 0
#define HVD_PLUGIN_DEVICE_CUDA 1

/* Bytes of an error message, the terminating NUL included. */
#define HVD_PLUGIN_MESSAGE_SIZE 512

/* An op's outcome: code is HVD_OK or an HVD_ERR_* code; message says why. */
typedef struct hvd_plugin_status {
  int32_t code;
  char message[HVD_PLUGIN_MESSAGE_SIZE];
} hvd_plugin_status;

/* ABI version 2: one copy of device_copy. */
typedef struct hvd_plugin_copy {
  void* dst;
  const void* src;
  size_t bytes;
} hvd_plugin_copy;

/* The rendezvous key-value store of the job, for exchanging addresses or an
 * ncclUniqueId. Keys are the plugin's own; prefix them with the world's
 * key_prefix. Both return HVD_OK or an HVD_ERR_* code (HVD_ERR_TIMEOUT when
 * get's key did not appear within timeout_ms). get copies at most
 * `capacity` bytes to `value` and sets *length to the value's full size
 * (HVD_ERR_INVALID_ARGUMENT when it is larger than capacity). */
typedef struct hvd_plugin_store {
  void* self;
  int32_t (*set)(void* self, const char* key, const void* value, size_t length,
                 hvd_plugin_status* status);
  int32_t (*get)(void* self, const char* key, int64_t timeout_ms, void* value, size_t capacity,
                 size_t* length, hvd_plugin_status* status);
} hvd_plugin_store;

/* One world (a process set) to build a transport for: this rank's placement
 * in it (hvd::common::Placement, common/placement.h, less the host) and how
 * to reach its peers. */
typedef struct hvd_plugin_world {
  uint32_t struct_size; /* sizeof(hvd_plugin_world) of the loader */
  int32_t rank;
  int32_t size;
  int32_t local_rank; /* on this host; local_size 0: unknown */
  int32_t local_size;
  int32_t cross_rank; /* Horovod's: among the ranks of this local rank, in */
  int32_t cross_size; /* rank order; cross_size 0: unknown */
  int32_t device;     /* device ordinal (CUDA), -1 for none */
  int64_t timeout_ms; /* for connecting and for each op */
  const char* key_prefix;
  hvd_plugin_store store; /* store.self NULL only when size == 1 */
} hvd_plugin_world;

typedef struct hvd_transport_plugin_t {
  uint32_t struct_size; /* sizeof(hvd_transport_plugin_t) of the plugin */
  uint32_t abi_version; /* HVD_TRANSPORT_PLUGIN_ABI_VERSION of the plugin */
  const char* name;     /* the registry name: "nccl" */
  int32_t device;       /* HVD_PLUGIN_DEVICE_* */

  /* 1 when the transport can run on this machine; 0 with the reason in
   * why[0..why_len) ("no CUDA device", "libnccl.so.2 not found"). */
  int32_t (*can_run)(char* why, size_t why_len);

  /* Connects this rank to its world; *handle is the transport. */
  int32_t (*create)(const hvd_plugin_world* world, void** handle, hvd_plugin_status* status);

  /* In place; op is HVD_OP_SUM, _MIN, _MAX or _PRODUCT. */
  int32_t (*allreduce)(void* handle, void* data, size_t bytes, int32_t dtype, int32_t op,
                       void* stream, hvd_plugin_status* status);
  /* out gets every rank's input in rank order; counts[r]: bytes of rank r. */
  int32_t (*allgatherv)(void* handle, const void* in, size_t in_bytes, void* out,
                        size_t out_bytes, const int64_t* counts, int32_t ranks, void* stream,
                        hvd_plugin_status* status);
  int32_t (*broadcast)(void* handle, void* data, size_t bytes, int32_t root, void* stream,
                       hvd_plugin_status* status);
  int32_t (*alltoallv)(void* handle, const void* in, size_t in_bytes, const int64_t* send_counts,
                       void* out, size_t out_bytes, const int64_t* recv_counts, int32_t ranks,
                       void* stream, hvd_plugin_status* status);
  /* As hvd::transports::Transport::reducescatter. */
  int32_t (*reducescatter)(void* handle, const void* in, size_t in_bytes, void* out,
                           size_t out_bytes, const int64_t* recv_counts, int32_t ranks,
                           int32_t dtype, int32_t op, void* stream, hvd_plugin_status* status);
  int32_t (*barrier)(void* handle, void* stream, hvd_plugin_status* status);
  /* Fails the transport for good (Transport::abort); any thread, idempotent. */
  void (*abort)(void* handle, int32_t code, const char* reason);
  /* Frees the transport; the handle is not used afterwards. */
  void (*destroy)(void* handle);

  /* ---- ABI version 2: work on device memory around a collective --------
   * (the engine's fusion buffer, an Average's division, pre/postscale,
   * staging through host memory). Through a device context of its own, not
   * a communicator: staging needs no NCCL. A CUDA plugin of version 2 has
   * all of them; a CPU plugin leaves them NULL. Except device_synchronize,
   * every call enqueues on `stream` (NULL: the legacy default stream) and
   * returns at once. */

  /* A context for device ordinal `device`; timeout_ms bounds
   * device_synchronize. */
  int32_t (*device_open)(int32_t device, int64_t timeout_ms, void** context,
                         hvd_plugin_status* status);
  void (*device_close)(void* context);
  /* `bytes` of device memory, or of page-locked host memory when
   * pinned_host is 1 (for staging); freed with device_free. */
  int32_t (*device_alloc)(void* context, size_t bytes, int32_t pinned_host, void** memory,
                          hvd_plugin_status* status);
  void (*device_free)(void* context, void* memory, int32_t pinned_host);
  /* Copies every entry (device or pinned host memory, any direction;
   * entries must not overlap): many device-to-device entries in one launch. */
  int32_t (*device_copy)(void* context, const hvd_plugin_copy* copies, size_t n, void* stream,
                         hvd_plugin_status* status);
  /* The end of a reduction as runtime/engine/scale.h's finish_reduction, on the
   * device: data = data / divisor * factor (factor 1: an exact division for
   * integers; divisor 1 and factor 1: nothing). Not bool. */
  int32_t (*device_scale)(void* context, void* data, size_t count, int32_t dtype,
                          int32_t divisor, double factor, void* stream,
                          hvd_plugin_status* status);
  /* Waits until `stream`'s work so far is done, at most timeout_ms. */
  int32_t (*device_synchronize)(void* context, void* stream, hvd_plugin_status* status);

  /* ---- ABI version 3: the device's communication stream ----------------
   * The engine runs a context's device work and collectives on the
   * context's own communication stream, ordered after the framework's
   * stream by an event, never on the framework's stream (so they overlap
   * its compute, as torch's ProcessGroupNCCL does). */

  /* The context's communication stream: made at device_open (not
   * synchronizing with the framework's streams), destroyed at device_close. */
  int32_t (*device_comm_stream)(void* context, void** stream, hvd_plugin_status* status);
  /* `waiter` waits on the device, without a host wait, for `event` when it
   * is not NULL (an event the framework recorded on `stream`: a
   * cudaEvent_t), else for the work enqueued on `stream` so far. */
  int32_t (*device_stream_wait)(void* context, void* waiter, void* stream, void* event,
                                hvd_plugin_status* status);

  /* ---- ABI version 4: completion on the device -------------------------
   * A CUDA plugin of version 4 returns from a collective once it is
   * enqueued on `stream` (it no longer waits for it on the host): the
   * engine records an event after the batch and learns its completion from
   * that event, off the engine thread, while it negotiates and launches the
   * next batches. (A version 3 plugin still waits; the engine works with
   * both.) barrier still returns once the barrier completed. A failure
   * that happens on the device after the call returned (a peer gone, a
   * timeout) is reported by async_error. */

  /* HVD_OK, or the failure of work enqueued earlier that only shows
   * asynchronously (ncclCommGetAsyncError: a peer gone, a network error).
   * A failure fails the transport for good (the communicator is aborted so
   * that its kernels end) like any other error, and every later call
   * returns it. Never blocks; any thread. The engine calls it while it
   * waits for a batch's event, and aborts the transport itself when the
   * event does not complete within the timeout. NULL: no such errors. */
  int32_t (*async_error)(void* handle, hvd_plugin_status* status);

  /* Events of the context's device (cudaEvent_t, timing disabled). */
  int32_t (*device_event_create)(void* context, void** event, hvd_plugin_status* status);
  void (*device_event_destroy)(void* context, void* event);
  /* Records `event` on `stream` (enqueued: completes when `stream` reaches
   * it). */
  int32_t (*device_event_record)(void* context, void* event, void* stream,
                                 hvd_plugin_status* status);
  /* *done = 1 once the work before the event's last record completed, 0
   * while it has not (never blocks); an error when the device failed. */
  int32_t (*device_event_query)(void* context, void* event, int32_t* done,
                                hvd_plugin_status* status);
  /* device_copy whose every entry's dst and src are device memory (or
   * memory that device kernels address, such as managed memory), as the
   * caller knows from the tensors' devices: no per-entry classification
   * (cudaPointerGetAttributes), every entry in batched launches. */
  int32_t (*device_copy_on_device)(void* context, const hvd_plugin_copy* copies, size_t n,
                                   void* stream, hvd_plugin_status* status);

  /* The in-place shrink (NCCL >= 2.27's ncclCommShrink): a transport for
   * `world` made from the live transport `handle` without the ranks
   * `excluded[0..n_excluded)` (ranks of `handle`'s world, ascending); the
   * world's ranks are the survivors' in their old order. `handle` stays
   * valid (destroy it after). HVD_ERR_UNIMPLEMENTED when the loaded library
   * has no shrink (the caller then aborts and creates anew); NULL: never. */
  int32_t (*shrink)(void* handle, const hvd_plugin_world* world, const int32_t* excluded,
                    int32_t n_excluded, void** new_handle, hvd_plugin_status* status);
} hvd_transport_plugin_t;

#ifdef __cplusplus
}
#endif

#endif /* HVD_TRANSPORT_PLUGIN_H_ */
