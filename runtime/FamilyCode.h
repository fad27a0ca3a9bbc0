//===- runtime/FamilyCode.h - A family kernel bound to one shape ---------===//
/// \file
/// A family kernel (KernelSpec::Family) is compiled once for every shape
/// that differs only in sizes and strides; its NAME_range entry takes the
/// shape's values as a sixth argument. FamilyCode binds it to one shape, so
/// a kernel handle runs it like any other code.
//===----------------------------------------------------------------------===//
#ifndef GATHERJIT_RUNTIME_FAMILYCODE_H
#define GATHERJIT_RUNTIME_FAMILYCODE_H

#include "compiler/backend/Executable.h"
#include "compiler/spec/KernelSpec.h"

#include <cassert>
#include <memory>

namespace gatherjit {

class FamilyCode final : public Executable {
public:
  using RangeFn = int64_t (*)(const void *, const void *, void *, int64_t, int64_t,
                              const uint64_t *);

  /// \p Family: the family's linked code; \p Shape: a spec of that family,
  /// whose values (KernelSpec::familyValues) the code reads in place.
  FamilyCode(std::shared_ptr<const Executable> Family, std::shared_ptr<const KernelSpec> Shape)
      : Family(std::move(Family)), Entry(reinterpret_cast<RangeFn>(this->Family->entryAddress())),
        Shape(std::move(Shape)) {
    assert(Entry && "family kernels are linked host code");
  }

  int64_t runRows(const void *Input, const void *Indices, void *Output, int64_t Begin,
                  int64_t End) const override {
    return Entry(Input, Indices, Output, Begin, End, Shape->familyValues());
  }

private:
  std::shared_ptr<const Executable> Family;
  RangeFn Entry;
  std::shared_ptr<const KernelSpec> Shape;
};

/// Family kernel code \p Family bound to \p Shape: by the code itself where
/// it can (Executable::forShape), else as FamilyCode.
inline std::shared_ptr<const Executable> bindFamily(std::shared_ptr<const Executable> Family,
                                                    std::shared_ptr<const KernelSpec> Shape) {
  if (std::shared_ptr<const Executable> Bound = Family->forShape(*Shape))
    return Bound;
  return std::make_shared<FamilyCode>(std::move(Family), std::move(Shape));
}

} // namespace gatherjit

#endif
