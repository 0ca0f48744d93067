/* fakecuda's device_* functions (fake_cuda_device.c), for its plugin struct. */
#ifndef HVD_FAKE_CUDA_DEVICE_H_
#define HVD_FAKE_CUDA_DEVICE_H_

#include "transports/plugin/transport_plugin.h"

/* Records the stream of a collective (device_call 0) or device call (1). */
void fakecuda_note_stream(int device_call, void* stream);
int32_t fakecuda_device_open(int32_t device, int64_t timeout_ms, void** context,
                             hvd_plugin_status* status);
void fakecuda_device_close(void* context);
int32_t fakecuda_device_alloc(void* context, size_t bytes, int32_t pinned_host, void** memory,
                              hvd_plugin_status* status);
void fakecuda_device_free(void* context, void* memory, int32_t pinned_host);
int32_t fakecuda_device_copy(void* context, const hvd_plugin_copy* copies, size_t n, void* stream,
                             hvd_plugin_status* status);
int32_t fakecuda_device_scale(void* context, void* data, size_t count, int32_t dtype,
                              int32_t divisor, double factor, void* stream,
                              hvd_plugin_status* status);
int32_t fakecuda_device_synchronize(void* context, void* stream, hvd_plugin_status* status);
int32_t fakecuda_device_comm_stream(void* context, void** stream, hvd_plugin_status* status);
int32_t fakecuda_device_stream_wait(void* context, void* waiter, void* stream, void* event,
                                    hvd_plugin_status* status);
int32_t fakecuda_device_copy_on_device(void* context, const hvd_plugin_copy* copies, size_t n,
                                       void* stream, hvd_plugin_status* status);
int32_t fakecuda_device_event_create(void* context, void** event, hvd_plugin_status* status);
void fakecuda_device_event_destroy(void* context, void* event);
int32_t fakecuda_device_event_record(void* context, void* event, void* stream,
                                     hvd_plugin_status* status);
int32_t fakecuda_device_event_query(void* context, void* event, int32_t* done,
                                    hvd_plugin_status* status);

#endif /* HVD_FAKE_CUDA_DEVICE_H_ */
