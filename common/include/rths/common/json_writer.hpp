#pragma once

#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

namespace rths {

// Minimal streaming JSON writer for summaries: objects, arrays, numbers, strings, booleans.
// Non-finite numbers are written as null (JSON has no NaN).
class JsonWriter {
 public:
  JsonWriter& begin_object();
  JsonWriter& end_object();
  JsonWriter& begin_array();
  JsonWriter& end_array();
  JsonWriter& key(std::string_view name);
  JsonWriter& value(double v);
  JsonWriter& value(std::int64_t v);
  JsonWriter& value(std::uint64_t v);
  JsonWriter& value(bool v);
  JsonWriter& value(std::string_view v);
  JsonWriter& value(const char* v) { return value(std::string_view(v)); }
  // A value that is already JSON text (another writer's str()), written as it is.
  JsonWriter& raw(std::string_view json);
  template <typename T>
  JsonWriter& field(std::string_view name, const T& v) {
    key(name);
    return value(v);
  }
  [[nodiscard]] const std::string& str() const { return out_; }

 private:
  void separate();
  void indent();
  std::string out_;
  std::vector<bool> first_;  // per open container: nothing written in it yet
  bool after_key_ = false;
};

}  // namespace rths
