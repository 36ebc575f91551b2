/*
 * rn_shim_poll.c - the interposed waits: epoll_ctl, epoll_wait, epoll_pwait,
 * poll, ppoll; and the calls that make descriptors ri2n's
 * engine gets from libevent (epoll_create, pipe, timerfd_create, eventfd),
 * moved out of the program's numbers (rn_sys_fd_high) while the engine makes
 * its event base, passed straight through otherwise.
 *
 * A program waiting in poll or epoll on a ri2n descriptor would be woken by
 * ri2n's engine thread, after it read the datagram and handed the bytes to
 * the socketpair: two wake-ups where TCP has one.  Here the rail sockets of
 * the ri2n connections it waits on join its wait, so an arriving datagram
 * wakes the program's thread itself; the engine keeps off those sockets
 * meanwhile (rn_api_watch_begin).  When one of them fires, the thread
 * reads it, hands each connection's bytes to its descriptor, and collects
 * what is ready now: the program sees exactly the events the kernel would
 * show for its own descriptors, never the rail sockets.
 *
 * epoll: the rail sockets never enter the program's epoll set.  Each set
 * the program waits on with ri2n descriptors in it gets a private epoll set
 * of ri2n's, which holds the program's set (nested: it polls readable when
 * the program's set has events) and the rail sockets of the connected ri2n
 * descriptors added or modified in it (or at the next wait, for one still
 * connecting).  The wait is on the private set; the program's events are
 * then taken from its own set, untouched: whatever its data, a dup of it
 * or a forked child sharing it, the program's set only ever holds and
 * reports what the program put there.  Rail sockets leave the private set
 * when their port closes (the kernel drops closed sockets).  A dup of the
 * program's set shares the private one (rn_shim_ep_dup); a forked child
 * starts without any (the parent's engine serves its ri2n descriptors).
 * poll/ppoll: they are appended to a copy of the program's array, for sets of
 * up to MAX_POLL descriptors (larger ones wait as before); a ri2n descriptor
 * asked for POLLIN whose bytes arrived is readable with them still in ri2n's
 * buffer, as for epoll.  select and pselect wait through this poll
 * (rn_shim_select.c).
 */
#define _GNU_SOURCE
#include <errno.h>
#include <poll.h>
#include <pthread.h>
#include <sched.h>
#include <signal.h>
#include <stdlib.h>
#include <string.h>
#include <sys/epoll.h>
#include <sys/eventfd.h>
#include <sys/select.h>
#include <sys/stat.h>
#include <sys/timerfd.h>
#include <unistd.h>
#include <time.h>

#include "rn_api.h"
#include "rn_core.h"
#include "rn_shim.h"
#include "rn_shim_epset.h"
#include "rn_sys.h"

#define RN_SHIM_API __attribute__((visibility("default")))

#define NESTED RN_EP_NESTED
#define MAX_RAILS RN_EP_RAILS
#define MAX_POLL RN_SHIM_MAX_POLL

/* As in rn_shim_io.c, no owner check: a vfork()ed child does not wait on sockets. */
static int ours(int fd)
{
	return rn_shim_tab_has(fd);
}

/*
 * A new epoll instance under number epfd: what we knew of that number is
 * gone.  The one ri2n's engine makes for itself (libevent's) moves out of
 * the program's numbers, as ri2n's other descriptors do (rn_sys_fd_high).
 */
static int ep_created(int epfd)
{
	if (epfd >= 0 && rn_api_engine_making())
		return rn_sys_fd_high(epfd);
	rn_shim_ep_forget(epfd);
	return epfd;
}


/*
 * The descriptors libevent makes for ri2n's engine (its timer, its wake-up
 * pipe) move out of the program's numbers too; for anyone else these pass
 * straight through.
 */
RN_SHIM_API int pipe2(int fd[2], int flags)
{
	int rc = RN_REAL->pipe2(fd, flags);

	if (rc == 0 && rn_api_engine_making()) {
		fd[0] = rn_sys_fd_high(fd[0]);
		fd[1] = rn_sys_fd_high(fd[1]);
	}
	return rc;
}

RN_SHIM_API int pipe(int fd[2])
{
	return pipe2(fd, 0);
}

RN_SHIM_API int timerfd_create(int clock, int flags)
{
	int fd = RN_REAL->timerfd_create(clock, flags);

	return rn_api_engine_making() ? rn_sys_fd_high(fd) : fd;
}

RN_SHIM_API int eventfd(unsigned int count, int flags)
{
	int fd = RN_REAL->eventfd(count, flags);

	return rn_api_engine_making() ? rn_sys_fd_high(fd) : fd;
}

RN_SHIM_API int epoll_create(int size)
{
	return ep_created(RN_REAL->epoll_create(size));
}

RN_SHIM_API int epoll_create1(int flags)
{
	return ep_created(RN_REAL->epoll_create1(flags));
}

/*
 * ri2n descriptors of epfd's set that were connecting when added get their
 * rail sockets added.  The set lock is never held across a call into ri2n (it
 * takes the host lock, and the engine's start, under its own mutex, makes
 * epoll sets that come through here): the pending list is copied out first.
 */
static void ep_settle(int epfd)
{
	int pend[MAX_RAILS], np = 0;
	uint64_t id = 0;
	ep_set *e;

	rn_shim_ep_lock();
	e = rn_shim_ep_get(epfd, 0);
	if (e && e->np) {
		np = e->np;
		id = e->id;
		memcpy(pend, e->pending, (size_t)np * sizeof(int));
	}
	rn_shim_ep_unlock();
	for (int i = 0; i < np; i++) {
		rn_railref r[RN_MAX_RAILS];
		int n = ours(pend[i]) ? rn_api_rails(pend[i], rn_shim_sees_closes(), r, RN_MAX_RAILS) : -1;

		if (n == 0)
			continue; /* still connecting */
		rn_shim_ep_lock();
		e = rn_shim_ep_get(epfd, 0);
		if (e && e->id == id) {
			if (n > 0)
				rn_shim_ep_add_refs(epfd, e, r, n);
			for (int k = 0; k < e->np; k++)
				if (e->pending[k] == pend[i]) {
					e->pending[k] = e->pending[--e->np];
					break;
				}
		}
		rn_shim_ep_unlock();
	}
}

int rn_shim_epoll_ctl(int epfd, int op, int fd, struct epoll_event *ev)
{
	int rc = rn_shim_ep_excl_ctl(epfd, op, fd, ev), saved, kind;

	if (rc != RN_EP_PASS)
		return rc; /* a listener in the private set (rn_shim_epset.c) */
	rc = RN_REAL->epoll_ctl(epfd, op, fd, ev);
	saved = errno;

	/*
	 * The entry as the table has it, unchecked: an event loop changes its
	 * events several times a request, and checking the socket here (a
	 * getpid and a cookie) doubled what ri2n's look-up below checks anyway.
	 */
	if (rc < 0 || !ours(fd) || (kind = rn_shim_tab_kind(fd)) == RN_SHIM_NONE) {
		errno = saved;
		return rc;
	}
	if (kind == RN_SHIM_TCP) {
		/* carried across the conversion at connect or listen (rn_shim_sock.c) */
		rn_shim_tab_note_ep(fd, op, epfd, rn_shim_ep_id(epfd), ev);
	} else if (op == EPOLL_CTL_DEL) {
		uint64_t id = 0;
		ep_set *e;

		rn_shim_ep_lock();
		e = rn_shim_ep_get(epfd, 0);
		if (e)
			id = e->id;
		rn_shim_ep_unlock();
		if (id) /* outside the set lock: see ep_settle */
			rn_api_epoll_note(fd, 1, id, 0, 0, NULL, 0);
	} else if (op == EPOLL_CTL_ADD || op == EPOLL_CTL_MOD) {
		rn_railref r[RN_MAX_RAILS];
		uint64_t id = rn_shim_ep_id(epfd);
		int nr = 0;
		ep_set *e;

		/*
		 * Its bytes may be reported from ri2n's buffer (rn_api_held); its
		 * rail sockets.  The table is trusted as for data calls: a MOD was
		 * checked at its ADD, and an ADD names a number whose closes the
		 * shim sees (an event loop re-adds its sockets every request).
		 */
		if (id)
			nr = rn_api_epoll_note(fd, op == EPOLL_CTL_MOD || rn_shim_sees_closes(), id,
					       ev ? ev->events : 0, ev ? ev->data.u64 : 0, r,
					       RN_MAX_RAILS);
		rn_shim_ep_lock();
		e = rn_shim_ep_get(epfd, 0);
		if (e && e->id == id) {
			rn_shim_ep_add_refs(epfd, e, r, nr);
			if (nr == 0 && e->np < MAX_RAILS) {
				int k;

				for (k = 0; k < e->np && e->pending[k] != fd; k++)
					;
				if (k == e->np)
					e->pending[e->np++] = fd;
			}
		}
		rn_shim_ep_unlock();
	}
	errno = saved;
	return rc;
}

RN_SHIM_API int epoll_ctl(int epfd, int op, int fd, struct epoll_event *ev)
{
	return rn_shim_epoll_ctl(epfd, op, fd, ev);
}

/* The milliseconds left of timeout (ms, -1: none) begun at t0. */
static int ms_left(int timeout, const struct timespec *t0)
{
	struct timespec t;
	long gone;

	if (timeout <= 0)
		return timeout;
	clock_gettime(CLOCK_MONOTONIC, &t);
	gone = (t.tv_sec - t0->tv_sec) * 1000 + (t.tv_nsec - t0->tv_nsec) / 1000000;
	return gone >= timeout ? 0 : (int)(timeout - gone);
}

static int64_t since_ns(const struct timespec *t0)
{
	struct timespec t;

	clock_gettime(CLOCK_MONOTONIC, &t);
	return (int64_t)(t.tv_sec - t0->tv_sec) * 1000000000 + (t.tv_nsec - t0->tv_nsec);
}

/*
 * The kernel's wait for a set that holds rail sockets, after polling it
 * without sleeping as RI2N_BUSY_POLL_US says (by default adaptive, see
 * rn_api_spin_budget): a reply that comes within microseconds is taken without
 * waking a sleeping CPU.  epoll_pwait when pf is NULL, else ppoll.
 */
static int spin_wait(int epfd, struct epoll_event *ev, int max, struct pollfd *pf, nfds_t npf,
		     int ms, const sigset_t *ss)
{
	int busy, rc;
	int64_t spin;
	struct timespec t0, ts = { ms / 1000, (long)(ms % 1000) * 1000000 }, zero = { 0, 0 };

	if (ms == 0) /* a look: nothing to spin for, time or learn (an event loop's poll) */
		return pf ? RN_REAL->ppoll(pf, npf, &zero, ss) : RN_REAL->epoll_pwait(epfd, ev, max, 0, ss);
	busy = rn_api_busy_default();
	spin = rn_api_spin_budget(busy);
	clock_gettime(CLOCK_MONOTONIC, &t0);
	if (spin > 0) {
		do {
			rc = pf ? RN_REAL->ppoll(pf, npf, &zero, ss) : RN_REAL->epoll_pwait(epfd, ev, max, 0, ss);
			if (rc != 0) {
				if (rc > 0)
					rn_api_spin_learn(busy, since_ns(&t0), 1);
				return rc;
			}
			sched_yield(); /* a thread runnable on this CPU goes first */
		} while (since_ns(&t0) < spin);
	}
	rc = pf ? RN_REAL->ppoll(pf, npf, ms < 0 ? NULL : &ts, ss) : RN_REAL->epoll_pwait(epfd, ev, max, ms, ss);
	if (rc >= 0)
		rn_api_spin_learn(busy, since_ns(&t0), 0);
	return rc;
}

/* The rail sockets one wait watches (rn_api_watch_begin's handles); a poll's ri2n sockets. */
typedef struct watch {
	void **h;
	int n;
	void *const *sk;
	int nsk;
} watch;

/*
 * The thread is being cancelled in a watched wait (the kernel's poll and
 * epoll waits are cancellation points): it gives the rail sockets back to
 * the engine as a wait that ends with nothing ready would, so that the
 * ports' other connections are served again and their references go.
 */
static void watch_cancelled(void *arg)
{
	static const uint8_t none[MAX_RAILS];
	const watch *w = arg;

	RN_SYS_CANCEL_UNPOISON();
	rn_api_watch_end(w->h, w->n, none, 0, NULL, 0, NULL);
	rn_api_poll_put(w->sk, w->nsk);
}

/*
 * spin_wait on the rail sockets of r[0..n), watched meanwhile (handles in
 * h): the caller ends the watch with rn_api_watch_end; a thread
 * cancelled in the wait ends it in watch_cancelled.  No ri2n lock is held
 * across the wait.
 */
static int watched_wait(const rn_railref *r, int n, void **h, int epfd, struct epoll_event *ev,
			int max, struct pollfd *pf, nfds_t npf, void *const *sk, int nsk, int ms,
			const sigset_t *ss)
{
	watch w = { h, n, sk, nsk };
	int rc;

	rn_api_watch_begin(r, n, h);
	pthread_cleanup_push(watch_cancelled, &w);
	rc = spin_wait(epfd, ev, max, pf, npf, ms, ss);
	pthread_cleanup_pop(0);
	return rc;
}

/*
 * Room for the reports of ri2n descriptors one epoll wait returns (bytes
 * already in ri2n's buffer): as many as the caller takes, up to
 * MAX_REPORTS; the rest go through their descriptors.  Per thread, kept.
 */
#define MAX_REPORTS 1024
static pthread_key_t g_syn_key;
static pthread_once_t g_syn_once = PTHREAD_ONCE_INIT;
static __thread rn_ready *t_syn;
static __thread int t_syn_cap;

static void syn_key(void)
{
	if (pthread_key_create(&g_syn_key, free) != 0)
		g_syn_key = (pthread_key_t)-1;
}

static rn_ready *syn_room(int want, int *cap)
{
	if (want > MAX_REPORTS)
		want = MAX_REPORTS;
	if (want < MAX_RAILS)
		want = MAX_RAILS;
	if (t_syn_cap < want) {
		rn_ready *n = realloc(t_syn, (size_t)want * sizeof(*n));

		if (n) {
			pthread_once(&g_syn_once, syn_key);
			t_syn = n;
			t_syn_cap = want;
			if (g_syn_key != (pthread_key_t)-1)
				pthread_setspecific(g_syn_key, n); /* freed when the thread ends */
		}
	}
	*cap = t_syn_cap;
	return t_syn;
}

/*
 * Listeners the private set reported (x[0..nx)) join the program's events
 * ev[0..k), as the program registered them, each once (a forked child may
 * have put one into the program's set too); the new count.
 */
static int excl_events(int epfd, const struct epoll_event *x, int nx, struct epoll_event *ev,
		       int k, int max)
{
	ep_set *e;

	rn_shim_ep_lock();
	e = rn_shim_ep_get(epfd, 0);
	for (int i = 0; e && i < nx && k < max; i++) {
		struct epoll_event out;
		int j;

		if (!rn_shim_ep_excl_event(e, &x[i], &out))
			continue;
		for (j = 0; j < k && ev[j].data.u64 != out.data.u64; j++)
			;
		if (j == k)
			ev[k++] = out;
	}
	rn_shim_ep_unlock();
	return k;
}

static int ep_wait(int epfd, struct epoll_event *ev, int max, int timeout, const sigset_t *ss)
{
	rn_railref r[MAX_RAILS];
	void *h[MAX_RAILS];
	rn_ready fixed[MAX_RAILS], *syn;
	struct timespec t0 = { 0, 0 };
	uint64_t id = 0;
	int n = 0, ns, cap, priv = -1, nx = 0;
	ep_set *e;

	if (max <= 0 || rn_api_engine_self())
		return RN_REAL->epoll_pwait(epfd, ev, max, timeout, ss);
	syn = syn_room(max, &cap);
	if (!syn) {
		syn = fixed;
		cap = MAX_RAILS;
	}
	ep_settle(epfd);
	rn_shim_ep_lock();
	e = rn_shim_ep_get(epfd, 0);
	if (e) {
		n = e->nr;
		id = e->id;
		priv = e->priv;
		nx = e->nx;
		memcpy(r, e->r, (size_t)n * sizeof(*r));
	}
	rn_shim_ep_unlock();
	if ((n == 0 && nx == 0) || priv < 0)
		return RN_REAL->epoll_pwait(epfd, ev, max, timeout, ss);
	/*
	 * A socket closed in a signal handler is never reported again (its
	 * entry's work, deferred, done now).  Only for the program's sets: ri2n's
	 * engine waits on its own, holding what the drain takes.
	 */
	rn_shim_tab_drain();
	/* bytes reported before and not read yet: ready now (level-triggered) */
	ns = rn_api_held(id, syn, max < cap ? max : cap);
	if (timeout > 0) /* only a timeout counts time (ms_left) */
		clock_gettime(CLOCK_MONOTONIC, &t0);
	for (int pass = 0;; pass++) {
		uint8_t ready[MAX_RAILS] = { 0 };
		struct epoll_event pev[MAX_RAILS + 1 + RN_EP_EXCL], xev[RN_EP_EXCL];
		int rc, k = 0, rails = 0, err, stale = 0, more = 0, nested = 0, nxev = 0;

		/* on the private set: the program's set (nested), the rail sockets, listeners */
		rc = watched_wait(r, n, h, priv, pev, MAX_RAILS + 1 + RN_EP_EXCL, NULL, 0, NULL, 0,
				  ns ? 0 : ms_left(timeout, &t0), ss);
		err = errno;
		for (int i = 0; i < rc; i++) {
			if (pev[i].data.u64 == NESTED) {
				nested = 1;
				continue;
			}
			if (RN_EP_IS_X(pev[i].data.u64)) {
				xev[nxev++] = pev[i];
				continue;
			}
			for (int j = 0; j < n; j++)
				if ((uint64_t)(uint32_t)r[j].fd == pev[i].data.u64)
					ready[j] = 1;
			rails++;
		}
		/* the program's own events, from its own set, as they are */
		if (nested && (k = rn_sys_epoll_peek(epfd, ev, max)) < 0)
			k = 0;
		{
			int room = max - k - ns;

			if (room > cap - ns)
				room = cap - ns;
			rn_api_watch_end(h, n, ready, id, syn + ns, room > 0 ? room : 0, &more);
			ns += more;
		}
		/* ri2n's reports join the kernel's: one event per descriptor */
		for (int q = 0; q < ns && rc >= 0; q++) {
			int i;

			for (i = 0; i < k && ev[i].data.u64 != syn[q].data; i++)
				;
			if (i < k)
				ev[i].events |= syn[q].events;
			else if (k < max)
				ev[k++] = (struct epoll_event){ .events = syn[q].events,
								.data.u64 = syn[q].data };
		}
		ns = 0;
		if (nxev)
			k = excl_events(epfd, xev, nxev, ev, k, max);
		for (int j = 0; j < n; j++)
			stale += h[j] == NULL;
		if (stale) { /* ports gone: forget their sockets */
			rn_shim_ep_lock();
			e = rn_shim_ep_get(epfd, 0);
			for (int j = 0; e && j < n; j++) {
				if (h[j])
					continue;
				for (int i = 0; i < e->nr; i++) {
					if (e->r[i].fd == r[j].fd && e->r[i].ino == r[j].ino) {
						e->r[i] = e->r[--e->nr];
						break;
					}
				}
			}
			rn_shim_ep_unlock();
		}
		if (rc < 0) {
			errno = err;
			return -1;
		}
		/*
		 * Only rail sockets woke us (their bytes are in the descriptors now,
		 * or they brought nothing deliverable yet, say a packet out of
		 * order), or the program's set had events another thread took
		 * first: wait on.  0 means the timeout passed, never anything else.
		 */
		if (k > 0 || (rails == 0 && !nested && !nxev) ||
		    (timeout > 0 && ms_left(timeout, &t0) == 0))
			return k;
		if (timeout == 0 && pass > 0)
			return k;
	}
}

RN_SHIM_API int epoll_wait(int epfd, struct epoll_event *ev, int max, int timeout)
{
	return ep_wait(epfd, ev, max, timeout, NULL);
}

RN_SHIM_API int epoll_pwait(int epfd, struct epoll_event *ev, int max, int timeout,
			    const sigset_t *ss)
{
	return ep_wait(epfd, ev, max, timeout, ss);
}

/* ---- poll ---- */

int rn_shim_ts_ms(const struct timespec *ts)
{
	if (!ts)
		return -1;
	if (ts->tv_sec > 1000000)
		return 1000000000;
	return (int)(ts->tv_sec * 1000 + (ts->tv_nsec + 999999) / 1000000);
}

/*
 * The wait itself, for fds whose ri2n sockets asking for bytes are sk[0..nsk)
 * (at fds[at[i]], referenced) and whose rail sockets are r[0..n).  A
 * socket whose bytes wait in ri2n's buffer (rn_api_poll_held) is readable
 * without a copy into its descriptor; the read takes them from there.
 */
static int poll_watched(struct pollfd *fds, nfds_t nfds, const rn_railref *r, int n,
			void *const *sk, const int *at, int nsk, int timeout, const sigset_t *ss)
{
	struct pollfd ext[MAX_POLL + MAX_RAILS];
	uint8_t in[MAX_POLL];
	void *h[MAX_RAILS];
	struct timespec t0 = { 0, 0 };
	int held;

	memcpy(ext, fds, nfds * sizeof(*fds));
	for (int j = 0; j < n; j++)
		ext[nfds + (nfds_t)j] = (struct pollfd){ .fd = r[j].fd, .events = POLLIN };
	/* bytes reported before and not read yet: ready now (level-triggered) */
	held = rn_api_poll_held(sk, nsk, in);
	if (timeout > 0) /* only a timeout counts time (ms_left) */
		clock_gettime(CLOCK_MONOTONIC, &t0);
	for (int pass = 0;; pass++) {
		uint8_t ready[MAX_RAILS] = { 0 };
		int rc, err, user = 0, rails = 0;

		rc = watched_wait(r, n, h, -1, NULL, 0, ext, nfds + (nfds_t)n, sk, nsk,
				  held ? 0 : ms_left(timeout, &t0), ss);
		err = errno;
		for (int j = 0; j < n && rc > 0; j++)
			rails += ready[j] = ext[nfds + (nfds_t)j].revents != 0;
		rn_api_poll_end(h, n, ready, sk, nsk, in);
		if (rc < 0) {
			errno = err;
			return -1;
		}
		for (nfds_t i = 0; i < nfds; i++)
			fds[i].revents = ext[i].revents;
		for (int i = 0; i < nsk; i++)
			if (in[i])
				fds[at[i]].revents |= POLLIN;
		for (nfds_t i = 0; i < nfds; i++)
			user += fds[i].revents != 0;
		/* as for epoll: only a timeout that passed returns 0 (held bytes gone: wait on) */
		if (user > 0 || (rails == 0 && !held) || (timeout > 0 && ms_left(timeout, &t0) == 0))
			return user;
		if (timeout == 0 && pass > 0)
			return user;
		held = 0;
	}
}

int rn_shim_poll_wait(struct pollfd *fds, nfds_t nfds, int timeout, const sigset_t *ss)
{
	rn_railref r[MAX_RAILS];
	void *sk[MAX_POLL];
	int at[MAX_POLL];
	int n = 0, nsk = 0, rc, known;

	if (nfds == 0 || nfds > MAX_POLL || rn_api_engine_self())
		goto plain;
	/*
	 * ri2n's table is trusted as for data calls when the shim sees every
	 * close: an event loop polls its sockets again and again, and a cookie
	 * asked of the kernel for each was a quarter of an MPI rank's time.
	 */
	known = rn_shim_sees_closes();
	for (nfds_t i = 0; i < nfds; i++) {
		void *s;

		if (!(fds[i].events & POLLIN) || fds[i].fd < 0 || !ours(fds[i].fd))
			continue;
		n += rn_api_poll_rails(fds[i].fd, known, r + n,
				       MAX_RAILS - n < RN_MAX_RAILS ? 0 : RN_MAX_RAILS, &s);
		if (s) {
			sk[nsk] = s;
			at[nsk++] = (int)i;
		}
	}
	if (n == 0) {
		rn_api_poll_put(sk, nsk);
		goto plain;
	}
	rc = poll_watched(fds, nfds, r, n, sk, at, nsk, timeout, ss);
	if (nsk) {
		int err = errno;

		rn_api_poll_put(sk, nsk);
		errno = err;
	}
	return rc;
plain:
	{
		int left = timeout;
		struct timespec ts = { left / 1000, (long)(left % 1000) * 1000000 };

		return RN_REAL->ppoll(fds, nfds, left < 0 ? NULL : &ts, ss);
	}
}

RN_SHIM_API int poll(struct pollfd *fds, nfds_t nfds, int timeout)
{
	return rn_shim_poll_wait(fds, nfds, timeout, NULL);
}

RN_SHIM_API int ppoll(struct pollfd *fds, nfds_t nfds, const struct timespec *ts,
		      const sigset_t *ss)
{
	return rn_shim_poll_wait(fds, nfds, rn_shim_ts_ms(ts), ss);
}
