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
 * Its device_* functions (fake_cuda_device.c) work on host memory through
 * asynchronous streams (fake_cuda_streams.h) and count their calls
 * (fakecuda_device_calls). ABI version 4: a collective is a work item of
 * its stream, as NCCL's kernels are: checked and numbered at the call,
 * which returns at once; the stream's thread runs it (the store exchange
 * included) after the work enqueued before it and before the work enqueued
 * after it. A failure there (a peer gone past the timeout, an abort) sets
 * the stream's error and the world's asynchronous error (async_error);
 * every later call fails with it. barrier() still waits. shrink() makes a
 * world of the survivors (see there). Built with FAKECUDA_ABI_VERSION=3 its
 * collectives wait for their item (no events, no async_error); with
 * FAKECUDA_ABI_V1 it is a version-1 plugin without device functions (the
 * engine must then refuse device ops). */
#include <pthread.h>
#include <signal.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "fake_cuda_device.h"
#include "fake_cuda_streams.h"
#include "plugin_status.h"
#include "transports/plugin/transport_plugin.h"

#define EXPORT __attribute__((visibility("default")))

/* The ABI version built: 4 unless FAKECUDA_ABI_V1 or FAKECUDA_ABI_VERSION
 * says otherwise (3: collectives wait for their work, no events). */
#ifndef FAKECUDA_ABI_VERSION
#ifdef FAKECUDA_ABI_V1
#define FAKECUDA_ABI_VERSION 1
#else
#define FAKECUDA_ABI_VERSION 4
#endif
#endif

enum { CREATE, ALLREDUCE, ALLGATHERV, BROADCAST, ALLTOALLV, REDUCESCATTER, BARRIER, SHRINK,
       OPS };
static const char* const kOpNames[OPS] = {"create",    "allreduce",     "allgatherv", "broadcast",
                                          "alltoallv", "reducescatter", "barrier",    "shrink"};
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
  /* Collectives enqueued and not yet run; the first failure of one (ABI
   * version 4: what async_error returns). */
  pthread_mutex_t mu;
  pthread_cond_t changed;
  int pending;
  int32_t async_code;
  char async_message[HVD_PLUGIN_MESSAGE_SIZE];
} world;

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
static int32_t reduce_all(world* w, long long number, const void* in, size_t bytes,
                          int32_t dtype, int32_t op, char** reduced, hvd_plugin_status* status) {
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
  *reduced = all; /* rank 0's slot holds the result */
  return ok(status);
}

/* One collective as a work item of its stream: its arguments, taken at the
 * call (counts copied), its data read and written when the stream runs it. */
typedef struct collective {
  world* w;
  int kind;
  long long number;
  const void* in;
  size_t in_bytes;
  void* out; /* allreduce, broadcast: in == out */
  size_t out_bytes;
  int32_t dtype;
  int32_t op;
  int32_t root;
  int64_t* counts;  /* allgatherv: per rank; alltoallv, reducescatter: recv */
  int64_t* sends;   /* alltoallv: send counts */
} collective;

static int32_t run_allreduce(collective* c, hvd_plugin_status* status) {
  char* reduced = NULL;
  if (reduce_all(c->w, c->number, c->in, c->in_bytes, c->dtype, c->op, &reduced, status) !=
      HVD_OK) {
    return status->code;
  }
  memcpy(c->out, reduced, c->in_bytes);
  free(reduced);
  return ok(status);
}

static int32_t run_reducescatter(collective* c, hvd_plugin_status* status) {
  char* reduced = NULL;
  if (reduce_all(c->w, c->number, c->in, c->in_bytes, c->dtype, c->op, &reduced, status) !=
      HVD_OK) {
    return status->code;
  }
  size_t offset = 0;
  for (int r = 0; r < c->w->rank; ++r) offset += (size_t)c->counts[r];
  memcpy(c->out, reduced + offset, c->out_bytes);
  free(reduced);
  return ok(status);
}

static int32_t run_broadcast(collective* c, hvd_plugin_status* status) {
  world* w = c->w;
  if (w->size == 1) return ok(status);
  if (w->rank == c->root) return publish(w, c->number, -1, c->in, c->in_bytes, status);
  return fetch(w, c->number, c->root, -1, c->out, c->in_bytes, status);
}

static int32_t run_alltoallv(collective* c, hvd_plugin_status* status) {
  world* w = c->w;
  const char* from = c->in;
  const char* mine = NULL;
  for (int r = 0; r < w->size; ++r) {
    if (r == w->rank) {
      mine = from;
    } else if (publish(w, c->number, r, from, (size_t)c->sends[r], status) != HVD_OK) {
      return status->code;
    }
    from += c->sends[r];
  }
  char* at = c->out;
  for (int r = 0; r < w->size; ++r) {
    const size_t n = (size_t)c->counts[r];
    if (r == w->rank) {
      if (n > 0) memcpy(at, mine, n);
    } else if (fetch(w, c->number, r, w->rank, at, n, status) != HVD_OK) {
      return status->code;
    }
    at += n;
  }
  return ok(status);
}

static int32_t run_barrier(collective* c, hvd_plugin_status* status) {
  int64_t* counts = calloc((size_t)c->w->size, sizeof(int64_t));
  char none = 0;
  const int32_t code = exchange(c->w, c->number, &none, 0, &none, counts, status);
  free(counts);
  return code;
}

/* The stream's work item: runs the collective (the store exchange happens
 * here, on the stream's thread), records a failure as the world's
 * asynchronous error (the first one stays) and as the stream's. */
static int run_collective(void* arg, char* error, size_t error_len) {
  collective* c = arg;
  world* w = c->w;
  hvd_plugin_status status = {0};
  int32_t code = HVD_OK;
  pthread_mutex_lock(&w->mu);
  if (w->async_code != HVD_OK) {
    code = fail(&status, w->async_code, w->async_message); /* failed earlier: runs nothing */
  }
  pthread_mutex_unlock(&w->mu);
  if (code == HVD_OK && atomic_load(&w->aborted)) {
    code = fail(&status, HVD_ERR_ABORTED, "fakecuda: aborted");
  }
  if (code == HVD_OK) {
    die_if_asked(w, c->number);
    switch (c->kind) {
      case ALLREDUCE: code = run_allreduce(c, &status); break;
      case REDUCESCATTER: code = run_reducescatter(c, &status); break;
      case ALLGATHERV:
        code = exchange(w, c->number, c->in, c->in_bytes, c->out, c->counts, &status);
        break;
      case BROADCAST: code = run_broadcast(c, &status); break;
      case ALLTOALLV: code = run_alltoallv(c, &status); break;
      default: code = run_barrier(c, &status); break;
    }
  }
  pthread_mutex_lock(&w->mu);
  if (code != HVD_OK && w->async_code == HVD_OK) {
    w->async_code = code;
    snprintf(w->async_message, sizeof(w->async_message), "%s (%s number %lld)", status.message,
             kOpNames[c->kind], c->number);
  }
  --w->pending;
  pthread_cond_broadcast(&w->changed);
  pthread_mutex_unlock(&w->mu);
  if (code != HVD_OK) snprintf(error, error_len, "%s", status.message);
  free(c->counts);
  free(c->sends);
  free(c);
  return code != HVD_OK;
}

static int64_t* copied(const int64_t* counts, int n) {
  if (counts == NULL) return NULL;
  int64_t* copy = malloc(sizeof(int64_t) * (size_t)(n > 0 ? n : 1));
  if (n > 0) memcpy(copy, counts, sizeof(int64_t) * (size_t)n);
  return copy;
}

/* Enqueues `c` (malloc'ed, counts copied) on `stream` after its earlier
 * work, as NCCL does: counts the call, refuses after an abort or an
 * earlier failure, numbers it. ABI version 4 returns at once (the result
 * is there once the stream ran it: an event recorded after it says when);
 * older versions wait for it, within the world's timeout. */
static int32_t issue(collective* c, void* stream, hvd_plugin_status* status) {
  world* w = c->w;
  atomic_fetch_add(&calls[c->kind], 1);
  fakecuda_note_stream(0, stream);
  int32_t code = HVD_OK;
  fake_stream* s = fake_stream_of(stream);
  if (s == NULL) {
    char message[128];
    snprintf(message, sizeof(message), "fakecuda: a collective on %p, which is no stream",
             stream);
    code = fail(status, HVD_ERR_INVALID_ARGUMENT, message);
  } else if (atomic_load(&w->aborted)) {
    code = fail(status, HVD_ERR_ABORTED, "fakecuda: aborted");
  } else {
    pthread_mutex_lock(&w->mu);
    if (w->async_code != HVD_OK) code = fail(status, w->async_code, w->async_message);
    pthread_mutex_unlock(&w->mu);
  }
  if (code != HVD_OK) {
    free(c->counts);
    free(c->sends);
    free(c);
    return code;
  }
  pthread_mutex_lock(&w->mu);
  c->number = w->next_op++;
  ++w->pending;
  pthread_mutex_unlock(&w->mu);
  const fake_range touched[2] = {{c->in, c->in_bytes}, {c->out, c->out_bytes}};
  fake_stream_enqueue_touching(s, run_collective, c, 0, touched, 2);
#if FAKECUDA_ABI_VERSION >= 4
  if (c->kind != BARRIER) return ok(status);
#endif
  /* Waits for it (a barrier always: it blocks the host, as NCCL's). */
  code = fake_stream_synchronize(s, w->timeout_ms, status->message, sizeof(status->message));
  pthread_mutex_lock(&w->mu);
  if (w->async_code != HVD_OK) code = fail(status, w->async_code, w->async_message);
  pthread_mutex_unlock(&w->mu);
  status->code = code;
  return code;
}

static collective* new_collective(void* handle, int kind) {
  collective* c = calloc(1, sizeof(collective));
  c->w = handle;
  c->kind = kind;
  return c;
}

static int32_t refuse_type(int32_t dtype, int kind, hvd_plugin_status* status) {
  atomic_fetch_add(&calls[kind], 1);
  (void)dtype;
  return fail(status, HVD_ERR_INVALID_ARGUMENT,
              "fakecuda: this test plugin reduces integers, float32 and float64 only");
}

static int32_t allreduce(void* handle, void* data, size_t bytes, int32_t dtype, int32_t op,
                         void* stream, hvd_plugin_status* status) {
  if (element_size(dtype) == 0) return refuse_type(dtype, ALLREDUCE, status);
  collective* c = new_collective(handle, ALLREDUCE);
  c->in = data;
  c->in_bytes = bytes;
  c->out = data;
  c->out_bytes = bytes;
  c->dtype = dtype;
  c->op = op;
  return issue(c, stream, status);
}

static int32_t reducescatter(void* handle, const void* in, size_t in_bytes, void* out,
                             size_t out_bytes, const int64_t* recv_counts, int32_t ranks,
                             int32_t dtype, int32_t op, void* stream, hvd_plugin_status* status) {
  if (element_size(dtype) == 0) return refuse_type(dtype, REDUCESCATTER, status);
  collective* c = new_collective(handle, REDUCESCATTER);
  c->in = in;
  c->in_bytes = in_bytes;
  c->out = out;
  c->out_bytes = out_bytes;
  c->dtype = dtype;
  c->op = op;
  c->counts = copied(recv_counts, ranks);
  return issue(c, stream, status);
}

static int32_t allgatherv(void* handle, const void* in, size_t in_bytes, void* out,
                          size_t out_bytes, const int64_t* counts, int32_t ranks, void* stream,
                          hvd_plugin_status* status) {
  collective* c = new_collective(handle, ALLGATHERV);
  c->in = in;
  c->in_bytes = in_bytes;
  c->out = out;
  c->out_bytes = out_bytes;
  c->counts = copied(counts, ranks);
  return issue(c, stream, status);
}

static int32_t broadcast(void* handle, void* data, size_t bytes, int32_t root, void* stream,
                         hvd_plugin_status* status) {
  collective* c = new_collective(handle, BROADCAST);
  c->in = data;
  c->in_bytes = bytes;
  c->out = data;
  c->out_bytes = bytes;
  c->root = root;
  return issue(c, stream, status);
}

static int32_t alltoallv(void* handle, const void* in, size_t in_bytes, const int64_t* send_counts,
                         void* out, size_t out_bytes, const int64_t* recv_counts, int32_t ranks,
                         void* stream, hvd_plugin_status* status) {
  collective* c = new_collective(handle, ALLTOALLV);
  c->in = in;
  c->in_bytes = in_bytes;
  c->out = out;
  c->out_bytes = out_bytes;
  c->sends = copied(send_counts, ranks);
  c->counts = copied(recv_counts, ranks);
  return issue(c, stream, status);
}

static int32_t barrier(void* handle, void* stream, hvd_plugin_status* status) {
  return issue(new_collective(handle, BARRIER), stream, status);
}

/* ABI version 4: the first failure of a collective that ran on its stream
 * after the call returned. Never blocks. */
__attribute__((unused)) static int32_t async_error(void* handle, hvd_plugin_status* status) {
  world* w = handle;
  pthread_mutex_lock(&w->mu);
  const int32_t code =
      w->async_code != HVD_OK ? fail(status, w->async_code, w->async_message) : ok(status);
  pthread_mutex_unlock(&w->mu);
  return code;
}

static void abort_world(void* handle, int32_t code, const char* reason) {
  (void)code;
  (void)reason;
  atomic_store(&((world*)handle)->aborted, 1);
}

/* Waits until the world's enqueued collectives ran, at most ms; 1 if so. */
static int drained(world* w, long long ms) {
  const long long deadline = now_ms() + ms;
  pthread_mutex_lock(&w->mu);
  while (w->pending > 0 && now_ms() < deadline) {
    pthread_mutex_unlock(&w->mu);
    struct timespec pause = {0, 5 * 1000000L};
    nanosleep(&pause, NULL);
    pthread_mutex_lock(&w->mu);
  }
  const int done = w->pending == 0;
  pthread_mutex_unlock(&w->mu);
  return done;
}

/* Collectives may still be enqueued (ABI version 4): wait for them (the
 * world's timeout), then abort them (they end within a 50 ms slice); a
 * world whose work never ends is left allocated rather than freed under
 * its stream. */
static void destroy(void* handle) {
  world* w = handle;
  if (!drained(w, w->timeout_ms)) {
    atomic_store(&w->aborted, 1);
    if (!drained(w, 5000)) {
      fprintf(stderr, "fakecuda: a world destroyed with collectives that never ended\n");
      return;
    }
  }
  pthread_mutex_destroy(&w->mu);
  pthread_cond_destroy(&w->changed);
  free(w);
}

static int32_t can_run(char* why, size_t why_len) {
  (void)why;
  (void)why_len;
  return 1; /* host memory: runs anywhere */
}

static int32_t make_world(const hvd_plugin_world* info, void** handle,
                          hvd_plugin_status* status) {
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
  pthread_mutex_init(&w->mu, NULL);
  pthread_cond_init(&w->changed, NULL);
  snprintf(w->prefix, sizeof(w->prefix), "%s", info->key_prefix);
  *handle = w;
  return ok(status);
}

static int32_t create(const hvd_plugin_world* info, void** handle, hvd_plugin_status* status) {
  atomic_fetch_add(&calls[CREATE], 1);
  return make_world(info, handle, status);
}

/* ABI version 4: the in-place shrink. What it models of ncclCommShrink:
 * the survivors get a communicator of the new world without a new
 * bootstrap (no unique id exchanged) and may shrink an aborted one (NCCL's
 * NCCL_SHRINK_ABORT); the old one stays to be destroyed. Here a world of
 * the new ranks over the new world's store and key prefix (its op numbers
 * start again there); the excluded ranks are checked against the old
 * world. Counted as fakecuda_calls("shrink"). */
__attribute__((unused)) static int32_t shrink(void* handle, const hvd_plugin_world* info,
                                              const int32_t* excluded, int32_t n_excluded,
                                              void** new_handle, hvd_plugin_status* status) {
  atomic_fetch_add(&calls[SHRINK], 1);
  const world* old = handle;
  for (int32_t i = 0; i < n_excluded; ++i) {
    if (excluded[i] < 0 || excluded[i] >= old->size || excluded[i] == old->rank ||
        (i > 0 && excluded[i] <= excluded[i - 1])) {
      return fail(status, HVD_ERR_INVALID_ARGUMENT,
                  "fakecuda: shrink's excluded ranks are not ascending peers of the world");
    }
  }
  if (info->size != old->size - n_excluded) {
    return fail(status, HVD_ERR_INVALID_ARGUMENT,
                "fakecuda: shrink's new world is not the old one less the excluded ranks");
  }
  return make_world(info, new_handle, status);
}

/* Older versions: the same struct, cut at their struct_size (the fields
 * past it are left NULL and never read). */
EXPORT const hvd_transport_plugin_t hvd_transport_plugin = {
#if FAKECUDA_ABI_VERSION == 1
    .struct_size = offsetof(hvd_transport_plugin_t, destroy) + sizeof(void (*)(void*)),
    .abi_version = 1,
#elif FAKECUDA_ABI_VERSION == 3
    .struct_size = offsetof(hvd_transport_plugin_t, device_stream_wait) + sizeof(void*),
    .abi_version = 3,
#else
    .struct_size = sizeof(hvd_transport_plugin_t),
    .abi_version = 4,
#endif
    .name = "fakecuda",
    .device = HVD_PLUGIN_DEVICE_CUDA,
    .can_run = can_run,
    .create = create,
    .allreduce = allreduce,
    .allgatherv = allgatherv,
    .broadcast = broadcast,
    .alltoallv = alltoallv,
    .reducescatter = reducescatter,
    .barrier = barrier,
    .abort = abort_world,
    .destroy = destroy,
#if FAKECUDA_ABI_VERSION >= 2
    .device_open = fakecuda_device_open,
    .device_close = fakecuda_device_close,
    .device_alloc = fakecuda_device_alloc,
    .device_free = fakecuda_device_free,
    .device_copy = fakecuda_device_copy,
    .device_scale = fakecuda_device_scale,
    .device_synchronize = fakecuda_device_synchronize,
    .device_comm_stream = fakecuda_device_comm_stream,
    .device_stream_wait = fakecuda_device_stream_wait,
#endif
#if FAKECUDA_ABI_VERSION >= 4
    .async_error = async_error,
    .device_event_create = fakecuda_device_event_create,
    .device_event_destroy = fakecuda_device_event_destroy,
    .device_event_record = fakecuda_device_event_record,
    .device_event_query = fakecuda_device_event_query,
    .device_copy_on_device = fakecuda_device_copy_on_device,
    .shrink = shrink,
#endif
};
