//===- tests/compiler/backend/CodeGeneratorTest.cpp - Pipelines run again -===//
//
// A CodeGenerator builds the code generator's pass pipeline for a level at
// its first object and runs it again for every object after. Objects made
// so, the levels interleaved, must be byte for byte those of a generator
// making its first.
//
//===----------------------------------------------------------------------===//

#include "compiler/backend/Target.h"
#include "compiler/pipeline/Pipeline.h"

#include "RandomCase.h"

#include <llvm/Target/TargetMachine.h>

#include <gtest/gtest.h>

using namespace gatherjit;
using namespace gatherjit::test;

namespace {

TEST(CodeGenerator, AReusedPipelineMakesTheObjectsAFreshOneMakes) {
  Expected<std::unique_ptr<llvm::TargetMachine>> TM = createTargetMachine({}, OptLevel::O2);
  ASSERT_TRUE(TM.isOk()) << TM.status().message();
  CodeGenerator Reused(TM.take());
  CaseGenerator Cases(21);
  for (int I = 0; I < 24; ++I) {
    const RandomCase C = Cases.next();
    const KernelSpec Spec = canonicalize(C.Desc);
    for (OptLevel Level : {OptLevel::O1, OptLevel::O2, OptLevel::O0}) {
      SCOPED_TRACE(C.Summary + " at " + optLevelName(Level));
      Expected<PipelineResult> Again =
          runPipeline({{Spec, Spec.symbolName()}}, *backendFor(Reused), Level);
      Expected<std::unique_ptr<llvm::TargetMachine>> FreshTM =
          createTargetMachine({}, OptLevel::O2);
      ASSERT_TRUE(FreshTM.isOk());
      CodeGenerator Fresh(FreshTM.take());
      Expected<PipelineResult> First =
          runPipeline({{Spec, Spec.symbolName()}}, *backendFor(Fresh), Level);
      ASSERT_TRUE(Again.isOk() && First.isOk());
      EXPECT_FALSE(Again->Bytes.empty());
      EXPECT_EQ(Again->Bytes, First->Bytes);
    }
  }
}

} // namespace
