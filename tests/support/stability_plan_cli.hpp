// What the tests of stability planning as a lab meets it share: a tool run to its end with what it
// printed, and the seed 002 spring example they plan and run.
#pragma once

#include <chrono>
#include <filesystem>
#include <string>
#include <vector>

#include "support/process.hpp"
#include "support/test_support.hpp"

namespace rths::test {

// A program's exit code and what it printed.
struct Ran {
  int exit_code = -1;
  std::string out;
  std::string err;
};

// `program args` in dir/program, waited for up to two minutes.
inline Ran run_program(const std::string& program, const std::vector<std::string>& args,
                       const std::filesystem::path& dir) {
  Process p(program, args, dir / program);
  Ran r;
  r.exit_code = p.wait(std::chrono::seconds(120));
  r.out = p.out();
  r.err = p.err();
  return r;
}

// The seed 002 spring case.
inline std::string spring_example() {
  return example("seed002/spring.textproto").string();
}

}  // namespace rths::test
