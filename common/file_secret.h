// A credential kept in a file that is replaced while the process runs: a Kubernetes Secret volume
// swaps a symlink to a new directory, an operator or a sidecar rewrites the file. Reading it on
// every request would cost a read per query; reading it once would keep a revoked token.
#pragma once

#include <sys/types.h>

#include <cstdint>
#include <string>

#include "common/mutex.h"
#include "common/status.h"

namespace ds {

class FileSecret {
 public:
  // `what` names the secret in errors (a flag or a rule.yaml field). Reads nothing yet.
  FileSecret(std::string path, std::string what);
  FileSecret(const FileSecret&) = delete;
  FileSecret& operator=(const FileSecret&) = delete;

  // The file's content without trailing blanks and line breaks. The file is read again only when
  // stat() says it changed (another inode, size, modification or change time), or when it had
  // changed less than 2 s before it was read (file times are coarser than a fast rewrite), so an
  // unchanged file costs one stat(). Errors (kUnavailable, naming `what` and the path, never the
  // content): the file cannot be read, or it is empty. Thread-safe.
  StatusOr<std::string> Get();

 private:
  struct Stamp {
    dev_t dev = 0;
    ino_t ino = 0;
    off_t size = -1;
    int64_t mtime_ns = 0, ctime_ns = 0;
    bool operator==(const Stamp&) const = default;
  };

  const std::string path_;
  const std::string what_;
  Mutex mu_;
  Stamp stamp_ GUARDED_BY(mu_);        // of the file `value_` was read from
  std::string value_ GUARDED_BY(mu_);  // "" until the first successful read
};

}  // namespace ds
