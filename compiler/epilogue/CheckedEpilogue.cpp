//===- compiler/epilogue/CheckedEpilogue.cpp - Epilogues that check -------===//
//
// The rewrite runs where clang ran (the helper process), on the source's
// module before it is written as bitcode:
//  1. every function of the source is inlined into the entry and its
//     locals promoted to registers, so what is left to check is one
//     function whose pointers derive from its arguments, its own stack
//     slots and const globals;
//  2. constructs whose effect cannot be checked are refused, at their line;
//  3. every load, store, atomic and memory intrinsic is preceded by a test
//     that the bytes it touches lie inside a region its pointer may reach
//     (the regions its underlying objects name, or any region when they
//     cannot be named), and integer divisions by a divisor that traps;
//     a failed test sets the fault byte and returns.
// The kernel's optimizer folds the tests of accesses at constant offsets
// from a region's base, so a row epilogue with a fixed loop keeps none.
//
//===----------------------------------------------------------------------===//

#include "compiler/epilogue/CheckedEpilogue.h"

#include <llvm/Analysis/CGSCCPassManager.h>
#include <llvm/Analysis/LoopAnalysisManager.h>
#include <llvm/Analysis/ValueTracking.h>
#include <llvm/IR/DebugInfo.h>
#include <llvm/IR/IRBuilder.h>
#include <llvm/IR/InstIterator.h>
#include <llvm/IR/IntrinsicInst.h>
#include <llvm/IR/MDBuilder.h>
#include <llvm/IR/Module.h>
#include <llvm/IR/PassManager.h>
#include <llvm/Passes/PassBuilder.h>
#include <llvm/Transforms/IPO/AlwaysInliner.h>
#include <llvm/Transforms/Scalar/SROA.h>

#include <vector>

namespace gatherjit {
namespace {

using namespace llvm;

struct Region {
  Value *Base;
  uint64_t Bytes;
  bool Writable;
};

/// Every function of the source inlined into its callers and the entry's
/// locals promoted: what is left are the entry's own accesses.
void inlineAndPromote(Module &M) {
  for (Function &F : M) {
    if (F.isDeclaration())
      continue;
    F.removeFnAttr(Attribute::NoInline);
    F.removeFnAttr(Attribute::OptimizeNone);
    F.addFnAttr(Attribute::AlwaysInline);
  }
  LoopAnalysisManager LAM;
  FunctionAnalysisManager FAM;
  CGSCCAnalysisManager CGAM;
  ModuleAnalysisManager MAM;
  PassBuilder PB;
  PB.registerModuleAnalyses(MAM);
  PB.registerCGSCCAnalyses(CGAM);
  PB.registerFunctionAnalyses(FAM);
  PB.registerLoopAnalyses(LAM);
  PB.crossRegisterProxies(LAM, FAM, CGAM, MAM);
  ModulePassManager MPM;
  MPM.addPass(AlwaysInlinerPass(/*InsertLifetimeIntrinsics=*/false));
  MPM.addPass(createModuleToFunctionPassAdaptor(SROAPass(SROAOptions::PreserveCFG)));
  MPM.run(M, MAM);
}

/// "FILE:LINE:COL: error: the epilogue WHAT, which a checked epilogue may
/// not", at \p L where it is known.
Status refusedAt(const std::string &File, const DebugLoc &L, const std::string &What) {
  std::string Where = File;
  if (L)
    Where += ":" + std::to_string(L.getLine()) + ":" + std::to_string(L.getCol());
  return Status::invalidArgument(Where + ": error: the epilogue " + What +
                                 ", which a checked epilogue may not");
}

/// The refusal of an entry that calls itself or takes its own address, at
/// its first use.
Status entryInUse(const Function &Entry, const std::string &File) {
  const Use &First = *Entry.use_begin();
  const auto *I = dyn_cast<Instruction>(First.getUser());
  const auto *Call = dyn_cast_or_null<CallBase>(I);
  const std::string Name = Entry.getName().str();
  return refusedAt(File, I ? I->getDebugLoc() : DebugLoc(),
                   Call && Call->isCallee(&First)
                       ? "calls '" + Name + "', which could not be inlined (it recurses)"
                       : "takes the address of '" + Name + "'");
}

/// \p F with a last parameter added (the fault byte's pointer), its body
/// moved over; \p F is erased.
Function *withFaultParameter(Function &F) {
  SmallVector<Type *, 4> Params(F.getFunctionType()->params());
  Params.push_back(PointerType::getUnqual(F.getContext()));
  Function *NF = Function::Create(FunctionType::get(F.getReturnType(), Params, false),
                                  F.getLinkage(), F.getAddressSpace(), "", F.getParent());
  NF->copyAttributesFrom(&F);
  NF->splice(NF->begin(), &F);
  for (auto [Old, New] : zip(F.args(), NF->args())) {
    Old.replaceAllUsesWith(&New);
    New.takeName(&Old);
  }
  NF->takeName(&F);
  F.eraseFromParent();
  return NF;
}

class Rewriter {
public:
  Rewriter(Function &F, const EpilogueSignature &Sig, const EpilogueRegions &Sizes,
           const std::string &File)
      : F(F), File(File), DL(F.getParent()->getDataLayout()), B(F.getContext()) {
    const bool Row = Sig.Kind == EpilogueKind::Row;
    if (Row) {
      Regions.push_back({F.getArg(0), Sizes.RowIn, false});
      Regions.push_back({F.getArg(1), Sizes.RowOut, true});
    }
    if (Sig.HasParams)
      Regions.push_back({F.getArg(Row ? 2 : 1), Sizes.Params, false});
    for (Instruction &I : F.getEntryBlock())
      if (auto *A = dyn_cast<AllocaInst>(&I); A && A->isStaticAlloca())
        Regions.push_back({A, A->getAllocationSize(DL)->getFixedValue(), true});
    for (GlobalVariable &G : F.getParent()->globals())
      if (!G.isDeclaration())
        Regions.push_back(
            {&G, DL.getTypeAllocSize(G.getValueType()).getFixedValue(), !G.isConstant()});
  }

  Status run() {
    if (Status S = checkStack(); !S)
      return S;
    std::vector<Instruction *> Work;
    for (Instruction &I : instructions(F))
      Work.push_back(&I);
    for (Instruction *I : Work)
      if (Status S = refuse(*I); !S)
        return S;
    Fault = F.arg_end() - 1;
    for (Instruction *I : Work)
      guard(*I);
    return Status::ok();
  }

private:
  Status refused(const Instruction &I, const std::string &What) const {
    return refusedAt(File, I.getDebugLoc(), What);
  }

  /// The stack slots (every local of the source, all inlined into the
  /// entry) lie on the stack of the thread that runs the kernel, whose end
  /// no test can see: past CheckedEpilogueStackBytes they are refused, at
  /// the first line that uses the largest.
  Status checkStack() const {
    uint64_t Total = 0, Most = 0;
    AllocaInst *Largest = nullptr;
    for (Instruction &I : F.getEntryBlock())
      if (auto *A = dyn_cast<AllocaInst>(&I); A && A->isStaticAlloca()) {
        const uint64_t Bytes = A->getAllocationSize(DL)->getFixedValue();
        Total += Bytes;
        if (Bytes > Most) {
          Most = Bytes;
          Largest = A;
        }
      }
    if (Total <= CheckedEpilogueStackBytes)
      return Status::ok();
    // Clang's line tables name no declarations: the earliest line that
    // uses the slot stands for it.
    DebugLoc At;
    for (User *U : Largest->users())
      if (auto *I = dyn_cast<Instruction>(U);
          I && I->getDebugLoc() && (!At || I->getDebugLoc().getLine() < At.getLine()))
        At = I->getDebugLoc();
    return refusedAt(File, At,
                     "has local variables of " + std::to_string(Total) + " bytes, more than " +
                         std::to_string(CheckedEpilogueStackBytes) +
                         " on the stack of the kernel's thread");
  }

  /// The constructs whose effect no test before them can bound.
  Status refuse(const Instruction &I) const {
    if (isa<IntToPtrInst>(I))
      return refused(I, "casts an integer to a pointer");
    for (const Use &U : I.operands())
      if (auto *CE = dyn_cast<ConstantExpr>(U.get());
          CE && CE->getOpcode() == Instruction::IntToPtr)
        return refused(I, "casts an integer to a pointer");
    if (auto *A = dyn_cast<AllocaInst>(&I); A && !A->isStaticAlloca())
      return refused(I, "has a variable-length array or alloca");
    const auto *Call = dyn_cast<CallBase>(&I);
    if (!Call)
      return Status::ok();
    const Function *Callee = Call->getCalledFunction();
    if (!Callee)
      return refused(I, "calls through a function pointer");
    if (!Callee->isIntrinsic())
      return refused(I, "calls '" + Callee->getName().str() +
                            "', which could not be inlined (it recurses)");
    switch (Callee->getIntrinsicID()) {
    case Intrinsic::frameaddress:
    case Intrinsic::returnaddress:
    case Intrinsic::addressofreturnaddress:
    case Intrinsic::sponentry:
    case Intrinsic::stacksave:
    case Intrinsic::stackrestore:
    case Intrinsic::read_register:
    case Intrinsic::read_volatile_register:
    case Intrinsic::write_register:
    case Intrinsic::thread_pointer:
      return refused(I, "calls '" + Callee->getName().str() +
                            "', which reads or moves the stack or registers");
    default:
      break;
    }
    if (isa<MemIntrinsic>(Call) || isa<DbgInfoIntrinsic>(Call) || Call->isLifetimeStartOrEnd() ||
        !Call->mayReadOrWriteMemory())
      return Status::ok();
    switch (Callee->getIntrinsicID()) {
    case Intrinsic::assume:
    case Intrinsic::experimental_noalias_scope_decl:
    case Intrinsic::prefetch:
      return Status::ok();
    default:
      break;
    }
    return refused(I, "calls '" + Callee->getName().str() +
                          "', which touches memory the checks cannot follow");
  }

  /// A test before \p I if it touches memory or divides; `unreachable`
  /// faults.
  void guard(Instruction &I) {
    if (isa<UnreachableInst>(I)) { // __builtin_unreachable reached
      BranchInst::Create(faultBlock(), &I);
      I.eraseFromParent();
      return;
    }
    if (auto *L = dyn_cast<LoadInst>(&I))
      return guardAccess(I, L->getPointerOperand(), size(L->getType()), false);
    if (auto *S = dyn_cast<StoreInst>(&I))
      return guardAccess(I, S->getPointerOperand(), size(S->getValueOperand()->getType()), true);
    if (auto *A = dyn_cast<AtomicRMWInst>(&I))
      return guardAccess(I, A->getPointerOperand(), size(A->getValOperand()->getType()), true);
    if (auto *X = dyn_cast<AtomicCmpXchgInst>(&I))
      return guardAccess(I, X->getPointerOperand(), size(X->getNewValOperand()->getType()), true);
    if (auto *M = dyn_cast<MemIntrinsic>(&I)) {
      Value *Len = M->getLength();
      B.SetInsertPoint(&I);
      Len = B.CreateZExtOrTrunc(Len, B.getInt64Ty());
      Value *Ok = inside(M->getRawDest(), Len, true);
      if (auto *T = dyn_cast<MemTransferInst>(M))
        Ok = B.CreateAnd(Ok, inside(T->getRawSource(), Len, false));
      return branch(I, Ok);
    }
    if (auto *D = dyn_cast<BinaryOperator>(&I))
      switch (D->getOpcode()) {
      case Instruction::SDiv:
      case Instruction::SRem:
      case Instruction::UDiv:
      case Instruction::URem:
        return guardDivision(*D);
      default:
        break;
      }
  }

  Value *size(Type *Ty) const {
    return ConstantInt::get(Type::getInt64Ty(F.getContext()),
                            DL.getTypeStoreSize(Ty).getFixedValue());
  }

  void guardAccess(Instruction &I, Value *Ptr, Value *Bytes, bool Write) {
    B.SetInsertPoint(&I);
    branch(I, inside(Ptr, Bytes, Write));
  }

  /// Whether [Ptr, Ptr + Bytes) lies in a region \p Ptr may point into
  /// (writable ones for a write).
  Value *inside(Value *Ptr, Value *Bytes, bool Write) {
    SmallVector<const Value *, 4> Objects;
    getUnderlyingObjects(Ptr, Objects, nullptr, 0);
    std::vector<const Region *> Named;
    for (const Value *O : Objects) {
      const Region *Found = nullptr;
      for (const Region &R : Regions)
        if (R.Base == O)
          Found = &R;
      if (!Found) {
        Named.clear();
        break;
      }
      Named.push_back(Found);
    }
    if (Named.empty())
      for (const Region &R : Regions)
        Named.push_back(&R);
    Value *P = B.CreatePtrToInt(Ptr, B.getInt64Ty());
    Value *Ok = B.getFalse();
    for (const Region *R : Named) {
      if (Write && !R->Writable)
        continue;
      Value *Off = B.CreateSub(P, B.CreatePtrToInt(R->Base, B.getInt64Ty()));
      Value *Limit = B.getInt64(R->Bytes);
      Value *In;
      if (auto *K = dyn_cast<ConstantInt>(Bytes))
        In = K->getZExtValue() > R->Bytes
                 ? static_cast<Value *>(B.getFalse())
                 : B.CreateICmpULE(Off, B.getInt64(R->Bytes - K->getZExtValue()));
      else
        In = B.CreateAnd(B.CreateICmpULE(Off, Limit),
                         B.CreateICmpULE(Bytes, B.CreateSub(Limit, Off)));
      Ok = B.CreateOr(Ok, In);
    }
    return Ok;
  }

  /// A zero divisor, and INT_MIN / -1, trap on most CPUs.
  void guardDivision(BinaryOperator &D) {
    B.SetInsertPoint(&D);
    Value *Divisor = D.getOperand(1);
    Value *Ok = B.CreateICmpNE(Divisor, Constant::getNullValue(Divisor->getType()));
    if (D.getOpcode() == Instruction::SDiv || D.getOpcode() == Instruction::SRem) {
      const unsigned Bits = Divisor->getType()->getScalarSizeInBits();
      Value *Overflow = B.CreateAnd(
          B.CreateICmpEQ(Divisor, Constant::getAllOnesValue(Divisor->getType())),
          B.CreateICmpEQ(D.getOperand(0),
                         ConstantInt::get(Divisor->getType(), APInt::getSignedMinValue(Bits))));
      Ok = B.CreateAnd(Ok, B.CreateNot(Overflow));
    }
    if (Ok->getType()->isVectorTy())
      Ok = B.CreateAndReduce(Ok);
    branch(D, Ok);
  }

  /// Continues at \p I if \p Ok, else at the fault block.
  void branch(Instruction &I, Value *Ok) {
    if (auto *K = dyn_cast<ConstantInt>(Ok); K && K->isOne())
      return;
    BasicBlock *Head = I.getParent();
    BasicBlock *Tail = Head->splitBasicBlock(&I, "checked");
    Head->getTerminator()->eraseFromParent();
    B.SetInsertPoint(Head);
    B.CreateCondBr(Ok, Tail, faultBlock(),
                   MDBuilder(F.getContext()).createBranchWeights(1 << 20, 1));
  }

  BasicBlock *faultBlock() {
    if (FaultBB)
      return FaultBB;
    FaultBB = BasicBlock::Create(F.getContext(), "fault", &F);
    IRBuilder<> FB(FaultBB);
    FB.CreateStore(FB.getInt8(1), Fault);
    if (F.getReturnType()->isVoidTy())
      FB.CreateRetVoid();
    else
      FB.CreateRet(Constant::getNullValue(F.getReturnType()));
    return FaultBB;
  }

  Function &F;
  const std::string &File;
  const DataLayout &DL;
  IRBuilder<> B;
  std::vector<Region> Regions;
  Value *Fault = nullptr;
  BasicBlock *FaultBB = nullptr;
};

} // namespace

Status makeEpilogueChecked(Module &M, const std::string &Function, const EpilogueSignature &Sig,
                           const EpilogueRegions &Regions, const std::string &File) {
  inlineAndPromote(M);
  llvm::Function *Entry = M.getFunction(Function);
  if (!Entry)
    return Status::internal(File + ": the epilogue's module lacks '" + Function + "'");
  // withFaultParameter erases the entry, which it may only once nothing
  // uses it.
  Status S = Entry->use_empty() ? Rewriter(*withFaultParameter(*Entry), Sig, Regions, File).run()
                                : entryInUse(*Entry, File);
  StripDebugInfo(M);
  return S;
}

} // namespace gatherjit
