// Label sets as stored by the node cache and Prometheus samples: a small vector of pairs is
// cheaper than a map at 10-20 labels per object and 10,000 objects.
#pragma once

#include <string>
#include <string_view>
#include <utility>
#include <vector>

namespace ds {

using Labels = std::vector<std::pair<std::string, std::string>>;
// Non-owning labels, for streaming decoders (views into a response body).
using LabelViews = std::vector<std::pair<std::string_view, std::string_view>>;

// Returns the value for key, or nullptr when the key is absent.
inline const std::string* FindLabel(const Labels& labels, std::string_view key) {
  for (const auto& kv : labels)
    if (kv.first == key) return &kv.second;
  return nullptr;
}

inline const std::string_view* FindLabel(const LabelViews& labels, std::string_view key) {
  for (const auto& kv : labels)
    if (kv.first == key) return &kv.second;
  return nullptr;
}

// Kubernetes label syntax (apimachinery validation): "" when valid, otherwise why not.
std::string ValidateLabelKey(std::string_view key);
std::string ValidateLabelValue(std::string_view value);

}  // namespace ds
