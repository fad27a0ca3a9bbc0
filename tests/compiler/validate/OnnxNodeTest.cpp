//===- tests/compiler/validate/OnnxNodeTest.cpp - ONNX nodes -------------===//

#include "gatherjit/Onnx.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

using namespace gatherjit;
using ::testing::ElementsAre;
using ::testing::HasSubstr;

namespace {

TensorDesc T(DataType Type, std::vector<uint64_t> Sizes) {
  TensorDesc D;
  D.Type = Type;
  D.Sizes = std::move(Sizes);
  return D;
}

TEST(OnnxNode, GatherWithANegativeAxisGivesONNXsOutputShapeAndAPaddedDescriptor) {
  // ONNX Gather: data [5, 4, 3], indices [2, 6], axis -2: [5, 2, 6, 3].
  Expected<OnnxDesc> D =
      onnxDesc({OpKind::Gather, T(DataType::Float32, {5, 4, 3}), T(DataType::Int64, {2, 6}), -2});
  ASSERT_TRUE(D.isOk()) << D.status().message();
  EXPECT_EQ(D->Op, OpKind::Gather);
  EXPECT_THAT(D->OutputShape, ElementsAre(5, 2, 6, 3));
  EXPECT_THAT(D->output().Sizes, ElementsAre(5, 2, 6, 3));
  EXPECT_THAT(D->input().Sizes, ElementsAre(1, 5, 4, 3)); // Padded to the output's rank.
  Expected<ValidDesc> V = D->validate(OobPolicy::Clamp);
  ASSERT_TRUE(V.isOk()) << V.status().message();
  EXPECT_EQ(V->Axis, 2u);
  EXPECT_EQ(V->Policy, OobPolicy::Clamp);
}

TEST(OnnxNode, GatherNDKeepsONNXsShapeWhileTheDescriptorIsPadded) {
  // data [2, 3, 4], indices [2, 1] with batch_dims 1: [2, 4], padded to [1, 2, 4].
  OnnxNode N{OpKind::GatherND, T(DataType::Int32, {2, 3, 4}), T(DataType::Int64, {2, 1}), 1};
  Expected<OnnxDesc> D = onnxDesc(N);
  ASSERT_TRUE(D.isOk()) << D.status().message();
  EXPECT_THAT(D->OutputShape, ElementsAre(2, 4));
  EXPECT_THAT(D->output().Sizes, ElementsAre(1, 2, 4));
  Expected<ValidDesc> V = validateOnnx(N, OobPolicy::Check);
  ASSERT_TRUE(V.isOk()) << V.status().message();
  EXPECT_EQ(V->BatchDimensionCount, 1u);
}

TEST(OnnxNode, GatherElementsTakesIndicesSmallerThanTheDataAsONNXDoes) {
  OnnxNode N{OpKind::GatherElements, T(DataType::Float32, {4, 5}), T(DataType::Int64, {3, 2}), 1};
  Expected<OnnxDesc> D = onnxDesc(N);
  ASSERT_TRUE(D.isOk());
  EXPECT_TRUE(D->options(OobPolicy::Check).AllowSmallerIndices);
  EXPECT_THAT(D->OutputShape, ElementsAre(3, 2));
  EXPECT_TRUE(validateOnnx(N, OobPolicy::Check).isOk());
  // DirectML's own rule, without the option, refuses the same descriptor.
  EXPECT_FALSE(D->AnyDesc::validate(ValidateOptions{}).isOk());
  // Only GatherElements has the option.
  Expected<OnnxDesc> G =
      onnxDesc({OpKind::Gather, T(DataType::Float32, {4, 5}), T(DataType::Int64, {3}), 0});
  ASSERT_TRUE(G.isOk());
  EXPECT_FALSE(G->options(OobPolicy::Check).AllowSmallerIndices);
}

TEST(OnnxNode, ErrorsNameTheAttribute) {
  Expected<ValidDesc> V = validateOnnx(
      {OpKind::GatherElements, T(DataType::Float32, {4, 5}), T(DataType::Int64, {4, 5}), 2},
      OobPolicy::Check);
  ASSERT_FALSE(V.isOk());
  EXPECT_EQ(V.status().code(), ErrorCode::InvalidArgument);
  EXPECT_THAT(V.status().message(), HasSubstr("axis"));
  V = validateOnnx({OpKind::GatherND, T(DataType::Float32, {4, 5}), T(DataType::Int64, {4, 1}), 2},
                   OobPolicy::Check);
  ASSERT_FALSE(V.isOk());
  EXPECT_THAT(V.status().message(), HasSubstr("atch"));
}

} // namespace
