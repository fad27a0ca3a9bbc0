//===- tools/gatherjit/EpilogueMain.cpp - gatherjit-epilogue --------------===//
//
// The helper process that compiles users' C epilogues with clang's
// libraries for the library, the command line and Python, apart from the
// process that asked (compiler/epilogue/EpilogueProcess.cpp).
//
//===----------------------------------------------------------------------===//

#include "compiler/epilogue/Epilogue.h"

int main(int Argc, char **Argv) { return gatherjit::epilogueHelperMain(Argc, Argv); }
