//===- compiler/validate/Onnx.cpp - ONNX gather nodes --------------------===//

#include "gatherjit/Onnx.h"

namespace gatherjit {

ValidateOptions OnnxDesc::options(OobPolicy Policy) const {
  ValidateOptions Options;
  Options.Policy = Policy;
  Options.AllowSmallerIndices = Op == OpKind::GatherElements;
  return Options;
}

Expected<OnnxDesc> onnxDesc(const OnnxNode &Node) {
  OnnxDesc D;
  D.Op = Node.Op;
  switch (Node.Op) {
  case OpKind::GatherElements: {
    Expected<GatherElementsDesc> G = onnxGatherElements(Node.Data, Node.Indices, Node.Axis);
    if (!G)
      return G.status();
    D.GatherElements = G.take();
    D.OutputShape = Node.Indices.Sizes;
    return D;
  }
  case OpKind::Gather: {
    Expected<GatherDesc> G = onnxGather(Node.Data, Node.Indices, Node.Axis);
    if (!G)
      return G.status();
    D.Gather = G.take();
    const int64_t Rank = static_cast<int64_t>(Node.Data.rank());
    D.OutputShape =
        onnxGatherOutputShape(Node.Data.Sizes, Node.Indices.Sizes,
                              static_cast<unsigned>(Node.Axis < 0 ? Node.Axis + Rank : Node.Axis));
    return D;
  }
  case OpKind::GatherND: {
    Expected<GatherNDDesc> G = onnxGatherND(Node.Data, Node.Indices, Node.Axis);
    if (!G)
      return G.status();
    D.GatherND = G.take();
    D.OutputShape = onnxGatherNDOutputShape(Node.Data.Sizes, Node.Indices.Sizes,
                                            static_cast<unsigned>(Node.Axis));
    return D;
  }
  }
  return Status::internal("unknown operator");
}

Expected<ValidDesc> validateOnnx(const OnnxNode &Node, OobPolicy Policy) {
  Expected<OnnxDesc> D = onnxDesc(Node);
  if (!D)
    return D.status();
  return D->validate(Policy);
}

} // namespace gatherjit
