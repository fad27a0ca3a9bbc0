//===- compiler/pipeline/Pipeline.cpp - Specs to machine code ------------===//

#include "compiler/pipeline/Pipeline.h"

#include "compiler/epilogue/Epilogue.h"

#include <llvm/IR/IRBuilder.h>
#include <llvm/IR/LLVMContext.h>
#include <llvm/IR/Module.h>

#include <chrono>

namespace gatherjit {
namespace {

using Clock = std::chrono::steady_clock;
double msSince(Clock::time_point T0) {
  return std::chrono::duration<double, std::milli>(Clock::now() - T0).count();
}

/// The stages after emission: generate with \p Target and store the object
/// in \p Cache under \p Key if given.
Expected<PipelineResult> finish(llvm::Module &M, PipelineResult R, Clock::time_point T0,
                                Backend &Target, OptLevel Level, PipelineOutput Output,
                                const ObjectCache *Cache, const std::string &Key) {
  R.Times.Emit = msSince(T0);
  Expected<std::vector<char>> Bytes = Target.generate(M, Level, Output, R.Times);
  if (!Bytes)
    return Bytes.status();
  R.Bytes = Bytes.take();
  if (!Key.empty())
    R.Stored = Cache->store(Key, R.Bytes).isOk();
  return R;
}

} // namespace

Expected<PipelineResult> runPipeline(const std::vector<PipelineKernel> &Kernels, Backend &Target,
                                     OptLevel Level, PipelineOutput Output,
                                     const ObjectCache *Cache) {
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
  for (const PipelineKernel &K : Kernels) {
    if (Target.facts().Gpu && K.Spec.PlanRows)
      return Status::unsupported(K.Name + ": a row family kernel is CPU code (a device's "
                                          "family kernel takes every size from its shape)");
    if (K.Spec.hasEpilogue()) {
      if (!K.Spec.Code)
        return Status::internal(K.Name + ": the spec's epilogue was not compiled");
      llvm::Value *Params = nullptr;
      if (Expected<llvm::Function *> F =
              linkEpilogue(M, *K.Spec.Code, K.Name + ".epilogue", Params);
          !F)
        return F.status();
    }
    Target.emit(K.Spec, planKernel(K.Spec, Target.facts()), K.Name, M);
  }
  return finish(M, std::move(R), T0, Target, Level, Output, Cache, Key);
}

Expected<PipelineKernel> fusedKernel(ValidDesc &Plain, const Epilogue &Fused, uint64_t RowOut,
                                     const llvm::TargetMachine &TM, const std::string &Name) {
  std::shared_ptr<const EpilogueCode> Code;
  if (!Fused.Function.empty()) {
    const uint64_t RowIn = Plain.Input.Sizes.back();
    Expected<std::shared_ptr<const EpilogueCode>> Compiled =
        compileEpilogue(Fused, epilogueTarget(TM, RowIn, RowOut ? RowOut : RowIn));
    if (!Compiled)
      return Compiled.status();
    Code = Compiled.take();
    Expected<ValidDesc> V = withEpilogue(Plain, Code->Signature, RowOut);
    if (!V)
      return V.status();
    Plain = V.take();
  }
  PipelineKernel K{canonicalize(Plain), Name};
  K.Spec.Code = std::move(Code);
  return K;
}

Expected<PipelineResult> runEpiloguePipeline(const EpilogueCode &Code, const std::string &Name,
                                             Backend &Target, OptLevel Level) {
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
  llvm::Function *F =
      llvm::Function::Create(llvm::FunctionType::get(I64, {Ptr, Ptr, Ptr, I64, I64}, false),
                             llvm::GlobalValue::ExternalLinkage, Name + "_range", M);
  llvm::IRBuilder<> B(llvm::BasicBlock::Create(Ctx, "entry", F));
  llvm::Value *Faulted =
      emitEpilogueCall(B, Code.Signature, *Epi, Params, F->getArg(0), F->getArg(2));
  B.CreateRet(Faulted ? B.CreateSelect(Faulted, B.getInt64(EpilogueFaulted), B.getInt64(0))
                      : B.getInt64(0));
  return finish(M, PipelineResult{}, T0, Target, Level, PipelineOutput::Object, nullptr, "");
}

} // namespace gatherjit
