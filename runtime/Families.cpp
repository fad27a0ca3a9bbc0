//===- runtime/Families.cpp - Family kernels -----------------------------===//
//
// The kernels of spec families (sizes as arguments; familyOf and
// rowFamilyOf in compiler/spec/KernelSpec.h): on a CPU counted per new
// shape, compiled on the background thread at a family's second shape or,
// for a row family, when its first shape is hot, whichever comes first (the
// shapes before run the generic loop); on a device, which has no generic
// loop, compiled on the caller's thread by the family's first shape: its
// own kernel would cost as much to compile, and the family's serves every
// later shape.
//
//===----------------------------------------------------------------------===//

#include "runtime/RuntimeImpl.h"

#include <cstdio>

namespace gatherjit {

Runtime::Impl::FamilyEntry &Runtime::Impl::familyEntry(const KernelSpec &Family) {
  KernelSpec Key = Family;
  std::optional<KernelPlan> Plan;
  if (Family.PlanRows) {
    Plan = planKernel(Family, Target->facts());
    Key.PlanRows = 0;
  }
  auto It = Families.find(Key);
  if (It == Families.end()) {
    if (Families.size() >= FamilyCapacity)
      Families.clear(); // Kernel handles keep the code they run.
    It = Families.emplace(std::move(Key), std::vector<FamilyEntry>()).first;
  }
  for (FamilyEntry &E : It->second)
    if (E.Plan == Plan)
      return E;
  return It->second.emplace_back(FamilyEntry{Family, Plan, nullptr, 0});
}

std::shared_ptr<const Executable> Runtime::Impl::familyCode(const KernelSpec &Family, bool Count,
                                                            bool *First) {
  KernelSpec Compile;
  {
    std::lock_guard<std::mutex> Lock(FamilyMutex);
    FamilyEntry &E = familyEntry(Family);
    if (First)
      *First = E.Shapes == 0;
    if (E.Code || !Count || ++E.Shapes != 2 || E.Tried)
      return E.Code;
    Compile = E.Spec;
  }
  Upgrades->push([this, Compile] { (void)compileFamily(Compile); });
  return nullptr;
}

std::shared_ptr<const Executable> Runtime::Impl::rowFamilyFirst(const KernelSpec &Rows,
                                                                bool &Alone) {
  std::shared_ptr<const Executable> Code = compileFamily(Rows);
  std::lock_guard<std::mutex> Lock(FamilyMutex);
  Alone = familyEntry(Rows).Shapes <= 1; // Counting the shapes that came during the compile.
  return Code;
}

LinkResult Runtime::Impl::compileFamilyKernel(const KernelSpec &Family, CompileTimes &Times,
                                              bool &FromDisk, bool &Stored) {
  uint64_t Bytes = 0; // The family table holds the code, not a shape's entry.
  LinkResult Code = compileSpec(Family, Options.Opt, Times, FromDisk, Stored, Bytes);
  {
    std::lock_guard<std::mutex> Lock(CacheMutex);
    Stats.FamilyKernels += Code.isOk();
  }
  if (!Code && Log)
    std::fprintf(stderr, "gatherjit: compiling %s: %s\n", Family.symbolName().c_str(),
                 Code.status().message().c_str());
  return Code;
}

std::shared_ptr<const Executable> Runtime::Impl::deviceFamilyCode(const KernelSpec &Family,
                                                                  CompileTimes &Times,
                                                                  bool &FromDisk, bool &Stored) {
  std::lock_guard<std::mutex> Lock(FamilyMutex);
  FamilyEntry &E = familyEntry(Family);
  if (E.Code || E.Shapes++)
    return E.Code; // Compiled, or its compile failed and is not tried again.
  LinkResult Code = compileFamilyKernel(Family, Times, FromDisk, Stored);
  return Code ? (E.Code = Code.take()) : nullptr;
}

std::shared_ptr<const Executable> Runtime::Impl::compileFamily(const KernelSpec &Family) {
  KernelSpec Compile;
  {
    std::lock_guard<std::mutex> Lock(FamilyMutex);
    FamilyEntry &E = familyEntry(Family);
    if (E.Code || E.Tried)
      return E.Code; // Compiled, failed, or compiling (then a job before this one has it).
    E.Tried = true;
    Compile = E.Spec;
  }
  CompileTimes Times;
  bool FromDisk = false, Stored = false;
  LinkResult Code = compileFamilyKernel(Compile, Times, FromDisk, Stored);
  {
    std::lock_guard<std::mutex> Lock(CacheMutex);
    Stats.CompileMs += Times.total();
    Stats.DiskLoads += FromDisk;
    Stats.DiskStores += Stored;
  }
  if (!Code)
    return nullptr; // Its shapes keep the generic loop.
  std::lock_guard<std::mutex> Lock(FamilyMutex);
  return familyEntry(Family).Code = Code.take();
}

} // namespace gatherjit
