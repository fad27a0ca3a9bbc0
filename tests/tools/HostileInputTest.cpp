//===- tests/tools/HostileInputTest.cpp - The command line against abuse -===//
//
// What a hostile or careless user can hand the command line: outputs that
// are devices, pipes or standard output, inputs that never end or announce
// terabytes, descriptors nested or sized to exhaust the parser, values with
// control characters, malformed numbers, and a kernel cache that is not the
// user's. Each ends in a success or exactly one "error:" line with the
// documented exit status, and nothing the user pointed at is replaced.
//
//===----------------------------------------------------------------------===//

#include "CliTestUtil.h"
#include "gatherjit/DescriptorJson.h"

#include <gmock/gmock.h>

#include <cstdlib>
#include <sys/resource.h>
#include <sys/stat.h>
#include <sys/sysmacros.h>
#include <thread>

using namespace gatherjit;
using namespace gatherjit::test;
using ::testing::HasSubstr;
using ::testing::StartsWith;

namespace {

class HostileInput : public ::testing::Test {
protected:
  void SetUp() override {
    writeArray<float>(Dir / "data.npy", "<f4", {2, 3}, {1, 2, 3, 4, 5, 6});
    writeArray<int64_t>(Dir / "idx.npy", "<i8", {2, 2}, {2, 0, 1, 1});
  }
  std::string ge(const std::string &Out, const std::string &Axis = "1") const {
    return "gather-elements --data " + Dir / "data.npy" + " --indices " + Dir / "idx.npy" +
           " --axis " + Axis + " -o " + Out;
  }
  /// The expected output of ge(): rows gathered along axis 1.
  static std::vector<float> expected() { return {3, 1, 5, 5}; }
  std::vector<float> parse(const std::string &Bytes) {
    spit(Dir / "parsed.npy", Bytes);
    return readArray<float>(Dir / "parsed.npy");
  }
  ScratchDir Dir;
};

TEST_F(HostileInput, DashAndDevStdoutWriteToStandardOutput) {
  CliResult R = runCli(Dir, ge("-"));
  ASSERT_EQ(R.Exit, 0) << R.Err;
  EXPECT_EQ(parse(R.Out), expected());
  R = runCli(Dir, ge("/dev/stdout"));
  ASSERT_EQ(R.Exit, 0) << R.Err;
  EXPECT_EQ(parse(R.Out), expected());
  R = runCli(Dir, "ir " + ge("-"));
  ASSERT_EQ(R.Exit, 0) << R.Err;
  EXPECT_THAT(R.Out, HasSubstr("define"));
}

TEST_F(HostileInput, DeviceOutputsAreWrittenIntoNeverReplaced) {
  const std::string Null = Dir / "null", Full = Dir / "full";
  if (::mknod(Null.c_str(), S_IFCHR | 0666, makedev(1, 3)) != 0 ||
      ::mknod(Full.c_str(), S_IFCHR | 0666, makedev(1, 7)) != 0)
    GTEST_SKIP() << "this process may not make device nodes";
  CliResult R = runCli(Dir, ge(Null));
  EXPECT_EQ(R.Exit, 0) << R.Err;
  // A full disk is an I/O failure: exit 1, the path and the system's words.
  expectOneErrorLine(runCli(Dir, ge(Full)), 1, "No space left on device");
  for (const std::string &Aot : {"aot --data-shape 4,4 --indices-shape 4,4 -o " + Full})
    expectOneErrorLine(runCli(Dir, Aot), 1, "No space left on device");
  struct stat St;
  ASSERT_EQ(::lstat(Null.c_str(), &St), 0);
  EXPECT_TRUE(S_ISCHR(St.st_mode));
  ASSERT_EQ(::lstat(Full.c_str(), &St), 0);
  EXPECT_TRUE(S_ISCHR(St.st_mode));
}

TEST_F(HostileInput, AotObjectAndHeaderMustDiffer) {
  spit(Dir / "k.o", "precious");
  ASSERT_EQ(::symlink("k.o", (Dir / "alias.h").c_str()), 0);
  const std::string Shape = "aot --data-shape 4,4 --indices-shape 4,4 -o " + Dir / "k.o";
  expectOneErrorLine(runCli(Dir, Shape + " --header " + Dir / "k.o"), 2, "the same file");
  expectOneErrorLine(runCli(Dir, Shape + " --header " + Dir / "alias.h"), 2, "the same file");
  EXPECT_EQ(slurp(Dir / "k.o"), "precious");
}

TEST_F(HostileInput, InputsThatNeverEndAreRefusedAndFifosAreStreamed) {
  expectOneErrorLine(runCli(Dir, "gather-elements --data /dev/zero --indices " + Dir / "idx.npy" +
                                     " -o " + Dir / "o.npy"),
                     2, "character device");
  expectOneErrorLine(runCli(Dir, "run /dev/urandom --input " + Dir / "data.npy" + " --indices " +
                                     Dir / "idx.npy" + " -o " + Dir / "o.npy"),
                     2, "character device");
  const std::string Fifo = Dir / "data.fifo";
  ASSERT_EQ(::mkfifo(Fifo.c_str(), 0600), 0);
  const std::string Bytes = slurp(Dir / "data.npy");
  std::thread Writer([&] { spit(Fifo, Bytes); });
  CliResult R = runCli(Dir, "gather-elements --data " + Fifo + " --indices " + Dir / "idx.npy" +
                                " --axis 1 -o " + Dir / "o.npy");
  Writer.join();
  ASSERT_EQ(R.Exit, 0) << R.Err;
  EXPECT_EQ(readArray<float>(Dir / "o.npy"), expected());
}

TEST_F(HostileInput, SizesFromInputAreCheckedBeforeAllocation) {
  // 8 MiB of inputs asking for a 4 TiB output.
  writeArray<float>(Dir / "tall.npy", "<f4", {1048576, 1}, std::vector<float>(1048576));
  writeArray<int32_t>(Dir / "zeros.npy", "<i4", {1048576}, std::vector<int32_t>(1048576));
  expectOneErrorLine(runCli(Dir, "gather --data " + Dir / "tall.npy" + " --indices " +
                                     Dir / "zeros.npy" + " --axis 1 -o " + Dir / "o.npy"),
                     2, "more than this machine's memory");
  // A 128-byte file announcing 2^40 rows of nothing, gathered along its
  // empty axis.
  writeArray<float>(Dir / "empty.npy", "<f4", {uint64_t(1) << 40, 0}, std::vector<float>());
  expectOneErrorLine(runCli(Dir, "gather --data " + Dir / "empty.npy" + " --indices " +
                                     Dir / "idx.npy" + " --axis 1 -o " + Dir / "o.npy"),
                     2, "more than this machine's memory");
  // A header announcing more data than the file has is refused unread.
  std::string Lying = slurp(Dir / "data.npy");
  Lying.resize(Lying.size() - 4);
  spit(Dir / "lying.npy", Lying);
  expectOneErrorLine(runCli(Dir, "gather --data " + Dir / "lying.npy" + " --indices " +
                                     Dir / "idx.npy" + " -o " + Dir / "o.npy"),
                     2, "truncated data");
  writeArray<float>(Dir / "three.npy", "<f4", {3}, {1, 2, 3});
  writeArray<int64_t>(Dir / "i3.npy", "<i8", {3}, {0, 1, 2});
  writeArray<int64_t>(Dir / "one.npy", "<i8", {1}, {0});
  const std::string Run = " --input " + Dir / "three.npy" + " -o " + Dir / "o.npy";
  spit(Dir / "strided.json", R"({"operator": "GATHER_ELEMENTS", "axis": 0,
    "input": {"data_type": "FLOAT32", "sizes": [3]},
    "indices": {"data_type": "INT64", "sizes": [3]},
    "output": {"data_type": "FLOAT32", "sizes": [3], "strides": [1000000000000000000]}})");
  expectOneErrorLine(
      runCli(Dir, "run " + Dir / "strided.json" + Run + " --indices " + Dir / "i3.npy"), 2,
      "more than this machine's memory");
  spit(Dir / "broadcast.json", R"({"operator": "GATHER", "axis": 0, "index_dimensions": 1,
    "input": {"data_type": "FLOAT32", "sizes": [3]},
    "indices": {"data_type": "INT64", "sizes": [1099511627776], "strides": [0]},
    "output": {"data_type": "FLOAT32", "sizes": [1099511627776]}})");
  expectOneErrorLine(
      runCli(Dir, "run " + Dir / "broadcast.json" + Run + " --indices " + Dir / "one.npy"), 2,
      "more than this machine's memory");
  EXPECT_FALSE(std::filesystem::exists(Dir.Path / "o.npy"));
}

TEST_F(HostileInput, DescriptorsTooDeepOrTooLargeAreRefusedBeforeParsing) {
  spit(Dir / "deep.json", std::string(100000, '[') + std::string(100000, ']'));
  spit(Dir / "large.json", "{\"operator\": \"" + std::string(2 << 20, 'G') + "\"}");
  const std::string Operands =
      " --input " + Dir / "data.npy" + " --indices " + Dir / "idx.npy" + " -o " + Dir / "o.npy";
  for (const std::string Command : {"run", "ir run"})
    expectOneErrorLine(runCli(Dir, Command + " " + Dir / "deep.json" + Operands), 2,
                       "nested more than");
  expectOneErrorLine(runCli(Dir, "aot --desc " + Dir / "deep.json" + " -o " + Dir / "k.o"), 2,
                     "nested more than");
  expectOneErrorLine(runCli(Dir, "run " + Dir / "large.json" + Operands), 2, "larger than");
}

TEST_F(HostileInput, ValuesInErrorsAreEscapedAndCut) {
  const std::string Operands =
      " --input " + Dir / "data.npy" + " --indices " + Dir / "idx.npy" + " -o " + Dir / "o.npy";
  spit(Dir / "long.json", "{\"operator\": \"" + std::string(300, 'X') + "\"}");
  CliResult R = runCli(Dir, "run " + Dir / "long.json" + Operands);
  expectOneErrorLine(R, 2, "(100 more bytes)");
  EXPECT_LT(R.Err.size(), 500u);
  spit(
      Dir / "control.json",
      R"({"operator": "GATHER_ELEMENTS", "axis": 0, "input": {"data_type": "FLO\u0000AT\n\u001b"}})");
  R = runCli(Dir, "run " + Dir / "control.json" + Operands);
  expectOneErrorLine(R, 2, R"("FLO\0AT\n\x1b")");
  EXPECT_EQ(R.Err.find('\0'), std::string::npos);
  spit(Dir / "dup.json", R"({"operator": "GATHER_ELEMENTS", "axis": 0, "axis": 1})");
  expectOneErrorLine(runCli(Dir, "run " + Dir / "dup.json" + Operands), 2, "'axis' appears twice");
}

TEST_F(HostileInput, IntegerOptionsTakeDecimalDigitsOnly) {
  for (const char *Bad : {"''", "' 1'", "+1", "0x10", "1.5", "99999999999999999999", "1e3"})
    expectOneErrorLine(runCli(Dir, ge(Dir / "o.npy", Bad)), 2, "is not an integer");
  expectOneErrorLine(runCli(Dir, ge(Dir / "o.npy") + " --threads -1"), 2, "--threads");
  expectOneErrorLine(runCli(Dir, ge(Dir / "o.npy") + " --repeat 0"), 2, "--repeat");
  CliResult R = runCli(Dir, ge(Dir / "o.npy", "-1") + " --threads 1 --repeat 2");
  ASSERT_EQ(R.Exit, 0) << R.Err;
  EXPECT_EQ(readArray<float>(Dir / "o.npy"), expected());
}

TEST_F(HostileInput, AProcessThatCannotMakeThreadsStillGathers) {
  // A stack limit past the address space: every thread the command asks
  // for fails, as under a container's process limit. A kernel large
  // enough to split runs on the caller's thread, generic or specialized.
  rlimit Old;
  ASSERT_EQ(getrlimit(RLIMIT_STACK, &Old), 0);
  const rlim_t Huge = rlim_t(1) << 50;
  if (Old.rlim_max != RLIM_INFINITY && Old.rlim_max < Huge)
    GTEST_SKIP() << "the hard stack limit is below 1 PiB";
  std::vector<float> Wide(512 * 512);
  std::vector<int32_t> Ids(512 * 512);
  for (size_t I = 0; I < Wide.size(); ++I) {
    Wide[I] = static_cast<float>(I);
    Ids[I] = static_cast<int32_t>((I * 7919) % 512);
  }
  writeArray<float>(Dir / "wide.npy", "<f4", {512, 512}, Wide);
  writeArray<int32_t>(Dir / "ids.npy", "<i4", {512, 512}, Ids);
  std::vector<float> Expected(Wide.size());
  for (size_t I = 0; I < Wide.size(); ++I)
    Expected[I] = Wide[I / 512 * 512 + static_cast<size_t>(Ids[I])];
  const std::string Command = "gather-elements --data " + Dir / "wide.npy" + " --indices " +
                              Dir / "ids.npy" + " --axis 1 --threads 2 --repeat 3 --no-cache -o ";
  const rlimit NoThreads = {Huge, Old.rlim_max};
  ASSERT_EQ(setrlimit(RLIMIT_STACK, &NoThreads), 0);
  const CliResult Adaptive = runCli(Dir, Command + Dir / "a.npy");
  const CliResult Compiled = runCli(Dir, Command + Dir / "c.npy --specialize compile");
  ASSERT_EQ(setrlimit(RLIMIT_STACK, &Old), 0);
  ASSERT_EQ(Adaptive.Exit, 0) << Adaptive.Err;
  ASSERT_EQ(Compiled.Exit, 0) << Compiled.Err;
  EXPECT_EQ(readArray<float>(Dir / "a.npy"), Expected);
  EXPECT_EQ(readArray<float>(Dir / "c.npy"), Expected);
}

TEST_F(HostileInput, ManyThreadsAndLoggingFlagsKeepStderrToItsContract) {
  // More threads than cores on a kernel large enough to split (1 MiB of
  // output): one --stats line, nothing from oneTBB.
  writeArray<float>(Dir / "wide.npy", "<f4", {512, 512}, std::vector<float>(512 * 512, 1));
  writeArray<int32_t>(Dir / "zeros.npy", "<i4", {512, 512}, std::vector<int32_t>(512 * 512));
  CliResult R =
      runCli(Dir, "gather-elements --data " + Dir / "wide.npy" + " --indices " + Dir / "zeros.npy" +
                      " --axis 1 -o " + Dir / "w.npy" + " --threads 64 --stats");
  ASSERT_EQ(R.Exit, 0) << R.Err;
  EXPECT_EQ(readArray<float>(Dir / "w.npy"), std::vector<float>(512 * 512, 1));
  EXPECT_EQ(std::count(R.Err.begin(), R.Err.end(), '\n'), 1) << R.Err;
  EXPECT_THAT(R.Err, StartsWith("{\"engine\""));
  ::setenv("GATHERJIT_LOG", "0", 1);
  R = runCli(Dir, ge(Dir / "o.npy"));
  EXPECT_EQ(R.Err, "") << "GATHERJIT_LOG=0 is off";
  ::setenv("GATHERJIT_LOG", "1", 1);
  R = runCli(Dir, ge(Dir / "o.npy") + " --specialize compile");
  EXPECT_THAT(R.Err, HasSubstr("gatherjit: compiled"));
  ::unsetenv("GATHERJIT_LOG");
}

TEST_F(HostileInput, AnUnusableCacheDirectoryWarnsOnceAndCompiles) {
  spit(Dir / "a-file", "not a directory");
  std::filesystem::create_directory(Dir.Path / "shared");
  ASSERT_EQ(::chmod((Dir / "shared").c_str(), 0777), 0);
  ASSERT_EQ(::symlink("loop", (Dir / "loop").c_str()), 0);
  for (const std::string &Cache : {Dir / "a-file", Dir / "shared", Dir / "loop"}) {
    CliResult R = runCli(Dir, ge(Dir / "o.npy") + " --cache-dir " + Cache);
    ASSERT_EQ(R.Exit, 0) << R.Err;
    EXPECT_THAT(R.Err, StartsWith("warning: gatherjit: not using the kernel cache"));
    EXPECT_EQ(std::count(R.Err.begin(), R.Err.end(), '\n'), 1) << R.Err;
    EXPECT_EQ(readArray<float>(Dir / "o.npy"), expected());
  }
  EXPECT_TRUE(std::filesystem::is_empty(Dir.Path / "shared"));
}

} // namespace

namespace {

/// Runs \p Program (not the build's gatherjit) with \p Args.
CliResult runProgram(const ScratchDir &Dir, const std::string &Program, const std::string &Args) {
  const std::string Out = Dir / "stdout.txt", Err = Dir / "stderr.txt";
  const int Raw = std::system((Program + " " + Args + " >" + Out + " 2>" + Err).c_str());
  CliResult R;
  R.Exit = WIFEXITED(Raw) ? WEXITSTATUS(Raw) : -1;
  R.Out = slurp(Out);
  R.Err = slurp(Err);
  return R;
}

} // namespace

TEST_F(HostileInput, GatherjitAloneRunsCachedKernelsAndTheInterpreter) {
  // gatherjit copied away from gatherjit-llvm and gatherjit-clang: what it
  // runs, it runs without them; the rest fails with one clear line and
  // leaves no output.
  std::filesystem::create_directory(Dir.Path / "alone");
  const std::string Alone = Dir / "alone/gatherjit";
  std::filesystem::copy_file(GATHERJIT_CLI, Alone);
  // Compiled kernels are stored; the front runs what the cache holds.
  const std::string Cache = " --specialize compile --cache-dir " + Dir / "cache";
  const std::string Out = Dir / "o.npy";
  CliResult R = runProgram(Dir, Alone, ge(Out) + Cache);
  EXPECT_EQ(R.Exit, 1);
  EXPECT_THAT(R.Err, HasSubstr("error: running '" + Dir / "alone/gatherjit-llvm" + "'"));
  EXPECT_FALSE(std::filesystem::exists(Out));

  R = runCli(Dir, ge(Out) + Cache); // Compiles and stores the kernel.
  ASSERT_EQ(R.Exit, 0) << R.Err;
  std::filesystem::remove(Out);
  R = runProgram(Dir, Alone, ge(Out) + Cache + " --stats");
  ASSERT_EQ(R.Exit, 0) << R.Err;
  EXPECT_EQ(readArray<float>(Out), expected());
  EXPECT_THAT(R.Err, StartsWith("{\"engine\": \"jit\""));

  // A small one-shot run of a new shape needs no compiler in the default
  // mode: the generic loop. Runs enough to make it hot go to gatherjit-llvm.
  std::filesystem::remove(Out);
  R = runProgram(Dir, Alone, ge(Out) + " --no-cache --stats");
  ASSERT_EQ(R.Exit, 0) << R.Err;
  EXPECT_EQ(readArray<float>(Out), expected());
  EXPECT_THAT(R.Err, HasSubstr("\"tier\": \"generic\""));
  std::filesystem::remove(Out);
  R = runProgram(Dir, Alone, ge(Out) + " --no-cache --repeat 5");
  EXPECT_EQ(R.Exit, 1);
  EXPECT_THAT(R.Err, HasSubstr("error: running '" + Dir / "alone/gatherjit-llvm" + "'"));
  EXPECT_FALSE(std::filesystem::exists(Out));

  std::filesystem::remove(Out);
  R = runProgram(Dir, Alone, ge(Out) + " --engine interp --no-cache");
  ASSERT_EQ(R.Exit, 0) << R.Err;
  EXPECT_EQ(readArray<float>(Out), expected());

  for (const auto &[Args, Program] :
       {std::pair<std::string, std::string>{ge(Out) + Cache + " --no-cache", "gatherjit-llvm"},
        // O3's pipeline is gatherjit-clang's alone: handed to it at once.
        {ge(Out) + Cache + " --opt O3", "gatherjit-clang"},
        {"ir " + ge("-") + " --opt=O3", "gatherjit-clang"},
        {"ir " + ge("-"), "gatherjit-llvm"},
        {"--help", "gatherjit-llvm"},
        {ge(Out) + " --epilogue e.c --epilogue-fn f", "gatherjit-clang"}}) {
    R = runProgram(Dir, Alone, Args);
    EXPECT_EQ(R.Exit, 1) << Args;
    EXPECT_THAT(R.Err, HasSubstr("/alone/" + Program + "'")) << Args;
    EXPECT_EQ(std::count(R.Err.begin(), R.Err.end(), '\n'), 1) << R.Err;
  }
}

TEST_F(HostileInput, GatherjitLlvmHandsEpiloguesAndO3ToGatherjitClang) {
  // gatherjit-llvm links neither clang's libraries nor LLVM's default (O3)
  // pipeline: copied away from gatherjit-clang it compiles O0 to O2 itself
  // and names gatherjit-clang for the rest; beside it, O3 gives the
  // interpreter's bytes.
  std::filesystem::create_directory(Dir.Path / "alone");
  const std::string Llvm =
      (std::filesystem::path(GATHERJIT_CLI).parent_path() / "gatherjit-llvm").string();
  const std::string Alone = Dir / "alone/gatherjit-llvm";
  std::filesystem::copy_file(Llvm, Alone);
  const std::string Out = Dir / "o.npy";
  for (const char *Level : {"O0", "O1", "O2"}) {
    std::filesystem::remove(Out);
    CliResult R = runProgram(Dir, Alone, ge(Out) + " --no-cache --opt " + Level);
    ASSERT_EQ(R.Exit, 0) << Level << ": " << R.Err;
    EXPECT_EQ(readArray<float>(Out), expected()) << Level;
  }
  std::filesystem::remove(Out);
  for (const std::string &Args :
       {ge(Out) + " --no-cache --opt O3", "ir " + ge("-") + " --opt O3",
        "aot gather --data-shape 16,4 --indices-shape 2 --name k --opt O3 -o " + Dir / "k.o" +
            " --header " + Dir / "k.h",
        ge(Out) + " --epilogue e.c --epilogue-fn f"}) {
    CliResult R = runProgram(Dir, Alone, Args);
    EXPECT_EQ(R.Exit, 1) << Args;
    EXPECT_THAT(R.Err, HasSubstr("/alone/gatherjit-clang'")) << Args;
    EXPECT_EQ(std::count(R.Err.begin(), R.Err.end(), '\n'), 1) << R.Err;
  }
  EXPECT_FALSE(std::filesystem::exists(Out));
  EXPECT_FALSE(std::filesystem::exists(Dir / "k.o"));

  CliResult R = runProgram(Dir, Llvm, ge(Out) + " --no-cache --opt O3");
  ASSERT_EQ(R.Exit, 0) << R.Err;
  EXPECT_EQ(readArray<float>(Out), expected());
}
