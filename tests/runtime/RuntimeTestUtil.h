//===- tests/runtime/RuntimeTestUtil.h - Runtimes and cases for tests ----===//
#ifndef GATHERJIT_TESTS_RUNTIME_RUNTIMETESTUTIL_H
#define GATHERJIT_TESTS_RUNTIME_RUNTIMETESTUTIL_H

#include "TestUtil.h"
#include "compiler/epilogue/Epilogue.h"
#include "compiler/plan/KernelPlan.h"
#include "gatherjit/Interpreter.h"
#include "gatherjit/Runtime.h"

#include <gtest/gtest.h>

#include <random>

/// Skips a test of epilogues in a build without clang's libraries.
#define REQUIRE_EPILOGUES()                                                                        \
  do {                                                                                             \
    if (!::gatherjit::epiloguesSupported())                                                        \
      GTEST_SKIP() << "built without clang's libraries";                                           \
  } while (false)

namespace gatherjit::test {

inline std::unique_ptr<Runtime> makeRuntime(size_t Capacity = 16, unsigned Threads = 1) {
  RuntimeOptions O;
  O.Specialization = Specialize::AtCompile; // These tests are about compiled code.
  O.CacheCapacity = Capacity;
  O.Threads = Threads;
  Expected<std::unique_ptr<Runtime>> RT = Runtime::create(O);
  EXPECT_TRUE(RT.isOk()) << RT.status().message();
  return RT ? RT.take() : nullptr;
}

inline GatherElementsDesc ge(uint64_t Rows, uint64_t Cols, DataType Type = DataType::Float32) {
  return {tensor(Type, {Rows, Cols}), tensor(DataType::Int64, {Rows, Cols}),
          tensor(Type, {Rows, Cols}), 1};
}

/// \p Count valid indices for an axis of \p AxisSize, uniform over
/// [-AxisSize, AxisSize): the negative ones count from the end.
inline std::vector<int64_t> validIndices(uint64_t Count, uint64_t AxisSize, uint64_t Seed) {
  std::mt19937_64 Rng(Seed);
  std::vector<int64_t> Idx(Count);
  for (int64_t &I : Idx)
    I = static_cast<int64_t>(Rng() % (2 * AxisSize)) - static_cast<int64_t>(AxisSize);
  return Idx;
}

/// Input, valid indices (some negative) and the interpreter's output for
/// ge(Rows, Cols).
struct GeCase {
  GeCase(uint64_t Rows, uint64_t Cols)
      : Desc(ge(Rows, Cols)), In(Rows * Cols),
        Idx(validIndices(Rows * Cols, Cols, Rows * 1000 + Cols)) {
    for (uint64_t I = 0; I < Rows * Cols; ++I)
      In[I] = static_cast<float>(I);
  }
  /// Runs \p K and the interpreter; their statuses and outputs must agree.
  ::testing::AssertionResult agrees(const Kernel &K) const {
    std::vector<char> Bytes = encodeIndices(DataType::Int64, Idx);
    std::vector<float> Out(In.size(), -1.0f), Ref(In.size(), -1.0f);
    Status JS = K.run(In.data(), Bytes.data(), Out.data());
    Status RS = interpret(K.desc(), In.data(), Bytes.data(), Ref.data());
    if (JS.code() != RS.code() || JS.position() != RS.position())
      return ::testing::AssertionFailure()
             << "jit: " << JS.message() << "\ninterp: " << RS.message();
    if (RS && Out != Ref)
      return ::testing::AssertionFailure() << "outputs differ";
    return ::testing::AssertionSuccess();
  }
  GatherElementsDesc Desc;
  std::vector<float> In;
  std::vector<int64_t> Idx;
};

/// The plan the runtime's kernel for \p V follows.
inline KernelPlan planOf(const ValidDesc &V) { return planKernel(canonicalize(V)); }

} // namespace gatherjit::test

#endif
