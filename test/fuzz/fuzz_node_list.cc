// libFuzzer target: NodeList pages and single Nodes (LIST and PATCH responses).
#include <string>

#include "kube/node_object.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  std::string body(reinterpret_cast<const char*>(data), size);
  (void)ds::DecodeNodeList(body);
  (void)ds::DecodeNode(body);
  (void)ds::StatusFromResponse(429, body, "3", "fuzz");
  return 0;
}
