#include "json.hpp"

#include <fmt/format.h>

#include <cmath>

namespace ptxdsl::cli {

std::string json_quote(std::string_view s) {
  std::string out = "\"";
  for (char c : s) {
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
        if (static_cast<unsigned char>(c) < 0x20) {
          out += fmt::format("\\u{:04x}", static_cast<unsigned>(c));
        } else {
          out += c;
        }
    }
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
