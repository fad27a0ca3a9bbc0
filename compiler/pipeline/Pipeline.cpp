//===- compiler/pipeline/Pipeline.cpp - Specs to machine code ------------===//

#include "compiler/pipeline/Pipeline.h"

#include "compiler/backend/Target.h"
#include "compiler/emit/EmitKernel.h"
#include "compiler/epilogue/Epilogue.h"
#include "compiler/optimize/Optimize.h"

#include <llvm/IR/IRBuilder.h>
#include <llvm/IR/LLVMContext.h>
#include <llvm/IR/Module.h>
#include <llvm/Support/raw_ostream.h>
#include <llvm/Target/TargetMachine.h>

#include <chrono>
#include <cstdio>

namespace gatherjit {
namespace {

using Clock = std::chrono::steady_clock;
double msSince(Clock::time_point T0) {
  return std::chrono::duration<double, std::milli>(Clock::now() - T0).count();
}

} // namespace

TargetFacts targetFacts(const llvm::TargetMachine &) {
  // The CPUs gatherjit generates code for (x86-64, AArch64) have 64-byte
  // lines, and copies use 64-byte vectors (split where narrower).
  return TargetFacts{};
}

namespace {

/// The stages after emission: configure \p M for \p Gen's target machine,
/// optimize, generate, and store the object in \p Cache under \p Key if
/// given.
Expected<PipelineResult> finish(llvm::Module &M, PipelineResult R, Clock::time_point T0,
                                CodeGenerator &Gen, OptLevel Level, PipelineOutput Output,
                                const ObjectCache *Cache, const std::string &Key) {
  llvm::TargetMachine &TM = Gen.targetMachine();
  configureModule(M, TM);
  R.Times.Emit = msSince(T0);
  T0 = Clock::now();
  if (Status S = optimize(M, TM, Level); !S)
    return S;
  R.Times.Optimize = msSince(T0);
  T0 = Clock::now();
  switch (Output) {
  case PipelineOutput::OptimizedIR: {
    std::string Text;
    llvm::raw_string_ostream OS(Text);
    M.print(OS, nullptr);
    R.Bytes.assign(OS.str().begin(), OS.str().end());
    return R;
  }
  case PipelineOutput::Assembly: {
    Expected<std::string> Asm = Gen.assembly(M, Level);
    if (!Asm)
      return Asm.status();
    R.Bytes.assign(Asm->begin(), Asm->end());
    break;
  }
  case PipelineOutput::Object: {
    Expected<llvm::SmallVector<char, 0>> Obj = Gen.object(M, Level);
    if (!Obj)
      return Obj.status();
    R.Bytes.assign(Obj->begin(), Obj->end());
    break;
  }
  }
  R.Times.Codegen = msSince(T0);
  if (!Key.empty())
    R.Stored = Cache->store(Key, R.Bytes).isOk();
  return R;
}

} // namespace

Expected<PipelineResult> runPipeline(const std::vector<PipelineKernel> &Kernels,
                                     CodeGenerator &Gen, OptLevel Level,
                                     PipelineOutput Output, const ObjectCache *Cache) {
  PipelineResult R;
  std::string Key;
  if (Cache && Kernels.size() == 1 && Output == PipelineOutput::Object) {
    // Keyed by the spec, not the IR: a hit emits nothing.
    const Clock::time_point T0 = Clock::now();
    Key = Cache->key(Kernels[0].Spec, Level);
    std::optional<std::vector<char>> Cached = Cache->load(Key);
    R.Times.Load = msSince(T0);
    if (Cached) {
      R.Bytes = std::move(*Cached);
      R.FromCache = true;
      return R;
    }
  }
  llvm::LLVMContext Ctx;
  Clock::time_point T0 = Clock::now();
  llvm::Module M(Kernels.size() == 1 ? Kernels[0].Name : "gatherjit_aot", Ctx);
  const TargetFacts Facts = targetFacts(Gen.targetMachine());
  for (const PipelineKernel &K : Kernels) {
    if (K.Spec.hasEpilogue()) {
      if (!K.Spec.Code)
        return Status::internal(K.Name + ": the spec's epilogue was not compiled");
      llvm::Value *Params = nullptr;
      if (Expected<llvm::Function *> F = linkEpilogue(M, *K.Spec.Code, K.Name + ".epilogue", Params);
          !F)
        return F.status();
    }
    emitKernelInto(K.Spec, planKernel(K.Spec, Facts), K.Name, M);
  }
  return finish(M, std::move(R), T0, Gen, Level, Output, Cache, Key);
}

Expected<PipelineResult> runEpiloguePipeline(const EpilogueCode &Code, const std::string &Name,
                                             CodeGenerator &Gen, OptLevel Level) {
  llvm::LLVMContext Ctx;
  Clock::time_point T0 = Clock::now();
  llvm::Module M(Name, Ctx);
  llvm::Value *Params = nullptr;
  Expected<llvm::Function *> Epi = linkEpilogue(M, Code, Name + ".epilogue", Params);
  if (!Epi)
    return Epi.status();
  // NAME_range(in, unused, out, begin, end), the kernels' signature:
  // applies the epilogue once, to the element or row at in.
  llvm::Type *I64 = llvm::Type::getInt64Ty(Ctx);
  llvm::Type *Ptr = llvm::PointerType::getUnqual(Ctx);
  llvm::Function *F = llvm::Function::Create(
      llvm::FunctionType::get(I64, {Ptr, Ptr, Ptr, I64, I64}, false),
      llvm::GlobalValue::ExternalLinkage, Name + "_range", M);
  llvm::IRBuilder<> B(llvm::BasicBlock::Create(Ctx, "entry", F));
  llvm::Value *Faulted =
      emitEpilogueCall(B, Code.Signature, *Epi, Params, F->getArg(0), F->getArg(2));
  B.CreateRet(Faulted ? B.CreateSelect(Faulted, B.getInt64(EpilogueFaulted), B.getInt64(0))
                      : B.getInt64(0));
  return finish(M, PipelineResult{}, T0, Gen, Level, PipelineOutput::Object, nullptr, "");
}

} // namespace gatherjit
