// Prometheus' text exposition format (version 0.0.4), written by hand: a
// family's # HELP and # TYPE lines, then its samples, label values escaped
// (backslash, double quote, newline). Used by hvdrun's and hvd-agent's
// /metrics (docs/metrics.md). Names are the callers' constants; label
// values may be anything (host names, op names) and are escaped here.
#pragma once

#include <string>
#include <string_view>
#include <utility>
#include <vector>

namespace hvd::common {

using MetricLabels = std::vector<std::pair<std::string_view, std::string>>;

inline constexpr std::string_view kPrometheusContentType =
    "text/plain; version=0.0.4; charset=utf-8";

class PrometheusText {
 public:
  // type: "counter", "gauge" or "histogram".
  void family(std::string_view name, std::string_view type, std::string_view help);
  // One sample of the family begun last (name: the family's, or with
  // _bucket/_sum/_count for a histogram).
  void sample(std::string_view name, const MetricLabels& labels, double value);
  const std::string& text() const { return out_; }

 private:
  std::string out_;
};

// A label value as the format wants it inside double quotes.
std::string escape_label_value(std::string_view value);

}  // namespace hvd::common
