//===- compiler/validate/Descriptor.cpp - Data types and ONNX builders ---===//

#include "gatherjit/Descriptor.h"

#include <algorithm>
#include <array>
#include <string>

namespace gatherjit {

const char *errorCodeName(ErrorCode Code) {
  switch (Code) {
  case ErrorCode::Ok:
    return "ok";
  case ErrorCode::InvalidArgument:
    return "invalid argument";
  case ErrorCode::Unsupported:
    return "unsupported";
  case ErrorCode::IndexOutOfRange:
    return "index out of range";
  case ErrorCode::IoError:
    return "I/O error";
  case ErrorCode::Internal:
    return "internal error";
  }
  return "unknown";
}

std::string quote(std::string_view Text, size_t Max, char Quote) {
  static constexpr char Hex[] = "0123456789abcdef";
  std::string Out(1, Quote);
  for (size_t I = 0; I < Text.size() && I < Max; ++I) {
    const unsigned char C = static_cast<unsigned char>(Text[I]);
    switch (C) {
    case '\\':
      Out += "\\\\";
      break;
    case '\n':
      Out += "\\n";
      break;
    case '\r':
      Out += "\\r";
      break;
    case '\t':
      Out += "\\t";
      break;
    case '\0':
      Out += "\\0";
      break;
    default:
      if (C == static_cast<unsigned char>(Quote))
        Out += std::string("\\") + Quote;
      else if (C < 0x20 || C == 0x7f)
        Out += std::string("\\x") + Hex[C >> 4] + Hex[C & 15];
      else
        Out += static_cast<char>(C);
    }
  }
  Out += Quote;
  if (Text.size() > Max)
    Out += " (" + std::to_string(Text.size() - Max) + " more bytes)";
  return Out;
}

namespace {
struct TypeInfo {
  DataType Type;
  const char *Name;
  unsigned Size;
};
constexpr std::array<TypeInfo, 16> Types = {{
    {DataType::Float64, "FLOAT64", 8},
    {DataType::Float32, "FLOAT32", 4},
    {DataType::Float16, "FLOAT16", 2},
    {DataType::Int64, "INT64", 8},
    {DataType::Int32, "INT32", 4},
    {DataType::Int16, "INT16", 2},
    {DataType::Int8, "INT8", 1},
    {DataType::UInt64, "UINT64", 8},
    {DataType::UInt32, "UINT32", 4},
    {DataType::UInt16, "UINT16", 2},
    {DataType::UInt8, "UINT8", 1},
    {DataType::BFloat16, "BFLOAT16", 2},
    {DataType::Bool, "BOOL", 1},
    {DataType::Complex64, "COMPLEX64", 8},
    {DataType::Complex128, "COMPLEX128", 16},
    {DataType::Opaque, "OPAQUE", 0},
}};
} // namespace

const char *dataTypeName(DataType Type) { return Types[static_cast<size_t>(Type)].Name; }

unsigned dataTypeSize(DataType Type) { return Types[static_cast<size_t>(Type)].Size; }

std::optional<DataType> parseDataType(std::string_view Name) {
  for (const TypeInfo &Info : Types)
    if (Name == Info.Name)
      return Info.Type;
  return std::nullopt;
}

bool isDirectMLType(DataType Type) {
  return static_cast<int>(Type) <= static_cast<int>(DataType::UInt8);
}

bool isIndexType(DataType Type) {
  return Type == DataType::Int32 || Type == DataType::Int64 || Type == DataType::UInt32 ||
         Type == DataType::UInt64;
}

bool isSignedIndexType(DataType Type) { return Type == DataType::Int32 || Type == DataType::Int64; }

const char *oobPolicyName(OobPolicy Policy) {
  switch (Policy) {
  case OobPolicy::Check:
    return "check";
  case OobPolicy::Clamp:
    return "clamp";
  case OobPolicy::Clip:
    return "clip";
  }
  return "?";
}

std::optional<OobPolicy> parseOobPolicy(std::string_view Name) {
  for (OobPolicy P : {OobPolicy::Check, OobPolicy::Clamp, OobPolicy::Clip})
    if (Name == oobPolicyName(P))
      return P;
  return std::nullopt;
}

const char *featureLevelName(FeatureLevel Level) {
  switch (Level) {
  case FeatureLevel::L1_0:
    return "1_0";
  case FeatureLevel::L2_1:
    return "2_1";
  case FeatureLevel::L3_0:
    return "3_0";
  case FeatureLevel::L4_1:
    return "4_1";
  }
  return "?";
}

std::optional<FeatureLevel> parseFeatureLevel(std::string_view Name) {
  for (FeatureLevel L :
       {FeatureLevel::L1_0, FeatureLevel::L2_1, FeatureLevel::L3_0, FeatureLevel::L4_1})
    if (Name == featureLevelName(L))
      return L;
  return std::nullopt;
}

std::string shapeString(const std::vector<uint64_t> &Values) {
  std::string S = "{";
  for (size_t I = 0; I < Values.size(); ++I)
    S += (I ? "," : "") + std::to_string(Values[I]);
  return S + "}";
}

std::vector<uint64_t> packedStrides(const std::vector<uint64_t> &Sizes) {
  std::vector<uint64_t> Strides(Sizes.size());
  uint64_t Stride = 1;
  for (size_t I = Sizes.size(); I-- > 0;) {
    Strides[I] = Stride;
    // Saturate: validation rejects the element count before it matters.
    Stride = Sizes[I] != 0 && Stride > UINT64_MAX / Sizes[I] ? UINT64_MAX : Stride * Sizes[I];
  }
  return Strides;
}

static std::string axisRangeMessage(const char *Op, int64_t Axis, size_t Rank) {
  return std::string(Op) + ": axis = " + std::to_string(Axis) + " is out of range for a " +
         std::to_string(Rank) + "-D data tensor; use " +
         std::to_string(-static_cast<int64_t>(Rank)) + ".." +
         std::to_string(static_cast<int64_t>(Rank) - 1);
}

static Status rankOverLimit(const char *Op, const char *Tensor, size_t Rank) {
  return Status::invalidArgument(std::string(Op) + ": " + Tensor + " rank " + std::to_string(Rank) +
                                 " exceeds the maximum of " + std::to_string(MaxRank));
}

Expected<GatherElementsDesc> onnxGatherElements(const TensorDesc &Data, const TensorDesc &Indices,
                                                int64_t Axis) {
  const int64_t Rank = Data.rank();
  if (Rank < 1)
    return Status::invalidArgument("GatherElements: data must have rank >= 1, got a scalar");
  if (Rank > static_cast<int64_t>(MaxRank))
    return rankOverLimit("GatherElements", "data", Rank);
  if (Indices.rank() != Data.rank())
    return Status::invalidArgument("GatherElements: indices rank " +
                                   std::to_string(Indices.rank()) + " must equal data rank " +
                                   std::to_string(Rank));
  if (Axis < -Rank || Axis >= Rank)
    return Status::invalidArgument(axisRangeMessage("GatherElements", Axis, Rank));
  GatherElementsDesc Desc;
  Desc.Input = Data;
  Desc.Indices = Indices;
  Desc.Output.Type = Data.Type;
  Desc.Output.OpaqueBytes = Data.OpaqueBytes;
  Desc.Output.Sizes = Indices.Sizes;
  Desc.Axis = static_cast<uint32_t>(Axis < 0 ? Axis + Rank : Axis);
  return Desc;
}

std::vector<uint64_t> onnxGatherOutputShape(const std::vector<uint64_t> &Data,
                                            const std::vector<uint64_t> &Indices, unsigned Axis) {
  std::vector<uint64_t> Shape(Data.begin(), Data.begin() + Axis);
  Shape.insert(Shape.end(), Indices.begin(), Indices.end());
  Shape.insert(Shape.end(), Data.begin() + Axis + 1, Data.end());
  return Shape;
}

// Pads a tensor with leading ones to \p Rank dimensions.
static TensorDesc padLeading(const TensorDesc &Desc, size_t Rank) {
  TensorDesc Padded = Desc;
  size_t Extra = Rank - Desc.rank();
  Padded.Sizes.insert(Padded.Sizes.begin(), Extra, 1);
  if (Padded.Strides)
    Padded.Strides->insert(Padded.Strides->begin(), Extra, 0);
  return Padded;
}

Expected<GatherDesc> onnxGather(const TensorDesc &Data, const TensorDesc &Indices, int64_t Axis) {
  const int64_t Rank = Data.rank();
  if (Rank < 1)
    return Status::invalidArgument("Gather: data must have rank >= 1, got a scalar");
  if (Rank > static_cast<int64_t>(MaxRank))
    return rankOverLimit("Gather", "data", Rank);
  if (Axis < -Rank || Axis >= Rank)
    return Status::invalidArgument(axisRangeMessage("Gather", Axis, Rank));
  const unsigned A = static_cast<unsigned>(Axis < 0 ? Axis + Rank : Axis);
  const size_t OutRank = Data.rank() + Indices.rank() - 1;
  if (OutRank > MaxRank)
    return Status::invalidArgument("Gather: output rank = data rank " + std::to_string(Rank) +
                                   " + indices rank " + std::to_string(Indices.rank()) +
                                   " - 1 = " + std::to_string(OutRank) +
                                   " exceeds the maximum of " + std::to_string(MaxRank));
  if (Indices.Strides && Indices.Strides->size() != Indices.rank())
    return Status::invalidArgument("Gather: indices strides do not match its rank");
  // DirectML's Gather needs one DimensionCount for all three tensors.
  const size_t Common = std::max<size_t>(OutRank, Data.rank());
  GatherDesc Desc;
  Desc.Input = padLeading(Data, Common);
  Desc.Indices = padLeading(Indices, Common);
  Desc.Output.Type = Data.Type;
  Desc.Output.OpaqueBytes = Data.OpaqueBytes;
  Desc.Output.Sizes = onnxGatherOutputShape(Data.Sizes, Indices.Sizes, A);
  Desc.Output = padLeading(Desc.Output, Common);
  Desc.Axis = static_cast<uint32_t>(A + (Common - Data.rank()));
  Desc.IndexDimensions = Indices.rank();
  return Desc;
}

std::vector<uint64_t> onnxGatherNDOutputShape(const std::vector<uint64_t> &Data,
                                              const std::vector<uint64_t> &Indices,
                                              unsigned BatchDims) {
  std::vector<uint64_t> Shape(Indices.begin(), Indices.end() - 1);
  Shape.insert(Shape.end(), Data.begin() + BatchDims + Indices.back(), Data.end());
  return Shape;
}

Expected<GatherNDDesc> onnxGatherND(const TensorDesc &Data, const TensorDesc &Indices,
                                    int64_t BatchDims) {
  const int64_t R = Data.rank(), Q = Indices.rank();
  if (R < 1 || Q < 1)
    return Status::invalidArgument(std::string("GatherND: ") + (R < 1 ? "data" : "indices") +
                                   " must have rank >= 1, got a scalar");
  if (BatchDims < 0 || BatchDims >= std::min(R, Q))
    return Status::invalidArgument("GatherND: batch_dims = " + std::to_string(BatchDims) +
                                   " is out of range for " + std::to_string(R) + "-D data and " +
                                   std::to_string(Q) + "-D indices; use 0.." +
                                   std::to_string(std::min(R, Q) - 1));
  const unsigned B = static_cast<unsigned>(BatchDims);
  for (unsigned D = 0; D < B; ++D)
    if (Data.Sizes[D] != Indices.Sizes[D])
      return Status::invalidArgument(
          "GatherND: the batch dimensions of data " + shapeString(Data.Sizes) + " and indices " +
          shapeString(Indices.Sizes) + " differ at dimension " + std::to_string(D) +
          " (batch_dims = " + std::to_string(B) + ")");
  const uint64_t T = Indices.Sizes.back();
  if (T < 1 || T > static_cast<uint64_t>(R - B))
    return Status::invalidArgument("GatherND: the last dimension of indices " +
                                   shapeString(Indices.Sizes) + " is the index tuple's length, " +
                                   std::to_string(T) + ", which must be in 1.." +
                                   std::to_string(R - B) + " (data rank " + std::to_string(R) +
                                   " - batch_dims " + std::to_string(B) + ")");
  if (Indices.Strides && Indices.Strides->size() != Indices.rank())
    return Status::invalidArgument("GatherND: indices strides do not match its rank");
  if (Data.Strides && Data.Strides->size() != Data.rank())
    return Status::invalidArgument("GatherND: data strides do not match its rank");
  std::vector<uint64_t> OutShape = onnxGatherNDOutputShape(Data.Sizes, Indices.Sizes, B);
  const size_t Common =
      std::max({OutShape.size(), Data.Sizes.size(), Indices.Sizes.size(), size_t(1)});
  if (Common > MaxRank)
    return R > static_cast<int64_t>(MaxRank) ? rankOverLimit("GatherND", "data", R)
           : Q > static_cast<int64_t>(MaxRank)
               ? rankOverLimit("GatherND", "indices", Q)
               : rankOverLimit("GatherND", "output", OutShape.size());
  GatherNDDesc Desc;
  Desc.Input = padLeading(Data, Common);
  Desc.Indices = padLeading(Indices, Common);
  Desc.Output.Type = Data.Type;
  Desc.Output.OpaqueBytes = Data.OpaqueBytes;
  Desc.Output.Sizes = std::move(OutShape);
  Desc.Output = padLeading(Desc.Output, Common);
  Desc.InputDimensionCount = static_cast<uint32_t>(R);
  Desc.IndicesDimensionCount = static_cast<uint32_t>(Q);
  Desc.BatchDimensionCount = B;
  return Desc;
}

} // namespace gatherjit
