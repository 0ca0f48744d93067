/* fakecuda's asynchronous streams and events (fake_cuda_streams.h). */
#include "fake_cuda_streams.h"

#include <errno.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "transports/plugin/transport_plugin.h"

#define EXPORT __attribute__((visibility("default")))
#define MAX_STREAMS 256
/* How long a stream waits for an event before it fails (a missing record). */
#define EVENT_WAIT_MS 60000

typedef struct item {
  fake_work_fn fn;
  void* arg;
  int free_arg;
  fake_touches* touches; /* cached blocks it reads or writes */
  struct item* next;
} item;

struct fake_stream {
  pthread_mutex_t mu;
  pthread_cond_t changed;
  item* head;
  item* tail;
  long long enqueued; /* items so far */
  long long done;     /* items run */
  int stop;
  int32_t error_code; /* the first failed item's, sticky */
  char error[400];
  pthread_t thread;
};

struct fake_event {
  pthread_mutex_t mu;
  pthread_cond_t changed;
  long long recorded;  /* records issued */
  long long completed; /* the last record the stream reached */
};

static pthread_mutex_t registry_mu = PTHREAD_MUTEX_INITIALIZER;
static fake_stream* registry[MAX_STREAMS];
static fake_stream* default_stream;

static long delay_us(void) {
  static long value = -1;
  if (value < 0) {
    const char* text = getenv("HVD_FAKECUDA_DELAY_US");
    value = text != NULL ? strtol(text, NULL, 10) : 300;
    if (value < 0) value = 0;
  }
  return value;
}

static void deadline_in(struct timespec* at, long long ms) {
  clock_gettime(CLOCK_REALTIME, at);
  at->tv_sec += (time_t)(ms / 1000);
  at->tv_nsec += (long)(ms % 1000) * 1000000L;
  if (at->tv_nsec >= 1000000000L) {
    at->tv_sec += 1;
    at->tv_nsec -= 1000000000L;
  }
}

static void* stream_main(void* arg) {
  fake_stream* s = arg;
  pthread_mutex_lock(&s->mu);
  for (;;) {
    while (s->head == NULL && !s->stop) pthread_cond_wait(&s->changed, &s->mu);
    if (s->head == NULL && s->stop) break;
    item* it = s->head;
    pthread_mutex_unlock(&s->mu);
    if (delay_us() > 0) usleep((useconds_t)delay_us());
    char error[400] = {0};
    int failed = fake_cache_begin(it->touches, error, sizeof(error));
    if (!failed) failed = it->fn(it->arg, error, sizeof(error));
    fake_cache_end(it->touches);
    if (it->free_arg) free(it->arg);
    pthread_mutex_lock(&s->mu);
    if (failed && s->error_code == HVD_OK) {
      s->error_code = HVD_ERR_INTERNAL;
      snprintf(s->error, sizeof(s->error), "%s", error);
      s->error[sizeof(s->error) - 1] = '\0';
    }
    s->head = it->next;
    if (s->head == NULL) s->tail = NULL;
    free(it);
    ++s->done;
    pthread_cond_broadcast(&s->changed);
  }
  pthread_mutex_unlock(&s->mu);
  return NULL;
}

fake_stream* fake_stream_create(void) {
  fake_stream* s = calloc(1, sizeof(fake_stream));
  pthread_mutex_init(&s->mu, NULL);
  pthread_cond_init(&s->changed, NULL);
  pthread_create(&s->thread, NULL, stream_main, s);
  pthread_mutex_lock(&registry_mu);
  for (int i = 0; i < MAX_STREAMS; ++i) {
    if (registry[i] == NULL) {
      registry[i] = s;
      break;
    }
  }
  pthread_mutex_unlock(&registry_mu);
  return s;
}

void fake_stream_destroy(fake_stream* s) {
  if (s == NULL) return;
  char ignored[8];
  fake_stream_synchronize(s, EVENT_WAIT_MS, ignored, sizeof(ignored));
  pthread_mutex_lock(&registry_mu);
  for (int i = 0; i < MAX_STREAMS; ++i) {
    if (registry[i] == s) registry[i] = NULL;
  }
  pthread_mutex_unlock(&registry_mu);
  pthread_mutex_lock(&s->mu);
  s->stop = 1;
  pthread_cond_broadcast(&s->changed);
  pthread_mutex_unlock(&s->mu);
  pthread_join(s->thread, NULL);
  pthread_mutex_destroy(&s->mu);
  pthread_cond_destroy(&s->changed);
  free(s);
}

fake_stream* fake_stream_of(void* handle) {
  pthread_mutex_lock(&registry_mu);
  fake_stream* found = NULL;
  if (handle == NULL) {
    found = default_stream;
  } else {
    for (int i = 0; i < MAX_STREAMS && found == NULL; ++i) {
      if (registry[i] == handle) found = registry[i];
    }
  }
  pthread_mutex_unlock(&registry_mu);
  if (handle == NULL && found == NULL) {
    fake_stream* made = fake_stream_create(); /* outside registry_mu: it takes it */
    pthread_mutex_lock(&registry_mu);
    if (default_stream == NULL) default_stream = made;
    found = default_stream;
    pthread_mutex_unlock(&registry_mu);
    if (found != made) fake_stream_destroy(made);
  }
  return found;
}

int fake_stream_enqueue(fake_stream* s, fake_work_fn fn, void* arg, int free_arg) {
  return fake_stream_enqueue_touching(s, fn, arg, free_arg, NULL, 0);
}

int fake_stream_enqueue_touching(fake_stream* s, fake_work_fn fn, void* arg, int free_arg,
                                 const fake_range* ranges, size_t n) {
  item* it = calloc(1, sizeof(item));
  it->fn = fn;
  it->arg = arg;
  it->free_arg = free_arg;
  it->touches = n > 0 ? fake_cache_note(ranges, n, s) : NULL;
  pthread_mutex_lock(&s->mu);
  if (s->tail != NULL) {
    s->tail->next = it;
  } else {
    s->head = it;
  }
  s->tail = it;
  ++s->enqueued;
  pthread_cond_broadcast(&s->changed);
  pthread_mutex_unlock(&s->mu);
  return 0;
}

int32_t fake_stream_synchronize(fake_stream* s, int64_t timeout_ms, char* error,
                                size_t error_len) {
  struct timespec at;
  deadline_in(&at, timeout_ms > 0 ? timeout_ms : EVENT_WAIT_MS);
  pthread_mutex_lock(&s->mu);
  const long long target = s->enqueued;
  int32_t code = HVD_OK;
  while (s->done < target) {
    if (pthread_cond_timedwait(&s->changed, &s->mu, &at) == ETIMEDOUT && s->done < target) {
      code = HVD_ERR_TIMEOUT;
      snprintf(error, error_len, "fakecuda: the stream's work did not complete within %lld ms",
               (long long)timeout_ms);
      break;
    }
  }
  if (code == HVD_OK && s->error_code != HVD_OK) {
    code = s->error_code;
    snprintf(error, error_len, "%s", s->error);
  }
  pthread_mutex_unlock(&s->mu);
  return code;
}

fake_event* fake_event_create(void) {
  fake_event* e = calloc(1, sizeof(fake_event));
  pthread_mutex_init(&e->mu, NULL);
  pthread_cond_init(&e->changed, NULL);
  return e;
}

void fake_event_destroy(fake_event* e) {
  if (e == NULL) return;
  pthread_mutex_destroy(&e->mu);
  pthread_cond_destroy(&e->changed);
  free(e);
}

typedef struct mark {
  fake_event* event;
  long long number;
} mark;

static int reach(void* arg, char* error, size_t error_len) {
  (void)error;
  (void)error_len;
  mark* m = arg;
  pthread_mutex_lock(&m->event->mu);
  if (m->event->completed < m->number) m->event->completed = m->number;
  pthread_cond_broadcast(&m->event->changed);
  pthread_mutex_unlock(&m->event->mu);
  return 0;
}

static int await(void* arg, char* error, size_t error_len) {
  mark* m = arg;
  struct timespec at;
  deadline_in(&at, EVENT_WAIT_MS);
  int failed = 0;
  pthread_mutex_lock(&m->event->mu);
  while (m->event->completed < m->number) {
    if (pthread_cond_timedwait(&m->event->changed, &m->event->mu, &at) == ETIMEDOUT &&
        m->event->completed < m->number) {
      snprintf(error, error_len, "fakecuda: a stream waited %d ms for an event", EVENT_WAIT_MS);
      failed = 1;
      break;
    }
  }
  pthread_mutex_unlock(&m->event->mu);
  return failed;
}

void fake_event_record(fake_event* e, fake_stream* s) {
  mark* m = malloc(sizeof(mark));
  pthread_mutex_lock(&e->mu);
  m->event = e;
  m->number = ++e->recorded;
  pthread_mutex_unlock(&e->mu);
  fake_stream_enqueue(s, reach, m, 1);
}

int fake_event_done(fake_event* e) {
  pthread_mutex_lock(&e->mu);
  const int done = e->completed >= e->recorded;
  pthread_mutex_unlock(&e->mu);
  return done;
}

void fake_stream_wait_event(fake_stream* waiter, fake_event* e) {
  mark* m = malloc(sizeof(mark));
  pthread_mutex_lock(&e->mu);
  m->event = e;
  m->number = e->recorded; /* as recorded now, like cudaStreamWaitEvent */
  pthread_mutex_unlock(&e->mu);
  fake_stream_enqueue(waiter, await, m, 1);
}

/* An event of its own per wait: recorded on `s`, awaited by `waiter`, freed
 * by the waiter once reached. */
typedef struct hop {
  fake_event* event;
} hop;

static int await_and_free(void* arg, char* error, size_t error_len) {
  hop* h = arg;
  mark m = {h->event, 1};
  const int failed = await(&m, error, error_len);
  fake_event_destroy(h->event);
  return failed;
}

void fake_stream_wait_stream(fake_stream* waiter, fake_stream* s) {
  if (waiter == s) return; /* a stream is ordered after itself */
  hop* h = malloc(sizeof(hop));
  h->event = fake_event_create();
  fake_event_record(h->event, s);
  fake_stream_enqueue(waiter, await_and_free, h, 1);
}

/* ---- for tests: what a framework would do on its streams --------------- */

EXPORT void* fakecuda_stream_create(void) { return fake_stream_create(); }
EXPORT void fakecuda_stream_destroy(void* s) { fake_stream_destroy(fake_stream_of(s)); }
EXPORT void* fakecuda_event_create(void) { return fake_event_create(); }
EXPORT void fakecuda_event_destroy(void* e) { fake_event_destroy(e); }
EXPORT void fakecuda_event_record(void* e, void* s) { fake_event_record(e, fake_stream_of(s)); }
/* 0 when everything on s ran (at most 60 s), else an HVD_ERR_* code. */
EXPORT int32_t fakecuda_stream_synchronize(void* s) {
  char error[256];
  fake_stream* stream = fake_stream_of(s);
  return stream != NULL ? fake_stream_synchronize(stream, EVENT_WAIT_MS, error, sizeof(error))
                        : HVD_ERR_INVALID_ARGUMENT;
}

typedef struct late_write {
  void* dst;
  const void* src;
  size_t bytes;
  long delay_us;
} late_write;

static int write_late(void* arg, char* error, size_t error_len) {
  (void)error;
  (void)error_len;
  late_write* w = arg;
  usleep((useconds_t)w->delay_us);
  memcpy(w->dst, w->src, w->bytes);
  return 0;
}

/* A "kernel" on stream s that writes src to dst after delay_us: the
 * framework producing an op's input late (src must live until it ran). */
EXPORT int32_t fakecuda_stream_write(void* s, void* dst, const void* src, size_t bytes,
                                     long delay_us) {
  fake_stream* stream = fake_stream_of(s);
  if (stream == NULL) return HVD_ERR_INVALID_ARGUMENT;
  late_write* w = malloc(sizeof(late_write));
  *w = (late_write){dst, src, bytes, delay_us};
  const fake_range touched[2] = {{dst, bytes}, {src, bytes}};
  return fake_stream_enqueue_touching(stream, write_late, w, 1, touched, 2);
}
