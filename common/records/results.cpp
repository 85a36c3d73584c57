#include "common/records/results.hpp"

#include <algorithm>
#include <cstddef>
#include <fstream>
#include <memory>
#include <optional>
#include <sstream>
#include <stdexcept>

#include <fmt/format.h>

#include <google/protobuf/io/coded_stream.h>
#include <google/protobuf/io/zero_copy_stream_impl_lite.h>
#include <google/protobuf/util/json_util.h>
#include <google/protobuf/util/type_resolver.h>
#include <google/protobuf/util/type_resolver_util.h>

#include "common/metrics/metrics.hpp"
#include "common/protocol/packet_codec.hpp"
#include "common/realtime/realtime_loop.hpp"
#include "common/transport/udp_link.hpp"
#include "common/transport/virtual_link.hpp"

namespace rths {

namespace {

double us(std::int64_t ns) {
  return static_cast<double>(ns) / 1e3;
}

constexpr const char* kTypeUrlPrefix = "type.googleapis.com";

// Where the JSON holds a null outside a string, if it does.
std::optional<std::size_t> null_at(std::string_view json) {
  bool in_string = false;
  for (std::size_t i = 0; i < json.size(); ++i) {
    const char c = json[i];
    if (in_string) {
      if (c == '\\') {
        ++i;  // the escaped character, a quote included
      } else if (c == '"') {
        in_string = false;
      }
    } else if (c == '"') {
      in_string = true;
    } else if (json.compare(i, 4, "null") == 0) {
      return i;
    }
  }
  return std::nullopt;
}

}  // namespace

results::PacketCounters to_results(const PacketCounters& counters) {
  results::PacketCounters out;
  out.set_received(counters.received);
  out.set_accepted(counters.accepted);
  out.set_undecodable(counters.undecodable);
  out.set_wrong_version(counters.wrong_version);
  out.set_wrong_session(counters.wrong_session);
  out.set_wrong_site(counters.wrong_site);
  out.set_unauthenticated(counters.unauthenticated);
  out.set_too_far_ahead(counters.too_far_ahead);
  out.set_stale(counters.stale);
  out.set_duplicate(counters.duplicate);
  out.set_late_handshake(counters.late_handshake);
  out.set_unexpected(counters.unexpected);
  return out;
}

results::SocketCounters to_results(const UdpCounters& counters) {
  results::SocketCounters out;
  out.set_sent(counters.sent);
  out.set_send_errors(counters.send_errors);
  out.set_unsent(counters.unsent);
  out.set_received(counters.received);
  out.set_oversized(counters.oversized);
  out.set_foreign(counters.foreign);
  out.set_receive_errors(counters.receive_errors);
  return out;
}

results::LoopTiming to_results(const LoopStats& stats) {
  results::LoopTiming out;
  out.set_lateness_p50_us(us(stats.lateness.percentile(50)));
  out.set_lateness_p99_us(us(stats.lateness.percentile(99)));
  out.set_lateness_p999_us(us(stats.lateness.percentile(99.9)));
  out.set_lateness_max_us(us(stats.lateness.max_ns()));
  out.set_late_ticks(stats.late);
  out.set_overruns(stats.overruns);
  out.set_compute_p50_us(us(stats.compute.percentile(50)));
  out.set_compute_p99_us(us(stats.compute.percentile(99)));
  out.set_compute_max_us(us(stats.compute.max_ns()));
  return out;
}

results::LinkCounters to_results(const LinkCounters& counters) {
  results::LinkCounters out;
  out.set_sent(counters.sent);
  out.set_delivered(counters.delivered);
  out.set_lost(counters.lost);
  out.set_duplicated(counters.duplicated);
  out.set_dropped_overflow(counters.dropped_overflow);
  return out;
}

results::ResponseMetrics to_results(const ResponseMetrics& metrics) {
  results::ResponseMetrics out;
  out.set_peak(metrics.peak);
  out.set_reference_peak(metrics.reference_peak);
  out.set_j_peak_pct(metrics.j_peak_pct);
  out.set_j_rms_pct(metrics.j_rms_pct);
  out.set_rho(metrics.rho);
  out.set_sd(metrics.sd);
  out.set_reference_sd(metrics.reference_sd);
  return out;
}

results::TrackingMetrics to_results(const TrackingMetrics& metrics) {
  results::TrackingMetrics out;
  out.set_j1_delay_ms(metrics.j1_delay_ms);
  out.set_j2_nrms_pct(metrics.j2_nrms_pct);
  out.set_j3_peak_pct(metrics.j3_peak_pct);
  return out;
}

// MessageToJsonString serialises the message with the default, non-deterministic order of map
// entries (a hash map's), so the same summary could come out in different orders. The printer it
// wraps, BinaryToJsonString, is handed a deterministic serialisation instead: map entries sorted by key.
std::string results_json(const google::protobuf::Message& message) {
  std::string binary;
  {
    google::protobuf::io::StringOutputStream stream(&binary);
    google::protobuf::io::CodedOutputStream coded(&stream);
    coded.SetSerializationDeterministic(true);
    message.SerializePartialToCodedStream(&coded);
  }
  const std::unique_ptr<google::protobuf::util::TypeResolver> resolver(
      google::protobuf::util::NewTypeResolverForDescriptorPool(kTypeUrlPrefix,
                                                               message.GetDescriptor()->file()->pool()));
  google::protobuf::util::JsonPrintOptions options;
  options.add_whitespace = true;
  options.always_print_primitive_fields = true;  // a zero counter is a result too
  options.preserve_proto_field_names = true;
  std::string json;
  const std::string type_url = fmt::format("{}/{}", kTypeUrlPrefix, message.GetDescriptor()->full_name());
  const auto status = google::protobuf::util::BinaryToJsonString(resolver.get(), type_url, binary, &json, options);
  if (!status.ok()) {
    // Only a message the resolver does not know gets here: a programming error, not a result.
    throw std::logic_error("cannot print " + message.GetDescriptor()->full_name() +
                           " as JSON: " + std::string(status.message()));
  }
  return json;
}

void parse_results_json(std::string_view json, google::protobuf::Message& message, const std::string& source) {
  // protobuf's parser reads null as the field's default: a NaN written as null (by rths before its
  // schema, or by another writer) would come back as 0, a metric that looks fine. rths writes no null.
  if (const auto at = null_at(json)) {
    const auto line = 1 + std::count(json.begin(), json.begin() + static_cast<std::ptrdiff_t>(*at), '\n');
    throw std::invalid_argument(
        fmt::format("{}:{}: null is not a value of the results schema (proto/results.proto); a non-finite number is "
                    "\"NaN\", \"Infinity\" or \"-Infinity\"",
                    source, line));
  }
  google::protobuf::util::JsonParseOptions options;
  options.ignore_unknown_fields = false;  // a field the schema lacks is a writer or a reader out of date
  message.Clear();
  const auto status = google::protobuf::util::JsonStringToMessage(json, &message, options);
  if (!status.ok()) {
    throw std::invalid_argument(source + ": not a " + message.GetDescriptor()->full_name() +
                                " (proto/results.proto): " + std::string(status.message()));
  }
}

void write_results_json(const std::filesystem::path& file, const google::protobuf::Message& message) {
  const std::string json = results_json(message);
  std::ofstream out(file);
  out << json;
  out.flush();
  if (!out) {
    throw std::runtime_error("cannot write " + file.string());
  }
}

void read_results_json(const std::filesystem::path& file, google::protobuf::Message& message) {
  std::ifstream in(file);
  std::stringstream text;
  text << in.rdbuf();
  if (!in) {
    throw std::runtime_error("cannot read " + file.string());
  }
  parse_results_json(text.str(), message, file.string());
}

}  // namespace rths
