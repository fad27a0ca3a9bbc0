//===- gatherjit/Interpreter.h - The reference interpreter ---------------===//
/// \file
/// The oracle: one plain loop over output coordinates with run-time sizes
/// and strides. Every compiled kernel is checked against it. Simple, not
/// fast.
//===----------------------------------------------------------------------===//
#ifndef GATHERJIT_INTERPRETER_H
#define GATHERJIT_INTERPRETER_H

#include "gatherjit/Validate.h"

namespace gatherjit {

/// Runs \p Desc on the three buffers, which must hold requiredElements() of
/// their tensors. Under Check, returns IndexOutOfRange for the first
/// out-of-range index (its row-major position in the indices tensor);
/// output elements before it are written, the rest are unspecified.
Status interpret(const ValidDesc &Desc, const void *Input, const void *Indices,
                 void *Output);

/// The IndexOutOfRange status for the index at row-major \p Position of the
/// indices tensor: names its coordinate, value and the valid range.
Status indexOutOfRangeError(const ValidDesc &Desc, const void *Indices,
                            uint64_t Position);

} // namespace gatherjit

#endif
