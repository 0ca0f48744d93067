/* fakecuda's device functions (plugin ABI version 2): a "device" whose
 * memory is host memory. device_alloc is malloc (pinned or not),
 * device_copy memcpy, device_synchronize a no-op (everything is done when
 * it returns), device_scale runtime/scale.h's finish_reduction for the
 * types the fake reduces (integers, float32, float64). Each call is counted
 * (fakecuda_device_calls("copy"), ...), with the copy entries and the
 * pinned allocations, so tests prove the engine used them. */
#include <stdatomic.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "tests/unit/transports/plugins/fake_cuda_device.h"
#include "tests/unit/transports/plugins/plugin_status.h"

#define EXPORT __attribute__((visibility("default")))

enum { OPEN, CLOSE, ALLOC, ALLOC_PINNED, FREE, COPY, COPY_ENTRIES, SCALE, SYNCHRONIZE, LIVE, KINDS };
static const char* const kKinds[KINDS] = {"open",  "close",        "alloc",
                                          "alloc_pinned", "free", "copy", "copy_entries",
                                          "scale", "synchronize", "live_allocations"};
static atomic_llong counts[KINDS];

/* This process's count of one kind of device call; -1 for an unknown kind. */
EXPORT long long fakecuda_device_calls(const char* kind) {
  for (int i = 0; i < KINDS; ++i) {
    if (strcmp(kind, kKinds[i]) == 0) return atomic_load(&counts[i]);
  }
  return -1;
}

static _Atomic(void*) last_streams[2]; /* 0: collectives, 1: device functions */

void fakecuda_note_stream(int device_call, void* stream) {
  atomic_store(&last_streams[device_call ? 1 : 0], stream);
}

/* The stream of the last collective ("collective") or device copy/scale
 * ("device") of this process. */
EXPORT void* fakecuda_last_stream(const char* kind) {
  return atomic_load(&last_streams[strcmp(kind, "device") == 0 ? 1 : 0]);
}

typedef struct context {
  int device;
} context;

int32_t fakecuda_device_open(int32_t device, int64_t timeout_ms, void** out,
                             hvd_plugin_status* status) {
  (void)timeout_ms;
  atomic_fetch_add(&counts[OPEN], 1);
  context* c = calloc(1, sizeof(context));
  c->device = device;
  *out = c;
  return ok(status);
}

void fakecuda_device_close(void* c) {
  atomic_fetch_add(&counts[CLOSE], 1);
  free(c);
}

int32_t fakecuda_device_alloc(void* c, size_t bytes, int32_t pinned_host, void** memory,
                              hvd_plugin_status* status) {
  (void)c;
  atomic_fetch_add(&counts[pinned_host ? ALLOC_PINNED : ALLOC], 1);
  *memory = malloc(bytes > 0 ? bytes : 1);
  if (*memory == NULL) return fail(status, HVD_ERR_INTERNAL, "fakecuda: out of memory");
  atomic_fetch_add(&counts[LIVE], 1);
  return ok(status);
}

void fakecuda_device_free(void* c, void* memory, int32_t pinned_host) {
  (void)c;
  (void)pinned_host;
  if (memory == NULL) return;
  atomic_fetch_add(&counts[FREE], 1);
  atomic_fetch_sub(&counts[LIVE], 1);
  free(memory);
}

int32_t fakecuda_device_copy(void* c, const hvd_plugin_copy* copies, size_t n, void* stream,
                             hvd_plugin_status* status) {
  (void)c;
  (void)stream;
  atomic_fetch_add(&counts[COPY], 1);
  fakecuda_note_stream(1, stream);
  atomic_fetch_add(&counts[COPY_ENTRIES], (long long)n);
  for (size_t i = 0; i < n; ++i) {
    if (copies[i].bytes > 0) memmove(copies[i].dst, copies[i].src, copies[i].bytes);
  }
  return ok(status);
}

/* C's conversion of a double through int64 (NaN and beyond: int64's
 * minimum), as runtime/scale.cc's truncate_to. */
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

int32_t fakecuda_device_scale(void* c, void* data, size_t count, int32_t dtype,
                              int32_t divisor, double factor, void* stream,
                              hvd_plugin_status* status) {
  (void)c;
  (void)stream;
  atomic_fetch_add(&counts[SCALE], 1);
  fakecuda_note_stream(1, stream);
  if (divisor <= 0) return fail(status, HVD_ERR_INVALID_ARGUMENT, "fakecuda: divisor <= 0");
  if (divisor == 1 && factor == 1.0) return ok(status);
  switch (dtype) {
    case HVD_UINT8: SCALE_INT(uint8_t)
    case HVD_INT8: SCALE_INT(int8_t)
    case HVD_INT16: SCALE_INT(int16_t)
    case HVD_INT32: SCALE_INT(int32_t)
    case HVD_INT64: SCALE_INT(int64_t)
    case HVD_FLOAT32: SCALE_FLOAT(float)
    case HVD_FLOAT64: SCALE_FLOAT(double)
    default:
      return fail(status, HVD_ERR_INVALID_ARGUMENT,
                  "fakecuda: device_scale does integers, float32 and float64 only");
  }
  return ok(status);
}

int32_t fakecuda_device_synchronize(void* c, void* stream, hvd_plugin_status* status) {
  (void)c;
  (void)stream;
  atomic_fetch_add(&counts[SYNCHRONIZE], 1);
  return ok(status);
}
