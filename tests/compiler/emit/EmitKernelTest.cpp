//===- tests/compiler/emit/EmitKernelTest.cpp - The emitter follows plans ===//
//
// Every emitted module must verify, and carry what its plan asks for and
// nothing it does not: non-temporal stores and the closing fence,
// prefetches, the table of offsets. Run on the benchmark cases (which cover
// every strategy) and on random configurations of every operator.
//
//===----------------------------------------------------------------------===//

#include "compiler/emit/EmitKernel.h"
#include "Cases.h"
#include "RandomCase.h"

#include <llvm/IR/LLVMContext.h>
#include <llvm/IR/Module.h>
#include <llvm/IR/Verifier.h>
#include <llvm/Support/raw_ostream.h>

#include <gtest/gtest.h>

using namespace gatherjit;

namespace {

struct Emitted {
  bool Verifies = false;
  std::string Problems, IR;
};

Emitted emit(const KernelSpec &Spec, const KernelPlan &Plan) {
  llvm::LLVMContext Ctx;
  std::unique_ptr<llvm::Module> M = emitKernel(Spec, Plan, "k", Ctx);
  Emitted E;
  llvm::raw_string_ostream Problems(E.Problems);
  E.Verifies = !llvm::verifyModule(*M, &Problems);
  llvm::raw_string_ostream IR(E.IR);
  M->print(IR, nullptr);
  return E;
}

bool has(const std::string &IR, const std::string &Text) {
  return IR.find(Text) != std::string::npos;
}

void expectFollowsPlan(const KernelSpec &Spec, const KernelPlan &Plan, const std::string &What) {
  SCOPED_TRACE(What + "\n  spec: " + Spec.describe() + "\n  plan: " + Plan.describe());
  const Emitted E = emit(Spec, Plan);
  ASSERT_TRUE(E.Verifies) << E.Problems;
  EXPECT_TRUE(has(E.IR, "define i64 @k_range(") && has(E.IR, "define i64 @k(") &&
              has(E.IR, "@k_rows = constant i64 " + std::to_string(Spec.rows())))
      << "the three symbols";
  EXPECT_EQ(has(E.IR, "!nontemporal"), Plan.NonTemporal);
  EXPECT_EQ(has(E.IR, "fence seq_cst"), Plan.NonTemporal);
  const bool Prefetches = Plan.StreamIndices || Plan.PrefetchNextInputRow ||
                          Plan.PrefetchNextRegion || Plan.PrefetchRowsAhead > 0;
  EXPECT_EQ(has(E.IR, "@llvm.prefetch"), Prefetches);
  EXPECT_EQ(has(E.IR, "%offsets = alloca"), Plan.Row == RowKind::SharedIndices);
  EXPECT_EQ(has(E.IR, "load volatile i8"), Plan.TouchInputRow || Plan.TouchRegion);
  EXPECT_EQ(has(E.IR, "\"prefer-vector-width\"=\"" + std::to_string(Plan.LoopVectorBytes * 8)),
            Plan.LoopVectorBytes > 0);
  // Only Check has blocks that return a bad index's position. (An empty
  // output, which the runtime never compiles, may have or lack them.)
  if (Spec.elements() > 0) {
    EXPECT_EQ(has(E.IR, "\nbad"), Spec.Policy == OobPolicy::Check) << "a bad-index block";
  }
}

TEST(EmitKernel, BenchmarkCasesFollowTheirPlans) {
  for (const bench::BenchCase &C : bench::benchCases()) {
    Expected<ValidDesc> V = bench::benchDesc(C);
    ASSERT_TRUE(V.isOk());
    const KernelSpec Spec = canonicalize(*V);
    expectFollowsPlan(Spec, planKernel(Spec), C.Name);
    // The same spec planned for a GPU: no CPU strategies in the IR.
    TargetFacts Gpu;
    Gpu.Gpu = true;
    expectFollowsPlan(Spec, planKernel(Spec, Gpu), std::string(C.Name) + " (GPU plan)");
    // And for a CPU whose loops are vectorized wide.
    TargetFacts Wide;
    Wide.WideLoopBytes = 64;
    expectFollowsPlan(Spec, planKernel(Spec, Wide), std::string(C.Name) + " (wide loops)");
  }
}

TEST(EmitKernel, RandomConfigurationsVerify) {
  test::CaseGenerator Gen(4242);
  for (int I = 0; I < 300; ++I) {
    const test::RandomCase C = Gen.next();
    const KernelSpec Spec = canonicalize(C.Desc);
    expectFollowsPlan(Spec, planKernel(Spec), "case " + std::to_string(I) + ": " + C.Summary);
    if (HasFatalFailure())
      return;
  }
}

} // namespace
