// libFuzzer target: a watch stream cut into arbitrary chunks. The first bytes choose the chunk
// sizes; the rest is the stream. Splitting must not depend on chunking, and every line must
// decode or fail cleanly.
#include <string>
#include <vector>

#include "kube/node_object.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  if (size < 2) return 0;
  size_t nsizes = data[0] % 8 + 1;
  if (size < 1 + nsizes) return 0;
  std::string stream(reinterpret_cast<const char*>(data + 1 + nsizes), size - 1 - nsizes);
  ds::WatchLineSplitter whole(1 << 20), chunked(1 << 20);
  std::vector<std::string> a, b;
  bool ok_a = whole.Feed(stream, &a);
  bool ok_b = true;
  for (size_t pos = 0, k = 0; pos < stream.size() && ok_b; ++k) {
    size_t n = data[1 + k % nsizes] % 64 + 1;
    ok_b = chunked.Feed(std::string_view(stream).substr(pos, n), &b);
    pos += n;
  }
  if (ok_a && ok_b && a != b) __builtin_trap();
  for (auto& line : a) (void)ds::DecodeWatchEvent(line);
  return 0;
}
