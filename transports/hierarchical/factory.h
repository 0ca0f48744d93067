// The hierarchical transport's entry points (hierarchical_transport.h): it
// builds three worlds out of the one it is asked for — this host's ranks
// (shm), this local rank's peers on the other hosts and every rank (gloo) —
// under key prefixes of their own below context.key_prefix.
#pragma once

#include <memory>
#include <string>

#include "transports/layout.h"
#include "transports/registry.h"

namespace hvd::transports::hierarchical {

inline constexpr char kName[] = "hierarchical";

// The hosts' rank counts in host-index order, "2, 1" (for messages).
std::string host_sizes(const Layout& layout);
// kFailedPrecondition, naming the counts, when the hosts do not all have the
// same number of ranks.
Status check_homogeneous(const Layout& layout);

// The three worlds of a hierarchical transport, each under a key prefix of
// its own below context.key_prefix ("h/local<host index>/",
// "h/cross<local rank>/", "h/flat/").
enum class World { kLocal, kCross, kFlat };
TransportContext sub_world(const TransportContext& context, const Layout& layout, World world);

// Whether a world of this layout suits the hierarchical collectives: it
// spans several hosts with the same number of ranks, more than one, on
// each. `why`: the reason when not ("every rank of the set is on one
// host", ...), the shape when it does ("2 hosts of 2 ranks"). The CPU
// transport's auto choice and the device ops' hierarchical_allreduce
// setting both decide with it.
struct Choice {
  bool hierarchical = false;
  std::string why;
};
Choice choose(const Layout& layout);

// kFailedPrecondition when the hosts do not all have the same number of ranks.
Result<std::unique_ptr<Transport>> create(const TransportContext& context, const Layout& layout);
// The same, learning the layout through the store first (layout.h).
Result<std::unique_ptr<Transport>> create(const TransportContext& context);

}  // namespace hvd::transports::hierarchical
