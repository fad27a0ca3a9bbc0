//===- tools/gatherjit/RunCommand.cpp - What every gatherjit program shares ===//

#include "RunCommand.h"

#include "CliOptions.h"
#include "gatherjit/Interpreter.h"
#include "runtime/System.h"

#include <algorithm>
#include <cerrno>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <unistd.h>

namespace gatherjit {

int report(const Status &S) {
  // User values are quoted where they enter a message; this catches what
  // came from elsewhere (LLVM, the system) and bounds the line.
  std::string Line;
  for (char C : S.message()) {
    if (Line.size() >= 2000) {
      Line += "...";
      break;
    }
    const unsigned char U = static_cast<unsigned char>(C);
    Line += U < 0x20 || U == 0x7f ? ' ' : C;
  }
  std::fprintf(stderr, "error: %s\n", Line.c_str());
  return S.code() == ErrorCode::Internal || S.code() == ErrorCode::IoError ? 1 : 2;
}

void addEngineFlags(CLI::App *Sub, EngineFlags &E) {
  Sub->add_option("--engine", E.Engine, "jit (default) or interp")
      ->check(CLI::IsMember({"jit", "interp"}));
  Sub->add_option("--opt", E.Opt, "optimization level O0..O3 (default O2)")
      ->check(CLI::IsMember({"O0", "O1", "O2", "O3"}));
  Sub->add_option("--threads", E.Threads, "threads for one kernel (0: all cores)")
      ->check(integerIn(0, 1024));
  Sub->add_option("--repeat", E.Repeat, "run the kernel N times")->check(integerIn(1, 1000000000));
  Sub->add_flag("--stats", E.Stats, "print timing as one JSON line on stderr");
  Sub->add_option("--cache-dir", E.CacheDir,
                  "keep compiled kernels in this directory across runs "
                  "(default $XDG_CACHE_HOME/gatherjit or ~/.cache/gatherjit)");
  Sub->add_flag("--no-cache", E.NoCache, "keep no compiled kernels across runs");
  Sub->add_option("--specialize", E.Specialize,
                  "adaptive (default: the generic loop at once, a specialized kernel for "
                  "hot or large shapes), compile (always specialize first) or never")
      ->check(CLI::IsMember({"adaptive", "compile", "never"}));
  Sub->add_option("--device", E.Device,
                  "cpu (default), or cuda / cuda:N: run on that CUDA device through its driver "
                  "(the operands copied there and back); `ir` prints the kernel's PTX");
}

/// The persistent kernel cache of a command, as ccache and Triton keep
/// theirs: --no-cache or GATHERJIT_NO_CACHE turn it off; otherwise
/// --cache-dir, GATHERJIT_CACHE_DIR, $XDG_CACHE_HOME/gatherjit or
/// ~/.cache/gatherjit, the first that is set. Empty for none.
std::string cacheDirFor(const EngineFlags &E) {
  if (E.NoCache)
    return "";
  if (!E.CacheDir.empty())
    return E.CacheDir;
  return defaultCacheDir();
}

Expected<RuntimeOptions> runtimeOptions(const EngineFlags &E) {
  RuntimeOptions Options;
  Options.Opt = *parseOptLevel(E.Opt);
  Options.Threads = E.Threads;
  (void)parseSpecialize(E.Specialize, Options.Specialization); // Checked by the parser.
  Options.CacheDir = cacheDirFor(E);
  Expected<uint64_t> Limit = defaultCacheLimit(Options.CacheDirLimit);
  if (!Limit)
    return Limit.status();
  Options.CacheDirLimit = *Limit;
  Options.PerfMap = envFlag("GATHERJIT_PERF_MAP");
  Options.Debugger = envFlag("GATHERJIT_GDB");
  return Options;
}

Status runAndWrite(Problem &P, const EngineFlags &E, AtomicFile &File, const Kernel &K,
                   const EpilogueApply &Apply, const RunTimes &Times) {
  using Clock = std::chrono::steady_clock;
  std::vector<double> RunMs;
  Expected<ByteBuffer> Out = P.outputBuffer();
  if (!Out)
    return Out.status();
  const bool Jit = E.Engine == "jit";
  for (unsigned I = 0; I < E.Repeat; ++I) {
    Clock::time_point T0 = Clock::now();
    Status S = Jit     ? K.run(P.Input.data(), P.Indices.data(), Out->data())
               : Apply ? interpret(P.Desc, P.Input.data(), P.Indices.data(), Out->data(), Apply)
                       : interpret(P.Desc, P.Input.data(), P.Indices.data(), Out->data());
    RunMs.push_back(std::chrono::duration<double, std::milli>(Clock::now() - T0).count());
    if (!S)
      return P.inUserTerms(S);
  }
  if (Status S = P.writeOutput(File, *Out); !S)
    return S;
  if (E.Stats) {
    std::sort(RunMs.begin(), RunMs.end());
    const size_t N = RunMs.size();
    const double Median = N % 2 ? RunMs[N / 2] : (RunMs[N / 2 - 1] + RunMs[N / 2]) / 2;
    std::fprintf(stderr,
                 "{\"engine\": \"%s\", \"opt_level\": \"%s\", \"jit_init_ms\": %.4f, "
                 "\"compile_ms\": %.4f, \"cache\": \"%s\", \"run_ms_median\": %.6f, "
                 "\"repeat\": %u, \"tier\": \"%s\"}\n",
                 E.Engine.c_str(), E.Opt.c_str(), Times.InitMs, Times.CompileMs,
                 Times.Hit ? "hit" : "miss", Median, E.Repeat,
                 Jit ? kernelTierName(K.tier()) : "interpreter");
  }
  return Status::ok();
}

namespace {

/// glibc's malloc in the compilers: it takes memory from the system 4 MiB at
/// a time, which the compilers fault in on a second thread from their start
/// (Prefault.cpp), and asks for huge pages where the kernel gives them on
/// request (transparent huge pages set to "madvise"; this machine's kernel
/// gave none). The user's own GLIBC_TUNABLES come after ours, so theirs win.
void askForHugePages() {
  constexpr const char *Ours = "glibc.malloc.hugetlb=1:glibc.malloc.top_pad=0x400000";
  const char *User = std::getenv("GLIBC_TUNABLES");
  if (!User || !*User) {
    ::setenv("GLIBC_TUNABLES", Ours, 1);
    return;
  }
  if (std::strncmp(User, Ours, std::strlen(Ours)) != 0) // Not already ours (an exec of an exec).
    ::setenv("GLIBC_TUNABLES", (std::string(Ours) + ":" + User).c_str(), 1);
}

} // namespace

std::optional<OptLevel> optArgument(int Argc, char **Argv) {
  std::optional<OptLevel> Level;
  for (int I = 1; I < Argc; ++I) {
    const std::string_view Arg = Argv[I];
    if (Arg == "--opt" && I + 1 < Argc)
      Level = parseOptLevel(Argv[I + 1]);
    else if (Arg.substr(0, 6) == "--opt=")
      Level = parseOptLevel(Arg.substr(6));
  }
  return Level;
}

bool needsClang(int Argc, char **Argv) {
  for (int I = 1; I < Argc; ++I)
    if (std::string_view(Argv[I]).rfind("--epilogue", 0) == 0)
      return true;
  return optArgument(Argc, Argv) == OptLevel::O3;
}

const char *compilerFor(int Argc, char **Argv) {
  return needsClang(Argc, Argv) ? ClangProgram : LlvmProgram;
}

Status execSibling(const char *Program, std::vector<char *> Argv) {
  askForHugePages();
  char Self[4096];
  const ssize_t N = readlink("/proc/self/exe", Self, sizeof(Self) - 1);
  if (N <= 0)
    return Status::ioError(std::string("finding this program: ") + std::strerror(errno));
  std::string Path(Self, static_cast<size_t>(N));
  Path = Path.substr(0, Path.find_last_of('/') + 1) + Program;
  Argv[0] = const_cast<char *>(Program);
  Argv.push_back(nullptr);
  execv(Path.c_str(), Argv.data());
  return Status::ioError("running " + quote(Path) + ": " + std::strerror(errno));
}

bool given(const EpilogueFlags &F) {
  return !F.File.empty() || !F.Function.empty() || !F.Params.empty() || F.RowOut != 0 || F.Checked;
}

CLI::App *addOperands(CLI::App *Parent, ProblemSource Kind, OperandFlags &F, bool OutputRequired) {
  const char *Name = Kind == ProblemSource::OnnxGatherElements ? "gather-elements"
                     : Kind == ProblemSource::OnnxGather       ? "gather"
                     : Kind == ProblemSource::OnnxGatherND     ? "gather-nd"
                                                               : "run";
  const char *Help = Kind == ProblemSource::OnnxGatherElements ? "ONNX GatherElements"
                     : Kind == ProblemSource::OnnxGather       ? "ONNX Gather"
                     : Kind == ProblemSource::OnnxGatherND
                         ? "ONNX GatherND"
                         : "a DirectML-style descriptor (DESC.json)";
  CLI::App *Sub = Parent->add_subcommand(Name, Help);
  F.Kind = Kind;
  if (Kind == ProblemSource::Json) {
    Sub->add_option("desc", F.DescPath, "descriptor JSON")->required();
    Sub->add_option("--input", F.Data, "input buffer (.npy)")->required();
  } else {
    Sub->add_option("--data", F.Data, "data tensor (.npy)")->required();
    if (Kind == ProblemSource::OnnxGatherND)
      Sub->add_option("--batch-dims", F.Axis,
                      "leading dimensions of data and indices that are batches (default 0)")
          ->check(integerIn(0, MaxRank));
    else
      Sub->add_option("--axis", F.Axis, "axis, negative counts from the back")
          ->check(integerIn(INT32_MIN, INT32_MAX));
    Sub->add_option("--oob", F.Oob,
                    "out-of-range indices: check (error, default), clamp (wrap negatives "
                    "once, then clamp: DirectML) or clip (no wrap: numpy)")
        ->check(CLI::IsMember({"check", "clamp", "clip"}));
  }
  Sub->add_option("--indices", F.Indices, "indices (.npy)")->required();
  addEpilogueFlags(Sub, F.Epilogue);
  CLI::Option *Out = Sub->add_option("-o,--output", F.Out, "output file");
  if (OutputRequired)
    Out->required();
  return Sub;
}

} // namespace gatherjit
