//===- tests/compiler/backend/JitTest.cpp - Linking into the process -----===//

#include "TestUtil.h"
#include "tools/CliTestUtil.h"

#include "compiler/backend/Jit.h"
#include "compiler/backend/Target.h"
#include "compiler/pipeline/Pipeline.h"
#include "gatherjit/Interpreter.h"
#include "gatherjit/Runtime.h"

#include <llvm/Target/TargetMachine.h>

#include <gtest/gtest.h>

#include <sys/stat.h>
#include <unistd.h>

using namespace gatherjit;
using namespace gatherjit::test;

namespace {

void compileOne(Runtime &RT, uint64_t Cols) {
  Expected<Kernel> K = RT.compile(GatherElementsDesc{tensor(DataType::Float32, {2, Cols}),
                                                     tensor(DataType::Int64, {2, Cols}),
                                                     tensor(DataType::Float32, {2, Cols}), 1},
                                  {});
  ASSERT_TRUE(K.isOk()) << K.status().message();
}

TEST(Jit, ThePerfMapFollowsNoPlantedLinkAndIsPrivate) {
  const std::string Map = "/tmp/perf-" + std::to_string(getpid()) + ".map";
  std::filesystem::remove(Map);
  ScratchDir Dir;
  const std::string Victim = Dir / "victim";
  spit(Victim, "secret");
  ASSERT_EQ(::chmod(Victim.c_str(), 0600), 0);
  ASSERT_EQ(::symlink(Victim.c_str(), Map.c_str()), 0);
  RuntimeOptions Options;
  Options.Specialization = Specialize::AtCompile;
  Options.PerfMap = true;
  Expected<std::unique_ptr<Runtime>> RT = Runtime::create(Options);
  ASSERT_TRUE(RT.isOk());
  compileOne(**RT, 7);
  EXPECT_EQ(slurp(Victim), "secret") << "a link planted in /tmp was followed";
  std::filesystem::remove(Map);
  compileOne(**RT, 9);
  struct stat St;
  ASSERT_EQ(::lstat(Map.c_str(), &St), 0);
  EXPECT_TRUE(S_ISREG(St.st_mode));
  EXPECT_EQ(St.st_mode & 0777, 0600u);
  EXPECT_NE(slurp(Map).find("_range\n"), std::string::npos) << slurp(Map);
  std::filesystem::remove(Map);
}

/// The object of a GatherElements over [2, Cols] along axis 1, for the host.
std::vector<char> hostObject(const ValidDesc &V, const std::string &Name) {
  Expected<std::unique_ptr<llvm::TargetMachine>> TM = createTargetMachine({}, OptLevel::O1);
  EXPECT_TRUE(TM.isOk());
  CodeGenerator Gen(TM.take());
  Expected<PipelineResult> R =
      runPipeline({{canonicalize(V), Name}}, *backendFor(Gen), OptLevel::O1);
  EXPECT_TRUE(R.isOk()) << R.status().message();
  return R ? R->Bytes : std::vector<char>();
}

TEST(JitEngine, LinksRunsAndFreesCode) {
  Expected<ValidDesc> V =
      validate(GatherElementsDesc{tensor(DataType::Int32, {2, 3}), tensor(DataType::Int64, {2, 3}),
                                  tensor(DataType::Int32, {2, 3}), 1});
  ASSERT_TRUE(V.isOk());
  const std::vector<char> Object = hostObject(*V, "k");
  const int32_t In[6] = {10, 11, 12, 13, 14, 15};
  const int64_t Idx[6] = {2, 1, 0, -1, 0, 3};
  // link() (the loader on x86-64, no ORC), ORC itself, and link() where
  // GDB is to be told of every kernel (ORC).
  for (int Way : {0, 1, 2}) {
    SCOPED_TRACE(Way);
    Expected<std::shared_ptr<JitEngine>> E =
        JitEngine::create({/*PerfMap=*/false, /*Debugger=*/Way == 2});
    ASSERT_TRUE(E.isOk()) << E.status().message();
    auto Link = [&]() -> Expected<std::shared_ptr<const Executable>> {
      if (Way != 1)
        return (*E)->link("k", Object);
      Expected<std::shared_ptr<JitCode>> Code = (*E)->linkWithOrc("k", Object);
      if (!Code)
        return Code.status();
      return std::shared_ptr<const Executable>(Code.take());
    };
    {
      Expected<std::shared_ptr<const Executable>> A = Link();
      ASSERT_TRUE(A.isOk()) << A.status().message();
      // The same object again (a recompile of one spec) links beside it.
      Expected<std::shared_ptr<const Executable>> B = Link();
      ASSERT_TRUE(B.isOk()) << B.status().message();
      EXPECT_EQ((*E)->liveCount(), 2u);
      int32_t Out[6] = {};
      // Rows [0, 1): the first row only; index 3 in row 1 is out of range
      // (position 5), reported by the whole range as 1 + 5.
      EXPECT_EQ((*A)->runRows(In, Idx, Out, 0, 1), 0);
      EXPECT_EQ(std::vector<int32_t>(Out, Out + 3), (std::vector<int32_t>{12, 11, 10}));
      EXPECT_EQ((*B)->runRows(In, Idx, Out, 0, 2), 6);
      A->reset();
      EXPECT_EQ((*E)->liveCount(), 1u);
      EXPECT_EQ((*B)->runRows(In, Idx, Out, 0, 1), 0); // B's code is its own.
    }
    EXPECT_EQ((*E)->liveCount(), 0u);
#if defined(__x86_64__)
    EXPECT_EQ((*E)->orcStarted(), Way != 0) << "x86-64 kernels need no ORC";
#endif
  }
}

TEST(JitEngine, AnObjectThatIsNotOneIsAnErrorNotACrash) {
  Expected<std::shared_ptr<JitEngine>> E = JitEngine::create({});
  ASSERT_TRUE(E.isOk());
  const std::string Junk = "\x7f"
                           "ELF but not really an object file";
  Expected<std::shared_ptr<const Executable>> Code =
      (*E)->link("junk", std::vector<char>(Junk.begin(), Junk.end()));
  ASSERT_FALSE(Code.isOk());
  EXPECT_EQ(Code.status().code(), ErrorCode::Internal);
  EXPECT_EQ((*E)->liveCount(), 0u);
}

} // namespace
