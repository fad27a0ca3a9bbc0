//===- tests/runtime/RuntimeTest.cpp - Cache, threads, handles -----------===//

#include "gatherjit/Interpreter.h"
#include "gatherjit/Runtime.h"

#include "TestUtil.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <atomic>
#include <cstring>
#include <chrono>
#include <fstream>
#include <random>
#include <sstream>
#include <unistd.h>
#include <thread>

using namespace gatherjit;
using namespace gatherjit::test;

namespace {

std::unique_ptr<Runtime> makeRuntime(size_t Capacity = 16, unsigned Threads = 1) {
  RuntimeOptions O;
  O.CacheCapacity = Capacity;
  O.Threads = Threads;
  Expected<std::unique_ptr<Runtime>> RT = Runtime::create(O);
  EXPECT_TRUE(RT.isOk()) << RT.status().message();
  return RT ? RT.take() : nullptr;
}

GatherElementsDesc ge(uint64_t Rows, uint64_t Cols, DataType Type = DataType::Float32) {
  return {tensor(Type, {Rows, Cols}), tensor(DataType::Int64, {Rows, Cols}),
          tensor(Type, {Rows, Cols}), 1};
}

TEST(Runtime, EqualSpecsCompileOnce) {
  auto RT = makeRuntime();
  Expected<Kernel> A = RT->compile(ge(4, 5));
  Expected<Kernel> B = RT->compile(ge(4, 5, DataType::Int32)); // Same bytes moved.
  ASSERT_TRUE(A.isOk() && B.isOk());
  EXPECT_FALSE(A->cacheHit());
  EXPECT_TRUE(B->cacheHit());
  EXPECT_EQ(A->symbolName(), B->symbolName());
  CacheStats S = RT->stats();
  EXPECT_EQ(S.Misses, 1u);
  EXPECT_EQ(S.Hits, 1u);
  EXPECT_GT(S.CompileMs, 0.0);
}

TEST(Runtime, ValidationErrorsPassThrough) {
  auto RT = makeRuntime();
  GatherElementsDesc D = ge(4, 5);
  D.Axis = 2;
  Expected<Kernel> K = RT->compile(D);
  ASSERT_FALSE(K.isOk());
  EXPECT_EQ(K.status().code(), ErrorCode::InvalidArgument);
  EXPECT_THAT(K.status().message(), ::testing::HasSubstr("Axis = 2 is out of range"));
  EXPECT_EQ(RT->stats().Misses, 0u);
}

TEST(Runtime, EmptyOutputNeedsNoCompile) {
  auto RT = makeRuntime();
  Expected<Kernel> K = RT->compile(ge(0, 5));
  ASSERT_TRUE(K.isOk());
  EXPECT_TRUE(K->symbolName().empty());
  EXPECT_TRUE(K->run(nullptr, nullptr, nullptr).isOk());
  EXPECT_EQ(RT->stats().Misses, 0u);
}

/// Runs a ge(2, 3) kernel on hand-written data; its output, worked out by
/// hand.
::testing::AssertionResult runsHandWrittenCase(const Kernel &K) {
  const std::vector<float> In = {1, 2, 3, 4, 5, 6};
  const std::vector<char> Idx = encodeIndices(DataType::Int64, {2, 1, 0, 0, 0, 2});
  std::vector<float> Out(6);
  if (Status S = K.run(In.data(), Idx.data(), Out.data()); !S)
    return ::testing::AssertionFailure() << S.message();
  if (Out != std::vector<float>{3, 2, 1, 4, 4, 6})
    return ::testing::AssertionFailure() << "wrong output";
  return ::testing::AssertionSuccess();
}

TEST(Runtime, EvictionFreesCodeOnceHandlesAreGone) {
  auto RT = makeRuntime(/*Capacity=*/1);
  Expected<Kernel> Held = RT->compile(ge(2, 3));
  ASSERT_TRUE(Held.isOk());
  {
    Expected<Kernel> Dropped = RT->compile(ge(3, 2)); // Evicts ge(2,3).
    ASSERT_TRUE(Dropped.isOk());
  }
  CacheStats S = RT->stats();
  EXPECT_EQ(S.Evictions, 1u);
  EXPECT_EQ(S.Entries, 1u);
  EXPECT_EQ(S.LiveKernels, 2u); // ge(2,3) evicted but held; ge(3,2) cached.
  // The evicted kernel still runs while held.
  EXPECT_TRUE(runsHandWrittenCase(*Held));
  *Held = Kernel();
  EXPECT_EQ(RT->stats().LiveKernels, 1u);
  // Asking again recompiles it.
  Expected<Kernel> Again = RT->compile(ge(2, 3));
  ASSERT_TRUE(Again.isOk());
  EXPECT_FALSE(Again->cacheHit());
  EXPECT_EQ(RT->stats().Misses, 3u);
  EXPECT_EQ(RT->stats().LiveKernels, 1u); // ge(3,2) evicted and not held.
}

TEST(Runtime, RecompilesAnEvictedSpecWhileItsOldCodeIsHeld) {
  auto RT = makeRuntime(/*Capacity=*/1);
  Expected<Kernel> Held = RT->compile(ge(2, 3));
  ASSERT_TRUE(Held.isOk());
  ASSERT_TRUE(RT->compile(ge(3, 2)).isOk()); // Evicts ge(2,3).
  // The same symbols are linked a second time, next to the held code.
  Expected<Kernel> Again = RT->compile(ge(2, 3));
  ASSERT_TRUE(Again.isOk()) << Again.status().message();
  EXPECT_FALSE(Again->cacheHit());
  EXPECT_EQ(RT->stats().LiveKernels, 2u);
  EXPECT_TRUE(runsHandWrittenCase(*Held));
  EXPECT_TRUE(runsHandWrittenCase(*Again));
}

/// \p Count valid indices for an axis of \p AxisSize, uniform over
/// [-AxisSize, AxisSize): the negative ones count from the end.
std::vector<int64_t> validIndices(uint64_t Count, uint64_t AxisSize, uint64_t Seed) {
  std::mt19937_64 Rng(Seed);
  std::vector<int64_t> Idx(Count);
  for (int64_t &I : Idx)
    I = static_cast<int64_t>(Rng() % (2 * AxisSize)) - static_cast<int64_t>(AxisSize);
  return Idx;
}

/// Succeeds if the optimized IR of \p V holds \p Text.
::testing::AssertionResult irHas(Runtime &RT, const ValidDesc &V, const std::string &Text) {
  Expected<std::string> IR = RT.optimizedIR(V);
  if (!IR)
    return ::testing::AssertionFailure() << IR.status().message();
  if (IR->find(Text) == std::string::npos)
    return ::testing::AssertionFailure() << "no '" << Text << "' in the optimized IR";
  return ::testing::AssertionSuccess();
}

/// Input, valid indices (some negative) and the interpreter's output for
/// ge(Rows, Cols).
struct GeCase {
  GeCase(uint64_t Rows, uint64_t Cols)
      : Desc(ge(Rows, Cols)), In(Rows * Cols),
        Idx(validIndices(Rows * Cols, Cols, Rows * 1000 + Cols)) {
    for (uint64_t I = 0; I < Rows * Cols; ++I)
      In[I] = static_cast<float>(I);
  }
  /// Runs \p K and the interpreter; their statuses and outputs must agree.
  ::testing::AssertionResult agrees(const Kernel &K) const {
    std::vector<char> Bytes = encodeIndices(DataType::Int64, Idx);
    std::vector<float> Out(In.size(), -1.0f), Ref(In.size(), -1.0f);
    Status JS = K.run(In.data(), Bytes.data(), Out.data());
    Status RS = interpret(K.desc(), In.data(), Bytes.data(), Ref.data());
    if (JS.code() != RS.code() || JS.position() != RS.position())
      return ::testing::AssertionFailure() << "jit: " << JS.message() << "\ninterp: " << RS.message();
    if (RS && Out != Ref)
      return ::testing::AssertionFailure() << "outputs differ";
    return ::testing::AssertionSuccess();
  }
  GatherElementsDesc Desc;
  std::vector<float> In;
  std::vector<int64_t> Idx;
};

bool waitForLevel(const Kernel &K, OptLevel Level) {
  const auto Deadline = std::chrono::steady_clock::now() + std::chrono::seconds(60);
  while (K.optLevel() != Level && std::chrono::steady_clock::now() < Deadline)
    std::this_thread::sleep_for(std::chrono::milliseconds(1));
  return K.optLevel() == Level;
}

TEST(Runtime, TheQuickTierTakesKernelsOfAtMost64KiBAtO2) {
  RuntimeOptions O;
  O.Threads = 1;
  for (OptLevel Level : {OptLevel::O0, OptLevel::O1, OptLevel::O2, OptLevel::O3})
    for (bool Quick : {true, false}) {
      SCOPED_TRACE(std::string(optLevelName(Level)) + (Quick ? " quick" : ""));
      O.Opt = Level;
      O.QuickTier = Quick;
      Expected<std::unique_ptr<Runtime>> RT = Runtime::create(O);
      ASSERT_TRUE(RT.isOk());
      // 128 x 128 FLOAT32 writes 64 KiB; 128 x 129 writes more.
      Expected<Kernel> Small = (*RT)->compile(ge(128, 128));
      Expected<Kernel> Large = (*RT)->compile(ge(128, 129));
      ASSERT_TRUE(Small.isOk() && Large.isOk());
      const bool Tiered = Quick && Level == OptLevel::O2;
      EXPECT_EQ(Small->optLevel(), Tiered ? OptLevel::O1 : Level);
      EXPECT_EQ(Large->optLevel(), Level);
      EXPECT_TRUE(GeCase(128, 128).agrees(*Small));
      EXPECT_TRUE(GeCase(128, 129).agrees(*Large));
    }
}

TEST(Runtime, AQuickKernelMovesUpToO2AfterEnoughRunsWhileThreadsRunIt) {
  auto RT = makeRuntime();
  // 64 KiB of output: the upgrade is due after 16 MiB / 64 KiB = 256 runs.
  GeCase C(128, 128);
  Expected<Kernel> K = RT->compile(C.Desc);
  ASSERT_TRUE(K.isOk());
  ASSERT_EQ(K->optLevel(), OptLevel::O1);
  // Two threads run it across the switch; every run must stay right.
  std::atomic<int> Failures{0};
  std::vector<std::thread> Threads;
  for (int T = 0; T < 2; ++T)
    Threads.emplace_back([&] {
      for (int I = 0; I < 300; ++I)
        if (!C.agrees(*K))
          ++Failures;
    });
  for (std::thread &T : Threads)
    T.join();
  EXPECT_EQ(Failures.load(), 0);
  ASSERT_TRUE(waitForLevel(*K, OptLevel::O2));
  EXPECT_EQ(RT->stats().Upgrades, 1u);
  EXPECT_EQ(RT->stats().Misses, 1u);
  // The upgraded code: same bytes, and the same first error.
  EXPECT_TRUE(C.agrees(*K));
  GeCase Bad = C;
  Bad.Idx[777] = 128;
  Bad.Idx[900] = -129;
  EXPECT_TRUE(Bad.agrees(*K));
  // Handles of the same spec made later run the upgraded code too.
  Expected<Kernel> Again = RT->compile(ge(128, 128, DataType::Int32));
  ASSERT_TRUE(Again.isOk());
  EXPECT_TRUE(Again->cacheHit());
  EXPECT_EQ(Again->optLevel(), OptLevel::O2);
}

TEST(Runtime, KernelsOutliveTheirRuntimeWithAnUpgradeUnderWay) {
  GeCase C(128, 128);
  Kernel K;
  {
    auto RT = makeRuntime();
    Expected<Kernel> Compiled = RT->compile(C.Desc);
    ASSERT_TRUE(Compiled.isOk());
    K = *Compiled;
    for (int I = 0; I < 256; ++I) // The last run queues the upgrade.
      ASSERT_TRUE(C.agrees(K));
  } // The runtime finishes or drops the upgrade and goes.
  EXPECT_TRUE(C.agrees(K));
  EXPECT_TRUE(K.optLevel() == OptLevel::O1 || K.optLevel() == OptLevel::O2);
}

TEST(Runtime, ConcurrentRequestsForOneSpecCompileOnce) {
  auto RT = makeRuntime();
  std::vector<std::thread> Threads;
  std::vector<std::string> Names(8);
  for (int T = 0; T < 8; ++T)
    Threads.emplace_back([&, T] {
      Expected<Kernel> K = RT->compile(ge(16, 16));
      if (K)
        Names[T] = K->symbolName();
    });
  for (std::thread &T : Threads)
    T.join();
  CacheStats S = RT->stats();
  EXPECT_EQ(S.Misses, 1u);
  EXPECT_EQ(S.Hits, 7u);
  for (const std::string &N : Names)
    EXPECT_EQ(N, Names[0]);
}

TEST(Runtime, ConcurrentCompileAndRunOfManySpecs) {
  auto RT = makeRuntime(/*Capacity=*/4);
  std::vector<std::thread> Threads;
  std::atomic<int> Failures{0};
  for (int T = 0; T < 4; ++T)
    Threads.emplace_back([&, T] {
      for (int I = 0; I < 6; ++I) {
        const uint64_t Cols = 2 + (T + I) % 5;
        Expected<Kernel> K = RT->compile(ge(3, Cols));
        if (!K) {
          ++Failures;
          continue;
        }
        std::vector<float> In(3 * Cols), Out(3 * Cols), Ref(3 * Cols);
        for (size_t E = 0; E < In.size(); ++E)
          In[E] = static_cast<float>(E);
        std::vector<int64_t> IdxV(3 * Cols);
        for (size_t E = 0; E < IdxV.size(); ++E)
          IdxV[E] = static_cast<int64_t>((E * 7) % Cols);
        std::vector<char> Idx = encodeIndices(DataType::Int64, IdxV);
        if (!K->run(In.data(), Idx.data(), Out.data()) ||
            !interpret(K->desc(), In.data(), Idx.data(), Ref.data()) || Out != Ref)
          ++Failures;
      }
    });
  for (std::thread &T : Threads)
    T.join();
  EXPECT_EQ(Failures.load(), 0);
}

TEST(Runtime, ThreadsGiveTheSameBytesAndTheSameFirstError) {
  auto One = makeRuntime(16, 1), Two = makeRuntime(16, 2);
  // 2 MiB of output: split. 4 MiB of indices along rows of 512: streamed.
  const uint64_t Rows = 1024, Cols = 512;
  std::vector<float> In(Rows * Cols);
  std::vector<int64_t> IdxV(Rows * Cols);
  std::mt19937_64 Rng(3);
  for (uint64_t I = 0; I < Rows * Cols; ++I) {
    In[I] = static_cast<float>(I);
    IdxV[I] = static_cast<int64_t>(Rng() % Cols);
  }
  Expected<Kernel> K1 = One->compile(ge(Rows, Cols)), K2 = Two->compile(ge(Rows, Cols));
  ASSERT_TRUE(K1.isOk() && K2.isOk());
  std::vector<char> Idx = encodeIndices(DataType::Int64, IdxV);
  std::vector<float> A(Rows * Cols), B(Rows * Cols);
  ASSERT_TRUE(K1->run(In.data(), Idx.data(), A.data()).isOk());
  ASSERT_TRUE(K2->run(In.data(), Idx.data(), B.data()).isOk());
  EXPECT_EQ(A, B);
  // Two bad indices in different halves: the first one is reported.
  IdxV[Rows * Cols - 5] = -1000;
  IdxV[Rows * Cols / 2 + 3] = 1000;
  Idx = encodeIndices(DataType::Int64, IdxV);
  Status S = K2->run(In.data(), Idx.data(), B.data());
  ASSERT_EQ(S.code(), ErrorCode::IndexOutOfRange);
  EXPECT_EQ(S.position(), Rows * Cols / 2 + 3);
  EXPECT_EQ(interpret(K2->desc(), In.data(), Idx.data(), A.data()).position(), S.position());
}

TEST(Runtime, IRAndAssemblyNameTheKernel) {
  auto RT = makeRuntime();
  Expected<ValidDesc> V = validate(ge(4, 5));
  ASSERT_TRUE(V.isOk());
  Expected<std::string> IR = RT->optimizedIR(*V);
  ASSERT_TRUE(IR.isOk());
  EXPECT_THAT(*IR, ::testing::HasSubstr("define i64 @gj_b4_i64_r2_check_"));
  EXPECT_THAT(*IR, ::testing::HasSubstr("noalias"));
  Expected<std::string> Asm = RT->assembly(*V);
  ASSERT_TRUE(Asm.isOk());
  EXPECT_THAT(*Asm, ::testing::HasSubstr("gj_b4_i64_r2_check_"));
  EXPECT_THAT(*Asm, ::testing::HasSubstr("ret"));
}

} // namespace

TEST(Runtime, PrefetchingRowsFromALargeTableKeepsResultsAndErrors) {
  // A 1 MiB table: block rows prefetch four rows ahead. The lookahead must
  // read no index past the range it was given and change no result.
  auto RT = makeRuntime();
  const uint64_t Rows = 2048, Cols = 128, Ids = 37;
  Expected<GatherDesc> D = onnxGather(tensor(DataType::Float32, {Rows, Cols}),
                                      tensor(DataType::Int32, {Ids}), 0);
  ASSERT_TRUE(D.isOk());
  Expected<ValidDesc> V = validate(*D);
  ASSERT_TRUE(V.isOk());
  Expected<Kernel> K = RT->compile(*V);
  ASSERT_TRUE(K.isOk());
  ASSERT_EQ(K->rows(), Ids);
  std::vector<char> Table = patternBuffer(Rows * Cols, 4);
  std::vector<int32_t> Idx(Ids);
  for (uint64_t I = 0; I < Ids; ++I)
    Idx[I] = static_cast<int32_t>((I * 977) % Rows) - (I % 4 == 1 ? static_cast<int32_t>(Rows) : 0);
  std::vector<char> Ref(Ids * Cols * 4), Out(Ref.size()), Split(Ref.size());
  ASSERT_TRUE(interpret(*V, Table.data(), Idx.data(), Ref.data()).isOk());
  ASSERT_TRUE(K->run(Table.data(), Idx.data(), Out.data()).isOk());
  EXPECT_EQ(Ref, Out);
  // Rows run in ranges, each reading only its own indices: the index
  // buffer is cut right after the range's last row.
  for (uint64_t Begin = 0; Begin < Ids; Begin += 5) {
    const uint64_t End = std::min(Ids, Begin + 5);
    std::vector<int32_t> Cut(Idx.begin(), Idx.begin() + End);
    ASSERT_TRUE(K->runRows(Table.data(), Cut.data(), Split.data(), Begin, End).isOk());
  }
  EXPECT_EQ(Ref, Split);
  // A bad index after a good one, inside the prefetch distance.
  Idx[30] = static_cast<int32_t>(Rows);
  Status S = K->run(Table.data(), Idx.data(), Out.data());
  ASSERT_FALSE(S);
  EXPECT_EQ(S.position(), 30u);
}

/// Gathers rows of a [Rows, Cols] table of \p Type by \p Ids INT64 indices
/// into \p Out (which may be misaligned) and compares with the interpreter,
/// then with one bad index at \p BadAt.
void expectBlockGatherMatches(Runtime &RT, DataType Type, uint64_t Rows, uint64_t Cols,
                              uint64_t Ids, char *Out, uint64_t BadAt) {
  SCOPED_TRACE(std::string(dataTypeName(Type)) + " [" + std::to_string(Rows) + ", " +
               std::to_string(Cols) + "] by " + std::to_string(Ids));
  Expected<GatherDesc> D = onnxGather(tensor(Type, {Rows, Cols}), tensor(DataType::Int64, {Ids}), 0);
  ASSERT_TRUE(D.isOk());
  Expected<ValidDesc> V = validate(*D);
  ASSERT_TRUE(V.isOk());
  Expected<Kernel> K = RT.compile(*V);
  ASSERT_TRUE(K.isOk());
  const size_t Elem = dataTypeSize(Type);
  std::vector<char> Table = patternBuffer(Rows * Cols, Elem);
  std::vector<int64_t> Idx(Ids);
  for (uint64_t I = 0; I < Ids; ++I)
    Idx[I] = static_cast<int64_t>((I * 7919) % Rows) - (I % 3 == 1 ? static_cast<int64_t>(Rows) : 0);
  std::vector<char> Ref(Ids * Cols * Elem);
  ASSERT_TRUE(interpret(*V, Table.data(), Idx.data(), Ref.data()).isOk());
  ASSERT_TRUE(K->run(Table.data(), Idx.data(), Out).isOk());
  EXPECT_EQ(0, std::memcmp(Ref.data(), Out, Ref.size()));
  Idx[BadAt] = static_cast<int64_t>(Rows);
  Status S = K->run(Table.data(), Idx.data(), Out);
  ASSERT_EQ(S.code(), ErrorCode::IndexOutOfRange);
  EXPECT_EQ(S.position(), BadAt);
}

TEST(Runtime, BlockRowsOfAnyLengthMatchTheInterpreter) {
  auto RT = makeRuntime();
  for (DataType Type : {DataType::UInt8, DataType::Float16, DataType::Float32, DataType::Float64})
    for (uint64_t Cols : {1, 15, 16, 17, 63, 64, 65, 129, 1000, 1500})
      for (uint64_t Rows : {40, 9000}) { // A small table and one over 1 MiB (prefetched).
        std::vector<char> Out(33 * Cols * 8 + 64);
        expectBlockGatherMatches(*RT, Type, Rows, Cols, 33, Out.data() + 3, 20);
        if (HasFatalFailure())
          return;
      }
}

TEST(Runtime, StreamedBlockRowsMatchTheInterpreterAtAnyOutputAlignment) {
  // Over 16 MiB of output: rows are written with non-temporal stores,
  // whatever the output's alignment. 2080-byte rows end off a 64-byte line.
  auto RT = makeRuntime();
  const uint64_t Rows = 2048, Cols = 520, Ids = 8100;
  Expected<GatherDesc> D =
      onnxGather(tensor(DataType::Float32, {Rows, Cols}), tensor(DataType::Int64, {Ids}), 0);
  ASSERT_TRUE(D.isOk());
  Expected<ValidDesc> V = validate(*D);
  ASSERT_TRUE(V.isOk());
  EXPECT_TRUE(irHas(*RT, *V, "!nontemporal"));
  std::vector<char> Buffer(Ids * Cols * 4 + 128);
  char *Aligned = Buffer.data() + (64 - reinterpret_cast<uintptr_t>(Buffer.data()) % 64);
  for (size_t Skew : {0, 4, 33, 60}) {
    SCOPED_TRACE("output 64-byte aligned + " + std::to_string(Skew));
    expectBlockGatherMatches(*RT, DataType::Float32, Rows, Cols, Ids, Aligned + Skew, 5000);
  }
}

TEST(Runtime, StreamedElementRowsMatchTheInterpreter) {
  // 2048 x 300 INT64 indices (4.9 MB) gathered along rows of 300: blocks of
  // 64 that prefetch indices ahead, a tail of 44, the next input row
  // prefetched. (ThreadsGiveTheSameBytesAndTheSameFirstError splits such
  // rows across threads.)
  {
    auto RT = makeRuntime();
    GeCase C(2048, 300);
    Expected<ValidDesc> V = validate(C.Desc);
    ASSERT_TRUE(V.isOk());
    EXPECT_TRUE(irHas(*RT, *V, "llvm.prefetch"));
    Expected<Kernel> K = RT->compile(C.Desc);
    ASSERT_TRUE(K.isOk());
    EXPECT_TRUE(C.agrees(*K));
    for (uint64_t Bad : {uint64_t(1000 * 300 + 70), uint64_t(1500 * 300 + 290)}) {
      GeCase B = C;
      B.Idx[Bad] = 300;
      B.Idx[Bad + 5] = -301;
      EXPECT_TRUE(B.agrees(*K)) << "bad index at " << Bad;
    }
  }
}

TEST(Runtime, StreamedElementRowsWriteLargeOutputsAtAnyAlignment) {
  // Over 16 MiB of output gathered along rows of 300 INT32 indices: each row
  // stores plainly up to its first 64-byte line, then streams blocks of 64
  // elements; an output not aligned to its elements is stored plainly.
  auto RT = makeRuntime();
  const uint64_t Cols = 300;
  for (DataType Type : {DataType::UInt8, DataType::Float16, DataType::Float32, DataType::Float64}) {
    const size_t Elem = dataTypeSize(Type);
    const uint64_t Rows = (16u << 20) / (Cols * Elem) + 1;
    SCOPED_TRACE(std::string(dataTypeName(Type)) + " [" + std::to_string(Rows) + ", 300]");
    GatherElementsDesc D{tensor(Type, {Rows, Cols}), tensor(DataType::Int32, {Rows, Cols}),
                         tensor(Type, {Rows, Cols}), 1};
    Expected<ValidDesc> V = validate(D);
    ASSERT_TRUE(V.isOk());
    EXPECT_TRUE(irHas(*RT, *V, "!nontemporal"));
    Expected<Kernel> K = RT->compile(*V);
    ASSERT_TRUE(K.isOk());
    std::vector<char> In = patternBuffer(Rows * Cols, Elem);
    const std::vector<int64_t> Idx = validIndices(Rows * Cols, Cols, Elem);
    std::vector<char> Bytes = encodeIndices(DataType::Int32, Idx);
    std::vector<char> Ref(Rows * Cols * Elem);
    ASSERT_TRUE(interpret(*V, In.data(), Bytes.data(), Ref.data()).isOk());
    std::vector<char> Buffer(Ref.size() + 128);
    char *Aligned = Buffer.data() + (64 - reinterpret_cast<uintptr_t>(Buffer.data()) % 64);
    for (size_t Skew : {size_t(0), size_t(1), Elem, size_t(60)}) {
      SCOPED_TRACE("output 64-byte aligned + " + std::to_string(Skew));
      std::memset(Buffer.data(), 0x5a, Buffer.size());
      ASSERT_TRUE(K->run(In.data(), Bytes.data(), Aligned + Skew).isOk());
      EXPECT_EQ(0, std::memcmp(Ref.data(), Aligned + Skew, Ref.size()));
      // Nothing written before or after the output.
      EXPECT_EQ(std::string(Aligned + Skew - Buffer.data(), 0x5a),
                std::string(Buffer.data(), Aligned + Skew));
      EXPECT_EQ(std::string(Buffer.data() + Buffer.size() - (Aligned + Skew + Ref.size()), 0x5a),
                std::string(Aligned + Skew + Ref.size(), Buffer.data() + Buffer.size()));
    }
    // The first bad index, in a row's head (before its first line) or in a
    // block, is the one reported.
    for (uint64_t Bad : {(Rows / 2) * Cols + 1, (Rows / 3) * Cols + 150}) {
      std::vector<int64_t> BadIdx = Idx;
      BadIdx[Bad] = static_cast<int64_t>(Cols);
      BadIdx[Bad + 3] = -static_cast<int64_t>(Cols) - 1;
      std::vector<char> BadBytes = encodeIndices(DataType::Int32, BadIdx);
      Status S = K->run(In.data(), BadBytes.data(), Aligned + 4);
      ASSERT_EQ(S.code(), ErrorCode::IndexOutOfRange);
      EXPECT_EQ(S.position(), Bad);
    }
  }
}

TEST(Runtime, RowsSharingTheirIndicesCheckThemOnceAndMatchTheInterpreter) {
  // Gather along axis 1 of [300, 1000] by [50, 40]: all 300 rows read the
  // same 2000 indices, through one table of offsets filled per call.
  auto RT = makeRuntime();
  const uint64_t Rows = 300, Cols = 1000;
  for (OobPolicy Policy : {OobPolicy::Check, OobPolicy::Clamp}) {
    SCOPED_TRACE(Policy == OobPolicy::Check ? "check" : "clamp");
    Expected<GatherDesc> D = onnxGather(tensor(DataType::Float32, {Rows, Cols}),
                                        tensor(DataType::Int32, {50, 40}), 1);
    ASSERT_TRUE(D.isOk());
    ValidateOptions O;
    O.Policy = Policy;
    Expected<ValidDesc> V = validate(*D, O);
    ASSERT_TRUE(V.isOk());
    Expected<Kernel> K = RT->compile(*V);
    ASSERT_TRUE(K.isOk());
    std::vector<char> In = patternBuffer(Rows * Cols, 4);
    const std::vector<int64_t> Idx = validIndices(2000, Cols, 7);
    // Two bad indices (the first at position 777) under Check; under Clamp
    // they read the row's ends.
    for (bool Bad : {false, true}) {
      std::vector<int64_t> Used = Idx;
      if (Bad) {
        Used[1500] = -static_cast<int64_t>(Cols) - 1;
        Used[777] = static_cast<int64_t>(Cols);
      }
      std::vector<char> Bytes = encodeIndices(DataType::Int32, Used);
      std::vector<char> Out(Rows * 2000 * 4), Ref(Out.size());
      Status JS = K->run(In.data(), Bytes.data(), Out.data());
      Status RS = interpret(*V, In.data(), Bytes.data(), Ref.data());
      ASSERT_EQ(JS.code(), RS.code()) << JS.message();
      if (Bad && Policy == OobPolicy::Check) {
        ASSERT_EQ(JS.code(), ErrorCode::IndexOutOfRange);
        EXPECT_EQ(JS.position(), 777u);
        // A range of rows reports it too; an empty one reads no index.
        EXPECT_EQ(K->runRows(In.data(), Bytes.data(), Out.data(), 299, 300).position(), 777u);
        EXPECT_TRUE(K->runRows(In.data(), Bytes.data(), Out.data(), 5, 5).isOk());
      } else {
        ASSERT_TRUE(JS.isOk()) << JS.message();
        EXPECT_EQ(Out, Ref);
      }
    }
  }
}

TEST(Runtime, RowsGatheringAcrossASlicePrefetchTheNextSliceAndMatchTheInterpreter) {
  // GatherElements along axis 1 of [16, 256, 128] by [16, 100, 128]: the
  // 100 rows of each slice gather from the same 128 KiB slice, and prefetch
  // the next one in shares.
  auto RT = makeRuntime();
  const uint64_t A = 16, N = 256, K = 128, I = 100;
  GatherElementsDesc D{tensor(DataType::Float32, {A, N, K}), tensor(DataType::Int64, {A, I, K}),
                       tensor(DataType::Float32, {A, I, K}), 1};
  Expected<ValidDesc> V = validate(D);
  ASSERT_TRUE(V.isOk());
  EXPECT_TRUE(irHas(*RT, *V, "llvm.prefetch"));
  Expected<Kernel> Kn = RT->compile(*V);
  ASSERT_TRUE(Kn.isOk());
  std::vector<char> In = patternBuffer(A * N * K, 4);
  std::vector<int64_t> Idx = validIndices(A * I * K, N, 11);
  std::vector<char> Out(Idx.size() * 4), Ref(Out.size());
  ASSERT_TRUE(Kn->run(In.data(), Idx.data(), Out.data()).isOk());
  ASSERT_TRUE(interpret(*V, In.data(), Idx.data(), Ref.data()).isOk());
  EXPECT_EQ(Out, Ref);
  Idx[(A - 1) * I * K + 5] = static_cast<int64_t>(N);
  Status S = Kn->run(In.data(), Idx.data(), Out.data());
  ASSERT_EQ(S.code(), ErrorCode::IndexOutOfRange);
  EXPECT_EQ(S.position(), (A - 1) * I * K + 5);
}

TEST(Runtime, PerfMapNamesEachKernelAtItsAddress) {
  RuntimeOptions O;
  O.Threads = 1;
  O.PerfMap = true;
  O.Debugger = true; // Registering with GDB's JIT interface must not fail either.
  Expected<std::unique_ptr<Runtime>> RT = Runtime::create(O);
  ASSERT_TRUE(RT.isOk()) << RT.status().message();
  Expected<Kernel> K = (*RT)->compile(ge(3, 11));
  ASSERT_TRUE(K.isOk()) << K.status().message();
  const std::string Map = "/tmp/perf-" + std::to_string(getpid()) + ".map";
  std::ifstream In(Map);
  ASSERT_TRUE(In) << Map;
  std::string Line, Found;
  while (std::getline(In, Line))
    if (Line.find(K->symbolName() + "_range") != std::string::npos)
      Found = Line;
  // "START SIZE NAME", hex: a nonzero size.
  std::istringstream Fields(Found);
  std::string Start, Size, Name;
  Fields >> Start >> Size >> Name;
  EXPECT_EQ(Name, K->symbolName() + "_range");
  EXPECT_NE(std::stoull(Start, nullptr, 16), 0u);
  EXPECT_GT(std::stoull(Size, nullptr, 16), 0u);
  // The kernel still runs.
  std::vector<float> In3(33, 1.0f), Out(33);
  std::vector<int64_t> Idx(33, -1);
  EXPECT_TRUE(K->run(In3.data(), Idx.data(), Out.data()).isOk());
  std::remove(Map.c_str());
}
