// A request as the web port's listener hands it to the handlers, for tests of what runs behind it.
#pragma once

#include <string>

#include "common/web_server.h"

namespace ds {

inline WebRequest MakeWebRequest(const std::string& method, const std::string& path,
                                 const std::string& authorization = "",
                                 const std::string& client = "10.0.0.7") {
  WebRequest r;
  r.method = method;
  r.path = path;
  r.authorization = authorization;
  r.client = client;
  return r;
}

}  // namespace ds
