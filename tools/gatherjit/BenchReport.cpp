//===- tools/gatherjit/BenchReport.cpp - gatherjit bench's report --------===//

#include "BenchReport.h"

#include <algorithm>
#include <cstdio>
#include <cstring>
#include <ctime>
#include <fstream>
#include <sstream>

namespace gatherjit {
namespace {

std::string fmt(const char *Format, double V) {
  char Buf[64];
  std::snprintf(Buf, sizeof(Buf), Format, V);
  return Buf;
}

std::string duration(double Ns) {
  return Ns >= 1e6   ? fmt("%.2f ms", Ns / 1e6)
         : Ns >= 1e3 ? fmt("%.2f us", Ns / 1e3)
                     : fmt("%.1f ns", Ns);
}

/// The rows of one case, by engine and thread count.
struct CaseRows {
  const SuiteRow *Interp = nullptr, *Generic = nullptr, *Jit = nullptr, *JitMt = nullptr;
};

std::vector<std::pair<std::string, CaseRows>> byCase(const SuiteReport &R) {
  std::vector<std::pair<std::string, CaseRows>> Out;
  for (const SuiteRow &Row : R.Rows) {
    if (Out.empty() || Out.back().first != Row.Case)
      Out.push_back({Row.Case, {}});
    CaseRows &C = Out.back().second;
    (Row.Engine == "interp"    ? C.Interp
     : Row.Engine == "generic" ? C.Generic
     : Row.Threads == 1        ? C.Jit
                               : C.JitMt) = &Row;
  }
  return Out;
}

} // namespace

std::string today() {
  std::time_t Now = std::time(nullptr);
  char Buf[16];
  std::strftime(Buf, sizeof(Buf), "%Y-%m-%d", std::localtime(&Now));
  return Buf;
}

nlohmann::json rowsJson(const SuiteReport &R) {
  nlohmann::json Rows = nlohmann::json::array();
  for (const SuiteRow &Row : R.Rows)
    Rows.push_back({{"case", Row.Case},
                    {"engine", Row.Engine},
                    {"threads", Row.Threads},
                    {"median_ns", Row.MedianNs},
                    {"effective_gbps", Row.EffectiveGbps},
                    {"memcpy_gbps", Row.MemcpyGbps}});
  // A case's random reads alone as one more engine's row.
  for (const auto &[Case, Timed] : R.RandomReadsAlone)
    Rows.push_back(
        {{"case", Case}, {"engine", "random_reads"}, {"threads", 1}, {"median_ns", Timed.Ns}});
  return Rows;
}

/// What the peers' columns are, their versions, compile times and the
/// peers that are missing.
std::string peersText(const LibraryTimes &Libraries) {
  if (Libraries.empty())
    return "\nNo peer is installed (numpy, PyTorch, ONNX Runtime, JAX): no columns for "
           "them.\n";
  std::ostringstream M;
  M << "\nPeers, one thread each, same cases, same run, each output equal to numpy's bit for "
       "bit before it is timed: numpy (take_along_axis, take, data[tuple(idx.T)]); torch "
       "(gather, index_select with out=, data[tuple(idx.T)]); torch.compile (the same through "
       "torch.compile(dynamic=True)); onnxruntime (a one-node model, run_with_iobinding on "
       "preallocated buffers); jax (jax.jit, block_until_ready). \"jit / X\" is X's time over "
       "jit's: above 1 jit is faster.\n\nVersions:";
  for (const auto &[Name, Version] : Libraries.Versions)
    M << " " << Name << " " << Version << ";";
  if (!Libraries.Missing.empty()) {
    M << " not installed:";
    for (const std::string &Name : Libraries.Missing)
      M << " " << Name;
    M << " (bench/install_peers.sh; GATHERJIT_BENCH_PYTHON)";
  }
  M << "\n";
  for (const auto &[Name, ByCase] : Libraries.CompileMs) {
    std::vector<double> Ms;
    for (const auto &[Case, V] : ByCase)
      Ms.push_back(V);
    std::sort(Ms.begin(), Ms.end());
    if (!Ms.empty())
      M << "\n"
        << Name << " compile per case (apart from the runs): median "
        << fmt("%.1f", Ms[Ms.size() / 2]) << " ms, " << fmt("%.1f", Ms.front()) << " to "
        << fmt("%.1f", Ms.back()) << " ms over " << Ms.size() << " cases.\n";
  }
  return M.str();
}

std::string markdown(const SuiteReport &R, const LibraryTimes &Libraries, const FreshProcess &Fresh,
                     const std::string &Date, const std::string &Png) {
  std::ostringstream M;
  M << "# gatherjit benchmark, " << Date << "\n\n"
    << bench::machineName() << ". Medians from one run of `gatherjit bench`; "
    << "GB/s = (2 x output bytes + index bytes) / time. Each case's generic and jit "
       "engines and a 256 MiB memcpy (read + write; the case's % of memcpy) are timed in "
       "interleaved rounds, so the shared machine's load weighs on all alike, each batch "
       "(and numpy's and PyTorch's) after a 256 MiB copy has evicted the case's data from "
       "the caches; memcpy: median "
    << fmt("%.1f", R.MemcpyGbps) << " GB/s (" << fmt("%.1f", R.MemcpyMinGbps) << " to "
    << fmt("%.1f", R.MemcpyMaxGbps) << ")";
  if (R.MemcpyGbpsAllThreads > 0)
    M << ", " << fmt("%.1f", R.MemcpyGbpsAllThreads) << " GB/s split across " << R.Threads
      << " threads (" << fmt("%.2fx", R.MemcpyGbpsAllThreads / R.MemcpyGbps) << " one thread's)";
  M << ".\n\n";
  if (!Png.empty())
    M << "![GB/s per case](" << Png << ")\n\n";
  M << "| case | interp | generic | jit | jit x" << R.Threads
    << " | jit GB/s | % of memcpy | jit / generic | jit / interp | x" << R.Threads
    << " / 1 thread |";
  for (const auto &[Library, Times] : Libraries)
    M << " " << Library << " | jit / " << Library << " |";
  if (!Libraries.empty())
    M << " best peer | jit / best |";
  M << "\n|---|---|---|---|---|---|---|---|---|---|";
  for (size_t L = 0; L < Libraries.size(); ++L)
    M << "---|---|";
  if (!Libraries.empty())
    M << "---|---|";
  M << "\n";
  std::vector<std::pair<std::string, double>> RandomCases;
  for (const auto &[Name, C] : byCase(R)) {
    if (!C.Interp || !C.Generic || !C.Jit)
      continue;
    M << "| " << Name << " | " << duration(C.Interp->MedianNs) << " | "
      << duration(C.Generic->MedianNs) << " | " << duration(C.Jit->MedianNs) << " | "
      << (C.JitMt ? duration(C.JitMt->MedianNs) : "-") << " | " << fmt("%.2f", C.Jit->EffectiveGbps)
      << " | " << fmt("%.0f%%", 100 * C.Jit->EffectiveGbps / C.Jit->MemcpyGbps) << " | "
      << fmt("%.2fx", C.Generic->MedianNs / C.Jit->MedianNs) << " | "
      << fmt("%.1fx", C.Interp->MedianNs / C.Jit->MedianNs) << " | "
      << (C.JitMt ? fmt("%.2fx", C.Jit->MedianNs / C.JitMt->MedianNs) : "-") << " |";
    const std::string *Best = nullptr;
    double BestNs = 0;
    for (const auto &[Library, Times] : Libraries) {
      auto It = Times.find(Name);
      if (It == Times.end()) {
        M << " - | - |";
        continue;
      }
      M << " " << duration(It->second) << " | " << fmt("%.2fx", It->second / C.Jit->MedianNs)
        << " |";
      if (!Best || It->second < BestNs)
        Best = &Library, BestNs = It->second;
    }
    if (!Libraries.empty())
      M << (Best ? " " + *Best + " | " + fmt("%.2fx", BestNs / C.Jit->MedianNs) + " |"
                 : std::string(" - | - |"));
    M << "\n";
    if (R.RandomReadsAlone.count(Name))
      RandomCases.emplace_back(Name, C.Jit->MedianNs);
  }
  for (const auto &[Name, Ns] : RandomCases) {
    const auto &[Reads, Floor] = R.RandomReadsAlone.at(Name);
    M << "\n"
      << Name << "'s reads alone (" << Reads.Count << " random " << Reads.ElemBytes
      << "-byte reads, each within one of " << Reads.Regions
      << (Reads.Regions == 1 ? " region" : " regions") << " of "
      << fmt("%.0f", Reads.RegionBytes / 1024.0)
      << " KiB, no prefetch, from evicted caches as the engines, same run): " << duration(Floor)
      << "; jit takes " << fmt("%.2fx", Ns / Floor) << " that.\n";
  }
  M << "\nCompile latency (medians): a new small kernel (the quick tier) "
    << fmt("%.2f ms", R.ColdGatherElementsMs) << " GatherElements, "
    << fmt("%.2f ms", R.ColdGatherMs) << " Gather; the same at O2 (a large kernel, or an upgrade) "
    << fmt("%.2f ms", R.FullGatherElementsMs) << " and " << fmt("%.2f ms", R.FullGatherMs)
    << "; cache hit " << duration(R.CacheHitNs)
    << ", load from the persistent cache by a new runtime " << fmt("%.2f ms", R.DiskLoadMs)
    << ".\n";
  if (Fresh.ColdMs > 0)
    M << "In a fresh process (`gatherjit gather-elements --stats --specialize compile "
         "--cache-dir`, a 64x16 kernel): "
         "compile "
      << fmt("%.2f ms", Fresh.ColdMs) << " with an empty cache directory, "
      << fmt("%.2f ms", Fresh.LoadMs) << " loading the entry another process stored ("
      << fmt("%.0fx", Fresh.ColdMs / Fresh.LoadMs) << " faster).\n";
  return M.str();
}

/// Draws GB/s per case and engine with the memcpy line; false if gnuplot
/// is missing or fails (the report is still written).
bool plot(const SuiteReport &R, const LibraryTimes &Libraries, const std::string &Png) {
  const std::string Data = Png + ".dat", Script = Png + ".gp", Temp = Png + ".tmp.png";
  {
    std::ofstream D(Data);
    D << "case interp generic jit jit_mt";
    for (size_t L = 0; L < Libraries.size(); ++L)
      D << " peer" << L;
    D << "\n";
    // A peer's GB/s: the case's bytes over its time (jit's GB/s scaled by
    // the ratio of the times); 0 where it has no time.
    for (const auto &[Name, C] : byCase(R)) {
      if (!C.Interp || !C.Generic || !C.Jit)
        continue;
      D << Name << " " << C.Interp->EffectiveGbps << " " << C.Generic->EffectiveGbps << " "
        << C.Jit->EffectiveGbps << " " << (C.JitMt ? C.JitMt->EffectiveGbps : 0);
      for (const auto &[Library, Times] : Libraries) {
        auto It = Times.find(Name);
        D << " " << (It == Times.end() ? 0.0 : C.Jit->EffectiveGbps * C.Jit->MedianNs / It->second);
      }
      D << "\n";
    }
    std::ofstream S(Script);
    S << "set terminal pngcairo noenhanced size 1500,640 font 'sans,10'\n"
      << "set output '" << Temp << "'\n"
      << "set title 'gatherjit: effective bandwidth per case (higher is better)'\n"
      << "set ylabel 'GB/s = (2 x output + index bytes) / time'\n"
      << "set style data histograms\nset style histogram clustered gap 1\n"
      << "set style fill solid 0.85 border -1\nset boxwidth 0.9\nset grid ytics\n"
      << "set key outside bottom center horizontal autotitle columnhead\nset yrange [0:*]\n"
      << "memcpy = " << R.MemcpyGbps << "\n"
      << "plot '" << Data << "' using 2:xtic(1) title 'interpreter', '' using 3 title "
      << "'generic C++', '' using 4 title 'jit, 1 thread', '' using 5 title 'jit, " << R.Threads
      << " threads', ";
    int Column = 6;
    for (const auto &[Library, Times] : Libraries)
      S << "'' using " << Column++ << " title '" << Library << "', ";
    S << "memcpy with lines lw 2 dt 2 lc rgb 'black' title "
      << "sprintf('memcpy %.1f GB/s', memcpy)\n";
  }
  const std::string Cmd = "gnuplot '" + Script + "' 2>/dev/null";
  const bool Ok = std::system(Cmd.c_str()) == 0 && std::filesystem::exists(Temp);
  if (Ok)
    std::filesystem::rename(Temp, Png);
  std::filesystem::remove(Data);
  std::filesystem::remove(Script);
  std::filesystem::remove(Temp);
  return Ok;
}

} // namespace gatherjit
