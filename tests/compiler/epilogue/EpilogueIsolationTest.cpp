//===- tests/compiler/epilogue/EpilogueIsolationTest.cpp - Hostile sources ===//
//
// Sources that crash clang, exhaust it, never end or reach for files: each
// is one clean error and the process goes on compiling the next epilogue.
// Through compileEpilogue (the helper process), the runtime and the C API.
//
//===----------------------------------------------------------------------===//

#include "compiler/epilogue/Epilogue.h"
#include "gatherjit/gatherjit.h"
#include "runtime/RuntimeTestUtil.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>
#include <sys/stat.h>
#include <unistd.h>

using namespace gatherjit;
using ::testing::HasSubstr;
using ::testing::Not;

namespace {

const EpilogueTarget Host = {"x86_64-unknown-linux-gnu", "", "", 1, 1};

Epilogue epilogue(std::string Source) {
  Epilogue E;
  E.Source = std::move(Source);
  E.Function = "f";
  return E;
}

constexpr const char *Good = "float f(float x) { return x * 2.0f; }\n";

/// Compiles \p Source under \p Limits and expects InvalidArgument whose
/// message holds \p Says; then a good epilogue must still compile.
void expectRefused(const std::string &Source, const std::string &Says,
                   const EpilogueLimits &Limits = {}) {
  SCOPED_TRACE(Source.substr(0, 200));
  auto Code = compileEpilogue(epilogue(Source), Host, Limits);
  ASSERT_FALSE(Code.isOk());
  EXPECT_EQ(Code.status().code(), ErrorCode::InvalidArgument) << Code.status().message();
  EXPECT_THAT(Code.status().message(), HasSubstr(Says));
  EXPECT_EQ(Code.status().message().find('\n'), std::string::npos);
  auto After = compileEpilogue(epilogue(Good), Host, Limits);
  ASSERT_TRUE(After.isOk()) << After.status().message();
  EXPECT_EQ((*After)->Signature.Kind, EpilogueKind::Element);
}

struct TempDir {
  TempDir() {
    char Name[] = "/tmp/gj-isolation-XXXXXX";
    Path = ::mkdtemp(Name);
  }
  ~TempDir() { std::filesystem::remove_all(Path); }
  std::string Path;
};

TEST(EpilogueIsolation, CompilesInTheHelperAsInProcess) {
  REQUIRE_EPILOGUES();
  EpilogueLimits InProcess;
  InProcess.Isolated = false;
  auto A = compileEpilogue(epilogue(Good), Host);
  auto B = compileEpilogue(epilogue(Good), Host, InProcess);
  ASSERT_TRUE(A.isOk()) << A.status().message();
  ASSERT_TRUE(B.isOk()) << B.status().message();
  EXPECT_EQ((*A)->Signature, (*B)->Signature);
  EXPECT_EQ((*A)->Bitcode, (*B)->Bitcode);
  // A rule broken comes back as the same line from either side.
  const std::string Bad = "float f(float x) { return g(x); }\n";
  auto C = compileEpilogue(epilogue(Bad), Host);
  auto D = compileEpilogue(epilogue(Bad), Host, InProcess);
  ASSERT_FALSE(C.isOk());
  ASSERT_FALSE(D.isOk());
  EXPECT_EQ(C.status().message(), D.status().message());
}

TEST(EpilogueIsolation, EmbedAndDebugPragmasAreRefusedBeforeClang) {
  REQUIRE_EPILOGUES();
  expectRefused(std::string(Good) + "#embed \"/nonexistent\"\n", "may not embed files");
  expectRefused(std::string(Good) + "  %: /* digraph */ embed <x>\n", "may not embed files");
  expectRefused(std::string(Good) + "#\\\nembed \"x\"\n", "may not embed files");
  expectRefused("float f(float x) { return x + __has_embed(\"/x\"); }\n", "may not embed");
  expectRefused(std::string(Good) + "#pragma clang __debug crash\n", "debugging pragmas");
  // Only the directive: a variable named embed is fine.
  auto Named =
      compileEpilogue(epilogue("float f(float x) { int embed = 2; return x * embed; }\n"), Host);
  EXPECT_TRUE(Named.isOk()) << Named.status().message();
}

TEST(EpilogueIsolation, NoFileOutsideTheSourceIsRead) {
  REQUIRE_EPILOGUES();
  TempDir Dir;
  const std::string Secret = Dir.Path + "/secret.h";
  std::ofstream(Secret) << "\"the secret\"\n";
  ::chmod(Secret.c_str(), 0600);
  auto Code = compileEpilogue(epilogue("static const char S[] = \n#include \"" + Secret +
                                       "\"\n;\nfloat f(float x) { return x + S[0]; }\n"),
                              Host);
  ASSERT_FALSE(Code.isOk());
  EXPECT_THAT(Code.status().message(), HasSubstr("file not found"));
  EXPECT_THAT(Code.status().message(), Not(HasSubstr("the secret")));
  // A FIFO is not opened (it would block forever).
  const std::string Fifo = Dir.Path + "/fifo.h";
  ASSERT_EQ(::mkfifo(Fifo.c_str(), 0600), 0);
  expectRefused("#include \"" + Fifo + "\"\n" + Good, "file not found");
  expectRefused("#include <stdio.h>\n" + std::string(Good), "file not found");
}

TEST(EpilogueIsolation, AnExpressionTooDeepCrashesTheHelperNotTheHost) {
  REQUIRE_EPILOGUES();
  std::string Sum = "x";
  for (int I = 0; I < 300000; ++I)
    Sum += "+x";
  expectRefused("float f(float x) { return " + Sum + "; }\n",
                "the epilogue's compile was stopped: clang crashed");
}

TEST(EpilogueIsolation, MemoryAndTimeAreLimited) {
  REQUIRE_EPILOGUES();
  // 2^30 copies of x through doubling macros.
  std::string Blowup = "#define A0(x) x\n";
  for (int I = 1; I <= 30; ++I)
    Blowup += "#define A" + std::to_string(I) + "(x) A" + std::to_string(I - 1) + "(A" +
              std::to_string(I - 1) + "(x))\n";
  Blowup += "float f(float x) { return A30(x); }\n";
  EpilogueLimits Small;
  Small.MemoryBytes = uint64_t(256) << 20;
  expectRefused(Blowup, "ran out of memory (the epilogue's limit is 256 MiB)", Small);
  EpilogueLimits Short;
  Short.Seconds = 0.5;
  Short.MemoryBytes = uint64_t(64) << 30;
  expectRefused(Blowup, "took longer than 0.5 s", Short);
}

TEST(EpilogueIsolation, SourcesOverTheCapAreRefusedUnread) {
  REQUIRE_EPILOGUES();
  std::string Big = Good;
  Big.append(MaxEpilogueBytes, ' ');
  auto Code = compileEpilogue(epilogue(Big), Host);
  ASSERT_FALSE(Code.isOk());
  EXPECT_THAT(Code.status().message(), HasSubstr("more than the 1048576"));
}

TEST(EpilogueIsolation, AMissingHelperIsUnsupportedAndNamed) {
  REQUIRE_EPILOGUES();
  EpilogueLimits Missing;
  Missing.Helper = "/nonexistent/gatherjit-epilogue";
  auto Code = compileEpilogue(epilogue(Good), Host, Missing);
  ASSERT_FALSE(Code.isOk());
  EXPECT_EQ(Code.status().code(), ErrorCode::Unsupported);
  EXPECT_THAT(Code.status().message(), HasSubstr("/nonexistent/gatherjit-epilogue"));
}

TEST(EpilogueIsolation, TheCApiAnswersInvalidArgumentAndGoesOn) {
  REQUIRE_EPILOGUES();
  gj_runtime_options O;
  gj_runtime_options_init(&O);
  EXPECT_EQ(O.epilogue_in_process, 0u);
  O.threads = 1;
  O.epilogue_memory = uint64_t(256) << 20;
  gj_runtime *RT = nullptr;
  ASSERT_EQ(gj_runtime_create(&O, &RT), GJ_OK) << gj_last_error();
  const uint64_t Sizes[] = {4};
  gj_descriptor D = {};
  const gj_tensor_desc Data = gj_tensor(GJ_FLOAT32, 1, Sizes);
  const gj_tensor_desc Ids = gj_tensor(GJ_INT64, 1, Sizes);
  ASSERT_EQ(gj_onnx_gather_elements(&Data, &Ids, 0, &D), GJ_OK) << gj_last_error();
  std::string Sum = "x";
  for (int I = 0; I < 300000; ++I)
    Sum += "+x";
  const std::string Deep = "float f(float x) { return " + Sum + "; }\n";
  gj_kernel *K = nullptr;
  gj_epilogue E = {};
  E.source = Deep.c_str();
  E.function = "f";
  EXPECT_EQ(gj_compile_epilogue(RT, &D, &E, &K), GJ_INVALID_ARGUMENT);
  EXPECT_THAT(gj_last_error(), HasSubstr("the epilogue's compile was stopped"));
  E.source = Good;
  ASSERT_EQ(gj_compile_epilogue(RT, &D, &E, &K), GJ_OK) << gj_last_error();
  const float In[] = {1, 2, 3, 4};
  const int64_t Idx[] = {3, 0, 1, 1};
  float Out[4] = {};
  ASSERT_EQ(gj_kernel_run(K, In, Idx, Out), GJ_OK) << gj_last_error();
  EXPECT_EQ(Out[0], 8.0f);
  EXPECT_EQ(Out[1], 2.0f);
  gj_kernel_release(K);
  gj_runtime_destroy(RT);
  // Bad limits are named.
  gj_runtime_options_init(&O);
  O.epilogue_seconds = 0;
  EXPECT_EQ(gj_runtime_create(&O, &RT), GJ_INVALID_ARGUMENT);
  EXPECT_THAT(gj_last_error(), HasSubstr("epilogue_seconds"));
}

} // namespace
