//===- tests/compiler/spec/KernelSpecTest.cpp - Canonicalization ---------===//

#include "compiler/spec/KernelSpec.h"

#include "TestUtil.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <set>

using namespace gatherjit;
using namespace gatherjit::test;

namespace {

KernelSpec geSpec(DataType Type, std::vector<uint64_t> In, std::vector<uint64_t> Idx, uint32_t Axis,
                  DataType IdxType = DataType::Int64, OobPolicy Policy = OobPolicy::Check,
                  std::optional<std::vector<uint64_t>> InStrides = std::nullopt) {
  Expected<ValidDesc> V =
      validate(GatherElementsDesc{tensor(Type, In, InStrides), tensor(IdxType, Idx),
                                  tensor(Type, Idx), Axis},
               {Policy, std::nullopt, false});
  EXPECT_TRUE(V.isOk()) << V.status().message();
  return canonicalize(*V);
}

TEST(KernelSpec, Float32AndUInt32ShareASpec) {
  KernelSpec A = geSpec(DataType::Float32, {4, 5}, {4, 3}, 1);
  KernelSpec B = geSpec(DataType::UInt32, {4, 5}, {4, 3}, 1);
  EXPECT_EQ(A, B);
  EXPECT_EQ(A.hashValue(), B.hashValue());
  EXPECT_EQ(A.symbolName(), B.symbolName());
  EXPECT_NE(A, geSpec(DataType::Float64, {4, 5}, {4, 3}, 1));
}

TEST(KernelSpec, SizeOneDimensionsAreDropped) {
  KernelSpec A = geSpec(DataType::Int16, {1, 4, 1, 5}, {1, 4, 1, 3}, 3);
  KernelSpec B = geSpec(DataType::Int16, {4, 5}, {4, 3}, 1);
  EXPECT_EQ(A, B);
  EXPECT_EQ(A.Rank, 2u);
}

TEST(KernelSpec, ContiguousDimensionsAroundTheAxisMerge) {
  // [2,3,4] along axis 2: the two outer dimensions are contiguous in all
  // tensors and become one of 6.
  KernelSpec S = geSpec(DataType::Float32, {2, 3, 4}, {2, 3, 4}, 2);
  ASSERT_EQ(S.Rank, 2u);
  EXPECT_EQ(S.Sizes[0], 6u);
  EXPECT_EQ(S.Sizes[1], 4u);
  EXPECT_EQ(S.InStride[1], 0u); // The axis is reached through the index.
  EXPECT_EQ(S.AxisStride[0], 1u);
  EXPECT_EQ(S, geSpec(DataType::Float32, {6, 4}, {6, 4}, 1));
}

TEST(KernelSpec, TheAxisDimensionDoesNotMergeWithItsNeighbours) {
  KernelSpec S = geSpec(DataType::Float32, {2, 3, 4}, {2, 3, 4}, 1);
  EXPECT_EQ(S.Rank, 3u);
}

TEST(KernelSpec, TransposedInputDoesNotMerge) {
  KernelSpec Packed = geSpec(DataType::Float32, {2, 3, 4}, {2, 3, 4}, 2);
  KernelSpec Transposed = geSpec(DataType::Float32, {2, 3, 4}, {2, 3, 4}, 2, DataType::Int64,
                                 OobPolicy::Check, std::vector<uint64_t>{1, 2, 6});
  EXPECT_EQ(Transposed.Rank, 3u);
  EXPECT_NE(Packed, Transposed);
}

TEST(KernelSpec, PolicyAndIndexTypeAreKept) {
  KernelSpec A = geSpec(DataType::Float32, {4, 5}, {4, 3}, 1);
  EXPECT_NE(A, geSpec(DataType::Float32, {4, 5}, {4, 3}, 1, DataType::Int64, OobPolicy::Clamp));
  EXPECT_NE(A, geSpec(DataType::Float32, {4, 5}, {4, 3}, 1, DataType::UInt64));
  EXPECT_NE(A, geSpec(DataType::Float32, {4, 6}, {4, 3}, 1)); // Axis size.
}

TEST(KernelSpec, EmbeddingLookupIsABlockCopy) {
  Expected<GatherDesc> D =
      onnxGather(tensor(DataType::Float32, {1000, 64}), tensor(DataType::Int64, {8, 16}), 0);
  ASSERT_TRUE(D.isOk());
  Expected<ValidDesc> V = validate(*D);
  ASSERT_TRUE(V.isOk());
  KernelSpec S = canonicalize(*V);
  // Indices [8,16] merge into 128 rows of one 64-element block each.
  ASSERT_EQ(S.Rank, 2u);
  EXPECT_EQ(S.Sizes[0], 128u);
  EXPECT_EQ(S.Sizes[1], 64u);
  EXPECT_TRUE(S.innerIsBlock());
  EXPECT_EQ(S.AxisStride[0], 64u);
  EXPECT_EQ(S.PosStride[0], 1u);
}

TEST(KernelSpec, DirectMLAndOnnxGatherShareASpec) {
  // DML Example 2 (FLOAT32 {3,2}, UINT32 {1,4}, axis 0) and the same ONNX
  // Gather with 1-D indices of 4.
  Expected<ValidDesc> Dml =
      validate(GatherDesc{tensor(DataType::Float32, {3, 2}), tensor(DataType::UInt32, {1, 4}),
                          tensor(DataType::Float32, {4, 2}), 0, 1});
  Expected<GatherDesc> Onnx =
      onnxGather(tensor(DataType::Float32, {3, 2}), tensor(DataType::UInt32, {4}), 0);
  ASSERT_TRUE(Dml.isOk());
  ASSERT_TRUE(Onnx.isOk());
  Expected<ValidDesc> OnnxV = validate(*Onnx);
  ASSERT_TRUE(OnnxV.isOk());
  EXPECT_EQ(canonicalize(*Dml), canonicalize(*OnnxV));
}

TEST(KernelSpec, SymbolNameSaysWhatTheKernelDoes) {
  KernelSpec S = geSpec(DataType::Float32, {4, 5}, {4, 3}, 1);
  EXPECT_THAT(S.symbolName(), ::testing::MatchesRegex("gj_b4_i64_r2_check_[0-9a-f]{16}"));
}

} // namespace

TEST(KernelSpec, DistinctSpecsHashApart) {
  // The cache's hash must tell apart specs that differ in one field, or in
  // which array holds a value.
  std::vector<KernelSpec> Specs;
  KernelSpec Base;
  Base.ElemBytes = 4;
  Base.Rank = 2;
  Base.Sizes = {8, 16};
  Base.AxisSize[0] = 16;
  for (uint64_t V = 1; V <= 64; ++V)
    for (int Field = 0; Field < 7; ++Field) {
      KernelSpec S = Base;
      std::array<uint64_t, MaxRank> *Arrays[] = {&S.Sizes, &S.OutStride, &S.IdxStride, &S.InStride,
                                                 &S.PosStride};
      if (Field < 5)
        (*Arrays[Field])[V % 2] += V;
      else if (Field == 5)
        S.AxisStride[0] = V;
      else
        S.AxisSize[0] += V;
      Specs.push_back(S);
    }
  std::set<size_t> Hashes;
  size_t Distinct = 0;
  for (size_t I = 0; I < Specs.size(); ++I) {
    bool New = true;
    for (size_t J = 0; J < I && New; ++J)
      New = !(Specs[J] == Specs[I]);
    Distinct += New;
    if (New)
      Hashes.insert(Specs[I].hashValue());
  }
  EXPECT_EQ(Hashes.size(), Distinct);
  EXPECT_GT(Distinct, 400u);
}
