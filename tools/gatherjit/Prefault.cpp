//===- tools/gatherjit/Prefault.cpp - The compilers' memory, faulted ahead -===//
//
// A compiling run spent much of its start and its first kernel on first
// touches of fresh pages, one fault each: LLVM's static initializers fill
// the program's 300 KB of .data and .bss, and the X86 code generator's
// action tables alone are 54 pages of heap. gatherjit runs its compilers
// with a 4 MiB malloc top pad (execSibling), so the heap they will use is
// mapped from the start. Before the static initializers run, a second
// thread asks the kernel to fault in the program's writable data, then the
// heap (MADV_POPULATE_WRITE, which touches no byte, so it cannot race with
// the first thread's writes or with malloc), while the first thread goes
// on. Where the kernel lacks it, or malloc has no such heap (sanitizers),
// nothing happens. Then it reads the code that start-up and a default
// compile run, which the function order lays out first (about 4 MB): the
// first kernel's compile then finds most of it in the shared cache rather
// than in memory, about 1 ms sooner on this project's machine.
//
//===----------------------------------------------------------------------===//

#include <link.h>
#include <malloc.h>
#include <pthread.h>
#include <sys/mman.h>
#include <unistd.h>

#include <algorithm>
#include <cstdint>
#include <cstdlib>

/// Marks the end of the code a default compile runs (see touchFirstRunCode):
/// in a section of its own, which lld places by the list alone.
extern "C" __attribute__((noinline, used, section(".text.gatherjit_first_run_end"))) void
gatherjit_first_run_end() {}

namespace {

#ifdef MADV_POPULATE_WRITE
/// The pages of [\p Begin, \p End): \p Begin's own only if it starts it (the
/// one before may belong to another mapping), \p End's in full.
void populate(uintptr_t Begin, uintptr_t End) {
  const uintptr_t Page = static_cast<uintptr_t>(sysconf(_SC_PAGESIZE));
  Begin = (Begin + Page - 1) & ~(Page - 1);
  End = (End + Page - 1) & ~(Page - 1);
  if (Begin < End)
    madvise(reinterpret_cast<void *>(Begin), End - Begin, MADV_POPULATE_WRITE);
}

/// The program's writable segments, less what the loader made read-only
/// after relocating it (RELRO), which is already faulted in.
int populateData(dl_phdr_info *Info, size_t, void *) {
  uintptr_t RelroEnd = 0;
  for (int I = 0; I < Info->dlpi_phnum; ++I)
    if (Info->dlpi_phdr[I].p_type == PT_GNU_RELRO)
      RelroEnd = Info->dlpi_addr + Info->dlpi_phdr[I].p_vaddr + Info->dlpi_phdr[I].p_memsz;
  for (int I = 0; I < Info->dlpi_phnum; ++I) {
    const ElfW(Phdr) &P = Info->dlpi_phdr[I];
    if (P.p_type != PT_LOAD || !(P.p_flags & PF_W))
      continue;
    const uintptr_t Begin = Info->dlpi_addr + P.p_vaddr, End = Begin + P.p_memsz;
    if (End > RelroEnd)
      populate(std::max(Begin, RelroEnd), End);
  }
  return 1; // The program comes first; the libraries are not ours.
}
#endif

#if GATHERJIT_ORDERED_FUNCTIONS
/// Reads a byte of each cache line of the code a default compile runs:
/// the program's code up to gatherjit_first_run_end, which
/// tools/hot-functions.sh lists after that run's functions (so lld puts it
/// after them). The lines come into the shared cache, and the pages into
/// the page table, before the first thread runs them.
int touchFirstRunCode(dl_phdr_info *Info, size_t, void *) {
  const auto End = reinterpret_cast<uintptr_t>(&gatherjit_first_run_end);
  for (int I = 0; I < Info->dlpi_phnum; ++I) {
    const ElfW(Phdr) &P = Info->dlpi_phdr[I];
    const uintptr_t Begin = Info->dlpi_addr + P.p_vaddr;
    // The list's first run is about 4 MB; past 16, the order is not there.
    if (P.p_type != PT_LOAD || !(P.p_flags & PF_X) || End < Begin || End - Begin > (16u << 20))
      continue;
    unsigned char Sum = 0;
    for (uintptr_t Line = Begin; Line < End; Line += 64)
      Sum ^= *reinterpret_cast<const volatile unsigned char *>(Line);
    (void)Sum;
  }
  return 1; // The program only.
}
#endif

void *populateDataAndHeap(void *) {
#ifdef MADV_POPULATE_WRITE
  dl_iterate_phdr(populateData, nullptr);
  const auto End = reinterpret_cast<uintptr_t>(sbrk(0));
  const size_t Size = mallinfo2().arena; // The main arena: the only one yet.
  if (End != static_cast<uintptr_t>(-1) && Size != 0 && Size <= End)
    populate(End - Size, End);
#endif
#if GATHERJIT_ORDERED_FUNCTIONS
  dl_iterate_phdr(touchFirstRunCode, nullptr);
#endif
  return nullptr;
}

// Priority 101: before the static initializers, whose writes it helps.
__attribute__((constructor(101))) void prefault() {
  std::free(std::malloc(1)); // Malloc's heap exists from here on.
  pthread_attr_t Attr;
  if (pthread_attr_init(&Attr) != 0)
    return;
  pthread_attr_setdetachstate(&Attr, PTHREAD_CREATE_DETACHED);
  pthread_t Thread;
  (void)pthread_create(&Thread, &Attr, populateDataAndHeap, nullptr);
  pthread_attr_destroy(&Attr);
}

} // namespace
