# The JIT half of gatherjit: LLVM 19 and oneTBB, both from Debian packages.
# LLVM's version file accepts only an exact major.minor, so check the major.
find_package(LLVM REQUIRED CONFIG HINTS /usr/lib/llvm-19/lib/cmake/llvm NO_DEFAULT_PATH)
if(NOT LLVM_VERSION_MAJOR EQUAL 19)
  message(FATAL_ERROR "gatherjit needs LLVM 19 (llvm-19-dev), found ${LLVM_PACKAGE_VERSION}")
endif()
find_package(TBB REQUIRED)

# Kernel cache keys name the compiler's build: a hash of its sources and
# LLVM's version (see runtime/DiskCache.h), computed at build time.
file(GLOB_RECURSE GATHERJIT_COMPILER_FILES CONFIGURE_DEPENDS
  ${PROJECT_SOURCE_DIR}/compiler/*.cpp ${PROJECT_SOURCE_DIR}/compiler/*.h)
list(SORT GATHERJIT_COMPILER_FILES)
set(GATHERJIT_COMPILER_ID_H ${PROJECT_BINARY_DIR}/generated/gatherjit/CompilerId.h)
add_custom_command(OUTPUT ${GATHERJIT_COMPILER_ID_H}
  COMMAND ${CMAKE_COMMAND} -DOUT=${GATHERJIT_COMPILER_ID_H}
    -DLLVM_VERSION=${LLVM_PACKAGE_VERSION} "-DFILES=${GATHERJIT_COMPILER_FILES}"
    -P ${PROJECT_SOURCE_DIR}/cmake/CompilerId.cmake
  DEPENDS ${GATHERJIT_COMPILER_FILES} ${PROJECT_SOURCE_DIR}/cmake/CompilerId.cmake
  COMMENT "Hashing the compiler's sources for kernel cache keys" VERBATIM)

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
    x86codegen x86desc x86info aarch64codegen aarch64desc aarch64info
    nvptxcodegen nvptxdesc nvptxinfo)
  target_link_libraries(gatherjit_llvm INTERFACE ${GATHERJIT_LLVM_LIBS})
  # Only what is referenced is a dependency (LLVMSupport names libz3).
  target_link_options(gatherjit_llvm INTERFACE -Wl,--as-needed)
  message(STATUS "gatherjit: LLVM ${LLVM_PACKAGE_VERSION} from ${LLVM_DIR}, static components")
endif()

# Fused C epilogues (compiler/epilogue): clang's libraries, linked the way
# LLVM is. Static: Debian's libclang*.a beside the static components (its
# CMake targets name the shared libLLVM.so, so the archives are named here).
# Shared: libclang-cpp.so, which uses the same libLLVM.so. Never a static
# LLVM with libclang-cpp.so: two LLVMs abort at start-up.
option(GATHERJIT_EPILOGUES "Fused C epilogues (needs clang's libraries: libclang-19-dev, libclang-cpp19-dev)" ON)
add_library(gatherjit_clang INTERFACE)
# What epilogues need of LLVM with or without clang (bitcode, module linking).
add_library(gatherjit_epilogue_llvm INTERFACE)
if(GATHERJIT_SHARED_LLVM)
  target_link_libraries(gatherjit_epilogue_llvm INTERFACE LLVM)
else()
  llvm_map_components_to_libnames(GATHERJIT_EPILOGUE_LLVM_LIBS bitreader bitwriter linker)
  target_link_libraries(gatherjit_epilogue_llvm INTERFACE ${GATHERJIT_EPILOGUE_LLVM_LIBS})
endif()
target_link_libraries(gatherjit_clang INTERFACE gatherjit_epilogue_llvm)
if(GATHERJIT_EPILOGUES)
  if(GATHERJIT_SHARED_LLVM)
    find_library(GATHERJIT_CLANG_CPP clang-cpp HINTS ${LLVM_LIBRARY_DIR} NO_DEFAULT_PATH)
    if(NOT GATHERJIT_CLANG_CPP)
      message(FATAL_ERROR "GATHERJIT_EPILOGUES needs libclang-cpp19-dev (or -DGATHERJIT_EPILOGUES=OFF)")
    endif()
    target_link_libraries(gatherjit_clang INTERFACE ${GATHERJIT_CLANG_CPP})
  else()
    set(GATHERJIT_CLANG_ARCHIVES)
    foreach(lib clangCodeGen clangFrontend clangDriver clangParse clangSerialization clangSema
        clangAPINotes clangAnalysis clangASTMatchers clangAST clangEdit clangLex clangSupport
        clangBasic)
      find_library(GATHERJIT_LIB_${lib} NAMES lib${lib}.a HINTS ${LLVM_LIBRARY_DIR} NO_DEFAULT_PATH)
      if(NOT GATHERJIT_LIB_${lib})
        message(FATAL_ERROR "GATHERJIT_EPILOGUES needs lib${lib}.a from libclang-19-dev (or -DGATHERJIT_EPILOGUES=OFF)")
      endif()
      list(APPEND GATHERJIT_CLANG_ARCHIVES ${GATHERJIT_LIB_${lib}})
    endforeach()
    llvm_map_components_to_libnames(GATHERJIT_CLANG_LLVM_LIBS
      bitreader bitwriter linker irreader option profiledata coverage frontendopenmp
      frontendhlsl frontenddriver frontendoffloading windowsdriver lto demangle)
    # The archives refer to one another in circles; clang's code generator
    # refers to LTO, and both to Debian's Polly through LLVM's extensions:
    # compiler/epilogue/Epilogue.cpp stands in for its one entry point, so
    # Polly is not linked (see getPollyPluginInfo there).
    set_property(TARGET LLVMExtensions PROPERTY INTERFACE_LINK_LIBRARIES LLVMSupport)
    target_compile_definitions(gatherjit_clang INTERFACE GATHERJIT_CLANG_WITHOUT_POLLY)
    target_link_libraries(gatherjit_clang INTERFACE
      -Wl,--start-group ${GATHERJIT_CLANG_ARCHIVES} -Wl,--end-group ${GATHERJIT_CLANG_LLVM_LIBS})
  endif()
  target_compile_definitions(gatherjit_clang INTERFACE GATHERJIT_HAVE_CLANG)
  message(STATUS "gatherjit: fused C epilogues with clang's libraries")
else()
  message(STATUS "gatherjit: no fused C epilogues (GATHERJIT_EPILOGUES=OFF)")
endif()

# The compiler and the JIT runtime. Two files are built twice: the full
# compiler (gatherjit_lib: the library, Python, tests) has fused C
# epilogues with clang's libraries and O3's default pipeline with
# PassBuilder, which links every LLVM pass; the slim one
# (gatherjit_lib_slim) has neither, for the command line's gatherjit-llvm,
# which starts in a fraction of the time without their static initializers
# and hands epilogues and O3 to gatherjit-clang.
set(GATHERJIT_COMPILER_SOURCES
  compiler/plan/KernelPlan.cpp
  compiler/plan/GpuPlan.cpp
  compiler/plan/LoopPlan.cpp
  compiler/emit/EmitKernel.cpp
  compiler/emit/EmitRows.cpp
  compiler/emit/EmitThreads.cpp
  compiler/pipeline/Pipeline.cpp
  compiler/optimize/Optimize.cpp
  compiler/backend/Target.cpp
  compiler/backend/Jit.cpp
  compiler/backend/Aot.cpp
  compiler/backend/CpuBackend.cpp
  compiler/backend/GpuBackend.cpp
  compiler/epilogue/EpilogueProcess.cpp
  runtime/Runtime.cpp
  runtime/Tiers.cpp
  runtime/Families.cpp
  runtime/CudaRun.cpp
  runtime/CApi.cpp)
# LLVM is built without RTTI; classes deriving from LLVM's must match.
# LLVM's inline functions instantiated here stay hidden, like the static
# components themselves (see GatherjitPackage.cmake).
separate_arguments(GATHERJIT_LLVM_DEFINITIONS NATIVE_COMMAND "${LLVM_DEFINITIONS}")
function(gatherjit_llvm_sources target)
  set_target_properties(${target} PROPERTIES POSITION_INDEPENDENT_CODE ON)
  target_include_directories(${target}
    PUBLIC $<BUILD_INTERFACE:${PROJECT_SOURCE_DIR}/include> $<INSTALL_INTERFACE:include>
    PRIVATE $<BUILD_INTERFACE:${PROJECT_SOURCE_DIR}>)
  target_include_directories(${target} SYSTEM PRIVATE ${LLVM_INCLUDE_DIRS})
  target_compile_definitions(${target} PRIVATE ${GATHERJIT_LLVM_DEFINITIONS})
  target_compile_options(${target} PRIVATE -fno-rtti -fvisibility-inlines-hidden)
endfunction()
add_library(gatherjit_compiler_objs OBJECT ${GATHERJIT_COMPILER_SOURCES})
gatherjit_llvm_sources(gatherjit_compiler_objs)
target_link_libraries(gatherjit_compiler_objs PRIVATE gatherjit_frontend TBB::tbb)
# The last place the epilogue helper is looked for: the build tree, where
# tests and the Python package run from.
set_source_files_properties(compiler/epilogue/EpilogueProcess.cpp PROPERTIES
  COMPILE_DEFINITIONS GATHERJIT_BUILD_DIR="${PROJECT_BINARY_DIR}")
# clang 19's own headers trip GCC's -Wnonnull once inlined at -O2
# (ExternalASTSource.h's LazyOffsetPtr).
set_source_files_properties(compiler/epilogue/EpilogueClang.cpp PROPERTIES COMPILE_OPTIONS -Wno-nonnull)
foreach(variant full slim)
  add_library(gatherjit_${variant}_objs OBJECT
    compiler/epilogue/Epilogue.cpp compiler/optimize/DefaultPipeline.cpp)
  gatherjit_llvm_sources(gatherjit_${variant}_objs)
  target_link_libraries(gatherjit_${variant}_objs PRIVATE gatherjit_frontend)
endforeach()
target_link_libraries(gatherjit_full_objs PRIVATE gatherjit_clang)
# Checked epilogues are rewritten where clang runs, with LLVM's passes.
target_sources(gatherjit_full_objs PRIVATE compiler/epilogue/CheckedEpilogue.cpp)
if(GATHERJIT_EPILOGUES)
  target_sources(gatherjit_full_objs PRIVATE compiler/epilogue/EpilogueClang.cpp)
endif()
target_compile_definitions(gatherjit_full_objs PRIVATE GATHERJIT_DEFAULT_PIPELINE)

add_library(gatherjit_lib STATIC
  $<TARGET_OBJECTS:gatherjit_compiler_objs> $<TARGET_OBJECTS:gatherjit_full_objs>)
target_link_libraries(gatherjit_lib PUBLIC gatherjit_frontend PRIVATE gatherjit_clang gatherjit_llvm TBB::tbb)
add_library(gatherjit_lib_slim STATIC
  $<TARGET_OBJECTS:gatherjit_compiler_objs> $<TARGET_OBJECTS:gatherjit_slim_objs>)
target_link_libraries(gatherjit_lib_slim PUBLIC gatherjit_frontend
  PRIVATE gatherjit_epilogue_llvm gatherjit_llvm TBB::tbb)
