# The JIT half of gatherjit: LLVM 19 and oneTBB, both from Debian packages.
# LLVM's version file accepts only an exact major.minor, so check the major.
find_package(LLVM REQUIRED CONFIG HINTS /usr/lib/llvm-19/lib/cmake/llvm NO_DEFAULT_PATH)
if(NOT LLVM_VERSION_MAJOR EQUAL 19)
  message(FATAL_ERROR "gatherjit needs LLVM 19 (llvm-19-dev), found ${LLVM_PACKAGE_VERSION}")
endif()
find_package(TBB REQUIRED)
message(STATUS "gatherjit: LLVM ${LLVM_PACKAGE_VERSION} from ${LLVM_DIR}")

add_library(gatherjit_lib STATIC
  compiler/spec/KernelSpec.cpp
  compiler/emit/EmitKernel.cpp
  compiler/optimize/Optimize.cpp
  compiler/backend/Target.cpp
  compiler/backend/Jit.cpp
  compiler/backend/Aot.cpp
  runtime/Runtime.cpp
  runtime/DiskCache.cpp
  runtime/CApi.cpp
  runtime/ThreadPool.cpp
  runtime/GenericKernel.cpp)
set_target_properties(gatherjit_lib PROPERTIES POSITION_INDEPENDENT_CODE ON)
target_include_directories(gatherjit_lib
  PUBLIC $<BUILD_INTERFACE:${PROJECT_SOURCE_DIR}/include> $<INSTALL_INTERFACE:include>
  PRIVATE $<BUILD_INTERFACE:${PROJECT_SOURCE_DIR}>)
target_include_directories(gatherjit_lib SYSTEM PRIVATE ${LLVM_INCLUDE_DIRS})
separate_arguments(GATHERJIT_LLVM_DEFINITIONS NATIVE_COMMAND "${LLVM_DEFINITIONS}")
target_compile_definitions(gatherjit_lib PRIVATE ${GATHERJIT_LLVM_DEFINITIONS})
# LLVM is built without RTTI; classes deriving from LLVM's must match.
target_compile_options(gatherjit_lib PRIVATE -fno-rtti)
target_link_libraries(gatherjit_lib PUBLIC gatherjit_frontend PRIVATE LLVM TBB::tbb)
