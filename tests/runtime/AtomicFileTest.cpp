//===- tests/runtime/AtomicFileTest.cpp - Writing what the user points at ===//
//
// Device nodes are made with mknod inside the test's scratch directory (the
// tests skip where that is not allowed); the machine's own are never the
// destination of a test.
//
//===----------------------------------------------------------------------===//

#include "runtime/AtomicFile.h"

#include "tools/CliTestUtil.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <csignal>
#include <fcntl.h>
#include <sys/stat.h>
#include <sys/sysmacros.h>
#include <sys/wait.h>
#include <thread>
#include <unistd.h>

using namespace gatherjit;
using namespace gatherjit::test;
using ::testing::HasSubstr;

namespace {

struct stat lstatOf(const std::string &Path) {
  struct stat St {};
  EXPECT_EQ(::lstat(Path.c_str(), &St), 0) << Path;
  return St;
}

/// Names of leftover temporary files in \p Dir.
std::vector<std::string> temporaries(const ScratchDir &Dir) {
  std::vector<std::string> Names;
  for (auto &E : std::filesystem::directory_iterator(Dir.Path))
    if (E.path().filename().string().rfind(".gatherjit-", 0) == 0)
      Names.push_back(E.path().filename().string());
  return Names;
}

/// A character device node like the machine's \p Major:Minor, made in the
/// scratch directory; empty if this process may not make one.
std::string makeDevice(const ScratchDir &Dir, const std::string &Name, unsigned Major,
                       unsigned Minor) {
  const std::string Path = Dir / Name;
  if (::mknod(Path.c_str(), S_IFCHR | 0666, makedev(Major, Minor)) != 0)
    return "";
  return Path;
}

TEST(AtomicFile, ReplacesARegularFileWholeAndKeepsItsMode) {
  ScratchDir Dir;
  const std::string P = Dir / "out.bin";
  spit(P, "old contents");
  ASSERT_EQ(::chmod(P.c_str(), 0640), 0);
  const ino_t Before = lstatOf(P).st_ino;
  Expected<AtomicFile> F = AtomicFile::write(P, "new");
  ASSERT_TRUE(F.isOk()) << F.status().message();
  EXPECT_EQ(slurp(P), "old contents") << "nothing changes before commit";
  EXPECT_EQ(temporaries(Dir).size(), 1u);
  ASSERT_TRUE(F->commit().isOk());
  EXPECT_EQ(slurp(P), "new");
  EXPECT_EQ(lstatOf(P).st_mode & 07777, 0640u);
  EXPECT_NE(lstatOf(P).st_ino, Before) << "replaced by a rename";
  EXPECT_TRUE(temporaries(Dir).empty());
}

TEST(AtomicFile, AnUncommittedFileLeavesNothingAndTheOldFileUntouched) {
  ScratchDir Dir;
  const std::string P = Dir / "out.bin";
  spit(P, "keep me");
  {
    Expected<AtomicFile> F = AtomicFile::write(P, "discarded");
    ASSERT_TRUE(F.isOk());
  }
  EXPECT_EQ(slurp(P), "keep me");
  EXPECT_TRUE(temporaries(Dir).empty());
}

TEST(AtomicFile, FollowsASymbolicLinkAndKeepsTheLink) {
  ScratchDir Dir;
  std::filesystem::create_directory(Dir.Path / "sub");
  spit(Dir / "sub/target.bin", "old");
  ASSERT_EQ(::symlink("sub/target.bin", (Dir / "link.bin").c_str()), 0);
  ASSERT_EQ(::symlink("link.bin", (Dir / "link2.bin").c_str()), 0);
  ASSERT_TRUE(writeFileAtomic(Dir / "link2.bin", "through two links").isOk());
  EXPECT_TRUE(S_ISLNK(lstatOf(Dir / "link.bin").st_mode));
  EXPECT_TRUE(S_ISLNK(lstatOf(Dir / "link2.bin").st_mode));
  EXPECT_EQ(slurp(Dir / "sub/target.bin"), "through two links");
  // The temporary file was made beside the target, and is gone.
  EXPECT_EQ(std::distance(std::filesystem::directory_iterator(Dir.Path / "sub"),
                          std::filesystem::directory_iterator()),
            1);
}

TEST(AtomicFile, DanglingLinksLoopsAndDirectoriesAreErrors) {
  ScratchDir Dir;
  ASSERT_EQ(::symlink("nowhere.bin", (Dir / "dangling").c_str()), 0);
  ASSERT_EQ(::symlink("b", (Dir / "a").c_str()), 0);
  ASSERT_EQ(::symlink("a", (Dir / "b").c_str()), 0);
  std::filesystem::create_directory(Dir.Path / "dir");
  Status S = writeFileAtomic(Dir / "dangling", "x");
  EXPECT_EQ(S.code(), ErrorCode::InvalidArgument);
  EXPECT_THAT(S.message(), HasSubstr("dangling symbolic link"));
  S = writeFileAtomic(Dir / "a", "x");
  EXPECT_EQ(S.code(), ErrorCode::InvalidArgument);
  EXPECT_THAT(S.message(), HasSubstr("symbolic links"));
  S = writeFileAtomic(Dir / "dir", "x");
  EXPECT_EQ(S.code(), ErrorCode::InvalidArgument);
  EXPECT_THAT(S.message(), HasSubstr("is a directory"));
  EXPECT_FALSE(std::filesystem::exists(Dir.Path / "nowhere.bin"));
  EXPECT_TRUE(temporaries(Dir).empty());
}

TEST(AtomicFile, AFileWithSeveralHardLinksIsRewrittenInPlace) {
  ScratchDir Dir;
  spit(Dir / "one", "a longer old content");
  ASSERT_EQ(::link((Dir / "one").c_str(), (Dir / "two").c_str()), 0);
  const ino_t Inode = lstatOf(Dir / "one").st_ino;
  ASSERT_TRUE(writeFileAtomic(Dir / "two", "short").isOk());
  EXPECT_EQ(slurp(Dir / "one"), "short") << "both names still see one file";
  EXPECT_EQ(lstatOf(Dir / "two").st_ino, Inode);
  EXPECT_EQ(lstatOf(Dir / "two").st_nlink, 2u);
}

TEST(AtomicFile, WritesIntoAFifoWithoutReplacingIt) {
  ScratchDir Dir;
  const std::string Fifo = Dir / "fifo";
  ASSERT_EQ(::mkfifo(Fifo.c_str(), 0600), 0);
  std::string Read;
  std::thread Reader([&] { Read = slurp(Fifo); });
  EXPECT_TRUE(writeFileAtomic(Fifo, "through a pipe").isOk());
  Reader.join();
  EXPECT_EQ(Read, "through a pipe");
  EXPECT_TRUE(S_ISFIFO(lstatOf(Fifo).st_mode));
}

TEST(AtomicFile, WritesIntoDevicesWithoutReplacingThem) {
  ScratchDir Dir;
  const std::string Null = makeDevice(Dir, "null", 1, 3);
  const std::string Full = makeDevice(Dir, "full", 1, 7);
  if (Null.empty() || Full.empty())
    GTEST_SKIP() << "this process may not make device nodes";
  EXPECT_TRUE(writeFileAtomic(Null, "thrown away").isOk());
  EXPECT_TRUE(S_ISCHR(lstatOf(Null).st_mode));
  // A full disk is the system's failure, not the user's: IoError.
  Status S = writeFileAtomic(Full, "no room");
  EXPECT_EQ(S.code(), ErrorCode::IoError);
  EXPECT_THAT(S.message(), HasSubstr("No space left on device"));
  EXPECT_TRUE(S_ISCHR(lstatOf(Full).st_mode));
  EXPECT_TRUE(temporaries(Dir).empty());
}

TEST(AtomicFile, TemporaryNamesFitBesideAnyLegalName) {
  ScratchDir Dir;
  const std::string Longest(255, 'n');
  ASSERT_TRUE(writeFileAtomic(Dir / Longest, "fits").isOk());
  EXPECT_EQ(slurp(Dir / Longest), "fits");
}

TEST(AtomicFile, SameDestinationSeesThroughLinks) {
  ScratchDir Dir;
  spit(Dir / "x.o", "old");
  ASSERT_EQ(::symlink("x.o", (Dir / "alias.o").c_str()), 0);
  Expected<AtomicFile> A = AtomicFile::create(Dir / "x.o");
  Expected<AtomicFile> B = AtomicFile::create(Dir / "alias.o");
  Expected<AtomicFile> C = AtomicFile::create(Dir / "x.h");
  ASSERT_TRUE(A.isOk() && B.isOk() && C.isOk());
  EXPECT_TRUE(A->sameDestination(*B));
  EXPECT_FALSE(A->sameDestination(*C));
}

TEST(AtomicFile, ASignalRemovesTheTemporaryFile) {
  ScratchDir Dir;
  for (int Signal : {SIGINT, SIGTERM, SIGHUP}) {
    const pid_t Child = fork();
    ASSERT_GE(Child, 0);
    if (Child == 0) {
      removeTemporariesOnSignals();
      Expected<AtomicFile> F = AtomicFile::write(Dir / "out.bin", std::string(1 << 20, 'x'));
      if (!F || temporaries(Dir).size() != 1)
        _exit(3);
      std::raise(Signal);
      _exit(4); // Not reached: the handler dies of the signal.
    }
    int Raw = 0;
    ASSERT_EQ(waitpid(Child, &Raw, 0), Child);
    ASSERT_TRUE(WIFSIGNALED(Raw)) << "exit " << WEXITSTATUS(Raw);
    EXPECT_EQ(WTERMSIG(Raw), Signal);
    EXPECT_TRUE(temporaries(Dir).empty()) << "signal " << Signal;
    EXPECT_FALSE(std::filesystem::exists(Dir.Path / "out.bin"));
  }
}

TEST(AtomicFile, ReplaceGivesAnExactModeAndReplacesWhateverTheNameHolds) {
  ScratchDir Dir;
  ASSERT_EQ(::mkfifo((Dir / "fifo").c_str(), 0666), 0);
  ASSERT_EQ(::symlink("elsewhere", (Dir / "link").c_str()), 0);
  spit(Dir / "file", "old");
  ASSERT_EQ(::chmod((Dir / "file").c_str(), 0666), 0);
  const mode_t Old = ::umask(0);
  for (const char *Name : {"new", "fifo", "link", "file"}) {
    Expected<AtomicFile> F = AtomicFile::replace(Dir / Name, 0600);
    ASSERT_TRUE(F.isOk()) << Name;
    ASSERT_TRUE(F->append("entry").isOk());
    ASSERT_TRUE(F->commit().isOk());
    const struct stat St = lstatOf(Dir / Name);
    EXPECT_TRUE(S_ISREG(St.st_mode)) << Name;
    EXPECT_EQ(St.st_mode & 07777, 0600u) << Name;
    EXPECT_EQ(slurp(Dir / Name), "entry");
  }
  ::umask(Old);
  EXPECT_FALSE(std::filesystem::exists(Dir.Path / "elsewhere"));
}

} // namespace
