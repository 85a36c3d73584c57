#pragma once

#include <filesystem>
#include <string>
#include <string_view>

#include <google/protobuf/message.h>

#include "results.pb.h"

namespace rths {

struct PacketCounters;
struct UdpCounters;
struct LoopStats;
struct LinkCounters;
struct ResponseMetrics;
struct TrackingMetrics;

// The results schema (proto/results.proto) filled from the structs common keeps while a node runs.
results::PacketCounters to_results(const PacketCounters& counters);
results::SocketCounters to_results(const UdpCounters& counters);
results::LoopTiming to_results(const LoopStats& stats);
results::LinkCounters to_results(const LinkCounters& counters);
results::ResponseMetrics to_results(const ResponseMetrics& metrics);
results::TrackingMetrics to_results(const TrackingMetrics& metrics);

// A results message as every rths summary file holds it: protobuf's JSON printer, indented, with the
// proto field names, every scalar written (zeros included) and map entries in key order (results.proto
// says what the mapping does with 64-bit integers and NaN). The text ends with a newline; the same
// message always gives the same bytes, so a file parsed and printed again is the file.
std::string results_json(const google::protobuf::Message& message);

// Parses what results_json wrote into message, refusing any field the schema does not declare.
// Throws std::invalid_argument "<source>: <what protobuf's parser found>".
void parse_results_json(std::string_view json, google::protobuf::Message& message, const std::string& source);

// Writes results_json(message) to file; throws std::runtime_error naming the file when it cannot.
void write_results_json(const std::filesystem::path& file, const google::protobuf::Message& message);

// Reads file into message (parse_results_json); throws std::runtime_error naming the file when it
// cannot be read, std::invalid_argument when it does not parse.
void read_results_json(const std::filesystem::path& file, google::protobuf::Message& message);

template <typename Message>
Message read_results_json(const std::filesystem::path& file) {
  Message message;
  read_results_json(file, message);
  return message;
}

}  // namespace rths
