// A Leadership (election/leadership.h) a test flips by hand: whether this replica leads, in which
// term, and after how many IsLeader() calls it stops (a lease lost mid-cycle) or leads again in a
// newer term (another replica led in between). The fields are set before the code under test
// runs; the counters are atomic because every writer thread asks.
#pragma once

#include <atomic>
#include <cstdint>

#include "election/leadership.h"

namespace ds {

class FakeLeadership : public Leadership {
 public:
  bool IsLeader() const override {
    int c = checks++;
    if (allow_checks >= 0 && c >= allow_checks) return false;
    // Another replica led in between: this one is leader again, in a newer term.
    if (new_term_after_checks >= 0 && c >= new_term_after_checks) newer_term = term + 1;
    return leader;
  }
  uint64_t Term() const override { return newer_term != 0 ? newer_term.load() : term; }
  bool leader = false;
  uint64_t term = 0;
  int allow_checks = -1;               // -1: no bound
  int new_term_after_checks = -1;      // -1: the term stays
  mutable std::atomic<int> checks{0};  // asked from every writer thread
  mutable std::atomic<uint64_t> newer_term{0};
};

}  // namespace ds
