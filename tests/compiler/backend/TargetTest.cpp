//===- tests/compiler/backend/TargetTest.cpp - Target machines' features --===//
//
// createTargetMachine writes its features as what differs from the CPU's
// own. These tests hold it to the feature set LLVM's own parse of the whole
// list gives, as the target machine and the code generator see it; and
// the host's code generator made ahead (prepareHostTarget) to the one made
// when asked for.
//
//===----------------------------------------------------------------------===//

#include "compiler/backend/Target.h"

#include <llvm/ADT/StringExtras.h>
#include <llvm/CodeGen/TargetSubtargetInfo.h>
#include <llvm/ExecutionEngine/Orc/JITTargetMachineBuilder.h>
#include <llvm/IR/IRBuilder.h>
#include <llvm/IR/Module.h>
#include <llvm/MC/MCSubtargetInfo.h>
#include <llvm/MC/TargetRegistry.h>
#include <llvm/Target/TargetMachine.h>
#include <llvm/TargetParser/Host.h>
#include <llvm/TargetParser/SubtargetFeature.h>
#include <llvm/TargetParser/Triple.h>

#include <gtest/gtest.h>

#include <sys/wait.h>
#include <unistd.h>

using namespace gatherjit;

namespace {

/// What LLVM's parse of \p Features gives \p Cpu on \p Triple.
llvm::FeatureBitset parsed(const std::string &Triple, const std::string &Cpu,
                           const std::string &Features) {
  std::string Err;
  const llvm::Target *T = llvm::TargetRegistry::lookupTarget(Triple, Err);
  EXPECT_NE(T, nullptr) << Err;
  std::unique_ptr<llvm::MCSubtargetInfo> STI(T->createMCSubtargetInfo(Triple, Cpu, Features));
  return STI->getFeatureBits();
}

/// The features the code generator sees in a function of a module that
/// configureModule prepared for \p TM, or that says \p Features itself.
llvm::FeatureBitset codeGeneratorFeatures(llvm::TargetMachine &TM,
                                          const std::string *Features = nullptr) {
  llvm::LLVMContext Ctx;
  llvm::Module M("m", Ctx);
  llvm::Function *F =
      llvm::Function::Create(llvm::FunctionType::get(llvm::Type::getVoidTy(Ctx), false),
                             llvm::Function::ExternalLinkage, "f", M);
  llvm::IRBuilder<>(llvm::BasicBlock::Create(Ctx, "entry", F)).CreateRetVoid();
  configureModule(M, TM);
  if (Features)
    F->addFnAttr("target-features", *Features);
  return TM.getSubtargetImpl(*F)->getFeatureBits();
}

size_t count(llvm::StringRef Features) { return Features.empty() ? 0 : Features.count(',') + 1; }

} // namespace

TEST(Target, TheHostMachineHasTheHostsFeaturesInAShorterList) {
  initializeTargets();
  const std::string Triple = llvm::sys::getProcessTriple();
  auto Host = llvm::orc::JITTargetMachineBuilder::detectHost();
  ASSERT_TRUE(bool(Host));
  std::string Full = Host->getFeatures().getString();
  // Gathers where the host is an x86 CPU with AVX-512.
  if (llvm::Triple(Triple).isX86() && Full.find("+avx512f") == std::string::npos)
    Full += ",+prefer-no-gather";
  const llvm::FeatureBitset Want = parsed(Triple, Host->getCPU(), Full);

  Expected<std::unique_ptr<llvm::TargetMachine>> TM = createTargetMachine({}, OptLevel::O2);
  ASSERT_TRUE(TM.isOk()) << TM.status().message();
  EXPECT_EQ((*TM)->getTargetCPU(), Host->getCPU());
  EXPECT_TRUE((*TM)->getMCSubtargetInfo()->getFeatureBits() == Want);
  EXPECT_TRUE(codeGeneratorFeatures(**TM) == codeGeneratorFeatures(**TM, &Full));
  EXPECT_LT(count((*TM)->getTargetFeatureString()), count(Full))
      << (*TM)->getTargetFeatureString().str();
}

TEST(Target, NamedCpusGetTheFeaturesTheUserAddsAndRemoves) {
  struct Case {
    std::string Triple, Cpu, Features;
    /// x86 only: whether element rows load element by element rather than
    /// gather (AVX-512 cores may gather; the user comes last).
    bool NoGather;
  };
  const std::vector<Case> Cases = {
      {"x86_64-linux-gnu", "x86-64", "", true},
      {"x86_64-linux-gnu", "x86-64", "+avx512f,-avx512vl", false},
      {"x86_64-linux-gnu", "x86-64-v3", "-avx2,+popcnt", true},
      {"x86_64-linux-gnu", "haswell", "-fma,-prefer-no-gather", false},
      {"x86_64-linux-gnu", "skylake-avx512", "-avx512f", true},
      {"x86_64-linux-gnu", "skylake-avx512", "", false},
      {"x86_64-linux-gnu", "sapphirerapids", "+prefer-no-gather", true},
      {"x86_64-linux-gnu", "znver4", "-sse4.2", true},
      {"x86_64-linux-gnu", "znver4", "", false},
      {"x86_64-linux-gnu", "znver4", "-prefer-no-gather", false},
      {"aarch64-linux-gnu", "generic", "", false},
      {"aarch64-linux-gnu", "neoverse-v1", "-neon", false},
      {"aarch64-linux-gnu", "cortex-a72", "+sve2,-crc", false},
  };
  for (const Case &C : Cases) {
    SCOPED_TRACE(C.Triple + " " + C.Cpu + " " + C.Features);
    Expected<std::unique_ptr<llvm::TargetMachine>> TM =
        createTargetMachine({C.Triple, C.Cpu, C.Features}, OptLevel::O2);
    ASSERT_TRUE(TM.isOk()) << TM.status().message();
    std::string Full = C.Features;
    if (C.NoGather)
      Full = "+prefer-no-gather" + (Full.empty() ? "" : "," + Full);
    const llvm::FeatureBitset Want = parsed(C.Triple, C.Cpu, Full);
    EXPECT_TRUE((*TM)->getMCSubtargetInfo()->getFeatureBits() == Want)
        << (*TM)->getTargetFeatureString().str();
    EXPECT_TRUE(codeGeneratorFeatures(**TM) == codeGeneratorFeatures(**TM, &Full))
        << (*TM)->getTargetFeatureString().str();
    if (llvm::Triple(C.Triple).isX86()) {
      EXPECT_EQ((*TM)->getMCSubtargetInfo()->checkFeatures("+prefer-no-gather"), C.NoGather);
    }
  }
}

TEST(Target, APreparedHostGeneratorIsTheOneCreateMakesAtItsLevel) {
  prepareHostTarget(OptLevel::O1, OptLevel::O1);
  Expected<std::unique_ptr<CodeGenerator>> Prepared = createCodeGenerator({}, OptLevel::O1);
  Expected<std::unique_ptr<CodeGenerator>> Made = createCodeGenerator({}, OptLevel::O1);
  Expected<std::unique_ptr<CodeGenerator>> Other = createCodeGenerator({}, OptLevel::O2);
  ASSERT_TRUE(Prepared.isOk() && Made.isOk() && Other.isOk());
  llvm::TargetMachine &P = (*Prepared)->targetMachine(), &M = (*Made)->targetMachine();
  EXPECT_EQ(P.getTargetTriple(), M.getTargetTriple());
  EXPECT_EQ(P.getTargetCPU(), M.getTargetCPU());
  EXPECT_EQ(P.getTargetFeatureString(), M.getTargetFeatureString());
  EXPECT_TRUE(codeGeneratorFeatures(P) == codeGeneratorFeatures(M));
  EXPECT_EQ(P.getOptLevel(), M.getOptLevel());
  // Another level does not take the prepared one.
  EXPECT_NE((*Other)->targetMachine().getOptLevel(), M.getOptLevel());
}

// A fork while the generator is being made (which waits for it, so that
// the child has no LLVM state a vanished thread was changing) leaves both
// processes able to make theirs.
TEST(Target, AProcessForkedWhileTheHostGeneratorIsMadeMakesOne) {
  prepareHostTarget(OptLevel::O2, OptLevel::O1);
  const pid_t Child = fork();
  ASSERT_GE(Child, 0);
  if (Child == 0) {
    alarm(60); // A child that hangs fails instead.
    Expected<std::unique_ptr<CodeGenerator>> Gen = createCodeGenerator({}, OptLevel::O2);
    _exit(Gen.isOk() && !(*Gen)->targetMachine().getTargetCPU().empty() ? 0 : 3);
  }
  Expected<std::unique_ptr<CodeGenerator>> Gen = createCodeGenerator({}, OptLevel::O2);
  EXPECT_TRUE(Gen.isOk());
  int Raw = 0;
  ASSERT_EQ(waitpid(Child, &Raw, 0), Child);
  EXPECT_TRUE(WIFEXITED(Raw) && WEXITSTATUS(Raw) == 0)
      << (WIFSIGNALED(Raw) ? "signal " + std::to_string(WTERMSIG(Raw))
                           : "exit " + std::to_string(WEXITSTATUS(Raw)));
}

TEST(Target, ADeviceGetsPtxOfItsOwnArchitectureOrTheNewestBelowIt) {
  // LLVM 19's NVPTX target stops at sm_90 (and sm_90a): newer devices run
  // sm_90's PTX, which their driver compiles forward; an architecture
  // LLVM skips gets the one below it; "a" variants are never chosen.
  EXPECT_EQ(ptxArchFor("sm_70"), "sm_70");
  EXPECT_EQ(ptxArchFor("sm_86"), "sm_86");
  EXPECT_EQ(ptxArchFor("sm_89"), "sm_89");
  EXPECT_EQ(ptxArchFor("sm_90"), "sm_90");
  EXPECT_EQ(ptxArchFor("sm_88"), "sm_87");
  for (const char *Newer : {"sm_100", "sm_103", "sm_120", "sm_121"})
    EXPECT_EQ(ptxArchFor(Newer), "sm_90") << Newer;
  // What it names, LLVM generates.
  for (const char *Device : {"sm_75", "sm_120"}) {
    Expected<std::unique_ptr<CodeGenerator>> Gen =
        createCodeGenerator({"nvptx64-nvidia-cuda", ptxArchFor(Device), ""}, OptLevel::O2);
    EXPECT_TRUE(Gen.isOk()) << Device << ": " << Gen.status().message();
  }
}
