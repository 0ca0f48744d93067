# One fuzz target per name: fuzz_<name>.cc, seeds in corpus/<name>/, crash
# inputs in regressions/<name>/ (README.md). Read by CMakeLists.txt (the
# nested clang project) and fuzz.cmake (the ctest tests of the main build).
set(HVD_FUZZ_TARGETS
  host_list      # launcher/host_spec.h: parse_host_list, parse_host_token (-H)
  hostfile       # launcher/host_spec.h: parse_hostfile_text
  discovery      # launcher/host_discovery.h: parse_discovery_output
  config         # config/settings.h: Settings::apply_config_file (YAML)
  engine_codec   # runtime/engine/message_codec.h: decode_requests, encode_requests, HeaderView
  rendezvous     # daemon/rendezvous: the Rendezvous handlers on parsed requests
  agent          # daemon/agent/agent_requests.h: check_launch, check_job_id
  secret         # common/secret_file.h: check_secret
  token          # proto/rpc_auth.h check_token, proto/agent_auth.h AgentProofChecker
  http           # common/http_request.h: http_head_length, parse_http_request (--metrics-port)
)
