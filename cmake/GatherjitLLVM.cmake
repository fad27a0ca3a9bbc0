# The JIT half of gatherjit: LLVM 19 and oneTBB, both from Debian packages.
# LLVM's version file accepts only an exact major.minor, so check the major.
find_package(LLVM REQUIRED CONFIG HINTS /usr/lib/llvm-19/lib/cmake/llvm NO_DEFAULT_PATH)
if(NOT LLVM_VERSION_MAJOR EQUAL 19)
  message(FATAL_ERROR "gatherjit needs LLVM 19 (llvm-19-dev), found ${LLVM_PACKAGE_VERSION}")
endif()
find_package(TBB REQUIRED)

# How LLVM is linked. By default only the components gatherjit uses, from
# Debian's static libraries, into libgatherjit.so (their symbols hidden
# there), the command line, the tests and the benchmarks: a process loads
# no libLLVM.so, starts faster, and can hold another LLVM beside ours.
# GATHERJIT_SHARED_LLVM links Debian's libLLVM.so instead (for
# distribution packaging).
option(GATHERJIT_SHARED_LLVM "Link the shared libLLVM.so instead of static components" OFF)
add_library(gatherjit_llvm INTERFACE)
if(GATHERJIT_SHARED_LLVM)
  target_link_libraries(gatherjit_llvm INTERFACE LLVM)
  message(STATUS "gatherjit: LLVM ${LLVM_PACKAGE_VERSION} from ${LLVM_DIR}, shared")
else()
  # Debian's LLVMSupport names these targets without defining them.
  find_package(ZLIB REQUIRED)
  if(NOT TARGET zstd::libzstd_shared)
    find_library(GATHERJIT_ZSTD zstd REQUIRED)
    add_library(zstd::libzstd_shared UNKNOWN IMPORTED)
    set_target_properties(zstd::libzstd_shared PROPERTIES IMPORTED_LOCATION ${GATHERJIT_ZSTD})
  endif()
  llvm_map_components_to_libnames(GATHERJIT_LLVM_LIBS
    core passes orcjit orctargetprocess jitlink object mc target codegen support targetparser
    x86codegen x86desc x86info aarch64codegen aarch64desc aarch64info)
  target_link_libraries(gatherjit_llvm INTERFACE ${GATHERJIT_LLVM_LIBS})
  # Only what is referenced is a dependency (LLVMSupport names libz3).
  target_link_options(gatherjit_llvm INTERFACE -Wl,--as-needed)
  message(STATUS "gatherjit: LLVM ${LLVM_PACKAGE_VERSION} from ${LLVM_DIR}, static components")
endif()

add_library(gatherjit_lib STATIC
  compiler/spec/KernelSpec.cpp
  compiler/plan/KernelPlan.cpp
  compiler/emit/EmitKernel.cpp
  compiler/emit/EmitRows.cpp
  compiler/pipeline/Pipeline.cpp
  compiler/optimize/Optimize.cpp
  compiler/optimize/OptLevel.cpp
  compiler/backend/Target.cpp
  compiler/backend/Jit.cpp
  compiler/backend/Aot.cpp
  runtime/Runtime.cpp
  runtime/Kernel.cpp
  runtime/DiskCache.cpp
  runtime/CApi.cpp
  runtime/ThreadPool.cpp)
set_target_properties(gatherjit_lib PROPERTIES POSITION_INDEPENDENT_CODE ON)
target_include_directories(gatherjit_lib
  PUBLIC $<BUILD_INTERFACE:${PROJECT_SOURCE_DIR}/include> $<INSTALL_INTERFACE:include>
  PRIVATE $<BUILD_INTERFACE:${PROJECT_SOURCE_DIR}>)
target_include_directories(gatherjit_lib SYSTEM PRIVATE ${LLVM_INCLUDE_DIRS})
separate_arguments(GATHERJIT_LLVM_DEFINITIONS NATIVE_COMMAND "${LLVM_DEFINITIONS}")
target_compile_definitions(gatherjit_lib PRIVATE ${GATHERJIT_LLVM_DEFINITIONS})
# LLVM is built without RTTI; classes deriving from LLVM's must match.
# LLVM's inline functions instantiated here stay hidden, like the static
# components themselves (see GatherjitPackage.cmake).
target_compile_options(gatherjit_lib PRIVATE -fno-rtti -fvisibility-inlines-hidden)
target_link_libraries(gatherjit_lib PUBLIC gatherjit_frontend PRIVATE gatherjit_llvm TBB::tbb)
