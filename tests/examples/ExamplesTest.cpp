//===- tests/examples/ExamplesTest.cpp - The examples, checked -----------===//
//
// examples/aot/main.c runs kernels compiled by `gatherjit aot` and prints
// them; every line must equal what the interpreter computes for the same
// descriptors and data.
//
//===----------------------------------------------------------------------===//

#include "TestUtil.h"
#include "gatherjit/DescriptorJson.h"
#include "tools/CliTestUtil.h"

#include "gatherjit/Interpreter.h"

#include <gtest/gtest.h>

#include <cstdio>

using namespace gatherjit;
using namespace gatherjit::test;

namespace {

std::string floatsLine(const std::string &Name, int64_t Status, const std::vector<float> &V) {
  std::string Line = Name + ": " + std::to_string(Status) + " |";
  char Buf[32];
  for (float F : V) {
    std::snprintf(Buf, sizeof(Buf), " %.9g", F);
    Line += Buf;
  }
  return Line + "\n";
}

/// The kernel's return value for \p S: 0, or 1 + the bad position.
int64_t abiResult(const Status &S) { return S ? 0 : static_cast<int64_t>(*S.position()) + 1; }

} // namespace

TEST(Examples, AotProgramMatchesTheInterpreter) {
  // onnx_seed: ONNX GatherElements [2,2] FLOAT32, INT64 indices, axis 1.
  Expected<GatherElementsDesc> Seed =
      onnxGatherElements(tensor(DataType::Float32, {2, 2}), tensor(DataType::Int64, {2, 2}), 1);
  ASSERT_TRUE(Seed.isOk());
  Expected<ValidDesc> SeedV = validate(*Seed);
  ASSERT_TRUE(SeedV.isOk());
  const std::vector<float> SeedData = {1, 2, 3, 4};
  std::vector<int64_t> SeedIdx = {0, 0, 1, 0};
  std::vector<float> SeedOut(4);
  Status S1 = interpret(*SeedV, SeedData.data(), SeedIdx.data(), SeedOut.data());
  std::string Want = floatsLine("onnx_seed", abiResult(S1), SeedOut);
  SeedIdx[2] = 2;
  Status S2 = interpret(*SeedV, SeedData.data(), SeedIdx.data(), SeedOut.data());
  ASSERT_FALSE(S2);
  Want += "onnx_seed_bad_index: " + std::to_string(abiResult(S2)) + "\n";

  // embedding: the descriptor file the example's build compiles.
  const std::string Json = slurp(GATHERJIT_SOURCE_DIR "/examples/aot/embedding.json");
  Expected<JsonDescriptor> D = parseDescriptorJson(Json);
  ASSERT_TRUE(D.isOk()) << D.status().message();
  Expected<ValidDesc> EmbV = D->validate();
  ASSERT_TRUE(EmbV.isOk()) << EmbV.status().message();
  std::vector<float> Table(1000 * 64);
  for (int I = 0; I < 1000 * 64; ++I)
    Table[I] = static_cast<float>(I % 997) * 0.5f;
  std::vector<int32_t> Ids(16);
  for (int I = 0; I < 16; ++I)
    Ids[I] = (I * 379 + 11) % 1000 - (I % 3 == 0 ? 1000 : 0);
  std::vector<float> Rows(16 * 64);
  Status S3 = interpret(*EmbV, Table.data(), Ids.data(), Rows.data());
  Want += floatsLine("embedding", abiResult(S3), Rows);
  Want += "embedding_split: 0 same\n";

  ScratchDir Dir;
  const std::string Cmd = std::string(GATHERJIT_AOT_EXAMPLE) + " > " + (Dir / "out.txt");
  ASSERT_EQ(std::system(Cmd.c_str()), 0);
  EXPECT_EQ(slurp(Dir / "out.txt"), Want);
}
