// libFuzzer target: kubeconfig files (file references are relative to a directory that does
// not exist, so only inline data is read).
#include <string>

#include "kube/kubeconfig.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  std::string text(reinterpret_cast<const char*>(data), size);
  (void)ds::ParseKubeconfig(text, "/nonexistent-fuzz-dir/config");
  return 0;
}
