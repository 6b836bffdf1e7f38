// One parameter of a URL's query string, percent-decoded: for the web port's GET handlers, whose
// parameters (node and pod names, lists of them) never hold a '+' meaning a space. Pure.
#pragma once

#include <optional>
#include <string>
#include <string_view>

#include "common/status.h"

namespace ds {

// The value of the first `name=...` in `query` (without the '?'), percent-decoded; nullopt when
// the query has no such parameter; an error naming the parameter for a malformed %-escape.
StatusOr<std::optional<std::string>> QueryValue(std::string_view query, std::string_view name);

}  // namespace ds
