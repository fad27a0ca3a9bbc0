//===- runtime/AotFiles.cpp - Writing an ahead-of-time object -------------===//

#include "gatherjit/Aot.h"
#include "runtime/AtomicFile.h"

#include <optional>

namespace gatherjit {

Status writeAot(const AotResult &R, const std::string &ObjectPath, const std::string &HeaderPath) {
  Expected<AtomicFile> Object = AtomicFile::create(ObjectPath);
  if (!Object)
    return Object.status();
  std::optional<AtomicFile> Header;
  if (!HeaderPath.empty()) {
    Expected<AtomicFile> H = AtomicFile::create(HeaderPath);
    if (!H)
      return H.status();
    if (H->sameDestination(*Object))
      return Status::invalidArgument("the header " + quote(HeaderPath) + " and the object " +
                                     quote(ObjectPath) + " name the same file");
    Header.emplace(H.take());
  }
  if (Status S = Object->append(std::string_view(R.Object.data(), R.Object.size())); !S)
    return S;
  if (Header)
    if (Status S = Header->append(R.Header); !S)
      return S;
  if (Status S = Object->commit(); !S)
    return S;
  return Header ? Header->commit() : Status::ok();
}

} // namespace gatherjit
