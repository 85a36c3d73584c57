// rths-study: parameter studies in virtual time (deploy/study/: the study file, its grid, the runner,
// the tables, the plots and the merge of shards). Parse, then run the command.
#include "rths/study/run.hpp"

int main(int argc, char** argv) {
  rths::study::Options options;
  rths::CommandLine cli = rths::study::command_line(options);
  if (const auto answered = cli.parse(argc, argv)) {
    return *answered;
  }
  options.command = cli.command();
  options.operands = cli.operands();
  return rths::study::run_command(options);
}
