//===- tools/gatherjit/BenchCommand.cpp - gatherjit bench ----------------===//

#include "BenchCommand.h"

#include "Npy.h"
#include "Shapes.h"
#include "Suite.h"
#include "CliOptions.h"
#include "gatherjit/Interpreter.h"
#include "runtime/AtomicFile.h"
#include "runtime/CudaDriver.h"

#include <nlohmann/json.hpp>

#include <algorithm>
#include <cstdio>
#include <cstring>
#include <ctime>
#include <filesystem>
#include <fstream>
#include <map>
#include <optional>
#include <set>
#include <sstream>
#include <unistd.h>

namespace gatherjit {

CLI::App *addBenchCommand(CLI::App &App, BenchFlags &F) {
  CLI::App *Sub = App.add_subcommand(
      "bench", "run the benchmark suite: interpreter vs generic vs specialized kernels");
  Sub->add_option("--cases", F.Cases, "comma-separated cases, e.g. GE1,G1 (default: all)");
  Sub->add_option("--threads", F.Threads, "threads for the multi-threaded rows (0: all cores)")
      ->check(integerIn(0, 1024));
  Sub->add_option("--json", F.Json, "also write the rows as a JSON array to this file");
  Sub->add_option("--results", F.ResultsDir,
                  "directory for <date>.json, .md and .png (default bench/results)");
  Sub->add_flag("--quiet", F.Quiet, "no progress lines on stderr");
  Sub->add_flag("--shapes", F.Shapes,
                "run the walks over changing shapes instead of the suite (a Markdown table "
                "on stdout)");
  Sub->add_option("--rounds", F.Rounds, "rounds of each walk with --shapes (default 3)")
      ->check(integerIn(1, 100));
  Sub->add_option("--device", F.Device,
                  "cuda or cuda:N: the cases on a CUDA device against a device copy of each "
                  "output and PyTorch CUDA (<date>-cuda.json and .md)");
  return Sub;
}

namespace {

using bench::SuiteReport;
using bench::SuiteRow;

/// The standard output of shell command \p Cmd, or std::nullopt if it could
/// not run or exited nonzero.
std::optional<std::string> commandOutput(const std::string &Cmd) {
  FILE *P = popen(Cmd.c_str(), "r");
  if (!P)
    return std::nullopt;
  std::string Out;
  char Buf[4096];
  for (size_t N; (N = std::fread(Buf, 1, sizeof(Buf), P)) > 0;)
    Out.append(Buf, N);
  if (pclose(P) != 0)
    return std::nullopt;
  return Out;
}

/// What the Python baselines measured: library name ("numpy", "torch",
/// "torch.compile", "onnxruntime", "jax") -> case -> median ns, and each
/// library's version, compile times (ms, apart from the runs) and the
/// libraries that are not installed.
struct LibraryTimes : std::map<std::string, std::map<std::string, double>> {
  std::map<std::string, std::string> Versions;
  std::map<std::string, std::map<std::string, double>> CompileMs;
  std::vector<std::string> Missing;
};

const char *const PythonBaselines =
#include "PythonBaselines.inc"
    ;
const char *const CudaBaselines =
#include "CudaBaselines.inc"
    ;

/// \p Text as one shell word.
std::string quoteForShell(const std::string &Text) {
  std::string Quoted = "'";
  for (char Ch : Text)
    Quoted += Ch == '\'' ? std::string("'\\''") : std::string(1, Ch);
  return Quoted + "'";
}

/// The standard output of \p Python running the script \p Text (written
/// to a temporary file) with the shell words \p Args.
std::optional<std::string> runEmbeddedScript(const std::string &Python, const char *Text,
                                             const std::string &Args) {
  char Script[] = "/tmp/gatherjit-bench-XXXXXX.py";
  int Fd = mkstemps(Script, 3);
  if (Fd < 0)
    return std::nullopt;
  const size_t Size = std::strlen(Text);
  const bool Written = write(Fd, Text, Size) == static_cast<ssize_t>(Size);
  close(Fd);
  std::optional<std::string> Output;
  if (Written)
    Output = commandOutput(Python + " " + Script + " " + Args);
  std::remove(Script);
  return Output;
}

/// The case \p C as the Python scripts take it.
nlohmann::json caseJson(const bench::BenchCase &C) {
  return {{"case", C.Name},
          {"op", opKindName(C.Op)},
          {"data_type", dataTypeName(C.Data)},
          {"data_shape", C.DataShape},
          {"index_type", dataTypeName(C.Index)},
          {"index_shape", C.IndexShape},
          {"axis", C.Axis}};
}

/// Times numpy, PyTorch and the other peers on the same cases where
/// python3 has them; empty otherwise (they are optional).
LibraryTimes pythonBaselines(const SuiteReport &R) {
  // The python3 on PATH, else the system's (a user's PATH may lead to a
  // virtual environment without Debian's python3-numpy).
  auto HasLibrary = [](const std::string &Candidate) {
    for (const char *Module : {"numpy", "torch"})
      if (std::system((Candidate + " -c 'import " + Module + "' >/dev/null 2>&1").c_str()) == 0)
        return true;
    return false;
  };
  std::string Python;
  std::vector<std::string> Candidates = {"python3", "/usr/bin/python3"};
  // GATHERJIT_BENCH_PYTHON: the interpreter with the peers
  // (bench/install_peers.sh's venv).
  if (const char *Chosen = std::getenv("GATHERJIT_BENCH_PYTHON"); Chosen && *Chosen)
    Candidates.insert(Candidates.begin(), quoteForShell(Chosen));
  for (const std::string &Candidate : Candidates) {
    if (HasLibrary(Candidate)) {
      Python = Candidate;
      break;
    }
  }
  if (Python.empty())
    return {};
  nlohmann::json Cases = nlohmann::json::array();
  std::set<std::string> Seen;
  for (const SuiteRow &Row : R.Rows) {
    if (!Seen.insert(Row.Case).second)
      continue;
    for (const bench::BenchCase &C : bench::benchCases())
      if (Row.Case == C.Name && C.Policy == OobPolicy::Check)
        Cases.push_back(caseJson(C));
  }
  std::optional<std::string> Output =
      runEmbeddedScript(Python, PythonBaselines, quoteForShell(Cases.dump()));
  if (!Output)
    return {};
  LibraryTimes Times;
  nlohmann::json J = nlohmann::json::parse(*Output, nullptr, /*allow_exceptions=*/false);
  if (!J.is_object())
    return {};
  for (auto &[Library, ByCase] : J.items()) {
    if (Library == "_versions") {
      for (auto &[Name, Version] : ByCase.items())
        if (Version.is_string())
          Times.Versions[Name] = Version.get<std::string>();
    } else if (Library == "_compile_ms") {
      for (auto &[Name, ByCaseMs] : ByCase.items())
        for (auto &[Case, Ms] : ByCaseMs.items())
          if (Ms.is_number())
            Times.CompileMs[Name][Case] = Ms.get<double>();
    } else if (Library == "_missing") {
      for (auto &Name : ByCase)
        if (Name.is_string())
          Times.Missing.push_back(Name.get<std::string>());
    } else if (ByCase.is_object()) {
      for (auto &[Case, Ns] : ByCase.items())
        if (Ns.is_number())
          Times[Library][Case] = Ns.get<double>();
    }
  }
  return Times;
}

/// A kernel compiled in a fresh process (this program, run again with
/// --stats) against one loaded from a persistent cache by another fresh
/// process: median compile_ms of each. Zero if the runs fail.
struct FreshProcess {
  double ColdMs = 0, LoadMs = 0;
};

FreshProcess freshProcessCompile() {
  FreshProcess R;
  std::string Dir = (std::filesystem::temp_directory_path() / "gatherjit-fresh-XXXXXX").string();
  if (!mkdtemp(Dir.data()))
    return R;
  const std::vector<float> Data(64 * 1000, 1.0f);
  const std::vector<int64_t> Indices(64 * 16, 3);
  if (!writeFileAtomic(Dir + "/d.npy", encodeNpy("<f4", {64, 1000}, Data.data(), Data.size() * 4)) ||
      !writeFileAtomic(Dir + "/i.npy",
                       encodeNpy("<i8", {64, 16}, Indices.data(), Indices.size() * 8))) {
    std::filesystem::remove_all(Dir);
    return R;
  }
  char Self[4096];
  const ssize_t N = readlink("/proc/self/exe", Self, sizeof(Self) - 1);
  if (N <= 0) {
    std::filesystem::remove_all(Dir);
    return R;
  }
  Self[N] = 0;
  // compile_ms of one run, from its --stats line.
  auto Run = [&](const std::string &Cache) -> double {
    const std::string Cmd = std::string(Self) + " gather-elements --threads 1 --stats --data " +
                            Dir + "/d.npy --indices " + Dir + "/i.npy --axis 1 -o " + Dir +
                            "/o.npy --specialize compile --cache-dir " + Cache + " 2>&1 >/dev/null";
    std::optional<std::string> Out = commandOutput(Cmd);
    if (!Out)
      return -1;
    nlohmann::json J = nlohmann::json::parse(*Out, nullptr, false);
    return J.is_object() && J.contains("compile_ms") ? J["compile_ms"].get<double>() : -1;
  };
  std::vector<double> Cold, Load;
  for (int I = 0; I < 7; ++I) {
    const std::string Cache = Dir + "/cache" + std::to_string(I);
    Cold.push_back(Run(Cache)); // An empty directory: compiled, then stored.
    Load.push_back(Run(Cache)); // The entry just stored: loaded.
  }
  std::filesystem::remove_all(Dir);
  std::sort(Cold.begin(), Cold.end());
  std::sort(Load.begin(), Load.end());
  if (Cold.front() >= 0 && Load.front() >= 0) {
    R.ColdMs = Cold[Cold.size() / 2];
    R.LoadMs = Load[Load.size() / 2];
  }
  return R;
}

std::string today() {
  std::time_t Now = std::time(nullptr);
  char Buf[16];
  std::strftime(Buf, sizeof(Buf), "%Y-%m-%d", std::localtime(&Now));
  return Buf;
}

std::string cpuName() {
  std::ifstream In("/proc/cpuinfo");
  std::string Line;
  while (std::getline(In, Line))
    if (Line.rfind("model name", 0) == 0)
      return Line.substr(Line.find(':') + 2);
  return "unknown CPU";
}

std::string fmt(const char *Format, double V) {
  char Buf[64];
  std::snprintf(Buf, sizeof(Buf), Format, V);
  return Buf;
}

std::string duration(double Ns) {
  return Ns >= 1e6 ? fmt("%.2f ms", Ns / 1e6) : Ns >= 1e3 ? fmt("%.2f us", Ns / 1e3)
                                                          : fmt("%.1f ns", Ns);
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
  return Rows;
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
      M << "\n" << Name << " compile per case (apart from the runs): median "
        << fmt("%.1f", Ms[Ms.size() / 2]) << " ms, " << fmt("%.1f", Ms.front()) << " to "
        << fmt("%.1f", Ms.back()) << " ms over " << Ms.size() << " cases.\n";
  }
  return M.str();
}

std::string markdown(const SuiteReport &R, const LibraryTimes &Libraries,
                     const FreshProcess &Fresh, const std::string &Date, const std::string &Png) {
  std::ostringstream M;
  M << "# gatherjit benchmark, " << Date << "\n\n"
    << cpuName() << ", " << sysconf(_SC_NPROCESSORS_ONLN) << " cores. Medians from one run of `gatherjit bench`; "
    << "GB/s = (2 x output bytes + index bytes) / time. Each case's generic and jit "
       "engines and a 256 MiB memcpy (read + write; the case's % of memcpy) are timed in "
       "interleaved rounds, so the shared machine's load weighs on all alike, each batch "
       "(and numpy's and PyTorch's) after a 256 MiB copy has evicted the case's data from "
       "the caches; memcpy: median "
    << fmt("%.1f", R.MemcpyGbps) << " GB/s (" << fmt("%.1f", R.MemcpyMinGbps) << " to "
    << fmt("%.1f", R.MemcpyMaxGbps) << ")";
  if (R.MemcpyGbpsAllThreads > 0)
    M << ", " << fmt("%.1f", R.MemcpyGbpsAllThreads) << " GB/s split across " << R.Threads
      << " threads (" << fmt("%.2fx", R.MemcpyGbpsAllThreads / R.MemcpyGbps)
      << " one thread's)";
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
      << (C.JitMt ? duration(C.JitMt->MedianNs) : "-") << " | "
      << fmt("%.2f", C.Jit->EffectiveGbps) << " | "
      << fmt("%.0f%%", 100 * C.Jit->EffectiveGbps / C.Jit->MemcpyGbps) << " | "
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
    if (Name == "GE2" || Name == "GN2")
      RandomCases.emplace_back(Name, C.Jit->MedianNs);
  }
  // GE2 reads 4096 x 4096 random elements, GN2 1,048,576 random points.
  for (const auto &[Name, Ns] : RandomCases) {
    if (R.RandomReadNs <= 0)
      break;
    const double Floor = R.RandomReadNs * (Name == "GE2" ? 4096.0 * 4096.0 : 1048576.0);
    M << "\n" << Name
      << " random-read floor (random 4-byte reads from a 64 MiB table, same run): "
      << duration(Floor) << "; jit takes " << fmt("%.2fx", Ns / Floor) << " of it.\n";
  }
  M << "\nCompile latency (medians): a new small kernel (the quick tier) "
    << fmt("%.2f ms", R.ColdGatherElementsMs) << " GatherElements, "
    << fmt("%.2f ms", R.ColdGatherMs) << " Gather; the same at O2 (a large kernel, or an upgrade) "
    << fmt("%.2f ms", R.FullGatherElementsMs) << " and " << fmt("%.2f ms", R.FullGatherMs)
    << "; cache hit " << duration(R.CacheHitNs)
    << ", load from the persistent cache by a new runtime " << fmt("%.2f ms", R.DiskLoadMs)
    << ".\n";
  if (Fresh.ColdMs > 0)
    M << "In a fresh process (`gatherjit gather-elements --stats --specialize compile --cache-dir`, a 64x16 kernel): "
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
      << "'generic C++', '' using 4 title 'jit, 1 thread', '' using 5 title 'jit, "
      << R.Threads << " threads', ";
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

} // namespace

/// `gatherjit bench --device cuda`: each case's kernel on the device
/// against a device-to-device copy of its output (the line) and PyTorch
/// CUDA (where python3 has it), every output checked first; Markdown on
/// stdout, <date>-cuda.json and .md in the results directory.
Status runDeviceBench(const BenchFlags &F, int Ordinal) {
  constexpr unsigned Repeat = 20;
  std::set<std::string> Wanted;
  std::stringstream Names(F.Cases);
  for (std::string Name; std::getline(Names, Name, ',');)
    if (!Name.empty())
      Wanted.insert(Name);
  nlohmann::json Rows = nlohmann::json::array(), PyCases = nlohmann::json::array();
  std::string DeviceName;
  for (const bench::BenchCase &C : bench::benchCases()) {
    if (!Wanted.empty() && !Wanted.count(C.Name))
      continue;
    if (!F.Quiet)
      std::fprintf(stderr, "bench: %s on cuda:%d\n", C.Name, Ordinal);
    Expected<ValidDesc> V = bench::benchDesc(C);
    if (!V)
      return V.status();
    const bench::BenchData Data = bench::benchData(*V);
    std::vector<char> Out(Data.OutputBytes), Ref(Data.OutputBytes);
    Expected<DeviceRun> Run = runOnCuda(*V, Ordinal, OptLevel::O2, Data.Input.data(),
                                        Data.Indices.data(), Out.data(), Repeat);
    if (!Run)
      return Run.status();
    DeviceName = Run->Device;
    if (Status S = interpret(*V, Data.Input.data(), Data.Indices.data(), Ref.data()); !S)
      return S;
    Rows.push_back({{"case", C.Name},
                    {"kernel_us", Run->KernelUs},
                    {"copy_us", Run->CopyUs},
                    {"ptx_ms", Run->PtxMs},
                    {"load_ms", Run->LoadMs},
                    {"bytes", Data.OutputBytes},
                    {"matches_interpreter", Out == Ref}});
    if (C.Policy == OobPolicy::Check)
      PyCases.push_back(caseJson(C));
  }
  nlohmann::json Torch;
  for (const char *Python : {"python3", "/usr/bin/python3"})
    if (std::optional<std::string> Got = runEmbeddedScript(
            Python, CudaBaselines, quoteForShell(PyCases.dump()) + " " + std::to_string(Repeat))) {
      Torch = nlohmann::json::parse(*Got, nullptr, false);
      if (!Torch.is_discarded() && !Torch.contains("missing"))
        break;
    }
  std::ostringstream Md;
  Md << "Device " << DeviceName;
  if (Torch.contains("version"))
    Md << ", PyTorch " << Torch["version"].get<std::string>() << " ("
       << Torch["device"].get<std::string>() << ")";
  else
    Md << "; PyTorch column missing ("
       << (Torch.contains("missing") ? Torch["missing"].get<std::string>() : "no python3")
       << ")";
  Md << ". Medians of " << Repeat << " runs (CUDA events).\n\n"
     << "| case | gatherjit µs | copy line µs | % of line | PyTorch µs | PyTorch / gatherjit | "
        "PTX ms | same as interpreter |\n|---|---|---|---|---|---|---|---|\n";
  char Cell[64];
  for (nlohmann::json &Row : Rows) {
    const std::string Name = Row["case"];
    const double Us = Row["kernel_us"], Copy = Row["copy_us"];
    Md << "| " << Name;
    std::snprintf(Cell, sizeof(Cell), " | %.1f | %.1f | %.0f%%", Us, Copy,
                  Us > 0 ? 100.0 * Copy / Us : 0.0);
    Md << Cell;
    if (Torch.contains("cases") && Torch["cases"].contains(Name)) {
      const double T = Torch["cases"][Name]["torch_us"];
      Row["torch_us"] = T;
      Row["torch_same"] = Torch["cases"][Name]["same"];
      std::snprintf(Cell, sizeof(Cell), " | %.1f | %.2fx", T, Us > 0 ? T / Us : 0.0);
      Md << Cell;
    } else {
      Md << " | - | -";
    }
    std::snprintf(Cell, sizeof(Cell), " | %.2f | %s |\n", Row["ptx_ms"].get<double>(),
                  Row["matches_interpreter"].get<bool>() ? "yes" : "NO");
    Md << Cell;
  }
  const std::string Text = Md.str();
  std::fwrite(Text.data(), 1, Text.size(), stdout);
  std::error_code EC;
  std::filesystem::create_directories(F.ResultsDir, EC);
  const std::string Base = F.ResultsDir + "/" + today() + "-cuda";
  nlohmann::json Report = {{"device", DeviceName}, {"rows", Rows}, {"torch", Torch}};
  if (Status S = writeFileAtomic(Base + ".json", Report.dump(2) + "\n"); !S)
    return S;
  return writeFileAtomic(Base + ".md", Text);
}

Status runBench(const BenchFlags &F) {
  Expected<std::optional<int>> Device = parseDevice(F.Device);
  if (!Device)
    return Device.status();
  if (*Device)
    return runDeviceBench(F, **Device);
  if (F.Shapes) {
    const std::string Md = bench::runShapeWalks(F.Rounds);
    std::fwrite(Md.data(), 1, Md.size(), stdout);
    return Status::ok();
  }
  bench::SuiteOptions Options;
  Options.Threads = F.Threads;
  std::stringstream Cases(F.Cases);
  for (std::string Name; std::getline(Cases, Name, ',');)
    if (!Name.empty())
      Options.Cases.push_back(Name);
  Expected<SuiteReport> R = bench::runSuite(Options, [&](const std::string &Step) {
    if (!F.Quiet)
      std::fprintf(stderr, "bench: %s\n", Step.c_str());
  });
  if (!R)
    return R.status();
  std::error_code EC;
  std::filesystem::create_directories(F.ResultsDir, EC);
  if (EC)
    return Status::invalidArgument("--results: cannot create '" + F.ResultsDir +
                                   "': " + EC.message());
  const std::string Json = rowsJson(*R).dump(2) + "\n";
  const std::string Date = today(), Base = F.ResultsDir + "/" + Date;
  if (!F.Quiet)
    std::fprintf(stderr, "bench: numpy, PyTorch, ONNX Runtime and JAX, where installed\n");
  const LibraryTimes Libraries = pythonBaselines(*R);
  const bool Plotted = plot(*R, Libraries, Base + ".png");
  if (!F.Quiet)
    std::fprintf(stderr, "bench: compile and cache load in fresh processes\n");
  const FreshProcess Fresh = freshProcessCompile();
  std::string Md = markdown(*R, Libraries, Fresh, Date, Plotted ? Date + ".png" : "");
  Md += peersText(Libraries);
  for (const auto &[Path, Text] : {std::pair<std::string, const std::string &>{Base + ".json", Json},
                                   {Base + ".md", Md}})
    if (Status S = writeFileAtomic(Path, Text); !S)
      return S;
  if (!F.Json.empty())
    if (Status S = writeFileAtomic(F.Json, Json); !S)
      return S;
  std::fwrite(Md.data(), 1, Md.size(), stdout);
  if (!Plotted)
    std::fprintf(stderr, "bench: gnuplot is not available; no chart drawn\n");
  return Status::ok();
}

} // namespace gatherjit
