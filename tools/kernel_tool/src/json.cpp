#include "ptxdsl/cli/json.hpp"

#include <fmt/format.h>

#include <cmath>

namespace ptxdsl::cli {

namespace {

// The length of the well-formed UTF-8 sequence at the start of `s` (RFC 3629: no overlong forms,
// no surrogates, nothing past U+10FFFF), or 0 where it is not one.
std::size_t utf8_sequence(std::string_view s) {
  const auto byte = [&](std::size_t i) { return static_cast<unsigned char>(s[i]); };
  const unsigned char b0 = byte(0);
  std::size_t n = 0;
  unsigned char lo = 0x80, hi = 0xBF;  // the second byte's range
  if (b0 >= 0xC2 && b0 <= 0xDF) {
    n = 2;
  } else if (b0 >= 0xE0 && b0 <= 0xEF) {
    n = 3;
    if (b0 == 0xE0) lo = 0xA0;
    if (b0 == 0xED) hi = 0x9F;
  } else if (b0 >= 0xF0 && b0 <= 0xF4) {
    n = 4;
    if (b0 == 0xF0) lo = 0x90;
    if (b0 == 0xF4) hi = 0x8F;
  } else {
    return 0;
  }
  if (s.size() < n || byte(1) < lo || byte(1) > hi) return 0;
  for (std::size_t i = 2; i < n; ++i) {
    if (byte(i) < 0x80 || byte(i) > 0xBF) return 0;
  }
  return n;
}

}  // namespace

std::string json_quote(std::string_view s) {
  std::string out = "\"";
  for (std::size_t i = 0; i < s.size();) {
    const auto c = static_cast<unsigned char>(s[i]);
    if (c >= 0x80) {
      // Text such as a file name need not be UTF-8, and JSON must be: a byte that starts no
      // well-formed sequence becomes U+FFFD.
      const std::size_t n = utf8_sequence(s.substr(i));
      if (n == 0) {
        out += "\\ufffd";
        ++i;
      } else {
        out.append(s.substr(i, n));
        i += n;
      }
      continue;
    }
    switch (c) {
      case '"':
        out += "\\\"";
        break;
      case '\\':
        out += "\\\\";
        break;
      case '\n':
        out += "\\n";
        break;
      case '\t':
        out += "\\t";
        break;
      case '\r':
        out += "\\r";
        break;
      default:
        if (c < 0x20 || c == 0x7F) {
          out += fmt::format("\\u{:04x}", static_cast<unsigned>(c));
        } else {
          out += static_cast<char>(c);
        }
    }
    ++i;
  }
  return out + "\"";
}

void JsonWriter::before_value() {
  if (after_key_) {
    after_key_ = false;
    return;
  }
  if (levels_.empty()) return;
  Level& level = levels_.back();
  if (level.inline_) {
    if (!level.first) out_ += ", ";
  } else {
    if (!level.first) out_ += ',';
    out_ += '\n';
    out_.append(2 * levels_.size(), ' ');
  }
  level.first = false;
}

void JsonWriter::open(char c, bool inline_) {
  before_value();
  out_ += c;
  levels_.push_back({true, inline_ || (!levels_.empty() && levels_.back().inline_)});
}

void JsonWriter::close(char c) {
  const Level level = levels_.back();
  levels_.pop_back();
  if (!level.first && !level.inline_) {
    out_ += '\n';
    out_.append(2 * levels_.size(), ' ');
  }
  out_ += c;
  if (levels_.empty()) out_ += '\n';
}

JsonWriter& JsonWriter::begin_object(bool inline_) {
  open('{', inline_);
  return *this;
}
JsonWriter& JsonWriter::end_object() {
  close('}');
  return *this;
}
JsonWriter& JsonWriter::begin_array(bool inline_) {
  open('[', inline_);
  return *this;
}
JsonWriter& JsonWriter::end_array() {
  close(']');
  return *this;
}

JsonWriter& JsonWriter::key(std::string_view name) {
  before_value();
  out_ += json_quote(name);
  out_ += ": ";
  after_key_ = true;
  return *this;
}

JsonWriter& JsonWriter::value(std::string_view s) {
  before_value();
  out_ += json_quote(s);
  return *this;
}
JsonWriter& JsonWriter::value(bool b) {
  before_value();
  out_ += b ? "true" : "false";
  return *this;
}
JsonWriter& JsonWriter::value(std::int64_t v) {
  before_value();
  out_ += fmt::format("{}", v);
  return *this;
}
JsonWriter& JsonWriter::value(std::uint64_t v) {
  before_value();
  out_ += fmt::format("{}", v);
  return *this;
}
JsonWriter& JsonWriter::value(double v) {
  before_value();
  out_ += std::isfinite(v) ? fmt::format("{}", v) : std::string("null");
  return *this;
}
JsonWriter& JsonWriter::null() {
  before_value();
  out_ += "null";
  return *this;
}

}  // namespace ptxdsl::cli
