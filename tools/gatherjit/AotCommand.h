//===- tools/gatherjit/AotCommand.h - gatherjit aot ----------------------===//
/// \file
/// `gatherjit aot`: kernels compiled ahead of time into one object file and
/// one C header. Shapes and types come from flags (one kernel) or from
/// descriptor JSON files (--desc, repeatable), each kernel named by --name.
//===----------------------------------------------------------------------===//
#ifndef GATHERJIT_TOOLS_AOTCOMMAND_H
#define GATHERJIT_TOOLS_AOTCOMMAND_H

#include "Problem.h"
#include "gatherjit/Status.h"

#include <CLI/CLI.hpp>

#include <string>
#include <vector>

namespace gatherjit {

struct AotFlags {
  std::string Operator = "gather-elements";
  std::vector<std::string> Positional;
  std::string DataShape, DataType = "FLOAT32", IndicesShape, IndicesType = "INT64";
  std::string DataStrides, IndicesStrides;
  int64_t Axis = 0;
  int64_t BatchDims = 0;
  std::string Oob = "check";
  std::vector<std::string> Descs, Names;
  std::string Triple, Cpu, Features, Opt = "O2";
  std::string Object, Header;
  /// A fused epilogue for every kernel of the object.
  EpilogueFlags Epilogue;
};

CLI::App *addAotCommand(CLI::App &App, AotFlags &F);
/// Compiles and writes the object (and header); both or neither.
Status runAot(const AotFlags &F);

} // namespace gatherjit

#endif
