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

enum class OpKind { GatherElements, Gather };
const char *opKindName(OpKind Op); // "GatherElements", "Gather"

/// A descriptor that passed validation. All tensors have the same rank and
/// explicit strides; Axis < rank.
struct ValidDesc {
  OpKind Op = OpKind::GatherElements;
  TensorDesc Input;
  TensorDesc Indices;
  TensorDesc Output;
  unsigned Axis = 0;
  unsigned IndexDimensions = 0; ///< Gather only.
  OobPolicy Policy = OobPolicy::Check;

  bool operator==(const ValidDesc &) const = default;
  unsigned rank() const { return Input.rank(); }
  uint64_t axisSize() const { return Input.Sizes[Axis]; }
  uint64_t outputElements() const;
  /// One line naming operator, types, sizes, strides, axis and policy.
  std::string describe() const;
};

/// Checks \p Desc against the DML_GATHER_ELEMENTS_OPERATOR_DESC rules.
/// Returns InvalidArgument (or Unsupported for a feature-level table) with a
/// message naming the field and the values.
Expected<ValidDesc> validate(const GatherElementsDesc &Desc,
                             const ValidateOptions &Options = {});
/// Checks \p Desc against the DML_GATHER_OPERATOR_DESC rules, including the
/// output-size rule with right alignment.
Expected<ValidDesc> validate(const GatherDesc &Desc,
                             const ValidateOptions &Options = {});

/// Elements a buffer must hold for \p Desc's sizes and strides (0 when a
/// size is 0). Only meaningful after validation (no overflow).
uint64_t requiredElements(const TensorDesc &Desc);

} // namespace gatherjit

#endif
