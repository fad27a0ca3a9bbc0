//===- tests/runtime/DiskCacheTest.cpp - The persistent kernel cache -----===//

#include "runtime/DiskCache.h"

#include "RandomCase.h"
#include "TestUtil.h"
#include "tools/CliTestUtil.h"

#include "gatherjit/Interpreter.h"
#include "gatherjit/Runtime.h"

#include <gtest/gtest.h>

#include <sys/stat.h>
#include <unistd.h>

using namespace gatherjit;
using namespace gatherjit::test;

namespace {

std::unique_ptr<Runtime> runtimeWith(const std::string &Dir, OptLevel Opt = OptLevel::O2,
                                     bool WarmUp = false) {
  RuntimeOptions O;
  O.Specialization = Specialize::AtCompile; // These tests are about compiled code.
  O.CacheDir = Dir;
  O.Opt = Opt;
  O.Threads = 1;
  O.WarmUp = WarmUp;
  Expected<std::unique_ptr<Runtime>> RT = Runtime::create(O);
  EXPECT_TRUE(RT.isOk()) << RT.status().message();
  return RT ? RT.take() : nullptr;
}

ValidDesc geDesc(uint64_t Rows, uint64_t Cols) {
  Expected<ValidDesc> V = validate(GatherElementsDesc{tensor(DataType::Float32, {Rows, Cols}),
                                                      tensor(DataType::Int64, {Rows, Cols}),
                                                      tensor(DataType::Float32, {Rows, Cols}), 1});
  EXPECT_TRUE(V.isOk());
  return *V;
}

/// Compiles \p D with \p RT, runs it on patterned data and expects the
/// interpreter's bytes. Returns whether the code came from disk.
bool compileAndCheck(Runtime &RT, const ValidDesc &D) {
  Expected<Kernel> K = RT.compile(D);
  EXPECT_TRUE(K.isOk()) << K.status().message();
  if (!K)
    return false;
  const uint64_t N = D.outputElements(), Cols = D.Input.Sizes[1];
  std::vector<char> In = patternBuffer(N, 4);
  std::vector<int64_t> Idx(N);
  for (uint64_t I = 0; I < N; ++I)
    Idx[I] = static_cast<int64_t>((I * 7 + 3) % Cols) - (I % 2 ? static_cast<int64_t>(Cols) : 0);
  std::vector<char> Ref(N * 4), Out(N * 4);
  EXPECT_TRUE(interpret(D, In.data(), Idx.data(), Ref.data()).isOk());
  EXPECT_TRUE(K->run(In.data(), Idx.data(), Out.data()).isOk());
  EXPECT_EQ(Ref, Out);
  if (K->fromDiskCache()) {
    EXPECT_EQ(K->compileTimes().Optimize, 0.0);
    EXPECT_EQ(K->compileTimes().Codegen, 0.0);
  }
  return K->fromDiskCache();
}

/// The cache's entries (not its trim stamp).
std::vector<std::filesystem::path> entries(const std::filesystem::path &Dir) {
  std::vector<std::filesystem::path> Files;
  for (auto &E : std::filesystem::directory_iterator(Dir))
    if (E.path().filename() != DiskCache::LastTrimName)
      Files.push_back(E.path());
  return Files;
}

} // namespace

TEST(DiskCache, EntryRoundTripsAndAnyDamageIsDetected) {
  const std::string Key = "gatherjit kernel cache\nspec one\n";
  std::vector<char> Object(300);
  for (size_t I = 0; I < Object.size(); ++I)
    Object[I] = static_cast<char>(I * 13);
  const std::string File = DiskCache::encode(Key, Object);
  ASSERT_EQ(DiskCache::decode(File, Key), Object);
  EXPECT_FALSE(DiskCache::decode(File, Key + "x"));
  EXPECT_FALSE(DiskCache::decode(File, "gatherjit kernel cache\nspec two\n"));
  for (size_t Len = 0; Len < File.size(); Len += 7)
    EXPECT_FALSE(DiskCache::decode(File.substr(0, Len), Key)) << Len;
  EXPECT_FALSE(DiskCache::decode(File + "tail", Key));
  for (size_t At = 0; At < File.size(); At += 5) {
    std::string Damaged = File;
    Damaged[At] ^= 0x20;
    EXPECT_FALSE(DiskCache::decode(Damaged, Key)) << "flipped byte " << At;
  }
}

TEST(DiskCache, ANewRuntimeLoadsWithoutCompiling) {
  ScratchDir Dir;
  const ValidDesc D = geDesc(6, 9);
  {
    auto RT = runtimeWith(Dir / "cache");
    EXPECT_FALSE(compileAndCheck(*RT, D));
    EXPECT_EQ(RT->stats().DiskStores, 1u);
  }
  ASSERT_EQ(entries(Dir / "cache").size(), 1u);
  auto RT = runtimeWith(Dir / "cache");
  EXPECT_TRUE(compileAndCheck(*RT, D));
  EXPECT_EQ(RT->stats().DiskLoads, 1u);
  EXPECT_EQ(RT->stats().DiskStores, 0u);
  // Another optimization level is another key.
  auto O1 = runtimeWith(Dir / "cache", OptLevel::O1);
  EXPECT_FALSE(compileAndCheck(*O1, D));
}

TEST(DiskCache, WarmUpCachesAndStoresNothing) {
  ScratchDir Dir;
  // The warm-up's own kernel (2x8 FLOAT32 along axis 1) asked for at once:
  // compiled for the caller (a miss, stored), whatever the warm-up is doing.
  auto RT = runtimeWith(Dir / "cache", OptLevel::O2, /*WarmUp=*/true);
  EXPECT_FALSE(compileAndCheck(*RT, geDesc(2, 8)));
  EXPECT_FALSE(compileAndCheck(*RT, geDesc(5, 7)));
  EXPECT_EQ(RT->stats().Misses, 2u);
  EXPECT_EQ(RT->stats().DiskStores, 2u);
  RT.reset(); // Joins the warm-up.
  EXPECT_EQ(entries(Dir / "cache").size(), 2u);
  // A runtime that goes at once stops its warm-up.
  for (int I = 0; I < 3; ++I)
    runtimeWith(Dir / "cache", OptLevel::O2, /*WarmUp=*/true).reset();
  EXPECT_EQ(entries(Dir / "cache").size(), 2u);
}

TEST(DiskCache, DamagedOrForeignEntriesAreRecompiledNeverRun) {
  ScratchDir Dir;
  const std::string Cache = Dir / "cache";
  const ValidDesc A = geDesc(6, 9), B = geDesc(5, 7);
  EXPECT_FALSE(compileAndCheck(*runtimeWith(Cache), A));
  auto Files = [&] { return entries(Cache); };
  ASSERT_EQ(Files().size(), 1u);
  const std::filesystem::path EntryA = Files()[0];
  const std::string Good = slurp(EntryA.string());

  // Truncated, then a flipped byte in the object: recompiled and rewritten.
  spit(EntryA.string(), Good.substr(0, Good.size() / 2));
  EXPECT_FALSE(compileAndCheck(*runtimeWith(Cache), A));
  EXPECT_EQ(slurp(EntryA.string()), Good);
  std::string Flipped = Good;
  Flipped[Flipped.size() - 40] ^= 1;
  spit(EntryA.string(), Flipped);
  EXPECT_FALSE(compileAndCheck(*runtimeWith(Cache), A));
  EXPECT_TRUE(compileAndCheck(*runtimeWith(Cache), A));

  // A's entry under B's name: B's key does not match, so B is compiled.
  EXPECT_FALSE(compileAndCheck(*runtimeWith(Cache), B));
  ASSERT_EQ(Files().size(), 2u);
  for (const auto &F : Files())
    if (F != EntryA)
      spit(F.string(), Good);
  EXPECT_FALSE(compileAndCheck(*runtimeWith(Cache), B));
  EXPECT_TRUE(compileAndCheck(*runtimeWith(Cache), B));
}

TEST(DiskCache, ConcurrentProcessesLeaveOneValidEntry) {
  ScratchDir Dir;
  std::vector<float> Data(64 * 64);
  std::vector<int64_t> Idx(64 * 64);
  for (size_t I = 0; I < Idx.size(); ++I)
    Idx[I] = static_cast<int64_t>(I * 31 % 64);
  writeArray(Dir / "d.npy", "<f4", {64, 64}, Data);
  writeArray(Dir / "i.npy", "<i8", {64, 64}, Idx);
  std::string Cmd;
  for (int P = 0; P < 6; ++P)
    Cmd += std::string(GATHERJIT_CLI) + " gather-elements --data " + (Dir / "d.npy") +
           " --indices " + (Dir / "i.npy") + " --axis 1 --specialize compile --cache-dir " +
           (Dir / "cache") + " -o " + (Dir / ("o" + std::to_string(P) + ".npy")) + " & ";
  Cmd += "wait";
  ASSERT_EQ(std::system(Cmd.c_str()), 0);
  size_t Count = 0;
  for (const auto &E : entries(Dir / "cache")) {
    EXPECT_EQ(E.extension(), ".gjk") << "a temporary file was left: " << E;
    ++Count;
  }
  EXPECT_EQ(Count, 1u);
  CliResult R = runCli(Dir, "gather-elements --data " + (Dir / "d.npy") + " --indices " +
                                (Dir / "i.npy") + " --axis 1 --stats --cache-dir " +
                                (Dir / "cache") + " -o " + (Dir / "last.npy"));
  ASSERT_EQ(R.Exit, 0) << R.Err;
  EXPECT_EQ(slurp(Dir / "last.npy"), slurp(Dir / "o0.npy"));
  EXPECT_EQ(slurp(Dir / "o5.npy"), slurp(Dir / "o0.npy"));
}

TEST(DiskCache, OnlyTheUsersOwnRegularEntriesAreLoaded) {
  ScratchDir Dir;
  const std::string Cache = Dir / "cache";
  const ValidDesc A = geDesc(4, 6);
  EXPECT_FALSE(compileAndCheck(*runtimeWith(Cache), A));
  ASSERT_EQ(entries(Cache).size(), 1u);
  const std::string Entry = entries(Cache)[0].string();
  const std::string Good = slurp(Entry);
  struct stat St;
  ASSERT_EQ(::stat(Entry.c_str(), &St), 0);
  EXPECT_EQ(St.st_mode & 0777, 0600u);
  EXPECT_TRUE(compileAndCheck(*runtimeWith(Cache), A));

  // Writable by others: whoever could write it could have put code there.
  ASSERT_EQ(::chmod(Entry.c_str(), 0666), 0);
  EXPECT_FALSE(compileAndCheck(*runtimeWith(Cache), A));
  EXPECT_TRUE(compileAndCheck(*runtimeWith(Cache), A)) << "rewritten as the user's own";
  if (::chown(Entry.c_str(), 65534, 65534) == 0) {
    EXPECT_FALSE(compileAndCheck(*runtimeWith(Cache), A)) << "another user's entry";
    EXPECT_TRUE(compileAndCheck(*runtimeWith(Cache), A));
  }
  // Not a regular file: a FIFO must not hang, a device must not be read, a
  // link is not followed even to a good entry.
  spit(Dir / "copy.gjk", Good);
  ASSERT_EQ(::chmod((Dir / "copy.gjk").c_str(), 0600), 0);
  for (int Kind = 0; Kind < 3; ++Kind) {
    std::filesystem::remove(Entry);
    if (Kind == 0)
      ASSERT_EQ(::mkfifo(Entry.c_str(), 0600), 0);
    else
      ASSERT_EQ(::symlink(Kind == 1 ? "/dev/zero" : (Dir / "copy.gjk").c_str(), Entry.c_str()), 0);
    EXPECT_FALSE(compileAndCheck(*runtimeWith(Cache), A)) << "kind " << Kind;
    EXPECT_TRUE(compileAndCheck(*runtimeWith(Cache), A)) << "kind " << Kind;
  }
}

TEST(DiskCache, ADirectoryNotTheUsersOwnIsNotUsedAndANewOneIsPrivate) {
  ScratchDir Dir;
  const std::string Shared = Dir / "shared";
  std::filesystem::create_directory(Shared);
  ASSERT_EQ(::chmod(Shared.c_str(), 0777), 0);
  auto RT = runtimeWith(Shared);
  EXPECT_FALSE(compileAndCheck(*RT, geDesc(3, 5)));
  EXPECT_EQ(RT->stats().DiskStores, 0u);
  EXPECT_TRUE(entries(Shared).empty());

  auto Fresh = runtimeWith(Dir / "new/cache");
  EXPECT_FALSE(compileAndCheck(*Fresh, geDesc(3, 5)));
  EXPECT_EQ(Fresh->stats().DiskStores, 1u);
  struct stat St;
  ASSERT_EQ(::stat((Dir / "new/cache").c_str(), &St), 0);
  EXPECT_EQ(St.st_mode & 0777, 0700u);
}

TEST(DiskCache, PastItsLimitTheLeastRecentlyUsedEntriesGo) {
  ScratchDir Dir;
  const std::string Cache = Dir / "cache";
  // Measure one entry, then allow about three.
  EXPECT_FALSE(compileAndCheck(*runtimeWith(Cache), geDesc(2, 3)));
  const uint64_t EntryBytes = std::filesystem::file_size(entries(Cache)[0]);
  std::filesystem::remove_all(Cache);
  RuntimeOptions O;
  O.Specialization = Specialize::AtCompile; // These tests are about compiled code.
  O.CacheDir = Cache;
  O.Threads = 1;
  O.CacheDirLimit = EntryBytes * 3 + EntryBytes / 2;
  const ValidDesc Kept = geDesc(2, 3);
  const std::string Stamp = Cache + "/" + DiskCache::LastTrimName;
  for (uint64_t Cols = 3; Cols < 11; ++Cols) {
    Expected<std::unique_ptr<Runtime>> RT = Runtime::create(O);
    ASSERT_TRUE(RT.isOk());
    compileAndCheck(**RT, geDesc(2, Cols));
    // Kept is used again after every new kernel: it stays.
    Expected<std::unique_ptr<Runtime>> Again = Runtime::create(O);
    ASSERT_TRUE(Again.isOk());
    EXPECT_TRUE(compileAndCheck(**Again, Kept)) << Cols;
    uint64_t Total = 0;
    for (const auto &E : entries(Cache))
      Total += std::filesystem::file_size(E);
    EXPECT_LE(Total, O.CacheDirLimit);
  }
  EXPECT_LE(entries(Cache).size(), 3u);
  // Every store keeps the bound, however many one runtime makes; the stamp
  // counts the bytes, so the directory is scanned only past the limit.
  Expected<std::unique_ptr<Runtime>> Soon = Runtime::create(O);
  ASSERT_TRUE(Soon.isOk());
  for (uint64_t Cols = 11; Cols < 30; ++Cols) {
    compileAndCheck(**Soon, geDesc(2, Cols));
    uint64_t Total = 0;
    for (const auto &E : entries(Cache))
      Total += std::filesystem::file_size(E);
    ASSERT_LE(Total, O.CacheDirLimit) << Cols;
  }
  std::filesystem::remove(Stamp);
  // A temporary file a killed process left an hour ago is swept up.
  const std::string Stale = Cache + "/.gatherjit-abcdef.tmp";
  spit(Stale, "partial");
  const auto Old = std::filesystem::file_time_type::clock::now() - std::chrono::hours(2);
  std::filesystem::last_write_time(Stale, Old);
  Expected<std::unique_ptr<Runtime>> RT = Runtime::create(O);
  ASSERT_TRUE(RT.isOk());
  compileAndCheck(**RT, geDesc(3, 3));
  EXPECT_FALSE(std::filesystem::exists(Stale));
}
