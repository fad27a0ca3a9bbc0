//===- compiler/epilogue/Epilogue.cpp - Users' C epilogues ---------------===//
//
// What every build has of epilogues: their keys, and linking compiled
// epilogues into kernels and calling them. The compile itself, through
// clang's libraries, is compiler/epilogue/EpilogueClang.cpp.
//
//===----------------------------------------------------------------------===//

#include "compiler/epilogue/Epilogue.h"

#include <llvm/Bitcode/BitcodeReader.h>
#include <llvm/Bitcode/BitcodeWriter.h>
#include <llvm/IR/Constants.h>
#include <llvm/IR/GlobalVariable.h>
#include <llvm/IR/IRBuilder.h>
#include <llvm/IR/Module.h>
#include <llvm/IR/Verifier.h>
#include <llvm/Linker/Linker.h>
#include <llvm/Support/MemoryBuffer.h>
#include <llvm/Support/VirtualFileSystem.h>
#include <llvm/Support/raw_ostream.h>
#include <llvm/Support/xxhash.h>
#include <llvm/Target/TargetMachine.h>

#ifdef GATHERJIT_HAVE_CLANG
#include <clang/Basic/Version.h>
#endif

namespace gatherjit {

std::span<const char *const> epilogueFlags() {
  // clang's -cc1 spelling, in which math functions do not set errno.
  static constexpr const char *Flags[] = {"-x",
                                          "c",
                                          "-std=gnu17",
                                          "-O0",
                                          "-disable-O0-optnone",
                                          "-ffreestanding",
                                          "-nostdsysteminc",
                                          "-nobuiltininc",
                                          "-ffp-contract=on",
                                          "-Werror=return-type",
                                          "-Werror=implicit-int"};
  return Flags;
}

EpilogueTarget epilogueTarget(const llvm::TargetMachine &TM, uint64_t RowIn, uint64_t RowOut) {
  return {TM.getTargetTriple().str(), TM.getTargetCPU().str(), TM.getTargetFeatureString().str(),
          RowIn, RowOut};
}

uint64_t epilogueKey(const Epilogue &E, const EpilogueTarget &T) {
  std::string Text = E.Checked ? "gatherjit epilogue 1 checked\n" : "gatherjit epilogue 1\n";
#ifdef GATHERJIT_HAVE_CLANG
  Text += clang::getClangFullVersion() + "\n";
#endif
  for (const char *F : epilogueFlags())
    Text += std::string(F) + " ";
  Text += "\n" + T.Triple + "\n" + T.Cpu + "\n" + T.Features + "\n" + std::to_string(T.RowIn) +
          " " + std::to_string(T.RowOut) + "\n" + E.FileName + "\n" + E.Function + "\n" +
          std::to_string(E.Source.size()) + "\n" + E.Source + "\n";
  Text.append(reinterpret_cast<const char *>(E.Params.data()), E.Params.size());
  return llvm::xxh3_64bits(Text);
}

#ifdef GATHERJIT_HAVE_CLANG
bool epiloguesSupported() { return true; }
#else
// Without clang's libraries (GATHERJIT_EPILOGUES=OFF); with them,
// compileEpilogueHere is in compiler/epilogue/EpilogueClang.cpp.
bool epiloguesSupported() { return false; }

Expected<std::shared_ptr<const EpilogueCode>> compileEpilogueHere(const Epilogue &,
                                                                  const EpilogueTarget &) {
  return Status::unsupported("this gatherjit was built without clang's libraries "
                             "(GATHERJIT_EPILOGUES=OFF): epilogues are not available");
}
#endif

Expected<llvm::Function *> linkEpilogue(llvm::Module &M, const EpilogueCode &Code,
                                        const std::string &Name, llvm::Value *&Params) {
  llvm::Expected<std::unique_ptr<llvm::Module>> Parsed =
      llvm::parseBitcodeFile(llvm::MemoryBufferRef(Code.Bitcode, "epilogue"), M.getContext());
  if (!Parsed)
    return Status::internal("epilogue bitcode: " + llvm::toString(Parsed.takeError()));
  std::unique_ptr<llvm::Module> EM = std::move(*Parsed);
  llvm::Function *Entry = EM->getFunction(Code.Function);
  if (!Entry)
    return Status::internal("epilogue bitcode lacks '" + Code.Function + "'");
  Entry->setName(Name);
  // Everything of the source is private to this kernel (two kernels of one
  // object may fuse the same epilogue) and inlined where it is called. The
  // entry stays external until linked: the linker drops unreferenced
  // internal functions.
  for (llvm::Function &F : *EM) {
    if (F.isDeclaration())
      continue;
    F.setLinkage(&F == Entry ? llvm::GlobalValue::ExternalLinkage
                             : llvm::GlobalValue::InternalLinkage);
    F.removeFnAttr(llvm::Attribute::NoInline);
    F.removeFnAttr(llvm::Attribute::OptimizeNone);
    F.addFnAttr(llvm::Attribute::AlwaysInline);
  }
  for (llvm::GlobalVariable &G : EM->globals())
    if (!G.isDeclaration())
      G.setLinkage(llvm::GlobalValue::InternalLinkage);
  EM->setTargetTriple(M.getTargetTriple());
  EM->setDataLayout(M.getDataLayout());
  if (llvm::Linker::linkModules(M, std::move(EM)))
    return Status::internal("linking the epilogue into " + Name + " failed");
  llvm::Function *Linked = M.getFunction(Name);
  Linked->setLinkage(llvm::GlobalValue::InternalLinkage);
  Params = nullptr;
  if (Code.Signature.HasParams) {
    llvm::Constant *Bytes = llvm::ConstantDataArray::get(
        M.getContext(), llvm::ArrayRef<uint8_t>(Code.Params.data(), Code.Params.size()));
    auto *G = new llvm::GlobalVariable(M, Bytes->getType(), /*isConstant=*/true,
                                       llvm::GlobalValue::PrivateLinkage, Bytes, Name + ".params");
    G->setAlignment(llvm::Align(16));
    Params = G;
  }
  return Linked;
}

llvm::Value *emitEpilogueCall(llvm::IRBuilderBase &B, const EpilogueSignature &Sig,
                              llvm::Function *Fn, llvm::Value *Params, llvm::Value *In,
                              llvm::Value *Out) {
  llvm::SmallVector<llvm::Value *, 4> Args;
  llvm::FunctionType *Ty = Fn->getFunctionType();
  if (Sig.Kind == EpilogueKind::Row) {
    Args = {In, Out};
  } else {
    // A BOOL element is a byte in memory and an i1 in C's signature.
    llvm::Type *ArgTy = Ty->getParamType(0);
    llvm::Type *LoadTy = ArgTy->isIntegerTy(1) ? B.getInt8Ty() : ArgTy;
    llvm::Value *X = B.CreateAlignedLoad(LoadTy, In, llvm::Align(1), "epilogue.in");
    if (ArgTy->isIntegerTy(1))
      X = B.CreateICmpNE(X, B.getInt8(0));
    Args = {X};
  }
  if (Sig.HasParams)
    Args.push_back(Params);
  llvm::Value *Fault = nullptr;
  if (Sig.Checked) {
    // A byte of the caller's frame, cleared before each call (promoted to a
    // register once the epilogue is inlined).
    llvm::BasicBlock &Entry = B.GetInsertBlock()->getParent()->getEntryBlock();
    llvm::IRBuilder<> AtEntry(&Entry, Entry.getFirstInsertionPt());
    Fault = AtEntry.CreateAlloca(B.getInt8Ty(), nullptr, "epilogue.fault");
    B.CreateStore(B.getInt8(0), Fault);
    Args.push_back(Fault);
  }
  llvm::Value *R = B.CreateCall(Fn, Args);
  if (Sig.Kind != EpilogueKind::Row) {
    if (R->getType()->isIntegerTy(1))
      R = B.CreateZExt(R, B.getInt8Ty());
    B.CreateAlignedStore(R, Out, llvm::Align(1));
  }
  return Fault ? B.CreateICmpNE(B.CreateLoad(B.getInt8Ty(), Fault), B.getInt8(0), "faulted")
               : nullptr;
}

} // namespace gatherjit
