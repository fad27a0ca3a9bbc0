//===- tools/gatherjit/DescJson.cpp - Descriptor JSON --------------------===//

#include "DescJson.h"

#include <nlohmann/json.hpp>

namespace gatherjit {
namespace {

using nlohmann::json;

Status fieldError(const std::string &Field, const std::string &Msg) {
  return Status::invalidArgument("descriptor JSON: \"" + Field + "\" " + Msg);
}

Status checkKeys(const json &Object, const std::string &Where,
                 std::initializer_list<const char *> Allowed) {
  for (auto It = Object.begin(); It != Object.end(); ++It) {
    bool Known = false;
    for (const char *Key : Allowed)
      Known |= It.key() == Key;
    if (!Known)
      return fieldError(Where + It.key(), "is not a known field");
  }
  return Status::ok();
}

Status readUInt(const json &Value, const std::string &Field, uint64_t Max,
                uint64_t &Out) {
  if (!Value.is_number_integer())
    return fieldError(Field, "must be an integer, got " + Value.dump());
  if (Value.is_number_unsigned()) {
    Out = Value.get<uint64_t>();
  } else {
    int64_t V = Value.get<int64_t>();
    if (V < 0)
      return fieldError(Field, "= " + std::to_string(V) + " must be non-negative");
    Out = static_cast<uint64_t>(V);
  }
  if (Out > Max)
    return fieldError(Field, "= " + std::to_string(Out) + " exceeds " +
                                 std::to_string(Max));
  return Status::ok();
}

Status readUIntArray(const json &Value, const std::string &Field,
                     std::vector<uint64_t> &Out) {
  if (!Value.is_array())
    return fieldError(Field, "must be an array of integers");
  if (Value.size() > 64)
    return fieldError(Field, "has " + std::to_string(Value.size()) + " entries");
  for (size_t I = 0; I < Value.size(); ++I) {
    uint64_t V;
    if (Status S = readUInt(Value[I], Field + "[" + std::to_string(I) + "]",
                            UINT64_MAX, V);
        !S)
      return S;
    Out.push_back(V);
  }
  return Status::ok();
}

Status readTensor(const json &Root, const char *Name, TensorDesc &T) {
  auto It = Root.find(Name);
  if (It == Root.end())
    return fieldError(Name, "is missing");
  const json &Obj = *It;
  const std::string P = std::string(Name) + ".";
  if (!Obj.is_object())
    return fieldError(Name, "must be an object");
  if (Status S = checkKeys(Obj, P, {"data_type", "sizes", "strides"}); !S)
    return S;
  auto Type = Obj.find("data_type");
  if (Type == Obj.end() || !Type->is_string())
    return fieldError(P + "data_type", "must be a string such as \"FLOAT32\"");
  std::optional<DataType> DT = parseDataType(Type->get<std::string>());
  if (!DT || *DT == DataType::Opaque)
    return fieldError(P + "data_type", "= \"" + Type->get<std::string>() +
                                           "\" is not a known data type");
  T.Type = *DT;
  auto Sizes = Obj.find("sizes");
  if (Sizes == Obj.end())
    return fieldError(P + "sizes", "is missing");
  if (Status S = readUIntArray(*Sizes, P + "sizes", T.Sizes); !S)
    return S;
  if (auto Strides = Obj.find("strides"); Strides != Obj.end()) {
    T.Strides.emplace();
    if (Status S = readUIntArray(*Strides, P + "strides", *T.Strides); !S)
      return S;
  }
  return Status::ok();
}

} // namespace

Expected<ValidDesc> JsonDescriptor::validate() const {
  return Op == OpKind::Gather ? gatherjit::validate(Gather, Options)
                              : gatherjit::validate(GatherElements, Options);
}

Expected<JsonDescriptor> parseDescriptorJson(std::string_view Text) {
  json Root = json::parse(Text.begin(), Text.end(), nullptr,
                          /*allow_exceptions=*/false);
  if (Root.is_discarded())
    return Status::invalidArgument("descriptor JSON: not valid JSON");
  if (!Root.is_object())
    return Status::invalidArgument("descriptor JSON: the top level must be an object");
  if (Status S = checkKeys(Root, "",
                           {"operator", "axis", "index_dimensions",
                            "feature_level", "oob", "input", "indices", "output"});
      !S)
    return S;
  JsonDescriptor D;
  D.Options.Policy = OobPolicy::Clamp;
  auto Op = Root.find("operator");
  if (Op == Root.end() || !Op->is_string())
    return fieldError("operator", "must be \"GATHER_ELEMENTS\" or \"GATHER\"");
  if (*Op == "GATHER_ELEMENTS")
    D.Op = OpKind::GatherElements;
  else if (*Op == "GATHER")
    D.Op = OpKind::Gather;
  else
    return fieldError("operator", "= " + Op->dump() +
                                      " must be \"GATHER_ELEMENTS\" or \"GATHER\"");
  uint64_t Axis = 0;
  auto AxisIt = Root.find("axis");
  if (AxisIt == Root.end())
    return fieldError("axis", "is missing");
  if (Status S = readUInt(*AxisIt, "axis", UINT32_MAX, Axis); !S)
    return S;
  auto IndexDims = Root.find("index_dimensions");
  if (D.Op == OpKind::Gather) {
    if (IndexDims == Root.end())
      return fieldError("index_dimensions", "is missing (GATHER needs it)");
    uint64_t K;
    if (Status S = readUInt(*IndexDims, "index_dimensions", UINT32_MAX, K); !S)
      return S;
    D.Gather.Axis = static_cast<uint32_t>(Axis);
    D.Gather.IndexDimensions = static_cast<uint32_t>(K);
  } else {
    if (IndexDims != Root.end())
      return fieldError("index_dimensions", "applies to GATHER only");
    D.GatherElements.Axis = static_cast<uint32_t>(Axis);
  }
  if (auto Level = Root.find("feature_level"); Level != Root.end()) {
    std::optional<FeatureLevel> L;
    if (Level->is_string())
      L = parseFeatureLevel(Level->get<std::string>());
    if (!L)
      return fieldError("feature_level", "= " + Level->dump() +
                                             " is unknown; use \"1_0\", \"2_1\", "
                                             "\"3_0\" or \"4_1\"");
    D.Options.Level = L;
  }
  if (auto Oob = Root.find("oob"); Oob != Root.end()) {
    if (*Oob == "check")
      D.Options.Policy = OobPolicy::Check;
    else if (*Oob == "clamp")
      D.Options.Policy = OobPolicy::Clamp;
    else
      return fieldError("oob", "= " + Oob->dump() + " must be \"check\" or \"clamp\"");
  }
  if (Status S = readTensor(Root, "input", D.input()); !S)
    return S;
  if (Status S = readTensor(Root, "indices", D.indices()); !S)
    return S;
  if (Status S = readTensor(Root, "output", D.output()); !S)
    return S;
  return D;
}

} // namespace gatherjit
