// Standard base64, for kubeconfig *-data fields and basic auth.
#pragma once

#include <string>

#include "common/status.h"

namespace ds {

std::string Base64Encode(const std::string& in);
// Accepts padding and line breaks; rejects any other non-alphabet character.
StatusOr<std::string> Base64Decode(const std::string& in);

}  // namespace ds
