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
#include "TestUtil.h"
#include "gatherjit/Descriptor.h"

#include <llvm/IR/LLVMContext.h>
#include <llvm/IR/Module.h>
#include <llvm/IR/Verifier.h>
#include <llvm/Support/raw_ostream.h>

#include <gtest/gtest.h>

using namespace gatherjit;
using gatherjit::test::tensor;

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
  EXPECT_EQ(has(E.IR, "!\"llvm.loop.vectorize.enable\", i1 false"), Plan.ScalarLoop);
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

TEST(EmitKernel, ScalarLoopsBranchOnABadIndexInsteadOfClampingIt) {
  // A 1-D take from a 16 MiB table where gathers lose beyond the core's
  // caches (KernelPlan::ScalarLoop): under Check a bad index returns from
  // the loop (no flag to rescan by); under Clamp and Clip it is clamped in
  // a block of its own.
  TargetFacts Beyond;
  Beyond.GathersLoseBeyondCore = true;
  for (OobPolicy Policy : {OobPolicy::Check, OobPolicy::Clamp, OobPolicy::Clip}) {
    Expected<ValidDesc> V = validateOnnx(
        {OpKind::Gather, tensor(DataType::Float32, {4u << 20}), tensor(DataType::Int64, {4096}), 0},
        Policy);
    ASSERT_TRUE(V.isOk()) << V.status().message();
    const KernelSpec Spec = canonicalize(*V);
    const KernelPlan Plan = planKernel(Spec, Beyond);
    ASSERT_TRUE(Plan.ScalarLoop) << Plan.describe();
    expectFollowsPlan(Spec, Plan, oobPolicyName(Policy));
    const Emitted E = emit(Spec, Plan);
    EXPECT_FALSE(has(E.IR, "bad.flag")) << E.IR;
    EXPECT_EQ(has(E.IR, "\nclamp"), Policy != OobPolicy::Check) << E.IR;
  }
}

/// How many times \p Text occurs in \p IR.
size_t count(const std::string &IR, const std::string &Text) {
  size_t N = 0;
  for (size_t At = IR.find(Text); At != std::string::npos; At = IR.find(Text, At + 1))
    ++N;
  return N;
}

TEST(EmitKernel, NestsOfShortLoopsAreStraightLineOnlyUpToABound) {
  // GatherElements along axis 0 with broadcast indices, every dimension
  // short; data strides of 9 (rows overlapping) keep the dimensions apart.
  auto SpecOf = [](std::vector<uint64_t> Sizes) {
    TensorDesc Data, Ids;
    Data.Type = DataType::Float32;
    Data.Sizes = Sizes;
    Data.Strides = std::vector<uint64_t>(Sizes.size(), 9);
    Ids.Type = DataType::Int64;
    Ids.Sizes = Sizes;
    Ids.Strides = std::vector<uint64_t>(Sizes.size(), 0);
    Expected<GatherElementsDesc> D = onnxGatherElements(Data, Ids, 0);
    EXPECT_TRUE(D.isOk()) << D.status().message();
    Expected<ValidDesc> V = validate(*D);
    EXPECT_TRUE(V.isOk()) << V.status().message();
    return canonicalize(*V);
  };
  // 8 dimensions of 4: 16,384 copies of the element's code in each of the
  // 4 rows (the outermost dimension, run by a loop) unrolled whole; within
  // the bound, the innermost dimensions' copies inside loops.
  const KernelSpec Deep = SpecOf(std::vector<uint64_t>(8, 4));
  ASSERT_EQ(Deep.Rank, 8u) << Deep.describe();
  const KernelPlan Plan = planKernel(Deep);
  ASSERT_GE(Plan.MaxStraightCopies, 4u);
  const Emitted E = emit(Deep, Plan);
  ASSERT_TRUE(E.Verifies) << E.Problems;
  EXPECT_LE(count(E.IR, "store i32"), std::min<uint64_t>(Plan.MaxStraightCopies, 256))
      << "one store a copy";
  EXPECT_GE(count(E.IR, "store i32"), 4u) << "the innermost dimension straight-line";
  EXPECT_TRUE(has(E.IR, "%d1.iv = phi")) << "the outer dimensions loop";
  // A row of at most MaxStraightCopies elements stays straight-line code.
  const KernelSpec Tiny = SpecOf({2, 2, 3});
  ASSERT_EQ(Tiny.Rank, 3u) << Tiny.describe();
  ASSERT_LE(Tiny.elements() / Tiny.rows(), Plan.MaxStraightCopies);
  const Emitted T = emit(Tiny, planKernel(Tiny));
  ASSERT_TRUE(T.Verifies) << T.Problems;
  EXPECT_FALSE(has(T.IR, "%d1.iv = phi"));
  EXPECT_EQ(count(T.IR, "store i32"), 6u);
}

} // namespace
