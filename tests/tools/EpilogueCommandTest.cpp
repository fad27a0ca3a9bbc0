//===- tests/tools/EpilogueCommandTest.cpp - --epilogue on the command line ===//

#include "CliTestUtil.h"
#include "compiler/epilogue/Epilogue.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <cmath>
#include <filesystem>

using namespace gatherjit;
using namespace gatherjit::test;

namespace {

constexpr const char *Rowwise = R"(void dequant(const uint8_t *row, float *out) {
  float scale = gj_load_f32(row + GJ_ROW_OUT), bias = gj_load_f32(row + GJ_ROW_OUT + 4);
  for (int j = 0; j < GJ_ROW_OUT; ++j)
    out[j] = row[j] * scale + bias;
}
)";

/// A 6-row table of 4 quantized bytes, scale 2^(r-2) and bias r.
std::vector<uint8_t> table() {
  std::vector<uint8_t> T(6 * 12);
  for (int R = 0; R < 6; ++R) {
    for (int J = 0; J < 4; ++J)
      T[R * 12 + J] = static_cast<uint8_t>(R * 10 + J);
    const float Scale = std::ldexp(1.0f, R - 2), Bias = static_cast<float>(R);
    std::memcpy(&T[R * 12 + 4], &Scale, 4);
    std::memcpy(&T[R * 12 + 8], &Bias, 4);
  }
  return T;
}

TEST(EpilogueCommand, RowEpilogueOnBothEnginesAndAot) {
  if (!epiloguesSupported())
    GTEST_SKIP() << "built without clang's libraries";
  ScratchDir Dir;
  spit(Dir / "deq.c", Rowwise);
  writeArray<uint8_t>(Dir / "t.npy", "|u1", {6, 12}, table());
  writeArray<int64_t>(Dir / "ids.npy", "<i8", {3}, {5, -6, 2});
  std::vector<float> Want;
  for (int R : {5, 0, 2})
    for (int J = 0; J < 4; ++J)
      Want.push_back((R * 10 + J) * std::ldexp(1.0f, R - 2) + R);
  for (const char *Engine : {"jit", "interp"}) {
    SCOPED_TRACE(Engine);
    const std::string Out = Dir / (std::string(Engine) + ".npy");
    CliResult R = runCli(Dir, "gather --data " + Dir / "t.npy" + " --indices " + Dir / "ids.npy" +
                                  " --epilogue " + Dir / "deq.c" +
                                  " --epilogue-fn dequant --epilogue-row-out 4 --engine " + Engine +
                                  " -o " + Out);
    ASSERT_EQ(R.Exit, 0) << R.Err;
    std::vector<uint64_t> Shape;
    EXPECT_EQ(readArray<float>(Out, &Shape), Want);
    EXPECT_EQ(Shape, (std::vector<uint64_t>{3, 4}));
  }
  CliResult A = runCli(Dir, "aot gather --data-shape 6,12 --data-type UINT8 --indices-shape 3 "
                            "--indices-type INT64 --epilogue " +
                                Dir / "deq.c" +
                                " --epilogue-fn dequant --epilogue-row-out 4 --name lookup -o " +
                                Dir / "k.o" + " --header " + Dir / "k.h");
  ASSERT_EQ(A.Exit, 0) << A.Err;
  const std::string Header = slurp(Dir / "k.h");
  EXPECT_THAT(Header, ::testing::HasSubstr("#define lookup_OUTPUT_BYTES 48u"));
  EXPECT_THAT(Header, ::testing::HasSubstr("epilogue=row"));
}

TEST(EpilogueCommand, ElementEpilogueWithParametersFromAFile) {
  if (!epiloguesSupported())
    GTEST_SKIP() << "built without clang's libraries";
  ScratchDir Dir;
  spit(Dir / "scale.c", "double f(int32_t x, const double *k) { return x * *k; }\n");
  const double K = 0.25;
  spit(Dir / "k.bin", std::string(reinterpret_cast<const char *>(&K), 8));
  writeArray<int32_t>(Dir / "d.npy", "<i4", {2, 3}, {1, 2, 3, 4, 5, 6});
  writeArray<int64_t>(Dir / "i.npy", "<i8", {2, 2}, {2, 0, -1, 1});
  CliResult R = runCli(Dir, "gather-elements --axis 1 --data " + Dir / "d.npy" + " --indices " +
                                Dir / "i.npy" + " --epilogue " + Dir / "scale.c" +
                                " --epilogue-fn f --epilogue-params " + Dir / "k.bin" + " -o " +
                                Dir / "o.npy");
  ASSERT_EQ(R.Exit, 0) << R.Err;
  EXPECT_EQ(readArray<double>(Dir / "o.npy"), (std::vector<double>{0.75, 0.25, 1.5, 1.25}));
}

TEST(EpilogueCommand, BadEpiloguesExitTwoWithOneLineAndNoFile) {
  if (!epiloguesSupported())
    GTEST_SKIP() << "built without clang's libraries";
  ScratchDir Dir;
  spit(Dir / "bad.c", "float f(float x) {\n  return x +;\n}\n");
  spit(Dir / "libc.c", "float expf(float);\nfloat f(float x) { return expf(x); }\n");
  writeArray<float>(Dir / "d.npy", "<f4", {4}, {1, 2, 3, 4});
  writeArray<int64_t>(Dir / "i.npy", "<i8", {2}, {0, 3});
  const std::string Ops = "gather --data " + Dir / "d.npy" + " --indices " + Dir / "i.npy";
  const std::string Out = Dir / "o.npy";
  expectOneErrorLine(
      runCli(Dir, Ops + " --epilogue " + Dir / "bad.c" + " --epilogue-fn f -o " + Out), 2,
      "bad.c:2:13: error: expected expression");
  expectOneErrorLine(
      runCli(Dir, Ops + " --epilogue " + Dir / "libc.c" + " --epilogue-fn f -o " + Out), 2,
      "libc.c:2:27: error: 'expf' is not defined in the epilogue");
  expectOneErrorLine(runCli(Dir, Ops + " --epilogue " + Dir / "bad.c" + " -o " + Out), 2,
                     "--epilogue FILE.c and --epilogue-fn NAME go together");
  expectOneErrorLine(
      runCli(Dir, Ops + " --epilogue " + Dir / "none.c" + " --epilogue-fn f -o " + Out), 2,
      "--epilogue");
  EXPECT_FALSE(std::filesystem::exists(Out));
}

TEST(EpilogueCommand, SourcesThatCrashClangExitTwo) {
  if (!epiloguesSupported())
    GTEST_SKIP() << "built without clang's libraries";
  ScratchDir Dir;
  std::string Sum = "x";
  for (int I = 0; I < 300000; ++I)
    Sum += "+x";
  spit(Dir / "deep.c", "float f(float x) { return " + Sum + "; }\n");
  spit(Dir / "embed.c", "float f(float x) { return x; }\n#embed \"/nonexistent\"\n");
  writeArray<float>(Dir / "d.npy", "<f4", {4}, {1, 2, 3, 4});
  writeArray<int64_t>(Dir / "i.npy", "<i8", {2}, {0, 3});
  const std::string Ops = "gather --data " + Dir / "d.npy" + " --indices " + Dir / "i.npy";
  const std::string Out = Dir / "o.npy";
  expectOneErrorLine(
      runCli(Dir, Ops + " --epilogue " + Dir / "deep.c" + " --epilogue-fn f -o " + Out), 2,
      "the epilogue's compile was stopped: clang crashed");
  expectOneErrorLine(
      runCli(Dir, Ops + " --epilogue " + Dir / "embed.c" + " --epilogue-fn f -o " + Out), 2,
      "embed.c:2: error: an epilogue may not embed files");
  EXPECT_FALSE(std::filesystem::exists(Out));
}

TEST(EpilogueCommand, CheckedEpilogueFaultsExitTwoOnBothEngines) {
  if (!epiloguesSupported())
    GTEST_SKIP() << "built without clang's libraries";
  ScratchDir Dir;
  // Reads one float past its row where the row starts above 10.
  spit(Dir / "past.c", "void f(const float *row, float *out) {\n"
                       "  for (int j = 0; j < GJ_ROW_OUT; ++j) out[j] = row[j + (row[0] > 10)];\n"
                       "}\n");
  writeArray<float>(Dir / "d.npy", "<f4", {4, 4},
                    {0, 1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13, 14, 15});
  writeArray<int64_t>(Dir / "i.npy", "<i8", {2}, {0, 1});
  writeArray<int64_t>(Dir / "j.npy", "<i8", {2}, {0, 3});
  const std::string Epi = " --epilogue " + Dir / "past.c" + " --epilogue-fn f --epilogue-checked";
  for (const char *Engine : {"jit", "interp"}) {
    SCOPED_TRACE(Engine);
    const std::string Out = Dir / (std::string(Engine) + ".npy");
    const std::string Ops = "gather --data " + Dir / "d.npy" + " --engine " + Engine;
    CliResult Good = runCli(Dir, Ops + " --indices " + Dir / "i.npy" + Epi + " -o " + Out);
    ASSERT_EQ(Good.Exit, 0) << Good.Err;
    EXPECT_EQ(readArray<float>(Out), (std::vector<float>{0, 1, 2, 3, 4, 5, 6, 7}));
    std::filesystem::remove(Out);
    expectOneErrorLine(runCli(Dir, Ops + " --indices " + Dir / "j.npy" + Epi + " -o " + Out), 2,
                       "the checked epilogue read or wrote outside its row");
    EXPECT_FALSE(std::filesystem::exists(Out));
  }
  expectOneErrorLine(runCli(Dir, "gather --data " + Dir / "d.npy" + " --indices " + Dir / "i.npy" +
                                     " --epilogue-checked -o " + Dir / "o.npy"),
                     2, "--epilogue-checked need --epilogue");
}

} // namespace
