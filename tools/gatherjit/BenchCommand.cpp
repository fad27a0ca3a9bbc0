//===- tools/gatherjit/BenchCommand.cpp - gatherjit bench ----------------===//

#include "BenchCommand.h"
#include "BenchReport.h"

#include "CliOptions.h"
#include "Npy.h"
#include "Shapes.h"
#include "Suite.h"
#include "gatherjit/Interpreter.h"
#include "runtime/AtomicFile.h"
#include "runtime/CudaDriver.h"

#include <nlohmann/json.hpp>

#include <algorithm>
#include <chrono>
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

FreshProcess freshProcessCompile() {
  FreshProcess R;
  std::string Dir = (std::filesystem::temp_directory_path() / "gatherjit-fresh-XXXXXX").string();
  if (!mkdtemp(Dir.data()))
    return R;
  const std::vector<float> Data(64 * 1000, 1.0f);
  const std::vector<int64_t> Indices(64 * 16, 3);
  if (!writeFileAtomic(Dir + "/d.npy",
                       encodeNpy("<f4", {64, 1000}, Data.data(), Data.size() * 4)) ||
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

/// The device's shape walk: GatherElements FLOAT32 [L, 64] by INT64
/// [L, 16] on axis 1 for each L of WalkRows, WalkCalls calls each (a batch
/// size that changes every few calls), every call synchronized, in one
/// runtime of mode Mode; operands on the device, in range.
constexpr uint64_t WalkRow = 64, WalkIds = 16, WalkCalls = 10;
std::vector<uint64_t> walkRows() {
  std::vector<uint64_t> Rows;
  for (uint64_t L = 8; L < 8 + 200 * 5; L += 5)
    Rows.push_back(L);
  return Rows;
}

struct WalkTimes {
  double TotalMs = 0, FirstCallP99Us = 0, FirstCallMaxUs = 0;
  unsigned Compiles = 0; ///< Kernels compiled on the caller's thread.
};

Expected<WalkTimes> deviceWalk(int Ordinal, Specialize Mode) {
  using Clock = std::chrono::steady_clock;
  const std::vector<uint64_t> Rows = walkRows();
  const uint64_t MaxL = Rows.back();
  Expected<std::shared_ptr<CudaDevice>> D = CudaDevice::open(Ordinal);
  if (!D)
    return D.status();
  std::vector<float> Data(MaxL * WalkRow);
  std::vector<int64_t> Ids(MaxL * WalkIds);
  for (size_t I = 0; I < Data.size(); ++I)
    Data[I] = static_cast<float>(I);
  for (size_t I = 0; I < Ids.size(); ++I)
    Ids[I] = static_cast<int64_t>((I * 2654435761u) % WalkRow);
  std::shared_ptr<void> Buf[3];
  const size_t Bytes[3] = {Data.size() * 4, Ids.size() * 8, MaxL * WalkIds * 4};
  for (int B = 0; B < 3; ++B) {
    Expected<std::shared_ptr<void>> Made = (*D)->allocate(Bytes[B]);
    if (!Made)
      return Made.status();
    Buf[B] = Made.take();
  }
  if (Status S = (*D)->copyToDevice(Buf[0].get(), Data.data(), Bytes[0]); !S)
    return S;
  if (Status S = (*D)->copyToDevice(Buf[1].get(), Ids.data(), Bytes[1]); !S)
    return S;
  RuntimeOptions Options;
  Options.Device = "cuda:" + std::to_string(Ordinal);
  Options.Specialization = Mode;
  Expected<std::unique_ptr<Runtime>> RT = Runtime::create(Options);
  if (!RT)
    return RT.status();
  WalkTimes W;
  std::vector<double> First;
  const Clock::time_point T0 = Clock::now();
  for (uint64_t L : Rows) {
    TensorDesc In, Idx;
    In.Type = DataType::Float32;
    In.Sizes = {L, WalkRow};
    Idx.Type = DataType::Int64;
    Idx.Sizes = {L, WalkIds};
    Expected<ValidDesc> V = validateOnnx({OpKind::GatherElements, In, Idx, 1}, OobPolicy::Check);
    if (!V)
      return V.status();
    const Clock::time_point C0 = Clock::now();
    Expected<Kernel> K = (*RT)->compile(*V);
    if (!K)
      return K.status();
    W.Compiles += K->compileTimes().total() > 0;
    for (uint64_t Call = 0; Call < WalkCalls; ++Call) {
      if (Status S = K->run(Buf[0].get(), Buf[1].get(), Buf[2].get()); !S)
        return S;
      if (Call == 0)
        First.push_back(std::chrono::duration<double, std::micro>(Clock::now() - C0).count());
    }
  }
  W.TotalMs = std::chrono::duration<double, std::milli>(Clock::now() - T0).count();
  std::sort(First.begin(), First.end());
  W.FirstCallP99Us = First[First.size() * 99 / 100];
  W.FirstCallMaxUs = First.back();
  return W;
}

/// A device run's output is \p Want, byte for byte.
bool same(const ByteBuffer &Got, const std::vector<char> &Want) {
  return Got.size() == Want.size() && std::equal(Want.begin(), Want.end(), Got.data());
}

/// The fewest bytes a case must move through device memory (its indices
/// read, its output written, and of its input at most as many bytes as
/// the output has, each once) at the rate of a device-to-device copy of
/// its output (\p CopyUs, which reads and writes the output's bytes): the
/// time no kernel of the case beats by much.
double floorUs(const bench::BenchData &Data, double CopyUs) {
  if (Data.OutputBytes == 0)
    return 0;
  const double Bytes = double(Data.Indices.size()) + double(Data.OutputBytes) +
                       double(std::min<uint64_t>(Data.Input.size(), Data.OutputBytes));
  return CopyUs * Bytes / (2.0 * double(Data.OutputBytes));
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
    std::vector<char> Ref(Data.OutputBytes);
    ByteBuffer Out, Family;
    // The case's own kernel (jit), and its family's (generic: every size
    // from the launch, the kernel a new shape of a loaded family runs).
    RuntimeOptions Own, OfFamily;
    Own.Specialization = Specialize::AtCompile;
    OfFamily.Specialization = Specialize::Never;
    Expected<DeviceRun> Run =
        runOnCuda(*V, Ordinal, Own, Data.Input.data(), Data.Indices.data(), Out, Repeat);
    if (!Run)
      return Run.status();
    Expected<DeviceRun> Generic =
        runOnCuda(*V, Ordinal, OfFamily, Data.Input.data(), Data.Indices.data(), Family, Repeat);
    if (!Generic)
      return Generic.status();
    DeviceName = Run->Device;
    if (Status S = interpret(*V, Data.Input.data(), Data.Indices.data(), Ref.data()); !S)
      return S;
    // Under Check, bad indices too: each named as the interpreter names it.
    Expected<unsigned> BadRuns = checkBadIndicesOnCuda(*V, Ordinal, Specialize::AtCompile,
                                                       Data.Input.data(), Data.Indices.data());
    if (BadRuns)
      BadRuns = checkBadIndicesOnCuda(*V, Ordinal, Specialize::Never, Data.Input.data(),
                                      Data.Indices.data());
    if (!BadRuns && BadRuns.status().code() != ErrorCode::Internal)
      return BadRuns.status();
    Rows.push_back({{"case", C.Name},
                    {"kernel_us", Run->KernelUs},
                    {"generic_us", Generic->KernelUs},
                    {"generic_call_us", Generic->CallUs},
                    {"copy_us", Run->CopyUs},
                    {"call_us", Run->CallUs},
                    {"empty_call_us", Run->EmptyCallUs},
                    {"ptx_ms", Run->PtxMs},
                    {"load_ms", Run->LoadMs},
                    {"jit_ms", Run->JitMs},
                    {"bytes", Data.OutputBytes},
                    {"floor_us", floorUs(Data, Run->CopyUs)},
                    {"matches_interpreter", same(Out, Ref) && same(Family, Ref) && BadRuns},
                    {"bad_index_runs", BadRuns ? *BadRuns : 0},
                    {"bad_index_error", BadRuns ? "" : BadRuns.status().message()}});
    if (C.Policy == OobPolicy::Check)
      PyCases.push_back(caseJson(C));
  }
  // The shape walk, as the runtime runs it (each new shape on its family's
  // kernel, hot shapes specialized in the background) and compiling every
  // shape's own kernel first.
  nlohmann::json Walk = nlohmann::json::object();
  for (auto [Name, Mode] :
       {std::pair{"adaptive", Specialize::Adaptive}, std::pair{"compile", Specialize::AtCompile}}) {
    if (!F.Quiet)
      std::fprintf(stderr, "bench: the shape walk on cuda:%d, --specialize %s\n", Ordinal, Name);
    Expected<WalkTimes> W = deviceWalk(Ordinal, Mode);
    if (!W)
      return W.status();
    Walk[Name] = {{"total_ms", W->TotalMs},
                  {"first_call_p99_us", W->FirstCallP99Us},
                  {"first_call_max_us", W->FirstCallMaxUs},
                  {"compiles", W->Compiles}};
  }
  const nlohmann::json WalkSpec = {
      {"rows", walkRows()}, {"row", WalkRow}, {"ids", WalkIds}, {"calls", WalkCalls}};
  nlohmann::json Torch;
  for (const char *Python : {"python3", "/usr/bin/python3"})
    if (std::optional<std::string> Got =
            runEmbeddedScript(Python, CudaBaselines,
                              quoteForShell(PyCases.dump()) + " " + std::to_string(Repeat) + " " +
                                  quoteForShell(WalkSpec.dump()))) {
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
       << (Torch.contains("missing") ? Torch["missing"].get<std::string>() : "no python3") << ")";
  Md << ". Medians of " << Repeat
     << " runs: kernels by CUDA events; a call from its start to the return of its stream's "
        "synchronize by the host's clock, beside an empty kernel's (one thread, no parameters: "
        "the driver's floor under any call). The same as the interpreter: the output, and under "
        "Check "
        "the error of each of 4 runs with a bad index at the last, the first, the middle element "
        "of the indices, or none, and of 3 asynchronous launches whose second has a bad last "
        "index. Random reads: PyTorch's take of as many elements at "
        "uniformly random positions of the input, the floor of a gather whose reads do not "
        "share cache lines. Floor: the fewest bytes the case must move (its indices, its output, "
        "and of its input as many bytes as the output has, each once) at the copy line's rate.\n\n"
     << "Generic: the case's family kernel (every size and stride from its launch), which "
        "a new shape of a loaded family runs at once.\n\n"
     << "| case | gatherjit µs | generic µs | copy line µs | % of line | floor µs | % of floor | "
        "random reads µs | "
        "PyTorch µs | PyTorch / gatherjit | gatherjit call µs | empty kernel call µs | PyTorch "
        "call "
        "µs | PTX ms | load ms (driver's compile) | same as interpreter "
        "|\n|---|---|---|---|---|---|---|---|---|---|---|---|---|---|---|---|"
        "\n";
  char Cell[64];
  for (nlohmann::json &Row : Rows) {
    const std::string Name = Row["case"];
    const double Us = Row["kernel_us"], Copy = Row["copy_us"];
    Md << "| " << Name;
    std::snprintf(Cell, sizeof(Cell), " | %.1f | %.1f | %.1f | %.0f%%", Us,
                  Row["generic_us"].get<double>(), Copy, Us > 0 ? 100.0 * Copy / Us : 0.0);
    Md << Cell;
    const double Floor = Row["floor_us"];
    std::snprintf(Cell, sizeof(Cell), " | %.1f | %.0f%%", Floor, Us > 0 ? 100.0 * Floor / Us : 0.0);
    Md << Cell;
    const bool HasTorch = Torch.contains("cases") && Torch["cases"].contains(Name);
    const nlohmann::json Py = HasTorch ? Torch["cases"][Name] : nlohmann::json::object();
    if (HasTorch) {
      const double T = Py["torch_us"];
      Row["torch_us"] = T;
      Row["torch_same"] = Py["same"];
      Row["torch_call_us"] = Py["call_us"];
      Row["random_reads_us"] = Py["random_reads_us"];
      std::snprintf(Cell, sizeof(Cell), " | %.1f | %.1f | %.2fx",
                    Py["random_reads_us"].get<double>(), T, Us > 0 ? T / Us : 0.0);
      Md << Cell;
    } else {
      Md << " | - | - | -";
    }
    std::snprintf(Cell, sizeof(Cell), " | %.1f | %.1f", Row["call_us"].get<double>(),
                  Row["empty_call_us"].get<double>());
    Md << Cell;
    if (HasTorch) {
      std::snprintf(Cell, sizeof(Cell), " | %.1f", Py["call_us"].get<double>());
      Md << Cell;
    } else {
      Md << " | -";
    }
    std::snprintf(Cell, sizeof(Cell), " | %.2f | %.2f (%.2f) | %s |\n", Row["ptx_ms"].get<double>(),
                  Row["load_ms"].get<double>(), Row["jit_ms"].get<double>(),
                  Row["matches_interpreter"].get<bool>() ? "yes" : "NO");
    Md << Cell;
  }
  Md << "\nThe shape walk: GatherElements FLOAT32 [L, " << WalkRow << "] by INT64 [L, " << WalkIds
     << "] on axis 1, L = 8, 13, ..., " << walkRows().back() << " (" << walkRows().size()
     << " shapes), " << WalkCalls
     << " calls each, every call synchronized; a new shape's first call from compile() to its "
        "return.\n\n| engine | walk ms | first call p99 µs | first call max µs | compiles on the "
        "caller's thread |\n|---|---|---|---|---|\n";
  for (auto [Name, Label] : {std::pair{"adaptive", "gatherjit (family kernels, hot shapes "
                                                   "specialized in the background)"},
                             std::pair{"compile", "gatherjit, --specialize compile"}}) {
    const nlohmann::json &W = Walk[Name];
    std::snprintf(Cell, sizeof(Cell), " | %.1f | %.0f | %.0f | %u |\n", W["total_ms"].get<double>(),
                  W["first_call_p99_us"].get<double>(), W["first_call_max_us"].get<double>(),
                  W["compiles"].get<unsigned>());
    Md << "| " << Label << Cell;
  }
  if (Torch.contains("walk")) {
    const nlohmann::json &W = Torch["walk"];
    std::snprintf(Cell, sizeof(Cell), " | %.1f | %.0f | %.0f | - |\n", W["total_ms"].get<double>(),
                  W["first_call_p99_us"].get<double>(), W["first_call_max_us"].get<double>());
    Md << "| PyTorch gather(out=)" << Cell;
  }
  const std::string Text = Md.str();
  std::fwrite(Text.data(), 1, Text.size(), stdout);
  std::error_code EC;
  std::filesystem::create_directories(F.ResultsDir, EC);
  const std::string Base = F.ResultsDir + "/" + today() + "-cuda";
  nlohmann::json Report = {
      {"device", DeviceName}, {"rows", Rows}, {"walk", Walk}, {"torch", Torch}};
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
  for (const auto &[Path, Text] :
       {std::pair<std::string, const std::string &>{Base + ".json", Json}, {Base + ".md", Md}})
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
