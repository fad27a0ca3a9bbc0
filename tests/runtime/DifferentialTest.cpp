//===- tests/runtime/DifferentialTest.cpp - JIT against the interpreter --===//
//
// The backbone: random configurations run through the JIT and the reference
// interpreter must give the same bytes, or the same error position. Set
// GATHERJIT_SEED to replay a failure; the seed and case are printed.
//
//===----------------------------------------------------------------------===//

#include "RandomCase.h"
#include "gatherjit/Interpreter.h"
#include "gatherjit/Runtime.h"
#include "runtime/GenericKernel.h"

#include <gtest/gtest.h>

#include <cstdlib>
#include <map>

using namespace gatherjit;
using namespace gatherjit::test;

namespace {

void compareEngines(Runtime &RT, const RandomCase &C, const std::string &Trace) {
  SCOPED_TRACE(Trace);
  Expected<Kernel> K = RT.compile(C.Desc);
  ASSERT_TRUE(K.isOk()) << K.status().message();
  const size_t OutBytes = requiredElements(C.Desc.Output) * C.Desc.Output.elementBytes();
  std::vector<char> Ref(OutBytes, '\xab'), Jit(OutBytes, '\xab');
  Status RS = interpret(C.Desc, C.Input.data(), C.Indices.data(), Ref.data());
  Status JS = K->run(C.Input.data(), C.Indices.data(), Jit.data());
  ASSERT_EQ(RS.code(), JS.code()) << "interp: " << RS.message() << "\njit: " << JS.message();
  if (RS) {
    ASSERT_EQ(Ref, Jit) << "outputs differ";
  } else {
    ASSERT_EQ(RS.position(), JS.position());
    ASSERT_EQ(RS.message(), JS.message());
  }
  // The generic baseline the benchmarks compare against must agree too.
  if (C.Desc.outputElements() == 0)
    return;
  const KernelSpec Spec = canonicalize(C.Desc);
  std::vector<char> Gen(OutBytes, '\xab');
  const int64_t GR = runGeneric(Spec, C.Input.data(), C.Indices.data(), Gen.data(), 0, Spec.rows());
  if (RS) {
    ASSERT_EQ(GR, 0);
    ASSERT_EQ(Ref, Gen) << "generic kernel differs";
  } else {
    ASSERT_EQ(static_cast<uint64_t>(GR - 1), *RS.position());
  }
}

TEST(Differential, TwoThousandRandomConfigurations) {
  const uint64_t Seed = seedFromEnv(20261122);
  RuntimeOptions Options;
  Options.Specialization = Specialize::AtCompile;
  Options.Threads = 1;
  Options.CacheCapacity = 64; // Exercise eviction on the way.
  // Most random cases are small: compile them at O2 itself, the code large
  // kernels run and small ones move up to. (O1, the quick tier, is below.)
  Options.QuickTier = false;
  Expected<std::unique_ptr<Runtime>> RT = Runtime::create(Options);
  ASSERT_TRUE(RT.isOk()) << RT.status().message();
  CaseGenerator Gen(Seed);
  // What the cases covered, per operator: all, failing with a bad index,
  // and GatherNDs with batches or tuples of several components.
  Coverage Covered;
  std::map<OpKind, unsigned *> Cases, Failing;
  for (OpKind Op : {OpKind::GatherElements, OpKind::Gather, OpKind::GatherND}) {
    Cases[Op] = &Covered.floor(std::string(opKindName(Op)) + " cases", 200);
    Failing[Op] = &Covered.floor(std::string(opKindName(Op)) + " cases with a bad index", 10);
  }
  unsigned &Batched = Covered.floor("batched GatherNDs", 50);
  unsigned &Tuples = Covered.floor("GatherNDs of tuples", 50);
  for (unsigned I = 0; Covered.drawMore(I, 2000, 3000); ++I) {
    RandomCase C = Gen.next();
    compareEngines(
        **RT, C, "seed " + std::to_string(Seed) + " case " + std::to_string(I) + ": " + C.Summary);
    if (HasFatalFailure())
      return;
    ++*Cases[C.Desc.Op];
    if (C.Desc.Op == OpKind::GatherND) {
      Batched += C.Desc.BatchDimensionCount > 0;
      Tuples += C.Desc.tupleSize() > 1;
    }
    std::vector<char> Out(requiredElements(C.Desc.Output) * C.Desc.Output.elementBytes());
    *Failing[C.Desc.Op] += !interpret(C.Desc, C.Input.data(), C.Indices.data(), Out.data());
  }
  EXPECT_EQ(Covered.unmet(), "");
}

TEST(Differential, EveryOptimizationLevel) {
  const uint64_t Seed = seedFromEnv(7);
  for (OptLevel Level : {OptLevel::O0, OptLevel::O1, OptLevel::O3}) {
    RuntimeOptions Options;
    Options.Specialization = Specialize::AtCompile;
    Options.Opt = Level;
    Options.Threads = 1;
    Expected<std::unique_ptr<Runtime>> RT = Runtime::create(Options);
    ASSERT_TRUE(RT.isOk());
    CaseGenerator Gen(Seed);
    for (int I = 0; I < 100; ++I) {
      RandomCase C = Gen.next();
      compareEngines(**RT, C,
                     std::string(optLevelName(Level)) + " seed " + std::to_string(Seed) + " case " +
                         std::to_string(I) + ": " + C.Summary);
      if (HasFatalFailure())
        return;
    }
  }
}

} // namespace
