#include "controller/version.h"

#ifndef DS_VERSION
#define DS_VERSION "0.0.0"
#endif
#ifndef DS_GIT_COMMIT
#define DS_GIT_COMMIT "unknown"
#endif

namespace ds {

const char* Version() { return DS_VERSION; }
const char* GitCommit() { return DS_GIT_COMMIT; }
std::string VersionString() { return std::string(Version()) + " (commit " + GitCommit() + ")"; }

}  // namespace ds
