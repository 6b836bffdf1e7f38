#include "common/file_secret.h"

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstring>
#include <ctime>
#include <utility>

namespace ds {
namespace {

// A secret file is a token or a password; anything this large is the wrong file.
constexpr off_t kMaxSecretBytes = 1 << 20;

// Longer than any file system's timestamp granularity that matters here (ext4, xfs, tmpfs and
// overlayfs keep nanoseconds, updated per clock tick).
constexpr int64_t kRacyNanos = 2'000'000'000;

int64_t Nanos(const struct timespec& t) {
  return static_cast<int64_t>(t.tv_sec) * 1000000000 + t.tv_nsec;
}

}  // namespace

FileSecret::FileSecret(std::string path, std::string what)
    : path_(std::move(path)), what_(std::move(what)) {}

StatusOr<std::string> FileSecret::Get() {
  auto fail = [this](const std::string& why) {
    return Status::Unavailable(what_ + ": cannot read " + path_ + ": " + why);
  };
  auto stamp_of = [](const struct stat& st) {
    Stamp s;
    s.dev = st.st_dev;
    s.ino = st.st_ino;
    s.size = st.st_size;
    s.mtime_ns = Nanos(st.st_mtim);
    s.ctime_ns = Nanos(st.st_ctim);
    return s;
  };
  MutexLock l(&mu_);
  struct stat st;
  if (::stat(path_.c_str(), &st) != 0) return fail(std::strerror(errno));
  if (!value_.empty() && stamp_of(st) == stamp_) return value_;

  // The stamp is taken from the open file, so it describes exactly what was read: a rewrite that
  // lands after the read changes the path's stamp and is read at the next call.
  int fd = ::open(path_.c_str(), O_RDONLY | O_CLOEXEC);
  if (fd < 0) return fail(std::strerror(errno));
  std::string text;
  Status error;
  if (::fstat(fd, &st) != 0) {
    error = fail(std::strerror(errno));
  } else if (!S_ISREG(st.st_mode)) {
    error = fail("not a regular file");
  } else if (st.st_size > kMaxSecretBytes) {
    error = fail("larger than 1 MiB");
  } else {
    char buf[4096];
    ssize_t n;
    while ((n = ::read(fd, buf, sizeof(buf))) > 0 && text.size() <= kMaxSecretBytes)
      text.append(buf, static_cast<size_t>(n));
    if (n < 0) error = fail(std::strerror(errno));
  }
  ::close(fd);
  if (!error.ok()) return error;
  while (!text.empty() &&
         (text.back() == '\n' || text.back() == '\r' || text.back() == ' ' || text.back() == '\t'))
    text.pop_back();
  // A rotation that truncates before it writes can be seen half-done: refuse rather than send
  // an empty credential, and read again next time.
  if (text.empty()) return fail("the file is empty");
  stamp_ = stamp_of(st);
  // File times advance in clock ticks of a few milliseconds: a same-size rewrite within the tick
  // of this read would leave the stamp unchanged and the old value cached for good. As git does
  // with "racily clean" entries, a file changed this recently is read again next time.
  struct timespec now;
  clock_gettime(CLOCK_REALTIME, &now);
  if (Nanos(now) - std::max(stamp_.mtime_ns, stamp_.ctime_ns) < kRacyNanos) stamp_ = Stamp();
  value_ = std::move(text);
  return value_;
}

}  // namespace ds
