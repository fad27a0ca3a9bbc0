//===- tests/runtime/GatherNDTest.cpp - GatherND's documented results ----===//
//
// ONNX's five GatherND examples and DirectML's GATHER_ND1 batch example,
// with the outputs the documents print, through the interpreter and the
// JIT; then Check's message for a bad tuple and Clamp's per-component
// clamping, written out by hand.
//
//===----------------------------------------------------------------------===//

#include "gatherjit/Interpreter.h"
#include "gatherjit/Runtime.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

using namespace gatherjit;
using ::testing::HasSubstr;

namespace {

TensorDesc T(std::vector<uint64_t> Sizes, DataType Type) {
  TensorDesc D;
  D.Type = Type;
  D.Sizes = std::move(Sizes);
  return D;
}

struct Outcome {
  std::vector<int32_t> Out;
  Status S = Status::ok();
};

/// Runs ONNX GatherND on INT32 data with INT64 indices through \p Engine
/// (the interpreter when null, else the runtime).
Outcome run(Runtime *Engine, std::vector<uint64_t> DataShape, std::vector<int32_t> Data,
            std::vector<uint64_t> IdxShape, std::vector<int64_t> Idx, int64_t Batch,
            OobPolicy Policy = OobPolicy::Check) {
  Expected<GatherNDDesc> D =
      onnxGatherND(T(DataShape, DataType::Int32), T(IdxShape, DataType::Int64), Batch);
  EXPECT_TRUE(D.isOk()) << D.status().message();
  ValidateOptions O;
  O.Policy = Policy;
  Expected<ValidDesc> V = validate(*D, O);
  EXPECT_TRUE(V.isOk()) << V.status().message();
  Outcome R;
  R.Out.assign(V->outputElements(), -99);
  if (!Engine) {
    R.S = interpret(*V, Data.data(), Idx.data(), R.Out.data());
    return R;
  }
  Expected<Kernel> K = Engine->compile(*V);
  EXPECT_TRUE(K.isOk()) << K.status().message();
  R.S = K->run(Data.data(), Idx.data(), R.Out.data());
  return R;
}

class GatherND : public ::testing::TestWithParam<bool> {
protected:
  void SetUp() override {
    if (GetParam()) {
      RuntimeOptions O;
      O.Specialization = Specialize::AtCompile;
      O.Threads = 1;
      RT = Runtime::create(O).take();
    }
  }
  Runtime *engine() { return RT.get(); }
  std::unique_ptr<Runtime> RT;
};

const std::vector<int32_t> Cube = {0, 1, 2, 3, 4, 5, 6, 7}; // [2,2,2]

TEST_P(GatherND, OnnxExamples) {
  EXPECT_EQ(run(engine(), {2, 2}, {0, 1, 2, 3}, {2, 2}, {0, 0, 1, 1}, 0).Out,
            (std::vector<int32_t>{0, 3}));
  EXPECT_EQ(run(engine(), {2, 2}, {0, 1, 2, 3}, {2, 1}, {1, 0}, 0).Out,
            (std::vector<int32_t>{2, 3, 0, 1}));
  EXPECT_EQ(run(engine(), {2, 2, 2}, Cube, {2, 2}, {0, 1, 1, 0}, 0).Out,
            (std::vector<int32_t>{2, 3, 4, 5}));
  EXPECT_EQ(run(engine(), {2, 2, 2}, Cube, {2, 1, 2}, {0, 1, 1, 0}, 0).Out,
            (std::vector<int32_t>{2, 3, 4, 5}));
  EXPECT_EQ(run(engine(), {2, 2, 2}, Cube, {2, 1}, {1, 0}, 1).Out,
            (std::vector<int32_t>{2, 3, 4, 5}));
}

TEST_P(GatherND, DirectMLBatchExample) {
  std::vector<int32_t> Data(12);
  for (int I = 0; I < 12; ++I)
    Data[I] = I;
  EXPECT_EQ(run(engine(), {3, 2, 2}, Data, {3, 2, 2}, {0, 0, 1, 1, 1, 1, 0, 0, 0, 1, 1, 0}, 1).Out,
            (std::vector<int32_t>{0, 3, 7, 4, 9, 10}));
}

TEST_P(GatherND, NegativeComponentsCountFromTheEnd) {
  EXPECT_EQ(run(engine(), {2, 3}, {0, 1, 2, 3, 4, 5}, {2, 2}, {-1, -1, 0, -3}, 0).Out,
            (std::vector<int32_t>{5, 0}));
}

TEST_P(GatherND, CheckNamesTheTupleAndItsBadComponent) {
  Outcome R = run(engine(), {2, 3}, {0, 1, 2, 3, 4, 5}, {3, 2}, {0, 0, 1, 2, 1, 3}, 0);
  ASSERT_EQ(R.S.code(), ErrorCode::IndexOutOfRange);
  EXPECT_EQ(R.S.position(), 5u); // Tuple 2 (position 4), component 1.
  EXPECT_THAT(R.S.message(),
              HasSubstr("GatherND: the index tuple IndicesTensor[2,:] = (1, 3) (position 4) has "
                        "component 1 = 3, out of range for InputTensor.Sizes[1] = 3; valid "
                        "indices are -3..2"));
}

TEST_P(GatherND, ClampClampsEachComponent) {
  // (5, -7) -> (1, 0); (-1, 9) -> (1, 2); (-9, 1) -> (0, 1).
  EXPECT_EQ(
      run(engine(), {2, 3}, {0, 1, 2, 3, 4, 5}, {3, 2}, {5, -7, -1, 9, -9, 1}, 0, OobPolicy::Clamp)
          .Out,
      (std::vector<int32_t>{3, 5, 1}));
}

INSTANTIATE_TEST_SUITE_P(Engines, GatherND, ::testing::Bool(),
                         [](const auto &Info) { return Info.param ? "Jit" : "Interpreter"; });

} // namespace
