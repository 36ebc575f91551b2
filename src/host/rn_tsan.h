/*
 * rn_tsan.h - mutexes ThreadSanitizer can see from inside an interposed call.
 *
 * Forced into every host kit, engine, API and shim file of a TSan build
 * (-include, see src/CMakeLists.txt); nothing in other builds.  Under
 * ri2n-run a program's poll, read, epoll_wait... reach the shim from inside
 * TSan's own interceptor for that call, and TSan then does not record the
 * mutexes the shim and ri2n take there (nested interceptors are not
 * processed), so it reports every access those mutexes guard as a race with
 * the engine thread.
 * TSan's annotation calls are not interceptors: made next to each lock,
 * unlock and condition wait they give it the happens-before edges the mutex
 * really provides, nested or not.
 */
#ifndef RN_TSAN_H
#define RN_TSAN_H

/* first in every file: the feature macro the files themselves set */
#ifndef _GNU_SOURCE
#define _GNU_SOURCE
#endif
#include <pthread.h>

void __tsan_acquire(void *addr);
void __tsan_release(void *addr);

static inline int rn_tsan_lock(pthread_mutex_t *m)
{
	int rc = pthread_mutex_lock(m);

	__tsan_acquire(m);
	return rc;
}

static inline int rn_tsan_unlock(pthread_mutex_t *m)
{
	__tsan_release(m);
	return pthread_mutex_unlock(m);
}

static inline int rn_tsan_cond_wait(pthread_cond_t *c, pthread_mutex_t *m)
{
	int rc;

	__tsan_release(m);
	rc = pthread_cond_wait(c, m);
	__tsan_acquire(m);
	return rc;
}

static inline int rn_tsan_cond_timedwait(pthread_cond_t *c, pthread_mutex_t *m,
					 const struct timespec *t)
{
	int rc;

	__tsan_release(m);
	rc = pthread_cond_timedwait(c, m, t);
	__tsan_acquire(m);
	return rc;
}

#define pthread_mutex_lock rn_tsan_lock
#define pthread_mutex_unlock rn_tsan_unlock
#define pthread_cond_wait rn_tsan_cond_wait
#define pthread_cond_timedwait rn_tsan_cond_timedwait

#endif
