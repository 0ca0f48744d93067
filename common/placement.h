// Where one rank sits in its world: the one type for it, from hvdrun's slot
// plan (launcher/slot_plan.h: a RankSlot is a Placement) through the
// rendezvous's Join messages (daemon/rendezvous/join_messages.h, their one
// conversion) to the worker's world (runtime/discovery/world.h,
// launcher_env.h), the transports' context and layout
// (transports/registry.h, transports/layout.h) and the plugin ABI's
// hvd_plugin_world (transports/plugin/plugin_world.h, its one conversion).
// The types that say more (JoinResult, WorldInfo, LauncherWorld,
// TransportContext, Layout) hold a Placement as their base.
//
// Horovod's definitions, everywhere: local rank and size count the world's
// ranks on this rank's host; cross rank is this rank's index among the ranks
// of the world with its local rank (in rank order), cross size their number.
// Neither numbers the hosts: the index of a rank's host among the world's
// hosts (NCCL's node beside its localRank) is transports/layout.h's
// Layout::host_index, and their number Layout::host_count.
//
// The defaults are a world of one on one host. A local_size or cross_size
// of kUnknownSize means "unknown": a TransportContext starts so
// (layout_unknown(): a process set's layout is not known until its ranks
// exchange their hosts), and the plugin ABI passes it on as is
// (hvd_plugin_world).
#pragma once

#include <string>

namespace hvd::common {

inline constexpr int kUnknownSize = 0;

struct Placement {
  int rank = 0;
  int size = 1;
  int local_rank = 0;
  int local_size = 1;  // kUnknownSize: unknown
  int cross_rank = 0;
  int cross_size = 1;  // kUnknownSize: unknown
  // The launcher's name for this rank's host (ranks that give the same name
  // share a host); empty when nobody named it.
  std::string host;

  // Rank 0 of a world of one whose local and cross sizes are unknown.
  static Placement layout_unknown() {
    Placement unknown;
    unknown.local_size = kUnknownSize;
    unknown.cross_size = kUnknownSize;
    return unknown;
  }

  bool operator==(const Placement&) const = default;
};

}  // namespace hvd::common
