// The Rendezvous service's handlers (daemon/rendezvous/rendezvous_service.h)
// called directly, without a server, on requests parsed from the input.
// Byte 0: the job (bit 0: elastic; bits 1-2: world size - 1; bits 3-4: extra
// elastic slots). Then records: a kind byte (bits 0-2: Join, Set, Get, Add,
// Check, Delete, Heartbeat, AwaitPromotion; bit 3: wrong credentials), a
// length byte, and that many bytes of the request's protobuf encoding
// (records that do not parse are skipped). Each call first passes the
// service's call gate (proto/call_gate.h) as GrpcServer would run it on the
// call's headers; a call the gate refuses never reaches its handler. Calls
// that wait get a 1 ms timeout; Watch streams until cancelled and is not
// called.
// Waiting handlers complete through their Done (the service's timer ends
// their waits). Checks: the gate refuses wrong credentials (UNAUTHENTICATED) and admits
// the token; a Join reply is a consistent placement; a value Set is what
// Get returns next; the Join message conversions (join_messages.h) read
// back what they write.
#include <google/protobuf/stubs/logging.h>
#include <spdlog/spdlog.h>

#include <algorithm>
#include <cstddef>
#include <cstdint>
#include <future>
#include <string>

#include "daemon/rendezvous/join_messages.h"
#include "daemon/rendezvous/rendezvous_service.h"
#include "fuzz_check.h"
#include "proto/rpc_auth.h"

namespace v1 = hvd::v1;
using hvd::daemon::RendezvousService;

namespace {

constexpr char kToken[] = "fuzz-job-token-0123456789abcdef";

// The gate's verdict on a call of `method` ("Set") with the job token (or a
// wrong one): true when the handler is to run.
bool admitted(RendezvousService& service, const char* method, bool wrong_token) {
  const std::string authorization = std::string("Bearer ") + (wrong_token ? "nope" : kToken);
  auto status = service.call_gate().admit(std::string("/hvd.v1.Rendezvous/") + method,
                                          authorization, "fuzz-peer");
  if (wrong_token) {
    FUZZ_CHECK(status.error_code() == grpc::StatusCode::UNAUTHENTICATED,
               std::string(method) + " with a wrong token: " + status.error_message());
  } else {
    FUZZ_CHECK(status.ok(), std::string(method) + " with the token: " + status.error_message());
  }
  return status.ok();
}

// A call carrying the job token, as the gate admitted it (the handlers read
// the caller's credential from it).
RendezvousService::Call authorized_call() {
  RendezvousService::Call call;
  call.authorization = std::string("Bearer ") + kToken;
  return call;
}

// A waiting handler's status, once it completes (its 1 ms timeout is the
// service's timer's to end).
template <typename Start>
grpc::Status completed(Start start) {
  std::promise<grpc::Status> status;
  auto done = status.get_future();
  start([&status](grpc::Status s) { status.set_value(std::move(s)); });
  return done.get();
}

// A handler's status: never UNAUTHENTICATED once the gate admitted the call.
void check_handled(const grpc::Status& status, const char* method) {
  FUZZ_CHECK(status.error_code() != grpc::StatusCode::UNAUTHENTICATED,
             std::string(method) + " after the gate: " + status.error_message());
}

void check_join_messages(const v1::JoinRequest& req, const v1::JoinReply& reply) {
  const hvd::common::Placement placement = hvd::daemon::from_request(req);
  v1::JoinRequest written;
  hvd::daemon::to_request(placement, &written);
  FUZZ_CHECK(hvd::daemon::from_request(written) == placement, "JoinRequest does not read back");
  const hvd::daemon::JoinResult result = hvd::daemon::from_reply(reply, req.host());
  v1::JoinReply reply2;
  hvd::daemon::to_reply(result, &reply2);
  FUZZ_CHECK(hvd::daemon::from_reply(reply2, req.host()) == result, "JoinReply does not read back");
}

void join(RendezvousService& service, const v1::JoinRequest& parsed, bool wrong) {
  v1::JoinRequest req = parsed;
  req.set_timeout_ms(1);
  v1::JoinReply reply;
  check_join_messages(parsed, reply);
  if (!admitted(service, "Join", wrong)) return;
  auto status = completed([&](RendezvousService::Done done) {
    service.join(authorized_call(), req, &reply, std::move(done));
  });
  check_handled(status, "Join");
  check_join_messages(parsed, reply);
  if (!status.ok()) return;
  FUZZ_CHECK(reply.rank() >= 0 && reply.rank() < reply.size(), reply.DebugString());
  FUZZ_CHECK(reply.local_rank() >= 0 && reply.local_rank() < reply.local_size(), reply.DebugString());
  FUZZ_CHECK(reply.cross_rank() >= 0 && reply.cross_rank() < reply.cross_size(), reply.DebugString());
}

void set_then_get(RendezvousService& service, const v1::SetRequest& req, bool wrong) {
  if (!admitted(service, "Set", wrong)) return;
  v1::SetRequest set = req;
  const std::string value = req.value();  // Set moves the value out of its request
  auto status = service.set(authorized_call(), set);
  check_handled(status, "Set");
  if (!status.ok()) return;
  v1::GetRequest get;
  get.add_keys(req.key());
  get.set_timeout_ms(1);
  v1::GetReply got;
  auto read = completed([&](RendezvousService::Done done) {
    service.get(authorized_call(), get, &got, std::move(done));
  });
  FUZZ_CHECK(read.ok(), "Get after Set: " + read.error_message());
  FUZZ_CHECK(got.values_size() == 1 && got.values(0) == value, "Get does not return what Set stored");
}

template <typename Request, typename Reply, typename Handler>
void call(RendezvousService& service, Handler handler, const Request& req, bool wrong,
          const char* method) {
  if (!admitted(service, method, wrong)) return;
  Reply reply;
  check_handled((service.*handler)(authorized_call(), req, &reply), method);
}

template <typename Request>
bool parse(Request& req, const uint8_t* data, size_t size) {
  return req.ParseFromArray(data, static_cast<int>(size));
}

}  // namespace

extern "C" int LLVMFuzzerInitialize(int*, char***) {
  spdlog::set_level(spdlog::level::off);     // refusals are logged
  google::protobuf::SetLogHandler(nullptr);  // "invalid UTF-8" on every other input
  return 0;
}

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  if (size == 0) return 0;
  const int world = 1 + ((data[0] >> 1) & 3);
  RendezvousService service(kToken, world);
  service.call_gate().mark_installed();  // as GrpcServer::start does
  if (data[0] & 1) service.enable_elastic(1, world + ((data[0] >> 3) & 3));
  size_t at = 1;
  while (at + 2 <= size) {
    const uint8_t kind = data[at];
    const size_t len = std::min<size_t>(data[at + 1], size - at - 2);
    const uint8_t* body = data + at + 2;
    at += 2 + len;
    const bool wrong = (kind & 8) != 0;
    switch (kind & 7) {
      case 0: {
        v1::JoinRequest req;
        if (parse(req, body, len)) join(service, req, wrong);
        break;
      }
      case 1: {
        v1::SetRequest req;
        if (parse(req, body, len)) set_then_get(service, req, wrong);
        break;
      }
      case 2: {
        v1::GetRequest req;
        if (!parse(req, body, len)) break;
        req.set_timeout_ms(1);
        if (!admitted(service, "Get", wrong)) break;
        v1::GetReply reply;
        check_handled(completed([&](RendezvousService::Done done) {
                        service.get(authorized_call(), req, &reply, std::move(done));
                      }),
                      "Get");
        break;
      }
      case 3: {
        v1::AddRequest req;
        if (parse(req, body, len)) {
          call<v1::AddRequest, v1::AddReply>(service, &RendezvousService::add, req, wrong, "Add");
        }
        break;
      }
      case 4: {
        v1::CheckRequest req;
        if (parse(req, body, len)) {
          call<v1::CheckRequest, v1::CheckReply>(service, &RendezvousService::check, req, wrong, "Check");
        }
        break;
      }
      case 5: {
        v1::DeleteRequest req;
        if (parse(req, body, len)) {
          call<v1::DeleteRequest, v1::DeleteReply>(service, &RendezvousService::remove, req, wrong,
                                                   "Delete");
        }
        break;
      }
      case 6: {
        v1::HeartbeatRequest req;
        if (parse(req, body, len)) {
          call<v1::HeartbeatRequest, v1::HeartbeatReply>(service, &RendezvousService::heartbeat, req,
                                                         wrong, "Heartbeat");
        }
        break;
      }
      case 7: {
        v1::PromotionRequest req;
        if (!parse(req, body, len)) break;
        req.set_timeout_ms(1);
        if (!admitted(service, "AwaitPromotion", wrong)) break;
        v1::PromotionReply reply;
        check_handled(completed([&](RendezvousService::Done done) {
                        service.await_promotion(authorized_call(), req, &reply, std::move(done));
                      }),
                      "AwaitPromotion");
        break;
      }
    }
  }
  service.close();
  return 0;
}
