//===- compiler/backend/Target.cpp - Target machines and code generation -===//

#include "compiler/backend/Target.h"

#include <llvm/ADT/StringExtras.h>
#include <llvm/ADT/StringMap.h>
#include <llvm/Config/llvm-config.h>
#include <llvm/ExecutionEngine/Orc/JITTargetMachineBuilder.h>
#include <llvm/IR/Instructions.h>
#include <llvm/IR/LLVMContext.h>
#include <llvm/IR/LegacyPassManager.h>
#include <llvm/IR/Module.h>
#include <llvm/MC/MCSubtargetInfo.h>
#include <llvm/MC/TargetRegistry.h>
#include <llvm/Support/TargetSelect.h>
#include <llvm/Support/raw_ostream.h>
#include <llvm/Target/TargetMachine.h>
#include <llvm/TargetParser/Host.h>
#include <llvm/TargetParser/SubtargetFeature.h>

#include <climits>
#include <mutex>
#include <new>
#include <pthread.h>
#include <system_error>
#include <thread>
#include <unistd.h>
#include <vector>

namespace gatherjit {

Status toStatus(llvm::Error Err, const std::string &Context) {
  return Status::internal(Context + ": " + llvm::toString(std::move(Err)));
}

void initializeTargets() {
  static std::once_flag Once;
  std::call_once(Once, [] {
    // The targets gatherjit generates code for, and no others: each one
    // registered costs start-up time, and a static build links only these.
    LLVMInitializeX86TargetInfo();
    LLVMInitializeX86Target();
    LLVMInitializeX86TargetMC();
    LLVMInitializeX86AsmPrinter();
    LLVMInitializeAArch64TargetInfo();
    LLVMInitializeAArch64Target();
    LLVMInitializeAArch64TargetMC();
    LLVMInitializeAArch64AsmPrinter();
  });
}

/// NVPTX (PTX text for the CUDA driver), registered only when asked for.
static void initializeGpuTargets() {
  static std::once_flag Once;
  std::call_once(Once, [] {
    LLVMInitializeNVPTXTargetInfo();
    LLVMInitializeNVPTXTarget();
    LLVMInitializeNVPTXTargetMC();
    LLVMInitializeNVPTXAsmPrinter();
  });
}

/// The number NN of an architecture "sm_NN" (-1 for other names, and for
/// the arch-specific "sm_NNa").
static int smNumber(llvm::StringRef Arch) {
  int N = -1;
  if (!Arch.consume_front("sm_") || Arch.getAsInteger(10, N))
    return -1;
  return N;
}

/// The number NN of "sm_NN" or of the arch-specific "sm_NNa" (-1 for other
/// names).
static int smNumberOf(llvm::StringRef Arch) {
  Arch.consume_back("a");
  return smNumber(Arch);
}

/// The sm_NN names this LLVM's NVPTX target generates PTX for.
static std::vector<std::string> nvptxArchs() {
  initializeGpuTargets();
  std::string Err;
  const llvm::Target *T = llvm::TargetRegistry::lookupTarget("nvptx64-nvidia-cuda", Err);
  std::vector<std::string> Names;
  if (!T)
    return Names;
  std::unique_ptr<llvm::MCSubtargetInfo> STI(
      T->createMCSubtargetInfo("nvptx64-nvidia-cuda", "", ""));
  if (STI)
    for (const llvm::SubtargetSubTypeKV &P : STI->getAllProcessorDescriptions())
      if (smNumber(P.Key) >= 0)
        Names.push_back(P.Key);
  return Names;
}

/// The newest sm_NN this LLVM generates PTX for with NN at most \p Limit;
/// empty if none.
static std::string newestArchUpTo(int Limit) {
  std::string Best;
  for (const std::string &Arch : nvptxArchs())
    if (const int N = smNumber(Arch); N <= Limit && N > smNumber(Best))
      Best = Arch;
  return Best;
}

std::string ptxArchFor(const std::string &DeviceArch) {
  const std::string Arch = newestArchUpTo(smNumber(DeviceArch));
  return Arch.empty() ? DeviceArch : Arch; // Below every one: its own name, refused later.
}

/// The PTX ISA version that \p Cpu (sm_NN) needs: the lowest the
/// architecture is defined in (sm_89 and sm_90: 7.8), so the oldest driver
/// that knows the architecture loads it.
static std::string ptxVersionFeature(const std::string &Cpu) {
  const int Sm = std::atoi(Cpu.c_str() + (Cpu.rfind("sm_", 0) == 0 ? 3 : 0));
  return Sm >= 89   ? "+ptx78"
         : Sm >= 87 ? "+ptx74"
         : Sm >= 86 ? "+ptx71"
         : Sm >= 80 ? "+ptx70"
                    : "+ptx63";
}

static llvm::CodeGenOptLevel codeGenLevel(OptLevel Level) {
  switch (Level) {
  case OptLevel::O0:
    return llvm::CodeGenOptLevel::None;
  case OptLevel::O1:
    // Fast instruction selection and register allocation: about a fifth of
    // the optimizing code generator's time on a small kernel.
    return llvm::CodeGenOptLevel::None;
  case OptLevel::O2:
    return llvm::CodeGenOptLevel::Default;
  case OptLevel::O3:
    return llvm::CodeGenOptLevel::Aggressive;
  }
  llvm_unreachable("covered switch");
}

/// \p Full, the features asked for \p Cpu, written as what differs from
/// the CPU's own: a string a subtarget parses quickly. The host's list
/// names every feature LLVM knows, most of them off; each entry of it
/// walks the feature table (a negation clears what implies it), and a
/// target machine and each of its subtargets parse their string again
/// (x86's code generator twice). Parsing the short one instead took 12% off
/// a process's first compile, and most of a target machine's making.
/// Additions come first, then removals. Each feature \p Full names (the
/// last entry for it wins) must come out as named, all the instruction set
/// among them: empty where it would not.
static std::string shortFeatures(const llvm::Target &T, const llvm::Triple &Triple,
                                 llvm::StringRef Cpu, const llvm::SubtargetFeatures &Full) {
  std::unique_ptr<llvm::MCSubtargetInfo> Own(T.createMCSubtargetInfo(Triple.str(), Cpu, ""));
  if (!Own)
    return {};
  llvm::StringMap<bool> Named;
  for (const std::string &Entry : Full.getFeatures())
    if (Entry.size() > 1 && (Entry[0] == '+' || Entry[0] == '-'))
      Named[llvm::StringRef(Entry).drop_front()] = Entry[0] == '+';
  llvm::SubtargetFeatures Added, Removed;
  for (const llvm::SubtargetFeatureKV &KV : Own->getAllProcessorFeatures()) {
    const auto It = Named.find(KV.Key);
    if (It != Named.end() && It->second != Own->getFeatureBits().test(KV.Value))
      (It->second ? Added : Removed).AddFeature(KV.Key, It->second);
  }
  Added.addFeaturesVector(Removed.getFeatures());
  std::string Short = Added.getString();
  std::unique_ptr<llvm::MCSubtargetInfo> Got(T.createMCSubtargetInfo(Triple.str(), Cpu, Short));
  if (!Got)
    return {};
  for (const llvm::SubtargetFeatureKV &KV : Got->getAllProcessorFeatures()) {
    const auto It = Named.find(KV.Key);
    if (It != Named.end() && It->second != Got->getFeatureBits().test(KV.Value))
      return {};
  }
  return Short;
}

/// \p Features (a user's "+a,-b") names only features \p T has: LLVM itself
/// would print a warning and ignore the rest.
static Status checkFeatures(const llvm::Target *T, const llvm::Triple &Triple,
                            llvm::StringRef Features) {
  if (Features.empty() || !T)
    return Status::ok();
  std::unique_ptr<llvm::MCSubtargetInfo> STI(T->createMCSubtargetInfo(Triple.str(), "", ""));
  if (!STI)
    return Status::ok();
  for (llvm::StringRef Part : llvm::split(Features, ',')) {
    const llvm::StringRef Name = llvm::SubtargetFeatures::StripFlag(Part);
    if (!Part.empty() &&
        llvm::none_of(STI->getAllProcessorFeatures(),
                      [&](const llvm::SubtargetFeatureKV &KV) { return Name == KV.Key; }))
      return Status::invalidArgument("unknown target feature '" + Part.str() + "' for target '" +
                                     Triple.str() + "'");
  }
  return Status::ok();
}

/// The kernels' parameters and offsets are 64-bit and their sizes are
/// checked against a 64-bit address space: a target with narrower pointers
/// (i686, x32, arm64_32, 32-bit NVPTX) would truncate them.
static Status checkPointerWidth(const llvm::TargetMachine &TM, const std::string &Triple) {
  const unsigned Bits = TM.createDataLayout().getPointerSizeInBits();
  if (Bits == 64)
    return Status::ok();
  return Status::invalidArgument("cannot generate code for target '" + Triple +
                                 "': its pointers are " + std::to_string(Bits) +
                                 " bits, gatherjit's kernels need 64");
}

/// Whether element rows on x86 \p Cpu with \p Features (the user's among
/// them) may vectorize to gather instructions rather than to scalar loads
/// inserted into vectors. Measured with both, one run each, on an Intel
/// core with AVX-512 (LLVM's rocketlake): gathers as fast or faster on
/// every case, the suite's and GatherElements along a middle axis: GE3
/// 20.2 -> 14.7 ms, FLOAT64 [32, 512, 512] by INT32 [32, 256, 512] on axis
/// 1 6.2 -> 4.8 ms, FLOAT32 rows of 1024 by INT32 1.13 -> 0.97 ms, FLOAT32
/// [1000, 200] by INT64 [1000, 64] 29 -> 22 us; and these kernels compile
/// in half the time. On AMD's Zen 4 they pay only on operands from memory:
/// the plan keeps scalar loads for kernels whose operands a cache holds
/// (TargetFacts::GathersOnlyFromMemory). CPUs without AVX-512, not
/// measured, keep the scalar loads.
static bool gathersPay(const llvm::Target &T, const llvm::Triple &Triple, llvm::StringRef Cpu,
                       const llvm::SubtargetFeatures &Features) {
  std::unique_ptr<llvm::MCSubtargetInfo> STI(
      T.createMCSubtargetInfo(Triple.str(), Cpu, Features.getString()));
  return STI && STI->checkFeatures("+avx512f");
}

/// The builder of \p Choice's target machine, its triple and CPU checked:
/// the host's as detected, or the triple and CPU named.
static Expected<llvm::orc::JITTargetMachineBuilder> targetBuilder(const TargetDesc &Choice,
                                                                  bool Gpu) {
  if (Choice.Triple.empty() && (Choice.Cpu.empty() || Choice.Cpu == "host")) {
    auto Host = llvm::orc::JITTargetMachineBuilder::detectHost();
    if (!Host)
      return toStatus(Host.takeError(), "detecting the host target");
    return std::move(*Host);
  }
  // Normalized, as clang does: "x86_64-linux-gnux32" read in place would
  // have "linux" for its vendor and no environment (and a 64-bit ABI), and
  // "x86_64-windows-msvc" no OS (and an ELF object).
  const std::string Named = Choice.Triple.empty() ? llvm::sys::getProcessTriple() : Choice.Triple;
  llvm::Triple T(llvm::Triple::normalize(Named));
  std::string Err;
  const llvm::Target *Tgt = llvm::TargetRegistry::lookupTarget(T.str(), Err);
  if (!Tgt)
    return Status::invalidArgument("cannot generate code for target '" + Named +
                                   "': gatherjit's targets are x86-64, AArch64 and "
                                   "nvptx64-nvidia-cuda");
  llvm::orc::JITTargetMachineBuilder Builder(T);
  std::string Cpu = Choice.Cpu == "host" ? llvm::sys::getHostCPUName().str() : Choice.Cpu;
  if (Gpu && Cpu.empty())
    Cpu = DefaultGpuArch;
  if (Cpu.empty())
    return Builder;
  std::unique_ptr<llvm::MCSubtargetInfo> STI(Tgt->createMCSubtargetInfo(T.str(), "", ""));
  if (!STI || !STI->isCPUStringValid(Cpu)) {
    // A GPU newer than this LLVM knows runs the newest PTX it makes.
    const std::string Newest = Gpu ? newestArchUpTo(INT_MAX) : "";
    return Status::invalidArgument("unknown CPU '" + Cpu + "' for target '" + T.str() + "'" +
                                   (Gpu && smNumber(Cpu) > smNumber(Newest)
                                        ? "; LLVM " LLVM_VERSION_STRING " makes PTX up to " +
                                              Newest + ", which newer devices run (--cpu " +
                                              Newest + ")"
                                        : std::string()));
  }
  // The runtime refuses such devices too: the kernels' 64-bit atomics,
  // read-only loads and PTX versions assume Volta's ISA or later.
  if (const int Sm = smNumberOf(Cpu); Gpu && Sm >= 0 && Sm < 70)
    return Status::invalidArgument("cannot generate code for " + Cpu +
                                   ": gatherjit's GPU kernels need sm_70 or later");
  Builder.setCPU(Cpu);
  return Builder;
}

Expected<std::unique_ptr<llvm::TargetMachine>> createTargetMachine(const TargetDesc &Choice,
                                                                   OptLevel Level) {
  initializeTargets();
  const bool Gpu = llvm::StringRef(Choice.Triple).starts_with("nvptx");
  if (Gpu)
    initializeGpuTargets();
  Expected<llvm::orc::JITTargetMachineBuilder> Builder = targetBuilder(Choice, Gpu);
  if (!Builder)
    return Builder.status();
  std::string Err;
  const llvm::Target *Tgt =
      llvm::TargetRegistry::lookupTarget(Builder->getTargetTriple().str(), Err);
  llvm::SubtargetFeatures F, User;
  F.addFeaturesVector(Builder->getFeatures().getFeatures());
  // Before anything below asks LLVM about these features: it warns on
  // stderr of one it does not know.
  if (Status S = checkFeatures(Tgt, Builder->getTargetTriple(), Choice.Features); !S)
    return S;
  for (llvm::StringRef Part : llvm::split(Choice.Features, ','))
    if (!Part.empty())
      User.AddFeature(Part);
  // Gathers or scalar loads on x86 (gathersPay); the user's
  // "+prefer-no-gather" or "-prefer-no-gather", applied after, decides
  // otherwise.
  if (Builder->getTargetTriple().isX86() && Tgt) {
    llvm::SubtargetFeatures All = F;
    All.addFeaturesVector(User.getFeatures());
    if (!gathersPay(*Tgt, Builder->getTargetTriple(), Builder->getCPU(), All))
      F.AddFeature("prefer-no-gather");
  }
  if (Gpu && Choice.Features.find("ptx") == std::string::npos)
    F.AddFeature(ptxVersionFeature(Builder->getCPU()));
  F.addFeaturesVector(User.getFeatures());
  std::string Short =
      Tgt ? shortFeatures(*Tgt, Builder->getTargetTriple(), Builder->getCPU(), F) : std::string();
  Builder->setFeatures(Short.empty() ? F.getString() : Short);
  Builder->setCodeGenOptLevel(codeGenLevel(Level));
  if (Gpu) {
    // No JIT for NVPTX: its text is loaded by the CUDA driver.
    std::unique_ptr<llvm::TargetMachine> TM(Tgt->createTargetMachine(
        Builder->getTargetTriple().str(), Builder->getCPU(), Builder->getFeatures().getString(),
        llvm::TargetOptions(), std::nullopt, std::nullopt, codeGenLevel(Level)));
    if (!TM)
      return Status::invalidArgument("cannot generate code for target '" + Choice.Triple + "'");
    if (Status S = checkPointerWidth(*TM, Choice.Triple); !S)
      return S;
    return TM;
  }
  Builder->setRelocationModel(llvm::Reloc::PIC_);
  Builder->setCodeModel(llvm::CodeModel::Small);
  auto TM = Builder->createTargetMachine();
  if (!TM) {
    // A target the user named that LLVM cannot generate code for here is
    // their input's fault; failing on the host is ours.
    if (!Choice.Triple.empty())
      return Status::invalidArgument("cannot generate code for target '" + Choice.Triple +
                                     "': " + llvm::toString(TM.takeError()));
    return toStatus(TM.takeError(), "creating the target machine");
  }
  if (Status S = checkPointerWidth(**TM, Choice.Triple); !S)
    return S;
  return std::move(*TM);
}

void configureModule(llvm::Module &M, llvm::TargetMachine &TM) {
  M.setTargetTriple(TM.getTargetTriple().str());
  M.setDataLayout(TM.createDataLayout());
  for (llvm::Function &F : M) {
    if (F.isDeclaration())
      continue;
    F.addFnAttr("target-cpu", TM.getTargetCPU());
    // The target's features, then those the emitter gave the function (its
    // plan's), which come later and so win.
    std::string Features = TM.getTargetFeatureString().str();
    if (F.hasFnAttribute("target-features")) {
      const llvm::StringRef Own = F.getFnAttribute("target-features").getValueAsString();
      Features += (Features.empty() || Own.empty() ? "" : ",") + Own.str();
    }
    F.addFnAttr("target-features", Features);
  }
}

struct CodeGenerator::Pipeline {
  llvm::SmallVector<char, 0> Buffer;
  llvm::raw_svector_ostream OS{Buffer};
  llvm::legacy::PassManager PM; ///< Writes to OS; goes first.
  /// What building it set on the target machine, which its passes read as
  /// they run; another level's pipeline sets them otherwise.
  bool FastISel = false, GlobalISel = false;
};

CodeGenerator::CodeGenerator(std::unique_ptr<llvm::TargetMachine> Machine)
    : TM(std::move(Machine)), FastISel(TM->Options.EnableFastISel),
      GlobalISel(TM->Options.EnableGlobalISel) {}
CodeGenerator::~CodeGenerator() = default;

void CodeGenerator::set(OptLevel Level, bool Fast, bool Global) {
  TM->setOptLevel(codeGenLevel(Level));
  TM->setFastISel(Fast);
  TM->setGlobalISel(Global);
}

void CodeGenerator::setAsMade(OptLevel Level) {
  // Building the quick tier's pipeline turns fast instruction selection
  // on, and the optimizing code generator's does not turn it off.
  set(Level, FastISel, GlobalISel);
}

Status CodeGenerator::build(OptLevel Level) {
  std::unique_ptr<Pipeline> &P = Pipelines[static_cast<int>(Level)];
  if (P)
    return Status::ok();
  setAsMade(Level);
  auto Built = std::make_unique<Pipeline>();
  // NVPTX's artefact is its text (the driver assembles it).
  const llvm::CodeGenFileType Type = TM->getTargetTriple().isNVPTX()
                                         ? llvm::CodeGenFileType::AssemblyFile
                                         : llvm::CodeGenFileType::ObjectFile;
  if (TM->addPassesToEmitFile(Built->PM, Built->OS, nullptr, Type))
    return Status::internal("the target cannot emit object files");
  Built->FastISel = TM->Options.EnableFastISel;
  Built->GlobalISel = TM->Options.EnableGlobalISel;
  P = std::move(Built);
  return Status::ok();
}

Expected<llvm::SmallVector<char, 0>> CodeGenerator::object(llvm::Module &M, OptLevel Level) {
  if (Status S = build(Level); !S)
    return S;
  Pipeline &P = *Pipelines[static_cast<int>(Level)];
  set(Level, P.FastISel, P.GlobalISel);
  P.PM.run(M);
  llvm::SmallVector<char, 0> Object = std::move(P.Buffer);
  P.Buffer.clear(); // Empty for the next object.
  // NVPTX's printer keeps a table of each function's shared variables,
  // keyed by the function, past the module it printed: the next module's
  // gets a pipeline of its own.
  if (TM->getTargetTriple().isNVPTX())
    Pipelines[static_cast<int>(Level)].reset();
  return Object;
}

Expected<std::string> CodeGenerator::assembly(llvm::Module &M, OptLevel Level) {
  setAsMade(Level);
  llvm::SmallVector<char, 0> Buffer;
  llvm::raw_svector_ostream OS(Buffer);
  llvm::legacy::PassManager PM;
  if (TM->addPassesToEmitFile(PM, OS, nullptr, llvm::CodeGenFileType::AssemblyFile))
    return Status::internal("the target cannot emit assembly");
  PM.run(M);
  return std::string(Buffer.begin(), Buffer.end());
}

namespace {
/// The host's code generator made ahead of its use (prepareHostTarget).
struct PreparedHost {
  std::mutex Mutex; ///< Guards all of this.
  std::thread Maker;
  OptLevel Level = OptLevel::O2;
  std::unique_ptr<CodeGenerator> Gen; ///< Maker's, until it is joined.
  bool Started = false;

  void join() {
    if (Maker.joinable())
      Maker.join();
  }
  // At exit, before LLVM's own statics go.
  ~PreparedHost() { join(); }
};

PreparedHost &preparedHost() {
  static PreparedHost P;
  return P;
}

bool isHost(const TargetDesc &Choice) {
  return Choice.Triple.empty() && Choice.Cpu.empty() && Choice.Features.empty();
}
} // namespace

void prepareHostTarget(OptLevel Level, OptLevel First) {
  PreparedHost &P = preparedHost();
  std::lock_guard<std::mutex> Lock(P.Mutex);
  if (P.Started)
    return;
  P.Started = true;
  P.Level = Level;
  // A fork waits for the maker: a child must not inherit LLVM state (a
  // lock, a half-built table) that a thread it does not have was changing.
  pthread_atfork(
      [] {
        PreparedHost &Host = preparedHost();
        std::lock_guard<std::mutex> HostLock(Host.Mutex);
        Host.join();
      },
      nullptr, nullptr);
  auto Prepare = [&P, Level, First] {
    Expected<std::unique_ptr<llvm::TargetMachine>> TM = createTargetMachine({}, Level);
    if (!TM)
      return; // createCodeGenerator makes it again, and reports why not.
    // The code generator's subtarget, which the first kernel's optimizer
    // would otherwise build (a quarter of that compile): asked for by a
    // function with the attributes every kernel's function has.
    llvm::LLVMContext Context;
    llvm::Module M("prepare", Context);
    llvm::Function *F =
        llvm::Function::Create(llvm::FunctionType::get(llvm::Type::getVoidTy(Context), false),
                               llvm::GlobalValue::ExternalLinkage, "prepare", M);
    llvm::ReturnInst::Create(Context, llvm::BasicBlock::Create(Context, "", F));
    configureModule(M, **TM);
    (void)(*TM)->getSubtargetImpl(*F);
    auto Gen = std::make_unique<CodeGenerator>(TM.take());
    if (Gen->build(First))
      P.Gen = std::move(Gen);
  };
  auto Make = [Prepare] {
    try {
      Prepare();
    } catch (const std::bad_alloc &) {
      // Out of memory on this thread: the first compile makes it instead.
    }
  };
  // The maker only saves the first compile's time: where no thread can be
  // made, createCodeGenerator makes the code generator on the caller's
  // thread.
  try {
    P.Maker = std::thread(Make);
  } catch (const std::system_error &) {
  }
}

Expected<std::unique_ptr<CodeGenerator>> createCodeGenerator(const TargetDesc &Target,
                                                             OptLevel Level) {
  if (isHost(Target)) {
    PreparedHost &P = preparedHost();
    std::lock_guard<std::mutex> Lock(P.Mutex);
    if (P.Level == Level) {
      P.join();
      if (P.Gen)
        return std::move(P.Gen);
    }
  }
  Expected<std::unique_ptr<llvm::TargetMachine>> TM = createTargetMachine(Target, Level);
  if (!TM)
    return TM.status();
  return std::make_unique<CodeGenerator>(TM.take());
}

uint64_t hostLastLevelCacheBytes() {
  for (int Level : {_SC_LEVEL3_CACHE_SIZE, _SC_LEVEL2_CACHE_SIZE})
    if (const long Bytes = ::sysconf(Level); Bytes > 0)
      return static_cast<uint64_t>(Bytes);
  return 0;
}

} // namespace gatherjit
