/*
 * rn_host_lock.c - the host lock, the descriptors ri2n owns, the core's
 * clock and the shared socket objects: the state every driver (the engine
 * thread, inline API threads) uses, kept apart from the engine thread that
 * calls into it (rn_engine.c).
 */
#define _GNU_SOURCE
#include <errno.h>
#include <pthread.h>
#include <sodium.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <time.h>

#include "rn_henv.h"
#include "rn_host_lock.h"
#include "rn_port_defer.h"
#include "rn_inline.h"
#include "rn_sys.h"

/* Every descriptor the engine owns, so a forked child can let go of them. */
static struct {
	pthread_mutex_t mu;
	uint8_t *own;
	int cap;
} g_fds = { .mu = PTHREAD_MUTEX_INITIALIZER };

#ifndef SO_COOKIE
#define SO_COOKIE 57 /* Linux 4.12 and later */
#endif

uint64_t rn_fd_cookie(int fd)
{
	uint64_t c = 0;
	socklen_t len = sizeof(c);

	if (fd < 0) {
		errno = EBADF;
		return 0;
	}
	if (rn_sys_getsockopt(fd, SOL_SOCKET, SO_COOKIE, &c, &len) < 0)
		return 0;
	return c;
}

int rn_fd_own_high(int fd)
{
	fd = rn_sys_fd_high(fd);
	rn_fd_own(fd);
	return fd;
}

int rn_fd_own_high_cloexec(int fd)
{
	fd = rn_sys_fd_high_cloexec(fd);
	rn_fd_own(fd);
	return fd;
}

void rn_fd_own(int fd)
{
	if (fd < 0)
		return;
	pthread_mutex_lock(&g_fds.mu);
	if (fd >= g_fds.cap) {
		int cap = fd * 2 + 64;
		uint8_t *n = realloc(g_fds.own, (size_t)cap);

		if (n) {
			memset(n + g_fds.cap, 0, (size_t)(cap - g_fds.cap));
			g_fds.own = n;
			g_fds.cap = cap;
		}
	}
	if (fd < g_fds.cap)
		g_fds.own[fd] = 1;
	pthread_mutex_unlock(&g_fds.mu);
}

void rn_fd_disown(int fd)
{
	pthread_mutex_lock(&g_fds.mu);
	if (fd >= 0 && fd < g_fds.cap)
		g_fds.own[fd] = 0;
	pthread_mutex_unlock(&g_fds.mu);
}

void rn_fd_close(int fd)
{
	if (fd < 0)
		return;
	pthread_mutex_lock(&g_fds.mu);
	if (fd < g_fds.cap)
		g_fds.own[fd] = 0;
	pthread_mutex_unlock(&g_fds.mu);
	rn_sys_close(fd);
}

/*
 * The latest time handed to the core: it must never see time go backwards.
 * Every core call of the engine takes its time from rn_now_ns(), except
 * datagrams, which take their arrival time (rn_arrival_ns).
 */
static uint64_t g_core_last;

uint64_t rn_now_ns(void)
{
	struct timespec ts;
	uint64_t t;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	t = (uint64_t)ts.tv_sec * 1000000000u + (uint64_t)ts.tv_nsec;
	if (t > __atomic_load_n(&g_core_last, __ATOMIC_RELAXED))
		__atomic_store_n(&g_core_last, t, __ATOMIC_RELAXED);
	return t;
}

uint64_t rn_core_time(uint64_t now)
{
	uint64_t last = __atomic_load_n(&g_core_last, __ATOMIC_RELAXED);

	return now > last ? now : last;
}

uint64_t rn_arrival_ns(const struct timespec *rt, int64_t rt_minus_mono, uint64_t now)
{
	uint64_t last = __atomic_load_n(&g_core_last, __ATOMIC_RELAXED);
	int64_t t = (int64_t)rt->tv_sec * 1000000000 + rt->tv_nsec - rt_minus_mono;

	/* within [the last time given to the core, now]: never backwards, never ahead */
	if (t < (int64_t)last)
		t = (int64_t)last;
	if ((uint64_t)t > now)
		t = (int64_t)now;
	__atomic_store_n(&g_core_last, (uint64_t)t, __ATOMIC_RELAXED);
	return (uint64_t)t;
}

/* ---- the host lock ---- */

static pthread_mutex_t g_host_mu = PTHREAD_ADAPTIVE_MUTEX_INITIALIZER_NP;
static RN_TLS int t_inline;

static RN_TLS unsigned long t_locks; /* how often this thread took the lock */
static RN_TLS int t_owns;            /* this thread holds the host lock (RN_OWNS_HOST) */

/*
 * Where this thread is with the host lock, for a signal handler that
 * interrupts it (rn_host_held_here): volatile, so each step is stored
 * before the lock call that follows it.
 */
enum { HOST_OUT, HOST_TAKING, HOST_HELD, HOST_LEAVING };
static RN_TLS volatile int t_host;

static void host_take(void)
{
	t_host = HOST_TAKING;
	pthread_mutex_lock(&g_host_mu);
	t_host = HOST_HELD;
}

static void host_give(void)
{
	t_host = HOST_LEAVING;
	pthread_mutex_unlock(&g_host_mu);
	t_host = HOST_OUT;
}

void rn_host_lock(void)
{
	host_take();
	t_owns = 1;
	t_locks++;
}

void rn_host_unlock(void)
{
	if (rn_port_deferred())
		rn_port_defer_flush(); /* an inline call that left this way */
	t_owns = 0;
	host_give();
}

void rn_host_enter_inline(void)
{
	host_take();
	t_owns = 1;
	t_inline = 1;
}

int rn_host_try_inline(void)
{
	t_host = HOST_TAKING;
	if (pthread_mutex_trylock(&g_host_mu) != 0) {
		t_host = HOST_OUT;
		return 0;
	}
	t_host = HOST_HELD;
	t_owns = 1;
	t_inline = 1;
	return 1;
}

void rn_host_leave_inline(void)
{
	int later = rn_port_deferred() ? rn_port_defer_take() : 0;

	t_inline = 0;
	t_owns = 0;
	host_give();
	if (later)
		rn_port_defer_send();
}

int rn_host_owned(void) { return t_owns; }

int rn_host_owns(void *user)
{
	(void)user;
	return t_owns;
}

/*
 * Whether a thread that was taking mutex m (asleep on it, or just past
 * the take) holds it.  glibc records the owner's thread id a few
 * instructions after the take and clears it just before the release: an
 * owner of 0 on a taken lock may be this thread in that gap, so it counts
 * as held.  Async-signal-safe.
 */
int rn_host_mutex_mine(pthread_mutex_t *m)
{
	if (__atomic_load_n(&m->__data.__owner, __ATOMIC_RELAXED) == 0)
		return __atomic_load_n(&m->__data.__lock, __ATOMIC_RELAXED) != 0;
	return rn_henv_mutex_mine(m);
}

int rn_host_held_here(void)
{
	int at = t_host;

	return at == HOST_TAKING ? rn_host_mutex_mine(&g_host_mu) : at != HOST_OUT;
}

/*
 * glibc hands an unlock's wake-up to one sleeper on the mutex; a sleeper a
 * signal handler stops right then neither takes the lock nor passes the
 * wake-up on, and the others (the engine) sleep on with the lock free.  A
 * handler about to wait on the engine calls this first: every sleeper wakes
 * and tries again (a spurious wake-up costs one more try).  The futex word
 * is glibc's __lock, the word its lock and unlock wait and wake on.
 */
void rn_host_poke(void)
{
	rn_sys_futex_wake_all(&g_host_mu.__data.__lock);
}

int rn_host_inline(void) { return t_inline; }

/* ---- sockets shared with API threads ---- */

static int g_writes_seen; /* (atomic) rn_sock_writes_seen */

void rn_sock_writes_seen(void)
{
	__atomic_store_n(&g_writes_seen, 1, __ATOMIC_RELAXED);
}

int rn_sock_calls_seen(void)
{
	return __atomic_load_n(&g_writes_seen, __ATOMIC_RELAXED);
}

static uint32_t g_flags_gen = 1; /* (atomic) */

void rn_sock_flags_changed(void)
{
	__atomic_add_fetch(&g_flags_gen, 1, __ATOMIC_SEQ_CST);
}

uint32_t rn_sock_flags_gen(void)
{
	return __atomic_load_n(&g_flags_gen, __ATOMIC_SEQ_CST);
}

rn_sock *rn_sock_new(void)
{
	rn_sock *s = calloc(1, sizeof(*s));

	if (!s)
		return NULL;
	pthread_mutex_init(&s->mu, NULL);
	pthread_cond_init(&s->cv, NULL);
	s->refs = 1;
	s->user_fd = s->eng_fd = -1;
	s->backlog = 128;
	s->busy_us = rn_inline_busy_default();
	s->plain_writes = !__atomic_load_n(&g_writes_seen, __ATOMIC_RELAXED);
	return s;
}

/* Atomic: every fast call takes and drops one, and the mutex cost as much as the call's work. */
void rn_sock_ref(rn_sock *s)
{
	__atomic_add_fetch(&s->refs, 1, __ATOMIC_RELAXED);
}

void rn_sock_unref(rn_sock *s)
{
	if (__atomic_sub_fetch(&s->refs, 1, __ATOMIC_ACQ_REL) != 0)
		return;
	pthread_mutex_destroy(&s->mu);
	pthread_cond_destroy(&s->cv);
	free(s->final);
	sodium_memzero(s->cfg.key, sizeof(s->cfg.key));
	free(s);
}

/* ---- across fork() (rn_engine.c's handlers) ---- */

void rn_host_fork_hold(void)
{
	pthread_mutex_lock(&g_host_mu);
	t_owns = 1;
}

void rn_host_fork_release(void)
{
	t_owns = 0;
	pthread_mutex_unlock(&g_host_mu);
}

unsigned long rn_host_lock_count(void)
{
	return t_locks;
}

void rn_fd_fork_hold(void)
{
	pthread_mutex_lock(&g_fds.mu);
}

void rn_fd_fork_release(void)
{
	pthread_mutex_unlock(&g_fds.mu);
}

/*
 * The child lets go of every descriptor the parent's engine owns: holding
 * them would keep the parent's ports bound and hide the parent's closes
 * from the user ends.
 */
void rn_fd_fork_child(void)
{
	for (int fd = 0; fd < g_fds.cap; fd++) {
		if (g_fds.own[fd]) {
			rn_sys_close(fd);
			g_fds.own[fd] = 0;
		}
	}
	pthread_mutex_unlock(&g_fds.mu);
}
