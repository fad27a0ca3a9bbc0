//===- compiler/spec/KernelSpec.h - The canonical gather -----------------===//
/// \file
/// Defines KernelSpec, the canonical, hashable form of a validated gather.
/// Descriptors that must run the same machine code map to equal specs.
///
/// Both operators become one affine problem over the output coordinates o:
///   pos   = sum o[d] * PosStride[d]   (row-major position in the indices)
///   index = Indices[sum o[d] * IdxStride[d]], wrapped and checked/clamped
///   Output[sum o[d] * OutStride[d]] =
///       Input[sum o[d] * InStride[d] + index * AxisStride[0]]
/// GatherND reads a tuple of TupleSize indices, TupleStride apart; its
/// component k is wrapped and checked against AxisSize[k] and steps
/// AxisStride[k]. The other gathers are tuples of one.
/// with all strides in elements. Size-1 dimensions are dropped and adjacent
/// dimensions merged where every stride is contiguous across them, so a
/// GatherElements on FLOAT32 and one on UINT32 of another shape may share.
//===----------------------------------------------------------------------===//
#ifndef GATHERJIT_COMPILER_SPEC_KERNELSPEC_H
#define GATHERJIT_COMPILER_SPEC_KERNELSPEC_H

#include "gatherjit/Validate.h"

#include <array>
#include <cstddef>
#include <memory>
#include <optional>
#include <string>
#include <type_traits>

namespace gatherjit {

struct EpilogueCode;

struct KernelSpec {
  /// Bytes of an input element, and of an output element (the same unless
  /// an epilogue converts).
  unsigned ElemBytes = 0;
  unsigned OutElemBytes = 0;
  DataType IndexType = DataType::Int64;
  OobPolicy Policy = OobPolicy::Check;
  /// Dimensions left after canonicalization; 0 means a single element.
  unsigned Rank = 0;
  std::array<uint64_t, MaxRank> Sizes{};
  std::array<uint64_t, MaxRank> OutStride{};
  std::array<uint64_t, MaxRank> IdxStride{};
  std::array<uint64_t, MaxRank> InStride{};
  std::array<uint64_t, MaxRank> PosStride{};
  std::array<uint64_t, MaxRank> AxisSize{};
  std::array<uint64_t, MaxRank> AxisStride{};
  /// (The arrays from Sizes to here and TupleStride lie in FamilySlot's
  /// order: familyValues.)
  uint64_t TupleStride = 0;
  unsigned TupleSize = 1;
  /// A fused epilogue, applied to every element; or, for a row epilogue, to
  /// every row of RowIn input elements, written as RowOut output elements:
  /// the spec then leaves the rows' dimension out, and its "elements" are
  /// rows (strides still count input and output elements). Specs compare
  /// the signature (its key); Code is what the emitter links.
  EpilogueSignature Epilogue;
  uint64_t RowIn = 0, RowOut = 0;
  std::shared_ptr<const EpilogueCode> Code;
  /// A family kernel (see familyOf): one code for every spec that differs
  /// from this one only in sizes and strides. Where this spec holds
  /// Variable, the kernel reads the value from its shape argument
  /// (familyShape); the strides of 0 and 1 it keeps decide contiguity, so
  /// the inner loop is still vectorized.
  bool Family = false;
  static constexpr uint64_t Variable = ~uint64_t(0);
  /// A row family (see rowFamilyOf), whose only Variable is Sizes[0], is
  /// planned as the spec of PlanRows rows; 0 for every other spec.
  uint64_t PlanRows = 0;

  bool operator==(const KernelSpec &Other) const;
  size_t hashValue() const;

  /// A family kernel's shape argument for this spec (familyShape's values),
  /// read in place: its sizes and strides already lie in slot order.
  const uint64_t *familyValues() const { return Sizes.data(); }

  /// The trip count of the outermost loop: the unit of [begin, end). An
  /// empty output has none, though its first size may not be 0: its kernel
  /// reads nothing, not even the indices its outer rows would share.
  uint64_t rows() const { return Rank == 0 ? 1 : !Family && elements() == 0 ? 0 : Sizes[0]; }
  uint64_t elements() const;
  /// Bytes the kernel writes (a row epilogue's "elements" are rows).
  uint64_t outputBytes() const {
    return elements() * OutElemBytes * (Epilogue.Kind == EpilogueKind::Row ? RowOut : 1);
  }
  /// Bytes of one index: 8 for INT64 and UINT64, else 4.
  unsigned indexBytes() const {
    return IndexType == DataType::Int64 || IndexType == DataType::UInt64 ? 8 : 4;
  }
  bool hasEpilogue() const { return Epilogue.Kind != EpilogueKind::None; }
  /// True if an element is 1, 2, 4, 8 or 16 bytes: moved as one integer.
  bool integerSizedElement() const {
    return ElemBytes == 1 || ElemBytes == 2 || ElemBytes == 4 || ElemBytes == 8 || ElemBytes == 16;
  }
  /// True if some component's axis is empty: no index is valid, nothing is
  /// read (Clamp writes zeros).
  bool emptyAxis() const;
  /// Bytes of the input that index tuples pick rows from (a block row's
  /// table): the largest span of one tuple component, the outermost one's
  /// in practice.
  uint64_t tableBytes() const;
  /// True when the innermost dimension is one contiguous block per index
  /// (an embedding row): copied with one memcpy.
  bool innerIsBlock() const;
  /// Names the kernel after what it does, e.g. gj_ge_b4_i64_r2_check_1a2b3c4d.
  std::string symbolName() const;
  /// A multi-line human-readable dump, for logs and headers.
  std::string describe() const;
};

struct KernelSpecHash {
  size_t operator()(const KernelSpec &S) const { return S.hashValue(); }
};

/// \p Spec with each element a \p Bytes-wide piece of its contiguous block
/// rows (innerIsBlock): the same copy with 1/k as many elements of k times
/// the bytes, k = Bytes / ElemBytes. std::nullopt unless every block row,
/// input stride and axis stride is a whole number of pieces (and there is
/// no epilogue, family or empty axis).
std::optional<KernelSpec> widenedBlocks(const KernelSpec &Spec, unsigned Bytes);

/// Canonicalizes a validated descriptor. Cannot fail. An epilogue's Code is
/// left for the caller, who compiled it.
KernelSpec canonicalize(const ValidDesc &Desc);

/// The family of \p Spec: \p Spec with every size and every stride other
/// than 0 and 1 made Variable. std::nullopt where no family kernel serves:
/// an epilogue, rank 0, an empty axis, or unless \p BlockRows, rows copied
/// whole (on a CPU the generic loop moves them with one memcpy already; a
/// device's family kernel copies them element by element like any other).
std::optional<KernelSpec> familyOf(const KernelSpec &Spec, bool BlockRows = false);

/// The row family of \p Spec: \p Spec with only its rows (Sizes[0], the
/// outermost loop's trip count) made Variable, planned as \p Spec
/// (PlanRows). A batch size or sequence length that changes changes only
/// that count, and the kernel's code is the specialized kernel's but for
/// it. std::nullopt below rank 2 (the rows are the innermost loop), with
/// an epilogue or an empty axis.
std::optional<KernelSpec> rowFamilyOf(const KernelSpec &Spec);

/// The shape argument of a family kernel: \p Spec's values in slots, each
/// array at its FamilySlot.
enum FamilySlot : unsigned {
  SizesSlot = 0,
  OutStrideSlot = MaxRank,
  IdxStrideSlot = 2 * MaxRank,
  InStrideSlot = 3 * MaxRank,
  PosStrideSlot = 4 * MaxRank,
  AxisSizeSlot = 5 * MaxRank,
  AxisStrideSlot = 6 * MaxRank,
  TupleStrideSlot = 7 * MaxRank,
  FamilyShapeSlots,
};
std::array<uint64_t, FamilyShapeSlots> familyShape(const KernelSpec &Spec);

// KernelSpec::familyValues reads the slots from the spec's own arrays.
static_assert(std::is_standard_layout_v<KernelSpec>);
static_assert(offsetof(KernelSpec, OutStride) - offsetof(KernelSpec, Sizes) == 8 * OutStrideSlot &&
              offsetof(KernelSpec, IdxStride) - offsetof(KernelSpec, Sizes) == 8 * IdxStrideSlot &&
              offsetof(KernelSpec, InStride) - offsetof(KernelSpec, Sizes) == 8 * InStrideSlot &&
              offsetof(KernelSpec, PosStride) - offsetof(KernelSpec, Sizes) == 8 * PosStrideSlot &&
              offsetof(KernelSpec, AxisSize) - offsetof(KernelSpec, Sizes) == 8 * AxisSizeSlot &&
              offsetof(KernelSpec, AxisStride) - offsetof(KernelSpec, Sizes) ==
                  8 * AxisStrideSlot &&
              offsetof(KernelSpec, TupleStride) - offsetof(KernelSpec, Sizes) ==
                  8 * TupleStrideSlot);

} // namespace gatherjit

#endif
