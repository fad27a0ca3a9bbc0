//===- tests/tools/HotFunctionsTest.cpp - Hot functions together ---------===//
//
// The compilers, libgatherjit.so and the Python module are linked with their
// hot functions together (tools/gatherjit/hot-functions.txt,
// cmake/GatherjitOrder.cmake): the listed functions each binary has must lie
// in one stretch of its code about as long as they are, where an unordered
// link scatters them over three times that.
//
//===----------------------------------------------------------------------===//

#include <llvm/Object/ELFObjectFile.h>
#include <llvm/Object/ObjectFile.h>

#include <gtest/gtest.h>

#include <algorithm>
#include <filesystem>
#include <fstream>
#include <string>
#include <unordered_set>
#include <vector>

namespace {

struct Stretch {
  uint64_t Functions = 0, Bytes = 0, Begin = UINT64_MAX, End = 0;
};

/// Where the functions named in \p Hot lie in \p Program (its symbols are
/// in Program.debug where the build split them off).
Stretch hotStretch(const std::string &Program, const std::unordered_set<std::string> &Hot) {
  const std::string Debug = Program + ".debug";
  auto Obj =
      llvm::object::ObjectFile::createObjectFile(std::filesystem::exists(Debug) ? Debug : Program);
  if (!Obj) {
    ADD_FAILURE() << "cannot read " << Program << ": " << llvm::toString(Obj.takeError());
    return {};
  }
  const auto *Elf = llvm::dyn_cast<llvm::object::ELFObjectFileBase>(Obj->getBinary());
  if (!Elf) {
    ADD_FAILURE() << Program << " is not ELF";
    return {};
  }
  Stretch S;
  for (const llvm::object::ELFSymbolRef Sym : Elf->symbols()) {
    llvm::Expected<llvm::StringRef> Name = Sym.getName();
    llvm::Expected<uint64_t> Address = Sym.getAddress();
    if (!Name || !Address || Sym.getELFType() != llvm::ELF::STT_FUNC || Sym.getSize() == 0 ||
        !Hot.count(Name->str())) {
      if (!Name)
        llvm::consumeError(Name.takeError());
      if (!Address)
        llvm::consumeError(Address.takeError());
      continue;
    }
    ++S.Functions;
    S.Bytes += Sym.getSize();
    S.Begin = std::min(S.Begin, *Address);
    S.End = std::max(S.End, *Address + Sym.getSize());
  }
  return S;
}

/// tools/gatherjit/hot-functions.txt, in order.
std::vector<std::string> hotList() {
  std::ifstream In(std::string(GATHERJIT_SOURCE_DIR) + "/tools/gatherjit/hot-functions.txt");
  std::vector<std::string> List;
  for (std::string Line; std::getline(In, Line);)
    List.push_back(Line);
  return List;
}

const std::filesystem::path Dir = std::filesystem::path(GATHERJIT_CLI).parent_path();

TEST(HotFunctions, LieTogetherInTheCompilersAndLibraries) {
#if !GATHERJIT_ORDERED_FUNCTIONS
  GTEST_SKIP() << "the compilers and libraries were linked without lld's function order";
#endif
#ifdef __SANITIZE_ADDRESS__
  // Instrumented code is not the code profiled: its functions' sizes, and
  // the sections the compiler puts them in, differ.
  GTEST_SKIP() << "a sanitized build's layout is not the one the list was made for";
#endif
  const std::vector<std::string> List = hotList();
  const std::unordered_set<std::string> Hot(List.begin(), List.end());
  ASSERT_GT(Hot.size(), 1000u);
  std::vector<std::filesystem::path> Binaries = {Dir / "gatherjit-llvm", Dir / "gatherjit-clang",
                                                 Dir / "libgatherjit.so"};
  // The Python module, where the build has one (its name says which Python).
  if (std::filesystem::is_directory(Dir / "python" / "gatherjit"))
    for (const auto &Entry : std::filesystem::directory_iterator(Dir / "python" / "gatherjit"))
      if (Entry.path().filename().string().rfind("_native", 0) == 0 &&
          Entry.path().extension() == ".so")
        Binaries.push_back(Entry.path());
  for (const std::filesystem::path &Binary : Binaries) {
    SCOPED_TRACE(Binary.filename().string());
    const Stretch S = hotStretch(Binary, Hot);
    // Most of the list is LLVM's own code, which they all have.
    ASSERT_GT(S.Functions, Hot.size() / 2);
    EXPECT_LT(static_cast<double>(S.End - S.Begin), 1.2 * static_cast<double>(S.Bytes))
        << S.Functions << " functions of " << S.Bytes << " bytes over " << (S.End - S.Begin);
  }
}

// The compilers read their code up to gatherjit_first_run_end ahead of the
// first compile (tools/gatherjit/Prefault.cpp): the functions the list has
// before it must lie before it, and it right after them (how closely they
// lie together is the test above's).
TEST(HotFunctions, TheFirstRunEndsAtItsMarkerInTheCompilers) {
#if !GATHERJIT_ORDERED_FUNCTIONS
  GTEST_SKIP() << "the compilers were linked without lld's function order";
#endif
  const std::vector<std::string> List = hotList();
  const auto Marker = std::find(List.begin(), List.end(), "gatherjit_first_run_end");
  ASSERT_NE(Marker, List.end());
  const std::unordered_set<std::string> FirstRun(List.begin(), Marker);
  ASSERT_GT(FirstRun.size(), 1000u);
  for (const char *Program : {"gatherjit-llvm", "gatherjit-clang"}) {
    SCOPED_TRACE(Program);
    const Stretch S = hotStretch(Dir / Program, FirstRun);
    const Stretch End = hotStretch(Dir / Program, {"gatherjit_first_run_end"});
    ASSERT_EQ(End.Functions, 1u);
    ASSERT_GT(S.Functions, FirstRun.size() / 2);
    ASSERT_LE(S.End, End.Begin);
    EXPECT_LT(End.Begin - S.End, 64u << 10)
        << "the marker lies " << (End.Begin - S.End) << " bytes past the first run's "
        << S.Functions << " functions";
  }
}

// The list is made by profiling the compilers (tools/hot-functions.sh):
// after a change renames or removes gatherjit's functions, the list names
// code the compilers no longer have and orders nothing. Almost every
// gatherjit function it names must be one the compilers define (the rest of
// the list also names LLVM's functions and the C and C++ libraries'). The
// list is made from the default build (GCC, RelWithDebInfo): another
// compiler or optimization level inlines other functions, and defines
// other names.
TEST(HotFunctions, TheListIsNotStale) {
#if !GATHERJIT_ORDERED_FUNCTIONS
  GTEST_SKIP() << "the compilers were linked without lld's function order";
#endif
#if !GATHERJIT_BUILT_AS_THE_HOT_LIST
  GTEST_SKIP() << "the list names the functions of the default build (GCC, RelWithDebInfo)";
#endif
  std::unordered_set<std::string> Ours;
  for (const std::string &Name : hotList())
    if (Name.rfind("_ZN9gatherjit", 0) == 0)
      Ours.insert(Name);
  ASSERT_GT(Ours.size(), 100u);
  std::unordered_set<std::string> Missing = Ours;
  for (const char *Program : {"gatherjit-llvm", "gatherjit-clang"}) {
    const std::string Path = (Dir / Program).string();
    auto Obj = llvm::object::ObjectFile::createObjectFile(
        std::filesystem::exists(Path + ".debug") ? Path + ".debug" : Path);
    ASSERT_TRUE(static_cast<bool>(Obj)) << llvm::toString(Obj.takeError());
    for (const llvm::object::SymbolRef &Sym : Obj->getBinary()->symbols()) {
      llvm::Expected<llvm::StringRef> Name = Sym.getName();
      if (!Name) {
        llvm::consumeError(Name.takeError());
        continue;
      }
      Missing.erase(Name->str());
    }
  }
  const uint64_t Defined = Ours.size() - Missing.size();
  EXPECT_GE(static_cast<double>(Defined), 0.95 * static_cast<double>(Ours.size()))
      << Missing.size() << " of the list's " << Ours.size()
      << " gatherjit functions are not in the compilers: run tools/hot-functions.sh, e.g. "
      << *Missing.begin();
}

} // namespace
