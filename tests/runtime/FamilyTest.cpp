//===- tests/runtime/FamilyTest.cpp - One kernel for a family of shapes --===//
//
// A family kernel takes its sizes and strides as an argument: every shape
// of the family must run it to the interpreter's bytes and first error.
// Random configurations run through the family kernels compiled for them
// (each family once), and through the runtime, where a new shape of a
// compiled family runs its family kernel from its first call.
//
//===----------------------------------------------------------------------===//

#include "RandomCase.h"
#include "RuntimeTestUtil.h"
#include "X86Levels.h"
#include "compiler/backend/Jit.h"
#include "compiler/backend/Target.h"
#include "compiler/pipeline/Pipeline.h"
#include "runtime/FamilyCode.h"
#include "runtime/TierPlan.h"

#include <llvm/Target/TargetMachine.h>

#include <gtest/gtest.h>

#include <unordered_map>

using namespace gatherjit;
using namespace gatherjit::test;

namespace {

ValidDesc geOf(uint64_t Rows, uint64_t Cols, uint64_t IdxCols) {
  ValidateOptions O;
  O.AllowSmallerIndices = true;
  return *validate(GatherElementsDesc{tensor(DataType::Float32, {Rows, Cols}),
                                      tensor(DataType::Int64, {Rows, IdxCols}),
                                      tensor(DataType::Float32, {Rows, IdxCols}), 1},
                   O);
}

/// A runtime in the default (adaptive) mode with \p Threads threads.
std::unique_ptr<Runtime> adaptiveRuntime(unsigned Threads) {
  RuntimeOptions O;
  O.Threads = Threads;
  Expected<std::unique_ptr<Runtime>> RT = Runtime::create(O);
  EXPECT_TRUE(RT.isOk()) << RT.status().message();
  return RT ? RT.take() : nullptr;
}

} // namespace

TEST(Family, ShapesOfOneFamilyShareItAndKeepTheirContiguity) {
  const std::optional<KernelSpec> A = familyOf(canonicalize(geOf(8, 64, 16)));
  const std::optional<KernelSpec> B = familyOf(canonicalize(geOf(1000, 64, 16)));
  ASSERT_TRUE(A && B);
  EXPECT_TRUE(*A == *B);
  EXPECT_EQ(A->hashValue(), B->hashValue());
  EXPECT_TRUE(A->Family);
  EXPECT_EQ(A->Sizes[0], KernelSpec::Variable);
  EXPECT_EQ(A->OutStride[1], 1u) << "unit strides stay constants";
  EXPECT_EQ(A->InStride[1], 0u);
  EXPECT_NE(A->symbolName().find("family"), std::string::npos);
  // Rows copied whole (an embedding) have no family: the generic loop's
  // memcpy serves them.
  Expected<GatherDesc> Rows =
      onnxGather(tensor(DataType::Float32, {100, 32}), tensor(DataType::Int64, {7}), 0);
  ASSERT_TRUE(Rows.isOk());
  EXPECT_FALSE(familyOf(canonicalize(*validate(*Rows))));
  const std::array<uint64_t, FamilyShapeSlots> Shape = familyShape(canonicalize(geOf(8, 64, 16)));
  EXPECT_EQ(Shape[SizesSlot], 8u);
  EXPECT_EQ(Shape[SizesSlot + 1], 16u);
  EXPECT_EQ(Shape[AxisSizeSlot], 64u);
}

TEST(Family, ARowFamilyVariesOnlyTheRowsAndIsPlannedAsItsFirstShape) {
  const KernelSpec Small = canonicalize(geOf(8, 64, 16)), Large = canonicalize(geOf(1000, 64, 16));
  const std::optional<KernelSpec> A = rowFamilyOf(Small), B = rowFamilyOf(Large);
  ASSERT_TRUE(A && B);
  EXPECT_TRUE(A->Family);
  EXPECT_EQ(A->Sizes[0], KernelSpec::Variable);
  EXPECT_EQ(A->Sizes[1], 16u) << "the inner sizes stay constants";
  EXPECT_EQ(A->InStride[0], 64u);
  EXPECT_EQ(A->AxisSize[0], 64u);
  EXPECT_EQ(A->PlanRows, 8u);
  EXPECT_FALSE(*A == *B) << "the planned rows are part of the spec";
  KernelSpec KeyA = *A, KeyB = *B;
  KeyA.PlanRows = KeyB.PlanRows = 0;
  EXPECT_TRUE(KeyA == KeyB);
  EXPECT_NE(A->symbolName().find("rowfamily"), std::string::npos);
  EXPECT_NE(A->describe().find("planned_rows=8"), std::string::npos);
  // Planned as the shape it was made from, whatever its rows.
  EXPECT_EQ(planKernel(*A), planKernel(Small));
  EXPECT_EQ(planKernel(*B), planKernel(Large));
  // A large output streams its stores, a small one does not: two shapes on
  // either side are two kernels.
  const KernelSpec Huge = canonicalize(geOf(1 << 16, 1024, 1024));
  ASSERT_NE(planKernel(Huge), planKernel(Small));
  EXPECT_EQ(planKernel(*rowFamilyOf(Huge)), planKernel(Huge));
  // Rows copied whole (an embedding) have one; rank 1 has none (its rows
  // are the innermost loop).
  Expected<GatherDesc> Rows =
      onnxGather(tensor(DataType::Float32, {100, 32}), tensor(DataType::Int64, {7}), 0);
  ASSERT_TRUE(Rows.isOk());
  const std::optional<KernelSpec> Embedding = rowFamilyOf(canonicalize(*validate(*Rows)));
  ASSERT_TRUE(Embedding);
  EXPECT_TRUE(Embedding->innerIsBlock());
  Expected<GatherDesc> Flat =
      onnxGather(tensor(DataType::Float32, {100}), tensor(DataType::Int64, {7}), 0);
  ASSERT_TRUE(Flat.isOk());
  EXPECT_FALSE(rowFamilyOf(canonicalize(*validate(*Flat))));
}

/// Runs \p Bound (a family kernel bound to \p C's spec) on \p C in two
/// ranges of rows, the second ending \p PastEnd rows past the last, and
/// compares its bytes and first error with the interpreter's; \p Failing
/// counts the cases with an error.
static ::testing::AssertionResult agreesInTwoRanges(const FamilyCode &Bound, const RandomCase &C,
                                                    uint64_t Rows, int64_t PastEnd,
                                                    unsigned &Failing) {
  const size_t OutBytes = requiredElements(C.Desc.Output) * C.Desc.Output.elementBytes();
  std::vector<char> Ref(OutBytes, '\xab'), Got(OutBytes, '\xab');
  Status RS = interpret(C.Desc, C.Input.data(), C.Indices.data(), Ref.data());
  const int64_t End = static_cast<int64_t>(Rows), Mid = End / 2;
  int64_t R = Bound.runRows(C.Input.data(), C.Indices.data(), Got.data(), 0, Mid);
  if (R == 0)
    R = Bound.runRows(C.Input.data(), C.Indices.data(), Got.data(), Mid, End + PastEnd);
  if (!RS) {
    ++Failing;
    if (R == 0 || static_cast<uint64_t>(R - 1) != *RS.position())
      return ::testing::AssertionFailure()
             << "returned " << R << "; the interpreter: " << RS.message();
    return ::testing::AssertionSuccess();
  }
  if (R != 0)
    return ::testing::AssertionFailure() << "returned " << R << " for valid indices";
  if (Ref != Got)
    return ::testing::AssertionFailure() << "outputs differ";
  return ::testing::AssertionSuccess();
}

/// Compiles \p Spec at O2 and links it.
static std::shared_ptr<const Executable> compileLinked(const KernelSpec &Spec, CodeGenerator &Gen,
                                                       JitEngine &Jit) {
  Expected<PipelineResult> Object =
      runPipeline({{Spec, Spec.symbolName()}}, *backendFor(Gen), OptLevel::O2);
  EXPECT_TRUE(Object.isOk()) << Object.status().message();
  if (!Object)
    return nullptr;
  Expected<std::shared_ptr<const Executable>> Linked = Jit.link(Spec.symbolName(), Object->Bytes);
  EXPECT_TRUE(Linked.isOk()) << Linked.status().message();
  return Linked ? Linked.take() : nullptr;
}

namespace {

/// The code generators the random family tests run: the host's, and the
/// portable levels without AVX-512 (their own plans: no vector gathers at
/// x86-64, AVX2's at x86-64-v3) where this machine runs them.
std::vector<std::unique_ptr<CodeGenerator>> generatorsToRun() {
  std::vector<std::unique_ptr<CodeGenerator>> Gens;
  std::vector<TargetDesc> Targets = {{}};
  for (const X86Level &L : X86Levels)
    if ((std::string(L.Cpu) == "x86-64" || std::string(L.Cpu) == "x86-64-v3") && runsHere(L))
      Targets.push_back({"", L.Cpu, ""});
  for (const TargetDesc &T : Targets) {
    Expected<std::unique_ptr<CodeGenerator>> Gen = createCodeGenerator(T, OptLevel::O2);
    EXPECT_TRUE(Gen.isOk()) << Gen.status().message();
    if (Gen)
      Gens.push_back(Gen.take());
  }
  return Gens;
}

} // namespace

// Each configuration through a row family planned for other rows than its
// own (the plan the same), so that the count the kernel reads is not the
// one it was made with.
TEST(Family, RowFamiliesOfRandomConfigurationsMatchTheInterpreter) {
  Expected<std::shared_ptr<JitEngine>> Jit = JitEngine::create({});
  ASSERT_TRUE(Jit.isOk());
  for (const std::unique_ptr<CodeGenerator> &Gen : generatorsToRun()) {
    SCOPED_TRACE(Gen->targetMachine().getTargetCPU().str());
    const TargetFacts Facts = backendFor(*Gen)->facts();
    CaseGenerator Cases(seedFromEnv(20261126));
    Coverage Covered;
    unsigned &Run = Covered.floor("configurations with a row family", 250);
    unsigned &Failing = Covered.floor("configurations with a bad index", 10);
    unsigned &Blocks = Covered.floor("configurations copying rows whole (row families too)", 10);
    for (unsigned I = 0; Covered.drawMore(I, 0, 3000); ++I) {
      RandomCase C = Cases.next();
      SCOPED_TRACE("case " + std::to_string(I) + ": " + C.Summary);
      if (C.Desc.outputElements() == 0)
        continue;
      const KernelSpec Spec = canonicalize(C.Desc);
      std::optional<KernelSpec> Family = rowFamilyOf(Spec);
      if (!Family)
        continue;
      const KernelPlan Plan = planKernel(Spec, Facts);
      for (uint64_t Other : {2 * Spec.rows() + 3, Spec.rows() + 1, Spec.rows()}) {
        KernelSpec F = *Family;
        F.PlanRows = Other;
        if (planKernel(F, Facts) == Plan) {
          Family = F;
          break;
        }
      }
      std::shared_ptr<const Executable> Code = compileLinked(*Family, *Gen, **Jit);
      ASSERT_TRUE(Code);
      Blocks += Spec.innerIsBlock();
      // The second range asks past the end: the kernel keeps to its rows.
      ASSERT_TRUE(agreesInTwoRanges(FamilyCode(Code, std::make_shared<const KernelSpec>(Spec)), C,
                                    Spec.rows(), 5, Failing));
      ++Run;
    }
    EXPECT_EQ(Covered.unmet(), "");
  }
}

TEST(Family, RandomConfigurationsMatchTheInterpreter) {
  Expected<std::shared_ptr<JitEngine>> Jit = JitEngine::create({});
  ASSERT_TRUE(Jit.isOk());
  for (const std::unique_ptr<CodeGenerator> &Gen : generatorsToRun()) {
    SCOPED_TRACE(Gen->targetMachine().getTargetCPU().str());
    std::unordered_map<KernelSpec, std::shared_ptr<const Executable>, KernelSpecHash> Families;
    CaseGenerator Cases(seedFromEnv(20261125));
    Coverage Covered;
    unsigned &Run = Covered.floor("configurations with a family", 250);
    unsigned &Failing = Covered.floor("configurations with a bad index", 10);
    for (unsigned I = 0; Covered.drawMore(I, 0, 2500); ++I) {
      RandomCase C = Cases.next();
      SCOPED_TRACE("case " + std::to_string(I) + ": " + C.Summary);
      if (C.Desc.outputElements() == 0)
        continue;
      const KernelSpec Spec = canonicalize(C.Desc);
      const std::optional<KernelSpec> Family = familyOf(Spec);
      if (!Family)
        continue;
      std::shared_ptr<const Executable> &Code = Families[*Family];
      if (!Code)
        Code = compileLinked(*Family, *Gen, **Jit);
      ASSERT_TRUE(Code);
      // In two ranges of rows, as a split run calls it.
      ASSERT_TRUE(agreesInTwoRanges(FamilyCode(Code, std::make_shared<const KernelSpec>(Spec)), C,
                                    Spec.rows(), 0, Failing));
      ++Run;
    }
    EXPECT_EQ(Covered.unmet(), "");
  }
}

TEST(Runtime, AHotFirstShapeCompilesItsRowFamilyBeforeItsOwnKernel) {
  const std::unique_ptr<Runtime> Made = adaptiveRuntime(1);
  ASSERT_TRUE(Made);
  Runtime &RT = *Made;
  // Alone in its family, a hot shape gets the family's kernel and then
  // its own.
  GeCase Alone(8, 16);
  Expected<Kernel> A = RT.compile(Alone.Desc);
  ASSERT_TRUE(A.isOk());
  for (uint64_t I = 0; I < HotRuns; ++I)
    ASSERT_TRUE(Alone.agrees(*A));
  RT.drainBackground();
  EXPECT_EQ(A->tier(), KernelTier::Specialized);
  EXPECT_EQ(RT.stats().FamilyKernels, 1u);
  EXPECT_EQ(RT.stats().Specializations, 1u);
  EXPECT_TRUE(Alone.agrees(*A));
  // The family's second shape, which would have queued its compile, runs
  // the kernel from its first call.
  GeCase Second(40, 16);
  Expected<Kernel> B = RT.compile(Second.Desc);
  ASSERT_TRUE(B.isOk());
  EXPECT_EQ(B->tier(), KernelTier::Family);
  EXPECT_TRUE(Second.agrees(*B));

  // Another family (8 columns): its second shape comes right after the
  // first is hot, before, during or after the first's compile of the
  // family's kernel. However they meet, the kernel is compiled once,
  // the second shape ends on it, and the first on it or, if it was still
  // alone when the family's kernel was done, on its own.
  GeCase First(8, 8), Next(30, 8);
  Expected<Kernel> F = RT.compile(First.Desc);
  ASSERT_TRUE(F.isOk());
  for (uint64_t I = 0; I < HotRuns; ++I)
    ASSERT_TRUE(First.agrees(*F));
  Expected<Kernel> N = RT.compile(Next.Desc);
  ASSERT_TRUE(N.isOk());
  for (uint64_t I = 0; I < HotRuns; ++I)
    ASSERT_TRUE(Next.agrees(*N));
  RT.drainBackground();
  // This row family's kernel once, and the family of every size, which
  // the first shapes of two row families start.
  EXPECT_EQ(RT.stats().FamilyKernels, 3u);
  EXPECT_EQ(N->tier(), KernelTier::Family);
  EXPECT_NE(F->tier(), KernelTier::Generic);
  EXPECT_EQ(RT.stats().Specializations, F->tier() == KernelTier::Specialized ? 2u : 1u);
  EXPECT_TRUE(First.agrees(*F));
  EXPECT_TRUE(Next.agrees(*N));
}

TEST(Runtime, ANewShapeOfACompiledFamilyRunsItsFamilyKernelAtOnce) {
  const std::unique_ptr<Runtime> Made = adaptiveRuntime(2);
  ASSERT_TRUE(Made);
  Runtime &RT = *Made;
  // One shape of a family asks for nothing; the second (shapes are
  // changing) has the family kernel compiled in the background.
  GeCase First(8, 16), Second(9, 16);
  Expected<Kernel> A = RT.compile(First.Desc);
  ASSERT_TRUE(A.isOk());
  EXPECT_EQ(A->tier(), KernelTier::Generic);
  RT.drainBackground();
  EXPECT_EQ(RT.stats().FamilyKernels, 0u);
  Expected<Kernel> A2 = RT.compile(Second.Desc);
  ASSERT_TRUE(A2.isOk());
  EXPECT_EQ(A2->tier(), KernelTier::Generic);
  EXPECT_TRUE(Second.agrees(*A2));
  RT.drainBackground();
  EXPECT_EQ(RT.stats().FamilyKernels, 1u);
  // Another shape of the family (a GeCase's indices are as wide as its
  // data): the family kernel from the first call, nothing compiled for it.
  GeCase Next(300, 16);
  Expected<Kernel> B = RT.compile(Next.Desc);
  ASSERT_TRUE(B.isOk());
  EXPECT_EQ(B->tier(), KernelTier::Family);
  EXPECT_EQ(B->compileTimes().total(), 0.0);
  EXPECT_EQ(RT.stats().FamilyEntries, 1u);
  EXPECT_TRUE(Next.agrees(*B));
  GeCase Bad = Next;
  Bad.Idx[2000] = 16;
  Bad.Idx[4000] = -17;
  EXPECT_TRUE(Bad.agrees(*B));
  // The family is the rows' (only the row count changed): that code is
  // the specialized kernel's but for the count, so a hot shape keeps it.
  for (int I = 0; I < 3; ++I)
    ASSERT_TRUE(Next.agrees(*B));
  RT.drainBackground();
  EXPECT_EQ(B->tier(), KernelTier::Family);
  EXPECT_EQ(RT.stats().Specializations, 0u);
  EXPECT_TRUE(Bad.agrees(*B));
  // The first shape started on the generic loop; hot, it takes the row
  // family's kernel, compiling nothing.
  for (int I = 0; I < 3; ++I)
    ASSERT_TRUE(First.agrees(*A));
  RT.drainBackground();
  EXPECT_EQ(A->tier(), KernelTier::Family);
  EXPECT_TRUE(First.agrees(*A));
  EXPECT_EQ(RT.stats().Specializations, 0u);
  EXPECT_EQ(RT.stats().FamilyKernels, 1u) << "no family of every size for a rows-only walk";
}

// Apart from the test above (and from the TSan stage's Runtime.* tests): the
// run is split through oneTBB, which is not instrumented.
TEST(Family, ALargeOutputSplitAcrossThreadsRunsItsRowFamilyKernelByRows) {
  const std::unique_ptr<Runtime> Made = adaptiveRuntime(2);
  ASSERT_TRUE(Made);
  Runtime &RT = *Made;
  GeCase Wide(1200, 256);
  Expected<Kernel> W = RT.compile(Wide.Desc);
  ASSERT_TRUE(W.isOk());
  EXPECT_EQ(W->tier(), KernelTier::Generic);
  EXPECT_TRUE(Wide.agrees(*W));
  ASSERT_TRUE(RT.compile(ge(1250, 256)).isOk()); // Its second shape: compiled.
  RT.drainBackground();
  GeCase Wider(1300, 256);
  W = RT.compile(Wider.Desc);
  ASSERT_TRUE(W.isOk());
  EXPECT_EQ(W->tier(), KernelTier::Family);
  EXPECT_TRUE(Wider.agrees(*W));
  GeCase Bad = Wider;
  Bad.Idx[300 * 256 + 7] = 256;
  Bad.Idx[1000 * 256] = -300;
  EXPECT_TRUE(Bad.agrees(*W));
}
