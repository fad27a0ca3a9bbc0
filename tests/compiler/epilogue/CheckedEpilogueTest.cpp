//===- tests/compiler/epilogue/CheckedEpilogueTest.cpp - Checked mode -----===//
//
// Epilogues compiled checked (Epilogue::Checked): in-bounds code gives the
// unchecked kernel's and the interpreter's results; each way out of the
// regions (past the row, past the output row, into the row, past the
// parameters, past a local array, a zero divisor) fails the run cleanly
// and leaves memory past the output untouched; the constructs checked mode
// refuses are errors at their line; the runtime-wide option and the C API
// ask for it too.
//
//===----------------------------------------------------------------------===//

#include "gatherjit/gatherjit.h"
#include "runtime/RuntimeTestUtil.h"

#include <gmock/gmock.h>

#include <climits>
#include <cstring>

using namespace gatherjit;
using namespace gatherjit::test;
using ::testing::HasSubstr;
using ::testing::MatchesRegex;

namespace {

Epilogue checked(std::string Source, bool Checked = true) {
  Epilogue E;
  E.Source = std::move(Source);
  E.Function = "f";
  E.FileName = "mine.c";
  E.Checked = Checked;
  return E;
}

/// Gather of rows of a [Rows, Row] FLOAT32 table by \p Ids along axis 0.
GatherDesc rowsOf(uint64_t Rows, uint64_t Row, uint64_t Ids) {
  return {tensor(DataType::Float32, {Rows, Row}), tensor(DataType::Int64, {1, Ids}),
          tensor(DataType::Float32, {Ids, Row}), 0, 1};
}

std::vector<float> table(uint64_t Rows, uint64_t Row) {
  std::vector<float> T(Rows * Row);
  for (uint64_t I = 0; I < T.size(); ++I)
    T[I] = static_cast<float>(I);
  return T;
}

/// The output of \p K on \p In and \p Ids, with 16 guard floats after it
/// that must stay as they were; the run's status in \p S.
std::vector<float> runGuarded(const Kernel &K, const std::vector<float> &In,
                              const std::vector<int64_t> &Ids, size_t OutElements, Status &S) {
  std::vector<float> Out(OutElements + 16, -7.0f);
  S = K.run(In.data(), Ids.data(), Out.data());
  for (size_t I = OutElements; I < Out.size(); ++I)
    EXPECT_EQ(Out[I], -7.0f) << "written past the output at " << I;
  Out.resize(OutElements);
  return Out;
}

constexpr const char *Scaled = R"(
void f(const float *row, float *out) {
  for (int j = 0; j < GJ_ROW_OUT; ++j)
    out[j] = row[GJ_ROW_IN - 1 - j] * 2.0f;
}
)";

TEST(CheckedEpilogue, InBoundsRowEpilogueMatchesUncheckedAndInterpreter) {
  REQUIRE_EPILOGUES();
  auto RT = makeRuntime();
  const GatherDesc D = rowsOf(50, 24, 40);
  const std::vector<float> In = table(50, 24);
  const std::vector<int64_t> Ids = validIndices(40, 50, 3);
  Expected<Kernel> Plain = RT->compile(D, {}, checked(Scaled, false));
  Expected<Kernel> Checked = RT->compile(D, {}, checked(Scaled));
  ASSERT_TRUE(Plain.isOk()) << Plain.status().message();
  ASSERT_TRUE(Checked.isOk()) << Checked.status().message();
  EXPECT_NE(Plain->symbolName(), Checked->symbolName());
  Status S1, S2;
  const std::vector<float> A = runGuarded(*Plain, In, Ids, 40 * 24, S1);
  const std::vector<float> B = runGuarded(*Checked, In, Ids, 40 * 24, S2);
  ASSERT_TRUE(S1.isOk() && S2.isOk()) << S1.message() << S2.message();
  EXPECT_EQ(A, B);
  // Row r of the output is table row Ids[r] reversed, doubled.
  for (uint64_t R = 0; R < 40; ++R) {
    const uint64_t Src = static_cast<uint64_t>(Ids[R] < 0 ? Ids[R] + 50 : Ids[R]);
    for (uint64_t J = 0; J < 24; ++J)
      ASSERT_EQ(B[R * 24 + J], 2.0f * static_cast<float>(Src * 24 + 23 - J)) << R << "," << J;
  }
  Expected<EpilogueApply> Apply = RT->epilogueFunction(*Checked);
  ASSERT_TRUE(Apply.isOk()) << Apply.status().message();
  std::vector<float> Ref(40 * 24);
  ASSERT_TRUE(interpret(Checked->desc(), In.data(), Ids.data(), Ref.data(), *Apply).isOk());
  EXPECT_EQ(Ref, B);
}

/// Each source runs once in bounds for every row but goes out of its
/// regions on some input; checked, that run fails and writes nothing past
/// the output.
struct Escape {
  const char *Name;
  const char *Source;
};

class CheckedEscapes : public ::testing::TestWithParam<Escape> {};

TEST_P(CheckedEscapes, FailTheRunCleanly) {
  REQUIRE_EPILOGUES();
  auto RT = makeRuntime();
  const GatherDesc D = rowsOf(8, 16, 6);
  const std::vector<float> In = table(8, 16), Before = In;
  const std::vector<int64_t> Ids = {0, 7, 3, 3, 1, 6};
  Expected<Kernel> K = RT->compile(D, {}, checked(GetParam().Source));
  ASSERT_TRUE(K.isOk()) << K.status().message();
  Status S;
  runGuarded(*K, In, Ids, 6 * 16, S);
  EXPECT_EQ(S.code(), ErrorCode::InvalidArgument);
  EXPECT_THAT(S.message(), HasSubstr("checked epilogue"));
  EXPECT_EQ(In, Before) << "the input was written";
  // The interpreter, calling the epilogue alone, reports the same.
  Expected<EpilogueApply> Apply = RT->epilogueFunction(*K);
  ASSERT_TRUE(Apply.isOk());
  std::vector<float> Ref(6 * 16 + 16, -7.0f);
  Status RS = interpret(K->desc(), In.data(), Ids.data(), Ref.data(), *Apply);
  EXPECT_EQ(RS.code(), ErrorCode::InvalidArgument) << RS.message();
  for (size_t I = 6 * 16; I < Ref.size(); ++I)
    EXPECT_EQ(Ref[I], -7.0f);
}

INSTANTIATE_TEST_SUITE_P(Accesses, CheckedEscapes,
                         ::testing::Values(Escape{"WritePastTheOutputRow", R"(
void f(const float *row, float *out) {
  for (int j = 0; j <= GJ_ROW_OUT; ++j) out[j] = row[j % GJ_ROW_IN];
})"},
                                           Escape{"ReadPastTheRow", R"(
void f(const float *row, float *out) {
  for (int j = 0; j < GJ_ROW_OUT; ++j) out[j] = row[j + 1];
})"},
                                           Escape{"ReadBeforeTheRow", R"(
void f(const float *row, float *out) {
  for (int j = 0; j < GJ_ROW_OUT; ++j) out[j] = row[j - 1 + (j > 0)] + row[-1];
})"},
                                           Escape{"WriteIntoTheRow", R"(
void f(const float *row, float *out) {
  ((float *)row)[0] = 1.0f;
  for (int j = 0; j < GJ_ROW_OUT; ++j) out[j] = row[j];
})"},
                                           Escape{"IndexFromTheData", R"(
void f(const float *row, float *out) {
  int k = (int)row[0];  /* 0 .. 112: past the row for most rows */
  for (int j = 0; j < GJ_ROW_OUT; ++j) out[j] = row[k % 64];
})"},
                                           Escape{"LocalArrayPastItsEnd", R"(
void f(const float *row, float *out) {
  float t[4] = {1, 2, 3, 4};
  int k = (int)row[0] / 16;  /* the table row: up to 7 */
  for (int j = 0; j < GJ_ROW_OUT; ++j) out[j] = t[k];
})"},
                                           Escape{"MemcpyPastTheOutputRow", R"(
void f(const float *row, float *out) {
  __builtin_memcpy(out + 1, row, GJ_ROW_IN * sizeof(float));
})"},
                                           Escape{"Unreachable", R"(
void f(const float *row, float *out) {
  if (row[0] > 100.0f) __builtin_unreachable();
  for (int j = 0; j < GJ_ROW_OUT; ++j) out[j] = row[j];
})"}),
                         [](const ::testing::TestParamInfo<Escape> &I) {
                           return std::string(I.param.Name);
                         });

TEST(CheckedEpilogue, ParametersAreARegionOfTheirSize) {
  REQUIRE_EPILOGUES();
  auto RT = makeRuntime();
  GatherElementsDesc D{tensor(DataType::Int32, {6}), tensor(DataType::Int64, {6}),
                       tensor(DataType::Float32, {6}), 0};
  const char *Src = "float f(int32_t x, const float *p) { return p[x]; }";
  Epilogue E = checked(Src);
  const float P[4] = {0.5f, 1.5f, 2.5f, 3.5f};
  E.Params.assign(reinterpret_cast<const unsigned char *>(P),
                  reinterpret_cast<const unsigned char *>(P) + sizeof(P));
  Expected<Kernel> K = RT->compile(D, {}, E);
  ASSERT_TRUE(K.isOk()) << K.status().message();
  std::vector<int32_t> In = {3, 0, 2, 1, 3, 4};
  const std::vector<int64_t> Good = {0, 1, 2, 3, 0, 1}, Bad = {0, 1, 2, 5, 0, 1};
  float Out[6] = {};
  ASSERT_TRUE(K->run(In.data(), Good.data(), Out).isOk());
  EXPECT_EQ(std::vector<float>(Out, Out + 6),
            (std::vector<float>{3.5f, 0.5f, 2.5f, 1.5f, 3.5f, 0.5f}));
  // In[5] = 4 reads p[4], one float past the parameters.
  EXPECT_EQ(K->run(In.data(), Bad.data(), Out).code(), ErrorCode::InvalidArgument);
  // Negative values read before them.
  In[0] = -1;
  EXPECT_EQ(K->run(In.data(), Good.data(), Out).code(), ErrorCode::InvalidArgument);
}

TEST(CheckedEpilogue, DivisionsThatTrapFailTheRun) {
  REQUIRE_EPILOGUES();
  auto RT = makeRuntime();
  GatherElementsDesc D{tensor(DataType::Int32, {4}), tensor(DataType::Int64, {4}),
                       tensor(DataType::Int32, {4}), 0};
  Expected<Kernel> K =
      RT->compile(D, {},
                  checked("#define MIN (-2147483647 - 1)\n"
                          "int32_t f(int32_t x) { return (x + 1) / x + MIN / (x - 8); }\n"));
  ASSERT_TRUE(K.isOk()) << K.status().message();
  const std::vector<int64_t> Idx = {0, 1, 2, 3};
  int32_t Out[4];
  std::vector<int32_t> In = {1, 2, 4, -1};
  ASSERT_TRUE(K->run(In.data(), Idx.data(), Out).isOk());
  EXPECT_EQ(Out[0], 2 + INT_MIN / -7);
  In[2] = 0; // x / 0
  EXPECT_EQ(K->run(In.data(), Idx.data(), Out).code(), ErrorCode::InvalidArgument);
  In[2] = 7; // INT_MIN / -1
  EXPECT_EQ(K->run(In.data(), Idx.data(), Out).code(), ErrorCode::InvalidArgument);
}

TEST(CheckedEpilogue, LocalsUpToTheStackLimitRun) {
  // 16,384 floats of scratch, the most a checked epilogue's locals may take
  // (CheckedEpilogueStackBytes); 4 bytes more are refused (CheckedRefusals).
  REQUIRE_EPILOGUES();
  auto RT = makeRuntime();
  GatherElementsDesc D{tensor(DataType::Int32, {4}), tensor(DataType::Int64, {4}),
                       tensor(DataType::Int32, {4}), 0};
  const std::string Body = "  for (int i = 0; i < N; ++i) t[i] = i;\n"
                           "  return t[(x % N + N) % N] + t[N - 1]; }\n";
  Expected<Kernel> K =
      RT->compile(D, {}, checked("#define N 16384\nint32_t f(int32_t x) { int32_t t[N];\n" + Body));
  ASSERT_TRUE(K.isOk()) << K.status().message();
  const std::vector<int64_t> Idx = {3, 2, 1, 0};
  const std::vector<int32_t> In = {5, -1, 16385, 20000};
  int32_t Out[4];
  ASSERT_TRUE(K->run(In.data(), Idx.data(), Out).isOk());
  EXPECT_EQ(Out[0], 20000 - 16384 + 16383);
  EXPECT_EQ(Out[1], 1 + 16383);
  EXPECT_EQ(Out[2], 16383 + 16383);
  EXPECT_EQ(Out[3], 5 + 16383);
  EXPECT_THAT(
      RT->compile(D, {}, checked("#define N 16385\nint32_t f(int32_t x) { int32_t t[N];\n" + Body))
          .status()
          .message(),
      HasSubstr("has local variables of 65540 bytes, more than 65536"));
}

struct Refused {
  const char *Name;
  const char *Source;
  const char *Why;
};

class CheckedRefusals : public ::testing::TestWithParam<Refused> {};

TEST_P(CheckedRefusals, AtTheirLine) {
  REQUIRE_EPILOGUES();
  auto RT = makeRuntime();
  GatherElementsDesc D{tensor(DataType::Float32, {4}), tensor(DataType::Int64, {4}),
                       tensor(DataType::Float32, {4}), 0};
  Expected<Kernel> K = RT->compile(D, {}, checked(GetParam().Source));
  ASSERT_FALSE(K.isOk());
  EXPECT_EQ(K.status().code(), ErrorCode::InvalidArgument);
  EXPECT_THAT(K.status().message(),
              MatchesRegex("mine\\.c:3:[0-9]+: error: the epilogue .*, which a checked "
                           "epilogue may not"));
  EXPECT_THAT(K.status().message(), HasSubstr(GetParam().Why));
}

INSTANTIATE_TEST_SUITE_P(Constructs, CheckedRefusals,
                         ::testing::Values(Refused{"IntegerToPointer", R"(
float f(float x) {
  return x + *(const float *)(unsigned long)0x1000;
})",
                                                   "casts an integer to a pointer"},
                                           Refused{"FunctionPointer", R"(
static float g(float x) { return x; }
float f(float x) { float (*volatile p)(float) = g; return p(x); }
)",
                                                   "calls through a function pointer"},
                                           Refused{"Recursion", R"(
static float g(float x, int n) { return n ? g(x, n - 1) + 1 : x; }
float f(float x) { return g(x, (int)x); }
)",
                                                   "recurses"},
                                           // The entry itself: it was erased with its
                                           // call left behind.
                                           Refused{"RecursiveEntry", R"(
float f(float x) {
  return x > 0 ? f(x - 1) + 1 : 0; }
)",
                                                   "calls 'f', which could not be inlined (it "
                                                   "recurses)"},
                                           Refused{"EntryAddress", R"(
float f(float x) {
  float (*volatile p)(float) = f; return x + (p == 0); }
)",
                                                   "takes the address of 'f'"},
                                           Refused{"VariableLengthArray", R"(
float f(float x) {
  float t[(int)x + 1]; t[0] = x; return t[0]; }
)",
                                                   "llvm.stacksave"},
                                           Refused{"LocalsPastTheStackLimit", R"(
float f(float x) {
  char a[40000], b[30000]; int n = (int)x; a[n] = 1; b[n] = a[n]; return x + b[n];
})",
                                                   "has local variables of 70000 bytes, more "
                                                   "than 65536"},
                                           Refused{"FrameAddress", R"(
float f(float x) {
  return x + *(const float *)__builtin_frame_address(0);
})",
                                                   "llvm.frameaddress"}),
                         [](const ::testing::TestParamInfo<Refused> &I) {
                           return std::string(I.param.Name);
                         });

TEST(CheckedEpilogue, UncheckedCompilesWhatCheckedRefuses) {
  REQUIRE_EPILOGUES();
  auto RT = makeRuntime();
  GatherElementsDesc D{tensor(DataType::Float32, {4}), tensor(DataType::Int64, {4}),
                       tensor(DataType::Float32, {4}), 0};
  const char *Cast = "float f(float x) { const float *p = (const float *)(unsigned long)8;\n"
                     "  return x > 1e30f ? *p : x; }";
  EXPECT_TRUE(RT->compile(D, {}, checked(Cast, false)).isOk());
  EXPECT_FALSE(RT->compile(D, {}, checked(Cast)).isOk());
}

TEST(CheckedEpilogue, TheRuntimeCanCheckEveryEpilogue) {
  REQUIRE_EPILOGUES();
  RuntimeOptions O;
  O.Specialization = Specialize::AtCompile;
  O.Threads = 2;
  O.Epilogues.Checked = true;
  Expected<std::unique_ptr<Runtime>> RT = Runtime::create(O);
  ASSERT_TRUE(RT.isOk());
  // Large enough to be split across both threads; only the last row
  // faults, and the run still fails.
  const GatherDesc D = rowsOf(4096, 64, 4096);
  const std::vector<float> In = table(4096, 64);
  std::vector<int64_t> Ids(4096);
  for (int64_t I = 0; I < 4096; ++I)
    Ids[I] = I;
  const char *Src = R"(
void f(const float *row, float *out) {
  int past = row[0] == (GJ_ROW_IN * 4095.0f);
  for (int j = 0; j < GJ_ROW_OUT; ++j) out[j + past] = row[j];
})";
  Expected<Kernel> K = (*RT)->compile(D, {}, checked(Src, /*Checked=*/false));
  ASSERT_TRUE(K.isOk()) << K.status().message();
  Status S;
  std::vector<float> Out = runGuarded(*K, In, Ids, 4096 * 64, S);
  EXPECT_EQ(S.code(), ErrorCode::InvalidArgument) << S.message();
  Ids.back() = 0;
  Out = runGuarded(*K, In, Ids, 4096 * 64, S);
  EXPECT_TRUE(S.isOk()) << S.message();
  EXPECT_EQ(Out[5 * 64 + 3], In[5 * 64 + 3]);
}

TEST(CheckedEpilogue, CApiAsksPerEpilogue) {
  REQUIRE_EPILOGUES();
  gj_runtime_options O;
  gj_runtime_options_init(&O);
  EXPECT_EQ(O.epilogue_checked, 0u);
  O.threads = 1;
  O.specialize = GJ_SPECIALIZE_COMPILE;
  gj_runtime *RT = nullptr;
  ASSERT_EQ(gj_runtime_create(&O, &RT), GJ_OK) << gj_last_error();
  const uint64_t Sizes[] = {4};
  gj_descriptor D = {};
  const gj_tensor_desc Data = gj_tensor(GJ_FLOAT32, 1, Sizes);
  const gj_tensor_desc Ids = gj_tensor(GJ_INT64, 1, Sizes);
  ASSERT_EQ(gj_onnx_gather_elements(&Data, &Ids, 0, &D), GJ_OK) << gj_last_error();
  const float Table[2] = {10, 20};
  gj_epilogue E = {};
  E.source = "float f(float x, const float *t) { return t[(int)x]; }";
  E.function = "f";
  E.params = Table;
  E.params_size = sizeof(Table);
  E.checked = 1;
  gj_kernel *K = nullptr;
  ASSERT_EQ(gj_compile_epilogue(RT, &D, &E, &K), GJ_OK) << gj_last_error();
  const float In[] = {1, 0, 1, 2};
  const int64_t Good[] = {0, 1, 2, 1}, Bad[] = {0, 1, 3, 1};
  float Out[4] = {};
  ASSERT_EQ(gj_kernel_run(K, In, Good, Out), GJ_OK) << gj_last_error();
  EXPECT_EQ(Out[0], 20.0f);
  EXPECT_EQ(Out[1], 10.0f);
  EXPECT_EQ(gj_kernel_run(K, In, Bad, Out), GJ_INVALID_ARGUMENT);
  EXPECT_THAT(gj_last_error(), HasSubstr("checked epilogue"));
  gj_kernel_release(K);
  gj_runtime_destroy(RT);
}

} // namespace
