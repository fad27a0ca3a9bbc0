//===- tools/gatherjit/Problem.h - Operands of a command -----------------===//
/// \file
/// Loads what one gatherjit command operates on: the validated descriptor
/// and the input and index buffers, from .npy files (ONNX commands) or a
/// descriptor JSON plus .npy buffers (`run`), and writes the output file.
//===----------------------------------------------------------------------===//
#ifndef GATHERJIT_TOOLS_PROBLEM_H
#define GATHERJIT_TOOLS_PROBLEM_H

#include "Npy.h"
#include "gatherjit/DescriptorJson.h"
#include "gatherjit/Onnx.h"
#include "runtime/System.h"

#include <optional>
#include <string>
#include <vector>

namespace gatherjit {

enum class ProblemSource { OnnxGatherElements, OnnxGather, OnnxGatherND, Json };

/// --epilogue FILE.c --epilogue-fn NAME [--epilogue-params FILE]
/// [--epilogue-row-out N]: a fused C epilogue (see addEpilogueFlags).
struct EpilogueFlags {
  std::string File, Function, Params;
  uint64_t RowOut = 0;
  bool Checked = false;
};

/// The epilogue \p F names, its files read; Function is empty if none.
Expected<Epilogue> readEpilogue(const EpilogueFlags &F);

struct OperandFlags {
  ProblemSource Kind = ProblemSource::OnnxGatherElements;
  std::string Data, Indices, DescPath, Out;
  /// --axis, or GatherND's --batch-dims.
  int64_t Axis = 0;
  std::string Oob = "check";
  EpilogueFlags Epilogue;
};

struct Problem {
  ValidDesc Desc;
  std::vector<char> Input, Indices;
  /// The output file's shape and dtype.
  std::vector<uint64_t> OutShape;
  std::string OutDescr;
  /// A fused epilogue (Function empty: none): Desc is the plain gather
  /// until fuse() retypes it.
  Epilogue Fused;
  uint64_t RowOut = 0;
  /// The ONNX node of an ONNX command (its tensors' shapes and strides; the
  /// buffers are Input and Indices): errors name its coordinates.
  std::optional<OnnxNode> Node;

  /// With an epilogue, the fused descriptor of \p K (compiled from Desc
  /// and Fused) in place of the plain one, and the output file's shape and
  /// dtype to match.
  void fuse(const ValidDesc &Fused);
  /// A buffer the descriptor's output sizes and strides fit in, checked
  /// against the machine's memory first; uninitialized.
  Expected<ByteBuffer> outputBuffer() const;
  /// \p S, an out-of-range index named in the ONNX node's terms where the
  /// problem is one.
  Status inUserTerms(Status S) const;
  /// Writes \p Buffer to \p File as a row-major .npy (packing it only if
  /// the output is strided) and commits the file.
  Status writeOutput(AtomicFile &File, const ByteBuffer &Buffer) const;
};

/// Reads and validates the operands. Every failure is InvalidArgument or
/// Unsupported naming the flag, file or field at fault.
Expected<Problem> loadProblem(const OperandFlags &Flags);

/// The ONNX operator of a command other than `run` (Json).
OpKind onnxOp(ProblemSource Kind);

/// Reads and parses a descriptor JSON file (at most MaxDescriptorBytes);
/// errors name the file.
Expected<JsonDescriptor> readDescriptorFile(const std::string &Path);

} // namespace gatherjit

#endif
