/* The numeric codes shared across hvd's C boundaries: element types, reduce
 * operations and status codes. The C ABI of libhvd.so (hvd/c_api.h) and the
 * transport plugin ABI (transports/plugin/transport_plugin.h) both use them,
 * and they equal the C++ enums (hvd::common::DataType and ReduceOp in
 * common/data_type.h, StatusCode in common/status.h), which libhvd checks
 * at compile time (runtime/c_api_constants.cc).
 *
 * A bottom header: plain C, it includes nothing, so every layer (transports
 * and their plugins included) can use the codes without reaching up to the
 * runtime's headers. The values are stable ABI: never renumbered. */
#ifndef HVD_CODES_H_
#define HVD_CODES_H_

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

#endif /* HVD_CODES_H_ */
