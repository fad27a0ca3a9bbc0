//===- compiler/backend/Target.h - Target machines and code generation ---===//
/// \file
/// Creates target machines (the host's, or a cross target's) and turns an
/// optimized module into an object file or assembly. JIT and AOT share this.
//===----------------------------------------------------------------------===//
#ifndef GATHERJIT_COMPILER_BACKEND_TARGET_H
#define GATHERJIT_COMPILER_BACKEND_TARGET_H

#include "gatherjit/Compile.h"
#include "gatherjit/Status.h"

#include <llvm/ADT/SmallVector.h>
#include <llvm/ADT/StringRef.h>
#include <llvm/Support/Error.h>

#include <memory>
#include <string>

namespace llvm {
class Module;
class TargetMachine;
} // namespace llvm

namespace gatherjit {

/// Registers the CPU targets gatherjit generates code for (once per
/// process; NVPTX is registered by the first target machine for it).
void initializeTargets();

/// The GPU architecture an nvptx64 target without a CPU gets.
constexpr const char *DefaultGpuArch = "sm_80";

/// The architecture (sm_NN) whose PTX a CUDA device of architecture
/// \p DeviceArch (from its compute capability) is given: its own where
/// this LLVM generates PTX for it, else the newest below it that LLVM
/// has (the driver compiles PTX of an older architecture for a newer
/// device; LLVM 19 stops at sm_90, so sm_100 and sm_120 devices get
/// sm_90), never an arch-specific "a" variant, which runs on its own
/// architecture alone.
std::string ptxArchFor(const std::string &DeviceArch);

/// True for AMD's Zen cores (LLVM's znver*): their gathers measured slower
/// than Intel's, and their row prefetcher otherwise (gathersPay in
/// Target.cpp, targetFacts in CpuBackend.cpp).
inline bool isZen(llvm::StringRef Cpu) { return Cpu.starts_with("znver"); }

/// This machine's last-level cache in bytes (its L3, else its L2) as the
/// system tells it; 0 where it does not.
uint64_t hostLastLevelCacheBytes();

/// Converts an llvm::Error into an Internal status with context.
Status toStatus(llvm::Error Err, const std::string &Context);

Expected<std::unique_ptr<llvm::TargetMachine>> createTargetMachine(const TargetDesc &Target,
                                                                   OptLevel Level);

/// Sets the module's triple, data layout and, on every function, the
/// target CPU and features, so the optimizer sees the real machine; a
/// function's own features (its plan's) follow the target's.
void configureModule(llvm::Module &M, llvm::TargetMachine &TM);

/// Generates code for modules with its target machine. The code
/// generator's pass pipeline for a level is built at its first object (or
/// by build()) and run again for each object after: building it cost
/// about as much as running it on a small kernel. One module at a time.
class CodeGenerator {
public:
  explicit CodeGenerator(std::unique_ptr<llvm::TargetMachine> TM);
  ~CodeGenerator();
  CodeGenerator(const CodeGenerator &) = delete;
  CodeGenerator &operator=(const CodeGenerator &) = delete;

  llvm::TargetMachine &targetMachine() const { return *TM; }
  /// The module's object file (for NVPTX, its PTX text).
  Expected<llvm::SmallVector<char, 0>> object(llvm::Module &M, OptLevel Level);
  /// With a pipeline of its own: assembly is for reading, not for speed.
  Expected<std::string> assembly(llvm::Module &M, OptLevel Level);
  /// Builds the pipeline of \p Level ahead of its first object.
  Status build(OptLevel Level);

private:
  struct Pipeline;
  /// Sets \p Level and the instruction selectors on TM, whose passes read
  /// them as they run.
  void set(OptLevel Level, bool Fast, bool Global);
  /// set() with the instruction selectors TM was made with, before a
  /// pipeline is built.
  void setAsMade(OptLevel Level);
  std::unique_ptr<llvm::TargetMachine> TM; ///< Outlives the pipelines.
  /// The instruction selectors TM was made with.
  bool FastISel, GlobalISel;
  std::unique_ptr<Pipeline> Pipelines[4]; ///< By OptLevel.
};

/// A code generator for \p Target at \p Level: for the host (an empty
/// TargetDesc), the one prepareHostTarget made at that level if any.
Expected<std::unique_ptr<CodeGenerator>> createCodeGenerator(const TargetDesc &Target,
                                                             OptLevel Level);

/// Starts making the host's code generator at \p Level on a thread of its
/// own: the target machine, its subtarget and the pipeline of \p First,
/// the level of the first compile. The first createCodeGenerator for the
/// host at \p Level takes it, waiting for it if need be. Once per process:
/// later calls do nothing.
void prepareHostTarget(OptLevel Level, OptLevel First);

} // namespace gatherjit

#endif
