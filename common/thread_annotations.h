// Clang's thread-safety attributes, so that "this member is guarded by that mutex" and "call this
// with the mutex held" are checked by the compiler (-Wthread-safety, on for clang builds in
// CMakeLists.txt) instead of trusted as comments. Under any other compiler they expand to nothing:
// GCC has no such analysis, and the code means the same without it.
//
// The attributes go with common/mutex.h, whose Mutex, MutexLock and CondVar carry them; a
// std::mutex is invisible to the analysis. Clang's manual describes each attribute:
// https://clang.llvm.org/docs/ThreadSafetyAnalysis.html
#pragma once

#if defined(__clang__)
#define DS_THREAD_ANNOTATION(x) __attribute__((x))
#else
#define DS_THREAD_ANNOTATION(x)
#endif

// On a class: its objects are a capability (a lock) of the given kind, e.g. "mutex".
#ifndef CAPABILITY
#define CAPABILITY(kind) DS_THREAD_ANNOTATION(capability(kind))
#endif

// On a class: an RAII object that acquires a capability in its constructor and releases it in its
// destructor (MutexLock).
#ifndef SCOPED_CAPABILITY
#define SCOPED_CAPABILITY DS_THREAD_ANNOTATION(scoped_lockable)
#endif

// On a data member: read or written only with the capability held.
#ifndef GUARDED_BY
#define GUARDED_BY(x) DS_THREAD_ANNOTATION(guarded_by(x))
#endif

// On a pointer member: the pointer itself is free to read, what it points to is guarded.
#ifndef PT_GUARDED_BY
#define PT_GUARDED_BY(x) DS_THREAD_ANNOTATION(pt_guarded_by(x))
#endif

// On a mutex member: the order in which it is taken relative to others. Checked only with
// -Wthread-safety-beta; still worth writing down as documentation.
#ifndef ACQUIRED_BEFORE
#define ACQUIRED_BEFORE(...) DS_THREAD_ANNOTATION(acquired_before(__VA_ARGS__))
#endif
#ifndef ACQUIRED_AFTER
#define ACQUIRED_AFTER(...) DS_THREAD_ANNOTATION(acquired_after(__VA_ARGS__))
#endif

// On a function: the caller must hold the capabilities (exclusively, or at least shared).
#ifndef REQUIRES
#define REQUIRES(...) DS_THREAD_ANNOTATION(requires_capability(__VA_ARGS__))
#endif
#ifndef REQUIRES_SHARED
#define REQUIRES_SHARED(...) DS_THREAD_ANNOTATION(requires_shared_capability(__VA_ARGS__))
#endif

// On a function: the caller must not hold the capabilities (the function takes them itself, and
// a std::mutex is not re-entrant).
#ifndef EXCLUDES
#define EXCLUDES(...) DS_THREAD_ANNOTATION(locks_excluded(__VA_ARGS__))
#endif

// On a function: it acquires (or releases) the capabilities and returns with them held (or not).
// With no argument on a member function: the object itself.
#ifndef ACQUIRE
#define ACQUIRE(...) DS_THREAD_ANNOTATION(acquire_capability(__VA_ARGS__))
#endif
#ifndef ACQUIRE_SHARED
#define ACQUIRE_SHARED(...) DS_THREAD_ANNOTATION(acquire_shared_capability(__VA_ARGS__))
#endif
#ifndef RELEASE
#define RELEASE(...) DS_THREAD_ANNOTATION(release_capability(__VA_ARGS__))
#endif
#ifndef RELEASE_SHARED
#define RELEASE_SHARED(...) DS_THREAD_ANNOTATION(release_shared_capability(__VA_ARGS__))
#endif

// On a function: it tries to acquire the capabilities and returns `result` when it did.
#ifndef TRY_ACQUIRE
#define TRY_ACQUIRE(...) DS_THREAD_ANNOTATION(try_acquire_capability(__VA_ARGS__))
#endif

// On a function: it fails (aborts) unless the capability is held, so the analysis may assume it
// is held afterwards.
#ifndef ASSERT_CAPABILITY
#define ASSERT_CAPABILITY(x) DS_THREAD_ANNOTATION(assert_capability(x))
#endif

// On a function: it returns a reference to the given capability (an accessor for a mutex).
#ifndef RETURN_CAPABILITY
#define RETURN_CAPABILITY(x) DS_THREAD_ANNOTATION(lock_returned(x))
#endif

// On a function: the analysis skips its body. Only where it cannot follow a correct pattern, and
// always with a comment that says why.
#ifndef NO_THREAD_SAFETY_ANALYSIS
#define NO_THREAD_SAFETY_ANALYSIS DS_THREAD_ANNOTATION(no_thread_safety_analysis)
#endif
