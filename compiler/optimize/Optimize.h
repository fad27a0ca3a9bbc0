//===- compiler/optimize/Optimize.h - The optimization stage -------------===//
/// \file
/// Runs LLVM's new pass manager over a kernel module at a chosen level.
//===----------------------------------------------------------------------===//
#ifndef GATHERJIT_COMPILER_OPTIMIZE_OPTIMIZE_H
#define GATHERJIT_COMPILER_OPTIMIZE_OPTIMIZE_H

#include "gatherjit/OptLevel.h"
#include "gatherjit/Status.h"

#include <cstdint>
#include <string>

namespace llvm {
class Module;
class TargetMachine;
} // namespace llvm

namespace gatherjit {

struct KernelSpec;

/// Kernels that write at most this many bytes run in microseconds: at O2
/// they are compiled at O1, which takes a fraction of the time.
constexpr uint64_t QuickKernelBytes = 64 * 1024;

/// The level the runtime compiles \p Spec at when \p Requested is asked
/// for: O1 for a small kernel under O2, else \p Requested. O3 always
/// compiles fully; ahead-of-time compilation always uses the level asked.
OptLevel kernelLevel(const KernelSpec &Spec, OptLevel Requested);

/// Optimizes \p M in place for \p TM's CPU. Fails only if the module does
/// not verify (a bug in emission), as Internal, or at O3 where this
/// program has no default pipeline, as Unsupported.
Status optimize(llvm::Module &M, llvm::TargetMachine &TM, OptLevel Level);

/// O3: LLVM's default module pipeline (compiler/optimize/DefaultPipeline.cpp).
/// Unsupported in a program built without it (the command line's
/// gatherjit-llvm).
Status optimizeDefaultO3(llvm::Module &M, llvm::TargetMachine &TM);
/// True where that pipeline is linked: everywhere but gatherjit-llvm.
bool defaultPipelineLinked();

/// The pass pipeline \p Level runs over a kernel without a fused epilogue,
/// in PassBuilder's syntax (for reading and tests; O3 is "default<O3>").
std::string pipelineText(OptLevel Level);

} // namespace gatherjit

#endif
