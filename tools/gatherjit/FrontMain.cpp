//===- tools/gatherjit/FrontMain.cpp - gatherjit without LLVM -------------===//
//
// The program users run as `gatherjit`. It links no LLVM, so it starts in a
// few milliseconds, and runs alone what needs no compiler:
//   - gather-elements, gather, gather-nd and run whose kernel is in the
//     kernel cache (runtime/CachedKernels.h),
//   - the same where the runtime's mode (--specialize) runs the shape on
//     the generic loop for all of its runs (a small one-shot run, by
//     default), and
//   - the same commands with --engine interp.
// Everything else (a kernel to compile, GATHERJIT_PERF_MAP or
// GATHERJIT_GDB, ir, aot, bench, demo, onnx-test, --help, a command line it
// does not understand) it hands to the compiler compilerFor names
// (gatherjit-llvm, or gatherjit-clang for fused C epilogues and O3),
// replacing itself with it: that parses the command again and reports its
// errors.
// The commands, flags, outputs and exit codes are those of tools/gatherjit/
// main.cpp.
//
//===----------------------------------------------------------------------===//

#include "Problem.h"
#include "RunCommand.h"
#include "runtime/CachedKernels.h"
#include "runtime/System.h"

#include <CLI/CLI.hpp>

#include <chrono>
#include <new>

using namespace gatherjit;

namespace {

/// Runs the command if it needs no compiler: true with its exit status in
/// \p Exit; false if a compiling program must run it.
bool runWithoutCompiler(int Argc, char **Argv, int &Exit) {
  CLI::App App;
  App.require_subcommand(1);
  constexpr int NumKinds = std::size(RunKinds);
  OperandFlags Operands[NumKinds];
  EngineFlags Engine[NumKinds];
  CLI::App *Subs[NumKinds];
  for (int I = 0; I < NumKinds; ++I) {
    Subs[I] = addOperands(&App, RunKinds[I], Operands[I], true);
    addEngineFlags(Subs[I], Engine[I]);
  }
  try {
    App.parse(Argc, Argv);
  } catch (const CLI::ParseError &) {
    return false; // Help, another command, or an error: gatherjit-llvm says.
  }
  int I = 0;
  while (I < NumKinds && !Subs[I]->parsed())
    ++I;
  if (I == NumKinds || given(Operands[I].Epilogue))
    return false;
  const EngineFlags &E = Engine[I];
  if (E.Device != "cpu")
    return false; // A device run compiles PTX.
  const bool Jit = E.Engine == "jit";
  std::optional<CachedKernels> Cache;
  Expected<RuntimeOptions> Options = RuntimeOptions();
  double InitMs = 0;
  if (Jit) {
    const auto T0 = std::chrono::steady_clock::now();
    Options = runtimeOptions(E);
    // Kernels named in perf maps or registered with GDB are ORC's to link.
    if (!Options || Options->PerfMap || Options->Debugger)
      return false;
    Cache = CachedKernels::open(*Options);
    // An unusable cache directory: gatherjit-llvm warns about it.
    if (!Cache && !Options->CacheDir.empty())
      return false;
    InitMs =
        std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - T0).count();
  }
  Expected<Problem> P = loadProblem(Operands[I]);
  if (!P) {
    Exit = report(P.status());
    return true;
  }
  Kernel K;
  if (Jit) {
    std::optional<Kernel> Found = Cache ? Cache->find(P->Desc) : std::nullopt;
    if (!Found)
      Found = CachedKernels::generic(P->Desc, *Options, E.Repeat);
    if (!Found)
      return false;
    K = std::move(*Found);
  }
  Expected<AtomicFile> File = AtomicFile::create(Operands[I].Out);
  Status S = File ? runAndWrite(*P, E, *File, K, EpilogueApply(),
                                {InitMs, Jit ? K.compileTimes().total() : 0, false})
                  : File.status();
  Exit = S ? 0 : report(S);
  return true;
}

} // namespace

int main(int Argc, char **Argv) {
  removeTemporariesOnSignals();
  try {
    int Exit = 0;
    if (runWithoutCompiler(Argc, Argv, Exit))
      return Exit;
    return report(execSibling(compilerFor(Argc, Argv), std::vector<char *>(Argv, Argv + Argc)));
  } catch (const std::bad_alloc &) {
    return report(Status::internal("out of memory"));
  }
}
