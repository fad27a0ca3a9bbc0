//===- compiler/optimize/Optimize.cpp - The optimization stage -----------===//
//
// The kernel pipelines (O0 to O2) are built here pass by pass, with the
// analyses they use registered by hand: no PassBuilder, whose pipeline
// parser refers to every pass LLVM has and so links them all, with their
// static initializers, into every program (118 of the 411 objects whose
// initializers ran at each start of the command line's compiler). O3 is
// LLVM's default pipeline, which needs PassBuilder:
// compiler/optimize/DefaultPipeline.cpp.
//
//===----------------------------------------------------------------------===//

#include "compiler/optimize/Optimize.h"
#include "compiler/optimize/KernelPipeline.h"

#include "compiler/spec/KernelSpec.h"

#include <llvm/Analysis/AliasAnalysis.h>
#include <llvm/Analysis/AssumptionCache.h>
#include <llvm/Analysis/BasicAliasAnalysis.h>
#include <llvm/Analysis/BlockFrequencyInfo.h>
#include <llvm/Analysis/BranchProbabilityInfo.h>
#include <llvm/Analysis/DemandedBits.h>
#include <llvm/Analysis/LoopAccessAnalysis.h>
#include <llvm/Analysis/LoopAnalysisManager.h>
#include <llvm/Analysis/LoopInfo.h>
#include <llvm/Analysis/MemorySSA.h>
#include <llvm/Analysis/OptimizationRemarkEmitter.h>
#include <llvm/Analysis/PostDominators.h>
#include <llvm/Analysis/ProfileSummaryInfo.h>
#include <llvm/Analysis/ScalarEvolution.h>
#include <llvm/Analysis/ScopedNoAliasAA.h>
#include <llvm/Analysis/TargetLibraryInfo.h>
#include <llvm/Analysis/TargetTransformInfo.h>
#include <llvm/Analysis/TypeBasedAliasAnalysis.h>
#include <llvm/IR/Dominators.h>
#include <llvm/IR/Module.h>
#include <llvm/IR/PassInstrumentation.h>
#include <llvm/IR/PassManager.h>
#include <llvm/IR/Verifier.h>
#include <llvm/Support/raw_ostream.h>
#include <llvm/Target/TargetMachine.h>
#include <llvm/Transforms/IPO/AlwaysInliner.h>
#include <llvm/Transforms/InstCombine/InstCombine.h>
#include <llvm/Transforms/Scalar/EarlyCSE.h>
#include <llvm/Transforms/Scalar/IndVarSimplify.h>
#include <llvm/Transforms/Scalar/InferAddressSpaces.h>
#include <llvm/Transforms/Scalar/LICM.h>
#include <llvm/Transforms/Scalar/LoopPassManager.h>
#include <llvm/Transforms/Scalar/LoopRotation.h>
#include <llvm/Transforms/Scalar/SROA.h>
#include <llvm/Transforms/Scalar/SimpleLoopUnswitch.h>
#include <llvm/Transforms/Scalar/SimplifyCFG.h>
#include <llvm/Transforms/Vectorize/LoopVectorize.h>

namespace gatherjit {

[[maybe_unused]] static Status verify(llvm::Module &M, const char *Stage) {
  std::string Msg;
  llvm::raw_string_ostream OS(Msg);
  if (llvm::verifyModule(M, &OS))
    return Status::internal(std::string("module does not verify after ") + Stage + ": " + OS.str());
  return Status::ok();
}

std::string pipelineText(OptLevel Level) {
  // What kernelPipeline builds for a kernel without a fused epilogue, in
  // PassBuilder's syntax (a test parses it and compares the two).
  switch (Level) {
  case OptLevel::O0:
    return "";
  case OptLevel::O1:
    return "function(sroa,early-cse,instcombine<no-verify-fixpoint>,simplifycfg)";
  case OptLevel::O2:
    return "function(sroa,early-cse,instcombine<no-verify-fixpoint>,simplifycfg,"
           "loop-mssa(loop-rotate,licm),loop(indvars),loop-vectorize,"
           "instcombine<no-verify-fixpoint>,simplifycfg,loop-mssa(licm))";
  case OptLevel::O3:
    return "default<O3>";
  }
  return "";
}

/// What PassBuilder's register*Analyses and crossRegisterProxies would do
/// for every analysis LLVM has, for just those the kernel pipelines use. A
/// pass that asked for one missing here would crash: a test compares these
/// pipelines with PassBuilder's over random kernels of every operator.
void registerKernelAnalyses(llvm::TargetMachine &TM, llvm::ModuleAnalysisManager &MAM,
                            llvm::FunctionAnalysisManager &FAM, llvm::LoopAnalysisManager &LAM,
                            llvm::PassInstrumentationCallbacks *PIC) {
  using namespace llvm;
  MAM.registerPass([PIC] { return PassInstrumentationAnalysis(PIC); });
  MAM.registerPass([] { return ProfileSummaryAnalysis(); });
  MAM.registerPass([&] { return FunctionAnalysisManagerModuleProxy(FAM); });

  FAM.registerPass([PIC] { return PassInstrumentationAnalysis(PIC); });
  FAM.registerPass([&] { return ModuleAnalysisManagerFunctionProxy(MAM); });
  FAM.registerPass([&] { return LoopAnalysisManagerFunctionProxy(LAM); });
  FAM.registerPass([&] {
    AAManager AA;
    AA.registerFunctionAnalysis<BasicAA>();
    AA.registerFunctionAnalysis<ScopedNoAliasAA>();
    AA.registerFunctionAnalysis<TypeBasedAA>();
    // NVPTX's alias analysis is registered by PassBuilder's callbacks,
    // which these hand-built pipelines do not run; it knows only address
    // spaces, and the kernels use the generic one.
    if (!TM.getTargetTriple().isNVPTX())
      TM.registerDefaultAliasAnalyses(AA);
    return AA;
  });
  FAM.registerPass([] { return BasicAA(); });
  FAM.registerPass([] { return ScopedNoAliasAA(); });
  FAM.registerPass([] { return TypeBasedAA(); });
  FAM.registerPass([] { return AssumptionAnalysis(); });
  FAM.registerPass([] { return BlockFrequencyAnalysis(); });
  FAM.registerPass([] { return BranchProbabilityAnalysis(); });
  FAM.registerPass([] { return DemandedBitsAnalysis(); });
  FAM.registerPass([] { return DominatorTreeAnalysis(); });
  FAM.registerPass([] { return LoopAccessAnalysis(); });
  FAM.registerPass([] { return LoopAnalysis(); });
  FAM.registerPass([] { return MemorySSAAnalysis(); });
  FAM.registerPass([] { return OptimizationRemarkEmitterAnalysis(); });
  FAM.registerPass([] { return PostDominatorTreeAnalysis(); });
  FAM.registerPass([] { return ScalarEvolutionAnalysis(); });
  FAM.registerPass([] { return ShouldRunExtraVectorPasses(); });
  FAM.registerPass([] { return TargetLibraryAnalysis(); });
  FAM.registerPass([&] { return TM.getTargetIRAnalysis(); });

  LAM.registerPass([PIC] { return PassInstrumentationAnalysis(PIC); });
  LAM.registerPass([&] { return FunctionAnalysisManagerLoopProxy(FAM); });
  LAM.registerPass([] { return ShouldRunExtraSimpleLoopUnswitch(); }); // indvars
}

/// A kernel is one loop nest without calls: the passes that matter are
/// promotion, loop canonicalization, hoisting and vectorization. O2 runs
/// just those (a fraction of the default pipeline's time) and lets the
/// vectorizer interleave: several gathers in flight make narrow-element
/// cases (GE6) up to 1.8x faster. O1, the quick tier, is promotion and one
/// round of clean-up, no loop passes (indvars and the vectorizer cost most
/// of O2's optimization time), followed by fast instruction selection and
/// register allocation. O0 only inlines a fused epilogue.
llvm::ModulePassManager kernelPipeline(const llvm::Module &M, OptLevel Level) {
  using namespace llvm;
  ModulePassManager MPM;
  // A fused epilogue is inlined first (these pipelines have no inliner).
  for (const Function &F : M)
    if (F.hasFnAttribute(Attribute::AlwaysInline) && !F.isDeclaration()) {
      // (As LLVM's O0 pipeline does: no lifetime markers at O0.)
      MPM.addPass(AlwaysInlinerPass(/*InsertLifetimeIntrinsics=*/Level != OptLevel::O0));
      break;
    }
  if (Triple(M.getTargetTriple()).isNVPTX() && Level <= OptLevel::O1)
    // The device entry casts its buffers to global memory and back: their
    // accesses become global ones (ld.global, .nc where only read), as
    // NVPTX's code generator makes them at O2 and O3 but not at the
    // levels it runs without optimization (codeGenLevel), and before
    // InstCombine folds the casts away.
    MPM.addPass(createModuleToFunctionPassAdaptor(InferAddressSpacesPass()));
  if (Level == OptLevel::O0)
    return MPM;
  auto CleanUp = [](FunctionPassManager &FPM) {
    FPM.addPass(InstCombinePass(InstCombineOptions().setVerifyFixpoint(false)));
    FPM.addPass(SimplifyCFGPass());
  };
  auto Licm = [](LoopPassManager &LPM) { LPM.addPass(LICMPass(LICMOptions())); };
  FunctionPassManager FPM;
  FPM.addPass(SROAPass(SROAOptions::ModifyCFG));
  FPM.addPass(EarlyCSEPass());
  CleanUp(FPM);
  if (Level == OptLevel::O2) {
    LoopPassManager Rotate;
    Rotate.addPass(LoopRotatePass());
    Licm(Rotate);
    FPM.addPass(createFunctionToLoopPassAdaptor(std::move(Rotate), /*UseMemorySSA=*/true));
    FPM.addPass(createFunctionToLoopPassAdaptor(IndVarSimplifyPass()));
    FPM.addPass(LoopVectorizePass());
    CleanUp(FPM);
    LoopPassManager Hoist;
    Licm(Hoist);
    FPM.addPass(createFunctionToLoopPassAdaptor(std::move(Hoist), /*UseMemorySSA=*/true));
  }
  MPM.addPass(createModuleToFunctionPassAdaptor(std::move(FPM)));
  return MPM;
}

Status optimize(llvm::Module &M, llvm::TargetMachine &TM, OptLevel Level) {
#ifndef NDEBUG
  if (Status S = verify(M, "emit"); !S)
    return S;
#endif
  if (Level == OptLevel::O3) {
    if (Status S = optimizeDefaultO3(M, TM); !S)
      return S;
  } else {
    llvm::LoopAnalysisManager LAM;
    llvm::FunctionAnalysisManager FAM;
    llvm::ModuleAnalysisManager MAM;
    registerKernelAnalyses(TM, MAM, FAM, LAM, /*PIC=*/nullptr);
    kernelPipeline(M, Level).run(M, MAM);
  }
#ifndef NDEBUG
  if (Status S = verify(M, "optimize"); !S)
    return S;
#endif
  return Status::ok();
}

} // namespace gatherjit
