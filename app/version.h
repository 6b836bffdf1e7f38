// Which build this is: the version (CMakeLists.txt's project VERSION) and the git commit it was
// built from ("unknown" outside a git checkout; "-dirty" with uncommitted changes). Shown by
// --version, sent in the User-Agent and exported as dynamic_scheduler_build_info.
#pragma once

#include <string>

namespace ds {

const char* Version();    // "0.2.0"
const char* GitCommit();  // "3549a1a0c2f4", "3549a1a0c2f4-dirty" or "unknown"
// The compiler that built this file, and so the binary: "gcc 12.2.0", "clang 14.0.6".
const char* Compiler();
// "0.2.0 (commit 3549a1a0c2f4)"
std::string VersionString();

}  // namespace ds
