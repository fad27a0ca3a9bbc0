//===- tests/compiler/JitTest.cpp - Linking kernels into the process -----===//

#include "TestUtil.h"
#include "tools/CliTestUtil.h"

#include "gatherjit/Runtime.h"

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

} // namespace
