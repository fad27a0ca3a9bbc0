//===- tests/compiler/backend/BackendTest.cpp - Facts that change plans ---===//
//
// Each target machine's facts (line, vector width), and code emitted from
// a plan of facts other than this host's: the IR follows the plan's line
// and vector, not a number of the emitter's own.
//
//===----------------------------------------------------------------------===//

#include "compiler/backend/Backend.h"
#include "Cases.h"
#include "TestUtil.h"
#include "compiler/backend/Target.h"
#include "compiler/emit/EmitKernel.h"
#include "compiler/pipeline/Pipeline.h"

#include <llvm/IR/LLVMContext.h>
#include <llvm/IR/Module.h>
#include <llvm/IR/Verifier.h>
#include <llvm/Support/raw_ostream.h>
#include <llvm/Target/TargetMachine.h>

#include <gtest/gtest.h>

#include <sstream>
#include <unistd.h>

using namespace gatherjit;

namespace {

TargetFacts factsOf(const std::string &Triple, const std::string &Cpu,
                    const std::string &Features = "") {
  Expected<std::unique_ptr<llvm::TargetMachine>> TM =
      createTargetMachine({Triple, Cpu, Features}, OptLevel::O2);
  EXPECT_TRUE(TM.isOk()) << TM.status().message();
  return TM ? targetFacts(**TM) : TargetFacts{};
}

TEST(Backend, VectorWidthIsTheCpusWidest) {
  EXPECT_EQ(factsOf("x86_64-unknown-linux-gnu", "x86-64").VectorBytes, 16u);
  EXPECT_EQ(factsOf("x86_64-unknown-linux-gnu", "haswell").VectorBytes, 32u);
  EXPECT_EQ(factsOf("x86_64-unknown-linux-gnu", "skylake-avx512").VectorBytes, 64u);
  EXPECT_EQ(factsOf("aarch64-unknown-linux-gnu", "neoverse-v1").VectorBytes, 16u);
  // Variable permutes of a 64-byte register with AVX-512 only.
  EXPECT_EQ(factsOf("x86_64-unknown-linux-gnu", "skylake-avx512").PermuteBytes, 64u);
  EXPECT_EQ(factsOf("x86_64-unknown-linux-gnu", "znver4").PermuteBytes, 64u);
  EXPECT_EQ(factsOf("x86_64-unknown-linux-gnu", "haswell").PermuteBytes, 0u);
  EXPECT_EQ(factsOf("aarch64-unknown-linux-gnu", "neoverse-v1").PermuteBytes, 0u);
  // x86's prefetchers follow a row once its head is read (measured on
  // Intel's cores and AMD's Zen 4); other targets are not assumed to.
  EXPECT_TRUE(factsOf("x86_64-unknown-linux-gnu", "skylake-avx512").PrefetcherFollowsRows);
  EXPECT_TRUE(factsOf("x86_64-unknown-linux-gnu", "sapphirerapids").PrefetcherFollowsRows);
  EXPECT_TRUE(factsOf("x86_64-unknown-linux-gnu", "znver4").PrefetcherFollowsRows);
  EXPECT_FALSE(factsOf("aarch64-unknown-linux-gnu", "neoverse-v1").PrefetcherFollowsRows);
  // Masked byte stores: AVX-512BW, on Intel's cores (Zen 4's measured slower).
  EXPECT_TRUE(factsOf("x86_64-unknown-linux-gnu", "skylake-avx512").MaskedByteStores);
  EXPECT_TRUE(factsOf("x86_64-unknown-linux-gnu", "sapphirerapids").MaskedByteStores);
  EXPECT_FALSE(factsOf("x86_64-unknown-linux-gnu", "znver4").MaskedByteStores);
  // Zen 4's gathers pay from memory only, unless the user's features choose
  // gathers (or scalar loads) for every kernel; Intel's pay everywhere.
  EXPECT_TRUE(factsOf("x86_64-unknown-linux-gnu", "znver4").GathersOnlyFromMemory);
  EXPECT_FALSE(
      factsOf("x86_64-unknown-linux-gnu", "znver4", "-prefer-no-gather").GathersOnlyFromMemory);
  EXPECT_FALSE(
      factsOf("x86_64-unknown-linux-gnu", "znver4", "+prefer-no-gather").GathersOnlyFromMemory);
  EXPECT_FALSE(factsOf("x86_64-unknown-linux-gnu", "sapphirerapids").GathersOnlyFromMemory);
  EXPECT_FALSE(factsOf("x86_64-unknown-linux-gnu", "haswell").GathersOnlyFromMemory);
  // Intel's cores with AVX512-FP16 lose with gathers from tables beyond
  // their own caches, unless the user chose for every kernel.
  EXPECT_TRUE(factsOf("x86_64-unknown-linux-gnu", "sapphirerapids").GathersLoseBeyondCore);
  EXPECT_FALSE(factsOf("x86_64-unknown-linux-gnu", "sapphirerapids", "-prefer-no-gather")
                   .GathersLoseBeyondCore);
  EXPECT_FALSE(factsOf("x86_64-unknown-linux-gnu", "sapphirerapids", "+prefer-no-gather")
                   .GathersLoseBeyondCore);
  for (const char *Cpu : {"znver4", "skylake-avx512", "haswell"})
    EXPECT_FALSE(factsOf("x86_64-unknown-linux-gnu", Cpu).GathersLoseBeyondCore) << Cpu;
  EXPECT_FALSE(factsOf("x86_64-unknown-linux-gnu", "haswell").MaskedByteStores);
  EXPECT_FALSE(factsOf("x86_64-unknown-linux-gnu", "knl").MaskedByteStores); // AVX-512F alone.
  EXPECT_FALSE(factsOf("aarch64-unknown-linux-gnu", "neoverse-v1").MaskedByteStores);
  // 512-bit loops where 512-bit instructions keep the clock (AVX512-FP16).
  EXPECT_EQ(factsOf("x86_64-unknown-linux-gnu", "sapphirerapids").WideLoopBytes, 64u);
  EXPECT_EQ(factsOf("x86_64-unknown-linux-gnu", "skylake-avx512").WideLoopBytes, 0u);
  EXPECT_EQ(factsOf("x86_64-unknown-linux-gnu", "icelake-server").WideLoopBytes, 0u);
  EXPECT_EQ(factsOf("x86_64-unknown-linux-gnu", "znver4").WideLoopBytes, 0u);
  EXPECT_EQ(factsOf("x86_64-unknown-linux-gnu", "haswell").WideLoopBytes, 0u);
  EXPECT_EQ(factsOf("aarch64-unknown-linux-gnu", "neoverse-v1").WideLoopBytes, 0u);
  // Narrow elements by 32-bit indices at 128 bits where it was measured.
  EXPECT_EQ(factsOf("x86_64-unknown-linux-gnu", "sapphirerapids").NarrowLoopBytes, 16u);
  EXPECT_EQ(factsOf("x86_64-unknown-linux-gnu", "skylake-avx512").NarrowLoopBytes, 0u);
  EXPECT_EQ(factsOf("x86_64-unknown-linux-gnu", "znver4").NarrowLoopBytes, 0u);
  EXPECT_EQ(factsOf("aarch64-unknown-linux-gnu", "neoverse-v1").NarrowLoopBytes, 0u);
}

TEST(Backend, TheHostsLineIsTheSystems) {
  Expected<std::unique_ptr<llvm::TargetMachine>> TM = createTargetMachine({}, OptLevel::O2);
  ASSERT_TRUE(TM.isOk());
  const long Line = ::sysconf(_SC_LEVEL1_DCACHE_LINESIZE);
  const TargetFacts F = targetFacts(**TM);
  if (Line >= 16 && Line <= 256)
    EXPECT_EQ(F.CacheLineBytes, static_cast<unsigned>(Line));
  else
    EXPECT_EQ(F.CacheLineBytes, 64u);
  EXPECT_EQ(F.CacheLineBytes % F.VectorBytes, 0u);
  // So is its last-level cache: the L3, else the L2.
  const long L3 = ::sysconf(_SC_LEVEL3_CACHE_SIZE), L2 = ::sysconf(_SC_LEVEL2_CACHE_SIZE);
  EXPECT_EQ(F.LastLevelCacheBytes, static_cast<uint64_t>(L3 > 0 ? L3 : L2 > 0 ? L2 : 0));
  // A cross target gets the common line and no cache, whatever this host
  // has.
  EXPECT_EQ(factsOf("aarch64-unknown-linux-gnu", "neoverse-v1").CacheLineBytes, 64u);
  EXPECT_EQ(factsOf("aarch64-unknown-linux-gnu", "neoverse-v1").LastLevelCacheBytes, 0u);
}

std::string emittedIR(const std::string &CaseName, const TargetFacts &Facts, KernelPlan &Plan) {
  for (const bench::BenchCase &C : bench::benchCases())
    if (CaseName == C.Name) {
      Expected<ValidDesc> V = bench::benchDesc(C);
      EXPECT_TRUE(V.isOk());
      const KernelSpec Spec = canonicalize(*V);
      Plan = planKernel(Spec, Facts);
      llvm::LLVMContext Ctx;
      std::unique_ptr<llvm::Module> M = emitKernel(Spec, Plan, "k", Ctx);
      std::string Problems, IR;
      llvm::raw_string_ostream PS(Problems), OS(IR);
      EXPECT_FALSE(llvm::verifyModule(*M, &PS)) << Problems;
      M->print(OS, nullptr);
      return OS.str();
    }
  ADD_FAILURE() << "no case " << CaseName;
  return "";
}

bool has(const std::string &IR, const std::string &Text) {
  return IR.find(Text) != std::string::npos;
}

/// True if a line of \p IR contains \p Part and ends with \p End.
bool hasLine(const std::string &IR, const std::string &Part, const std::string &End) {
  std::istringstream Lines(IR);
  for (std::string Line; std::getline(Lines, Line);)
    if (Line.find(Part) != std::string::npos && Line.size() >= End.size() &&
        Line.compare(Line.size() - End.size(), End.size(), End) == 0)
      return true;
  return false;
}

TEST(Backend, EmittedCodeFollowsFactsOtherThanTheHosts) {
  const TargetFacts Wide{128, 32, false};
  KernelPlan P;
  // G1: 3 KiB embedding rows into a large output: streamed block copies.
  std::string IR = emittedIR("G1", Wide, P);
  ASSERT_TRUE(P.NonTemporal && P.Row == RowKind::Block) << P.describe();
  EXPECT_EQ(P.LineBytes, 128u);
  EXPECT_EQ(P.VectorBytes, 32u);
  EXPECT_TRUE(has(IR, "load <32 x i8>")) << "32-byte copies";
  EXPECT_FALSE(has(IR, "<64 x i8>"));
  EXPECT_TRUE(hasLine(IR, "= and i64 ", ", 127")) << "bytes to the next 128-byte line";
  EXPECT_FALSE(hasLine(IR, "= and i64 ", ", 63"));
  EXPECT_TRUE(hasLine(IR, "store <32 x i8> ", "align 32, !nontemporal !0") ||
              hasLine(IR, "store <32 x i8> ", "align 32, !nontemporal !1"));
  // The short copies under a line start at half of it.
  EXPECT_TRUE(has(IR, "\nshort64:"));
  // G2: rows sharing their indices, from a table aligned to the line, load
  // their input row one byte a 128-byte line before they gather.
  IR = emittedIR("G2", Wide, P);
  ASSERT_EQ(P.Row, RowKind::SharedIndices) << P.describe();
  ASSERT_TRUE(P.TouchInputRow) << P.describe();
  EXPECT_TRUE(hasLine(IR, "%offsets = alloca [", " x i64], align 128"));
  EXPECT_TRUE(has(IR, "load volatile i8") && hasLine(IR, "= mul nuw nsw i64 %", ", 128"))
      << "loads a line apart";
  EXPECT_FALSE(hasLine(IR, "= mul nuw nsw i64 %", ", 64"));
  // The same cases for this host's facts (64-byte lines): none of it.
  const TargetFacts Host{64, 64, false};
  IR = emittedIR("G1", Host, P);
  EXPECT_TRUE(has(IR, "load <64 x i8>"));
  EXPECT_TRUE(hasLine(IR, "= and i64 ", ", 63"));
  EXPECT_FALSE(has(IR, "\nshort64:"));
}

} // namespace

namespace {

/// Records what it was asked to load and answers with a failure.
struct RecordingLoader final : ArtefactLoader {
  Expected<std::shared_ptr<const Executable>> load(const std::string &Name,
                                                   const std::vector<char> &Artefact,
                                                   const KernelSpec &Spec,
                                                   const KernelPlan &Plan) override {
    Names.push_back(Name);
    Bytes = Artefact.size();
    Specs.push_back(Spec);
    Plans.push_back(Plan);
    return Status::internal("recorded");
  }
  std::vector<std::string> Names;
  size_t Bytes = 0;
  std::vector<KernelSpec> Specs;
  std::vector<KernelPlan> Plans;
};

TEST(Backend, LoadsThroughItsLoaderWithThePlanOfItsFacts) {
  Expected<std::unique_ptr<CodeGenerator>> Gen =
      createCodeGenerator({"x86_64-unknown-linux-gnu", "haswell", ""}, OptLevel::O2);
  ASSERT_TRUE(Gen.isOk()) << Gen.status().message();
  Expected<ValidDesc> V = bench::benchDesc(bench::benchCases()[0]);
  ASSERT_TRUE(V.isOk());
  const KernelSpec Spec = canonicalize(*V);
  const std::vector<char> Object(100, 'x');
  // A backend without a loader writes its objects: loading is refused.
  std::unique_ptr<Backend> Writer = backendFor(**Gen);
  Expected<std::shared_ptr<const Executable>> Refused = Writer->load("k", Object, Spec);
  ASSERT_FALSE(Refused.isOk());
  EXPECT_EQ(Refused.status().code(), ErrorCode::Unsupported);
  RecordingLoader Loader;
  std::unique_ptr<Backend> B = backendFor(**Gen, &Loader);
  Expected<std::shared_ptr<const Executable>> Got = B->load("k", Object, Spec);
  EXPECT_EQ(Got.status().message(), "recorded");
  ASSERT_EQ(Loader.Names.size(), 1u);
  EXPECT_EQ(Loader.Names[0], "k");
  EXPECT_EQ(Loader.Bytes, 100u);
  EXPECT_EQ(Loader.Specs[0], Spec);
  // The plan is the one the backend's own facts give (32-byte vectors).
  EXPECT_EQ(Loader.Plans[0], planKernel(Spec, B->facts()));
  EXPECT_EQ(Loader.Plans[0].VectorBytes, 32u);
}

/// The assembly of \p V's kernel for x86 \p Cpu.
std::string assemblyOf(const std::string &Cpu, const Expected<ValidDesc> &V) {
  EXPECT_TRUE(V.isOk());
  Expected<std::unique_ptr<CodeGenerator>> Gen =
      createCodeGenerator({"x86_64-unknown-linux-gnu", Cpu, ""}, OptLevel::O2);
  EXPECT_TRUE(Gen.isOk()) << Gen.status().message();
  if (!V || !Gen)
    return "";
  Expected<PipelineResult> R = runPipeline({{canonicalize(*V), "k"}}, *backendFor(**Gen),
                                           OptLevel::O2, PipelineOutput::Assembly);
  EXPECT_TRUE(R.isOk()) << R.status().message();
  return R ? std::string(R->Bytes.begin(), R->Bytes.end()) : "";
}

/// The assembly of bench case \p CaseName's kernel for x86 \p Cpu.
std::string assemblyFor(const std::string &Cpu, const std::string &CaseName) {
  for (const bench::BenchCase &C : bench::benchCases())
    if (CaseName == C.Name)
      return assemblyOf(Cpu, bench::benchDesc(C));
  ADD_FAILURE() << "no case " << CaseName;
  return "";
}

TEST(Backend, TakesFromTablesBeyondTheCoresCachesLoadOneElementAnIteration) {
  // A 1-D take from a 16 MiB FLOAT32 table for Intel's cores with
  // AVX512-FP16 (KernelPlan::ScalarLoop): no gather instruction and no
  // vector at all, each element loaded on its own, and prefetched ahead.
  TensorDesc Data, Indices;
  Data.Type = DataType::Float32;
  Data.Sizes = {4u << 20};
  Indices.Type = DataType::Int64;
  Indices.Sizes = {4096};
  for (OobPolicy Policy : {OobPolicy::Check, OobPolicy::Clamp}) {
    const std::string Asm =
        assemblyOf("sapphirerapids", validateOnnx({OpKind::Gather, Data, Indices, 0}, Policy));
    SCOPED_TRACE(oobPolicyName(Policy));
    EXPECT_EQ(Asm.find("gather"), std::string::npos);
    EXPECT_EQ(Asm.find("mm"), std::string::npos) << "no vector register";
    EXPECT_NE(Asm.find("movl\t(%rdi,%r"), std::string::npos) << Asm;
    // The element 128 ids ahead picks (1024 bytes of INT64 further) is
    // prefetched.
    EXPECT_NE(Asm.find("movq\t1024(%rsi,"), std::string::npos) << Asm;
    EXPECT_NE(Asm.find("prefetcht0\t(%rdi,"), std::string::npos) << Asm;
  }
  // Tables of 2 MiB gather.
  Data.Sizes = {1u << 19};
  EXPECT_NE(assemblyOf("sapphirerapids",
                       validateOnnx({OpKind::Gather, Data, Indices, 0}, OobPolicy::Check))
                .find("gather"),
            std::string::npos);
}

TEST(Backend, ElementRowsGatherOnAvx512CoresAndLoadElsewhere) {
  // GE3: FLOAT32 along a middle axis (128 MiB moved), its elements read by
  // vpgatherqd (64-bit offsets) on cores with AVX-512, and by no gather
  // instruction elsewhere.
  for (const char *Cpu : {"sapphirerapids", "skylake-avx512", "znver4"})
    EXPECT_NE(assemblyFor(Cpu, "GE3").find("\tvpgather"), std::string::npos) << Cpu;
  for (const char *Cpu : {"haswell", "x86-64-v2"})
    EXPECT_EQ(assemblyFor(Cpu, "GE3").find("gather"), std::string::npos) << Cpu;
  // A kernel whose operands stay in the caches (FLOAT32 [1000, 200] by
  // INT64 [1000, 64] on axis 1, 0.75 MiB moved) gathers on Intel's cores
  // only: Zen 4's gathers pay from memory alone.
  TensorDesc Data, Indices;
  Data.Type = DataType::Float32;
  Data.Sizes = {1000, 200};
  Indices.Type = DataType::Int64;
  Indices.Sizes = {1000, 64};
  const Expected<ValidDesc> Small =
      validateOnnx({OpKind::GatherElements, Data, Indices, 1}, OobPolicy::Check);
  EXPECT_NE(assemblyOf("sapphirerapids", Small).find("\tvpgather"), std::string::npos);
  EXPECT_EQ(assemblyOf("znver4", Small).find("gather"), std::string::npos);
}

TEST(Backend, BlockRowsStoreAlignedVectorsWithMaskedEndsOnIntelsAvx512Cores) {
  // Embedding rows of 1 KiB into a 1 MiB output (below the non-temporal
  // size): an unaligned output's row is a masked head, aligned vectors and
  // a masked tail on Intel's AVX-512 cores; plain vectors elsewhere. On
  // every AVX-512 core a row from an input off the lines is loaded in
  // aligned lines, the first and last masked (loads, not stores), each
  // vector shifted out of two by a two-register permute.
  const Expected<ValidDesc> V = validate(*onnxGather(test::tensor(DataType::Float32, {50000, 256}),
                                                     test::tensor(DataType::Int64, {1000}), 0));
  auto HasPermute2 = [](const std::string &Asm) {
    return Asm.find("\tvpermt2d\t") != std::string::npos ||
           Asm.find("\tvpermi2d\t") != std::string::npos;
  };
  const std::string Intel = assemblyOf("sapphirerapids", V);
  EXPECT_NE(Intel.find("\tvmovdqu8\t"), std::string::npos);
  EXPECT_NE(Intel.find(") {%k"), std::string::npos);         // A masked store.
  EXPECT_NE(Intel.find("\tvmovdqa64\t"), std::string::npos); // An aligned one.
  EXPECT_TRUE(HasPermute2(Intel));
  const std::string Zen = assemblyOf("znver4", V);
  EXPECT_EQ(Zen.find(") {%k"), std::string::npos);     // No masked store,
  EXPECT_NE(Zen.find("{%k1} {z}"), std::string::npos); // masked loads,
  EXPECT_TRUE(HasPermute2(Zen));
  const std::string Haswell = assemblyOf("haswell", V);
  EXPECT_NE(Haswell.find("\tvmovups\t"), std::string::npos);
  EXPECT_EQ(Haswell.find("{%k"), std::string::npos);
  EXPECT_FALSE(HasPermute2(Haswell));
}

} // namespace
