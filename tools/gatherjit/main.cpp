//===- tools/gatherjit/main.cpp - gatherjit-llvm and gatherjit-clang -----===//
//
// The command line's compilers: every command below. Users run gatherjit
// (FrontMain.cpp), which runs cached kernels and the interpreter itself and
// hands the rest here; gatherjit-llvm hands fused epilogues and O3 to
// gatherjit-clang (see RunCommand.h).
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
#include "RunCommand.h"
#include "compiler/optimize/Optimize.h"
#include "gatherjit/Interpreter.h"
#include "gatherjit/Runtime.h"
#include "runtime/AtomicFile.h"
#include "runtime/CudaDriver.h"
#include "runtime/System.h"

#include <CLI/CLI.hpp>

#include <algorithm>
#include <cctype>
#include <cerrno>
#include <chrono>
#include <cstdio>
#include <cstring>
#include <iostream>
#include <new>
#include <optional>
#include <string_view>
#include <unistd.h>

using namespace gatherjit;

namespace {

using Clock = std::chrono::steady_clock;

/// Runs the problem on the chosen engine and writes the output file.
/// A run on a CUDA device: PTX made for it, the operands copied there and
/// the output back.
Status executeOnDevice(Problem &P, const EngineFlags &E, int Ordinal, AtomicFile &File) {
  if (E.Engine != "jit")
    return Status::invalidArgument("--device " + E.Device + " runs the jit engine only");
  Expected<RuntimeOptions> Options = runtimeOptions(E);
  if (!Options)
    return Options.status();
  ByteBuffer Out;
  Expected<DeviceRun> Run = runOnCuda(P.Desc, Ordinal, *Options, P.Input.data(), P.Indices.data(),
                                      Out, E.Repeat, P.Fused, P.RowOut);
  if (!Run)
    return P.inUserTerms(Run.status());
  if (!P.Fused.Function.empty())
    P.fuse(Run->Desc);
  if (Status S = P.writeOutput(File, Out); !S)
    return S;
  if (E.Stats)
    std::fprintf(stderr,
                 "{\"engine\": \"jit\", \"device\": \"%s\", \"opt_level\": \"%s\", "
                 "\"ptx_ms\": %.4f, \"load_ms\": %.4f, \"jit_ms\": %.4f, \"cache\": \"%s\", "
                 "\"kernel_us\": %.3f, "
                 "\"copy_us\": %.3f, \"call_us\": %.3f, \"empty_call_us\": %.3f, "
                 "\"repeat\": %u}\n",
                 Run->Device.c_str(), E.Opt.c_str(), Run->PtxMs, Run->LoadMs, Run->JitMs,
                 Run->FromDisk ? "hit" : "miss", Run->KernelUs, Run->CopyUs, Run->CallUs,
                 Run->EmptyCallUs, E.Repeat);
  return Status::ok();
}

Status execute(Problem &P, const EngineFlags &E, const std::string &OutPath) {
  Expected<std::optional<int>> Device = parseDevice(E.Device);
  if (!Device)
    return Device.status();
  // The destination first: a bad one fails before any work.
  Expected<AtomicFile> File = AtomicFile::create(OutPath);
  if (!File)
    return File.status();
  if (*Device)
    return executeOnDevice(P, E, **Device, *File);
  double InitMs = 0, CompileMs = 0;
  bool Hit = false;
  std::unique_ptr<Runtime> RT;
  Kernel K;
  EpilogueApply Apply;
  const bool Fused = !P.Fused.Function.empty();
  if (E.Engine == "jit" || Fused) { // The interpreter's epilogue is compiled too.
    Expected<RuntimeOptions> Options = runtimeOptions(E);
    if (!Options)
      return Options.status();
    Expected<std::unique_ptr<Runtime>> Created = Runtime::create(*Options);
    if (!Created)
      return Created.status();
    RT = Created.take();
    InitMs = RT->initMs();
    Clock::time_point T0 = Clock::now();
    Expected<Kernel> Compiled =
        Fused ? RT->compile(P.Desc, P.Fused, P.RowOut) : RT->compile(P.Desc);
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
  return runAndWrite(P, E, *File, K, Apply, {InitMs, CompileMs, Hit});
}

Status printIR(const Problem &P, const EngineFlags &E, bool Asm, const std::string &OutPath) {
  Expected<std::optional<int>> Device = parseDevice(E.Device);
  if (!Device)
    return Device.status();
  if (*Device) { // The kernel's PTX, for the device's architecture if it is there.
    Expected<std::string> Ptx =
        ptxFor(P.Desc, *Device, *parseOptLevel(E.Opt), "gj_gather", P.Fused, P.RowOut);
    if (!Ptx)
      return Ptx.status();
    if (OutPath.empty()) {
      std::fwrite(Ptx->data(), 1, Ptx->size(), stdout);
      return Status::ok();
    }
    return writeFileAtomic(OutPath, *Ptx);
  }
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

/// Runs gatherjit-onnx-test on \p Dirs; returns only if it cannot.
Status execOnnxTest(const std::vector<std::string> &Dirs) {
  std::vector<char *> Argv{nullptr};
  for (const std::string &Dir : Dirs)
    Argv.push_back(const_cast<char *>(Dir.c_str()));
  return execSibling(OnnxTestProgram, std::move(Argv));
}

/// The number of single-character edits that make \p A into \p B.
size_t editDistance(const std::string &A, const std::string &B) {
  std::vector<size_t> Row(B.size() + 1);
  for (size_t J = 0; J <= B.size(); ++J)
    Row[J] = J;
  for (size_t I = 1; I <= A.size(); ++I) {
    size_t Diagonal = Row[0];
    Row[0] = I;
    for (size_t J = 1; J <= B.size(); ++J) {
      const size_t Above = Row[J];
      Row[J] = std::min({Row[J] + 1, Row[J - 1] + 1, Diagonal + (A[I - 1] != B[J - 1])});
      Diagonal = Above;
    }
  }
  return Row[B.size()];
}

/// The first of \p Argv[\p First..] that looks like an option and is
/// none of \p Command's (values of its options skipped): the error that
/// names it, with the option of a name within two edits; empty if none.
/// The parser would report a missing required option first.
std::string unknownOption(const CLI::App &Command, const std::string &Path, int First, int Argc,
                          char **Argv) {
  for (int I = First; I < Argc; ++I) {
    const std::string Arg = Argv[I];
    if (Arg == "--")
      return "";
    const bool Long = Arg.rfind("--", 0) == 0;
    // Values such as -1 or -0.5 are not options.
    if (Arg.size() < 2 || Arg[0] != '-' ||
        (!Long && !std::isalpha(static_cast<unsigned char>(Arg[1]))))
      continue;
    const std::string Name = Long ? Arg.substr(0, Arg.find('=')) : Arg.substr(0, 2);
    if (Name == "-h" || Name == "--help")
      continue;
    if (const CLI::Option *Opt = Command.get_option_no_throw(Name)) {
      // The option's value, where it is the next word, may begin with '-'.
      if (Opt->get_items_expected_max() > 0 && Arg.size() == Name.size())
        ++I;
      continue;
    }
    std::string Closest;
    size_t Best = 3;
    for (const CLI::Option *Opt : Command.get_options())
      for (const std::string &Known : Opt->get_lnames())
        if (const size_t D = editDistance(Name, "--" + Known); D < Best)
          Best = D, Closest = "--" + Known;
    return quote(Name) + " is not an option of 'gatherjit" + Path + "'" +
           (Closest.empty() ? "" : "; did you mean " + quote(Closest) + "?") + " (see 'gatherjit" +
           Path + " --help')";
  }
  return "";
}

/// Where \p Argv names no command at a level that needs one (\p App's, or
/// a command's such as `ir`'s), or a word that is none there: the error
/// that says so and lists that level's commands; where it names a command
/// and an option that command has not: the error that names the option;
/// empty otherwise.
std::string commandLineError(CLI::App &App, int Argc, char **Argv) {
  CLI::App *At = &App;
  std::string Path;
  for (int I = 1;; ++I) {
    std::string Names;
    CLI::App *Next = nullptr;
    for (CLI::App *Sub : At->get_subcommands({})) {
      Names += (Names.empty() ? "" : ", ") + Sub->get_name();
      if (I < Argc && Sub->get_name() == Argv[I])
        Next = Sub;
    }
    if (Names.empty())
      return unknownOption(*At, Path, I, Argc, Argv);
    if (Next) {
      At = Next;
      Path += " " + Next->get_name();
      continue;
    }
    const std::string Level = Path.empty() ? "" : " of 'gatherjit" + Path + "'";
    const std::string Its = Path.empty() ? "the" : "its";
    if (I >= Argc)
      return (Path.empty() ? "no command given"
                           : "no command given after 'gatherjit" + Path + "'") +
             "; " + Its + " commands are " + Names;
    if (Argv[I][0] != '-')
      return quote(Argv[I]) + " is not a command" + Level + "; " + Its + " commands are " + Names;
    return ""; // An option before the command: the parser's own message.
  }
}

int run(int Argc, char **Argv) {
  // Named for the program users run, whichever of the three parses it
  // (each is started with its own name as argv[0]).
  CLI::App App{"gatherjit: gather operators compiled to native code", "gatherjit"};
  App.require_subcommand(1);
  struct Command {
    OperandFlags Operands;
    EngineFlags Engine;
    CLI::App *Sub = nullptr;
  };
  constexpr int NumKinds = std::size(RunKinds);
  Command Run[NumKinds], IR[NumKinds];
  bool Asm = false;
  for (int I = 0; I < NumKinds; ++I) {
    Run[I].Sub = addOperands(&App, RunKinds[I], Run[I].Operands, true);
    addEngineFlags(Run[I].Sub, Run[I].Engine);
  }
  CLI::App *IRSub = App.add_subcommand("ir", "print the optimized LLVM IR (or --asm)");
  IRSub->require_subcommand(1);
  for (int I = 0; I < NumKinds; ++I) {
    IR[I].Sub = addOperands(IRSub, RunKinds[I], IR[I].Operands, false);
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

  App.set_version_flag("--version",
                       "gatherjit " GATHERJIT_VERSION " (LLVM " GATHERJIT_LLVM_VERSION ")");

  try {
    App.parse(Argc, Argv);
  } catch (const CLI::CallForVersion &E) {
    std::cout << E.what() << "\n";
    return 0;
  } catch (const CLI::ParseError &E) {
    if (E.get_exit_code() == 0) {
      std::cout << App.help();
      return 0;
    }
    if (std::string Problem = commandLineError(App, Argc, Argv); !Problem.empty())
      return report(Status::invalidArgument(Problem));
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
      Status S =
          IsIR ? printIR(*P, C.Engine, Asm, C.Operands.Out) : execute(*P, C.Engine, C.Operands.Out);
      return S ? 0 : report(S);
    }
  }
  return report(Status::invalidArgument("no command given"));
}

/// Starts making a run's code generator (Runtime::prepare) while the
/// command line is parsed and its operands read: for the commands that
/// compile for this machine, at the --opt given. Read ahead of the parser,
/// which reports what is wrong with the command: a wrong guess here costs
/// work on another thread, never a result.
void prepareRuntime(int Argc, char **Argv) {
  static constexpr std::string_view Compiling[] = {"gather-elements", "gather", "gather-nd", "run",
                                                   "ir"};
  if (Argc < 2 || std::find(std::begin(Compiling), std::end(Compiling),
                            std::string_view(Argv[1])) == std::end(Compiling))
    return;
  RuntimeOptions Options;
  // `ir` compiles at the level asked for, never at the quick tier.
  Options.QuickTier = std::string_view(Argv[1]) != "ir";
  Options.Opt = optArgument(Argc, Argv).value_or(Options.Opt);
  Runtime::prepare(Options);
}

} // namespace

int main(int Argc, char **Argv) {
  removeTemporariesOnSignals();
  // gatherjit-llvm hands what needs clang's libraries or O3 on.
  if (!defaultPipelineLinked() && needsClang(Argc, Argv))
    return report(execSibling(ClangProgram, std::vector<char *>(Argv, Argv + Argc)));
  prepareRuntime(Argc, Argv);
  try {
    return run(Argc, Argv);
  } catch (const std::bad_alloc &) {
    // Sizes from user input are checked before allocation; this is what
    // memory pressure from elsewhere leaves.
    return report(Status::internal("out of memory"));
  }
}
