//===- compiler/emit/EmitRows.cpp - Innermost rows and prefetching -------===//
//
// The innermost dimension as the plan says: block rows copied in vectors
// (streamed past the cache for a large output), element rows (streamed in
// blocks that prefetch their indices, or through a table of offsets shared
// by every row), the cold rescan for a first bad index, and prefetches.
//
//===----------------------------------------------------------------------===//

#include "compiler/emit/KernelEmitter.h"

#include <llvm/IR/IntrinsicsX86.h>

#include <algorithm>

namespace gatherjit::emit {

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

void KernelEmitter::emitChunkCopy(Value *Dst, Value *Src, Value *Chunks, bool Streaming,
                                  bool AlignedDst) {
  Type *Chunk = FixedVectorType::get(B.getInt8Ty(), P.VectorBytes);
  emitLoop(c(0), Chunks, Streaming ? "stream" : "copy", [&](Value *IV) {
    Value *Off = B.CreateMul(IV, c(P.VectorBytes), "", true, true);
    Value *V = B.CreateAlignedLoad(Chunk, byteAt(Src, Off), Align(1));
    StoreInst *St = B.CreateAlignedStore(V, byteAt(Dst, Off),
                                         Align(Streaming || AlignedDst ? P.VectorBytes : 1));
    if (Streaming)
      St->setMetadata(LLVMContext::MD_nontemporal,
                      MDNode::get(Ctx, ConstantAsMetadata::get(B.getInt32(1))));
  });
}

void KernelEmitter::emitShortCopy(Value *Dst, Value *Src, Value *Bytes) {
  // As a C library copies a short run (under a line): the largest power of
  // two not above the count, copied from each end (the two may overlap).
  BasicBlock *Done = BasicBlock::Create(Ctx, "short.done", F);
  for (uint64_t W = P.LineBytes / 2; W >= 1; W /= 2) {
    BasicBlock *Copy = BasicBlock::Create(Ctx, "short" + Twine(W), F);
    BasicBlock *Less = BasicBlock::Create(Ctx, "short.below" + Twine(W), F);
    B.CreateCondBr(B.CreateICmpUGE(Bytes, c(W)), Copy, Less);
    B.SetInsertPoint(Copy);
    B.CreateMemCpy(Dst, MaybeAlign(1), Src, MaybeAlign(1), W);
    if (W > 1) {
      Value *Last = B.CreateSub(Bytes, c(W), "", true, true);
      B.CreateMemCpy(byteAt(Dst, Last), MaybeAlign(1), byteAt(Src, Last), MaybeAlign(1), W);
    }
    B.CreateBr(Done);
    B.SetInsertPoint(Less);
  }
  B.CreateBr(Done);
  B.SetInsertPoint(Done);
}

void KernelEmitter::emitBlockCopy(Value *Dst, Value *Src, uint64_t Bytes) {
  if (P.NonTemporal) {
    // Streaming stores need aligned lines, which the caller does not
    // promise: the row's whole lines are streamed, and the bytes before the
    // first and after the last stored plainly. No line is written both
    // ways: a plain store to a line being streamed (or the reverse) waits
    // for the line to reach memory and reads it back.
    const uint64_t Line = P.LineBytes;
    Value *Head = B.CreateBinaryIntrinsic(
        Intrinsic::umin, B.CreateAnd(B.CreateNeg(B.CreatePtrToInt(Dst, I64)), c(Line - 1)),
        c(Bytes), nullptr, "head"); // Bytes to the first line, in [0, Line).
    Value *Rest = B.CreateSub(c(Bytes), Head, "", true, true);
    Value *Tail = B.CreateAnd(Rest, c(Line - 1), "tail");
    Value *TailAt = B.CreateSub(c(Bytes), Tail, "", true, true);
    emitShortCopy(Dst, Src, Head);
    emitChunkCopy(byteAt(Dst, Head), byteAt(Src, Head),
                  B.CreateUDiv(B.CreateSub(Rest, Tail, "", true, true), c(P.VectorBytes)), true);
    emitShortCopy(byteAt(Dst, TailAt), byteAt(Src, TailAt), Tail);
    return;
  }
  BasicBlock *Done = nullptr;
  if (P.AlignStores) {
    // An output off the vectors' alignment: masked stores up to its first
    // vector boundary and after its last, aligned vectors between. An
    // aligned one (the same for every row of a call) takes the plain copy.
    const unsigned VB = P.VectorBytes;
    BasicBlock *Skewed = BasicBlock::Create(Ctx, "copy.skewed", F);
    BasicBlock *Plain = BasicBlock::Create(Ctx, "copy.plain", F);
    Done = BasicBlock::Create(Ctx, "copy.done", F);
    Value *Skew = B.CreateAnd(B.CreatePtrToInt(Dst, I64), c(VB - 1), "skew");
    B.CreateCondBr(B.CreateICmpEQ(Skew, c(0)), Plain, Skewed);
    B.SetInsertPoint(Skewed);
    Value *Head = B.CreateSub(c(VB), Skew, "", true, true); // In [1, VB).
    emitMaskedCopy(Dst, Src, Head);
    Value *Chunks = B.CreateLShr(B.CreateSub(c(Bytes), Head, "", true, true), Log2_32(VB));
    emitChunkCopy(byteAt(Dst, Head), byteAt(Src, Head), Chunks, false, /*AlignedDst=*/true);
    Value *TailAt =
        B.CreateAdd(Head, B.CreateShl(Chunks, Log2_32(VB), "", true, true), "", true, true);
    emitMaskedCopy(byteAt(Dst, TailAt), byteAt(Src, TailAt),
                   B.CreateSub(c(Bytes), TailAt, "", true, true)); // In [0, VB).
    B.CreateBr(Done);
    B.SetInsertPoint(Plain);
  }
  if (P.AlignLoads) {
    // An input off the lines by whole 4-byte lanes, into an aligned output
    // (the same for every row of a table whose rows are whole lines apart).
    BasicBlock *Realigned = BasicBlock::Create(Ctx, "copy.realigned", F);
    BasicBlock *Plain = BasicBlock::Create(Ctx, "copy.unshifted", F);
    if (!Done)
      Done = BasicBlock::Create(Ctx, "copy.done", F);
    const uint64_t Line = P.VectorBytes;
    Value *Skew = B.CreateAnd(B.CreatePtrToInt(Src, I64), c(Line - 1), "src.skew");
    Value *Off =
        B.CreateOr(B.CreateAnd(B.CreatePtrToInt(Dst, I64), c(Line - 1)), B.CreateAnd(Skew, c(3)));
    B.CreateCondBr(B.CreateAnd(B.CreateICmpNE(Skew, c(0)), B.CreateICmpEQ(Off, c(0))), Realigned,
                   Plain);
    B.SetInsertPoint(Realigned);
    emitRealignedCopy(Dst, Src, Bytes, Skew);
    B.CreateBr(Done);
    B.SetInsertPoint(Plain);
  }
  const uint64_t Chunks = Bytes / P.VectorBytes, Tail = Bytes % P.VectorBytes;
  if (Chunks > 0)
    emitChunkCopy(Dst, Src, c(Chunks), false);
  if (Tail)
    B.CreateMemCpy(byteAt(Dst, c(Bytes - Tail)), MaybeAlign(1), byteAt(Src, c(Bytes - Tail)),
                   MaybeAlign(1), Tail);
  if (Done) {
    B.CreateBr(Done);
    B.SetInsertPoint(Done);
  }
}

void KernelEmitter::emitRealignedCopy(Value *Dst, Value *Src, uint64_t Bytes, Value *Skew) {
  // Output vector K takes the row's bytes [64 K, 64 K + 64): the lanes of
  // line K from the skew on, then those of line K + 1 below it, lines
  // counted from the one holding the row's first byte. One permute of the
  // two registers shifts them into place. The first line's lanes before the
  // row and the last line's after it are masked off: no byte outside the
  // row is read.
  constexpr unsigned Lanes = 16;
  auto *Vec = FixedVectorType::get(B.getInt32Ty(), Lanes);
  Type *I16 = B.getInt16Ty();
  const uint64_t Line = Lanes * 4, Chunks = Bytes / Line, Tail = Bytes % Line;
  assert(P.VectorBytes == Line && Chunks >= 2);
  Value *Shift = B.CreateLShr(Skew, 2, "lanes.before");
  // Not inbounds: the line may begin before the input's buffer.
  Value *First = B.CreateGEP(B.getInt8Ty(), Src, B.CreateNeg(Skew), "line");
  auto LineAt = [&](Value *K) {
    return B.CreateGEP(B.getInt8Ty(), First, B.CreateMul(K, c(Line), "", true, true));
  };
  SmallVector<Constant *, Lanes> Iota;
  for (unsigned I = 0; I < Lanes; ++I)
    Iota.push_back(B.getInt32(I));
  Value *Positions = B.CreateAdd(ConstantVector::get(Iota),
                                 B.CreateVectorSplat(Lanes, B.CreateTrunc(Shift, B.getInt32Ty())));
  Value *Below = B.CreateSub(B.CreateShl(ConstantInt::get(I16, 1), B.CreateTrunc(Shift, I16)),
                             ConstantInt::get(I16, 1));
  auto *MaskTy = FixedVectorType::get(B.getInt1Ty(), Lanes);
  Value *Zero = Constant::getNullValue(Vec);
  auto Shifted = [&](Value *Low, Value *High) {
    return B.CreateIntrinsic(Intrinsic::x86_avx512_vpermi2var_d_512, {}, {Low, Positions, High});
  };
  IRBuilder<> Entry(&F->getEntryBlock(), F->getEntryBlock().begin());
  AllocaInst *Prev = Entry.CreateAlloca(Vec, nullptr, "line.prev");
  B.CreateStore(B.CreateMaskedLoad(Vec, First, Align(Line),
                                   B.CreateBitCast(B.CreateNot(Below), MaskTy), Zero, "line.first"),
                Prev);
  emitLoop(c(0), c(Chunks - 1), "realign", [&](Value *K) {
    Value *Next =
        B.CreateAlignedLoad(Vec, LineAt(B.CreateAdd(K, c(1), "", true, true)), Align(Line));
    B.CreateAlignedStore(Shifted(B.CreateLoad(Vec, Prev), Next),
                         byteAt(Dst, B.CreateMul(K, c(Line), "", true, true)), Align(Line));
    B.CreateStore(Next, Prev);
  });
  Value *Last = B.CreateMaskedLoad(Vec, LineAt(c(Chunks)), Align(Line),
                                   B.CreateBitCast(Below, MaskTy), Zero, "line.last");
  B.CreateAlignedStore(Shifted(B.CreateLoad(Vec, Prev), Last), byteAt(Dst, c((Chunks - 1) * Line)),
                       Align(Line));
  if (Tail)
    B.CreateMemCpy(byteAt(Dst, c(Bytes - Tail)), MaybeAlign(Line), byteAt(Src, c(Bytes - Tail)),
                   MaybeAlign(1), Tail);
}

void KernelEmitter::emitMaskedCopy(Value *Dst, Value *Src, Value *Bytes) {
  // The first Bytes lanes of one vector: the mask's low bits. Lanes off
  // the mask are neither read nor written.
  const unsigned VB = P.VectorBytes;
  auto *Chunk = FixedVectorType::get(B.getInt8Ty(), VB);
  Type *Bits = B.getIntNTy(VB);
  Value *Low = B.CreateSub(B.CreateShl(ConstantInt::get(Bits, 1), B.CreateTrunc(Bytes, Bits)),
                           ConstantInt::get(Bits, 1));
  Value *Mask = B.CreateBitCast(Low, FixedVectorType::get(B.getInt1Ty(), VB), "lanes");
  Value *V = B.CreateMaskedLoad(Chunk, Src, Align(1), Mask, Constant::getNullValue(Chunk));
  B.CreateMaskedStore(V, Dst, Align(1), Mask);
}

void KernelEmitter::emitTableRow(const Offsets &O) {
  const unsigned L = S.Rank == 0 ? 0 : S.Rank - 1;
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
}

void KernelEmitter::emitIndexedElement(const Offsets &E, AllocaInst *BadFlag, Value *Dst,
                                       Value *DstOff) {
  copyElement(tupleOffset(E.In, loadTuple(E.Idx, BadFlag)), Dst ? DstOff : E.Out, Dst);
}

void KernelEmitter::emitScalarElement(const Offsets &E) {
  SmallVector<Value *, MaxRank> Tuple = loadTuple(E.Idx, nullptr);
  if (S.Policy == OobPolicy::Check) {
    emitReturnIfBad(Tuple, E.Pos);
  } else {
    for (unsigned C = 0; C < Tuple.size(); ++C) {
      BasicBlock *From = B.GetInsertBlock();
      BasicBlock *Clamp = BasicBlock::Create(Ctx, "clamp", F);
      BasicBlock *Join = BasicBlock::Create(Ctx, "in.range", F);
      B.CreateCondBr(isOutOfRange(Tuple[C], C), Clamp, Join,
                     MDBuilder(Ctx).createBranchWeights(1, 1 << 20));
      B.SetInsertPoint(Clamp);
      Value *Safe = safeIndex(Tuple[C], C);
      B.CreateBr(Join);
      B.SetInsertPoint(Join);
      PHINode *Index = B.CreatePHI(I64, 2, "index.in.range");
      Index->addIncoming(Tuple[C], From);
      Index->addIncoming(Safe, Clamp);
      Tuple[C] = Index;
    }
  }
  copyElement(tupleOffset(E.In, Tuple, /*InRange=*/true), E.Out);
}

void KernelEmitter::emitStreamedRow(const Offsets &O, AllocaInst *BadFlag) {
  const unsigned L = S.Rank - 1;
  auto Plain = [&](Value *From, Value *To, const Twine &Name) {
    emitLoop(From, To, Name, [&](Value *IV) { emitIndexedElement(advance(O, IV, L), BadFlag); });
  };
  // Rows of rank >= 2 span the whole dimension: [Lo, Hi) = [0, Sizes[L]).
  // A streamed output row (contiguous, see emit()) stores its elements
  // plainly up to its first line; each block then gathers into a buffer
  // and streams it out in whole lines.
  const uint64_t N = S.Sizes[L];
  Value *Head = c(0);
  AllocaInst *Buf = nullptr;
  if (P.NonTemporal) {
    IRBuilder<> Entry(&F->getEntryBlock(), F->getEntryBlock().begin());
    Buf = Entry.CreateAlloca(ArrayType::get(B.getInt8Ty(), P.BlockElements * S.ElemBytes), nullptr,
                             "block.buf");
    Buf->setAlignment(Align(P.LineBytes));
    Value *Start = B.CreatePtrToInt(bytePointer(Out, O.Out), I64);
    Value *Skew = B.CreateAnd(B.CreateNeg(Start), c(P.LineBytes - 1)); // Bytes to the next line.
    // An output not aligned to its elements never reaches a line boundary
    // between them: the whole row is stored plainly.
    Value *ElemAligned = B.CreateICmpEQ(B.CreateAnd(Start, c(S.ElemBytes - 1)), c(0));
    Head = B.CreateSelect(
        ElemAligned,
        B.CreateBinaryIntrinsic(Intrinsic::umin, B.CreateUDiv(Skew, c(S.ElemBytes)), c(N)), c(N),
        "head");
    Plain(c(0), Head, "head");
  }
  Value *Blocks = B.CreateUDiv(B.CreateSub(c(N), Head, "", true, true), c(P.BlockElements));
  emitLoop(c(0), Blocks, "blocks", [&](Value *Block) {
    Value *J0 =
        B.CreateAdd(Head, B.CreateMul(Block, c(P.BlockElements), "", true, true), "", true, true);
    emitPrefetchSpan(Idx,
                     B.CreateAdd(B.CreateMul(B.CreateAdd(O.Idx, J0, "", true, true),
                                             c(S.indexBytes()), "", true, true),
                                 c(P.IndexAheadBytes)),
                     P.BlockElements * S.indexBytes());
    if (P.PrefetchNextInputRow)
      emitNextRowShare(O, Block);
    emitLoop(c(0), c(P.BlockElements), "inner", [&](Value *IV) {
      emitIndexedElement(advance(O, B.CreateAdd(J0, IV, "", true, true), L), BadFlag, Buf, IV);
    });
    if (Buf)
      emitChunkCopy(bytePointer(Out, B.CreateAdd(O.Out, J0, "", true, true)), Buf,
                    c(P.BlockElements * S.ElemBytes / P.VectorBytes), true);
  });
  Plain(B.CreateAdd(Head, B.CreateMul(Blocks, c(P.BlockElements), "", true, true), "", true, true),
        c(N), "inner.tail");
}

void KernelEmitter::emitTouch(Value *Start, uint64_t Bytes) {
  const uint64_t Line = P.LineBytes;
  Value *Row = bytePointer(In, Start);
  // Volatile: loads whose values go unused, kept.
  auto Touch = [&](Value *At) {
    B.CreateLoad(B.getInt8Ty(), byteAt(Row, At), /*isVolatile=*/true);
  };
  emitLoop(c(0), c((Bytes + Line - 1) / Line), "touch",
           [&](Value *K) { Touch(B.CreateMul(K, c(Line), "", true, true)); });
  Touch(c(Bytes - 1));
}

/// The innermost element loop over [Lo, Hi) of dimension Rank-1 (or one
/// element for rank 0).
void KernelEmitter::emitElementRow(const Offsets &O, Value *Lo, Value *Hi) {
  if (P.TouchInputRow)
    emitTouch(O.In, S.AxisSize[0] * S.ElemBytes);
  if (Table) {
    emitTableRow(O);
    return;
  }
  // (A scalar loop's bad index leaves it at once: no flag to rescan by.)
  AllocaInst *BadFlag = P.ScalarLoop ? nullptr : emitBadFlag();
  if (P.Row == RowKind::Permute) {
    emitPermuteRow(O, Lo, Hi, BadFlag);
  } else if (S.Rank == 0) {
    emitIndexedElement(O, BadFlag);
  } else if (P.StreamIndices) {
    emitStreamedRow(O, BadFlag);
  } else {
    const unsigned L = S.Rank - 1;
    BranchInst *Latch = emitLoop(Lo, Hi, "inner", [&](Value *IV) {
      if (P.PrefetchRowsAhead) // A row epilogue's rows or a scalar loop's elements.
        emitAhead(IV, Hi, P.PrefetchRowsAhead, [&](Value *Ahead) { emitPrefetchRow(O, Ahead, L); });
      if (P.ScalarLoop)
        emitScalarElement(advance(O, IV, L));
      else
        emitIndexedElement(advance(O, IV, L), BadFlag);
    });
    if (P.ScalarLoop && Latch) { // Not vectorized (nor interleaved): one load an iteration.
      Metadata *Scalar[] = {nullptr,
                            MDNode::get(Ctx, {MDString::get(Ctx, "llvm.loop.vectorize.enable"),
                                              ConstantAsMetadata::get(B.getFalse())})};
      MDNode *Loop = MDNode::getDistinct(Ctx, Scalar);
      Loop->replaceOperandWith(0, Loop);
      Latch->setMetadata(LLVMContext::MD_loop, Loop);
    }
  }
  emitReturnFirstBad(BadFlag, O, Lo, Hi);
}

Value *KernelEmitter::laneMask(unsigned Lanes, Value *Count) {
  SmallVector<Constant *, 64> Steps;
  for (unsigned I = 0; I < Lanes; ++I)
    Steps.push_back(ConstantInt::get(I64, I));
  return B.CreateICmpULT(ConstantVector::get(Steps), B.CreateVectorSplat(Lanes, Count));
}

SmallVector<Value *, 4> KernelEmitter::emitPermuteRegisters(const Offsets &O) {
  const unsigned EB = S.ElemBytes, Lanes = P.PermuteBytes / EB;
  const uint64_t Axis = S.AxisSize[0];
  auto *VecTy = FixedVectorType::get(B.getIntNTy(EB * 8), Lanes);
  // The input row in registers (the axis is its innermost, contiguous
  // dimension); lanes past its end are never loaded, and never selected.
  SmallVector<Value *, 4> Regs;
  Value *Row = bytePointer(In, O.In);
  for (unsigned R = 0; R < P.PermuteRegisters; ++R) {
    const uint64_t First = uint64_t(R) * Lanes;
    Value *At = byteAt(Row, c(First * EB));
    if (First + Lanes <= Axis)
      Regs.push_back(B.CreateAlignedLoad(VecTy, At, Align(1), "row"));
    else
      Regs.push_back(B.CreateMaskedLoad(VecTy, At, Align(1), laneMask(Lanes, c(Axis - First)),
                                        Constant::getNullValue(VecTy), "row"));
  }
  if (Regs.size() == 3)
    Regs.push_back(Constant::getNullValue(VecTy));
  return Regs;
}

void KernelEmitter::emitPermuteChunk(const Offsets &O, ArrayRef<Value *> Regs, Value *J,
                                     Value *Mask, AllocaInst *BadFlag) {
  const unsigned EB = S.ElemBytes, Lanes = P.PermuteBytes / EB;
  const bool Wide = EB == 8;
  auto *VecTy = FixedVectorType::get(B.getIntNTy(EB * 8), Lanes);
  auto *WideTy = FixedVectorType::get(I64, Lanes);
  auto *IdxTy = FixedVectorType::get(B.getIntNTy(S.indexBytes() * 8), Lanes);
  Value *IdxAt =
      B.CreateInBoundsGEP(IdxTy->getElementType(), Idx, B.CreateAdd(O.Idx, J, "", true, true));
  Value *Raw =
      Mask ? static_cast<Value *>(B.CreateMaskedLoad(IdxTy, IdxAt, elementAlign(S.indexBytes()),
                                                     Mask, Constant::getNullValue(IdxTy), "index"))
           : B.CreateAlignedLoad(IdxTy, IdxAt, elementAlign(S.indexBytes()), "index");
  // Wrapped, checked and clamped as an element row's index is.
  const bool Signed = isSignedIndexType(S.IndexType);
  Value *W = Signed ? wrapIndex(B.CreateSExt(Raw, WideTy), 0) : B.CreateZExt(Raw, WideTy);
  if (BadFlag) {
    Value *Bad = isOutOfRange(W, 0);
    if (Mask)
      Bad = B.CreateAnd(Bad, Mask);
    B.CreateStore(B.CreateOr(B.CreateLoad(B.getInt1Ty(), BadFlag), B.CreateOrReduce(Bad)), BadFlag);
  }
  Value *Safe = safeIndex(W, 0);
  Value *Sel = Wide ? Safe : B.CreateTrunc(Safe, VecTy);
  Value *Got;
  if (Regs.size() == 1) {
    Got = B.CreateIntrinsic(Wide ? Intrinsic::x86_avx512_permvar_di_512
                                 : Intrinsic::x86_avx512_permvar_si_512,
                            {}, {Regs[0], Sel});
  } else {
    // Each permute picks from two registers; with four, the position's
    // next bit picks the pair.
    const Intrinsic::ID Two =
        Wide ? Intrinsic::x86_avx512_vpermi2var_q_512 : Intrinsic::x86_avx512_vpermi2var_d_512;
    Got = B.CreateIntrinsic(Two, {}, {Regs[0], Sel, Regs[1]});
    if (Regs.size() == 4) {
      Value *Upper = B.CreateIntrinsic(Two, {}, {Regs[2], Sel, Regs[3]});
      Value *High = B.CreateICmpNE(B.CreateAnd(Sel, ConstantInt::get(VecTy, 2 * Lanes)),
                                   Constant::getNullValue(VecTy));
      Got = B.CreateSelect(High, Upper, Got);
    }
  }
  Value *OutAt = bytePointer(Out, B.CreateAdd(O.Out, J, "", true, true));
  if (Mask)
    B.CreateMaskedStore(Got, OutAt, Align(1), Mask);
  else
    B.CreateAlignedStore(Got, OutAt, Align(1));
}

void KernelEmitter::emitPermuteRow(const Offsets &O, Value *Lo, Value *Hi, AllocaInst *BadFlag) {
  const unsigned Lanes = P.PermuteBytes / S.ElemBytes;
  const SmallVector<Value *, 4> Regs = emitPermuteRegisters(O);
  auto Chunk = [&](Value *J, Value *Mask) { emitPermuteChunk(O, Regs, J, Mask, BadFlag); };
  Value *N = B.CreateSub(Hi, Lo, "", true, true);
  Value *Full = B.CreateUDiv(N, c(Lanes));
  emitLoop(c(0), Full, "permute", [&](Value *IV) {
    Chunk(B.CreateAdd(Lo, B.CreateMul(IV, c(Lanes), "", true, true), "", true, true), nullptr);
  });
  Value *Rest = B.CreateURem(N, c(Lanes));
  auto *ConstRest = dyn_cast<ConstantInt>(Rest);
  if (ConstRest && ConstRest->isZero())
    return;
  BasicBlock *Tail = BasicBlock::Create(Ctx, "permute.tail", F);
  BasicBlock *Done = BasicBlock::Create(Ctx, "permute.done", F);
  B.CreateCondBr(B.CreateICmpNE(Rest, c(0)), Tail, Done);
  B.SetInsertPoint(Tail);
  Chunk(B.CreateAdd(Lo, B.CreateMul(Full, c(Lanes), "", true, true), "", true, true),
        laneMask(Lanes, Rest));
  B.CreateBr(Done);
  B.SetInsertPoint(Done);
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
      B.CreateCondBr(isOutOfRange(loadWrappedIndex(componentOffset(E.Idx, C), C), C), Bad, Next);
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
  Table->setAlignment(Align(P.LineBytes));
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
  const uint64_t Line = P.LineBytes;
  const uint64_t Lines = (Elements * S.ElemBytes + Line - 1) / Line;
  const uint64_t Share = std::min((Lines + Parts - 1) / Parts, MaxLines);
  emitPrefetchSpan(In,
                   B.CreateAdd(B.CreateMul(Start, c(S.ElemBytes), "", true, true),
                               B.CreateMul(Part, c(Share * Line), "", true, true)),
                   Share * Line);
}

void KernelEmitter::emitPrefetchSpan(Value *Base, Value *Offset, uint64_t Bytes) {
  Value *Span = B.CreateGEP(B.getInt8Ty(), Base, Offset);
  auto Fetch = [&](Value *LineOffset) {
    B.CreateIntrinsic(Intrinsic::prefetch, {PtrTy},
                      {B.CreateGEP(B.getInt8Ty(), Span, LineOffset), B.getInt32(0), B.getInt32(3),
                       B.getInt32(1)});
  };
  const uint64_t Lines = (Bytes + P.LineBytes - 1) / P.LineBytes;
  if (Lines <= P.MaxInlinePrefetchLines) {
    for (uint64_t Line = 0; Line < Lines; ++Line)
      Fetch(c(P.LineBytes * Line));
    return;
  }
  emitLoop(c(0), c(Lines), "fetch",
           [&](Value *Line) { Fetch(B.CreateMul(Line, c(P.LineBytes), "", true, true)); });
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
  emitPrefetchSpan(
      In, B.CreateMul(tupleOffset(A.In, loadTuple(A.Idx, nullptr)), c(S.ElemBytes), "", true, true),
      P.PrefetchRowBytes);
}

} // namespace gatherjit::emit
