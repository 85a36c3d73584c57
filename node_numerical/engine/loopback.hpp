#pragma once

#include <filesystem>
#include <string>
#include <vector>

#include "common/core/child_process.hpp"
#include "common/records/telemetry.hpp"
#include "experiment.pb.h"

namespace rths {

// Single-site loopback: one rths-physical process per REMOTE site on 127.0.0.1, each writing into
// the same run folder as the numerical node. The processes are real (separate clocks, sockets and
// schedulers); only the network is the loopback interface. A site without a key_file (and an
// experiment not marked insecure) gets a fresh key for this run only, in <out>/keys/, removed when
// the run ends: the loopback test authenticates its packets like a lab test.
class LoopbackSites {
 public:
  // telemetry: passed on to every site (--console, --telemetry-hz) when it names a console.
  LoopbackSites(std::filesystem::path config, std::vector<std::string> overrides, std::filesystem::path out,
                TelemetryOptions telemetry = {});
  ~LoopbackSites();
  LoopbackSites(const LoopbackSites&) = delete;
  LoopbackSites& operator=(const LoopbackSites&) = delete;
  LoopbackSites(LoopbackSites&&) = delete;
  LoopbackSites& operator=(LoopbackSites&&) = delete;

  // Starts a site process for every REMOTE site of experiment, waits until each listens on a free port
  // and points the site's address (and, for a run key, its key_file) there. Throws
  // std::runtime_error naming the site that failed.
  void start(config::Experiment& experiment);
  // Waits for every site process to end (they stop with the numerical node); the first nonzero exit
  // code, 0 when all completed.
  int wait();

 private:
  struct Child {
    std::string site;
    ChildProcess process;
  };
  std::filesystem::path config_;
  std::vector<std::string> overrides_;
  std::filesystem::path out_;
  TelemetryOptions telemetry_;
  std::vector<Child> children_;
  std::filesystem::path key_dir_;  // the run keys, when any were made
};

// rths-physical beside the running executable (the build puts every executable in one folder).
std::filesystem::path sibling_executable(const std::string& name);

}  // namespace rths
