//===- tools/gatherjit/BenchReport.h - gatherjit bench's report ----------===//
/// \file
/// What `gatherjit bench` writes: the rows as JSON, the Markdown table
/// beside the peers' columns, and the gnuplot chart.
//===----------------------------------------------------------------------===//
#ifndef GATHERJIT_TOOLS_BENCHREPORT_H
#define GATHERJIT_TOOLS_BENCHREPORT_H

#include "Suite.h"

#include <nlohmann/json.hpp>

#include <map>
#include <string>
#include <vector>

namespace gatherjit {

using bench::SuiteReport;
using bench::SuiteRow;

/// What the Python baselines measured: library name ("numpy", "torch",
/// "torch.compile", "onnxruntime", "jax") -> case -> median ns, and each
/// library's version, compile times (ms, apart from the runs) and the
/// libraries that are not installed.
struct LibraryTimes : std::map<std::string, std::map<std::string, double>> {
  std::map<std::string, std::string> Versions;
  std::map<std::string, std::map<std::string, double>> CompileMs;
  std::vector<std::string> Missing;
};

/// A kernel compiled in a fresh process (this program, run again with
/// --stats) against one loaded from a persistent cache by another fresh
/// process: median compile_ms of each. Zero if the runs fail.
struct FreshProcess {
  double ColdMs = 0, LoadMs = 0;
};

/// Today's date, YYYY-MM-DD: the results' file names.
std::string today();
/// The suite's rows as JSON.
nlohmann::json rowsJson(const SuiteReport &R);
/// The Markdown report: machine, every case beside the peers' columns,
/// compile times, and the chart \p Png if one was drawn.
std::string markdown(const SuiteReport &R, const LibraryTimes &Libraries, const FreshProcess &Fresh,
                     const std::string &Date, const std::string &Png);
/// The peers' versions, compile times and those missing, as Markdown.
std::string peersText(const LibraryTimes &Libraries);
/// Draws the chart into \p Png with gnuplot; false if it could not.
bool plot(const SuiteReport &R, const LibraryTimes &Libraries, const std::string &Png);

} // namespace gatherjit

#endif
