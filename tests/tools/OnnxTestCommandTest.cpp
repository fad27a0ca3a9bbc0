//===- tests/tools/OnnxTestCommandTest.cpp - `gatherjit onnx-test` -------===//
//
// The official node tests where Debian's libonnx-testdata is installed, and
// directories written here with ONNX's own protobuf classes: a GatherND with
// batch dimensions in typed fields, indices from Constant nodes, a wrong
// expected output, another operator, a corrupt model.
//
//===----------------------------------------------------------------------===//

#include "CliTestUtil.h"

#include <onnx/onnx_pb.h>

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <sys/stat.h>

using namespace gatherjit::test;
using ::testing::HasSubstr;

namespace {

namespace fs = std::filesystem;

void writeProto(const fs::path &Path, const google::protobuf::MessageLite &M) {
  std::string Bytes;
  ASSERT_TRUE(M.SerializeToString(&Bytes));
  spit(Path.string(), Bytes);
}

onnx::TensorProto int64Tensor(const std::vector<int64_t> &Dims,
                              const std::vector<int64_t> &Values) {
  onnx::TensorProto T;
  T.set_data_type(onnx::TensorProto::INT64);
  for (int64_t D : Dims)
    T.add_dims(D);
  for (int64_t V : Values)
    T.add_int64_data(V);
  return T;
}

onnx::TensorProto floatTensor(const std::vector<int64_t> &Dims, const std::vector<float> &Values) {
  onnx::TensorProto T;
  T.set_data_type(onnx::TensorProto::FLOAT);
  for (int64_t D : Dims)
    T.add_dims(D);
  for (float V : Values)
    T.add_float_data(V);
  return T;
}

/// A node-test directory: a model of one \p Op node over inputs "data" and
/// "indices" with an integer attribute, and one data set.
void writeTest(const fs::path &Dir, const std::string &Op, const std::string &Attr, int64_t Value,
               const onnx::TensorProto &Data, const onnx::TensorProto &Indices,
               const onnx::TensorProto &Output) {
  fs::create_directories(Dir / "test_data_set_0");
  onnx::ModelProto M;
  M.set_ir_version(7);
  M.add_opset_import()->set_version(13);
  onnx::GraphProto *G = M.mutable_graph();
  onnx::NodeProto *N = G->add_node();
  N->set_op_type(Op);
  N->add_input("data");
  N->add_input("indices");
  N->add_output("y");
  if (!Attr.empty()) {
    onnx::AttributeProto *A = N->add_attribute();
    A->set_name(Attr);
    A->set_type(onnx::AttributeProto::INT);
    A->set_i(Value);
  }
  G->add_input()->set_name("data");
  G->add_input()->set_name("indices");
  G->add_output()->set_name("y");
  writeProto(Dir / "model.onnx", M);
  writeProto(Dir / "test_data_set_0" / "input_0.pb", Data);
  writeProto(Dir / "test_data_set_0" / "input_1.pb", Indices);
  writeProto(Dir / "test_data_set_0" / "output_0.pb", Output);
}

/// DirectML's GatherND1 example: 3 batches of 2x2, 2-tuples.
void writeBatchedGatherND(const fs::path &Dir, const std::vector<float> &Expected) {
  std::vector<float> Data(12);
  for (int I = 0; I < 12; ++I)
    Data[I] = static_cast<float>(I);
  writeTest(Dir, "GatherND", "batch_dims", 1, floatTensor({3, 2, 2}, Data),
            int64Tensor({3, 2, 2}, {0, 0, 1, 1, 1, 1, 0, 0, 0, 1, 1, 0}),
            floatTensor({3, 2}, Expected));
}

TEST(OnnxTestCommand, EveryOfficialGatherNodeTestPasses) {
  const fs::path Root = GATHERJIT_ONNX_NODE_TESTS;
  if (Root.empty() || !fs::is_directory(Root))
    GTEST_SKIP() << "libonnx-testdata is not installed";
  std::string Args = "onnx-test";
  int Count = 0;
  for (const auto &Entry : fs::directory_iterator(Root)) {
    const std::string Name = Entry.path().filename().string();
    if (Name.rfind("test_gather", 0) == 0) {
      Args += " " + Entry.path().string();
      ++Count;
    }
  }
  ASSERT_GE(Count, 10); // Gather, GatherElements and GatherND, 11-13.
  ScratchDir Dir;
  CliResult R = runCli(Dir, Args);
  EXPECT_EQ(R.Exit, 0) << R.Out;
  EXPECT_EQ(std::count(R.Out.begin(), R.Out.end(), '\n'), Count + 1);
  EXPECT_THAT(R.Out, HasSubstr("PASS test_gathernd_example_int32_batch_dim1\n"));
  EXPECT_THAT(R.Out, HasSubstr(std::to_string(Count) + " passed, 0 failed\n"));
}

TEST(OnnxTestCommand, TypedFieldsAndBatchDimensions) {
  ScratchDir Dir;
  writeBatchedGatherND(Dir.Path / "nd_batch", {0, 3, 7, 4, 9, 10});
  writeTest(Dir.Path / "ge_axis1", "GatherElements", "axis", 1, floatTensor({2, 2}, {1, 2, 3, 4}),
            int64Tensor({2, 2}, {0, 0, 1, -2}), floatTensor({2, 2}, {1, 1, 4, 3}));
  CliResult R = runCli(Dir, "onnx-test " + (Dir / "nd_batch") + " " + (Dir / "ge_axis1"));
  EXPECT_EQ(R.Exit, 0) << R.Out << R.Err;
  EXPECT_EQ(R.Out, "PASS nd_batch\nPASS ge_axis1\n2 passed, 0 failed\n");
}

/// A Gather over input "data" whose indices a Constant node makes from
/// \p Attr (value, value_ints or value_int), with \p Extra nodes before it.
void writeConstantGather(const fs::path &Dir, const onnx::AttributeProto &Attr,
                         const onnx::TensorProto &Data, const onnx::TensorProto &Output,
                         int Extra = 0) {
  fs::create_directories(Dir / "test_data_set_0");
  onnx::ModelProto M;
  M.set_ir_version(7);
  M.add_opset_import()->set_version(13);
  onnx::GraphProto *G = M.mutable_graph();
  onnx::NodeProto *C = G->add_node();
  C->set_op_type("Constant");
  C->add_output("indices");
  *C->add_attribute() = Attr;
  for (int I = 0; I < Extra; ++I) {
    onnx::NodeProto *N = G->add_node();
    N->set_op_type("Identity");
    N->add_input("data");
    N->add_output("copy" + std::to_string(I));
  }
  onnx::NodeProto *N = G->add_node();
  N->set_op_type("Gather");
  N->add_input("data");
  N->add_input("indices");
  N->add_output("y");
  G->add_input()->set_name("data");
  G->add_output()->set_name("y");
  writeProto(Dir / "model.onnx", M);
  writeProto(Dir / "test_data_set_0" / "input_0.pb", Data);
  writeProto(Dir / "test_data_set_0" / "output_0.pb", Output);
}

TEST(OnnxTestCommand, ConstantNodesFeedTheGatherAsInitializersDo) {
  // An exporter writes a fixed index as a Constant node: its value_ints is
  // a 1-d INT64 tensor, value_int a 0-d one, value any tensor.
  ScratchDir Dir;
  const onnx::TensorProto Data = floatTensor({3, 2}, {1, 2, 3, 4, 5, 6});
  onnx::AttributeProto Ints;
  Ints.set_name("value_ints");
  Ints.set_type(onnx::AttributeProto::INTS);
  Ints.add_ints(2);
  Ints.add_ints(-3);
  writeConstantGather(Dir.Path / "ints", Ints, Data, floatTensor({2, 2}, {5, 6, 1, 2}));
  onnx::AttributeProto One;
  One.set_name("value_int");
  One.set_type(onnx::AttributeProto::INT);
  One.set_i(1);
  writeConstantGather(Dir.Path / "int", One, Data, floatTensor({2}, {3, 4}));
  onnx::AttributeProto Tensor;
  Tensor.set_name("value");
  Tensor.set_type(onnx::AttributeProto::TENSOR);
  *Tensor.mutable_t() = int64Tensor({2, 1}, {-1, 0});
  writeConstantGather(Dir.Path / "tensor", Tensor, Data, floatTensor({2, 1, 2}, {5, 6, 1, 2}));
  writeConstantGather(Dir.Path / "two_nodes", Tensor, Data, floatTensor({2, 1, 2}, {5, 6, 1, 2}),
                      1);
  onnx::AttributeProto Strings;
  Strings.set_name("value_strings");
  Strings.set_type(onnx::AttributeProto::STRINGS);
  Strings.add_strings("a");
  writeConstantGather(Dir.Path / "strings", Strings, Data, floatTensor({1, 2}, {1, 2}));
  CliResult R =
      runCli(Dir, "onnx-test " + (Dir / "ints") + " " + (Dir / "int") + " " + (Dir / "tensor") +
                      " " + (Dir / "two_nodes") + " " + (Dir / "strings"));
  EXPECT_EQ(R.Exit, 1) << R.Err;
  EXPECT_EQ(R.Out, "PASS ints\nPASS int\nPASS tensor\n"
                   "FAIL two_nodes: the model has 2 nodes besides Constant ones; onnx-test runs "
                   "models of one gather node\n"
                   "FAIL strings: Constant: attribute 'value_strings' is not supported\n"
                   "3 passed, 2 failed\n");
}

TEST(OnnxTestCommand, FailuresAreOneLineEachAndTheRestStillRun) {
  ScratchDir Dir;
  writeBatchedGatherND(Dir.Path / "wrong", {0, 3, 7, 4, 9, 11}); // 10 is right.
  writeTest(Dir.Path / "test_add", "Add", "", 0, floatTensor({1}, {1}), floatTensor({1}, {2}),
            floatTensor({1}, {3}));
  writeBatchedGatherND(Dir.Path / "corrupt", {0, 3, 7, 4, 9, 10});
  spit((Dir.Path / "corrupt" / "model.onnx").string(), "\x08\xff\xff\xff garbage");
  writeBatchedGatherND(Dir.Path / "bad_index", {0, 3, 7, 4, 9, 10});
  writeProto(Dir.Path / "bad_index" / "test_data_set_0" / "input_1.pb",
             int64Tensor({3, 2, 2}, {0, 0, 1, 1, 1, 1, 0, 0, 0, 1, 1, 5}));
  writeBatchedGatherND(Dir.Path / "ok", {0, 3, 7, 4, 9, 10});
  CliResult R = runCli(Dir, "onnx-test " + (Dir / "wrong") + " " + (Dir / "test_add") + " " +
                                (Dir / "corrupt") + " " + (Dir / "missing") + " " +
                                (Dir / "bad_index") + " " + (Dir / "ok"));
  EXPECT_EQ(R.Exit, 1);
  EXPECT_EQ(R.Err, "");
  std::vector<std::string> Lines;
  std::istringstream In(R.Out);
  for (std::string Line; std::getline(In, Line);)
    Lines.push_back(Line);
  ASSERT_EQ(Lines.size(), 7u) << R.Out;
  EXPECT_EQ(Lines[0], "FAIL wrong: test_data_set_0: output[2,1]: got 10, expected 11");
  EXPECT_THAT(Lines[1], HasSubstr("FAIL test_add: "));
  EXPECT_THAT(Lines[1], HasSubstr("'Add'"));
  EXPECT_THAT(Lines[2], HasSubstr("FAIL corrupt: model.onnx: not a valid onnx.ModelProto"));
  EXPECT_THAT(Lines[3], HasSubstr("FAIL missing: "));
  EXPECT_THAT(Lines[4], HasSubstr("FAIL bad_index: test_data_set_0: GatherND: "));
  EXPECT_THAT(Lines[4], HasSubstr("(1, 5)"));
  EXPECT_EQ(Lines[5], "PASS ok");
  EXPECT_EQ(Lines[6], "1 passed, 5 failed");
}

TEST(OnnxTestCommand, ElementTypesNoGatherTakesAreNamedAsOnnxNamesThem) {
  ScratchDir Dir;
  onnx::TensorProto Float8;
  Float8.set_data_type(17); // FLOAT8E4M3FN, which ONNX's gathers do not take.
  Float8.add_dims(2);
  Float8.set_raw_data(std::string("\x38\x40", 2));
  writeTest(Dir.Path / "float8", "Gather", "axis", 0, Float8, int64Tensor({1}, {1}), Float8);
  onnx::TensorProto Undefined = floatTensor({1}, {1});
  Undefined.set_data_type(onnx::TensorProto::UNDEFINED);
  writeTest(Dir.Path / "undefined", "Gather", "axis", 0, Undefined, int64Tensor({1}, {0}),
            Undefined);
  Undefined.set_data_type(99);
  writeTest(Dir.Path / "unknown", "Gather", "axis", 0, Undefined, int64Tensor({1}, {0}), Undefined);
  CliResult R = runCli(Dir, "onnx-test " + (Dir / "float8") + " " + (Dir / "undefined") + " " +
                                (Dir / "unknown"));
  EXPECT_EQ(R.Exit, 1) << R.Err;
  EXPECT_THAT(R.Out, HasSubstr("FAIL float8: test_data_set_0: input_0.pb: element type "
                               "FLOAT8E4M3FN (17) is not one that ONNX's gathers take\n"));
  EXPECT_THAT(R.Out, HasSubstr("FAIL undefined: test_data_set_0: input_0.pb: element type "
                               "UNDEFINED (0) is not"));
  EXPECT_THAT(R.Out, HasSubstr("FAIL unknown: test_data_set_0: input_0.pb: element type 99 is "
                               "not"));
  EXPECT_THAT(R.Out, HasSubstr("0 passed, 3 failed"));
}

TEST(OnnxTestCommand, FifosAreRefusedAndNamesEscaped) {
  ScratchDir Dir;
  writeBatchedGatherND(Dir.Path / "fifo", {0, 3, 7, 4, 9, 10});
  const std::string Model = (Dir.Path / "fifo" / "model.onnx").string();
  std::filesystem::remove(Model);
  ASSERT_EQ(::mkfifo(Model.c_str(), 0600), 0);
  writeBatchedGatherND(Dir.Path / "ok\x1b[31m", {0, 3, 7, 4, 9, 10});
  CliResult R = runCli(Dir, "onnx-test " + (Dir / "fifo") + " '" + (Dir / "ok\x1b[31m") + "'");
  EXPECT_EQ(R.Exit, 1) << R.Err;
  EXPECT_THAT(R.Out, HasSubstr("FAIL fifo: 'model.onnx' is not a regular file"));
  EXPECT_THAT(R.Out, HasSubstr("PASS 'ok\\x1b[31m'"));
  EXPECT_EQ(R.Out.find('\x1b'), std::string::npos);
}

} // namespace
