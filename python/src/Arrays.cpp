//===- python/src/Arrays.cpp - numpy arrays as tensors -------------------===//
//
// Arrays in through the buffer protocol (numpy and anything exporting
// buffers, with their strides: no copy of a view), their dtypes read
// through gatherjit's table of numpy dtype strings.
//
//===----------------------------------------------------------------------===//

#include "Native.h"
#include "gatherjit/NpyDtype.h"

#include <bit>
#include <map>
#include <string_view>
#include <tuple>

namespace gatherjit::binding {

bool strideUnused(const py::array &A, py::ssize_t D) { return A.shape(D) <= 1 || A.size() == 0; }

namespace {

/// True if dimension \p D of \p A steps over whole elements, forwards (or
/// does not step at all): a stride a TensorDesc can say.
bool describableStride(const py::array &A, py::ssize_t D) {
  const py::ssize_t S = A.strides(D), Item = static_cast<py::ssize_t>(itemSize(A));
  return strideUnused(A, D) || (S >= 0 && Item > 0 && S % Item == 0);
}

} // namespace

/// gatherjit's element type for a numpy dtype, decoded as a .npy file's
/// dtype is. numpy's raw void of any width other than bfloat16's two bytes
/// is moved whole too (a .npy file's must be bfloat16), and so is every
/// other dtype whose values are their bytes alone (datetime64,
/// timedelta64, longdouble, records): a gather moves elements unread.
DataType dataTypeOf(const py::dtype &D, unsigned &OpaqueBytes) {
  OpaqueBytes = 0;
  auto Name = [&] { return py::repr(static_cast<const py::object &>(D)).cast<std::string>(); };
  if (holdsReferences(D))
    throw py::type_error(
        "dtype " + Name() +
        " holds object references: a compiled kernel moves bytes, not the references its "
        "elements hold; gatherjit.take, take_along_axis and gather_nd take such arrays");
  if (itemSize(D) == 0)
    throw py::value_error("dtype " + Name() +
                          " has elements of no bytes: gatherjit gathers elements of 1 byte or "
                          "more");
  // The answer depends on the dtype's string alone, which a number type's
  // (or a 2-byte void's) type number, kind, size and byte order fix:
  // those four find it again without numpy formatting the string, which
  // was a fifth of the binding's instructions for a new shape. Strings,
  // datetimes and voids of other sizes are not kept: their lengths and
  // units are unbounded. Used under the GIL.
  struct Decoded {
    DataType Type;
    unsigned OpaqueBytes;
  };
  static auto *Seen = new std::map<std::tuple<int, char, py::ssize_t, char>, Decoded>();
  const bool Memo = std::string_view("biufc").find(D.kind()) != std::string_view::npos ||
                    (D.kind() == 'V' && itemSize(D) == 2);
  const auto Key = std::make_tuple(D.num(), D.kind(), itemSize(D), D.byteorder());
  if (auto It = Memo ? Seen->find(Key) : Seen->end(); It != Seen->end()) {
    OpaqueBytes = It->second.OpaqueBytes;
    return It->second.Type;
  }
  Decoded Found{DataType::Opaque, static_cast<unsigned>(itemSize(D))};
  if (D.kind() != 'V' || itemSize(D) == 2) {
    Expected<NpyDtype> T = parseNpyDescr(D.attr("str").cast<std::string>());
    if (T && T->Type != DataType::Opaque)
      Found = {T->Type, 0};
  }
  if (Memo)
    Seen->emplace(Key, Found);
  OpaqueBytes = Found.OpaqueBytes;
  return Found.Type;
}

/// \p Indices in the machine's byte order: a big-endian array is copied
/// (the kernels read indices as native integers; data is moved unread).
py::array nativeIndices(py::array Indices) {
  // 8- and 16-bit indices (numpy and torch take them; the kernels read 32
  // and 64 bits) are widened to int32, which holds all their values.
  const py::dtype T = Indices.dtype();
  if (T.kind() != 'i' && T.kind() != 'u') {
    // numpy's take raises TypeError here, its take_along_axis IndexError.
    const std::string Message =
        "indices must be integers, not " + std::string(py::str(static_cast<py::object>(T)));
    PyErr_SetString(package("_IndexTypeError").ptr(), Message.c_str());
    throw py::error_already_set();
  }
  if (itemSize(T) < 4)
    return Indices.attr("astype")(py::dtype("int32"));
  return inNativeOrder(Indices);
}

char byteOrder(const py::dtype &D) {
  const char C = D.byteorder();
  return C == '=' ? NativeOrder : C;
}

namespace {

/// "little" or "big" for a byte order byteOrder gives.
const char *endianName(char Order) { return Order == '<' ? "little" : "big"; }

} // namespace

/// Refuses an \p Out whose byte order is not \p Want's (the data's dtype,
/// whose bytes the kernel moves unchanged; the machine's order where
/// \p Want is unset, for an epilogue's output): its values would be read
/// back as other numbers.
void checkOutByteOrder(const py::array &Out, const std::optional<py::dtype> &Want) {
  const char Have = byteOrder(Out.dtype()), Need = Want ? byteOrder(*Want) : NativeOrder;
  if (Have == '|' || Need == '|' || Have == Need)
    return;
  throwOutDtype("out has dtype " + std::string(py::str(Out.dtype())) + " in " + endianName(Have) +
                "-endian order, the result's is " + endianName(Need) +
                "-endian: gatherjit does not swap bytes; pass an out of the result's dtype");
}

void checkDataByteOrder(const py::array &Data, const py::dtype &Want) {
  const char Have = byteOrder(Data.dtype()), Need = byteOrder(Want);
  if (Have == '|' || Need == '|' || Have == Need)
    return;
  throw py::value_error("data has dtype " + std::string(py::str(Data.dtype())) + " in " +
                        endianName(Have) + "-endian order, the kernel's is " + endianName(Need) +
                        "-endian: gatherjit does not swap bytes; compile a kernel for it");
}

py::array inNativeOrder(const py::array &A) {
  const char Order = byteOrder(A.dtype());
  if (Order == '|' || Order == NativeOrder)
    return A;
  return A.attr("astype")(A.dtype().attr("newbyteorder")("=")).cast<py::array>();
}

/// A tensor viewing \p A's memory: its sizes and its strides in elements.
TensorDesc tensorOf(const py::array &A, const char *Name) {
  TensorDesc T;
  T.Type = dataTypeOf(A.dtype(), T.OpaqueBytes);
  const size_t Item = itemSize(A);
  T.Strides.emplace();
  T.Sizes.reserve(A.ndim());
  T.Strides->reserve(A.ndim());
  for (py::ssize_t D = 0; D < A.ndim(); ++D) {
    T.Sizes.push_back(static_cast<uint64_t>(A.shape(D)));
    if (strideUnused(A, D)) {
      T.Strides->push_back(0);
      continue;
    }
    if (!describableStride(A, D))
      throw py::value_error(std::string(Name) + ": strides " +
                            std::string(py::str(py::cast(
                                std::vector<py::ssize_t>(A.strides(), A.strides() + A.ndim())))) +
                            " are negative or not a multiple of the itemsize " +
                            std::to_string(Item) + "; pass a copy (numpy.ascontiguousarray)");
    T.Strides->push_back(static_cast<uint64_t>(A.strides(D)) / Item);
  }
  return T;
}

bool describable(const py::array &A) {
  for (py::ssize_t D = 0; D < A.ndim(); ++D)
    if (!describableStride(A, D))
      return false;
  return true;
}

/// \p A as an array viewing the same memory, or a C-ordered copy when its
/// strides cannot be described (negative, or not whole elements).
py::array viewOrCopy(py::array A) {
  return describable(A) ? A : py::array::ensure(A, py::array::c_style | py::array::forcecast);
}

/// A tensor from a (shape, dtype[, strides]) tuple; strides in elements.
TensorDesc tensorFromSpec(const py::tuple &Spec, py::dtype &Type, const char *Name) {
  if (Spec.size() < 2 || Spec.size() > 3)
    throw py::value_error(std::string(Name) + " must be (shape, dtype) or (shape, dtype, strides)");
  TensorDesc T;
  for (py::handle S : Spec[0].cast<py::sequence>())
    T.Sizes.push_back(S.cast<uint64_t>());
  Type = py::dtype::from_args(Spec[1]);
  T.Type = dataTypeOf(Type, T.OpaqueBytes);
  if (Spec.size() == 3 && !Spec[2].is_none())
    T.Strides = Spec[2].cast<std::vector<uint64_t>>();
  return T;
}

std::string dtypeString(const py::dtype &Type) {
  // As a plain object: py::str(py::dtype) matches two constructors.
  return py::str(static_cast<const py::object &>(Type));
}

std::string dtypeString(const TensorDesc &T) {
  const std::string Descr = npyDescr(T.Type);
  if (Descr.empty())
    return std::to_string(T.elementBytes()) + "-byte records";
  return dtypeString(py::dtype(Descr));
}

/// A function of the gatherjit package's Python half, looked up under the
/// GIL and kept for the life of the process (never destroyed: it would
/// outlive the interpreter). std::map's nodes stay put if an import lets
/// another thread add one.
bool DescrLayout::Numpy2 = false;

py::object &package(const char *Name) {
  static std::map<std::string, py::object *> Functions;
  py::object *&F = Functions[Name];
  if (!F)
    F = new py::object(py::module_::import("gatherjit").attr(Name));
  return *F;
}

void throwOutDtype(const std::string &Message) {
  PyErr_SetString(package("_OutDtypeError").ptr(), Message.c_str());
  throw py::error_already_set();
}

bool plainArray(PyObject *X) {
  static PyObject *NdArray =
      py::object(py::module_::import("numpy").attr("ndarray")).release().ptr();
  return reinterpret_cast<PyObject *>(Py_TYPE(X)) == NdArray;
}

/// \p X as a numpy array over the same memory (see gatherjit._array).
py::array operand(py::handle X, const char *Name, bool Writable) {
  if (plainArray(X.ptr()))
    return py::reinterpret_borrow<py::array>(X);
  return package("_array")(X, Name, Writable).cast<py::array>();
}
} // namespace gatherjit::binding
