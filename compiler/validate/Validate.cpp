//===- compiler/validate/Validate.cpp - Descriptor validation ------------===//
//
// One rule after another, each with its own message. The order matters: a
// later rule may index arrays whose lengths an earlier rule proved.
//
//===----------------------------------------------------------------------===//

#include "gatherjit/Validate.h"

#include <algorithm>
#include <array>
#include <cassert>
#include <span>
#include <tuple>
#include <type_traits>

namespace gatherjit {

const char *opKindName(OpKind Op) {
  switch (Op) {
  case OpKind::GatherElements:
    return "GatherElements";
  case OpKind::Gather:
    return "Gather";
  case OpKind::GatherND:
    return "GatherND";
  }
  return "?";
}

namespace {

std::string typeList(const std::vector<DataType> &Types) {
  std::string S;
  for (size_t I = 0; I < Types.size(); ++I)
    S += (I ? ", " : "") + std::string(dataTypeName(Types[I]));
  return S;
}

/// One row of a seed document's tensor-support table.
struct SupportRow {
  bool Only4D;
  std::vector<DataType> Data;
  std::vector<DataType> Index;
};

using DT = DataType;
const std::vector<DT> FloatsOnly = {DT::Float32, DT::Float16};
const std::vector<DT> Level21Data = {DT::Float32, DT::Float16, DT::Int32,  DT::Int16,
                                     DT::Int8,    DT::UInt32,  DT::UInt16, DT::UInt8};
const std::vector<DT> Level41Data = {DT::Float64, DT::Float32, DT::Float16, DT::Int64,
                                     DT::Int32,   DT::Int16,   DT::Int8,    DT::UInt64,
                                     DT::UInt32,  DT::UInt16,  DT::UInt8};
const std::vector<DT> AllIndex = {DT::Int64, DT::Int32, DT::UInt64, DT::UInt32};

std::optional<SupportRow> supportRow(OpKind Op, FeatureLevel Level) {
  switch (Level) {
  case FeatureLevel::L1_0:
    if (Op != OpKind::Gather)
      return std::nullopt; // Introduced in 2_1.
    return SupportRow{true, FloatsOnly, {DT::UInt32}};
  case FeatureLevel::L2_1:
    return SupportRow{true, Level21Data, {DT::UInt32}};
  case FeatureLevel::L3_0:
    return SupportRow{false, Level21Data, AllIndex};
  case FeatureLevel::L4_1:
    return SupportRow{false, Level41Data, AllIndex};
  }
  return std::nullopt;
}

/// The start of an error message, "Op: " and a tensor's name if given,
/// made into a string only when an error is: validating a valid
/// descriptor builds none (a new shape's compile runs through here).
struct Prefix {
  const char *Op;
  const char *Name = "";
};
std::string operator+(const Prefix &P, const std::string &Rest) {
  return std::string(P.Op) + ": " + P.Name + Rest;
}
std::string operator+(const Prefix &P, const char *Rest) { return P + std::string(Rest); }

bool mulOverflows(uint64_t A, uint64_t B, uint64_t &Out) {
  return __builtin_mul_overflow(A, B, &Out);
}
bool addOverflows(uint64_t A, uint64_t B, uint64_t &Out) {
  return __builtin_add_overflow(A, B, &Out);
}

/// Validates what one tensor must satisfy on its own: rank, strides, the
/// element count and byte extent in 64 bits, and its buffer size.
class TensorChecker {
public:
  TensorChecker(const char *Op) : Op(Op) {}

  Status check(TensorDesc &T, const char *Name) {
    const Prefix P{Op, Name};
    if (T.rank() < 1 || T.rank() > MaxRank)
      return Status::invalidArgument(P + ".DimensionCount = " + std::to_string(T.rank()) +
                                     " is out of range; use 1.." + std::to_string(MaxRank));
    if (T.Type == DataType::Opaque && T.OpaqueBytes == 0)
      return Status::invalidArgument(P + ".DataType = OPAQUE needs an element size > 0");
    if (T.Strides && T.Strides->size() != T.rank())
      return Status::invalidArgument(P + ".Strides has " + std::to_string(T.Strides->size()) +
                                     " entries but " + Name + ".Sizes has " +
                                     std::to_string(T.rank()));
    if (!T.Strides)
      T.Strides = packedStrides(T.Sizes);
    uint64_t Count = 1;
    for (uint64_t S : T.Sizes)
      if (mulOverflows(Count, S, Count))
        return Status::invalidArgument(P + ".Sizes = " + shapeString(T.Sizes) +
                                       " has more than 2^64 elements");
    // Every byte offset must fit a signed 64-bit integer: the kernels use
    // signed arithmetic on byte offsets.
    uint64_t Extent = Count == 0 ? 0 : 1;
    bool Overflow = false;
    for (unsigned D = 0; D < T.rank() && Count != 0; ++D) {
      uint64_t Span;
      Overflow |= mulOverflows(T.Sizes[D] - 1, (*T.Strides)[D], Span);
      Overflow |= addOverflows(Extent, Span, Extent);
    }
    uint64_t Bytes = 0;
    Overflow |= mulOverflows(Extent, T.elementBytes(), Bytes);
    if (Count != 0 && Count > static_cast<uint64_t>(INT64_MAX))
      Overflow = true;
    if (Overflow || Bytes > static_cast<uint64_t>(INT64_MAX))
      return Status::invalidArgument(P + " with Sizes = " + shapeString(T.Sizes) +
                                     " and Strides = " + shapeString(*T.Strides) +
                                     " addresses more than 2^63 bytes");
    if (T.TotalBytes && Bytes > *T.TotalBytes)
      return Status::invalidArgument(
          P + ": Sizes = " + shapeString(T.Sizes) + " and Strides = " + shapeString(*T.Strides) +
          " address " + std::to_string(Bytes) +
          " bytes, outside the buffer of TotalBytes = " + std::to_string(*T.TotalBytes));
    return Status::ok();
  }

  /// Two output elements must never share memory: with dimensions sorted by
  /// stride, each stride must step over everything the smaller ones span.
  /// \p T's rank is checked (at most MaxRank).
  Status checkNoOverlap(const TensorDesc &T, const char *Name) {
    assert(T.rank() <= MaxRank);
    std::array<unsigned, MaxRank> Dims;
    unsigned Count = 0;
    for (unsigned D = 0; D < T.rank(); ++D) {
      if (T.Sizes[D] == 0)
        return Status::ok(); // Nothing is written.
      if (T.Sizes[D] > 1)
        Dims[Count++] = D;
    }
    const auto &St = *T.Strides;
    // By stride, the smallest first (an insertion sort: a handful at most).
    for (unsigned I = 1; I < Count; ++I)
      for (unsigned J = I; J > 0 && St[Dims[J]] < St[Dims[J - 1]]; --J)
        std::swap(Dims[J], Dims[J - 1]);
    uint64_t Span = 1; // Elements covered by the dimensions seen so far.
    for (unsigned D : std::span(Dims.data(), Count)) {
      if (St[D] < Span)
        return Status::invalidArgument(
            std::string(Op) + ": " + Name + ".Strides = " + shapeString(St) +
            " make elements overlap (Strides[" + std::to_string(D) +
            "] = " + std::to_string(St[D]) + " with Sizes = " + shapeString(T.Sizes) +
            "); an output needs distinct elements");
      Span = St[D] * (T.Sizes[D] - 1) + Span;
    }
    return Status::ok();
  }

private:
  const char *Op;
};

Status checkFeatureLevel(OpKind Op, const ValidDesc &V, FeatureLevel Level) {
  const Prefix P{opKindName(Op)};
  auto At = [&] { return std::string(" at FeatureLevel = ") + featureLevelName(Level); };
  std::optional<SupportRow> Row = supportRow(Op, Level);
  if (!Row)
    return Status::unsupported(P +
                               "the operator was introduced in feature "
                               "level 2_1; FeatureLevel = " +
                               featureLevelName(Level) + " does not have it");
  for (auto [T, Name] : {std::pair{&V.Input, "InputTensor"}, std::pair{&V.Indices, "IndicesTensor"},
                         std::pair{&V.Output, "OutputTensor"}}) {
    if (Row->Only4D && T->rank() != 4)
      return Status::unsupported(P + Name + ".DimensionCount = " + std::to_string(T->rank()) +
                                 " is not supported" + At() + "; only 4 is");
    const auto &Allowed = T == &V.Indices ? Row->Index : Row->Data;
    if (std::find(Allowed.begin(), Allowed.end(), T->Type) == Allowed.end())
      return Status::unsupported(P + Name + ".DataType = " + dataTypeName(T->Type) +
                                 " is not supported" + At() + "; use " + typeList(Allowed));
  }
  return Status::ok();
}

/// Rules shared by both operators: ranks, types and per-tensor checks.
Status checkCommon(OpKind Op, ValidDesc &V, const ValidateOptions &Options) {
  const Prefix P{opKindName(Op)};
  TensorChecker Checker(opKindName(Op));
  for (auto [T, Name] : {std::pair{&V.Input, "InputTensor"}, std::pair{&V.Indices, "IndicesTensor"},
                         std::pair{&V.Output, "OutputTensor"}})
    if (Status S = Checker.check(*T, Name); !S)
      return S;
  if (V.Indices.rank() != V.Input.rank())
    return Status::invalidArgument(
        P + "IndicesTensor.DimensionCount = " + std::to_string(V.Indices.rank()) +
        " must equal InputTensor.DimensionCount = " + std::to_string(V.Input.rank()));
  if (V.Output.rank() != V.Input.rank())
    return Status::invalidArgument(
        P + "OutputTensor.DimensionCount = " + std::to_string(V.Output.rank()) +
        " must equal InputTensor.DimensionCount = " + std::to_string(V.Input.rank()));
  if (V.Axis >= V.Input.rank())
    return Status::invalidArgument(P + "Axis = " + std::to_string(V.Axis) +
                                   " is out of range for a " + std::to_string(V.Input.rank()) +
                                   "-D InputTensor; use 0.." + std::to_string(V.Input.rank() - 1));
  if (!isIndexType(V.Indices.Type))
    return Status::invalidArgument(P + "IndicesTensor.DataType = " + dataTypeName(V.Indices.Type) +
                                   " is not an index type; use INT32, INT64, UINT32 or UINT64");
  const EpilogueSignature &E = Options.Epilogue;
  V.Epilogue = E;
  if (E.Kind != EpilogueKind::None) {
    for (auto [T, Name, Want, Role] : {std::tuple{&V.Input, "InputTensor", E.In, "takes"},
                                       std::tuple{&V.Output, "OutputTensor", E.Out, "returns"}})
      if (T->Type != Want)
        return Status::invalidArgument(P + Name + ".DataType = " + dataTypeName(T->Type) +
                                       " does not match the epilogue, which " + Role + " " +
                                       dataTypeName(Want));
  } else if (V.Output.Type != V.Input.Type) {
    return Status::invalidArgument(
        P + "OutputTensor.DataType = " + dataTypeName(V.Output.Type) +
        " must equal InputTensor.DataType = " + dataTypeName(V.Input.Type));
  }
  if (E.Kind == EpilogueKind::None && V.Output.elementBytes() != V.Input.elementBytes())
    return Status::invalidArgument(
        P + "OutputTensor element size = " + std::to_string(V.Output.elementBytes()) +
        " bytes must equal InputTensor element size = " + std::to_string(V.Input.elementBytes()) +
        " bytes");
  if (Options.Level) {
    for (const TensorDesc *T : {&V.Input, &V.Indices})
      if (!isDirectMLType(T->Type))
        return Status::unsupported(P + (T == &V.Input ? "InputTensor" : "IndicesTensor") +
                                   ".DataType = " + dataTypeName(T->Type) +
                                   " is an extension that no DirectML feature level supports; "
                                   "omit feature_level to use it");
  }
  return Status::ok();
}

Status checkOutputLayout(OpKind Op, const ValidDesc &V) {
  return TensorChecker(opKindName(Op)).checkNoOverlap(V.Output, "OutputTensor");
}

Expected<ValidDesc> validateOp(const GatherElementsDesc &Desc, const ValidateOptions &Options) {
  const OpKind Op = OpKind::GatherElements;
  const Prefix P{"GatherElements"};
  ValidDesc V;
  V.Op = Op;
  V.Input = Desc.Input;
  V.Indices = Desc.Indices;
  V.Output = Desc.Output;
  V.Axis = Desc.Axis;
  V.Policy = Options.Policy;
  if (Status S = checkCommon(Op, V, Options); !S)
    return S;
  for (unsigned D = 0; D < V.rank(); ++D) {
    if (D == V.Axis)
      continue;
    const uint64_t In = V.Input.Sizes[D], Idx = V.Indices.Sizes[D];
    if (Options.AllowSmallerIndices ? Idx > In : Idx != In)
      return Status::invalidArgument(
          P + "IndicesTensor.Sizes[" + std::to_string(D) + "] = " + std::to_string(Idx) +
          (Options.AllowSmallerIndices ? " must not exceed" : " must equal") +
          " InputTensor.Sizes[" + std::to_string(D) + "] = " + std::to_string(In) +
          " (all dimensions but Axis = " + std::to_string(V.Axis) + ")");
  }
  for (unsigned D = 0; D < V.rank(); ++D)
    if (V.Output.Sizes[D] != V.Indices.Sizes[D])
      return Status::invalidArgument(
          P + "OutputTensor.Sizes = " + shapeString(V.Output.Sizes) +
          " must equal IndicesTensor.Sizes = " + shapeString(V.Indices.Sizes));
  if (Status S = checkOutputLayout(Op, V); !S)
    return S;
  if (Options.Level)
    if (Status S = checkFeatureLevel(Op, V, *Options.Level); !S)
      return S;
  return V;
}

Expected<ValidDesc> validateOp(const GatherDesc &Desc, const ValidateOptions &Options) {
  const OpKind Op = OpKind::Gather;
  const Prefix P{"Gather"};
  ValidDesc V;
  V.Op = Op;
  V.Input = Desc.Input;
  V.Indices = Desc.Indices;
  V.Output = Desc.Output;
  V.Axis = Desc.Axis;
  V.IndexDimensions = Desc.IndexDimensions;
  V.Policy = Options.Policy;
  if (Status S = checkCommon(Op, V, Options); !S)
    return S;
  const unsigned N = V.rank(), K = V.IndexDimensions;
  // The document says [0, DimensionCount), but its Example 1 uses K equal
  // to the DimensionCount of 1-D indices; K == N is allowed.
  if (K > N)
    return Status::invalidArgument(P + "IndexDimensions = " + std::to_string(K) +
                                   " exceeds IndicesTensor.DimensionCount = " + std::to_string(N) +
                                   "; use 0.." + std::to_string(N));
  for (unsigned D = 0; D < N - K; ++D)
    if (V.Indices.Sizes[D] != 1)
      return Status::invalidArgument(P + "IndicesTensor.Sizes[" + std::to_string(D) +
                                     "] = " + std::to_string(V.Indices.Sizes[D]) +
                                     " must be 1: with IndexDimensions = " + std::to_string(K) +
                                     " only the last " + std::to_string(K) +
                                     " of IndicesTensor.Sizes = " + shapeString(V.Indices.Sizes) +
                                     " are indices");
  // The original rank ignores the leading ones that pad the input.
  unsigned LeadingOnes = 0;
  while (LeadingOnes < N && V.Input.Sizes[LeadingOnes] == 1)
    ++LeadingOnes;
  const unsigned OriginalRank = std::max(1u, N - LeadingOnes);
  if (OriginalRank + K - 1 > N)
    return Status::invalidArgument(
        P + "original rank of InputTensor (" + std::to_string(OriginalRank) +
        ", Sizes = " + shapeString(V.Input.Sizes) + ") + IndexDimensions (" + std::to_string(K) +
        ") - 1 = " + std::to_string(OriginalRank + K - 1) +
        " exceeds OutputTensor.DimensionCount = " + std::to_string(N));
  // Output sizes: the input's leading and trailing segments around Axis with
  // the index dimensions between, right-aligned into N dimensions.
  std::vector<uint64_t> Full(V.Input.Sizes.begin(), V.Input.Sizes.begin() + V.Axis);
  Full.insert(Full.end(), V.Indices.Sizes.end() - K, V.Indices.Sizes.end());
  Full.insert(Full.end(), V.Input.Sizes.begin() + V.Axis + 1, V.Input.Sizes.end());
  while (Full.size() > N) {
    if (Full.front() != 1)
      return Status::invalidArgument(P +
                                     "the output sizes would drop a leading dimension of size " +
                                     std::to_string(Full.front()) +
                                     " to fit OutputTensor.DimensionCount = " + std::to_string(N) +
                                     "; only leading ones are cropped");
    Full.erase(Full.begin());
  }
  while (Full.size() < N)
    Full.insert(Full.begin(), 1);
  if (V.Output.Sizes != Full)
    return Status::invalidArgument(P + "OutputTensor.Sizes = " + shapeString(V.Output.Sizes) +
                                   " must equal " + shapeString(Full) + " (InputTensor.Sizes[0.." +
                                   std::to_string(V.Axis) +
                                   "), the last IndexDimensions = " + std::to_string(K) +
                                   " of IndicesTensor.Sizes, InputTensor.Sizes[" +
                                   std::to_string(V.Axis + 1) + "..], right-aligned)");
  if (Status S = checkOutputLayout(Op, V); !S)
    return S;
  if (Options.Level)
    if (Status S = checkFeatureLevel(Op, V, *Options.Level); !S)
      return S;
  return V;
}

/// GatherND's output sizes: the meaningful index sizes but the last, then
/// the input's after the batch and tuple dimensions, right-aligned.
Status checkGatherNDOutputSizes(const ValidDesc &V) {
  const Prefix P{"GatherND"};
  const unsigned N = V.rank(), B = V.BatchDimensionCount;
  const unsigned InFirst = N - V.InputDimensionCount, IdxFirst = N - V.IndicesDimensionCount;
  const uint64_t T = V.Indices.Sizes[N - 1];
  // DirectML's documents take the trailing input sizes from
  // InputTensor.DimensionCount - indexTupleSize, which contradicts their own
  // batch example; the example, ONNX and this skip the ignored leading
  // ones and the batches too.
  std::vector<uint64_t> Full(V.Indices.Sizes.begin() + IdxFirst, V.Indices.Sizes.end() - 1);
  Full.insert(Full.end(), V.Input.Sizes.begin() + InFirst + B + T, V.Input.Sizes.end());
  if (Full.size() > N)
    return Status::invalidArgument(
        P + "the output has " + std::to_string(Full.size()) +
        " dimensions (IndicesDimensionCount - 1 + InputDimensionCount - "
        "BatchDimensionCount - tuple length), more than OutputTensor.DimensionCount = " +
        std::to_string(N));
  Full.insert(Full.begin(), N - Full.size(), 1);
  if (V.Output.Sizes != Full)
    return Status::invalidArgument(P + "OutputTensor.Sizes = " + shapeString(V.Output.Sizes) +
                                   " must equal " + shapeString(Full) +
                                   " (the meaningful IndicesTensor.Sizes but the last, then " +
                                   "InputTensor.Sizes after the batch and the " +
                                   std::to_string(T) + " tuple dimensions, right-aligned)");
  return Status::ok();
}

Expected<ValidDesc> validateOp(const GatherNDDesc &Desc, const ValidateOptions &Options) {
  const OpKind Op = OpKind::GatherND;
  const Prefix P{"GatherND"};
  ValidDesc V;
  V.Op = Op;
  V.Input = Desc.Input;
  V.Indices = Desc.Indices;
  V.Output = Desc.Output;
  V.InputDimensionCount = Desc.InputDimensionCount;
  V.IndicesDimensionCount = Desc.IndicesDimensionCount;
  V.BatchDimensionCount = Desc.BatchDimensionCount;
  V.Policy = Options.Policy;
  if (Status S = checkCommon(Op, V, Options); !S)
    return S;
  const unsigned N = V.rank(), IC = V.InputDimensionCount, QC = V.IndicesDimensionCount,
                 B = V.BatchDimensionCount;
  for (auto [Count, Field, Tensor] : {std::tuple{IC, "InputDimensionCount", &V.Input},
                                      std::tuple{QC, "IndicesDimensionCount", &V.Indices}}) {
    const char *Name = Tensor == &V.Input ? "InputTensor" : "IndicesTensor";
    if (Count < 1 || Count > N)
      return Status::invalidArgument(P + Field + " = " + std::to_string(Count) +
                                     " is out of range; use 1.." + std::to_string(N) + " (" + Name +
                                     ".DimensionCount)");
    for (unsigned D = 0; D < N - Count; ++D)
      if (Tensor->Sizes[D] != 1)
        return Status::invalidArgument(
            P + Name + ".Sizes[" + std::to_string(D) + "] = " + std::to_string(Tensor->Sizes[D]) +
            " must be 1: with " + Field + " = " + std::to_string(Count) + " only the last " +
            std::to_string(Count) + " of " + Name + ".Sizes = " + shapeString(Tensor->Sizes) +
            " are meaningful");
  }
  if (B >= IC || B >= QC)
    return Status::invalidArgument(P + "BatchDimensionCount = " + std::to_string(B) +
                                   " must be less than both " +
                                   "InputDimensionCount = " + std::to_string(IC) +
                                   " and IndicesDimensionCount = " + std::to_string(QC));
  const unsigned InFirst = N - IC, IdxFirst = N - QC;
  for (unsigned D = 0; D < B; ++D)
    if (V.Input.Sizes[InFirst + D] != V.Indices.Sizes[IdxFirst + D])
      return Status::invalidArgument(P + "batch dimension " + std::to_string(D) +
                                     " differs: InputTensor.Sizes[" + std::to_string(InFirst + D) +
                                     "] = " + std::to_string(V.Input.Sizes[InFirst + D]) +
                                     " but IndicesTensor.Sizes[" + std::to_string(IdxFirst + D) +
                                     "] = " + std::to_string(V.Indices.Sizes[IdxFirst + D]));
  const uint64_t T = V.Indices.Sizes[N - 1];
  if (T < 1 || T > IC - B)
    return Status::invalidArgument(P + "the index tuple's length IndicesTensor.Sizes[" +
                                   std::to_string(N - 1) + "] = " + std::to_string(T) +
                                   " must be in 1.." + std::to_string(IC - B) +
                                   " (InputDimensionCount - BatchDimensionCount)");
  if (Status S = checkGatherNDOutputSizes(V); !S)
    return S;
  if (Status S = checkOutputLayout(Op, V); !S)
    return S;
  if (Options.Level) {
    if (B > 0 && *Options.Level < FeatureLevel::L3_0)
      return Status::unsupported(P + "BatchDimensionCount = " + std::to_string(B) +
                                 " needs DML_GATHER_ND1, introduced in feature level 3_0; "
                                 "FeatureLevel = " +
                                 featureLevelName(*Options.Level) + " does not have it");
    if (Status S = checkFeatureLevel(Op, V, *Options.Level); !S)
      return S;
  }
  return V;
}

/// A row epilogue's descriptor: the operator's rules hold for the output
/// whose rows are the input's (of its type, packed); then the real output
/// (its own row length, type and strides) is checked as a tensor.
template <class OpDesc>
Expected<ValidDesc> validateRows(const OpDesc &Desc, OpKind Op, const ValidateOptions &Options) {
  const Prefix P{opKindName(Op)};
  if (Op == OpKind::GatherElements)
    return Status::invalidArgument(P + "a row epilogue needs rows that are gathered whole; "
                                       "use Gather or GatherND, or an element epilogue");
  // The operator's own rules, without the epilogue, on the rows' shapes.
  ValidateOptions Plain = Options;
  Plain.Epilogue = {};
  if (Desc.Output.Sizes.empty() || Desc.Input.Sizes.empty() ||
      Desc.Output.rank() != Desc.Input.rank())
    return validateOp(Desc, Plain); // Its rank errors.
  for (auto [T, Name] :
       {std::pair{&Desc.Input, "InputTensor"}, std::pair{&Desc.Output, "OutputTensor"}})
    if (T->Strides && !T->Strides->empty() && T->Strides->back() != 1 && T->Sizes.back() > 1)
      return Status::invalidArgument(P + Name + ".Strides = " + shapeString(*T->Strides) +
                                     ": a row epilogue's rows (the last dimension) must be "
                                     "contiguous, stride 1");
  // The output as it would be without the epilogue: the input's rows,
  // packed.
  TensorDesc RowsOut;
  RowsOut.Type = Desc.Input.Type;
  RowsOut.OpaqueBytes = Desc.Input.OpaqueBytes;
  RowsOut.Sizes = Desc.Output.Sizes;
  RowsOut.Sizes.back() = Desc.Input.Sizes.back();
  OpDesc Rows = Desc;
  Rows.Output = std::move(RowsOut);
  // The rows must be copied whole: not gathered along.
  std::string Along;
  if constexpr (std::is_same_v<OpDesc, GatherDesc>) {
    if (Desc.Axis + 1 == Desc.Input.rank())
      Along = "this Gather gathers along (Axis = " + std::to_string(Desc.Axis) + ")";
  } else if constexpr (std::is_same_v<OpDesc, GatherNDDesc>) {
    if (!Desc.Indices.Sizes.empty() && Desc.BatchDimensionCount < Desc.InputDimensionCount &&
        Desc.Indices.Sizes.back() >= Desc.InputDimensionCount - Desc.BatchDimensionCount)
      Along = "this GatherND's index tuples select along";
  }
  if (!Along.empty())
    return Status::invalidArgument(P +
                                   "a row epilogue's rows are the input's last "
                                   "dimension, which " +
                                   Along + "; the rows must be copied whole");
  Expected<ValidDesc> V = validateOp(Rows, Plain);
  if (!V)
    return V;
  V->Output = Desc.Output;
  V->Epilogue = Options.Epilogue;
  TensorChecker Checker(opKindName(Op));
  if (Status S = Checker.check(V->Output, "OutputTensor"); !S)
    return S;
  if (V->Output.Type != Options.Epilogue.Out || V->Input.Type != Options.Epilogue.In)
    return Status::invalidArgument(P + "the epilogue takes rows of " +
                                   dataTypeName(Options.Epilogue.In) + " and writes rows of " +
                                   dataTypeName(Options.Epilogue.Out) +
                                   ", but InputTensor.DataType = " + dataTypeName(V->Input.Type) +
                                   " and OutputTensor.DataType = " + dataTypeName(V->Output.Type));
  if (Status S = checkOutputLayout(Op, *V); !S)
    return S;
  return V;
}

template <class OpDesc>
Expected<ValidDesc> validateAny(const OpDesc &Desc, OpKind Op, const ValidateOptions &Options) {
  if (Options.Epilogue.Kind == EpilogueKind::Row)
    return validateRows(Desc, Op, Options);
  return validateOp(Desc, Options);
}

} // namespace

Expected<ValidDesc> validate(const GatherElementsDesc &Desc, const ValidateOptions &Options) {
  return validateAny(Desc, OpKind::GatherElements, Options);
}

Expected<ValidDesc> validate(const GatherDesc &Desc, const ValidateOptions &Options) {
  return validateAny(Desc, OpKind::Gather, Options);
}

Expected<ValidDesc> validate(const GatherNDDesc &Desc, const ValidateOptions &Options) {
  return validateAny(Desc, OpKind::GatherND, Options);
}

TensorDesc &AnyDesc::input() {
  return Op == OpKind::Gather     ? Gather.Input
         : Op == OpKind::GatherND ? GatherND.Input
                                  : GatherElements.Input;
}

TensorDesc &AnyDesc::indices() {
  return Op == OpKind::Gather     ? Gather.Indices
         : Op == OpKind::GatherND ? GatherND.Indices
                                  : GatherElements.Indices;
}

TensorDesc &AnyDesc::output() {
  return Op == OpKind::Gather     ? Gather.Output
         : Op == OpKind::GatherND ? GatherND.Output
                                  : GatherElements.Output;
}

Expected<ValidDesc> AnyDesc::validate(const ValidateOptions &Options) const {
  switch (Op) {
  case OpKind::GatherElements:
    return gatherjit::validate(GatherElements, Options);
  case OpKind::Gather:
    return gatherjit::validate(Gather, Options);
  case OpKind::GatherND:
    return gatherjit::validate(GatherND, Options);
  }
  return Status::internal("unknown operator");
}

} // namespace gatherjit
