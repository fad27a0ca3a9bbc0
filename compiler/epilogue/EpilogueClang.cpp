//===- compiler/epilogue/EpilogueClang.cpp - Epilogues through clang -----===//
//
// clang compiles the source (in whichever process runs this file: the
// helper, see EpilogueProcess.cpp), freestanding, for the kernel's target,
// at -O0 without optnone (the kernel's pipeline optimizes it after
// inlining). A checker beside clang's code generator enforces what an
// epilogue may be: a defined function of a known signature, calling only
// functions of its source and clang's builtins that become instructions,
// reading only constant global data, with no assembly. Its errors are
// clang diagnostics, so they carry a line and column like clang's own.
// Built only with clang's libraries (GATHERJIT_EPILOGUES).
//
//===----------------------------------------------------------------------===//

#include "compiler/epilogue/CheckedEpilogue.h"
#include "compiler/epilogue/Epilogue.h"

#include <clang/AST/ASTConsumer.h>
#include <clang/AST/ASTContext.h>
#include <clang/AST/RecursiveASTVisitor.h>
#include <clang/Basic/Builtins.h>
#include <clang/Basic/Version.h>
#include <clang/CodeGen/ModuleBuilder.h>
#include <clang/Frontend/CompilerInstance.h>
#include <clang/Frontend/CompilerInvocation.h>
#include <clang/Frontend/FrontendAction.h>
#include <clang/Frontend/MultiplexConsumer.h>
#include <clang/Lex/Lexer.h>
#include <llvm/Config/llvm-config.h>
#include <llvm/Passes/PassPlugin.h>

#include <llvm/Bitcode/BitcodeWriter.h>
#include <llvm/IR/Module.h>
#include <llvm/IR/Verifier.h>
#include <llvm/Support/MemoryBuffer.h>
#include <llvm/Support/VirtualFileSystem.h>
#include <llvm/Support/raw_ostream.h>

#include <algorithm>
#include <set>

#ifdef GATHERJIT_CLANG_WITHOUT_POLLY
/// Debian builds Polly into LLVM's static "extensions", and clang's code
/// generator and LTO name its plugin entry for the pass pipelines they run
/// themselves. Epilogues stop at clang's IR (the kernel's pipeline optimizes
/// it), so neither pipeline runs here: this empty entry stands in, and
/// Polly's library, its static initializers and pass registrations stay out
/// of the process (cmake/GatherjitLLVM.cmake drops it from the static link).
::llvm::PassPluginLibraryInfo getPollyPluginInfo() {
  return {LLVM_PLUGIN_API_VERSION, "gatherjit-no-polly", LLVM_VERSION_STRING,
          [](llvm::PassBuilder &) {}};
}
#endif

namespace gatherjit {

namespace {

using namespace clang;

/// Declarations every epilogue sees: the fixed-width integer types and
/// helpers for the 16-bit float formats, with no header.
constexpr const char *Prelude = R"(typedef __INT8_TYPE__ int8_t;
typedef __UINT8_TYPE__ uint8_t;
typedef __INT16_TYPE__ int16_t;
typedef __UINT16_TYPE__ uint16_t;
typedef __INT32_TYPE__ int32_t;
typedef __UINT32_TYPE__ uint32_t;
typedef __INT64_TYPE__ int64_t;
typedef __UINT64_TYPE__ uint64_t;
typedef __SIZE_TYPE__ size_t;
typedef _Float16 float16_t;
typedef __bf16 bfloat16_t;
#define bool _Bool
#define true 1
#define false 0
#define NULL ((void *)0)
#define INFINITY __builtin_inff()
#define NAN __builtin_nanf("")
static inline float gj_f32_from_bits(uint32_t b) { float f; __builtin_memcpy(&f, &b, 4); return f; }
static inline uint32_t gj_f32_bits(float f) { uint32_t b; __builtin_memcpy(&b, &f, 4); return b; }
static inline float gj_bf16_to_f32(bfloat16_t x) { return (float)x; }
static inline bfloat16_t gj_f32_to_bf16(float x) { return (bfloat16_t)x; }
static inline float gj_f16_to_f32(float16_t x) { return (float)x; }
static inline float16_t gj_f32_to_f16(float x) { return (float16_t)x; }
static inline float gj_load_f32(const void *p) { float f; __builtin_memcpy(&f, p, 4); return f; }
)";

/// Keeps clang's first error as one line: FILE:LINE:COL: error: TEXT.
class FirstError : public DiagnosticConsumer {
public:
  explicit FirstError(std::string File) : File(std::move(File)) {}
  void HandleDiagnostic(DiagnosticsEngine::Level Level, const Diagnostic &Info) override {
    DiagnosticConsumer::HandleDiagnostic(Level, Info);
    if (Level < DiagnosticsEngine::Error || !Message.empty())
      return;
    llvm::SmallString<256> Text;
    Info.FormatDiagnostic(Text);
    std::string Where = File;
    if (Info.getLocation().isValid() && Info.hasSourceManager()) {
      PresumedLoc P = Info.getSourceManager().getPresumedLoc(Info.getLocation());
      if (P.isValid())
        Where = std::string(P.getFilename()) + ":" + std::to_string(P.getLine()) + ":" +
                std::to_string(P.getColumn());
    }
    Message = Where + ": error: " + std::string(Text);
  }
  std::string File;
  std::string Message;
};

/// The tensor element type of a C type, if it is one.
std::optional<DataType> elementType(QualType T, const ASTContext &Ctx) {
  const auto *B = T.getCanonicalType()->getAs<BuiltinType>();
  if (!B)
    return std::nullopt;
  const bool Wide = Ctx.getTypeSize(T) == 64;
  switch (B->getKind()) {
  case BuiltinType::Float:
    return DataType::Float32;
  case BuiltinType::Double:
    return DataType::Float64;
  case BuiltinType::Float16:
    return DataType::Float16;
  case BuiltinType::BFloat16:
    return DataType::BFloat16;
  case BuiltinType::Bool:
    return DataType::Bool;
  case BuiltinType::Char_S:
  case BuiltinType::SChar:
    return DataType::Int8;
  case BuiltinType::Char_U:
  case BuiltinType::UChar:
    return DataType::UInt8;
  case BuiltinType::Short:
    return DataType::Int16;
  case BuiltinType::UShort:
    return DataType::UInt16;
  case BuiltinType::Int:
    return DataType::Int32;
  case BuiltinType::UInt:
    return DataType::UInt32;
  case BuiltinType::Long:
  case BuiltinType::LongLong:
    return Wide ? std::optional(DataType::Int64) : std::nullopt;
  case BuiltinType::ULong:
  case BuiltinType::ULongLong:
    return Wide ? std::optional(DataType::UInt64) : std::nullopt;
  default:
    return std::nullopt;
  }
}

/// Library functions whose builtins become instructions (or memcpy and
/// memset, which kernels call anyway), not calls into the C library.
bool inlineBuiltin(llvm::StringRef Name) {
  Name.consume_front("__builtin_");
  static const std::set<std::string, std::less<>> Allowed = {
      "fabs",     "fabsf",     "sqrt",    "sqrtf",  "fmin",      "fminf",      "fmax",  "fmaxf",
      "copysign", "copysignf", "floor",   "floorf", "ceil",      "ceilf",      "trunc", "truncf",
      "round",    "roundf",    "rint",    "rintf",  "nearbyint", "nearbyintf", "fma",   "fmaf",
      "memcpy",   "memset",    "memmove", "abs",    "labs",      "llabs"};
  return Allowed.count(Name) != 0;
}

/// Finds the epilogue's function, reads its signature and enforces the
/// rules, reporting breaches as errors at their source location.
class Checker : public ASTConsumer, public RecursiveASTVisitor<Checker> {
public:
  Checker(const Epilogue &E, EpilogueSignature &Sig, uint64_t &ParamBytes, bool &ParamSized)
      : E(E), Sig(Sig), ParamBytes(ParamBytes), ParamSized(ParamSized) {}

  void HandleTranslationUnit(ASTContext &C) override {
    Ctx = &C;
    Diags = &C.getDiagnostics();
    TraverseDecl(C.getTranslationUnitDecl());
    readSignature();
  }

  bool VisitVarDecl(VarDecl *V) {
    if (!V->hasGlobalStorage())
      return true;
    if (!V->getType().isConstQualified())
      error(V->getLocation(), "'" + V->getNameAsString() +
                                  "' is mutable global state, which an epilogue may not "
                                  "have; declare it const");
    else if (V->hasExternalStorage() && !V->getDefinition())
      error(V->getLocation(), "'" + V->getNameAsString() + "' is not defined in the epilogue");
    return true;
  }

  bool VisitDeclRefExpr(DeclRefExpr *R) {
    auto *F = dyn_cast<FunctionDecl>(R->getDecl());
    if (!F || F->isDefined())
      return true;
    const unsigned ID = F->getBuiltinID();
    if (ID == 0)
      error(R->getLocation(), "'" + F->getNameAsString() +
                                  "' is not defined in the epilogue; an epilogue may call "
                                  "only its own functions and clang's builtins");
    else if ((Ctx->BuiltinInfo.isLibFunction(ID) || Ctx->BuiltinInfo.isPredefinedLibFunction(ID)) &&
             !inlineBuiltin(Ctx->BuiltinInfo.getName(ID)))
      error(R->getLocation(), "'" + std::string(Ctx->BuiltinInfo.getName(ID)) +
                                  "' calls the C library, which an epilogue may not");
    return true;
  }

  bool VisitGCCAsmStmt(GCCAsmStmt *S) {
    error(S->getAsmLoc(), "an epilogue may not contain assembly");
    return true;
  }
  bool VisitFileScopeAsmDecl(FileScopeAsmDecl *D) {
    error(D->getAsmLoc(), "an epilogue may not contain assembly");
    return true;
  }

private:
  void error(SourceLocation Loc, const std::string &Message) {
    Diags->Report(Loc, Diags->getCustomDiagID(DiagnosticsEngine::Error, "%0")) << Message;
  }

  void readSignature() {
    const FunctionDecl *Def = nullptr, *Decl = nullptr;
    for (const clang::Decl *D : Ctx->getTranslationUnitDecl()->decls())
      if (const auto *F = dyn_cast<FunctionDecl>(D); F && F->getName() == E.Function) {
        Decl = F;
        if (F->isThisDeclarationADefinition())
          Def = F;
      }
    if (!Def) {
      error(Decl ? Decl->getLocation() : SourceLocation(),
            Decl ? "function '" + E.Function + "' is declared but not defined"
                 : "no function named '" + E.Function + "' in the epilogue");
      return;
    }
    const std::string Name = "'" + E.Function + "'";
    const std::string Shapes = Name +
                               " must be OUT f(IN x), OUT f(IN x, const P *params), "
                               "void f(const IN *row, OUT *out) or void f(const IN *row, OUT *out, "
                               "const P *params), with IN and OUT tensor element types";
    const QualType Ret = Def->getReturnType();
    const unsigned N = Def->getNumParams();
    auto Param = [&](unsigned I) { return Def->getParamDecl(I)->getType(); };
    auto Fail = [&](SourceLocation Loc, const std::string &Why) {
      error(Loc, Why + "; " + Shapes);
    };
    if (Def->isVariadic())
      return Fail(Def->getLocation(), Name + " is variadic");
    const bool Row = Ret->isVoidType();
    const unsigned Data = Row ? 2 : 1;
    if (N != Data && N != Data + 1)
      return Fail(Def->getLocation(), Name + " takes " + std::to_string(N) + " parameters");
    if (N == Data + 1) {
      const QualType P = Param(Data);
      if (!P->isPointerType() || !P->getPointeeType().isConstQualified())
        return Fail(Def->getParamDecl(Data)->getLocation(),
                    "its last parameter must be a pointer to const parameters");
      const QualType Pointee = P->getPointeeType();
      ParamSized = !Pointee->isIncompleteType();
      ParamBytes = ParamSized ? Ctx->getTypeSizeInChars(Pointee).getQuantity() : 0;
    }
    std::optional<DataType> In, Out;
    if (Row) {
      const QualType R = Param(0), W = Param(1);
      if (!R->isPointerType() || !R->getPointeeType().isConstQualified() ||
          !(In = elementType(R->getPointeeType(), *Ctx)))
        return Fail(Def->getParamDecl(0)->getLocation(),
                    "the row must be a pointer to const elements");
      if (!W->isPointerType() || W->getPointeeType().isConstQualified() ||
          !(Out = elementType(W->getPointeeType(), *Ctx)))
        return Fail(Def->getParamDecl(1)->getLocation(),
                    "the output row must be a pointer to writable elements");
    } else {
      if (!(Out = elementType(Ret, *Ctx)))
        return Fail(Def->getLocation(),
                    Name + " returns '" + Ret.getAsString() + "', not a tensor element type");
      if (!(In = elementType(Param(0), *Ctx)))
        return Fail(Def->getParamDecl(0)->getLocation(),
                    "its parameter is '" + Param(0).getAsString() + "', not a tensor element type");
    }
    Sig.Kind = Row ? EpilogueKind::Row : EpilogueKind::Element;
    Sig.In = *In;
    Sig.Out = *Out;
    Sig.HasParams = N == Data + 1;
  }

  const Epilogue &E;
  EpilogueSignature &Sig;
  uint64_t &ParamBytes;
  bool &ParamSized;
  ASTContext *Ctx = nullptr;
  DiagnosticsEngine *Diags = nullptr;
};

/// clang's code generator (the front end's half only: no optimization or
/// back end) with the checker beside it.
class CheckedCodeGen : public ASTFrontendAction {
public:
  CheckedCodeGen(llvm::LLVMContext &Ctx, const Epilogue &E, EpilogueSignature &Sig,
                 uint64_t &ParamBytes, bool &ParamSized)
      : Ctx(Ctx), E(E), Sig(Sig), ParamBytes(ParamBytes), ParamSized(ParamSized) {}

  /// The module, once the action ran.
  std::unique_ptr<llvm::Module> takeModule() { return std::move(Module); }

protected:
  std::unique_ptr<ASTConsumer> CreateASTConsumer(CompilerInstance &CI,
                                                 llvm::StringRef InFile) override {
    std::unique_ptr<CodeGenerator> Gen(CreateLLVMCodeGen(
        CI.getDiagnostics(), InFile, &CI.getVirtualFileSystem(), CI.getHeaderSearchOpts(),
        CI.getPreprocessorOpts(), CI.getCodeGenOpts(), Ctx));
    Generator = Gen.get();
    std::vector<std::unique_ptr<ASTConsumer>> Consumers;
    Consumers.push_back(std::make_unique<Checker>(E, Sig, ParamBytes, ParamSized));
    Consumers.push_back(std::move(Gen));
    return std::make_unique<MultiplexConsumer>(std::move(Consumers));
  }

  /// The generator goes with the consumers after this.
  void EndSourceFileAction() override {
    if (Generator)
      Module.reset(Generator->ReleaseModule());
  }

private:
  std::unique_ptr<llvm::Module> Module;
  llvm::LLVMContext &Ctx;
  const Epilogue &E;
  EpilogueSignature &Sig;
  uint64_t &ParamBytes;
  bool &ParamSized;
  CodeGenerator *Generator = nullptr;
};

/// Directives refused before clang sees the source: clang 19's #embed and
/// __has_embed crash its preprocessor (whatever the file), and
/// `#pragma clang __debug` crashes, hangs or overflows on purpose. A raw
/// lexer sees comments, line splices and digraphs as clang does. Returns
/// the error line, or "" for a source without them.
std::string refusedDirective(const std::string &Source, const std::string &File) {
  LangOptions Opts;
  Opts.C17 = Opts.GNUMode = Opts.Digraphs = Opts.LineComment = true;
  const SourceLocation Start = SourceLocation::getFromRawEncoding(1);
  Lexer L(Start, Opts, Source.data(), Source.data(), Source.data() + Source.size());
  auto Where = [&](const Token &T) {
    const size_t Offset = T.getLocation().getRawEncoding() - Start.getRawEncoding();
    const size_t Line = std::count(Source.begin(), Source.begin() + Offset, '\n') + 1;
    return File + ":" + std::to_string(Line) + ": error: ";
  };
  Token T;
  bool DirectiveName = false, Pragma = false;
  do {
    L.LexFromRawLexer(T);
    if (T.isAtStartOfLine())
      Pragma = false;
    const bool Hash = T.is(tok::hash) && T.isAtStartOfLine();
    if (T.is(tok::raw_identifier)) {
      // An identifier split by line splices is spelled without them.
      std::string Name = T.getRawIdentifier().str();
      if (T.needsCleaning())
        std::erase_if(Name, [](char C) { return C == '\\' || isspace(C); });
      if ((DirectiveName && Name == "embed") || Name == "__has_embed")
        return Where(T) + "an epilogue may not embed files ('" + Name + "')";
      if (Pragma && Name == "__debug")
        return Where(T) + "an epilogue may not use clang's debugging pragmas";
      Pragma = Pragma || (DirectiveName && Name == "pragma");
    }
    DirectiveName = Hash;
  } while (T.isNot(tok::eof));
  return "";
}

/// A file name safe inside a #line directive and one error line.
std::string displayName(const std::string &Name) {
  std::string Out;
  for (char C : Name.empty() ? std::string("epilogue.c") : Name.substr(0, 200))
    Out += (C == '"' || C == '\\' || static_cast<unsigned char>(C) < 0x20) ? '_' : C;
  return Out;
}

/// The -cc1 arguments that compile \p E for \p T (the source is \p File).
std::vector<std::string> clangArgs(const Epilogue &E, const EpilogueTarget &T,
                                   const std::string &File) {
  std::vector<std::string> Args = {"-triple", T.Triple};
  if (!T.Cpu.empty())
    Args.insert(Args.end(), {"-target-cpu", T.Cpu});
  llvm::SmallVector<llvm::StringRef, 64> Features;
  llvm::StringRef(T.Features).split(Features, ',', -1, false);
  for (llvm::StringRef F : Features)
    Args.insert(Args.end(), {"-target-feature", F.str()});
  Args.insert(Args.end(), epilogueFlags().begin(), epilogueFlags().end());
  if (E.Checked) // Refusals name their line.
    Args.push_back("-debug-info-kind=line-tables-only");
  Args.insert(Args.end(), {"-D", "GJ_ROW_IN=" + std::to_string(T.RowIn), "-D",
                           "GJ_ROW_OUT=" + std::to_string(T.RowOut), File});
  return Args;
}

/// What clang made of an epilogue: its module, the signature the checker
/// read, and the parameter bytes the function reads (if the checker could
/// size them).
struct ClangOutput {
  std::unique_ptr<llvm::LLVMContext> Ctx = std::make_unique<llvm::LLVMContext>();
  std::unique_ptr<llvm::Module> M;
  EpilogueSignature Sig;
  uint64_t ParamBytes = 0;
  bool ParamSized = false;
};

/// Runs clang and the checker on \p E, in memory: clang sees an empty file
/// system. InvalidArgument carries clang's first error.
Expected<ClangOutput> runClang(const Epilogue &E, const EpilogueTarget &T,
                               const std::string &File) {
  const std::vector<std::string> Args = clangArgs(E, T, File);
  std::vector<const char *> Argv;
  for (const std::string &A : Args)
    Argv.push_back(A.c_str());
  FirstError Errors(File);
  CompilerInstance CI;
  {
    DiagnosticsEngine ArgDiags(new DiagnosticIDs, new DiagnosticOptions, &Errors,
                               /*ShouldOwnClient=*/false);
    if (!CompilerInvocation::CreateFromArgs(CI.getInvocation(), Argv, ArgDiags))
      return Status::internal("epilogue: clang rejected gatherjit's flags: " + Errors.Message);
  }
  CI.getDiagnosticOpts().ShowCarets = false; // Nor "N errors generated." on stderr.
  // After the flags: the engine takes its warning options from them.
  CI.createDiagnostics(&Errors, /*ShouldOwnClient=*/false);
  // With an empty file system, an #include of any path is "file not found".
  CI.createFileManager(llvm::makeIntrusiveRefCnt<llvm::vfs::InMemoryFileSystem>());
  std::unique_ptr<llvm::MemoryBuffer> Buffer = llvm::MemoryBuffer::getMemBufferCopy(
      std::string(Prelude) + "#line 1 \"" + File + "\"\n" + E.Source, File);
  CI.getFrontendOpts().Inputs.clear();
  CI.getFrontendOpts().Inputs.emplace_back(Buffer->getMemBufferRef(), InputKind(Language::C));
  ClangOutput Out;
  CheckedCodeGen Action(*Out.Ctx, E, Out.Sig, Out.ParamBytes, Out.ParamSized);
  const bool Ran = CI.ExecuteAction(Action);
  if (!Errors.Message.empty())
    return Status::invalidArgument(Errors.Message);
  Out.M = Action.takeModule();
  if (!Ran || !Out.M || Out.Sig.Kind == EpilogueKind::None)
    return Status::internal(File + ": clang produced no module");
  return Out;
}

/// What the checker cannot see in the source: code clang generated
/// invalid, parameters that do not match the function, calls or reads the
/// code generator introduced outside the source, and element types whose
/// IR sizes are not the tensors'.
Status checkModule(const Epilogue &E, const ClangOutput &C, const std::string &File) {
  llvm::Module &M = *C.M;
  const EpilogueSignature &Sig = C.Sig;
  // clang 19 emits invalid casts for some conversions (bfloat16_t to
  // float16_t directly): refuse such a module here, not in the kernel.
  std::string Problem;
  llvm::raw_string_ostream OS(Problem);
  if (llvm::verifyModule(M, &OS)) {
    OS.flush();
    const std::string First = Problem.substr(0, Problem.find('\n'));
    return Status::unsupported(File +
                               ": error: clang generated invalid code for this "
                               "epilogue (" +
                               First + "); convert between 16-bit float types through float");
  }
  const std::string Where = File + ": error: '" + E.Function + "'";
  if (Sig.HasParams && E.Params.empty())
    return Status::invalidArgument(Where + " takes a parameter pointer but no parameters "
                                           "were given");
  if (!Sig.HasParams && !E.Params.empty())
    return Status::invalidArgument(Where + " takes no parameter pointer but " +
                                   std::to_string(E.Params.size()) +
                                   " bytes of parameters were given");
  if (Sig.HasParams && C.ParamSized && E.Params.size() < C.ParamBytes)
    return Status::invalidArgument(Where + " reads " + std::to_string(C.ParamBytes) +
                                   " bytes of parameters but " + std::to_string(E.Params.size()) +
                                   " were given");
  for (llvm::Function &F : M)
    if (F.isDeclaration() && !F.isIntrinsic())
      return Status::invalidArgument(File + ": error: the epilogue calls '" + F.getName().str() +
                                     "', which it does not define");
  for (llvm::GlobalVariable &G : M.globals())
    if (G.isDeclaration())
      return Status::invalidArgument(File + ": error: the epilogue reads '" + G.getName().str() +
                                     "', which it does not define");
  // The kernels load and store the element types as the signature's IR
  // types: their sizes must be the tensors'.
  if (Sig.Kind == EpilogueKind::Element) {
    llvm::Function *F = M.getFunction(E.Function);
    const llvm::DataLayout &DL = M.getDataLayout();
    auto Bytes = [&](llvm::Type *Ty) {
      return Ty->isIntegerTy(1) ? 1 : DL.getTypeStoreSize(Ty).getFixedValue();
    };
    if (!F || F->arg_size() < 1 ||
        Bytes(F->getFunctionType()->getParamType(0)) != dataTypeSize(Sig.In) ||
        Bytes(F->getReturnType()) != dataTypeSize(Sig.Out))
      return Status::unsupported(Where + "'s signature lowers to IR gatherjit cannot call");
  }
  return Status::ok();
}

} // namespace

Expected<std::shared_ptr<const EpilogueCode>> compileEpilogueHere(const Epilogue &E,
                                                                  const EpilogueTarget &T) {
  const std::string File = displayName(E.FileName);
  if (E.Function.empty())
    return Status::invalidArgument(File + ": error: no epilogue function named");
  if (E.Source.find('\0') != std::string::npos)
    return Status::invalidArgument(File + ": error: the source contains a NUL byte");
  if (std::string Refused = refusedDirective(E.Source, File); !Refused.empty())
    return Status::invalidArgument(Refused);
  Expected<ClangOutput> C = runClang(E, T, File);
  if (!C)
    return C.status();
  if (Status S = checkModule(E, *C, File); !S)
    return S;
  EpilogueSignature Sig = C->Sig;
  if (E.Checked) {
    const EpilogueRegions Regions = {T.RowIn * dataTypeSize(Sig.In),
                                     T.RowOut * dataTypeSize(Sig.Out), E.Params.size()};
    if (Status S = makeEpilogueChecked(*C->M, E.Function, Sig, Regions, File); !S)
      return S;
    Sig.Checked = true;
  }
  auto Code = std::make_shared<EpilogueCode>();
  Sig.Key = epilogueKey(E, T);
  Code->Signature = Sig;
  Code->Function = E.Function;
  Code->Params = E.Params;
  llvm::raw_string_ostream OS(Code->Bitcode);
  llvm::WriteBitcodeToFile(*C->M, OS);
  OS.flush();
  return std::shared_ptr<const EpilogueCode>(std::move(Code));
}

} // namespace gatherjit
