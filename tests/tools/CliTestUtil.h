//===- tests/tools/CliTestUtil.h - Running the command line in tests -----===//
#ifndef GATHERJIT_TESTS_CLITESTUTIL_H
#define GATHERJIT_TESTS_CLITESTUTIL_H

#include "Npy.h"
#include "TestUtil.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <cstring>
#include <filesystem>
#include <fstream>
#include <sstream>
#include <string>
#include <sys/wait.h>

namespace gatherjit::test {

struct CliResult {
  int Exit = -1;
  std::string Out, Err;
};

inline CliResult runCli(const ScratchDir &Dir, const std::string &Args) {
  const std::string Out = Dir / "stdout.txt", Err = Dir / "stderr.txt";
  std::string Cmd = std::string(GATHERJIT_CLI) + " " + Args + " >" + Out + " 2>" + Err;
  int Raw = std::system(Cmd.c_str());
  CliResult R;
  R.Exit = WIFEXITED(Raw) ? WEXITSTATUS(Raw) : -1;
  R.Out = slurp(Out);
  R.Err = slurp(Err);
  return R;
}

/// Asserts the command line's contract for a failure: \p Exit (2 for bad
/// input, 1 for the system's failures) and exactly one "error:" line
/// containing \p Substr.
inline void expectOneErrorLine(const CliResult &R, int Exit, const std::string &Substr) {
  EXPECT_EQ(R.Exit, Exit) << R.Err;
  EXPECT_THAT(R.Err, ::testing::StartsWith("error: "));
  EXPECT_EQ(std::count(R.Err.begin(), R.Err.end(), '\n'), 1) << R.Err;
  EXPECT_THAT(R.Err, ::testing::HasSubstr(Substr));
}

template <typename T>
void writeArray(const std::string &Path, const std::string &Descr,
                const std::vector<uint64_t> &Shape, const std::vector<T> &Values) {
  spit(Path, encodeNpy(Descr, Shape, Values.data(), Values.size() * sizeof(T)));
}

template <typename T>
std::vector<T> readArray(const std::string &Path, std::vector<uint64_t> *Shape = nullptr) {
  Expected<NpyArray> A = readNpy(Path);
  EXPECT_TRUE(A.isOk()) << A.status().message();
  if (!A)
    return {};
  if (Shape)
    *Shape = A->Shape;
  std::vector<T> V(A->Data.size() / sizeof(T));
  if (!V.empty()) // (An empty array's data may be null.)
    std::memcpy(V.data(), A->Data.data(), V.size() * sizeof(T));
  return V;
}

} // namespace gatherjit::test

#endif
