//===- tests/runtime/EpilogueTest.cpp - Fused C epilogues ----------------===//
//
// Kernels with a user's C epilogue against values computed here, and against
// the interpreter calling the epilogue alone; every rule an epilogue can
// break, each with its one-line error; and random configurations (element
// epilogues on the differential generator's cases, row epilogues on random
// Gathers and GatherNDs).
//
//===----------------------------------------------------------------------===//

#include "compiler/epilogue/Epilogue.h"
#include "RandomCase.h"
#include "RuntimeTestUtil.h"

#include <gmock/gmock.h>

#include <cmath>
#include <cstring>

using namespace gatherjit;
using namespace gatherjit::test;
using ::testing::HasSubstr;
using ::testing::MatchesRegex;

namespace {

Epilogue epilogue(std::string Source, std::string Function = "f") {
  Epilogue E;
  E.Source = std::move(Source);
  E.Function = std::move(Function);
  return E;
}

template <class T> std::vector<unsigned char> bytesOf(const T &V) {
  std::vector<unsigned char> B(sizeof(T));
  std::memcpy(B.data(), &V, sizeof(T));
  return B;
}

/// FLOAT16 bits of small integers and halves (exact in both formats).
uint16_t halfBits(float F) {
  _Float16 H = static_cast<_Float16>(F);
  uint16_t B;
  std::memcpy(&B, &H, 2);
  return B;
}

/// Runs \p K and the interpreter with \p K's epilogue; both must succeed
/// with equal outputs, which are returned.
template <class Out>
std::vector<Out> runBoth(Runtime &RT, const Kernel &K, const void *In, const void *Idx,
                         size_t OutElements) {
  std::vector<Out> Jit(OutElements), Ref(OutElements);
  Status JS = K.run(In, Idx, Jit.data());
  EXPECT_TRUE(JS.isOk()) << JS.message();
  Expected<EpilogueApply> Apply = RT.epilogueFunction(K);
  EXPECT_TRUE(Apply.isOk()) << Apply.status().message();
  if (Apply) {
    Status RS = interpret(K.desc(), In, Idx, Ref.data(), *Apply);
    EXPECT_TRUE(RS.isOk()) << RS.message();
  }
  EXPECT_EQ(0, std::memcmp(Jit.data(), Ref.data(), OutElements * sizeof(Out)));
  return Jit;
}

TEST(Epilogue, Float16TableGatheredIntoFloat32) {
  REQUIRE_EPILOGUES();
  auto RT = makeRuntime();
  // GatherElements along axis 1 of a 3x4 FLOAT16 tensor into FLOAT32.
  GatherElementsDesc D{tensor(DataType::Float16, {3, 4}), tensor(DataType::Int64, {3, 2}),
                       tensor(DataType::Float32, {3, 2}), 1};
  Expected<Kernel> K =
      RT->compile(D, {}, epilogue("float f(float16_t x) { return (float)x * 4.0f; }"));
  ASSERT_TRUE(K.isOk()) << K.status().message();
  EXPECT_EQ(K->desc().Output.Type, DataType::Float32);
  std::vector<uint16_t> In(12);
  for (int I = 0; I < 12; ++I)
    In[I] = halfBits(I * 0.5f);
  const std::vector<int64_t> Idx = {3, 0, -1, 1, 2, -4};
  std::vector<float> Out = runBoth<float>(*RT, *K, In.data(), Idx.data(), 6);
  // Row r, column c reads element r*4 + c, which holds (r*4+c)/2.
  EXPECT_EQ(Out, (std::vector<float>{6, 0, 14, 10, 20, 16}));
}

TEST(Epilogue, ParametersAreConstantsOfTheKernel) {
  REQUIRE_EPILOGUES();
  auto RT = makeRuntime();
  GatherDesc D{tensor(DataType::Int32, {5}), tensor(DataType::Int64, {4}),
               tensor(DataType::Float64, {4}), 0, 1};
  struct P {
    double Scale, Bias;
  };
  const char *Src = "typedef struct { double scale, bias; } P;\n"
                    "double f(int32_t x, const P *p) { return x * p->scale + p->bias; }\n";
  Epilogue E = epilogue(Src);
  E.Params = bytesOf(P{2.0, 3.0});
  Expected<Kernel> K1 = RT->compile(D, {}, E);
  ASSERT_TRUE(K1.isOk()) << K1.status().message();
  E.Params = bytesOf(P{-1.0, 0.5});
  Expected<Kernel> K2 = RT->compile(D, {}, E);
  ASSERT_TRUE(K2.isOk()) << K2.status().message();
  EXPECT_NE(K1->symbolName(), K2->symbolName());
  const std::vector<int32_t> In = {10, 20, 30, 40, 50};
  const std::vector<int64_t> Idx = {4, 0, -2, 1};
  EXPECT_EQ(runBoth<double>(*RT, *K1, In.data(), Idx.data(), 4),
            (std::vector<double>{103, 23, 83, 43}));
  EXPECT_EQ(runBoth<double>(*RT, *K2, In.data(), Idx.data(), 4),
            (std::vector<double>{-49.5, -9.5, -39.5, -19.5}));
  // The same epilogue and descriptor again: a cache hit, no clang.
  Expected<Kernel> Again = RT->compile(D, {}, E);
  ASSERT_TRUE(Again.isOk());
  EXPECT_TRUE(Again->cacheHit());
}

/// FBGEMM's fused 8-bit rowwise layout: Dim bytes, then a float scale and a
/// float bias.
constexpr const char *Rowwise = R"(
void dequant(const uint8_t *row, float *out) {
  float scale = gj_load_f32(row + GJ_ROW_OUT), bias = gj_load_f32(row + GJ_ROW_OUT + 4);
  for (int j = 0; j < GJ_ROW_OUT; ++j)
    out[j] = row[j] * scale + bias;
}
)";

std::vector<uint8_t> rowwiseTable(uint64_t Rows, uint64_t Dim) {
  std::vector<uint8_t> T(Rows * (Dim + 8));
  for (uint64_t R = 0; R < Rows; ++R) {
    uint8_t *Row = &T[R * (Dim + 8)];
    for (uint64_t J = 0; J < Dim; ++J)
      Row[J] = static_cast<uint8_t>((R * 7 + J * 3) & 0xff);
    // Powers of two and small integers: exact however the product and sum
    // are rounded (fused or not).
    const float Scale = std::ldexp(1.0f, static_cast<int>(R % 5) - 2), Bias = float(R % 3) - 1;
    std::memcpy(Row + Dim, &Scale, 4);
    std::memcpy(Row + Dim + 4, &Bias, 4);
  }
  return T;
}

float dequantized(const std::vector<uint8_t> &T, uint64_t Dim, uint64_t R, uint64_t J) {
  float Scale, Bias;
  std::memcpy(&Scale, &T[R * (Dim + 8) + Dim], 4);
  std::memcpy(&Bias, &T[R * (Dim + 8) + Dim + 4], 4);
  return T[R * (Dim + 8) + J] * Scale + Bias;
}

TEST(Epilogue, RowwiseQuantizedEmbeddingLookup) {
  REQUIRE_EPILOGUES();
  auto RT = makeRuntime();
  const uint64_t Rows = 50, Dim = 24, Ids = 9;
  GatherDesc D{tensor(DataType::UInt8, {Rows, Dim + 8}), tensor(DataType::Int64, {1, Ids}),
               tensor(DataType::Float32, {Ids, Dim}), 0, 1};
  Expected<Kernel> K = RT->compile(D, {}, epilogue(Rowwise, "dequant"));
  ASSERT_TRUE(K.isOk()) << K.status().message();
  const std::vector<uint8_t> T = rowwiseTable(Rows, Dim);
  const std::vector<int64_t> Idx = {0, 49, -1, 7, 7, 13, -50, 25, 1};
  std::vector<float> Out = runBoth<float>(*RT, *K, T.data(), Idx.data(), Ids * Dim);
  for (uint64_t I = 0; I < Ids; ++I) {
    const uint64_t R = Idx[I] < 0 ? Idx[I] + Rows : Idx[I];
    for (uint64_t J = 0; J < Dim; ++J)
      ASSERT_EQ(Out[I * Dim + J], dequantized(T, Dim, R, J)) << "id " << I << " j " << J;
  }
  // Out of range under Check: the interpreter's error, from the kernel.
  const std::vector<int64_t> Bad = {0, 1, 2, 50, 4, 5, 6, 7, 8};
  std::vector<float> Scratch(Ids * Dim);
  Status S = K->run(T.data(), Bad.data(), Scratch.data());
  ASSERT_EQ(S.code(), ErrorCode::IndexOutOfRange);
  EXPECT_EQ(*S.position(), 3u);
}

TEST(Epilogue, RowEpilogueWithPaddedOutputRowsAndGatherND) {
  REQUIRE_EPILOGUES();
  auto RT = makeRuntime();
  // Batched GatherND: input [2, 5, 6] (rows of 6), indices [2, 3, 1],
  // output [2, 3, 4] rows of 4 written 8 apart.
  GatherNDDesc D{tensor(DataType::Int16, {2, 5, 6}),
                 tensor(DataType::Int32, {2, 3, 1}),
                 tensor(DataType::Int32, {2, 3, 4}, std::vector<uint64_t>{24, 8, 1}),
                 3,
                 3,
                 1};
  const char *Src =
      "void g(const int16_t *row, int32_t *out) {\n"
      "  for (int j = 0; j < GJ_ROW_OUT; ++j) out[j] = row[j] + row[GJ_ROW_IN - 1 - j];\n"
      "}\n";
  Expected<Kernel> K = RT->compile(D, {}, epilogue(Src, "g"));
  ASSERT_TRUE(K.isOk()) << K.status().message();
  std::vector<int16_t> In(60);
  for (int I = 0; I < 60; ++I)
    In[I] = static_cast<int16_t>(I * 3 - 50);
  const std::vector<int32_t> Idx = {4, 0, -1, 2, 2, 3};
  std::vector<int32_t> Out = runBoth<int32_t>(*RT, *K, In.data(), Idx.data(), 48);
  for (int B = 0; B < 2; ++B)
    for (int I = 0; I < 3; ++I) {
      const int R = (Idx[B * 3 + I] + 5) % 5;
      const int16_t *Row = &In[(B * 5 + R) * 6];
      for (int J = 0; J < 4; ++J)
        EXPECT_EQ(Out[B * 24 + I * 8 + J], Row[J] + Row[5 - J]);
    }
}

TEST(Epilogue, ClampIntoAnEmptyAxisWritesZerosOfTheOutputType) {
  REQUIRE_EPILOGUES();
  auto RT = makeRuntime();
  GatherElementsDesc D{tensor(DataType::UInt8, {2, 0}), tensor(DataType::Int32, {2, 3}),
                       tensor(DataType::Float64, {2, 3}), 1};
  ValidateOptions O;
  O.Policy = OobPolicy::Clamp;
  Expected<Kernel> K = RT->compile(D, O, epilogue("double f(uint8_t x) { return x + 1.5; }"));
  ASSERT_TRUE(K.isOk()) << K.status().message();
  const std::vector<int32_t> Idx = {0, 1, 2, 3, 4, 5};
  std::vector<double> Out(6, -1.0);
  ASSERT_TRUE(K->run(nullptr, Idx.data(), Out.data()).isOk());
  EXPECT_EQ(Out, std::vector<double>(6, 0.0));
}

TEST(Epilogue, BoolAndBuiltinsThatAreInstructions) {
  REQUIRE_EPILOGUES();
  auto RT = makeRuntime();
  GatherDesc D{tensor(DataType::Float32, {4}), tensor(DataType::Int64, {4}),
               tensor(DataType::Bool, {4}), 0, 1};
  Expected<Kernel> K = RT->compile(
      D, {}, epilogue("bool f(float x) { return __builtin_sqrtf(__builtin_fabsf(x)) > 1.5f; }"));
  ASSERT_TRUE(K.isOk()) << K.status().message();
  const std::vector<float> In = {1.0f, -4.0f, 2.0f, 9.0f};
  const std::vector<int64_t> Idx = {0, 1, 2, 3};
  EXPECT_EQ(runBoth<uint8_t>(*RT, *K, In.data(), Idx.data(), 4),
            (std::vector<uint8_t>{0, 1, 0, 1}));
}

struct BadCase {
  const char *Name;
  std::string Source;
  std::string Want;    ///< A fragment of the one-line error.
  bool Located = true; ///< The error names a line and column.
};

TEST(Epilogue, EveryRuleBrokenIsOneLineNamingIt) {
  REQUIRE_EPILOGUES();
  auto RT = makeRuntime();
  GatherDesc D{tensor(DataType::Float32, {4, 3}), tensor(DataType::Int64, {1, 2}),
               tensor(DataType::Float32, {2, 3}), 0, 1};
  const std::vector<BadCase> Cases = {
      {"syntax", "float f(float x) { return x +; }", "expected expression"},
      {"undeclared", "float f(float x) { return y; }", "undeclared identifier 'y'"},
      {"missing", "float g(float x) { return x; }", "no function named 'f'", false},
      {"declared only", "float f(float x);", "'f' is declared but not defined"},
      {"library call", "float sqrtf(float);\nfloat f(float x) { return sqrtf(x); }",
       "'sqrtf' is not defined in the epilogue"},
      {"implicit call", "float f(float x) { return expf(x); }", "undeclared function 'expf'"},
      {"library builtin", "float f(float x) { return __builtin_expf(x); }",
       "'__builtin_expf' calls the C library"},
      {"printf", "float f(float x) { __builtin_printf(\"%f\", x); return x; }",
       "'__builtin_printf' calls the C library"},
      {"mutable global", "float acc;\nfloat f(float x) { acc += x; return acc; }",
       "'acc' is mutable global state"},
      {"static local", "float f(float x) { static int n; return x + n++; }",
       "'n' is mutable global state"},
      {"assembly", "float f(float x) { __asm__(\"nop\"); return x; }", "may not contain assembly"},
      {"arity", "float f(float x, float y, float z) { return x; }", "takes 3 parameters"},
      {"struct return", "typedef struct { float a; } S;\nS f(float x) { S s = {x}; return s; }",
       "not a tensor element type"},
      {"const output row", "void f(const float *r, const float *o) {}",
       "output row must be a pointer to writable elements"},
      {"variadic", "float f(float x, ...) { return x; }", "is variadic"},
      {"missing return", "float f(float x) { }", "non-void function does not return a value"},
  };
  // clang 19's invalid bfloat16-to-float16 cast is refused, not linked.
  GatherDesc Bf = D;
  Bf.Input.Type = DataType::BFloat16;
  Bf.Output.Type = DataType::Float16;
  Expected<Kernel> Cast =
      RT->compile(Bf, {}, epilogue("float16_t f(bfloat16_t x) { return (float16_t)x; }"));
  if (!Cast) {
    EXPECT_THAT(Cast.status().message(), HasSubstr("through float"));
  }
  for (const BadCase &C : Cases) {
    SCOPED_TRACE(C.Name);
    Epilogue E = epilogue(C.Source);
    E.FileName = "my epilogue.c";
    Expected<Kernel> K = RT->compile(D, {}, E);
    ASSERT_FALSE(K.isOk());
    EXPECT_EQ(K.status().code(), ErrorCode::InvalidArgument);
    const std::string M = K.status().message();
    EXPECT_THAT(M, HasSubstr(C.Want));
    EXPECT_EQ(M.find('\n'), std::string::npos) << M;
    if (C.Located)
      EXPECT_THAT(M, MatchesRegex("my epilogue\\.c:[0-9]+:[0-9]+: error: .*"));
    else
      EXPECT_THAT(M, MatchesRegex("my epilogue\\.c: error: .*"));
  }
}

TEST(Epilogue, SignatureAndParametersMustMatchTheTensors) {
  REQUIRE_EPILOGUES();
  auto RT = makeRuntime();
  GatherDesc D{tensor(DataType::Float32, {4, 3}), tensor(DataType::Int64, {1, 2}),
               tensor(DataType::Float32, {2, 3}), 0, 1};
  auto Error = [&](const GatherDesc &Desc, const Epilogue &E) {
    Expected<Kernel> K = RT->compile(Desc, {}, E);
    return K ? std::string("compiled") : K.status().message();
  };
  EXPECT_EQ(Error(D, epilogue("float f(int32_t x) { return x; }")),
            "Gather: InputTensor.DataType = FLOAT32 does not match the epilogue, which takes "
            "INT32");
  EXPECT_EQ(Error(D, epilogue("double f(float x) { return x; }")),
            "Gather: OutputTensor.DataType = FLOAT32 does not match the epilogue, which "
            "returns FLOAT64");
  Epilogue Given = epilogue("float f(float x) { return x; }");
  Given.Params = {1, 2, 3};
  EXPECT_EQ(Error(D, Given), "epilogue.c: error: 'f' takes no parameter pointer but 3 bytes "
                             "of parameters were given");
  const char *Takes = "typedef struct { float s; double t; } P;\n"
                      "float f(float x, const P *p) { return x * p->s; }";
  EXPECT_EQ(Error(D, epilogue(Takes)),
            "epilogue.c: error: 'f' takes a parameter pointer but no parameters were given");
  Epilogue Short = epilogue(Takes);
  Short.Params = {0, 0, 0, 0};
  EXPECT_EQ(Error(D, Short),
            "epilogue.c: error: 'f' reads 16 bytes of parameters but 4 were given");
  // A row epilogue needs rows that are copied whole.
  const char *Row = "void f(const float *r, float *o) { o[0] = r[0]; }";
  GatherDesc AlongRows = D;
  AlongRows.Axis = 1;
  AlongRows.Output = tensor(DataType::Float32, {4, 2});
  EXPECT_THAT(Error(AlongRows, epilogue(Row)), HasSubstr("which this Gather gathers along"));
  GatherElementsDesc GE{tensor(DataType::Float32, {2, 3}), tensor(DataType::Int64, {2, 3}),
                        tensor(DataType::Float32, {2, 3}), 0};
  Expected<Kernel> K = RT->compile(GE, {}, epilogue(Row));
  ASSERT_FALSE(K.isOk());
  EXPECT_THAT(K.status().message(), HasSubstr("a row epilogue needs rows"));
  GatherDesc Strided = D;
  Strided.Input.Strides = std::vector<uint64_t>{6, 2};
  EXPECT_THAT(Error(Strided, epilogue(Row)), HasSubstr("must be contiguous, stride 1"));
}

/// Runs \p K and the interpreter with its epilogue; same bytes or the same
/// error.
void compareWithInterpreter(Runtime &RT, const Kernel &K, const RandomCase &C) {
  const ValidDesc &V = K.desc();
  const size_t OutBytes = requiredElements(V.Output) * V.Output.elementBytes();
  std::vector<char> Ref(OutBytes, '\xab'), Jit(OutBytes, '\xab');
  Expected<EpilogueApply> Apply = RT.epilogueFunction(K);
  ASSERT_TRUE(Apply.isOk()) << Apply.status().message();
  Status RS = interpret(V, C.Input.data(), C.Indices.data(), Ref.data(), *Apply);
  Status JS = K.run(C.Input.data(), C.Indices.data(), Jit.data());
  ASSERT_EQ(RS.code(), JS.code()) << "interp: " << RS.message() << "\njit: " << JS.message();
  if (RS)
    ASSERT_EQ(Ref, Jit) << "outputs differ";
  else
    ASSERT_EQ(RS.position(), JS.position());
}

TEST(Epilogue, ElementEpiloguesOnRandomConfigurations) {
  REQUIRE_EPILOGUES();
  RuntimeOptions Options;
  Options.Specialization = Specialize::AtCompile;
  Options.Threads = 1;
  Options.QuickTier = false;
  Expected<std::unique_ptr<Runtime>> RT = Runtime::create(Options);
  ASSERT_TRUE(RT.isOk());
  CaseGenerator Gen(seedFromEnv(20261123));
  std::mt19937_64 Rng(seedFromEnv(5, 1));
  Coverage Covered;
  unsigned &Ran = Covered.floor("configurations with an epilogue for their type", 120);
  for (unsigned I = 0; Covered.drawMore(I, 0, 800); ++I) {
    RandomCase C = Gen.next();
    const std::optional<RandomEpilogue> E = randomElementEpilogue(C.Desc.Input.Type, Rng);
    if (!E)
      continue;
    const std::string &Src = E->Fn.Source;
    // The plain gather retyped by the epilogue (withEpilogue).
    Expected<Kernel> K = (*RT)->compile(C.Desc, E->Fn);
    ASSERT_TRUE(K.isOk()) << Src << "\n" << C.Summary << "\n" << K.status().message();
    ASSERT_EQ(K->desc().Output.Type, E->Out);
    RandomCase Adapted = C;
    Adapted.Desc = K->desc();
    compareWithInterpreter(**RT, *K, Adapted);
    if (HasFatalFailure()) {
      ADD_FAILURE() << "case " << I << ": " << Src << "\n" << C.Summary;
      return;
    }
    ++Ran;
  }
  EXPECT_EQ(Covered.unmet(), "");
}

TEST(Epilogue, RowEpiloguesOnRandomGathers) {
  REQUIRE_EPILOGUES();
  auto RT = makeRuntime(64);
  std::mt19937_64 Rng(seedFromEnv(11));
  auto Pick = [&](uint64_t N) { return Rng() % N; };
  int Ran = 0;
  for (int I = 0; I < 60; ++I) {
    // input [A, V, R] (A may be 1), Gather along 0 or 1 with indices of
    // 1 or 2 dimensions; rows of R in, W out; output rows strided.
    const uint64_t A = 1 + Pick(3), V = 1 + Pick(6), R = 1 + Pick(9), W = 1 + Pick(7);
    const unsigned Axis = static_cast<unsigned>(Pick(2));
    const uint64_t Q0 = 1 + Pick(3), Q1 = 1 + Pick(4);
    const DataType IdxType = Pick(2) ? DataType::Int32 : DataType::Int64;
    TensorDesc In = tensor(DataType::UInt16, {A, V, R});
    TensorDesc Idx = tensor(IdxType, {1, Q0, Q1});
    std::vector<uint64_t> OutSizes =
        Axis == 0 ? std::vector<uint64_t>{Q0, Q1, V, W} : std::vector<uint64_t>{A, Q0, Q1, W};
    // Pad the rank: Gather's tensors share one rank (4 here).
    In.Sizes.insert(In.Sizes.begin(), 1);
    Idx.Sizes.insert(Idx.Sizes.begin(), 1);
    const unsigned GatherAxis = Axis + 1;
    const uint64_t Pad = Pick(3);
    std::vector<uint64_t> OutStrides(4);
    uint64_t S = 1;
    for (int D = 3; D >= 0; --D) {
      OutStrides[D] = S;
      S *= OutSizes[D] + (D == 3 ? Pad : 0);
    }
    GatherDesc D{In, Idx, tensor(DataType::Float32, OutSizes, OutStrides), GatherAxis, 2};
    ValidateOptions O;
    O.Policy = Pick(2) ? OobPolicy::Check : OobPolicy::Clamp;
    const char *Src = "void f(const uint16_t *row, float *out) {\n"
                      "  for (int j = 0; j < GJ_ROW_OUT; ++j)\n"
                      "    out[j] = row[(j * 5) % GJ_ROW_IN] * 0.5f - j;\n"
                      "}\n";
    Expected<Kernel> K = RT->compile(D, O, epilogue(Src));
    ASSERT_TRUE(K.isOk()) << K.status().message();
    RandomCase C;
    C.Desc = K->desc();
    C.Input.resize(requiredElements(C.Desc.Input) * 2);
    for (size_t B = 0; B < C.Input.size(); ++B)
      C.Input[B] = static_cast<char>(Pick(256));
    const uint64_t AxisSize = C.Desc.Input.Sizes[GatherAxis];
    std::vector<int64_t> Values(Q0 * Q1);
    for (int64_t &X : Values)
      X = static_cast<int64_t>(Pick(2 * AxisSize + 2)) - static_cast<int64_t>(AxisSize) -
          (Pick(8) == 0 ? 0 : 0);
    C.Indices = encodeIndices(IdxType, Values);
    compareWithInterpreter(*RT, *K, C);
    if (HasFatalFailure()) {
      ADD_FAILURE() << "case " << I << ": " << C.Desc.describe();
      return;
    }
    ++Ran;
  }
  EXPECT_EQ(Ran, 60);
}

} // namespace
