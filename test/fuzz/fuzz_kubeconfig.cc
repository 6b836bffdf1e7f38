// libFuzzer target: kubeconfig files (file references are relative to a directory that does
// not exist, so only inline data is read). A NUL byte splits the input into two files that are
// merged as $KUBECONFIG's are, so the merge and its first-definition-wins lookups are fuzzed too.
// The exec stanza is parsed but no plugin is run: that happens only when a request is sent.
#include <string>
#include <vector>

#include "kube/kubeconfig.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  std::string text(reinterpret_cast<const char*>(data), size);
  size_t nul = text.find('\0');
  if (nul == std::string::npos) {
    (void)ds::ParseKubeconfig(text, "/nonexistent-fuzz-dir/config");
  } else {
    std::vector<ds::KubeconfigText> files = {
        {"/nonexistent-fuzz-dir/a/config", text.substr(0, nul)},
        {"/nonexistent-fuzz-dir/b/config", text.substr(nul + 1)}};
    (void)ds::ParseKubeconfigs(files);
  }
  return 0;
}
