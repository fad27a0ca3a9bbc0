//===- compiler/validate/DescriptorJson.cpp - Descriptor JSON ------------===//

#include "gatherjit/DescriptorJson.h"

#include <nlohmann/json.hpp>

#include <algorithm>
#include <optional>
#include <string_view>

namespace gatherjit {
namespace {

using nlohmann::json;

Status fieldError(const std::string &Field, const std::string &Msg) {
  return Status::invalidArgument("descriptor JSON: \"" + Field + "\" " + Msg);
}

/// A value as an error message shows it: scalars quoted and cut short,
/// arrays and objects by their kind (never dumped, however deep).
std::string shown(const json &Value) {
  if (Value.is_string())
    return quote(Value.get<std::string>(), 200, '"');
  if (Value.is_array())
    return "an array";
  if (Value.is_object())
    return "an object";
  return Value.dump();
}

/// The deepest nesting of arrays and objects in \p Text, stopping early
/// past \p Limit: a cheap scan before the recursive parser sees the text.
unsigned nestingDepth(std::string_view Text, unsigned Limit) {
  unsigned Depth = 0, Max = 0;
  bool InString = false, Escaped = false;
  for (char C : Text) {
    if (InString) {
      if (Escaped)
        Escaped = false;
      else if (C == '\\')
        Escaped = true;
      else if (C == '"')
        InString = false;
    } else if (C == '"') {
      InString = true;
    } else if (C == '[' || C == '{') {
      Max = std::max(Max, ++Depth);
      if (Max > Limit)
        return Max;
    } else if ((C == ']' || C == '}') && Depth > 0) {
      --Depth;
    }
  }
  return Max;
}

Status checkKeys(const json &Object, const std::string &Where,
                 std::initializer_list<const char *> Allowed) {
  for (auto It = Object.begin(); It != Object.end(); ++It) {
    bool Known = false;
    for (const char *Key : Allowed)
      Known |= It.key() == Key;
    if (!Known)
      return Status::invalidArgument("descriptor JSON: " + quote(Where + It.key(), 200, '"') +
                                     " is not a known field");
  }
  return Status::ok();
}

Status readUInt(const json &Value, const std::string &Field, uint64_t Max, uint64_t &Out) {
  if (!Value.is_number_integer())
    return fieldError(Field, "must be an integer, got " + shown(Value));
  if (Value.is_number_unsigned()) {
    Out = Value.get<uint64_t>();
  } else {
    int64_t V = Value.get<int64_t>();
    if (V < 0)
      return fieldError(Field, "= " + std::to_string(V) + " must be non-negative");
    Out = static_cast<uint64_t>(V);
  }
  if (Out > Max)
    return fieldError(Field, "= " + std::to_string(Out) + " exceeds " + std::to_string(Max));
  return Status::ok();
}

Status readUIntArray(const json &Value, const std::string &Field, std::vector<uint64_t> &Out) {
  if (!Value.is_array())
    return fieldError(Field, "must be an array of integers");
  if (Value.size() > 64)
    return fieldError(Field, "has " + std::to_string(Value.size()) + " entries");
  for (size_t I = 0; I < Value.size(); ++I) {
    uint64_t V;
    if (Status S = readUInt(Value[I], Field + "[" + std::to_string(I) + "]", UINT64_MAX, V); !S)
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
  if (Status S =
          checkKeys(Obj, P,
                    {"data_type", "sizes", "strides", "dimension_count",
                     "total_tensor_size_in_bytes", "flags", "guaranteed_base_offset_alignment"});
      !S)
    return S;
  auto Type = Obj.find("data_type");
  if (Type == Obj.end() || !Type->is_string())
    return fieldError(P + "data_type", "must be a string such as \"FLOAT32\"");
  std::optional<DataType> DT = parseDataType(Type->get<std::string>());
  if (!DT || *DT == DataType::Opaque)
    return fieldError(P + "data_type", "= " + shown(*Type) + " is not a known data type");
  T.Type = *DT;
  auto Sizes = Obj.find("sizes");
  if (Sizes == Obj.end())
    return fieldError(P + "sizes", "is missing");
  if (Status S = readUIntArray(*Sizes, P + "sizes", T.Sizes); !S)
    return S;
  if (auto Count = Obj.find("dimension_count"); Count != Obj.end()) {
    uint64_t N;
    if (Status S = readUInt(*Count, P + "dimension_count", UINT32_MAX, N); !S)
      return S;
    if (N != T.Sizes.size())
      return fieldError(P + "dimension_count", "= " + std::to_string(N) + " but \"" + P +
                                                   "sizes\" has " + std::to_string(T.Sizes.size()) +
                                                   " entries");
  }
  if (auto Strides = Obj.find("strides"); Strides != Obj.end()) {
    T.Strides.emplace();
    if (Status S = readUIntArray(*Strides, P + "strides", *T.Strides); !S)
      return S;
  }
  // DML_BUFFER_TENSOR_DESC's other members: the buffer's size, which the
  // sizes and strides must stay inside (validation checks it), and two
  // that change nothing here but must be what DirectML allows.
  if (auto Total = Obj.find("total_tensor_size_in_bytes"); Total != Obj.end()) {
    uint64_t Bytes;
    if (Status S = readUInt(*Total, P + "total_tensor_size_in_bytes", UINT64_MAX, Bytes); !S)
      return S;
    T.TotalBytes = Bytes;
  }
  if (auto Flags = Obj.find("flags"); Flags != Obj.end()) {
    uint64_t F;
    if (Status S = readUInt(*Flags, P + "flags", 1, F); !S)
      return S; // DML_TENSOR_FLAG_NONE (0) or DML_TENSOR_FLAG_OWNED_BY_DML (1).
  }
  if (auto Align = Obj.find("guaranteed_base_offset_alignment"); Align != Obj.end()) {
    uint64_t A;
    if (Status S = readUInt(*Align, P + "guaranteed_base_offset_alignment", UINT64_MAX, A); !S)
      return S;
    if (A & (A - 1))
      return fieldError(P + "guaranteed_base_offset_alignment",
                        "= " + std::to_string(A) + " must be 0 or a power of two");
  }
  return Status::ok();
}

/// DirectML's own names of the fields (its operator descs' members and
/// DML_BUFFER_TENSOR_DESC's), as a descriptor serialized from those
/// structs has them, and this format's.
constexpr std::pair<const char *, const char *> DmlFields[] = {
    {"Axis", "axis"},
    {"IndexDimensions", "index_dimensions"},
    {"InputDimensionCount", "input_dimension_count"},
    {"IndicesDimensionCount", "indices_dimension_count"},
    {"BatchDimensionCount", "batch_dimension_count"},
    {"InputTensor", "input"},
    {"IndicesTensor", "indices"},
    {"OutputTensor", "output"}};
constexpr std::pair<const char *, const char *> DmlTensorFields[] = {
    {"DataType", "data_type"},
    {"Sizes", "sizes"},
    {"Strides", "strides"},
    {"DimensionCount", "dimension_count"},
    {"TotalTensorSizeInBytes", "total_tensor_size_in_bytes"},
    {"Flags", "flags"},
    {"GuaranteedBaseOffsetAlignment", "guaranteed_base_offset_alignment"}};

/// Renames \p Object's fields spelled as DirectML spells them (\p Names)
/// to this format's; a field given both ways is an error.
template <size_t N>
Status renameFields(json &Object, const std::string &Where,
                    const std::pair<const char *, const char *> (&Names)[N]) {
  for (const auto &[Dml, Ours] : Names) {
    auto It = Object.find(Dml);
    if (It == Object.end())
      continue;
    if (Object.contains(Ours))
      return Status::invalidArgument("descriptor JSON: " + quote(Where + Dml, 200, '"') + " and " +
                                     quote(Where + Ours, 200, '"') +
                                     " are the same field, given twice");
    json Value = std::move(*It);
    Object.erase(It);
    Object[Ours] = std::move(Value);
  }
  return Status::ok();
}

/// \p Value without \p Prefix, where it is a string that begins with it.
void dropPrefix(json &Value, std::string_view Prefix) {
  if (Value.is_string() && Value.get_ref<const std::string &>().rfind(Prefix, 0) == 0)
    Value = Value.get<std::string>().substr(Prefix.size());
}

/// A descriptor written with DirectML's names (DmlFields, DmlTensorFields,
/// and DML_OPERATOR_*, DML_TENSOR_DATA_TYPE_* and DML_TENSOR_FLAG_* values)
/// in this format's.
Status fromDmlSpelling(json &Root) {
  if (Status S = renameFields(Root, "", DmlFields); !S)
    return S;
  for (const char *Tensor : {"input", "indices", "output"})
    if (auto It = Root.find(Tensor); It != Root.end() && It->is_object()) {
      if (Status S = renameFields(*It, std::string(Tensor) + ".", DmlTensorFields); !S)
        return S;
      if (auto Type = It->find("data_type"); Type != It->end())
        dropPrefix(*Type, "DML_TENSOR_DATA_TYPE_");
      if (auto Flags = It->find("flags"); Flags != It->end() && Flags->is_string()) {
        if (*Flags == "DML_TENSOR_FLAG_NONE")
          *Flags = 0;
        else if (*Flags == "DML_TENSOR_FLAG_OWNED_BY_DML")
          *Flags = 1;
      }
    }
  if (auto Op = Root.find("operator"); Op != Root.end())
    dropPrefix(*Op, "DML_OPERATOR_");
  return Status::ok();
}

/// \p Text parsed: within the limits, valid JSON, an object at the top,
/// no key twice in one object.
Expected<json> parseStrict(std::string_view Text) {
  if (Text.size() > MaxDescriptorBytes)
    return Status::invalidArgument("descriptor JSON: " + std::to_string(Text.size()) +
                                   " bytes; a descriptor has at most " +
                                   std::to_string(MaxDescriptorBytes));
  if (unsigned Depth = nestingDepth(Text, MaxDescriptorDepth); Depth > MaxDescriptorDepth)
    return Status::invalidArgument("descriptor JSON: nested more than " +
                                   std::to_string(MaxDescriptorDepth) +
                                   " levels deep; a descriptor has three");
  // The parser keeps the last of duplicate keys; a descriptor must not have
  // any, so the first one is noted (the callback cannot stop the parse).
  std::vector<std::vector<std::string>> KeysSeen;
  std::optional<std::string> Duplicate;
  json::parser_callback_t NoteKeys = [&](int, json::parse_event_t Event, json &Parsed) {
    if (Event == json::parse_event_t::object_start) {
      KeysSeen.emplace_back();
    } else if (Event == json::parse_event_t::object_end) {
      KeysSeen.pop_back();
    } else if (Event == json::parse_event_t::key && !KeysSeen.empty()) {
      std::vector<std::string> &Keys = KeysSeen.back();
      const std::string &Key = Parsed.get_ref<const std::string &>();
      if (!Duplicate && std::find(Keys.begin(), Keys.end(), Key) != Keys.end())
        Duplicate = Key;
      Keys.push_back(Key);
    }
    return true;
  };
  json Root = json::parse(Text.begin(), Text.end(), NoteKeys, /*allow_exceptions=*/false);
  if (Root.is_discarded())
    return Status::invalidArgument("descriptor JSON: not valid JSON");
  if (Duplicate)
    return Status::invalidArgument("descriptor JSON: the key " + quote(*Duplicate) +
                                   " appears twice in one object");
  if (!Root.is_object())
    return Status::invalidArgument("descriptor JSON: the top level must be an object");
  return Root;
}

/// The operator and the fields that depend on it: its axis and index
/// dimensions into \p D, GATHER_ND's dimension counts (where given) into
/// \p Counts.
Status readOperator(const json &Root, JsonDescriptor &D, std::optional<uint64_t> (&Counts)[3]) {
  const char *const Operators =
      "must be \"GATHER_ELEMENTS\", \"GATHER\", \"GATHER_ND\" or \"GATHER_ND1\"";
  auto Op = Root.find("operator");
  if (Op == Root.end() || !Op->is_string())
    return fieldError("operator", Operators);
  if (*Op == "GATHER_ELEMENTS")
    D.Op = OpKind::GatherElements;
  else if (*Op == "GATHER")
    D.Op = OpKind::Gather;
  else if (*Op == "GATHER_ND" || *Op == "GATHER_ND1")
    D.Op = OpKind::GatherND;
  else
    return fieldError("operator", "= " + shown(*Op) + " " + Operators);
  for (const char *Field : {"input_dimension_count", "indices_dimension_count"})
    if (D.Op != OpKind::GatherND && Root.contains(Field))
      return fieldError(Field, "applies to GATHER_ND and GATHER_ND1 only");
  if (*Op != "GATHER_ND1" && Root.contains("batch_dimension_count"))
    return fieldError("batch_dimension_count", "applies to GATHER_ND1 only");
  // GATHER_ND's dimension counts where given (else the tensors' own, and
  // no batches).
  if (D.Op == OpKind::GatherND) {
    for (const char *Field : {"axis", "index_dimensions"})
      if (Root.contains(Field))
        return fieldError(Field, "does not apply to " + Op->get<std::string>());
    const char *Fields[] = {"input_dimension_count", "indices_dimension_count",
                            "batch_dimension_count"};
    for (int I = 0; I < 3; ++I)
      if (auto It = Root.find(Fields[I]); It != Root.end()) {
        uint64_t V;
        if (Status S = readUInt(*It, Fields[I], UINT32_MAX, V); !S)
          return S;
        Counts[I] = V;
      }
  }
  uint64_t Axis = 0;
  auto AxisIt = Root.find("axis");
  if (AxisIt == Root.end() && D.Op != OpKind::GatherND)
    return fieldError("axis", "is missing");
  if (AxisIt != Root.end())
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
  } else if (D.Op == OpKind::GatherElements) {
    if (IndexDims != Root.end())
      return fieldError("index_dimensions", "applies to GATHER only");
    D.GatherElements.Axis = static_cast<uint32_t>(Axis);
  }
  return Status::ok();
}

/// feature_level and oob.
Status readOptions(const json &Root, ValidateOptions &Options) {
  if (auto Level = Root.find("feature_level"); Level != Root.end()) {
    std::optional<FeatureLevel> L;
    if (Level->is_string())
      L = parseFeatureLevel(Level->get<std::string>());
    if (!L)
      return fieldError("feature_level", "= " + shown(*Level) +
                                             " is unknown; use \"1_0\", \"2_1\", "
                                             "\"3_0\" or \"4_1\"");
    Options.Level = L;
  }
  if (auto Oob = Root.find("oob"); Oob != Root.end()) {
    std::optional<OobPolicy> Policy;
    if (Oob->is_string())
      Policy = parseOobPolicy(Oob->get<std::string>());
    if (!Policy)
      return fieldError("oob", "= " + shown(*Oob) + " must be \"check\", \"clamp\" or \"clip\"");
    Options.Policy = *Policy;
  }
  return Status::ok();
}

} // namespace

Expected<JsonDescriptor> parseDescriptorJson(std::string_view Text) {
  Expected<json> Parsed = parseStrict(Text);
  if (!Parsed)
    return Parsed.status();
  json &Root = *Parsed;
  if (Status S = fromDmlSpelling(Root); !S)
    return S;
  if (Status S = checkKeys(Root, "",
                           {"operator", "axis", "index_dimensions", "input_dimension_count",
                            "indices_dimension_count", "batch_dimension_count", "feature_level",
                            "oob", "input", "indices", "output"});
      !S)
    return S;
  JsonDescriptor D;
  D.Options.Policy = OobPolicy::Clamp;
  std::optional<uint64_t> Counts[3];
  if (Status S = readOperator(Root, D, Counts); !S)
    return S;
  if (Status S = readOptions(Root, D.Options); !S)
    return S;
  if (Status S = readTensor(Root, "input", D.input()); !S)
    return S;
  if (Status S = readTensor(Root, "indices", D.indices()); !S)
    return S;
  if (Status S = readTensor(Root, "output", D.output()); !S)
    return S;
  if (D.Op == OpKind::GatherND) {
    D.GatherND.InputDimensionCount =
        static_cast<uint32_t>(Counts[0].value_or(D.GatherND.Input.rank()));
    D.GatherND.IndicesDimensionCount =
        static_cast<uint32_t>(Counts[1].value_or(D.GatherND.Indices.rank()));
    D.GatherND.BatchDimensionCount = static_cast<uint32_t>(Counts[2].value_or(0));
  }
  return D;
}

} // namespace gatherjit
