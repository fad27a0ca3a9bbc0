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
#include <llvm/Support/Error.h>

#include <memory>
#include <string>

namespace llvm {
class Module;
class TargetMachine;
} // namespace llvm

namespace gatherjit {

/// Registers the targets gatherjit generates code for (once per process).
void initializeTargets();

/// Converts an llvm::Error into an Internal status with context.
Status toStatus(llvm::Error Err, const std::string &Context);

/// A target machine for \p Target: for the host (an empty TargetDesc), the
/// one prepareHostTarget made at \p Level if there is one.
Expected<std::unique_ptr<llvm::TargetMachine>>
createTargetMachine(const TargetDesc &Target, OptLevel Level);

/// Starts making the host's target machine for \p Level, with its code
/// generator's subtarget, on a thread of its own; the first
/// createTargetMachine for the host at that level takes it, waiting for it
/// if need be. Once per process: later calls do nothing.
void prepareHostTarget(OptLevel Level);

/// Sets the module's triple, data layout and, on every function, the
/// target CPU and features, so the optimizer sees the real machine.
void configureModule(llvm::Module &M, llvm::TargetMachine &TM);

/// Generates code for \p M with the code generator of \p Level (set on
/// \p TM, which must not be generating code on another thread meanwhile).
Expected<llvm::SmallVector<char, 0>> emitObject(llvm::Module &M, llvm::TargetMachine &TM,
                                               OptLevel Level);
Expected<std::string> emitAssembly(llvm::Module &M, llvm::TargetMachine &TM, OptLevel Level);

} // namespace gatherjit

#endif
