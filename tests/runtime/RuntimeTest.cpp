//===- tests/runtime/RuntimeTest.cpp - Cache, threads, handles -----------===//

#include "RuntimeTestUtil.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <atomic>
#include <chrono>
#include <cstring>
#include <fstream>
#include <random>
#include <sstream>
#include <thread>
#include <unistd.h>

using namespace gatherjit;
using namespace gatherjit::test;

namespace {

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

TEST(Runtime, ManyRandomReadsFromALargeInputRunSplitAndMatchTheInterpreter) {
  // GatherElements along 16 FLOAT32 rows of 1 MiB by 2048 ids each: 32768
  // reads at random (128 KiB of output) from 16 MiB, which a runtime of
  // two threads splits across them (ThreadPool::worthSplitting). With bad
  // ids in rows 3 and 12, whichever chunk finds its own first, the call
  // names row 3's, as the interpreter does.
  auto RT = makeRuntime(16, 2);
  const uint64_t Rows = 16, Cols = 1 << 18, Ids = 2048;
  Expected<ValidDesc> V =
      validateOnnx({OpKind::GatherElements, tensor(DataType::Float32, {Rows, Cols}),
                    tensor(DataType::Int64, {Rows, Ids}), 1},
                   OobPolicy::Check);
  ASSERT_TRUE(V.isOk()) << V.status().message();
  Expected<Kernel> K = RT->compile(*V);
  ASSERT_TRUE(K.isOk()) << K.status().message();
  const std::vector<char> Table = patternBuffer(Rows * Cols, 4);
  std::vector<int64_t> Values = validIndices(Rows * Ids, Cols, 7);
  for (bool Bad : {false, true}) {
    if (Bad) {
      Values[12 * Ids + 1] = -static_cast<int64_t>(Cols) - 1;
      Values[3 * Ids + 5] = static_cast<int64_t>(Cols);
    }
    const std::vector<char> Idx = encodeIndices(DataType::Int64, Values);
    std::vector<char> Out(Rows * Ids * 4, '\x11'), Ref(Rows * Ids * 4, '\x22');
    const Status JS = K->run(Table.data(), Idx.data(), Out.data());
    const Status RS = interpret(*V, Table.data(), Idx.data(), Ref.data());
    ASSERT_EQ(JS.code(), RS.code()) << JS.message();
    if (Bad) {
      EXPECT_EQ(JS.position(), 3 * Ids + 5);
      EXPECT_EQ(JS.position(), RS.position());
    } else {
      EXPECT_EQ(Out, Ref);
    }
  }
}

TEST(Runtime, AValidDescriptorMovedInIsTheKernelsOwn) {
  auto RT = makeRuntime();
  Expected<ValidDesc> V = validate(ge(4, 5), {});
  ASSERT_TRUE(V.isOk());
  const ValidDesc Copy = *V;
  Expected<Kernel> Moved = RT->compile(std::move(*V));
  Expected<Kernel> Again = RT->compile(Copy);
  Expected<Kernel> Empty = RT->compile(*validate(ge(0, 5), {}));
  ASSERT_TRUE(Moved.isOk() && Again.isOk() && Empty.isOk());
  // The kernel holds the descriptor as given, the cache the one spec.
  EXPECT_EQ(Moved->desc().describe(), Copy.describe());
  EXPECT_EQ(Moved->desc().Output.Sizes, Copy.Output.Sizes);
  EXPECT_FALSE(Moved->cacheHit());
  EXPECT_TRUE(Again->cacheHit());
  EXPECT_EQ(Again->desc().describe(), Copy.describe());
  EXPECT_EQ(Empty->desc().Output.Sizes, (std::vector<uint64_t>{0, 5}));
  EXPECT_EQ(RT->stats().Misses, 1u);
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

TEST(Runtime, AnEmptyOutputsIndicesAreCheckedUnderCheck) {
  // Gather of [0, 3] on axis 1 by [[1, 5], [-4, 0]]: no output element
  // needs an index, but ONNX has any index out of range an error: the
  // first, 5 at position 1, is reported without a compile. Under Clamp
  // the same run is fine.
  auto RT = makeRuntime();
  const std::vector<char> Idx = encodeIndices(DataType::Int64, {1, 5, -4, 0});
  for (OobPolicy Policy : {OobPolicy::Check, OobPolicy::Clamp}) {
    Expected<ValidDesc> V = validateOnnx(
        {OpKind::Gather, tensor(DataType::Float32, {0, 3}), tensor(DataType::Int64, {2, 2}), 1},
        Policy);
    ASSERT_TRUE(V.isOk()) << V.status().message();
    Expected<Kernel> K = RT->compile(*V);
    ASSERT_TRUE(K.isOk());
    const Status S = K->run(nullptr, Idx.data(), nullptr);
    if (Policy == OobPolicy::Clamp) {
      EXPECT_TRUE(S.isOk()) << S.message();
      continue;
    }
    ASSERT_EQ(S.code(), ErrorCode::IndexOutOfRange) << S.message();
    EXPECT_EQ(S.position(), 1u);
    EXPECT_THAT(S.message(), ::testing::HasSubstr("= 5 (position 1)"));
  }
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

bool waitForLevel(const Kernel &K, OptLevel Level) {
  const auto Deadline = std::chrono::steady_clock::now() + std::chrono::seconds(60);
  while (K.optLevel() != Level && std::chrono::steady_clock::now() < Deadline)
    std::this_thread::sleep_for(std::chrono::milliseconds(1));
  return K.optLevel() == Level;
}

TEST(Runtime, TheQuickTierTakesKernelsOfAtMost64KiBAtO2) {
  RuntimeOptions O;
  O.Specialization = Specialize::AtCompile; // These tests are about compiled code.
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
  // 64 KiB of output: the upgrade is due once the kernel is hot (3 runs).
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
  EXPECT_THAT(*Asm, ::testing::HasSubstr("\tret"));
}

} // namespace

TEST(Runtime, PerfMapNamesEachKernelAtItsAddress) {
  RuntimeOptions O;
  O.Specialization = Specialize::AtCompile; // These tests are about compiled code.
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
