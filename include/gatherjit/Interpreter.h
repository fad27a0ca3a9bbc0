//===- gatherjit/Interpreter.h - The reference interpreter ---------------===//
/// \file
/// The oracle: one plain loop over output coordinates with run-time sizes
/// and strides. Every compiled kernel is checked against it. Simple, not
/// fast.
//===----------------------------------------------------------------------===//
#ifndef GATHERJIT_INTERPRETER_H
#define GATHERJIT_INTERPRETER_H

#include "gatherjit/Onnx.h"
#include "gatherjit/Validate.h"

#include <functional>

namespace gatherjit {

/// Runs \p Desc on the three buffers, which must hold requiredElements() of
/// their tensors. Under Check, returns IndexOutOfRange for the first
/// out-of-range index (its row-major position in the indices tensor), an
/// empty output's too; output elements before it are written, the rest are
/// unspecified.
Status interpret(const ValidDesc &Desc, const void *Input, const void *Indices, void *Output);

/// A fused epilogue applied once: to the input element at \p In, storing
/// the result at \p Out, or to the row at \p In, writing the row at \p Out
/// (Runtime::epilogueFunction compiles one). Returns false if a checked
/// epilogue faulted (Epilogue::Checked).
using EpilogueApply = std::function<bool(const void *In, void *Out)>;

/// interpret() for a descriptor with an epilogue: \p Apply is called per
/// gathered element or row; where Clamp finds an empty axis, the output
/// element or row is zeros, as without one. A fault stops the run with
/// epilogueFaultError().
Status interpret(const ValidDesc &Desc, const void *Input, const void *Indices, void *Output,
                 const EpilogueApply &Apply);

/// Under Check, IndexOutOfRange for the first index (row-major) outside
/// the axis it selects along, over every index of the tensor: what a run
/// with an empty output reports, though it reads no index for the output.
/// Under another policy no index is an error.
Status checkEveryIndex(const ValidDesc &Desc, const void *Indices);

/// The IndexOutOfRange status for the index at row-major \p Position of the
/// indices tensor: names its coordinate, value and the valid range.
Status indexOutOfRangeError(const ValidDesc &Desc, const void *Indices, uint64_t Position);

/// indexOutOfRangeError in the terms of the ONNX node the descriptor was
/// made from (validateOnnx): the index at row-major \p Position of the
/// node's indices (the same position in the descriptor's, whose padding
/// adds only dimensions of one) named by its coordinates in the node's
/// indices and the axis of the node's data it indexes.
Status onnxIndexOutOfRangeError(const OnnxNode &Node, const void *Indices, uint64_t Position);

/// The InvalidArgument status of a run whose checked epilogue faulted.
Status epilogueFaultError();

} // namespace gatherjit

#endif
