#include "agent_fixture.h"

#include <catch2/catch.hpp>

#include "proto/agent_auth.h"

namespace hvd::daemon::test {

AgentFixture::AgentFixture(AgentOptions options, ServerOptions server_options)
    : service(std::move(options)) {
  auto started = GrpcServer::start("127.0.0.1", 0, {&service}, server_options);
  REQUIRE(started.is_ok());
  server = std::move(started).value();
  stub = hvd::v1::Agent::NewStub(
      grpc::CreateChannel(server->address(), grpc::InsecureChannelCredentials()));
}

AgentFixture::~AgentFixture() {
  service.shutdown(std::chrono::milliseconds(1000));
  server->shutdown(std::chrono::milliseconds(1000));
}

std::unique_ptr<grpc::ClientContext> agent_context(const char* method, const std::string& secret,
                                                   std::chrono::milliseconds deadline) {
  auto ctx = std::make_unique<grpc::ClientContext>();
  ctx->set_deadline(std::chrono::system_clock::now() + deadline);
  if (!secret.empty()) hvd::proto::attach_agent_proof(*ctx, secret, method);
  return ctx;
}

hvd::v1::LaunchRequest launch_request(const std::string& job_id,
                                      const std::vector<std::vector<std::string>>& argvs) {
  hvd::v1::LaunchRequest req;
  req.set_job_id(job_id);
  int rank = 0;
  for (const auto& argv : argvs) {
    auto* w = req.add_workers();
    w->set_rank(rank++);
    for (const auto& a : argv) w->add_argv(a);
    (*w->mutable_env())["PATH"] = "/usr/bin:/bin";
  }
  return req;
}

WatchResult watch_job(hvd::v1::Agent::Stub& stub, const std::string& job_id,
                      const std::string& secret) {
  auto ctx = agent_context("Agent.Watch", secret);
  hvd::v1::WatchRequest req;
  req.set_job_id(job_id);
  auto reader = stub.Watch(ctx.get(), req);
  WatchResult result;
  hvd::v1::WatchEvent event;
  while (reader->Read(&event)) result.events.push_back(event);
  result.status = reader->Finish();
  return result;
}

}  // namespace hvd::daemon::test
