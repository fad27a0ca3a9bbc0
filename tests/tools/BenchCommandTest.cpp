//===- tests/tools/BenchCommandTest.cpp - gatherjit bench ----------------===//
//
// The report `gatherjit bench` writes (rows, Markdown, chart) on two tiny
// cases, and its errors. Speed itself is measured by the command, never
// asserted here.
//
//===----------------------------------------------------------------------===//

#include "CliTestUtil.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <cstdlib>

using namespace gatherjit::test;
using ::testing::HasSubstr;

namespace {

TEST(BenchCommand, WritesRowsReportAndChart) {
  ScratchDir Dir;
  CliResult R = runCli(Dir, "bench --quiet --cases GE5,G4 --threads 2 --json " +
                                (Dir / "rows.json") + " --results " + (Dir / "results"));
  ASSERT_EQ(R.Exit, 0) << R.Err;
  const std::string Rows = slurp(Dir / "rows.json");
  // Four rows per case: interp, generic, jit on 1 thread and on 2.
  for (const char *Case : {"GE5", "G4"}) {
    for (const char *Engine : {"interp", "generic", "jit"}) {
      const std::string Needle = std::string("\"case\": \"") + Case + "\"";
      EXPECT_THAT(Rows, HasSubstr(Needle));
      EXPECT_THAT(Rows, HasSubstr(std::string("\"engine\": \"") + Engine + "\""));
    }
  }
  for (const char *Field :
       {"\"median_ns\": ", "\"effective_gbps\": ", "\"memcpy_gbps\": ", "\"threads\": 2"})
    EXPECT_THAT(Rows, HasSubstr(Field));
  size_t Count = 0;
  for (size_t P = Rows.find("\"case\""); P != std::string::npos; P = Rows.find("\"case\"", P + 1))
    ++Count;
  EXPECT_EQ(Count, 8u);
  // The dated report, its table, and a PNG chart.
  std::string Md, Png;
  for (auto &E : std::filesystem::directory_iterator(Dir / "results")) {
    if (E.path().extension() == ".md")
      Md = slurp(E.path().string());
    if (E.path().extension() == ".png")
      Png = slurp(E.path().string());
    if (E.path().extension() == ".json") {
      EXPECT_EQ(slurp(E.path().string()), Rows);
    }
  }
  EXPECT_THAT(Md, HasSubstr("| GE5 |"));
  EXPECT_THAT(Md, HasSubstr("| G4 |"));
  EXPECT_THAT(Md, HasSubstr("cache hit"));
  EXPECT_THAT(Md, HasSubstr("In a fresh process"));
  EXPECT_EQ(Md, R.Out);
  if (std::system("command -v gnuplot >/dev/null 2>&1") != 0)
    GTEST_SKIP() << "gnuplot is not installed: no chart to check";
  ASSERT_GE(Png.size(), 8u) << "no chart";
  EXPECT_EQ(Png.substr(1, 3), "PNG");
}

TEST(BenchCommand, UnknownCaseIsAnError) {
  ScratchDir Dir;
  CliResult R = runCli(Dir, "bench --cases GE1,GE9 --results " + (Dir / "results"));
  EXPECT_EQ(R.Exit, 2);
  EXPECT_THAT(R.Err, HasSubstr("unknown case 'GE9'"));
  EXPECT_THAT(R.Err, HasSubstr("GE1,GE1_clamp,GE2"));
}

} // namespace
