// Kubernetes resource quantities ("500m", "1.5", "256Mi", "1G", "1e3") as numbers: CPU in cores,
// memory in bytes. Pure.
#pragma once

#include <string_view>

namespace ds {

// False when `text` is not a quantity (the value is then left alone).
bool ParseQuantity(std::string_view text, double* value);

}  // namespace ds
