// Whether this replica may write labels now. With two replicas only the lease holder writes;
// a single replica without leader election always may (Reconciler takes a null Leadership).
#pragma once

#include <cstdint>

namespace ds {

class Leadership {
 public:
  virtual ~Leadership() = default;
  // True while this replica holds the lease and its last successful renewal is younger than the
  // renew deadline, so it can stop writing before anybody else may take over. Thread-safe.
  virtual bool IsLeader() const = 0;
  // Counts the times this replica became leader. A new term means state kept from an earlier term
  // (hysteresis timers, last seen values) is stale. Thread-safe.
  virtual uint64_t Term() const = 0;
};

}  // namespace ds
