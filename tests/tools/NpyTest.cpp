//===- tests/tools/NpyTest.cpp - The .npy reader and writer --------------===//

#include "Npy.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

using namespace gatherjit;
using ::testing::HasSubstr;

namespace {

/// A .npy file with a hand-written header dict, as numpy lays it out.
std::string npy(const std::string &Dict, const std::string &Data, char Major = 1) {
  std::string Header = Dict;
  size_t Prefix = Major == 1 ? 10 : 12;
  while ((Prefix + Header.size() + 1) % 64)
    Header += ' ';
  Header += '\n';
  std::string Out("\x93NUMPY", 6);
  Out += Major;
  Out += '\0';
  for (size_t I = 0; I < (Major == 1 ? 2u : 4u); ++I)
    Out += static_cast<char>((Header.size() >> (8 * I)) & 0xff);
  return Out + Header + Data;
}

std::string bytesOf(std::initializer_list<int> Bytes) {
  std::string S;
  for (int B : Bytes)
    S += static_cast<char>(B);
  return S;
}

std::string errorOf(const std::string &File) {
  Expected<NpyArray> A = parseNpy(File);
  EXPECT_FALSE(A.isOk());
  return A ? "" : A.status().message();
}

TEST(Npy, ReadsAnInt32Matrix) {
  std::string Data =
      bytesOf({1, 0, 0, 0, 2, 0, 0, 0, 3, 0, 0, 0, 4, 0, 0, 0, 5, 0, 0, 0, 6, 0, 0, 0});
  Expected<NpyArray> A =
      parseNpy(npy("{'descr': '<i4', 'fortran_order': False, 'shape': (2, 3), }", Data));
  ASSERT_TRUE(A.isOk()) << A.status().message();
  EXPECT_EQ(A->Type, DataType::Int32);
  EXPECT_EQ(A->Shape, (std::vector<uint64_t>{2, 3}));
  EXPECT_EQ(A->Data.size(), 24u);
  EXPECT_FALSE(A->tensor().Strides.has_value());
}

TEST(Npy, FortranOrderIsStrides) {
  // Logical [[1,2,3],[4,5,6]] stored column-major: 1 4 2 5 3 6.
  std::string Data = bytesOf({1, 4, 2, 5, 3, 6});
  Expected<NpyArray> A =
      parseNpy(npy("{'descr': '|u1', 'fortran_order': True, 'shape': (2, 3), }", Data));
  ASSERT_TRUE(A.isOk()) << A.status().message();
  EXPECT_EQ(*A->tensor().Strides, (std::vector<uint64_t>{1, 2}));
  std::vector<char> C = A->cOrderData();
  EXPECT_EQ(std::string(C.begin(), C.end()), bytesOf({1, 2, 3, 4, 5, 6}));
}

TEST(Npy, BigEndianIsSwapped) {
  Expected<NpyArray> A = parseNpy(
      npy("{'descr': '>u2', 'fortran_order': False, 'shape': (2,), }", bytesOf({1, 2, 3, 4})));
  ASSERT_TRUE(A.isOk());
  EXPECT_EQ(A->Descr, "<u2");
  EXPECT_EQ(std::string(A->Data.begin(), A->Data.end()), bytesOf({2, 1, 4, 3}));
}

TEST(Npy, Version2HeaderAndScalarShape) {
  Expected<NpyArray> A = parseNpy(
      npy("{'descr': '<f8', 'fortran_order': False, 'shape': (), }", std::string(8, '\0'), 2));
  ASSERT_TRUE(A.isOk()) << A.status().message();
  EXPECT_TRUE(A->Shape.empty());
  EXPECT_EQ(A->elementCount(), 1u);
}

TEST(Npy, EveryTypeRoundTrips) {
  for (int I = 0; I < static_cast<int>(DataType::Opaque); ++I) {
    DataType Type = static_cast<DataType>(I);
    SCOPED_TRACE(dataTypeName(Type));
    std::string Data(3 * dataTypeSize(Type), '\x5a');
    std::string File = encodeNpy(npyDescr(Type), {3}, Data.data(), Data.size());
    EXPECT_EQ(File.find("\n") % 64, 63u); // The data starts 64-byte aligned.
    Expected<NpyArray> A = parseNpy(File);
    ASSERT_TRUE(A.isOk()) << A.status().message();
    EXPECT_EQ(A->Type, Type);
    EXPECT_EQ(std::string(A->Data.begin(), A->Data.end()), Data);
  }
}

TEST(Npy, FixedWidthStringsAreOpaque) {
  Expected<NpyArray> A = parseNpy(
      npy("{'descr': '<U2', 'fortran_order': False, 'shape': (1,), }", std::string(8, 'x')));
  ASSERT_TRUE(A.isOk());
  EXPECT_EQ(A->Type, DataType::Opaque);
  EXPECT_EQ(A->ElementBytes, 8u);
  EXPECT_EQ(A->Descr, "<U2");
  A = parseNpy(npy("{'descr': '|S3', 'fortran_order': False, 'shape': (2,), }", "abcdef"));
  ASSERT_TRUE(A.isOk());
  EXPECT_EQ(A->ElementBytes, 3u);
}

TEST(Npy, RejectsBadMagic) {
  EXPECT_THAT(errorOf("PK\x03\x04 this is a zip"), HasSubstr("bad magic"));
  EXPECT_THAT(errorOf(""), HasSubstr("bad magic"));
}

TEST(Npy, RejectsTruncatedFiles) {
  std::string Good =
      npy("{'descr': '<i4', 'fortran_order': False, 'shape': (2,), }", std::string(8, '\0'));
  EXPECT_THAT(errorOf(Good.substr(0, Good.size() - 1)),
              HasSubstr("truncated data: shape and dtype need 8 bytes, the file has 7"));
  EXPECT_THAT(errorOf(Good.substr(0, 40)), HasSubstr("truncated header"));
  EXPECT_THAT(errorOf(Good + "x"), HasSubstr("oversized data"));
}

TEST(Npy, RejectsBadHeaders) {
  EXPECT_THAT(errorOf(npy("descr: <i4", "")), HasSubstr("does not start with '{'"));
  EXPECT_THAT(errorOf(npy("{'descr': '<i4', 'shape': (1,), }", "abcd")),
              HasSubstr("header needs 'descr', 'fortran_order' and 'shape'"));
  EXPECT_THAT(errorOf(npy("{'descr': '<i4', 'fortran_order': False, 'shape': (-1,), }", "")),
              HasSubstr("shape entries must be non-negative integers"));
  EXPECT_THAT(errorOf(npy("{'descr': '<i4', 'fortran_order': 0, 'shape': (1,), }", "abcd")),
              HasSubstr("fortran_order must be True or False"));
  EXPECT_THAT(
      errorOf(npy("{'descr': '<i4', 'fortran_order': False, 'shape': (1,), 'x': 1}", "abcd")),
      HasSubstr("unknown header key 'x'"));
  EXPECT_THAT(errorOf(npy("{'descr': '<i4', 'descr': '<i4', 'fortran_order': False, 'shape': (1,)}",
                          "abcd")),
              HasSubstr("duplicate key 'descr'"));
  EXPECT_THAT(
      errorOf(
          npy("{'descr': '<i4', 'fortran_order': False, 'shape': (99999999999999999999,), }", "")),
      HasSubstr("overflows 64 bits"));
  EXPECT_THAT(
      errorOf(
          npy("{'descr': '<i8', 'fortran_order': False, 'shape': (4294967296, 4294967296), }", "")),
      HasSubstr("overflows 64 bits"));
  std::string BadVersion = npy("{'descr': '<i4', 'fortran_order': False, 'shape': (0,), }", "");
  BadVersion[6] = 9;
  EXPECT_THAT(errorOf(BadVersion), HasSubstr("unsupported format version 9"));
}

TEST(Npy, RejectsUnsupportedDtypes) {
  EXPECT_THAT(errorOf(npy("{'descr': '<f16', 'fortran_order': False, 'shape': (1,), }",
                          std::string(16, 0))),
              HasSubstr("unsupported .npy dtype '<f16'"));
  EXPECT_THAT(errorOf(npy("{'descr': '<M8[ns]', 'fortran_order': False, 'shape': (1,), }",
                          std::string(8, 0))),
              HasSubstr("unsupported .npy dtype"));
  EXPECT_THAT(
      errorOf(npy("{'descr': '|O', 'fortran_order': False, 'shape': (1,), }", "\x80\x03N.")),
      HasSubstr("object .npy arrays (pickles) are not supported"));
  EXPECT_THAT(
      errorOf(
          npy("{'descr': [('a', '<i4'), ('b', '<f4')], 'fortran_order': False, 'shape': (1,), }",
              std::string(8, 0))),
      HasSubstr("structured .npy arrays"));
}

} // namespace
