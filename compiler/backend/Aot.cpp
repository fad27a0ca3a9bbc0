//===- compiler/backend/Aot.cpp - Kernels compiled ahead of time ---------===//
//
// The same stages as the JIT, with every kernel emitted into one module:
//   ValidDesc -canonicalize-> KernelSpec -emit-> Module -optimize->
//   -codegen(target)-> object file, plus a C header declaring the ABI.
//
//===----------------------------------------------------------------------===//

#include "gatherjit/Aot.h"

#include "compiler/backend/Target.h"
#include "compiler/pipeline/Pipeline.h"

#include <llvm/Config/llvm-config.h>
#include <llvm/Target/TargetMachine.h>

#include <cctype>
#include <cstring>
#include <set>
#include <sstream>

namespace gatherjit {

bool isCIdentifier(const std::string &Name) {
  if (Name.empty() || std::isdigit(static_cast<unsigned char>(Name[0])))
    return false;
  for (char C : Name)
    if (!std::isalnum(static_cast<unsigned char>(C)) && C != '_')
      return false;
  return true;
}

std::string reservedCName(const std::string &Name) {
  static const std::set<std::string, std::less<>> Keywords = {
      // C23
      "alignas", "alignof", "auto", "bool", "break", "case", "char", "const", "constexpr",
      "continue", "default", "do", "double", "else", "enum", "extern", "false", "float", "for",
      "goto", "if", "inline", "int", "long", "nullptr", "register", "restrict", "return", "short",
      "signed", "sizeof", "static", "static_assert", "struct", "switch", "thread_local", "true",
      "typedef", "typeof", "typeof_unqual", "union", "unsigned", "void", "volatile", "while", "asm",
      // C++ (the header is included from C++ too)
      "and", "and_eq", "bitand", "bitor", "catch", "char8_t", "char16_t", "char32_t", "class",
      "co_await", "co_return", "co_yield", "compl", "concept", "consteval", "constinit",
      "const_cast", "decltype", "delete", "dynamic_cast", "explicit", "export", "friend", "mutable",
      "namespace", "new", "noexcept", "not", "not_eq", "operator", "or", "or_eq", "private",
      "protected", "public", "reinterpret_cast", "requires", "static_cast", "template", "this",
      "throw", "try", "typeid", "typename", "using", "virtual", "wchar_t", "xor", "xor_eq"};
  // External names of the C library a kernel's symbol would replace for
  // the whole program (beyond the prefixes below), and main.
  static const std::set<std::string, std::less<>> Library = {
      "abort",  "abs",      "acos",    "asin",    "atan",     "atan2",   "atexit",   "atof",
      "atoi",   "atol",     "bsearch", "calloc",  "ceil",     "clock",   "cos",      "cosh",
      "div",    "errno",    "exit",    "exp",     "fabs",     "fclose",  "feof",     "ferror",
      "fflush", "fgetc",    "fgets",   "floor",   "fmod",     "fopen",   "fprintf",  "fputc",
      "fputs",  "fread",    "free",    "freopen", "frexp",    "fscanf",  "fseek",    "ftell",
      "fwrite", "getc",     "getchar", "getenv",  "gets",     "labs",    "ldexp",    "ldiv",
      "log",    "log10",    "longjmp", "main",    "malloc",   "modf",    "perror",   "pow",
      "printf", "putc",     "putchar", "puts",    "qsort",    "raise",   "rand",     "realloc",
      "remove", "rename",   "rewind",  "scanf",   "setbuf",   "setjmp",  "signal",   "sin",
      "sinh",   "snprintf", "sprintf", "sqrt",    "srand",    "sscanf",  "system",   "tan",
      "tanh",   "time",     "tmpfile", "ungetc",  "vfprintf", "vprintf", "vsprintf", "read",
      "write",  "open",     "close"};
  if (Keywords.count(Name))
    return "a C or C++ keyword";
  if (Library.count(Name))
    return "a C library name (the kernel's symbol would replace it in the whole program)";
  auto Lower = [&](size_t I) {
    return I < Name.size() && std::islower(static_cast<unsigned char>(Name[I]));
  };
  if (Name.rfind("__", 0) == 0 ||
      (Name.size() > 1 && Name[0] == '_' && std::isupper(static_cast<unsigned char>(Name[1]))))
    return "reserved to the implementation (it begins with __ or _ and a capital)";
  for (const char *Prefix : {"str", "mem", "wcs", "is", "to"})
    if (Name.rfind(Prefix, 0) == 0 && Lower(std::strlen(Prefix)))
      return std::string("reserved by the C standard library (names beginning with ") + Prefix +
             " and a lowercase letter)";
  if (Name.rfind("gj_", 0) == 0)
    return "reserved by gatherjit's C API (names beginning with gj_)";
  return "";
}

namespace {

/// "kernels.h" -> "GATHERJIT_KERNELS_H".
std::string includeGuard(const std::string &HeaderName) {
  std::string Base = HeaderName.substr(HeaderName.find_last_of('/') + 1);
  std::string Guard = "GATHERJIT_";
  for (char C : Base)
    Guard += std::isalnum(static_cast<unsigned char>(C))
                 ? static_cast<char>(std::toupper(static_cast<unsigned char>(C)))
                 : '_';
  return Guard;
}

/// A descriptor line safe inside a C comment.
std::string commentSafe(std::string Text) {
  for (size_t P = Text.find("*/"); P != std::string::npos; P = Text.find("*/"))
    Text.replace(P, 2, "* /");
  return Text;
}

uint64_t bufferBytes(const TensorDesc &T) { return requiredElements(T) * T.elementBytes(); }

/// A kernel's comment in a header: its name and descriptor, and where its
/// output is empty, that it reads no index (nor checks one).
std::string kernelComment(const AotKernel &K) {
  return "\n/* " + K.Name + ": " + commentSafe(K.Desc.describe()) +
         (K.Desc.outputElements() == 0 ? "; its output is empty: it reads no index" : "") + " */\n";
}

std::string header(const std::vector<AotKernel> &Kernels, const AotResult &R, OptLevel Level,
                   const std::string &HeaderName) {
  const std::string Guard = includeGuard(HeaderName);
  std::ostringstream H;
  H << "/* Generated by gatherjit (LLVM " LLVM_VERSION_STRING ") for " << R.Triple << ", CPU "
    << (R.Cpu.empty() ? "generic" : R.Cpu) << ", " << optLevelName(Level) << ". Do not edit.\n"
    << " *\n"
    << " * Each kernel returns 0 on success; under Check, 1 + the row-major\n"
    << " * position in the indices tensor of the first out-of-range index among\n"
    << " * those its output reads (an empty output reads none); -1 when\n"
    << " * a checked epilogue made an access outside its regions. NAME_range\n"
    << " * does the same over rows [begin, end) of the outermost loop, for callers\n"
    << " * that split the work; NAME_rows is its row count. Buffers hold at least\n"
    << " * NAME_INPUT_BYTES, NAME_INDICES_BYTES and NAME_OUTPUT_BYTES bytes. */\n"
    << "#ifndef " << Guard << "\n#define " << Guard << "\n\n"
    << "#include <stdint.h>\n\n"
    << "#ifdef __cplusplus\nextern \"C\" {\n#endif\n";
  for (const AotKernel &K : Kernels) {
    const std::string &N = K.Name;
    H << kernelComment(K) << "int64_t " << N
      << "(const void *input, const void *indices, void *output);\n"
      << "int64_t " << N << "_range(const void *input, const void *indices, void *output,\n"
      << "    int64_t begin, int64_t end);\n"
      << "extern const int64_t " << N << "_rows;\n"
      << "#define " << N << "_INPUT_BYTES " << bufferBytes(K.Desc.Input) << "u\n"
      << "#define " << N << "_INDICES_BYTES " << bufferBytes(K.Desc.Indices) << "u\n"
      << "#define " << N << "_OUTPUT_BYTES " << bufferBytes(K.Desc.Output) << "u\n";
  }
  H << "\n#ifdef __cplusplus\n}\n#endif\n\n#endif /* " << Guard << " */\n";
  return H.str();
}

/// The header of a PTX module: each kernel's entry, parameters and launch.
std::string gpuHeader(const std::vector<AotKernel> &Kernels,
                      const std::vector<PipelineKernel> &Specs, const TargetFacts &Facts,
                      const AotResult &R, OptLevel Level, const std::string &HeaderName) {
  const std::string Guard = includeGuard(HeaderName);
  std::ostringstream H;
  H << "/* Generated by gatherjit (LLVM " LLVM_VERSION_STRING ") for " << R.Triple << ", " << R.Cpu
    << ", " << optLevelName(Level) << ". Do not edit.\n"
    << " *\n"
    << " * The PTX module beside this header holds one entry per kernel, named\n"
    << " * NAME_ENTRY, taking NAME_PARAMS: four device pointers (input, indices,\n"
    << " * output, and status, one uint64_t). Launch it on a 1-D grid of NAME_GRID\n"
    << " * blocks of NAME_BLOCK threads and no dynamic shared memory (a kernel\n"
    << " * that stages its input there declares its own). Set *status to\n"
    << " * UINT64_MAX before the launch: after it, any other value K says that an\n"
    << " * index is out of range (Check; the output is then incomplete): the first\n"
    << " * in the output's row-major order, at output element K / NAME_TUPLE\n"
    << " * (output row, for a kernel with a row epilogue: its rows are its\n"
    << " * elements), component K % NAME_TUPLE of its index tuple (GatherND; 1\n"
    << " * otherwise); where no index is bad, K >= 2^63 says that a checked\n"
    << " * epilogue faulted, at output element (or row) K - 2^63.\n"
    << " * Buffers hold at least NAME_INPUT_BYTES, NAME_INDICES_BYTES and\n"
    << " * NAME_OUTPUT_BYTES bytes, each aligned to its element, and do not\n"
    << " * overlap (the operands are read through the read-only cache). */\n"
    << "#ifndef " << Guard << "\n#define " << Guard << "\n";
  for (size_t I = 0; I < Kernels.size(); ++I) {
    const AotKernel &K = Kernels[I];
    const std::string &N = K.Name;
    const KernelPlan P = planKernel(Specs[I].Spec, Facts);
    H << kernelComment(K) << "#define " << N << "_ENTRY \"" << N << "\"\n"
      << "#define " << N << "_PARAMS \"input,indices,output,status\"\n"
      << "#define " << N << "_GRID " << P.Blocks << "u\n"
      << "#define " << N << "_BLOCK " << P.ThreadsPerBlock << "u\n"
      << "#define " << N << "_TUPLE " << Specs[I].Spec.TupleSize << "u\n"
      << "#define " << N << "_INPUT_BYTES " << bufferBytes(K.Desc.Input) << "u\n"
      << "#define " << N << "_INDICES_BYTES " << bufferBytes(K.Desc.Indices) << "u\n"
      << "#define " << N << "_OUTPUT_BYTES " << bufferBytes(K.Desc.Output) << "u\n";
  }
  H << "\n#endif /* " << Guard << " */\n";
  return H.str();
}

} // namespace

Expected<AotResult> compileAot(const std::vector<AotKernel> &Kernels, const AotTarget &For,
                               OptLevel Level, const std::string &HeaderName) {
  if (Kernels.empty())
    return Status::invalidArgument("no kernel to compile");
  // Every kernel defines NAME, NAME_range and NAME_rows: all must be
  // distinct C identifiers.
  std::set<std::string> Symbols;
  for (const AotKernel &K : Kernels) {
    if (!isCIdentifier(K.Name))
      return Status::invalidArgument("kernel name '" + K.Name +
                                     "' is not a C identifier (letters, digits "
                                     "and '_', not starting with a digit)");
    if (std::string Why = reservedCName(K.Name); !Why.empty())
      return Status::invalidArgument("kernel name '" + K.Name + "' is " + Why + "; pick another");
    for (const std::string &Sym : {K.Name, K.Name + "_range", K.Name + "_rows"})
      if (!Symbols.insert(Sym).second)
        return Status::invalidArgument("kernel name '" + K.Name + "' defines symbol '" + Sym +
                                       "', which another kernel also defines");
  }
  Expected<std::unique_ptr<CodeGenerator>> Gen = createCodeGenerator(For, Level);
  if (!Gen)
    return Gen.status();
  const llvm::TargetMachine &TM = (*Gen)->targetMachine();
  // Epilogues are compiled for the object's target; their kernels' header
  // entries describe the fused tensors.
  std::vector<AotKernel> Fused = Kernels;
  std::vector<PipelineKernel> Specs;
  for (AotKernel &K : Fused) {
    Expected<PipelineKernel> Spec = fusedKernel(K.Desc, K.Fused, K.RowOut, TM, K.Name);
    if (!Spec)
      return Spec.status();
    Specs.push_back(Spec.take());
  }
  std::unique_ptr<Backend> Target = backendFor(**Gen);
  Expected<PipelineResult> Object = runPipeline(Specs, *Target, Level);
  if (!Object)
    return Object.status();
  AotResult R;
  R.Object = std::move(Object->Bytes);
  R.Triple = TM.getTargetTriple().str();
  R.Cpu = TM.getTargetCPU().str();
  R.Header = Target->facts().Gpu ? gpuHeader(Fused, Specs, Target->facts(), R, Level, HeaderName)
                                 : header(Fused, R, Level, HeaderName);
  return R;
}

} // namespace gatherjit
