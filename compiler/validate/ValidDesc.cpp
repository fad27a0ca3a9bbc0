//===- compiler/validate/ValidDesc.cpp - What validation gives ------------===//
//
// The validated descriptor's queries (elements, its one-line description)
// and fusing an epilogue into one.
//
//===----------------------------------------------------------------------===//

#include "gatherjit/Validate.h"

#include <sstream>

namespace gatherjit {

uint64_t requiredElements(const TensorDesc &Desc) {
  uint64_t Extent = 1;
  for (unsigned D = 0; D < Desc.rank(); ++D) {
    if (Desc.Sizes[D] == 0)
      return 0;
    Extent += (Desc.Sizes[D] - 1) * (*Desc.Strides)[D];
  }
  return Extent;
}

uint64_t ValidDesc::outputElements() const {
  uint64_t Count = 1;
  for (uint64_t S : Output.Sizes)
    Count *= S;
  return Count;
}

std::string ValidDesc::describe() const {
  std::ostringstream OS;
  auto Tensor = [&](const char *Name, const TensorDesc &T) {
    OS << " " << Name << "=" << dataTypeName(T.Type);
    if (T.Type == DataType::Opaque)
      OS << T.OpaqueBytes;
    OS << shapeString(T.Sizes);
    if (*T.Strides != packedStrides(T.Sizes))
      OS << "/strides" << shapeString(*T.Strides);
  };
  OS << opKindName(Op);
  Tensor("input", Input);
  Tensor("indices", Indices);
  Tensor("output", Output);
  if (Op != OpKind::GatherND)
    OS << " axis=" << Axis;
  if (Op == OpKind::Gather)
    OS << " index_dimensions=" << IndexDimensions;
  if (Op == OpKind::GatherND)
    OS << " input_dimension_count=" << InputDimensionCount
       << " indices_dimension_count=" << IndicesDimensionCount
       << " batch_dimension_count=" << BatchDimensionCount;
  OS << " oob=" << oobPolicyName(Policy);
  if (Epilogue.Kind != EpilogueKind::None)
    OS << " epilogue=" << epilogueKindName(Epilogue.Kind);
  return OS.str();
}

Expected<ValidDesc> withEpilogue(const ValidDesc &Plain, const EpilogueSignature &Sig,
                                 uint64_t RowOut) {
  TensorDesc Output = Plain.Output;
  Output.Type = Sig.Out;
  Output.TotalBytes.reset();
  if (Sig.Kind == EpilogueKind::Row) {
    Output.Sizes.back() = RowOut;
    Output.Strides.reset();
  }
  ValidateOptions O;
  O.Policy = Plain.Policy;
  O.AllowSmallerIndices = true; // Plain passed its own rule already.
  O.Epilogue = Sig;
  switch (Plain.Op) {
  case OpKind::GatherElements:
    return validate(GatherElementsDesc{Plain.Input, Plain.Indices, Output, Plain.Axis}, O);
  case OpKind::Gather:
    return validate(
        GatherDesc{Plain.Input, Plain.Indices, Output, Plain.Axis, Plain.IndexDimensions}, O);
  case OpKind::GatherND:
    return validate(GatherNDDesc{Plain.Input, Plain.Indices, Output, Plain.InputDimensionCount,
                                 Plain.IndicesDimensionCount, Plain.BatchDimensionCount},
                    O);
  }
  return Status::internal("unknown operator");
}

const char *epilogueKindName(EpilogueKind Kind) {
  switch (Kind) {
  case EpilogueKind::None:
    return "none";
  case EpilogueKind::Element:
    return "element";
  case EpilogueKind::Row:
    return "row";
  }
  return "?";
}

} // namespace gatherjit
