//===- tests/runtime/RowStrategyTest.cpp - Each plan against the oracle --===//
//
// One test per strategy of compiler/plan/KernelPlan.h, on a case the plan
// chooses it for (asserted), run through the JIT against the interpreter:
// results, the first bad index, ranges of rows and output alignments.
//
//===----------------------------------------------------------------------===//

#include "RuntimeTestUtil.h"
#include "compiler/backend/Backend.h"
#include "compiler/backend/Target.h"

#include <gtest/gtest.h>

#include <cstring>
#include <random>

using namespace gatherjit;
using namespace gatherjit::test;

namespace {

/// The host backend's facts (what the runtime's plans follow).
TargetFacts hostFacts() {
  Expected<std::unique_ptr<CodeGenerator>> Gen = createCodeGenerator({}, OptLevel::O2);
  EXPECT_TRUE(Gen.isOk());
  return Gen ? backendFor(**Gen)->facts() : TargetFacts{};
}

TEST(Runtime, PrefetchingRowsFromALargeTableKeepsResultsAndErrors) {
  // A 1 MiB table: block rows prefetch rows ahead. The lookahead must
  // read no index past the range it was given and change no result.
  auto RT = makeRuntime();
  const uint64_t Rows = 2048, Cols = 128, Ids = 37;
  Expected<GatherDesc> D =
      onnxGather(tensor(DataType::Float32, {Rows, Cols}), tensor(DataType::Int32, {Ids}), 0);
  ASSERT_TRUE(D.isOk());
  Expected<ValidDesc> V = validate(*D);
  ASSERT_TRUE(V.isOk());
  EXPECT_EQ(planOf(*V).PrefetchRowsAhead, 8u); // 12 KiB of 512-byte rows, at most 8.
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
  Expected<GatherDesc> D =
      onnxGather(tensor(Type, {Rows, Cols}), tensor(DataType::Int64, {Ids}), 0);
  ASSERT_TRUE(D.isOk());
  Expected<ValidDesc> V = validate(*D);
  ASSERT_TRUE(V.isOk());
  Expected<Kernel> K = RT.compile(*V);
  ASSERT_TRUE(K.isOk());
  const size_t Elem = dataTypeSize(Type);
  std::vector<char> Table = patternBuffer(Rows * Cols, Elem);
  std::vector<int64_t> Idx(Ids);
  for (uint64_t I = 0; I < Ids; ++I)
    Idx[I] =
        static_cast<int64_t>((I * 7919) % Rows) - (I % 3 == 1 ? static_cast<int64_t>(Rows) : 0);
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

/// Runs \p K into an output \p Skews bytes past a 64-byte boundary, each
/// in turn: \p Ref's bytes, and nothing written before or after them.
void expectSameBytesAtSkews(const Kernel &K, const void *Table, const void *Idx,
                            const std::vector<char> &Ref, std::initializer_list<size_t> Skews) {
  std::vector<char> Buffer(Ref.size() + 128);
  char *Aligned = Buffer.data() + (64 - reinterpret_cast<uintptr_t>(Buffer.data()) % 64);
  for (size_t Skew : Skews) {
    SCOPED_TRACE("output 64-byte aligned + " + std::to_string(Skew));
    char *Out = Aligned + Skew;
    std::memset(Buffer.data(), 0x5a, Buffer.size());
    ASSERT_TRUE(K.run(Table, Idx, Out).isOk());
    EXPECT_EQ(0, std::memcmp(Ref.data(), Out, Ref.size()));
    EXPECT_EQ(std::string(Out - Buffer.data(), 0x5a), std::string(Buffer.data(), Out));
    EXPECT_EQ(std::string(Buffer.data() + Buffer.size() - (Out + Ref.size()), 0x5a),
              std::string(Out + Ref.size(), Buffer.data() + Buffer.size()));
  }
}

TEST(Runtime, BlockRowsMatchTheInterpreterAtAnyOutputAlignment) {
  // Rows of 256 bytes up under the non-temporal size: on a target with
  // cheap masked stores (TargetFacts::MaskedByteStores) an unaligned
  // output's rows store a masked head, aligned vectors and a masked tail;
  // rows of 260 and 1001 bytes end inside a vector. Every skew of the
  // output, and nothing written outside it.
  auto RT = makeRuntime();
  const uint64_t Rows = 3000, Ids = 150;
  for (auto [Type, Cols] : {std::pair{DataType::Float32, uint64_t(64)},
                            {DataType::Float32, uint64_t(65)},
                            {DataType::UInt8, uint64_t(1001)},
                            {DataType::Float64, uint64_t(128)}}) {
    const uint64_t Elem = dataTypeSize(Type);
    SCOPED_TRACE("rows of " + std::to_string(Cols * Elem) + " bytes");
    Expected<GatherDesc> D =
        onnxGather(tensor(Type, {Rows, Cols}), tensor(DataType::Int64, {Ids}), 0);
    ASSERT_TRUE(D.isOk());
    Expected<ValidDesc> V = validate(*D);
    ASSERT_TRUE(V.isOk());
    const TargetFacts Facts = hostFacts();
    EXPECT_EQ(planKernel(canonicalize(*V), Facts).AlignStores, Facts.MaskedByteStores);
    Expected<Kernel> K = RT->compile(*V);
    ASSERT_TRUE(K.isOk());
    std::vector<char> Table = patternBuffer(Rows * Cols, Elem);
    std::vector<int64_t> Idx(Ids);
    for (uint64_t I = 0; I < Ids; ++I)
      Idx[I] = static_cast<int64_t>((I * 7919) % Rows) - (I % 3 == 1 ? int64_t(Rows) : 0);
    std::vector<char> Ref(Ids * Cols * Elem);
    ASSERT_TRUE(interpret(*V, Table.data(), Idx.data(), Ref.data()).isOk());
    expectSameBytesAtSkews(*K, Table.data(), Idx.data(), Ref,
                           {0, 1, 2, 3, 4, 5, 6, 7, 8, 15, 22, 29, 36, 43, 50, 57});
  }
}

TEST(Runtime, TakesFromTablesBeyondTheCoresCachesMatchTheInterpreter) {
  // 1-D takes from tables of 4 MiB (FLOAT32 by INT64, FLOAT64 by INT32),
  // which load their elements one by one into vectors where the host's
  // gathers lose beyond its caches (TargetFacts::GathersLoseBeyondCore),
  // and of 16 MiB, which run a loop of one element an iteration that
  // branches on a bad index (KernelPlan::ScalarLoop); and GatherElements
  // along rows of 16 MiB. Ids spread over the table, some negative; then
  // two out of range: under Check the first one's position is reported,
  // under Clamp the last element is read for a large one and the first
  // for one negative past the wrap, and Clip reads the first for any
  // negative id.
  auto RT = makeRuntime();
  const TargetFacts Facts = hostFacts();
  const uint64_t Ids = 5000;
  struct Case {
    DataType Type, IdType;
    uint64_t TableBytes, Rows;
  };
  for (const Case &C : {Case{DataType::Float32, DataType::Int64, 4u << 20, 1},
                        Case{DataType::Float64, DataType::Int32, 4u << 20, 1},
                        Case{DataType::Float32, DataType::Int64, 16u << 20, 1},
                        Case{DataType::Float64, DataType::Int32, 16u << 20, 1},
                        Case{DataType::Float32, DataType::Int64, 16u << 20, 2}}) {
    const unsigned Elem = C.Type == DataType::Float32 ? 4 : 8;
    const uint64_t N = C.TableBytes / Elem, Count = C.Rows * Ids;
    SCOPED_TRACE(std::string(dataTypeName(C.Type)) + " by " + dataTypeName(C.IdType) + ", " +
                 std::to_string(C.Rows) + " rows of " + std::to_string(C.TableBytes) + " bytes");
    std::vector<char> Table = patternBuffer(C.Rows * N, Elem);
    std::vector<int64_t> Values(Count);
    for (uint64_t I = 0; I < Count; ++I)
      Values[I] = static_cast<int64_t>((I * 2654435761u) % N) - (I % 5 == 2 ? int64_t(N) : 0);
    for (OobPolicy Policy : {OobPolicy::Check, OobPolicy::Clamp, OobPolicy::Clip}) {
      SCOPED_TRACE(oobPolicyName(Policy));
      Expected<ValidDesc> V =
          C.Rows == 1
              ? validateOnnx({OpKind::Gather, tensor(C.Type, {N}), tensor(C.IdType, {Ids}), 0},
                             Policy)
              : validateOnnx({OpKind::GatherElements, tensor(C.Type, {C.Rows, N}),
                              tensor(C.IdType, {C.Rows, Ids}), 1},
                             Policy);
      ASSERT_TRUE(V.isOk()) << V.status().message();
      const KernelPlan Plan = planKernel(canonicalize(*V), Facts);
      // (Where gathers do not lose beyond the core, whether the elements
      // load one by one is another rule's: GathersOnlyFromMemory.)
      const bool Beyond = Facts.GathersLoseBeyondCore, Large = C.TableBytes >= (16u << 20);
      if (Beyond) {
        EXPECT_EQ(Plan.ScalarGathers, !Large) << Plan.describe();
      }
      EXPECT_EQ(Plan.ScalarLoop, Beyond && Large) << Plan.describe();
      Expected<Kernel> K = RT->compile(*V);
      ASSERT_TRUE(K.isOk()) << K.status().message();
      const uint64_t First = Count - 1999, Second = Count - 999;
      for (bool Bad : {false, true}) {
        std::vector<int64_t> Used = Values;
        if (Bad) {
          Used[First] = static_cast<int64_t>(N);
          Used[Second] = -2 * static_cast<int64_t>(N);
        }
        const std::vector<char> Idx = encodeIndices(C.IdType, Used);
        std::vector<char> Out(Count * Elem, '\x11'), Ref(Count * Elem, '\x22');
        const Status RS = interpret(*V, Table.data(), Idx.data(), Ref.data());
        const Status JS = K->run(Table.data(), Idx.data(), Out.data());
        ASSERT_EQ(RS.code(), JS.code()) << JS.message();
        if (Bad && Policy == OobPolicy::Check) {
          EXPECT_EQ(JS.position(), First);
          continue;
        }
        ASSERT_TRUE(JS.isOk()) << JS.message();
        EXPECT_EQ(Out, Ref);
        // Worked out by hand: the large id reads its row's last element,
        // the negative one its first.
        const char *Row = Table.data() + (C.Rows - 1) * N * Elem;
        if (Bad) {
          EXPECT_EQ(0, std::memcmp(Out.data() + First * Elem, Row + (N - 1) * Elem, Elem));
          EXPECT_EQ(0, std::memcmp(Out.data() + Second * Elem, Row, Elem));
        }
      }
    }
  }
}

TEST(Runtime, BlockRowsFromAnInputOffTheLinesMatchTheInterpreter) {
  // Rows of 1 KiB and more from an input that starts at each skew past a
  // line (KernelPlan::AlignLoads on a target with AVX-512F): into an
  // aligned output, a skew of whole 4-byte lanes loads the row's lines
  // aligned and shifts them; any other skew, or an unaligned output, takes
  // the plain copy. Rows of 1028 and 1200 bytes end inside a line, and the
  // 1090-byte rows of UINT8 start at a different skew each.
  auto RT = makeRuntime();
  const uint64_t Rows = 40, Ids = 60;
  const TargetFacts Facts = hostFacts();
  for (auto [Type, Cols] : {std::pair{DataType::Float32, uint64_t(256)},
                            {DataType::Float32, uint64_t(257)},
                            {DataType::Float16, uint64_t(600)},
                            {DataType::Float64, uint64_t(160)},
                            {DataType::UInt8, uint64_t(1090)}}) {
    const uint64_t Elem = dataTypeSize(Type), RowBytes = Cols * Elem;
    SCOPED_TRACE("rows of " + std::to_string(RowBytes) + " bytes");
    Expected<GatherDesc> D =
        onnxGather(tensor(Type, {Rows, Cols}), tensor(DataType::Int64, {Ids}), 0);
    ASSERT_TRUE(D.isOk());
    Expected<ValidDesc> V = validate(*D);
    ASSERT_TRUE(V.isOk());
    EXPECT_EQ(planKernel(canonicalize(*V), Facts).AlignLoads,
              Facts.PermuteBytes == 64 && Facts.VectorBytes == 64);
    Expected<Kernel> K = RT->compile(*V);
    ASSERT_TRUE(K.isOk());
    const std::vector<char> Table = patternBuffer(Rows * Cols, Elem);
    std::vector<int64_t> Idx(Ids);
    for (uint64_t I = 0; I < Ids; ++I) // The first and the last row among them.
      Idx[I] = static_cast<int64_t>((I * 13) % Rows) - (I % 4 == 3 ? int64_t(Rows) : 0);
    Idx[1] = int64_t(Rows) - 1;
    std::vector<char> Ref(Ids * RowBytes);
    ASSERT_TRUE(interpret(*V, Table.data(), Idx.data(), Ref.data()).isOk());
    std::vector<char> InBuffer(Table.size() + 128), OutBuffer(Ref.size() + 128);
    auto Aligned = [](std::vector<char> &Buf) {
      return Buf.data() + (64 - reinterpret_cast<uintptr_t>(Buf.data()) % 64);
    };
    for (size_t InSkew : {0, 4, 8, 16, 20, 32, 44, 48, 60, 1, 2, 3, 17, 62})
      for (size_t OutSkew : {0, 16}) {
        SCOPED_TRACE("input 64-byte aligned + " + std::to_string(InSkew) + ", output + " +
                     std::to_string(OutSkew));
        char *In = Aligned(InBuffer) + InSkew, *Out = Aligned(OutBuffer) + OutSkew;
        std::memcpy(In, Table.data(), Table.size());
        std::memset(OutBuffer.data(), 0x5a, OutBuffer.size());
        ASSERT_TRUE(K->run(In, Idx.data(), Out).isOk());
        ASSERT_EQ(0, std::memcmp(Ref.data(), Out, Ref.size()));
        EXPECT_EQ(std::string(Out - OutBuffer.data(), 0x5a), std::string(OutBuffer.data(), Out));
        EXPECT_EQ(std::string(OutBuffer.data() + OutBuffer.size() - (Out + Ref.size()), 0x5a),
                  std::string(Out + Ref.size(), OutBuffer.data() + OutBuffer.size()));
      }
  }
}

TEST(Runtime, StreamedBlockRowsMatchTheInterpreterAtAnyOutputAlignment) {
  // Over 16 MiB of output: each row's whole 64-byte lines are written with
  // non-temporal stores, the bytes before and after them plainly, whatever
  // the output's alignment. Rows of 2048 bytes are whole lines at an aligned
  // output; 2080-byte rows end 32 bytes into a line. The skews give the
  // plain heads and tails every size class of their copy (0, 1, 2-3, 4-7,
  // 8-15, 16-31, 32-63 bytes).
  auto RT = makeRuntime();
  const uint64_t Rows = 2048, Ids = 8300;
  for (uint64_t Cols : {512, 520}) {
    SCOPED_TRACE("rows of " + std::to_string(Cols * 4) + " bytes");
    Expected<GatherDesc> D =
        onnxGather(tensor(DataType::Float32, {Rows, Cols}), tensor(DataType::Int64, {Ids}), 0);
    ASSERT_TRUE(D.isOk());
    Expected<ValidDesc> V = validate(*D);
    ASSERT_TRUE(V.isOk());
    EXPECT_TRUE(planOf(*V).NonTemporal);
    Expected<Kernel> K = RT->compile(*V);
    ASSERT_TRUE(K.isOk());
    std::vector<char> Table = patternBuffer(Rows * Cols, 4);
    std::vector<int64_t> Idx(Ids);
    for (uint64_t I = 0; I < Ids; ++I)
      Idx[I] = static_cast<int64_t>((I * 7919) % Rows) - (I % 3 == 1 ? int64_t(Rows) : 0);
    std::vector<char> Ref(Ids * Cols * 4);
    ASSERT_TRUE(interpret(*V, Table.data(), Idx.data(), Ref.data()).isOk());
    expectSameBytesAtSkews(*K, Table.data(), Idx.data(), Ref,
                           {0, 1, 2, 4, 7, 8, 16, 31, 32, 33, 48, 54, 60, 61, 63});
    std::vector<int64_t> Bad = Idx;
    Bad[5000] = static_cast<int64_t>(Rows);
    std::vector<char> Out(Ref.size() + 33);
    Status S = K->run(Table.data(), Bad.data(), Out.data() + 33);
    ASSERT_EQ(S.code(), ErrorCode::IndexOutOfRange);
    EXPECT_EQ(S.position(), 5000u);
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
    EXPECT_TRUE(planOf(*V).StreamIndices);
    EXPECT_TRUE(planOf(*V).PrefetchNextInputRow);
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
    EXPECT_TRUE(planOf(*V).NonTemporal);
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
    Expected<GatherDesc> D =
        onnxGather(tensor(DataType::Float32, {Rows, Cols}), tensor(DataType::Int32, {50, 40}), 1);
    ASSERT_TRUE(D.isOk());
    ValidateOptions O;
    O.Policy = Policy;
    Expected<ValidDesc> V = validate(*D, O);
    ASSERT_TRUE(V.isOk());
    EXPECT_EQ(planOf(*V).Row, RowKind::SharedIndices);
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

TEST(Runtime, RowsThatLoadTheirInputRowFirstMatchTheInterpreter) {
  // Gathers along axis 1 whose rows all read the same ids, about one for
  // every line of their own input row: FLOAT32 [300, 1000] by 300 ids (a
  // table of offsets; rows of 4000 bytes, not whole lines) and [64, 40000]
  // by 10000 (streamed element rows). Each row loads its input row first.
  struct Shape {
    uint64_t Rows, Cols, Ids;
  };
  for (const Shape &Sh : {Shape{300, 1000, 300}, Shape{64, 40000, 10000}})
    for (OobPolicy Policy : {OobPolicy::Check, OobPolicy::Clamp})
      for (unsigned Threads : {1u, 2u}) {
        SCOPED_TRACE("[" + std::to_string(Sh.Rows) + ", " + std::to_string(Sh.Cols) + "] by " +
                     std::to_string(Sh.Ids) + (Policy == OobPolicy::Check ? ", check" : ", clamp") +
                     ", threads " + std::to_string(Threads));
        auto RT = makeRuntime(16, Threads);
        Expected<GatherDesc> D = onnxGather(tensor(DataType::Float32, {Sh.Rows, Sh.Cols}),
                                            tensor(DataType::Int64, {Sh.Ids}), 1);
        ASSERT_TRUE(D.isOk());
        ValidateOptions O;
        O.Policy = Policy;
        Expected<ValidDesc> V = validate(*D, O);
        ASSERT_TRUE(V.isOk());
        EXPECT_TRUE(planOf(*V).TouchInputRow) << planOf(*V).describe();
        Expected<Kernel> K = RT->compile(*V);
        ASSERT_TRUE(K.isOk());
        std::vector<char> In = patternBuffer(Sh.Rows * Sh.Cols, 4);
        for (bool Bad : {false, true}) {
          std::vector<int64_t> Used = validIndices(Sh.Ids, Sh.Cols, Sh.Ids);
          if (Bad) { // The first bad one at the middle id.
            Used[Sh.Ids / 2] = static_cast<int64_t>(Sh.Cols);
            Used[Sh.Ids - 1] = -static_cast<int64_t>(Sh.Cols) - 1;
          }
          const std::vector<char> Bytes = encodeIndices(DataType::Int64, Used);
          std::vector<char> Out(Sh.Rows * Sh.Ids * 4), Ref(Out.size());
          Status JS = K->run(In.data(), Bytes.data(), Out.data());
          Status RS = interpret(*V, In.data(), Bytes.data(), Ref.data());
          ASSERT_EQ(JS.code(), RS.code()) << JS.message();
          if (Bad && Policy == OobPolicy::Check) {
            EXPECT_EQ(JS.position(), Sh.Ids / 2);
          } else {
            ASSERT_TRUE(JS.isOk()) << JS.message();
            EXPECT_EQ(Out, Ref);
          }
        }
      }
}

TEST(Runtime, LongRowsWithIndicesOfTheirOwnLoadTheirInputRowFirstAndMatchTheInterpreter) {
  // GatherElements of FLOAT32 [5, 262150] along rows of just over 1 MiB
  // (not whole lines) by streamed INT64 indices: each row loads its input
  // row first.
  const uint64_t Rows = 5, Cols = 262150;
  for (OobPolicy Policy : {OobPolicy::Check, OobPolicy::Clamp})
    for (unsigned Threads : {1u, 2u}) {
      SCOPED_TRACE(std::string(Policy == OobPolicy::Check ? "check" : "clamp") + ", threads " +
                   std::to_string(Threads));
      auto RT = makeRuntime(16, Threads);
      ValidateOptions O;
      O.Policy = Policy;
      Expected<ValidDesc> V = validate(ge(Rows, Cols), O);
      ASSERT_TRUE(V.isOk());
      EXPECT_TRUE(planOf(*V).TouchInputRow) << planOf(*V).describe();
      Expected<Kernel> K = RT->compile(*V);
      ASSERT_TRUE(K.isOk());
      const std::vector<char> In = patternBuffer(Rows * Cols, 4);
      for (bool Bad : {false, true}) {
        std::vector<int64_t> Used = validIndices(Rows * Cols, Cols, 3);
        if (Bad) { // The first bad one in row 3.
          Used[3 * Cols + 1000] = static_cast<int64_t>(Cols);
          Used[4 * Cols + 7] = -static_cast<int64_t>(Cols) - 1;
        }
        const std::vector<char> Bytes = encodeIndices(DataType::Int64, Used);
        std::vector<char> Out(Rows * Cols * 4), Ref(Out.size());
        Status JS = K->run(In.data(), Bytes.data(), Out.data());
        Status RS = interpret(*V, In.data(), Bytes.data(), Ref.data());
        ASSERT_EQ(JS.code(), RS.code()) << JS.message();
        if (Bad && Policy == OobPolicy::Check) {
          EXPECT_EQ(JS.position(), 3 * Cols + 1000);
        } else {
          ASSERT_TRUE(JS.isOk()) << JS.message();
          EXPECT_EQ(Out, Ref);
        }
      }
    }
}

TEST(Runtime, RowsGatheringAcrossASliceFetchItAndMatchTheInterpreter) {
  // GatherElements along axis 1 of [16, 256, 128] by [16, I, 128]: the I
  // rows of each slice gather from the same 128 KiB slice. 100 rows read
  // it 25 times a line and load it whole first; 7 rows, less than once
  // for every two lines, prefetch the next slice in shares.
  for (const uint64_t I : {100u, 7u}) {
    SCOPED_TRACE(std::to_string(I) + " rows a slice");
    auto RT = makeRuntime();
    const uint64_t A = 16, N = 256, K = 128;
    GatherElementsDesc D{tensor(DataType::Float32, {A, N, K}), tensor(DataType::Int64, {A, I, K}),
                         tensor(DataType::Float32, {A, I, K}), 1};
    Expected<ValidDesc> V = validate(D);
    ASSERT_TRUE(V.isOk());
    EXPECT_EQ(planOf(*V).TouchRegion, I == 100) << planOf(*V).describe();
    EXPECT_EQ(planOf(*V).PrefetchNextRegion, I == 7) << planOf(*V).describe();
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
}

TEST(Runtime, TilesOfLongInputRowsMatchTheInterpreterAndNameTheFirstBadIndex) {
  // GatherElements along an axis whose input rows are longer than a page,
  // from an input of more than 8 MiB: rows in tiles of 2 KiB of columns,
  // the last tile partly filled. Under Check a bad index found in a later
  // tile's early row is not the first: one in an earlier row's last tile is.
  auto RT = makeRuntime();
  struct Case {
    DataType Type, IndexType;
    std::vector<uint64_t> Data, Indices;
    uint64_t Axis, Tile;
  };
  const Case Cases[] = {
      {DataType::Float32, DataType::Int64, {2100, 1100}, {300, 1100}, 0, 512},
      {DataType::UInt8, DataType::Int32, {2100, 5000}, {64, 5000}, 0, 2048},
      {DataType::Float16, DataType::Int64, {2, 2100, 2100}, {2, 50, 2100}, 1, 1024},
  };
  for (const Case &C : Cases) {
    for (OobPolicy Policy : {OobPolicy::Check, OobPolicy::Clamp}) {
      SCOPED_TRACE(std::string(dataTypeName(C.Type)) + " " + oobPolicyName(Policy));
      ValidateOptions O;
      O.Policy = Policy;
      O.AllowSmallerIndices = true;
      Expected<ValidDesc> V =
          validate(GatherElementsDesc{tensor(C.Type, C.Data), tensor(C.IndexType, C.Indices),
                                      tensor(C.Type, C.Indices), static_cast<uint32_t>(C.Axis)},
                   O);
      ASSERT_TRUE(V.isOk()) << V.status().message();
      ASSERT_EQ(planOf(*V).TileColumns, C.Tile);
      Expected<Kernel> K = RT->compile(*V);
      ASSERT_TRUE(K.isOk()) << K.status().message();
      const uint64_t Axis = C.Data[C.Axis], Cols = C.Indices.back();
      uint64_t Count = 1, InCount = 1;
      for (uint64_t N : C.Indices)
        Count *= N;
      for (uint64_t N : C.Data)
        InCount *= N;
      // Clamp: indices a little past either end of the axis too.
      std::vector<int64_t> Idx = validIndices(Count, Axis, Count + Axis);
      if (Policy == OobPolicy::Clamp)
        for (uint64_t I = 0; I < Count; I += 7)
          Idx[I] = I % 2 ? static_cast<int64_t>(Axis + I % 5) : -static_cast<int64_t>(Axis) - 3;
      const size_t Elem = dataTypeSize(C.Type);
      std::vector<char> In = patternBuffer(InCount, static_cast<unsigned>(Elem));
      std::vector<char> Bytes = encodeIndices(C.IndexType, Idx);
      std::vector<char> Out(Count * Elem), Ref(Out.size());
      ASSERT_TRUE(interpret(*V, In.data(), Bytes.data(), Ref.data()).isOk());
      ASSERT_TRUE(K->run(In.data(), Bytes.data(), Out.data()).isOk());
      EXPECT_TRUE(Out == Ref) << "outputs differ";
      if (Policy != OobPolicy::Check)
        continue;
      // Row 3's last column (the last tile) and row 20's column 1 (the
      // first tile, reached first), in the first block of rows.
      const uint64_t Late = 3 * Cols + Cols - 1, Early = 20 * Cols + 1;
      std::vector<int64_t> WithBad = Idx;
      WithBad[Late] = static_cast<int64_t>(Axis);
      WithBad[Early] = static_cast<int64_t>(Axis + 1);
      Bytes = encodeIndices(C.IndexType, WithBad);
      Status S = K->run(In.data(), Bytes.data(), Out.data());
      Status RS = interpret(*V, In.data(), Bytes.data(), Ref.data());
      ASSERT_EQ(S.code(), ErrorCode::IndexOutOfRange) << S.message();
      EXPECT_EQ(S.position(), RS.position());
      EXPECT_EQ(S.position(), Late);
      // Rows from 4 on (a range of dimension 0, as a thread runs it) find
      // the early one; rows of another range find none.
      if (C.Axis == 0) {
        S = K->runRows(In.data(), Bytes.data(), Out.data(), 4, K->rows());
        ASSERT_EQ(S.code(), ErrorCode::IndexOutOfRange) << S.message();
        EXPECT_EQ(S.position(), Early);
        EXPECT_TRUE(K->runRows(In.data(), Bytes.data(), Out.data(), 21, K->rows()).isOk());
      }
    }
  }
}

/// GatherElements of \p Type [Rows, Axis] by \p IndexType [Rows, Cols] on
/// axis 1 under \p Policy, through \p RT against the interpreter: indices
/// over [-Axis - 2, Axis + 2) (Clamp, Clip), or valid ones and then one bad
/// index at each end of a row (Check). Returns whether the plan permutes.
bool expectSmallAxisGatherMatches(Runtime &RT, const TargetFacts &Facts, DataType Type,
                                  DataType IndexType, OobPolicy Policy, uint64_t Rows,
                                  uint64_t Axis, uint64_t Cols, uint64_t Seed) {
  SCOPED_TRACE(std::string(dataTypeName(Type)) + " [" + std::to_string(Rows) + ", " +
               std::to_string(Axis) + "] by " + dataTypeName(IndexType) + " [" +
               std::to_string(Rows) + ", " + std::to_string(Cols) + "], " + oobPolicyName(Policy));
  ValidateOptions O;
  O.Policy = Policy;
  O.AllowSmallerIndices = true;
  Expected<ValidDesc> V =
      validate(GatherElementsDesc{tensor(Type, {Rows, Axis}), tensor(IndexType, {Rows, Cols}),
                                  tensor(Type, {Rows, Cols}), 1},
               O);
  EXPECT_TRUE(V.isOk()) << V.status().message();
  if (!V)
    return false;
  const bool Permutes = planKernel(canonicalize(*V), Facts).Row == RowKind::Permute;
  Expected<Kernel> K = RT.compile(*V);
  EXPECT_TRUE(K.isOk()) << K.status().message();
  if (!K)
    return false;
  const bool Signed = IndexType == DataType::Int32 || IndexType == DataType::Int64;
  std::mt19937_64 Rng(Seed);
  std::vector<int64_t> Idx(Rows * Cols);
  const int64_t A = static_cast<int64_t>(Axis);
  for (int64_t &I : Idx) {
    const int64_t Span = Policy == OobPolicy::Check ? (Signed ? 2 * A : A) : 2 * A + 4;
    const int64_t Low = Policy == OobPolicy::Check ? (Signed ? -A : 0) : (Signed ? -A - 2 : 0);
    I = Low + static_cast<int64_t>(Rng() % static_cast<uint64_t>(Span));
  }
  const size_t Elem = dataTypeSize(Type);
  std::vector<char> Data = patternBuffer(Rows * Axis, static_cast<unsigned>(Elem));
  std::vector<char> Ref(Rows * Cols * Elem, '\x5a'), Out(Ref.size() + 2 * Elem, '\x5a');
  char *At = Out.data() + Elem; // A guard element either side.
  std::vector<char> Bytes = encodeIndices(IndexType, Idx);
  EXPECT_TRUE(interpret(*V, Data.data(), Bytes.data(), Ref.data()).isOk());
  EXPECT_TRUE(K->run(Data.data(), Bytes.data(), At).isOk());
  EXPECT_EQ(0, std::memcmp(Ref.data(), At, Ref.size())) << "outputs differ";
  for (size_t G = 0; G < Elem; ++G)
    EXPECT_TRUE(Out[G] == '\x5a' && Out[Out.size() - 1 - G] == '\x5a') << "wrote outside";
  if (Policy == OobPolicy::Check) {
    // One bad index, in a full vector of a row, then one in a row's tail.
    for (uint64_t Bad : {Cols + 1, Rows * Cols - 1}) {
      std::vector<int64_t> WithBad = Idx;
      WithBad[Bad] = A + static_cast<int64_t>(Bad % 3);
      if (Signed && Bad % 2)
        WithBad[Bad] = -A - 1;
      std::vector<char> BadBytes = encodeIndices(IndexType, WithBad);
      Status S = K->run(Data.data(), BadBytes.data(), At);
      Status RS = interpret(*V, Data.data(), BadBytes.data(), Ref.data());
      EXPECT_EQ(S.code(), ErrorCode::IndexOutOfRange);
      EXPECT_EQ(S.position(), RS.position());
      EXPECT_EQ(S.position(), Bad);
    }
  }
  return Permutes;
}

TEST(Runtime, RowsPermutedFromRegistersMatchTheInterpreter) {
  // Rows gathering from a short contiguous input row: on a host with
  // variable permutes (AVX-512) the plan loads the row into 1 to 4
  // registers and permutes each vector of outputs out of them; elsewhere
  // the same cases run element rows.
  const TargetFacts Facts = hostFacts();
  auto RT = makeRuntime(64);
  const DataType IndexTypes[] = {DataType::Int64, DataType::Int32, DataType::UInt32,
                                 DataType::UInt64};
  const OobPolicy Policies[] = {OobPolicy::Check, OobPolicy::Clamp, OobPolicy::Clip};
  int Permuted = 0, Case = 0;
  for (DataType Type : {DataType::Float32, DataType::Int64})
    for (uint64_t Axis : {1, 7, 8, 16, 17, 32, 33, 48, 64, 65})
      for (uint64_t Cols : {4, 13, 16, 37}) {
        const DataType IndexType = IndexTypes[Case % 4];
        const OobPolicy Policy = Policies[Case % 3];
        Permuted += expectSmallAxisGatherMatches(*RT, Facts, Type, IndexType, Policy, 5, Axis, Cols,
                                                 static_cast<uint64_t>(++Case));
        if (HasFailure())
          return;
      }
  if (Facts.PermuteBytes) {
    EXPECT_GE(Permuted, 50) << "cases the plan permutes";
  } else {
    EXPECT_EQ(Permuted, 0);
  }
}

TEST(Runtime, ALookupInASmallTablePermutesAnyRangeOfItsIndices) {
  // Gather of a 1-D table of 40 FLOAT32 by 103 indices: rank 1, one row,
  // whose range [Begin, End) comes with the call (tails of any length).
  const TargetFacts Facts = hostFacts();
  auto RT = makeRuntime();
  Expected<GatherDesc> D =
      onnxGather(tensor(DataType::Float32, {40}), tensor(DataType::Int64, {103}), 0);
  ASSERT_TRUE(D.isOk());
  Expected<ValidDesc> V = validate(*D);
  ASSERT_TRUE(V.isOk());
  if (Facts.PermuteBytes) {
    EXPECT_EQ(planKernel(canonicalize(*V), Facts).Row, RowKind::Permute);
  }
  Expected<Kernel> K = RT->compile(*V);
  ASSERT_TRUE(K.isOk());
  std::vector<char> Table = patternBuffer(40, 4);
  std::vector<int64_t> Idx(103);
  for (uint64_t I = 0; I < Idx.size(); ++I)
    Idx[I] = static_cast<int64_t>((I * 37) % 80) - 40;
  std::vector<char> Ref(103 * 4), Split(Ref.size(), '\x5a');
  ASSERT_TRUE(interpret(*V, Table.data(), Idx.data(), Ref.data()).isOk());
  for (uint64_t Begin = 0; Begin < 103; Begin += 23)
    ASSERT_TRUE(K->runRows(Table.data(), Idx.data(), Split.data(), Begin,
                           std::min<uint64_t>(103, Begin + 23))
                    .isOk());
  EXPECT_EQ(Ref, Split);
  Idx[70] = 40;
  Status S = K->runRows(Table.data(), Idx.data(), Split.data(), 69, 75);
  ASSERT_EQ(S.code(), ErrorCode::IndexOutOfRange);
  EXPECT_EQ(S.position(), 70u);
}

} // namespace
