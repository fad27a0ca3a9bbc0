//===- compiler/emit/EmitThreads.cpp - The GPU thread schedule ------------===//
//
// One thread per output element, the grid striding over the output: the
// thread body NAME.thread(in, indices, out, status, first, stride) maps
// each of its elements' linear positions to output coordinates by constant
// divisions, then reads, checks and copies through the same index loading,
// wrapping, policies, tuple offsets, element copy and epilogue call as the
// CPU's rows. Under Check a bad index is never read through (its element
// is skipped) and its key, output element * TupleSize + component, is
// folded into *status by an atomic minimum: the smallest key is the bad
// index a CPU kernel finds first.
//
// Two entries call the body: the device's kernel, whose first and stride
// come from the block and thread registers, and the host's simulation of
// the same grid, NAME_range(in, indices, out, begin, end), a loop over the
// grid's threads with the usual kernel return (0, or 1 + the lowest bad
// position) so that the body's arithmetic runs and is checked on a CPU.
//
// A family kernel (KernelSpec::Family) reads its Variable sizes and
// strides from its shape, the familyShape values: the device's kernel
// takes them as a parameter of FamilyShapeSlots words (passed by value,
// so they are read from the kernel's parameter space), the simulation as
// the sixth argument of NAME_range, as a CPU family kernel does; the
// grid's blocks are as many as the shape's elements fill (gridBlocks).
//
//===----------------------------------------------------------------------===//

#include "compiler/emit/KernelEmitter.h"

#include <llvm/IR/InlineAsm.h>
#include <llvm/IR/IntrinsicsNVPTX.h>

namespace gatherjit::emit {

void KernelEmitter::emitThreads(const std::string &Name, GridEntry Entry) {
  assert(P.ThreadsPerBlock > 0 && "a GPU plan");
  // Index loads and output stores stream past the caches on a device
  // (the plan's choice; the host's grid has no PTX).
  OnDevice = Entry == GridEntry::Device;
  StreamedPtx = P.StreamedOperands && OnDevice;
  // Staged rows and strips need no thread body: the entries loop over them.
  const bool Staged = P.StagedRowBytes || P.StagedStripColumns;
  Function *Body = Staged ? nullptr : emitThreadBody(Name, ".thread", 1);
  // Block rows in wide pieces, where the buffers allow: the same copy by
  // a body for the widened spec, whose keys count this spec's elements.
  Function *Wide = nullptr;
  if (P.WideBytes) {
    const std::optional<KernelSpec> W = widenedBlocks(S, P.WideBytes);
    assert(W && "the plan widens only what widenedBlocks can");
    KernelEmitter Pieces(*W, P, M);
    Pieces.OnDevice = OnDevice;
    Pieces.StreamedPtx = StreamedPtx;
    Wide = Pieces.emitThreadBody(Name, ".thread.wide", P.WideBytes / S.ElemBytes);
  }
  if (Entry == GridEntry::Device)
    emitDeviceEntry(Name, Body, Wide);
  else
    emitSimulatedGrid(Name, Body, Wide);
}

void KernelEmitter::callThreadBody(Function *Body, Function *Wide, ArrayRef<Value *> Args) {
  if (!Wide) {
    B.CreateCall(Body, Args);
    return;
  }
  // The wide body where the input and output are aligned to its pieces
  // (every row then is: its bytes are a whole number of pieces).
  emitByAlignment(
      B.CreateOr(B.CreatePtrToInt(Args[0], I64), B.CreatePtrToInt(Args[2], I64)), P.WideBytes,
      "wide", [&] { B.CreateCall(Wide, Args); }, [&] { B.CreateCall(Body, Args); });
}

void KernelEmitter::emitByAlignment(Value *Bits, uint64_t Bytes, const Twine &Name,
                                    const std::function<void()> &Aligned,
                                    const std::function<void()> &Otherwise) {
  Value *IsAligned = B.CreateICmpEQ(B.CreateAnd(Bits, c(Bytes - 1)), c(0), Name + ".aligned");
  BasicBlock *Then = BasicBlock::Create(Ctx, Name, F);
  BasicBlock *Else = BasicBlock::Create(Ctx, Name + ".narrow", F);
  BasicBlock *Join = BasicBlock::Create(Ctx, Name + ".done", F);
  B.CreateCondBr(IsAligned, Then, Else);
  B.SetInsertPoint(Then);
  Aligned();
  B.CreateBr(Join);
  B.SetInsertPoint(Else);
  Otherwise();
  B.CreateBr(Join);
  B.SetInsertPoint(Join);
}

Function *KernelEmitter::emitThreadBody(const std::string &Name, const char *Suffix,
                                        uint64_t KeyScale) {
  // The body, inlined into its entry; a family's takes its shape last.
  SmallVector<Type *, 7> Params{PtrTy, PtrTy, PtrTy, PtrTy, I64, I64};
  if (S.Family)
    Params.push_back(PtrTy);
  FunctionType *BodyTy = FunctionType::get(B.getVoidTy(), Params, false);
  beginFunction(Function::Create(BodyTy, GlobalValue::InternalLinkage, Name + Suffix, M),
                S.Family ? 6 : -1);
  F->addFnAttr(Attribute::AlwaysInline);
  F->addFnAttr(Attribute::NoUnwind);
  for (unsigned A = 0; A < 3; ++A)
    F->addParamAttr(A, Attribute::NoAlias);
  F->addParamAttr(0, Attribute::ReadOnly);
  F->addParamAttr(1, Attribute::ReadOnly);
  In = F->getArg(0);
  Idx = F->getArg(1);
  Out = F->getArg(2);
  Value *Status = F->getArg(3);
  if (S.hasEpilogue()) {
    Epi = M.getFunction(Name + ".epilogue");
    EpiParams = M.getNamedGlobal(Name + ".epilogue.params");
  }
  B.SetInsertPoint(BasicBlock::Create(Ctx, "entry", F));
  // Grid positions in 32 bits where the plan allows (its grid, and so a
  // position plus the grid's stride, fits in 32 unsigned bits).
  assert((!P.Index32 || !S.Family) && "a family's positions are 64-bit");
  Type *PosTy = P.Index32 ? B.getInt32Ty() : I64;
  Value *N =
      S.Family ? elementCount() : ConstantInt::get(PosTy, tiledGridElements(S, P.TileColumns));
  Value *First = B.CreateTrunc(F->getArg(4), PosTy), *Stride = B.CreateTrunc(F->getArg(5), PosTy);
  BasicBlock *Loop = BasicBlock::Create(Ctx, "element", F);
  BasicBlock *Next = BasicBlock::Create(Ctx, "element.next", F);
  BasicBlock *Done = BasicBlock::Create(Ctx, "done", F);
  BasicBlock *Head = B.GetInsertBlock();
  B.CreateCondBr(B.CreateICmpULT(First, N), Loop, Done);
  B.SetInsertPoint(Loop);
  PHINode *T = B.CreatePHI(PosTy, 2, "t");
  T->addIncoming(First, Head);
  // On a device a 32-bit position reaches the coordinates through an
  // opaque copy: the code generator's loop strength reduction would fold
  // it into a 64-bit induction variable shared with the 64-bit offsets,
  // and divide in 64 bits again.
  Value *Pos = T;
  if (P.Index32 && OnDevice)
    Pos = B.CreateCall(InlineAsm::get(FunctionType::get(PosTy, {PosTy}, false), "mov.b32 $0, $1;",
                                      "=r,r", /*hasSideEffects=*/false),
                       {T});
  // The grid's element T is output element E, in tiles where planned (a
  // position past the row in a last tile of fewer columns has none).
  Value *E = Pos;
  if (P.TileColumns) {
    Value *Within = nullptr;
    E = tiledElement(Pos, Within);
    if (Within) {
      BasicBlock *Element = BasicBlock::Create(Ctx, "in.row", F);
      B.CreateCondBr(Within, Element, Next);
      B.SetInsertPoint(Element);
    }
  }
  emitThreadElement(E, Status, Next, KeyScale);
  B.CreateBr(Next);
  B.SetInsertPoint(Next);
  Value *After = B.CreateAdd(T, Stride, "", /*HasNUW=*/true, /*HasNSW=*/!P.Index32);
  T->addIncoming(After, Next);
  B.CreateCondBr(B.CreateICmpULT(After, N), Loop, Done);
  B.SetInsertPoint(Done);
  B.CreateRetVoid();
  return F;
}

void KernelEmitter::emitThreadElement(Value *E, Value *Status, BasicBlock *Next,
                                      uint64_t KeyScale) {
  const Offsets O = offsetsAt(E);
  SmallVector<Value *, MaxRank> Tuple = loadTuple(O.Idx, nullptr);
  if (S.Policy == OobPolicy::Check) {
    // The element's first bad component, as the key E * TupleSize + C: the
    // smallest key over the grid is the bad index a CPU kernel, walking
    // the output in order, finds first.
    emitIfBad(Tuple, [&](unsigned C) {
      foldBadKey(Status,
                 B.CreateAdd(B.CreateMul(B.CreateZExt(E, I64), c(S.TupleSize * KeyScale)), c(C)));
      B.CreateBr(Next);
    });
  }
  if (S.Epilogue.Checked) {
    // A fault is a key above every bad index's: a bad index anywhere is
    // named first; else the smallest faulting element.
    FaultStatus = Status;
    FaultKey = B.CreateOr(B.CreateZExt(E, I64), c(DeviceEpilogueFaultBit));
  }
  copyElement(tupleOffset(O.In, Tuple), O.Out);
  FaultStatus = FaultKey = nullptr; // Values of this element alone.
}

void KernelEmitter::beginFunction(Function *Fn, int ShapeArg) {
  F = Fn;
  Shape = ShapeArg >= 0 ? F->getArg(ShapeArg) : nullptr;
  ShapeValues.fill(nullptr); // Loaded in the entry of the function that uses them.
}

Value *KernelEmitter::elementCount() {
  if (!S.Family)
    return c(S.elements());
  Value *N = c(1);
  for (unsigned D = 0; D < S.Rank; ++D)
    N = B.CreateMul(N, sizeAt(D), "", true, true);
  return N;
}

Value *KernelEmitter::tiledElement(Value *T, Value *&Within) {
  // The last two dimensions, R rows of C columns filled to CT, a whole
  // number of tiles of W columns:
  // T = ((outer * CT / W + tile) * R + row) * W + column within the tile.
  const uint64_t W = P.TileColumns, C = S.Sizes[S.Rank - 1], R = S.Sizes[S.Rank - 2];
  const uint64_t CT = (C + W - 1) / W * W;
  // In T's width (32 bits where the plan narrows positions).
  auto c = [&](uint64_t V) { return ConstantInt::get(T->getType(), V); };
  Value *Outer = B.CreateUDiv(T, c(R * CT));
  Value *InBlock = B.CreateURem(T, c(R * CT));
  Value *Tile = B.CreateUDiv(InBlock, c(R * W));
  Value *InTile = B.CreateURem(InBlock, c(R * W));
  Value *Row = B.CreateUDiv(InTile, c(W));
  Value *Column = B.CreateAdd(B.CreateMul(Tile, c(W)), B.CreateURem(InTile, c(W)));
  Within = CT == C ? nullptr : B.CreateICmpULT(Column, c(C), "in.row");
  return B.CreateAdd(B.CreateMul(Outer, c(R * C)), B.CreateAdd(B.CreateMul(Row, c(C)), Column));
}

void KernelEmitter::foldBadKey(Value *Status, Value *Key) {
  B.CreateAtomicRMW(AtomicRMWInst::UMin, Status, Key, MaybeAlign(8), AtomicOrdering::Monotonic);
}

KernelEmitter::Offsets KernelEmitter::offsetsAt(Value *E) {
  // Output coordinates, the last dimension fastest, found in E's width (a
  // 32-bit E is a specialized kernel's, its sizes constants) and each
  // folded into the four 64-bit offsets as it is found.
  Offsets O{c(0), c(0), c(0), c(0)};
  auto Size = [&](unsigned D) {
    return E->getType() == I64 ? sizeAt(D) : ConstantInt::get(E->getType(), S.Sizes[D]);
  };
  Value *Rest = E;
  for (unsigned D = S.Rank; D-- > 0;) {
    Value *Coord = D == 0 ? Rest : B.CreateURem(Rest, Size(D));
    if (D > 0)
      Rest = B.CreateUDiv(Rest, Size(D));
    O = advance(O, B.CreateZExt(Coord, I64), D);
  }
  return O;
}

void KernelEmitter::emitDeviceEntry(const std::string &Name, Function *Body, Function *Wide) {
  // NAME(in, indices, out, status): a kernel of the PTX module; a
  // family's takes its shape by value last.
  SmallVector<Type *, 5> Params{PtrTy, PtrTy, PtrTy, PtrTy};
  if (S.Family)
    Params.push_back(PtrTy);
  beginFunction(Function::Create(FunctionType::get(B.getVoidTy(), Params, false),
                                 GlobalValue::ExternalLinkage, Name, M),
                S.Family ? 4 : -1);
  F->addFnAttr(Attribute::NoUnwind);
  if (S.Family) {
    auto *ShapeTy = ArrayType::get(I64, FamilyShapeSlots);
    F->addParamAttr(4, Attribute::getWithByValType(Ctx, ShapeTy));
    F->addParamAttr(4, Attribute::getWithAlignment(Ctx, Align(8)));
  }
  // Distinct buffers, the operands only read: their loads may go through
  // the read-only data cache (ld.global.nc).
  for (unsigned A = 0; A < 4; ++A)
    F->addParamAttr(A, Attribute::NoAlias);
  F->addParamAttr(0, Attribute::ReadOnly);
  F->addParamAttr(1, Attribute::ReadOnly);
  // A kernel, launched with at most the plan's threads per block (ptxas
  // then keeps its registers within what such a block may have).
  NamedMDNode *Annotations = M.getOrInsertNamedMetadata("nvvm.annotations");
  Annotations->addOperand(MDNode::get(Ctx, {ValueAsMetadata::get(F), MDString::get(Ctx, "kernel"),
                                            ConstantAsMetadata::get(B.getInt32(1))}));
  Annotations->addOperand(
      MDNode::get(Ctx, {ValueAsMetadata::get(F), MDString::get(Ctx, "maxntidx"),
                        ConstantAsMetadata::get(B.getInt32(P.ThreadsPerBlock))}));
  B.SetInsertPoint(BasicBlock::Create(Ctx, "entry", F));
  // The buffers are global memory: their accesses become ld.global (.nc
  // where only read) and st.global once address spaces are inferred, by
  // kernelPipeline at O0 and O1 and by NVPTX's code generator above.
  Value *Arg[4];
  for (unsigned A = 0; A < 4; ++A)
    Arg[A] = B.CreateAddrSpaceCast(B.CreateAddrSpaceCast(F->getArg(A), B.getPtrTy(1)), PtrTy);
  auto Reg = [&](Intrinsic::ID Id) { return B.CreateZExt(B.CreateIntrinsic(Id, {}, {}), I64); };
  Value *Block = Reg(Intrinsic::nvvm_read_ptx_sreg_ctaid_x);
  Value *Threads = Reg(Intrinsic::nvvm_read_ptx_sreg_ntid_x);
  Value *First = B.CreateAdd(B.CreateMul(Block, Threads), Reg(Intrinsic::nvvm_read_ptx_sreg_tid_x));
  Value *Stride = B.CreateMul(Reg(Intrinsic::nvvm_read_ptx_sreg_nctaid_x), Threads);
  if (P.StagedRowBytes || P.StagedStripColumns) {
    // Each block stages its rows (or strips) in shared memory, in turn.
    auto *UnitTy = ArrayType::get(B.getInt8Ty(), stagedBytes());
    auto *Shared =
        new GlobalVariable(M, UnitTy, false, GlobalValue::InternalLinkage, UndefValue::get(UnitTy),
                           Name + ".staged", nullptr, GlobalValue::NotThreadLocal,
                           /*AddressSpace=*/3);
    Shared->setAlignment(Align(16));
    In = Arg[0];
    Idx = Arg[1];
    Out = Arg[2];
    Value *Tid = Reg(Intrinsic::nvvm_read_ptx_sreg_tid_x);
    emitStridedLoop(Block, c(stagedUnits()), Reg(Intrinsic::nvvm_read_ptx_sreg_nctaid_x), "unit",
                    [&](Value *Unit) {
                      const StagedUnit U = stagedUnit(Unit);
                      stageUnit(U, Tid, Threads, Shared);
                      B.CreateIntrinsic(Intrinsic::nvvm_barrier0, {}, {});
                      gatherUnit(U, Tid, Threads, Shared, Arg[3]);
                      // Every read of the unit before the next one's copy.
                      B.CreateIntrinsic(Intrinsic::nvvm_barrier0, {}, {});
                    });
  } else {
    SmallVector<Value *, 7> Args{Arg[0], Arg[1], Arg[2], Arg[3], First, Stride};
    if (S.Family)
      Args.push_back(Shape);
    callThreadBody(Body, Wide, Args);
  }
  B.CreateRetVoid();
}

uint64_t KernelEmitter::stagedUnits() const {
  return P.StagedStripColumns ? stagedStrips(S, P.StagedStripColumns)
                              : S.elements() / S.Sizes[S.Rank - 1];
}

uint64_t KernelEmitter::stagedBytes() const {
  return P.StagedStripColumns ? S.AxisSize[0] * P.StagedStripColumns * S.ElemBytes
                              : P.StagedRowBytes;
}

KernelEmitter::StagedUnit KernelEmitter::stagedUnit(Value *Unit) {
  const uint64_t C = S.Sizes[S.Rank - 1];
  if (!P.StagedStripColumns) {
    Value *First = B.CreateMul(Unit, c(C), "", true, true);
    return {First, offsetsAt(First)};
  }
  // Strip Unit is tile Unit % Tiles of outer position Unit / Tiles: its
  // first element is that tile's first column of the outer position's
  // first output row.
  const uint64_t W = P.StagedStripColumns, Tiles = (C + W - 1) / W;
  Value *Outer = B.CreateUDiv(Unit, c(Tiles));
  Value *Column = B.CreateMul(B.CreateURem(Unit, c(Tiles)), c(W));
  Value *First = B.CreateAdd(B.CreateMul(Outer, c(S.Sizes[S.Rank - 2] * C)), Column);
  return {First, offsetsAt(First)};
}

void KernelEmitter::stageUnit(const StagedUnit &U, Value *Thread, Value *Threads, Value *Shared) {
  if (P.StagedStripColumns)
    stageStrip(U.First, U.O, Thread, Threads, Shared);
  else
    stageRow(U.O, Thread, Threads, Shared);
}

void KernelEmitter::gatherUnit(const StagedUnit &U, Value *Thread, Value *Threads, Value *Shared,
                               Value *Status) {
  if (P.StagedStripColumns)
    gatherStrip(U.First, U.O, Thread, Threads, Shared, Status);
  else
    gatherStagedRow(U.First, U.O, Thread, Threads, Shared, Status);
}

void KernelEmitter::emitStridedLoop(Value *Lo, Value *Hi, Value *Step, const Twine &Name,
                                    const std::function<void(Value *)> &Body) {
  BasicBlock *Pre = B.GetInsertBlock();
  BasicBlock *Head = BasicBlock::Create(Ctx, Name + ".body", F);
  BasicBlock *Exit = BasicBlock::Create(Ctx, Name + ".exit", F);
  B.CreateCondBr(B.CreateICmpULT(Lo, Hi), Head, Exit);
  B.SetInsertPoint(Head);
  PHINode *IV = B.CreatePHI(I64, 2, Name);
  IV->addIncoming(Lo, Pre);
  Body(IV);
  Value *Next = B.CreateAdd(IV, Step, "", true, true);
  IV->addIncoming(Next, B.GetInsertBlock());
  B.CreateCondBr(B.CreateICmpULT(Next, Hi), Head, Exit);
  B.SetInsertPoint(Exit);
}

void KernelEmitter::stageRow(const Offsets &O, Value *Thread, Value *Threads, Value *Shared) {
  // The input row that the output row at O reads (its elements are the
  // axis's, contiguous), copied by the block's threads in turn: in pieces
  // of P.VectorBytes where the row's bytes are a whole number of them and
  // the row starts on one (the same for every row of an aligned input
  // whose rows are so many bytes apart), else element by element. On an
  // H100: GE4's rows (8 KiB of FLOAT16) 79.6 -> 63.3 us, GE1's (16 KiB of
  // FLOAT32) 109.8 -> 101.8 us.
  auto Copy = [&](unsigned Bytes, uint64_t Count, Value *From, Align FromAlign) {
    Type *Ty = Bytes == 16 ? static_cast<Type *>(FixedVectorType::get(B.getInt32Ty(), 4))
                           : Type::getIntNTy(Ctx, Bytes * 8);
    emitStridedLoop(Thread, c(Count), Threads, "stage", [&](Value *I) {
      Value *V = B.CreateAlignedLoad(Ty, B.CreateInBoundsGEP(Ty, From, I), FromAlign);
      B.CreateAlignedStore(V, B.CreateInBoundsGEP(Ty, Shared, I), Align(Bytes));
    });
  };
  Value *Row = bytePointer(In, O.In);
  const uint64_t RowBytes = S.AxisSize[0] * S.ElemBytes, Piece = P.VectorBytes;
  if (Piece <= S.ElemBytes || Piece != 16 || RowBytes % Piece) {
    Copy(S.ElemBytes, S.AxisSize[0], Row, elementAlign(S.ElemBytes));
    return;
  }
  emitByAlignment(
      B.CreatePtrToInt(Row, I64), Piece, "stage.wide",
      [&] { Copy(static_cast<unsigned>(Piece), RowBytes / Piece, Row, Align(Piece)); },
      [&] { Copy(S.ElemBytes, S.AxisSize[0], Row, elementAlign(S.ElemBytes)); });
}

void KernelEmitter::gatherStagedRow(Value *First, const Offsets &O, Value *Thread, Value *Threads,
                                    Value *Shared, Value *Status) {
  const unsigned L = S.Rank - 1;
  Type *Ty = Type::getIntNTy(Ctx, S.ElemBytes * 8);
  emitStridedLoop(Thread, c(S.Sizes[L]), Threads, "gather", [&](Value *K) {
    Value *W = loadWrappedIndex(mulAdd(O.Idx, K, idxStride(L)));
    BasicBlock *Next = BasicBlock::Create(Ctx, "gather.next", F);
    if (S.Policy == OobPolicy::Check)
      emitIfBad({W}, [&](unsigned) {
        foldBadKey(Status, B.CreateAdd(First, K));
        B.CreateBr(Next);
      });
    Value *V = B.CreateAlignedLoad(Ty, B.CreateInBoundsGEP(Ty, Shared, safeIndex(W, 0)),
                                   Align(S.ElemBytes));
    storeElement(V, B.CreateInBoundsGEP(Ty, Out, mulAdd(O.Out, K, outStride(L))));
    B.CreateBr(Next);
    B.SetInsertPoint(Next);
  });
}

void KernelEmitter::stageStrip(Value *First, const Offsets &O, Value *Thread, Value *Threads,
                               Value *Shared) {
  // Piece J of the strip is piece J % N of axis row J / N, N pieces a row:
  // a warp's loads cover whole strip rows, each contiguous. In pieces of
  // P.VectorBytes where the strip's rows are whole ones and start on one
  // (every row does where the first does: the rows are a multiple of it
  // apart), else element by element, columns past the output's rows left
  // out.
  const uint64_t W = P.StagedStripColumns, C = S.Sizes[S.Rank - 1];
  const uint64_t RowBytes = W * S.ElemBytes, Piece = P.VectorBytes;
  Value *Column0 = B.CreateURem(First, c(C));
  auto Copy = [&](uint64_t Bytes, bool Guard) {
    Type *Ty = Bytes == 16 ? static_cast<Type *>(FixedVectorType::get(B.getInt32Ty(), 4))
                           : Type::getIntNTy(Ctx, Bytes * 8);
    const uint64_t N = RowBytes / Bytes, PerElement = Bytes / S.ElemBytes;
    emitStridedLoop(Thread, c(S.AxisSize[0] * N), Threads, "stage", [&](Value *J) {
      Value *Row = B.CreateUDiv(J, c(N)),
            *Column = B.CreateMul(B.CreateURem(J, c(N)), c(PerElement));
      BasicBlock *Next = nullptr;
      if (Guard) {
        BasicBlock *Then = BasicBlock::Create(Ctx, "stage.in.row", F);
        Next = BasicBlock::Create(Ctx, "stage.next", F);
        B.CreateCondBr(B.CreateICmpULT(B.CreateAdd(Column0, Column), c(C)), Then, Next);
        B.SetInsertPoint(Then);
      }
      Value *From = B.CreateAdd(mulAdd(O.In, Row, axisStride(0)), Column);
      Value *V =
          B.CreateAlignedLoad(Ty, B.CreateInBoundsGEP(B.getIntNTy(S.ElemBytes * 8), In, From),
                              Bytes == 16 ? Align(16) : elementAlign(S.ElemBytes));
      B.CreateAlignedStore(V, B.CreateInBoundsGEP(Ty, Shared, J), Align(Bytes));
      if (Next) {
        B.CreateBr(Next);
        B.SetInsertPoint(Next);
      }
    });
  };
  const bool Partial = C % W != 0;
  if (Piece != 16 || S.ElemBytes >= Piece || RowBytes % Piece ||
      S.AxisStride[0] * S.ElemBytes % Piece) {
    Copy(S.ElemBytes, Partial);
    return;
  }
  // A last strip of fewer columns takes the elements' way.
  Value *Bits = B.CreatePtrToInt(bytePointer(In, O.In), I64);
  if (Partial)
    Bits = B.CreateOr(Bits, B.CreateZExt(B.CreateICmpUGT(B.CreateAdd(Column0, c(W)), c(C)), I64));
  emitByAlignment(
      Bits, Piece, "stage.wide", [&] { Copy(Piece, false); }, [&] { Copy(S.ElemBytes, Partial); });
}

void KernelEmitter::gatherStrip(Value *First, const Offsets &O, Value *Thread, Value *Threads,
                                Value *Shared, Value *Status) {
  // Element J is column J % W of output row J / W (dimension Rank-2).
  const unsigned L = S.Rank - 1;
  const uint64_t W = P.StagedStripColumns, C = S.Sizes[L];
  Type *Ty = Type::getIntNTy(Ctx, S.ElemBytes * 8);
  Value *Column0 = B.CreateURem(First, c(C));
  emitStridedLoop(Thread, c(S.Sizes[L - 1] * W), Threads, "gather", [&](Value *J) {
    Value *Row = B.CreateUDiv(J, c(W)), *Column = B.CreateURem(J, c(W));
    BasicBlock *Next = BasicBlock::Create(Ctx, "gather.next", F);
    if (C % W != 0) {
      // The last strip's columns past the row: nothing to write.
      BasicBlock *Then = BasicBlock::Create(Ctx, "gather.in.row", F);
      B.CreateCondBr(B.CreateICmpULT(B.CreateAdd(Column0, Column), c(C)), Then, Next);
      B.SetInsertPoint(Then);
    }
    Value *W0 =
        loadWrappedIndex(mulAdd(mulAdd(O.Idx, Row, idxStride(L - 1)), Column, idxStride(L)));
    if (S.Policy == OobPolicy::Check)
      emitIfBad({W0}, [&](unsigned) {
        foldBadKey(Status, B.CreateAdd(B.CreateAdd(First, B.CreateMul(Row, c(C))), Column));
        B.CreateBr(Next);
      });
    Value *From = B.CreateAdd(B.CreateMul(safeIndex(W0, 0), c(W)), Column);
    Value *V = B.CreateAlignedLoad(Ty, B.CreateInBoundsGEP(Ty, Shared, From), Align(S.ElemBytes));
    storeElement(
        V, B.CreateInBoundsGEP(Ty, Out,
                               mulAdd(mulAdd(O.Out, Row, outStride(L - 1)), Column, outStride(L))));
    B.CreateBr(Next);
    B.SetInsertPoint(Next);
  });
}

void KernelEmitter::returnGridStatus(Value *Key) {
  BasicBlock *Bad = BasicBlock::Create(Ctx, "bad", F);
  BasicBlock *Good = BasicBlock::Create(Ctx, "good", F);
  B.CreateCondBr(B.CreateICmpEQ(Key, c(~uint64_t(0))), Good, Bad);
  B.SetInsertPoint(Good);
  B.CreateRet(c(0));
  B.SetInsertPoint(Bad);
  if (S.Epilogue.Checked) {
    BasicBlock *Index = BasicBlock::Create(Ctx, "bad.index", F);
    BasicBlock *Fault = BasicBlock::Create(Ctx, "epilogue.fault", F);
    B.CreateCondBr(B.CreateICmpUGE(Key, c(DeviceEpilogueFaultBit)), Fault, Index);
    B.SetInsertPoint(Fault);
    B.CreateRet(c(EpilogueFaulted));
    B.SetInsertPoint(Index);
  }
  const Offsets O = offsetsAt(B.CreateUDiv(Key, c(S.TupleSize)));
  B.CreateRet(B.CreateAdd(B.CreateAdd(O.Pos, B.CreateURem(Key, c(S.TupleSize))), c(1)));
}

void KernelEmitter::emitSimulatedGrid(const std::string &Name, Function *Body, Function *Wide) {
  // NAME_range(in, indices, out, begin, end[, shape]): the whole grid,
  // thread by thread, if [begin, end) holds the one row.
  SmallVector<Type *, 6> Params{PtrTy, PtrTy, PtrTy, I64, I64};
  if (S.Family)
    Params.push_back(PtrTy);
  beginFunction(Function::Create(FunctionType::get(I64, Params, false),
                                 GlobalValue::ExternalLinkage, Name + "_range", M),
                S.Family ? 5 : -1);
  F->addFnAttr(Attribute::NoUnwind);
  B.SetInsertPoint(BasicBlock::Create(Ctx, "entry", F));
  BasicBlock *Run = BasicBlock::Create(Ctx, "grid", F);
  BasicBlock *None = BasicBlock::Create(Ctx, "none", F);
  Value *Lo = B.CreateBinaryIntrinsic(Intrinsic::smax, F->getArg(3), c(0));
  Value *Hi = B.CreateBinaryIntrinsic(Intrinsic::smin, F->getArg(4), c(1));
  B.CreateCondBr(B.CreateICmpSLT(Lo, Hi), Run, None);
  B.SetInsertPoint(None);
  B.CreateRet(c(0));
  B.SetInsertPoint(Run);
  AllocaInst *Status = B.CreateAlloca(I64, nullptr, "status");
  B.CreateStore(c(~uint64_t(0)), Status);
  if (P.StagedRowBytes || P.StagedStripColumns) {
    // Row by row (or strip by strip), each block's threads through the
    // copy, then through the gather: where the device's threads meet at a
    // barrier.
    AllocaInst *Shared =
        B.CreateAlloca(ArrayType::get(B.getInt8Ty(), stagedBytes()), nullptr, "staged");
    Shared->setAlignment(Align(16));
    In = F->getArg(0);
    Idx = F->getArg(1);
    Out = F->getArg(2);
    const uint64_t Threads = P.ThreadsPerBlock;
    emitLoop(c(0), c(stagedUnits()), "unit", [&](Value *Unit) {
      const StagedUnit U = stagedUnit(Unit);
      emitLoop(c(0), c(Threads), "stage.thread",
               [&](Value *T) { stageUnit(U, T, c(Threads), Shared); });
      emitLoop(c(0), c(Threads), "gather.thread",
               [&](Value *T) { gatherUnit(U, T, c(Threads), Shared, Status); });
    });
  } else {
    // A family's grid: as many blocks as its shape's elements fill.
    Value *Threads = c(P.Blocks * P.ThreadsPerBlock);
    if (S.Family) {
      Value *Blocks =
          B.CreateUDiv(B.CreateAdd(elementCount(), c(P.ThreadsPerBlock - 1)), c(P.ThreadsPerBlock));
      Blocks = B.CreateBinaryIntrinsic(
          Intrinsic::umin, B.CreateBinaryIntrinsic(Intrinsic::umax, Blocks, c(1)), c(P.Blocks));
      Threads = B.CreateMul(Blocks, c(P.ThreadsPerBlock));
    }
    emitLoop(c(0), Threads, "thread", [&](Value *T) {
      SmallVector<Value *, 7> Args{F->getArg(0), F->getArg(1), F->getArg(2), Status, T, Threads};
      if (S.Family)
        Args.push_back(Shape);
      callThreadBody(Body, Wide, Args);
    });
  }
  returnGridStatus(B.CreateLoad(I64, Status));
  if (S.Family)
    return; // A family has only the range entry, as on a CPU.
  // NAME and NAME_rows as a CPU kernel's: the grid is one row.
  Function *All = Function::Create(FunctionType::get(I64, {PtrTy, PtrTy, PtrTy}, false),
                                   GlobalValue::ExternalLinkage, Name, M);
  IRBuilder<> AB(BasicBlock::Create(Ctx, "entry", All));
  AB.CreateRet(AB.CreateCall(F, {All->getArg(0), All->getArg(1), All->getArg(2), c(0), c(1)}));
  new GlobalVariable(M, I64, /*isConstant=*/true, GlobalValue::ExternalLinkage,
                     ConstantInt::get(I64, 1), Name + "_rows");
}

} // namespace gatherjit::emit

namespace gatherjit {

void emitThreadKernelInto(const KernelSpec &Spec, const KernelPlan &Plan, const std::string &Name,
                          GridEntry Entry, llvm::Module &M) {
  emit::KernelEmitter(Spec, Plan, M).emitThreads(Name, Entry);
}

} // namespace gatherjit
