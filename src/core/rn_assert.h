/*
 * rn_assert.h - invariants checked in Debug, sanitizer and fuzz builds.
 *
 * RN_ASSERT(cond) aborts with the condition, file and line (glibc's
 * __assert_fail, as assert() does) when cond is false and the build defines
 * RN_ASSERTS: CMake does for CMAKE_BUILD_TYPE=Debug, RI2N_SANITIZE and
 * RI2N_FUZZ.  Elsewhere it compiles to nothing and evaluates nothing, so a
 * release build pays no branch.  It does not follow NDEBUG: the fuzz build is
 * RelWithDebInfo and must still check.  tests/check_core_pure.sh allows
 * __assert_fail in the core only in those builds.
 *
 * Assert what the code relies on and cannot recover from (ring arithmetic,
 * state moves); inputs from the network are never asserted, they are refused.
 */
#ifndef RN_ASSERT_H
#define RN_ASSERT_H

#ifdef RN_ASSERTS
/* declared here because glibc's <assert.h> hides it under NDEBUG */
extern void __assert_fail(const char *assertion, const char *file, unsigned int line,
			  const char *function) __attribute__((__noreturn__));
#define RN_ASSERT(cond) \
	((cond) ? (void)0 : __assert_fail(#cond, __FILE__, __LINE__, __func__))
#else
/* not evaluated; sizeof keeps variables used only in assertions "used" */
#define RN_ASSERT(cond) ((void)sizeof(!(cond)))
#endif

#endif
