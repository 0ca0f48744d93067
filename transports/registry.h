// Maps transport names to factories. The runtime owns one registry (no
// globals); built-in transports are added by their folder's register_* call,
// so a new transport is one folder plus one line in registry.cc.
#pragma once

#include <chrono>
#include <functional>
#include <map>
#include <memory>
#include <string>
#include <vector>

#include "common/status.h"
#include "common/store.h"
#include "transports/transport.h"

namespace hvd::transports {

using common::Result;

enum class DeviceKind { kCpu, kCuda };

// What a factory gets to build a transport for one world.
struct TransportContext {
  int rank = 0;
  int size = 1;
  common::Store* store = nullptr;    // peers publish and find addresses here
  std::string key_prefix;            // unique per world (job epoch, process set)
  std::string bind_address = "127.0.0.1";  // local address to listen on
  std::chrono::milliseconds timeout{30000};
  // Ranks of this world on this rank's host, when the caller knows them (0:
  // unknown). A transport that needs every rank on one host (shm) refuses at
  // once when it is below `size`, and otherwise checks through the store.
  int local_size = 0;
  // The launcher's name for this rank's host (layout.h: ranks that give the
  // same name share a host); empty when unknown (all such ranks count as one
  // host).
  std::string host;
};

using TransportFactory =
    std::function<Result<std::unique_ptr<Transport>>(const TransportContext&)>;

class TransportRegistry {
 public:
  // A registry holding every built-in transport.
  static TransportRegistry with_builtins();

  void add(std::string name, DeviceKind device, TransportFactory factory);

  // NotFound naming the registered transports when `name` is unknown; the
  // factory's own Status when it cannot serve here.
  Result<std::unique_ptr<Transport>> create(const std::string& name,
                                            const TransportContext& context) const;

  std::vector<std::string> names(DeviceKind device) const;

 private:
  struct Entry {
    DeviceKind device;
    TransportFactory factory;
  };
  std::map<std::string, Entry> entries_;
};

}  // namespace hvd::transports
