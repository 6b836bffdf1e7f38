#include "app/version.h"

#ifndef DS_VERSION
#define DS_VERSION "0.0.0"
#endif
#ifndef DS_GIT_COMMIT
#define DS_GIT_COMMIT "unknown"
#endif

#define DS_STRINGIFY_(x) #x
#define DS_STRINGIFY(x) DS_STRINGIFY_(x)
#if defined(__clang__)  // first: clang defines __GNUC__ too
#define DS_COMPILER                                                                          \
  "clang " DS_STRINGIFY(__clang_major__) "." DS_STRINGIFY(__clang_minor__) "." DS_STRINGIFY( \
      __clang_patchlevel__)
#elif defined(__GNUC__)
#define DS_COMPILER                                                                \
  "gcc " DS_STRINGIFY(__GNUC__) "." DS_STRINGIFY(__GNUC_MINOR__) "." DS_STRINGIFY( \
      __GNUC_PATCHLEVEL__)
#else
#define DS_COMPILER "unknown"
#endif

namespace ds {

const char* Version() { return DS_VERSION; }
const char* GitCommit() { return DS_GIT_COMMIT; }
const char* Compiler() { return DS_COMPILER; }
std::string VersionString() { return std::string(Version()) + " (commit " + GitCommit() + ")"; }

}  // namespace ds
