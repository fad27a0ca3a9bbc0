//===- gatherjit/Descriptor.h - Gather operator descriptors --------------===//
/// \file
/// The operator descriptors users hand to gatherjit. GatherElementsDesc and
/// GatherDesc mirror DirectML's DML_GATHER_ELEMENTS_OPERATOR_DESC and
/// DML_GATHER_OPERATOR_DESC; the ONNX builders produce the same descriptors
/// from an ONNX node's shapes and attributes.
//===----------------------------------------------------------------------===//
#ifndef GATHERJIT_DESCRIPTOR_H
#define GATHERJIT_DESCRIPTOR_H

#include "gatherjit/Status.h"

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

namespace gatherjit {

/// Element types: DirectML's, then ONNX's other element types. Opaque is a
/// fixed-size element the gather moves without looking at it (numpy's
/// fixed-width strings); its size is TensorDesc::OpaqueBytes.
enum class DataType {
  Float64,
  Float32,
  Float16,
  Int64,
  Int32,
  Int16,
  Int8,
  UInt64,
  UInt32,
  UInt16,
  UInt8,
  // Extensions beyond DirectML's tables.
  BFloat16,
  Bool,
  Complex64,
  Complex128,
  Opaque,
};

/// DirectML's spelling: "FLOAT32", "UINT8", ..., and "BFLOAT16", "BOOL",
/// "COMPLEX64", "COMPLEX128", "OPAQUE".
const char *dataTypeName(DataType Type);
/// Parses a name as dataTypeName spells it; std::nullopt if unknown.
std::optional<DataType> parseDataType(std::string_view Name);
/// Bytes per element; 0 for Opaque (its size lives in the TensorDesc).
unsigned dataTypeSize(DataType Type);
/// True for the types DirectML's tables list (not the extensions).
bool isDirectMLType(DataType Type);
/// True for INT32, INT64, UINT32, UINT64: the index types gatherjit accepts.
bool isIndexType(DataType Type);
bool isSignedIndexType(DataType Type);

constexpr unsigned MaxRank = 8;

/// A tensor's shape and layout, like DML_TENSOR_DESC. Strides are in
/// elements; a stride of 0 broadcasts; no strides means packed row-major.
struct TensorDesc {
  DataType Type = DataType::Float32;
  std::vector<uint64_t> Sizes;
  std::optional<std::vector<uint64_t>> Strides;
  /// Size of the buffer in bytes, if known; validation then checks that the
  /// sizes and strides stay inside it.
  std::optional<uint64_t> TotalBytes;
  /// Element size for DataType::Opaque, ignored otherwise.
  unsigned OpaqueBytes = 0;

  bool operator==(const TensorDesc &) const = default;
  unsigned rank() const { return static_cast<unsigned>(Sizes.size()); }
  unsigned elementBytes() const {
    return Type == DataType::Opaque ? OpaqueBytes : dataTypeSize(Type);
  }
};

/// What happens to an index outside [-size, size) after negative wrap-around.
enum class OobPolicy {
  Check, ///< ONNX: an error naming the first offending index.
  Clamp, ///< DirectML: clamped into range; never fails.
  /// numpy's mode="clip": no wrap-around (a negative index reads element
  /// 0), too large reads the last; never fails.
  Clip,
};
const char *oobPolicyName(OobPolicy Policy); // "check", "clamp", "clip"
std::optional<OobPolicy> parseOobPolicy(std::string_view Name);

/// DirectML feature levels with their own tensor-support tables.
enum class FeatureLevel { L1_0, L2_1, L3_0, L4_1 };
const char *featureLevelName(FeatureLevel Level); // "1_0", ...
std::optional<FeatureLevel> parseFeatureLevel(std::string_view Name);

/// DML_GATHER_ELEMENTS_OPERATOR_DESC.
struct GatherElementsDesc {
  TensorDesc Input;
  TensorDesc Indices;
  TensorDesc Output;
  uint32_t Axis = 0;
};

/// DML_GATHER_OPERATOR_DESC.
struct GatherDesc {
  TensorDesc Input;
  TensorDesc Indices;
  TensorDesc Output;
  uint32_t Axis = 0;
  uint32_t IndexDimensions = 0;
};

/// DML_GATHER_ND_OPERATOR_DESC, and DML_GATHER_ND1_OPERATOR_DESC when
/// BatchDimensionCount > 0. All three tensors have one DimensionCount N; the
/// input's meaningful dimensions are its last InputDimensionCount, the
/// indices' their last IndicesDimensionCount, the others size 1. The
/// indices' last dimension is the tuple size T; the first
/// BatchDimensionCount meaningful dimensions of both are batches. The output
/// is the indices' meaningful sizes without the last, then the input's
/// sizes after the batches and the T dimensions a tuple selects along,
/// right-aligned into N:
///   output[b..., i..., s...] = input[b..., indices[b..., i..., 0..T), s...]
struct GatherNDDesc {
  TensorDesc Input;
  TensorDesc Indices;
  TensorDesc Output;
  uint32_t InputDimensionCount = 0;
  uint32_t IndicesDimensionCount = 0;
  uint32_t BatchDimensionCount = 0;
};

/// A fused epilogue's shape (see Epilogue in gatherjit/Runtime.h): a C
/// function applied to every gathered element, OUT f(IN x), or to every
/// gathered row of the input's last dimension, void f(const IN *row, OUT
/// *out), either optionally with a last parameter const P *params.
enum class EpilogueKind { None, Element, Row };
const char *epilogueKindName(EpilogueKind Kind); // "none", "element", "row"

/// What a compiled epilogue's signature says. Validation checks the tensors
/// against it: IN is the input's type, OUT the output's; a row epilogue's
/// rows are the input's and output's last dimensions (contiguous, of any
/// two lengths), which a Gather or GatherND copies whole.
struct EpilogueSignature {
  EpilogueKind Kind = EpilogueKind::None;
  DataType In = DataType::Float32;
  DataType Out = DataType::Float32;
  bool HasParams = false;
  /// Checked (Epilogue::Checked): the compiled function takes a last
  /// pointer to a fault byte, which it sets instead of making an access it
  /// cannot prove inside its regions.
  bool Checked = false;
  /// Identifies the compiled epilogue (a hash of its source, function,
  /// parameters, flags and clang's version).
  uint64_t Key = 0;
  bool operator==(const EpilogueSignature &) const = default;
};

/// A fused epilogue: C source that clang compiles (in a helper process,
/// freestanding, for the kernel's CPU) and the kernel's pipeline inlines
/// into its loop.
/// Function names one of
///   OUT f(IN x)                         applied to every element
///   OUT f(IN x, const P *params)
///   void f(const IN *row, OUT *out)     applied to every row
///   void f(const IN *row, OUT *out, const P *params)
/// where IN is the input's element type and OUT the output's, as C types
/// (float, double, float16_t, bfloat16_t, int8_t...uint64_t, bool). A row
/// is the input's last dimension (GJ_ROW_IN elements, a macro the source
/// reads) and the output's (GJ_ROW_OUT). The source may call only functions
/// it defines and clang's builtins that are instructions (__builtin_fabsf,
/// __builtin_sqrtf, __builtin_memcpy...), and read only const global data.
struct Epilogue {
  std::string Source;
  std::string Function;
  /// The file name diagnostics give.
  std::string FileName = "epilogue.c";
  /// The bytes params points at, copied into the kernel (a compile-time
  /// constant there: different parameters make a different kernel).
  std::vector<unsigned char> Params;
  /// Checked mode: every load and store the epilogue makes (and every
  /// memcpy or memset) is checked at run time to lie inside one of its
  /// regions: the row (read only), the output row, the parameters (read
  /// only), its own local variables and its const global data. An access
  /// outside them writes nothing and fails the kernel's run with
  /// InvalidArgument, as an out-of-range index does under Check. Casts of
  /// integers to pointers, calls through function pointers, recursion,
  /// variable-length arrays, reads of the stack frame's addresses and
  /// target builtins that touch memory are refused at compile time, as are
  /// local variables of more than 64 KiB together (the stack). Costs
  /// a compare per access the optimizer cannot prove in range.
  bool Checked = false;
};

/// True if this build compiles C epilogues (it has clang's libraries); a
/// compile with an epilogue answers Unsupported otherwise.
bool epiloguesSupported();

/// What a kernel returns when its checked epilogue faulted (an
/// out-of-range index under Check returns 1 + its position; success 0).
constexpr int64_t EpilogueFaulted = -1;

/// A GPU kernel's status word holds, after its launch, UINT64_MAX, the key
/// of the first bad index (Check: output element * tuple size + component,
/// below this bit), or, where no index was bad, a key with this bit set: a
/// checked epilogue faulted, at the output element (row, for a row
/// epilogue) of the bits below it, the first to fault.
constexpr uint64_t DeviceEpilogueFaultBit = uint64_t(1) << 63;

/// The largest epilogue source, and parameter block, compiled (bytes).
constexpr uint64_t MaxEpilogueBytes = uint64_t(1) << 20;

/// How clang is confined while it compiles an epilogue. The epilogue's
/// code runs in the host as native code once compiled; its compile runs in
/// gatherjit-epilogue, a helper process started on the first epilogue
/// (posix_spawn, never fork) and reused, so that a source that crashes
/// clang, exhausts its memory or never ends is one InvalidArgument
/// ("the epilogue's compile was stopped: ...") and the host goes on.
struct EpilogueLimits {
  /// False compiles in the calling process (no limits; a source that
  /// crashes clang takes the process with it).
  bool Isolated = true;
  /// Wall-clock seconds one compile may take before the helper is killed.
  double Seconds = 30;
  /// The helper's address space (RLIMIT_AS): an allocation past it ends the
  /// compile. clang with its libraries needs about 200 MiB for a typical
  /// epilogue.
  uint64_t MemoryBytes = uint64_t(2) << 30;
  /// Bytes of compiled bitcode accepted back from the helper.
  uint64_t OutputBytes = uint64_t(64) << 20;
  /// Every epilogue compiled checked, whatever its own Checked says (for a
  /// host that runs epilogues it did not write).
  bool Checked = false;
  /// The helper program; empty finds gatherjit-epilogue ($GATHERJIT_EPILOGUE_HELPER,
  /// then beside the library or program, its ../bin and ../libexec/gatherjit,
  /// then the build tree).
  std::string Helper;
};

/// How a descriptor is validated.
struct ValidateOptions {
  OobPolicy Policy = OobPolicy::Check;
  /// When set, the descriptor is checked against this level's table and the
  /// extension types are rejected. Without it, every type is accepted.
  std::optional<FeatureLevel> Level;
  /// ONNX GatherElements: IndicesTensor.Sizes may be smaller than
  /// InputTensor.Sizes on dimensions other than Axis (as ONNX Runtime and
  /// PyTorch allow). DirectML requires equality.
  bool AllowSmallerIndices = false;
  /// The fused epilogue's signature; Kind None for a plain gather (whose
  /// output has the input's type and shape rules).
  EpilogueSignature Epilogue = {};
};

//===----------------------------------------------------------------------===//
// ONNX builders
//===----------------------------------------------------------------------===//

/// ONNX GatherElements-11/13: Data and Indices of the same rank r >= 1,
/// Axis in [-r, r-1]. The output has the indices' sizes and the data's type,
/// packed. Returns InvalidArgument naming the attribute or shape that is
/// wrong. Validate the result with AllowSmallerIndices set.
Expected<GatherElementsDesc> onnxGatherElements(const TensorDesc &Data, const TensorDesc &Indices,
                                                int64_t Axis);

/// ONNX Gather-13: Indices of any rank q >= 0 (Sizes empty for a scalar),
/// output shape Data[:Axis] + Indices + Data[Axis+1:]. The tensors are
/// padded with leading ones to one common rank, as DirectML's Gather needs.
Expected<GatherDesc> onnxGather(const TensorDesc &Data, const TensorDesc &Indices, int64_t Axis);

/// The ONNX output shape of Gather (rank r + q - 1), before padding.
std::vector<uint64_t> onnxGatherOutputShape(const std::vector<uint64_t> &Data,
                                            const std::vector<uint64_t> &Indices, unsigned Axis);

/// ONNX GatherND-11/12/13: Data of rank r >= 1, Indices of rank q >= 1
/// whose last size T is in [1, r - BatchDims], BatchDims in [0, min(q, r))
/// with the leading BatchDims sizes equal. The output (rank
/// q - 1 + r - T - BatchDims, see onnxGatherNDOutputShape) has the data's
/// type, packed. All three are padded with leading ones to one common rank.
Expected<GatherNDDesc> onnxGatherND(const TensorDesc &Data, const TensorDesc &Indices,
                                    int64_t BatchDims);

/// The ONNX output shape of GatherND before padding: Indices[:-1] +
/// Data[BatchDims + Indices[-1]:]. (ONNX's text omits "- batch_dims" from
/// the rank; its shape inference, and this, include it.)
std::vector<uint64_t> onnxGatherNDOutputShape(const std::vector<uint64_t> &Data,
                                              const std::vector<uint64_t> &Indices,
                                              unsigned BatchDims);

/// Formats sizes or strides as DirectML's documents do: "{3,2}".
std::string shapeString(const std::vector<uint64_t> &Values);

/// Packed row-major strides for \p Sizes.
std::vector<uint64_t> packedStrides(const std::vector<uint64_t> &Sizes);

} // namespace gatherjit

#endif
