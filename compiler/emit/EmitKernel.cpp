//===- compiler/emit/EmitKernel.cpp - KernelSpec to LLVM IR --------------===//
//
// The loop nest runs over the canonical output dimensions. The innermost
// dimension is one of:
//  - a block copy, when the index is the same across it and both the input
//    and output are contiguous (an embedding row): a loop of 64-byte vector
//    copies per index. Rows from a table too large for the cache are
//    prefetched whole a few rows ahead; an output too large for the cache is
//    written with non-temporal stores, so its lines are not read before
//    being overwritten;
//  - an element loop. Under Check it does not branch per element: it reads
//    through an index clamped into range (so no read leaves the input) and
//    ORs the out-of-range tests into a flag; after the row, a set flag sends
//    control to a cold rescan that finds the first bad position. The loop
//    body stays branch-free, so the vectorizer can widen it (with gathers,
//    or on x86 scalar loads, see compiler/backend/Target.cpp). Long rows
//    gathering along the innermost dimension from large index tensors run
//    in blocks that prefetch indices ahead, fetch the next input row, and
//    stream a large output out with non-temporal stores. Rows that all read
//    the same indices read and check them once, into a table of offsets.
//
//===----------------------------------------------------------------------===//

#include "compiler/emit/EmitKernel.h"

#include <llvm/IR/Constants.h>
#include <llvm/IR/DerivedTypes.h>
#include <llvm/IR/Function.h>
#include <llvm/IR/GlobalVariable.h>
#include <llvm/IR/IRBuilder.h>
#include <llvm/IR/LLVMContext.h>
#include <llvm/IR/MDBuilder.h>
#include <llvm/IR/Module.h>

#include <algorithm>
#include <functional>

namespace gatherjit {
namespace {

using namespace llvm;

class KernelEmitter {
public:
  KernelEmitter(const KernelSpec &Spec, const KernelPlan &Plan, Module &M)
      : S(Spec), P(Plan), M(M), Ctx(M.getContext()), B(Ctx), I64(Type::getInt64Ty(Ctx)),
        PtrTy(PointerType::getUnqual(Ctx)) {}

  void emit(const std::string &Name);

private:
  struct Offsets {
    Value *In, *Idx, *Out, *Pos;
  };

  Value *c(uint64_t V) { return ConstantInt::get(I64, V); }
  Value *mulAdd(Value *Base, Value *IV, uint64_t Stride) {
    if (Stride == 0)
      return Base;
    Value *Term = Stride == 1 ? IV : B.CreateMul(IV, c(Stride), "", true, true);
    return B.CreateAdd(Base, Term, "", true, true);
  }
  Offsets advance(const Offsets &O, Value *IV, unsigned D) {
    return {mulAdd(O.In, IV, S.InStride[D]), mulAdd(O.Idx, IV, S.IdxStride[D]),
            mulAdd(O.Out, IV, S.OutStride[D]), mulAdd(O.Pos, IV, S.PosStride[D])};
  }

  /// for (IV = Lo; IV < Hi; ++IV) Body(IV). Leaves the builder after it.
  void emitLoop(Value *Lo, Value *Hi, const Twine &Name,
                const std::function<void(Value *)> &Body);

  /// The index at element offset \p Off, extended to i64 and wrapped for
  /// component \p C's axis.
  Value *loadWrappedIndex(Value *Off, unsigned C = 0);
  /// The wrapped components of the index tuple at element offset \p Off
  /// (one for the gathers other than GatherND), each ORed into \p BadFlag
  /// if given.
  SmallVector<Value *, MaxRank> loadTuple(Value *Off, AllocaInst *BadFlag);
  /// Returns 1 + \p Pos + C from the kernel if component C of \p Tuple is
  /// out of range (unlikely).
  void emitReturnIfBad(ArrayRef<Value *> Tuple, Value *Pos);
  /// The element offset of component C of the tuple at \p Off.
  Value *componentOffset(Value *Off, unsigned C) {
    return C == 0 ? Off : B.CreateAdd(Off, c(C * S.TupleStride), "", true, true);
  }
  /// The row-major position of component C of the tuple at \p Pos (the
  /// indices' last dimension, so adjacent).
  Value *componentPosition(Value *Pos, unsigned C) {
    return C == 0 ? Pos : B.CreateAdd(Pos, c(C), "", true, true);
  }
  /// The input element offset \p Base plus the offset \p Tuple selects,
  /// each component made safe; null if an axis is empty (nothing to read).
  Value *tupleOffset(Value *Base, ArrayRef<Value *> Tuple) {
    if (S.emptyAxis())
      return nullptr;
    for (unsigned C = 0; C < Tuple.size(); ++C)
      Base = mulAdd(Base, safeIndex(Tuple[C], C), S.AxisStride[C]);
    return Base;
  }
  /// \p Base plus \p ElemOff elements, as a byte pointer.
  Value *bytePointer(Value *Base, Value *ElemOff) {
    return B.CreateInBoundsGEP(B.getInt8Ty(), Base,
                               B.CreateMul(ElemOff, c(S.ElemBytes), "", true, true));
  }
  Value *isOutOfRange(Value *Wrapped, unsigned C) {
    return B.CreateICmpUGE(Wrapped, c(S.AxisSize[C]));
  }
  /// An index in [0, AxisSize[C]) for any input (requires AxisSize[C] > 0).
  Value *safeIndex(Value *Wrapped, unsigned C);
  /// Copies \p Count elements (a constant or run-time count) from the input
  /// at element offset \p InOff to the output at \p OutOff.
  void copyElements(Value *InOff, Value *OutOff, Value *Count);
  /// Copies one element to element offset \p OutOff of \p Dst (the output
  /// unless given).
  void copyElement(Value *InOff, Value *OutOff, Value *Dst = nullptr);
  /// Returns 1 + Pos from the kernel.
  void emitReturnBad(Value *Pos) { emitReturn(B.CreateAdd(Pos, c(1))); }
  /// Returns \p V, after a fence that orders any non-temporal stores before
  /// whatever the caller does next.
  void emitReturn(Value *V) {
    if (P.NonTemporal)
      B.CreateFence(AtomicOrdering::SequentiallyConsistent);
    B.CreateRet(V);
  }
  /// Copies \p Bytes (a constant) from \p Src to \p Dst in 64-byte vectors.
  void emitBlockCopy(Value *Dst, Value *Src, uint64_t Bytes);
  /// Copies \p Chunks 64-byte vectors; streamed ones need \p Dst aligned.
  void emitChunkCopy(Value *Dst, Value *Src, Value *Chunks, bool Streaming);

  void emitLevel(unsigned D, const Offsets &O, Value *Lo, Value *Hi);
  /// Runs \p Body on IV + \p Distance if that is below \p Hi.
  void emitAhead(Value *IV, Value *Hi, uint64_t Distance,
                 const std::function<void(Value *)> &Body);
  /// Prefetches the input block row (its first PrefetchRowBytes) of row
  /// \p Ahead of dimension \p D.
  void emitPrefetchRow(const Offsets &O, Value *Ahead, unsigned D);
  void emitBlockRow(const Offsets &O, Value *Lo, Value *Hi);
  /// True if an element is 1, 2, 4, 8 or 16 bytes (an integer type).
  bool isPowerOfTwoElement() const {
    const unsigned EB = S.ElemBytes;
    return EB == 1 || EB == 2 || EB == 4 || EB == 8 || EB == 16;
  }
  /// Bytes of one index.
  uint64_t indexBytes() const {
    return S.IndexType == DataType::Int64 || S.IndexType == DataType::UInt64 ? 8 : 4;
  }
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
  void emitShare(Value *Start, uint64_t Elements, Value *Part, uint64_t Parts,
                 uint64_t MaxLines);
  /// Prefetches \p Bytes from \p Base plus \p Offset bytes, one per line;
  /// the address may lie past the buffer (a prefetch never faults).
  void emitPrefetchSpan(Value *Base, Value *Offset, uint64_t Bytes);
  void emitElementRow(const Offsets &O, Value *Lo, Value *Hi);

  const KernelSpec &S;
  const KernelPlan &P;
  Module &M;
  LLVMContext &Ctx;
  IRBuilder<> B;
  Type *I64;
  PointerType *PtrTy;
  Function *F = nullptr;
  Value *In = nullptr, *Idx = nullptr, *Out = nullptr;
  /// The input offsets of one row's elements, for shared-index rows.
  AllocaInst *Table = nullptr;
};

void KernelEmitter::emitLoop(Value *Lo, Value *Hi, const Twine &Name,
                             const std::function<void(Value *)> &Body) {
  // A few iterations of constant count are straight-line code: a tiny
  // kernel's row pays no loop overhead (the pipeline has no unroller).
  auto *CLo = dyn_cast<ConstantInt>(Lo), *CHi = dyn_cast<ConstantInt>(Hi);
  if (CLo && CHi && CHi->getZExtValue() - CLo->getZExtValue() <= P.MaxStraightLoop &&
      CLo->getZExtValue() <= CHi->getZExtValue()) {
    for (uint64_t I = CLo->getZExtValue(); I < CHi->getZExtValue(); ++I)
      Body(c(I));
    return;
  }
  BasicBlock *Pre = B.GetInsertBlock();
  BasicBlock *Header = BasicBlock::Create(Ctx, Name + ".body", F);
  BasicBlock *Exit = BasicBlock::Create(Ctx, Name + ".exit", F);
  B.CreateCondBr(B.CreateICmpULT(Lo, Hi), Header, Exit);
  B.SetInsertPoint(Header);
  PHINode *IV = B.CreatePHI(I64, 2, Name + ".iv");
  IV->addIncoming(Lo, Pre);
  Body(IV);
  Value *Next = B.CreateAdd(IV, c(1), Name + ".next", true, true);
  IV->addIncoming(Next, B.GetInsertBlock());
  B.CreateCondBr(B.CreateICmpULT(Next, Hi), Header, Exit);
  B.SetInsertPoint(Exit);
}

Value *KernelEmitter::loadWrappedIndex(Value *Off, unsigned C) {
  const bool Wide = S.IndexType == DataType::Int64 || S.IndexType == DataType::UInt64;
  Type *IdxTy = Wide ? I64 : Type::getInt32Ty(Ctx);
  LoadInst *Raw = B.CreateAlignedLoad(IdxTy, B.CreateInBoundsGEP(IdxTy, Idx, Off),
                                      Align(1), "index");
  if (!isSignedIndexType(S.IndexType))
    return B.CreateZExt(Raw, I64);
  Value *V = B.CreateSExt(Raw, I64);
  // Negative indices count from the end of the axis.
  return B.CreateSelect(B.CreateICmpSLT(V, c(0)), B.CreateAdd(V, c(S.AxisSize[C])), V,
                        "wrapped");
}

SmallVector<Value *, MaxRank> KernelEmitter::loadTuple(Value *Off, AllocaInst *BadFlag) {
  SmallVector<Value *, MaxRank> Tuple;
  for (unsigned C = 0; C < S.TupleSize; ++C) {
    Tuple.push_back(loadWrappedIndex(componentOffset(Off, C), C));
    noteIfBad(BadFlag, Tuple.back(), C);
  }
  return Tuple;
}

void KernelEmitter::emitReturnIfBad(ArrayRef<Value *> Tuple, Value *Pos) {
  for (unsigned C = 0; C < Tuple.size(); ++C) {
    BasicBlock *Bad = BasicBlock::Create(Ctx, "bad", F);
    BasicBlock *Good = BasicBlock::Create(Ctx, "good", F);
    B.CreateCondBr(isOutOfRange(Tuple[C], C), Bad, Good,
                   MDBuilder(Ctx).createBranchWeights(1, 1 << 20));
    B.SetInsertPoint(Bad);
    emitReturnBad(componentPosition(Pos, C));
    B.SetInsertPoint(Good);
  }
}

Value *KernelEmitter::safeIndex(Value *W, unsigned C) {
  Value *Last = c(S.AxisSize[C] - 1);
  // A signed index still negative after wrap-around clamps to 0 under Clamp;
  // under Check it is an error anyway and any in-range read will do, so the
  // unsigned minimum (one instruction) suffices.
  if (S.Policy == OobPolicy::Clamp && isSignedIndexType(S.IndexType))
    return B.CreateBinaryIntrinsic(Intrinsic::smax,
                                   B.CreateBinaryIntrinsic(Intrinsic::smin, W, Last),
                                   c(0));
  return B.CreateBinaryIntrinsic(Intrinsic::umin, W, Last);
}

void KernelEmitter::copyElement(Value *InOff, Value *OutOff, Value *Dst) {
  const unsigned EB = S.ElemBytes;
  if (!Dst)
    Dst = Out;
  if (isPowerOfTwoElement()) {
    Type *Ty = Type::getIntNTy(Ctx, EB * 8);
    Value *V = InOff ? static_cast<Value *>(B.CreateAlignedLoad(
                           Ty, B.CreateInBoundsGEP(Ty, In, InOff), Align(1)))
                     : Constant::getNullValue(Ty);
    B.CreateAlignedStore(V, B.CreateInBoundsGEP(Ty, Dst, OutOff), Align(1));
    return;
  }
  Value *To = B.CreateInBoundsGEP(B.getInt8Ty(), Dst,
                                  B.CreateMul(OutOff, c(EB), "", true, true));
  if (!InOff) {
    B.CreateMemSet(To, B.getInt8(0), EB, MaybeAlign(1));
    return;
  }
  B.CreateMemCpy(To, MaybeAlign(1), bytePointer(In, InOff), MaybeAlign(1), EB);
}

void KernelEmitter::copyElements(Value *InOff, Value *OutOff, Value *Count) {
  Value *Dst = B.CreateInBoundsGEP(B.getInt8Ty(), Out,
                                   B.CreateMul(OutOff, c(S.ElemBytes), "", true, true));
  Value *Bytes = B.CreateMul(Count, c(S.ElemBytes), "", true, true);
  if (!InOff) {
    B.CreateMemSet(Dst, B.getInt8(0), Bytes, MaybeAlign(1));
    return;
  }
  Value *Src = B.CreateInBoundsGEP(B.getInt8Ty(), In,
                                   B.CreateMul(InOff, c(S.ElemBytes), "", true, true));
  B.CreateMemCpy(Dst, MaybeAlign(1), Src, MaybeAlign(1), Bytes);
}

/// One index, then a contiguous block: the innermost dimension's [Lo, Hi).
void KernelEmitter::emitBlockRow(const Offsets &O, Value *Lo, Value *Hi) {
  BasicBlock *Skip = nullptr;
  if (S.Rank == 1) {
    // The block is the whole range: an empty range reads no index.
    BasicBlock *Work = BasicBlock::Create(Ctx, "block", F);
    Skip = BasicBlock::Create(Ctx, "block.skip", F);
    B.CreateCondBr(B.CreateICmpULT(Lo, Hi), Work, Skip);
    B.SetInsertPoint(Work);
  }
  SmallVector<Value *, MaxRank> Tuple = loadTuple(O.Idx, nullptr);
  if (S.Policy == OobPolicy::Check)
    emitReturnIfBad(Tuple, O.Pos);
  const unsigned L = S.Rank - 1;
  Value *InOff = tupleOffset(O.In, Tuple);
  if (InOff)
    InOff = mulAdd(InOff, Lo, S.InStride[L]);
  Value *OutOff = mulAdd(O.Out, Lo, S.OutStride[L]);
  if (S.Rank >= 2 && InOff) // A whole row of constant length.
    emitBlockCopy(bytePointer(Out, OutOff), bytePointer(In, InOff), S.Sizes[L] * S.ElemBytes);
  else
    copyElements(InOff, OutOff, B.CreateSub(Hi, Lo, "", true, true));
  if (Skip) {
    B.CreateBr(Skip);
    B.SetInsertPoint(Skip);
  }
}

void KernelEmitter::emitChunkCopy(Value *Dst, Value *Src, Value *Chunks, bool Streaming) {
  Type *Chunk = FixedVectorType::get(B.getInt8Ty(), 64);
  emitLoop(c(0), Chunks, Streaming ? "stream" : "copy", [&](Value *IV) {
    Value *Off = B.CreateMul(IV, c(64), "", true, true);
    Value *V = B.CreateAlignedLoad(Chunk, B.CreateInBoundsGEP(B.getInt8Ty(), Src, Off), Align(1));
    StoreInst *St = B.CreateAlignedStore(V, B.CreateInBoundsGEP(B.getInt8Ty(), Dst, Off),
                                         Align(Streaming ? 64 : 1));
    if (Streaming)
      St->setMetadata(LLVMContext::MD_nontemporal,
                      MDNode::get(Ctx, ConstantAsMetadata::get(B.getInt32(1))));
  });
}

void KernelEmitter::emitBlockCopy(Value *Dst, Value *Src, uint64_t Bytes) {
  auto Plain = [&](Value *D, Value *Sr, uint64_t N) {
    B.CreateMemCpy(D, MaybeAlign(1), Sr, MaybeAlign(1), N);
  };
  auto At = [&](Value *P, Value *Off) { return B.CreateInBoundsGEP(B.getInt8Ty(), P, Off); };
  if (P.NonTemporal) {
    // Streaming stores need 64-byte alignment, which the caller does not
    // promise. The row's first and last 64 bytes are stored plainly, then
    // its aligned 64-byte lines are streamed, rewriting the same bytes where
    // they overlap. (In this order: a plain store to a line just streamed
    // would wait for the line to reach memory and read it back.)
    Value *DstInt = B.CreatePtrToInt(Dst, I64);
    Value *Skew = B.CreateSub(B.CreateAnd(B.CreateAdd(DstInt, c(63)), c(~uint64_t(63))),
                              DstInt, "skew", true, true); // In [0, 64).
    Plain(Dst, Src, 64);
    Plain(At(Dst, c(Bytes - 64)), At(Src, c(Bytes - 64)), 64);
    Value *Chunks = B.CreateUDiv(B.CreateSub(c(Bytes), Skew, "", true, true), c(64));
    emitChunkCopy(At(Dst, Skew), At(Src, Skew), Chunks, true);
    return;
  }
  const uint64_t Chunks = Bytes / 64, Tail = Bytes % 64;
  if (Chunks > 0)
    emitChunkCopy(Dst, Src, c(Chunks), false);
  if (Tail)
    Plain(At(Dst, c(Bytes - Tail)), At(Src, c(Bytes - Tail)), Tail);
}

/// The innermost element loop over [Lo, Hi) of dimension Rank-1 (or one
/// element for rank 0).
void KernelEmitter::emitElementRow(const Offsets &O, Value *Lo, Value *Hi) {
  const unsigned L = S.Rank == 0 ? 0 : S.Rank - 1;
  if (Table) {
    // The indices were read and checked once: a row is offsets and copies.
    auto Element = [&](Value *IV) {
      Value *Off = B.CreateAlignedLoad(I64, B.CreateInBoundsGEP(I64, Table, IV), Align(8));
      copyElement(B.CreateAdd(O.In, Off, "", true, true), mulAdd(O.Out, IV, S.OutStride[L]));
    };
    if (!P.PrefetchNextInputRow) {
      emitLoop(c(0), c(S.Sizes[L]), "inner", Element);
      return;
    }
    const uint64_t Blocks = S.Sizes[L] / P.BlockElements;
    emitLoop(c(0), c(Blocks), "blocks", [&](Value *Block) {
      emitNextRowShare(O, Block);
      Value *J0 = B.CreateMul(Block, c(P.BlockElements), "", true, true);
      emitLoop(c(0), c(P.BlockElements), "inner",
               [&](Value *IV) { Element(B.CreateAdd(J0, IV, "", true, true)); });
    });
    emitLoop(c(Blocks * P.BlockElements), c(S.Sizes[L]), "inner.tail", Element);
    return;
  }
  AllocaInst *BadFlag = emitBadFlag();
  // Element E, stored at element offset DstOff of Dst if given.
  auto Element = [&](const Offsets &E, Value *Dst = nullptr, Value *DstOff = nullptr) {
    copyElement(tupleOffset(E.In, loadTuple(E.Idx, BadFlag)),
                Dst ? DstOff : E.Out, Dst);
  };
  auto Plain = [&](Value *From, Value *To, const Twine &Name) {
    emitLoop(From, To, Name, [&](Value *IV) { Element(advance(O, IV, L)); });
  };
  if (S.Rank == 0) {
    Element(O);
  } else if (P.StreamIndices) {
    // Rows of rank >= 2 span the whole dimension: [Lo, Hi) = [0, Sizes[L]).
    // A streamed output row (contiguous, see emit()) stores its elements
    // plainly up to its first 64-byte line; each block then gathers into a
    // buffer and streams it out in whole lines.
    const uint64_t N = S.Sizes[L];
    Value *Head = c(0);
    AllocaInst *Buf = nullptr;
    if (P.NonTemporal) {
      IRBuilder<> Entry(&F->getEntryBlock(), F->getEntryBlock().begin());
      Buf = Entry.CreateAlloca(ArrayType::get(B.getInt8Ty(), P.BlockElements * S.ElemBytes),
                               nullptr, "block.buf");
      Buf->setAlignment(Align(64));
      Value *Start = B.CreatePtrToInt(bytePointer(Out, O.Out), I64);
      Value *Skew = B.CreateAnd(B.CreateNeg(Start), c(63)); // Bytes to the next line.
      // An output not aligned to its elements never reaches a line boundary
      // between them: the whole row is stored plainly.
      Value *ElemAligned = B.CreateICmpEQ(B.CreateAnd(Start, c(S.ElemBytes - 1)), c(0));
      Head = B.CreateSelect(ElemAligned,
                            B.CreateBinaryIntrinsic(Intrinsic::umin,
                                                    B.CreateUDiv(Skew, c(S.ElemBytes)), c(N)),
                            c(N), "head");
      Plain(c(0), Head, "head");
    }
    Value *Blocks = B.CreateUDiv(B.CreateSub(c(N), Head, "", true, true), c(P.BlockElements));
    emitLoop(c(0), Blocks, "blocks", [&](Value *Block) {
      Value *J0 = B.CreateAdd(Head, B.CreateMul(Block, c(P.BlockElements), "", true, true), "",
                              true, true);
      emitPrefetchSpan(Idx,
                       B.CreateAdd(B.CreateMul(B.CreateAdd(O.Idx, J0, "", true, true),
                                               c(indexBytes()), "", true, true),
                                   c(P.IndexAheadBytes)),
                       P.BlockElements * indexBytes());
      if (P.PrefetchNextInputRow)
        emitNextRowShare(O, Block);
      emitLoop(c(0), c(P.BlockElements), "inner", [&](Value *IV) {
        Element(advance(O, B.CreateAdd(J0, IV, "", true, true), L), Buf, IV);
      });
      if (Buf)
        emitChunkCopy(bytePointer(Out, B.CreateAdd(O.Out, J0, "", true, true)), Buf,
                      c(S.ElemBytes), true);
    });
    Plain(B.CreateAdd(Head, B.CreateMul(Blocks, c(P.BlockElements), "", true, true), "", true, true),
          c(N), "inner.tail");
  } else {
    emitLoop(Lo, Hi, "inner", [&](Value *IV) { Element(advance(O, IV, L)); });
  }
  emitReturnFirstBad(BadFlag, O, Lo, Hi);
}

AllocaInst *KernelEmitter::emitBadFlag() {
  if (S.Policy != OobPolicy::Check)
    return nullptr;
  IRBuilder<> Entry(&F->getEntryBlock(), F->getEntryBlock().begin());
  AllocaInst *Flag = Entry.CreateAlloca(B.getInt1Ty(), nullptr, "bad.flag");
  B.CreateStore(B.getFalse(), Flag);
  return Flag;
}

void KernelEmitter::noteIfBad(AllocaInst *BadFlag, Value *Wrapped, unsigned C) {
  if (BadFlag)
    B.CreateStore(B.CreateOr(B.CreateLoad(B.getInt1Ty(), BadFlag), isOutOfRange(Wrapped, C)),
                  BadFlag);
}

void KernelEmitter::emitReturnFirstBad(AllocaInst *BadFlag, const Offsets &O, Value *Lo,
                                       Value *Hi) {
  if (!BadFlag)
    return;
  const unsigned L = S.Rank == 0 ? 0 : S.Rank - 1;
  // Cold path: rescan the row for the first out-of-range index.
  BasicBlock *Rescan = BasicBlock::Create(Ctx, "rescan", F);
  BasicBlock *Done = BasicBlock::Create(Ctx, "row.done", F);
  B.CreateCondBr(B.CreateLoad(B.getInt1Ty(), BadFlag), Rescan, Done,
                 MDBuilder(Ctx).createBranchWeights(1, 1 << 20));
  B.SetInsertPoint(Rescan);
  auto Probe = [&](const Offsets &E) {
    for (unsigned C = 0; C < S.TupleSize; ++C) {
      BasicBlock *Bad = BasicBlock::Create(Ctx, "bad", F);
      BasicBlock *Next = BasicBlock::Create(Ctx, "rescan.next", F);
      B.CreateCondBr(isOutOfRange(loadWrappedIndex(componentOffset(E.Idx, C), C), C), Bad,
                     Next);
      B.SetInsertPoint(Bad);
      emitReturnBad(componentPosition(E.Pos, C));
      B.SetInsertPoint(Next);
    }
  };
  if (S.Rank == 0)
    Probe(O);
  else
    emitLoop(Lo, Hi, "rescan", [&](Value *IV) { Probe(advance(O, IV, L)); });
  B.CreateBr(Done);
  B.SetInsertPoint(Done);
}

void KernelEmitter::emitIndexTable() {
  const unsigned L = S.Rank - 1;
  IRBuilder<> Entry(&F->getEntryBlock(), F->getEntryBlock().begin());
  Table = Entry.CreateAlloca(ArrayType::get(I64, S.Sizes[L]), nullptr, "offsets");
  Table->setAlignment(Align(64));
  AllocaInst *BadFlag = emitBadFlag();
  const Offsets Zero{c(0), c(0), c(0), c(0)};
  emitLoop(c(0), c(S.Sizes[L]), "table", [&](Value *IV) {
    const Offsets E = advance(Zero, IV, L);
    const SmallVector<Value *, MaxRank> Tuple = loadTuple(E.Idx, BadFlag);
    Value *Slot = B.CreateInBoundsGEP(I64, Table, IV);
    B.CreateAlignedStore(tupleOffset(E.In, Tuple), Slot, Align(8));
  });
  emitReturnFirstBad(BadFlag, Zero, c(0), c(S.Sizes[L]));
}

void KernelEmitter::emitNextRowShare(const Offsets &O, Value *Block) {
  const unsigned L = S.Rank - 1;
  // About the row's blocks (a head may take one); at least 1.
  emitShare(B.CreateAdd(O.In, c(S.InStride[L - 1]), "", true, true), S.AxisSize[0], Block,
            S.Sizes[L] / P.BlockElements, P.MaxShareLines);
}

void KernelEmitter::emitShare(Value *Start, uint64_t Elements, Value *Part, uint64_t Parts,
                              uint64_t MaxLines) {
  const uint64_t Lines = (Elements * S.ElemBytes + 63) / 64;
  const uint64_t Share = std::min((Lines + Parts - 1) / Parts, MaxLines);
  emitPrefetchSpan(In,
                   B.CreateAdd(B.CreateMul(Start, c(S.ElemBytes), "", true, true),
                               B.CreateMul(Part, c(Share * 64), "", true, true)),
                   Share * 64);
}

void KernelEmitter::emitPrefetchSpan(Value *Base, Value *Offset, uint64_t Bytes) {
  Value *P = B.CreateGEP(B.getInt8Ty(), Base, Offset);
  auto Fetch = [&](Value *LineOffset) {
    B.CreateIntrinsic(Intrinsic::prefetch, {PtrTy},
                      {B.CreateGEP(B.getInt8Ty(), P, LineOffset), B.getInt32(0),
                       B.getInt32(3), B.getInt32(1)});
  };
  // A few lines inline; more in a loop (a long straight run of prefetches
  // makes instruction scheduling, quadratic in a block's length, slow).
  const uint64_t Lines = (Bytes + 63) / 64;
  if (Lines <= 16) {
    for (uint64_t Line = 0; Line < Lines; ++Line)
      Fetch(c(64 * Line));
    return;
  }
  emitLoop(c(0), c(Lines), "fetch", [&](Value *Line) {
    Fetch(B.CreateMul(Line, c(64), "", true, true));
  });
}

void KernelEmitter::emitAhead(Value *IV, Value *Hi, uint64_t Distance,
                              const std::function<void(Value *)> &Body) {
  BasicBlock *Then = BasicBlock::Create(Ctx, "prefetch", F);
  BasicBlock *Next = BasicBlock::Create(Ctx, "prefetch.done", F);
  Value *Ahead = B.CreateAdd(IV, c(Distance), "", true, true);
  B.CreateCondBr(B.CreateICmpULT(Ahead, Hi), Then, Next);
  B.SetInsertPoint(Then);
  Body(Ahead);
  B.CreateBr(Next);
  B.SetInsertPoint(Next);
}

void KernelEmitter::emitPrefetchRow(const Offsets &O, Value *Ahead, unsigned D) {
  const Offsets A = advance(O, Ahead, D);
  emitPrefetchSpan(In,
                   B.CreateMul(tupleOffset(A.In, loadTuple(A.Idx, nullptr)),
                               c(S.ElemBytes), "", true, true),
                   P.PrefetchRowBytes);
}

void KernelEmitter::emitLevel(unsigned D, const Offsets &O, Value *Lo, Value *Hi) {
  const bool Block = P.Row == RowKind::Block;
  if (S.Rank == 0 || D == S.Rank - 1) {
    if (Block)
      emitBlockRow(O, Lo, Hi);
    else
      emitElementRow(O, Lo, Hi);
    return;
  }
  emitLoop(Lo, Hi, "d" + Twine(D), [&](Value *IV) {
    if (Block && D + 2 == S.Rank && P.PrefetchRowsAhead)
      emitAhead(IV, Hi, P.PrefetchRowsAhead,
                [&](Value *Ahead) { emitPrefetchRow(O, Ahead, D); });
    // Rows sharing one region of the input: each fetches its share of the
    // next region.
    if (D + 2 == S.Rank && P.PrefetchNextRegion)
      emitShare(B.CreateAdd(O.In, c(S.InStride[D - 1]), "", true, true), P.RegionElements, IV,
                S.Sizes[D], P.MaxRegionShareLines);
    emitLevel(D + 1, advance(O, IV, D), c(0), c(S.Sizes[D + 1]));
  });
}

void KernelEmitter::emit(const std::string &Name) {
  // NAME_range(in, indices, out, begin, end)
  FunctionType *RangeTy =
      FunctionType::get(I64, {PtrTy, PtrTy, PtrTy, I64, I64}, false);
  F = Function::Create(RangeTy, GlobalValue::ExternalLinkage, Name + "_range", M);
  F->addFnAttr(Attribute::NoUnwind);
  if (!P.NonTemporal) // Its closing fence synchronizes.
    F->addFnAttr(Attribute::NoSync);
  F->addFnAttr(Attribute::WillReturn);
  // A frame larger than a page (the offset table) touches each page in
  // turn, so it cannot step over a guard page below a small thread stack.
  F->addFnAttr("probe-stack", "inline-asm");
  for (unsigned A = 0; A < 3; ++A) {
    F->addParamAttr(A, Attribute::NoAlias);
    F->addParamAttr(A, Attribute::NoCapture);
  }
  F->addParamAttr(0, Attribute::ReadOnly);
  F->addParamAttr(1, Attribute::ReadOnly);
  F->addParamAttr(2, Attribute::WriteOnly);
  In = F->getArg(0);
  Idx = F->getArg(1);
  Out = F->getArg(2);
  In->setName("input");
  Idx->setName("indices");
  Out->setName("output");
  F->getArg(3)->setName("begin");
  F->getArg(4)->setName("end");
  B.SetInsertPoint(BasicBlock::Create(Ctx, "entry", F));
  // Callers from C may pass any range: keep it inside [0, rows].
  const uint64_t Rows = S.rows();
  Value *Lo = B.CreateBinaryIntrinsic(
      Intrinsic::smin, B.CreateBinaryIntrinsic(Intrinsic::smax, F->getArg(3), c(0)), c(Rows));
  Value *Hi = B.CreateBinaryIntrinsic(
      Intrinsic::smin, B.CreateBinaryIntrinsic(Intrinsic::smax, F->getArg(4), c(0)), c(Rows));
  Offsets Zero{c(0), c(0), c(0), c(0)};
  if (P.Row == RowKind::SharedIndices) {
    // Read (and check) the indices only if there are rows to gather.
    BasicBlock *Fill = BasicBlock::Create(Ctx, "table.fill", F);
    BasicBlock *Rows = BasicBlock::Create(Ctx, "rows", F);
    B.CreateCondBr(B.CreateICmpULT(Lo, Hi), Fill, Rows);
    B.SetInsertPoint(Fill);
    emitIndexTable();
    B.CreateBr(Rows);
    B.SetInsertPoint(Rows);
  }
  if (S.Rank == 0) {
    emitLoop(Lo, Hi, "one", [&](Value *) { emitElementRow(Zero, nullptr, nullptr); });
  } else {
    emitLevel(0, Zero, Lo, Hi);
  }
  emitReturn(c(0));

  // NAME(in, indices, out): every row.
  FunctionType *AllTy = FunctionType::get(I64, {PtrTy, PtrTy, PtrTy}, false);
  Function *All = Function::Create(AllTy, GlobalValue::ExternalLinkage, Name, M);
  All->addFnAttr(Attribute::NoUnwind);
  IRBuilder<> AB(BasicBlock::Create(Ctx, "entry", All));
  CallInst *Call = AB.CreateCall(F, {All->getArg(0), All->getArg(1), All->getArg(2),
                                     c(0), c(Rows)});
  Call->setTailCall();
  AB.CreateRet(Call);

  new GlobalVariable(M, I64, /*isConstant=*/true, GlobalValue::ExternalLinkage,
                     ConstantInt::get(I64, Rows), Name + "_rows");
}

} // namespace

void emitKernelInto(const KernelSpec &Spec, const KernelPlan &Plan, const std::string &Name,
                    Module &M) {
  KernelEmitter(Spec, Plan, M).emit(Name);
}

std::unique_ptr<Module> emitKernel(const KernelSpec &Spec, const KernelPlan &Plan,
                                   const std::string &Name, LLVMContext &Ctx) {
  auto M = std::make_unique<Module>(Name, Ctx);
  emitKernelInto(Spec, Plan, Name, *M);
  return M;
}

} // namespace gatherjit
