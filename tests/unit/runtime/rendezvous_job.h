// One job's Rendezvous service for runtime tests, served in-process on
// 127.0.0.1 (port chosen by the kernel), and the environment of its ranks.
#pragma once

#include <catch2/catch.hpp>

#include <chrono>
#include <memory>
#include <string>

#include "proto/grpc_server.h"
#include "daemon/rendezvous/rendezvous_service.h"
#include "fake_env.h"

namespace hvd::runtime::testing {

inline constexpr char kToken[] = "0123456789abcdef-job-token";

struct Job {
  // elastic_min > 0: an elastic job (rounds of at least that many workers).
  explicit Job(int size, int elastic_min = 0) : service(kToken, size) {
    if (elastic_min > 0) service.enable_elastic(elastic_min);
    auto started = daemon::GrpcServer::start("127.0.0.1", 0, {&service});
    REQUIRE(started.is_ok());
    server = std::move(started).value();
  }
  ~Job() {
    service.close();
    server->shutdown(std::chrono::milliseconds(100));
  }

  Env env(int rank, int size) const {
    return {{"HVD_RANK", std::to_string(rank)},       {"HVD_SIZE", std::to_string(size)},
            {"HVD_RENDEZVOUS_ADDR", server->address()}, {"HVD_JOB_TOKEN", kToken},
            {"HVD_HOSTNAME", "testhost"},               {"HVD_START_TIMEOUT", "20"},
            {"HVD_TRANSPORT_TIMEOUT_SECONDS", "10"}};
  }

  daemon::RendezvousService service;
  std::unique_ptr<daemon::GrpcServer> server;
};

}  // namespace hvd::runtime::testing
