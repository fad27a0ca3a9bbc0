//===- gatherjit/Onnx.h - ONNX gather nodes -------------------------------===//
/// \file
/// An ONNX GatherElements, Gather or GatherND node as the DirectML-style
/// descriptor it is: the one dispatch over the three operators that the
/// command line, the ONNX test runner, the C API's builders, the bench suite
/// and the Python package share. The builders it dispatches to are in
/// Descriptor.h.
//===----------------------------------------------------------------------===//
#ifndef GATHERJIT_ONNX_H
#define GATHERJIT_ONNX_H

#include "gatherjit/Validate.h"

#include <vector>

namespace gatherjit {

/// An ONNX node's operator, its two inputs and its integer attribute.
struct OnnxNode {
  OpKind Op = OpKind::GatherElements;
  TensorDesc Data, Indices;
  /// `axis` for GatherElements and Gather (negative counts from the end),
  /// `batch_dims` for GatherND.
  int64_t Axis = 0;
};

/// The descriptor of a node and the output's shape as ONNX gives it (the
/// descriptor's output is padded with leading ones to one common rank).
struct OnnxDesc : AnyDesc {
  std::vector<uint64_t> OutputShape;

  /// The options ONNX's rules call for under \p Policy: GatherElements'
  /// indices may be smaller than the data on the dimensions other than the
  /// axis.
  ValidateOptions options(OobPolicy Policy) const;
  Expected<ValidDesc> validate(OobPolicy Policy) const {
    return AnyDesc::validate(options(Policy));
  }
};

/// InvalidArgument naming the attribute or shape that ONNX's rules refuse.
Expected<OnnxDesc> onnxDesc(const OnnxNode &Node);

/// onnxDesc(), validated under \p Policy.
Expected<ValidDesc> validateOnnx(const OnnxNode &Node, OobPolicy Policy);

} // namespace gatherjit

#endif
