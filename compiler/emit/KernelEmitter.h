//===- compiler/emit/KernelEmitter.h - The emitter's state and parts -----===//
/// \file
/// The emitter of compiler/emit/EmitKernel.h as a class whose parts live in
/// three files: EmitKernel.cpp (the function, its loop nest, indices and
/// element copies), EmitRows.cpp (the innermost rows and prefetching) and
/// EmitThreads.cpp (the GPU's thread schedule over the same parts).
/// Private to compiler/emit/.
//===----------------------------------------------------------------------===//
#ifndef GATHERJIT_COMPILER_EMIT_KERNELEMITTER_H
#define GATHERJIT_COMPILER_EMIT_KERNELEMITTER_H

#include "compiler/emit/EmitKernel.h"
#include "compiler/plan/KernelPlan.h"
#include "compiler/spec/KernelSpec.h"

#include <llvm/IR/Constants.h>
#include <llvm/IR/DerivedTypes.h>
#include <llvm/IR/Function.h>
#include <llvm/IR/GlobalVariable.h>
#include <llvm/IR/IRBuilder.h>
#include <llvm/IR/LLVMContext.h>
#include <llvm/IR/MDBuilder.h>
#include <llvm/IR/Module.h>

#include <array>
#include <functional>
#include <string>

/// The emitter's own namespace, where LLVM's names need no prefix.
namespace gatherjit::emit {

using namespace llvm;

class KernelEmitter {
public:
  KernelEmitter(const KernelSpec &Spec, const KernelPlan &Plan, Module &M)
      : S(Spec), P(Plan), M(M), Ctx(M.getContext()), B(Ctx), I64(Type::getInt64Ty(Ctx)),
        PtrTy(PointerType::getUnqual(Ctx)) {}

  /// Emits NAME, NAME_range and NAME_rows; a spec with an epilogue calls
  /// NAME.epilogue, which must be linked into the module already.
  void emit(const std::string &Name);
  /// The GPU thread schedule (EmitThreads.cpp): NAME.thread and the entry
  /// \p Entry asks for.
  void emitThreads(const std::string &Name, GridEntry Entry);

private:
  struct Offsets {
    Value *In, *Idx, *Out, *Pos;
  };

  Value *c(uint64_t V) { return ConstantInt::get(I64, V); }
  /// The alignment of an element of \p Bytes: its size where the plan
  /// promises aligned buffers, else none (a CPU caller's may be unaligned).
  Align elementAlign(unsigned Bytes) const { return P.ElementAligned ? Align(Bytes) : Align(1); }
  /// The spec's value \p V, at \p Slot of a family kernel's shape argument:
  /// a constant, or in a family kernel where \p V is KernelSpec::Variable,
  /// the argument's value (loaded once, at entry).
  Value *shapeValue(uint64_t V, unsigned Slot);
  Value *sizeAt(unsigned D) { return shapeValue(S.Sizes[D], SizesSlot + D); }
  Value *outStride(unsigned D) { return shapeValue(S.OutStride[D], OutStrideSlot + D); }
  Value *idxStride(unsigned D) { return shapeValue(S.IdxStride[D], IdxStrideSlot + D); }
  Value *inStride(unsigned D) { return shapeValue(S.InStride[D], InStrideSlot + D); }
  Value *posStride(unsigned D) { return shapeValue(S.PosStride[D], PosStrideSlot + D); }
  Value *axisSize(unsigned C) { return shapeValue(S.AxisSize[C], AxisSizeSlot + C); }
  Value *axisStride(unsigned C) { return shapeValue(S.AxisStride[C], AxisStrideSlot + C); }
  Value *tupleStride() { return shapeValue(S.TupleStride, TupleStrideSlot); }

  Value *mulAdd(Value *Base, Value *IV, Value *Stride) {
    auto *K = dyn_cast<ConstantInt>(Stride);
    if (K && K->isZero())
      return Base;
    Value *Term = K && K->isOne() ? IV : B.CreateMul(IV, Stride, "", true, true);
    return B.CreateAdd(Base, Term, "", true, true);
  }
  Value *mulAdd(Value *Base, Value *IV, uint64_t Stride) { return mulAdd(Base, IV, c(Stride)); }
  Offsets advance(const Offsets &O, Value *IV, unsigned D) {
    return {mulAdd(O.In, IV, inStride(D)), mulAdd(O.Idx, IV, idxStride(D)),
            mulAdd(O.Out, IV, outStride(D)), mulAdd(O.Pos, IV, posStride(D))};
  }

  /// for (IV = Lo; IV < Hi; ++IV) Body(IV), straight-line code where the
  /// plan allows (MaxStraightLoop, MaxStraightCopies: \p BodyCopies is how
  /// many copies of its code Body's own inner loops will make, unrolled).
  /// Leaves the builder after it.
  /// Returns the loop's latch branch (null where straight-line).
  BranchInst *emitLoop(Value *Lo, Value *Hi, const Twine &Name,
                       const std::function<void(Value *)> &Body, uint64_t BodyCopies = 1);
  /// The copies of its code that the dimensions inside \p D make, emitted
  /// as emitLoop emits them (emitLevel's BodyCopies).
  uint64_t straightCopiesBelow(unsigned D) const;
  /// Whether a loop of \p Count iterations is straight-line code where,
  /// unrolled, each of its iterations would be \p Copies copies of code
  /// (the loops around it times those inside): the one rule of emitLoop
  /// and straightCopiesBelow.
  bool straightLine(uint64_t Count, uint64_t Copies) const;

  /// The index at element offset \p Off, extended to i64 and wrapped for
  /// component \p C's axis (not under Clip).
  Value *loadWrappedIndex(Value *Off, unsigned C = 0);
  /// The wrapped components of the index tuple at element offset \p Off
  /// (one for the gathers other than GatherND), each ORed into \p BadFlag
  /// if given.
  SmallVector<Value *, MaxRank> loadTuple(Value *Off, AllocaInst *BadFlag);
  /// For each component C of \p Tuple that is out of range (unlikely),
  /// \p OnBad(C) in a block of its own, which it must end; the builder is
  /// left where every component is in range.
  void emitIfBad(ArrayRef<Value *> Tuple, const std::function<void(unsigned)> &OnBad);
  /// Returns 1 + \p Pos + C from the kernel if component C of \p Tuple is
  /// out of range (unlikely).
  void emitReturnIfBad(ArrayRef<Value *> Tuple, Value *Pos);
  /// The element offset of component C of the tuple at \p Off.
  Value *componentOffset(Value *Off, unsigned C) {
    return C == 0
               ? Off
               : B.CreateAdd(Off, B.CreateMul(c(C), tupleStride(), "", true, true), "", true, true);
  }
  /// The row-major position of component C of the tuple at \p Pos (the
  /// indices' last dimension, so adjacent).
  Value *componentPosition(Value *Pos, unsigned C) {
    return C == 0 ? Pos : B.CreateAdd(Pos, c(C), "", true, true);
  }
  /// The input element offset \p Base plus the offset \p Tuple selects,
  /// each component made safe; null if an axis is empty (nothing to read).
  Value *tupleOffset(Value *Base, ArrayRef<Value *> Tuple, bool InRange = false) {
    if (S.emptyAxis())
      return nullptr;
    for (unsigned C = 0; C < Tuple.size(); ++C)
      Base = mulAdd(Base, InRange ? Tuple[C] : safeIndex(Tuple[C], C), axisStride(C));
    return Base;
  }
  /// \p Base plus \p ElemOff elements, as a byte pointer.
  Value *bytePointer(Value *Base, Value *ElemOff) {
    return byteAt(Base, B.CreateMul(ElemOff, c(S.ElemBytes), "", true, true));
  }
  /// \p Base plus \p Bytes.
  Value *byteAt(Value *Base, Value *Bytes) {
    return B.CreateInBoundsGEP(B.getInt8Ty(), Base, Bytes);
  }
  /// \p Scalar, or a vector of it where \p Like is a vector: the index
  /// helpers below take a vector of indices as they take one.
  Value *splatLike(Value *Like, Value *Scalar) {
    auto *VT = dyn_cast<VectorType>(Like->getType());
    return VT ? B.CreateVectorSplat(VT->getElementCount(), Scalar) : Scalar;
  }
  /// The signed index \p V (i64) wrapped for component \p C's axis: a
  /// negative one counts from its end (not under Clip).
  Value *wrapIndex(Value *V, unsigned C);
  Value *isOutOfRange(Value *Wrapped, unsigned C) {
    return B.CreateICmpUGE(Wrapped, splatLike(Wrapped, axisSize(C)));
  }
  /// An index in [0, AxisSize[C]) for any input (requires AxisSize[C] > 0).
  Value *safeIndex(Value *Wrapped, unsigned C);
  /// Copies \p Count elements (a constant or run-time count) from the input
  /// at element offset \p InOff to the output at \p OutOff.
  void copyElements(Value *InOff, Value *OutOff, Value *Count);
  /// Copies one element to element offset \p OutOff of \p Dst (the output
  /// unless given); through the epilogue if there is one. A null \p InOff
  /// (an empty axis) writes zeros.
  void copyElement(Value *InOff, Value *OutOff, Value *Dst = nullptr);
  /// Stores element \p V (an integer or <4 x i32>) at \p To: as PTX's
  /// st.global.cs in a device kernel (StreamedPtx).
  void storeElement(Value *V, Value *To);
  /// Loads an index of integer type \p Ty from \p From with PTX's
  /// ld.global.cs.nc (StreamedPtx only).
  Value *streamedLoad(Type *Ty, Value *From);
  /// Returns 1 + Pos from the kernel.
  void emitReturnBad(Value *Pos) { emitReturn(B.CreateAdd(Pos, c(1))); }
  /// Returns \p V, after a fence that orders any non-temporal stores before
  /// whatever the caller does next.
  void emitReturn(Value *V) {
    if (P.NonTemporal)
      B.CreateFence(AtomicOrdering::SequentiallyConsistent);
    B.CreateRet(V);
  }
  /// Copies \p Bytes (a constant) from \p Src to \p Dst in the plan's vectors.
  void emitBlockCopy(Value *Dst, Value *Src, uint64_t Bytes);
  /// Copies \p Bytes (a run-time count below a line) with plain stores to
  /// those bytes alone.
  void emitShortCopy(Value *Dst, Value *Src, Value *Bytes);
  /// Copies \p Chunks of the plan's vectors; streamed ones, and those
  /// stored \p AlignedDst, need \p Dst aligned to the vector.
  void emitChunkCopy(Value *Dst, Value *Src, Value *Chunks, bool Streaming,
                     bool AlignedDst = false);
  /// Copies \p Bytes (a run-time count below the plan's vector) with one
  /// masked load and store (TargetFacts::MaskedByteStores).
  void emitMaskedCopy(Value *Dst, Value *Src, Value *Bytes);
  /// Copies \p Bytes (a constant of at least two vectors) from \p Src,
  /// \p Skew bytes (a multiple of 4) past a line, to a line-aligned \p Dst
  /// (KernelPlan::AlignLoads).
  void emitRealignedCopy(Value *Dst, Value *Src, uint64_t Bytes, Value *Skew);

  void emitLevel(unsigned D, const Offsets &O, Value *Lo, Value *Hi);
  /// Rows [Lo, Hi) of dimension Rank-2 at \p O in tiles of P.TileColumns
  /// columns (a CPU kernel's); under Check, the first bad index in the
  /// output's order found after the tiles.
  void emitTiledRows(const Offsets &O, Value *Lo, Value *Hi);
  /// Runs \p Body on IV + \p Distance if that is below \p Hi.
  void emitAhead(Value *IV, Value *Hi, uint64_t Distance, const std::function<void(Value *)> &Body);
  /// Prefetches the input block row (its first PrefetchRowBytes) of row
  /// \p Ahead of dimension \p D.
  void emitPrefetchRow(const Offsets &O, Value *Ahead, unsigned D);
  void emitBlockRow(const Offsets &O, Value *Lo, Value *Hi);
  /// Fills the table of a shared-index row; under Check, returns the first
  /// out-of-range index's position if there is one.
  void emitIndexTable();
  /// Under Check, a flag (set to false here) that element checks OR into.
  AllocaInst *emitBadFlag();
  /// ORs whether the wrapped index \p Wrapped is out of range into
  /// \p BadFlag, if there is one.
  void noteIfBad(AllocaInst *BadFlag, Value *Wrapped, unsigned C);
  /// If \p BadFlag is set, finds the first out-of-range index of the row
  /// [Lo, Hi) at \p O (or rank 0's element) and returns its position.
  void emitReturnFirstBad(AllocaInst *BadFlag, const Offsets &O, Value *Lo, Value *Hi);
  /// Prefetches block \p Block's share of the contiguous input row that the
  /// row after the one at \p O gathers from (of a row of another dimension
  /// past the last one: a prefetch never faults).
  void emitNextRowShare(const Offsets &O, Value *Block);
  /// Prefetches share \p Part of \p Parts equal shares, each of at most
  /// \p MaxLines lines, of the \p Elements input elements from element
  /// offset \p Start (which may lie past the input).
  void emitShare(Value *Start, uint64_t Elements, Value *Part, uint64_t Parts, uint64_t MaxLines);
  /// Prefetches \p Bytes from \p Base plus \p Offset bytes, one per line;
  /// the address may lie past the buffer (a prefetch never faults).
  void emitPrefetchSpan(Value *Base, Value *Offset, uint64_t Bytes);
  /// Loads one byte of each line of the \p Bytes of input from element
  /// offset \p Start, in order, and their last byte (KernelPlan's
  /// TouchInputRow and TouchRegion).
  void emitTouch(Value *Start, uint64_t Bytes);
  void emitElementRow(const Offsets &O, Value *Lo, Value *Hi);
  /// An element row whose offsets are in the table (read and checked
  /// once): offsets and copies.
  void emitTableRow(const Offsets &O);
  /// The element at \p E, stored at element offset \p DstOff of \p Dst if
  /// given (else at E.Out of the output).
  void emitIndexedElement(const Offsets &E, AllocaInst *BadFlag, Value *Dst = nullptr,
                          Value *DstOff = nullptr);
  /// The element at \p E in a loop of one element an iteration
  /// (KernelPlan::ScalarLoop): an out-of-range index returns its position
  /// under Check, or is clamped in a cold block under Clamp and Clip.
  void emitScalarElement(const Offsets &E);
  /// An element row of streamed indices (KernelPlan::StreamIndices), a
  /// block at a time; with non-temporal stores, through a buffer.
  void emitStreamedRow(const Offsets &O, AllocaInst *BadFlag);
  /// A permute row (RowKind::Permute) over [Lo, Hi) of the innermost
  /// dimension; under Check, ORs its out-of-range indices into \p BadFlag.
  void emitPermuteRow(const Offsets &O, Value *Lo, Value *Hi, AllocaInst *BadFlag);
  /// The permute row's input row at \p O, loaded into P.PermuteRegisters
  /// registers (four where three would do: the permutes pick from pairs).
  SmallVector<Value *, 4> emitPermuteRegisters(const Offsets &O);
  /// The output at positions [J, J + lanes) of the permute row at \p O,
  /// gathered from \p Regs; lanes outside \p Mask (if given) neither read
  /// nor written.
  void emitPermuteChunk(const Offsets &O, ArrayRef<Value *> Regs, Value *J, Value *Mask,
                        AllocaInst *BadFlag);
  /// Lanes [0, \p Count) of a vector of \p Lanes.
  Value *laneMask(unsigned Lanes, Value *Count);
  /// The offsets of the output element at linear position \p E.
  Offsets offsetsAt(Value *E);
  /// NAME_range(in, indices, out, begin, end[, shape]) with its
  /// attributes, its arguments named; sets F, In, Idx, Out (and Shape).
  void createRangeFunction(const std::string &Name);
  /// NAME(in, indices, out), every row through NAME_range, and the
  /// constant NAME_rows = \p Rows.
  void emitWholeEntry(const std::string &Name, Value *Rows);
  /// The GPU thread body NAME\p Suffix(in, indices, out, status, first,
  /// stride) of kernel NAME; a bad index's key counts \p KeyScale elements
  /// for each of this spec's (a widened spec's keys count the original's).
  Function *emitThreadBody(const std::string &Name, const char *Suffix, uint64_t KeyScale);
  /// The thread body's output element \p E: its tuple loaded and, under
  /// Check, a bad one's key folded into *\p Status and a branch to \p Next
  /// instead of the copy.
  void emitThreadElement(Value *E, Value *Status, BasicBlock *Next, uint64_t KeyScale);
  /// Calls \p Body with \p Args, or \p Wide (if any) where the input and
  /// output are aligned to the plan's WideBytes.
  void callThreadBody(Function *Body, Function *Wide, ArrayRef<Value *> Args);
  void emitDeviceEntry(const std::string &Name, Function *Body, Function *Wide);
  /// Emits \p Aligned where the address bits \p Bits are a multiple of
  /// \p Bytes (a power of two), \p Otherwise elsewhere, then joins them.
  void emitByAlignment(Value *Bits, uint64_t Bytes, const Twine &Name,
                       const std::function<void()> &Aligned,
                       const std::function<void()> &Otherwise);
  /// A staged plan's units of work, each staged then gathered by one
  /// block: output rows (StagedRowBytes) or strips (StagedStripColumns).
  uint64_t stagedUnits() const;
  /// The shared memory a staged plan's block copies its unit into.
  uint64_t stagedBytes() const;
  /// Unit \p Unit of a staged plan: its first output element (a strip's:
  /// the tile's first column of the first output row) and its offsets.
  struct StagedUnit {
    Value *First;
    Offsets O;
  };
  StagedUnit stagedUnit(Value *Unit);
  /// Thread \p Thread of \p Threads copies its share of unit \p U's input
  /// into \p Shared (stageRow or stageStrip).
  void stageUnit(const StagedUnit &U, Value *Thread, Value *Threads, Value *Shared);
  /// Thread \p Thread of \p Threads writes its share of unit \p U's
  /// output from \p Shared, a bad index's key folded into *\p Status.
  void gatherUnit(const StagedUnit &U, Value *Thread, Value *Threads, Value *Shared, Value *Status);
  /// for (IV = Lo; IV < Hi; IV += Step) Body(IV), run-time bounds.
  void emitStridedLoop(Value *Lo, Value *Hi, Value *Step, const Twine &Name,
                       const std::function<void(Value *)> &Body);
  /// Thread \p Thread of \p Threads copies its share of the input row
  /// that the output row at offsets \p O reads into \p Shared.
  void stageRow(const Offsets &O, Value *Thread, Value *Threads, Value *Shared);
  /// Thread \p Thread of \p Threads writes its share of the output row
  /// whose first element is \p First, at offsets \p O, from the staged
  /// input row \p Shared; a bad index's key folded into *\p Status.
  void gatherStagedRow(Value *First, const Offsets &O, Value *Thread, Value *Threads, Value *Shared,
                       Value *Status);
  /// Thread \p Thread of \p Threads copies its share of the strip whose
  /// first output element is at offsets \p O (P.StagedStripColumns
  /// columns of every axis row, those within the output's rows) into
  /// \p Shared, axis row by axis row.
  void stageStrip(Value *First, const Offsets &O, Value *Thread, Value *Threads, Value *Shared);
  /// Thread \p Thread of \p Threads writes its share of the strip's
  /// columns of every output row (the strip's first element \p First, at
  /// offsets \p O) from the staged strip \p Shared.
  void gatherStrip(Value *First, const Offsets &O, Value *Thread, Value *Threads, Value *Shared,
                   Value *Status);
  /// Makes \p Fn the function being emitted, its argument \p ShapeArg (if
  /// not negative) a family's shape, from which it loads its own values.
  void beginFunction(Function *Fn, int ShapeArg);
  /// The output's elements: a constant, or in a family kernel the product
  /// of its sizes.
  Value *elementCount();
  /// The output element (row-major over the spec's sizes) that element
  /// \p T of a grid taking tiles of P.TileColumns columns writes; \p Within
  /// is whether it has one (null where every tile is whole).
  Value *tiledElement(Value *T, Value *&Within);
  /// Folds the bad index key \p Key into *\p Status: an atomic minimum,
  /// so the smallest key over the grid, the first bad index in the
  /// output's order, is the one left.
  void foldBadKey(Value *Status, Value *Key);
  /// Returns from the simulated grid what a CPU kernel returns for the
  /// grid's final status \p Key: 0, 1 + the position in the indices of
  /// the first bad index, or EpilogueFaulted.
  void returnGridStatus(Value *Key);
  void emitSimulatedGrid(const std::string &Name, Function *Body, Function *Wide);

  const KernelSpec &S;
  const KernelPlan &P;
  Module &M;
  LLVMContext &Ctx;
  IRBuilder<> B;
  Type *I64;
  PointerType *PtrTy;
  Function *F = nullptr;
  Value *In = nullptr, *Idx = nullptr, *Out = nullptr;
  /// A family kernel's shape argument, and its values loaded so far.
  Value *Shape = nullptr;
  std::array<Value *, FamilyShapeSlots> ShapeValues{};
  /// The input offsets of one row's elements, for shared-index rows.
  AllocaInst *Table = nullptr;
  /// The linked epilogue and its parameter block (see linkEpilogue).
  Function *Epi = nullptr;
  Value *EpiParams = nullptr;
  /// In a GPU thread body: the status word, and the key a checked
  /// epilogue's fault folds into it (DeviceEpilogueFaultBit and the
  /// element) before the thread goes on to its next element; elsewhere
  /// null, and a fault returns EpilogueFaulted.
  Value *FaultStatus = nullptr, *FaultKey = nullptr;
  /// A device kernel's index loads and output stores carry PTX's
  /// evict-first hint (streamedLoad, storeElement); the host's simulation
  /// of its grid has none.
  bool StreamedPtx = false;
  /// The thread body is a device kernel's (emitThreads), not the host's
  /// simulation of its grid.
  bool OnDevice = false;
  /// How many copies of the code being emitted the loops around it, emitted
  /// as straight-line code, make (emitLoop).
  uint64_t StraightCopies = 1;
};

} // namespace gatherjit::emit

#endif
