#include <yaml-cpp/yaml.h>

#include <catch2/catch.hpp>
#include <map>
#include <string>

#include "config/settings.h"
#include "tests/unit/support/temp_file.h"
#include "tests/unit/support/untrusted_input.h"

using namespace hvd::config;

TEST_CASE("every setting has a unique key and an HVD_ name and a valid default") {
  std::map<std::string, int> keys;
  for (const auto& s : all_settings()) {
    CHECK(++keys[std::string(s.key)] == 1);
    CHECK(std::string(s.env).rfind("HVD_", 0) == 0);
    CHECK(validate_setting(s, s.default_value, "default").is_ok());
    CHECK(find_setting(s.key) == &s);
  }
  CHECK(find_setting("no_such_setting") == nullptr);
}

TEST_CASE("config/hvd.yaml lists every setting at its default and nothing else") {
  YAML::Node root = YAML::LoadFile(HVD_DEFAULT_CONFIG);
  REQUIRE(root.IsMap());
  CHECK(root.size() == all_settings().size());
  for (const auto& s : all_settings()) {
    INFO("key " << s.key);
    REQUIRE(root[std::string(s.key)]);
    CHECK(root[std::string(s.key)].as<std::string>() == s.default_value);
  }
}

TEST_CASE("precedence: later layers override earlier ones") {
  Settings settings;
  CHECK(settings.get("start_timeout") == "30");
  REQUIRE(settings.apply_config_file(hvd::test::write_temp_file("start_timeout: 40\nlog_level: info\n")).is_ok());
  CHECK(settings.get_int("start_timeout") == 40);
  std::map<std::string, std::string> env = {{"HOROVOD_START_TIMEOUT", "50"},
                                            {"HVD_LOG_LEVEL", "debug"}};
  auto lookup = [&](const char* name) -> const char* {
    auto it = env.find(name);
    return it == env.end() ? nullptr : it->second.c_str();
  };
  REQUIRE(settings.apply_environment(lookup).is_ok());
  CHECK(settings.get_int("start_timeout") == 50);
  CHECK(settings.get("log_level") == "debug");
  env["HVD_START_TIMEOUT"] = "60";  // the HVD_ name wins over the HOROVOD_ alias
  REQUIRE(settings.apply_environment(lookup).is_ok());
  CHECK(settings.get_int("start_timeout") == 60);
  REQUIRE(settings.set("start_timeout", "70", "--start-timeout").is_ok());
  CHECK(settings.to_environment().at("HVD_START_TIMEOUT") == "70");
}

TEST_CASE("bad values and keys name the token and the source") {
  Settings settings;
  auto s = settings.set("start_timeout", "abc", "--start-timeout");
  CHECK(s.code() == hvd::common::StatusCode::kInvalidArgument);
  CHECK(s.message() == "--start-timeout: 'abc' is not a whole number greater than 0");
  CHECK_FALSE(settings.set("start_timeout", "0", "x").is_ok());
  CHECK_FALSE(settings.set("start_timeout", "5s", "x").is_ok());
  CHECK(settings.set("log_level", "loud", "HVD_LOG_LEVEL").message().find("'loud'") !=
        std::string::npos);
  auto unknown = settings.apply_config_file(hvd::test::write_temp_file("fusion_treshold: 3\n"));
  CHECK(unknown.message().find("unknown setting 'fusion_treshold'") != std::string::npos);
  auto missing = settings.apply_config_file("/nonexistent/hvd.yaml");
  CHECK(missing.message() == "config file '/nonexistent/hvd.yaml' cannot be read");
  CHECK_FALSE(settings.apply_config_file(hvd::test::write_temp_file("- a\n- b\n")).is_ok());
  CHECK(settings.get_int("start_timeout") == 30);  // nothing bad was kept
}

TEST_CASE("sizes take suffixes and are kept in bytes; counts allow 0; numbers allow fractions") {
  Settings settings;
  REQUIRE(settings.set("fusion_threshold", "64MiB", "--fusion-threshold").is_ok());
  CHECK(settings.get_int("fusion_threshold") == 64LL << 20);
  CHECK(settings.to_environment().at("HVD_FUSION_THRESHOLD") == "67108864");
  REQUIRE(settings.set("fusion_threshold", "512k", "x").is_ok());
  CHECK(settings.get_int("fusion_threshold") == 512 * 1024);
  REQUIRE(settings.set("fusion_threshold", "0", "x").is_ok());
  CHECK(settings.get_int("fusion_threshold") == 0);
  CHECK(settings.set("fusion_threshold", "64XB", "--fusion-threshold").message() ==
        "--fusion-threshold: '64XB' is not a size in bytes (e.g. 67108864, 64MiB, 512K)");
  CHECK_FALSE(settings.set("fusion_threshold", "-1", "x").is_ok());
  REQUIRE(settings.set("cache_capacity", "0", "x").is_ok());
  CHECK_FALSE(settings.set("cache_capacity", "-3", "x").is_ok());
  REQUIRE(settings.set("cycle_time_ms", "0.5", "x").is_ok());
  CHECK(settings.get_double("cycle_time_ms") == 0.5);
  CHECK_FALSE(settings.set("cycle_time_ms", "0", "x").is_ok());
  CHECK_FALSE(settings.set("cycle_time_ms", "fast", "x").is_ok());
  CHECK_FALSE(settings.set("cycle_time_ms", "nan", "x").is_ok());
  REQUIRE(settings.set("timeline_filename", "", "x").is_ok());
  REQUIRE(settings.set("timeline_filename", "/tmp/t.json", "x").is_ok());
}

TEST_CASE("booleans take the usual words and are kept as true/false") {
  Settings settings;
  CHECK_FALSE(settings.get_bool("autotune"));
  for (const char* yes : {"1", "true", "YES", "On"}) {
    REQUIRE(settings.set("autotune", yes, "x").is_ok());
    CHECK(settings.get("autotune") == "true");
  }
  REQUIRE(settings.set("autotune", "off", "x").is_ok());
  CHECK(settings.to_environment().at("HVD_AUTOTUNE") == "false");
  CHECK(settings.set("autotune", "2", "HOROVOD_AUTOTUNE").message() ==
        "HOROVOD_AUTOTUNE: '2' is not a boolean (true/false, 1/0, yes/no, on/off)");
  CHECK_FALSE(settings.set("autotune", "", "x").is_ok());
}

// Issue 21: the last of two equal keys won silently.
TEST_CASE("a config file that gives a key twice is refused naming the key and both lines") {
  Settings settings;
  const std::string path =
      hvd::test::write_temp_file("start_timeout: 40\nlog_level: info\nstart_timeout: 50\n");
  auto s = settings.apply_config_file(path);
  REQUIRE_FALSE(s.is_ok());
  CHECK(s.code() == hvd::common::StatusCode::kInvalidArgument);
  CHECK_THAT(s.message(), Catch::Contains(path) && Catch::Contains("'start_timeout'") &&
                              Catch::Contains("line 3") && Catch::Contains("line 1"));
  CHECK(settings.get("start_timeout") == "30");  // nothing of the file applied
}

// Issue 21: bytes from a file are escaped in messages, never echoed raw.
TEST_CASE("control and non-ASCII bytes in a bad value are escaped in the message") {
  Settings settings;
  auto s = settings.set("start_timeout", std::string("1\x1b[2J\xff", 6), "--start-timeout");
  REQUIRE_FALSE(s.is_ok());
  CHECK_THAT(s.message(), Catch::Contains("'1\\x1b[2J\\xff'"));
  CHECK(hvd::test::printable_ascii(s.message()));
}
