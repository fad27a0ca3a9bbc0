//===- tests/tools/CommandLineTest.cpp - The gatherjit command line ------===//

#include "CliTestUtil.h"

#include <gmock/gmock.h>

#include <cstdlib>
#include <optional>
#include <sys/stat.h>

using namespace gatherjit;
using namespace gatherjit::test;
using ::testing::HasSubstr;
using ::testing::Not;
using ::testing::StartsWith;

namespace {

/// Asserts the contract for bad input: exit 2, one "error:" line.
void expectBadInput(const CliResult &R, const std::string &Substr) {
  expectOneErrorLine(R, 2, Substr);
}

class CommandLine : public ::testing::Test {
protected:
  void SetUp() override {
    writeArray<float>(Dir / "data.npy", "<f4", {3, 3}, {1, 2, 3, 4, 5, 6, 7, 8, 9});
    writeArray<int64_t>(Dir / "idx.npy", "<i8", {2, 3}, {1, 2, 0, 2, 0, 0});
  }
  ScratchDir Dir;
};

TEST_F(CommandLine, GatherElementsOnnxExample2) {
  CliResult R = runCli(Dir, "gather-elements --data " + Dir / "data.npy" + " --indices " +
                                Dir / "idx.npy" + " --axis 0 -o " + Dir / "out.npy");
  ASSERT_EQ(R.Exit, 0) << R.Err;
  std::vector<uint64_t> Shape;
  EXPECT_EQ(readArray<float>(Dir / "out.npy", &Shape), (std::vector<float>{4, 8, 3, 7, 2, 3}));
  EXPECT_EQ(Shape, (std::vector<uint64_t>{2, 3}));
}

TEST_F(CommandLine, HelpNamesTheProgramUsersRun) {
  // gatherjit hands --help to gatherjit-llvm, which prints it: the usage
  // lines still name gatherjit.
  for (const auto &[Args, Usage] :
       {std::pair<std::string, std::string>{"--help", "Usage: gatherjit [OPTIONS] SUBCOMMAND"},
        {"gather --help", "Usage: gatherjit gather [OPTIONS]"},
        {"ir gather-elements --help", "Usage: gatherjit ir gather-elements [OPTIONS]"}}) {
    CliResult R = runCli(Dir, Args);
    ASSERT_EQ(R.Exit, 0) << Args << ": " << R.Err;
    EXPECT_THAT(R.Out, HasSubstr(Usage)) << Args;
    EXPECT_THAT(R.Out, Not(HasSubstr("gatherjit-llvm"))) << Args;
  }
}

TEST_F(CommandLine, VersionAndUnknownCommands) {
  CliResult R = runCli(Dir, "--version");
  ASSERT_EQ(R.Exit, 0) << R.Err;
  EXPECT_THAT(R.Out, ::testing::MatchesRegex(
                         "gatherjit [0-9]+\\.[0-9]+\\.[0-9]+ \\(LLVM 19\\.[0-9.]+\\)\n"));
  // No command, or a word that is none: one error line listing them.
  expectOneErrorLine(runCli(Dir, ""), 2,
                     "no command given; the commands are gather-elements, gather");
  expectOneErrorLine(runCli(Dir, "gather_elements --data x.npy"), 2,
                     "'gather_elements' is not a command; the commands are gather-elements");
  expectOneErrorLine(runCli(Dir, "ir"), 2,
                     "no command given after 'gatherjit ir'; its commands are gather-elements, "
                     "gather, gather-nd, run");
  expectOneErrorLine(runCli(Dir, "ir elements"), 2,
                     "'elements' is not a command of 'gatherjit ir'; its commands are");
}

TEST_F(CommandLine, AnUnknownOptionIsNamedBeforeTheRequiredOnesItLeftOut) {
  // A mistyped flag leaves its required option out too: the error names
  // the flag, and an option a couple of edits away.
  expectOneErrorLine(runCli(Dir, "gather-elements --data x.npy --indice i.npy -o o.npy"), 2,
                     "'--indice' is not an option of 'gatherjit gather-elements'; did you mean "
                     "'--indices'?");
  expectOneErrorLine(runCli(Dir, "ir gather --data x.npy --indices i.npy --bogus"), 2,
                     "'--bogus' is not an option of 'gatherjit ir gather' (see 'gatherjit ir "
                     "gather --help')");
  expectOneErrorLine(runCli(Dir, "gather -q --data x.npy"), 2,
                     "'-q' is not an option of 'gatherjit gather'");
  // Values that begin with '-' are not options: the parser's own error.
  expectOneErrorLine(
      runCli(Dir, "aot --data-shape 4,4 --indices-shape 4,1 --axis -1 --features -avx512f"), 2,
      "--output is required");
  expectOneErrorLine(runCli(Dir, "gather-elements --data=x.npy --axis=-1"), 2,
                     "--indices is required");
}

TEST_F(CommandLine, SpecializeChoosesTheTierAndStatsNameIt) {
  const std::string Args = "gather-elements --data " + Dir / "data.npy" + " --indices " +
                           Dir / "idx.npy" + " --axis 0 -o " + Dir / "out.npy" +
                           " --no-cache --stats";
  for (const auto &[Flag, Tier] : {std::pair<std::string, std::string>{"", "generic"},
                                   {" --specialize adaptive", "generic"},
                                   {" --specialize never", "generic"},
                                   {" --specialize compile", "specialized"}}) {
    CliResult R = runCli(Dir, Args + Flag);
    ASSERT_EQ(R.Exit, 0) << R.Err;
    EXPECT_THAT(R.Err, HasSubstr("\"tier\": \"" + Tier + "\"")) << Flag;
    EXPECT_EQ(readArray<float>(Dir / "out.npy"), (std::vector<float>{4, 8, 3, 7, 2, 3})) << Flag;
  }
  CliResult R = runCli(Dir, Args + " --engine interp");
  EXPECT_THAT(R.Err, HasSubstr("\"tier\": \"interpreter\""));
  R = runCli(Dir, Args + " --specialize eager");
  EXPECT_EQ(R.Exit, 2);
  EXPECT_THAT(R.Err, HasSubstr("--specialize"));
  EXPECT_THAT(R.Err, HasSubstr("eager"));
}

TEST_F(CommandLine, FlagsInAnyOrderAndNegativeAxis) {
  writeArray<int32_t>(Dir / "i1.npy", "<i4", {3, 1}, {2, -1, 0});
  CliResult R = runCli(Dir, "gather-elements -o " + Dir / "out.npy" + " --axis -1 --indices " +
                                Dir / "i1.npy" + " --data " + Dir / "data.npy");
  ASSERT_EQ(R.Exit, 0) << R.Err;
  EXPECT_EQ(readArray<float>(Dir / "out.npy"), (std::vector<float>{3, 6, 7}));
}

TEST_F(CommandLine, OnnxGather) {
  writeArray<int64_t>(Dir / "rows.npy", "<i8", {2}, {2, 0});
  CliResult R = runCli(Dir, "gather --data " + Dir / "data.npy" + " --indices " + Dir / "rows.npy" +
                                " -o " + Dir / "out.npy");
  ASSERT_EQ(R.Exit, 0) << R.Err;
  std::vector<uint64_t> Shape;
  EXPECT_EQ(readArray<float>(Dir / "out.npy", &Shape), (std::vector<float>{7, 8, 9, 1, 2, 3}));
  EXPECT_EQ(Shape, (std::vector<uint64_t>{2, 3}));
}

TEST_F(CommandLine, AnEmptyOutputStillHasItsIndicesChecked) {
  // Gather of [0, 3] on axis 1 by [1, 3]: an empty output [0, 2], but 3
  // is out of range, an error under ONNX (and for both engines) that
  // writes no file; --oob clamp writes the empty array.
  writeArray<float>(Dir / "empty.npy", "<f4", {0, 3}, {});
  writeArray<int64_t>(Dir / "ids.npy", "<i8", {2}, {1, 3});
  for (const char *Engine : {"jit", "interp"}) {
    CliResult R =
        runCli(Dir, "gather --data " + Dir / "empty.npy" + " --indices " + Dir / "ids.npy" +
                        " --axis 1 --engine " + Engine + " -o " + Dir / "out.npy");
    expectBadInput(R, "Gather: indices[1] = 3 is out of range for axis 1 of size 3");
    EXPECT_FALSE(std::filesystem::exists(Dir / "out.npy"));
  }
  CliResult R = runCli(Dir, "gather --data " + Dir / "empty.npy" + " --indices " + Dir / "ids.npy" +
                                " --axis 1 --oob clamp -o " + Dir / "out.npy");
  ASSERT_EQ(R.Exit, 0) << R.Err;
  std::vector<uint64_t> Shape;
  EXPECT_TRUE(readArray<float>(Dir / "out.npy", &Shape).empty());
  EXPECT_EQ(Shape, (std::vector<uint64_t>{0, 2}));
}

TEST_F(CommandLine, OnnxGatherNDWithBatchDims) {
  // ONNX's GatherND example 5: batch_dims = 1.
  writeArray<int32_t>(Dir / "cube.npy", "<i4", {2, 2, 2}, {0, 1, 2, 3, 4, 5, 6, 7});
  writeArray<int64_t>(Dir / "tuples.npy", "<i8", {2, 1}, {1, 0});
  for (const char *Engine : {"jit", "interp"}) {
    CliResult R =
        runCli(Dir, "gather-nd --data " + Dir / "cube.npy" + " --indices " + Dir / "tuples.npy" +
                        " --batch-dims 1 --engine " + Engine + " -o " + Dir / "out.npy");
    ASSERT_EQ(R.Exit, 0) << R.Err;
    std::vector<uint64_t> Shape;
    EXPECT_EQ(readArray<int32_t>(Dir / "out.npy", &Shape), (std::vector<int32_t>{2, 3, 4, 5}));
    EXPECT_EQ(Shape, (std::vector<uint64_t>{2, 2}));
  }
  writeArray<int64_t>(Dir / "bad.npy", "<i8", {2, 1}, {1, 2});
  CliResult R = runCli(Dir, "gather-nd --data " + Dir / "cube.npy" + " --indices " +
                                Dir / "bad.npy" + " --batch-dims 1 -o " + Dir / "bad_out.npy");
  // Named in the node's own indices (2 x 1), not the padded descriptor's.
  expectBadInput(R, "GatherND: indices[1, :] = (2,) has component 0 = 2, out of range for "
                    "axis 1 of size 2; valid indices are -2..1");
  EXPECT_FALSE(std::filesystem::exists(Dir / "bad_out.npy"));
  R = runCli(Dir, "gather-nd --data " + Dir / "cube.npy" + " --indices " + Dir / "bad.npy" +
                      " --batch-dims 1 --oob clamp -o " + Dir / "out.npy");
  ASSERT_EQ(R.Exit, 0) << R.Err;
  EXPECT_EQ(readArray<int32_t>(Dir / "out.npy"), (std::vector<int32_t>{2, 3, 6, 7}));
  expectBadInput(runCli(Dir, "gather-nd --data " + Dir / "cube.npy" + " --indices " +
                                 Dir / "tuples.npy" + " --batch-dims 2 -o " + Dir / "o.npy"),
                 "batch_dims = 2 is out of range");
  expectBadInput(runCli(Dir, "gather-nd --data " + Dir / "cube.npy" + " --indices " +
                                 Dir / "tuples.npy" + " --axis 1 -o " + Dir / "o.npy"),
                 "--axis");
}

TEST_F(CommandLine, RunGatherND1Descriptor) {
  spit(Dir / "nd1.json", R"({"operator": "GATHER_ND1", "batch_dimension_count": 1,
    "input_dimension_count": 3, "indices_dimension_count": 3,
    "input": {"data_type": "FLOAT32", "sizes": [1, 3, 2, 2]},
    "indices": {"data_type": "UINT32", "sizes": [1, 3, 2, 2]},
    "output": {"data_type": "FLOAT32", "sizes": [1, 1, 3, 2]}})");
  std::vector<float> In(12);
  for (int I = 0; I < 12; ++I)
    In[I] = static_cast<float>(I);
  writeArray<float>(Dir / "in.npy", "<f4", {1, 3, 2, 2}, In);
  writeArray<uint32_t>(Dir / "t.npy", "<u4", {1, 3, 2, 2}, {0, 0, 1, 1, 1, 1, 0, 0, 0, 1, 1, 0});
  CliResult R = runCli(Dir, "run " + Dir / "nd1.json" + " --input " + Dir / "in.npy" +
                                " --indices " + Dir / "t.npy" + " -o " + Dir / "out.npy");
  ASSERT_EQ(R.Exit, 0) << R.Err;
  std::vector<uint64_t> Shape;
  EXPECT_EQ(readArray<float>(Dir / "out.npy", &Shape), (std::vector<float>{0, 3, 7, 4, 9, 10}));
  EXPECT_EQ(Shape, (std::vector<uint64_t>{1, 1, 3, 2}));
}

TEST_F(CommandLine, FortranOrderDataIsReadCorrectly) {
  // data.T stored in Fortran order is data again, logically transposed.
  std::string Header = "{'descr': '<f4', 'fortran_order': True, 'shape': (3, 3), }";
  std::vector<float> ColumnMajor = {1, 2, 3, 4, 5,
                                    6, 7, 8, 9}; // Logical [[1,4,7],[2,5,8],[3,6,9]].
  std::string File = encodeNpy("<f4", {3, 3}, ColumnMajor.data(), 36);
  File.replace(File.find("False"), 5, "True ");
  spit(Dir / "fdata.npy", File);
  CliResult R = runCli(Dir, "gather-elements --data " + Dir / "fdata.npy" + " --indices " +
                                Dir / "idx.npy" + " -o " + Dir / "out.npy");
  ASSERT_EQ(R.Exit, 0) << R.Err;
  EXPECT_EQ(readArray<float>(Dir / "out.npy"), (std::vector<float>{2, 6, 7, 3, 4, 7}));
}

TEST_F(CommandLine, RunDirectMLDescriptorClampsByDefault) {
  spit(Dir / "d.json", R"({"operator": "GATHER_ELEMENTS", "axis": 0,
      "input": {"data_type": "FLOAT32", "sizes": [3, 3]},
      "indices": {"data_type": "INT64", "sizes": [2, 3]},
      "output": {"data_type": "FLOAT32", "sizes": [2, 3]}})");
  writeArray<int64_t>(Dir / "bad.npy", "<i8", {6}, {1, 2, 0, 9, -1, -9});
  CliResult R = runCli(Dir, "run " + Dir / "d.json" + " --input " + Dir / "data.npy" +
                                " --indices " + Dir / "bad.npy" + " -o " + Dir / "out.npy");
  ASSERT_EQ(R.Exit, 0) << R.Err;
  EXPECT_EQ(readArray<float>(Dir / "out.npy"), (std::vector<float>{4, 8, 3, 7, 8, 3}));
}

TEST_F(CommandLine, RunStridedOutput) {
  // Output written transposed; the file holds it in logical order.
  spit(Dir / "d.json", R"({"operator": "GATHER", "axis": 0, "index_dimensions": 1,
      "input": {"data_type": "FLOAT32", "sizes": [3, 3]},
      "indices": {"data_type": "INT64", "sizes": [1, 2]},
      "output": {"data_type": "FLOAT32", "sizes": [2, 3], "strides": [1, 2]}})");
  writeArray<int64_t>(Dir / "rows.npy", "<i8", {2}, {2, 0});
  CliResult R = runCli(Dir, "run " + Dir / "d.json" + " --input " + Dir / "data.npy" +
                                " --indices " + Dir / "rows.npy" + " -o " + Dir / "out.npy");
  ASSERT_EQ(R.Exit, 0) << R.Err;
  EXPECT_EQ(readArray<float>(Dir / "out.npy"), (std::vector<float>{7, 8, 9, 1, 2, 3}));
}

TEST_F(CommandLine, OutOfRangeUnderCheckLeavesNoFile) {
  writeArray<int64_t>(Dir / "bad.npy", "<i8", {2, 3}, {1, 2, 0, 2, 3, 0});
  for (const char *Engine : {"jit", "interp"}) {
    CliResult R =
        runCli(Dir, "gather-elements --data " + Dir / "data.npy" + " --indices " + Dir / "bad.npy" +
                        " --engine " + Engine + " -o " + Dir / "out.npy");
    expectBadInput(R, "GatherElements: indices[1, 1] = 3 is out of range for axis 0 of size 3; "
                      "valid indices are -3..2");
    EXPECT_FALSE(std::filesystem::exists(Dir / "out.npy"));
  }
}

TEST_F(CommandLine, OutOfRangeIndicesAreNamedInTheNodesOwnShape) {
  // Gather's descriptor pads 2-D indices of 3-D output to rank 3
  // (IndicesTensor[0,1,0] there); the user gave indices[1, 0].
  writeArray<int64_t>(Dir / "ids.npy", "<i8", {2, 2}, {0, 1, 7, 2});
  expectBadInput(runCli(Dir, "gather --data " + Dir / "data.npy" + " --indices " + Dir / "ids.npy" +
                                 " --axis 1 -o " + Dir / "out.npy"),
                 "Gather: indices[1, 0] = 7 is out of range for axis 1 of size 3; valid indices "
                 "are -3..2");
  // Indices in Fortran order are read in place: logical [[0, 5], [1, 0]].
  std::string File = encodeNpy("<i8", {2, 2}, std::vector<int64_t>{0, 1, 5, 0}.data(), 32);
  File.replace(File.find("False"), 5, "True ");
  spit(Dir / "fids.npy", File);
  expectBadInput(runCli(Dir, "gather-elements --data " + Dir / "data.npy" + " --indices " +
                                 Dir / "fids.npy" + " --axis 1 -o " + Dir / "out.npy"),
                 "GatherElements: indices[0, 1] = 5 is out of range for axis 1 of size 3");
}

TEST_F(CommandLine, FailureLeavesAnExistingFileUntouched) {
  spit(Dir / "out.npy", "precious");
  CliResult R = runCli(Dir, "gather-elements --data " + Dir / "data.npy" + " --indices " +
                                Dir / "idx.npy" + " --axis 2 -o " + Dir / "out.npy");
  expectBadInput(R, "axis = 2 is out of range for a 2-D data tensor; use -2..1");
  EXPECT_EQ(slurp(Dir / "out.npy"), "precious");
  for (auto &Entry : std::filesystem::directory_iterator(Dir.Path))
    EXPECT_THAT(Entry.path().filename().string(), ::testing::Not(HasSubstr(".tmp")));
}

TEST_F(CommandLine, BadInputsExitTwo) {
  expectBadInput(runCli(Dir, ""), "");
  expectBadInput(runCli(Dir, "gather-elements --data " + Dir / "data.npy"), "--indices");
  expectBadInput(runCli(Dir, "frobnicate"), "");
  expectBadInput(runCli(Dir, "gather-elements --data " + Dir / "missing.npy" + " --indices " +
                                 Dir / "idx.npy" + " -o " + Dir / "out.npy"),
                 "cannot open");
  spit(Dir / "junk.npy", "not an npy file at all");
  expectBadInput(runCli(Dir, "gather-elements --data " + Dir / "junk.npy" + " --indices " +
                                 Dir / "idx.npy" + " -o " + Dir / "out.npy"),
                 "bad magic");
  expectBadInput(runCli(Dir, "gather-elements --data " + Dir / "data.npy" + " --indices " +
                                 Dir / "idx.npy" + " --oob wrap -o " + Dir / "out.npy"),
                 "--oob");
  writeArray<float>(Dir / "fidx.npy", "<f4", {2, 3}, {0, 0, 0, 0, 0, 0});
  expectBadInput(runCli(Dir, "gather-elements --data " + Dir / "data.npy" + " --indices " +
                                 Dir / "fidx.npy" + " -o " + Dir / "out.npy"),
                 "IndicesTensor.DataType = FLOAT32 is not an index type");
  EXPECT_FALSE(std::filesystem::exists(Dir / "out.npy"));
}

TEST_F(CommandLine, RunChecksBuffersAgainstTheDescriptor) {
  spit(Dir / "d.json", R"({"operator": "GATHER_ELEMENTS", "axis": 0,
      "input": {"data_type": "FLOAT32", "sizes": [3, 3], "strides": [4, 1]},
      "indices": {"data_type": "INT64", "sizes": [2, 3]},
      "output": {"data_type": "FLOAT32", "sizes": [2, 3]}})");
  expectBadInput(runCli(Dir, "run " + Dir / "d.json" + " --input " + Dir / "data.npy" +
                                 " --indices " + Dir / "idx.npy" + " -o " + Dir / "out.npy"),
                 "outside the buffer of TotalBytes = 36");
  expectBadInput(runCli(Dir, "run " + Dir / "d.json" + " --input " + Dir / "idx.npy" +
                                 " --indices " + Dir / "idx.npy" + " -o " + Dir / "out.npy"),
                 "does not match input.data_type FLOAT32");
  // A descriptor's own buffer size (DirectML's TotalTensorSizeInBytes)
  // must fit in the file, and bounds the tensor within it.
  spit(Dir / "t.json", R"({"operator": "GATHER_ELEMENTS", "Axis": 0,
      "InputTensor": {"DataType": "FLOAT32", "Sizes": [3, 3], "TotalTensorSizeInBytes": 40},
      "IndicesTensor": {"DataType": "INT64", "Sizes": [2, 3]},
      "OutputTensor": {"DataType": "FLOAT32", "Sizes": [2, 3]}})");
  expectBadInput(runCli(Dir, "run " + Dir / "t.json" + " --input " + Dir / "data.npy" +
                                 " --indices " + Dir / "idx.npy" + " -o " + Dir / "out.npy"),
                 "--input: the file holds 36 bytes, fewer than "
                 "input.total_tensor_size_in_bytes = 40");
  spit(Dir / "e.json", R"({"operator": "GATHER_ELEMENTS", "axis": 0, "feature_level": "9_9"})");
  expectBadInput(runCli(Dir, "run " + Dir / "e.json" + " --input " + Dir / "data.npy" +
                                 " --indices " + Dir / "idx.npy" + " -o " + Dir / "out.npy"),
                 "\"feature_level\" = \"9_9\" is unknown");
  EXPECT_FALSE(std::filesystem::exists(Dir / "out.npy"));
}

TEST_F(CommandLine, DemoRunsTheSeedExamples) {
  CliResult R = runCli(Dir, "demo");
  EXPECT_EQ(R.Exit, 0) << R.Out << R.Err;
  EXPECT_THAT(R.Out, HasSubstr("DML Gather 5, nested indices"));
  EXPECT_THAT(R.Out, ::testing::Not(HasSubstr("FAIL")));
}

} // namespace

/// Sets environment variables for one test and restores them after it.
class ScopedEnv {
public:
  void set(const char *Name, const char *Value) {
    const char *Old = std::getenv(Name);
    Saved.emplace_back(Name, Old ? std::optional<std::string>(Old) : std::nullopt);
    if (Value)
      ::setenv(Name, Value, 1);
    else
      ::unsetenv(Name);
  }
  ~ScopedEnv() {
    for (auto It = Saved.rbegin(); It != Saved.rend(); ++It) {
      if (It->second)
        ::setenv(It->first.c_str(), It->second->c_str(), 1);
      else
        ::unsetenv(It->first.c_str());
    }
  }

private:
  std::vector<std::pair<std::string, std::optional<std::string>>> Saved;
};

TEST_F(CommandLine, KeepsKernelsInTheUsersCacheDirectoryByDefault) {
  const std::string Home = Dir / "home";
  std::filesystem::create_directory(Home);
  ScopedEnv Env;
  Env.set("GATHERJIT_NO_CACHE", nullptr);
  Env.set("GATHERJIT_CACHE_DIR", nullptr);
  Env.set("XDG_CACHE_HOME", nullptr);
  Env.set("HOME", Home.c_str());
  Env.set("GATHERJIT_LOG", "1");
  const std::string Args = "gather-elements --data " + Dir / "data.npy" + " --indices " +
                           Dir / "idx.npy" + " --axis 0 -o " + Dir / "out.npy" +
                           " --specialize compile"; // Only compiled kernels are kept.
  auto Entries = [](const std::string &Cache) {
    if (!std::filesystem::is_directory(Cache))
      return 0;
    int N = 0;
    for (auto &E : std::filesystem::directory_iterator(Cache))
      N += E.path().extension() == ".gjk";
    return N;
  };
  const std::string Default = Home + "/.cache/gatherjit";
  CliResult R = runCli(Dir, Args);
  ASSERT_EQ(R.Exit, 0) << R.Err;
  EXPECT_THAT(R.Err, HasSubstr("gatherjit: compiled"));
  EXPECT_EQ(Entries(Default), 1);
  struct stat St;
  ASSERT_EQ(::stat(Default.c_str(), &St), 0);
  EXPECT_EQ(St.st_mode & 0777, 0700u);
  R = runCli(Dir, Args);
  ASSERT_EQ(R.Exit, 0) << R.Err;
  EXPECT_THAT(R.Err, HasSubstr("gatherjit: loaded")) << "the second process loads it";
  EXPECT_EQ(readArray<float>(Dir / "out.npy"), (std::vector<float>{4, 8, 3, 7, 2, 3}));

  // --no-cache and GATHERJIT_NO_CACHE keep nothing; XDG_CACHE_HOME and
  // GATHERJIT_CACHE_DIR move the directory; --cache-dir beats them all.
  std::filesystem::remove_all(Default);
  EXPECT_THAT(runCli(Dir, Args + " --no-cache").Err, HasSubstr("gatherjit: compiled"));
  Env.set("GATHERJIT_NO_CACHE", "1");
  EXPECT_EQ(runCli(Dir, Args).Exit, 0);
  EXPECT_FALSE(std::filesystem::exists(Default));
  EXPECT_EQ(runCli(Dir, Args + " --cache-dir " + Dir / "flag").Exit, 0);
  EXPECT_EQ(Entries(Dir / "flag"), 1);
  Env.set("GATHERJIT_NO_CACHE", "0");
  Env.set("XDG_CACHE_HOME", (Dir / "xdg").c_str());
  EXPECT_EQ(runCli(Dir, Args).Exit, 0);
  EXPECT_EQ(Entries(Dir / "xdg/gatherjit"), 1);
  Env.set("GATHERJIT_CACHE_DIR", (Dir / "env").c_str());
  EXPECT_EQ(runCli(Dir, Args).Exit, 0);
  EXPECT_EQ(Entries(Dir / "env"), 1);
  EXPECT_FALSE(std::filesystem::exists(Default));
  Env.set("GATHERJIT_CACHE_LIMIT_MIB", "lots");
  expectBadInput(runCli(Dir, Args), "GATHERJIT_CACHE_LIMIT_MIB");
}
