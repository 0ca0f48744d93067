/* fakecuda's model of a caching allocator (torch's CUDACachingAllocator),
 * and the detection of a block reused without an ordering wait.
 *
 *  - fakecuda_cached_alloc(bytes, stream) hands out a block of the pool of
 *    `stream`: a free block of that stream that fits (the smallest), at
 *    once, even while work enqueued before its free still has to run on
 *    some stream (torch does the same: only the block's own stream is
 *    ordered); else a new one. fakecuda_cached_free(ptr, stream) gives it
 *    back to the pool of the stream it was allocated on (torch's rule;
 *    `stream` is that stream, or NULL). Memory is host memory, never
 *    poisoned (a block is only reused, like torch's), so tests can read it.
 *  - Every block has a generation, bumped at every hand-out. Every work
 *    item a stream runs (copy, scale, collective in/out, stream write)
 *    notes at enqueue the cached blocks it touches with their generation
 *    then (fake_cache_note). When an item of generation g starts while an
 *    item of an older generation of the same block has not finished, or
 *    after an item of a newer generation started, the block was reused
 *    without an ordering wait: the item fails (its stream's error names the
 *    block and both streams), fakecuda_violations() counts it and a line
 *    goes to stderr. */
#ifndef HVD_FAKE_CUDA_CACHE_H_
#define HVD_FAKE_CUDA_CACHE_H_

#include <stddef.h>

/* A byte range a work item reads or writes. */
typedef struct fake_range {
  const void* data;
  size_t bytes;
} fake_range;

/* What an item touches: built at enqueue, checked at its start, released
 * at its end. NULL: no cached block. */
typedef struct fake_touches fake_touches;

/* The cached blocks `ranges` touch, each with its generation now; `stream`
 * (a fake_stream*) names the item's stream in messages. */
fake_touches* fake_cache_note(const fake_range* ranges, size_t n, const void* stream);
/* At the item's start: 0, or 1 with the violation's message in error. */
int fake_cache_begin(fake_touches* t, char* error, size_t error_len);
/* At the item's end (also when it failed or never ran): frees t. */
void fake_cache_end(fake_touches* t);

#endif /* HVD_FAKE_CUDA_CACHE_H_ */
