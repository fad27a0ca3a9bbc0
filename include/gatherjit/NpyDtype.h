//===- gatherjit/NpyDtype.h - numpy dtype strings -------------------------===//
/// \file
/// The dtype strings of numpy's array interface and .npy headers ('<f4',
/// '|b1', '|S5', ...) and the element types they name. bfloat16, which
/// numpy lacks, is the two-byte void type 'V2' (as the ml_dtypes package
/// saves it); fixed-width strings 'S<n>' and 'U<n>' are opaque elements of
/// n and 4n bytes. The command line's .npy files and the Python binding's
/// arrays are read through this one table.
//===----------------------------------------------------------------------===//
#ifndef GATHERJIT_NPYDTYPE_H
#define GATHERJIT_NPYDTYPE_H

#include "gatherjit/Descriptor.h"

#include <string>

namespace gatherjit {

/// What a dtype string names: the element type, its bytes, whether its
/// numbers are big-endian, and the string to write it back as
/// (little-endian for numbers, as given for strings).
struct NpyDtype {
  DataType Type = DataType::Float32;
  unsigned ElementBytes = 0;
  bool BigEndian = false;
  std::string Descr;
};

/// InvalidArgument, quoting \p Descr, for a dtype gatherjit has no type for
/// (objects, structured arrays, sizes no type has).
Expected<NpyDtype> parseNpyDescr(const std::string &Descr);

/// The dtype string for \p Type ('<f4', '|b1', ...); empty for Opaque.
std::string npyDescr(DataType Type);

} // namespace gatherjit

#endif
