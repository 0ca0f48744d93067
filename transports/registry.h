// Maps transport names to factories. The runtime owns one registry (no
// globals), filled from the transport table (transports/table/
// transport_table.h: builtin_registry), so a new transport is one folder
// plus one row there. Each entry declares its device and whether it can run
// here (with the reason when not): plugins loaded from their own library
// (transports/plugin/) may not.
#pragma once

#include <chrono>
#include <cstdint>
#include <functional>
#include <map>
#include <memory>
#include <string>
#include <string_view>
#include <vector>

#include "common/placement.h"
#include "common/status.h"
#include "common/store.h"
#include "transports/connect_abort.h"
#include "transports/device_work.h"
#include "transports/transport.h"

namespace hvd::transports {

using common::Result;

// The values are part of the plugin ABI (HVD_PLUGIN_DEVICE_*).
enum class DeviceKind : int32_t { kCpu = 0, kCuda = 1 };

std::string_view device_kind_name(DeviceKind device);  // "cpu", "cuda"

// Whether a transport can run on this machine; `reason` says why not.
struct Availability {
  bool available = true;
  std::string reason;
};

// Asked when the registry is listed or a transport created; may be slow the
// first time (a plugin loads its library), so it caches what it learns.
using AvailabilityProbe = std::function<Availability()>;

// One registry entry as diagnostics show it (hvdrun --check-build).
struct TransportInfo {
  std::string name;
  DeviceKind device;
  Availability availability;
};

// What a factory gets to build a transport for one world: this rank's
// placement in it and how to reach its peers.
//
// The placement's host is the launcher's name for this rank's host
// (layout.h: ranks that give the same name share a host); empty when
// unknown (all such ranks count as one host). Its local and cross rank and
// size are Horovod's (placement.h) when the caller knows them. They start
// unknown (Placement::layout_unknown(): local_size and cross_size
// kUnknownSize), not a Placement's world of one on one host: a process
// set's layout is not known before its ranks exchange their hosts, and a
// context whose size a caller sets must not claim one host. A transport
// that needs every rank on one host (shm) refuses at once when local_size
// is known and below `size`, and otherwise checks through the store.
// Plugins such as NCCL get the whole placement.
struct TransportContext : common::Placement {
  TransportContext() : common::Placement(common::Placement::layout_unknown()) {}

  common::Store* store = nullptr;    // peers publish and find addresses here
  std::string key_prefix;            // unique per world (job round, process set)
  std::string bind_address = "127.0.0.1";  // local address to listen on
  std::chrono::milliseconds timeout{30000};
  int device = -1;                   // the device ordinal (-1: none)
  // Fired when the world is lost before it connected (an elastic round's
  // member died): the connect ends then, not at `timeout`. May be null.
  std::shared_ptr<ConnectAbort> abort;
};

using TransportFactory =
    std::function<Result<std::unique_ptr<Transport>>(const TransportContext&)>;

// Opens device work (device_work.h) for a device ordinal, the timeout
// bounding its synchronize(): a CUDA plugin's device_* functions.
using DeviceWorkOpener = std::function<Result<std::unique_ptr<DeviceWork>>(
    int device, std::chrono::milliseconds timeout)>;

class TransportRegistry {
 public:
  // `probe` null: always available (the built-in CPU transports).
  // `open_device` null: the entry has no device work (CPU transports).
  void add(std::string name, DeviceKind device, TransportFactory factory,
           AvailabilityProbe probe = nullptr, DeviceWorkOpener open_device = nullptr);

  // NotFound naming the registered transports when `name` is unknown;
  // FailedPrecondition with the probe's reason when it cannot run here; the
  // factory's own Status when it cannot serve this world.
  Result<std::unique_ptr<Transport>> create(const std::string& name,
                                            const TransportContext& context) const;
  // The same for a transport of `device` only: NotFound naming that device's
  // transports, FailedPrecondition when `name` is another device's.
  Result<std::unique_ptr<Transport>> create(DeviceKind device, const std::string& name,
                                            const TransportContext& context) const;

  // The device work of transport `name` for device ordinal `device`:
  // NotFound when unknown, FailedPrecondition when it cannot run here or has
  // no device work ("transport 'gloo' has no device functions"), the
  // opener's Status otherwise (a plugin of ABI version 1 says so).
  Result<std::unique_ptr<DeviceWork>> open_device(const std::string& name, int device,
                                                  std::chrono::milliseconds timeout) const;

  std::vector<std::string> names(DeviceKind device) const;

  // Whether `name` can run here (its probe runs); not available, saying so,
  // when no such transport is registered.
  Availability availability(const std::string& name) const;

  // Every entry, by name, with its availability (probes run).
  std::vector<TransportInfo> list() const;

 private:
  struct Entry {
    DeviceKind device;
    TransportFactory factory;
    AvailabilityProbe probe;
    DeviceWorkOpener open_device;
  };
  static Availability availability(const Entry& entry);
  Result<std::unique_ptr<Transport>> create(const std::string& name, const Entry* entry,
                                            const std::vector<std::string>& known,
                                            const TransportContext& context) const;
  std::map<std::string, Entry> entries_;
};

}  // namespace hvd::transports
