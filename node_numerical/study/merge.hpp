#pragma once

#include <cstddef>
#include <cstdint>
#include <filesystem>
#include <functional>
#include <string>
#include <vector>

#include "results.pb.h"

namespace rths::study {

// Shards of one study (rths-study run --shard K/N, one folder each) joined into the folder an
// unsharded run would have written.

// One table of every shard folder, sorted by row.
struct Merged {
  std::string csv;  // header and rows, each line as the shards wrote it
  std::size_t rows = 0;
  std::size_t failed = 0;  // rows whose error cell is not empty
};

// Merges table `name` (study.csv or pure.csv) of every folder in dirs. The grid's size comes from
// each folder's study.json (grid_of reads it; grid_key names its field in messages) or, without one,
// from the highest row. Throws BadInput naming the file when a header differs, a study.json does not
// parse or disagrees, a row is duplicated (`what` in more than one shard: ...), missing or beyond the
// grid.
Merged merge_table(const std::vector<std::filesystem::path>& dirs, const std::string& name, const std::string& grid_key,
                   const std::function<std::uint64_t(const results::StudySummary&)>& grid_of, const std::string& what);

// The rows of a list as a message shows them: "1 3 5", the first 20 and "... (N in all)" beyond.
std::string describe_rows(const std::vector<std::size_t>& rows);

// Merges the shard folders dirs into out (study.csv, pure.csv, study.json, study.plot and the plots)
// as `rths-study merge` does; returns its exit code. Throws BadInput for shards that do not make one
// study.
int merge_studies(const std::vector<std::filesystem::path>& dirs, const std::filesystem::path& out, bool quiet);

}  // namespace rths::study
