//===- compiler/optimize/DefaultPipeline.cpp - LLVM's O3 pipeline --------===//
//
// O3 runs LLVM's default module pipeline, built by PassBuilder. This file
// is linked only where that is wanted: PassBuilder brings every pass LLVM
// has into the program (see Optimize.cpp). Built without
// GATHERJIT_DEFAULT_PIPELINE (the command line's gatherjit-llvm, which
// hands O3 to gatherjit-clang), it says O3 is unavailable.
//
//===----------------------------------------------------------------------===//

#include "compiler/optimize/Optimize.h"

#ifdef GATHERJIT_DEFAULT_PIPELINE
#include <llvm/Analysis/CGSCCPassManager.h>
#include <llvm/Analysis/LoopAnalysisManager.h>
#include <llvm/IR/PassManager.h>
#include <llvm/Passes/PassBuilder.h>
#include <llvm/Target/TargetMachine.h>
#endif

namespace gatherjit {

#ifdef GATHERJIT_DEFAULT_PIPELINE
Status optimizeDefaultO3(llvm::Module &M, llvm::TargetMachine &TM) {
  llvm::LoopAnalysisManager LAM;
  llvm::FunctionAnalysisManager FAM;
  llvm::CGSCCAnalysisManager CGAM;
  llvm::ModuleAnalysisManager MAM;
  llvm::PipelineTuningOptions PTO;
  PTO.LoopVectorization = true;
  PTO.SLPVectorization = true;
  llvm::PassBuilder PB(&TM, PTO);
  PB.registerModuleAnalyses(MAM);
  PB.registerCGSCCAnalyses(CGAM);
  PB.registerFunctionAnalyses(FAM);
  PB.registerLoopAnalyses(LAM);
  PB.crossRegisterProxies(LAM, FAM, CGAM, MAM);
  PB.buildPerModuleDefaultPipeline(llvm::OptimizationLevel::O3).run(M, MAM);
  return Status::ok();
}

bool defaultPipelineLinked() { return true; }
#else
bool defaultPipelineLinked() { return false; }

Status optimizeDefaultO3(llvm::Module &, llvm::TargetMachine &) {
  return Status::unsupported("O3 (LLVM's default pipeline) is not linked into this program");
}
#endif

} // namespace gatherjit
