//===- runtime/CApi.cpp - The C embedding API ----------------------------===//
//
// Thin wrappers over the C++ API: convert, call, record the status for
// gj_last_error(). No exception crosses into C.
//
//===----------------------------------------------------------------------===//

#include "gatherjit/gatherjit.h"

#include "gatherjit/Onnx.h"
#include "gatherjit/Runtime.h"

#include <cstring>
#include <new>
#include <string>
#include <type_traits>

using namespace gatherjit;

struct gj_runtime {
  std::unique_ptr<Runtime> R;
};

struct gj_kernel {
  Kernel K;
};

namespace {

thread_local std::string LastError;
thread_local uint64_t LastPosition = 0;

gj_status record(const Status &S) {
  LastError = S.message();
  LastPosition = S.position().value_or(0);
  switch (S.code()) {
  case ErrorCode::Ok:
    return GJ_OK;
  case ErrorCode::InvalidArgument:
    return GJ_INVALID_ARGUMENT;
  case ErrorCode::Unsupported:
    return GJ_UNSUPPORTED;
  case ErrorCode::IndexOutOfRange:
    return GJ_INDEX_OUT_OF_RANGE;
  case ErrorCode::IoError:
    return GJ_IO_ERROR;
  case ErrorCode::Internal:
    return GJ_INTERNAL;
  }
  return GJ_INTERNAL;
}

gj_status nullArgument(const char *Function, const char *Argument) {
  return record(Status::invalidArgument(std::string(Function) + ": " + Argument + " is NULL"));
}

/// Runs \p Body, turning an escaping exception (out of memory) into a status.
template <typename F> gj_status guarded(F &&Body) {
  try {
    return Body();
  } catch (const std::bad_alloc &) {
    return record(Status::internal("out of memory"));
  } catch (...) {
    return record(Status::internal("unexpected exception"));
  }
}

/// The integer a C caller stored in an enumeration-typed field or
/// argument. C allows any int there; in C++ reading an out-of-range
/// enumeration value is undefined, so its bytes are copied instead.
template <typename Enum> int32_t raw(const Enum &Value) {
  static_assert(sizeof(Enum) == sizeof(int32_t), "C enumerations are int-sized here");
  int32_t I;
  std::memcpy(&I, &Value, sizeof(I));
  return I;
}

bool validType(int32_t T) { return T >= GJ_FLOAT64 && T <= GJ_OPAQUE; }

Expected<TensorDesc> toTensor(const gj_tensor_desc &C, const char *Name) {
  const int32_t Type = raw(C.data_type);
  if (!validType(Type))
    return Status::invalidArgument(std::string(Name) + ".data_type = " + std::to_string(Type) +
                                   " is not a gj_data_type");
  if (C.rank > GJ_MAX_RANK)
    return Status::invalidArgument(std::string(Name) + ".rank = " + std::to_string(C.rank) +
                                   " exceeds GJ_MAX_RANK (8)");
  TensorDesc T;
  T.Type = static_cast<DataType>(Type);
  T.Sizes.assign(C.sizes, C.sizes + C.rank);
  if (C.has_strides)
    T.Strides = std::vector<uint64_t>(C.strides, C.strides + C.rank);
  if (C.total_bytes)
    T.TotalBytes = C.total_bytes;
  T.OpaqueBytes = C.opaque_bytes;
  return T;
}

gj_tensor_desc fromTensor(const TensorDesc &T) {
  gj_tensor_desc C{};
  C.data_type = static_cast<gj_data_type>(T.Type);
  C.rank = T.rank();
  for (unsigned D = 0; D < T.rank(); ++D)
    C.sizes[D] = T.Sizes[D];
  if (T.Strides) {
    C.has_strides = 1;
    for (unsigned D = 0; D < T.rank(); ++D)
      C.strides[D] = (*T.Strides)[D];
  }
  C.total_bytes = T.TotalBytes.value_or(0);
  C.opaque_bytes = T.OpaqueBytes;
  return C;
}

/// The C descriptor of the node \p D describes.
Status fillDescriptor(const char *Function, OnnxDesc &D, gj_descriptor &Out) {
  if (D.output().rank() > GJ_MAX_RANK)
    return Status::unsupported(std::string(Function) + ": the output rank " +
                               std::to_string(D.output().rank()) + " exceeds GJ_MAX_RANK (8)");
  Out = gj_descriptor{};
  Out.input = fromTensor(D.input());
  Out.indices = fromTensor(D.indices());
  Out.output = fromTensor(D.output());
  Out.policy = GJ_OOB_CHECK;
  switch (D.Op) {
  case OpKind::GatherElements:
    Out.op = GJ_GATHER_ELEMENTS;
    Out.axis = D.GatherElements.Axis;
    Out.allow_smaller_indices = D.options(OobPolicy::Check).AllowSmallerIndices;
    break;
  case OpKind::Gather:
    Out.op = GJ_GATHER;
    Out.axis = D.Gather.Axis;
    Out.index_dimensions = D.Gather.IndexDimensions;
    break;
  case OpKind::GatherND:
    Out.op = GJ_GATHER_ND;
    Out.input_dimension_count = D.GatherND.InputDimensionCount;
    Out.indices_dimension_count = D.GatherND.IndicesDimensionCount;
    Out.batch_dimension_count = D.GatherND.BatchDimensionCount;
    break;
  }
  return Status::ok();
}

/// The name of a NULL buffer the kernel would read or write, if any.
const char *missingBuffer(const Kernel &K, const void *Input, const void *Indices,
                          const void *Output) {
  const ValidDesc &D = K.desc();
  if (!Output && requiredElements(D.Output))
    return "output";
  if (!Indices && requiredElements(D.Indices) && D.outputElements())
    return "indices";
  if (!Input && requiredElements(D.Input) && D.outputElements())
    return "input";
  return nullptr;
}

/// The C API's call \p Name of \p Kernel on its three buffers, each
/// checked first: \p Call(K) runs it.
template <typename CallT>
gj_status onBuffers(const char *Name, const gj_kernel *Kernel, const void *Input,
                    const void *Indices, void *Output, CallT &&Call) {
  if (!Kernel)
    return nullArgument(Name, "kernel");
  if (const char *Missing = missingBuffer(Kernel->K, Input, Indices, Output))
    return nullArgument(Name, Missing);
  return guarded([&] { return record(Call(Kernel->K)); });
}

/// The ONNX builders: \p Data and \p Indices converted, the node
/// described, \p Out filled.
gj_status buildOnnx(const char *Function, OpKind Op, const gj_tensor_desc *Data,
                    const gj_tensor_desc *Indices, int64_t Axis, gj_descriptor *Out) {
  if (!Data || !Indices || !Out)
    return nullArgument(Function, !Data ? "data" : !Indices ? "indices" : "out");
  return guarded([&] {
    Expected<TensorDesc> D = toTensor(*Data, "data"), I = toTensor(*Indices, "indices");
    if (!D || !I)
      return record(!D ? D.status() : I.status());
    Expected<OnnxDesc> Node = onnxDesc({Op, D.take(), I.take(), Axis});
    if (!Node)
      return record(Node.status());
    return record(fillDescriptor(Function, *Node, *Out));
  });
}

} // namespace

extern "C" {

const char *gj_last_error(void) { return LastError.c_str(); }
uint64_t gj_last_error_position(void) { return LastPosition; }

const char *gj_status_name(gj_status S) {
  switch (raw(S)) {
  case GJ_OK:
    return "ok";
  case GJ_INVALID_ARGUMENT:
    return "invalid argument";
  case GJ_UNSUPPORTED:
    return "unsupported";
  case GJ_INDEX_OUT_OF_RANGE:
    return "index out of range";
  case GJ_INTERNAL:
    return "internal error";
  case GJ_IO_ERROR:
    return "I/O error";
  }
  return "unknown status";
}

const char *gj_data_type_name(gj_data_type T) {
  return validType(raw(T)) ? dataTypeName(static_cast<DataType>(raw(T))) : nullptr;
}

gj_tensor_desc gj_tensor(gj_data_type Type, uint32_t Rank, const uint64_t *Sizes) {
  gj_tensor_desc C{};
  std::memcpy(&C.data_type, &Type, sizeof(Type)); // Checked when used.
  C.rank = Rank;
  for (uint32_t D = 0; D < Rank && D < GJ_MAX_RANK && Sizes; ++D)
    C.sizes[D] = Sizes[D];
  return C;
}

uint64_t gj_tensor_bytes(const gj_tensor_desc *C) {
  if (!C)
    return 0;
  Expected<TensorDesc> T = toTensor(*C, "tensor");
  if (!T)
    return 0;
  if (!T->Strides)
    T->Strides = packedStrides(T->Sizes);
  return requiredElements(*T) * T->elementBytes();
}

gj_status gj_onnx_gather_elements(const gj_tensor_desc *Data, const gj_tensor_desc *Indices,
                                  int64_t Axis, gj_descriptor *Out) {
  return buildOnnx("gj_onnx_gather_elements", OpKind::GatherElements, Data, Indices, Axis, Out);
}

gj_status gj_onnx_gather(const gj_tensor_desc *Data, const gj_tensor_desc *Indices, int64_t Axis,
                         gj_descriptor *Out) {
  return buildOnnx("gj_onnx_gather", OpKind::Gather, Data, Indices, Axis, Out);
}

gj_status gj_onnx_gather_nd(const gj_tensor_desc *Data, const gj_tensor_desc *Indices,
                            int64_t BatchDims, gj_descriptor *Out) {
  return buildOnnx("gj_onnx_gather_nd", OpKind::GatherND, Data, Indices, BatchDims, Out);
}

void gj_runtime_options_init(gj_runtime_options *Options) {
  if (!Options)
    return;
  const RuntimeOptions Defaults;
  Options->opt_level = static_cast<gj_opt_level>(Defaults.Opt);
  Options->cache_capacity = Defaults.CacheCapacity;
  Options->threads = Defaults.Threads;
  Options->cache_dir = nullptr;
  Options->cache_dir_limit = Defaults.CacheDirLimit;
  Options->no_quick_tier = !Defaults.QuickTier;
  Options->specialize = static_cast<gj_specialize>(Defaults.Specialization);
  Options->cache_bytes = Defaults.CacheBytes;
  Options->epilogue_seconds = Defaults.Epilogues.Seconds;
  Options->epilogue_memory = Defaults.Epilogues.MemoryBytes;
  Options->epilogue_in_process = !Defaults.Epilogues.Isolated;
  Options->epilogue_checked = Defaults.Epilogues.Checked;
  Options->device = nullptr;
}

gj_status gj_runtime_create(const gj_runtime_options *Options, gj_runtime **Out) {
  if (!Out)
    return nullArgument("gj_runtime_create", "out");
  *Out = nullptr;
  return guarded([&] {
    RuntimeOptions O;
    if (Options) {
      const int32_t Level = raw(Options->opt_level);
      if (Level < GJ_O0 || Level > GJ_O3)
        return record(Status::invalidArgument(
            "gj_runtime_options.opt_level = " + std::to_string(Level) + " is not GJ_O0..GJ_O3"));
      O.Opt = static_cast<OptLevel>(Level);
      const int32_t Mode = raw(Options->specialize);
      if (Mode < GJ_SPECIALIZE_ADAPTIVE || Mode > GJ_SPECIALIZE_NEVER)
        return record(Status::invalidArgument(
            "gj_runtime_options.specialize = " + std::to_string(Mode) +
            " is not GJ_SPECIALIZE_ADAPTIVE, GJ_SPECIALIZE_COMPILE or GJ_SPECIALIZE_NEVER"));
      static_assert(GJ_SPECIALIZE_ADAPTIVE == static_cast<int>(Specialize::Adaptive) &&
                    GJ_SPECIALIZE_COMPILE == static_cast<int>(Specialize::AtCompile) &&
                    GJ_SPECIALIZE_NEVER == static_cast<int>(Specialize::Never));
      O.Specialization = static_cast<Specialize>(Mode);
      O.CacheBytes = Options->cache_bytes;
      O.CacheCapacity = Options->cache_capacity;
      O.Threads = Options->threads;
      if (Options->cache_dir)
        O.CacheDir = Options->cache_dir;
      O.CacheDirLimit = Options->cache_dir_limit;
      O.QuickTier = Options->no_quick_tier == 0;
      if (!(Options->epilogue_seconds > 0))
        return record(Status::invalidArgument(
            "gj_runtime_options.epilogue_seconds = " + std::to_string(Options->epilogue_seconds) +
            " is not a positive number of seconds"));
      if (Options->epilogue_memory < (uint64_t(64) << 20))
        return record(Status::invalidArgument(
            "gj_runtime_options.epilogue_memory = " + std::to_string(Options->epilogue_memory) +
            " is below 64 MiB, too little for clang"));
      O.Epilogues.Seconds = Options->epilogue_seconds;
      O.Epilogues.MemoryBytes = Options->epilogue_memory;
      O.Epilogues.Isolated = Options->epilogue_in_process == 0;
      O.Epilogues.Checked = Options->epilogue_checked != 0;
      if (Options->device)
        O.Device = Options->device;
    }
    Expected<std::unique_ptr<Runtime>> R = Runtime::create(O);
    if (!R)
      return record(R.status());
    *Out = new gj_runtime{R.take()};
    return record(Status::ok());
  });
}

void gj_runtime_destroy(gj_runtime *Runtime) { delete Runtime; }

void gj_runtime_wait_background(gj_runtime *Runtime) {
  if (Runtime)
    Runtime->R->drainBackground();
}

void gj_runtime_stats(const gj_runtime *Runtime, gj_cache_stats *Out) {
  if (!Runtime || !Out)
    return;
  const CacheStats S = Runtime->R->stats();
  *Out = gj_cache_stats{S.Hits,
                        S.Misses,
                        S.Evictions,
                        S.Entries,
                        S.LiveKernels,
                        S.DiskLoads,
                        S.DiskStores,
                        S.CompileMs,
                        S.Upgrades,
                        S.Specializations,
                        S.SpecializedAtCompile,
                        S.GenericEntries,
                        S.CacheBytes,
                        S.FamilyKernels,
                        S.FamilyEntries};
}

namespace {

/// gj_compile, with \p Fused if given.
gj_status compileDesc(gj_runtime *Runtime, const gj_descriptor *Desc, const Epilogue *Fused,
                      gj_kernel **Out) {
  *Out = nullptr;
  return guarded([&] {
    Expected<TensorDesc> In = toTensor(Desc->input, "input");
    Expected<TensorDesc> Idx = toTensor(Desc->indices, "indices");
    Expected<TensorDesc> Outp = toTensor(Desc->output, "output");
    for (const Expected<TensorDesc> *T : {&In, &Idx, &Outp})
      if (!*T)
        return record(T->status());
    const int32_t Policy = raw(Desc->policy), Op = raw(Desc->op);
    if (Policy != GJ_OOB_CHECK && Policy != GJ_OOB_CLAMP && Policy != GJ_OOB_CLIP)
      return record(Status::invalidArgument("policy = " + std::to_string(Policy) +
                                            " is not GJ_OOB_CHECK, GJ_OOB_CLAMP or GJ_OOB_CLIP"));
    ValidateOptions Options;
    static_assert(GJ_OOB_CHECK == static_cast<int>(OobPolicy::Check) &&
                  GJ_OOB_CLAMP == static_cast<int>(OobPolicy::Clamp) &&
                  GJ_OOB_CLIP == static_cast<int>(OobPolicy::Clip));
    Options.Policy = static_cast<OobPolicy>(Policy);
    Options.AllowSmallerIndices = Desc->allow_smaller_indices != 0;
    auto Compile = [&](const auto &D) {
      return Fused ? Runtime->R->compile(D, Options, *Fused) : Runtime->R->compile(D, Options);
    };
    Expected<Kernel> K = Status::internal("unset");
    if (Op == GJ_GATHER_ELEMENTS) {
      K = Compile(
          GatherElementsDesc{std::move(*In), std::move(*Idx), std::move(*Outp), Desc->axis});
    } else if (Op == GJ_GATHER) {
      K = Compile(GatherDesc{std::move(*In), std::move(*Idx), std::move(*Outp), Desc->axis,
                             Desc->index_dimensions});
    } else if (Op == GJ_GATHER_ND) {
      K = Compile(GatherNDDesc{std::move(*In), std::move(*Idx), std::move(*Outp),
                               Desc->input_dimension_count, Desc->indices_dimension_count,
                               Desc->batch_dimension_count});
    } else {
      return record(Status::invalidArgument(
          "op = " + std::to_string(Op) + " is not GJ_GATHER_ELEMENTS, GJ_GATHER or GJ_GATHER_ND"));
    }
    if (!K)
      return record(K.status());
    *Out = new gj_kernel{K.take()};
    return record(Status::ok());
  });
}

} // namespace

gj_status gj_compile(gj_runtime *Runtime, const gj_descriptor *Desc, gj_kernel **Out) {
  if (!Runtime || !Desc || !Out)
    return nullArgument("gj_compile", !Runtime ? "runtime" : !Desc ? "desc" : "out");
  return compileDesc(Runtime, Desc, nullptr, Out);
}

gj_status gj_compile_epilogue(gj_runtime *Runtime, const gj_descriptor *Desc, const gj_epilogue *E,
                              gj_kernel **Out) {
  if (!Runtime || !Desc || !E || !Out)
    return nullArgument("gj_compile_epilogue", !Runtime ? "runtime"
                                               : !Desc  ? "desc"
                                               : !E     ? "epilogue"
                                                        : "out");
  if (!E->source || !E->function)
    return nullArgument("gj_compile_epilogue",
                        !E->source ? "epilogue->source" : "epilogue->function");
  if (!E->params && E->params_size)
    return nullArgument("gj_compile_epilogue", "epilogue->params");
  Epilogue Fused;
  Fused.Source = E->source;
  Fused.Function = E->function;
  if (E->file_name)
    Fused.FileName = E->file_name;
  const auto *P = static_cast<const unsigned char *>(E->params);
  Fused.Params.assign(P, P + (P ? E->params_size : 0));
  Fused.Checked = E->checked != 0;
  return compileDesc(Runtime, Desc, &Fused, Out);
}

gj_status gj_kernel_run(const gj_kernel *Kernel, const void *Input, const void *Indices,
                        void *Output) {
  return onBuffers("gj_kernel_run", Kernel, Input, Indices, Output,
                   [&](const auto &K) { return K.run(Input, Indices, Output); });
}

gj_status gj_kernel_run_stream(const gj_kernel *Kernel, const void *Input, const void *Indices,
                               void *Output, void *Stream) {
  return onBuffers("gj_kernel_run_stream", Kernel, Input, Indices, Output,
                   [&](const auto &K) { return K.runOnStream(Input, Indices, Output, Stream); });
}

gj_status gj_kernel_launch_stream(const gj_kernel *Kernel, const void *Input, const void *Indices,
                                  void *Output, void *Stream) {
  return onBuffers("gj_kernel_launch_stream", Kernel, Input, Indices, Output,
                   [&](const auto &K) { return K.launchOnStream(Input, Indices, Output, Stream); });
}

gj_status gj_kernel_finish_stream(const gj_kernel *Kernel, void *Stream) {
  if (!Kernel)
    return nullArgument("gj_kernel_finish_stream", "kernel");
  return guarded([&] { return record(Kernel->K.finishStream(Stream)); });
}

gj_status gj_kernel_run_rows(const gj_kernel *Kernel, const void *Input, const void *Indices,
                             void *Output, uint64_t Begin, uint64_t End) {
  if (!Kernel)
    return nullArgument("gj_kernel_run_rows", "kernel");
  if (const char *Missing =
          Begin < End ? missingBuffer(Kernel->K, Input, Indices, Output) : nullptr)
    return nullArgument("gj_kernel_run_rows", Missing);
  return guarded([&] { return record(Kernel->K.runRows(Input, Indices, Output, Begin, End)); });
}

uint64_t gj_kernel_rows(const gj_kernel *Kernel) { return Kernel ? Kernel->K.rows() : 0; }

const char *gj_kernel_symbol(const gj_kernel *Kernel) {
  return Kernel ? Kernel->K.symbolName().c_str() : "";
}

gj_kernel_tier gj_kernel_tier_of(const gj_kernel *Kernel) {
  static_assert(GJ_TIER_GENERIC == static_cast<int>(KernelTier::Generic) &&
                GJ_TIER_FAMILY == static_cast<int>(KernelTier::Family) &&
                GJ_TIER_SPECIALIZED == static_cast<int>(KernelTier::Specialized));
  return static_cast<gj_kernel_tier>(Kernel ? Kernel->K.tier() : KernelTier::Specialized);
}

void gj_kernel_release(gj_kernel *Kernel) { delete Kernel; }

} // extern "C"
