//===- tools/gatherjit/SeedExamples.cpp - The seed documents' examples ---===//

#include "SeedExamples.h"

#include <cstring>

namespace gatherjit {
namespace {

TensorDesc tensor(DataType Type, std::vector<uint64_t> Sizes) {
  TensorDesc T;
  T.Type = Type;
  T.Sizes = std::move(Sizes);
  return T;
}

SeedExample dmlGather(std::string Name, std::vector<uint64_t> InSizes,
                      std::vector<uint64_t> IdxSizes, std::vector<uint64_t> OutSizes, uint32_t Axis,
                      uint32_t IndexDims, std::vector<float> In, std::vector<int64_t> Idx,
                      std::vector<float> Out) {
  GatherDesc D;
  D.Input = tensor(DataType::Float32, InSizes);
  D.Indices = tensor(DataType::UInt32, IdxSizes);
  D.Output = tensor(DataType::Float32, OutSizes);
  D.Axis = Axis;
  D.IndexDimensions = IndexDims;
  SeedExample E;
  E.Name = std::move(Name);
  E.Desc = validate(D, {OobPolicy::Clamp, FeatureLevel::L4_1, false});
  E.Input = std::move(In);
  E.Indices = std::move(Idx);
  E.ExpectedOutput = std::move(Out);
  E.ExpectedShape = OutSizes;
  return E;
}

} // namespace

std::vector<char> SeedExample::indexBytes() const {
  const DataType Type = Desc->Indices.Type;
  const unsigned Size = dataTypeSize(Type);
  std::vector<char> Bytes(Indices.size() * Size);
  for (size_t I = 0; I < Indices.size(); ++I) {
    if (Size == 8) {
      std::memcpy(&Bytes[I * 8], &Indices[I], 8);
    } else {
      int32_t V = static_cast<int32_t>(Indices[I]);
      std::memcpy(&Bytes[I * 4], &V, 4);
    }
  }
  return Bytes;
}

std::vector<SeedExample> seedExamples() {
  std::vector<SeedExample> Examples;

  {
    // DML_GATHER_ELEMENTS_OPERATOR_DESC. The document prints the output as
    // UINT32; its own rule says the output type is the input's, FLOAT32.
    GatherElementsDesc D;
    D.Input = tensor(DataType::Float32, {3, 3});
    D.Indices = tensor(DataType::UInt32, {2, 3});
    D.Output = tensor(DataType::Float32, {2, 3});
    D.Axis = 0;
    SeedExample E;
    E.Name = "DML GatherElements, axis 0";
    E.Note = "output FLOAT32 (the document prints UINT32)";
    E.Desc = validate(D, {OobPolicy::Clamp, FeatureLevel::L4_1, false});
    E.Input = {1, 2, 3, 4, 5, 6, 7, 8, 9};
    E.Indices = {1, 2, 0, 2, 0, 0};
    E.ExpectedOutput = {4, 8, 3, 7, 2, 3};
    E.ExpectedShape = {2, 3};
    Examples.push_back(std::move(E));
  }

  Examples.push_back(dmlGather("DML Gather 1, 1-D remapping", {4}, {5}, {5}, 0, 1, {11, 12, 13, 14},
                               {3, 1, 3, 0, 2}, {14, 12, 14, 11, 13}));
  Examples.push_back(dmlGather("DML Gather 2, concatenate rows", {3, 2}, {1, 4}, {4, 2}, 0, 1,
                               {1, 2, 3, 4, 5, 6}, {0, 1, 1, 2}, {1, 2, 3, 4, 3, 4, 5, 6}));
  {
    SeedExample E = dmlGather("DML Gather 3, swap columns", {3, 2}, {1, 2}, {3, 2}, 1, 1,
                              {1, 2, 3, 4, 5, 6}, {1, 0}, {2, 1, 4, 3, 6, 5});
    E.Note = "IndexDimensions 1 (the document's 2 breaks its own rank rule)";
    Examples.push_back(std::move(E));
  }
  Examples.push_back(dmlGather("DML Gather 4, nested indices", {1, 3, 3}, {1, 1, 2}, {3, 1, 2}, 2,
                               2, {1, 2, 3, 4, 5, 6, 7, 8, 9}, {0, 2}, {1, 3, 4, 6, 7, 9}));
  Examples.push_back(dmlGather("DML Gather 5, nested indices", {1, 3, 2}, {1, 2, 2}, {2, 2, 2}, 1,
                               2, {1, 2, 3, 4, 5, 6}, {0, 1, 1, 2}, {1, 2, 3, 4, 3, 4, 5, 6}));

  auto Onnx = [&](std::string Name, std::vector<uint64_t> DataSizes, std::vector<uint64_t> IdxSizes,
                  int64_t Axis, std::vector<float> In, std::vector<int64_t> Idx,
                  std::vector<float> Out) {
    SeedExample E;
    E.Name = std::move(Name);
    Expected<GatherElementsDesc> D = onnxGatherElements(tensor(DataType::Float32, DataSizes),
                                                        tensor(DataType::Int64, IdxSizes), Axis);
    E.Desc =
        D ? validate(*D, {OobPolicy::Check, std::nullopt, true}) : Expected<ValidDesc>(D.status());
    E.Input = std::move(In);
    E.Indices = std::move(Idx);
    E.ExpectedOutput = std::move(Out);
    E.ExpectedShape = IdxSizes;
    Examples.push_back(std::move(E));
  };
  Onnx("ONNX GatherElements 1, axis 1", {2, 2}, {2, 2}, 1, {1, 2, 3, 4}, {0, 0, 1, 0},
       {1, 1, 4, 3});
  Onnx("ONNX GatherElements 2, axis 0", {3, 3}, {2, 3}, 0, {1, 2, 3, 4, 5, 6, 7, 8, 9},
       {1, 2, 0, 2, 0, 0}, {4, 8, 3, 7, 2, 3});
  return Examples;
}

} // namespace gatherjit
