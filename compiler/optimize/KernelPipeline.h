//===- compiler/optimize/KernelPipeline.h - The kernel pass pipelines ----===//
/// \file
/// The passes O0 to O2 run, built without PassBuilder (see Optimize.cpp).
//===----------------------------------------------------------------------===//
#ifndef GATHERJIT_COMPILER_OPTIMIZE_KERNELPIPELINE_H
#define GATHERJIT_COMPILER_OPTIMIZE_KERNELPIPELINE_H

#include "gatherjit/OptLevel.h"

#include <llvm/Analysis/LoopAnalysisManager.h>
#include <llvm/IR/PassManager.h>

namespace llvm {
class PassInstrumentationCallbacks;
class TargetMachine;
} // namespace llvm

namespace gatherjit {

/// The passes O0, O1 or O2 run over \p M: an always-inliner first if \p M
/// has a fused epilogue, then what pipelineText(\p Level) says.
llvm::ModulePassManager kernelPipeline(const llvm::Module &M, OptLevel Level);

/// Registers the analyses kernelPipeline's passes use, and the proxies
/// between the managers, for \p TM's target; \p PIC (may be null)
/// instruments them.
void registerKernelAnalyses(llvm::TargetMachine &TM, llvm::ModuleAnalysisManager &MAM,
                            llvm::FunctionAnalysisManager &FAM, llvm::LoopAnalysisManager &LAM,
                            llvm::PassInstrumentationCallbacks *PIC);

} // namespace gatherjit

#endif
