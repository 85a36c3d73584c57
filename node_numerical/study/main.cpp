// rths-study: parameter studies in virtual time (node_numerical/study/: the study file, its grid, the runner,
// the tables, the plots and the merge of shards). Parse, then run the command.
#include "common/program/program.hpp"
#include "node_numerical/study/run.hpp"

int main(int argc, char** argv) {
  rths::study::Options options;
  rths::CommandLine cli = rths::study::command_line(options);
  return rths::run_program(argc, argv, cli, [&options](const rths::CommandLine& line) {
    options.command = line.command();
    options.operands = line.operands();
    // A study logs into its folder once it is made, and takes SIGINT itself (its runs stop safely).
    return rths::ProgramRun([&options](const auto&) { return rths::study::run_command(options); }).quiet(options.quiet);
  });
}
