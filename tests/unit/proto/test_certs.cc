#include "test_certs.h"

#include <stdlib.h>

#include <catch2/catch.hpp>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <sstream>

namespace hvd::proto::test {

namespace {

// Runs a shell command with its output in dir/openssl.log; true on success.
bool run(const std::string& dir, const std::string& command) {
  const std::string line = "cd '" + dir + "' && " + command + " >>openssl.log 2>&1";
  return std::system(line.c_str()) == 0;
}

// EC keys: quick to generate, even on a busy machine.
constexpr char kNewKey[] = "-newkey ec -pkeyopt ec_paramgen_curve:prime256v1 -nodes";

bool make_ca(const std::string& dir, const std::string& name) {
  return run(dir, std::string("openssl req -x509 ") + kNewKey + " -keyout " + name + ".key -out " +
                      name + ".pem -days 2 -subj /CN=" + name +
                      " -addext basicConstraints=critical,CA:TRUE"
                      " -addext keyUsage=critical,keyCertSign,cRLSign");
}

// A certificate signed by `ca` (ca.pem and ca.key in `dir`), valid for
// `days` from now (-1: expired a day ago).
bool make_leaf(const std::string& dir, const std::string& name, const std::string& extensions,
               const std::string& ca = "ca", int days = 2) {
  std::ofstream(dir + "/" + name + ".ext") << extensions << "\n";
  return run(dir, std::string("openssl req ") + kNewKey + " -keyout " + name + ".key -out " + name +
                      ".csr -subj /CN=" + name) &&
         run(dir, "openssl x509 -req -in " + name + ".csr -CA " + ca + ".pem -CAkey " + ca +
                      ".key -CAcreateserial -out " + name + ".pem -days " + std::to_string(days) +
                      " -extfile " + name + ".ext");
}

}  // namespace

std::optional<TestCerts> make_test_certs(std::string* why) {
  if (std::system("openssl version >/dev/null 2>&1") != 0) {
    *why = "the openssl command is not installed";
    return std::nullopt;
  }
  char tmpl[] = "/tmp/hvd-tls-test-XXXXXX";
  if (::mkdtemp(tmpl) == nullptr) {
    *why = "cannot create a temporary directory";
    return std::nullopt;
  }
  TestCerts certs;
  certs.dir = tmpl;
  const bool ok =
      make_ca(certs.dir, "ca") && make_ca(certs.dir, "other-ca") &&
      make_leaf(certs.dir, "server",
                "subjectAltName=IP:127.0.0.1,DNS:localhost\nextendedKeyUsage=serverAuth") &&
      make_leaf(certs.dir, "client", "extendedKeyUsage=clientAuth") &&
      make_leaf(certs.dir, "rogue", "extendedKeyUsage=clientAuth", "other-ca") &&
      make_leaf(certs.dir, "expired", "extendedKeyUsage=clientAuth", "ca", -1);
  if (!ok) {
    *why = "openssl failed: " + read_file(certs.dir + "/openssl.log");
    remove_test_certs(certs);
    return std::nullopt;
  }
  certs.ca = certs.dir + "/ca.pem";
  certs.other_ca = certs.dir + "/other-ca.pem";
  certs.server_cert = certs.dir + "/server.pem";
  certs.server_key = certs.dir + "/server.key";
  certs.client_cert = certs.dir + "/client.pem";
  certs.client_key = certs.dir + "/client.key";
  certs.rogue_cert = certs.dir + "/rogue.pem";
  certs.rogue_key = certs.dir + "/rogue.key";
  certs.expired_cert = certs.dir + "/expired.pem";
  certs.expired_key = certs.dir + "/expired.key";
  return certs;
}

const TestCerts* shared_test_certs(std::string* why) {
  struct Shared {
    Shared() { certs = make_test_certs(&reason); }
    ~Shared() {
      if (certs) remove_test_certs(*certs);
    }
    std::optional<TestCerts> certs;
    std::string reason;
  };
  static Shared shared;
  *why = shared.reason;
  return shared.certs ? &*shared.certs : nullptr;
}

const TestCerts* shared_test_certs_or_warn() {
  std::string why;
  const TestCerts* certs = shared_test_certs(&why);
  if (!certs) WARN("skipped: " << why);
  return certs;
}

void remove_test_certs(const TestCerts& certs) {
  std::error_code ec;
  std::filesystem::remove_all(certs.dir, ec);
}

std::string read_file(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  std::ostringstream text;
  text << in.rdbuf();
  return text.str();
}

}  // namespace hvd::proto::test
