//===- compiler/spec/KernelSpec.cpp - Canonicalization -------------------===//

#include "compiler/spec/KernelSpec.h"

#include <algorithm>
#include <cstdio>
#include <sstream>

namespace gatherjit {

bool KernelSpec::operator==(const KernelSpec &O) const {
  auto Same = [&](const std::array<uint64_t, MaxRank> &A, const std::array<uint64_t, MaxRank> &B) {
    return std::equal(A.begin(), A.begin() + Rank, B.begin());
  };
  return Family == O.Family && PlanRows == O.PlanRows && ElemBytes == O.ElemBytes &&
         OutElemBytes == O.OutElemBytes && Epilogue == O.Epilogue && RowIn == O.RowIn &&
         RowOut == O.RowOut && IndexType == O.IndexType && Policy == O.Policy && Rank == O.Rank &&
         Same(Sizes, O.Sizes) && Same(OutStride, O.OutStride) && Same(IdxStride, O.IdxStride) &&
         Same(InStride, O.InStride) && Same(PosStride, O.PosStride) && TupleSize == O.TupleSize &&
         TupleStride == O.TupleStride &&
         std::equal(AxisSize.begin(), AxisSize.begin() + TupleSize, O.AxisSize.begin()) &&
         std::equal(AxisStride.begin(), AxisStride.begin() + TupleSize, O.AxisStride.begin());
}

size_t KernelSpec::hashValue() const {
  // A cache hit hashes its spec, so this is on the hit path: each stride
  // array is folded in a lane of its own (independent multiply chains the
  // CPU overlaps), then the lanes and scalar fields are mixed once.
  constexpr uint64_t K = 0x9e3779b97f4a7c15ull;
  auto Lane = [this](const std::array<uint64_t, MaxRank> &A, uint64_t Seed) {
    uint64_t L = Seed;
    for (unsigned D = 0; D < Rank; ++D)
      L = (L ^ A[D]) * K;
    return L;
  };
  auto Rotl = [](uint64_t V, int By) { return (V << By) | (V >> (64 - By)); };
  uint64_t H = Lane(Sizes, 1) ^ Rotl(Lane(OutStride, 2), 11) ^ Rotl(Lane(IdxStride, 3), 22) ^
               Rotl(Lane(InStride, 4), 33) ^ Rotl(Lane(PosStride, 5), 44);
  H ^= (ElemBytes | static_cast<uint64_t>(IndexType) << 16 | static_cast<uint64_t>(Policy) << 32 |
        static_cast<uint64_t>(Rank) << 48) *
       0xc2b2ae3d27d4eb4full;
  H ^= AxisSize[0] * 0x165667b19e3779f9ull + AxisStride[0] * 0xd6e8feb86659fd93ull;
  for (unsigned C = 1; C < TupleSize; ++C)
    H = (H ^ (AxisSize[C] * 0x165667b19e3779f9ull + AxisStride[C] * 0xd6e8feb86659fd93ull +
              TupleStride * 0x27d4eb2f165667c5ull + C)) *
        K;
  if (hasEpilogue())
    H = (H ^ Epilogue.Key ^ (OutElemBytes | RowIn << 8) * 0x9fb21c651e98df25ull ^ RowOut) * K;
  H ^= Family | PlanRows << 1;
  H ^= H >> 29;
  H *= K;
  H ^= H >> 32;
  return static_cast<size_t>(H);
}

uint64_t KernelSpec::elements() const {
  uint64_t N = 1;
  for (unsigned D = 0; D < Rank; ++D)
    N *= Sizes[D];
  return N;
}

bool KernelSpec::emptyAxis() const {
  return std::find(AxisSize.begin(), AxisSize.begin() + TupleSize, 0u) !=
         AxisSize.begin() + TupleSize;
}

uint64_t KernelSpec::tableBytes() const {
  uint64_t Max = 0;
  for (unsigned C = 0; C < TupleSize; ++C)
    Max = std::max(Max, AxisSize[C] * AxisStride[C]);
  return Max * ElemBytes;
}

bool KernelSpec::innerIsBlock() const {
  if (Rank == 0 || hasEpilogue()) // An epilogue reads each element (or row).
    return false;
  const unsigned L = Rank - 1;
  return IdxStride[L] == 0 && PosStride[L] == 0 && InStride[L] == 1 && OutStride[L] == 1;
}

std::optional<KernelSpec> widenedBlocks(const KernelSpec &Spec, unsigned Bytes) {
  if (Spec.Family || !Spec.innerIsBlock() || Spec.emptyAxis() || Spec.ElemBytes == 0 ||
      Spec.ElemBytes >= Bytes || Bytes % Spec.ElemBytes)
    return std::nullopt;
  const uint64_t K = Bytes / Spec.ElemBytes;
  const unsigned L = Spec.Rank - 1;
  KernelSpec W = Spec;
  auto Divide = [K](uint64_t &V) {
    if (V % K)
      return false;
    V /= K;
    return true;
  };
  for (unsigned D = 0; D < L; ++D)
    if (!Divide(W.InStride[D]) || !Divide(W.OutStride[D]))
      return std::nullopt;
  for (unsigned C = 0; C < Spec.TupleSize; ++C)
    if (!Divide(W.AxisStride[C]))
      return std::nullopt;
  if (!Divide(W.Sizes[L]))
    return std::nullopt;
  W.ElemBytes = W.OutElemBytes = Bytes;
  return W;
}

std::string KernelSpec::symbolName() const {
  const char *Idx = IndexType == DataType::Int32    ? "i32"
                    : IndexType == DataType::Int64  ? "i64"
                    : IndexType == DataType::UInt32 ? "u32"
                                                    : "u64";
  char Buf[96];
  const std::string Tuple = TupleSize > 1 ? "_t" + std::to_string(TupleSize) : "";
  std::snprintf(Buf, sizeof(Buf), "gj_%sb%u_%s_r%u%s_%s_%016llx",
                !Family    ? ""
                : PlanRows ? "rowfamily_"
                           : "family_",
                ElemBytes, Idx, Rank, Tuple.c_str(), oobPolicyName(Policy),
                static_cast<unsigned long long>(hashValue()));
  return Buf;
}

std::string KernelSpec::describe() const {
  std::ostringstream OS;
  auto List = [&](const char *Name, const std::array<uint64_t, MaxRank> &A) {
    OS << " " << Name << "={";
    for (unsigned D = 0; D < Rank; ++D) {
      OS << (D ? "," : "");
      if (A[D] == Variable)
        OS << "?";
      else
        OS << A[D];
    }
    OS << "}";
  };
  if (Family)
    OS << "family ";
  if (PlanRows)
    OS << "planned_rows=" << PlanRows << " ";
  OS << "elem_bytes=" << ElemBytes << " index=" << dataTypeName(IndexType)
     << " oob=" << oobPolicyName(Policy) << " rank=" << Rank;
  List("sizes", Sizes);
  List("out", OutStride);
  List("idx", IdxStride);
  List("in", InStride);
  List("pos", PosStride);
  if (TupleSize == 1) {
    OS << " axis_size=" << AxisSize[0] << " axis_stride=" << AxisStride[0];
  } else {
    OS << " tuple=" << TupleSize << " tuple_stride=" << TupleStride << " axis_sizes={";
    for (unsigned C = 0; C < TupleSize; ++C)
      OS << (C ? "," : "") << AxisSize[C];
    OS << "} axis_strides={";
    for (unsigned C = 0; C < TupleSize; ++C)
      OS << (C ? "," : "") << AxisStride[C];
    OS << "}";
  }
  if (hasEpilogue()) {
    char Key[24];
    std::snprintf(Key, sizeof(Key), "%016llx", static_cast<unsigned long long>(Epilogue.Key));
    OS << " epilogue=" << epilogueKindName(Epilogue.Kind) << ":" << dataTypeName(Epilogue.In)
       << "->" << dataTypeName(Epilogue.Out) << ":" << Key << " out_elem_bytes=" << OutElemBytes;
    if (Epilogue.Kind == EpilogueKind::Row)
      OS << " row_in=" << RowIn << " row_out=" << RowOut;
  }
  return OS.str();
}

namespace {

/// The facts of \p V that are not per dimension: element and index types,
/// policy, epilogue, and the axis (GatherND: the tuple's axes).
void canonicalizeScalars(const ValidDesc &V, KernelSpec &S) {
  S.ElemBytes = V.Input.elementBytes();
  S.OutElemBytes = V.Output.elementBytes();
  S.Epilogue = V.Epilogue;
  if (V.Epilogue.Kind == EpilogueKind::Row) {
    S.RowIn = V.Input.Sizes.back();
    S.RowOut = V.Output.Sizes.back();
  }
  S.IndexType = V.Indices.Type;
  S.Policy = V.Policy;
  const bool ND = V.Op == OpKind::GatherND;
  // The input dimensions the index (the tuple's components) selects along.
  const unsigned First = ND ? V.firstTupleDim() : V.Axis;
  S.TupleSize = ND ? V.tupleSize() : 1;
  S.TupleStride = ND ? (*V.Indices.Strides)[V.rank() - 1] : 0;
  for (unsigned C = 0; C < S.TupleSize; ++C) {
    S.AxisSize[C] = V.Input.Sizes[First + C];
    // With at most one valid index the axis stride never matters.
    S.AxisStride[C] = S.AxisSize[C] > 1 ? (*V.Input.Strides)[First + C] : 0;
  }
}

/// Output dimension \p D's strides in the input and the indices, and the
/// indices' packed stride (the position Check reports), into dimension
/// \p R of \p S. \p IdxPacked: the indices' row-major strides.
void mapDimension(const ValidDesc &V, unsigned D, const std::array<uint64_t, MaxRank> &IdxPacked,
                  KernelSpec &S, unsigned R) {
  const unsigned N = V.rank();
  const auto &InSt = *V.Input.Strides, &IdxSt = *V.Indices.Strides;
  auto FromIndices = [&](unsigned IdxDim) {
    S.IdxStride[R] = IdxSt[IdxDim];
    S.PosStride[R] = IdxPacked[IdxDim];
  };
  switch (V.Op) {
  case OpKind::GatherElements:
    FromIndices(D);
    S.InStride[R] = D == V.Axis ? 0 : InSt[D];
    return;
  case OpKind::GatherND: {
    // The indices' meaningful dimensions but the last (batches first),
    // then the input's slice dimensions, right-aligned.
    const unsigned Lead = V.IndicesDimensionCount - 1;
    const unsigned Slice = V.InputDimensionCount - V.BatchDimensionCount - S.TupleSize;
    const unsigned F = D - (N - Lead - Slice);
    if (F < Lead) {
      FromIndices(N - V.IndicesDimensionCount + F);
      if (F < V.BatchDimensionCount)
        S.InStride[R] = InSt[N - V.InputDimensionCount + F];
    } else {
      S.InStride[R] = InSt[V.firstTupleDim() + S.TupleSize + (F - Lead)];
    }
    return;
  }
  case OpKind::Gather: {
    // Gather's output dimensions are Input[0..Axis) ++ Indices[N-K..N) ++
    // Input[Axis+1..N), right-aligned: output dimension D is position
    // D + K - 1 of that concatenation.
    const int K = static_cast<int>(V.IndexDimensions);
    const int Axis = static_cast<int>(V.Axis);
    const int F = static_cast<int>(D) + K - 1;
    assert(F >= 0 && "only size-1 dimensions are cropped");
    if (F < Axis)
      S.InStride[R] = InSt[F];
    else if (F < Axis + K)
      FromIndices(static_cast<unsigned>(N - K + (F - Axis)));
    else
      S.InStride[R] = InSt[F - K + 1];
    return;
  }
  }
}

/// Merges each dimension into the one before it where every stride is
/// contiguous across them, and zeroes the dimensions past the rank.
void mergeContiguous(KernelSpec &S) {
  unsigned Out = 0;
  for (unsigned D = 0; D < S.Rank; ++D) {
    if (Out > 0) {
      const unsigned P = Out - 1;
      auto Contiguous = [&](const std::array<uint64_t, MaxRank> &St) {
        return St[P] == St[D] * S.Sizes[D];
      };
      if (Contiguous(S.OutStride) && Contiguous(S.IdxStride) && Contiguous(S.InStride) &&
          Contiguous(S.PosStride)) {
        S.Sizes[P] *= S.Sizes[D];
        S.OutStride[P] = S.OutStride[D];
        S.IdxStride[P] = S.IdxStride[D];
        S.InStride[P] = S.InStride[D];
        S.PosStride[P] = S.PosStride[D];
        continue;
      }
    }
    S.Sizes[Out] = S.Sizes[D];
    S.OutStride[Out] = S.OutStride[D];
    S.IdxStride[Out] = S.IdxStride[D];
    S.InStride[Out] = S.InStride[D];
    S.PosStride[Out] = S.PosStride[D];
    ++Out;
  }
  S.Rank = Out;
  for (unsigned D = S.Rank; D < MaxRank; ++D)
    S.Sizes[D] = S.OutStride[D] = S.IdxStride[D] = S.InStride[D] = S.PosStride[D] = 0;
}

} // namespace

KernelSpec canonicalize(const ValidDesc &V) {
  KernelSpec S;
  canonicalizeScalars(V, S);
  const unsigned N = V.rank();
  // Packed strides of the indices (their row-major positions), without an
  // allocation: canonicalize runs on every cache hit.
  // (Validation bounds the element count, so the product cannot overflow.)
  std::array<uint64_t, MaxRank> IdxPacked{};
  uint64_t Stride = 1;
  for (unsigned D = N; D-- > 0;) {
    IdxPacked[D] = Stride;
    Stride *= V.Indices.Sizes[D];
  }
  const bool Rows = V.Epilogue.Kind == EpilogueKind::Row;
  for (unsigned D = 0; D < N; ++D) {
    const uint64_t Size = V.Output.Sizes[D];
    if (Size == 1 || (Rows && D == N - 1))
      continue; // Contributes nothing to any offset (a row is one element).
    const unsigned R = S.Rank++;
    assert(R < MaxRank && "output rank is at most MaxRank");
    S.Sizes[R] = Size;
    S.OutStride[R] = (*V.Output.Strides)[D];
    mapDimension(V, D, IdxPacked, S, R);
  }
  mergeContiguous(S);
  return S;
}

std::optional<KernelSpec> familyOf(const KernelSpec &Spec, bool BlockRows) {
  if (Spec.Family || Spec.hasEpilogue() || Spec.Rank == 0 || (Spec.innerIsBlock() && !BlockRows) ||
      Spec.emptyAxis())
    return std::nullopt;
  KernelSpec F = Spec;
  F.Family = true;
  // 0 and 1 stay: they tell the emitter what is contiguous or broadcast.
  auto Vary = [](uint64_t &V) {
    if (V > 1)
      V = KernelSpec::Variable;
  };
  for (unsigned D = 0; D < F.Rank; ++D) {
    F.Sizes[D] = KernelSpec::Variable;
    Vary(F.OutStride[D]);
    Vary(F.IdxStride[D]);
    Vary(F.InStride[D]);
    Vary(F.PosStride[D]);
  }
  for (unsigned C = 0; C < F.TupleSize; ++C) {
    F.AxisSize[C] = KernelSpec::Variable;
    Vary(F.AxisStride[C]);
  }
  Vary(F.TupleStride);
  return F;
}

std::optional<KernelSpec> rowFamilyOf(const KernelSpec &Spec) {
  if (Spec.Family || Spec.hasEpilogue() || Spec.Rank < 2 || Spec.emptyAxis())
    return std::nullopt;
  KernelSpec F = Spec;
  F.Family = true;
  F.PlanRows = Spec.Sizes[0];
  F.Sizes[0] = KernelSpec::Variable;
  return F;
}

std::array<uint64_t, FamilyShapeSlots> familyShape(const KernelSpec &Spec) {
  std::array<uint64_t, FamilyShapeSlots> Shape{};
  auto Put = [&](unsigned Slot, const std::array<uint64_t, MaxRank> &A) {
    std::copy(A.begin(), A.end(), Shape.begin() + Slot);
  };
  Put(SizesSlot, Spec.Sizes);
  Put(OutStrideSlot, Spec.OutStride);
  Put(IdxStrideSlot, Spec.IdxStride);
  Put(InStrideSlot, Spec.InStride);
  Put(PosStrideSlot, Spec.PosStride);
  Put(AxisSizeSlot, Spec.AxisSize);
  Put(AxisStrideSlot, Spec.AxisStride);
  Shape[TupleStrideSlot] = Spec.TupleStride;
  return Shape;
}

} // namespace gatherjit
