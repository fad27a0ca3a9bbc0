//===- gatherjit/DescriptorJson.h - Descriptor JSON -----------------------===//
/// \file
/// Parses the DirectML-style descriptor JSON of `gatherjit run` and
/// gatherjit.compile_descriptor:
/// {"operator": "GATHER_ELEMENTS" | "GATHER" | "GATHER_ND" | "GATHER_ND1",
///  "axis": N (not GATHER_ND*), "index_dimensions": N (GATHER only),
///  "input_dimension_count": N, "indices_dimension_count": N (GATHER_ND*,
///  default: the tensor's dimension count), "batch_dimension_count": N
///  (GATHER_ND1 only, default 0), "feature_level": "4_1",
///  "oob": "check" | "clamp", "input": {...}, "indices": {...},
///  "output": {...}}, each tensor {"data_type", "sizes", "strides"}.
/// Unknown keys are errors, so a misspelt field is never ignored.
//===----------------------------------------------------------------------===//
#ifndef GATHERJIT_DESCRIPTORJSON_H
#define GATHERJIT_DESCRIPTORJSON_H

#include "gatherjit/Validate.h"

#include <string_view>

namespace gatherjit {

/// A parsed descriptor and the options it asks for (the policy defaults to
/// Clamp, DirectML's behaviour).
struct JsonDescriptor : AnyDesc {
  ValidateOptions Options;

  Expected<ValidDesc> validate() const { return AnyDesc::validate(Options); }
};

/// Limits checked before a descriptor is parsed: a descriptor is a few
/// hundred bytes, three levels deep.
constexpr uint64_t MaxDescriptorBytes = 1 << 20;
constexpr unsigned MaxDescriptorDepth = 16;

/// Parses \p Text; InvalidArgument names the JSON field at fault. Text over
/// the limits above, and duplicate keys, are refused.
Expected<JsonDescriptor> parseDescriptorJson(std::string_view Text);

} // namespace gatherjit

#endif
