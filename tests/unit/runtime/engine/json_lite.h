// A small, strict JSON parser (RFC 8259) for tests that read the files we
// write: rejects trailing commas, raw control characters in strings, bad
// escapes, lone surrogates and trailing garbage. Not for production use.
#pragma once

#include <cstdint>
#include <cstdlib>
#include <optional>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

namespace hvd::test {

struct Json {
  enum class Type { kNull, kBool, kNumber, kString, kArray, kObject };
  Type type = Type::kNull;
  bool boolean = false;
  double number = 0;
  std::string string;
  std::vector<Json> array;
  std::vector<std::pair<std::string, Json>> object;  // in file order

  // The member named `key` of an object, or nullptr.
  const Json* get(std::string_view key) const {
    for (const auto& [k, v] : object) {
      if (k == key) return &v;
    }
    return nullptr;
  }
  // The string member `key`, or "" when missing or not a string.
  std::string str(std::string_view key) const {
    const Json* v = get(key);
    return v && v->type == Type::kString ? v->string : std::string();
  }
  // The number member `key`, or `fallback`.
  double num(std::string_view key, double fallback = -1) const {
    const Json* v = get(key);
    return v && v->type == Type::kNumber ? v->number : fallback;
  }
};

class JsonParser {
 public:
  explicit JsonParser(std::string_view text) : s_(text) {}

  // The document, or nullopt with error() saying where it went wrong.
  std::optional<Json> parse() {
    Json out;
    skip_ws();
    if (!value(out, 0)) return std::nullopt;
    skip_ws();
    if (i_ != s_.size()) return fail("trailing characters");
    return out;
  }
  const std::string& error() const { return error_; }

 private:
  std::nullopt_t fail(const std::string& why) {
    if (error_.empty()) error_ = why + " at offset " + std::to_string(i_);
    return std::nullopt;
  }
  bool bad(const std::string& why) {
    fail(why);
    return false;
  }
  void skip_ws() {
    while (i_ < s_.size() && (s_[i_] == ' ' || s_[i_] == '\n' || s_[i_] == '\r' || s_[i_] == '\t')) {
      ++i_;
    }
  }
  bool literal(std::string_view word) {
    if (s_.substr(i_, word.size()) != word) return bad("bad literal");
    i_ += word.size();
    return true;
  }

  bool value(Json& out, int depth) {
    if (depth > 64) return bad("too deep");
    if (i_ >= s_.size()) return bad("unexpected end");
    const char c = s_[i_];
    if (c == '{') return object(out, depth);
    if (c == '[') return array(out, depth);
    if (c == '"') {
      out.type = Json::Type::kString;
      return string(out.string);
    }
    if (c == 't') {
      out.type = Json::Type::kBool;
      out.boolean = true;
      return literal("true");
    }
    if (c == 'f') {
      out.type = Json::Type::kBool;
      return literal("false");
    }
    if (c == 'n') return literal("null");
    return number(out);
  }

  bool object(Json& out, int depth) {
    out.type = Json::Type::kObject;
    ++i_;  // {
    skip_ws();
    if (i_ < s_.size() && s_[i_] == '}') {
      ++i_;
      return true;
    }
    for (;;) {
      skip_ws();
      if (i_ >= s_.size() || s_[i_] != '"') return bad("expected a member name");
      std::string key;
      if (!string(key)) return false;
      skip_ws();
      if (i_ >= s_.size() || s_[i_] != ':') return bad("expected ':'");
      ++i_;
      skip_ws();
      Json v;
      if (!value(v, depth + 1)) return false;
      out.object.emplace_back(std::move(key), std::move(v));
      skip_ws();
      if (i_ < s_.size() && s_[i_] == ',') {
        ++i_;
        continue;
      }
      if (i_ < s_.size() && s_[i_] == '}') {
        ++i_;
        return true;
      }
      return bad("expected ',' or '}'");
    }
  }

  bool array(Json& out, int depth) {
    out.type = Json::Type::kArray;
    ++i_;  // [
    skip_ws();
    if (i_ < s_.size() && s_[i_] == ']') {
      ++i_;
      return true;
    }
    for (;;) {
      skip_ws();
      Json v;
      if (!value(v, depth + 1)) return false;
      out.array.push_back(std::move(v));
      skip_ws();
      if (i_ < s_.size() && s_[i_] == ',') {
        ++i_;
        continue;
      }
      if (i_ < s_.size() && s_[i_] == ']') {
        ++i_;
        return true;
      }
      return bad("expected ',' or ']'");
    }
  }

  bool hex4(std::uint32_t& v) {
    if (i_ + 4 > s_.size()) return bad("short \\u escape");
    v = 0;
    for (int k = 0; k < 4; ++k) {
      const char h = s_[i_++];
      v <<= 4;
      if (h >= '0' && h <= '9') v |= static_cast<std::uint32_t>(h - '0');
      else if (h >= 'a' && h <= 'f') v |= static_cast<std::uint32_t>(h - 'a' + 10);
      else if (h >= 'A' && h <= 'F') v |= static_cast<std::uint32_t>(h - 'A' + 10);
      else return bad("bad hex digit");
    }
    return true;
  }

  static void put_utf8(std::string& out, std::uint32_t cp) {
    if (cp < 0x80) {
      out += static_cast<char>(cp);
    } else if (cp < 0x800) {
      out += static_cast<char>(0xC0 | (cp >> 6));
      out += static_cast<char>(0x80 | (cp & 0x3F));
    } else if (cp < 0x10000) {
      out += static_cast<char>(0xE0 | (cp >> 12));
      out += static_cast<char>(0x80 | ((cp >> 6) & 0x3F));
      out += static_cast<char>(0x80 | (cp & 0x3F));
    } else {
      out += static_cast<char>(0xF0 | (cp >> 18));
      out += static_cast<char>(0x80 | ((cp >> 12) & 0x3F));
      out += static_cast<char>(0x80 | ((cp >> 6) & 0x3F));
      out += static_cast<char>(0x80 | (cp & 0x3F));
    }
  }

  bool string(std::string& out) {
    ++i_;  // opening quote
    for (;;) {
      if (i_ >= s_.size()) return bad("unterminated string");
      const auto c = static_cast<unsigned char>(s_[i_++]);
      if (c == '"') return true;
      if (c < 0x20) return bad("raw control character in a string");
      if (c != '\\') {
        out += static_cast<char>(c);
        continue;
      }
      if (i_ >= s_.size()) return bad("unterminated escape");
      switch (s_[i_++]) {
        case '"': out += '"'; break;
        case '\\': out += '\\'; break;
        case '/': out += '/'; break;
        case 'b': out += '\b'; break;
        case 'f': out += '\f'; break;
        case 'n': out += '\n'; break;
        case 'r': out += '\r'; break;
        case 't': out += '\t'; break;
        case 'u': {
          std::uint32_t cp = 0;
          if (!hex4(cp)) return false;
          if (cp >= 0xDC00 && cp <= 0xDFFF) return bad("lone low surrogate");
          if (cp >= 0xD800 && cp <= 0xDBFF) {
            std::uint32_t lo = 0;
            if (s_.substr(i_, 2) != "\\u") return bad("lone high surrogate");
            i_ += 2;
            if (!hex4(lo)) return false;
            if (lo < 0xDC00 || lo > 0xDFFF) return bad("bad low surrogate");
            cp = 0x10000 + ((cp - 0xD800) << 10) + (lo - 0xDC00);
          }
          put_utf8(out, cp);
          break;
        }
        default: return bad("bad escape");
      }
    }
  }

  bool number(Json& out) {
    const std::size_t start = i_;
    auto digits = [&] {
      const std::size_t from = i_;
      while (i_ < s_.size() && s_[i_] >= '0' && s_[i_] <= '9') ++i_;
      return i_ - from;
    };
    if (i_ < s_.size() && s_[i_] == '-') ++i_;
    if (i_ < s_.size() && s_[i_] == '0') {
      ++i_;
    } else if (digits() == 0) {
      return bad("bad value");
    }
    if (i_ < s_.size() && s_[i_] == '.') {
      ++i_;
      if (digits() == 0) return bad("bad fraction");
    }
    if (i_ < s_.size() && (s_[i_] == 'e' || s_[i_] == 'E')) {
      ++i_;
      if (i_ < s_.size() && (s_[i_] == '+' || s_[i_] == '-')) ++i_;
      if (digits() == 0) return bad("bad exponent");
    }
    out.type = Json::Type::kNumber;
    out.number = std::strtod(std::string(s_.substr(start, i_ - start)).c_str(), nullptr);
    return true;
  }

  std::string_view s_;
  std::size_t i_ = 0;
  std::string error_;
};

}  // namespace hvd::test
