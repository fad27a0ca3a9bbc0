// Embedding gatherjit's runtime from C++: compile an ONNX GatherElements
// node once, run it, compile it again (a cache lookup), and handle a bad
// index and a bad descriptor as values.
#include "gatherjit/Runtime.h"

#include <cstdio>
#include <vector>

using namespace gatherjit;

int main() {
  Expected<std::unique_ptr<Runtime>> Created = Runtime::create();
  if (!Created) {
    std::fprintf(stderr, "error: %s\n", Created.status().message().c_str());
    return 1;
  }
  Runtime &RT = **Created;

  // ONNX GatherElements, axis = 1: data [[1,2],[3,4]], indices [[0,0],[1,0]].
  TensorDesc Data, Indices;
  Data.Type = DataType::Float32;
  Data.Sizes = {2, 2};
  Indices.Type = DataType::Int64;
  Indices.Sizes = {2, 2};
  Expected<GatherElementsDesc> Desc = onnxGatherElements(Data, Indices, 1);
  if (!Desc)
    return 1;
  ValidateOptions Onnx;
  Onnx.AllowSmallerIndices = true;
  Expected<Kernel> K = RT.compile(*Desc, Onnx);
  if (!K) {
    std::fprintf(stderr, "error: %s\n", K.status().message().c_str());
    return 1;
  }
  const float In[4] = {1, 2, 3, 4};
  std::vector<int64_t> Idx = {0, 0, 1, 0};
  float Out[4];
  if (Status S = K->run(In, Idx.data(), Out); !S)
    return 1;
  // The ONNX page's expected output: [[1, 1], [4, 3]].
  const bool Right = Out[0] == 1 && Out[1] == 1 && Out[2] == 4 && Out[3] == 3;
  std::printf("kernel %s: %g %g %g %g\n", K->symbolName().c_str(), Out[0], Out[1], Out[2], Out[3]);

  Expected<Kernel> Again = RT.compile(*Desc, Onnx);
  std::printf("second compile: %s\n", Again && Again->cacheHit() ? "cache hit" : "compiled");

  Idx[3] = -3; // Out of range for a dimension of 2, even after wrap-around.
  Status Bad = K->run(In, Idx.data(), Out);
  std::printf("bad index: %s\n", Bad.message().c_str());

  GatherElementsDesc Wrong = *Desc;
  Wrong.Axis = 5;
  Expected<Kernel> Rejected = RT.compile(Wrong);
  std::printf("bad descriptor: %s\n", Rejected.status().message().c_str());

  CacheStats Stats = RT.stats();
  std::printf("cache: %llu hits, %llu misses\n", static_cast<unsigned long long>(Stats.Hits),
              static_cast<unsigned long long>(Stats.Misses));
  return Right && Again && Again->cacheHit() && Bad.code() == ErrorCode::IndexOutOfRange &&
                 Bad.position() == 3u && !Rejected
             ? 0
             : 1;
}
