//===- compiler/epilogue/Epilogue.h - Users' C epilogues -----------------===//
/// \file
/// A user's C epilogue compiled by clang's libraries (in a helper process,
/// EpilogueProcess.cpp) to LLVM bitcode, unoptimized and checked (its signature, no calls out of
/// the source, no mutable global state), and the one way it enters a module: linked, made internal
/// and always-inline, so the kernel's pipeline inlines it into the loop and optimizes the whole.
//===----------------------------------------------------------------------===//
#ifndef GATHERJIT_COMPILER_EPILOGUE_EPILOGUE_H
#define GATHERJIT_COMPILER_EPILOGUE_EPILOGUE_H

#include "gatherjit/Compile.h"
#include "gatherjit/Descriptor.h"

#include <memory>
#include <span>
#include <string>
#include <vector>

namespace llvm {
class TargetMachine;
class Function;
class IRBuilderBase;
class Module;
class Value;
} // namespace llvm

namespace gatherjit {

/// A compiled epilogue: what a KernelSpec points at.
struct EpilogueCode {
  EpilogueSignature Signature;
  std::string Function;
  /// The source's module as bitcode (clang's output, before any
  /// optimization).
  std::string Bitcode;
  /// The bytes the parameter pointer points at, as given.
  std::vector<unsigned char> Params;
};

/// What the epilogue is compiled for: the kernel's target and the row
/// lengths its source reads as GJ_ROW_IN and GJ_ROW_OUT.
struct EpilogueTarget {
  std::string Triple, Cpu, Features;
  uint64_t RowIn = 1, RowOut = 1;
};

/// The epilogue target of code for \p TM.
EpilogueTarget epilogueTarget(const llvm::TargetMachine &TM, uint64_t RowIn, uint64_t RowOut);

/// The clang -cc1 flags every epilogue is compiled with beyond its
/// target's (part of every key).
std::span<const char *const> epilogueFlags();

/// The key of \p E compiled for \p T: a hash of the source, function,
/// parameters, flags and clang's version.
uint64_t epilogueKey(const Epilogue &E, const EpilogueTarget &T);

/// Compiles \p E, in the helper process unless \p Limits says otherwise.
/// Errors are InvalidArgument with one line "FILE:LINE:COL: error: ..."
/// (clang's first diagnostic, or a rule of epilogues broken) or "the
/// epilogue's compile was stopped: ..." (the helper crashed, ran out of
/// memory or time), or Unsupported without clang's libraries or without the
/// helper program.
Expected<std::shared_ptr<const EpilogueCode>>
compileEpilogue(const Epilogue &E, const EpilogueTarget &T, const EpilogueLimits &Limits = {});

/// compileEpilogue in this process: what the helper runs.
Expected<std::shared_ptr<const EpilogueCode>> compileEpilogueHere(const Epilogue &E,
                                                                  const EpilogueTarget &T);

/// The helper program's main (gatherjit-epilogue --memory BYTES): sets its
/// limits, then answers requests on its standard input and output until the
/// input ends (compiler/epilogue/EpilogueProcess.cpp).
int epilogueHelperMain(int Argc, char **Argv);

/// Links \p Code into \p M with its entry renamed \p Name (internal,
/// always-inline, like every function of the source) and returns it, with
/// \p Params set to the parameter block (a private constant of \p M), or
/// null if the function takes none.
Expected<llvm::Function *> linkEpilogue(llvm::Module &M, const EpilogueCode &Code,
                                        const std::string &Name, llvm::Value *&Params);

/// Applies the linked epilogue \p Fn once: to the element at \p In,
/// storing its result at \p Out, or to the row at \p In, writing the row at
/// \p Out. For a checked epilogue, returns an i1 that is true if it
/// faulted (the caller stops); null otherwise.
llvm::Value *emitEpilogueCall(llvm::IRBuilderBase &B, const EpilogueSignature &Sig,
                              llvm::Function *Fn, llvm::Value *Params, llvm::Value *In,
                              llvm::Value *Out);

} // namespace gatherjit

#endif
