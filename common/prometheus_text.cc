#include "common/prometheus_text.h"

#include <cmath>
#include <cstdio>

namespace hvd::common {

std::string escape_label_value(std::string_view value) {
  std::string out;
  out.reserve(value.size());
  for (char c : value) {
    if (c == '\\') {
      out += "\\\\";
    } else if (c == '"') {
      out += "\\\"";
    } else if (c == '\n') {
      out += "\\n";
    } else {
      out += c;
    }
  }
  return out;
}

void PrometheusText::family(std::string_view name, std::string_view type, std::string_view help) {
  out_.append("# HELP ").append(name).append(" ").append(help).append("\n");
  out_.append("# TYPE ").append(name).append(" ").append(type).append("\n");
}

void PrometheusText::sample(std::string_view name, const MetricLabels& labels, double value) {
  out_.append(name);
  if (!labels.empty()) {
    out_ += '{';
    for (size_t i = 0; i < labels.size(); ++i) {
      if (i > 0) out_ += ',';
      out_.append(labels[i].first).append("=\"").append(escape_label_value(labels[i].second));
      out_ += '"';
    }
    out_ += '}';
  }
  char number[64];
  if (std::isinf(value)) {
    std::snprintf(number, sizeof(number), "%s", value > 0 ? "+Inf" : "-Inf");
  } else if (value == std::floor(value) && std::fabs(value) < 1e15) {
    std::snprintf(number, sizeof(number), "%.0f", value);
  } else {
    std::snprintf(number, sizeof(number), "%.9g", value);
  }
  out_.append(" ").append(number).append("\n");
}

}  // namespace hvd::common
