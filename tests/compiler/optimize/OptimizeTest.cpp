//===- tests/compiler/optimize/OptimizeTest.cpp - The optimization stage -===//

#include "compiler/optimize/Optimize.h"
#include "Cases.h"
#include "RandomCase.h"
#include "compiler/backend/Target.h"
#include "compiler/emit/EmitKernel.h"
#include "compiler/optimize/KernelPipeline.h"
#include "gatherjit/OptLevel.h"

#include <llvm/IR/BasicBlock.h>
#include <llvm/IR/Instructions.h>
#include <llvm/IR/LLVMContext.h>
#include <llvm/IR/Module.h>
#include <llvm/IR/Verifier.h>
#include <llvm/Passes/PassBuilder.h>
#include <llvm/Support/raw_ostream.h>
#include <llvm/Target/TargetMachine.h>

#include <gtest/gtest.h>

#include <set>

using namespace gatherjit;

namespace {

KernelSpec caseSpec(const std::string &Name) {
  for (const bench::BenchCase &C : bench::benchCases())
    if (Name == C.Name)
      return canonicalize(*bench::benchDesc(C));
  ADD_FAILURE() << Name;
  return {};
}

/// The optimized IR of \p Spec at \p Level (after checking it verifies).
std::string optimizedIR(const KernelSpec &Spec, OptLevel Level) {
  Expected<std::unique_ptr<llvm::TargetMachine>> TM = createTargetMachine({}, Level);
  EXPECT_TRUE(TM.isOk());
  llvm::LLVMContext Ctx;
  std::unique_ptr<llvm::Module> M = emitKernel(Spec, planKernel(Spec), "k", Ctx);
  configureModule(*M, **TM);
  Status S = optimize(*M, **TM, Level);
  EXPECT_TRUE(S.isOk()) << S.message();
  std::string Problems;
  llvm::raw_string_ostream PS(Problems);
  EXPECT_FALSE(llvm::verifyModule(*M, &PS)) << Problems;
  std::string IR;
  llvm::raw_string_ostream OS(IR);
  M->print(OS, nullptr);
  return IR;
}

TEST(OptLevel, NamesRoundTripAndBadNamesAreRefused) {
  for (OptLevel L : {OptLevel::O0, OptLevel::O1, OptLevel::O2, OptLevel::O3}) {
    EXPECT_EQ(parseOptLevel(optLevelName(L)), L);
    EXPECT_EQ(parseOptLevel(std::string(1, optLevelName(L)[1])), L); // "2"
  }
  EXPECT_EQ(parseOptLevel("o3"), OptLevel::O3);
  for (const char *Bad : {"", "O", "O4", "-1", "O22", "fast"})
    EXPECT_FALSE(parseOptLevel(Bad).has_value()) << Bad;
}

TEST(Optimize, EveryLevelKeepsEveryCaseValid) {
  for (OptLevel L : {OptLevel::O0, OptLevel::O1, OptLevel::O2, OptLevel::O3})
    for (const char *Case : {"GE1", "GE3", "G1", "G2", "GN1", "GN2"}) {
      SCOPED_TRACE(std::string(Case) + " at " + optLevelName(L));
      EXPECT_NE(optimizedIR(caseSpec(Case), L).find(" @k_range("), std::string::npos);
    }
}

TEST(Optimize, O2VectorizesElementRowsAndO1DoesNot) {
  // GE2's element rows become vector code at O2 (as wide as the host's
  // vectors: 4 or 8 indices); the quick tier leaves loops alone.
  const KernelSpec GE2 = caseSpec("GE2");
  EXPECT_NE(optimizedIR(GE2, OptLevel::O2).find("x i64>"), std::string::npos);
  EXPECT_EQ(optimizedIR(GE2, OptLevel::O1).find("x i64>"), std::string::npos);
}

TEST(Optimize, TheHandBuiltPipelinesAreTheirTexts) {
  // optimize() builds O0..O2 pass by pass (no PassBuilder in the command
  // line's compiler); PassBuilder parsing pipelineText must give the same
  // passes with the same options, printed alike.
  Expected<std::unique_ptr<llvm::TargetMachine>> TM = createTargetMachine({}, OptLevel::O2);
  ASSERT_TRUE(TM.isOk());
  llvm::PassInstrumentationCallbacks PIC;
  llvm::PassBuilder PB(TM->get(), llvm::PipelineTuningOptions(), std::nullopt, &PIC);
  auto Print = [&](llvm::ModulePassManager &MPM) {
    std::string Text;
    llvm::raw_string_ostream OS(Text);
    MPM.printPipeline(OS,
                      [&](llvm::StringRef Class) { return PIC.getPassNameForClassName(Class); });
    return OS.str();
  };
  llvm::LLVMContext Ctx;
  llvm::Module M("k", Ctx);
  std::set<std::string> Printed;
  for (OptLevel L : {OptLevel::O0, OptLevel::O1, OptLevel::O2}) {
    SCOPED_TRACE(optLevelName(L));
    llvm::ModulePassManager Parsed;
    if (!pipelineText(L).empty()) {
      ASSERT_FALSE(static_cast<bool>(PB.parsePassPipeline(Parsed, pipelineText(L))));
    }
    llvm::ModulePassManager Built = kernelPipeline(M, L);
    EXPECT_EQ(Print(Built), Print(Parsed));
    Printed.insert(Print(Built));
  }
  EXPECT_EQ(Printed.size(), 3u);
  EXPECT_NE(Printed.count(""), 0u) << "O0 runs no pass over a kernel without an epilogue";
}

TEST(Optimize, HandRegisteredAnalysesServeThePipelinesAsPassBuildersDo) {
  // The same pipeline over the same random kernel (every operator, type,
  // rank, layout and policy), once with the analyses optimize() registers
  // and once with every analysis PassBuilder knows: the same analyses run
  // and the same IR comes out. A pass asking for an analysis optimize()
  // does not register would crash here first.
  Expected<std::unique_ptr<llvm::TargetMachine>> TM = createTargetMachine({}, OptLevel::O2);
  ASSERT_TRUE(TM.isOk());
  // One module of kernels, as ahead-of-time compilation makes.
  auto Run = [&](const std::vector<KernelSpec> &Kernels, OptLevel L, bool Hand,
                 std::set<std::string> &Ran) {
    llvm::LLVMContext Ctx;
    llvm::Module M("k", Ctx);
    for (size_t I = 0; I < Kernels.size(); ++I)
      emitKernelInto(Kernels[I], planKernel(Kernels[I]), "k" + std::to_string(I), M);
    configureModule(M, **TM);
    llvm::PassInstrumentationCallbacks PIC;
    PIC.registerBeforeAnalysisCallback(
        [&](llvm::StringRef Name, llvm::Any) { Ran.insert(Name.str()); });
    llvm::LoopAnalysisManager LAM;
    llvm::FunctionAnalysisManager FAM;
    llvm::CGSCCAnalysisManager CGAM;
    llvm::ModuleAnalysisManager MAM;
    if (Hand) {
      registerKernelAnalyses(**TM, MAM, FAM, LAM, &PIC);
    } else {
      llvm::PassBuilder PB(TM->get(), llvm::PipelineTuningOptions(), std::nullopt, &PIC);
      PB.registerModuleAnalyses(MAM);
      PB.registerCGSCCAnalyses(CGAM);
      PB.registerFunctionAnalyses(FAM);
      PB.registerLoopAnalyses(LAM);
      PB.crossRegisterProxies(LAM, FAM, CGAM, MAM);
    }
    kernelPipeline(M, L).run(M, MAM);
    std::string IR;
    llvm::raw_string_ostream OS(IR);
    M.print(OS, nullptr);
    return IR;
  };
  // The benchmark's cases (large, vectorizable loops), and random ones in
  // modules of 20.
  std::vector<std::pair<std::string, std::vector<KernelSpec>>> Modules;
  for (const bench::BenchCase &C : bench::benchCases())
    Modules.push_back({C.Name, {caseSpec(C.Name)}});
  test::CaseGenerator Gen(424242);
  for (int I = 0; I < 10; ++I) {
    std::vector<KernelSpec> Kernels;
    while (Kernels.size() < 20) {
      const test::RandomCase C = Gen.next();
      if (C.Desc.outputElements() != 0) // (No kernel is emitted for an empty output.)
        Kernels.push_back(canonicalize(C.Desc));
    }
    Modules.push_back({"random module " + std::to_string(I), Kernels});
  }
  std::set<std::string> AllRan;
  for (const auto &[Name, Kernels] : Modules) {
    for (OptLevel L : {OptLevel::O1, OptLevel::O2}) {
      SCOPED_TRACE(Name + " at " + optLevelName(L));
      std::set<std::string> ByHand, ByBuilder;
      const std::string HandIR = Run(Kernels, L, true, ByHand);
      EXPECT_EQ(HandIR, Run(Kernels, L, false, ByBuilder));
      EXPECT_EQ(ByHand, ByBuilder);
      AllRan.insert(ByHand.begin(), ByHand.end());
    }
  }
  for (const char *Analysis : {"ScalarEvolutionAnalysis", "LoopAccessAnalysis", "MemorySSAAnalysis",
                               "ShouldRunExtraVectorPasses"})
    EXPECT_NE(AllRan.count(Analysis), 0u) << Analysis;
}

TEST(Optimize, AKernelWithAnEpilogueIsInlinedFirst) {
  llvm::LLVMContext Ctx;
  llvm::Module M("k", Ctx);
  auto *Fn = llvm::Function::Create(llvm::FunctionType::get(llvm::Type::getVoidTy(Ctx), false),
                                    llvm::Function::InternalLinkage, "epilogue", M);
  Fn->addFnAttr(llvm::Attribute::AlwaysInline);
  llvm::ReturnInst::Create(Ctx, llvm::BasicBlock::Create(Ctx, "", Fn));
  for (OptLevel L : {OptLevel::O0, OptLevel::O1, OptLevel::O2}) {
    std::string Text;
    llvm::raw_string_ostream OS(Text);
    kernelPipeline(M, L).printPipeline(OS, [](llvm::StringRef Class) { return Class; });
    EXPECT_EQ(OS.str().rfind("AlwaysInlinerPass", 0), 0u) << optLevelName(L) << ": " << OS.str();
  }
}

TEST(Optimize, TheQuickTierTakesKernelsOfAtMost64KiB) {
  KernelSpec S;
  S.ElemBytes = S.OutElemBytes = 4;
  S.Rank = 1;
  S.Sizes[0] = QuickKernelBytes / 4;
  EXPECT_EQ(kernelLevel(S, OptLevel::O2), OptLevel::O1);
  EXPECT_EQ(kernelLevel(S, OptLevel::O3), OptLevel::O3); // O3 always compiles fully.
  S.Sizes[0] += 1;
  EXPECT_EQ(kernelLevel(S, OptLevel::O2), OptLevel::O2);
}

} // namespace
