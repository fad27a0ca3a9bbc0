//===- tools/gatherjit/Npy.h - numpy .npy files --------------------------===//
/// \file
/// Reads and writes numpy's .npy format (versions 1.0, 2.0, 3.0). The
/// reader is attack surface: every header field is validated, sizes are
/// checked in 64 bits, and object (pickled) or structured arrays are
/// rejected without loading anything. Dtypes are read as
/// gatherjit/NpyDtype.h says (bfloat16 as 'V2', strings as opaque elements).
//===----------------------------------------------------------------------===//
#ifndef GATHERJIT_TOOLS_NPY_H
#define GATHERJIT_TOOLS_NPY_H

#include "gatherjit/Descriptor.h"
#include "gatherjit/NpyDtype.h"
#include "runtime/AtomicFile.h"

#include <string>
#include <string_view>
#include <vector>

namespace gatherjit {

struct NpyArray {
  DataType Type = DataType::Float32;
  unsigned ElementBytes = 0;
  /// The dtype as written back: little-endian for numbers, as read for
  /// strings.
  std::string Descr;
  std::vector<uint64_t> Shape;
  bool FortranOrder = false;
  /// Element bytes in file order, converted to little-endian.
  std::vector<char> Data;

  uint64_t elementCount() const;
  /// The tensor this array is, with strides for Fortran order.
  TensorDesc tensor() const;
  /// The elements in C (row-major) order.
  std::vector<char> cOrderData() const;
  /// The same, taking Data where it is already in C order (no copy).
  std::vector<char> takeCOrderData();
};

/// Copies the elements that \p Sizes and \p Strides (in elements) address in
/// \p Data into a packed row-major buffer.
std::vector<char> packRowMajor(const std::vector<uint64_t> &Sizes,
                               const std::vector<uint64_t> &Strides, unsigned ElementBytes,
                               const char *Data);

/// Parses a whole .npy file. Errors are InvalidArgument.
Expected<NpyArray> parseNpy(std::string_view Bytes);
/// Reads a .npy file: a regular file or a FIFO, its header checked before
/// the data, the data read only if the file holds exactly what the header
/// announces and the machine's memory can hold it.
Expected<NpyArray> readNpy(const std::string &Path);

/// The .npy header (magic, version, dict, padding) of a C-order array; its
/// data follows.
std::string encodeNpyHeader(const std::string &Descr, const std::vector<uint64_t> &Shape);
/// Encodes a C-order array as .npy bytes.
std::string encodeNpy(const std::string &Descr, const std::vector<uint64_t> &Shape,
                      const void *Data, size_t Bytes);

} // namespace gatherjit

#endif
