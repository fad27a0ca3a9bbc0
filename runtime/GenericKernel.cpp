//===- runtime/GenericKernel.cpp - Tier 0: one loop for every shape ------===//

#include "runtime/GenericKernel.h"

#include <algorithm>
#include <cassert>
#include <cstring>
#include <type_traits>

namespace gatherjit {
namespace {

struct Bytes16 {
  char B[16];
};

/// Block rows fetch the row RowsAhead ahead, its first AheadBytes (the
/// hardware prefetcher follows a row once it starts). On walk (b) of
/// `gatherjit bench --shapes` (1 KiB rows from a 51 MB table) the loop went
/// from 99.8 to 90.0 ms; 2 or 8 rows ahead, or whole rows, measured the
/// same within the machine's noise (93.2-93.5 ms in one later run).
/// Narrower rows look further ahead, as many as span AheadSpanBytes (at
/// most MaxRowsAhead): on a 2-core Xeon (`gatherjit gather --specialize
/// never --threads 1 --repeat 51`, three runs), FLOAT32 rows of 16 bytes
/// by 256K ids, 4 / 8 / 16 / 32 rows ahead, from a 16 MiB table 1.35-1.49 /
/// 1.16-1.22 / 1.05-1.18 / 1.14-1.18 ms, from a 1 MiB one 0.74-0.78 /
/// 0.63-0.67 / 0.52-0.58 / 0.46-0.52; rows of 256 bytes from 256 MiB by 64K
/// ids the same at each (1.8-1.9 ms).
/// Only rows from a table of PrefetchTableBytes or more are fetched ahead,
/// as the specialized kernel's plan has it: a smaller table stays in the
/// core's caches, where the look-ahead costs an index and a prefetch a row
/// and saves nothing. On a 2-core Zen 4 (`gatherjit gather --specialize
/// never --threads 1 --repeat 301`, 20000 ids, four runs alternating),
/// with against without: FLOAT32 rows of 16 bytes
/// from 256 KiB 43.9-44.4 / 28.4-29.3 us, 512 KiB 44.1-44.3 / 33.6-34.6,
/// 768 KiB 44.6-45.0 / 36.7-37.9; rows of 64 bytes from 128 KiB 54.0-55.0
/// / 39.7-40.4, from 512 KiB 55.6-56.1 / 44.7-45.8. From 16 MiB, 100K rows
/// of 16 bytes, fetching ahead still won (328-332 against 343-373 us).
constexpr uint64_t PrefetchTableBytes = 1u << 20;
constexpr uint64_t RowsAhead = 4;
constexpr uint64_t AheadBytes = 256;
constexpr uint64_t AheadSpanBytes = 512;
constexpr uint64_t MaxRowsAhead = 32;

template <OobPolicy Policy, typename IndexT>
inline bool resolve(IndexT Raw, uint64_t Size, uint64_t &Out) {
  int64_t V = static_cast<int64_t>(Raw);
  if constexpr (std::is_signed_v<IndexT>) {
    if (V < 0 && Policy != OobPolicy::Clip)
      V += static_cast<int64_t>(Size);
    if (static_cast<uint64_t>(V) < Size) { // (A negative V is too large unsigned.)
      Out = static_cast<uint64_t>(V);
      return true;
    }
    if (Policy == OobPolicy::Check || Size == 0)
      return false;
    Out = V < 0 ? 0 : Size - 1;
    return true;
  } else {
    const uint64_t U = static_cast<uint64_t>(Raw);
    if (U < Size) {
      Out = U;
      return true;
    }
    if (Policy == OobPolicy::Check || Size == 0)
      return false;
    Out = Size - 1;
    return true;
  }
}

/// Index \p J of \p Idx, read as bytes: a caller's indices need not be
/// aligned to their type (a numpy view at an odd byte offset, a buffer that
/// dask unpickled), and a typed load of them would be undefined.
template <typename IndexT> inline IndexT indexAt(const IndexT *Idx, uint64_t J) {
  IndexT V;
  std::memcpy(&V, Idx + J, sizeof V);
  return V;
}

/// The axes an index tuple resolves along, read out of the spec once per
/// call: the loop stores through char pointers, which may alias the spec as
/// far as the compiler knows, so fields read from it would be loaded again
/// for every element.
struct Axes {
  explicit Axes(const KernelSpec &S) : Tuple(S.TupleSize), TupleStride(S.TupleStride) {
    for (unsigned C = 0; C < Tuple; ++C) {
      Size[C] = S.AxisSize[C];
      Stride[C] = S.AxisStride[C];
    }
  }
  unsigned Tuple;
  uint64_t TupleStride;
  uint64_t Size[MaxRank] = {}, Stride[MaxRank] = {};
};

/// Resolves the index tuple at \p Idx into the input offset it selects
/// (\p Off). Returns -1 if it may be read, else the component that is out of
/// range (under Check) or that clamps into an empty axis. \p Tuples is
/// false for the gathers with one index per element (a loop less).
template <OobPolicy Policy, bool Tuples, typename IndexT>
inline int tupleOffset(const Axes &A, const IndexT *Idx, uint64_t &Off) {
  if constexpr (!Tuples) {
    if (!resolve<Policy>(indexAt(Idx, 0), A.Size[0], Off))
      return 0;
    Off *= A.Stride[0];
    return -1;
  }
  Off = 0;
  for (unsigned C = 0; C < A.Tuple; ++C) {
    uint64_t I;
    if (!resolve<Policy>(indexAt(Idx, C * A.TupleStride), A.Size[C], I))
      return static_cast<int>(C);
    Off += I * A.Stride[C];
  }
  return -1;
}

/// Elements [Begin, End) of a row whose indices and output are contiguous
/// (the common layouts), each element's input at \p In + J * InStep + its
/// index * AxisStep bytes (\p OneRow: every element from the one input row
/// at In, InStep 0 and AxisStep the element's size), along an axis that is
/// not empty: typed loads and stores, no stride but these two. Returns End,
/// or under Check the first J whose index is out of range. Not inlined into
/// run(), whose many values would leave this loop too few registers.
template <typename ElemT, OobPolicy Policy, bool OneRow, typename IndexT>
[[gnu::noinline]] uint64_t contiguousRow(const IndexT *Idx, const char *In, uint64_t InStep,
                                         uint64_t Size, uint64_t AxisStep, char *Out,
                                         uint64_t Begin, uint64_t End) {
  if constexpr (OneRow) {
    InStep = 0;
    AxisStep = sizeof(ElemT);
  }
  for (uint64_t J = Begin; J < End; ++J) {
    uint64_t I;
    if (!resolve<Policy>(indexAt(Idx, J), Size, I))
      return J; // (Only under Check: Clamp and Clip resolve every index of an axis not empty.)
    std::memcpy(Out + J * sizeof(ElemT), In + J * InStep + I * AxisStep, sizeof(ElemT));
  }
  return End;
}

/// A buffer, and where in it a row's elements lie: the first at Off, each
/// next one Step further, both in elements. Pointers into the input are
/// formed only where an element is read (an empty input may be null).
template <typename T> struct Strided {
  T *Base;
  uint64_t Off, Step;
  /// Element \p J's offset from Base, in elements.
  uint64_t at(uint64_t J) const { return Off + J * Step; }
};

/// Elements [Begin, End) of one row, each from \p In (stepped per element)
/// plus its index tuple's offset: 0, or under Check 1 + the position in the
/// indices of the row's first bad index (element J's tuple at Pos + J *
/// PosStep). Not inlined, as contiguousRow.
template <typename ElemT, OobPolicy Policy, bool Tuples, typename IndexT>
[[gnu::noinline]] int64_t stridedRow(const Axes &A, Strided<const IndexT> Idx,
                                     Strided<const char> In, Strided<char> Out, uint64_t EB,
                                     uint64_t Begin, uint64_t End, uint64_t Pos, uint64_t PosStep) {
  for (uint64_t J = Begin; J < End; ++J) {
    uint64_t I;
    char *Dst = Out.Base + Out.at(J) * EB;
    if (const int Bad = tupleOffset<Policy, Tuples>(A, Idx.Base + Idx.at(J), I); Bad >= 0) {
      if constexpr (Policy == OobPolicy::Check)
        return static_cast<int64_t>(Pos + J * PosStep) + Bad + 1;
      std::memset(Dst, 0, EB);
      continue;
    }
    const char *Src = In.Base + (In.at(J) + I) * EB;
    if constexpr (std::is_void_v<ElemT>)
      std::memcpy(Dst, Src, EB);
    else
      std::memcpy(Dst, Src, sizeof(ElemT)); // One load and store.
  }
  return 0;
}

/// stridedRow for tuples of N components (GatherND's of 2 and 3), their
/// axes in registers and the loop over components unrolled.
template <typename ElemT, OobPolicy Policy, unsigned N, typename IndexT>
[[gnu::noinline]] int64_t tupleRow(const Axes &A, Strided<const IndexT> Idx, Strided<const char> In,
                                   Strided<char> Out, uint64_t EB, uint64_t Begin, uint64_t End,
                                   uint64_t Pos, uint64_t PosStep) {
  uint64_t Size[N], Stride[N];
  for (unsigned C = 0; C < N; ++C) {
    Size[C] = A.Size[C];
    Stride[C] = A.Stride[C] * EB;
  }
  const uint64_t TupleStep = A.TupleStride;
  for (uint64_t J = Begin; J < End; ++J) {
    ElemT V{}; // Zero where an index clamps into an empty axis.
    uint64_t Off = 0;
    unsigned C = 0;
    for (; C < N; ++C) {
      uint64_t I;
      if (!resolve<Policy>(indexAt(Idx.Base, Idx.at(J) + C * TupleStep), Size[C], I))
        break;
      Off += I * Stride[C];
    }
    if (C == N)
      std::memcpy(&V, In.Base + (In.at(J) * EB + Off), sizeof(ElemT));
    else if constexpr (Policy == OobPolicy::Check)
      return static_cast<int64_t>(Pos + J * PosStep) + C + 1;
    std::memcpy(Out.Base + Out.at(J) * EB, &V, sizeof(ElemT));
  }
  return 0;
}

/// A row of elements (stridedRow's arguments): by contiguousRow where its
/// indices and output are contiguous, tupleRow for tuples of 2 and 3
/// components, else stridedRow.
template <typename ElemT, OobPolicy Policy, bool Tuples, typename IndexT>
int64_t elementRow(const Axes &A, Strided<const IndexT> Idx, Strided<const char> In,
                   Strided<char> Out, uint64_t EB, uint64_t Begin, uint64_t End, uint64_t Pos,
                   uint64_t PosStep) {
  if constexpr (!Tuples && !std::is_void_v<ElemT>) {
    // (An empty axis has no input to point into: every index clamps to a
    // zero or is out of range.)
    if (Idx.Step == 1 && Out.Step == 1 && A.Size[0] != 0) {
      const bool OneRow = In.Step == 0 && A.Stride[0] == 1;
      const uint64_t J =
          (OneRow
               ? contiguousRow<ElemT, Policy, true, IndexT>
               : contiguousRow<ElemT, Policy, false, IndexT>)(Idx.Base + Idx.Off,
                                                              In.Base + In.Off * EB, In.Step * EB,
                                                              A.Size[0], A.Stride[0] * EB,
                                                              Out.Base + Out.Off * EB, Begin, End);
      return J < End ? static_cast<int64_t>(Pos + J * PosStep) + 1 : 0;
    }
  }
  if constexpr (Tuples && !std::is_void_v<ElemT>) {
    if (A.Tuple == 2)
      return tupleRow<ElemT, Policy, 2, IndexT>(A, Idx, In, Out, EB, Begin, End, Pos, PosStep);
    if (A.Tuple == 3)
      return tupleRow<ElemT, Policy, 3, IndexT>(A, Idx, In, Out, EB, Begin, End, Pos, PosStep);
  }
  return stridedRow<ElemT, Policy, Tuples, IndexT>(A, Idx, In, Out, EB, Begin, End, Pos, PosStep);
}

/// Rows [Begin, End) of a rank-2 spec whose rows are blocks (an embedding
/// lookup): row R's RowBytes copied from \p In + R * its step + its index
/// tuple's offset (in elements of \p EB bytes) to \p Out + R * its step.
/// \p Bytes, where nonzero, is RowBytes, a constant the copy is compiled
/// for (narrow rows, which a memcpy call a row would slow down several
/// times). \p Ahead: rows come from a table large enough to fetch them
/// ahead (PrefetchTableBytes). Returns 0, or under Check 1 + the position
/// of the first bad index (row R's tuple at R * PosStep).
template <OobPolicy Policy, bool Tuples, unsigned Bytes, bool Ahead, typename IndexT>
[[gnu::noinline]] int64_t
blockRows(const Axes &A, Strided<const IndexT> Idx, Strided<const char> In, Strided<char> Out,
          uint64_t EB, uint64_t RowBytes, uint64_t Begin, uint64_t End, uint64_t PosStep) {
  if constexpr (Bytes != 0)
    RowBytes = Bytes;
  const uint64_t AheadRowBytes = std::min<uint64_t>(RowBytes, AheadBytes);
  const uint64_t Rows = std::clamp<uint64_t>(AheadSpanBytes / std::max<uint64_t>(RowBytes, 1),
                                             RowsAhead, MaxRowsAhead);
  for (uint64_t R = Begin; R < End; ++R) {
    // The row a few ahead is fetched now, as the specialized kernel's plan
    // does, since no hardware prefetcher predicts it.
    uint64_t I;
    if (Ahead && R + Rows < End &&
        tupleOffset<Policy, Tuples>(A, Idx.Base + Idx.at(R + Rows), I) < 0) {
      const char *Row = In.Base + (In.at(R + Rows) + I) * EB;
      for (uint64_t B = 0; B < AheadRowBytes; B += 64)
        __builtin_prefetch(Row + B);
    }
    char *Dst = Out.Base + Out.at(R) * EB;
    if (const int Bad = tupleOffset<Policy, Tuples>(A, Idx.Base + Idx.at(R), I); Bad >= 0) {
      if constexpr (Policy == OobPolicy::Check)
        return static_cast<int64_t>(R * PosStep) + Bad + 1;
      std::memset(Dst, 0, RowBytes);
      continue;
    }
    std::memcpy(Dst, In.Base + (In.at(R) + I) * EB, RowBytes);
  }
  return 0;
}

/// blockRows for \p RowBytes, compiled for it where it is narrow.
template <OobPolicy Policy, bool Tuples, bool Ahead, typename IndexT>
int64_t blockRowsOf(uint64_t RowBytes, const Axes &A, Strided<const IndexT> Idx,
                    Strided<const char> In, Strided<char> Out, uint64_t EB, uint64_t Begin,
                    uint64_t End, uint64_t PosStep) {
  auto Rows = [&](auto Fn) { return Fn(A, Idx, In, Out, EB, RowBytes, Begin, End, PosStep); };
  switch (RowBytes) {
  case 4:
    return Rows(blockRows<Policy, Tuples, 4, Ahead, IndexT>);
  case 8:
    return Rows(blockRows<Policy, Tuples, 8, Ahead, IndexT>);
  case 12:
    return Rows(blockRows<Policy, Tuples, 12, Ahead, IndexT>);
  case 16:
    return Rows(blockRows<Policy, Tuples, 16, Ahead, IndexT>);
  case 32:
    return Rows(blockRows<Policy, Tuples, 32, Ahead, IndexT>);
  case 64:
    return Rows(blockRows<Policy, Tuples, 64, Ahead, IndexT>);
  default:
    return Rows(blockRows<Policy, Tuples, 0, Ahead, IndexT>);
  }
}

template <typename ElemT, OobPolicy Policy, bool Tuples, typename IndexT>
int64_t run(const KernelSpec &S, const char *In, const IndexT *Idx, char *Out, uint64_t Begin,
            uint64_t End) {
  const unsigned R = S.Rank;
  const unsigned L = R == 0 ? 0 : R - 1;
  const uint64_t Inner = R == 0 ? 1 : S.Sizes[L];
  const uint64_t EB = S.ElemBytes;
  const bool Block = S.innerIsBlock();
  // Counters over every dimension but the innermost; dimension 0 runs over
  // [Begin, End) (for rank 1 that range is the inner loop itself).
  uint64_t Counter[MaxRank] = {};
  const uint64_t OuterEnd = R <= 1 ? 1 : End;
  Counter[0] = R <= 1 ? 0 : Begin;
  const uint64_t InnerBegin = R == 1 ? Begin : 0, InnerEnd = R == 1 ? End : Inner;
  if (Begin >= End)
    return 0;
  const Axes A(S);
  if (Block && R == 2) {
    const auto Rows = S.tableBytes() >= PrefetchTableBytes
                          ? blockRowsOf<Policy, Tuples, true, IndexT>
                          : blockRowsOf<Policy, Tuples, false, IndexT>;
    return Rows(Inner * EB, A, {Idx, 0, S.IdxStride[0]}, {In, 0, S.InStride[0]},
                {Out, 0, S.OutStride[0]}, EB, Begin, End, S.PosStride[0]);
  }
  while (Counter[0] < OuterEnd) {
    uint64_t InOff = 0, IdxOff = 0, OutOff = 0, Pos = 0;
    for (unsigned D = 0; D + 1 < R; ++D) {
      InOff += Counter[D] * S.InStride[D];
      IdxOff += Counter[D] * S.IdxStride[D];
      OutOff += Counter[D] * S.OutStride[D];
      Pos += Counter[D] * S.PosStride[D];
    }
    if (Block) {
      uint64_t I;
      if (const int Bad = tupleOffset<Policy, Tuples>(A, Idx + IdxOff, I); Bad >= 0) {
        if constexpr (Policy == OobPolicy::Check)
          return static_cast<int64_t>(Pos) + Bad + 1;
        std::memset(Out + (OutOff + InnerBegin) * EB, 0, (InnerEnd - InnerBegin) * EB);
      } else {
        std::memcpy(Out + (OutOff + InnerBegin) * EB, In + (InOff + I + InnerBegin) * EB,
                    (InnerEnd - InnerBegin) * EB);
      }
    } else if (const int64_t Bad = elementRow<ElemT, Policy, Tuples, IndexT>(
                   A, {Idx, IdxOff, S.IdxStride[L]}, {In, InOff, S.InStride[L]},
                   {Out, OutOff, S.OutStride[L]}, EB, InnerBegin, InnerEnd, Pos, S.PosStride[L])) {
      return Bad;
    }
    // Advance the outer counters, innermost first.
    if (R <= 1)
      break;
    unsigned D = R - 1;
    while (D-- > 0) {
      if (++Counter[D] < (D == 0 ? OuterEnd : S.Sizes[D]) || D == 0)
        break;
      Counter[D] = 0;
    }
  }
  return 0;
}

/// run() for tuples of several components (GatherND) or of one.
template <typename ElemT, OobPolicy Policy, typename IndexT>
int64_t runTuples(const KernelSpec &S, const char *I, const IndexT *X, char *O, uint64_t Begin,
                  uint64_t End) {
  return S.TupleSize != 1 ? run<ElemT, Policy, true>(S, I, X, O, Begin, End)
                          : run<ElemT, Policy, false>(S, I, X, O, Begin, End);
}

template <OobPolicy Policy, typename IndexT>
int64_t dispatchElem(const KernelSpec &S, const char *I, const IndexT *X, char *O, uint64_t Begin,
                     uint64_t End) {
  switch (S.ElemBytes) {
  case 1:
    return runTuples<uint8_t, Policy>(S, I, X, O, Begin, End);
  case 2:
    return runTuples<uint16_t, Policy>(S, I, X, O, Begin, End);
  case 4:
    return runTuples<uint32_t, Policy>(S, I, X, O, Begin, End);
  case 8:
    return runTuples<uint64_t, Policy>(S, I, X, O, Begin, End);
  case 16:
    return runTuples<Bytes16, Policy>(S, I, X, O, Begin, End);
  default:
    return runTuples<void, Policy>(S, I, X, O, Begin, End);
  }
}

template <typename IndexT>
int64_t dispatchPolicy(const KernelSpec &S, const void *In, const void *Idx, void *Out,
                       uint64_t Begin, uint64_t End) {
  auto *I = static_cast<const char *>(In);
  auto *X = static_cast<const IndexT *>(Idx);
  auto *O = static_cast<char *>(Out);
  switch (S.Policy) {
  case OobPolicy::Check:
    return dispatchElem<OobPolicy::Check>(S, I, X, O, Begin, End);
  case OobPolicy::Clamp:
    return dispatchElem<OobPolicy::Clamp>(S, I, X, O, Begin, End);
  case OobPolicy::Clip:
    return dispatchElem<OobPolicy::Clip>(S, I, X, O, Begin, End);
  }
  return 0;
}

} // namespace

int64_t runGeneric(const KernelSpec &S, const void *In, const void *Idx, void *Out, uint64_t Begin,
                   uint64_t End) {
  assert(!S.hasEpilogue() && "the generic loop has no epilogue");
  // An empty output has no rows (KernelSpec::rows), though its first size
  // may not be 0, and reads nothing: its operands may be null.
  const uint64_t Rows = S.rows();
  if (Rows == 0)
    return 0;
  End = std::min(End, Rows);
  switch (S.IndexType) {
  case DataType::Int32:
    return dispatchPolicy<int32_t>(S, In, Idx, Out, Begin, End);
  case DataType::Int64:
    return dispatchPolicy<int64_t>(S, In, Idx, Out, Begin, End);
  case DataType::UInt32:
    return dispatchPolicy<uint32_t>(S, In, Idx, Out, Begin, End);
  default:
    return dispatchPolicy<uint64_t>(S, In, Idx, Out, Begin, End);
  }
}

} // namespace gatherjit
