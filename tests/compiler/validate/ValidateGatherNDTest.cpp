//===- tests/compiler/validate/ValidateGatherNDTest.cpp - GatherND rules -===//
//
// DML_GATHER_ND_OPERATOR_DESC, DML_GATHER_ND1_OPERATOR_DESC and ONNX
// GatherND-11/12/13, one rule per test. Where the documents disagree, the
// test says which reading gatherjit follows:
//  1. DirectML's output-size formula takes the trailing input sizes from
//     InputTensor.DimensionCount - indexTupleSize. Its own GATHER_ND1
//     example (Input {1,3,2,2}, InputDimensionCount 3, BatchDimensionCount
//     1, 2-tuples, Output {1,1,3,2}) matches only
//     DimensionCount - InputDimensionCount + BatchDimensionCount +
//     indexTupleSize, which is also ONNX's Data[batch_dims + T:]. That one
//     is followed (OutputSizesSkipBatchesAndIgnoredLeadingOnes).
//  2. ONNX's text gives the output rank as q + r - indices_shape[-1] - 1,
//     without "- batch_dims"; its shape inference and its batch_dims
//     examples subtract it. The output shape here subtracts it
//     (OnnxOutputRankSubtractsBatchDims).
//  3. DirectML's pages do not say what an out-of-range index does;
//     gatherjit clamps under OobPolicy::Clamp, as DML_GATHER does, and
//     reports the first bad tuple under Check (tests/runtime).
//  4. DirectML requires only IndicesTensor's last size not to exceed
//     InputTensor.DimensionCount; with batches the tuple indexes the
//     dimensions after them, so it must not exceed InputDimensionCount -
//     BatchDimensionCount (ONNX's rule, TupleLength).
//
//===----------------------------------------------------------------------===//

#include "gatherjit/Validate.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

using namespace gatherjit;
using ::testing::HasSubstr;

namespace {

TensorDesc T(std::vector<uint64_t> Sizes, DataType Type = DataType::Float32) {
  TensorDesc D;
  D.Type = Type;
  D.Sizes = std::move(Sizes);
  return D;
}

GatherNDDesc nd(std::vector<uint64_t> In, std::vector<uint64_t> Idx, std::vector<uint64_t> Out,
                uint32_t InCount, uint32_t IdxCount, uint32_t Batch = 0) {
  return {T(In), T(Idx, DataType::UInt32), T(Out), InCount, IdxCount, Batch};
}

std::string error(const GatherNDDesc &D, ValidateOptions O = {}) {
  Expected<ValidDesc> V = validate(D, O);
  EXPECT_FALSE(V.isOk());
  return V ? std::string() : V.status().message();
}

TEST(ValidateGatherND, DirectMLExamples) {
  // GATHER_ND's size example: {1,2} 3-tuples into {3,4,5,6,7}.
  EXPECT_TRUE(validate(nd({3, 4, 5, 6, 7}, {1, 1, 1, 2, 3}, {1, 1, 2, 6, 7}, 5, 3)).isOk());
  // GATHER_ND1 Example 1: 1-D remapping of rows.
  EXPECT_TRUE(validate(nd({2, 2}, {2, 1}, {2, 2}, 2, 2)).isOk());
}

TEST(ValidateGatherND, OutputSizesSkipBatchesAndIgnoredLeadingOnes) {
  // GATHER_ND1 Example 2, as printed.
  Expected<ValidDesc> V = validate(nd({1, 3, 2, 2}, {1, 3, 2, 2}, {1, 1, 3, 2}, 3, 3, 1));
  ASSERT_TRUE(V.isOk()) << V.status().message();
  EXPECT_EQ(V->tupleSize(), 2u);
  EXPECT_EQ(V->firstTupleDim(), 2u);
  // The document's formula would give {3,2,2,2}; that is refused.
  EXPECT_THAT(error(nd({1, 3, 2, 2}, {1, 3, 2, 2}, {3, 2, 2, 2}, 3, 3, 1)),
              HasSubstr("GatherND: OutputTensor.Sizes = {3,2,2,2} must equal {1,1,3,2}"));
}

TEST(ValidateGatherND, DimensionCountsRange) {
  EXPECT_THAT(error(nd({2, 2}, {2, 1}, {2, 2}, 0, 2)),
              HasSubstr("InputDimensionCount = 0 is out of range; use 1..2"));
  EXPECT_THAT(error(nd({2, 2}, {2, 1}, {2, 2}, 2, 3)),
              HasSubstr("IndicesDimensionCount = 3 is out of range; use 1..2"));
}

TEST(ValidateGatherND, IgnoredLeadingDimensionsMustBeOne) {
  EXPECT_THAT(error(nd({2, 4, 6}, {1, 3, 1}, {1, 3, 6}, 2, 2)),
              HasSubstr("InputTensor.Sizes[0] = 2 must be 1: with InputDimensionCount = 2"));
  EXPECT_THAT(error(nd({1, 4, 6}, {2, 3, 1}, {2, 3, 6}, 2, 2)),
              HasSubstr("IndicesTensor.Sizes[0] = 2 must be 1"));
}

TEST(ValidateGatherND, BatchDimensionCountRangeAndSizes) {
  EXPECT_THAT(error(nd({3, 2}, {3, 1}, {3, 2}, 2, 2, 2)),
              HasSubstr("BatchDimensionCount = 2 must be less than both InputDimensionCount = 2"));
  EXPECT_THAT(error(nd({3, 2, 2}, {4, 1, 1}, {4, 1, 2}, 3, 3, 1)),
              HasSubstr("batch dimension 0 differs: InputTensor.Sizes[0] = 3 but "
                        "IndicesTensor.Sizes[0] = 4"));
}

TEST(ValidateGatherND, TupleLength) {
  EXPECT_THAT(error(nd({3, 2}, {1, 3}, {1, 1}, 2, 2)),
              HasSubstr("the index tuple's length IndicesTensor.Sizes[1] = 3 must be in 1..2"));
  EXPECT_THAT(error(nd({3, 2, 2}, {1, 3, 0}, {1, 3, 2}, 3, 2)), HasSubstr("must be in 1..3"));
  // With a batch, the tuple indexes the dimensions after it.
  EXPECT_THAT(error(nd({3, 2, 2}, {1, 3, 3}, {1, 1, 3}, 3, 2, 1)),
              HasSubstr("must be in 1..2 (InputDimensionCount - BatchDimensionCount)"));
}

TEST(ValidateGatherND, OutputMustFitTheDimensionCount) {
  // Indices {2,3,1} into {4,5,6}: output {2,3,5,6} needs 4 dimensions.
  EXPECT_THAT(error(nd({4, 5, 6}, {2, 3, 1}, {2, 3, 5}, 3, 3)),
              HasSubstr("the output has 4 dimensions"));
}

TEST(ValidateGatherND, FeatureLevels) {
  ValidateOptions O;
  O.Level = FeatureLevel::L1_0;
  EXPECT_THAT(error(nd({1, 1, 2, 2}, {1, 1, 2, 1}, {1, 1, 2, 2}, 2, 2), O),
              HasSubstr("introduced in feature level 2_1"));
  O.Level = FeatureLevel::L2_1;
  EXPECT_TRUE(validate(nd({1, 1, 2, 2}, {1, 1, 2, 1}, {1, 1, 2, 2}, 2, 2), O).isOk());
  EXPECT_THAT(error(nd({2, 2}, {2, 1}, {2, 2}, 2, 2), O),
              HasSubstr("InputTensor.DimensionCount = 2 is not supported at FeatureLevel = 2_1"));
  EXPECT_THAT(error(nd({1, 3, 2, 2}, {1, 3, 2, 2}, {1, 1, 3, 2}, 3, 3, 1), O),
              HasSubstr("BatchDimensionCount = 1 needs DML_GATHER_ND1, introduced in feature "
                        "level 3_0"));
  O.Level = FeatureLevel::L3_0;
  EXPECT_TRUE(validate(nd({1, 3, 2, 2}, {1, 3, 2, 2}, {1, 1, 3, 2}, 3, 3, 1), O).isOk());
  GatherNDDesc Double = nd({2, 2}, {2, 1}, {2, 2}, 2, 2);
  Double.Input.Type = Double.Output.Type = DataType::Float64;
  EXPECT_THAT(error(Double, O), HasSubstr("FLOAT64 is not supported at FeatureLevel = 3_0"));
  O.Level = FeatureLevel::L4_1;
  EXPECT_TRUE(validate(Double, O).isOk());
}

TEST(OnnxGatherND, BuildsPaddedDescriptors) {
  // ONNX's example 5: batch_dims = 1, data [2,2,2], indices [2,1].
  Expected<GatherNDDesc> D = onnxGatherND(T({2, 2, 2}), T({2, 1}, DataType::Int64), 1);
  ASSERT_TRUE(D.isOk()) << D.status().message();
  EXPECT_EQ(D->Input.Sizes, (std::vector<uint64_t>{2, 2, 2}));
  EXPECT_EQ(D->Indices.Sizes, (std::vector<uint64_t>{1, 2, 1}));
  EXPECT_EQ(D->Output.Sizes, (std::vector<uint64_t>{1, 2, 2}));
  EXPECT_EQ(D->IndicesDimensionCount, 2u);
  EXPECT_EQ(D->BatchDimensionCount, 1u);
  EXPECT_TRUE(validate(*D).isOk());
}

TEST(OnnxGatherND, OnnxOutputRankSubtractsBatchDims) {
  // q + r - T - 1 - batch_dims = 3 + 4 - 1 - 1 - 2 = 3: [2,3] ++ [5].
  EXPECT_EQ(onnxGatherNDOutputShape({2, 3, 4, 5}, {2, 3, 1}, 2), (std::vector<uint64_t>{2, 3, 5}));
}

TEST(OnnxGatherND, AttributeAndShapeErrors) {
  auto Err = [](const Expected<GatherNDDesc> &D) {
    return D ? std::string() : D.status().message();
  };
  EXPECT_THAT(Err(onnxGatherND(T({2, 2}), T({2, 1}), 2)),
              HasSubstr("batch_dims = 2 is out of range for 2-D data and 2-D indices; use 0..1"));
  EXPECT_THAT(Err(onnxGatherND(T({2, 2}), T({2, 3}), 0)),
              HasSubstr("the index tuple's length, 3, which must be in 1..2"));
  EXPECT_THAT(Err(onnxGatherND(T({2, 2}), T({3, 1}), 1)),
              HasSubstr("batch dimensions of data {2,2} and indices {3,1} differ"));
  EXPECT_THAT(Err(onnxGatherND(T({}), T({1}), 0)), HasSubstr("data must have rank >= 1"));
  // The rank over the limit is named: indices [2]*8 ++ [1] with batch_dims 6 give an output of
  // rank 8 from indices of rank 9.
  std::vector<uint64_t> Nine(9, 2);
  Nine.back() = 1;
  EXPECT_THAT(Err(onnxGatherND(T(std::vector<uint64_t>(8, 2)), T(Nine), 6)),
              HasSubstr("GatherND: indices rank 9 exceeds the maximum of 8"));
  EXPECT_THAT(Err(onnxGatherND(T(std::vector<uint64_t>(9, 2)), T({1}), 0)),
              HasSubstr("GatherND: data rank 9 exceeds the maximum of 8"));
  EXPECT_THAT(Err(onnxGatherND(T(std::vector<uint64_t>(8, 2)), T({2, 2, 1}), 0)),
              HasSubstr("GatherND: output rank 9 exceeds the maximum of 8"));
}

} // namespace
