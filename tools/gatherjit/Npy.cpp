//===- tools/gatherjit/Npy.cpp - numpy .npy files ------------------------===//

#include "Npy.h"

#include "runtime/System.h"

#include <algorithm>
#include <cctype>
#include <cerrno>
#include <cstdio>
#include <cstring>

namespace gatherjit {
namespace {

constexpr size_t MaxHeaderBytes = 1 << 20;

Status bad(const std::string &Msg) { return Status::invalidArgument("malformed .npy: " + Msg); }

/// A strict parser for the Python dict literal of a .npy header.
class HeaderParser {
public:
  explicit HeaderParser(std::string_view Text) : Text(Text) {}

  Status parse(std::string &Descr, bool &Fortran, std::vector<uint64_t> &Shape) {
    bool SeenDescr = false, SeenFortran = false, SeenShape = false;
    skipSpace();
    if (!eat('{'))
      return bad("header does not start with '{'");
    while (true) {
      skipSpace();
      if (eat('}'))
        break;
      std::string Key;
      if (Status S = parseString(Key); !S)
        return S;
      skipSpace();
      if (!eat(':'))
        return bad("expected ':' after key " + quote(Key));
      skipSpace();
      if (Key == "descr") {
        if (SeenDescr)
          return bad("duplicate key 'descr'");
        SeenDescr = true;
        if (peek() == '[')
          return Status::invalidArgument("structured .npy arrays (a list descr) are not supported");
        if (Status S = parseString(Descr); !S)
          return S;
      } else if (Key == "fortran_order") {
        if (SeenFortran)
          return bad("duplicate key 'fortran_order'");
        SeenFortran = true;
        if (Text.substr(Pos, 4) == "True") {
          Fortran = true;
          Pos += 4;
        } else if (Text.substr(Pos, 5) == "False") {
          Fortran = false;
          Pos += 5;
        } else {
          return bad("fortran_order must be True or False");
        }
      } else if (Key == "shape") {
        if (SeenShape)
          return bad("duplicate key 'shape'");
        SeenShape = true;
        if (Status S = parseShape(Shape); !S)
          return S;
      } else {
        return bad("unknown header key " + quote(Key));
      }
      skipSpace();
      if (eat(','))
        continue;
      skipSpace();
      if (eat('}'))
        break;
      return bad("expected ',' or '}' in header");
    }
    skipSpace();
    if (Pos != Text.size())
      return bad("unexpected text after the header dict");
    if (!SeenDescr || !SeenFortran || !SeenShape)
      return bad("header needs 'descr', 'fortran_order' and 'shape'");
    return Status::ok();
  }

private:
  char peek() const { return Pos < Text.size() ? Text[Pos] : '\0'; }
  bool eat(char C) {
    if (peek() != C)
      return false;
    ++Pos;
    return true;
  }
  void skipSpace() {
    while (Pos < Text.size() &&
           (Text[Pos] == ' ' || Text[Pos] == '\t' || Text[Pos] == '\n' || Text[Pos] == '\r'))
      ++Pos;
  }
  Status parseString(std::string &Out) {
    char Quote = peek();
    if (Quote != '\'' && Quote != '"')
      return bad("expected a quoted string in header");
    ++Pos;
    size_t End = Text.find(Quote, Pos);
    if (End == std::string_view::npos || End - Pos > 64)
      return bad("unterminated or overlong string in header");
    Out = std::string(Text.substr(Pos, End - Pos));
    Pos = End + 1;
    return Status::ok();
  }
  Status parseShape(std::vector<uint64_t> &Shape) {
    if (!eat('('))
      return bad("shape must be a tuple");
    while (true) {
      skipSpace();
      if (eat(')'))
        return Status::ok();
      if (!std::isdigit(static_cast<unsigned char>(peek())))
        return bad("shape entries must be non-negative integers");
      uint64_t V = 0;
      while (std::isdigit(static_cast<unsigned char>(peek()))) {
        if (__builtin_mul_overflow(V, 10, &V) ||
            __builtin_add_overflow(V, static_cast<uint64_t>(Text[Pos] - '0'), &V))
          return bad("shape entry overflows 64 bits");
        ++Pos;
      }
      if (Shape.size() == 32)
        return bad("shape has more than 32 dimensions");
      Shape.push_back(V);
      skipSpace();
      if (eat(','))
        continue;
      skipSpace();
      if (eat(')'))
        return Status::ok();
      return bad("expected ',' or ')' in shape");
    }
  }

  std::string_view Text;
  size_t Pos = 0;
};

/// Decodes a descr into type and element size; big-endian numbers are
/// reported in \p Swap.
Status decodeDescr(const std::string &Descr, NpyArray &A, bool &Swap) {
  Expected<NpyDtype> D = parseNpyDescr(Descr);
  if (!D)
    return D.status();
  A.Type = D->Type;
  A.ElementBytes = D->ElementBytes;
  A.Descr = D->Descr;
  Swap = D->BigEndian;
  return Status::ok();
}

void byteSwap(std::vector<char> &Data, DataType Type) {
  // Complex numbers swap each half.
  unsigned Unit = Type == DataType::Complex64    ? 4
                  : Type == DataType::Complex128 ? 8
                                                 : dataTypeSize(Type);
  if (Unit <= 1)
    return;
  for (size_t I = 0; I + Unit <= Data.size(); I += Unit)
    std::reverse(Data.begin() + I, Data.begin() + I + Unit);
}

} // namespace

uint64_t NpyArray::elementCount() const {
  uint64_t Count = 1;
  for (uint64_t S : Shape)
    Count *= S;
  return Count;
}

TensorDesc NpyArray::tensor() const {
  TensorDesc T;
  T.Type = Type;
  T.OpaqueBytes = Type == DataType::Opaque ? ElementBytes : 0;
  T.Sizes = Shape;
  T.TotalBytes = Data.size();
  if (FortranOrder) {
    std::vector<uint64_t> Strides(Shape.size());
    uint64_t Stride = 1;
    for (size_t D = 0; D < Shape.size(); ++D) {
      Strides[D] = Stride;
      Stride *= Shape[D];
    }
    T.Strides = Strides;
  }
  return T;
}

std::vector<char> packRowMajor(const std::vector<uint64_t> &Sizes,
                               const std::vector<uint64_t> &Strides, unsigned ElementBytes,
                               const char *Data) {
  uint64_t Count = 1;
  for (uint64_t S : Sizes)
    Count *= S;
  std::vector<char> Out(Count * ElementBytes);
  std::vector<uint64_t> Coord(Sizes.size(), 0);
  for (uint64_t Linear = 0; Linear < Count; ++Linear) {
    uint64_t Src = 0;
    for (size_t D = 0; D < Sizes.size(); ++D)
      Src += Coord[D] * Strides[D];
    std::memcpy(&Out[Linear * ElementBytes], Data + Src * ElementBytes, ElementBytes);
    for (size_t D = Sizes.size(); D-- > 0;) {
      if (++Coord[D] < Sizes[D])
        break;
      Coord[D] = 0;
    }
  }
  return Out;
}

std::vector<char> NpyArray::takeCOrderData() {
  if (!FortranOrder || Shape.size() < 2)
    return std::move(Data);
  return cOrderData();
}

std::vector<char> NpyArray::cOrderData() const {
  if (!FortranOrder || Shape.size() < 2)
    return Data;
  return packRowMajor(Shape, *tensor().Strides, ElementBytes, Data.data());
}

namespace {

/// From the first bytes of a file: where the header starts and its length.
Status parsePreamble(std::string_view Bytes, size_t &Start, size_t &HeaderLen) {
  static constexpr char Magic[] = "\x93NUMPY";
  if (Bytes.size() < 10 || Bytes.substr(0, 6) != std::string_view(Magic, 6))
    return bad("bad magic (not a .npy file)");
  const unsigned Major = static_cast<unsigned char>(Bytes[6]);
  if (Major == 1) {
    HeaderLen = static_cast<unsigned char>(Bytes[8]) | static_cast<unsigned char>(Bytes[9]) << 8;
    Start = 10;
  } else if (Major == 2 || Major == 3) {
    if (Bytes.size() < 12)
      return bad("truncated header length");
    HeaderLen = 0;
    for (int I = 3; I >= 0; --I)
      HeaderLen = HeaderLen << 8 | static_cast<unsigned char>(Bytes[8 + I]);
    Start = 12;
  } else {
    return bad("unsupported format version " + std::to_string(Major));
  }
  if (HeaderLen > MaxHeaderBytes)
    return bad("header length " + std::to_string(HeaderLen) + " is too large");
  return Status::ok();
}

/// Parses the header dict into \p A (all but its data) and the data's size.
Status parseHeader(std::string_view Header, NpyArray &A, bool &Swap, uint64_t &DataBytes) {
  std::string Descr;
  if (Status S = HeaderParser(Header).parse(Descr, A.FortranOrder, A.Shape); !S)
    return S;
  if (Status S = decodeDescr(Descr, A, Swap); !S)
    return S;
  uint64_t Count = 1;
  for (uint64_t S : A.Shape)
    if (__builtin_mul_overflow(Count, S, &Count))
      return bad("shape element count overflows 64 bits");
  if (__builtin_mul_overflow(Count, A.ElementBytes, &DataBytes))
    return bad("data size overflows 64 bits");
  return Status::ok();
}

Status truncatedHeader(uint64_t HeaderLen, uint64_t Present) {
  return bad("truncated header: " + std::to_string(HeaderLen) + " bytes announced, " +
             std::to_string(Present) + " present");
}

Status dataSizeMismatch(uint64_t Present, uint64_t DataBytes) {
  return bad(std::string(Present < DataBytes ? "truncated" : "oversized") +
             " data: shape and dtype need " + std::to_string(DataBytes) + " bytes, the file has " +
             std::to_string(Present));
}

} // namespace

Expected<NpyArray> parseNpy(std::string_view Bytes) {
  size_t Start, HeaderLen;
  if (Status S = parsePreamble(Bytes, Start, HeaderLen); !S)
    return S;
  if (Bytes.size() - Start < HeaderLen)
    return truncatedHeader(HeaderLen, Bytes.size() - Start);
  NpyArray A;
  bool Swap = false;
  uint64_t DataBytes;
  if (Status S = parseHeader(Bytes.substr(Start, HeaderLen), A, Swap, DataBytes); !S)
    return S;
  const size_t Present = Bytes.size() - Start - HeaderLen;
  if (Present != DataBytes)
    return dataSizeMismatch(Present, DataBytes);
  const char *Begin = Bytes.data() + Start + HeaderLen;
  A.Data.assign(Begin, Begin + DataBytes);
  if (Swap)
    byteSwap(A.Data, A.Type);
  return A;
}

Expected<NpyArray> readNpy(const std::string &Path) {
  // The header is checked before the data is read, and the data read is
  // exactly what the header announces: a device, a huge or a lying file
  // costs nothing.
  Expected<InputFile> File = InputFile::open(Path);
  if (!File)
    return File.status();
  auto InFile = [&](const Status &S) { return S.withContext(quote(Path)); };
  std::string Prefix(12, '\0');
  uint64_t Got;
  if (Status S = File->readSome(Prefix.data(), Prefix.size(), Got); !S)
    return S;
  Prefix.resize(Got);
  size_t Start, HeaderLen;
  if (Status S = parsePreamble(Prefix, Start, HeaderLen); !S)
    return InFile(S);
  std::string Header = Prefix.substr(Start);
  const size_t Have = Header.size();
  if (Have > HeaderLen)
    return InFile(bad("a header of " + std::to_string(HeaderLen) + " bytes is too short"));
  Header.resize(HeaderLen);
  if (Status S = File->readSome(Header.data() + Have, HeaderLen - Have, Got); !S)
    return S;
  if (Have + Got != HeaderLen)
    return InFile(truncatedHeader(HeaderLen, Have + Got));
  NpyArray A;
  bool Swap = false;
  uint64_t DataBytes;
  if (Status S = parseHeader(Header, A, Swap, DataBytes); !S)
    return InFile(S);
  if (File->size()) {
    const uint64_t Present = *File->size() - Start - HeaderLen;
    if (Present != DataBytes)
      return InFile(dataSizeMismatch(Present, DataBytes));
  }
  if (Status S = checkAllocation(DataBytes, "the array"); !S)
    return InFile(S);
  A.Data.resize(DataBytes);
  if (Status S = File->readExactly(A.Data.data(), DataBytes); !S)
    return S;
  Expected<bool> End = File->atEnd(); // A FIFO may say more than its header.
  if (!End)
    return End.status();
  if (!*End)
    return InFile(bad("oversized data: shape and dtype need " + std::to_string(DataBytes) +
                      " bytes, the stream has more"));
  if (Swap)
    byteSwap(A.Data, A.Type);
  return A;
}

std::string encodeNpyHeader(const std::string &Descr, const std::vector<uint64_t> &Shape) {
  std::string Dict = "{'descr': '" + Descr + "', 'fortran_order': False, 'shape': (";
  for (size_t I = 0; I < Shape.size(); ++I)
    Dict += std::to_string(Shape[I]) + (Shape.size() == 1 || I + 1 < Shape.size() ? ", " : "");
  if (Shape.size() == 1)
    Dict.pop_back(); // "(5, )" -> "(5,)"
  Dict += "), }";
  // Pad with spaces and a newline so that the data starts 64-byte aligned.
  const bool V1 = Dict.size() + 11 < 65536;
  const size_t Prefix = V1 ? 10 : 12;
  size_t Total = Prefix + Dict.size() + 1;
  Total = (Total + 63) / 64 * 64;
  Dict.append(Total - Prefix - Dict.size() - 1, ' ');
  Dict += '\n';
  std::string Out("\x93NUMPY", 6);
  Out += static_cast<char>(V1 ? 1 : 2);
  Out += '\0';
  const size_t Len = Dict.size();
  for (size_t I = 0; I < (V1 ? 2u : 4u); ++I)
    Out += static_cast<char>((Len >> (8 * I)) & 0xff);
  return Out + Dict;
}

std::string encodeNpy(const std::string &Descr, const std::vector<uint64_t> &Shape,
                      const void *Data, size_t Bytes) {
  std::string Out = encodeNpyHeader(Descr, Shape);
  Out.append(static_cast<const char *>(Data), Bytes);
  return Out;
}

} // namespace gatherjit
