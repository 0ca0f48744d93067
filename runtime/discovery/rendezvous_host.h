// Rank 0's rendezvous when a foreign launcher (torchrun, mpirun, srun)
// started the job: the daemon's Rendezvous service (membership and key-value
// store) on a gRPC server inside the worker. It lives from rank 0's init to
// its shutdown, which waits until every rank has said it is finished.
#pragma once

#include <chrono>
#include <memory>
#include <string>

#include "common/status.h"
#include "proto/grpc_server.h"
#include "daemon/rendezvous/rendezvous_service.h"

namespace hvd::runtime {

// Every rank adds 1 under this key when it shuts down.
inline constexpr char kFinishedKey[] = "hvd/finished";

class RendezvousHost {
 public:
  // Serves a job of `size` ranks on bind_address:port ("127.0.0.1" or
  // "0.0.0.0"). kUnavailable naming the port and HVD_RENDEZVOUS_PORT when it
  // cannot be bound (another job holds it).
  static common::Result<std::unique_ptr<RendezvousHost>> start(const std::string& bind_address,
                                                               int port, const std::string& token,
                                                               int size);
  ~RendezvousHost();  // close()

  RendezvousHost(const RendezvousHost&) = delete;
  RendezvousHost& operator=(const RendezvousHost&) = delete;

  // Counts rank 0 as finished, waits up to `wait` until all `size` ranks
  // are (a warning names how many are not), then closes.
  void finish(std::chrono::milliseconds wait);
  // Wakes blocked calls and stops the server. Idempotent.
  void close();

 private:
  RendezvousHost(const std::string& token, int size) : service_(token, size), size_(size) {}

  daemon::RendezvousService service_;
  std::unique_ptr<daemon::GrpcServer> server_;
  int size_;
};

}  // namespace hvd::runtime
