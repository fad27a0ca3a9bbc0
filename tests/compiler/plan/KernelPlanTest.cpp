//===- tests/compiler/plan/KernelPlanTest.cpp - Plans, decided by hand ---===//
//
// The plan of every benchmark case, worked out from the rules in
// compiler/plan/ (KernelPlan.cpp, LoopPlan.cpp, GpuPlan.cpp), and the
// edges of those rules.
//
//===----------------------------------------------------------------------===//

#include "compiler/plan/KernelPlan.h"
#include "Cases.h"
#include "gatherjit/Onnx.h"

#include <gtest/gtest.h>

#include <map>

using namespace gatherjit;

namespace {

KernelPlan planOfCase(const std::string &Name, const TargetFacts &Facts = {}) {
  for (const bench::BenchCase &C : bench::benchCases())
    if (Name == C.Name) {
      Expected<ValidDesc> V = bench::benchDesc(C);
      EXPECT_TRUE(V.isOk()) << V.status().message();
      return planKernel(canonicalize(*V), Facts);
    }
  ADD_FAILURE() << "no case " << Name;
  return {};
}

TEST(KernelPlan, EveryBenchmarkCase) {
  // What each case is planned as, one line each (KernelPlan::describe).
  const std::map<std::string, std::string> Expected = {
      // GatherElements along the innermost axis of large indices: streamed
      // in blocks, the next input row prefetched, written non-temporally
      // when the output is over 16 MiB (GE6's 8 MiB is not).
      {"GE1", "row=element stream-indices(block=64,ahead=4096) "
              "prefetch-next-row(block=64,lines<=16) non-temporal"},
      {"GE1_clamp", "row=element stream-indices(block=64,ahead=4096) "
                    "prefetch-next-row(block=64,lines<=16) non-temporal"},
      {"GE4", "row=element stream-indices(block=64,ahead=4096) "
              "prefetch-next-row(block=64,lines<=16) non-temporal"},
      // GE6's rows of 1 MiB are loaded whole before their gathers.
      {"GE6", "row=element stream-indices(block=64,ahead=4096) touch-row"},
      // Along axis 0 the innermost dimension reads the input contiguously;
      // its rows of 16 KiB, from a 64 MiB input, in tiles of 2 KiB.
      {"GE2", "row=element tile-columns=512"},
      // 256 rows per slice gather from one 1 MiB slice of 512 x 512, which
      // they read 8 times a line: loaded whole first.
      {"GE3", "row=element touch-region(elements=262144)"},
      {"GE5", "row=element"},
      // Embedding rows of 3 KiB from a 153 MB table: 4 rows ahead.
      {"G1", "row=block prefetch-rows(ahead=4,bytes=3072) non-temporal"},
      {"G1_clamp", "row=block prefetch-rows(ahead=4,bytes=3072) non-temporal"},
      // Every row reads the same 1024 (G2) or 64 x 32 (G3) indices: G2's
      // rows of 16 KiB (from 16 MiB) one read for each line, loaded whole
      // first; G3's 2048 reads of rows of 1024 elements (from 1 MiB).
      {"G2", "row=shared-indices touch-row"},
      {"G3", "row=shared-indices prefetch-next-row(block=64,lines<=16)"},
      {"G4", "row=element"},
      // 4 KiB blocks of a 16 MiB pool into a 16 MiB output.
      {"GN1", "row=block prefetch-rows(ahead=3,bytes=4096) non-temporal"},
      // Point reads: two-component tuples, one element each.
      {"GN2", "row=element"},
  };
  ASSERT_EQ(Expected.size(), bench::benchCases().size());
  for (const auto &[Name, Plan] : Expected)
    EXPECT_EQ(planOfCase(Name).describe(), Plan) << Name;
}

TEST(KernelPlan, WhereThePrefetcherFollowsRowsOnlyTheirHeadsArePrefetched) {
  TargetFacts Follows;
  Follows.PrefetcherFollowsRows = true;
  // 512 bytes of each 3 KiB or 4 KiB row, as many rows ahead.
  EXPECT_EQ(planOfCase("G1", Follows).describe(),
            "row=block prefetch-rows(ahead=4,bytes=512) non-temporal");
  EXPECT_EQ(planOfCase("GN1", Follows).describe(),
            "row=block prefetch-rows(ahead=3,bytes=512) non-temporal");
  // Nothing else changes.
  for (const char *Name : {"GE1", "GE3", "G2", "GN2"})
    EXPECT_EQ(planOfCase(Name, Follows), planOfCase(Name)) << Name;
}

TEST(KernelPlan, BlockRowsAlignTheirStoresWhereMaskedStoresAreCheap) {
  TargetFacts Masked;
  Masked.MaskedByteStores = true;
  // FLOAT32 rows of Cols from [50000, Cols] by Ids INT64 ids.
  auto Rows = [&](uint64_t Cols, uint64_t Ids, const TargetFacts &F) {
    TensorDesc Table, Idx;
    Table.Sizes = {50000, Cols};
    Idx.Type = DataType::Int64;
    Idx.Sizes = {Ids};
    Expected<GatherDesc> D = onnxGather(Table, Idx, 0);
    Expected<ValidDesc> V = validate(*D);
    EXPECT_TRUE(V.isOk());
    return planKernel(canonicalize(*V), F);
  };
  // From 256-byte rows (64 floats), below the non-temporal size.
  EXPECT_TRUE(Rows(64, 1000, Masked).AlignStores);
  EXPECT_TRUE(Rows(256, 1000, Masked).AlignStores);
  EXPECT_EQ(Rows(256, 1000, Masked).describe(),
            "row=block prefetch-rows(ahead=8,bytes=1024) align-stores");
  EXPECT_FALSE(Rows(63, 1000, Masked).AlignStores);
  EXPECT_FALSE(Rows(256, 1000, {}).AlignStores); // Without the fact.
  // Streamed rows align their own stores (and the suite's block cases).
  EXPECT_TRUE(Rows(256, 100000, Masked).NonTemporal);
  EXPECT_FALSE(Rows(256, 100000, Masked).AlignStores);
  for (const char *Name : {"G1", "GN1", "GE1", "G2"})
    EXPECT_FALSE(planOfCase(Name, Masked).AlignStores) << Name;
}

TEST(KernelPlan, BlockRowsOfAKibibyteOrMoreAlignTheirLoadsWithATwoRegisterPermute) {
  TargetFacts Avx512;
  Avx512.PermuteBytes = 64;
  auto Rows = [&](uint64_t Cols, uint64_t Ids, const TargetFacts &F) {
    TensorDesc Table, Idx;
    Table.Sizes = {50000, Cols};
    Idx.Type = DataType::Int64;
    Idx.Sizes = {Ids};
    Expected<ValidDesc> V = validate(*onnxGather(Table, Idx, 0));
    EXPECT_TRUE(V.isOk());
    return planKernel(canonicalize(*V), F);
  };
  EXPECT_EQ(Rows(256, 1000, Avx512).describe(),
            "row=block prefetch-rows(ahead=8,bytes=1024) align-loads");
  EXPECT_TRUE(Rows(768, 300, Avx512).AlignLoads);
  EXPECT_FALSE(Rows(255, 1000, Avx512).AlignLoads); // Under 1 KiB.
  EXPECT_FALSE(Rows(256, 1000, {}).AlignLoads);     // No permute.
  TargetFacts Narrow = Avx512;
  Narrow.VectorBytes = 32;
  EXPECT_FALSE(Rows(256, 1000, Narrow).AlignLoads); // Vectors other than a line.
  // Streamed rows (over 16 MiB of output) store whole lines already.
  EXPECT_TRUE(Rows(256, 100000, Avx512).NonTemporal);
  EXPECT_FALSE(Rows(256, 100000, Avx512).AlignLoads);
  // Element rows copy no block.
  EXPECT_FALSE(planOfCase("GE1", Avx512).AlignLoads);
}

TEST(KernelPlan, RowsGatheringWordsAreVectorizedWideWhereTheTargetSaysSo) {
  TargetFacts Wide;
  Wide.WideLoopBytes = 64;
  // Element and shared-index rows of 4-byte elements.
  for (const char *Name : {"GE1", "GE2", "GE3", "G2", "G3", "GN2"}) {
    EXPECT_EQ(planOfCase(Name, Wide).LoopVectorBytes, 64u) << Name;
    EXPECT_EQ(planOfCase(Name).LoopVectorBytes, 0u) << Name;
  }
  EXPECT_EQ(planOfCase("GN2", Wide).describe(), "row=element loop-vector=64");
  // Narrower elements (GE4's FLOAT16, GE6's UINT8) and block rows keep
  // the code generator's width.
  for (const char *Name : {"GE4", "GE6", "G1", "GN1"})
    EXPECT_EQ(planOfCase(Name, Wide).LoopVectorBytes, 0u) << Name;
  // A family kernel's element rows too; a GPU's never.
  for (const bench::BenchCase &C : bench::benchCases())
    if (std::string(C.Name) == "GE1") {
      KernelSpec Family = canonicalize(*bench::benchDesc(C));
      Family.Family = true;
      EXPECT_EQ(planKernel(Family, Wide).LoopVectorBytes, 64u);
      Wide.Gpu = true;
      EXPECT_EQ(planKernel(Family, Wide).LoopVectorBytes, 0u);
      EXPECT_EQ(planKernel(canonicalize(*bench::benchDesc(C)), Wide).LoopVectorBytes, 0u);
    }
}

TEST(KernelPlan, NarrowElementsByInt32IndicesFromTheCachesAreVectorizedNarrowWhereTheTargetSaysSo) {
  TargetFacts Narrow;
  Narrow.NarrowLoopBytes = 16;
  Narrow.WideLoopBytes = 64;
  // GatherElements on axis 1 of [Rows, 1024] of Type by Index.
  auto Plan = [&](DataType Type, DataType Index, uint64_t Rows, bool Family = false) {
    TensorDesc Data, Ids;
    Data.Type = Type;
    Data.Sizes = {Rows, 1024};
    Ids.Type = Index;
    Ids.Sizes = {Rows, 1024};
    Expected<ValidDesc> V = validateOnnx({OpKind::GatherElements, Data, Ids, 1}, OobPolicy::Check);
    EXPECT_TRUE(V.isOk()) << V.status().message();
    KernelSpec S = canonicalize(*V);
    if (Family)
      S = *familyOf(S);
    return planKernel(S, Narrow).LoopVectorBytes;
  };
  // Bytes and words by INT32 and UINT32, moving under 64 MiB (twice the
  // output and the indices): 2048 rows of bytes 12 MiB, 8192 rows 48 MiB.
  EXPECT_EQ(Plan(DataType::UInt8, DataType::Int32, 2048), 16u);
  EXPECT_EQ(Plan(DataType::Int8, DataType::UInt32, 8192), 16u);
  EXPECT_EQ(Plan(DataType::Float16, DataType::Int32, 2048), 16u);
  // 96 and 64 MiB (GE4's 128 MiB too): the default width.
  EXPECT_EQ(Plan(DataType::UInt8, DataType::Int32, 16384), 0u);
  EXPECT_EQ(Plan(DataType::Float16, DataType::Int32, 8192), 0u);
  EXPECT_EQ(planOfCase("GE4", Narrow).LoopVectorBytes, 0u);
  // A family kernel, however large its shapes will be.
  EXPECT_EQ(Plan(DataType::UInt8, DataType::Int32, 16384, /*Family=*/true), 16u);
  // 64-bit indices, and wider elements, keep their widths.
  EXPECT_EQ(Plan(DataType::UInt8, DataType::Int64, 2048), 0u);
  EXPECT_EQ(Plan(DataType::Float16, DataType::UInt64, 2048), 0u);
  EXPECT_EQ(Plan(DataType::Float32, DataType::Int32, 2048), 64u);
  // Block rows gather nothing: no loop to widen.
  EXPECT_EQ(planOfCase("GN1", Narrow).LoopVectorBytes, 0u);
  // Where the target does not name a width.
  Narrow.NarrowLoopBytes = 0;
  EXPECT_EQ(Plan(DataType::UInt8, DataType::Int32, 2048), 0u);
}

TEST(KernelPlan, WhereGathersPayFromMemoryOnlyKernelsInTheCachesLoadElementsOneByOne) {
  TargetFacts FromMemory;
  FromMemory.GathersOnlyFromMemory = true;
  // Twice the output and the indices: at least 16 MiB gather (GE1 256 MiB,
  // GE3 96, GE6 80, GN2 24), less loads one by one (G2 12 MiB, G3 8, and
  // the tiny GE5 and G4).
  for (const char *Name : {"GE1", "GE2", "GE3", "GE4", "GE6", "GN2"})
    EXPECT_FALSE(planOfCase(Name, FromMemory).ScalarGathers) << Name;
  for (const char *Name : {"GE5", "G2", "G3", "G4"})
    EXPECT_TRUE(planOfCase(Name, FromMemory).ScalarGathers) << Name;
  EXPECT_EQ(planOfCase("G3", FromMemory).describe(),
            "row=shared-indices prefetch-next-row(block=64,lines<=16) scalar-gathers");
  // Block rows gather nothing; without the fact nothing changes.
  for (const char *Name : {"G1", "GN1"})
    EXPECT_FALSE(planOfCase(Name, FromMemory).ScalarGathers) << Name;
  for (const bench::BenchCase &C : bench::benchCases())
    EXPECT_FALSE(planOfCase(C.Name).ScalarGathers) << C.Name;
  // A family kernel (any sizes) loads one by one; a GPU never.
  for (const bench::BenchCase &C : bench::benchCases())
    if (std::string(C.Name) == "GE1") {
      KernelSpec Family = canonicalize(*bench::benchDesc(C));
      Family.Family = true;
      EXPECT_TRUE(planKernel(Family, FromMemory).ScalarGathers);
      FromMemory.Gpu = true;
      EXPECT_FALSE(planKernel(Family, FromMemory).ScalarGathers);
    }
}

TEST(KernelPlan, WhereGathersLoseBeyondTheCoreRowsFromTablesLargerThanItsCachesLoadOneByOne) {
  TargetFacts Beyond;
  Beyond.GathersLoseBeyondCore = true;
  auto Spec = [](OpKind Op, DataType Data, std::vector<uint64_t> DataShape, DataType Ids,
                 std::vector<uint64_t> IdsShape, int64_t Axis) {
    TensorDesc D, I;
    D.Type = Data;
    D.Sizes = std::move(DataShape);
    I.Type = Ids;
    I.Sizes = std::move(IdsShape);
    Expected<ValidDesc> V = validateOnnx({Op, D, I, Axis}, OobPolicy::Check);
    EXPECT_TRUE(V.isOk()) << V.status().message();
    return V ? canonicalize(*V) : KernelSpec{};
  };
  auto Plan = [&](OpKind Op, DataType Data, std::vector<uint64_t> DataShape, DataType Ids,
                  std::vector<uint64_t> IdsShape, int64_t Axis) {
    return planKernel(Spec(Op, Data, std::move(DataShape), Ids, std::move(IdsShape), Axis), Beyond);
  };
  using DT = DataType;
  // A 1-D take from a table of 4 MiB or more (FLOAT32 [1M], FLOAT64
  // [512K] by INT32) loads one by one; from 4 MiB less a line it gathers.
  EXPECT_TRUE(Plan(OpKind::Gather, DT::Float32, {1 << 20}, DT::Int64, {4096}, 0).ScalarGathers);
  EXPECT_TRUE(Plan(OpKind::Gather, DT::Float64, {1 << 19}, DT::Int32, {4096}, 0).ScalarGathers);
  EXPECT_FALSE(
      Plan(OpKind::Gather, DT::Float32, {(1 << 20) - 16}, DT::Int64, {4096}, 0).ScalarGathers);
  EXPECT_EQ(Plan(OpKind::Gather, DT::Float32, {1 << 20}, DT::Int64, {4096}, 0).describe(),
            "row=element scalar-gathers");
  // Rows of 4 MiB along a contiguous axis do; along a strided axis, or by
  // GatherND's tuples, they gather.
  EXPECT_TRUE(
      Plan(OpKind::GatherElements, DT::Float32, {4, 1 << 20}, DT::Int64, {4, 64}, 1).ScalarGathers);
  EXPECT_FALSE(
      Plan(OpKind::GatherElements, DT::Float32, {1 << 20, 4}, DT::Int64, {64, 4}, 0).ScalarGathers);
  EXPECT_FALSE(
      Plan(OpKind::GatherND, DT::Float32, {1024, 1024}, DT::Int64, {4096, 2}, 0).ScalarGathers);
  // From 12 MiB such rows run a loop of one element an iteration instead
  // (FLOAT32 [3M], FLOAT64 [1.5M] by INT32, rows of 12 MiB), and only it.
  for (const KernelPlan &P :
       {Plan(OpKind::Gather, DT::Float32, {3 << 20}, DT::Int64, {4096}, 0),
        Plan(OpKind::Gather, DT::Float64, {3 << 19}, DT::Int32, {4096}, 0),
        Plan(OpKind::GatherElements, DT::Float32, {4, 3 << 20}, DT::Int64, {4, 64}, 1)}) {
    EXPECT_TRUE(P.ScalarLoop) << P.describe();
    EXPECT_FALSE(P.ScalarGathers) << P.describe();
  }
  // Each prefetches the element 128 iterations ahead picks.
  EXPECT_EQ(Plan(OpKind::Gather, DT::Float32, {3 << 20}, DT::Int64, {4096}, 0).describe(),
            "row=element prefetch-rows(ahead=128,bytes=4) scalar-loop");
  EXPECT_EQ(Plan(OpKind::Gather, DT::Float64, {3 << 19}, DT::Int32, {4096}, 0).describe(),
            "row=element prefetch-rows(ahead=128,bytes=8) scalar-loop");
  EXPECT_FALSE(
      Plan(OpKind::Gather, DT::Float32, {(3 << 20) - 16}, DT::Int64, {4096}, 0).ScalarLoop);
  EXPECT_EQ(
      Plan(OpKind::Gather, DT::Float32, {(3 << 20) - 16}, DT::Int64, {4096}, 0).PrefetchRowsAhead,
      0u);
  // Where it streams at most 32 MiB, from a table of any size: 2M ids
  // (32 MiB) from 128 MiB, 16 rows of 12 MiB (192 MiB), 1M ids from 1 GiB;
  // 4M ids (64 MiB) load into vectors.
  for (const KernelPlan &P :
       {Plan(OpKind::Gather, DT::Float32, {32 << 20}, DT::Int64, {2 << 20}, 0),
        Plan(OpKind::GatherElements, DT::Float32, {16, 3 << 20}, DT::Int64, {16, 64}, 1),
        Plan(OpKind::Gather, DT::Float32, {256 << 20}, DT::Int64, {1 << 20}, 0)})
    EXPECT_TRUE(P.ScalarLoop) << P.describe();
  const KernelPlan Streams = Plan(OpKind::Gather, DT::Float32, {32 << 20}, DT::Int64, {4 << 20}, 0);
  EXPECT_FALSE(Streams.ScalarLoop) << Streams.describe();
  EXPECT_TRUE(Streams.ScalarGathers) << Streams.describe();
  EXPECT_EQ(Streams.PrefetchRowsAhead, 0u);
  EXPECT_FALSE(
      Plan(OpKind::GatherElements, DT::Float32, {3 << 20, 4}, DT::Int64, {64, 4}, 0).ScalarLoop);
  EXPECT_FALSE(
      Plan(OpKind::GatherND, DT::Float32, {4096, 1024}, DT::Int64, {4096, 2}, 0).ScalarLoop);
  // Rows whose indices stream (a memory strategy of their own) keep it
  // and gather: 1M ids a row of 16 MiB.
  const KernelPlan Streamed =
      Plan(OpKind::GatherElements, DT::Float32, {2, 4 << 20}, DT::Int64, {2, 1 << 20}, 1);
  EXPECT_TRUE(Streamed.StreamIndices) << Streamed.describe();
  EXPECT_FALSE(Streamed.ScalarLoop) << Streamed.describe();
  // No case of the suite's rows reads such a table; without the fact
  // nothing changes; a family kernel's shapes (small until specialized)
  // and a GPU's kernels gather.
  for (const bench::BenchCase &C : bench::benchCases()) {
    EXPECT_FALSE(planOfCase(C.Name, Beyond).ScalarGathers) << C.Name;
    EXPECT_FALSE(planOfCase(C.Name, Beyond).ScalarLoop) << C.Name;
  }
  Beyond.GathersLoseBeyondCore = false;
  EXPECT_FALSE(Plan(OpKind::Gather, DT::Float32, {1 << 20}, DT::Int64, {4096}, 0).ScalarGathers);
  EXPECT_FALSE(Plan(OpKind::Gather, DT::Float32, {3 << 20}, DT::Int64, {4096}, 0).ScalarLoop);
  Beyond.GathersLoseBeyondCore = true;
  for (uint64_t Elements : {1u << 20, 3u << 20}) {
    KernelSpec Family = Spec(OpKind::Gather, DT::Float32, {Elements}, DT::Int64, {4096}, 0);
    Family.Family = true;
    EXPECT_FALSE(planKernel(Family, Beyond).ScalarGathers);
    EXPECT_FALSE(planKernel(Family, Beyond).ScalarLoop);
  }
  Beyond.Gpu = true;
  EXPECT_FALSE(Plan(OpKind::Gather, DT::Float32, {1 << 20}, DT::Int64, {4096}, 0).ScalarGathers);
  EXPECT_FALSE(Plan(OpKind::Gather, DT::Float32, {3 << 20}, DT::Int64, {4096}, 0).ScalarLoop);
}

TEST(KernelPlan, RowsReadSparselyFromAnInputTheLastLevelCacheHoldsDoNotStream) {
  // FLOAT32 rows of 1 MiB, each read by ids of its own: 32 or 64 rows (32
  // or 64 MiB of input) by 16384 ids a row (one a line), 65536 (four) or
  // 262144 (16).
  auto Spec = [](uint64_t Rows, uint64_t Ids) {
    TensorDesc D, I;
    D.Type = DataType::Float32;
    D.Sizes = {Rows, 1 << 18};
    I.Type = DataType::Int64;
    I.Sizes = {Rows, Ids};
    Expected<ValidDesc> V = validateOnnx({OpKind::GatherElements, D, I, 1}, OobPolicy::Check);
    EXPECT_TRUE(V.isOk()) << V.status().message();
    return V ? canonicalize(*V) : KernelSpec{};
  };
  auto Streamed = [](const KernelPlan &P) {
    return P.StreamIndices && P.TouchInputRow && !P.PrefetchNextInputRow;
  };
  auto Plain = [](const KernelPlan &P) {
    return !P.StreamIndices && !P.TouchInputRow && !P.PrefetchNextInputRow;
  };
  // Where the last-level cache is not known, as before: streamed and
  // loaded first.
  TargetFacts Facts;
  for (uint64_t Ids : {1 << 14, 1 << 16, 1 << 18}) {
    const KernelPlan P = planKernel(Spec(32, Ids), Facts);
    EXPECT_TRUE(Streamed(P)) << P.describe();
  }
  // A cache of 480 MiB holds the input with the indices and output: rows
  // read once or four times a line run plainly, 16 times still stream.
  Facts.LastLevelCacheBytes = 480u << 20;
  for (uint64_t Ids : {1 << 14, 1 << 16}) {
    const KernelPlan P = planKernel(Spec(32, Ids), Facts);
    EXPECT_TRUE(Plain(P)) << P.describe();
  }
  EXPECT_TRUE(Streamed(planKernel(Spec(32, 1 << 18), Facts)));
  // One of 64 MiB holds the 32 rows' 32 MiB, 4 MiB of indices and 2 MiB
  // of output (counted twice: written, then read), but not the 64 rows'.
  Facts.LastLevelCacheBytes = 64u << 20;
  EXPECT_TRUE(Plain(planKernel(Spec(32, 1 << 14), Facts)));
  EXPECT_TRUE(Streamed(planKernel(Spec(64, 1 << 14), Facts)));
  // The suite's rows stream as before (GE1 16 ids a line, GE4 32, GE6 64).
  Facts.LastLevelCacheBytes = 480u << 20;
  for (const char *Name : {"GE1", "GE4", "GE6"})
    EXPECT_EQ(planOfCase(Name, Facts), planOfCase(Name)) << Name;
}

TEST(KernelPlan, RowsSharingIndicesReadSparselyFromTheLastLevelCacheAreNotLoadedFirst) {
  // Gather along axis 1 of FLOAT32 [Rows, Cols] by INT64 ids: every row
  // reads the same columns.
  auto Spec = [](uint64_t Rows, uint64_t Cols, uint64_t Ids) {
    TensorDesc D, I;
    D.Type = DataType::Float32;
    D.Sizes = {Rows, Cols};
    I.Type = DataType::Int64;
    I.Sizes = {Ids};
    Expected<ValidDesc> V = validateOnnx({OpKind::Gather, D, I, 1}, OobPolicy::Check);
    EXPECT_TRUE(V.isOk()) << V.status().message();
    return V ? canonicalize(*V) : KernelSpec{};
  };
  TargetFacts Unknown, Holds, Small;
  Holds.LastLevelCacheBytes = 480u << 20;
  Small.LastLevelCacheBytes = 64u << 20;
  // [512, 32768] by 1024 (one read for two lines, 64 MiB): loaded first
  // where the cache is not known or too small (64 MiB of input and 4 MiB
  // of output), plainly where it holds them.
  const KernelSpec Half = Spec(512, 32768, 1024);
  EXPECT_TRUE(planKernel(Half, Unknown).TouchInputRow);
  EXPECT_TRUE(planKernel(Half, Small).TouchInputRow);
  const KernelPlan Plain = planKernel(Half, Holds);
  EXPECT_FALSE(Plain.TouchInputRow || Plain.PrefetchNextInputRow) << Plain.describe();
  // [64, 100000] by 1000 (a read for six lines) prefetches each next row
  // unless the cache holds it.
  const KernelSpec Sparse = Spec(64, 100000, 1000);
  EXPECT_EQ(planKernel(Sparse, Unknown).Row, RowKind::SharedIndices);
  EXPECT_TRUE(planKernel(Sparse, Unknown).PrefetchNextInputRow);
  EXPECT_FALSE(planKernel(Sparse, Holds).PrefetchNextInputRow);
  EXPECT_FALSE(planKernel(Sparse, Holds).TouchInputRow);
  // Two reads a line or more keep their rows loaded first: [512, 32768]
  // by 4096 and 8192, and every case of the suite keeps its plan.
  for (uint64_t Ids : {4096, 8192})
    EXPECT_TRUE(planKernel(Spec(512, 32768, Ids), Holds).TouchInputRow) << Ids;
  for (const bench::BenchCase &C : bench::benchCases())
    EXPECT_EQ(planOfCase(C.Name, Holds).describe(), planOfCase(C.Name).describe()) << C.Name;
}

TEST(KernelPlan, AGpuTargetGetsNoCpuMemoryStrategies) {
  TargetFacts Gpu;
  Gpu.Gpu = true;
  for (const char *Name : {"GE1", "GE3", "G1", "G2", "GN1"}) {
    const KernelPlan P = planOfCase(Name, Gpu);
    // Element rows stay element rows and block rows block rows; rows that
    // share their indices read them per element (no table of offsets).
    const RowKind Cpu = planOfCase(Name).Row;
    EXPECT_EQ(P.Row, Cpu == RowKind::SharedIndices ? RowKind::Element : Cpu) << Name;
    EXPECT_FALSE(P.StreamIndices || P.PrefetchNextInputRow || P.PrefetchNextRegion ||
                 P.PrefetchRowsAhead || P.NonTemporal)
        << Name << ": " << P.describe();
  }
}

KernelSpec rows(uint64_t Rows, uint64_t Cols, unsigned ElemBytes = 4) {
  // GatherElements along the inner axis of a packed [Rows, Cols], INT64.
  KernelSpec S;
  S.ElemBytes = S.OutElemBytes = ElemBytes;
  S.Rank = 2;
  S.Sizes = {Rows, Cols};
  S.OutStride = {Cols, 1};
  S.IdxStride = {Cols, 1};
  S.PosStride = {Cols, 1};
  S.InStride = {Cols, 0};
  S.AxisSize[0] = Cols;
  S.AxisStride[0] = 1;
  return S;
}

TEST(KernelPlan, GpuPositionsIn32BitsBelow2To31Elements) {
  TargetFacts Gpu;
  Gpu.Gpu = true;
  // GatherElements on axis 0 of [Rows, 32] (no staged rows or strips:
  // the threads count positions).
  auto Columns = [](uint64_t Rows) {
    KernelSpec S = rows(Rows, 32);
    S.InStride = {0, 1};
    S.AxisStride[0] = 32;
    S.AxisSize[0] = 2000;
    return S;
  };
  const KernelPlan Under = planKernel(Columns((uint64_t(1) << 26) - 1), Gpu);
  EXPECT_TRUE(Under.Index32);
  EXPECT_NE(Under.describe().find(",index32)"), std::string::npos) << Under.describe();
  EXPECT_FALSE(planKernel(Columns(uint64_t(1) << 26), Gpu).Index32); // 2^31 elements.
  EXPECT_FALSE(planKernel(Columns(100)).Index32);                    // Not a GPU.
  KernelSpec Family = Columns(100);
  Family.Family = true;
  EXPECT_FALSE(planKernel(Family, Gpu).Index32);
}

TEST(KernelPlan, GpuRowsReadAlongInputRowsInBlocksOf1024AndTiles) {
  TargetFacts Gpu;
  Gpu.Gpu = true;
  // GatherElements on axis 0 of [100, Cols]: threads read along the input
  // rows their indices pick, in blocks of 1024, taking tiles of 32 columns
  // (the last one partly filled) where a row has more than one tile (an
  // axis of 2000 rows: strips of its rows would move more bytes than the
  // 100 output rows read).
  auto Columns = [](uint64_t Cols) {
    KernelSpec S = rows(100, Cols);
    S.InStride = {0, 1};
    S.AxisStride[0] = Cols;
    S.AxisSize[0] = 2000;
    return S;
  };
  for (uint64_t Cols : {64u, 77u, 4001u}) {
    const KernelPlan P = planKernel(Columns(Cols), Gpu);
    EXPECT_EQ(P.ThreadsPerBlock, 1024u) << Cols;
    EXPECT_EQ(P.TileColumns, 32u) << Cols;
    const uint64_t Filled = (Cols + 31) / 32 * 32;
    EXPECT_EQ(tiledGridElements(Columns(Cols), P.TileColumns), 100 * Filled);
    EXPECT_EQ(P.Blocks, gridBlocks(100 * Filled, 1024, 8192)) << Cols;
  }
  // One tile's worth of columns: rows, still in blocks of 1024.
  EXPECT_EQ(planKernel(Columns(32), Gpu).TileColumns, 0u);
  EXPECT_EQ(planKernel(Columns(32), Gpu).ThreadsPerBlock, 1024u);
  EXPECT_EQ(tiledGridElements(Columns(77), 0), 7700u);
  // Along the last axis (each row reads its own input row): 256 threads.
  EXPECT_EQ(planKernel(rows(100, 5000), Gpu).ThreadsPerBlock, 256u);
  EXPECT_EQ(planKernel(rows(100, 5000), Gpu).TileColumns, 0u);
}

TEST(KernelPlan, GpuRowsReadingOneRegionEachStageItsStrips) {
  TargetFacts Gpu;
  Gpu.Gpu = true;
  // GatherElements on axis 1 of [4, Axis, Cols] into [4, Rows, Cols]:
  // every output row of an outer position reads one region of Axis input
  // rows; strips of 32 bytes of every region row, where they fit in 32
  // KiB and move no more bytes than a sector per output row and column.
  auto Along = [](uint64_t Axis, uint64_t Rows, uint64_t Cols, DataType Type) {
    TensorDesc Data, Ids;
    Data.Type = Type;
    Data.Sizes = {4, Axis, Cols};
    Ids.Type = DataType::Int32;
    Ids.Sizes = {4, Rows, Cols};
    Expected<ValidDesc> V = validateOnnx({OpKind::GatherElements, Data, Ids, 1}, OobPolicy::Check);
    EXPECT_TRUE(V.isOk()) << V.status().message();
    return canonicalize(*V);
  };
  // GE3's rows: 512 x 8 FLOAT32 columns (16 KiB), 4 x 64 strips.
  const KernelPlan GE3 = planKernel(Along(512, 256, 512, DataType::Float32), Gpu);
  EXPECT_EQ(GE3.describe(), "row=element grid(blocks=256,threads=256,staged-strip=8)");
  EXPECT_EQ(stagedStrips(Along(512, 256, 512, DataType::Float32), 8), 256u);
  EXPECT_EQ(stagedStrips(Along(512, 256, 515, DataType::Float32), 8), 4u * 65);
  EXPECT_EQ(planKernel(Along(1024, 256, 512, DataType::Float32), Gpu).StagedStripColumns, 8u);
  EXPECT_EQ(planKernel(Along(1025, 256, 512, DataType::Float32), Gpu).StagedStripColumns, 0u);
  EXPECT_EQ(planKernel(Along(512, 256, 512, DataType::UInt8), Gpu).StagedStripColumns, 32u);
  EXPECT_EQ(planKernel(Along(512, 256, 512, DataType::Float64), Gpu).StagedStripColumns, 4u);
  // Rows of 8 columns: strips of 8; of 7, none.
  EXPECT_EQ(planKernel(Along(512, 256, 8, DataType::Float32), Gpu).StagedStripColumns, 8u);
  EXPECT_EQ(planKernel(Along(512, 256, 7, DataType::Float32), Gpu).StagedStripColumns, 0u);
  // 8 output rows read too few sectors of a 512-row region: tiles.
  const KernelPlan Few = planKernel(Along(512, 8, 512, DataType::Float32), Gpu);
  EXPECT_EQ(Few.StagedStripColumns, 0u);
  EXPECT_EQ(Few.TileColumns, 32u);
  // Not on a CPU.
  EXPECT_EQ(planKernel(Along(512, 256, 512, DataType::Float32)).StagedStripColumns, 0u);
}

TEST(KernelPlan, CpuRowsReadAlongLongInputRowsOfALargeInputInTiles) {
  // GatherElements on axis 0 of [Axis, Cols] into [100, Cols]: tiles of
  // 2 KiB of columns where the input's rows are longer than a 4 KiB page
  // and the input is larger than 8 MiB.
  auto Along = [](uint64_t Axis, uint64_t Cols, unsigned ElemBytes) {
    KernelSpec S = rows(100, Cols, ElemBytes);
    S.InStride = {0, 1};
    S.AxisStride[0] = Cols;
    S.AxisSize[0] = Axis;
    return S;
  };
  EXPECT_EQ(planKernel(Along(4096, 4096, 4)).TileColumns, 512u);
  EXPECT_EQ(planKernel(Along(4096, 4096, 4)).describe(), "row=element tile-columns=512");
  EXPECT_EQ(planKernel(Along(2100, 5000, 1)).TileColumns, 2048u);
  EXPECT_EQ(planKernel(Along(1000, 3000, 8)).TileColumns, 256u);
  // Rows of one page (4 KiB of FLOAT32), an input of 8 MiB or less, a row
  // of one tile: whole rows.
  EXPECT_EQ(planKernel(Along(16384, 1024, 4)).TileColumns, 0u);
  EXPECT_EQ(planKernel(Along(2047, 1025, 4)).TileColumns, 512u); // 2047 x 4100 bytes.
  EXPECT_EQ(planKernel(Along(2046, 1025, 4)).TileColumns, 0u);   // 8 MiB less 8 bytes.
  EXPECT_EQ(planKernel(Along(4096, 512, 4)).TileColumns, 0u);
  // Along the last axis, or a family's: whole rows.
  EXPECT_EQ(planKernel(rows(4096, 4096)).TileColumns, 0u);
  KernelSpec Family = Along(4096, 4096, 4);
  Family.Family = true;
  EXPECT_EQ(planKernel(Family).TileColumns, 0u);
}

TEST(KernelPlan, StreamingThresholds) {
  // 4 MiB of INT64 indices in rows of at least 256.
  EXPECT_TRUE(planKernel(rows(2048, 256)).StreamIndices);   // 4 MiB
  EXPECT_FALSE(planKernel(rows(2047, 256)).StreamIndices);  // Just under.
  EXPECT_FALSE(planKernel(rows(65536, 255)).StreamIndices); // Rows too short.
  KernelSpec Tuple = rows(2048, 256);
  Tuple.TupleSize = 2;
  Tuple.AxisSize[1] = 4;
  Tuple.AxisStride[1] = 256;
  EXPECT_FALSE(planKernel(Tuple).StreamIndices); // GatherND's tuples are not streamed.
  // Non-temporal from 16 MiB of output, for integer-sized elements only.
  EXPECT_TRUE(planKernel(rows(4096, 1024)).NonTemporal);
  EXPECT_FALSE(planKernel(rows(4095, 1024)).NonTemporal);
  EXPECT_FALSE(planKernel(rows(4096, 1024, 3)).NonTemporal);
}

TEST(KernelPlan, RowsSharingTheirIndicesLoadTheirInputRowFirstWhereTheyReadMostOfItsLines) {
  // FLOAT32 [Rows, Cols] gathered along axis 1 by Ids indices shared by
  // every row: one read for every two lines (Ids * 32 >= Cols) up to a third
  // of the row's elements, from an input of 1 MiB or more.
  auto Plan = [](uint64_t Rows, uint64_t Cols, uint64_t Ids) {
    Expected<GatherDesc> D = onnxGather(bench::benchTensor(DataType::Float32, {Rows, Cols}),
                                        bench::benchTensor(DataType::Int64, {Ids}), 1);
    EXPECT_TRUE(D.isOk());
    Expected<ValidDesc> V = validate(*D);
    EXPECT_TRUE(V.isOk());
    return planKernel(canonicalize(*V));
  };
  EXPECT_TRUE(Plan(512, 32768, 8192).TouchInputRow); // A dask block's take of columns.
  EXPECT_FALSE(Plan(512, 32768, 8192).PrefetchNextInputRow);
  EXPECT_TRUE(Plan(512, 32768, 1024).TouchInputRow);  // One read for two lines.
  EXPECT_FALSE(Plan(512, 32768, 1023).TouchInputRow); // Fewer.
  EXPECT_TRUE(Plan(512, 32768, 1023).PrefetchNextInputRow);
  EXPECT_TRUE(Plan(512, 32769, 10923).TouchInputRow);  // A third of the elements.
  EXPECT_FALSE(Plan(512, 32769, 10924).TouchInputRow); // More.
  EXPECT_TRUE(Plan(64, 4096, 1024).TouchInputRow);     // 1 MiB.
  EXPECT_FALSE(Plan(63, 4096, 1024).TouchInputRow);    // Less.
  // GatherElements with streamed indices of its own per row: rows of 1 MiB
  // or more, read at least once for every two lines.
  EXPECT_FALSE(planKernel(rows(2048, 256)).TouchInputRow);
  EXPECT_TRUE(planKernel(rows(8, 1 << 20, 1)).TouchInputRow); // GE6
  EXPECT_FALSE(planKernel(rows(8, 1 << 20, 1)).PrefetchNextInputRow);
  EXPECT_TRUE(planKernel(rows(8, 1 << 18)).TouchInputRow);
  EXPECT_FALSE(planKernel(rows(16, (1 << 18) - 1)).TouchInputRow);
  EXPECT_TRUE(planKernel(rows(16, (1 << 18) - 1)).PrefetchNextInputRow);
  KernelSpec Sparse = rows(128, 1 << 18); // 1 MiB rows read by 8191 indices each
  Sparse.Sizes[1] = 8191;
  ASSERT_TRUE(planKernel(Sparse).StreamIndices);
  EXPECT_FALSE(planKernel(Sparse).TouchInputRow);
  Sparse.Sizes[1] = 8192; // One for every two lines.
  EXPECT_TRUE(planKernel(Sparse).TouchInputRow);
}

TEST(KernelPlan, ShortInputRowsArePermutedWhereTheTargetPermutes) {
  TargetFacts Avx512;
  Avx512.PermuteBytes = 64;
  // [100, 64] FLOAT32 gathered by [100, 64]: the row is four registers.
  KernelPlan P = planKernel(rows(100, 64), Avx512);
  EXPECT_EQ(P.Row, RowKind::Permute);
  EXPECT_EQ(P.PermuteRegisters, 4u);
  EXPECT_EQ(P.PermuteBytes, 64u);
  EXPECT_EQ(P.describe(), "row=permute(registers=4)");
  EXPECT_EQ(planKernel(rows(100, 16), Avx512).PermuteRegisters, 1u);
  EXPECT_EQ(planKernel(rows(100, 17), Avx512).PermuteRegisters, 2u);
  EXPECT_EQ(planKernel(rows(100, 40), Avx512).PermuteRegisters, 3u);
  EXPECT_EQ(planKernel(rows(100, 32, 8), Avx512).PermuteRegisters, 4u);
  // Not: a row over four registers, 2-byte elements, a target without
  // permutes, output rows under 4 elements, a GPU.
  EXPECT_EQ(planKernel(rows(100, 65), Avx512).Row, RowKind::Element);
  EXPECT_EQ(planKernel(rows(100, 33, 8), Avx512).Row, RowKind::Element);
  EXPECT_EQ(planKernel(rows(100, 64, 2), Avx512).Row, RowKind::Element);
  EXPECT_EQ(planKernel(rows(100, 64)).Row, RowKind::Element);
  KernelSpec Short = rows(100, 64);
  Short.Sizes[1] = 3;
  EXPECT_EQ(planKernel(Short, Avx512).Row, RowKind::Element);
  Short.Sizes[1] = 4;
  EXPECT_EQ(planKernel(Short, Avx512).Row, RowKind::Permute);
  TargetFacts Gpu;
  Gpu.Gpu = true;
  EXPECT_NE(planKernel(rows(100, 64), Gpu).Row, RowKind::Permute);
  // Large: permuted rows need neither streamed indices nor streamed stores.
  P = planKernel(rows(1 << 16, 64), Avx512);
  EXPECT_EQ(P.Row, RowKind::Permute);
  EXPECT_FALSE(P.StreamIndices || P.NonTemporal);
}

TEST(KernelPlan, DegenerateSpecs) {
  KernelSpec One; // Rank 0: a single element.
  One.ElemBytes = One.OutElemBytes = 4;
  One.AxisSize[0] = 3;
  EXPECT_EQ(planKernel(One).describe(), "row=element");
  // An empty axis: nothing is read, so no offset table and no prefetch.
  KernelSpec Empty = rows(8, 16);
  Empty.IdxStride = {0, 1};
  Empty.PosStride = {0, 1};
  EXPECT_EQ(planKernel(rows(8, 16)).Row, RowKind::Element);
  EXPECT_EQ(planKernel(Empty).Row, RowKind::SharedIndices);
  Empty.AxisSize[0] = 0;
  EXPECT_EQ(planKernel(Empty).Row, RowKind::Element);
  EXPECT_EQ(planKernel(rows(8, 16)).MaxStraightLoop, 4u);
}

} // namespace
