// libFuzzer target: the experiment config parser, the `--set` overrides and the validator
// (rths::parse_experiment, rths::apply_override, rths::validate).
//
// Input: a text-format Experiment; optionally a line `%%` after it, and one override
// (`PATH=VALUE`, as after `--set`) per line after that.
//
// Findings: a crash or sanitizer report; any exception other than rths::ConfigError (every bad
// config must end as one clear line, exit code 2); an override that throws but changed the
// experiment (apply_override promises to leave it unchanged); a config that validates but whose
// canonical text (written into every run folder as the config used) no longer loads.
#include <cstddef>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <exception>
#include <string>
#include <string_view>
#include <vector>

#include <google/protobuf/io/coded_stream.h>
#include <google/protobuf/io/tokenizer.h>
#include <google/protobuf/io/zero_copy_stream_impl_lite.h>
#include <google/protobuf/text_format.h>

#include "common/config/config.hpp"

namespace {

constexpr std::string_view kSource = "fuzz.textproto";

[[noreturn]] void finding(const std::string& what) {
  std::fprintf(stderr, "fuzz_config finding: %s\n", what.c_str());
  std::abort();
}

struct Input {
  std::string text;
  std::vector<std::string> overrides;
};

Input split(std::string_view data) {
  Input input;
  constexpr std::string_view kMarker = "\n%%\n";
  const std::size_t marker = data.starts_with("%%\n") ? 0 : data.find(kMarker);
  if (marker == std::string_view::npos) {
    input.text = data;
    return input;
  }
  input.text = data.substr(0, marker);
  std::string_view rest = data.substr(marker == 0 ? 3 : marker + kMarker.size());
  while (!rest.empty()) {
    const std::size_t end = rest.find('\n');
    input.overrides.emplace_back(rest.substr(0, end));
    rest = end == std::string_view::npos ? std::string_view{} : rest.substr(end + 1);
  }
  return input;
}

// Parse errors are part of the search, not news: the collector keeps them quiet.
class Silent final : public google::protobuf::io::ErrorCollector {
 public:
  void AddError(int /*line*/, int /*column*/, const std::string& /*message*/) override {}
  void AddWarning(int /*line*/, int /*column*/, const std::string& /*message*/) override {}
};

// The experiment as protobuf reads it, before any override or validation.
bool parse_unvalidated(const std::string& text, rths::config::Experiment& experiment) {
  Silent silent;
  google::protobuf::TextFormat::Parser parser;
  parser.RecordErrorsTo(&silent);
  return parser.ParseFromString(text, &experiment);
}

// Byte-exact and deterministic: an unchanged message serialises the same (NaN fields included,
// which a field-by-field comparison would call different).
std::string bytes_of(const rths::config::Experiment& experiment) {
  std::string out;
  google::protobuf::io::StringOutputStream stream(&out);
  google::protobuf::io::CodedOutputStream coded(&stream);
  coded.SetSerializationDeterministic(true);
  experiment.SerializeToCodedStream(&coded);
  coded.Trim();
  return out;
}

template <typename Call>
void expect_only_config_errors(const char* what, const Call& call) {
  try {
    call();
  } catch (const rths::ConfigError&) {
    return;  // the one way a config may be refused
  } catch (const std::exception& e) {
    finding(std::string(what) + " threw something other than ConfigError: " + e.what());
  } catch (...) {
    finding(std::string(what) + " threw a non-std exception");
  }
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  // NOLINTNEXTLINE(cppcoreguidelines-pro-type-reinterpret-cast): libFuzzer hands bytes, the parser reads text
  const Input input = split(std::string_view(reinterpret_cast<const char*>(data), size));
  const std::string source(kSource);

  // The path every command takes: parse, apply the overrides in order, validate.
  expect_only_config_errors("parse_experiment", [&] {
    const rths::config::Experiment experiment = rths::parse_experiment(input.text, source, input.overrides);
    // The config used, as a run folder keeps it, must load again.
    try {
      (void)rths::parse_experiment(rths::to_text(experiment), source);
    } catch (const std::exception& e) {
      finding(std::string("a validated config does not load again from its canonical text: ") + e.what());
    }
  });

  // The parts on their own, on whatever protobuf accepts (valid or not).
  rths::config::Experiment experiment;
  if (!parse_unvalidated(input.text, experiment)) {
    return 0;
  }
  for (const std::string& assignment : input.overrides) {
    const std::string before = bytes_of(experiment);
    try {
      rths::apply_override(experiment, assignment);
    } catch (const rths::ConfigError&) {
      if (bytes_of(experiment) != before) {
        finding("apply_override(\"" + assignment + "\") threw ConfigError but changed the experiment");
      }
    } catch (const std::exception& e) {
      finding("apply_override(\"" + assignment + "\") threw something other than ConfigError: " + e.what());
    }
  }
  expect_only_config_errors("validate", [&] { rths::validate(experiment, source); });
  return 0;
}
