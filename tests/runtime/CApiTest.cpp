//===- tests/runtime/CApiTest.cpp - The C embedding API ------------------===//

#include "gatherjit/gatherjit.h"

#include "RandomCase.h"
#include "tools/CliTestUtil.h"

#include "gatherjit/Interpreter.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <chrono>
#include <thread>
#include <vector>

using namespace gatherjit;
using namespace gatherjit::test;
using ::testing::HasSubstr;

namespace {

gj_tensor_desc toC(const TensorDesc &T) {
  gj_tensor_desc C = gj_tensor(static_cast<gj_data_type>(T.Type), T.rank(), T.Sizes.data());
  C.has_strides = 1;
  for (unsigned D = 0; D < T.rank(); ++D)
    C.strides[D] = (*T.Strides)[D];
  C.opaque_bytes = T.OpaqueBytes;
  return C;
}

gj_descriptor toC(const ValidDesc &V) {
  gj_descriptor D{};
  D.op = V.Op == OpKind::Gather     ? GJ_GATHER
         : V.Op == OpKind::GatherND ? GJ_GATHER_ND
                                    : GJ_GATHER_ELEMENTS;
  D.input = toC(V.Input);
  D.indices = toC(V.Indices);
  D.output = toC(V.Output);
  D.axis = V.Axis;
  D.index_dimensions = V.IndexDimensions;
  D.input_dimension_count = V.InputDimensionCount;
  D.indices_dimension_count = V.IndicesDimensionCount;
  D.batch_dimension_count = V.BatchDimensionCount;
  D.policy = static_cast<gj_oob_policy>(V.Policy); // The enumerations agree.
  static_assert(GJ_OOB_CLIP == static_cast<int>(OobPolicy::Clip));
  D.allow_smaller_indices = 1;
  return D;
}

/// Stores an int a C caller could put in an enumeration field, without a
/// C++ conversion to the enumeration (out of its range, that is undefined).
template <typename Enum> void setRaw(Enum &Field, int32_t Value) {
  static_assert(sizeof(Enum) == sizeof(Value));
  std::memcpy(&Field, &Value, sizeof(Value));
}

struct CRuntime {
  explicit CRuntime(const gj_runtime_options *O = nullptr) {
    EXPECT_EQ(gj_runtime_create(O, &R), GJ_OK) << gj_last_error();
  }
  ~CRuntime() { gj_runtime_destroy(R); }
  gj_runtime *R = nullptr;
};

} // namespace

TEST(CApi, RandomConfigurationsMatchTheInterpreter) {
  CRuntime RT;
  CaseGenerator Gen(99);
  for (int I = 0; I < 200; ++I) {
    RandomCase C = Gen.next();
    SCOPED_TRACE(C.Summary);
    gj_descriptor D = toC(C.Desc);
    gj_kernel *K = nullptr;
    ASSERT_EQ(gj_compile(RT.R, &D, &K), GJ_OK) << gj_last_error();
    const size_t OutBytes = requiredElements(C.Desc.Output) * C.Desc.Output.elementBytes();
    EXPECT_EQ(gj_tensor_bytes(&D.output), OutBytes);
    std::vector<char> Ref(OutBytes), Out(OutBytes);
    Status RS = interpret(C.Desc, C.Input.data(), C.Indices.data(), Ref.data());
    gj_status S = gj_kernel_run(K, C.Input.data(), C.Indices.data(), Out.data());
    if (RS) {
      EXPECT_EQ(S, GJ_OK) << gj_last_error();
      EXPECT_EQ(Ref, Out);
    } else {
      EXPECT_EQ(S, GJ_INDEX_OUT_OF_RANGE);
      EXPECT_EQ(gj_last_error_position(), *RS.position());
      EXPECT_EQ(std::string(gj_last_error()), RS.message());
    }
    gj_kernel_release(K);
  }
  gj_cache_stats Stats;
  gj_runtime_stats(RT.R, &Stats);
  EXPECT_GT(Stats.misses, 0u);
  EXPECT_LE(Stats.hits + Stats.misses, 200u); // Empty outputs need no kernel.
}

TEST(CApi, OnnxBuildersAndTheSeedExample) {
  // ONNX GatherElements page, first example: axis = 1.
  const uint64_t Shape[2] = {2, 2};
  gj_tensor_desc Data = gj_tensor(GJ_FLOAT32, 2, Shape), Idx = gj_tensor(GJ_INT64, 2, Shape);
  gj_descriptor D;
  ASSERT_EQ(gj_onnx_gather_elements(&Data, &Idx, -1, &D), GJ_OK);
  EXPECT_EQ(D.axis, 1u);
  CRuntime RT;
  gj_kernel *K;
  ASSERT_EQ(gj_compile(RT.R, &D, &K), GJ_OK) << gj_last_error();
  const float In[4] = {1, 2, 3, 4};
  const int64_t Indices[4] = {0, 0, 1, 0};
  float Out[4] = {};
  ASSERT_EQ(gj_kernel_run(K, In, Indices, Out), GJ_OK);
  EXPECT_THAT(Out, ::testing::ElementsAre(1, 1, 4, 3));
  // Rows split by the caller give the same bytes.
  float Halves[4] = {};
  const uint64_t Rows = gj_kernel_rows(K);
  ASSERT_EQ(Rows, 2u);
  EXPECT_EQ(gj_kernel_run_rows(K, In, Indices, Halves, 0, 1), GJ_OK);
  EXPECT_EQ(gj_kernel_run_rows(K, In, Indices, Halves, 1, Rows), GJ_OK);
  EXPECT_THAT(Halves, ::testing::ElementsAre(1, 1, 4, 3));
  // A CPU kernel's asynchronous launch runs at once, its error with it;
  // the finish has nothing to report.
  float Launched[4] = {};
  EXPECT_EQ(gj_kernel_launch_stream(K, In, Indices, Launched, nullptr), GJ_OK);
  EXPECT_THAT(Launched, ::testing::ElementsAre(1, 1, 4, 3));
  const int64_t Bad[4] = {0, 0, 1, 2};
  EXPECT_EQ(gj_kernel_launch_stream(K, In, Bad, Launched, nullptr), GJ_INDEX_OUT_OF_RANGE);
  EXPECT_EQ(gj_last_error_position(), 3u);
  EXPECT_EQ(gj_kernel_finish_stream(K, nullptr), GJ_OK);
  EXPECT_THAT(gj_kernel_symbol(K), ::testing::StartsWith("gj_b4_i64_"));
  gj_kernel_release(K);

  // ONNX Gather with a scalar index: output rank r - 1.
  const uint64_t Table[2] = {5, 3};
  gj_tensor_desc T = gj_tensor(GJ_FLOAT32, 2, Table), Scalar = gj_tensor(GJ_INT32, 0, nullptr);
  ASSERT_EQ(gj_onnx_gather(&T, &Scalar, 0, &D), GJ_OK) << gj_last_error();
  ASSERT_EQ(gj_compile(RT.R, &D, &K), GJ_OK) << gj_last_error();
  float Rows5[15];
  for (int I = 0; I < 15; ++I)
    Rows5[I] = static_cast<float>(I);
  const int32_t Minus2 = -2;
  float Row[3];
  ASSERT_EQ(gj_kernel_run(K, Rows5, &Minus2, Row), GJ_OK);
  EXPECT_THAT(Row, ::testing::ElementsAre(9, 10, 11));
  gj_kernel_release(K);
}

TEST(CApi, OnnxGatherNDWithBatchDimensions) {
  // ONNX GatherND page, example 5: batch_dims = 1, data [2, 2, 2] and
  // indices [2, 1] give [[2, 3], [4, 5]].
  const uint64_t DataShape[3] = {2, 2, 2}, IdxShape[2] = {2, 1};
  gj_tensor_desc Data = gj_tensor(GJ_INT32, 3, DataShape), Idx = gj_tensor(GJ_INT64, 2, IdxShape);
  gj_descriptor D;
  ASSERT_EQ(gj_onnx_gather_nd(&Data, &Idx, 1, &D), GJ_OK) << gj_last_error();
  EXPECT_EQ(D.op, GJ_GATHER_ND);
  EXPECT_EQ(D.batch_dimension_count, 1u);
  EXPECT_EQ(gj_tensor_bytes(&D.output), 4 * sizeof(int32_t));
  CRuntime RT;
  gj_kernel *K = nullptr;
  ASSERT_EQ(gj_compile(RT.R, &D, &K), GJ_OK) << gj_last_error();
  const int32_t In[8] = {0, 1, 2, 3, 4, 5, 6, 7};
  const int64_t Good[2] = {1, 0}, Bad[2] = {1, -3};
  int32_t Out[4] = {};
  ASSERT_EQ(gj_kernel_run(K, In, Good, Out), GJ_OK) << gj_last_error();
  EXPECT_THAT(Out, ::testing::ElementsAre(2, 3, 4, 5));
  EXPECT_EQ(gj_kernel_run(K, In, Bad, Out), GJ_INDEX_OUT_OF_RANGE);
  EXPECT_EQ(gj_last_error_position(), 1u);
  EXPECT_THAT(gj_last_error(), HasSubstr("= -3"));
  gj_kernel_release(K);
  // batch_dims past the indices' leading dimensions is named.
  EXPECT_EQ(gj_onnx_gather_nd(&Data, &Idx, 2, &D), GJ_INVALID_ARGUMENT);
  EXPECT_THAT(gj_last_error(), HasSubstr("batch"));
}

TEST(CApi, ErrorsAreCodesWithMessages) {
  CRuntime RT;
  const uint64_t Shape[2] = {2, 2};
  gj_tensor_desc Data = gj_tensor(GJ_FLOAT32, 2, Shape), Idx = gj_tensor(GJ_INT64, 2, Shape);
  gj_descriptor D;
  EXPECT_EQ(gj_onnx_gather_elements(&Data, &Idx, 2, &D), GJ_INVALID_ARGUMENT);
  EXPECT_THAT(gj_last_error(), HasSubstr("-2..1"));
  ASSERT_EQ(gj_onnx_gather_elements(&Data, &Idx, 0, &D), GJ_OK);
  EXPECT_STREQ(gj_last_error(), "");

  gj_kernel *K = reinterpret_cast<gj_kernel *>(0x1);
  gj_descriptor Bad = D;
  Bad.input.rank = 9;
  EXPECT_EQ(gj_compile(RT.R, &Bad, &K), GJ_INVALID_ARGUMENT);
  EXPECT_THAT(gj_last_error(), HasSubstr("input.rank = 9"));
  EXPECT_EQ(K, nullptr);
  Bad = D;
  setRaw(Bad.indices.data_type, 77);
  EXPECT_EQ(gj_compile(RT.R, &Bad, &K), GJ_INVALID_ARGUMENT);
  EXPECT_THAT(gj_last_error(), HasSubstr("indices.data_type = 77"));
  Bad = D;
  Bad.indices.data_type = GJ_FLOAT32;
  EXPECT_EQ(gj_compile(RT.R, &Bad, &K), GJ_INVALID_ARGUMENT);
  EXPECT_THAT(gj_last_error(), HasSubstr("IndicesTensor"));
  Bad = D;
  setRaw(Bad.op, 5);
  EXPECT_EQ(gj_compile(RT.R, &Bad, &K), GJ_INVALID_ARGUMENT);
  EXPECT_EQ(gj_compile(nullptr, &D, &K), GJ_INVALID_ARGUMENT);
  EXPECT_THAT(gj_last_error(), HasSubstr("runtime is NULL"));
  EXPECT_EQ(gj_compile(RT.R, &D, nullptr), GJ_INVALID_ARGUMENT);

  ASSERT_EQ(gj_compile(RT.R, &D, &K), GJ_OK);
  const float In[4] = {1, 2, 3, 4};
  const int64_t Indices[4] = {0, 0, 1, 9};
  float Out[4];
  EXPECT_EQ(gj_kernel_run(K, In, Indices, Out), GJ_INDEX_OUT_OF_RANGE);
  EXPECT_EQ(gj_last_error_position(), 3u);
  EXPECT_EQ(gj_kernel_run(K, nullptr, Indices, Out), GJ_INVALID_ARGUMENT);
  EXPECT_THAT(gj_last_error(), HasSubstr("input is NULL"));
  EXPECT_EQ(gj_kernel_run(nullptr, In, Indices, Out), GJ_INVALID_ARGUMENT);
  gj_kernel_release(K);

  gj_runtime_options O;
  gj_runtime_options_init(&O);
  EXPECT_EQ(O.opt_level, GJ_O2);
  setRaw(O.opt_level, 9);
  gj_runtime *R = reinterpret_cast<gj_runtime *>(0x1);
  EXPECT_EQ(gj_runtime_create(&O, &R), GJ_INVALID_ARGUMENT);
  EXPECT_EQ(R, nullptr);
  EXPECT_STREQ(gj_status_name(GJ_INDEX_OUT_OF_RANGE), "index out of range");
  EXPECT_STREQ(gj_status_name(GJ_IO_ERROR), "I/O error");
  EXPECT_STREQ(gj_data_type_name(GJ_UINT16), "UINT16");
}

TEST(CApi, QuickTierKernelsAreUpgradedUnlessTurnedOff) {
  // 128 x 128 FLOAT32: 64 KiB of output, due for an upgrade after 256 runs.
  const uint64_t Shape[2] = {128, 128};
  gj_tensor_desc Data = gj_tensor(GJ_FLOAT32, 2, Shape), Idx = gj_tensor(GJ_INT32, 2, Shape);
  gj_descriptor D;
  ASSERT_EQ(gj_onnx_gather_elements(&Data, &Idx, 1, &D), GJ_OK);
  std::vector<float> In(128 * 128), Out(128 * 128);
  std::vector<int32_t> Indices(128 * 128);
  for (size_t I = 0; I < In.size(); ++I) {
    In[I] = static_cast<float>(I);
    Indices[I] = static_cast<int32_t>(I * 37 % 128);
  }
  for (uint32_t Off : {0u, 1u}) {
    gj_runtime_options O;
    gj_runtime_options_init(&O);
    EXPECT_EQ(O.no_quick_tier, 0u);
    O.specialize = GJ_SPECIALIZE_COMPILE; // The quick tier is compiled code's.
    O.no_quick_tier = Off;
    CRuntime RT(&O);
    gj_kernel *K;
    ASSERT_EQ(gj_compile(RT.R, &D, &K), GJ_OK);
    for (int I = 0; I < 256; ++I)
      ASSERT_EQ(gj_kernel_run(K, In.data(), Indices.data(), Out.data()), GJ_OK);
    gj_cache_stats S;
    const auto Deadline = std::chrono::steady_clock::now() + std::chrono::seconds(60);
    do {
      std::this_thread::sleep_for(std::chrono::milliseconds(5));
      gj_runtime_stats(RT.R, &S);
    } while (!Off && S.upgrades == 0 && std::chrono::steady_clock::now() < Deadline);
    EXPECT_EQ(S.upgrades, Off ? 0u : 1u);
    ASSERT_EQ(gj_kernel_run(K, In.data(), Indices.data(), Out.data()), GJ_OK);
    EXPECT_EQ(Out[5 * 128 + 3], In[5 * 128 + (5 * 128 + 3) * 37 % 128]);
    gj_kernel_release(K);
  }
}

TEST(CApi, KernelsOutliveTheRuntimeAndTheCacheDirectoryPersists) {
  ScratchDir Dir;
  const std::string Cache = Dir / "kernels";
  gj_runtime_options O;
  gj_runtime_options_init(&O);
  O.cache_dir = Cache.c_str();
  O.threads = 2;
  O.specialize = GJ_SPECIALIZE_COMPILE; // Only compiled code is stored.
  const uint64_t Shape[2] = {3, 4};
  gj_tensor_desc Data = gj_tensor(GJ_UINT8, 2, Shape), Idx = gj_tensor(GJ_INT32, 2, Shape);
  gj_descriptor D;
  ASSERT_EQ(gj_onnx_gather_elements(&Data, &Idx, 1, &D), GJ_OK);
  gj_kernel *K;
  {
    CRuntime RT(&O);
    ASSERT_EQ(gj_compile(RT.R, &D, &K), GJ_OK);
    gj_cache_stats S;
    gj_runtime_stats(RT.R, &S);
    EXPECT_EQ(S.disk_stores, 1u);
  }
  const uint8_t In[12] = {0, 1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11};
  const int32_t Indices[12] = {3, 2, 1, 0, 0, 0, 0, 0, -1, -1, -2, -4};
  uint8_t Out[12];
  ASSERT_EQ(gj_kernel_run(K, In, Indices, Out), GJ_OK);
  EXPECT_THAT(Out, ::testing::ElementsAre(3, 2, 1, 0, 4, 4, 4, 4, 11, 11, 10, 8));
  gj_kernel_release(K);

  CRuntime Again(&O);
  ASSERT_EQ(gj_compile(Again.R, &D, &K), GJ_OK);
  gj_cache_stats S;
  gj_runtime_stats(Again.R, &S);
  EXPECT_EQ(S.disk_loads, 1u);
  gj_kernel_release(K);
}

TEST(CApi, EpilogueFusedIntoTheKernel) {
  CRuntime RT;
  // FLOAT32 table gathered into FLOAT64 rows, scaled by a parameter.
  const uint64_t Table[2] = {3, 2}, Ids[1] = {2};
  gj_tensor_desc T = gj_tensor(GJ_FLOAT32, 2, Table), I = gj_tensor(GJ_INT64, 1, Ids);
  gj_descriptor D;
  ASSERT_EQ(gj_onnx_gather(&T, &I, 0, &D), GJ_OK) << gj_last_error();
  D.output.data_type = GJ_FLOAT64;
  const double Scale = -2;
  gj_epilogue E = {
      "double f(float x, const double *k) { return x * *k; }", "f", NULL, &Scale, sizeof Scale, 0};
  gj_kernel *K = nullptr;
  const gj_status S = gj_compile_epilogue(RT.R, &D, &E, &K);
  if (S == GJ_UNSUPPORTED)
    GTEST_SKIP() << gj_last_error();
  ASSERT_EQ(S, GJ_OK) << gj_last_error();
  const float In[6] = {1, 2, 3, 4, 5, 6};
  const int64_t Idx[2] = {2, -3};
  double Out[4] = {};
  ASSERT_EQ(gj_kernel_run(K, In, Idx, Out), GJ_OK) << gj_last_error();
  EXPECT_THAT(Out, ::testing::ElementsAre(-10, -12, -2, -4));
  gj_kernel_release(K);

  gj_epilogue Bad = {"double f(float x) { return x +; }", "f", "mine.c", NULL, 0, 0};
  EXPECT_EQ(gj_compile_epilogue(RT.R, &D, &Bad, &K), GJ_INVALID_ARGUMENT);
  EXPECT_STREQ(gj_last_error(), "mine.c:1:31: error: expected expression");
  EXPECT_EQ(K, nullptr);
  gj_epilogue NoSource = {NULL, "f", NULL, NULL, 0, 0};
  EXPECT_EQ(gj_compile_epilogue(RT.R, &D, &NoSource, &K), GJ_INVALID_ARGUMENT);
  EXPECT_THAT(gj_last_error(), ::testing::HasSubstr("epilogue->source"));
}

TEST(CApi, NewShapesRunTheGenericLoopAndHotOnesAreSpecialized) {
  gj_runtime_options O;
  gj_runtime_options_init(&O);
  EXPECT_EQ(O.specialize, GJ_SPECIALIZE_ADAPTIVE);
  EXPECT_EQ(O.cache_bytes, uint64_t(64) << 20);
  O.threads = 1;
  CRuntime RT(&O);
  const uint64_t Shape[2] = {8, 8};
  gj_tensor_desc Data = gj_tensor(GJ_FLOAT32, 2, Shape), Idx = gj_tensor(GJ_INT64, 2, Shape);
  gj_descriptor D;
  ASSERT_EQ(gj_onnx_gather_elements(&Data, &Idx, 1, &D), GJ_OK);
  std::vector<float> In(64), Out(64);
  std::vector<int64_t> Indices(64);
  for (int I = 0; I < 64; ++I) {
    In[I] = static_cast<float>(I);
    Indices[I] = (I * 5) % 8 - 4; // Negative ones count from the end.
  }
  gj_kernel *K;
  ASSERT_EQ(gj_compile(RT.R, &D, &K), GJ_OK);
  EXPECT_EQ(gj_kernel_tier_of(K), GJ_TIER_GENERIC);
  gj_cache_stats S;
  gj_runtime_stats(RT.R, &S);
  EXPECT_EQ(S.generic_entries, 1u);
  EXPECT_EQ(S.compile_ms, 0.0);
  for (int Run = 0; Run < 3; ++Run) {
    ASSERT_EQ(gj_kernel_run(K, In.data(), Indices.data(), Out.data()), GJ_OK);
    for (int I = 0; I < 64; ++I) {
      const int64_t J = Indices[I] < 0 ? Indices[I] + 8 : Indices[I];
      ASSERT_EQ(Out[I], In[I / 8 * 8 + J]) << "element " << I;
    }
  }
  gj_runtime_wait_background(RT.R);
  EXPECT_EQ(gj_kernel_tier_of(K), GJ_TIER_SPECIALIZED);
  gj_runtime_stats(RT.R, &S);
  EXPECT_EQ(S.specializations, 1u);
  EXPECT_EQ(S.generic_entries, 0u);
  EXPECT_GT(S.cache_bytes, 4096u);
  Indices[13] = 8;
  EXPECT_EQ(gj_kernel_run(K, In.data(), Indices.data(), Out.data()), GJ_INDEX_OUT_OF_RANGE);
  EXPECT_EQ(gj_last_error_position(), 13u);
  gj_kernel_release(K);

  gj_runtime_options Bad;
  gj_runtime_options_init(&Bad);
  setRaw(Bad.specialize, 7);
  gj_runtime *R = nullptr;
  EXPECT_EQ(gj_runtime_create(&Bad, &R), GJ_INVALID_ARGUMENT);
  EXPECT_THAT(gj_last_error(), HasSubstr("specialize = 7"));
  EXPECT_EQ(gj_kernel_tier_of(nullptr), GJ_TIER_SPECIALIZED);
}

namespace {

/// GatherElements of float32 [8] by int64 [8] reversing it, with the output
/// placed at \p OutAt floats into a buffer whose first 8 floats are the
/// input; every tier of the default runtime and the specialized kernel.
void reverseInPlace(gj_runtime *RT, size_t OutAt, gj_status RowsStatus) {
  SCOPED_TRACE("output at float " + std::to_string(OutAt));
  const uint64_t Sizes[] = {8};
  const gj_tensor_desc Data = gj_tensor(GJ_FLOAT32, 1, Sizes);
  const gj_tensor_desc Ids = gj_tensor(GJ_INT64, 1, Sizes);
  gj_descriptor D{};
  ASSERT_EQ(gj_onnx_gather_elements(&Data, &Ids, 0, &D), GJ_OK) << gj_last_error();
  gj_kernel *K = nullptr;
  ASSERT_EQ(gj_compile(RT, &D, &K), GJ_OK) << gj_last_error();
  std::vector<float> Buf(24);
  for (size_t I = 0; I < Buf.size(); ++I)
    Buf[I] = static_cast<float>(I);
  const std::vector<int64_t> Rev = {7, 6, 5, 4, 3, 2, 1, 0};
  std::vector<float> Want = Buf;
  for (size_t I = 0; I < 8; ++I)
    Want[OutAt + I] = static_cast<float>(7 - I);
  EXPECT_EQ(gj_kernel_run(K, Buf.data(), Rev.data(), Buf.data() + OutAt), GJ_OK) << gj_last_error();
  EXPECT_EQ(Buf, Want);
  // A row range cannot go through a temporary: refused when they overlap.
  std::vector<float> Again(24);
  for (size_t I = 0; I < Again.size(); ++I)
    Again[I] = static_cast<float>(I);
  EXPECT_EQ(
      gj_kernel_run_rows(K, Again.data(), Rev.data(), Again.data() + OutAt, 0, gj_kernel_rows(K)),
      RowsStatus);
  if (RowsStatus != GJ_OK)
    EXPECT_THAT(gj_last_error(), HasSubstr("overlaps"));
  else
    EXPECT_EQ(Again, Want);
  gj_kernel_release(K);
}

TEST(CApi, AnOutputOverlappingAnOperandGivesTheDisjointResult) {
  for (gj_specialize Mode : {GJ_SPECIALIZE_ADAPTIVE, GJ_SPECIALIZE_COMPILE}) {
    gj_runtime_options O;
    gj_runtime_options_init(&O);
    O.threads = 1;
    O.specialize = Mode;
    gj_runtime *RT = nullptr;
    ASSERT_EQ(gj_runtime_create(&O, &RT), GJ_OK) << gj_last_error();
    reverseInPlace(RT, 0, GJ_INVALID_ARGUMENT); // The same buffer.
    reverseInPlace(RT, 3, GJ_INVALID_ARGUMENT); // Partly the input's.
    reverseInPlace(RT, 8, GJ_OK);               // Adjacent: disjoint.
    reverseInPlace(RT, 16, GJ_OK);              // Disjoint.
    gj_runtime_destroy(RT);
  }
}

TEST(CApi, AnOutputOverlappingTheIndicesGivesTheDisjointResult) {
  gj_runtime_options O;
  gj_runtime_options_init(&O);
  O.threads = 1;
  gj_runtime *RT = nullptr;
  ASSERT_EQ(gj_runtime_create(&O, &RT), GJ_OK) << gj_last_error();
  // Gather of an int64 table [5, 2] by int64 ids [3], written over the ids
  // and the words after them.
  const uint64_t TableSizes[] = {5, 2}, IdSizes[] = {3};
  const gj_tensor_desc Table = gj_tensor(GJ_INT64, 2, TableSizes);
  const gj_tensor_desc Ids = gj_tensor(GJ_INT64, 1, IdSizes);
  gj_descriptor D{};
  ASSERT_EQ(gj_onnx_gather(&Table, &Ids, 0, &D), GJ_OK) << gj_last_error();
  gj_kernel *K = nullptr;
  ASSERT_EQ(gj_compile(RT, &D, &K), GJ_OK) << gj_last_error();
  const std::vector<int64_t> T = {10, 11, 20, 21, 30, 31, 40, 41, 50, 51};
  std::vector<int64_t> Buf = {4, 0, 2, -1, -1, -1};
  ASSERT_EQ(gj_kernel_run(K, T.data(), Buf.data(), Buf.data()), GJ_OK) << gj_last_error();
  EXPECT_EQ(Buf, (std::vector<int64_t>{50, 51, 10, 11, 30, 31}));
  // Under Check a bad index leaves an overlapping output as it was.
  Buf = {4, 9, 2, -1, -1, -1};
  EXPECT_EQ(gj_kernel_run(K, T.data(), Buf.data(), Buf.data()), GJ_INDEX_OUT_OF_RANGE);
  EXPECT_EQ(gj_last_error_position(), 1u);
  EXPECT_EQ(Buf, (std::vector<int64_t>{4, 9, 2, -1, -1, -1}));
  gj_kernel_release(K);
  gj_runtime_destroy(RT);
}

} // namespace
