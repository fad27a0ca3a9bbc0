//===- tools/gatherjit/RunCommand.h - What every gatherjit program shares -===//
/// \file
/// The command line is three programs (tools/gatherjit/CMakeLists.txt):
/// gatherjit, without LLVM, runs cached kernels and the interpreter;
/// gatherjit-llvm compiles; gatherjit-clang compiles fused C epilogues and
/// O3 (LLVM's default pipeline).
/// Each hands a command it cannot run to the next, replacing itself
/// (execSibling), so the user sees one program. This is what they share:
/// the operand and engine flags, the run, the output, the error line.
//===----------------------------------------------------------------------===//
#ifndef GATHERJIT_TOOLS_RUNCOMMAND_H
#define GATHERJIT_TOOLS_RUNCOMMAND_H

#include "Problem.h"
#include "gatherjit/Runtime.h"
#include "runtime/AtomicFile.h"

#include <CLI/CLI.hpp>

#include <iterator>
#include <string>
#include <vector>

namespace gatherjit {

/// The programs gatherjit hands commands to, beside it.
constexpr const char *LlvmProgram = "gatherjit-llvm";
constexpr const char *ClangProgram = "gatherjit-clang";

/// The commands that run a gather (gather-elements, gather, gather-nd, run).
inline constexpr ProblemSource RunKinds[] = {ProblemSource::OnnxGatherElements,
                                             ProblemSource::OnnxGather, ProblemSource::OnnxGatherND,
                                             ProblemSource::Json};

/// Prints the one error line and returns the exit status: 2 for bad input,
/// 1 for what the system or gatherjit itself failed at.
int report(const Status &S);

struct EngineFlags {
  std::string Engine = "jit";
  std::string Opt = "O2";
  unsigned Threads = 0;
  unsigned Repeat = 1;
  bool Stats = false;
  std::string CacheDir;
  bool NoCache = false;
  std::string Specialize = "adaptive";
  std::string Device = "cpu";
};

void addEngineFlags(CLI::App *Sub, EngineFlags &E);

/// The operand flags of gather-elements, gather, gather-nd and run on one
/// subcommand of \p Parent.
CLI::App *addOperands(CLI::App *Parent, ProblemSource Kind, OperandFlags &F, bool OutputRequired);

/// The runtime options \p E asks for, with the kernel cache's directory and
/// limit from the flags and the environment.
Expected<RuntimeOptions> runtimeOptions(const EngineFlags &E);

/// What --stats reports of the kernel's making.
struct RunTimes {
  double InitMs = 0, CompileMs = 0;
  bool Hit = false;
};

/// Runs \p K (or the interpreter, with \p Apply's epilogue if set) as \p E
/// asks, writes the output into \p File and commits it, and prints the
/// --stats line.
Status runAndWrite(Problem &P, const EngineFlags &E, AtomicFile &File, const Kernel &K,
                   const EpilogueApply &Apply, const RunTimes &Times);

/// True if any epilogue flag is given.
bool given(const EpilogueFlags &F);

/// The level --opt asks for (--opt LEVEL or --opt=LEVEL), if a valid one.
std::optional<OptLevel> optArgument(int Argc, char **Argv);

/// True if a command line needs gatherjit-clang: it fuses a C epilogue (an
/// --epilogue flag: clang's libraries) or compiles at O3 (LLVM's default
/// pipeline). The one routing rule, read from the arguments ahead of any
/// parser (gatherjit hands a command on, gatherjit-llvm passes it on to
/// gatherjit-clang); the program chosen parses the command and reports what
/// is wrong with it.
bool needsClang(int Argc, char **Argv);
/// The program that compiles for a command line: gatherjit-clang where
/// needsClang, else gatherjit-llvm.
const char *compilerFor(int Argc, char **Argv);

/// Replaces this process with \p Program, which lies beside this program,
/// run with \p Argv (Argv[0] is replaced) and GLIBC_TUNABLES asking its
/// malloc for huge pages and a 4 MiB top pad (the user's own after ours);
/// returns only if it cannot.
Status execSibling(const char *Program, std::vector<char *> Argv);

} // namespace gatherjit

#endif
