//===- tests/compiler/validate/DescriptorJsonTest.cpp - Descriptor JSON --===//

#include "gatherjit/DescriptorJson.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

using namespace gatherjit;
using ::testing::HasSubstr;

namespace {

const char *Good = R"({"operator": "GATHER", "axis": 0, "index_dimensions": 1,
  "input": {"data_type": "FLOAT32", "sizes": [3, 2]},
  "indices": {"data_type": "UINT32", "sizes": [1, 4]},
  "output": {"data_type": "FLOAT32", "sizes": [4, 2], "strides": [2, 1]}})";

std::string errorOf(const std::string &Text) {
  Expected<JsonDescriptor> D = parseDescriptorJson(Text);
  EXPECT_FALSE(D.isOk());
  return D ? "" : D.status().message();
}

std::string replace(std::string S, const std::string &From, const std::string &To) {
  size_t P = S.find(From);
  EXPECT_NE(P, std::string::npos) << From;
  return S.replace(P, From.size(), To);
}

TEST(DescJson, ParsesAGatherDescriptor) {
  Expected<JsonDescriptor> D = parseDescriptorJson(Good);
  ASSERT_TRUE(D.isOk()) << D.status().message();
  EXPECT_EQ(D->Op, OpKind::Gather);
  EXPECT_EQ(D->Gather.IndexDimensions, 1u);
  EXPECT_EQ(D->Options.Policy, OobPolicy::Clamp); // DirectML's default.
  EXPECT_FALSE(D->Options.Level.has_value());
  EXPECT_EQ(*D->Gather.Output.Strides, (std::vector<uint64_t>{2, 1}));
  EXPECT_TRUE(D->validate().isOk());
}

TEST(DescJson, OptionalFields) {
  Expected<JsonDescriptor> D = parseDescriptorJson(
      replace(Good, "\"axis\": 0", "\"axis\": 0, \"oob\": \"check\", \"feature_level\": \"3_0\""));
  ASSERT_TRUE(D.isOk());
  EXPECT_EQ(D->Options.Policy, OobPolicy::Check);
  EXPECT_EQ(D->Options.Level, FeatureLevel::L3_0);
}

TEST(DescJson, DirectMLsOwnFieldNamesAndEnumNames) {
  // A descriptor serialized from DirectML's structs: the same descriptor.
  const char *Dml = R"({"operator": "DML_OPERATOR_GATHER", "Axis": 0, "IndexDimensions": 1,
    "InputTensor": {"DataType": "DML_TENSOR_DATA_TYPE_FLOAT32", "DimensionCount": 2,
                    "Sizes": [3, 2]},
    "IndicesTensor": {"DataType": "UINT32", "Sizes": [1, 4]},
    "OutputTensor": {"DataType": "FLOAT32", "Sizes": [4, 2], "Strides": [2, 1]}})";
  Expected<JsonDescriptor> D = parseDescriptorJson(Dml), Ours = parseDescriptorJson(Good);
  ASSERT_TRUE(D.isOk()) << D.status().message();
  ASSERT_TRUE(Ours.isOk());
  EXPECT_EQ(D->Op, OpKind::Gather);
  EXPECT_EQ(D->Gather.IndexDimensions, 1u);
  EXPECT_EQ(D->Gather.Input.Type, DataType::Float32);
  EXPECT_EQ(D->Gather.Input.Sizes, Ours->Gather.Input.Sizes);
  EXPECT_EQ(D->Gather.Indices.Type, DataType::UInt32);
  EXPECT_EQ(*D->Gather.Output.Strides, *Ours->Gather.Output.Strides);
  EXPECT_TRUE(D->validate().isOk());
  const std::string Nd1 = R"({"operator": "GATHER_ND1", "BatchDimensionCount": 1,
    "InputDimensionCount": 3, "IndicesDimensionCount": 3,
    "InputTensor": {"DataType": "FLOAT32", "Sizes": [2, 3, 4]},
    "IndicesTensor": {"DataType": "INT64", "Sizes": [2, 5, 1]},
    "OutputTensor": {"DataType": "FLOAT32", "Sizes": [2, 5, 4]}})";
  Expected<JsonDescriptor> N = parseDescriptorJson(Nd1);
  ASSERT_TRUE(N.isOk()) << N.status().message();
  EXPECT_EQ(N->GatherND.BatchDimensionCount, 1u);
  EXPECT_TRUE(N->validate().isOk()) << N->validate().status().message();
  // A field both ways, a dimension count that is not the sizes', and names
  // of neither spelling are errors.
  EXPECT_THAT(errorOf(replace(Dml, "\"Axis\": 0", "\"Axis\": 0, \"axis\": 0")),
              HasSubstr("\"Axis\" and \"axis\" are the same field, given twice"));
  EXPECT_THAT(errorOf(replace(Dml, "\"Sizes\": [1, 4]", "\"Sizes\": [1, 4], \"sizes\": [1, 4]")),
              HasSubstr("\"indices.Sizes\" and \"indices.sizes\" are the same field"));
  EXPECT_THAT(errorOf(replace(Dml, "\"DimensionCount\": 2", "\"DimensionCount\": 3")),
              HasSubstr("\"input.dimension_count\" = 3 but \"input.sizes\" has 2 entries"));
  EXPECT_THAT(errorOf(replace(Dml, "\"Axis\"", "\"AXIS\"")),
              HasSubstr("\"AXIS\" is not a known field"));
  EXPECT_THAT(errorOf(replace(Dml, "DML_OPERATOR_GATHER", "DML_OPERATOR_SCATTER")),
              HasSubstr("\"SCATTER\""));
  // DML_BUFFER_TENSOR_DESC's other members: the buffer's size bounds the
  // tensor (validation checks it); flags and the alignment hint must be
  // what DirectML allows.
  const std::string Buffer =
      replace(Dml, "\"Sizes\": [3, 2]",
              "\"Sizes\": [3, 2], \"Flags\": \"DML_TENSOR_FLAG_NONE\", "
              "\"TotalTensorSizeInBytes\": 24, \"GuaranteedBaseOffsetAlignment\": 16");
  Expected<JsonDescriptor> B = parseDescriptorJson(Buffer);
  ASSERT_TRUE(B.isOk()) << B.status().message();
  EXPECT_EQ(B->Gather.Input.TotalBytes, 24u);
  EXPECT_TRUE(B->validate().isOk());
  Expected<JsonDescriptor> Small = parseDescriptorJson(replace(Buffer, ": 24", ": 20"));
  ASSERT_TRUE(Small.isOk());
  EXPECT_THAT(Small->validate().status().message(),
              HasSubstr("address 24 bytes, outside the buffer of TotalBytes = 20"));
  EXPECT_THAT(errorOf(replace(Buffer, "\"DML_TENSOR_FLAG_NONE\"", "2")),
              HasSubstr("\"input.flags\" = 2 exceeds 1"));
  EXPECT_THAT(errorOf(replace(Buffer, ": 16", ": 24")),
              HasSubstr("\"input.guaranteed_base_offset_alignment\" = 24 must be 0 or a power"));
}

TEST(DescJson, GatherNDAndGatherND1) {
  const std::string Nd1 = R"({"operator": "GATHER_ND1", "batch_dimension_count": 1,
    "input_dimension_count": 3, "indices_dimension_count": 3,
    "input": {"data_type": "FLOAT32", "sizes": [1, 3, 2, 2]},
    "indices": {"data_type": "UINT32", "sizes": [1, 3, 2, 2]},
    "output": {"data_type": "FLOAT32", "sizes": [1, 1, 3, 2]}})";
  Expected<JsonDescriptor> D = parseDescriptorJson(Nd1);
  ASSERT_TRUE(D.isOk()) << D.status().message();
  EXPECT_EQ(D->Op, OpKind::GatherND);
  EXPECT_EQ(D->GatherND.BatchDimensionCount, 1u);
  EXPECT_EQ(D->GatherND.InputDimensionCount, 3u);
  EXPECT_TRUE(D->validate().isOk()) << D->validate().status().message();
  // The dimension counts default to the tensors' own.
  Expected<JsonDescriptor> Plain = parseDescriptorJson(R"({"operator": "GATHER_ND",
    "input": {"data_type": "FLOAT32", "sizes": [2, 2]},
    "indices": {"data_type": "INT64", "sizes": [2, 1]},
    "output": {"data_type": "FLOAT32", "sizes": [2, 2]}})");
  ASSERT_TRUE(Plain.isOk()) << Plain.status().message();
  EXPECT_EQ(Plain->GatherND.InputDimensionCount, 2u);
  EXPECT_EQ(Plain->GatherND.IndicesDimensionCount, 2u);
  EXPECT_EQ(Plain->GatherND.BatchDimensionCount, 0u);
  EXPECT_THAT(errorOf(replace(Nd1, "GATHER_ND1", "GATHER_ND")),
              HasSubstr("\"batch_dimension_count\" applies to GATHER_ND1 only"));
  EXPECT_THAT(errorOf(replace(Nd1, "\"batch_dimension_count\": 1", "\"axis\": 1")),
              HasSubstr("\"axis\" does not apply to GATHER_ND1"));
  EXPECT_THAT(errorOf(replace(Good, "\"axis\": 0", "\"axis\": 0, \"input_dimension_count\": 2")),
              HasSubstr("\"input_dimension_count\" applies to GATHER_ND and GATHER_ND1 only"));
  EXPECT_THAT(
      errorOf(replace(Nd1, "\"input_dimension_count\": 3", "\"input_dimension_count\": -3")),
      HasSubstr("\"input_dimension_count\" = -3 must be non-negative"));
}

TEST(DescJson, Errors) {
  EXPECT_THAT(errorOf("{"), HasSubstr("not valid JSON"));
  EXPECT_THAT(errorOf("[]"), HasSubstr("top level must be an object"));
  EXPECT_THAT(errorOf(replace(Good, "\"GATHER\"", "\"SCATTER\"")),
              HasSubstr("\"operator\" = \"SCATTER\" must be"));
  EXPECT_THAT(errorOf(replace(Good, "\"axis\": 0", "\"axis\": -1")),
              HasSubstr("\"axis\" = -1 must be non-negative"));
  EXPECT_THAT(errorOf(replace(Good, "\"axis\": 0", "\"axis\": 1.5")),
              HasSubstr("\"axis\" must be an integer"));
  EXPECT_THAT(errorOf(replace(Good, "\"axis\": 0, ", "")), HasSubstr("\"axis\" is missing"));
  EXPECT_THAT(errorOf(replace(Good, "\"index_dimensions\": 1,", "")),
              HasSubstr("\"index_dimensions\" is missing"));
  EXPECT_THAT(errorOf(replace(replace(Good, "\"GATHER\"", "\"GATHER_ELEMENTS\""), "", "")),
              HasSubstr("\"index_dimensions\" applies to GATHER only"));
  EXPECT_THAT(errorOf(replace(Good, "\"axis\": 0", "\"axis\": 0, \"feature_level\": \"5_0\"")),
              HasSubstr("\"feature_level\" = \"5_0\" is unknown"));
  EXPECT_THAT(errorOf(replace(Good, "\"axis\": 0", "\"axis\": 0, \"oob\": \"wrap\"")),
              HasSubstr("\"oob\" = \"wrap\" must be"));
  EXPECT_THAT(errorOf(replace(Good, "\"UINT32\"", "\"UINT33\"")),
              HasSubstr("\"indices.data_type\" = \"UINT33\" is not a known data type"));
  EXPECT_THAT(errorOf(replace(Good, "\"sizes\": [3, 2]", "\"sizes\": [3, -2]")),
              HasSubstr("\"input.sizes[1]\" = -2 must be non-negative"));
  EXPECT_THAT(errorOf(replace(Good, "\"sizes\": [3, 2]", "\"sizse\": [3, 2]")),
              HasSubstr("\"input.sizse\" is not a known field"));
  EXPECT_THAT(errorOf(replace(Good, "\"axis\"", "\"axes\"")),
              HasSubstr("\"axes\" is not a known field"));
  EXPECT_THAT(errorOf(replace(Good, "\"output\": {", "\"outputs\": {")),
              HasSubstr("\"outputs\" is not a known field"));
}

} // namespace
