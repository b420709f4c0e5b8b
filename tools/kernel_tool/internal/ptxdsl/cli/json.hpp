#pragma once

#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

// A small streaming JSON writer: enough for launch contracts and benchmark results, with
// two-space indentation so that people can read what machines read.
namespace ptxdsl::cli {

class JsonWriter {
 public:
  // `inline_`: the container on one line (and everything inside it).
  JsonWriter& begin_object(bool inline_ = false);
  JsonWriter& end_object();
  JsonWriter& begin_array(bool inline_ = false);
  JsonWriter& end_array();
  JsonWriter& key(std::string_view name);
  JsonWriter& value(std::string_view s);
  JsonWriter& value(const char* s) { return value(std::string_view(s)); }
  JsonWriter& value(const std::string& s) { return value(std::string_view(s)); }
  JsonWriter& value(bool b);
  JsonWriter& value(std::int64_t v);
  JsonWriter& value(std::uint64_t v);
  JsonWriter& value(std::uint32_t v) { return value(static_cast<std::uint64_t>(v)); }
  JsonWriter& value(int v) { return value(static_cast<std::int64_t>(v)); }
  JsonWriter& value(double v);  // NaN and infinities become null
  JsonWriter& null();
  template <class T>
  JsonWriter& field(std::string_view name, const T& v) {
    key(name);
    return value(v);
  }
  // The text so far, newline-terminated once the outermost value is closed.
  const std::string& str() const { return out_; }

 private:
  void before_value();
  void open(char c, bool inline_);
  void close(char c);
  struct Level {
    bool first = true;  // no element written yet
    bool inline_ = false;
  };
  std::string out_;
  std::vector<Level> levels_;
  bool after_key_ = false;
};

std::string json_quote(std::string_view s);

}  // namespace ptxdsl::cli
