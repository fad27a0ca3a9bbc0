//===- tools/gatherjit/main.cpp - The gatherjit command line -------------===//
//
// gatherjit gather-elements --data D.npy --indices I.npy [--axis A]
//                           [--oob check|clamp] -o OUT.npy
// gatherjit gather          (the same operands; ONNX Gather)
// gatherjit gather-nd --data D.npy --indices I.npy [--batch-dims B]
//                     [--oob check|clamp] -o OUT.npy
// gatherjit run DESC.json --input D.npy --indices I.npy -o OUT.npy
//   (each of these with [--epilogue F.c --epilogue-fn NAME
//   [--epilogue-params P.bin] [--epilogue-row-out N]]: a fused C epilogue)
// gatherjit ir {gather-elements|gather|gather-nd|run} ... [--asm]
// gatherjit demo            (the seed documents' examples, checked)
// gatherjit aot [gather-elements|gather] --data-shape S --data-type T
//               --indices-shape S --indices-type T --axis A [--desc J.json]...
//               --name NAME... [--target TRIPLE --cpu CPU] -o K.o --header K.h
// gatherjit bench [--cases GE1,G1,...] [--threads N] [--json FILE]
// gatherjit onnx-test DIR...  (ONNX backend node tests: PASS/FAIL per DIR)
//
// Common flags: --engine jit|interp, --opt O0..O3, --threads N,
// --repeat N, --stats (one JSON line on stderr after a success),
// --cache-dir DIR (compiled kernels kept across runs).
//
// Exit codes: 0 success, 2 bad input (one "error:" line on stderr), 1 an
// internal failure. The output file is written atomically or not at all.
//
//===----------------------------------------------------------------------===//

#include "AotCommand.h"
#include "BenchCommand.h"
#include "CliOptions.h"
#include "Demo.h"
#include "OnnxTest.h"
#include "Problem.h"
#include "gatherjit/Interpreter.h"
#include "gatherjit/Runtime.h"
#include "runtime/AtomicFile.h"
#include "runtime/System.h"

#include <CLI/CLI.hpp>

#include <algorithm>
#include <cerrno>
#include <chrono>
#include <cstring>
#include <cstdio>
#include <iostream>
#include <new>
#include <unistd.h>

using namespace gatherjit;

namespace {

/// Prints the one error line and returns the exit status: 2 for bad input,
/// 1 for what the system or gatherjit itself failed at.
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

struct EngineFlags {
  std::string Engine = "jit";
  std::string Opt = "O2";
  unsigned Threads = 0;
  unsigned Repeat = 1;
  bool Stats = false;
  std::string CacheDir;
  bool NoCache = false;
};

void addEngineFlags(CLI::App *Sub, EngineFlags &E) {
  Sub->add_option("--engine", E.Engine, "jit (default) or interp")
      ->check(CLI::IsMember({"jit", "interp"}));
  Sub->add_option("--opt", E.Opt, "optimization level O0..O3 (default O2)")
      ->check(CLI::IsMember({"O0", "O1", "O2", "O3"}));
  Sub->add_option("--threads", E.Threads, "threads for one kernel (0: all cores)")
      ->check(integerIn(0, 1024));
  Sub->add_option("--repeat", E.Repeat, "run the kernel N times")
      ->check(integerIn(1, 1000000000));
  Sub->add_flag("--stats", E.Stats, "print timing as one JSON line on stderr");
  Sub->add_option("--cache-dir", E.CacheDir,
                  "keep compiled kernels in this directory across runs "
                  "(default $XDG_CACHE_HOME/gatherjit or ~/.cache/gatherjit)");
  Sub->add_flag("--no-cache", E.NoCache, "keep no compiled kernels across runs");
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
  if (envFlag("GATHERJIT_NO_CACHE"))
    return "";
  if (const char *Dir = std::getenv("GATHERJIT_CACHE_DIR"); Dir && *Dir)
    return Dir;
  // The XDG base directory rules: a relative XDG_CACHE_HOME is ignored.
  if (const char *Xdg = std::getenv("XDG_CACHE_HOME"); Xdg && *Xdg == '/')
    return std::string(Xdg) + "/gatherjit";
  if (const char *Home = std::getenv("HOME"); Home && *Home)
    return std::string(Home) + "/.cache/gatherjit";
  return "";
}

/// GATHERJIT_CACHE_LIMIT_MIB, the cache's size in MiB (0: no limit).
Expected<uint64_t> cacheLimitFromEnv(uint64_t Default) {
  const char *Text = std::getenv("GATHERJIT_CACHE_LIMIT_MIB");
  if (!Text || !*Text)
    return Default;
  std::string Value = Text;
  const std::string Problem = integerIn(0, int64_t(1) << 40)(Value);
  if (!Problem.empty())
    return Status::invalidArgument("GATHERJIT_CACHE_LIMIT_MIB: " + Problem);
  return std::stoull(Value) << 20;
}

using Clock = std::chrono::steady_clock;

/// Runs the problem on the chosen engine and writes the output file.
Status execute(Problem &P, const EngineFlags &E, const std::string &OutPath) {
  // The destination first: a bad one fails before any work.
  Expected<AtomicFile> File = AtomicFile::create(OutPath);
  if (!File)
    return File.status();
  double InitMs = 0, CompileMs = 0;
  bool Hit = false;
  std::vector<double> RunMs;
  std::unique_ptr<Runtime> RT;
  Kernel K;
  EpilogueApply Apply;
  const bool Fused = !P.Fused.Function.empty();
  if (E.Engine == "jit" || Fused) { // The interpreter's epilogue is compiled too.
    RuntimeOptions Options;
    Options.Opt = *parseOptLevel(E.Opt);
    Options.Threads = E.Threads;
    Options.CacheDir = cacheDirFor(E);
    Expected<uint64_t> Limit = cacheLimitFromEnv(Options.CacheDirLimit);
    if (!Limit)
      return Limit.status();
    Options.CacheDirLimit = *Limit;
    Options.PerfMap = envFlag("GATHERJIT_PERF_MAP");
    Options.Debugger = envFlag("GATHERJIT_GDB");
    Expected<std::unique_ptr<Runtime>> Created = Runtime::create(Options);
    if (!Created)
      return Created.status();
    RT = Created.take();
    InitMs = RT->initMs();
    Clock::time_point T0 = Clock::now();
    Expected<Kernel> Compiled = Fused ? RT->compile(P.Desc, P.Fused, P.RowOut) : RT->compile(P.Desc);
    if (!Compiled)
      return Compiled.status();
    K = Compiled.take();
    // With an epilogue, clang's time too.
    CompileMs = Fused ? std::chrono::duration<double, std::milli>(Clock::now() - T0).count()
                      : K.compileTimes().total();
    Hit = K.cacheHit();
    if (Fused) {
      P.fuse(K.desc());
      if (E.Engine == "interp") {
        Expected<EpilogueApply> Made = RT->epilogueFunction(K);
        if (!Made)
          return Made.status();
        Apply = Made.take();
      }
    }
  }
  Expected<ByteBuffer> Out = P.outputBuffer();
  if (!Out)
    return Out.status();
  const bool Jit = E.Engine == "jit";
  for (unsigned I = 0; I < E.Repeat; ++I) {
    Clock::time_point T0 = Clock::now();
    Status S = Jit ? K.run(P.Input.data(), P.Indices.data(), Out->data())
               : Apply ? interpret(P.Desc, P.Input.data(), P.Indices.data(), Out->data(), Apply)
                       : interpret(P.Desc, P.Input.data(), P.Indices.data(), Out->data());
    RunMs.push_back(std::chrono::duration<double, std::milli>(Clock::now() - T0).count());
    if (!S)
      return S;
  }
  if (Status S = P.writeOutput(*File, *Out); !S)
    return S;
  if (E.Stats) {
    std::sort(RunMs.begin(), RunMs.end());
    const size_t N = RunMs.size();
    const double Median = N % 2 ? RunMs[N / 2] : (RunMs[N / 2 - 1] + RunMs[N / 2]) / 2;
    std::fprintf(stderr,
                 "{\"engine\": \"%s\", \"opt_level\": \"%s\", \"jit_init_ms\": %.4f, "
                 "\"compile_ms\": %.4f, \"cache\": \"%s\", \"run_ms_median\": %.6f, "
                 "\"repeat\": %u}\n",
                 E.Engine.c_str(), E.Opt.c_str(), InitMs, CompileMs,
                 Hit ? "hit" : "miss", Median, E.Repeat);
  }
  return Status::ok();
}

Status printIR(const Problem &P, const EngineFlags &E, bool Asm,
               const std::string &OutPath) {
  RuntimeOptions Options;
  Options.Opt = *parseOptLevel(E.Opt);
  Options.Threads = 1;
  // The code at the level asked for (a small kernel's steady state, not its
  // quick first tier: that is --opt O1).
  Options.QuickTier = false;
  Expected<std::unique_ptr<Runtime>> RT = Runtime::create(Options);
  if (!RT)
    return RT.status();
  Kernel K;
  if (!P.Fused.Function.empty()) {
    Expected<Kernel> Fused = (*RT)->compile(P.Desc, P.Fused, P.RowOut);
    if (!Fused)
      return Fused.status();
    K = Fused.take();
  }
  Expected<std::string> Text = P.Fused.Function.empty()
                                   ? (Asm ? (*RT)->assembly(P.Desc) : (*RT)->optimizedIR(P.Desc))
                                   : (Asm ? (*RT)->assembly(K) : (*RT)->optimizedIR(K));
  if (!Text)
    return Text.status();
  if (OutPath.empty()) {
    std::fwrite(Text->data(), 1, Text->size(), stdout);
    return Status::ok();
  }
  return writeFileAtomic(OutPath, *Text); // "-" is standard output too
}

/// Runs gatherjit-onnx-test, which lies beside this program, on \p Dirs;
/// returns only if it cannot.
Status execOnnxTest(const std::vector<std::string> &Dirs) {
  char Self[4096];
  const ssize_t N = readlink("/proc/self/exe", Self, sizeof(Self) - 1);
  if (N <= 0)
    return Status::ioError(std::string("onnx-test: finding this program: ") +
                           std::strerror(errno));
  std::string Program(Self, static_cast<size_t>(N));
  Program = Program.substr(0, Program.find_last_of('/') + 1) + OnnxTestProgram;
  std::vector<char *> Argv{const_cast<char *>(OnnxTestProgram)};
  for (const std::string &Dir : Dirs)
    Argv.push_back(const_cast<char *>(Dir.c_str()));
  Argv.push_back(nullptr);
  execv(Program.c_str(), Argv.data());
  return Status::ioError("onnx-test: running " + quote(Program) + ": " + std::strerror(errno));
}

/// The operand flags of gather-elements, gather and run on one subcommand.
CLI::App *addOperands(CLI::App *Parent, ProblemSource Kind, OperandFlags &F,
                      bool OutputRequired) {
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
    Sub->add_option("--oob", F.Oob, "out-of-range indices: check (error, default), clamp (wrap negatives "
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

int run(int Argc, char **Argv) {
  CLI::App App{"gatherjit: gather operators compiled to native code"};
  App.require_subcommand(1);
  struct Command {
    OperandFlags Operands;
    EngineFlags Engine;
    CLI::App *Sub = nullptr;
  };
  const ProblemSource Kinds[] = {ProblemSource::OnnxGatherElements, ProblemSource::OnnxGather,
                                 ProblemSource::OnnxGatherND, ProblemSource::Json};
  constexpr int NumKinds = 4;
  Command Run[NumKinds], IR[NumKinds];
  bool Asm = false;
  for (int I = 0; I < NumKinds; ++I) {
    Run[I].Sub = addOperands(&App, Kinds[I], Run[I].Operands, true);
    addEngineFlags(Run[I].Sub, Run[I].Engine);
  }
  CLI::App *IRSub = App.add_subcommand("ir", "print the optimized LLVM IR (or --asm)");
  IRSub->require_subcommand(1);
  for (int I = 0; I < NumKinds; ++I) {
    IR[I].Sub = addOperands(IRSub, Kinds[I], IR[I].Operands, false);
    addEngineFlags(IR[I].Sub, IR[I].Engine);
    IR[I].Sub->add_flag("--asm", Asm, "print machine code instead of IR");
  }
  CLI::App *DemoSub = App.add_subcommand("demo", "the seed examples through the JIT, checked");
  AotFlags Aot;
  CLI::App *AotSub = addAotCommand(App, Aot);
  BenchFlags Bench;
  CLI::App *BenchSub = addBenchCommand(App, Bench);
  std::vector<std::string> OnnxDirs;
  CLI::App *OnnxTestSub =
      App.add_subcommand("onnx-test", "run ONNX backend node-test directories through the JIT");
  OnnxTestSub->add_option("dirs", OnnxDirs, "test directories (model.onnx, test_data_set_N/)")
      ->required();

  try {
    App.parse(Argc, Argv);
  } catch (const CLI::ParseError &E) {
    if (E.get_exit_code() == 0) {
      std::cout << App.help();
      return 0;
    }
    return report(Status::invalidArgument(E.what()));
  }
  if (DemoSub->parsed())
    return runDemo();
  if (BenchSub->parsed()) {
    Status S = runBench(Bench);
    return S ? 0 : report(S);
  }
  if (OnnxTestSub->parsed())
    return report(execOnnxTest(OnnxDirs));
  if (AotSub->parsed()) {
    Status S = runAot(Aot);
    return S ? 0 : report(S);
  }
  for (int I = 0; I < NumKinds; ++I) {
    for (bool IsIR : {false, true}) {
      Command &C = IsIR ? IR[I] : Run[I];
      if (!C.Sub->parsed())
        continue;
      Expected<Problem> P = loadProblem(C.Operands);
      if (!P)
        return report(P.status());
      Status S = IsIR ? printIR(*P, C.Engine, Asm, C.Operands.Out)
                      : execute(*P, C.Engine, C.Operands.Out);
      return S ? 0 : report(S);
    }
  }
  return report(Status::invalidArgument("no command given"));
}

} // namespace

int main(int Argc, char **Argv) {
  removeTemporariesOnSignals();
  try {
    return run(Argc, Argv);
  } catch (const std::bad_alloc &) {
    // Sizes from user input are checked before allocation; this is what
    // memory pressure from elsewhere leaves.
    return report(Status::internal("out of memory"));
  }
}
