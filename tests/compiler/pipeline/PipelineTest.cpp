//===- tests/compiler/pipeline/PipelineTest.cpp - One object per target ---===//
//
// The pipeline asks its Backend for everything about the target: a backend
// that records what it is given sees each kernel planned from its facts,
// emitted once and generated once, and nothing emitted on a cache hit.
//
//===----------------------------------------------------------------------===//

#include "compiler/pipeline/Pipeline.h"
#include "compiler/emit/EmitKernel.h"
#include "gatherjit/Validate.h"

#include <llvm/IR/Module.h>
#include <llvm/Support/raw_ostream.h>

#include <gtest/gtest.h>

#include <map>

using namespace gatherjit;

namespace {

class RecordingBackend final : public Backend {
public:
  explicit RecordingBackend(const TargetFacts &F) : Backend(F) {}
  void emit(const KernelSpec &Spec, const KernelPlan &Plan, const std::string &Name,
            llvm::Module &M) const override {
    Plans.push_back(Plan);
    emitKernelInto(Spec, Plan, Name, M);
  }
  Expected<std::vector<char>> generate(llvm::Module &M, OptLevel, PipelineOutput,
                                       CompileTimes &) override {
    ++Generated;
    std::string IR;
    llvm::raw_string_ostream OS(IR);
    M.print(OS, nullptr);
    OS.flush();
    return std::vector<char>(IR.begin(), IR.end());
  }
  mutable std::vector<KernelPlan> Plans;
  int Generated = 0;
};

class MapCache final : public ObjectCache {
public:
  std::string key(const KernelSpec &Spec, OptLevel) const override { return Spec.describe(); }
  std::optional<std::vector<char>> load(const std::string &Key) const override {
    auto It = Entries.find(Key);
    return It == Entries.end() ? std::nullopt : std::optional(It->second);
  }
  Status store(const std::string &Key, const std::vector<char> &Object) const override {
    Entries[Key] = Object;
    return Status::ok();
  }
  mutable std::map<std::string, std::vector<char>> Entries;
};

KernelSpec specOf(uint64_t Rows, uint64_t Cols) {
  TensorDesc In, Idx, Out;
  In.Sizes = Out.Sizes = {Rows, Cols};
  Idx.Type = DataType::Int64;
  Idx.Sizes = {1, Rows};
  Expected<ValidDesc> V = validate(GatherDesc{In, Idx, Out, 0, 1});
  EXPECT_TRUE(V.isOk()) << V.status().message();
  return canonicalize(*V);
}

TEST(Pipeline, PlansFromTheBackendsFactsAndCallsItOncePerStage) {
  RecordingBackend Target({128, 32, false});
  MapCache Cache;
  const KernelSpec Spec = specOf(1000, 256);
  Expected<PipelineResult> R =
      runPipeline({{Spec, "k"}}, Target, OptLevel::O1, PipelineOutput::Object, &Cache);
  ASSERT_TRUE(R.isOk()) << R.status().message();
  ASSERT_EQ(Target.Plans.size(), 1u);
  EXPECT_EQ(Target.Plans[0], planKernel(Spec, {128, 32, false}));
  EXPECT_EQ(Target.Plans[0].LineBytes, 128u);
  EXPECT_EQ(Target.Generated, 1);
  EXPECT_TRUE(R->Stored);
  EXPECT_NE(std::string(R->Bytes.begin(), R->Bytes.end()).find("define i64 @k_range("),
            std::string::npos);
  // Again: from the cache, nothing emitted or generated.
  Expected<PipelineResult> Again =
      runPipeline({{Spec, "k"}}, Target, OptLevel::O1, PipelineOutput::Object, &Cache);
  ASSERT_TRUE(Again.isOk());
  EXPECT_TRUE(Again->FromCache);
  EXPECT_EQ(Again->Bytes, R->Bytes);
  EXPECT_EQ(Target.Plans.size(), 1u);
  EXPECT_EQ(Target.Generated, 1);
  // Two kernels: one module, each planned, generated once, not cached.
  Expected<PipelineResult> Two = runPipeline({{Spec, "a"}, {specOf(7, 3), "b"}}, Target,
                                             OptLevel::O1, PipelineOutput::Object, &Cache);
  ASSERT_TRUE(Two.isOk());
  EXPECT_EQ(Target.Plans.size(), 3u);
  EXPECT_EQ(Target.Generated, 2);
  EXPECT_FALSE(Two->Stored);
}

} // namespace
