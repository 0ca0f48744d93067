/* fakecuda's device functions (plugin ABI version 3): a "device" whose
 * memory is host memory and whose streams are asynchronous
 * (fake_cuda_streams.h): device_copy and device_scale only enqueue their
 * work on the stream, which runs it later on its own thread;
 * device_synchronize waits for it; each context has a communication stream
 * (device_comm_stream) that device_stream_wait orders after another stream
 * or an event. Freed memory is poisoned (every byte 0xA5) and kept a while
 * before it really goes, so work that reads it after the free reads
 * garbage and fails its test instead of passing by luck.
 * device_scale is runtime/engine/scale.h's finish_reduction for the types the fake
 * reduces (integers, float32, float64). Each call is counted
 * (fakecuda_device_calls("copy"), ...), with the copy entries and the
 * pinned allocations, so tests prove the engine used them. ABI version 4:
 * events (device_event_*), and device_copy_on_device, counted as
 * "copy_on_device" besides "copy" (every copy call), while device_copy
 * counts every entry it classifies as "classified". Copies and scales note the cached blocks they touch
 * (fake_cuda_cache.h). */
#include <pthread.h>
#include <stdatomic.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "fake_cuda_device.h"
#include "fake_cuda_streams.h"
#include "plugin_status.h"

#define EXPORT __attribute__((visibility("default")))

enum { OPEN, CLOSE, ALLOC, ALLOC_PINNED, FREE, COPY, COPY_ENTRIES, SCALE, SYNCHRONIZE, LIVE,
       STREAM_WAIT, EVENT_WAIT, COPY_ON_DEVICE, CLASSIFIED, EVENT_CREATE, EVENT_DESTROY,
       EVENT_RECORD, EVENT_QUERY, KINDS };
static const char* const kKinds[KINDS] = {"open",  "close",        "alloc",
                                          "alloc_pinned", "free", "copy", "copy_entries",
                                          "scale", "synchronize", "live_allocations",
                                          "stream_wait", "event_wait", "copy_on_device",
                                          "classified", "event_create", "event_destroy",
                                          "event_record", "event_query"};
static atomic_llong counts[KINDS];

/* This process's count of one kind of device call; -1 for an unknown kind. */
EXPORT long long fakecuda_device_calls(const char* kind) {
  for (int i = 0; i < KINDS; ++i) {
    if (strcmp(kind, kKinds[i]) == 0) return atomic_load(&counts[i]);
  }
  return -1;
}

static _Atomic(void*) last_streams[2]; /* 0: collectives, 1: device functions */
static _Atomic(void*) last_comm_stream;

void fakecuda_note_stream(int device_call, void* stream) {
  atomic_store(&last_streams[device_call ? 1 : 0], stream);
}

/* The stream of the last collective ("collective") or device copy/scale
 * ("device") of this process. */
EXPORT void* fakecuda_last_stream(const char* kind) {
  return atomic_load(&last_streams[strcmp(kind, "device") == 0 ? 1 : 0]);
}

/* The communication stream of the last context opened. */
EXPORT void* fakecuda_comm_stream(void) { return atomic_load(&last_comm_stream); }

typedef struct context {
  int device;
  int64_t timeout_ms;
  fake_stream* comm; /* the communication stream */
} context;

int32_t fakecuda_device_open(int32_t device, int64_t timeout_ms, void** out,
                             hvd_plugin_status* status) {
  atomic_fetch_add(&counts[OPEN], 1);
  context* c = calloc(1, sizeof(context));
  c->device = device;
  c->timeout_ms = timeout_ms > 0 ? timeout_ms : 30000;
  c->comm = fake_stream_create();
  atomic_store(&last_comm_stream, c->comm);
  *out = c;
  return ok(status);
}

void fakecuda_device_close(void* c) {
  atomic_fetch_add(&counts[CLOSE], 1);
  fake_stream_destroy(((context*)c)->comm);
  free(c);
}

/* Every block starts with its size, so a free can poison all of it. */
#define HEADER 64
#define QUARANTINE 64
static pthread_mutex_t quarantine_mu = PTHREAD_MUTEX_INITIALIZER;
static void* quarantine[QUARANTINE]; /* freed blocks, poisoned, freed for real later */
static int quarantine_next;

int32_t fakecuda_device_alloc(void* c, size_t bytes, int32_t pinned_host, void** memory,
                              hvd_plugin_status* status) {
  (void)c;
  atomic_fetch_add(&counts[pinned_host ? ALLOC_PINNED : ALLOC], 1);
  char* block = malloc(HEADER + (bytes > 0 ? bytes : 1));
  if (block == NULL) return fail(status, HVD_ERR_INTERNAL, "fakecuda: out of memory");
  memcpy(block, &bytes, sizeof(bytes));
  *memory = block + HEADER;
  atomic_fetch_add(&counts[LIVE], 1);
  return ok(status);
}

void fakecuda_device_free(void* c, void* memory, int32_t pinned_host) {
  (void)c;
  (void)pinned_host;
  if (memory == NULL) return;
  atomic_fetch_add(&counts[FREE], 1);
  atomic_fetch_sub(&counts[LIVE], 1);
  char* block = (char*)memory - HEADER;
  size_t bytes = 0;
  memcpy(&bytes, block, sizeof(bytes));
  memset(memory, 0xA5, bytes > 0 ? bytes : 1); /* a late reader reads garbage */
  pthread_mutex_lock(&quarantine_mu);
  free(quarantine[quarantine_next]);
  quarantine[quarantine_next] = block;
  quarantine_next = (quarantine_next + 1) % QUARANTINE;
  pthread_mutex_unlock(&quarantine_mu);
}

/* The stream behind `handle`, or a failure naming the call. */
static fake_stream* stream_for(void* handle, const char* call, hvd_plugin_status* status) {
  fake_stream* s = fake_stream_of(handle);
  if (s == NULL) {
    char message[128];
    snprintf(message, sizeof(message), "fakecuda: %s on %p, which is no stream", call, handle);
    fail(status, HVD_ERR_INVALID_ARGUMENT, message);
  }
  return s;
}

typedef struct copy_work {
  size_t n;
  hvd_plugin_copy copies[]; /* taken by value: the caller's array may go */
} copy_work;

static int run_copies(void* arg, char* error, size_t error_len) {
  (void)error;
  (void)error_len;
  copy_work* w = arg;
  for (size_t i = 0; i < w->n; ++i) {
    if (w->copies[i].bytes > 0) memmove(w->copies[i].dst, w->copies[i].src, w->copies[i].bytes);
  }
  return 0;
}

/* Enqueues the copies on `stream`, noting the cached blocks they touch. */
static int32_t enqueue_copies(const hvd_plugin_copy* copies, size_t n, void* stream,
                              const char* call, hvd_plugin_status* status) {
  fakecuda_note_stream(1, stream);
  atomic_fetch_add(&counts[COPY_ENTRIES], (long long)n);
  fake_stream* s = stream_for(stream, call, status);
  if (s == NULL) return status->code;
  copy_work* w = malloc(sizeof(copy_work) + n * sizeof(hvd_plugin_copy));
  w->n = n;
  if (n > 0) memcpy(w->copies, copies, n * sizeof(hvd_plugin_copy));
  fake_range* touched = malloc(sizeof(fake_range) * (2 * n + 1));
  for (size_t i = 0; i < n; ++i) {
    touched[2 * i] = (fake_range){copies[i].dst, copies[i].bytes};
    touched[2 * i + 1] = (fake_range){copies[i].src, copies[i].bytes};
  }
  fake_stream_enqueue_touching(s, run_copies, w, 1, touched, 2 * n);
  free(touched);
  return ok(status);
}

/* Every entry is classified (cudaPointerGetAttributes in the NCCL plugin):
 * counted as "classified", so tests see the engine avoid it. */
int32_t fakecuda_device_copy(void* c, const hvd_plugin_copy* copies, size_t n, void* stream,
                             hvd_plugin_status* status) {
  (void)c;
  atomic_fetch_add(&counts[COPY], 1);
  atomic_fetch_add(&counts[CLASSIFIED], (long long)n);
  return enqueue_copies(copies, n, stream, "device_copy", status);
}

/* ABI version 4: the caller says every entry is device memory; nothing is
 * classified. */
int32_t fakecuda_device_copy_on_device(void* c, const hvd_plugin_copy* copies, size_t n,
                                       void* stream, hvd_plugin_status* status) {
  (void)c;
  atomic_fetch_add(&counts[COPY], 1);
  atomic_fetch_add(&counts[COPY_ON_DEVICE], 1);
  return enqueue_copies(copies, n, stream, "device_copy_on_device", status);
}

/* C's conversion of a double through int64 (NaN and beyond: int64's
 * minimum), as runtime/engine/scale.cc's truncate_to. */
static int64_t truncated(double x) {
  const double two63 = 9223372036854775808.0;
  return x >= -two63 && x < two63 ? (int64_t)x : INT64_MIN;
}

#define SCALE_INT(T)                                                                   \
  {                                                                                    \
    T* d = (T*)data;                                                                   \
    for (size_t i = 0; i < count; ++i) {                                               \
      d[i] = factor != 1.0 ? (T)truncated((double)d[i] * (factor / divisor))           \
                           : (T)(d[i] / divisor);                                      \
    }                                                                                  \
    break;                                                                             \
  }
#define SCALE_FLOAT(T)                                                                 \
  {                                                                                    \
    T* d = (T*)data;                                                                   \
    for (size_t i = 0; i < count; ++i) {                                               \
      d[i] = factor != 1.0 ? d[i] * (T)(factor / divisor) : (T)(d[i] / divisor);       \
    }                                                                                  \
    break;                                                                             \
  }

static size_t element_bytes(int32_t dtype) {
  switch (dtype) {
    case HVD_UINT8: case HVD_INT8: return 1;
    case HVD_INT16: return 2;
    case HVD_INT32: case HVD_FLOAT32: return 4;
    case HVD_INT64: case HVD_FLOAT64: return 8;
    default: return 0;
  }
}

typedef struct scale_work {
  void* data;
  size_t count;
  int32_t dtype;
  int32_t divisor;
  double factor;
} scale_work;

static int run_scale(void* arg, char* error, size_t error_len) {
  (void)error;
  (void)error_len;
  const scale_work* w = arg;
  void* data = w->data;
  const size_t count = w->count;
  const int32_t divisor = w->divisor;
  const double factor = w->factor;
  switch (w->dtype) {
    case HVD_UINT8: SCALE_INT(uint8_t)
    case HVD_INT8: SCALE_INT(int8_t)
    case HVD_INT16: SCALE_INT(int16_t)
    case HVD_INT32: SCALE_INT(int32_t)
    case HVD_INT64: SCALE_INT(int64_t)
    case HVD_FLOAT32: SCALE_FLOAT(float)
    case HVD_FLOAT64: SCALE_FLOAT(double)
    default: break; /* refused before it was enqueued */
  }
  return 0;
}

int32_t fakecuda_device_scale(void* c, void* data, size_t count, int32_t dtype,
                              int32_t divisor, double factor, void* stream,
                              hvd_plugin_status* status) {
  (void)c;
  atomic_fetch_add(&counts[SCALE], 1);
  fakecuda_note_stream(1, stream);
  if (divisor <= 0) return fail(status, HVD_ERR_INVALID_ARGUMENT, "fakecuda: divisor <= 0");
  if (divisor == 1 && factor == 1.0) return ok(status);
  switch (dtype) {
    case HVD_UINT8: case HVD_INT8: case HVD_INT16: case HVD_INT32: case HVD_INT64:
    case HVD_FLOAT32: case HVD_FLOAT64: break;
    default:
      return fail(status, HVD_ERR_INVALID_ARGUMENT,
                  "fakecuda: device_scale does integers, float32 and float64 only");
  }
  fake_stream* s = stream_for(stream, "device_scale", status);
  if (s == NULL) return status->code;
  scale_work* w = malloc(sizeof(scale_work));
  *w = (scale_work){data, count, dtype, divisor, factor};
  const fake_range touched = {data, count * element_bytes(dtype)};
  fake_stream_enqueue_touching(s, run_scale, w, 1, &touched, 1);
  return ok(status);
}

int32_t fakecuda_device_synchronize(void* c, void* stream, hvd_plugin_status* status) {
  atomic_fetch_add(&counts[SYNCHRONIZE], 1);
  fake_stream* s = stream_for(stream, "device_synchronize", status);
  if (s == NULL) return status->code;
  const int32_t code = fake_stream_synchronize(s, ((context*)c)->timeout_ms, status->message,
                                               sizeof(status->message));
  status->code = code;
  return code;
}

int32_t fakecuda_device_comm_stream(void* c, void** stream, hvd_plugin_status* status) {
  *stream = ((context*)c)->comm;
  return ok(status);
}

int32_t fakecuda_device_stream_wait(void* c, void* waiter, void* stream, void* event,
                                    hvd_plugin_status* status) {
  (void)c;
  fake_stream* w = stream_for(waiter, "device_stream_wait (the waiter)", status);
  if (w == NULL) return status->code;
  if (event != NULL) {
    atomic_fetch_add(&counts[EVENT_WAIT], 1);
    fake_stream_wait_event(w, event); /* made by fakecuda_event_create */
    return ok(status);
  }
  atomic_fetch_add(&counts[STREAM_WAIT], 1);
  fake_stream* s = stream_for(stream, "device_stream_wait", status);
  if (s == NULL) return status->code;
  fake_stream_wait_stream(w, s);
  return ok(status);
}

/* ---- ABI version 4: events (fake_cuda_streams.h's, the same as the tests'
 * fakecuda_event_create) ------------------------------------------------ */

int32_t fakecuda_device_event_create(void* c, void** event, hvd_plugin_status* status) {
  (void)c;
  atomic_fetch_add(&counts[EVENT_CREATE], 1);
  *event = fake_event_create();
  return ok(status);
}

void fakecuda_device_event_destroy(void* c, void* event) {
  (void)c;
  if (event == NULL) return;
  atomic_fetch_add(&counts[EVENT_DESTROY], 1);
  fake_event_destroy(event);
}

int32_t fakecuda_device_event_record(void* c, void* event, void* stream,
                                     hvd_plugin_status* status) {
  (void)c;
  atomic_fetch_add(&counts[EVENT_RECORD], 1);
  if (event == NULL) return fail(status, HVD_ERR_INVALID_ARGUMENT, "fakecuda: no event");
  fake_stream* s = stream_for(stream, "device_event_record", status);
  if (s == NULL) return status->code;
  fake_event_record(event, s);
  return ok(status);
}

int32_t fakecuda_device_event_query(void* c, void* event, int32_t* done,
                                    hvd_plugin_status* status) {
  (void)c;
  atomic_fetch_add(&counts[EVENT_QUERY], 1);
  if (event == NULL) return fail(status, HVD_ERR_INVALID_ARGUMENT, "fakecuda: no event");
  *done = fake_event_done(event);
  return ok(status);
}
