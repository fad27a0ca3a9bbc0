//===- tools/gatherjit/OnnxTest.h - `gatherjit onnx-test` ----------------===//
/// \file
/// Runs ONNX backend node-test directories (model.onnx, and
/// test_data_set_N/input_K.pb and output_K.pb as TensorProto files) whose
/// model is one Gather, GatherElements or GatherND node, through the JIT,
/// comparing the outputs bit for bit. One line per directory ("PASS name",
/// or "FAIL name: reason"), then "N passed, M failed".
//===----------------------------------------------------------------------===//
#ifndef GATHERJIT_TOOLS_ONNXTEST_H
#define GATHERJIT_TOOLS_ONNXTEST_H

#include "gatherjit/Status.h"

#include <string>
#include <vector>

namespace CLI {
class App;
} // namespace CLI

namespace gatherjit {

struct OnnxTestFlags {
  std::vector<std::string> Dirs;
};

CLI::App *addOnnxTestCommand(CLI::App &App, OnnxTestFlags &Flags);

/// Runs every directory and prints the report on standard output. Returns
/// the command's exit status: 0 if every directory passed, 1 otherwise;
/// a runtime that cannot be created is an error (returned through \p Error).
int runOnnxTest(const OnnxTestFlags &Flags, Status &Error);

} // namespace gatherjit

#endif
