/*
 * rn_inline_wait.c - an inline thread waiting for its connection: the
 * thread's wake-up descriptor, the wait on the port's rail sockets and the
 * descriptor (its one cancellation point), the descriptor's timeouts; and a
 * wait on rail sockets done by the kernel's poll/epoll (ri2n-run).  The
 * rest of the inline driver is in rn_inline.c.  Everything runs under the
 * host lock unless it says otherwise.
 */
#define _GNU_SOURCE
#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <pthread.h>
#include <sys/eventfd.h>
#include <sys/socket.h>
#include <time.h>

#include "rn_sys.h"
#include "rn_inline.h"
#include "rn_knobs.h"
#include "rn_log.h"
#include "rn_port.h"
#include "rn_stream.h"
#include "rn_inline_int.h"

static RN_TLS rn_waiter t_waiter = { .efd = -1 };

/* After fork: the forking thread's wake-up descriptor is the parent's too: not ours to share. */
void rn_inline_wait_forget(void)
{
	if (t_waiter.efd >= 0) {
		rn_sys_close(t_waiter.efd);
		t_waiter.efd = -1;
	}
}

static pthread_key_t g_waiter_key;
static pthread_once_t g_waiter_once = PTHREAD_ONCE_INIT;

/* A thread that waited inline ends: its wake-up descriptor goes with it. */
static void waiter_exit(void *arg)
{
	rn_waiter *w = arg;

	if (w && w->efd >= 0) {
		rn_sys_close(w->efd);
		w->efd = -1;
	}
}

static void waiter_key(void)
{
	if (pthread_key_create(&g_waiter_key, waiter_exit) != 0)
		g_waiter_key = (pthread_key_t)-1;
}

/* The thread's own wake-up descriptor, made on first use, closed when the thread ends. */
static rn_waiter *waiter(void)
{
	if (t_waiter.efd < 0) {
		pthread_once(&g_waiter_once, waiter_key);
		t_waiter.efd = rn_sys_fd_high(rn_sys_eventfd(0, EFD_NONBLOCK | EFD_CLOEXEC));
		if (t_waiter.efd >= 0 && g_waiter_key != (pthread_key_t)-1)
			pthread_setspecific(g_waiter_key, &t_waiter);
	}
	return t_waiter.efd >= 0 ? &t_waiter : NULL;
}

static void waiter_unlink(rn_port *p, rn_waiter *w)
{
	for (rn_waiter **pp = &p->waiters; *pp; pp = &(*pp)->next) {
		if (*pp == w) {
			*pp = w->next;
			break;
		}
	}
	w->next = NULL;
	w->s = NULL;
	w->st = NULL;
	p->nwait--;
	if (p->leader == w)
		p->leader = NULL;
	rn_port_wake_leader(p);
}

/* What a thread cancelled in its sleep (sleep_cancellable) leaves behind. */
struct wait_undo {
	rn_sock *s;  /* the caller's reference */
	rn_port *p;  /* rn_inline_wait_port's reference, and w linked into p->waiters */
	rn_waiter *w;
};

/*
 * The thread is being cancelled in its sleep: it leaves the port's waiters
 * (w is this thread's, and dies with it), gives back its references and
 * has the engine serve the port's sockets again, as a wait that ends would.
 */
static void wait_cancelled(void *arg)
{
	struct wait_undo *u = arg;
	uint64_t v;

	RN_SYS_CANCEL_UNPOISON();
	rn_host_enter_inline();
	waiter_unlink(u->p, u->w);
	if (rn_sys_read(u->w->efd, &v, sizeof(v)) < 0) {
		/* no wake-up pending */
	}
	u->p->inline_ns = rn_now_ns();
	rn_port_unref(u->p);
	rn_host_kick();
	rn_host_leave_inline();
	rn_sock_unref(u->s);
}

/*
 * The sleep of an inline wait, ri2n's one cancellation point: a blocked
 * read() is one for TCP, so pthread_cancel ends the thread here, holding
 * no lock, and wait_cancelled undoes the rest.  left: ns, -1 for no limit.
 */
static int sleep_cancellable(struct wait_undo *u, struct pollfd *pf, int n, int64_t left)
{
	struct timespec ts = { (time_t)(left / 1000000000), (long)(left % 1000000000) };
	int rc, ct;

	pthread_cleanup_push(wait_cancelled, u);
	ct = rn_sys_cancel_begin();
	rc = rn_sys_ppoll(pf, (nfds_t)n, left < 0 ? NULL : &ts);
	rn_sys_cancel_end(ct);
	pthread_cleanup_pop(0);
	return rc;
}

static int64_t elapsed_ns(const struct timespec *t0)
{
	struct timespec t;

	clock_gettime(CLOCK_MONOTONIC, &t);
	return (int64_t)(t.tv_sec - t0->tv_sec) * 1000000000 + (t.tv_nsec - t0->tv_nsec);
}

/*
 * Blocks until a datagram reaches one of the port's sockets, another thread
 * read some for us, or fd has `events` (its end of the pair closing always
 * counts).  Polls first as busy_us says (rn_spin_budget).  *timeout_ns and
 * t0: see rn_inline_int.h.  Called and returns with the host lock held; 0
 * with *ready the port's sockets that have datagrams, -EINTR, -EAGAIN (the
 * timeout passed), -ENOMEM.
 */
int rn_inline_wait_port(rn_sock *s, struct rn_stream *st, int fd, short events, int64_t *timeout_ns,
			const struct timespec *t0, int busy_us, uint32_t *ready)
{
	rn_port *p = st->port;
	rn_waiter *w = waiter();
	struct pollfd pf[RN_MAX_RAILS + 2];
	int idx[RN_MAX_RAILS];
	int n = 0, rc = 0, err = 0, nrail, caught = 0, lead;
	struct timespec tw;
	int64_t spin, left;

	*ready = 0;
	if (!w)
		return -ENOMEM;
	/* one waiter polls the sockets (rn_port.h): the others, their eventfd and descriptor */
	lead = !p->leader;
	if (lead)
		p->leader = w;
	for (int i = 0; i < p->nsock && lead; i++)
		if (p->s[i].fd >= 0) {
			idx[n] = i;
			pf[n++] = (struct pollfd){ .fd = p->s[i].fd, .events = POLLIN };
		}
	nrail = n;
	w->s = s;
	w->st = st;
	pf[n++] = (struct pollfd){ .fd = w->efd, .events = POLLIN };
	pf[n++] = (struct pollfd){ .fd = fd, .events = events };
	w->next = p->waiters;
	p->waiters = w;
	rn_port_wait_begin(p, rn_now_ns());
	rn_port_ref(p); /* the stream may end while we sleep */
	rn_host_leave_inline();

	clock_gettime(CLOCK_MONOTONIC, &tw);
	spin = lead ? rn_spin_budget(busy_us) : 0; /* a follower's news comes through the leader */
	left = *timeout_ns == RN_WAIT_RCVTIMEO ? -1 : rn_inline_left_of(*timeout_ns, t0);
	if (left >= 0 && spin > left)
		spin = left;
	if (spin > 0) {
		do {
			rc = rn_sys_ppoll(pf, n, &(struct timespec){ 0, 0 });
			if (rc == 0)
				sched_yield(); /* a thread runnable on this CPU (the peer?) goes first */
		} while (rc == 0 && elapsed_ns(&tw) < spin);
		caught = rc != 0;
	}
	if (rc == 0) {
		if (*timeout_ns == RN_WAIT_RCVTIMEO) /* about to sleep: now the limit matters */
			*timeout_ns = rn_inline_sock_rcvtimeo(s, fd);
		rc = sleep_cancellable(&(struct wait_undo){ s, p, w }, pf, n,
				       rn_inline_left_of(*timeout_ns, t0));
	}
	err = errno;
	if (rc >= 0 && lead)
		rn_spin_learn(busy_us, elapsed_ns(&tw), caught);

	rn_host_enter_inline();
	waiter_unlink(p, w);
	for (int i = 0; i < nrail && rc > 0; i++)
		if (pf[i].revents)
			*ready |= 1u << idx[i];
	if (rc > 0 && pf[n - 1].revents) {
		/*
		 * The descriptor itself: bytes or an end the engine put there (or
		 * the user shut it down) are read through it next; a number no
		 * longer open ends the call.
		 */
		if (pf[n - 1].revents & POLLNVAL) {
			rc = -1;
			err = EBADF;
		} else if (s->stream) { /* st itself may have ended while we slept */
			s->stream->pair_rx = 1;
		}
	}
	if (rc > 0 && (pf[n - 2].revents & POLLIN)) {
		uint64_t v;

		if (rn_sys_read(w->efd, &v, sizeof(v)) < 0) {
			/* another wake-up took it */
		}
	}
	rn_port_wait_left(p, rn_now_ns());
	rn_port_unref(p);
	if (rc < 0)
		return -err;
	return rc == 0 ? -EAGAIN : 0;
}

/* The descriptor's SO_RCVTIMEO / SO_SNDTIMEO in ns, -1 for none. */
int64_t rn_inline_fd_timeout(int fd, int opt)
{
	struct timeval tv;
	socklen_t len = sizeof(tv);

	if (rn_sys_getsockopt(fd, SOL_SOCKET, opt, &tv, &len) < 0 ||
	    (tv.tv_sec == 0 && tv.tv_usec == 0))
		return -1;
	return (int64_t)tv.tv_sec * 1000000000 + (int64_t)tv.tv_usec * 1000;
}

/* Whether s may trust what it remembers of its descriptor (rn_sock's nonblock_memo). */
static int memo_ok(rn_sock *s)
{
	return rn_sock_calls_seen() && !__atomic_load_n(&s->shared, __ATOMIC_RELAXED);
}

/*
 * An event loop reads until EAGAIN, so every request asked the kernel for
 * O_NONBLOCK once: remembered until the program changes a descriptor's
 * flags.  The generation is read before the kernel is asked, so a change
 * meanwhile leaves the answer stale at once.
 */
int rn_inline_fd_nonblock(rn_sock *s, int fd)
{
	uint32_t gen = rn_sock_flags_gen();
	uint64_t m = __atomic_load_n(&s->nonblock_memo, __ATOMIC_RELAXED);
	int fl, nb;

	if ((uint32_t)(m >> 1) == gen && memo_ok(s))
		return (int)(m & 1);
	fl = rn_sys_fcntl(fd, F_GETFL, 0);
	nb = fl >= 0 && (fl & O_NONBLOCK);
	if (fl >= 0)
		__atomic_store_n(&s->nonblock_memo, ((uint64_t)gen << 1) | (uint64_t)nb,
				 __ATOMIC_RELAXED);
	return nb;
}

/* rn_inline_fd_timeout(fd, SO_RCVTIMEO), remembered while unset (the usual case) as above. */
int64_t rn_inline_sock_rcvtimeo(rn_sock *s, int fd)
{
	uint32_t gen = rn_sock_flags_gen();
	int64_t t;

	if (__atomic_load_n(&s->rcvtimeo_none_memo, __ATOMIC_RELAXED) == gen && memo_ok(s))
		return -1;
	t = rn_inline_fd_timeout(fd, SO_RCVTIMEO);
	if (t < 0)
		__atomic_store_n(&s->rcvtimeo_none_memo, gen, __ATOMIC_RELAXED);
	return t;
}

/* What is left of a wait of `total` ns begun at t0; -1 stays -1. */
int64_t rn_inline_left_of(int64_t total, const struct timespec *t0)
{
	int64_t left;

	if (total < 0)
		return -1;
	left = total - elapsed_ns(t0);
	return left > 0 ? left : 0;
}

/* ---- waiting with the kernel's poll/epoll (ri2n-run) ---- */

int rn_inline_rails_of(rn_sock *s, rn_railref *out, int max)
{
	int n = 0;

	RN_OWNS_HOST();
	if (rn_inline_ok_to_recv(s->stream)) {
		rn_port *p = s->stream->port;

		for (int i = 0; i < p->nsock && n < max; i++)
			if (p->s[i].fd >= 0)
				out[n++] = (rn_railref){ p->s[i].fd, p->s[i].ino };
	}
	return n;
}

int rn_inline_rails(rn_sock *s, rn_railref *out, int max)
{
	int n;

	rn_host_lock();
	n = rn_inline_rails_of(s, out, max);
	rn_host_unlock();
	return n;
}

void rn_inline_watch_begin(const rn_railref *r, int n, void **h)
{
	uint64_t now = rn_now_ns();

	rn_host_lock();
	for (int i = 0; i < n; i++) {
		rn_usock *u = rn_port_usock(r[i].fd, r[i].ino);

		h[i] = u;
		if (u) { /* the engine keeps off while we wait on it */
			rn_port_ref(u->port);
			rn_port_wait_begin(u->port, now);
		}
	}
	rn_host_unlock();
}
