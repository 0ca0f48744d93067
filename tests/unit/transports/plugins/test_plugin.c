/* A transport plugin for the loader's tests, in plain C (the ABI header must
 * build as C): "testcpu", a CPU transport for a world of one rank. The
 * variants, one library each (CMakeLists.txt), set:
 *   TEST_PLUGIN_ABI_VERSION  another abi_version (a too-new plugin);
 *   TEST_PLUGIN_CANNOT_RUN   can_run() says no, with a reason;
 *   TEST_PLUGIN_NO_SYMBOL    the plugin object is not exported.
 * create() puts a key in the store and reads it back when there is one;
 * allreduce with HVD_OP_PRODUCT fails (to test error reporting); one with
 * HVD_OP_MAX succeeds but leaves an asynchronous error (ABI version 4's
 * async_error: a failure that shows after the call returned); shrink says
 * HVD_ERR_UNIMPLEMENTED (a library without it). */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "plugin_status.h"
#include "transports/plugin/transport_plugin.h"

#ifndef TEST_PLUGIN_ABI_VERSION
#define TEST_PLUGIN_ABI_VERSION HVD_TRANSPORT_PLUGIN_ABI_VERSION
#endif

typedef struct world_of_one {
  int aborted;
  int async_failed;
} world_of_one;


static int32_t check(void* handle, hvd_plugin_status* status) {
  if (((world_of_one*)handle)->aborted) return fail(status, HVD_ERR_ABORTED, "aborted");
  return ok(status);
}

static int32_t can_run(char* why, size_t why_len) {
#ifdef TEST_PLUGIN_CANNOT_RUN
  snprintf(why, why_len, "test plugin: no such device here");
  return 0;
#else
  (void)why;
  (void)why_len;
  return 1;
#endif
}

static int32_t create(const hvd_plugin_world* world, void** handle, hvd_plugin_status* status) {
  if (world->size != 1) return fail(status, HVD_ERR_INVALID_ARGUMENT, "only a world of one");
  if (world->store.self != NULL) {
    char key[256];
    char value[16];
    size_t length = 0;
    snprintf(key, sizeof(key), "%stestcpu/id", world->key_prefix);
    if (world->store.set(world->store.self, key, "id-42", 5, status) != HVD_OK) return status->code;
    if (world->store.get(world->store.self, key, world->timeout_ms, value, sizeof(value), &length,
                         status) != HVD_OK) {
      return status->code;
    }
    if (length != 5 || memcmp(value, "id-42", 5) != 0) {
      return fail(status, HVD_ERR_INTERNAL, "the store gave back another value");
    }
  }
  *handle = calloc(1, sizeof(world_of_one));
  return ok(status);
}

static int32_t allreduce(void* handle, void* data, size_t bytes, int32_t dtype, int32_t op,
                         void* stream, hvd_plugin_status* status) {
  /* A refusal before anything ran (as nccl refuses int16): not sticky. */
  if (dtype == HVD_INT16) return fail(status, HVD_ERR_INVALID_ARGUMENT, "no int16 in tests");
  if (op == HVD_OP_PRODUCT) return fail(status, HVD_ERR_UNIMPLEMENTED, "no product in tests");
  if (op == HVD_OP_MAX) ((world_of_one*)handle)->async_failed = 1;
  return check(handle, status); /* one rank: the sum is the input */
}

static int32_t allgatherv(void* handle, const void* in, size_t in_bytes, void* out,
                          size_t out_bytes, const int64_t* counts, int32_t ranks, void* stream,
                          hvd_plugin_status* status) {
  if (check(handle, status) != HVD_OK) return status->code;
  memcpy(out, in, in_bytes);
  return ok(status);
}

static int32_t broadcast(void* handle, void* data, size_t bytes, int32_t root, void* stream,
                         hvd_plugin_status* status) {
  return check(handle, status);
}

static int32_t alltoallv(void* handle, const void* in, size_t in_bytes, const int64_t* send_counts,
                         void* out, size_t out_bytes, const int64_t* recv_counts, int32_t ranks,
                         void* stream, hvd_plugin_status* status) {
  if (check(handle, status) != HVD_OK) return status->code;
  memcpy(out, in, in_bytes);
  return ok(status);
}

static int32_t reducescatter(void* handle, const void* in, size_t in_bytes, void* out,
                             size_t out_bytes, const int64_t* recv_counts, int32_t ranks,
                             int32_t dtype, int32_t op, void* stream, hvd_plugin_status* status) {
  if (check(handle, status) != HVD_OK) return status->code;
  memcpy(out, in, out_bytes);
  return ok(status);
}

static int32_t barrier(void* handle, void* stream, hvd_plugin_status* status) {
  return check(handle, status);
}

static void abort_world(void* handle, int32_t code, const char* reason) {
  ((world_of_one*)handle)->aborted = 1;
}

static void destroy(void* handle) { free(handle); }

static int32_t async_error(void* handle, hvd_plugin_status* status) {
  if (((world_of_one*)handle)->async_failed) {
    return fail(status, HVD_ERR_UNAVAILABLE, "a peer went away after the call");
  }
  return ok(status);
}

static int32_t shrink(void* handle, const hvd_plugin_world* world, const int32_t* excluded,
                      int32_t n_excluded, void** new_handle, hvd_plugin_status* status) {
  return fail(status, HVD_ERR_UNIMPLEMENTED, "no shrink in this library");
}

#ifdef TEST_PLUGIN_NO_SYMBOL
#define PLUGIN_OBJECT not_the_plugin_symbol
#else
#define PLUGIN_OBJECT hvd_transport_plugin
#endif

__attribute__((visibility("default"))) const hvd_transport_plugin_t PLUGIN_OBJECT = {
    sizeof(hvd_transport_plugin_t),
    TEST_PLUGIN_ABI_VERSION,
    "testcpu",
    HVD_PLUGIN_DEVICE_CPU,
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
    /* A CPU plugin: no device_* functions (ABI versions 2 and 3). */
    NULL, NULL, NULL, NULL, NULL, NULL, NULL, NULL, NULL,
    /* ABI version 4: async_error and shrink; no device_event_* or
     * device_copy_on_device (a CPU plugin). */
    async_error, NULL, NULL, NULL, NULL, NULL, shrink,
};
