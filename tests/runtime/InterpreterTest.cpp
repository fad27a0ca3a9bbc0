//===- tests/runtime/InterpreterTest.cpp - The reference, by hand --------===//
//
// Expected outputs here are worked out by hand (or copied from the seed
// documents), never computed by the code under test.
//
//===----------------------------------------------------------------------===//

#include "gatherjit/Interpreter.h"
#include "gatherjit/Onnx.h"

#include "SeedExamples.h"
#include "TestUtil.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

using namespace gatherjit;
using namespace gatherjit::test;
using ::testing::HasSubstr;

namespace {

TEST(Interpreter, SeedExamplesGiveTheDocumentsOutputs) {
  std::vector<SeedExample> Examples = seedExamples();
  ASSERT_EQ(Examples.size(), 8u);
  for (const SeedExample &E : Examples) {
    SCOPED_TRACE(E.Name);
    ASSERT_TRUE(E.Desc.isOk()) << E.Desc.status().message();
    EXPECT_EQ(E.Desc->outputElements(), E.ExpectedOutput.size());
    std::vector<float> Out(E.ExpectedOutput.size(), -1);
    std::vector<char> Idx = E.indexBytes();
    ASSERT_TRUE(interpret(*E.Desc, E.Input.data(), Idx.data(), Out.data()).isOk());
    EXPECT_EQ(Out, E.ExpectedOutput);
  }
}

// Input 2x3 (elements 0..5), indices [[2,1,0],[2,0,1]] along axis 1 pick
// input elements 2,1,0,5,3,4. Signed index types spell the 2 in row 1 as -1.
TEST(Interpreter, EveryDataTypeWithEveryIndexType) {
  for (int TI = 0; TI < static_cast<int>(DataType::Opaque); ++TI) {
    const DataType Type = static_cast<DataType>(TI);
    for (DataType IdxType :
         {DataType::Int32, DataType::Int64, DataType::UInt32, DataType::UInt64}) {
      SCOPED_TRACE(std::string(dataTypeName(Type)) + "/" + dataTypeName(IdxType));
      GatherElementsDesc D{tensor(Type, {2, 3}), tensor(IdxType, {2, 3}), tensor(Type, {2, 3}), 1};
      Expected<ValidDesc> V = validate(D);
      ASSERT_TRUE(V.isOk()) << V.status().message();
      const unsigned Bytes = dataTypeSize(Type);
      std::vector<char> In = patternBuffer(6, Bytes);
      const int64_t Last = isSignedIndexType(IdxType) ? -1 : 2;
      std::vector<char> Idx = encodeIndices(IdxType, {2, 1, 0, Last, 0, 1});
      std::vector<char> Out(6 * Bytes);
      ASSERT_TRUE(interpret(*V, In.data(), Idx.data(), Out.data()).isOk());
      EXPECT_EQ(Out, pick(In, Bytes, {2, 1, 0, 5, 3, 4}));
    }
  }
}

TEST(Interpreter, OpaqueElementsMoveWhole) {
  TensorDesc In = tensor(DataType::Opaque, {3});
  In.OpaqueBytes = 5;
  TensorDesc Out = In;
  Out.Sizes = {2};
  Expected<ValidDesc> V = validate(GatherElementsDesc{In, tensor(DataType::Int64, {2}), Out, 0},
                                   {OobPolicy::Check, std::nullopt, true});
  ASSERT_TRUE(V.isOk()) << V.status().message();
  std::vector<char> Buf = patternBuffer(3, 5), Res(10);
  std::vector<char> Idx = encodeIndices(DataType::Int64, {2, 0});
  ASSERT_TRUE(interpret(*V, Buf.data(), Idx.data(), Res.data()).isOk());
  EXPECT_EQ(Res, pick(Buf, 5, {2, 0}));
}

TEST(Interpreter, RankOne) {
  Expected<ValidDesc> V = validate(GatherElementsDesc{
      tensor(DataType::Int32, {4}), tensor(DataType::Int64, {4}), tensor(DataType::Int32, {4}), 0});
  ASSERT_TRUE(V.isOk());
  std::vector<int32_t> In = {10, 20, 30, 40}, Out(4);
  std::vector<char> Idx = encodeIndices(DataType::Int64, {3, -4, 1, -1});
  ASSERT_TRUE(interpret(*V, In.data(), Idx.data(), Out.data()).isOk());
  EXPECT_EQ(Out, (std::vector<int32_t>{40, 10, 20, 40}));
}

TEST(Interpreter, RankEight) {
  // 2x1x1x1x1x1x1x2 along axis 7: a swap of the last dimension.
  std::vector<uint64_t> Sizes = {2, 1, 1, 1, 1, 1, 1, 2};
  Expected<ValidDesc> V =
      validate(GatherElementsDesc{tensor(DataType::UInt16, Sizes), tensor(DataType::Int32, Sizes),
                                  tensor(DataType::UInt16, Sizes), 7});
  ASSERT_TRUE(V.isOk());
  std::vector<uint16_t> In = {1, 2, 3, 4}, Out(4);
  std::vector<char> Idx = encodeIndices(DataType::Int32, {1, 0, 1, 1});
  ASSERT_TRUE(interpret(*V, In.data(), Idx.data(), Out.data()).isOk());
  EXPECT_EQ(Out, (std::vector<uint16_t>{2, 1, 4, 4}));
}

TEST(Interpreter, NegativeAxisThroughOnnx) {
  Expected<GatherElementsDesc> D =
      onnxGatherElements(tensor(DataType::Float32, {2, 2}), tensor(DataType::Int64, {2, 2}), -1);
  ASSERT_TRUE(D.isOk());
  Expected<ValidDesc> V = validate(*D);
  ASSERT_TRUE(V.isOk());
  std::vector<float> In = {1, 2, 3, 4}, Out(4);
  std::vector<char> Idx = encodeIndices(DataType::Int64, {0, 0, 1, 0});
  ASSERT_TRUE(interpret(*V, In.data(), Idx.data(), Out.data()).isOk());
  EXPECT_EQ(Out, (std::vector<float>{1, 1, 4, 3}));
}

TEST(Interpreter, ZeroSizeDimensionsWriteNothing) {
  Expected<ValidDesc> V = validate(GatherElementsDesc{tensor(DataType::Float32, {0, 3}),
                                                      tensor(DataType::Int64, {0, 3}),
                                                      tensor(DataType::Float32, {0, 3}), 1});
  ASSERT_TRUE(V.isOk());
  EXPECT_EQ(V->outputElements(), 0u);
  EXPECT_TRUE(interpret(*V, nullptr, nullptr, nullptr).isOk());
}

TEST(Interpreter, EveryIndexIsCheckedEvenWhereTheOutputIsEmpty) {
  // Gather of [2, 3, 0] on axis 1: an empty output, which interpret()
  // writes nothing of, but whose indices [[1, -3], [3, 0]] it checks
  // against the axis of 3 (ONNX: any index out of range is an error):
  // position 2 is bad. checkEveryIndex alone says the same.
  Expected<ValidDesc> V = validateOnnx(
      {OpKind::Gather, tensor(DataType::Float32, {2, 3, 0}), tensor(DataType::Int64, {2, 2}), 1},
      OobPolicy::Check);
  ASSERT_TRUE(V.isOk()) << V.status().message();
  EXPECT_EQ(V->outputElements(), 0u);
  std::vector<char> Bad = encodeIndices(DataType::Int64, {1, -3, 3, 0});
  for (const Status &S :
       {interpret(*V, nullptr, Bad.data(), nullptr), checkEveryIndex(*V, Bad.data())}) {
    ASSERT_EQ(S.code(), ErrorCode::IndexOutOfRange);
    EXPECT_EQ(S.position(), 2u);
    EXPECT_THAT(S.message(), HasSubstr("= 3"));
  }
  std::vector<char> Good = encodeIndices(DataType::Int64, {1, -3, 2, 0});
  EXPECT_TRUE(checkEveryIndex(*V, Good.data()).isOk());
  EXPECT_TRUE(interpret(*V, nullptr, Good.data(), nullptr).isOk());
  // Clamp: no index is an error.
  Expected<ValidDesc> Clamped = validateOnnx(
      {OpKind::Gather, tensor(DataType::Float32, {2, 3, 0}), tensor(DataType::Int64, {2, 2}), 1},
      OobPolicy::Clamp);
  ASSERT_TRUE(Clamped.isOk());
  EXPECT_TRUE(interpret(*Clamped, nullptr, Bad.data(), nullptr).isOk());
  // Unsigned indices have no negative range; -3 as UINT32 is 4294967293.
  Expected<ValidDesc> U = validateOnnx(
      {OpKind::Gather, tensor(DataType::Float32, {2, 3, 0}), tensor(DataType::UInt32, {2}), 1},
      OobPolicy::Check);
  ASSERT_TRUE(U.isOk());
  std::vector<char> Wrapped =
      encodeIndices(DataType::UInt32, {2, static_cast<int64_t>(4294967293u)});
  EXPECT_EQ(checkEveryIndex(*U, Wrapped.data()).position(), 1u);
  // GatherND: each component against its own dimension, [2, 3] then 0.
  Expected<ValidDesc> N = validateOnnx(
      {OpKind::GatherND, tensor(DataType::Float32, {2, 3, 0}), tensor(DataType::Int64, {2, 2}), 0},
      OobPolicy::Check);
  ASSERT_TRUE(N.isOk()) << N.status().message();
  std::vector<char> Tuples = encodeIndices(DataType::Int64, {1, 2, 1, 3});
  Status T = checkEveryIndex(*N, Tuples.data());
  ASSERT_EQ(T.code(), ErrorCode::IndexOutOfRange);
  EXPECT_EQ(T.position(), 3u);
}

TEST(Interpreter, StridedTransposedAndBroadcastInputs) {
  // Logical input 2x3 stored transposed: buffer [a00 a10 a01 a11 a02 a12].
  std::vector<int32_t> Buf = {0, 10, 1, 11, 2, 12};
  Expected<ValidDesc> V = validate(
      GatherElementsDesc{tensor(DataType::Int32, {2, 3}, std::vector<uint64_t>{1, 2}),
                         tensor(DataType::Int64, {2, 2}), tensor(DataType::Int32, {2, 2}), 1},
      {OobPolicy::Check, std::nullopt, true});
  ASSERT_TRUE(V.isOk()) << V.status().message();
  std::vector<char> Idx = encodeIndices(DataType::Int64, {2, 0, 1, 2});
  std::vector<int32_t> Out(4);
  ASSERT_TRUE(interpret(*V, Buf.data(), Idx.data(), Out.data()).isOk());
  EXPECT_EQ(Out, (std::vector<int32_t>{2, 0, 11, 12}));

  // Broadcast: the same row for both outer coordinates (stride 0).
  std::vector<int32_t> Row = {5, 6, 7};
  V = validate(GatherElementsDesc{tensor(DataType::Int32, {2, 3}, std::vector<uint64_t>{0, 1}),
                                  tensor(DataType::Int64, {2, 3}), tensor(DataType::Int32, {2, 3}),
                                  1});
  ASSERT_TRUE(V.isOk());
  Idx = encodeIndices(DataType::Int64, {2, 1, 0, 0, 0, 1});
  Out.assign(6, 0);
  ASSERT_TRUE(interpret(*V, Row.data(), Idx.data(), Out.data()).isOk());
  EXPECT_EQ(Out, (std::vector<int32_t>{7, 6, 5, 5, 5, 6}));

  // Strided indices and output: every second element.
  std::vector<char> IdxStrided = encodeIndices(DataType::Int64, {1, 99, 0, 99});
  V = validate(GatherElementsDesc{tensor(DataType::Int32, {2}),
                                  tensor(DataType::Int64, {2}, std::vector<uint64_t>{2}),
                                  tensor(DataType::Int32, {2}, std::vector<uint64_t>{2}), 0});
  ASSERT_TRUE(V.isOk());
  std::vector<int32_t> Small = {8, 9}, Spread = {-1, -1, -1, -1};
  ASSERT_TRUE(interpret(*V, Small.data(), IdxStrided.data(), Spread.data()).isOk());
  EXPECT_EQ(Spread, (std::vector<int32_t>{9, -1, 8, -1}));
}

TEST(Interpreter, ClampWrapsNegativesThenClamps) {
  Expected<ValidDesc> V =
      validate(GatherElementsDesc{tensor(DataType::Int32, {3}), tensor(DataType::Int64, {5}),
                                  tensor(DataType::Int32, {5}), 0},
               {OobPolicy::Clamp, std::nullopt, true});
  ASSERT_TRUE(V.isOk());
  std::vector<int32_t> In = {10, 20, 30}, Out(5);
  std::vector<char> Idx = encodeIndices(DataType::Int64, {5, -1, -3, -10, INT64_MIN});
  ASSERT_TRUE(interpret(*V, In.data(), Idx.data(), Out.data()).isOk());
  EXPECT_EQ(Out, (std::vector<int32_t>{30, 30, 10, 10, 10}));
}

TEST(Interpreter, ClipDoesNotWrapNegativesAsNumpysClipDoes) {
  // numpy.take([10, 20, 30], [5, -1, -3, -10, 1], mode="clip") is
  // [30, 10, 10, 10, 20].
  Expected<ValidDesc> V =
      validate(GatherElementsDesc{tensor(DataType::Int32, {3}), tensor(DataType::Int64, {5}),
                                  tensor(DataType::Int32, {5}), 0},
               {OobPolicy::Clip, std::nullopt, true});
  ASSERT_TRUE(V.isOk());
  std::vector<int32_t> In = {10, 20, 30}, Out(5);
  std::vector<char> Idx = encodeIndices(DataType::Int64, {5, -1, -3, -10, 1});
  ASSERT_TRUE(interpret(*V, In.data(), Idx.data(), Out.data()).isOk());
  EXPECT_EQ(Out, (std::vector<int32_t>{30, 10, 10, 10, 20}));
}

TEST(Interpreter, ClampTreatsHugeUnsignedAsTooLarge) {
  Expected<ValidDesc> V =
      validate(GatherElementsDesc{tensor(DataType::Int32, {3}), tensor(DataType::UInt64, {2}),
                                  tensor(DataType::Int32, {2}), 0},
               {OobPolicy::Clamp, std::nullopt, true});
  ASSERT_TRUE(V.isOk());
  std::vector<int32_t> In = {10, 20, 30}, Out(2);
  std::vector<char> Idx = encodeIndices(DataType::UInt64, {-1 /* 2^64-1 */, 0});
  ASSERT_TRUE(interpret(*V, In.data(), Idx.data(), Out.data()).isOk());
  EXPECT_EQ(Out, (std::vector<int32_t>{30, 10}));
}

TEST(Interpreter, ClampIntoAnEmptyAxisWritesZeros) {
  Expected<ValidDesc> V =
      validate(GatherElementsDesc{tensor(DataType::Int32, {2, 0}), tensor(DataType::Int64, {2, 1}),
                                  tensor(DataType::Int32, {2, 1}), 1},
               {OobPolicy::Clamp, std::nullopt, false});
  ASSERT_TRUE(V.isOk()) << V.status().message();
  std::vector<int32_t> Out = {7, 7};
  std::vector<char> Idx = encodeIndices(DataType::Int64, {0, 3});
  ASSERT_TRUE(interpret(*V, nullptr, Idx.data(), Out.data()).isOk());
  EXPECT_EQ(Out, (std::vector<int32_t>{0, 0}));
}

TEST(Interpreter, CheckNamesTheFirstBadIndex) {
  Expected<ValidDesc> V = validate(GatherElementsDesc{tensor(DataType::Float32, {2, 3}),
                                                      tensor(DataType::Int32, {2, 3}),
                                                      tensor(DataType::Float32, {2, 3}), 1});
  ASSERT_TRUE(V.isOk());
  std::vector<float> In(6), Out(6);
  std::vector<char> Idx = encodeIndices(DataType::Int32, {0, 1, 2, -3, 3, -4});
  Status S = interpret(*V, In.data(), Idx.data(), Out.data());
  ASSERT_EQ(S.code(), ErrorCode::IndexOutOfRange);
  EXPECT_EQ(S.position(), 4u);
  EXPECT_THAT(S.message(), HasSubstr("GatherElements: IndicesTensor[1,1] = 3 (position 4) "
                                     "is out of range for InputTensor.Sizes[1] = 3; "
                                     "valid indices are -3..2"));
}

TEST(Interpreter, CheckRejectsHugeUnsigned) {
  Expected<ValidDesc> V =
      validate(GatherElementsDesc{tensor(DataType::Float32, {3}), tensor(DataType::UInt64, {1}),
                                  tensor(DataType::Float32, {1}), 0});
  ASSERT_TRUE(V.isOk());
  std::vector<float> In(3), Out(1);
  std::vector<char> Idx = encodeIndices(DataType::UInt64, {-1});
  Status S = interpret(*V, In.data(), Idx.data(), Out.data());
  ASSERT_EQ(S.code(), ErrorCode::IndexOutOfRange);
  EXPECT_THAT(S.message(), HasSubstr("= 18446744073709551615 (position 0)"));
  EXPECT_THAT(S.message(), HasSubstr("valid indices are 0..2"));
}

TEST(Interpreter, OnnxGatherEmbeddingRows) {
  Expected<GatherDesc> D =
      onnxGather(tensor(DataType::Int32, {3, 2}), tensor(DataType::Int64, {2, 2}), 0);
  ASSERT_TRUE(D.isOk());
  Expected<ValidDesc> V = validate(*D);
  ASSERT_TRUE(V.isOk()) << V.status().message();
  std::vector<int32_t> In = {1, 2, 3, 4, 5, 6}, Out(8);
  std::vector<char> Idx = encodeIndices(DataType::Int64, {2, 0, -2, 2});
  ASSERT_TRUE(interpret(*V, In.data(), Idx.data(), Out.data()).isOk());
  EXPECT_EQ(Out, (std::vector<int32_t>{5, 6, 1, 2, 3, 4, 5, 6}));
}

TEST(Interpreter, OnnxGatherInnerAxisAndScalarIndex) {
  Expected<GatherDesc> D =
      onnxGather(tensor(DataType::Int32, {2, 3}), tensor(DataType::Int64, {}), 1);
  ASSERT_TRUE(D.isOk());
  Expected<ValidDesc> V = validate(*D);
  ASSERT_TRUE(V.isOk()) << V.status().message();
  std::vector<int32_t> In = {1, 2, 3, 4, 5, 6}, Out(2);
  std::vector<char> Idx = encodeIndices(DataType::Int64, {-1});
  ASSERT_TRUE(interpret(*V, In.data(), Idx.data(), Out.data()).isOk());
  EXPECT_EQ(Out, (std::vector<int32_t>{3, 6}));
}

TEST(Interpreter, GatherCheckReportsIndexPositionNotOutputPosition) {
  // Data 2x3 along axis 1 with indices {2}: output 2x2; the bad index is at
  // position 1 of the indices although output element 1 reads it first.
  Expected<GatherDesc> D =
      onnxGather(tensor(DataType::Int32, {2, 3}), tensor(DataType::Int64, {2}), 1);
  Expected<ValidDesc> V = validate(*D);
  ASSERT_TRUE(V.isOk());
  std::vector<int32_t> In(6), Out(4);
  std::vector<char> Idx = encodeIndices(DataType::Int64, {0, 7});
  Status S = interpret(*V, In.data(), Idx.data(), Out.data());
  ASSERT_EQ(S.code(), ErrorCode::IndexOutOfRange);
  EXPECT_EQ(S.position(), 1u);
  EXPECT_THAT(S.message(), HasSubstr("Gather: IndicesTensor[0,1] = 7 (position 1)"));
}

} // namespace
