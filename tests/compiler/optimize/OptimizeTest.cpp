//===- tests/compiler/optimize/OptimizeTest.cpp - The optimization stage -===//

#include "Cases.h"
#include "compiler/backend/Target.h"
#include "compiler/emit/EmitKernel.h"
#include "compiler/optimize/Optimize.h"
#include "gatherjit/OptLevel.h"

#include <llvm/IR/LLVMContext.h>
#include <llvm/IR/Module.h>
#include <llvm/IR/Verifier.h>
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
  // GE2's element rows become vector code at O2; the quick tier leaves
  // loops alone.
  const KernelSpec GE2 = caseSpec("GE2");
  EXPECT_NE(optimizedIR(GE2, OptLevel::O2).find("<8 x i64>"), std::string::npos);
  EXPECT_EQ(optimizedIR(GE2, OptLevel::O1).find("x i64>"), std::string::npos);
}

TEST(Optimize, EachLevelHasItsOwnPipelineText) {
  // The text is part of the persistent cache's key.
  std::set<std::string> Texts;
  for (OptLevel L : {OptLevel::O0, OptLevel::O1, OptLevel::O2, OptLevel::O3})
    Texts.insert(pipelineText(L));
  EXPECT_EQ(Texts.size(), 4u);
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
