//===- compiler/optimize/Optimize.cpp - The optimization stage -----------===//

#include "compiler/optimize/Optimize.h"

#include "compiler/spec/KernelSpec.h"

#include <llvm/Analysis/CGSCCPassManager.h>
#include <llvm/Analysis/LoopAnalysisManager.h>
#include <llvm/IR/Module.h>
#include <llvm/IR/PassManager.h>
#include <llvm/IR/Verifier.h>
#include <llvm/Passes/PassBuilder.h>
#include <llvm/Transforms/IPO/AlwaysInliner.h>
#include <llvm/Support/raw_ostream.h>
#include <llvm/Target/TargetMachine.h>

namespace gatherjit {

[[maybe_unused]] static Status verify(llvm::Module &M, const char *Stage) {
  std::string Msg;
  llvm::raw_string_ostream OS(Msg);
  if (llvm::verifyModule(M, &OS))
    return Status::internal(std::string("module does not verify after ") + Stage +
                            ": " + OS.str());
  return Status::ok();
}

// O1 is the quick tier: promotion and one round of clean-up, no loop
// passes (indvars and the vectorizer cost most of O2's optimization time),
// followed by fast instruction selection and register allocation.
static const char *const KernelPipelineO1 =
    "function(sroa,early-cse,instcombine<no-verify-fixpoint>,simplifycfg)";
static const char *const KernelPipelineO2 =
    "function(sroa,early-cse,instcombine<no-verify-fixpoint>,simplifycfg,"
    "loop-mssa(loop-rotate,licm),loop(indvars),loop-vectorize,"
    "instcombine<no-verify-fixpoint>,simplifycfg,"
    "loop-mssa(licm))";

std::string pipelineText(OptLevel Level) {
  switch (Level) {
  case OptLevel::O0:
    return "default<O0>";
  case OptLevel::O1:
    return KernelPipelineO1;
  case OptLevel::O2:
    return KernelPipelineO2;
  case OptLevel::O3:
    return "default<O3>";
  }
  llvm_unreachable("covered switch");
}

Status optimize(llvm::Module &M, llvm::TargetMachine &TM, OptLevel Level) {
#ifndef NDEBUG
  if (Status S = verify(M, "emit"); !S)
    return S;
#endif
  llvm::LoopAnalysisManager LAM;
  llvm::FunctionAnalysisManager FAM;
  llvm::CGSCCAnalysisManager CGAM;
  llvm::ModuleAnalysisManager MAM;
  llvm::PipelineTuningOptions PTO;
  PTO.LoopVectorization = Level >= OptLevel::O2;
  PTO.SLPVectorization = Level >= OptLevel::O2;
  llvm::PassBuilder PB(&TM, PTO);
  PB.registerModuleAnalyses(MAM);
  PB.registerCGSCCAnalyses(CGAM);
  PB.registerFunctionAnalyses(FAM);
  PB.registerLoopAnalyses(LAM);
  PB.crossRegisterProxies(LAM, FAM, CGAM, MAM);
  llvm::ModulePassManager MPM;
  switch (Level) {
  case OptLevel::O0:
    MPM = PB.buildO0DefaultPipeline(llvm::OptimizationLevel::O0);
    break;
  case OptLevel::O1:
  case OptLevel::O2:
    // A fused epilogue is inlined first (these pipelines have no inliner).
    for (const llvm::Function &F : M)
      if (F.hasFnAttribute(llvm::Attribute::AlwaysInline) && !F.isDeclaration()) {
        MPM.addPass(llvm::AlwaysInlinerPass());
        break;
      }
    // A kernel is one loop nest without calls: the passes that matter are
    // promotion, loop canonicalization, hoisting and vectorization. This
    // pipeline runs just those (a fraction of the default pipeline's time);
    // O1 leaves out the loop passes. O2 lets the vectorizer interleave: several
    // gathers in flight make narrow-element cases (GE6) up to 1.8x faster.
    if (llvm::Error Err = PB.parsePassPipeline(MPM, pipelineText(Level))) {
      return Status::internal("kernel pass pipeline: " + llvm::toString(std::move(Err)));
    }
    break;
  case OptLevel::O3:
    MPM = PB.buildPerModuleDefaultPipeline(llvm::OptimizationLevel::O3);
    break;
  }
  MPM.run(M, MAM);
#ifndef NDEBUG
  if (Status S = verify(M, "optimize"); !S)
    return S;
#endif
  return Status::ok();
}

} // namespace gatherjit
