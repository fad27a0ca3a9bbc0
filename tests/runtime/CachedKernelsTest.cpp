//===- tests/runtime/CachedKernelsTest.cpp - Cached kernels without LLVM --===//
//
// What a Runtime stores in the kernel cache, CachedKernels finds and
// compiler/backend/ObjectLoader links without LLVM: random configurations at every
// level must give the interpreter's bytes or error. And the loader refuses
// what it cannot link (damaged objects, foreign symbols) without crashing.
//
//===----------------------------------------------------------------------===//

#include "runtime/CachedKernels.h"
#include "compiler/backend/ObjectLoader.h"

#include "RandomCase.h"
#include "TestUtil.h"

#include "compiler/backend/Target.h"
#include "compiler/pipeline/Pipeline.h"
#include "gatherjit/Interpreter.h"

#include <gtest/gtest.h>

#include <llvm/Target/TargetMachine.h>

#include <cstddef>
#include <cstring>
#include <elf.h>

using namespace gatherjit;
using namespace gatherjit::test;

namespace {

RuntimeOptions optionsFor(const std::string &Dir, OptLevel Level) {
  RuntimeOptions O;
  O.Specialization = Specialize::AtCompile; // These tests are about compiled code.
  O.CacheDir = Dir;
  O.Opt = Level;
  O.Threads = 1;
  return O;
}

/// Runs \p K and the interpreter on \p C: the same bytes or the same error.
void expectInterpreters(const Kernel &K, const RandomCase &C) {
  const size_t OutBytes = requiredElements(C.Desc.Output) * C.Desc.Output.elementBytes();
  std::vector<char> Ref(OutBytes, '\xab'), Out(OutBytes, '\xab');
  Status RS = interpret(C.Desc, C.Input.data(), C.Indices.data(), Ref.data());
  Status KS = K.run(C.Input.data(), C.Indices.data(), Out.data());
  ASSERT_EQ(RS.code(), KS.code()) << RS.message() << " / " << KS.message();
  if (RS)
    ASSERT_EQ(Ref, Out);
  else
    ASSERT_EQ(RS.position(), KS.position());
}

#if defined(__x86_64__)
TEST(CachedKernels, RunWhatARuntimeStoredAtEveryLevel) {
  for (OptLevel Level : {OptLevel::O0, OptLevel::O1, OptLevel::O2, OptLevel::O3}) {
    SCOPED_TRACE(optLevelName(Level));
    ScratchDir Dir;
    const RuntimeOptions Options = optionsFor(Dir.Path.string(), Level);
    std::vector<RandomCase> Cases;
    CaseGenerator Gen(1000 + static_cast<int>(Level));
    {
      Expected<std::unique_ptr<Runtime>> RT = Runtime::create(Options);
      ASSERT_TRUE(RT.isOk()) << RT.status().message();
      for (int I = 0; I < 120; ++I) {
        Cases.push_back(Gen.next());
        ASSERT_TRUE((*RT)->compile(Cases.back().Desc).isOk());
      }
    }
    std::optional<CachedKernels> Cache = CachedKernels::open(Options);
    ASSERT_TRUE(Cache);
    int Found = 0;
    for (const RandomCase &C : Cases) {
      SCOPED_TRACE(C.Summary);
      std::optional<Kernel> K = Cache->find(C.Desc);
      ASSERT_TRUE(K) << "the runtime stored every kernel";
      EXPECT_TRUE(K->fromDiskCache());
      expectInterpreters(*K, C);
      if (HasFatalFailure())
        return;
      Found += C.Desc.outputElements() != 0;
    }
    EXPECT_GE(Found, 100);
    // Another level's runtime stored none of these.
    const OptLevel Other = Level == OptLevel::O2 ? OptLevel::O3 : OptLevel::O2;
    std::optional<CachedKernels> Elsewhere =
        CachedKernels::open(optionsFor(Dir.Path.string(), Other));
    ASSERT_TRUE(Elsewhere);
    for (const RandomCase &C : Cases) {
      if (C.Desc.outputElements() != 0) {
        EXPECT_FALSE(Elsewhere->find(C.Desc)) << C.Summary;
      }
    }
  }
}
#endif

TEST(CachedKernels, AnEmptyCacheFindsNothing) {
  ScratchDir Dir;
  std::optional<CachedKernels> Cache =
      CachedKernels::open(optionsFor(Dir.Path.string(), OptLevel::O2));
  ASSERT_TRUE(Cache);
  CaseGenerator Gen(5);
  for (int I = 0; I < 20; ++I) {
    RandomCase C = Gen.next();
    if (C.Desc.outputElements() != 0) {
      EXPECT_FALSE(Cache->find(C.Desc));
    }
  }
  EXPECT_FALSE(CachedKernels::open(optionsFor("", OptLevel::O2)));
}

/// An object of one kernel from the pipeline.
std::vector<char> kernelObject(const ValidDesc &D, std::string &Name) {
  Expected<std::unique_ptr<llvm::TargetMachine>> TM = createTargetMachine({}, OptLevel::O2);
  EXPECT_TRUE(TM.isOk());
  const KernelSpec Spec = canonicalize(D);
  Name = Spec.symbolName();
  CodeGenerator Gen(TM.take());
  Expected<PipelineResult> R = runPipeline({{Spec, Name}}, *backendFor(Gen), OptLevel::O2);
  EXPECT_TRUE(R.isOk());
  return R ? R->Bytes : std::vector<char>();
}

TEST(ObjectLoader, RefusesWhatItCannotLink) {
  CaseGenerator Gen(11);
  RandomCase C = Gen.next();
  while (C.Desc.outputElements() == 0)
    C = Gen.next();
  std::string Name;
  const std::vector<char> Object = kernelObject(C.Desc, Name);
  ASSERT_FALSE(Object.empty());
  const std::string_view Whole(Object.data(), Object.size());
#if defined(__x86_64__)
  ASSERT_TRUE(loadKernelObject(Whole, Name).isOk());
#endif
  EXPECT_EQ(loadKernelObject(Whole, Name + "x").status().code(), ErrorCode::Unsupported);
  // Every truncation, and damaged bytes in the headers, are refused or
  // linked whole: never a crash. (The cache's checksum keeps damaged
  // entries from the loader; this is its own guard.)
  for (size_t Len = 0; Len < Object.size(); Len += 7)
    (void)loadKernelObject(Whole.substr(0, Len), Name);
  for (size_t At = 0; At < 64; ++At) {
    std::vector<char> Damaged = Object;
    Damaged[At] = static_cast<char>(Damaged[At] ^ 0x5a);
    Expected<std::shared_ptr<const Executable>> Code =
        loadKernelObject(std::string_view(Damaged.data(), Damaged.size()), Name);
    if (At < 6 || (At >= 16 && At < 20)) { // Magic, class, byte order, type, machine.
      EXPECT_FALSE(Code.isOk()) << "byte " << At;
    }
  }
}

#if defined(__x86_64__)
TEST(ObjectLoader, CallsOnlyTheFunctionsAKernelMay) {
  // A relocatable x86-64 object whose f_range calls an undefined `puts`.
  // Built by hand: .text (call rel32 0; ret), .symtab, .strtab, .rela.text.
  struct Image {
    Elf64_Ehdr H;
    unsigned char Text[8];
    Elf64_Sym Syms[3];
    char Str[24];
    Elf64_Rela Rela;
    Elf64_Shdr Sh[5];
  } I{};
  std::memcpy(I.H.e_ident, ELFMAG, SELFMAG);
  I.H.e_ident[EI_CLASS] = ELFCLASS64;
  I.H.e_ident[EI_DATA] = ELFDATA2LSB;
  I.H.e_ident[EI_VERSION] = EV_CURRENT;
  I.H.e_type = ET_REL;
  I.H.e_machine = EM_X86_64;
  I.H.e_version = EV_CURRENT;
  I.H.e_ehsize = sizeof(Elf64_Ehdr);
  I.H.e_shentsize = sizeof(Elf64_Shdr);
  I.H.e_shnum = 5;
  I.H.e_shoff = offsetof(Image, Sh);
  const unsigned char Code[8] = {0xe8, 0, 0, 0, 0, 0xc3, 0x90, 0x90};
  std::memcpy(I.Text, Code, sizeof(Code));
  auto UseName = [&](const char *Callee) {
    std::memset(I.Str, 0, sizeof(I.Str));
    std::memcpy(I.Str + 1, "f_range", 8);
    std::strcpy(I.Str + 9, Callee);
  };
  I.Syms[1].st_name = 1;
  I.Syms[1].st_info = ELF64_ST_INFO(STB_GLOBAL, STT_FUNC);
  I.Syms[1].st_shndx = 1;
  I.Syms[2].st_name = 9;
  I.Syms[2].st_info = ELF64_ST_INFO(STB_GLOBAL, STT_NOTYPE);
  I.Syms[2].st_shndx = SHN_UNDEF;
  I.Rela.r_offset = 1;
  I.Rela.r_info = ELF64_R_INFO(2, R_X86_64_PLT32);
  I.Rela.r_addend = -4;
  I.Sh[1] = {0, SHT_PROGBITS, SHF_ALLOC | SHF_EXECINSTR, 0, offsetof(Image, Text), 8, 0, 0, 16, 0};
  I.Sh[2] = {0, SHT_SYMTAB,       0, 0, offsetof(Image, Syms), sizeof(I.Syms), 3, 1,
             8, sizeof(Elf64_Sym)};
  I.Sh[3] = {0, SHT_STRTAB, 0, 0, offsetof(Image, Str), sizeof(I.Str), 0, 0, 1, 0};
  I.Sh[4] = {0, SHT_RELA,          0, 0, offsetof(Image, Rela), sizeof(Elf64_Rela), 2, 1,
             8, sizeof(Elf64_Rela)};
  auto Load = [&] {
    return loadKernelObject(std::string_view(reinterpret_cast<const char *>(&I), sizeof(I)), "f");
  };
  UseName("puts");
  Expected<std::shared_ptr<const Executable>> Refused = Load();
  ASSERT_FALSE(Refused.isOk());
  EXPECT_NE(Refused.status().message().find("puts"), std::string::npos)
      << Refused.status().message();
  UseName("memset"); // Reached through a stub: linked.
  EXPECT_TRUE(Load().isOk());
  I.Rela.r_info = ELF64_R_INFO(2, 37); // R_X86_64_TLSDESC: not a kernel's.
  EXPECT_EQ(Load().status().code(), ErrorCode::Unsupported);
}
#endif

} // namespace
