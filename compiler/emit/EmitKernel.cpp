//===- compiler/emit/EmitKernel.cpp - KernelSpec to LLVM IR --------------===//
//
// The loop nest runs over the canonical output dimensions. The innermost
// dimension is one of:
//  - a block copy, when the index is the same across it and both the input
//    and output are contiguous (an embedding row): a loop of vector copies (the
//    plan's width) per index. Rows from a table too large for the cache are
//    prefetched whole a few rows ahead; an output too large for the cache is
//    written with non-temporal stores, so its lines are not read before
//    being overwritten; into an output off the vectors' alignment, where
//    the target's masked stores are cheap, the vectors between masked ends
//    are stored aligned;
//  - an element loop. Under Check it does not branch per element: it reads
//    through an index clamped into range (so no read leaves the input) and
//    ORs the out-of-range tests into a flag; after the row, a set flag sends
//    control to a cold rescan that finds the first bad position. The loop
//    body stays branch-free, so the vectorizer can widen it (with gathers,
//    or on x86 scalar loads, see compiler/backend/Target.cpp). Where the
//    plan runs one element an iteration (ScalarLoop), a bad index branches
//    out of the loop instead, and is clamped in a cold block; the element
//    some iterations ahead picks is prefetched (its index clamped). Long rows
//    gathering along the innermost dimension from large index tensors run
//    in blocks that prefetch indices ahead, fetch the next input row, and
//    stream a large output out with non-temporal stores. Rows that all read
//    the same indices read and check them once, into a table of offsets.
//
//===----------------------------------------------------------------------===//

#include "compiler/emit/EmitKernel.h"
#include "compiler/emit/KernelEmitter.h"

#include "compiler/epilogue/Epilogue.h"
#include <llvm/IR/InlineAsm.h>

#include <algorithm>

namespace gatherjit {
namespace emit {

BranchInst *KernelEmitter::emitLoop(Value *Lo, Value *Hi, const Twine &Name,
                                    const std::function<void(Value *)> &Body, uint64_t BodyCopies) {
  // A few iterations of constant count are straight-line code: a tiny
  // kernel's row pays no loop overhead (the pipeline has no unroller). The
  // copies multiply down a nest of such loops, so a nest is straight-line
  // from the inside out while it makes at most MaxStraightCopies copies of
  // any code (8 nested loops of 4 would be 65,536 copies).
  auto *CLo = dyn_cast<ConstantInt>(Lo), *CHi = dyn_cast<ConstantInt>(Hi);
  if (CLo && CHi && CLo->getZExtValue() <= CHi->getZExtValue()) {
    const uint64_t Count = CHi->getZExtValue() - CLo->getZExtValue();
    if (straightLine(Count, StraightCopies * BodyCopies)) {
      const uint64_t Outer = StraightCopies;
      StraightCopies *= std::max<uint64_t>(Count, 1);
      for (uint64_t I = CLo->getZExtValue(); I < CHi->getZExtValue(); ++I)
        Body(c(I));
      StraightCopies = Outer;
      return nullptr;
    }
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
  BranchInst *Latch = B.CreateCondBr(B.CreateICmpULT(Next, Hi), Header, Exit);
  B.SetInsertPoint(Exit);
  return Latch;
}

Value *KernelEmitter::loadWrappedIndex(Value *Off, unsigned C) {
  Type *IdxTy = S.indexBytes() == 8 ? I64 : Type::getInt32Ty(Ctx);
  Value *At = B.CreateInBoundsGEP(IdxTy, Idx, Off);
  Value *Raw = StreamedPtx ? streamedLoad(IdxTy, At)
                           : B.CreateAlignedLoad(IdxTy, At, elementAlign(S.indexBytes()), "index");
  if (!isSignedIndexType(S.IndexType))
    return B.CreateZExt(Raw, I64);
  return wrapIndex(B.CreateSExt(Raw, I64), C);
}

Value *KernelEmitter::wrapIndex(Value *V, unsigned C) {
  if (S.Policy == OobPolicy::Clip)
    return V; // numpy's clip: no wrap-around; safeIndex clamps.
  // Negative indices count from the end of the axis.
  return B.CreateSelect(B.CreateICmpSLT(V, splatLike(V, c(0))),
                        B.CreateAdd(V, splatLike(V, axisSize(C))), V, "wrapped");
}

SmallVector<Value *, MaxRank> KernelEmitter::loadTuple(Value *Off, AllocaInst *BadFlag) {
  SmallVector<Value *, MaxRank> Tuple;
  for (unsigned C = 0; C < S.TupleSize; ++C) {
    Tuple.push_back(loadWrappedIndex(componentOffset(Off, C), C));
    noteIfBad(BadFlag, Tuple.back(), C);
  }
  return Tuple;
}

void KernelEmitter::emitIfBad(ArrayRef<Value *> Tuple, const std::function<void(unsigned)> &OnBad) {
  for (unsigned C = 0; C < Tuple.size(); ++C) {
    BasicBlock *Bad = BasicBlock::Create(Ctx, "bad", F);
    BasicBlock *Good = BasicBlock::Create(Ctx, "good", F);
    B.CreateCondBr(isOutOfRange(Tuple[C], C), Bad, Good,
                   MDBuilder(Ctx).createBranchWeights(1, 1 << 20));
    B.SetInsertPoint(Bad);
    OnBad(C);
    B.SetInsertPoint(Good);
  }
}

void KernelEmitter::emitReturnIfBad(ArrayRef<Value *> Tuple, Value *Pos) {
  emitIfBad(Tuple, [&](unsigned C) { emitReturnBad(componentPosition(Pos, C)); });
}

Value *KernelEmitter::safeIndex(Value *W, unsigned C) {
  Value *Last = splatLike(W, B.CreateSub(axisSize(C), c(1)));
  // A signed index still negative (after wrap-around, under Clamp) clamps
  // to 0 under Clamp and Clip; under Check it is an error anyway and any in-range read will do, so
  // the unsigned minimum (one instruction) suffices.
  if (S.Policy != OobPolicy::Check && isSignedIndexType(S.IndexType))
    return B.CreateBinaryIntrinsic(
        Intrinsic::smax, B.CreateBinaryIntrinsic(Intrinsic::smin, W, Last), splatLike(W, c(0)));
  return B.CreateBinaryIntrinsic(Intrinsic::umin, W, Last);
}

void KernelEmitter::copyElement(Value *InOff, Value *OutOff, Value *Dst) {
  const unsigned EB = S.ElemBytes;
  if (!Dst)
    Dst = Out;
  if (Epi) {
    const uint64_t OutBytes =
        S.OutElemBytes * (S.Epilogue.Kind == EpilogueKind::Row ? S.RowOut : 1);
    Value *To = byteAt(Dst, B.CreateMul(OutOff, c(S.OutElemBytes), "", true, true));
    if (!InOff)
      B.CreateMemSet(To, B.getInt8(0), OutBytes, MaybeAlign(1));
    else if (Value *Faulted =
                 emitEpilogueCall(B, S.Epilogue, Epi, EpiParams, bytePointer(In, InOff), To)) {
      BasicBlock *Fault = BasicBlock::Create(Ctx, "epilogue.fault", F);
      BasicBlock *Good = BasicBlock::Create(Ctx, "epilogue.ok", F);
      B.CreateCondBr(Faulted, Fault, Good, MDBuilder(Ctx).createBranchWeights(1, 1 << 20));
      B.SetInsertPoint(Fault);
      if (FaultStatus) {
        foldBadKey(FaultStatus, FaultKey);
        B.CreateBr(Good);
      } else {
        emitReturn(c(EpilogueFaulted));
      }
      B.SetInsertPoint(Good);
    }
    return;
  }
  if (S.integerSizedElement()) {
    // Aligned 16-byte elements as a vector: NVPTX moves one in a single
    // ld.v4/st.v4 where it splits an i128 in two.
    Type *Ty = EB == 16 && P.ElementAligned
                   ? static_cast<Type *>(FixedVectorType::get(B.getInt32Ty(), 4))
                   : Type::getIntNTy(Ctx, EB * 8);
    Value *V = InOff ? static_cast<Value *>(B.CreateAlignedLoad(
                           Ty, B.CreateInBoundsGEP(Ty, In, InOff), elementAlign(EB)))
                     : Constant::getNullValue(Ty);
    storeElement(V, B.CreateInBoundsGEP(Ty, Dst, OutOff));
    return;
  }
  Value *To = bytePointer(Dst, OutOff);
  if (!InOff) {
    B.CreateMemSet(To, B.getInt8(0), EB, MaybeAlign(1));
    return;
  }
  B.CreateMemCpy(To, MaybeAlign(1), bytePointer(In, InOff), MaybeAlign(1), EB);
}

void KernelEmitter::storeElement(Value *V, Value *To) {
  if (!StreamedPtx) {
    B.CreateAlignedStore(V, To, elementAlign(S.ElemBytes));
    return;
  }
  // st.global.cs: evict first, from L1 and L2 (written once, not read).
  std::string Asm = "{ .reg .u64 g; cvta.to.global.u64 g, $0; st.global.cs";
  std::string Constraints = "l";
  SmallVector<Value *, 5> Args{To};
  if (isa<FixedVectorType>(V->getType())) {
    Asm += ".v4.b32 [g], {$1, $2, $3, $4}; }";
    for (unsigned I = 0; I < 4; ++I) {
      Args.push_back(B.CreateExtractElement(V, I));
      Constraints += ",r";
    }
  } else {
    const unsigned Bits = V->getType()->getIntegerBitWidth();
    Asm += ".b" + std::to_string(Bits) + " [g], $1; }";
    if (Bits == 8)
      V = B.CreateZExt(V, B.getInt16Ty()); // A byte goes from a 16-bit register.
    Args.push_back(V);
    Constraints += Bits <= 16 ? ",h" : Bits == 32 ? ",r" : ",l";
  }
  SmallVector<Type *, 5> Types;
  for (Value *A : Args)
    Types.push_back(A->getType());
  B.CreateCall(InlineAsm::get(FunctionType::get(B.getVoidTy(), Types, false), Asm, Constraints,
                              /*hasSideEffects=*/true),
               Args);
}

Value *KernelEmitter::streamedLoad(Type *Ty, Value *From) {
  // ld.global.cs.nc: through the read-only cache, evict first (read once).
  const unsigned Bits = Ty->getIntegerBitWidth();
  const std::string Asm = "{ .reg .u64 g; cvta.to.global.u64 g, $1; ld.global.cs.nc.b" +
                          std::to_string(Bits) + " $0, [g]; }";
  return B.CreateCall(InlineAsm::get(FunctionType::get(Ty, {From->getType()}, false), Asm,
                                     Bits == 32 ? "=r,l" : "=l,l", /*hasSideEffects=*/false),
                      {From}, "index");
}

void KernelEmitter::copyElements(Value *InOff, Value *OutOff, Value *Count) {
  Value *Dst = bytePointer(Out, OutOff);
  Value *Bytes = B.CreateMul(Count, c(S.ElemBytes), "", true, true);
  if (!InOff) {
    B.CreateMemSet(Dst, B.getInt8(0), Bytes, MaybeAlign(1));
    return;
  }
  B.CreateMemCpy(Dst, MaybeAlign(1), bytePointer(In, InOff), MaybeAlign(1), Bytes);
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
  if (P.TileColumns && D + 2 == S.Rank) {
    emitTiledRows(O, Lo, Hi);
    return;
  }
  // Rows sharing one region of the input: loaded whole first, or each
  // fetches its share of the next region.
  if (D + 2 == S.Rank && P.TouchRegion)
    emitTouch(O.In, P.RegionElements * S.ElemBytes);
  emitLoop(
      Lo, Hi, "d" + Twine(D),
      [&](Value *IV) {
        if (Block && D + 2 == S.Rank && P.PrefetchRowsAhead)
          emitAhead(IV, Hi, P.PrefetchRowsAhead,
                    [&](Value *Ahead) { emitPrefetchRow(O, Ahead, D); });
        if (D + 2 == S.Rank && P.PrefetchNextRegion)
          emitShare(B.CreateAdd(O.In, c(S.InStride[D - 1]), "", true, true), P.RegionElements, IV,
                    S.Sizes[D], P.MaxRegionShareLines);
        emitLevel(D + 1, advance(O, IV, D), c(0), sizeAt(D + 1));
      },
      straightCopiesBelow(D));
}

uint64_t KernelEmitter::straightCopiesBelow(unsigned D) const {
  // Inside out, as emitLoop decides: each dimension short enough is
  // straight-line while the copies stay within the plan's bound. A block
  // row is one copy, whatever its length.
  uint64_t Copies = 1;
  for (unsigned L = P.Row == RowKind::Block ? S.Rank - 1 : S.Rank; L-- > D + 1;)
    if (straightLine(S.Sizes[L], Copies))
      Copies *= std::max<uint64_t>(S.Sizes[L], 1);
  return Copies;
}

bool KernelEmitter::straightLine(uint64_t Count, uint64_t Copies) const {
  return Count <= P.MaxStraightLoop && Copies * std::max<uint64_t>(Count, 1) <= P.MaxStraightCopies;
}

void KernelEmitter::emitTiledRows(const Offsets &O, Value *Lo, Value *Hi) {
  // Rows [Lo, Hi) of dimension Rank-2, a tile of columns at a time: whole
  // tiles, then the last one's columns.
  const unsigned L = S.Rank - 1, D = L - 1;
  const uint64_t Columns = S.Sizes[L], W = P.TileColumns, Whole = Columns / W;
  AllocaInst *BadFlag = emitBadFlag();
  auto Rows = [&](Value *J0, Value *J1) {
    emitLoop(Lo, Hi, "tile.row", [&](Value *IV) {
      const Offsets Row = advance(O, IV, D);
      emitLoop(J0, J1, "inner", [&](Value *J) { emitIndexedElement(advance(Row, J, L), BadFlag); });
    });
  };
  emitLoop(c(0), c(Whole), "tile", [&](Value *T) {
    Value *J0 = B.CreateMul(T, c(W), "", true, true);
    Rows(J0, B.CreateAdd(J0, c(W), "", true, true));
  });
  if (Columns % W)
    Rows(c(Whole * W), c(Columns));
  if (!BadFlag)
    return;
  // A bad index, found in tile order: the first in the output's order is
  // the first of the rows, in order, that has one.
  BasicBlock *Rescan = BasicBlock::Create(Ctx, "tiles.rescan", F);
  BasicBlock *Done = BasicBlock::Create(Ctx, "tiles.done", F);
  B.CreateCondBr(B.CreateLoad(B.getInt1Ty(), BadFlag), Rescan, Done,
                 MDBuilder(Ctx).createBranchWeights(1, 1 << 20));
  B.SetInsertPoint(Rescan);
  emitLoop(Lo, Hi, "rescan.row",
           [&](Value *IV) { emitReturnFirstBad(BadFlag, advance(O, IV, D), c(0), c(Columns)); });
  B.CreateBr(Done);
  B.SetInsertPoint(Done);
}

Value *KernelEmitter::shapeValue(uint64_t V, unsigned Slot) {
  if (!S.Family || V != KernelSpec::Variable)
    return c(V);
  Value *&Loaded = ShapeValues[Slot];
  if (!Loaded) {
    IRBuilder<> Entry(&F->getEntryBlock(), F->getEntryBlock().begin());
    LoadInst *Load = Entry.CreateAlignedLoad(
        I64, Entry.CreateConstInBoundsGEP1_64(I64, Shape, Slot), Align(8), "shape");
    Load->setMetadata(LLVMContext::MD_invariant_load, MDNode::get(Ctx, {}));
    Loaded = Load;
  }
  return Loaded;
}

void KernelEmitter::createRangeFunction(const std::string &Name) {
  // NAME_range(in, indices, out, begin, end), and for a family kernel its
  // shape: (..., const uint64_t shape[FamilyShapeSlots]).
  SmallVector<Type *, 6> Params{PtrTy, PtrTy, PtrTy, I64, I64};
  if (S.Family)
    Params.push_back(PtrTy);
  FunctionType *RangeTy = FunctionType::get(I64, Params, false);
  F = Function::Create(RangeTy, GlobalValue::ExternalLinkage, Name + "_range", M);
  F->addFnAttr(Attribute::NoUnwind);
  if (!P.NonTemporal) // Its closing fence synchronizes.
    F->addFnAttr(Attribute::NoSync);
  F->addFnAttr(Attribute::WillReturn);
  // A frame larger than a page (the offset table) touches each page in
  // turn, so it cannot step over a guard page below a small thread stack.
  F->addFnAttr("probe-stack", "inline-asm");
  if (P.LoopVectorBytes)
    F->addFnAttr("prefer-vector-width", std::to_string(P.LoopVectorBytes * 8));
  if (P.ScalarGathers) // After the target's features (configureModule).
    F->addFnAttr("target-features", "+prefer-no-gather");
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
  if (S.Family) {
    Shape = F->getArg(5);
    Shape->setName("shape");
    F->addParamAttr(5, Attribute::NoAlias);
    F->addParamAttr(5, Attribute::NoCapture);
    F->addParamAttr(5, Attribute::ReadOnly);
  }
  if (S.hasEpilogue()) {
    Epi = M.getFunction(Name + ".epilogue");
    EpiParams = M.getNamedGlobal(Name + ".epilogue.params");
    assert(Epi && "the pipeline links the epilogue first");
  }
}

void KernelEmitter::emitWholeEntry(const std::string &Name, Value *Rows) {
  // NAME(in, indices, out): every row.
  FunctionType *AllTy = FunctionType::get(I64, {PtrTy, PtrTy, PtrTy}, false);
  Function *All = Function::Create(AllTy, GlobalValue::ExternalLinkage, Name, M);
  All->addFnAttr(Attribute::NoUnwind);
  IRBuilder<> AB(BasicBlock::Create(Ctx, "entry", All));
  CallInst *Call = AB.CreateCall(F, {All->getArg(0), All->getArg(1), All->getArg(2), c(0), Rows});
  Call->setTailCall();
  AB.CreateRet(Call);

  new GlobalVariable(M, I64, /*isConstant=*/true, GlobalValue::ExternalLinkage,
                     cast<ConstantInt>(Rows), Name + "_rows");
}

void KernelEmitter::emit(const std::string &Name) {
  createRangeFunction(Name);
  B.SetInsertPoint(BasicBlock::Create(Ctx, "entry", F));
  // Callers from C may pass any range: keep it inside [0, rows] (none for
  // an empty output, whose indices the runtime checks itself; an object's
  // header says its kernel reads none).
  Value *Rows = S.Family && S.Rank != 0 ? sizeAt(0) : c(S.rows());
  Value *Lo = B.CreateBinaryIntrinsic(
      Intrinsic::smin, B.CreateBinaryIntrinsic(Intrinsic::smax, F->getArg(3), c(0)), Rows);
  Value *Hi = B.CreateBinaryIntrinsic(
      Intrinsic::smin, B.CreateBinaryIntrinsic(Intrinsic::smax, F->getArg(4), c(0)), Rows);
  Offsets Zero{c(0), c(0), c(0), c(0)};
  if (P.Row == RowKind::SharedIndices) {
    // Read (and check) the indices only if there are rows to gather.
    BasicBlock *Fill = BasicBlock::Create(Ctx, "table.fill", F);
    BasicBlock *Gather = BasicBlock::Create(Ctx, "rows", F);
    B.CreateCondBr(B.CreateICmpULT(Lo, Hi), Fill, Gather);
    B.SetInsertPoint(Fill);
    emitIndexTable();
    B.CreateBr(Gather);
    B.SetInsertPoint(Gather);
  }
  if (S.Rank == 0) {
    emitLoop(Lo, Hi, "one", [&](Value *) { emitElementRow(Zero, nullptr, nullptr); });
  } else {
    emitLevel(0, Zero, Lo, Hi);
  }
  emitReturn(c(0));
  if (!S.Family) // A family has only the range entry: its rows come with its shape.
    emitWholeEntry(Name, Rows);
}

} // namespace emit

using namespace llvm;

void emitKernelInto(const KernelSpec &Spec, const KernelPlan &Plan, const std::string &Name,
                    Module &M) {
  emit::KernelEmitter(Spec, Plan, M).emit(Name);
}

std::unique_ptr<Module> emitKernel(const KernelSpec &Spec, const KernelPlan &Plan,
                                   const std::string &Name, LLVMContext &Ctx) {
  auto M = std::make_unique<Module>(Name, Ctx);
  emitKernelInto(Spec, Plan, Name, *M);
  return M;
}

} // namespace gatherjit
