//===- tests/compiler/validate/ValidateTest.cpp - One test per rule ------===//

#include "gatherjit/Validate.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

using namespace gatherjit;
using ::testing::HasSubstr;

namespace {

TensorDesc T(DataType Type, std::vector<uint64_t> Sizes) {
  TensorDesc D;
  D.Type = Type;
  D.Sizes = std::move(Sizes);
  return D;
}

GatherElementsDesc ge(std::vector<uint64_t> In, std::vector<uint64_t> Idx, uint32_t Axis,
                      DataType Type = DataType::Float32, DataType IdxType = DataType::Int64) {
  return {T(Type, In), T(IdxType, Idx), T(Type, Idx), Axis};
}

std::string geError(const GatherElementsDesc &D, ValidateOptions O = {}) {
  Expected<ValidDesc> V = validate(D, O);
  EXPECT_FALSE(V.isOk());
  return V ? std::string() : V.status().message();
}

std::string gError(const GatherDesc &D, ValidateOptions O = {}) {
  Expected<ValidDesc> V = validate(D, O);
  EXPECT_FALSE(V.isOk());
  return V ? std::string() : V.status().message();
}

TEST(ValidateGatherElements, AcceptsMatchingShapes) {
  Expected<ValidDesc> V = validate(ge({3, 3}, {2, 3}, 0));
  ASSERT_TRUE(V.isOk()) << V.status().message();
  EXPECT_EQ(*V->Input.Strides, (std::vector<uint64_t>{3, 1}));
  EXPECT_EQ(V->outputElements(), 6u);
}

TEST(ValidateGatherElements, IndicesSizesMustMatchOffAxis) {
  EXPECT_THAT(geError(ge({4, 3}, {4, 4}, 0)),
              HasSubstr("GatherElements: IndicesTensor.Sizes[1] = 4 must equal "
                        "InputTensor.Sizes[1] = 3 (all dimensions but Axis = 0)"));
}

TEST(ValidateGatherElements, OnnxAllowsSmallerIndicesButNotLarger) {
  ValidateOptions O;
  O.AllowSmallerIndices = true;
  EXPECT_TRUE(validate(ge({4, 3}, {4, 2}, 0), O).isOk());
  EXPECT_THAT(geError(ge({4, 3}, {4, 5}, 0), O),
              HasSubstr("IndicesTensor.Sizes[1] = 5 must not exceed InputTensor.Sizes[1] = 3"));
}

TEST(ValidateGatherElements, DimensionCountRange) {
  EXPECT_THAT(geError(ge({}, {}, 0)),
              HasSubstr("InputTensor.DimensionCount = 0 is out of range; use 1..8"));
  std::vector<uint64_t> Nine(9, 1);
  EXPECT_THAT(geError(ge(Nine, Nine, 0)),
              HasSubstr("InputTensor.DimensionCount = 9 is out of range; use 1..8"));
}

TEST(ValidateGatherElements, RanksMustAgree) {
  GatherElementsDesc D = ge({3, 3}, {3, 3}, 0);
  D.Indices.Sizes = {9};
  D.Output.Sizes = {9};
  EXPECT_THAT(geError(D), HasSubstr("IndicesTensor.DimensionCount = 1 must equal "
                                    "InputTensor.DimensionCount = 2"));
  D = ge({3, 3}, {3, 3}, 0);
  D.Output.Sizes = {3, 3, 1};
  EXPECT_THAT(geError(D), HasSubstr("OutputTensor.DimensionCount = 3 must equal "
                                    "InputTensor.DimensionCount = 2"));
}

TEST(ValidateGatherElements, AxisRange) {
  EXPECT_THAT(geError(ge({2, 3}, {2, 3}, 3)),
              HasSubstr("Axis = 3 is out of range for a 2-D InputTensor; use 0..1"));
}

TEST(ValidateGatherElements, IndexTypes) {
  for (DataType Bad :
       {DataType::Int16, DataType::Int8, DataType::UInt16, DataType::Float32, DataType::UInt8})
    EXPECT_THAT(geError(ge({2}, {2}, 0, DataType::Float32, Bad)),
                HasSubstr(std::string("IndicesTensor.DataType = ") + dataTypeName(Bad) +
                          " is not an index type"));
  for (DataType Good : {DataType::Int32, DataType::Int64, DataType::UInt32, DataType::UInt64})
    EXPECT_TRUE(validate(ge({2}, {2}, 0, DataType::Float32, Good)).isOk());
}

TEST(ValidateGatherElements, OutputTypeMustMatchInput) {
  // The seed example prints a UINT32 output for FLOAT32 input; the rule
  // text wins, so that descriptor is invalid.
  GatherElementsDesc D = ge({3, 3}, {2, 3}, 0, DataType::Float32, DataType::UInt32);
  D.Output.Type = DataType::UInt32;
  EXPECT_THAT(geError(D), HasSubstr("OutputTensor.DataType = UINT32 must equal "
                                    "InputTensor.DataType = FLOAT32"));
}

TEST(ValidateGatherElements, OutputSizesMustMatchIndices) {
  GatherElementsDesc D = ge({3, 3}, {2, 3}, 0);
  D.Output.Sizes = {3, 3};
  EXPECT_THAT(geError(D), HasSubstr("OutputTensor.Sizes = {3,3} must equal "
                                    "IndicesTensor.Sizes = {2,3}"));
}

TEST(ValidateGatherElements, StridesCountMustMatchRank) {
  GatherElementsDesc D = ge({3, 3}, {2, 3}, 0);
  D.Input.Strides = std::vector<uint64_t>{1};
  EXPECT_THAT(geError(D), HasSubstr("InputTensor.Strides has 1 entries but "
                                    "InputTensor.Sizes has 2"));
}

TEST(ValidateGatherElements, StridesOutsideTheBuffer) {
  GatherElementsDesc D = ge({3, 3}, {2, 3}, 0);
  D.Input.Strides = std::vector<uint64_t>{4, 1}; // Needs 11 elements.
  D.Input.TotalBytes = 40;
  EXPECT_THAT(geError(D), HasSubstr("address 44 bytes, outside the buffer of "
                                    "TotalBytes = 40"));
  D.Input.TotalBytes = 44;
  EXPECT_TRUE(validate(D).isOk());
}

TEST(ValidateGatherElements, ElementCountOverflow) {
  EXPECT_THAT(geError(ge({1ull << 32, 1ull << 32}, {1, 1ull << 32}, 0)),
              HasSubstr("has more than 2^64 elements"));
  EXPECT_THAT(geError(ge({1ull << 31, 1ull << 31}, {1, 1ull << 31}, 0)),
              HasSubstr("addresses more than 2^63 bytes"));
  GatherElementsDesc D = ge({2, 2}, {2, 2}, 0);
  D.Input.Strides = std::vector<uint64_t>{1ull << 62, 1};
  EXPECT_THAT(geError(D), HasSubstr("addresses more than 2^63 bytes"));
}

TEST(ValidateGatherElements, OverlappingOutputIsRejected) {
  GatherElementsDesc D = ge({3, 3}, {2, 3}, 0);
  D.Output.Strides = std::vector<uint64_t>{0, 1};
  EXPECT_THAT(geError(D), HasSubstr("OutputTensor.Strides = {0,1} make elements overlap"));
  D.Output.Strides = std::vector<uint64_t>{2, 1};
  EXPECT_THAT(geError(D), HasSubstr("make elements overlap"));
  D.Output.Strides = std::vector<uint64_t>{1, 2}; // Transposed: fine.
  EXPECT_TRUE(validate(D).isOk());
}

TEST(ValidateGatherElements, BroadcastInputIsAccepted) {
  GatherElementsDesc D = ge({3, 4}, {3, 4}, 1);
  D.Input.Strides = std::vector<uint64_t>{0, 1};
  EXPECT_TRUE(validate(D).isOk());
}

TEST(ValidateFeatureLevel, GatherElementsNeeds21) {
  ValidateOptions O;
  O.Level = FeatureLevel::L1_0;
  Expected<ValidDesc> V =
      validate(ge({1, 1, 2, 2}, {1, 1, 2, 2}, 3, DataType::Float32, DataType::UInt32), O);
  ASSERT_FALSE(V.isOk());
  EXPECT_EQ(V.status().code(), ErrorCode::Unsupported);
  EXPECT_THAT(V.status().message(), HasSubstr("introduced in feature level 2_1"));
}

TEST(ValidateFeatureLevel, Level21Needs4DAndUInt32Indices) {
  ValidateOptions O;
  O.Level = FeatureLevel::L2_1;
  EXPECT_TRUE(
      validate(ge({1, 1, 2, 2}, {1, 1, 2, 2}, 3, DataType::Int8, DataType::UInt32), O).isOk());
  EXPECT_THAT(geError(ge({2, 2}, {2, 2}, 1, DataType::Float32, DataType::UInt32), O),
              HasSubstr("InputTensor.DimensionCount = 2 is not supported at "
                        "FeatureLevel = 2_1; only 4 is"));
  EXPECT_THAT(geError(ge({1, 1, 2, 2}, {1, 1, 2, 2}, 3, DataType::Float32, DataType::Int32), O),
              HasSubstr("IndicesTensor.DataType = INT32 is not supported at "
                        "FeatureLevel = 2_1; use UINT32"));
}

TEST(ValidateFeatureLevel, Level30LacksSixtyFourBitData) {
  ValidateOptions O;
  O.Level = FeatureLevel::L3_0;
  EXPECT_TRUE(validate(ge({2, 2}, {2, 2}, 1, DataType::Float32, DataType::Int64), O).isOk());
  EXPECT_THAT(geError(ge({2, 2}, {2, 2}, 1, DataType::Float64), O),
              HasSubstr("InputTensor.DataType = FLOAT64 is not supported at FeatureLevel = 3_0"));
  O.Level = FeatureLevel::L4_1;
  EXPECT_TRUE(validate(ge({2, 2}, {2, 2}, 1, DataType::Float64), O).isOk());
}

TEST(ValidateFeatureLevel, ExtensionsNeedNoLevel) {
  EXPECT_TRUE(validate(ge({2, 2}, {2, 2}, 1, DataType::BFloat16)).isOk());
  ValidateOptions O;
  O.Level = FeatureLevel::L4_1;
  EXPECT_THAT(geError(ge({2, 2}, {2, 2}, 1, DataType::Complex64), O),
              HasSubstr("InputTensor.DataType = COMPLEX64 is an extension"));
}

TEST(ValidateFeatureLevel, Gather10IsFloatOnly) {
  GatherDesc D{T(DataType::Int32, {1, 1, 3, 2}), T(DataType::UInt32, {1, 1, 1, 4}),
               T(DataType::Int32, {1, 1, 4, 2}), 2, 1};
  ValidateOptions O;
  O.Level = FeatureLevel::L1_0;
  EXPECT_THAT(gError(D, O), HasSubstr("InputTensor.DataType = INT32 is not "
                                      "supported at FeatureLevel = 1_0; use FLOAT32, FLOAT16"));
  O.Level = FeatureLevel::L2_1;
  EXPECT_TRUE(validate(D, O).isOk());
}

GatherDesc g(std::vector<uint64_t> In, std::vector<uint64_t> Idx, std::vector<uint64_t> Out,
             uint32_t Axis, uint32_t K) {
  return {T(DataType::Float32, In), T(DataType::UInt32, Idx), T(DataType::Float32, Out), Axis, K};
}

TEST(ValidateGather, SeedExamplesAreValid) {
  EXPECT_TRUE(validate(g({4}, {5}, {5}, 0, 1)).isOk());
  EXPECT_TRUE(validate(g({3, 2}, {1, 4}, {4, 2}, 0, 1)).isOk());
  EXPECT_TRUE(validate(g({3, 2}, {1, 2}, {3, 2}, 1, 1)).isOk());
  EXPECT_TRUE(validate(g({1, 3, 3}, {1, 1, 2}, {3, 1, 2}, 2, 2)).isOk());
  EXPECT_TRUE(validate(g({1, 3, 2}, {1, 2, 2}, {2, 2, 2}, 1, 2)).isOk());
}

TEST(ValidateGather, SeedExample3AsPrintedBreaksTheRankRule) {
  // Document 001, Example 3 prints IndexDimensions: 2; by the rule text,
  // original rank 2 + 2 - 1 = 3 > 2 output dimensions: invalid.
  EXPECT_THAT(gError(g({3, 2}, {1, 2}, {3, 2}, 1, 2)),
              HasSubstr("original rank of InputTensor (2, Sizes = {3,2}) + "
                        "IndexDimensions (2) - 1 = 3 exceeds OutputTensor.DimensionCount = 2"));
}

TEST(ValidateGather, IndexDimensionsMayEqualDimensionCount) {
  EXPECT_TRUE(validate(g({4}, {5}, {5}, 0, 1)).isOk());
  EXPECT_THAT(gError(g({4}, {5}, {5}, 0, 2)),
              HasSubstr("IndexDimensions = 2 exceeds IndicesTensor.DimensionCount = 1; use 0..1"));
}

TEST(ValidateGather, LeadingIndexDimensionsMustBeOne) {
  EXPECT_THAT(gError(g({3, 2}, {2, 4}, {4, 2}, 0, 1)),
              HasSubstr("IndicesTensor.Sizes[0] = 2 must be 1"));
}

TEST(ValidateGather, OutputSizesRule) {
  EXPECT_THAT(gError(g({3, 2}, {1, 4}, {4, 3}, 0, 1)),
              HasSubstr("OutputTensor.Sizes = {4,3} must equal {4,2}"));
}

TEST(ValidateGather, ScalarIndexPadsTheOutput) {
  // IndexDimensions 0: one index for the whole axis; output {1, 2}.
  EXPECT_TRUE(validate(g({3, 2}, {1, 1}, {1, 2}, 0, 0)).isOk());
}

TEST(ValidateGather, CroppingANonOneDimensionIsRejected) {
  // Input {2,3}, axis 0, 2 index dims {2,2}: {2,2,3} cannot fit 2 dims.
  EXPECT_FALSE(validate(g({2, 3}, {2, 2}, {2, 3}, 0, 2)).isOk());
}

TEST(OnnxBuilders, GatherElementsNegativeAxis) {
  Expected<GatherElementsDesc> D =
      onnxGatherElements(T(DataType::Float32, {2, 3}), T(DataType::Int64, {2, 3}), -1);
  ASSERT_TRUE(D.isOk());
  EXPECT_EQ(D->Axis, 1u);
  Expected<GatherElementsDesc> Bad =
      onnxGatherElements(T(DataType::Float32, {2, 3}), T(DataType::Int64, {2, 3}), -3);
  ASSERT_FALSE(Bad.isOk());
  EXPECT_THAT(Bad.status().message(), HasSubstr("axis = -3 is out of range for a "
                                                "2-D data tensor; use -2..1"));
}

TEST(OnnxBuilders, GatherPadsToOneRank) {
  Expected<GatherDesc> D = onnxGather(T(DataType::Float32, {5, 4}), T(DataType::Int64, {2, 3}), 1);
  ASSERT_TRUE(D.isOk());
  EXPECT_EQ(D->Input.Sizes, (std::vector<uint64_t>{1, 5, 4}));
  EXPECT_EQ(D->Output.Sizes, (std::vector<uint64_t>{5, 2, 3}));
  EXPECT_EQ(D->Axis, 2u);
  EXPECT_EQ(D->IndexDimensions, 2u);
  EXPECT_TRUE(validate(*D).isOk());
  EXPECT_EQ(onnxGatherOutputShape({5, 4}, {2, 3}, 1), (std::vector<uint64_t>{5, 2, 3}));
}

TEST(OnnxBuilders, GatherScalarIndices) {
  Expected<GatherDesc> D = onnxGather(T(DataType::Float32, {5, 4}), T(DataType::Int64, {}), 0);
  ASSERT_TRUE(D.isOk());
  EXPECT_EQ(D->Indices.Sizes, (std::vector<uint64_t>{1, 1}));
  EXPECT_EQ(D->Output.Sizes, (std::vector<uint64_t>{1, 4}));
  EXPECT_TRUE(validate(*D).isOk());
}

TEST(OnnxBuilders, GatherOutputRankLimit) {
  Expected<GatherDesc> D = onnxGather(T(DataType::Float32, std::vector<uint64_t>(5, 2)),
                                      T(DataType::Int64, std::vector<uint64_t>(5, 2)), 0);
  ASSERT_FALSE(D.isOk());
  EXPECT_THAT(D.status().message(),
              HasSubstr("output rank = data rank 5 + indices rank 5 - 1 = 9"));
  // Data of rank 9 with a scalar index would give an output of rank 8.
  Expected<GatherDesc> Nine =
      onnxGather(T(DataType::Float32, std::vector<uint64_t>(9, 2)), T(DataType::Int64, {}), 0);
  ASSERT_FALSE(Nine.isOk());
  EXPECT_THAT(Nine.status().message(), HasSubstr("Gather: data rank 9 exceeds the maximum of 8"));
  Expected<GatherElementsDesc> E =
      onnxGatherElements(T(DataType::Float32, std::vector<uint64_t>(9, 2)),
                         T(DataType::Int64, std::vector<uint64_t>(9, 1)), 0);
  ASSERT_FALSE(E.isOk());
  EXPECT_THAT(E.status().message(),
              HasSubstr("GatherElements: data rank 9 exceeds the maximum of 8"));
}

TEST(DataTypes, NamesRoundTrip) {
  for (int I = 0; I <= static_cast<int>(DataType::Opaque); ++I) {
    DataType Type = static_cast<DataType>(I);
    EXPECT_EQ(parseDataType(dataTypeName(Type)), Type);
  }
  EXPECT_FALSE(parseDataType("FLOAT").has_value());
  EXPECT_EQ(dataTypeSize(DataType::Complex128), 16u);
  EXPECT_EQ(dataTypeSize(DataType::Float16), 2u);
}

} // namespace
