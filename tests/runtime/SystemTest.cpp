//===- tests/runtime/SystemTest.cpp - Bounded reads, errors, flags -------===//

#include "runtime/System.h"

#include "tools/CliTestUtil.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <cstdlib>
#include <sys/stat.h>
#include <thread>

using namespace gatherjit;
using namespace gatherjit::test;
using ::testing::HasSubstr;

namespace {

TEST(System, OnlyRegularFilesAndFifosAreRead) {
  Expected<InputFile> Dev = InputFile::open("/dev/zero");
  ASSERT_FALSE(Dev.isOk());
  EXPECT_EQ(Dev.status().code(), ErrorCode::InvalidArgument);
  EXPECT_THAT(Dev.status().message(), HasSubstr("character device"));
  ScratchDir Dir;
  Expected<InputFile> D = InputFile::open(Dir.Path.string());
  ASSERT_FALSE(D.isOk());
  EXPECT_THAT(D.status().message(), HasSubstr("directory"));
  Expected<InputFile> Missing = InputFile::open(Dir / "missing");
  ASSERT_FALSE(Missing.isOk());
  EXPECT_EQ(Missing.status().code(), ErrorCode::InvalidArgument);
}

TEST(System, TextFilesOverTheLimitAreRefusedRegularOrStreamed) {
  ScratchDir Dir;
  spit(Dir / "small", "12345");
  spit(Dir / "large", std::string(100, 'x'));
  Expected<std::string> Small = readTextFile(Dir / "small", 5);
  ASSERT_TRUE(Small.isOk());
  EXPECT_EQ(*Small, "12345");
  Expected<std::string> Large = readTextFile(Dir / "large", 99);
  ASSERT_FALSE(Large.isOk());
  EXPECT_THAT(Large.status().message(), HasSubstr("larger than 99 bytes"));
  // A FIFO has no size: the reader stops one byte past the limit.
  const std::string Fifo = Dir / "fifo";
  ASSERT_EQ(::mkfifo(Fifo.c_str(), 0600), 0);
  std::thread Writer([&] { spit(Fifo, std::string(1000, 'y')); });
  Expected<std::string> Streamed = readTextFile(Fifo, 10);
  EXPECT_FALSE(Streamed.isOk());
  // It was read up to the limit: the message says so.
  EXPECT_THAT(Streamed.status().message(), HasSubstr("goes on past 10 bytes"));
  EXPECT_THAT(Streamed.status().message(), HasSubstr("refused after reading"));
  Writer.join();
}

TEST(System, AllocationsBeyondTheMachinesMemoryAreRefusedBeforeTrying) {
  const uint64_t Memory = physicalMemoryBytes();
  ASSERT_GT(Memory, 1u << 20);
  EXPECT_TRUE(checkAllocation(Memory / 4, "the output").isOk());
  Status S = checkAllocation(Memory + 1, "the output");
  EXPECT_EQ(S.code(), ErrorCode::InvalidArgument);
  EXPECT_THAT(S.message(), HasSubstr("the output needs"));
  EXPECT_FALSE(ByteBuffer::allocate(uint64_t(1) << 62, "x").isOk());
  Expected<ByteBuffer> B = ByteBuffer::allocate(4096, "x");
  ASSERT_TRUE(B.isOk());
  EXPECT_EQ(B->size(), 4096u);
}

TEST(System, FileErrorsAreTheUsersOrTheSystems) {
  EXPECT_EQ(fileError("cannot open", "x", ENOENT).code(), ErrorCode::InvalidArgument);
  EXPECT_EQ(fileError("cannot open", "x", ELOOP).code(), ErrorCode::InvalidArgument);
  EXPECT_EQ(fileError("cannot write", "x", ENOSPC).code(), ErrorCode::IoError);
  EXPECT_EQ(fileError("cannot write", "x", EACCES).code(), ErrorCode::IoError);
  EXPECT_THAT(fileError("cannot write", "a\nb", ENOSPC).message(),
              HasSubstr("cannot write 'a\\nb': No space left on device"));
}

TEST(System, BooleanEnvironmentVariablesHaveAnOffSpelling) {
  for (const char *Off : {"", "0", "false", "OFF", "no"}) {
    ::setenv("GATHERJIT_TEST_FLAG", Off, 1);
    EXPECT_FALSE(envFlag("GATHERJIT_TEST_FLAG")) << Off;
  }
  for (const char *On : {"1", "true", "yes", "on"}) {
    ::setenv("GATHERJIT_TEST_FLAG", On, 1);
    EXPECT_TRUE(envFlag("GATHERJIT_TEST_FLAG")) << On;
  }
  ::unsetenv("GATHERJIT_TEST_FLAG");
  EXPECT_FALSE(envFlag("GATHERJIT_TEST_FLAG"));
}

TEST(System, QuotedUserTextIsEscapedAndBounded) {
  EXPECT_EQ(quote(std::string("a\0b\n\x1b'", 6)), "'a\\0b\\n\\x1b\\''");
  EXPECT_EQ(quote("abc", 200, '"'), "\"abc\"");
  const std::string Long = quote(std::string(100000, 'z'));
  EXPECT_LT(Long.size(), 260u);
  EXPECT_THAT(Long, HasSubstr("(99800 more bytes)"));
}

} // namespace
