/* fakecuda's caching allocator model (fake_cuda_cache.h). */
#include "fake_cuda_cache.h"

#include <pthread.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define EXPORT __attribute__((visibility("default")))

/* One work item not yet finished on a block: its generation and stream. */
typedef struct pending {
  long long generation;
  const void* stream;
  struct pending* next;
} pending;

typedef struct block {
  char* data;
  size_t bytes;
  void* stream;           /* the stream it was allocated on (its pool) */
  int in_use;             /* handed out, not freed */
  long long generation;   /* bumped at every hand-out */
  long long started;      /* the newest generation an item started with */
  const void* started_on; /* that item's stream */
  pending* pending;       /* items enqueued, not finished */
  struct block* next;
} block;

typedef struct touch {
  block* b;
  long long generation;
  pending* mine;
} touch;

struct fake_touches {
  size_t n;
  touch at[];
};

static pthread_mutex_t mu = PTHREAD_MUTEX_INITIALIZER;
static block* blocks; /* every block ever made; never really freed */
static atomic_llong violations;

EXPORT long long fakecuda_violations(void) { return atomic_load(&violations); }

EXPORT void* fakecuda_cached_alloc(size_t bytes, void* stream) {
  pthread_mutex_lock(&mu);
  block* best = NULL;
  for (block* b = blocks; b != NULL; b = b->next) {
    if (!b->in_use && b->stream == stream && b->bytes >= bytes &&
        (best == NULL || b->bytes < best->bytes)) {
      best = b;
    }
  }
  if (best == NULL) {
    best = calloc(1, sizeof(block));
    best->bytes = bytes > 0 ? bytes : 1;
    best->data = calloc(1, best->bytes);
    best->stream = stream;
    best->next = blocks;
    blocks = best;
  }
  best->in_use = 1;
  ++best->generation;
  void* data = best->data;
  pthread_mutex_unlock(&mu);
  return data;
}

EXPORT void fakecuda_cached_free(void* ptr, void* stream) {
  (void)stream; /* the pool is the block's allocation stream, as torch's */
  if (ptr == NULL) return;
  pthread_mutex_lock(&mu);
  for (block* b = blocks; b != NULL; b = b->next) {
    if (b->data == ptr) b->in_use = 0;
  }
  pthread_mutex_unlock(&mu);
}

static int overlaps(const block* b, const fake_range* r) {
  const char* p = r->data;
  return r->bytes > 0 && p < b->data + b->bytes && p + r->bytes > b->data;
}

fake_touches* fake_cache_note(const fake_range* ranges, size_t n, const void* stream) {
  fake_touches* t = NULL;
  pthread_mutex_lock(&mu);
  for (block* b = blocks; b != NULL; b = b->next) {
    int hit = 0;
    for (size_t i = 0; i < n && !hit; ++i) hit = overlaps(b, &ranges[i]);
    if (!hit) continue;
    if (t == NULL) {
      size_t count = 0;
      for (block* c = blocks; c != NULL; c = c->next) ++count;
      t = calloc(1, sizeof(fake_touches) + count * sizeof(touch));
    }
    pending* p = calloc(1, sizeof(pending));
    p->generation = b->generation;
    p->stream = stream;
    p->next = b->pending;
    b->pending = p;
    t->at[t->n++] = (touch){b, b->generation, p};
  }
  pthread_mutex_unlock(&mu);
  return t;
}

static void report(char* error, size_t error_len, const char* line) {
  atomic_fetch_add(&violations, 1);
  fprintf(stderr, "%s\n", line);
  snprintf(error, error_len, "%s", line);
}

int fake_cache_begin(fake_touches* t, char* error, size_t error_len) {
  if (t == NULL) return 0;
  int failed = 0;
  char line[400];
  pthread_mutex_lock(&mu);
  for (size_t i = 0; i < t->n && !failed; ++i) {
    touch* at = &t->at[i];
    block* b = at->b;
    for (pending* p = b->pending; p != NULL && !failed; p = p->next) {
      if (p != at->mine && p->generation < at->generation) {
        snprintf(line, sizeof(line),
                 "fakecuda: unordered reuse of cached block %p (%zu bytes): work of its "
                 "generation %lld on stream %p started while work of generation %lld on stream "
                 "%p had not finished (no ordering wait before the reuse)",
                 (void*)b->data, b->bytes, at->generation, at->mine->stream, p->generation,
                 p->stream);
        failed = 1;
      }
    }
    if (!failed && b->started > at->generation) {
      snprintf(line, sizeof(line),
               "fakecuda: unordered reuse of cached block %p (%zu bytes): work of its "
               "generation %lld on stream %p started after work of the newer generation %lld "
               "on stream %p (no ordering wait before the reuse)",
               (void*)b->data, b->bytes, at->generation, at->mine->stream, b->started,
               b->started_on);
      failed = 1;
    }
    if (!failed && b->started < at->generation) {
      b->started = at->generation;
      b->started_on = at->mine->stream;
    }
  }
  pthread_mutex_unlock(&mu);
  if (failed) report(error, error_len, line);
  return failed;
}

void fake_cache_end(fake_touches* t) {
  if (t == NULL) return;
  pthread_mutex_lock(&mu);
  for (size_t i = 0; i < t->n; ++i) {
    block* b = t->at[i].b;
    for (pending** p = &b->pending; *p != NULL; p = &(*p)->next) {
      if (*p == t->at[i].mine) {
        pending* gone = *p;
        *p = gone->next;
        free(gone);
        break;
      }
    }
  }
  pthread_mutex_unlock(&mu);
  free(t);
}
