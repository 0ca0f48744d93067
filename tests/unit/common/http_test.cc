#include <catch2/catch.hpp>

#include "common/http_request.h"
#include "common/http_server.h"
#include "common/prometheus_text.h"

using namespace hvd::common;

TEST_CASE("http_head_length finds the end of a request head") {
  CHECK_FALSE(http_head_length("GET / HTTP/1.1\r\nHost: x\r\n").has_value());
  CHECK(http_head_length("GET / HTTP/1.1\r\nHost: x\r\n\r\nbody") == 27u);
}

TEST_CASE("parse_http_request takes the method and path, refusing bad lines by name") {
  auto r = parse_http_request("GET /metrics?x=1 HTTP/1.1\r\nHost: a\r\n\r\n");
  REQUIRE(r.is_ok());
  CHECK(r->method == "GET");
  CHECK(r->path == "/metrics");
  CHECK(r->query == "x=1");
  auto bad = parse_http_request("GET /a HTTP/2\r\n\r\n");
  REQUIRE_FALSE(bad.is_ok());
  CHECK(bad.status().message() == "bad HTTP version 'HTTP/2'");
  CHECK_FALSE(parse_http_request("GET nothing HTTP/1.1\r\n\r\n").is_ok());
  CHECK_FALSE(parse_http_request("garbage\r\n\r\n").is_ok());
}

TEST_CASE("render_http_response closes the connection and sizes the body") {
  const std::string out = render_http_response({404, "text/plain", "no\n"}, false);
  CHECK(out.rfind("HTTP/1.1 404 Not Found\r\n", 0) == 0);
  CHECK(out.find("Content-Length: 3\r\n") != std::string::npos);
  CHECK(out.find("Connection: close\r\n") != std::string::npos);
  CHECK(out.substr(out.size() - 3) == "no\n");
  CHECK(render_http_response({200, "text/plain", "body"}, true).find("body") == std::string::npos);
}

TEST_CASE("HttpServer refuses an address that is not an IP literal, naming it") {
  auto s = HttpServer::start("localhost-ish", 0, [](const HttpRequest&) { return HttpResponse{}; });
  REQUIRE_FALSE(s.is_ok());
  CHECK(s.status().message() == "metrics address 'localhost-ish' is not an IP address");
}

TEST_CASE("PrometheusText writes families and escapes label values") {
  PrometheusText out;
  out.family("hvd_x_total", "counter", "Things");
  out.sample("hvd_x_total", {{"host", "a\"b\\c\nd"}}, 3);
  out.sample("hvd_x_total", {}, 0.5);
  CHECK(out.text() ==
        "# HELP hvd_x_total Things\n# TYPE hvd_x_total counter\n"
        "hvd_x_total{host=\"a\\\"b\\\\c\\nd\"} 3\nhvd_x_total 0.5\n");
}
