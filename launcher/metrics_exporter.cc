#include "launcher/metrics_exporter.h"

#include "common/prometheus_text.h"
#include "daemon/rendezvous/rendezvous_service.h"
#include "launcher/job_metrics_text.h"
#include "launcher/job_page_html.h"
#include "launcher/job_state_json.h"

namespace hvd::launcher {

common::Result<std::unique_ptr<MetricsExporter>> MetricsExporter::start(
    const std::string& address, int port, const JobMonitor& monitor,
    const daemon::RendezvousService& rendezvous) {
  std::unique_ptr<MetricsExporter> exporter(new MetricsExporter(monitor, rendezvous));
  const MetricsExporter* self = exporter.get();
  auto server = common::HttpServer::start(
      address, port, [self](const common::HttpRequest& request) { return self->serve(request); });
  if (!server.is_ok()) return server.status();
  exporter->server_ = std::move(server).value();
  return exporter;
}

common::HttpResponse MetricsExporter::serve(const common::HttpRequest& request) const {
  if (request.path == "/metrics") {
    return {200, std::string(common::kPrometheusContentType),
            render_job_metrics(monitor_.snapshot(), rendezvous_.rank_stats().all(),
                               daemon::RankStats::Clock::now())};
  }
  if (request.path == "/state.json") {
    return {200, "application/json",
            render_job_state_json(monitor_.snapshot(), rendezvous_.rank_stats().all())};
  }
  if (request.path == "/" || request.path == "/index.html") {
    return {200, "text/html; charset=utf-8", std::string(kJobPageHtml)};
  }
  return {404, "text/plain; charset=utf-8", "not found; try /, /metrics or /state.json\n"};
}

}  // namespace hvd::launcher
