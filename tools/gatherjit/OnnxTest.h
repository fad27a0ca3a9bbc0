//===- tools/gatherjit/OnnxTest.h - `gatherjit onnx-test` ----------------===//
/// \file
/// Runs ONNX backend node-test directories (model.onnx, and
/// test_data_set_N/input_K.pb and output_K.pb as TensorProto files) whose
/// model is one Gather, GatherElements or GatherND node, through the JIT,
/// comparing the outputs bit for bit. One line per directory ("PASS name",
/// or "FAIL name: reason"), then "N passed, M failed".
///
/// It runs as its own program, gatherjit-onnx-test, which `gatherjit
/// onnx-test` executes from beside itself: the protobuf libraries it needs
/// would cost every other command about 3.4 ms of start-up (measured on an
/// empty program: 1.9 ms without them, 5.4 ms with them).
//===----------------------------------------------------------------------===//
#ifndef GATHERJIT_TOOLS_ONNXTEST_H
#define GATHERJIT_TOOLS_ONNXTEST_H

#include "gatherjit/Status.h"

#include <string>
#include <vector>

namespace gatherjit {

/// The program's name; `gatherjit onnx-test` runs it from its own directory.
constexpr const char *OnnxTestProgram = "gatherjit-onnx-test";

/// Runs every directory and prints the report on standard output. Returns
/// the command's exit status: 0 if every directory passed, 1 otherwise;
/// a runtime that cannot be created is an error (returned through \p Error).
int runOnnxTest(const std::vector<std::string> &Dirs, Status &Error);

} // namespace gatherjit

#endif
