//===- tests/runtime/TierTest.cpp - Generic first, specialized when hot --===//
//
// The adaptive mode (RuntimeOptions::Specialization): a new shape runs the
// generic loop without compiling anything, a hot one moves to its
// specialized kernel on the background thread while handles run it, a call
// too large for the generic loop is specialized at compile(), and the cache
// is bounded by bytes. Every tier must give the interpreter's bytes and
// first error.
//
//===----------------------------------------------------------------------===//

#include "RandomCase.h"
#include "RuntimeTestUtil.h"
#include "runtime/TierPlan.h"

#include <gtest/gtest.h>

#include <atomic>
#include <chrono>
#include <thread>

using namespace gatherjit;
using namespace gatherjit::test;

namespace {

std::unique_ptr<Runtime> runtimeIn(Specialize Mode, uint64_t CacheBytes = uint64_t(64) << 20) {
  RuntimeOptions O;
  O.Specialization = Mode;
  O.CacheBytes = CacheBytes;
  O.Threads = 1;
  Expected<std::unique_ptr<Runtime>> RT = Runtime::create(O);
  EXPECT_TRUE(RT.isOk()) << RT.status().message();
  return RT ? RT.take() : nullptr;
}

bool waitForTier(const Kernel &K, KernelTier Tier) {
  const auto Deadline = std::chrono::steady_clock::now() + std::chrono::seconds(60);
  while (K.tier() != Tier && std::chrono::steady_clock::now() < Deadline)
    std::this_thread::sleep_for(std::chrono::milliseconds(1));
  return K.tier() == Tier;
}

/// A GatherElements of \p Rows x \p Cols FLOAT32 whose indices are Cols
/// wide, as a descriptor (nothing allocated).
ValidDesc geOf(uint64_t Rows, uint64_t Cols, DataType Index = DataType::Int64) {
  GatherElementsDesc D{tensor(DataType::Float32, {Rows, Cols}), tensor(Index, {Rows, Cols}),
                       tensor(DataType::Float32, {Rows, Cols}), 1};
  return *validate(D);
}

} // namespace

TEST(Runtime, ANewShapeRunsTheGenericLoopWithoutCompiling) {
  auto RT = runtimeIn(Specialize::Adaptive);
  GeCase C(20, 16);
  Expected<Kernel> K = RT->compile(C.Desc);
  ASSERT_TRUE(K.isOk()) << K.status().message();
  EXPECT_EQ(K->tier(), KernelTier::Generic);
  EXPECT_EQ(K->compileTimes().total(), 0.0);
  EXPECT_TRUE(C.agrees(*K));
  GeCase Bad = C;
  Bad.Idx[101] = 16;
  Bad.Idx[200] = -17;
  EXPECT_TRUE(Bad.agrees(*K)) << "the first bad index, as the interpreter reports it";
  const CacheStats S = RT->stats();
  EXPECT_EQ(S.Misses, 1u);
  EXPECT_EQ(S.CompileMs, 0.0);
  EXPECT_EQ(S.LiveKernels, 0u) << "nothing was linked";
  EXPECT_EQ(S.GenericEntries, 1u);
  EXPECT_EQ(S.SpecializedAtCompile, 0u);
}

TEST(Runtime, AHotShapeIsSpecializedInTheBackgroundWhileThreadsRunIt) {
  auto RT = runtimeIn(Specialize::Adaptive);
  GeCase C(64, 32);
  Expected<Kernel> K = RT->compile(C.Desc);
  ASSERT_TRUE(K.isOk());
  ASSERT_EQ(K->tier(), KernelTier::Generic);
  // Two threads run it across the switch; every run must stay right.
  std::atomic<int> Failures{0};
  std::vector<std::thread> Threads;
  for (int T = 0; T < 2; ++T)
    Threads.emplace_back([&] {
      for (int I = 0; I < 200; ++I)
        if (!C.agrees(*K))
          ++Failures;
    });
  for (std::thread &T : Threads)
    T.join();
  EXPECT_EQ(Failures.load(), 0);
  ASSERT_TRUE(waitForTier(*K, KernelTier::Specialized));
  EXPECT_EQ(K->optLevel(), OptLevel::O2) << "straight to the runtime's level";
  EXPECT_EQ(RT->stats().Specializations, 1u);
  EXPECT_EQ(RT->stats().GenericEntries, 0u);
  EXPECT_EQ(RT->stats().Misses, 1u);
  EXPECT_TRUE(C.agrees(*K));
  GeCase Bad = C;
  Bad.Idx[1000] = 32;
  EXPECT_TRUE(Bad.agrees(*K));
  // Another handle of the shape finds the specialized code.
  Expected<Kernel> Again = RT->compile(C.Desc);
  ASSERT_TRUE(Again.isOk());
  EXPECT_TRUE(Again->cacheHit());
  EXPECT_EQ(Again->tier(), KernelTier::Specialized);
}

TEST(Runtime, AShapeBecomesHotAfterAFewRunsOrEnoughBytes) {
  // Small outputs wait for HotRuns runs; one call of HotBytes or more is
  // enough by itself.
  EXPECT_EQ(specializeAfterRuns(canonicalize(geOf(4, 4))), HotRuns);
  EXPECT_EQ(specializeAfterRuns(canonicalize(geOf(1024, 256))), 1u); // 1 MiB
  EXPECT_EQ(specializeAfterRuns(canonicalize(geOf(512, 256))), 2u);  // 512 KiB
  // Rows copied whole lose 400 ps a row and 10 ps a byte to the generic
  // loop: specialized only once they have lost an O2 compile's 9.4 ms
  // (here 1024 rows of 1 KiB a run, 10.90 us lost: 863 runs; then 4096
  // rows of 128 bytes, 6.88 us: 1367 runs).
  Expected<GatherDesc> Rows =
      onnxGather(tensor(DataType::Float32, {5000, 256}), tensor(DataType::Int64, {1024}), 0);
  ASSERT_TRUE(Rows.isOk());
  EXPECT_EQ(specializeAfterRuns(canonicalize(*validate(*Rows))), 863u);
  Expected<GatherDesc> Short =
      onnxGather(tensor(DataType::Float16, {100000, 64}), tensor(DataType::Int32, {4096}), 0);
  ASSERT_TRUE(Short.isOk());
  EXPECT_EQ(specializeAfterRuns(canonicalize(*validate(*Short))), 1367u);
  auto RT = runtimeIn(Specialize::Adaptive);
  GeCase C(8, 8);
  Expected<Kernel> K = RT->compile(C.Desc);
  ASSERT_TRUE(K.isOk());
  for (uint64_t I = 0; I + 1 < HotRuns; ++I)
    ASSERT_TRUE(C.agrees(*K));
  RT->drainBackground();
  EXPECT_EQ(K->tier(), KernelTier::Generic) << "not hot yet";
  ASSERT_TRUE(C.agrees(*K));
  RT->drainBackground();
  EXPECT_EQ(K->tier(), KernelTier::Specialized);
}

TEST(Runtime, ACallTooLargeForTheGenericLoopIsSpecializedAtCompile) {
  // 4096 x 4096 FLOAT32 element rows (the suite's GE1): 64 MiB of output
  // lose more to the generic loop in one call than an O2 compile costs.
  const KernelSpec Large = canonicalize(geOf(4096, 4096));
  ASSERT_TRUE(specializeAtCompile(Large));
  EXPECT_FALSE(specializeAtCompile(canonicalize(geOf(256, 256))));
  // The same bytes as embedding rows (one memcpy a row) lose little: generic.
  Expected<GatherDesc> Rows =
      onnxGather(tensor(DataType::Float32, {100000, 256}), tensor(DataType::Int64, {32768}), 0);
  ASSERT_TRUE(Rows.isOk());
  Expected<ValidDesc> RowsValid = validate(*Rows);
  ASSERT_TRUE(RowsValid.isOk()) << RowsValid.status().message();
  EXPECT_FALSE(specializeAtCompile(canonicalize(*RowsValid)));

  auto RT = runtimeIn(Specialize::Adaptive);
  Expected<Kernel> K = RT->compile(geOf(4096, 4096));
  ASSERT_TRUE(K.isOk()) << K.status().message();
  EXPECT_EQ(K->tier(), KernelTier::Specialized);
  EXPECT_EQ(K->optLevel(), OptLevel::O2);
  EXPECT_GT(K->compileTimes().total(), 0.0);
  EXPECT_EQ(RT->stats().SpecializedAtCompile, 1u);
  Expected<Kernel> R = RT->compile(*RowsValid);
  ASSERT_TRUE(R.isOk());
  EXPECT_EQ(R->tier(), KernelTier::Generic);
}

TEST(Runtime, EachModeChoosesItsTier) {
  for (Specialize Mode : {Specialize::Adaptive, Specialize::AtCompile, Specialize::Never}) {
    SCOPED_TRACE(specializeName(Mode));
    auto RT = runtimeIn(Mode);
    GeCase C(16, 16);
    Expected<Kernel> K = RT->compile(C.Desc);
    ASSERT_TRUE(K.isOk());
    EXPECT_EQ(K->tier(),
              Mode == Specialize::AtCompile ? KernelTier::Specialized : KernelTier::Generic);
    for (int I = 0; I < 10; ++I)
      ASSERT_TRUE(C.agrees(*K));
    RT->drainBackground();
    EXPECT_EQ(K->tier(), Mode == Specialize::Never ? KernelTier::Generic : KernelTier::Specialized);
    EXPECT_EQ(RT->stats().Specializations, Mode == Specialize::Adaptive ? 1u : 0u);
  }
  Specialize Parsed = Specialize::Never;
  EXPECT_TRUE(parseSpecialize("compile", Parsed));
  EXPECT_EQ(Parsed, Specialize::AtCompile);
  EXPECT_FALSE(parseSpecialize("eager", Parsed));
  EXPECT_STREQ(kernelTierName(KernelTier::Generic), "generic");
}

TEST(Runtime, TheCacheHoldsBytesNotEntries) {
  // 64 KiB holds 16 generic entries of 4 KiB: 100 shapes evict 84.
  auto RT = runtimeIn(Specialize::Never, 64 << 10);
  std::vector<Kernel> Held;
  for (uint64_t N = 1; N <= 100; ++N) {
    Expected<Kernel> K = RT->compile(geOf(N, 3));
    ASSERT_TRUE(K.isOk());
    if (N == 1)
      Held.push_back(*K);
  }
  CacheStats S = RT->stats();
  EXPECT_EQ(S.Entries, 16u);
  EXPECT_LE(S.CacheBytes, 64u << 10);
  EXPECT_EQ(S.Evictions, 84u);
  // An evicted shape's handle still runs.
  GeCase C(1, 3);
  EXPECT_TRUE(C.agrees(Held[0]));
  // The default holds a walk over thousands of shapes: nothing is evicted.
  auto Wide = runtimeIn(Specialize::Never);
  for (uint64_t N = 1; N <= 5000; ++N)
    ASSERT_TRUE(Wide->compile(geOf(N, 3)).isOk());
  for (uint64_t N = 1; N <= 5000; ++N)
    ASSERT_TRUE(Wide->compile(geOf(N, 3))->cacheHit());
  EXPECT_EQ(Wide->stats().Evictions, 0u);
  EXPECT_EQ(Wide->stats().Misses, 5000u);
}

TEST(Runtime, TheGenericTierMatchesTheInterpreterOnRandomConfigurations) {
  auto RT = runtimeIn(Specialize::Never);
  CaseGenerator Gen(seedFromEnv(20261125));
  Coverage Covered;
  unsigned &Generic = Covered.floor("configurations run by the generic tier", 500);
  for (unsigned I = 0; Covered.drawMore(I, 600, 900); ++I) {
    RandomCase C = Gen.next();
    SCOPED_TRACE("case " + std::to_string(I) + ": " + C.Summary);
    Expected<Kernel> K = RT->compile(C.Desc);
    ASSERT_TRUE(K.isOk()) << K.status().message();
    Generic += C.Desc.outputElements() != 0 && K->tier() == KernelTier::Generic;
    const size_t OutBytes = requiredElements(C.Desc.Output) * C.Desc.Output.elementBytes();
    std::vector<char> Ref(OutBytes, '\xab'), Got(OutBytes, '\xab');
    Status RS = interpret(C.Desc, C.Input.data(), C.Indices.data(), Ref.data());
    Status GS = K->run(C.Input.data(), C.Indices.data(), Got.data());
    ASSERT_EQ(RS.code(), GS.code()) << "interp: " << RS.message() << "\ngeneric: " << GS.message();
    if (RS)
      ASSERT_EQ(Ref, Got);
    else
      ASSERT_EQ(RS.message(), GS.message());
  }
  EXPECT_EQ(Covered.unmet(), "");
}

namespace {

/// Random configurations run by \p Mode's tier (\p Tier) with each operand
/// 1 to 7 bytes past an aligned address, against the interpreter's bytes
/// and error on aligned copies.
void runAtOddByteOffsets(Specialize Mode, KernelTier Tier) {
  auto RT = runtimeIn(Mode);
  CaseGenerator Gen(seedFromEnv(20261129));
  for (unsigned I = 0; I < 300; ++I) {
    RandomCase C = Gen.next();
    SCOPED_TRACE("case " + std::to_string(I) + ": " + C.Summary);
    Expected<Kernel> K = RT->compile(C.Desc);
    ASSERT_TRUE(K.isOk()) << K.status().message();
    if (C.Desc.outputElements() != 0) { // (An empty output has nothing to run.)
      ASSERT_EQ(K->tier(), Tier);
    }
    const size_t OutBytes = requiredElements(C.Desc.Output) * C.Desc.Output.elementBytes();
    const size_t Skew = 1 + I % 7;
    auto Skewed = [&](const std::vector<char> &Bytes, size_t By) {
      std::vector<char> B(Bytes.size() + 16);
      std::copy(Bytes.begin(), Bytes.end(), B.begin() + By);
      return B;
    };
    std::vector<char> In = Skewed(C.Input, Skew), Idx = Skewed(C.Indices, 8 - Skew),
                      Out(OutBytes + 16, '\xab'), Ref(OutBytes, '\xab');
    Status RS = interpret(C.Desc, C.Input.data(), C.Indices.data(), Ref.data());
    Status GS = K->run(In.data() + Skew, Idx.data() + (8 - Skew), Out.data() + Skew);
    ASSERT_EQ(RS.code(), GS.code()) << "interp: " << RS.message() << "\nkernel: " << GS.message();
    if (RS)
      ASSERT_TRUE(std::equal(Ref.begin(), Ref.end(), Out.begin() + Skew));
    else
      ASSERT_EQ(RS.message(), GS.message());
  }
}

} // namespace

TEST(Runtime, TheGenericTierReadsOperandsAtAnyByteOffset) {
  // Callers' buffers need not be aligned to their element types (a numpy
  // view at an odd byte offset, a buffer dask unpickled). (The sanitized
  // build's alignment check fails a typed load.)
  runAtOddByteOffsets(Specialize::Never, KernelTier::Generic);
}

TEST(Runtime, SpecializedKernelsReadOperandsAtAnyByteOffset) {
  // The same for the JIT's code, whose loads and stores claim no alignment:
  // an aligned vector move at such an address would fault.
  runAtOddByteOffsets(Specialize::AtCompile, KernelTier::Specialized);
}

TEST(Runtime, TheGenericLoopNamesTheBadComponentOfAGatherNDTuple) {
  // The generic loop's own loops for GatherND: rows of blocks (tuples of 2
  // into [4, 5, 8], rank-2 output) and elements (tuples of 2 and 3, every
  // dimension addressed). A bad second or third component must be named
  // as the interpreter names it, by its position in the indices.
  auto RT = runtimeIn(Specialize::Never);
  struct Case {
    std::vector<uint64_t> Data, Indices;
    uint64_t BadAt; ///< Element of the indices made out of range.
  };
  for (const Case &C : {Case{{4, 5, 8}, {6, 2}, 7}, Case{{4, 5}, {6, 2}, 9},
                        Case{{4, 5, 3}, {6, 3}, 17}, Case{{4, 5, 3}, {6, 3}, 13}}) {
    SCOPED_TRACE("indices element " + std::to_string(C.BadAt));
    Expected<ValidDesc> V = validateOnnx({OpKind::GatherND, tensor(DataType::Float32, C.Data),
                                          tensor(DataType::Int64, C.Indices), 0},
                                         OobPolicy::Check);
    ASSERT_TRUE(V.isOk()) << V.status().message();
    Expected<Kernel> K = RT->compile(*V);
    ASSERT_TRUE(K.isOk()) << K.status().message();
    ASSERT_EQ(K->tier(), KernelTier::Generic);
    std::vector<float> Data(requiredElements(V->Input));
    std::vector<int64_t> Ids(requiredElements(V->Indices), 1);
    Ids[C.BadAt] = 5; // Every axis addressed has 5 or fewer.
    std::vector<char> Ref(requiredElements(V->Output) * 4), Got(Ref.size());
    const Status Want = interpret(*V, Data.data(), Ids.data(), Ref.data());
    const Status Run = K->run(Data.data(), Ids.data(), Got.data());
    ASSERT_FALSE(Want.isOk());
    EXPECT_EQ(Want.position(), std::optional<uint64_t>(C.BadAt));
    EXPECT_EQ(Run.position(), Want.position()) << Run.message();
    EXPECT_EQ(Run.message(), Want.message());
  }
}

TEST(Runtime, TheGenericLoopsBlockRowsFromSmallAndLargeTablesMatchTheInterpreter) {
  // Embedding rows of 16 and 64 bytes in the generic loop, from tables of
  // 16 and 64 KiB (no row fetched ahead) and of 1 and 4 MiB (rows fetched
  // ahead, the look-ahead resolving indices a few rows on): every policy's
  // bytes, and under Check the first bad index, one inside the look-ahead
  // distance of the end and one a row after a good one.
  auto RT = runtimeIn(Specialize::Never);
  const uint64_t Ids = 300;
  for (uint64_t Rows : {1024u, 65536u})
    for (uint64_t Cols : {4u, 16u})
      for (OobPolicy Policy : {OobPolicy::Check, OobPolicy::Clamp, OobPolicy::Clip}) {
        SCOPED_TRACE(std::string(oobPolicyName(Policy)) + " [" + std::to_string(Rows) + ", " +
                     std::to_string(Cols) + "]");
        Expected<ValidDesc> V =
            validateOnnx({OpKind::Gather, tensor(DataType::Float32, {Rows, Cols}),
                          tensor(DataType::Int64, {Ids}), 0},
                         Policy);
        ASSERT_TRUE(V.isOk()) << V.status().message();
        Expected<Kernel> K = RT->compile(*V);
        ASSERT_TRUE(K.isOk()) << K.status().message();
        ASSERT_EQ(K->tier(), KernelTier::Generic);
        const std::vector<char> Table = patternBuffer(Rows * Cols, 4);
        const int64_t N = static_cast<int64_t>(Rows);
        std::vector<int64_t> Idx(Ids);
        for (uint64_t I = 0; I < Ids; ++I) {
          Idx[I] = static_cast<int64_t>((I * 7919) % Rows) - (I % 3 == 1 ? N : 0);
          if (Policy != OobPolicy::Check && I % 5 == 2)
            Idx[I] = I % 2 ? N + static_cast<int64_t>(I) : -2 * N - 1; // Clamped or clipped.
        }
        std::vector<char> Ref(Ids * Cols * 4, '\xab'), Got(Ref.size(), '\xcd');
        ASSERT_TRUE(interpret(*V, Table.data(), Idx.data(), Ref.data()).isOk());
        ASSERT_TRUE(K->run(Table.data(), Idx.data(), Got.data()).isOk());
        EXPECT_EQ(Ref, Got);
        if (Policy != OobPolicy::Check)
          continue;
        for (uint64_t BadAt : {Ids - 3, uint64_t(41)}) {
          Idx[BadAt] = N;
          const Status Run = K->run(Table.data(), Idx.data(), Got.data());
          ASSERT_EQ(Run.code(), ErrorCode::IndexOutOfRange);
          EXPECT_EQ(Run.position(), std::optional<uint64_t>(BadAt));
        }
      }
}
