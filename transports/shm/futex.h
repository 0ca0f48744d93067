// Futex calls on 32-bit words in memory shared between processes (the
// non-private operations: the word may be mapped at different addresses in
// different processes). No locks are built on them: the shm transport waits
// for counters to move and wakes waiters when they do (see waiter.h).
#pragma once

#include <chrono>
#include <cstdint>

namespace hvd::transports::shm {

// Sleeps while *word == expected, at most `timeout` (a wake, a signal or a
// spurious return end it earlier; callers re-check their condition).
void futex_wait(uint32_t* word, uint32_t expected, std::chrono::nanoseconds timeout);

// Wakes every process and thread sleeping on `word`.
void futex_wake_all(uint32_t* word);

}  // namespace hvd::transports::shm
