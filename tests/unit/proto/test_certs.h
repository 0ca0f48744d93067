// A throw-away PKI for TLS tests, made with the openssl command-line tool in
// a fresh temporary directory: a CA, a server certificate for 127.0.0.1 and
// localhost, and a client certificate, all signed by the CA, plus a second
// CA, a client certificate it signed (rogue) and an expired client
// certificate of the first CA.
#pragma once

#include <optional>
#include <string>

namespace hvd::proto::test {

struct TestCerts {
  std::string dir;
  std::string ca, server_cert, server_key, client_cert, client_key;
  std::string other_ca;  // an unrelated CA
  std::string rogue_cert, rogue_key;      // CN=rogue, a client of other_ca
  std::string expired_cert, expired_key;  // CN=expired, a client of ca, expired a day ago
};

// std::nullopt with `why` set when openssl is missing or fails (the caller
// skips its test, saying why).
std::optional<TestCerts> make_test_certs(std::string* why);

// One set made on first use and removed at exit; nullptr (with `why`) when
// it cannot be made.
const TestCerts* shared_test_certs(std::string* why);

// shared_test_certs(), or nullptr after a Catch2 WARN saying why: the test
// then returns (skipped) with `if (!certs) return;`.
const TestCerts* shared_test_certs_or_warn();

// Removes the directory of the certificates.
void remove_test_certs(const TestCerts& certs);

// The contents of a file ("" when it cannot be read).
std::string read_file(const std::string& path);

}  // namespace hvd::proto::test
