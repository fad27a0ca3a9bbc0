//===- tools/gatherjit/OnnxTestMain.cpp - gatherjit-onnx-test ------------===//
//
// gatherjit-onnx-test DIR...: what `gatherjit onnx-test DIR...` runs (see
// OnnxTest.h). Exit status 0 if every directory passed, 1 otherwise, 2 for
// no directory.
//
//===----------------------------------------------------------------------===//

#include "OnnxTest.h"
#include "runtime/System.h"

#include <cstdio>

int main(int Argc, char **Argv) {
  using namespace gatherjit;
  if (Argc < 2) {
    std::fprintf(stderr, "error: onnx-test: give one or more test directories\n");
    return 2;
  }
  Status Error = Status::ok();
  const int Code = runOnnxTest(std::vector<std::string>(Argv + 1, Argv + Argc), Error);
  if (!Error) {
    std::fprintf(stderr, "error: %s\n", Error.message().c_str());
    return 1;
  }
  return Code;
}
