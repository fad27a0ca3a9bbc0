//===- gatherjit/Validate.h - The validation stage -----------------------===//
/// \file
/// validate() turns a user's descriptor into a ValidDesc: every rule of the
/// DirectML and ONNX documents checked, strides filled in, sizes proven to
/// fit 64-bit byte offsets. Everything after this stage may assume it.
//===----------------------------------------------------------------------===//
#ifndef GATHERJIT_VALIDATE_H
#define GATHERJIT_VALIDATE_H

#include "gatherjit/Descriptor.h"

namespace gatherjit {

enum class OpKind { GatherElements, Gather, GatherND };
const char *opKindName(OpKind Op); // "GatherElements", "Gather", "GatherND"

/// A descriptor that passed validation. All tensors have the same rank and
/// explicit strides; Axis < rank (0 for GatherND).
struct ValidDesc {
  OpKind Op = OpKind::GatherElements;
  TensorDesc Input;
  TensorDesc Indices;
  TensorDesc Output;
  unsigned Axis = 0;
  unsigned IndexDimensions = 0; ///< Gather only.
  /// GatherND only: the meaningful dimensions of the input and indices
  /// (the last ones; the others are 1) and the batch dimensions among them.
  unsigned InputDimensionCount = 0, IndicesDimensionCount = 0, BatchDimensionCount = 0;
  OobPolicy Policy = OobPolicy::Check;
  /// The fused epilogue, if any (Kind None otherwise).
  EpilogueSignature Epilogue;

  bool operator==(const ValidDesc &) const = default;
  unsigned rank() const { return Input.rank(); }
  uint64_t axisSize() const { return Input.Sizes[Axis]; }
  /// GatherND: the components of an index tuple (the indices' last size),
  /// the input dimension the first selects along, and the first output
  /// dimension that is not leading padding.
  unsigned tupleSize() const { return static_cast<unsigned>(Indices.Sizes.back()); }
  unsigned firstTupleDim() const { return rank() - InputDimensionCount + BatchDimensionCount; }
  uint64_t outputElements() const;
  /// One line naming operator, types, sizes, strides, axis and policy.
  std::string describe() const;
};

/// Checks \p Desc against the DML_GATHER_ELEMENTS_OPERATOR_DESC rules.
/// Returns InvalidArgument (or Unsupported for a feature-level table) with a
/// message naming the field and the values.
Expected<ValidDesc> validate(const GatherElementsDesc &Desc, const ValidateOptions &Options = {});
/// Checks \p Desc against the DML_GATHER_OPERATOR_DESC rules, including the
/// output-size rule with right alignment.
Expected<ValidDesc> validate(const GatherDesc &Desc, const ValidateOptions &Options = {});

/// Checks \p Desc against the DML_GATHER_ND_OPERATOR_DESC rules (and
/// DML_GATHER_ND1_OPERATOR_DESC's when BatchDimensionCount > 0).
Expected<ValidDesc> validate(const GatherNDDesc &Desc, const ValidateOptions &Options = {});

/// One of the three operators' descriptors, as a file or an ONNX node names
/// it (see DescriptorJson.h and Onnx.h): the descriptor of Op is the one in
/// use.
struct AnyDesc {
  OpKind Op = OpKind::GatherElements;
  GatherElementsDesc GatherElements;
  GatherDesc Gather;
  GatherNDDesc GatherND;

  TensorDesc &input();
  TensorDesc &indices();
  TensorDesc &output();
  /// validate() of the descriptor in use.
  Expected<ValidDesc> validate(const ValidateOptions &Options) const;
};

/// \p Plain, a gather validated without an epilogue, with a fused epilogue
/// of signature \p Sig: the output takes the epilogue's type and, for a row
/// epilogue, rows of \p RowOut elements (packed then), and the whole is
/// validated again. For callers that describe the gather first (ONNX
/// shapes) and fuse after.
Expected<ValidDesc> withEpilogue(const ValidDesc &Plain, const EpilogueSignature &Sig,
                                 uint64_t RowOut);

/// Elements a buffer must hold for \p Desc's sizes and strides (0 when a
/// size is 0). Only meaningful after validation (no overflow).
uint64_t requiredElements(const TensorDesc &Desc);

} // namespace gatherjit

#endif
