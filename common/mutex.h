// A mutex, its scoped lock and a condition variable that clang's thread-safety analysis can see
// (common/thread_annotations.h): a member declared GUARDED_BY(mu_) is then read or written only
// with mu_ held, and a helper declared REQUIRES(mu_) is called only with it held, or the clang
// build fails. libstdc++'s std::mutex carries no annotations, so these wrap it; they cost nothing
// over using it directly.
//
//   mutable Mutex mu_;
//   int count_ GUARDED_BY(mu_) = 0;
//   ...
//   MutexLock l(&mu_);
//   ++count_;
#pragma once

#include <chrono>
#include <condition_variable>
#include <functional>
#include <mutex>
#include <type_traits>

#include "common/thread_annotations.h"

namespace ds {

class CondVar;

// Not re-entrant: a thread that holds it must not take it again (EXCLUDES says so where it
// matters).
class CAPABILITY("mutex") Mutex {
 public:
  Mutex() = default;
  Mutex(const Mutex&) = delete;
  Mutex& operator=(const Mutex&) = delete;

  void Lock() ACQUIRE() { mu_.lock(); }
  void Unlock() RELEASE() { mu_.unlock(); }
  // Tells the analysis that the calling thread holds this mutex, where it cannot see it (a
  // callback run under the lock). Checks nothing at run time: std::mutex does not know its owner.
  void AssertHeld() const ASSERT_CAPABILITY(this) {}

 private:
  friend class CondVar;
  std::mutex mu_;
};

// Holds a Mutex for its scope, as std::lock_guard does.
class SCOPED_CAPABILITY MutexLock {
 public:
  explicit MutexLock(Mutex* mu) ACQUIRE(mu) : mu_(mu) { mu_->Lock(); }
  ~MutexLock() RELEASE() { mu_->Unlock(); }
  MutexLock(const MutexLock&) = delete;
  MutexLock& operator=(const MutexLock&) = delete;

 private:
  Mutex* const mu_;
};

// A condition variable for Mutex. Each wait names the Mutex the caller holds, so the analysis
// checks that it is held (REQUIRES(mu)). A predicate runs with the mutex held, and says so, or the
// analysis would reject its reads of guarded members:
//   cv_.WaitFor(&mu_, timeout, [this]() REQUIRES(mu_) { return ready_; });
// The predicate is a std::function rather than a template parameter so that the analysis, which
// cannot tell that the caller's mu_ is the `mu` here, does not see the call.
class CondVar {
 public:
  CondVar() = default;
  CondVar(const CondVar&) = delete;
  CondVar& operator=(const CondVar&) = delete;

  void Signal() { cv_.notify_one(); }
  void SignalAll() { cv_.notify_all(); }

  // Releases *mu, blocks until signalled, and takes *mu again. It may also return without a
  // signal (a spurious wakeup): call it in a loop that checks the condition.
  void Wait(Mutex* mu) REQUIRES(mu) {
    Adopted(mu, [this](std::unique_lock<std::mutex>& lock) { cv_.wait(lock); });
  }

  // Waits until pred() is true or `timeout` has passed (on the real steady clock). Returns pred().
  template <typename Rep, typename Period>
  bool WaitFor(Mutex* mu, std::chrono::duration<Rep, Period> timeout,
               const std::function<bool()>& pred) REQUIRES(mu) {
    return Adopted(
        mu, [&](std::unique_lock<std::mutex>& lock) { return cv_.wait_for(lock, timeout, pred); });
  }

  // Hands `wait` the std::unique_lock and std::condition_variable beneath *mu and this, for a seam
  // written against the standard types: Clock::WaitUntil, whose virtual form keeps them until its
  // last caller on std::mutex is converted. *mu is held again when `wait` returns, as with any
  // wait. Returns what `wait` returns.
  template <typename F>
  auto WaitWithStd(Mutex* mu, F&& wait) REQUIRES(mu) {
    return Adopted(mu, [&](std::unique_lock<std::mutex>& lock) { return wait(lock, cv_); });
  }

 private:
  // std::condition_variable waits on a std::unique_lock<std::mutex>. The caller's MutexLock
  // already holds the mutex, so a unique_lock adopts it for the wait and gives it back with
  // release() (not unlock()) however the wait ends, an exception included.
  template <typename F>
  static std::invoke_result_t<F&, std::unique_lock<std::mutex>&> Adopted(Mutex* mu, F&& wait) {
    std::unique_lock<std::mutex> lock(mu->mu_, std::adopt_lock);
    struct GiveBack {
      std::unique_lock<std::mutex>& lock;
      ~GiveBack() { lock.release(); }
    } give_back{lock};
    return wait(lock);
  }

  std::condition_variable cv_;
};

}  // namespace ds
