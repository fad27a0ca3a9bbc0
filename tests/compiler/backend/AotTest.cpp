//===- tests/compiler/backend/AotTest.cpp - Ahead-of-time kernels -------===//
//
// Random configurations compiled into one object, linked into a shared
// library with the system C compiler and loaded: every kernel must match the
// interpreter, as the JIT's do. And cross-compiled objects must be valid
// relocatable ELF files for their machine holding the ABI's symbols.
//
//===----------------------------------------------------------------------===//

#include "RandomCase.h"
#include "TestUtil.h"
#include "X86Levels.h"
#include "tools/CliTestUtil.h"

#include "compiler/backend/Target.h"
#include "gatherjit/Aot.h"
#include "gatherjit/Interpreter.h"

#include <llvm/Object/ELFObjectFile.h>
#include <llvm/Object/ObjectFile.h>
#include <llvm/Support/MemoryBuffer.h>
#include <llvm/Target/TargetMachine.h>
#include <llvm/TargetParser/Triple.h>

#include <dlfcn.h>
#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>
#include <set>

using namespace gatherjit;
using namespace gatherjit::test;

namespace {

using AllFn = int64_t (*)(const void *, const void *, void *);
using RangeFn = int64_t (*)(const void *, const void *, void *, int64_t, int64_t);

/// The ELF symbols an object defines, or a failure message.
struct ObjectFacts {
  bool IsElf64 = false, IsRelocatable = false;
  llvm::Triple::ArchType Arch = llvm::Triple::UnknownArch;
  std::set<std::string> Defined;
};

ObjectFacts inspect(const std::vector<char> &Object) {
  ObjectFacts F;
  auto Obj = llvm::object::ObjectFile::createObjectFile(
      llvm::MemoryBufferRef(llvm::StringRef(Object.data(), Object.size()), "kernels.o"));
  if (!Obj) {
    ADD_FAILURE() << llvm::toString(Obj.takeError());
    return F;
  }
  auto *Elf = llvm::dyn_cast<llvm::object::ELFObjectFileBase>(Obj->get());
  if (!Elf)
    return F;
  F.IsElf64 = (*Obj)->getBytesInAddress() == 8;
  F.IsRelocatable = Elf->getEType() == llvm::ELF::ET_REL;
  F.Arch = (*Obj)->getArch();
  for (const llvm::object::SymbolRef &Sym : (*Obj)->symbols()) {
    auto Name = Sym.getName();
    auto Flags = Sym.getFlags();
    if (!Name || !Flags) {
      llvm::consumeError(Name.takeError());
      llvm::consumeError(Flags.takeError());
      continue;
    }
    if (!(*Flags & llvm::object::SymbolRef::SF_Undefined) &&
        (*Flags & llvm::object::SymbolRef::SF_Global))
      F.Defined.insert(Name->str());
  }
  return F;
}

ValidDesc onnxSeed() {
  TensorDesc Data = tensor(DataType::Float32, {2, 2}), Idx = tensor(DataType::Int64, {2, 2});
  Expected<GatherElementsDesc> D = onnxGatherElements(Data, Idx, 1);
  EXPECT_TRUE(D.isOk());
  ValidateOptions O;
  O.AllowSmallerIndices = true;
  Expected<ValidDesc> V = validate(*D, O);
  EXPECT_TRUE(V.isOk());
  return *V;
}

} // namespace

/// Compiles \p Count random kernels into one object for \p Target, links
/// and loads it, and runs each whole and split in two row ranges against
/// the interpreter.
void runRandomKernelsFor(const TargetDesc &Target, uint64_t Seed, int Count) {
  CaseGenerator Gen(seedFromEnv(Seed));
  std::vector<RandomCase> Cases;
  std::vector<AotKernel> Kernels;
  for (int I = 0; I < Count; ++I) {
    Cases.push_back(Gen.next());
    Kernels.push_back({"k" + std::to_string(I), Cases.back().Desc});
  }
  Expected<AotResult> R = compileAot(Kernels, Target, OptLevel::O2, "random.h");
  ASSERT_TRUE(R.isOk()) << R.status().message();

  ScratchDir Dir;
  spit(Dir / "random.o", std::string(R->Object.begin(), R->Object.end()));
  const std::string Link = "cc -shared -o " + (Dir / "random.so") + " " + (Dir / "random.o");
  ASSERT_EQ(std::system(Link.c_str()), 0) << Link;
  void *Lib = dlopen((Dir / "random.so").c_str(), RTLD_NOW | RTLD_LOCAL);
  ASSERT_NE(Lib, nullptr) << dlerror();

  for (size_t I = 0; I < Cases.size(); ++I) {
    const RandomCase &C = Cases[I];
    SCOPED_TRACE("case " + std::to_string(I) + ": " + C.Summary);
    auto All = reinterpret_cast<AllFn>(dlsym(Lib, ("k" + std::to_string(I)).c_str()));
    auto Range =
        reinterpret_cast<RangeFn>(dlsym(Lib, ("k" + std::to_string(I) + "_range").c_str()));
    auto *Rows =
        static_cast<const int64_t *>(dlsym(Lib, ("k" + std::to_string(I) + "_rows").c_str()));
    ASSERT_TRUE(All && Range && Rows);
    const size_t OutBytes = requiredElements(C.Desc.Output) * C.Desc.Output.elementBytes();
    std::vector<char> Ref(OutBytes, '\x5a'), Aot(OutBytes, '\x5a'), Split(OutBytes, '\x5a');
    Status RS = interpret(C.Desc, C.Input.data(), C.Indices.data(), Ref.data());
    const int64_t AR = All(C.Input.data(), C.Indices.data(), Aot.data());
    // Rows split in two halves, as a caller's threads would run them.
    const int64_t Mid = *Rows / 2;
    int64_t SR = Range(C.Input.data(), C.Indices.data(), Split.data(), 0, Mid);
    if (SR == 0)
      SR = Range(C.Input.data(), C.Indices.data(), Split.data(), Mid, *Rows);
    // An empty output reads no index: its kernel checks none (the header
    // says so), where the interpreter checks them all.
    const bool Empty = C.Desc.outputElements() == 0;
    if (Empty) {
      EXPECT_NE(R->Header.find("k" + std::to_string(I) + ": " + C.Desc.describe() +
                               "; its output is empty: it reads no index */"),
                std::string::npos);
      EXPECT_EQ(*Rows, 0);
    }
    if (RS || Empty) {
      EXPECT_EQ(AR, 0);
      EXPECT_EQ(SR, 0);
      EXPECT_EQ(Ref, Aot);
      EXPECT_EQ(Ref, Split);
    } else {
      EXPECT_EQ(AR, static_cast<int64_t>(*RS.position()) + 1) << RS.message();
      EXPECT_EQ(SR, AR);
    }
  }
  dlclose(Lib);
}

TEST(Aot, RandomKernelsInOneObjectMatchTheInterpreter) { runRandomKernelsFor({}, 424242, 60); }

TEST(Aot, RandomKernelsForEveryX86LevelThisMachineRunsMatchTheInterpreter) {
  // The portable levels' code, each a plan of its own vector widths and
  // loads, run where this machine has the level's features.
  for (const X86Level &L : X86Levels) {
    SCOPED_TRACE(L.Cpu);
    if (runsHere(L))
      runRandomKernelsFor({"x86_64-linux-gnu", L.Cpu, ""}, 20261129, 150);
  }
}

TEST(Aot, Aarch64ObjectIsRelocatableElfWithTheNamedSymbols) {
  Expected<AotResult> R = compileAot({{"seed", onnxSeed()}, {"again", onnxSeed()}},
                                     {"aarch64-linux-gnu", "generic", ""}, OptLevel::O2, "arm.h");
  ASSERT_TRUE(R.isOk()) << R.status().message();
  ObjectFacts F = inspect(R->Object);
  EXPECT_TRUE(F.IsElf64);
  EXPECT_TRUE(F.IsRelocatable);
  EXPECT_EQ(F.Arch, llvm::Triple::aarch64);
  for (const char *Sym : {"seed", "seed_range", "seed_rows", "again", "again_range", "again_rows"})
    EXPECT_TRUE(F.Defined.count(Sym)) << Sym;
  EXPECT_NE(R->Header.find("extern const int64_t seed_rows;"), std::string::npos);
}

TEST(Aot, WriteAotCommitsBothFilesOrReplacesNeither) {
  Expected<AotResult> R = compileAot({{"seed", onnxSeed()}}, {}, OptLevel::O2, "seed.h");
  ASSERT_TRUE(R.isOk()) << R.status().message();
  ScratchDir Dir;
  { std::ofstream(Dir / "old.o") << "kept"; }
  // One file for both: refused, and the file that was there is unchanged.
  Status S = writeAot(*R, Dir / "old.o", Dir / "old.o");
  EXPECT_EQ(S.code(), ErrorCode::InvalidArgument);
  EXPECT_THAT(S.message(), ::testing::HasSubstr("name the same file"));
  EXPECT_EQ(slurp(Dir / "old.o"), "kept");
  // A header in a directory that does not exist: the object is not replaced.
  EXPECT_FALSE(writeAot(*R, Dir / "old.o", Dir / "missing/seed.h").isOk());
  EXPECT_EQ(slurp(Dir / "old.o"), "kept");
  ASSERT_TRUE(writeAot(*R, Dir / "old.o", Dir / "seed.h").isOk());
  EXPECT_EQ(slurp(Dir / "old.o"), std::string(R->Object.begin(), R->Object.end()));
  EXPECT_EQ(slurp(Dir / "seed.h"), R->Header);
  EXPECT_EQ(std::distance(std::filesystem::directory_iterator(Dir.Path),
                          std::filesystem::directory_iterator()),
            2); // No temporary file left behind.
}

TEST(Aot, EveryX86Level) {
  for (const char *Cpu : {"x86-64", "x86-64-v2", "x86-64-v3", "x86-64-v4", "host"}) {
    SCOPED_TRACE(Cpu);
    Expected<AotResult> R =
        compileAot({{"seed", onnxSeed()}}, {"x86_64-linux-gnu", Cpu, ""}, OptLevel::O2, "k.h");
    ASSERT_TRUE(R.isOk()) << R.status().message();
    ObjectFacts F = inspect(R->Object);
    EXPECT_TRUE(F.IsRelocatable);
    EXPECT_EQ(F.Arch, llvm::Triple::x86_64);
    EXPECT_TRUE(F.Defined.count("seed_range"));
  }
}

TEST(Aot, RejectsNamesThatAreNotDistinctCIdentifiers) {
  const ValidDesc D = onnxSeed();
  for (const std::vector<AotKernel> &Bad :
       std::vector<std::vector<AotKernel>>{{{"9lives", D}},
                                           {{"has-dash", D}},
                                           {{"", D}},
                                           {{"a", D}, {"a", D}},
                                           {{"a", D}, {"a_range", D}}}) {
    Expected<AotResult> R = compileAot(Bad, {}, OptLevel::O0, "k.h");
    ASSERT_FALSE(R.isOk()) << Bad.back().Name;
    EXPECT_EQ(R.status().code(), ErrorCode::InvalidArgument);
    EXPECT_NE(R.status().message().find("'" + Bad.back().Name + "'"), std::string::npos)
        << R.status().message();
  }
  // Identifiers a header or a program cannot take: keywords, the C
  // library's names and reserved prefixes, the C API's.
  for (const char *Name : {"int", "bool", "class", "memcpy", "strfoo", "isfoo", "malloc", "main",
                           "__k", "_K", "gj_compile"}) {
    Expected<AotResult> R = compileAot({{Name, D}}, {}, OptLevel::O0, "k.h");
    ASSERT_FALSE(R.isOk()) << Name;
    EXPECT_THAT(R.status().message(), ::testing::HasSubstr("'" + std::string(Name) + "' is "));
  }
  for (const char *Name : {"mem", "is", "gather_str", "gather_is", "Memcpy", "_k", "to9"})
    EXPECT_EQ(reservedCName(Name), "") << Name;
  Expected<AotResult> R =
      compileAot({{"k", D}}, {"nosucharch-linux-gnu", "", ""}, OptLevel::O2, "k.h");
  ASSERT_FALSE(R.isOk());
  EXPECT_NE(R.status().message().find("nosucharch-linux-gnu"), std::string::npos);
}
