//===- compiler/validate/NpyDtype.cpp - numpy dtype strings --------------===//

#include "gatherjit/NpyDtype.h"

#include <algorithm>
#include <cctype>

namespace gatherjit {
namespace {

/// The numeric type of kind \p Kind ('f', 'i', 'u', 'b', 'c', 'V') and
/// \p Size bytes, if gatherjit has one.
std::optional<DataType> numericType(char Kind, unsigned Size) {
  switch (Kind) {
  case 'f':
    if (Size == 2)
      return DataType::Float16;
    if (Size == 4)
      return DataType::Float32;
    if (Size == 8)
      return DataType::Float64;
    break;
  case 'i':
    if (Size == 1)
      return DataType::Int8;
    if (Size == 2)
      return DataType::Int16;
    if (Size == 4)
      return DataType::Int32;
    if (Size == 8)
      return DataType::Int64;
    break;
  case 'u':
    if (Size == 1)
      return DataType::UInt8;
    if (Size == 2)
      return DataType::UInt16;
    if (Size == 4)
      return DataType::UInt32;
    if (Size == 8)
      return DataType::UInt64;
    break;
  case 'b':
    if (Size == 1)
      return DataType::Bool;
    break;
  case 'c':
    if (Size == 8)
      return DataType::Complex64;
    if (Size == 16)
      return DataType::Complex128;
    break;
  case 'V':
    if (Size == 2)
      return DataType::BFloat16;
    break;
  default:
    break;
  }
  return std::nullopt;
}

} // namespace

Expected<NpyDtype> parseNpyDescr(const std::string &Descr) {
  if (Descr.size() < 2)
    return Status::invalidArgument("dtype " + quote(Descr) + " is too short");
  const char Order = Descr[0], Kind = Descr[1];
  if (Order != '<' && Order != '>' && Order != '|' && Order != '=')
    return Status::invalidArgument("dtype " + quote(Descr) + " has an unknown byte order");
  if (Kind == 'O')
    return Status::invalidArgument("object .npy arrays (pickles) are not supported; dtype " +
                                   quote(Descr));
  const std::string Digits = Descr.substr(2);
  if (Digits.empty() || Digits.size() > 6 || !std::all_of(Digits.begin(), Digits.end(), [](char C) {
        return std::isdigit(static_cast<unsigned char>(C));
      }))
    return Status::invalidArgument("unsupported .npy dtype " + quote(Descr));
  const unsigned Size = static_cast<unsigned>(std::stoul(Digits));
  NpyDtype D;
  if (std::optional<DataType> T = numericType(Kind, Size)) {
    D.Type = *T;
    D.ElementBytes = dataTypeSize(*T);
    D.BigEndian = Order == '>';
    D.Descr = npyDescr(*T);
    return D;
  }
  if ((Kind == 'S' || Kind == 'U') && Size > 0) {
    // Strings are moved as opaque bytes, never interpreted, so they keep
    // their byte order and dtype string.
    D.Type = DataType::Opaque;
    D.ElementBytes = Kind == 'S' ? Size : 4 * Size;
    D.Descr = Descr;
    return D;
  }
  return Status::invalidArgument("unsupported .npy dtype " + quote(Descr));
}

std::string npyDescr(DataType Type) {
  switch (Type) {
  case DataType::Float64:
    return "<f8";
  case DataType::Float32:
    return "<f4";
  case DataType::Float16:
    return "<f2";
  case DataType::Int64:
    return "<i8";
  case DataType::Int32:
    return "<i4";
  case DataType::Int16:
    return "<i2";
  case DataType::Int8:
    return "|i1";
  case DataType::UInt64:
    return "<u8";
  case DataType::UInt32:
    return "<u4";
  case DataType::UInt16:
    return "<u2";
  case DataType::UInt8:
    return "|u1";
  case DataType::BFloat16:
    return "<V2";
  case DataType::Bool:
    return "|b1";
  case DataType::Complex64:
    return "<c8";
  case DataType::Complex128:
    return "<c16";
  case DataType::Opaque:
    return "";
  }
  return "";
}

} // namespace gatherjit
