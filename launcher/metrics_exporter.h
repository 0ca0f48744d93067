// hvdrun's metrics port (--metrics-port; docs/metrics.md): an HTTP server
// (common/http_server.h) bound to --metrics-address (127.0.0.1 unless the
// user names another) serving
//   /metrics     Prometheus' text format (job_metrics_text.h)
//   /state.json  the job's state for the live page (job_state_json.h)
//   /            the live job page (job_page.html, embedded at build time)
// from the JobMonitor and the rendezvous' rank counters, on the server's own
// thread. Both outlive the exporter.
#pragma once

#include <memory>
#include <string>

#include "common/http_server.h"
#include "launcher/job_monitor.h"

namespace hvd::daemon {
class RendezvousService;
}  // namespace hvd::daemon

namespace hvd::launcher {

class MetricsExporter {
 public:
  static common::Result<std::unique_ptr<MetricsExporter>> start(
      const std::string& address, int port, const JobMonitor& monitor,
      const daemon::RendezvousService& rendezvous);
  int port() const { return server_->port(); }
  void stop() { server_->stop(); }

 private:
  MetricsExporter(const JobMonitor& monitor, const daemon::RendezvousService& rendezvous)
      : monitor_(monitor), rendezvous_(rendezvous) {}
  common::HttpResponse serve(const common::HttpRequest& request) const;

  const JobMonitor& monitor_;
  const daemon::RendezvousService& rendezvous_;
  std::unique_ptr<common::HttpServer> server_;
};

}  // namespace hvd::launcher
