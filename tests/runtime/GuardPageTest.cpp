//===- tests/runtime/GuardPageTest.cpp - Reads stay inside buffers -------===//
//
// Compiled code is not instrumented by AddressSanitizer, so this is the
// proof that it never reads or writes outside its buffers: every buffer of
// every configuration of the differential test (both policies, random bad
// indices, strides, broadcast, empty tensors) is placed so that it ends
// against an inaccessible page, then so that it starts right after one,
// and the JIT's kernel, the AOT object's kernel and the generic kernel all
// run there. A stray access is a fault that ends the test; the outputs and
// first bad positions must also match the interpreter's. Set GATHERJIT_SEED
// to replay a failure.
//
//===----------------------------------------------------------------------===//

#include "RandomCase.h"
#include "TestUtil.h"
#include "compiler/plan/KernelPlan.h"
#include "compiler/spec/KernelSpec.h"
#include "gatherjit/Aot.h"
#include "gatherjit/Interpreter.h"
#include "gatherjit/Runtime.h"
#include "runtime/GenericKernel.h"

#include <llvm/ExecutionEngine/Orc/LLJIT.h>
#include <llvm/Support/MemoryBuffer.h>

#include <gtest/gtest.h>

#include <cstdlib>
#include <cstring>
#include <sys/mman.h>
#include <unistd.h>

using namespace gatherjit;
using namespace gatherjit::test;

namespace {

using RangeFn = int64_t (*)(const void *, const void *, void *, int64_t, int64_t);

/// The kernels of one AOT object, linked into this process.
class AotBatch {
public:
  explicit AotBatch(const std::vector<AotKernel> &Kernels) {
    Expected<AotResult> R = compileAot(Kernels, {}, OptLevel::O2, "batch.h");
    if (!R) {
      Error = R.status().message();
      return;
    }
    auto J = llvm::orc::LLJITBuilder().create();
    if (!J) {
      Error = llvm::toString(J.takeError());
      return;
    }
    Jit = std::move(*J);
    if (llvm::Error E = Jit->addObjectFile(llvm::MemoryBuffer::getMemBufferCopy(
            llvm::StringRef(R->Object.data(), R->Object.size()), "batch.o"))) {
      Error = llvm::toString(std::move(E));
      return;
    }
    for (const AotKernel &K : Kernels) {
      auto Addr = Jit->lookup(K.Name + "_range");
      if (!Addr) {
        Error = llvm::toString(Addr.takeError());
        return;
      }
      Entries.push_back(Addr->toPtr<RangeFn>());
    }
  }
  std::string Error;
  std::vector<RangeFn> Entries;

private:
  std::unique_ptr<llvm::orc::LLJIT> Jit;
};

/// Runs \p Run on guarded copies of the case's buffers and checks its
/// status and output against the interpreter's (\p OnRows: \p Run runs
/// the kernel's rows, and so checks no index of an empty output).
template <typename RunFn>
void checkGuarded(const RandomCase &C, bool AgainstEnd, const char *Engine, bool OnRows,
                  RunFn Run) {
  SCOPED_TRACE(std::string(Engine) +
               (AgainstEnd ? ", buffers end at a guard page" : ", buffers start at a guard page"));
  const ValidDesc &D = C.Desc;
  const uint64_t OutBytes = requiredElements(D.Output) * D.Output.elementBytes();
  std::vector<char> Ref(OutBytes, '\xab');
  Status RS = interpret(D, C.Input.data(), C.Indices.data(), Ref.data());
  if (OnRows)
    RS = rowsStatus(D, std::move(RS));
  GuardedBuffer In(C.Input.size(), AgainstEnd), Idx(C.Indices.size(), AgainstEnd),
      Out(OutBytes, AgainstEnd);
  In.fill(C.Input);
  Idx.fill(C.Indices);
  Out.fill(std::vector<char>(OutBytes, '\xab'));
  const int64_t R = Run(In.data(), Idx.data(), Out.data());
  if (RS) {
    ASSERT_EQ(R, 0) << "the kernel reported a bad index the interpreter did not";
    ASSERT_EQ(Out.bytes(), Ref) << "outputs differ";
  } else {
    ASSERT_EQ(RS.code(), ErrorCode::IndexOutOfRange);
    ASSERT_EQ(static_cast<uint64_t>(R - 1), *RS.position());
  }
}

TEST(GuardPage, JitAotAndGenericKernelsStayInsideTheirBuffers) {
  const uint64_t Seed = seedFromEnv(20261123);
  constexpr int Cases = 2000, Batch = 100;
  RuntimeOptions Options;
  Options.Specialization = Specialize::AtCompile;
  Options.Threads = 1;
  Options.CacheCapacity = 64;
  Expected<std::unique_ptr<Runtime>> RT = Runtime::create(Options);
  ASSERT_TRUE(RT.isOk()) << RT.status().message();
  CaseGenerator Gen(Seed);
  int Configurations = 0;
  for (int First = 0; First < Cases; First += Batch) {
    std::vector<RandomCase> Group;
    std::vector<AotKernel> Kernels;
    for (int I = 0; I < Batch; ++I) {
      Group.push_back(Gen.next());
      Kernels.push_back({"guarded_" + std::to_string(I), Group.back().Desc});
    }
    AotBatch Aot(Kernels);
    ASSERT_EQ(Aot.Error, "");
    for (int I = 0; I < Batch; ++I) {
      const RandomCase &C = Group[I];
      SCOPED_TRACE("seed " + std::to_string(Seed) + " case " + std::to_string(First + I) + ": " +
                   C.Summary);
      Expected<Kernel> K = (*RT)->compile(C.Desc);
      ASSERT_TRUE(K.isOk()) << K.status().message();
      const KernelSpec Spec = canonicalize(C.Desc);
      const int64_t Rows = static_cast<int64_t>(Spec.rows());
      for (bool AgainstEnd : {true, false}) {
        checkGuarded(C, AgainstEnd, "jit", false, [&](const void *In, const void *Idx, void *Out) {
          Status S = K->run(In, Idx, Out);
          return S ? int64_t(0) : static_cast<int64_t>(S.position().value_or(~0ull)) + 1;
        });
        // The generic loop whatever the output (an empty one's rows may
        // not be empty).
        checkGuarded(C, AgainstEnd, "generic", true,
                     [&](const void *In, const void *Idx, void *Out) {
                       return runGeneric(Spec, In, Idx, Out, 0, Spec.rows());
                     });
        if (C.Desc.outputElements() == 0)
          continue; // No code: nothing runs.
        checkGuarded(C, AgainstEnd, "aot", true, [&](const void *In, const void *Idx, void *Out) {
          return Aot.Entries[I](In, Idx, Out, 0, Rows);
        });
        if (HasFatalFailure())
          return;
      }
      ++Configurations;
    }
  }
  EXPECT_EQ(Configurations, Cases);
}

TEST(GuardPage, RowsThatLoadTheirInputFirstStayInsideIt) {
  // Rows that load their whole input row, or slice, before they gather
  // (KernelPlan's TouchInputRow and TouchRegion) read up to the input's
  // last byte: FLOAT32 [300, 1000] by 300 ids shared by every row (rows of
  // 4000 bytes), and GatherElements of FLOAT32 [9, 256, 125] along axis 1
  // by [9, 100, 125] (slices of 128 000 bytes).
  RuntimeOptions Options;
  Options.Specialization = Specialize::AtCompile;
  Options.Threads = 1;
  Expected<std::unique_ptr<Runtime>> RT = Runtime::create(Options);
  ASSERT_TRUE(RT.isOk()) << RT.status().message();
  auto Tensor = [](DataType Type, std::vector<uint64_t> Sizes) {
    TensorDesc T;
    T.Type = Type;
    T.Sizes = std::move(Sizes);
    return T;
  };
  Expected<GatherDesc> Rows =
      onnxGather(Tensor(DataType::Float32, {300, 1000}), Tensor(DataType::Int64, {300}), 1);
  Expected<GatherElementsDesc> Slices = onnxGatherElements(
      Tensor(DataType::Float32, {9, 256, 125}), Tensor(DataType::Int64, {9, 100, 125}), 1);
  ASSERT_TRUE(Rows.isOk() && Slices.isOk());
  Expected<ValidDesc> RowsV = validate(*Rows), SlicesV = validate(*Slices);
  ASSERT_TRUE(RowsV.isOk() && SlicesV.isOk());
  struct Case {
    const ValidDesc *V;
    uint64_t AxisSize;
  };
  for (const Case &C : {Case{&*RowsV, 1000}, Case{&*SlicesV, 256}}) {
    const KernelPlan Plan = planKernel(canonicalize(*C.V));
    SCOPED_TRACE(Plan.describe());
    ASSERT_TRUE(Plan.TouchInputRow || Plan.TouchRegion);
    Expected<Kernel> K = (*RT)->compile(*C.V);
    ASSERT_TRUE(K.isOk()) << K.status().message();
    RandomCase R;
    R.Desc = *C.V;
    R.Input.resize(requiredElements(R.Desc.Input) * 4);
    for (size_t I = 0; I < R.Input.size(); ++I)
      R.Input[I] = static_cast<char>(I * 7 + 3);
    std::mt19937_64 Rng(5);
    std::vector<int64_t> Idx(requiredElements(R.Desc.Indices));
    for (int64_t &I : Idx)
      I = static_cast<int64_t>(Rng() % C.AxisSize);
    for (bool Bad : {false, true}) {
      if (Bad)
        Idx[Idx.size() / 2] = static_cast<int64_t>(C.AxisSize);
      R.Indices.resize(Idx.size() * 8);
      std::memcpy(R.Indices.data(), Idx.data(), R.Indices.size());
      for (bool AgainstEnd : {true, false})
        checkGuarded(R, AgainstEnd, "jit", false, [&](const void *In, const void *I, void *Out) {
          Status S = K->run(In, I, Out);
          return S ? int64_t(0) : static_cast<int64_t>(S.position().value_or(~0ull)) + 1;
        });
    }
  }
}

} // namespace
