//===- tests/compiler/backend/GpuBackendTest.cpp - GPU kernels, no GPU ----===//
//
// The GPU backend proved on a machine without a GPU:
//  - its thread schedule, with the grid simulated on the host (every thread
//    of the plan's grid run in turn, atomics on host memory), agrees with
//    the interpreter bit for bit on random configurations of every
//    operator, type, rank, layout and policy, the position Check reports
//    included; a grid smaller than the output exercises the stride;
//  - so does the family kernel of each (KernelSpec::Family: every size and
//    stride from its shape argument), one kernel run for every shape of
//    its family that the configurations hold;
//  - so does the thread body with an element epilogue fused in, and with a
//    row epilogue (a thread per row); with a checked one that faults, the
//    grid names a bad index first, else the fault;
//  - the PTX it generates for those configurations, their families, some
//    with an element or row epilogue and some with rows it stages is
//    accepted by ptxas for sm_80 and sm_90 where ptxas is found
//    ($CUDA_HOME/bin, PATH, /usr/local/cuda/bin), with no spill and no
//    stack frame.
//
//===----------------------------------------------------------------------===//

#include "RandomCase.h"
#include "TestUtil.h"
#include "compiler/backend/Backend.h"
#include "compiler/backend/Jit.h"
#include "compiler/backend/Target.h"
#include "compiler/emit/EmitKernel.h"
#include "compiler/epilogue/Epilogue.h"
#include "compiler/pipeline/Pipeline.h"
#include "compiler/plan/KernelPlan.h"
#include "gatherjit/Interpreter.h"
#include "gatherjit/Onnx.h"
#include "gatherjit/Runtime.h"
#include "runtime/FamilyCode.h"

#include <llvm/IR/LLVMContext.h>
#include <llvm/IR/Module.h>
#include <llvm/Target/TargetMachine.h>

#include <gtest/gtest.h>

#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <random>
#include <sstream>
#include <tuple>
#include <unistd.h>
#include <unordered_map>

using namespace gatherjit;
using namespace gatherjit::test;

namespace {

/// The host's code generator, the simulated grid's backend on it, and a
/// JIT that links what they make.
class GpuBackend : public ::testing::Test {
protected:
  void SetUp() override {
    Expected<std::unique_ptr<llvm::TargetMachine>> TM = createTargetMachine({}, OptLevel::O1);
    ASSERT_TRUE(TM.isOk());
    Gen = std::make_unique<CodeGenerator>(TM.take());
    Grid = simulatedGridBackend(*Gen);
    Expected<std::shared_ptr<JitEngine>> Made = JitEngine::create({});
    ASSERT_TRUE(Made.isOk());
    Jit = Made.take();
  }
  /// \p Spec's simulated grid as \p Plan has it (a plan the backend
  /// would not make), linked; null, with a failure, where it does not link.
  std::shared_ptr<const Executable> plannedGrid(const KernelSpec &Spec, const KernelPlan &Plan,
                                                const std::string &Name) {
    llvm::LLVMContext Ctx;
    llvm::Module M(Name, Ctx);
    emitThreadKernelInto(Spec, Plan, Name, GridEntry::SimulatedOnHost, M);
    configureModule(M, Gen->targetMachine());
    Expected<llvm::SmallVector<char, 0>> Obj = Gen->object(M, OptLevel::O1);
    EXPECT_TRUE(Obj.isOk()) << Obj.status().message();
    if (!Obj)
      return nullptr;
    Expected<std::shared_ptr<const Executable>> Code =
        Jit->link(Name, std::vector<char>(Obj->begin(), Obj->end()));
    EXPECT_TRUE(Code.isOk()) << Code.status().message();
    return Code ? Code.take() : nullptr;
  }
  /// A CPU runtime whose fused descriptors and epilogues (compiled for
  /// the CPU) are the interpreter's reference.
  static Expected<std::unique_ptr<Runtime>> referenceRuntime() {
    RuntimeOptions Options;
    Options.Specialization = Specialize::AtCompile;
    Options.Threads = 1;
    return Runtime::create(Options);
  }
  /// One random row-epilogue gather for the grid tests: rowEpilogueDesc's
  /// descriptor, rows of 1 to MaxIn elements in and 1 to MaxOut out, Check
  /// or Clamp, fused with Fn by the reference runtime RT; its operands
  /// (a fraction Bad of the indices bad in every third case, I), the
  /// interpreter's status and output, and the grid's kernel named Name.
  struct RowCase {
    ValidateOptions O;
    ValidDesc V;
    uint64_t Axis = 0;
    RandomCase C;
    size_t OutBytes = 0;
    std::vector<char> Ref;
    Status RS;
    std::shared_ptr<const Executable> Code;
  };
  void rowCase(Runtime &RT, std::mt19937_64 &Rng, const Epilogue &Fn, uint64_t MaxIn,
               uint64_t MaxOut, int I, double Bad, const std::string &Name, RowCase &Out);
  std::unique_ptr<CodeGenerator> Gen;
  std::unique_ptr<Backend> Grid;
  std::shared_ptr<JitEngine> Jit;
};

/// \p Spec's simulated grid as the pipeline makes it, linked; null, with a
/// failure, where it does not.
std::shared_ptr<const Executable> simulatedGrid(Backend &Grid, JitEngine &Jit,
                                                const KernelSpec &Spec, const std::string &Name) {
  Expected<PipelineResult> R = runPipeline({{Spec, Name}}, Grid, OptLevel::O1);
  EXPECT_TRUE(R.isOk()) << R.status().message();
  if (!R)
    return nullptr;
  Expected<std::shared_ptr<const Executable>> Code = Jit.link(Name, R->Bytes);
  EXPECT_TRUE(Code.isOk()) << Code.status().message();
  return Code ? Code.take() : nullptr;
}

/// Runs \p Spec's simulated grid on the operands into \p Out.
int64_t runSimulated(Backend &Grid, JitEngine &Jit, const KernelSpec &Spec, const char *Input,
                     const char *Indices, char *Out, const std::string &Name) {
  const std::shared_ptr<const Executable> Code = simulatedGrid(Grid, Jit, Spec, Name);
  return Code ? Code->runRows(Input, Indices, Out, 0, 1) : -2;
}

/// A kernel's result \p R and output \p Dev are the interpreter's: its
/// status \p RS (0, or 1 + the position of the first bad index it names)
/// and its output \p Ref.
void expectInterpreters(const Status &RS, const std::vector<char> &Ref, int64_t R,
                        const std::vector<char> &Dev) {
  if (RS) {
    EXPECT_EQ(R, 0);
    EXPECT_EQ(Ref, Dev) << "outputs differ";
  } else {
    EXPECT_GT(R, 0);
    EXPECT_EQ(static_cast<uint64_t>(R - 1), *RS.position());
  }
}

/// The byte \p Skew bytes past the first 64-byte boundary of \p Buf (which
/// has room for 64 + Skew bytes more than it is to hold).
char *pastBoundary(std::vector<char> &Buf, size_t Skew) {
  return Buf.data() + (64 - reinterpret_cast<uintptr_t>(Buf.data()) % 64) % 64 + Skew;
}

/// Runs \p Code on \p C's operands into \p Dev, \p OutBytes of output,
/// checking the bytes after them, which no thread may write; the input
/// \p InSkew bytes past a 64-byte boundary.
int64_t runGuarded(const Executable &Code, const RandomCase &C, size_t OutBytes,
                   std::vector<char> &Dev, size_t InSkew = 0) {
  constexpr size_t Guard = 256;
  Dev.assign(OutBytes + Guard, '\xab');
  std::vector<char> InBuf(C.Input.size() + 64 + InSkew);
  char *InAt = pastBoundary(InBuf, InSkew);
  std::copy(C.Input.begin(), C.Input.end(), InAt);
  const int64_t R = Code.runRows(InAt, C.Indices.data(), Dev.data(), 0, 1);
  EXPECT_EQ(std::vector<char>(Dev.begin() + OutBytes, Dev.end()), std::vector<char>(Guard, '\xab'))
      << "a thread wrote past the output";
  Dev.resize(OutBytes);
  return R;
}

/// \p V with random input bytes and indices in [0, \p Axis), but for
/// about a fraction \p Bad of them, which are \p Axis.
RandomCase caseOf(const ValidDesc &V, uint64_t Axis, uint64_t Seed, double Bad) {
  std::mt19937_64 Rng(Seed);
  RandomCase C;
  C.Desc = V;
  C.Summary = V.describe();
  C.Input.resize(requiredElements(V.Input) * V.Input.elementBytes());
  for (char &Byte : C.Input)
    Byte = static_cast<char>(Rng());
  const size_t Size = V.Indices.elementBytes();
  C.Indices.resize(requiredElements(V.Indices) * Size);
  for (size_t I = 0; I < C.Indices.size(); I += Size) {
    const int64_t Index = std::uniform_real_distribution<>(0, 1)(Rng) < Bad
                              ? static_cast<int64_t>(Axis)
                              : static_cast<int64_t>(Axis ? Rng() % Axis : 0);
    std::memcpy(&C.Indices[I], &Index, Size); // Little-endian: the low bytes.
  }
  return C;
}

/// GatherElements on an axis other than the last, rows of 33 to 100
/// columns, ranks 2 to 4, several element and index types, both policies:
/// the axis 300 to 399 long where \p LongAxis (too long for strips to pay
/// for 2 to 8 output rows), else 2 to 7; the indices' 2 to 8, about a
/// fraction \p Bad of them bad.
RandomCase tiledCase(std::mt19937_64 &Rng, bool LongAxis, double Bad) {
  static constexpr DataType Types[] = {DataType::Float32, DataType::UInt8, DataType::Float16,
                                       DataType::Int64};
  const unsigned Rank = 2 + Rng() % 3;
  TensorDesc Data, Ids;
  Data.Type = Types[Rng() % 4];
  Ids.Type = Rng() % 2 ? DataType::Int64 : DataType::Int32;
  for (unsigned D = 0; D + 1 < Rank; ++D)
    Data.Sizes.push_back(2 + Rng() % 6);
  Data.Sizes.push_back(33 + Rng() % 68);
  const int64_t Axis = static_cast<int64_t>(Rng() % (Rank - 1));
  if (LongAxis)
    Data.Sizes[Axis] = 300 + Rng() % 100;
  Ids.Sizes = Data.Sizes;
  Ids.Sizes[Axis] = 2 + Rng() % 7;
  const OobPolicy Policy = Rng() % 2 ? OobPolicy::Check : OobPolicy::Clamp;
  Expected<ValidDesc> V = validateOnnx({OpKind::GatherElements, Data, Ids, Axis}, Policy);
  EXPECT_TRUE(V.isOk()) << V.status().message();
  return caseOf(*V, Data.Sizes[Axis], Rng(), Bad);
}

/// GatherElements along the last axis of rows longer than an L1 line (up
/// to 32 KiB: the rows a GPU kernel stages in shared memory where their
/// outputs read enough of them), of random element and index types,
/// policies, row counts, outputs per row and input row padding, about 1%
/// of the indices bad in every third.
RandomCase wideRowCase(std::mt19937_64 &Rng) {
  static constexpr DataType Types[] = {DataType::Int8, DataType::Float16, DataType::Float32,
                                       DataType::Float64};
  static constexpr DataType IndexTypes[] = {DataType::Int32, DataType::Int64, DataType::UInt32,
                                            DataType::UInt64};
  TensorDesc Data, Ids;
  Data.Type = Types[Rng() % 4];
  const uint64_t Elem = Data.elementBytes();
  const uint64_t Row = 128 / Elem + 1 + Rng() % (Rng() % 2 ? 64 : 2000);
  Data.Sizes = {1 + Rng() % 3, 1 + Rng() % 4, std::min(Row, (uint64_t(32) << 10) / Elem)};
  if (Rng() % 3 == 0)
    Data.Strides = std::vector<uint64_t>{Data.Sizes[1] * (Data.Sizes[2] + 8), Data.Sizes[2] + 8, 1};
  Ids.Type = IndexTypes[Rng() % 4];
  Ids.Sizes = {Data.Sizes[0], Data.Sizes[1], 1 + Rng() % 300};
  const OobPolicy Policies[] = {OobPolicy::Check, OobPolicy::Clamp, OobPolicy::Clip};
  Expected<ValidDesc> V =
      validateOnnx({OpKind::GatherElements, Data, Ids, -1}, Policies[Rng() % 3]);
  EXPECT_TRUE(V.isOk()) << V.status().message();
  return caseOf(*V, Data.Sizes[2], Rng(), Rng() % 3 == 0 ? 0.01 : 0.0);
}

TEST_F(GpuBackend, SimulatedGridMatchesTheInterpreter) {
  ASSERT_TRUE(Grid->facts().Gpu);
  // The random configurations; every tenth case rows long enough to stage,
  // every fiftieth short regions of rows to stage in strips.
  CaseGenerator Cases(seedFromEnv(20261125));
  std::mt19937_64 Rng(seedFromEnv(5, 1));
  Coverage Covered;
  unsigned &Errors = Covered.floor("configurations exercise Check", 11);
  unsigned &Wide = Covered.floor("configurations copy block rows in wide pieces", 11);
  unsigned &Staged = Covered.floor("configurations stage rows in shared memory", 11);
  unsigned &StagedPieces = Covered.floor("configurations stage rows in 16-byte pieces", 4);
  unsigned &Strips = Covered.floor("configurations stage strips of region rows", 3);
  for (unsigned I = 0; Covered.drawMore(I, 560, 1500); ++I) {
    const RandomCase C = I % 10 == 9   ? wideRowCase(Rng)
                         : I % 50 == 4 ? tiledCase(Rng, false, 0.01)
                                       : Cases.next();
    SCOPED_TRACE(std::to_string(I) + ": " + C.Summary);
    const KernelSpec Spec = canonicalize(C.Desc);
    const KernelPlan Plan = planKernel(Spec, gpuFacts());
    Wide += Plan.WideBytes != 0;
    Staged += Plan.StagedRowBytes != 0;
    // Rows of whole 16-byte pieces are staged in pieces where aligned.
    StagedPieces += Plan.StagedRowBytes && Plan.StagedRowBytes % 16 == 0;
    Strips += Plan.StagedStripColumns != 0;
    const size_t OutBytes = requiredElements(C.Desc.Output) * C.Desc.Output.elementBytes();
    std::vector<char> Ref(OutBytes, '\xab');
    Status RS = rowsStatus(C.Desc, interpret(C.Desc, C.Input.data(), C.Indices.data(), Ref.data()));
    // The operands 64-byte aligned, then one element past that: a kernel
    // that copies block rows in 16-byte pieces does so only in the first.
    const size_t Elem = C.Desc.Input.elementBytes();
    for (size_t Skew : {size_t(0), Elem}) {
      SCOPED_TRACE("input and output " + std::to_string(Skew) + " bytes past 64");
      std::vector<char> InBuf(C.Input.size() + 64 + Skew), OutBuf(OutBytes + 64 + Skew, '\xab');
      char *InAt = pastBoundary(InBuf, Skew), *OutAt = pastBoundary(OutBuf, Skew);
      std::copy(C.Input.begin(), C.Input.end(), InAt);
      std::fill(OutAt, OutAt + OutBytes, '\xab');
      const int64_t R = runSimulated(*Grid, *Jit, Spec, InAt, C.Indices.data(), OutAt,
                                     "g" + std::to_string(I) + "_" + std::to_string(Skew));
      expectInterpreters(RS, Ref, R, std::vector<char>(OutAt, OutAt + OutBytes));
      if (HasFailure())
        return;
    }
    Errors += !RS;
  }
  EXPECT_EQ(Covered.unmet(), "");
}

TEST_F(GpuBackend, SimulatedFamilyGridsMatchTheInterpreter) {
  // The random configurations, then shapes that share families: a
  // GatherElements whose rows and row length change, an embedding lookup
  // whose batch changes (block rows, which a device's family copies
  // element by element).
  std::vector<RandomCase> Cases;
  CaseGenerator Random(seedFromEnv(20261126));
  for (int I = 0; I < 300; ++I)
    Cases.push_back(Random.next());
  for (uint64_t L : {3, 17, 300}) {
    for (uint64_t Row : {5, 64}) {
      TensorDesc Data, Ids;
      Data.Type = DataType::Float32;
      Data.Sizes = {L, Row};
      Ids.Type = DataType::Int64;
      Ids.Sizes = {L, 4};
      Expected<ValidDesc> V =
          validateOnnx({OpKind::GatherElements, Data, Ids, 1}, OobPolicy::Check);
      ASSERT_TRUE(V.isOk()) << V.status().message();
      Cases.push_back(caseOf(*V, Row, L * 7 + Row, L == 17 ? 0.02 : 0.0));
    }
    TensorDesc Table, Ids;
    Table.Type = DataType::Float16;
    Table.Sizes = {40, 24};
    Ids.Type = DataType::Int32;
    Ids.Sizes = {L};
    Expected<ValidDesc> V = validateOnnx({OpKind::Gather, Table, Ids, 0}, OobPolicy::Clamp);
    ASSERT_TRUE(V.isOk()) << V.status().message();
    Cases.push_back(caseOf(*V, 40, L, 0.1));
  }
  std::unordered_map<KernelSpec, std::shared_ptr<const Executable>, KernelSpecHash> Families;
  Coverage Covered;
  unsigned &Errors = Covered.floor("configurations exercise Check", 11);
  unsigned &Shared = Covered.floor("shapes ran a family kernel compiled for another shape", 6);
  unsigned &BlockRows = Covered.floor("configurations copy block rows", 11);
  for (unsigned I = 0; Covered.drawMore(I, Cases.size(), 1000); ++I) {
    if (I == Cases.size())
      Cases.push_back(Random.next());
    const RandomCase &C = Cases[I];
    SCOPED_TRACE(std::to_string(I) + ": " + C.Summary);
    const KernelSpec Spec = canonicalize(C.Desc);
    const std::optional<KernelSpec> Family = familyOf(Spec, /*BlockRows=*/true);
    if (!Family)
      continue; // Rank 0, an empty axis or an epilogue.
    std::shared_ptr<const Executable> &Code = Families[*Family];
    Shared += Code != nullptr;
    if (!Code) {
      Expected<PipelineResult> R =
          runPipeline({{*Family, "f" + std::to_string(I)}}, *Grid, OptLevel::O1);
      ASSERT_TRUE(R.isOk()) << R.status().message();
      Expected<std::shared_ptr<const Executable>> Linked =
          Jit->link("f" + std::to_string(I), R->Bytes);
      ASSERT_TRUE(Linked.isOk()) << Linked.status().message();
      Code = Linked.take();
    }
    BlockRows += Spec.innerIsBlock();
    const size_t OutBytes = requiredElements(C.Desc.Output) * C.Desc.Output.elementBytes();
    std::vector<char> Ref(OutBytes, '\xab'), Dev(OutBytes, '\xab');
    const Status RS =
        rowsStatus(C.Desc, interpret(C.Desc, C.Input.data(), C.Indices.data(), Ref.data()));
    const int64_t R = FamilyCode(Code, std::make_shared<const KernelSpec>(Spec))
                          .runRows(C.Input.data(), C.Indices.data(), Dev.data(), 0, 1);
    expectInterpreters(RS, Ref, R, Dev);
    if (HasFailure())
      return;
    Errors += !RS;
  }
  EXPECT_EQ(Covered.unmet(), "");
}

TEST_F(GpuBackend, SimulatedGridsWithElementEpiloguesMatchTheInterpreter) {
  // An element epilogue compiled for the grid's target and fused into the
  // thread body, on random configurations: the interpreter applies the
  // same C function, compiled for the CPU, to each element it gathers.
  if (!epiloguesSupported())
    GTEST_SKIP() << "built without clang's libraries";
  Expected<std::unique_ptr<Runtime>> RT = referenceRuntime();
  ASSERT_TRUE(RT.isOk()) << RT.status().message();
  CaseGenerator Cases(seedFromEnv(20261127));
  std::mt19937_64 Rng(seedFromEnv(7, 1));
  Coverage Covered;
  unsigned &Ran = Covered.floor("configurations with an epilogue for their type", 80);
  unsigned &Errors = Covered.floor("configurations exercise Check", 4);
  for (unsigned I = 0; Covered.drawMore(I, 0, 600); ++I) {
    const RandomCase C = Cases.next();
    const std::optional<RandomEpilogue> E = randomElementEpilogue(C.Desc.Input.Type, Rng);
    if (!E)
      continue;
    SCOPED_TRACE(std::to_string(I) + ": " + C.Summary + "; " + E->Fn.Source);
    const Epilogue &Fn = E->Fn;
    // The reference: the CPU's fused descriptor and its epilogue alone.
    Expected<Kernel> Cpu = (*RT)->compile(C.Desc, Fn);
    ASSERT_TRUE(Cpu.isOk()) << Cpu.status().message();
    Expected<EpilogueApply> Apply = (*RT)->epilogueFunction(*Cpu);
    ASSERT_TRUE(Apply.isOk()) << Apply.status().message();
    const ValidDesc &V = Cpu->desc();
    const size_t OutBytes = requiredElements(V.Output) * V.Output.elementBytes();
    std::vector<char> Ref(OutBytes, '\xab'), Dev;
    const Status RS =
        rowsStatus(V, interpret(V, C.Input.data(), C.Indices.data(), Ref.data(), *Apply));
    // The grid's kernel, as a device's PTX printer fuses it.
    ValidDesc Fused = C.Desc;
    const std::string Name = "e" + std::to_string(I);
    Expected<PipelineKernel> K = fusedKernel(Fused, Fn, 0, Gen->targetMachine(), Name);
    ASSERT_TRUE(K.isOk()) << K.status().message();
    ASSERT_EQ(Fused.Output.Type, E->Out);
    Expected<PipelineResult> R = runPipeline({K.take()}, *Grid, OptLevel::O1);
    ASSERT_TRUE(R.isOk()) << R.status().message();
    Expected<std::shared_ptr<const Executable>> Code = Jit->link(Name, R->Bytes);
    ASSERT_TRUE(Code.isOk()) << Code.status().message();
    expectInterpreters(RS, Ref, runGuarded(**Code, C, OutBytes, Dev), Dev);
    if (HasFailure())
      return;
    ++Ran;
    Errors += !RS;
  }
  EXPECT_EQ(Covered.unmet(), "");
}

/// A random Gather (not along the rows) or batched GatherND of UINT16 rows
/// of R into FLOAT32 rows of W written \p Pad apart beyond W, for a row
/// epilogue: input [A, V, R] by indices of 1 or 2 dimensions (Gather) or
/// input [A, V, R] by tuples [A, Q, 1] (GatherND, one batch dimension).
AnyDesc rowEpilogueDesc(std::mt19937_64 &Rng, uint64_t R, uint64_t W) {
  auto Pick = [&](uint64_t N) { return Rng() % N; };
  // Now and then an empty table (V = 0) or no ids (Q1 = 0).
  const uint64_t A = 1 + Pick(3), V = Pick(8) ? 1 + Pick(6) : 0, Q0 = 1 + Pick(3),
                 Q1 = Pick(10) ? 1 + Pick(40) : 0, Pad = Pick(3);
  const DataType IdxType = Pick(2) ? DataType::Int32 : DataType::Int64;
  // Packed output sizes but for the rows, Pad elements apart beyond them.
  auto Padded = [&](std::vector<uint64_t> Sizes) {
    std::vector<uint64_t> Strides(Sizes.size());
    uint64_t Stride = 1;
    for (size_t D = Sizes.size(); D-- > 0;) {
      Strides[D] = Stride;
      Stride *= Sizes[D] + (D + 1 == Sizes.size() ? Pad : 0);
    }
    return tensor(DataType::Float32, std::move(Sizes), std::move(Strides));
  };
  AnyDesc D;
  if (Pick(3) == 0) {
    D.Op = OpKind::GatherND;
    D.GatherND = {tensor(DataType::UInt16, {A, V, R}),
                  tensor(IdxType, {A, Q1, 1}),
                  Padded({A, Q1, W}),
                  3,
                  3,
                  1};
    return D;
  }
  // Gather along 0 or 1 of [1, A, V, R] by [1, 1, Q0, Q1] (one rank for all).
  const unsigned Axis = 1 + static_cast<unsigned>(Pick(2));
  D.Op = OpKind::Gather;
  D.Gather = {
      tensor(DataType::UInt16, {1, A, V, R}), tensor(IdxType, {1, 1, Q0, Q1}),
      Padded(Axis == 1 ? std::vector<uint64_t>{Q0, Q1, V, W} : std::vector<uint64_t>{A, Q0, Q1, W}),
      Axis, 2};
  return D;
}

/// The row epilogue every row-epilogue test fuses: UINT16 rows into FLOAT32
/// rows of another length.
Epilogue rowEpilogue() {
  Epilogue Fn;
  Fn.Source = "void f(const uint16_t *row, float *out) {\n"
              "  for (int j = 0; j < GJ_ROW_OUT; ++j)\n"
              "    out[j] = row[(j * 5) % GJ_ROW_IN] * 0.5f - j;\n"
              "}\n";
  Fn.Function = "f";
  return Fn;
}

/// A checked row epilogue that reads past its row (a fault) for about one
/// row in 32: those whose first element is a multiple of 32.
Epilogue faultingRowEpilogue() {
  Epilogue Fn;
  Fn.Source = "void f(const uint16_t *row, float *out) {\n"
              "  int k = row[0] % 32 == 0 ? GJ_ROW_IN : 0;\n"
              "  out[0] = row[k];\n"
              "  for (int j = 1; j < GJ_ROW_OUT; ++j)\n"
              "    out[j] = row[j % GJ_ROW_IN] * 0.5f;\n"
              "}\n";
  Fn.Function = "f";
  Fn.Checked = true;
  return Fn;
}

/// \p D (a row epilogue's descriptor: its output the fused one) under
/// \p Policy, with \p Fn compiled for \p TM: the kernel \p Name.
Expected<PipelineKernel> rowEpilogueKernel(AnyDesc D, OobPolicy Policy, const Epilogue &Fn,
                                           const llvm::TargetMachine &TM, const std::string &Name) {
  Expected<std::shared_ptr<const EpilogueCode>> Code =
      compileEpilogue(Fn, epilogueTarget(TM, D.input().Sizes.back(), D.output().Sizes.back()));
  if (!Code)
    return Code.status();
  ValidateOptions O;
  O.Policy = Policy;
  O.Epilogue = (*Code)->Signature;
  Expected<ValidDesc> V = D.validate(O);
  if (!V)
    return V.status();
  PipelineKernel K{canonicalize(*V), Name};
  K.Spec.Code = Code.take();
  return K;
}

void GpuBackend::rowCase(Runtime &RT, std::mt19937_64 &Rng, const Epilogue &Fn, uint64_t MaxIn,
                         uint64_t MaxOut, int I, double Bad, const std::string &Name,
                         RowCase &Out) {
  const uint64_t R = 1 + Rng() % MaxIn, W = 1 + Rng() % MaxOut;
  const AnyDesc D = rowEpilogueDesc(Rng, R, W);
  Out.O.Policy = Rng() % 2 ? OobPolicy::Check : OobPolicy::Clamp;
  Expected<Kernel> Cpu =
      D.Op == OpKind::Gather ? RT.compile(D.Gather, Out.O, Fn) : RT.compile(D.GatherND, Out.O, Fn);
  ASSERT_TRUE(Cpu.isOk()) << Cpu.status().message();
  Out.V = Cpu->desc();
  const ValidDesc &V = Out.V;
  SCOPED_TRACE(V.describe());
  Expected<EpilogueApply> Apply = RT.epilogueFunction(*Cpu);
  ASSERT_TRUE(Apply.isOk()) << Apply.status().message();
  Out.Axis = D.Op == OpKind::Gather ? V.Input.Sizes[V.Axis] : V.Input.Sizes[1];
  Out.C = caseOf(V, Out.Axis, Rng(), I % 3 == 0 ? Bad : 0.0);
  Out.OutBytes = requiredElements(V.Output) * V.Output.elementBytes();
  Out.Ref.assign(Out.OutBytes, '\xab');
  Out.RS =
      rowsStatus(V, interpret(V, Out.C.Input.data(), Out.C.Indices.data(), Out.Ref.data(), *Apply));
  // The grid's kernel: the same descriptor, the epilogue compiled for it.
  Expected<PipelineKernel> K = rowEpilogueKernel(D, Out.O.Policy, Fn, Gen->targetMachine(), Name);
  ASSERT_TRUE(K.isOk()) << K.status().message();
  ASSERT_EQ(K->Spec.Epilogue.Kind, EpilogueKind::Row);
  Out.Code = simulatedGrid(*Grid, *Jit, K->Spec, Name);
  ASSERT_TRUE(Out.Code);
}

TEST_F(GpuBackend, SimulatedGridsWithRowEpiloguesMatchTheInterpreter) {
  // A row epilogue compiled for the grid's target and fused into the
  // thread body, each thread's "element" a row it gathers and hands to the
  // epilogue, on random Gathers and GatherNDs with padded output rows: the
  // interpreter applies the same C function, compiled for the CPU, to each
  // row it gathers.
  if (!epiloguesSupported())
    GTEST_SKIP() << "built without clang's libraries";
  Expected<std::unique_ptr<Runtime>> RT = referenceRuntime();
  ASSERT_TRUE(RT.isOk()) << RT.status().message();
  std::mt19937_64 Rng(seedFromEnv(13, 1));
  const Epilogue Fn = rowEpilogue();
  Coverage Covered;
  unsigned &Errors = Covered.floor("configurations exercise Check", 6);
  unsigned &NDs = Covered.floor("GatherNDs", 6);
  unsigned &Empty = Covered.floor("empty outputs", 2);
  unsigned &ZeroRows = Covered.floor("clamps into an empty table", 2);
  for (unsigned I = 0; Covered.drawMore(I, 100, 300); ++I) {
    SCOPED_TRACE(I);
    // About one index in 5 bad in every third case.
    RowCase Case;
    rowCase(**RT, Rng, Fn, 40, 20, I, 0.2, "r" + std::to_string(I), Case);
    if (HasFatalFailure())
      return;
    std::vector<char> Dev;
    expectInterpreters(Case.RS, Case.Ref, runGuarded(*Case.Code, Case.C, Case.OutBytes, Dev), Dev);
    if (HasFailure())
      return;
    Errors += !Case.RS;
    NDs += Case.V.Op == OpKind::GatherND;
    Empty += Case.OutBytes == 0;
    ZeroRows += Case.RS && Case.OutBytes && Case.Axis == 0; // Clamp into an empty table.
  }
  EXPECT_EQ(Covered.unmet(), "");
}

TEST_F(GpuBackend, SimulatedGridsWithCheckedEpiloguesNameABadIndexElseAFault) {
  // A checked row epilogue that faults on some rows, on random Gathers and
  // GatherNDs: where an index is bad (Check) the grid names the first, as
  // the interpreter does without the epilogue; else, where a row faulted,
  // EpilogueFaulted, as the interpreter with it; else the interpreter's
  // output. No thread touches a byte past the output (runGuarded).
  if (!epiloguesSupported())
    GTEST_SKIP() << "built without clang's libraries";
  Expected<std::unique_ptr<Runtime>> RT = referenceRuntime();
  ASSERT_TRUE(RT.isOk()) << RT.status().message();
  std::mt19937_64 Rng(seedFromEnv(17, 1));
  const Epilogue Fn = faultingRowEpilogue();
  Coverage Covered;
  unsigned &BadIndices = Covered.floor("configurations name a bad index", 5);
  unsigned &Faults = Covered.floor("configurations fault in the epilogue", 5);
  unsigned &Clean = Covered.floor("configurations run clean", 5);
  for (unsigned I = 0; Covered.drawMore(I, 100, 300); ++I) {
    SCOPED_TRACE(I);
    RowCase Case;
    rowCase(**RT, Rng, Fn, 20, 8, I, 0.05, "c" + std::to_string(I), Case);
    if (HasFatalFailure())
      return;
    const RandomCase &C = Case.C;
    const Status &RS = Case.RS;
    // The first bad index in the output's order is the first in the
    // indices' (their dimensions lead the output's, or follow a batch or
    // an outer dimension that every index serves): caseOf's bad value is
    // Axis.
    std::optional<uint64_t> FirstBad;
    const size_t Size = Case.V.Indices.elementBytes();
    if (Case.O.Policy == OobPolicy::Check && Case.OutBytes)
      for (size_t P = 0; P * Size < C.Indices.size() && !FirstBad; ++P) {
        int64_t Value = 0;
        std::memcpy(&Value, &C.Indices[P * Size], Size);
        if (static_cast<uint64_t>(Value) == Case.Axis)
          FirstBad = P;
      }
    std::vector<char> Dev;
    const int64_t Got = runGuarded(*Case.Code, C, Case.OutBytes, Dev);
    if (FirstBad) {
      EXPECT_EQ(Got, static_cast<int64_t>(*FirstBad) + 1);
      ++BadIndices;
    } else if (!RS) {
      EXPECT_EQ(RS.code(), ErrorCode::InvalidArgument) << RS.message();
      EXPECT_EQ(Got, EpilogueFaulted);
      ++Faults;
    } else {
      EXPECT_EQ(Got, 0);
      EXPECT_EQ(Case.Ref, Dev) << "outputs differ";
      ++Clean;
    }
    if (HasFailure())
      return;
  }
  EXPECT_EQ(Covered.unmet(), "");
}

TEST_F(GpuBackend, WidePiecesOfRowsNameTheBadRow) {
  // Gather of 20 rows of 48 FLOAT32 (12 pieces of 16 bytes each): the bad
  // index at position 13 is named by both bodies, aligned or not.
  TensorDesc Data, Ids;
  Data.Type = DataType::Float32;
  Data.Sizes = {64, 48};
  Ids.Type = DataType::Int64;
  Ids.Sizes = {20};
  Expected<ValidDesc> V = validateOnnx({OpKind::Gather, Data, Ids, 0}, OobPolicy::Check);
  ASSERT_TRUE(V.isOk()) << V.status().message();
  const KernelSpec Spec = canonicalize(*V);
  ASSERT_EQ(planKernel(Spec, gpuFacts()).WideBytes, 16u);
  std::vector<int64_t> Index(20, 3);
  Index[13] = 64;
  alignas(64) static float In[64 * 48 + 1], Out[20 * 48 + 1];
  for (size_t Skew : {0, 1}) {
    SCOPED_TRACE(Skew);
    const int64_t R =
        runSimulated(*Grid, *Jit, Spec, reinterpret_cast<const char *>(In + Skew),
                     reinterpret_cast<const char *>(Index.data()),
                     reinterpret_cast<char *>(Out + Skew), "w" + std::to_string(Skew));
    EXPECT_EQ(R, 14) << "1 + the bad index's position";
  }
}

/// GatherElements FLOAT32 of \p Sizes, its axis \p Axis of \p AxisSize,
/// under Check, planned for a GPU: \p Check(plan) holds; then with no bad
/// index and with two, of which the later in the output comes first in a
/// tile or strip (row 5, column 40; row 30, column 3), its simulated grid
/// is the interpreter's, naming the earlier.
void expectOutputOrder(Backend &Grid, JitEngine &Jit, std::vector<uint64_t> Sizes, int64_t Axis,
                       uint64_t AxisSize, const std::function<void(const KernelPlan &)> &Check,
                       int &N) {
  TensorDesc Data, Ids;
  Data.Type = DataType::Float32;
  Ids.Type = DataType::Int64;
  Ids.Sizes = Sizes;
  Sizes[Axis] = AxisSize;
  Data.Sizes = Sizes;
  Expected<ValidDesc> V = validateOnnx({OpKind::GatherElements, Data, Ids, Axis}, OobPolicy::Check);
  ASSERT_TRUE(V.isOk()) << V.status().message();
  const KernelSpec Spec = canonicalize(*V);
  const KernelPlan Plan = planKernel(Spec, gpuFacts());
  SCOPED_TRACE(Spec.describe() + " " + Plan.describe());
  Check(Plan);
  RandomCase C = caseOf(*V, AxisSize, 99, 0.0);
  const uint64_t Columns = Sizes.back();
  for (bool Bad : {false, true}) {
    SCOPED_TRACE(C.Summary + (Bad ? ", two bad indices" : ""));
    if (Bad) {
      const int64_t Over = static_cast<int64_t>(AxisSize);
      std::memcpy(&C.Indices[(5 * Columns + 40) * 8], &Over, 8);
      std::memcpy(&C.Indices[(30 * Columns + 3) * 8], &Over, 8);
    }
    const size_t OutBytes = C.Indices.size() / 2;
    std::vector<char> Ref(OutBytes, '\xab'), Dev;
    const Status RS = interpret(C.Desc, C.Input.data(), C.Indices.data(), Ref.data());
    const std::shared_ptr<const Executable> Code =
        simulatedGrid(Grid, Jit, Spec, "t" + std::to_string(N++));
    ASSERT_TRUE(Code);
    const int64_t R = runGuarded(*Code, C, OutBytes, Dev);
    if (!Bad) {
      ASSERT_TRUE(RS.isOk());
      ASSERT_EQ(R, 0);
      ASSERT_EQ(Ref, Dev) << "outputs differ";
    } else {
      ASSERT_FALSE(RS.isOk());
      ASSERT_EQ(*RS.position(), 5 * Columns + 40);
      ASSERT_EQ(R, static_cast<int64_t>(5 * Columns + 40 + 1));
    }
  }
}

TEST_F(GpuBackend, TilesAndStripsOfColumnsKeepTheOutputsOrder) {
  // GatherElements of 40 rows on axis 0 of [40, 64] and [40, 77] and axis
  // 1 of [3, 40, 96] and [3, 40, 50]. From an axis of 400, their threads
  // take tiles of 32 columns (the last of 13 and 18 columns in two of
  // them, whose threads past the row write nothing); from an axis of 40,
  // each block stages strips of 8 columns of all 40 axis rows and gathers
  // all output rows' columns of its strip (the last strip of 5 and 2
  // columns in two of them).
  int N = 0;
  for (uint64_t AxisSize : {400u, 40u}) {
    for (auto [Sizes, Axis] :
         {std::pair{std::vector<uint64_t>{40, 64}, 0}, std::pair{std::vector<uint64_t>{40, 77}, 0},
          std::pair{std::vector<uint64_t>{3, 40, 96}, 1},
          std::pair{std::vector<uint64_t>{3, 40, 50}, 1}}) {
      expectOutputOrder(
          *Grid, *Jit, Sizes, Axis, AxisSize,
          [&](const KernelPlan &P) {
            ASSERT_EQ(P.TileColumns, AxisSize == 400 ? 32u : 0u);
            ASSERT_EQ(P.StagedStripColumns, AxisSize == 400 ? 0u : 8u);
          },
          N);
      if (HasFatalFailure())
        return;
    }
  }
}

TEST_F(GpuBackend, StripsStayInsideTheirInput) {
  // Strips whose last one has fewer columns than the others (2 of 8, 5
  // of 8, 4 of 32), of an input that ends right before an inaccessible
  // page: a copy of a column past the output's rows would read past the
  // input's last row and fault.
  int N = 0;
  for (auto [Type, Sizes, Axis] :
       {std::tuple{DataType::Float32, std::vector<uint64_t>{3, 40, 50}, 1},
        std::tuple{DataType::Float32, std::vector<uint64_t>{40, 77}, 0},
        std::tuple{DataType::UInt8, std::vector<uint64_t>{3, 40, 100}, 1}}) {
    TensorDesc Data, Ids;
    Data.Type = Type;
    Data.Sizes = Sizes;
    Ids.Type = DataType::Int32;
    Ids.Sizes = Sizes;
    Expected<ValidDesc> V =
        validateOnnx({OpKind::GatherElements, Data, Ids, Axis}, OobPolicy::Clamp);
    ASSERT_TRUE(V.isOk()) << V.status().message();
    const KernelSpec Spec = canonicalize(*V);
    const KernelPlan Plan = planKernel(Spec, gpuFacts());
    SCOPED_TRACE(Spec.describe() + " " + Plan.describe());
    ASSERT_NE(Plan.StagedStripColumns, 0u);
    ASSERT_NE(Sizes.back() % Plan.StagedStripColumns, 0u);
    const RandomCase C = caseOf(*V, Sizes[Axis], 5, 0.0);
    GuardedBuffer In(C.Input.size(), /*AgainstEnd=*/true);
    In.fill(C.Input);
    const size_t OutBytes = requiredElements(C.Desc.Output) * C.Desc.Output.elementBytes();
    std::vector<char> Ref(OutBytes), Dev(OutBytes);
    ASSERT_TRUE(interpret(C.Desc, C.Input.data(), C.Indices.data(), Ref.data()).isOk());
    const int64_t R = runSimulated(*Grid, *Jit, Spec, In.data(), C.Indices.data(), Dev.data(),
                                   "guard" + std::to_string(N++));
    EXPECT_EQ(R, 0);
    EXPECT_EQ(Ref, Dev);
  }
}

TEST_F(GpuBackend, TiledGridsOfRandomShapesMatchTheInterpreter) {
  // tiledCase's gathers (tiles of 32 columns, the last mostly partly
  // filled; on axis Rank-2, strips of 4 to 32 columns), some with bad
  // indices, positions in 32 and in 64 bits: the grid of 1024-thread
  // blocks agrees with the interpreter.
  std::mt19937_64 Rng(seedFromEnv(20261126));
  Coverage Covered;
  unsigned &Ragged = Covered.floor("configurations with a partly filled last tile or strip", 31);
  unsigned &Strips = Covered.floor("configurations staged in strips", 11);
  unsigned &Errors = Covered.floor("configurations with a bad index under Check", 4);
  unsigned I = 0;
  for (; Covered.drawMore(I, 40, 120); ++I) {
    // Every other axis too long for strips.
    const RandomCase C = tiledCase(Rng, I % 2, I % 3 == 0 ? 0.001 : 0.0);
    if (HasFatalFailure())
      return;
    const KernelSpec Spec = canonicalize(C.Desc);
    const KernelPlan Plan = planKernel(Spec, gpuFacts());
    SCOPED_TRACE(Spec.describe() + " " + Plan.describe());
    // Where the spec's rows of dimension Rank-2 read one short region each
    // (its axis, dimensions merged, is that dimension) strips, else tiles.
    const uint64_t Columns = C.Desc.Input.Sizes.back();
    if (Spec.InStride[Spec.Rank - 2] == 0 && I % 2 == 0) {
      ASSERT_NE(Plan.StagedStripColumns, 0u);
      ++Strips;
      Ragged += Columns % Plan.StagedStripColumns != 0;
    } else {
      ASSERT_EQ(Plan.TileColumns, 32u);
      ASSERT_EQ(Plan.ThreadsPerBlock, 1024u);
      Ragged += Columns % 32 != 0;
    }
    const size_t OutBytes = requiredElements(C.Desc.Output) * C.Desc.Output.elementBytes();
    std::vector<char> Ref(OutBytes, '\xab'), Dev;
    const Status RS =
        rowsStatus(C.Desc, interpret(C.Desc, C.Input.data(), C.Indices.data(), Ref.data()));
    // Every other grid counts its positions in 64 bits, as an output of
    // 2^31 elements or more would.
    KernelPlan Wide = Plan;
    Wide.Index32 = I % 2 == 0;
    const std::shared_ptr<const Executable> Code = plannedGrid(Spec, Wide, "r" + std::to_string(I));
    ASSERT_TRUE(Code);
    // The input aligned, then one element past (strips staged in 16-byte
    // pieces in the first where their rows allow, element by element in
    // the second).
    for (size_t Skew : {size_t(0), size_t(C.Desc.Input.elementBytes())}) {
      SCOPED_TRACE("input " + std::to_string(Skew) + " bytes past 64");
      const int64_t R = runGuarded(*Code, C, OutBytes, Dev, Skew);
      expectInterpreters(RS, Ref, R, Dev);
    }
    if (HasFailure())
      return;
    Errors += !RS;
  }
  EXPECT_EQ(Covered.unmet(), "");
  EXPECT_LT(Strips, I * 3 / 4) << "too few configurations tiled";
}

TEST_F(GpuBackend, AGridSmallerThanTheOutputStrides) {
  // A hand-made plan: 1 block of 3 threads, so that each thread takes
  // many elements; every other Check case with a bad index past its first
  // elements; half the cases' positions in 32 bits, half in 64.
  CaseGenerator Cases(seedFromEnv(7));
  Coverage Covered;
  unsigned &LateErrors = Covered.floor("bad indices past the threads' first elements", 11);
  for (unsigned I = 0; Covered.drawMore(I, 120, 400); ++I) {
    RandomCase C = Cases.next();
    if (I % 2 && C.Desc.Policy == OobPolicy::Check && !C.Indices.empty()) {
      // The largest positive value at two thirds of the indices' buffer.
      const size_t Bytes = C.Desc.Indices.elementBytes();
      const size_t At = C.Indices.size() / Bytes * 2 / 3 * Bytes;
      std::memset(&C.Indices[At], 0xff, Bytes);
      C.Indices[At + Bytes - 1] = 0x7f; // Little-endian: the sign byte last.
    }
    SCOPED_TRACE(C.Summary);
    const KernelSpec Spec = canonicalize(C.Desc);
    KernelPlan P = planKernel(Spec, gpuFacts());
    P.Blocks = 1;
    P.ThreadsPerBlock = 3;
    // Every other case counts its positions in 64 bits (a family's way),
    // though its output would allow 32.
    ASSERT_EQ(P.Index32, P.StagedRowBytes == 0 && P.StagedStripColumns == 0);
    P.Index32 = P.Index32 && I % 4 < 2;
    const std::shared_ptr<const Executable> Code = plannedGrid(Spec, P, "s");
    ASSERT_TRUE(Code);
    const size_t OutBytes = requiredElements(C.Desc.Output) * C.Desc.Output.elementBytes();
    std::vector<char> Ref(OutBytes, '\xab'), Dev(OutBytes, '\xab');
    Status RS = rowsStatus(C.Desc, interpret(C.Desc, C.Input.data(), C.Indices.data(), Ref.data()));
    const int64_t R = Code->runRows(C.Input.data(), C.Indices.data(), Dev.data(), 0, 1);
    if (RS) {
      ASSERT_EQ(R, 0);
      ASSERT_EQ(Ref, Dev);
    } else {
      ASSERT_EQ(static_cast<uint64_t>(R - 1), *RS.position());
      LateErrors += *RS.position() >= 3; // Past each thread's first element.
    }
  }
  EXPECT_EQ(Covered.unmet(), "");
}

std::string findPtxas() {
  std::vector<std::string> Places;
  if (const char *Home = std::getenv("CUDA_HOME"))
    Places.push_back(std::string(Home) + "/bin/ptxas");
  if (const char *Path = std::getenv("PATH")) {
    std::stringstream SS(Path);
    for (std::string Dir; std::getline(SS, Dir, ':');)
      if (!Dir.empty())
        Places.push_back(Dir + "/ptxas");
  }
  Places.push_back("/usr/local/cuda/bin/ptxas");
  for (const std::string &P : Places)
    if (::access(P.c_str(), X_OK) == 0)
      return P;
  return "";
}

TEST_F(GpuBackend, PtxOfRandomConfigurationsAssemblesWithoutSpills) {
  const std::string Ptxas = findPtxas();
  if (Ptxas.empty())
    GTEST_SKIP() << "no ptxas ($CUDA_HOME/bin, PATH, /usr/local/cuda/bin)";
  const std::filesystem::path Dir =
      std::filesystem::temp_directory_path() / ("gatherjit-ptx-" + std::to_string(::getpid()));
  std::filesystem::create_directories(Dir);
  CaseGenerator Cases(seedFromEnv(20261125));
  for (const char *Arch : {"sm_80", "sm_90"}) {
    SCOPED_TRACE(Arch);
    Expected<std::unique_ptr<CodeGenerator>> Nvptx =
        createCodeGenerator({"nvptx64-nvidia-cuda", Arch, ""}, OptLevel::O2);
    ASSERT_TRUE(Nvptx.isOk()) << Nvptx.status().message();
    std::unique_ptr<Backend> Gpu = backendFor(**Nvptx);
    ASSERT_TRUE(Gpu->facts().Gpu);
    // 500 configurations, 50 to a module, and 5 with rows long enough to
    // stage; the last module at O1 (code generation without NVPTX's
    // optimizations).
    std::mt19937_64 Rng(seedFromEnv(11, 1)), Rows(seedFromEnv(12, 2));
    for (int Module = 0; Module < 10; ++Module) {
      const OptLevel Level = Module == 9 ? OptLevel::O1 : OptLevel::O2;
      std::vector<PipelineKernel> Kernels;
      for (int K = 0; K < 50; ++K) {
        const RandomCase C = Cases.next();
        const KernelSpec Spec = canonicalize(C.Desc);
        Kernels.push_back({Spec, "k" + std::to_string(K)});
        // Every other configuration's family kernel too.
        if (const std::optional<KernelSpec> Family = familyOf(Spec, true); Family && K % 2)
          Kernels.push_back({*Family, "f" + std::to_string(K)});
        // Every fifth with an element epilogue fused in.
        if (K % 5 == 0 && epiloguesSupported())
          if (std::optional<RandomEpilogue> E = randomElementEpilogue(C.Desc.Input.Type, Rng)) {
            ValidDesc Fused = C.Desc;
            Expected<PipelineKernel> Epi =
                fusedKernel(Fused, E->Fn, 0, (*Nvptx)->targetMachine(), "e" + std::to_string(K));
            ASSERT_TRUE(Epi.isOk()) << Epi.status().message();
            Kernels.push_back(Epi.take());
          }
      }
      for (int K = 0; K < 5; ++K)
        Kernels.push_back({canonicalize(wideRowCase(Rows).Desc), "w" + std::to_string(K)});
      // And 3 with a row epilogue, the last checked.
      for (int K = 0; K < 3 && epiloguesSupported(); ++K) {
        const AnyDesc D = rowEpilogueDesc(Rows, 1 + Rows() % 40, 1 + Rows() % 20);
        Expected<PipelineKernel> Epi =
            rowEpilogueKernel(D, K % 2 ? OobPolicy::Check : OobPolicy::Clamp,
                              K == 2 ? faultingRowEpilogue() : rowEpilogue(),
                              (*Nvptx)->targetMachine(), "r" + std::to_string(K));
        ASSERT_TRUE(Epi.isOk()) << Epi.status().message();
        Kernels.push_back(Epi.take());
      }
      Expected<PipelineResult> R = runPipeline(Kernels, *Gpu, Level);
      ASSERT_TRUE(R.isOk()) << R.status().message();
      const std::string Ptx(R->Bytes.begin(), R->Bytes.end());
      ASSERT_NE(Ptx.find(std::string(".target ") + Arch), std::string::npos);
      const std::filesystem::path File = Dir / ("m" + std::to_string(Module) + ".ptx");
      std::ofstream(File) << Ptx;
      const std::string Log = (Dir / "log").string();
      const std::string Cmd = Ptxas + " -arch=" + Arch + " -v -o " + (Dir / "m.cubin").string() +
                              " " + File.string() + " > " + Log + " 2>&1";
      const int Rc = std::system(Cmd.c_str());
      std::stringstream Out;
      Out << std::ifstream(Log).rdbuf();
      ASSERT_EQ(Rc, 0) << Out.str();
      const std::string Text = Out.str();
      size_t Entries = 0;
      for (size_t P = 0; (P = Text.find("Compiling entry function", P)) != std::string::npos; ++P)
        ++Entries;
      EXPECT_EQ(Entries, Kernels.size());
      size_t Clean = 0;
      const std::string None = "0 bytes stack frame, 0 bytes spill stores, 0 bytes spill loads";
      for (size_t P = 0; (P = Text.find(None, P)) != std::string::npos; ++P)
        ++Clean;
      EXPECT_EQ(Clean, Kernels.size()) << "a kernel spills or has a stack frame:\n" << Text;
    }
  }
  std::filesystem::remove_all(Dir);
}

} // namespace
