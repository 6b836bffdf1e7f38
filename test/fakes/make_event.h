// EventInfo from its leading fields, for tests: brace initialisation would have to name every
// field (-Wmissing-field-initializers), and most tests care about a few.
#pragma once

#include <string>
#include <utility>

#include "kube/event.h"

namespace ds {

inline EventInfo MakeEvent(std::string kind, std::string name, std::string ns, std::string reason,
                           std::string message, std::string type, double at_wall, std::string uid) {
  EventInfo e;
  e.kind = std::move(kind);
  e.name = std::move(name);
  e.object_namespace = std::move(ns);
  e.reason = std::move(reason);
  e.message = std::move(message);
  e.type = std::move(type);
  e.at_wall = at_wall;
  e.uid = std::move(uid);
  return e;
}

}  // namespace ds
