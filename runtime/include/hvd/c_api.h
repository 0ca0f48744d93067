/* The C ABI of libhvd.so. Every function is safe to call from any thread.
 * Functions returning int return 0 on success or an HVD_ERR_* code; the
 * message of the last failure on the calling thread is hvd_last_error().
 * The numeric constants are stable: Python (ctypes) reads them through
 * hvd_constant() rather than copying them. */
#ifndef HVD_C_API_H_
#define HVD_C_API_H_

#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

#define HVD_EXPORT __attribute__((visibility("default")))

/* Element types (hvd::common::DataType). */
#define HVD_UINT8 0
#define HVD_INT8 1
#define HVD_INT16 2
#define HVD_INT32 3
#define HVD_INT64 4
#define HVD_FLOAT16 5
#define HVD_BFLOAT16 6
#define HVD_FLOAT32 7
#define HVD_FLOAT64 8
#define HVD_BOOL 9

/* Reduction operations (hvd::common::ReduceOp). */
#define HVD_OP_SUM 0
#define HVD_OP_AVERAGE 1
#define HVD_OP_MIN 2
#define HVD_OP_MAX 3
#define HVD_OP_PRODUCT 4

/* Error codes (hvd::common::StatusCode). */
#define HVD_OK 0
#define HVD_ERR_INVALID_ARGUMENT 1
#define HVD_ERR_NOT_FOUND 2
#define HVD_ERR_ALREADY_EXISTS 3
#define HVD_ERR_TIMEOUT 4
#define HVD_ERR_UNAVAILABLE 5
#define HVD_ERR_ABORTED 6
#define HVD_ERR_UNAUTHENTICATED 7
#define HVD_ERR_FAILED_PRECONDITION 8
#define HVD_ERR_CANCELLED 9
#define HVD_ERR_UNIMPLEMENTED 10
#define HVD_ERR_INTERNAL 11

/* Joins the job described by the HVD_* environment (or a world of size 1
 * when there is none). Calling it when already initialized is a no-op. */
HVD_EXPORT int hvd_init(void);
/* Tears down the transport and leaves the job; init() may be called again. */
HVD_EXPORT int hvd_shutdown(void);
HVD_EXPORT int hvd_is_initialized(void);

/* -1 when not initialized. */
HVD_EXPORT int hvd_rank(void);
HVD_EXPORT int hvd_size(void);
HVD_EXPORT int hvd_local_rank(void);
HVD_EXPORT int hvd_local_size(void);
HVD_EXPORT int hvd_cross_rank(void);
HVD_EXPORT int hvd_cross_size(void);

/* In place over `count` elements. */
HVD_EXPORT int hvd_allreduce(void* data, int64_t count, int dtype, int op);
/* In place: root's `count` elements replace everyone's. */
HVD_EXPORT int hvd_broadcast(void* data, int64_t count, int dtype, int root);
/* Rank r contributes counts[r] elements (counts has hvd_size() entries; NULL
 * means every rank contributes `count`); `out` receives them in rank order. */
HVD_EXPORT int hvd_allgather(const void* in, int64_t count, int dtype, void* out,
                             const int64_t* counts);
HVD_EXPORT int hvd_barrier(void);

/* Looks up the constant called `name` ("HVD_FLOAT32", "HVD_OP_SUM",
 * "HVD_ERR_TIMEOUT", ...) into *value: HVD_OK, or HVD_ERR_NOT_FOUND when
 * there is no such constant. */
HVD_EXPORT int hvd_constant(const char* name, int64_t* value);

/* The message of the last failed call on this thread ("" if none). */
HVD_EXPORT const char* hvd_last_error(void);
HVD_EXPORT const char* hvd_version(void);

#ifdef __cplusplus
}
#endif

#endif /* HVD_C_API_H_ */
