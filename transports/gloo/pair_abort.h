// Ends every operation of a gloo context's TCP pairs, those in the middle of
// a message included, for GlooTransport::abort().
//
// Why: gloo's tcp::Pair fails its pending operations when its socket goes
// (signalException: the send and receive queues and bound buffers), but not
// the message it is reading (rx_) nor the messages it is writing (tx_), so a
// collective blocked on a message its peer stopped sending halfway through
// (or stopped reading) waited for the transport timeout. gloo has no public
// call for this (its headers even lack gloo/common/memory.h, see compat/), so
// this file reaches the pair's protected members, checked against the
// library's layout of tcp::Pair.
#pragma once

#include <gloo/context.h>

#include <string>

namespace hvd::transports::gloo {

// Closes every TCP pair of `context` the way gloo does on an I/O error (an
// IoException(message) for every pending operation; the pair's descriptor
// leaves gloo's I/O loop) and fails the operations gloo leaves out, the
// messages in progress, with the same exception. Any thread, concurrently
// with a blocked collective; never waits for peers. Not concurrently with
// the context's destruction.
void fail_pairs(::gloo::Context& context, const std::string& message);

}  // namespace hvd::transports::gloo
