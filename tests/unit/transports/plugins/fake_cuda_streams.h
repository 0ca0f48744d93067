/* fakecuda's streams and events: asynchronous, like CUDA's, so that a
 * missing wait, an early read or a use after free fails in tests on a
 * machine without a GPU.
 *
 *  - A stream is a FIFO of work run later, in order, by a thread of its
 *    own; each item waits HVD_FAKECUDA_DELAY_US first (default 300 us), so
 *    work that is read before it ran is seen to be missing. NULL is the
 *    process's default stream, asynchronous too (it does not synchronize
 *    with the others: every stream behaves like a non-blocking one).
 *  - An event completes when the stream it was recorded on reaches it;
 *    fake_stream_wait_event makes another stream wait for that on its own
 *    thread (no host wait).
 *  - A failed item (a timeout waiting for an event, a failed collective, a
 *    cached block reused without an ordering wait) stays set on its stream
 *    and is returned by the next fake_stream_synchronize.
 *  - Streams the tests did not make (fakecuda_stream_create) or the plugin
 *    did not make (a context's communication stream) are refused: a stream
 *    that is not one is a bug in the engine.
 * Device memory itself is fake_cuda_device.c's. */
#ifndef HVD_FAKE_CUDA_STREAMS_H_
#define HVD_FAKE_CUDA_STREAMS_H_

#include <stddef.h>
#include <stdint.h>

#include "fake_cuda_cache.h"

typedef struct fake_stream fake_stream;
typedef struct fake_event fake_event;

/* One unit of work on a stream: run(arg) on its thread; a non-zero return
 * sets the stream's error (message from the item). free_arg releases arg
 * after it ran (or if it never runs). */
typedef int (*fake_work_fn)(void* arg, char* error, size_t error_len);

fake_stream* fake_stream_create(void);
/* Drains the stream (bounded), stops its thread, frees it. */
void fake_stream_destroy(fake_stream* s);
/* The stream behind a handle the engine passed: NULL is the default
 * stream; an unknown handle gives NULL (and the caller fails). */
fake_stream* fake_stream_of(void* handle);
/* Enqueues fn(arg) (then free(arg) when free_arg); returns 0. */
int fake_stream_enqueue(fake_stream* s, fake_work_fn fn, void* arg, int free_arg);
/* The same for an item that reads or writes `ranges` (device memory): the
 * caching allocator model (fake_cuda_cache.h) notes the cached blocks it
 * touches now and checks, when it starts, that none was reused without an
 * ordering wait (else the item fails without running). */
int fake_stream_enqueue_touching(fake_stream* s, fake_work_fn fn, void* arg, int free_arg,
                                 const fake_range* ranges, size_t n);
/* Waits until everything enqueued so far ran, at most timeout_ms: 0, or an
 * HVD_ERR_* code with the message in error (the stream's stored error, or a
 * timeout). */
int32_t fake_stream_synchronize(fake_stream* s, int64_t timeout_ms, char* error,
                                size_t error_len);

fake_event* fake_event_create(void);
void fake_event_destroy(fake_event* e);
/* The event completes when `s` reaches this point. */
void fake_event_record(fake_event* e, fake_stream* s);
/* 1 once the stream reached the event's last record (or it was never
 * recorded), else 0; never blocks (cudaEventQuery). */
int fake_event_done(fake_event* e);
/* `waiter` waits (on its own thread) until `e` completed as recorded now. */
void fake_stream_wait_event(fake_stream* waiter, fake_event* e);
/* `waiter` waits for the work enqueued on `s` so far. */
void fake_stream_wait_stream(fake_stream* waiter, fake_stream* s);

#endif /* HVD_FAKE_CUDA_STREAMS_H_ */
