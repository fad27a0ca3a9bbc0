//===- tools/gatherjit/Demo.h - The README's main job --------------------===//
#ifndef GATHERJIT_TOOLS_DEMO_H
#define GATHERJIT_TOOLS_DEMO_H

namespace gatherjit {
/// Runs every seed example through the JIT, checks it against the
/// interpreter and the document, then times one large case on both
/// engines. Prints a table; returns the process exit code.
int runDemo();
} // namespace gatherjit

#endif
