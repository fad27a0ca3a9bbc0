//===- python/src/OutputPool.cpp - Large results' memory, reused ---------===//
//
// A large result's buffer goes back to a pool of this process when its
// array dies, and the next result that fits takes it: its pages are mapped
// and written already. A fresh buffer is mapped page by page as the kernel
// first writes it, which costs more than the gather itself where the
// result is large and the kernel fast (see OutputPool::FromBytes).
//
//===----------------------------------------------------------------------===//

#include "Native.h"

#include <algorithm>
#include <bit>
#include <chrono>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <iterator>
#include <list>
#include <mutex>
#include <new>
#include <optional>
#include <system_error>
#include <thread>
#include <unordered_map>

#include <pthread.h>
#include <sys/mman.h>
#include <unistd.h>

namespace gatherjit::binding {
namespace {

class OutputPool;
OutputPool &pool();

class OutputPool {
  using Clock = std::chrono::steady_clock;
  struct Buffer {
    void *Pointer;
    size_t Bytes;
    Clock::time_point Given;
  };

public:
  /// Results of this many bytes or more are pooled. Measured from Python
  /// on a 2-core Xeon: take_along_axis of a FLOAT32 [512, 32768] block by
  /// INT32 [512, 16384] indices (a 32 MiB result) took 13.4 ms into a new
  /// array against 5.8 ms into one written before. On a 2-core Zen 4, a
  /// take of B rows of 1 KiB repeated, a call into numpy's new arrays
  /// against one into pooled buffers: B = 64 2.39 against 2.59 us, B = 100
  /// 3.28 against 3.46, B = 300 9.0 against 8.4, B = 900 28.6 against
  /// 27.4: pooled from 128 KiB, about where a repeated call costs the
  /// same both ways, and the first call of a new size saves its faults.
  static constexpr size_t FromBytes = size_t(128) << 10;
  /// Buffers are taken for results down to this fraction of their size.
  static constexpr size_t MaxWaste = 2;
  /// Allocation and alignment: pages (and so every vector and line), and
  /// huge pages from HugeFromBytes.
  static constexpr size_t Page = 4096, HugePage = size_t(2) << 20;
  static constexpr size_t HugeFromBytes = size_t(4) << 20;
  /// Buffers past the capacity linger this long after their arrays die
  /// (at most a quarter of the machine's memory of them), then go back to
  /// the C library: work that makes results of the same size again and
  /// again takes them mapped, as it would from a capacity that held them,
  /// and memory a workload no longer uses is given back soon after, as
  /// allocators that decay their free pages give it back. dask's take of
  /// 4096 rows across 32 chunks of a 2 GiB array (a 512 MiB result block
  /// and 32 parts of 16 MiB a run; bench/dask_gathers.py, threaded, 2
  /// cores) ran in 0.26-0.50 s a run with the default capacity alone,
  /// where every run faulted in most of its gigabyte anew, and in 0.13 s
  /// with a second's linger.
  static constexpr std::chrono::milliseconds DefaultLinger{1000};

  OutputPool() {
    const long Pages = sysconf(_SC_PHYS_PAGES), PageBytes = sysconf(_SC_PAGESIZE);
    MaxLingering = Pages > 0 && PageBytes > 0 ? size_t(Pages) * size_t(PageBytes) / 4 : 0;
  }

  void *take(size_t Bytes) {
    {
      std::lock_guard<std::mutex> Lock(M);
      // The smallest idle buffer that holds the result without wasting
      // more than half of itself; the most recently given among equals.
      auto Best = Idle.end();
      for (auto It = Idle.begin(); It != Idle.end(); ++It)
        if (It->Bytes >= Bytes && It->Bytes <= Bytes * MaxWaste &&
            (Best == Idle.end() || It->Bytes < Best->Bytes))
          Best = It;
      if (Best != Idle.end()) {
        void *P = Best->Pointer;
        IdleBytes -= Best->Bytes;
        Idle.erase(Best);
        return P;
      }
      // None fits: the smaller ones go back to the C library first, which
      // can map the new buffer over their pages, so results that grow (a
      // batch size that grows) fault in only their growth. Walk (c) of
      // bench/shape_walks.py (results of 256 KiB to 16 MiB, growing, three
      // calls each) took 245-255 ms so, 390-435 ms keeping them idle and
      // 318-396 ms with no pool.
      for (auto It = Idle.begin(); It != Idle.end();)
        It = It->Bytes < Bytes ? release(It) : std::next(It);
    }
    // A large buffer on huge pages where the system grants them for the
    // asking (as numpy asks for its arrays of 4 MiB or more): a 2 MiB
    // fault maps what 512 faults of 4 KiB pages would.
    const bool Huge = Bytes >= HugeFromBytes;
    const size_t Unit = Huge ? HugePage : Page;
    size_t Rounded = (Bytes + Unit - 1) / Unit * Unit;
    if (!Huge) {
      // Up to a quarter of a power of two more (at most a quarter spare):
      // the results of a batch that grows by a little at a time take the
      // buffer of the one before, already mapped, where each new size
      // faulted in a new buffer. Walk (b) of bench/shape_walks.py (results
      // of 1 KiB to 1000 KiB, growing, ten calls each), first walk on a
      // 2-core Zen 4: the first calls of its shapes 36-37 ms in all
      // against 28-29, 6250 page faults against 2500.
      const size_t Quarter = std::bit_floor(Rounded) / 4;
      Rounded = (Rounded + Quarter - 1) / Quarter * Quarter;
    }
    void *P = std::aligned_alloc(Unit, Rounded);
    if (!P)
      throw std::bad_alloc();
    if (Huge)
      (void)::madvise(P, Rounded, MADV_HUGEPAGE);
    std::lock_guard<std::mutex> Lock(M);
    Sizes[P] = Rounded;
    return P;
  }

  void give(void *P) {
    std::lock_guard<std::mutex> Lock(M);
    auto Size = Sizes.find(P);
    const size_t Bytes = Size->second;
    Idle.push_front({P, Bytes, Clock::now()});
    IdleBytes += Bytes;
    trim();
  }

  /// Keeps at most \p Bytes of idle buffers (0: none, and none linger)
  /// and lets those past them linger \p Linger (if given); the capacity it
  /// replaces.
  size_t setCapacity(size_t Bytes, std::optional<Clock::duration> NewLinger) {
    std::lock_guard<std::mutex> Lock(M);
    const size_t Old = Capacity;
    Capacity = Bytes;
    if (NewLinger)
      Linger = *NewLinger;
    trim();
    return Old;
  }

  size_t idleBytes() {
    std::lock_guard<std::mutex> Lock(M);
    return IdleBytes;
  }

  /// pthread_atfork's handlers: the pool's lock is held through a fork, so
  /// that the child's is free; the child has no reaper thread.
  static void beforeFork() { pool().M.lock(); }
  static void afterForkInParent() { pool().M.unlock(); }
  static void afterForkInChild() {
    pool().Reaping = false;
    pool().M.unlock();
  }

private:
  /// Frees the least recently given buffers past the capacity that have
  /// lingered their time (all of them where nothing may linger, and the
  /// oldest where too many bytes linger); a reaper thread frees the rest
  /// when their time comes. Called with M held.
  void trim() {
    const Clock::time_point Now = Clock::now();
    while (IdleBytes > Capacity) {
      const Buffer &Oldest = Idle.back();
      if (Capacity && IdleBytes - Capacity <= MaxLingering && Now - Oldest.Given < Linger)
        break;
      release(std::prev(Idle.end()));
    }
    if (IdleBytes > Capacity && !Reaping) {
      // One thread at a time sleeps until the oldest one's time is up;
      // where none can start, nothing lingers.
      try {
        std::thread([this] { reap(); }).detach();
        Reaping = true;
      } catch (const std::system_error &) {
        while (IdleBytes > Capacity)
          release(std::prev(Idle.end()));
      }
    }
  }

  void reap() {
    std::unique_lock<std::mutex> Lock(M);
    while (IdleBytes > Capacity) {
      const Clock::time_point Due = Idle.back().Given + Linger;
      Lock.unlock();
      std::this_thread::sleep_until(Due);
      Lock.lock();
      // (trim() starts no thread while Reaping holds.)
      trim();
    }
    Reaping = false;
  }

  /// Frees the idle buffer at \p It; the next one.
  std::list<Buffer>::iterator release(std::list<Buffer>::iterator It) {
    IdleBytes -= It->Bytes;
    Sizes.erase(It->Pointer);
    std::free(It->Pointer);
    return Idle.erase(It);
  }

  std::mutex M;
  std::list<Buffer> Idle;                   ///< Most recently given first.
  std::unordered_map<void *, size_t> Sizes; ///< Every buffer made, live or idle.
  size_t IdleBytes = 0;
  size_t Capacity = DefaultOutputPoolBytes;
  Clock::duration Linger = DefaultLinger;
  size_t MaxLingering = 0;
  /// A reaper thread is sleeping until the oldest lingering buffer's time.
  bool Reaping = false;
};

OutputPool &pool() {
  // Outlives every array, even at exit (and its reaper thread's sleep).
  static auto *P = [] {
    pthread_atfork(&OutputPool::beforeFork, &OutputPool::afterForkInParent,
                   &OutputPool::afterForkInChild);
    return new OutputPool();
  }();
  return *P;
}

// DLPack's ABI (the structures of a "dltensor" capsule, which every array
// library takes): a result made as one costs PyTorch a third less to adopt
// than a numpy array through torch.from_numpy.
struct DLDevice {
  int32_t DeviceType, DeviceId;
};
struct DLDataType {
  uint8_t Code, Bits;
  uint16_t Lanes;
};
struct DLTensor {
  void *Data;
  DLDevice Device;
  int32_t Ndim;
  DLDataType Dtype;
  int64_t *Shape, *Strides;
  uint64_t ByteOffset;
};
struct DLManagedTensor {
  DLTensor Tensor;
  void *ManagerContext;
  void (*Deleter)(DLManagedTensor *);
};
constexpr int32_t DLCpu = 1;
constexpr uint8_t DLInt = 0, DLUInt = 1, DLFloat = 2, DLComplex = 5;

/// The bytes of a C-ordered result of \p Type and \p Shape.
size_t resultBytes(const py::dtype &Type, const std::vector<py::ssize_t> &Shape) {
  size_t Bytes = itemSize(Type);
  for (py::ssize_t S : Shape)
    Bytes *= static_cast<size_t>(S);
  return Bytes;
}

/// pool().take(Bytes) for a result of \p Type and \p Shape; where the
/// system refuses the memory, a MemoryError that names what was asked for
/// (as numpy's own does), not the bare std::bad_alloc.
void *takeResult(const py::dtype &Type, const std::vector<py::ssize_t> &Shape, size_t Bytes) {
  try {
    return pool().take(Bytes);
  } catch (const std::bad_alloc &) {
    static const char *Units[] = {"bytes", "KiB", "MiB", "GiB", "TiB", "PiB", "EiB"};
    double Amount = static_cast<double>(Bytes);
    int Unit = 0;
    for (; Amount >= 1024 && Unit < 6; ++Unit)
      Amount /= 1024;
    char Size[32];
    std::snprintf(Size, sizeof(Size), "%.1f %s", Amount, Units[Unit]);
    const std::string Message =
        std::string("cannot allocate ") + Size + " for the result, of shape " +
        tupleString<uint64_t>({Shape.begin(), Shape.end()}) + " and dtype " + dtypeString(Type);
    PyErr_SetString(PyExc_MemoryError, Message.c_str());
    throw py::error_already_set();
  }
}

/// A DLPack result's header, in one block of memory with its shape and
/// strides after it and, for a small result, its bytes (a large one's
/// come from the pool).
struct DlpackResult {
  DLManagedTensor Managed{};
  size_t Bytes = 0;
  bool Pooled = false;
};
constexpr size_t Line = 64;
size_t wholeLines(size_t Bytes) { return (Bytes + Line - 1) / Line * Line; }

void deleteDlpackResult(DLManagedTensor *M) {
  auto *R = static_cast<DlpackResult *>(M->ManagerContext);
  if (R->Pooled)
    pool().give(M->Tensor.Data);
  R->~DlpackResult();
  std::free(R);
}

/// \p Type as DLPack's type code, where PyTorch takes it from DLPack as
/// from_numpy takes the numpy dtype; nullopt otherwise.
std::optional<uint8_t> dlpackCode(const py::dtype &Type) {
  if (Type.byteorder() == '>')
    return std::nullopt;
  switch (Type.kind()) {
  case 'f':
    return DLFloat;
  case 'i':
    return DLInt;
  case 'u': // PyTorch's uint8 (its wider unsigned types are recent).
    return itemSize(Type) == 1 ? std::optional<uint8_t>(DLUInt) : std::nullopt;
  case 'c':
    return DLComplex;
  default:
    return std::nullopt;
  }
}

} // namespace

std::optional<py::capsule> newDlpackResult(const py::dtype &Type,
                                           const std::vector<py::ssize_t> &Shape, void *&Data) {
  const std::optional<uint8_t> Code = dlpackCode(Type);
  if (!Code)
    return std::nullopt;
  const size_t Bytes = resultBytes(Type, Shape);
  const size_t Rank = Shape.size();
  const bool Pooled = Bytes >= OutputPool::FromBytes;
  const size_t Head = wholeLines(sizeof(DlpackResult) + 2 * Rank * sizeof(int64_t));
  void *Block = std::aligned_alloc(Line, Head + (Pooled ? 0 : wholeLines(Bytes)));
  if (!Block)
    throw std::bad_alloc();
  auto *R = new (Block) DlpackResult;
  R->Bytes = Bytes;
  R->Pooled = Pooled;
  DLTensor &T = R->Managed.Tensor;
  T.Shape = reinterpret_cast<int64_t *>(R + 1);
  T.Strides = T.Shape + Rank;
  for (size_t D = Rank; D-- > 0;) {
    T.Shape[D] = Shape[D];
    T.Strides[D] = D + 1 == Rank ? 1 : T.Strides[D + 1] * T.Shape[D + 1];
  }
  T.Device = {DLCpu, 0};
  T.Ndim = static_cast<int32_t>(Rank);
  T.Dtype = {*Code, static_cast<uint8_t>(itemSize(Type) * 8), 1};
  R->Managed.ManagerContext = R;
  R->Managed.Deleter = deleteDlpackResult;
  if (!Pooled) {
    T.Data = static_cast<char *>(Block) + Head;
  } else {
    try {
      T.Data = takeResult(Type, Shape, Bytes);
    } catch (...) {
      std::free(Block);
      throw;
    }
  }
  Data = T.Data;
  // A capsule no library took (still named "dltensor") frees the result.
  PyObject *C = PyCapsule_New(&R->Managed, "dltensor", [](PyObject *Capsule) {
    if (PyCapsule_IsValid(Capsule, "dltensor")) {
      auto *M = static_cast<DLManagedTensor *>(PyCapsule_GetPointer(Capsule, "dltensor"));
      M->Deleter(M);
    }
  });
  if (!C) {
    deleteDlpackResult(&R->Managed);
    throw py::error_already_set();
  }
  return py::reinterpret_steal<py::capsule>(C);
}

py::array newArray(const py::dtype &Type, const std::vector<py::ssize_t> &Shape) {
  const size_t Bytes = resultBytes(Type, Shape);
  // numpy initializes references in new arrays; a pooled buffer holds
  // the bytes of an earlier result.
  if (Bytes < OutputPool::FromBytes || holdsReferences(Type))
    return cOrderArray(Type, Shape);
  void *P = takeResult(Type, Shape, Bytes);
  py::capsule Owner(P, [](void *Q) { pool().give(Q); });
  return cOrderArray(Type, Shape, P, Owner);
}

py::array cOrderArray(const py::dtype &Type, const std::vector<py::ssize_t> &Shape, void *Memory,
                      py::handle Owner) {
  std::vector<py::ssize_t> Strides(Shape.size());
  py::ssize_t Step = static_cast<py::ssize_t>(itemSize(Type));
  for (size_t D = Shape.size(); D-- > 0;) {
    Strides[D] = Step;
    Step *= std::max<py::ssize_t>(Shape[D], 1);
  }
  return py::array(Type, Shape, Strides, Memory, Owner);
}

size_t setOutputPool(size_t Bytes, std::optional<double> LingerSeconds) {
  std::optional<std::chrono::steady_clock::duration> Linger;
  if (LingerSeconds)
    Linger = std::chrono::duration_cast<std::chrono::steady_clock::duration>(
        std::chrono::duration<double>(*LingerSeconds));
  return pool().setCapacity(Bytes, Linger);
}
size_t outputPoolIdleBytes() { return pool().idleBytes(); }

} // namespace gatherjit::binding
