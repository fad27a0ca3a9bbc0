//===- gatherjit/Status.h - Error values ---------------------------------===//
/// \file
/// Status and Expected<T>: every failure a user can cause is returned as one
/// of these values, never thrown and never an abort. The code decides the
/// command line's exit status; the message tells the person what to change.
//===----------------------------------------------------------------------===//
#ifndef GATHERJIT_STATUS_H
#define GATHERJIT_STATUS_H

#include <cassert>
#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <utility>
#include <variant>

namespace gatherjit {

enum class ErrorCode {
  Ok,
  InvalidArgument, ///< The descriptor or an operand is malformed.
  Unsupported,     ///< Well formed, but not supported (e.g. at a feature level).
  IndexOutOfRange, ///< An index failed the Check policy at run time.
  IoError,         ///< The system refused a read or write (full disk, permissions).
  Internal,        ///< A bug or an environment failure (LLVM, memory).
};

const char *errorCodeName(ErrorCode Code);

class [[nodiscard]] Status {
public:
  Status() = default;
  static Status ok() { return Status(); }
  static Status invalidArgument(std::string Msg) {
    return Status(ErrorCode::InvalidArgument, std::move(Msg));
  }
  static Status unsupported(std::string Msg) {
    return Status(ErrorCode::Unsupported, std::move(Msg));
  }
  static Status ioError(std::string Msg) { return Status(ErrorCode::IoError, std::move(Msg)); }
  static Status internal(std::string Msg) { return Status(ErrorCode::Internal, std::move(Msg)); }
  /// \p Position is the row-major position in the indices tensor of the
  /// first out-of-range index.
  static Status indexOutOfRange(std::string Msg, uint64_t Position) {
    Status S(ErrorCode::IndexOutOfRange, std::move(Msg));
    S.Position = Position;
    return S;
  }

  bool isOk() const { return Code == ErrorCode::Ok; }
  explicit operator bool() const { return isOk(); }
  ErrorCode code() const { return Code; }
  const std::string &message() const { return Message; }
  /// Set for IndexOutOfRange only.
  std::optional<uint64_t> position() const { return Position; }

  /// Prefixes the message with context, e.g. "reading data.npy: ".
  Status withContext(const std::string &Context) const {
    Status S = *this;
    if (!S.isOk())
      S.Message = Context + ": " + S.Message;
    return S;
  }

private:
  Status(ErrorCode C, std::string Msg) : Code(C), Message(std::move(Msg)) {}
  ErrorCode Code = ErrorCode::Ok;
  std::string Message;
  std::optional<uint64_t> Position;
};

/// \p Text in \p Quote marks for an error message: control characters,
/// NUL, backslashes and the quote mark escaped, cut to \p Max bytes with
/// the length of what was cut, so that a user's value can never break or
/// flood the one error line.
std::string quote(std::string_view Text, size_t Max = 200, char Quote = '\'');

/// A value or the Status that explains why there is none.
template <typename T> class [[nodiscard]] Expected {
public:
  Expected(T Value) : Storage(std::move(Value)) {}
  Expected(Status S) : Storage(std::move(S)) {
    assert(!std::get<Status>(Storage).isOk() && "Expected needs an error");
  }
  bool isOk() const { return std::holds_alternative<T>(Storage); }
  explicit operator bool() const { return isOk(); }
  T &operator*() { return std::get<T>(Storage); }
  const T &operator*() const { return std::get<T>(Storage); }
  T *operator->() { return &std::get<T>(Storage); }
  const T *operator->() const { return &std::get<T>(Storage); }
  Status status() const { return isOk() ? Status::ok() : std::get<Status>(Storage); }
  T take() { return std::move(std::get<T>(Storage)); }

private:
  std::variant<T, Status> Storage;
};

} // namespace gatherjit

#endif
