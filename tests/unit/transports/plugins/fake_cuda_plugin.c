/* "fakecuda": a transport plugin that declares the CUDA device but runs its
 * collectives on host memory, through the job's rendezvous store, so that
 * the routing of device ops (HVD_GPU_TRANSPORT) can be tested end to end on
 * a machine without a GPU (tests/integration/test_gpu_routing.py).
 *
 * Every op is one round: each rank publishes what it contributes under
 * "<key_prefix>fakecuda/<op number>/<rank>" (alltoall: ".../<from>/<to>")
 * and reads every peer's, then computes its result locally in rank order.
 * Slow (every byte crosses the store n times) and obviously correct, which
 * is what a test needs. A blocked read ends within the world's timeout.
 *
 * For the test to see what ran here: fakecuda_calls("allreduce") (and the
 * other op names, "create") counts this process's calls, fakecuda_device()
 * is the device ordinal the last world was created for.
 *
 * ABI version 3: its device_* functions (fake_cuda_device.c) work on host
 * memory through asynchronous streams (fake_cuda_streams.h) and count their
 * calls (fakecuda_device_calls). A collective is ordered on its stream as
 * NCCL's are: it starts once the work enqueued there before it has run (it
 * waits for that, bounded), and runs before anything enqueued after it.
 * Built with FAKECUDA_ABI_V1 it is a version-1 plugin without device
 * functions (the engine must then refuse device ops). */
#include <signal.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "tests/unit/transports/plugins/fake_cuda_device.h"
#include "tests/unit/transports/plugins/fake_cuda_streams.h"
#include "tests/unit/transports/plugins/plugin_status.h"
#include "transports/plugin/transport_plugin.h"

#define EXPORT __attribute__((visibility("default")))

enum { CREATE, ALLREDUCE, ALLGATHERV, BROADCAST, ALLTOALLV, REDUCESCATTER, BARRIER, OPS };
static const char* const kOpNames[OPS] = {"create",    "allreduce",     "allgatherv", "broadcast",
                                          "alltoallv", "reducescatter", "barrier"};
static atomic_llong calls[OPS];
static atomic_int last_device = -2;

EXPORT long long fakecuda_calls(const char* op) {
  for (int i = 0; i < OPS; ++i) {
    if (strcmp(op, kOpNames[i]) == 0) return atomic_load(&calls[i]);
  }
  return -1;
}

EXPORT int fakecuda_device(void) { return atomic_load(&last_device); }

typedef struct world {
  int rank;
  int size;
  long long timeout_ms;
  long long next_op;
  char prefix[256];
  hvd_plugin_store store;
  atomic_int aborted;
} world;


/* Orders a collective on `stream` as NCCL's: what was enqueued there
 * before it has run (waited for, within the world's timeout). */
static int32_t ordered_on(world* w, void* stream, hvd_plugin_status* status) {
  fake_stream* s = fake_stream_of(stream);
  if (s == NULL) {
    char message[128];
    snprintf(message, sizeof(message), "fakecuda: a collective on %p, which is no stream",
             stream);
    return fail(status, HVD_ERR_INVALID_ARGUMENT, message);
  }
  const int32_t code = fake_stream_synchronize(s, w->timeout_ms, status->message,
                                               sizeof(status->message));
  status->code = code;
  return code;
}

/* Test hook: HVD_FAKECUDA_DIE_AT="RANK:OP" kills this process (SIGKILL) at
 * the start of collective number OP of its world on world rank RANK, once
 * (HVD_FAKECUDA_DIE_MARKER names a file that says it happened): a peer dies
 * while the others are inside a device collective, after the negotiation. */
static void die_if_asked(const world* w, long long number) {
  const char* at = getenv("HVD_FAKECUDA_DIE_AT");
  const char* marker = getenv("HVD_FAKECUDA_DIE_MARKER");
  int rank = -1;
  long long op = -1;
  if (at == NULL || marker == NULL || sscanf(at, "%d:%lld", &rank, &op) != 2) return;
  if (rank != w->rank || op != number) return;
  FILE* f = fopen(marker, "r");
  if (f != NULL) {
    fclose(f);
    return;
  }
  f = fopen(marker, "w");
  if (f != NULL) fclose(f);
  raise(SIGKILL);
}

/* Starts op `op` on `stream`: counts it, refuses after an abort, waits for
 * the stream's earlier work, numbers it. */
static int32_t begin_on(world* w, int op, void* stream, long long* number,
                        hvd_plugin_status* status) {
  atomic_fetch_add(&calls[op], 1);
  if (atomic_load(&w->aborted)) return fail(status, HVD_ERR_ABORTED, "fakecuda: aborted");
  if (ordered_on(w, stream, status) != HVD_OK) return status->code;
  *number = w->next_op++;
  die_if_asked(w, *number);
  return ok(status);
}

static void key_of(const world* w, char* key, size_t n, long long number, int from, int to) {
  if (to < 0) {
    snprintf(key, n, "%sfakecuda/%lld/%d", w->prefix, number, from);
  } else {
    snprintf(key, n, "%sfakecuda/%lld/%d/%d", w->prefix, number, from, to);
  }
}

static int32_t publish(world* w, long long number, int to, const void* data, size_t bytes,
                       hvd_plugin_status* status) {
  char key[320];
  key_of(w, key, sizeof(key), number, w->rank, to);
  static const char empty = 0;
  return w->store.set(w->store.self, key, bytes > 0 ? data : &empty, bytes, status);
}

static long long now_ms(void) {
  struct timespec t;
  clock_gettime(CLOCK_MONOTONIC, &t);
  return (long long)t.tv_sec * 1000 + t.tv_nsec / 1000000;
}

/* Reads exactly `bytes` published by `from` (for `to`, or -1) into out,
 * within the world's timeout. It waits in slices of 50 ms and looks at the
 * abort flag between them, as a real plugin must: an abort (an elastic
 * reset) ends the wait at once, not at the timeout. */
static int32_t fetch(world* w, long long number, int from, int to, void* out, size_t bytes,
                     hvd_plugin_status* status) {
  char key[320];
  char one;
  size_t length = 0;
  key_of(w, key, sizeof(key), number, from, to);
  const long long deadline = now_ms() + w->timeout_ms;
  for (;;) {
    if (atomic_load(&w->aborted)) {
      return fail(status, HVD_ERR_ABORTED, "fakecuda: aborted while waiting for a peer");
    }
    const long long left = deadline - now_ms();
    const long long slice = left < 50 ? (left > 0 ? left : 1) : 50;
    const int32_t code = w->store.get(w->store.self, key, slice, bytes > 0 ? out : &one,
                                      bytes > 0 ? bytes : 1, &length, status);
    if (code == HVD_OK) break;
    if (code != HVD_ERR_TIMEOUT || now_ms() >= deadline) return status->code;
  }
  if (length != bytes) {
    return fail(status, HVD_ERR_INTERNAL, "fakecuda: a peer sent another size");
  }
  return ok(status);
}

/* acc[i] = acc[i] (op) in[i] for `count` elements of one type. */
#define REDUCE(T)                                                        \
  {                                                                      \
    T* a = (T*)acc;                                                      \
    const T* b = (const T*)in;                                           \
    for (size_t i = 0; i < count; ++i) {                                 \
      switch (op) {                                                      \
        case HVD_OP_SUM: a[i] = a[i] + b[i]; break;                      \
        case HVD_OP_MIN: a[i] = b[i] < a[i] ? b[i] : a[i]; break;        \
        case HVD_OP_MAX: a[i] = b[i] > a[i] ? b[i] : a[i]; break;        \
        case HVD_OP_PRODUCT: a[i] = a[i] * b[i]; break;                  \
        default: return 0;                                               \
      }                                                                  \
    }                                                                    \
    return 1;                                                            \
  }

static size_t element_size(int32_t dtype) {
  switch (dtype) {
    case HVD_UINT8: case HVD_INT8: return 1;
    case HVD_INT16: return 2;
    case HVD_INT32: case HVD_FLOAT32: return 4;
    case HVD_INT64: case HVD_FLOAT64: return 8;
    default: return 0;
  }
}

/* 1 when reduced; 0 for a type or op this test plugin does not do. */
static int reduce(void* acc, const void* in, size_t bytes, int32_t dtype, int32_t op) {
  const size_t size = element_size(dtype);
  if (size == 0) return 0;
  const size_t count = bytes / size;
  switch (dtype) {
    case HVD_UINT8: REDUCE(unsigned char)
    case HVD_INT8: REDUCE(signed char)
    case HVD_INT16: REDUCE(short)
    case HVD_INT32: REDUCE(int)
    case HVD_INT64: REDUCE(long long)
    case HVD_FLOAT32: REDUCE(float)
    case HVD_FLOAT64: REDUCE(double)
    default: return 0;
  }
}

/* Publishes `in` and reads every rank's contribution into `out`, in rank
 * order (counts[r] bytes from rank r; this rank's is copied). */
static int32_t exchange(world* w, long long number, const void* in, size_t in_bytes, void* out,
                        const int64_t* counts, hvd_plugin_status* status) {
  if (w->size > 1 && publish(w, number, -1, in, in_bytes, status) != HVD_OK) return status->code;
  char* at = (char*)out;
  for (int r = 0; r < w->size; ++r) {
    const size_t n = (size_t)counts[r];
    if (r == w->rank) {
      if (n != in_bytes) {
        return fail(status, HVD_ERR_INTERNAL, "fakecuda: counts disagree");
      }
      if (n > 0) memcpy(at, in, n);
    } else if (fetch(w, number, r, -1, at, n, status) != HVD_OK) {
      return status->code;
    }
    at += n;
  }
  return ok(status);
}

/* Every rank's `bytes` of `in`, reduced in rank order (the same result on
 * every rank), into a new buffer *reduced (free it). */
static int32_t reduce_all(world* w, int op_kind, const void* in, size_t bytes, int32_t dtype,
                          int32_t op, void* stream, char** reduced, hvd_plugin_status* status) {
  long long number = 0;
  if (begin_on(w, op_kind, stream, &number, status) != HVD_OK) return status->code;
  if (element_size(dtype) == 0) {
    return fail(status, HVD_ERR_INVALID_ARGUMENT,
                "fakecuda: this test plugin reduces integers, float32 and float64 only");
  }
  int64_t* counts = malloc(sizeof(int64_t) * (size_t)w->size);
  char* all = malloc(bytes * (size_t)w->size + 1);
  for (int r = 0; r < w->size; ++r) counts[r] = (int64_t)bytes;
  int32_t code = exchange(w, number, in, bytes, all, counts, status);
  free(counts);
  if (code != HVD_OK) {
    free(all);
    return code;
  }
  for (int r = 1; r < w->size; ++r) {
    if (!reduce(all, all + (size_t)r * bytes, bytes, dtype, op)) {
      free(all);
      return fail(status, HVD_ERR_INTERNAL, "fakecuda: unknown reduce op");
    }
  }
  *reduced = all;  /* rank 0's slot holds the result */
  return ok(status);
}

static int32_t allreduce(void* handle, void* data, size_t bytes, int32_t dtype, int32_t op,
                         void* stream, hvd_plugin_status* status) {
  fakecuda_note_stream(0, stream);
  char* reduced = NULL;
  if (reduce_all(handle, ALLREDUCE, data, bytes, dtype, op, stream, &reduced, status) != HVD_OK) {
    return status->code;
  }
  memcpy(data, reduced, bytes);
  free(reduced);
  return ok(status);
}

static int32_t reducescatter(void* handle, const void* in, size_t in_bytes, void* out,
                             size_t out_bytes, const int64_t* recv_counts, int32_t ranks,
                             int32_t dtype, int32_t op, void* stream, hvd_plugin_status* status) {
  fakecuda_note_stream(0, stream);
  (void)ranks;
  world* w = handle;
  char* reduced = NULL;
  if (reduce_all(w, REDUCESCATTER, in, in_bytes, dtype, op, stream, &reduced, status) != HVD_OK) {
    return status->code;
  }
  size_t offset = 0;
  for (int r = 0; r < w->rank; ++r) offset += (size_t)recv_counts[r];
  memcpy(out, reduced + offset, out_bytes);
  free(reduced);
  return ok(status);
}

static int32_t allgatherv(void* handle, const void* in, size_t in_bytes, void* out,
                          size_t out_bytes, const int64_t* counts, int32_t ranks, void* stream,
                          hvd_plugin_status* status) {
  (void)out_bytes;
  (void)ranks;
  fakecuda_note_stream(0, stream);
  world* w = handle;
  long long number = 0;
  if (begin_on(w, ALLGATHERV, stream, &number, status) != HVD_OK) return status->code;
  return exchange(w, number, in, in_bytes, out, counts, status);
}

static int32_t broadcast(void* handle, void* data, size_t bytes, int32_t root, void* stream,
                         hvd_plugin_status* status) {
  fakecuda_note_stream(0, stream);
  world* w = handle;
  long long number = 0;
  if (begin_on(w, BROADCAST, stream, &number, status) != HVD_OK) return status->code;
  if (w->size == 1) return ok(status);
  if (w->rank == root) return publish(w, number, -1, data, bytes, status);
  return fetch(w, number, root, -1, data, bytes, status);
}

static int32_t alltoallv(void* handle, const void* in, size_t in_bytes, const int64_t* send_counts,
                         void* out, size_t out_bytes, const int64_t* recv_counts, int32_t ranks,
                         void* stream, hvd_plugin_status* status) {
  (void)in_bytes;
  (void)out_bytes;
  (void)ranks;
  fakecuda_note_stream(0, stream);
  world* w = handle;
  long long number = 0;
  if (begin_on(w, ALLTOALLV, stream, &number, status) != HVD_OK) return status->code;
  const char* from = in;
  const char* mine = NULL;
  for (int r = 0; r < w->size; ++r) {
    if (r == w->rank) {
      mine = from;
    } else if (publish(w, number, r, from, (size_t)send_counts[r], status) != HVD_OK) {
      return status->code;
    }
    from += send_counts[r];
  }
  char* at = out;
  for (int r = 0; r < w->size; ++r) {
    const size_t n = (size_t)recv_counts[r];
    if (r == w->rank) {
      if (n > 0) memcpy(at, mine, n);
    } else if (fetch(w, number, r, w->rank, at, n, status) != HVD_OK) {
      return status->code;
    }
    at += n;
  }
  return ok(status);
}

static int32_t barrier(void* handle, void* stream, hvd_plugin_status* status) {
  world* w = handle;
  long long number = 0;
  if (begin_on(w, BARRIER, stream, &number, status) != HVD_OK) return status->code;
  int64_t* counts = calloc((size_t)w->size, sizeof(int64_t));
  char none = 0;
  int32_t code = exchange(w, number, &none, 0, &none, counts, status);
  free(counts);
  return code;
}

static void abort_world(void* handle, int32_t code, const char* reason) {
  (void)code;
  (void)reason;
  atomic_store(&((world*)handle)->aborted, 1);
}

static void destroy(void* handle) { free(handle); }

static int32_t can_run(char* why, size_t why_len) {
  (void)why;
  (void)why_len;
  return 1; /* host memory: runs anywhere */
}

static int32_t create(const hvd_plugin_world* info, void** handle, hvd_plugin_status* status) {
  atomic_fetch_add(&calls[CREATE], 1);
  atomic_store(&last_device, info->device);
  if (info->size > 1 && info->store.self == NULL) {
    return fail(status, HVD_ERR_INVALID_ARGUMENT,
                "fakecuda: a world of several ranks needs the store");
  }
  world* w = calloc(1, sizeof(world));
  w->rank = info->rank;
  w->size = info->size;
  w->timeout_ms = info->timeout_ms;
  w->store = info->store;
  snprintf(w->prefix, sizeof(w->prefix), "%s", info->key_prefix);
  *handle = w;
  return ok(status);
}

EXPORT const hvd_transport_plugin_t hvd_transport_plugin = {
#ifdef FAKECUDA_ABI_V1
    offsetof(hvd_transport_plugin_t, destroy) + sizeof(void (*)(void*)),
    1,
#else
    sizeof(hvd_transport_plugin_t),
    3,
#endif
    "fakecuda",
    HVD_PLUGIN_DEVICE_CUDA,
    can_run,
    create,
    allreduce,
    allgatherv,
    broadcast,
    alltoallv,
    reducescatter,
    barrier,
    abort_world,
    destroy,
#ifdef FAKECUDA_ABI_V1
    NULL, NULL, NULL, NULL, NULL, NULL, NULL, NULL, NULL, /* past its struct_size */
#else
    fakecuda_device_open,
    fakecuda_device_close,
    fakecuda_device_alloc,
    fakecuda_device_free,
    fakecuda_device_copy,
    fakecuda_device_scale,
    fakecuda_device_synchronize,
    fakecuda_device_comm_stream,
    fakecuda_device_stream_wait,
#endif
};
