//===- tests/runtime/CudaDriverTest.cpp - The driver, faked ---------------===//
//
// --device cuda through runtime/CudaDriver.cpp against the test suite's
// fake driver (tests/fakecuda/FakeCuda.c, named by GATHERJIT_CUDA_DRIVER):
// every failure of the driver is one clean error line and exit 2 with its
// own message and no output file; a run that succeeds loads PTX for the
// device's architecture and launches the plan's grid; a bad index's key
// from the device becomes the interpreter's error for that index.
//
//===----------------------------------------------------------------------===//

#include "runtime/CudaDriver.h"
#include "../tools/CliTestUtil.h"
#include "gatherjit/Onnx.h"
#include "gatherjit/gatherjit.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <atomic>
#include <chrono>
#include <cstdlib>
#include <filesystem>
#include <thread>

using namespace gatherjit;
using namespace gatherjit::test;
using ::testing::HasSubstr;

namespace {

/// ONNX's GatherElements along axis 1 of FLOAT32 [Rows, 4] by INT64
/// [Rows, 4].
ValidDesc rowsOfFour(uint64_t Rows, OobPolicy Policy = OobPolicy::Check) {
  TensorDesc Data, Ids;
  Data.Type = DataType::Float32;
  Data.Sizes = {Rows, 4};
  Ids.Type = DataType::Int64;
  Ids.Sizes = {Rows, 4};
  Expected<ValidDesc> V = validateOnnx({OpKind::GatherElements, Data, Ids, 1}, Policy);
  EXPECT_TRUE(V.isOk()) << V.status().message();
  return V.isOk() ? V.take() : ValidDesc();
}

class CudaDriver : public ::testing::Test {
protected:
  void SetUp() override {
    ::setenv("GATHERJIT_CUDA_DRIVER", GATHERJIT_FAKE_CUDA, 1);
    ::setenv("GATHERJIT_FAKE_CUDA_LOG", (Dir / "driver.log").c_str(), 1);
    ::unsetenv("GATHERJIT_FAKE_CUDA_KEY");
    writeArray<float>(Dir / "d.npy", "<f4", {3, 4}, {0, 1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11});
    writeArray<int64_t>(Dir / "i.npy", "<i8", {3, 4}, {3, 2, 1, 0, 0, 0, 0, 0, 1, 1, 1, 1});
  }
  void TearDown() override {
    for (const char *Name : {"GATHERJIT_CUDA_DRIVER", "GATHERJIT_FAKE_CUDA",
                             "GATHERJIT_FAKE_CUDA_LOG", "GATHERJIT_FAKE_CUDA_KEY"})
      ::unsetenv(Name);
  }
  CliResult run(const char *Mode, const std::string &Device = "cuda",
                const std::string &Flags = "") {
    ::setenv("GATHERJIT_FAKE_CUDA", Mode, 1);
    return runCli(Dir, "gather-elements --axis 1 --data " + Dir / "d.npy" + " --indices " +
                           Dir / "i.npy" + " --device " + Device + " --stats -o " + Dir / "o.npy" +
                           Flags);
  }
  ScratchDir Dir;
};

TEST_F(CudaDriver, EachFailureIsItsOwnCleanError) {
  const std::pair<const char *, const char *> Cases[] = {
      {"stub", "the toolkit's stub library"},
      {"nodevice", "no CUDA device"},
      {"old", "is sm_61; gatherjit's GPU kernels need sm_70 or later"},
      {"oldptx", "the CUDA driver is too old for gatherjit's PTX"},
      {"nojit", "the CUDA driver has no PTX compiler"},
      {"badptx", "cuModuleLoadDataEx failed: CUDA_ERROR_INVALID_PTX; the driver's PTX compiler: "
                 "ptxas application ptx input, line 3; error   : Unknown target"}};
  for (const auto &[Mode, Message] : Cases) {
    SCOPED_TRACE(Mode);
    expectOneErrorLine(run(Mode), 2, Message);
    EXPECT_FALSE(std::filesystem::exists(Dir / "o.npy"));
  }
  expectOneErrorLine(run("ok", "cuda:3"), 2, "no CUDA device 3: the driver has 1");
  ::setenv("GATHERJIT_CUDA_DRIVER", (Dir / "missing.so").c_str(), 1);
  expectOneErrorLine(run("ok"), 2, "no CUDA driver");
}

TEST_F(CudaDriver, ARunLoadsPtxForTheDeviceAndLaunchesThePlansGrid) {
  const CliResult R = run("ok");
  ASSERT_EQ(R.Exit, 0) << R.Err;
  EXPECT_THAT(R.Err, HasSubstr("\"device\": \"cuda:0 (sm_86)\""));
  EXPECT_THAT(R.Err, HasSubstr("\"kernel_us\": 250.000"));
  // Of the module's load, the driver's compile (CU_JIT_WALL_TIME).
  EXPECT_THAT(R.Err, HasSubstr("\"jit_ms\": 1.5000"));
  std::string Log = slurp(Dir / "driver.log");
  EXPECT_THAT(Log, HasSubstr(".target sm_86"));
  // Beside the call, an empty kernel's: one thread, its own module.
  EXPECT_THAT(R.Err, HasSubstr("\"empty_call_us\": "));
  EXPECT_THAT(Log, HasSubstr(".target sm_70"));
  EXPECT_THAT(Log, HasSubstr("launch gj_empty grid=1 block=1 shared=0\n"));
  // The shape's family kernel: one block for its 12 elements, its sizes
  // passed with the launch.
  EXPECT_THAT(Log, ::testing::ContainsRegex(
                       "launch gj_[a-z0-9_]*family[a-z0-9_]+ grid=1 block=256 shared=0 sizes=3,4"));
  // Its own kernel: 3 rows of 4, each reading one input row of 16 bytes
  // (read from L1 as it is, not staged): a thread an element, one block.
  std::filesystem::remove(Dir / "o.npy");
  ASSERT_EQ(run("ok", "cuda", " --specialize compile").Exit, 0);
  Log = slurp(Dir / "driver.log");
  EXPECT_THAT(Log, ::testing::ContainsRegex("launch gj_b[a-z0-9_]+ grid=1 block=256 shared=0\n"));
  // The fake device ran nothing: the output is its zeroed memory, copied back.
  EXPECT_EQ(readArray<float>(Dir / "o.npy"), std::vector<float>(12, 0.0f));
}

TEST_F(CudaDriver, ADeviceNewerThanLlvmKnowsRunsTheNewestPtxItMakes) {
  // Compute capability 12.6: the run and `ir` make sm_90's PTX (LLVM 19's
  // newest), which the driver compiles for the device.
  const CliResult R = run("new");
  ASSERT_EQ(R.Exit, 0) << R.Err;
  EXPECT_THAT(R.Err, HasSubstr("\"device\": \"cuda:0 (sm_126)\""));
  EXPECT_THAT(slurp(Dir / "driver.log"), HasSubstr(".target sm_90\n"));
  const CliResult Ir = runCli(Dir, "ir gather-elements --axis 1 --data " + Dir / "d.npy" +
                                       " --indices " + Dir / "i.npy" + " --device cuda");
  ASSERT_EQ(Ir.Exit, 0) << Ir.Err;
  EXPECT_THAT(Ir.Out, HasSubstr(".target sm_90\n"));
  // Ahead of time the architecture is the user's to name: one LLVM does
  // not know is an error that says which to name instead.
  expectOneErrorLine(runCli(Dir, "aot gather --data-shape 100,8 --indices-shape 16 --target "
                                 "nvptx64-nvidia-cuda --cpu sm_100 -o " +
                                     Dir / "k.ptx"),
                     2, "makes PTX up to sm_90, which newer devices run (--cpu sm_90)");
}

TEST_F(CudaDriver, TheDevicesBadIndexIsTheInterpretersError) {
  // Index 9 at row 1 column 2 (output element 6): the CPU's error for it,
  // and the device's when it reports key 6, are the same line.
  writeArray<int64_t>(Dir / "i.npy", "<i8", {3, 4}, {3, 2, 1, 0, 0, 0, 9, 0, 1, 1, 1, 1});
  const CliResult Cpu = runCli(Dir, "gather-elements --axis 1 --data " + Dir / "d.npy" +
                                        " --indices " + Dir / "i.npy" + " -o " + Dir / "o.npy");
  EXPECT_EQ(Cpu.Exit, 2) << Cpu.Err;
  EXPECT_THAT(Cpu.Err, HasSubstr("indices[1, 2] = 9 is out of range for axis 1 of size 4"));
  ::setenv("GATHERJIT_FAKE_CUDA_KEY", "6", 1);
  const CliResult R = run("ok");
  EXPECT_EQ(R.Exit, 2) << R.Err;
  EXPECT_EQ(R.Err, Cpu.Err);
  EXPECT_FALSE(std::filesystem::exists(Dir / "o.npy"));
}

TEST_F(CudaDriver, AnEmptyOutputsIndicesAreReadBackAndChecked) {
  // Gather of [0, 3] on axis 1 by [1, 3]: no kernel runs for the empty
  // output, but its indices, read back from the device, are checked as on
  // the CPU: the same error line, and no file.
  ::setenv("GATHERJIT_FAKE_CUDA", "ok", 1);
  writeArray<float>(Dir / "empty.npy", "<f4", {0, 3}, {});
  writeArray<int64_t>(Dir / "ids.npy", "<i8", {2}, {1, 3});
  const std::string Args = "gather --axis 1 --data " + Dir / "empty.npy" + " --indices " +
                           Dir / "ids.npy" + " -o " + Dir / "o.npy";
  const CliResult Cpu = runCli(Dir, Args);
  EXPECT_EQ(Cpu.Exit, 2) << Cpu.Err;
  EXPECT_THAT(Cpu.Err, HasSubstr("indices[1] = 3 is out of range for axis 1 of size 3"));
  const CliResult R = runCli(Dir, Args + " --device cuda");
  EXPECT_EQ(R.Exit, 2) << R.Err;
  EXPECT_EQ(R.Err, Cpu.Err);
  EXPECT_FALSE(std::filesystem::exists(Dir / "o.npy"));
  EXPECT_EQ(slurp(Dir / "driver.log").find("launch "), std::string::npos);
}

TEST_F(CudaDriver, TheBadIndexCheckCatchesADeviceThatMissesThem) {
  // The fake device runs nothing and so reports no bad index: the check
  // the device benchmark makes names the first run it got wrong.
  ::setenv("GATHERJIT_FAKE_CUDA", "ok", 1);
  const ValidDesc V = rowsOfFour(3);
  const float In[12] = {};
  const int64_t Idx[12] = {0, 1, 2, 3, 0, 1, 2, 3, 0, 1, 2, 3};
  Expected<unsigned> Runs = checkBadIndicesOnCuda(V, 0, Specialize::AtCompile, In, Idx);
  ASSERT_FALSE(Runs.isOk());
  EXPECT_EQ(Runs.status().code(), ErrorCode::Internal);
  EXPECT_THAT(Runs.status().message(),
              HasSubstr("indices element 11 made bad reported 'no error'"));
  // With the device reporting key 11 every time, the last element's run
  // is right and the first's is not.
  ::setenv("GATHERJIT_FAKE_CUDA_KEY", "11", 1);
  Runs = checkBadIndicesOnCuda(V, 0, Specialize::AtCompile, In, Idx);
  ASSERT_FALSE(Runs.isOk());
  EXPECT_THAT(Runs.status().message(), HasSubstr("indices element 0 made bad"));
  // Clamp: nothing to check.
  Runs = checkBadIndicesOnCuda(rowsOfFour(3, OobPolicy::Clamp), 0, Specialize::AtCompile, In, Idx);
  ASSERT_TRUE(Runs.isOk()) << Runs.status().message();
  EXPECT_EQ(*Runs, 0u);
}

TEST_F(CudaDriver, IrPrintsPtxForTheDevice) {
  ::setenv("GATHERJIT_FAKE_CUDA", "ok", 1);
  const CliResult R = runCli(Dir, "ir gather-elements --axis 1 --data " + Dir / "d.npy" +
                                      " --indices " + Dir / "i.npy" + " --device cuda");
  ASSERT_EQ(R.Exit, 0) << R.Err;
  EXPECT_THAT(R.Out, HasSubstr(".target sm_86"));
  EXPECT_THAT(R.Out, HasSubstr(".visible .entry gj_gather("));
  // Without a driver: PTX for sm_80.
  ::setenv("GATHERJIT_CUDA_DRIVER", (Dir / "missing.so").c_str(), 1);
  const CliResult NoDriver = runCli(Dir, "ir gather-elements --axis 1 --data " + Dir / "d.npy" +
                                             " --indices " + Dir / "i.npy" + " --device cuda");
  ASSERT_EQ(NoDriver.Exit, 0) << NoDriver.Err;
  EXPECT_THAT(NoDriver.Out, HasSubstr(".target sm_80"));
}

TEST_F(CudaDriver, ElementRowAndCheckedEpiloguesRunOnTheDevice) {
  if (!epiloguesSupported())
    GTEST_SKIP() << "built without clang's libraries";
  ::setenv("GATHERJIT_FAKE_CUDA", "ok", 1);
  spit(Dir / "floor.c", "float floor2(float x) { return x > 2.0f ? x : 2.0f; }\n");
  spit(Dir / "widen.c", "float widen(_Float16 x) { return (float)x * 0.5f; }\n");
  spit(Dir / "sum.c", "void sum(const float *row, float *out) { out[0] = row[0] + row[1]; }\n");
  const std::string Operands =
      " --axis 1 --data " + Dir / "d.npy" + " --indices " + Dir / "i.npy" + " --device cuda";
  // Its PTX holds the epilogue's instruction, in the kernel's entry.
  CliResult R = runCli(Dir, "ir gather-elements" + Operands + " --epilogue " + Dir / "floor.c" +
                                " --epilogue-fn floor2");
  ASSERT_EQ(R.Exit, 0) << R.Err;
  EXPECT_THAT(R.Out, HasSubstr(".visible .entry gj_gather("));
  EXPECT_THAT(R.Out, HasSubstr("max.f32"));
  // A run writes the fused output: FLOAT16 in, FLOAT32 out (zeros: the
  // fake device runs nothing), after its kernel's launch.
  std::vector<uint16_t> Half(12, 0x3c00);
  writeArray<uint16_t>(Dir / "h.npy", "<f2", {3, 4}, Half);
  R = runCli(Dir, "gather-elements --axis 1 --data " + Dir / "h.npy" + " --indices " +
                      Dir / "i.npy" + " --device cuda --specialize compile --epilogue " +
                      Dir / "widen.c" + " --epilogue-fn widen -o " + Dir / "o.npy");
  ASSERT_EQ(R.Exit, 0) << R.Err;
  EXPECT_THAT(slurp(Dir / "o.npy"), HasSubstr("'descr': '<f4'"));
  std::vector<uint64_t> Shape;
  EXPECT_EQ(readArray<float>(Dir / "o.npy", &Shape), std::vector<float>(12, 0.0f));
  EXPECT_EQ(Shape, (std::vector<uint64_t>{3, 4}));
  // (An epilogue's rows are not staged: one block for the 12 elements.)
  EXPECT_THAT(slurp(Dir / "driver.log"),
              ::testing::ContainsRegex("launch gj_b2_[a-z0-9_]+ grid=1 block=256 shared=0\n"));
  // A row epilogue runs there too, a thread to each row it gathers: the
  // 3 x 4 rows of 4 into rows of 1, in one block.
  std::filesystem::remove(Dir / "o.npy");
  std::filesystem::remove(Dir / "driver.log");
  const std::string Rows = "gather --axis 0 --data " + Dir / "d.npy" + " --indices " +
                           Dir / "i.npy" + " --device cuda --no-cache -o " + Dir / "o.npy";
  R = runCli(Dir,
             Rows + " --epilogue " + Dir / "sum.c" + " --epilogue-fn sum --epilogue-row-out 1");
  ASSERT_EQ(R.Exit, 0) << R.Err;
  EXPECT_EQ(readArray<float>(Dir / "o.npy", &Shape), std::vector<float>(12, 0.0f));
  EXPECT_EQ(Shape, (std::vector<uint64_t>{3, 4, 1}));
  EXPECT_THAT(slurp(Dir / "driver.log"),
              ::testing::ContainsRegex("launch gj_b4_[a-z0-9_]+ grid=1 block=256 shared=0\n"));
  // A checked epilogue runs there too; a status word with the fault bit
  // (the fake device's key: element 5 faulted) is the CPU's fault error,
  // one line, exit 2, and no output file.
  std::filesystem::remove(Dir / "o.npy");
  const std::string Checked =
      Rows + " --epilogue " + Dir / "floor.c" + " --epilogue-fn floor2 --epilogue-checked";
  R = runCli(Dir, Checked);
  ASSERT_EQ(R.Exit, 0) << R.Err;
  std::filesystem::remove(Dir / "o.npy");
  ::setenv("GATHERJIT_FAKE_CUDA_KEY", std::to_string(DeviceEpilogueFaultBit | 5).c_str(), 1);
  expectOneErrorLine(runCli(Dir, Checked), 2, "error: the checked epilogue read or wrote outside");
  EXPECT_FALSE(std::filesystem::exists(Dir / "o.npy"));
}

TEST_F(CudaDriver, NewShapesOfAFamilyRunItsKernelUntilTheyAreHot) {
  ::setenv("GATHERJIT_FAKE_CUDA", "ok", 1);
  RuntimeOptions Options;
  Options.Device = "cuda";
  Expected<std::unique_ptr<Runtime>> RT = Runtime::create(Options);
  ASSERT_TRUE(RT.isOk()) << RT.status().message();
  auto CompileRows = [&](uint64_t Rows) {
    Expected<Kernel> K = (*RT)->compile(rowsOfFour(Rows));
    EXPECT_TRUE(K.isOk()) << K.status().message();
    return K.take();
  };
  auto LastLaunch = [&] {
    std::string Log = slurp(Dir / "driver.log"), Last;
    for (size_t At = Log.find("launch "); At != std::string::npos; At = Log.find("launch ", At + 1))
      Last = Log.substr(At, Log.find('\n', At) - At);
    return Last;
  };
  // The family's first shape compiles its kernel, later shapes nothing.
  const Kernel First = CompileRows(3);
  EXPECT_EQ(First.tier(), KernelTier::Family);
  EXPECT_GT(First.compileTimes().total(), 0.0);
  const Kernel Small = CompileRows(5);
  EXPECT_EQ(Small.tier(), KernelTier::Family);
  EXPECT_EQ(Small.compileTimes().total(), 0.0) << "a new shape of a loaded family compiled";
  // An output just under 1 MiB stays on the family kernel; one of 1 MiB
  // is hot after its first run.
  const uint64_t Rows = 1 << 16;
  const Kernel Mid = CompileRows(Rows - 1);
  const Kernel Large = CompileRows(Rows);
  EXPECT_EQ(Mid.tier(), KernelTier::Family);
  EXPECT_EQ(Large.tier(), KernelTier::Family);
  EXPECT_EQ(Large.compileTimes().total(), 0.0);
  EXPECT_EQ((*RT)->stats().FamilyKernels, 1u);
  // The fake device's memory is the host's: these stand for device buffers.
  std::vector<float> In(Rows * 4), Out(Rows * 4);
  std::vector<int64_t> Idx(Rows * 4);
  for (int Run = 0; Run < 10; ++Run)
    ASSERT_TRUE(Small.run(In.data(), Idx.data(), Out.data()).isOk());
  EXPECT_THAT(LastLaunch(), ::testing::MatchesRegex("launch gj_[a-z0-9_]*family[a-z0-9_]* "
                                                    "grid=1 block=256 shared=0 sizes=5,4"));
  EXPECT_EQ(Small.tier(), KernelTier::Family) << "a small shape specialized after 10 runs";
  // A bad index's key is read with its shape's own sizes.
  Idx[26] = 9;
  ::setenv("GATHERJIT_FAKE_CUDA_KEY", "26", 1);
  Status Bad = Mid.run(In.data(), Idx.data(), Out.data());
  EXPECT_EQ(Bad.code(), ErrorCode::IndexOutOfRange);
  EXPECT_THAT(Bad.message(), HasSubstr("[6,2] = 9 (position 26)"));
  EXPECT_THAT(LastLaunch(), HasSubstr("family"));
  EXPECT_THAT(LastLaunch(), HasSubstr("grid=1024 block=256 shared=0 sizes=65535,4"));
  // The large shape's first call, asynchronous, finds one; the shape is
  // specialized meanwhile (its launch most likely went to the family's
  // code, which keeps it); the finish reports it all the same.
  ASSERT_TRUE(Large.launchOnStream(In.data(), Idx.data(), Out.data(), nullptr).isOk());
  ::unsetenv("GATHERJIT_FAKE_CUDA_KEY");
  for (int Wait = 0; Wait < 1000 && Large.tier() != KernelTier::Specialized; ++Wait)
    std::this_thread::sleep_for(std::chrono::milliseconds(10));
  ASSERT_EQ(Large.tier(), KernelTier::Specialized) << "a hot shape was not specialized";
  Bad = Large.finishStream(nullptr);
  EXPECT_EQ(Bad.code(), ErrorCode::IndexOutOfRange);
  EXPECT_THAT(Bad.message(), HasSubstr("(position 26)"));
  EXPECT_TRUE(Large.finishStream(nullptr).isOk()) << "a finished launch is reported once";
  ASSERT_TRUE(Large.run(In.data(), Idx.data(), Out.data()).isOk());
  EXPECT_THAT(LastLaunch(), ::testing::Not(HasSubstr("family")));
  EXPECT_THAT(LastLaunch(), HasSubstr("grid=1024 block=256")) << "a thread an element";
}

TEST_F(CudaDriver, AWarmUpLoadsTheFirstKernelsKindThroughTheDriverAndKeepsNothing) {
  ::setenv("GATHERJIT_FAKE_CUDA", "ok", 1);
  for (const Specialize Mode : {Specialize::Adaptive, Specialize::AtCompile}) {
    SCOPED_TRACE(specializeName(Mode));
    std::filesystem::remove(Dir / "driver.log");
    RuntimeOptions Options;
    Options.Device = "cuda";
    Options.WarmUp = true;
    Options.Specialization = Mode;
    Expected<std::unique_ptr<Runtime>> RT = Runtime::create(Options);
    ASSERT_TRUE(RT.isOk()) << RT.status().message();
    // PTX for the device, taken by the driver: the family's kernel where a
    // new shape runs one, else a specialized kernel.
    std::string Log;
    for (int Wait = 0; Wait < 3000 && Log.find("function ") == std::string::npos; ++Wait) {
      std::this_thread::sleep_for(std::chrono::milliseconds(10));
      Log = std::filesystem::exists(Dir / "driver.log") ? slurp(Dir / "driver.log") : "";
    }
    const CacheStats Stats = (*RT)->stats();
    EXPECT_EQ(Stats.FamilyKernels, 0u);
    EXPECT_EQ(Stats.Entries, 0u);
    EXPECT_THAT(Log, HasSubstr(".target sm_86\n"));
    if (Mode == Specialize::Adaptive)
      EXPECT_THAT(Log, ::testing::ContainsRegex("function gj_family_b4_i64_r2_[a-z0-9_]+\n"));
    else
      EXPECT_THAT(Log, ::testing::ContainsRegex("function gj_b4_i64_r2_[a-z0-9_]+\n"));
  }
}

TEST_F(CudaDriver, ADeviceRuntimesAssemblyIsThePtxItsKernelsRun) {
  // A small kernel: on the host the quick tier's; a device has none, and
  // prints the runtime's level.
  ::setenv("GATHERJIT_FAKE_CUDA", "ok", 1);
  const ValidDesc V = rowsOfFour(3);
  std::string Ptx[2];
  for (const bool Quick : {true, false}) {
    RuntimeOptions Options;
    Options.Device = "cuda";
    Options.QuickTier = Quick;
    Expected<std::unique_ptr<Runtime>> RT = Runtime::create(Options);
    ASSERT_TRUE(RT.isOk()) << RT.status().message();
    Expected<std::string> Text = (*RT)->assembly(V);
    ASSERT_TRUE(Text.isOk()) << Text.status().message();
    Ptx[Quick] = Text.take();
  }
  EXPECT_THAT(Ptx[1], HasSubstr(".target sm_86"));
  EXPECT_TRUE(Ptx[1] == Ptx[0]) << "the quick tier's PTX, not the runtime's level's";
}

TEST_F(CudaDriver, ACacheDirectoryKeepsADevicesPtxUnderKeysOfItsOwn) {
  const ValidDesc V = rowsOfFour(3);
  // A new runtime on \p Device (and the fake driver's \p Mode) compiles
  // the kernel: from the directory where it holds it.
  auto Compile = [&](const std::string &Device, const char *Mode) {
    ::setenv("GATHERJIT_FAKE_CUDA", Mode, 1);
    RuntimeOptions Options;
    Options.Device = Device;
    Options.CacheDir = Dir / "cache";
    Options.Specialization = Specialize::AtCompile;
    Expected<std::unique_ptr<Runtime>> RT = Runtime::create(Options);
    EXPECT_TRUE(RT.isOk()) << RT.status().message();
    Expected<Kernel> K = (*RT)->compile(V);
    EXPECT_TRUE(K.isOk()) << K.status().message();
    return std::pair{K->fromDiskCache(), K->compileTimes()};
  };
  auto [FirstFromDisk, First] = Compile("cuda", "ok");
  EXPECT_FALSE(FirstFromDisk);
  EXPECT_GT(First.Codegen, 0.0);
  std::filesystem::remove(Dir / "driver.log");
  auto [AgainFromDisk, Again] = Compile("cuda", "ok");
  EXPECT_TRUE(AgainFromDisk);
  EXPECT_EQ(Again.Emit + Again.Optimize + Again.Codegen, 0.0) << "LLVM ran for a kept kernel";
  EXPECT_THAT(slurp(Dir / "driver.log"), HasSubstr(".target sm_86\n")) << "not loaded";
  // Neither the host's kernel of the same spec nor another architecture's
  // PTX is the same entry.
  EXPECT_FALSE(Compile("cpu", "ok").first);
  std::filesystem::remove(Dir / "driver.log");
  EXPECT_FALSE(Compile("cuda", "new").first);
  EXPECT_THAT(slurp(Dir / "driver.log"), HasSubstr(".target sm_90\n"));
  EXPECT_TRUE(Compile("cuda", "new").first);
  EXPECT_TRUE(Compile("cpu", "ok").first);
  EXPECT_TRUE(Compile("cuda", "ok").first);
  // The command line's device runs keep theirs in its cache directory.
  const std::string Cache = " --cache-dir " + Dir / "cli-cache";
  for (const char *Expect : {"\"cache\": \"miss\"", "\"cache\": \"hit\""}) {
    const CliResult R = run("ok", "cuda", Cache);
    ASSERT_EQ(R.Exit, 0) << R.Err;
    EXPECT_THAT(R.Err, HasSubstr(Expect));
  }
  EXPECT_THAT(run("ok", "cuda", Cache + " --no-cache").Err, HasSubstr("\"cache\": \"miss\""));
}

TEST_F(CudaDriver, ThreadsRunAndLaunchShapesOfOneFamilyAtOnce) {
  // Four threads, each its own shape of one family (one module, one pool
  // of status words) and its own stream: runs, launches and finishes
  // interleave; every one succeeds (TSan checks the sharing).
  ::setenv("GATHERJIT_FAKE_CUDA", "ok", 1);
  ::unsetenv("GATHERJIT_FAKE_CUDA_LOG");
  RuntimeOptions Options;
  Options.Device = "cuda";
  Options.Specialization = Specialize::Never;
  Expected<std::unique_ptr<Runtime>> RT = Runtime::create(Options);
  ASSERT_TRUE(RT.isOk()) << RT.status().message();
  std::vector<Kernel> Kernels;
  for (uint64_t Rows : {3, 5, 7, 9}) {
    Expected<Kernel> K = (*RT)->compile(rowsOfFour(Rows));
    ASSERT_TRUE(K.isOk()) << K.status().message();
    ASSERT_EQ(K->tier(), KernelTier::Family);
    Kernels.push_back(K.take());
  }
  std::atomic<int> Failures{0};
  std::vector<std::thread> Threads;
  for (size_t T = 0; T < Kernels.size(); ++T)
    Threads.emplace_back([&, T] {
      float In[36] = {}, Out[36] = {};
      int64_t Idx[36] = {};
      int Stream = 0;
      for (int I = 0; I < 50; ++I) {
        Failures += !Kernels[T].run(In, Idx, Out).isOk();
        Failures += !Kernels[T].launchOnStream(In, Idx, Out, &Stream).isOk();
        if (I % 5 == 4)
          Failures += !Kernels[T].finishStream(&Stream).isOk();
      }
    });
  for (std::thread &T : Threads)
    T.join();
  EXPECT_EQ(Failures.load(), 0);
}

TEST_F(CudaDriver, ConcurrentRequestsForASpecWhoseCompileFailsEachGetItsError) {
  // Eight threads ask for one spec whose compile fails (a driver without
  // its PTX compiler): the requests that waited for the first compile try
  // themselves, each ends with the driver's error, and no entry stays.
  ::setenv("GATHERJIT_FAKE_CUDA", "nojit", 1);
  ::unsetenv("GATHERJIT_FAKE_CUDA_LOG");
  RuntimeOptions Options;
  Options.Device = "cuda";
  Expected<std::unique_ptr<Runtime>> RT = Runtime::create(Options);
  ASSERT_TRUE(RT.isOk()) << RT.status().message();
  const ValidDesc V = rowsOfFour(6);
  std::vector<std::string> Errors(8);
  std::vector<std::thread> Threads;
  for (size_t T = 0; T < Errors.size(); ++T)
    Threads.emplace_back([&, T] {
      Expected<Kernel> K = (*RT)->compile(V);
      Errors[T] = K ? "compiled" : K.status().message();
    });
  for (std::thread &T : Threads)
    T.join();
  for (const std::string &E : Errors)
    EXPECT_THAT(E, HasSubstr("the CUDA driver has no PTX compiler"));
  const CacheStats S = (*RT)->stats();
  EXPECT_EQ(S.Entries, 0u);
  EXPECT_EQ(S.Misses, 8u);
  EXPECT_EQ(S.Hits, 0u);
  // Once the driver can load it, the same spec compiles: no failure was kept.
  ::setenv("GATHERJIT_FAKE_CUDA", "ok", 1);
  Expected<Kernel> K = (*RT)->compile(V);
  ASSERT_TRUE(K.isOk()) << K.status().message();
  EXPECT_EQ((*RT)->stats().Entries, 1u);
}

TEST_F(CudaDriver, TheCApisDeviceRuntime) {
  ::setenv("GATHERJIT_FAKE_CUDA", "ok", 1);
  gj_runtime_options O;
  gj_runtime_options_init(&O);
  EXPECT_EQ(O.device, nullptr);
  O.device = "cuda:0";
  gj_runtime *RT = nullptr;
  ASSERT_EQ(gj_runtime_create(&O, &RT), GJ_OK) << gj_last_error();
  const uint64_t Sizes[] = {3, 4};
  const gj_tensor_desc Data = gj_tensor(GJ_FLOAT32, 2, Sizes);
  const gj_tensor_desc Ids = gj_tensor(GJ_INT64, 2, Sizes);
  gj_descriptor D = {};
  ASSERT_EQ(gj_onnx_gather_elements(&Data, &Ids, 1, &D), GJ_OK) << gj_last_error();
  gj_kernel *K = nullptr;
  ASSERT_EQ(gj_compile(RT, &D, &K), GJ_OK) << gj_last_error();
  // The fake device's memory is the host's: these stand for device buffers.
  float In[12] = {}, Out[12] = {};
  int64_t Idx[12] = {0, 1, 2, 3, 0, 1, 2, 3, 0, 1, 2, 7};
  EXPECT_EQ(gj_kernel_run(K, In, Idx, Out), GJ_OK) << gj_last_error();
  int Stream = 0;
  EXPECT_EQ(gj_kernel_run_stream(K, In, Idx, Out, &Stream), GJ_OK) << gj_last_error();
  // The device reports key 11: index 7 at [2,3], named with its value, read
  // back from the device.
  ::setenv("GATHERJIT_FAKE_CUDA_KEY", "11", 1);
  EXPECT_EQ(gj_kernel_run(K, In, Idx, Out), GJ_INDEX_OUT_OF_RANGE);
  EXPECT_THAT(gj_last_error(), HasSubstr("IndicesTensor[2,3] = 7 (position 11)"));
  // Asynchronous launches: each returns at once; the finish names the
  // first bad index of the first launch that found one (its own indices:
  // 7 at [2,3], not the 5 the later launch's hold there), and clears them.
  ::unsetenv("GATHERJIT_FAKE_CUDA_KEY");
  int64_t Other[12] = {0, 1, 2, 3, 0, 1, 2, 3, 0, 1, 2, 5};
  EXPECT_EQ(gj_kernel_launch_stream(K, In, Idx, Out, &Stream), GJ_OK) << gj_last_error();
  ::setenv("GATHERJIT_FAKE_CUDA_KEY", "11", 1);
  EXPECT_EQ(gj_kernel_launch_stream(K, In, Idx, Out, &Stream), GJ_OK) << gj_last_error();
  EXPECT_EQ(gj_kernel_launch_stream(K, In, Other, Out, &Stream), GJ_OK) << gj_last_error();
  ::unsetenv("GATHERJIT_FAKE_CUDA_KEY");
  EXPECT_EQ(gj_kernel_finish_stream(K, nullptr), GJ_OK) << "launches on another stream";
  EXPECT_EQ(gj_kernel_finish_stream(K, &Stream), GJ_INDEX_OUT_OF_RANGE);
  EXPECT_THAT(gj_last_error(), HasSubstr("IndicesTensor[2,3] = 7 (position 11)"));
  EXPECT_EQ(gj_last_error_position(), 11u);
  EXPECT_EQ(gj_kernel_finish_stream(K, &Stream), GJ_OK) << gj_last_error();
  EXPECT_EQ(gj_kernel_launch_stream(K, In, Idx, Out, &Stream), GJ_OK) << gj_last_error();
  EXPECT_EQ(gj_kernel_finish_stream(K, &Stream), GJ_OK) << "a word given back is clean";
  ::setenv("GATHERJIT_FAKE_CUDA_KEY", "11", 1);
  // No temporary on a device: an overlapping output is refused.
  EXPECT_EQ(gj_kernel_run(K, In, Idx, In), GJ_INVALID_ARGUMENT);
  EXPECT_EQ(gj_kernel_launch_stream(K, In, Idx, In, &Stream), GJ_INVALID_ARGUMENT);
  gj_kernel_release(K);
  gj_runtime_destroy(RT);
  const std::string Log = slurp(Dir / "driver.log");
  EXPECT_THAT(Log, HasSubstr(".target sm_86"));
  // A device the driver lacks, and a name that is not a device's.
  O.device = "cuda:1";
  EXPECT_EQ(gj_runtime_create(&O, &RT), GJ_UNSUPPORTED);
  EXPECT_THAT(gj_last_error(), HasSubstr("no CUDA device 1"));
  O.device = "gpu0";
  EXPECT_EQ(gj_runtime_create(&O, &RT), GJ_INVALID_ARGUMENT);
  EXPECT_THAT(gj_last_error(), HasSubstr("gpu0"));
}

TEST_F(CudaDriver, TheDeviceBenchSetsEachCaseBesideItsCopyLineAndItsFloor) {
  ::setenv("GATHERJIT_FAKE_CUDA", "ok", 1);
  const CliResult R =
      runCli(Dir, "bench --device cuda --cases G4,GE5 --quiet --results " + (Dir / "results"));
  ASSERT_EQ(R.Exit, 0) << R.Err;
  // The fake's events time every kernel and copy at 250 us. The floor
  // moves the indices, the output and at most the output's bytes of the
  // input at the copy's rate (the copy reads and writes the output): G4
  // 5 INT64 indices (40 bytes), 20 bytes out, a 16-byte input: 250 * (40 +
  // 20 + 16) / 40; GE5 48 bytes of indices, 24 out, 36 in: 250 * (48 + 24
  // + 24) / 48.
  EXPECT_THAT(R.Out, HasSubstr("| G4 | 250.0 | 250.0 | 250.0 | 100% | 475.0 | 190% |"));
  EXPECT_THAT(R.Out, HasSubstr("| GE5 | 250.0 | 250.0 | 250.0 | 100% | 500.0 | 200% |"));
  std::string Json;
  for (auto &E : std::filesystem::directory_iterator(Dir / "results"))
    if (E.path().extension() == ".json")
      Json = slurp(E.path().string());
  EXPECT_THAT(Json, HasSubstr("\"floor_us\": 475.0"));
  EXPECT_THAT(Json, HasSubstr("\"floor_us\": 500.0"));
  // Each kernel's module load, of which the driver's compile took 1.5 ms.
  EXPECT_THAT(Json, HasSubstr("\"jit_ms\": 1.5"));
  EXPECT_THAT(R.Out, ::testing::ContainsRegex("\\| G4 \\|.* \\| [0-9.]+ \\(1.50\\) \\| "));
}

} // namespace
