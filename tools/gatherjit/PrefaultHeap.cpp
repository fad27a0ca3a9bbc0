//===- tools/gatherjit/PrefaultHeap.cpp - The compilers' heap, faulted ahead -===//
//
// A compiling run's first kernel spent much of its time faulting in fresh
// heap pages, one at a time: the X86 code generator's action tables alone
// are 54 pages. gatherjit runs its compilers with a 4 MiB malloc top pad
// (execSibling), so the heap they will use is mapped from the start; before
// LLVM's static initializers run, a second thread asks the kernel to fault
// all of it in writable (MADV_POPULATE_WRITE, which touches no byte, so it
// cannot race with malloc), while this thread goes on. Where the kernel
// lacks it, or malloc has no such heap (sanitizers), nothing happens.
//
//===----------------------------------------------------------------------===//

#include <malloc.h>
#include <pthread.h>
#include <sys/mman.h>
#include <unistd.h>

#include <cstdint>
#include <cstdlib>

namespace {

void *populateHeap(void *) {
#ifdef MADV_POPULATE_WRITE
  const auto End = reinterpret_cast<uintptr_t>(sbrk(0));
  const size_t Size = mallinfo2().arena; // The main arena: the only one yet.
  const uintptr_t Page = static_cast<uintptr_t>(sysconf(_SC_PAGESIZE));
  if (End == static_cast<uintptr_t>(-1) || Size == 0 || Size > End)
    return nullptr;
  const uintptr_t Begin = (End - Size + Page - 1) & ~(Page - 1);
  if (Begin < End)
    madvise(reinterpret_cast<void *>(Begin), End - Begin, MADV_POPULATE_WRITE);
#endif
  return nullptr;
}

// Priority 101: before the static initializers, whose allocations it helps.
__attribute__((constructor(101))) void prefaultHeap() {
  std::free(std::malloc(1)); // Malloc's heap exists from here on.
  pthread_attr_t Attr;
  if (pthread_attr_init(&Attr) != 0)
    return;
  pthread_attr_setdetachstate(&Attr, PTHREAD_CREATE_DETACHED);
  pthread_t Thread;
  (void)pthread_create(&Thread, &Attr, populateHeap, nullptr);
  pthread_attr_destroy(&Attr);
}

} // namespace
