//===- tools/gatherjit/BenchCommand.h - gatherjit bench ------------------===//
/// \file
/// `gatherjit bench [--cases GE1,G1,...] [--threads N] [--json FILE]`: runs
/// the benchmark suite and writes RESULTS/<date>.json, .md and .png (the
/// chart, with gnuplot), RESULTS defaulting to bench/results.
//===----------------------------------------------------------------------===//
#ifndef GATHERJIT_TOOLS_BENCHCOMMAND_H
#define GATHERJIT_TOOLS_BENCHCOMMAND_H

#include "gatherjit/Status.h"

#include <CLI/CLI.hpp>

#include <string>

namespace gatherjit {

struct BenchFlags {
  std::string Cases;
  unsigned Threads = 0;
  std::string Json;
  std::string ResultsDir = "bench/results";
  bool Quiet = false;
  bool Shapes = false;
  unsigned Rounds = 3;
  std::string Device = "cpu";
};

CLI::App *addBenchCommand(CLI::App &App, BenchFlags &F);
Status runBench(const BenchFlags &F);

} // namespace gatherjit

#endif
