# Hot functions together (tools/gatherjit/hot-functions.txt, made by
# tools/hot-functions.sh): LLVM's archives put each function in its own
# section, and lld lays the listed ones out first, so a process's start and
# first compile fault in a few MB of code instead of pages all over LLVM's.
# gatherjit_order_functions(TARGET) links TARGET so: the command line's
# compilers, libgatherjit.so and the Python module. Only lld reads such a
# list; without it they link as before, as they do with a shared libLLVM.so
# (GATHERJIT_SHARED_LLVM), which holds most of the listed functions.
option(GATHERJIT_ORDER_FUNCTIONS
  "Link the compilers and libraries with lld, their hot functions together" ON)
set(GATHERJIT_ORDERED_FUNCTIONS OFF) # for tests/tools/HotFunctionsTest.cpp
if(GATHERJIT_ORDER_FUNCTIONS AND NOT GATHERJIT_SHARED_LLVM)
  include(CheckLinkerFlag)
  check_linker_flag(CXX -fuse-ld=lld GATHERJIT_HAVE_LLD)
  if(GATHERJIT_HAVE_LLD)
    set(GATHERJIT_ORDERED_FUNCTIONS ON)
  else()
    message(STATUS "gatherjit: no lld, the compilers' and libraries' functions are not ordered")
  endif()
endif()

function(gatherjit_order_functions target)
  if(GATHERJIT_ORDERED_FUNCTIONS)
    set(hot ${PROJECT_SOURCE_DIR}/tools/gatherjit/hot-functions.txt)
    target_link_options(${target} PRIVATE -fuse-ld=lld -Wl,--symbol-ordering-file=${hot}
      -Wl,--no-warn-symbol-ordering)
    set_property(TARGET ${target} APPEND PROPERTY LINK_DEPENDS ${hot})
    target_compile_definitions(${target} PRIVATE GATHERJIT_ORDERED_FUNCTIONS=1)
  endif()
endfunction()
