//===- tests/tools/BenchCommandTest.cpp - gatherjit bench ----------------===//
//
// The report `gatherjit bench` writes (rows, Markdown, chart) on two tiny
// cases, and its errors. Speed itself is measured by the command, never
// asserted here.
//
//===----------------------------------------------------------------------===//

#include "CliTestUtil.h"
#include "bench/Suite.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <cstdlib>
#include <sstream>

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
  // The machine: the first CPU's model name, and its family and model
  // numbers (a virtual machine's name alone can hide its generation).
  std::string Name, Family, Model;
  std::istringstream CpuInfo(slurp("/proc/cpuinfo"));
  for (std::string Line; std::getline(CpuInfo, Line) && !Line.empty();) {
    const size_t Colon = Line.find(": ");
    if (Line.rfind("model name", 0) == 0)
      Name = Line.substr(Colon + 2);
    else if (Line.rfind("cpu family", 0) == 0)
      Family = Line.substr(Colon + 2);
    else if (Line.rfind("model\t", 0) == 0)
      Model = Line.substr(Colon + 2);
  }
  if (!Name.empty() && !Family.empty() && !Model.empty()) {
    EXPECT_THAT(Md, HasSubstr("\n\n" + Name + " (family " + Family + ", model " + Model + "), "));
  }
  if (std::system("command -v gnuplot >/dev/null 2>&1") != 0)
    GTEST_SKIP() << "gnuplot is not installed: no chart to check";
  ASSERT_GE(Png.size(), 8u) << "no chart";
  EXPECT_EQ(Png.substr(1, 3), "PNG");
}

// Which cases read elements at random places of regions larger than 1 MiB,
// and how many, from their shapes in bench/Cases.h.
TEST(BenchCommand, RandomReadsAreTheCasesElementReadsFromLargeRegions) {
  using gatherjit::bench::RandomReads;
  std::map<std::string, RandomReads> Got;
  for (const gatherjit::bench::BenchCase &C : gatherjit::bench::benchCases())
    if (const RandomReads R = gatherjit::bench::randomReadsOf(C); R.Count)
      Got[C.Name] = R;
  // Not GE1 or GE4, whose rows of 16 and 8 KiB stay in the nearest caches,
  // nor the gathers of rows.
  ASSERT_EQ(Got.size(), 4u);
  // GE2: FLOAT32 [4096, 4096] along axis 0, each read anywhere in 64 MiB.
  EXPECT_EQ(Got["GE2"].Count, 4096u * 4096u);
  EXPECT_EQ(Got["GE2"].Regions, 1u);
  EXPECT_EQ(Got["GE2"].RegionBytes, 64u << 20);
  // GE3: FLOAT32 [64, 512, 512] along axis 1 by [64, 256, 512]: 64 slabs.
  EXPECT_EQ(Got["GE3"].Count, 64u * 256u * 512u);
  EXPECT_EQ(Got["GE3"].Regions, 64u);
  EXPECT_EQ(Got["GE3"].RegionBytes, 1u << 20);
  // GE6: UINT8 rows of 1M, each its region.
  EXPECT_EQ(Got["GE6"].Count, 8u << 20);
  EXPECT_EQ(Got["GE6"].ElemBytes, 1u);
  EXPECT_EQ(Got["GE6"].Regions, 8u);
  EXPECT_EQ(Got["GE6"].RegionBytes, 1u << 20);
  // GN2: 1M (row, column) points into a 4 MiB FLOAT32 matrix.
  EXPECT_EQ(Got["GN2"].Count, 1u << 20);
  EXPECT_EQ(Got["GN2"].ElemBytes, 4u);
  EXPECT_EQ(Got["GN2"].RegionBytes, 4u << 20);
}

TEST(BenchCommand, UnknownCaseIsAnError) {
  ScratchDir Dir;
  CliResult R = runCli(Dir, "bench --cases GE1,GE9 --results " + (Dir / "results"));
  EXPECT_EQ(R.Exit, 2);
  EXPECT_THAT(R.Err, HasSubstr("unknown case 'GE9'"));
  EXPECT_THAT(R.Err, HasSubstr("GE1,GE1_clamp,GE2"));
}

} // namespace
