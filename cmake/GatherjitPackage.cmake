# What `cmake --install` delivers: libgatherjit.so (the C and C++ APIs; LLVM
# and oneTBB are its run-time dependencies), the public headers, the
# gatherjit command line (for AOT builds) with the programs it hands
# commands to, a pkg-config file, and a CMake package exporting
#   gatherjit::gatherjit  the library
#   gatherjit::cli        the command line, e.g. to run `gatherjit aot`
# so another project can find_package(gatherjit) and link gatherjit::gatherjit.
include(GNUInstallDirs)
include(CMakePackageConfigHelpers)

# The shared library is the static libraries' objects. LLVM's static
# components stay inside it: none of their symbols is exported, so a
# process may load another LLVM beside this library.
add_library(gatherjit_shared SHARED
  $<TARGET_OBJECTS:gatherjit_compiler_objs> $<TARGET_OBJECTS:gatherjit_full_objs>
  $<TARGET_OBJECTS:gatherjit_frontend>)
target_link_libraries(gatherjit_shared PRIVATE gatherjit_clang gatherjit_llvm TBB::tbb)
# Sections nothing reaches are dropped (a third of the components' code);
# the version script exports gatherjit's names alone.
target_link_options(gatherjit_shared PRIVATE -Wl,--exclude-libs,ALL -Wl,--gc-sections
  -Wl,--version-script=${PROJECT_SOURCE_DIR}/cmake/libgatherjit.map)
set_property(TARGET gatherjit_shared APPEND PROPERTY LINK_DEPENDS
  ${PROJECT_SOURCE_DIR}/cmake/libgatherjit.map)
gatherjit_order_functions(gatherjit_shared)
target_include_directories(gatherjit_shared INTERFACE
  $<BUILD_INTERFACE:${PROJECT_SOURCE_DIR}/include>
  $<INSTALL_INTERFACE:${CMAKE_INSTALL_INCLUDEDIR}>)
# The C++ API's headers are C++20: a target that links the library compiles
# its C++ so (its C, against gatherjit.h, as it likes).
target_compile_features(gatherjit_shared INTERFACE cxx_std_20)
set_target_properties(gatherjit_shared PROPERTIES
  OUTPUT_NAME gatherjit EXPORT_NAME gatherjit
  VERSION ${PROJECT_VERSION} SOVERSION ${PROJECT_VERSION_MAJOR}.${PROJECT_VERSION_MINOR}
  LIBRARY_OUTPUT_DIRECTORY ${PROJECT_BINARY_DIR})
add_library(gatherjit::gatherjit ALIAS gatherjit_shared)

set_target_properties(gatherjit_cli PROPERTIES EXPORT_NAME cli)
add_executable(gatherjit::cli ALIAS gatherjit_cli)

install(TARGETS gatherjit_shared gatherjit_cli EXPORT gatherjitTargets
  LIBRARY DESTINATION ${CMAKE_INSTALL_LIBDIR}
  RUNTIME DESTINATION ${CMAKE_INSTALL_BINDIR})
# The programs gatherjit hands commands to (tools/gatherjit/RunCommand.h).
install(TARGETS gatherjit_cli_llvm gatherjit_cli_clang gatherjit_onnx_test
  RUNTIME DESTINATION ${CMAKE_INSTALL_BINDIR})
# The library compiles epilogues in this helper, found in ../bin beside it.
install(TARGETS gatherjit_epilogue RUNTIME DESTINATION ${CMAKE_INSTALL_BINDIR})
add_dependencies(gatherjit_shared gatherjit_epilogue)
install(DIRECTORY include/gatherjit DESTINATION ${CMAKE_INSTALL_INCLUDEDIR})
set(GATHERJIT_CMAKE_DIR ${CMAKE_INSTALL_LIBDIR}/cmake/gatherjit)
install(EXPORT gatherjitTargets NAMESPACE gatherjit:: DESTINATION ${GATHERJIT_CMAKE_DIR})
configure_package_config_file(cmake/gatherjitConfig.cmake.in
  ${PROJECT_BINARY_DIR}/gatherjitConfig.cmake INSTALL_DESTINATION ${GATHERJIT_CMAKE_DIR})
write_basic_package_version_file(${PROJECT_BINARY_DIR}/gatherjitConfigVersion.cmake
  COMPATIBILITY SameMinorVersion)
install(FILES ${PROJECT_BINARY_DIR}/gatherjitConfig.cmake
  ${PROJECT_BINARY_DIR}/gatherjitConfigVersion.cmake DESTINATION ${GATHERJIT_CMAKE_DIR})
# A pkg-config file for builds without CMake (`cc app.c $(pkg-config
# --cflags --libs gatherjit)`), found wherever the prefix is moved: its
# prefix is the path from its own directory (GNUInstallDirs' relative
# directories) back up.
file(RELATIVE_PATH GATHERJIT_PC_TO_PREFIX "/${CMAKE_INSTALL_LIBDIR}/pkgconfig" "/")
string(REGEX REPLACE "/$" "" GATHERJIT_PC_TO_PREFIX "${GATHERJIT_PC_TO_PREFIX}")
configure_file(cmake/gatherjit.pc.in ${PROJECT_BINARY_DIR}/gatherjit.pc @ONLY)
install(FILES ${PROJECT_BINARY_DIR}/gatherjit.pc DESTINATION ${CMAKE_INSTALL_LIBDIR}/pkgconfig)
