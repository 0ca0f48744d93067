#include "transports/gloo/pair_abort.h"

// Needs compat/gloo/common/memory.h on the include path (transports/CMakeLists.txt).
#include <gloo/transport/tcp/pair.h>
#include <gloo/transport/tcp/unbound_buffer.h>

#include <deque>
#include <exception>
#include <mutex>
#include <vector>

namespace hvd::transports::gloo {

namespace {

namespace tcp = ::gloo::transport::tcp;

// The library's sizeof(tcp::Pair) (operator new in tcp::Context::createPair
// of Debian 12's libgloo0 0.0~git20220518.5b14351): the members read below
// sit where these headers say only if the layouts agree.
static_assert(sizeof(tcp::Pair) == 0x380,
              "gloo's tcp::Pair differs from the gloo this code was checked against "
              "(Debian 12's libgloo 0.0~git20220518): check pair_abort.cc against its pair.h");

// gloo keeps what is needed protected. A derived class may name protected
// members of its base, and a pointer to member so formed applies to any
// tcp::Pair (these classes are never instantiated).
struct PairAccess : tcp::Pair {
  static std::mutex& mutex(tcp::Pair& p) { return p.*(&PairAccess::m_); }
  static tcp::Op& reading(tcp::Pair& p) { return p.*(&PairAccess::rx_); }
  static std::deque<tcp::Op>& writing(tcp::Pair& p) { return p.*(&PairAccess::tx_); }
  static std::exception_ptr& error(tcp::Pair& p) { return p.*(&PairAccess::ex_); }
  // Under the pair's mutex: records the exception, fails the pending
  // operations, closes the pair (its descriptor leaves the I/O loop, which
  // no longer calls the pair once this returns).
  static void fail(tcp::Pair& p, const std::string& message) {
    void (tcp::Pair::*signal)(const std::string&) = &PairAccess::signalException;
    (p.*signal)(message);  // an IoException(message)
  }
};

struct BufferAccess : tcp::UnboundBuffer {
  // Wakes the buffer's waiters with `error` (they throw it).
  static void fail(tcp::UnboundBuffer& b, std::exception_ptr error) {
    (b.*(&BufferAccess::signalException))(std::move(error));
  }
};

}  // namespace

void fail_pairs(::gloo::Context& context, const std::string& message) {
  for (int peer = 0; peer < context.size; ++peer) {
    if (peer == context.rank) continue;
    auto* pair = dynamic_cast<tcp::Pair*>(context.getPair(peer).get());
    if (pair == nullptr) continue;
    // gloo's I/O thread only try-locks a pair's mutex (it skips the pair
    // until the next tick), so holding it here never blocks that thread.
    std::lock_guard lock(PairAccess::mutex(*pair));
    std::vector<::gloo::NonOwningPtr<tcp::UnboundBuffer>> in_progress;
    tcp::Op& reading = PairAccess::reading(*pair);
    in_progress.emplace_back(reading.ubuf);
    for (tcp::Op& op : PairAccess::writing(*pair)) in_progress.emplace_back(op.ubuf);
    // Close first: nothing reads into or writes from these buffers any more
    // once their waiters wake (and free them).
    if (!PairAccess::error(*pair)) PairAccess::fail(*pair, message);
    std::exception_ptr error = PairAccess::error(*pair);
    for (auto& buffer : in_progress) {
      if (buffer) BufferAccess::fail(*buffer, error);
    }
    reading = tcp::Op();
    PairAccess::writing(*pair).clear();
  }
}

}  // namespace hvd::transports::gloo
