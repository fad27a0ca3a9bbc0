//===- compiler/optimize/Optimize.h - The optimization stage -------------===//
/// \file
/// Runs LLVM's new pass manager over a kernel module at a chosen level.
//===----------------------------------------------------------------------===//
#ifndef GATHERJIT_COMPILER_OPTIMIZE_OPTIMIZE_H
#define GATHERJIT_COMPILER_OPTIMIZE_OPTIMIZE_H

#include "gatherjit/Runtime.h"

#include <string>

namespace llvm {
class Module;
class TargetMachine;
} // namespace llvm

namespace gatherjit {

/// Optimizes \p M in place for \p TM's CPU. Fails only if the module does
/// not verify (a bug in emission), as Internal.
Status optimize(llvm::Module &M, llvm::TargetMachine &TM, OptLevel Level);

/// The pass pipeline \p Level runs, as text (part of the persistent cache's
/// key: a changed pipeline never reuses old code).
std::string pipelineText(OptLevel Level);

} // namespace gatherjit

#endif
