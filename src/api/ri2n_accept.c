/*
 * ri2n_accept.c - ri2n_accept and the shim's accept: the records a
 * listening socket's engine sends, one per connection waiting, and the
 * connection each names (ours, or one a prefork worker takes over).
 */
#define _GNU_SOURCE
#include <errno.h>
#include <fcntl.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <poll.h>
#include <pthread.h>
#include <signal.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <stdio.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <sys/uio.h>
#include <limits.h>
#include <time.h>
#include <unistd.h>

#include <sodium/utils.h>

#include "ri2n.h"
#include "rn_api.h"
#include "rn_log.h"
#include "rn_engine.h"
#include "rn_events.h"
#include "rn_handover.h"
#include "rn_inline.h"
#include "rn_knobs.h"
#include "rn_port.h"
#include "rn_stream.h"
#include "rn_api_int.h"
#include "rn_sys.h"

void rn_api_put_addr(const rn_hsa *in, struct sockaddr *addr, socklen_t *len)
{
	socklen_t n = rn_hsa_len(in);

	if (!addr || !len)
		return;
	/* as getsockname(2): cut to the caller's room, *len the full size */
	memcpy(addr, in, *len < n ? *len : n);
	*len = n;
}

/*
 * Reads one accept record (rn_accept_rec, rn_engine.h) from listener fd:
 * blocking or not as the descriptor is.  The record's descriptor (a copy of
 * the connection's end A) goes to *afd.  0, or an errno (EINVAL: the engine
 * let go of the listener).
 */
static int read_accept_rec(int fd, rn_accept_rec *rec, int *afd, int flags)
{
	struct iovec iov = { rec, sizeof(*rec) };
	union {
		struct cmsghdr h;
		char buf[CMSG_SPACE(sizeof(int))];
	} u;
	struct msghdr m = { .msg_iov = &iov, .msg_iovlen = 1, .msg_control = u.buf,
			    .msg_controllen = sizeof(u.buf) };
	/* raw: an interposed recvmsg would take this for the fast path */
	ssize_t n = rn_sys_recvmsg(fd, &m, MSG_CMSG_CLOEXEC | flags);
	struct cmsghdr *c;

	*afd = -1;
	if (n < 0)
		return errno;
	for (c = CMSG_FIRSTHDR(&m); c; c = CMSG_NXTHDR(&m, c))
		if (c->cmsg_level == SOL_SOCKET && c->cmsg_type == SCM_RIGHTS)
			memcpy(afd, CMSG_DATA(c), sizeof(int));
	if (n == (ssize_t)sizeof(*rec) && *afd < 0 && rec->tag == 'e')
		return 0; /* no connection: rec->err says why */
	if (n != (ssize_t)sizeof(*rec) || *afd < 0) {
		if (*afd >= 0)
			rn_sys_close(*afd);
		return EINVAL; /* 0: the engine let go of the listener */
	}
	return 0;
}

/*
 * Under s->mu: takes from s's accept queue the connection whose end A is
 * the open file afd; the ones queued before it were taken by another
 * process holding the listener (their records came first): they are that
 * process's now, so this one drops its copies.
 */
static rn_sock *take_queued(rn_sock *s, int afd)
{
	struct stat sb;
	rn_sock *ns;

	if (rn_sys_fstat(afd, &sb) < 0)
		return NULL;
	for (ns = s->accq_head; ns && !(ns->ino == sb.st_ino && ns->dev == sb.st_dev); ns = ns->acc_next)
		;
	if (!ns)
		return NULL;
	while (s->accq_head != ns) {
		rn_sock *gone = s->accq_head;

		s->accq_head = gone->acc_next;
		s->accq_len--;
		gone->acc_next = NULL;
		__atomic_store_n(&gone->queued, 0, __ATOMIC_RELAXED);
		rn_fd_disown(gone->user_fd);
		rn_sys_close(gone->user_fd); /* the other process holds its own copy */
		rn_sock_unref(gone);
	}
	s->accq_head = ns->acc_next;
	if (!s->accq_head)
		s->accq_tail = NULL;
	s->accq_len--;
	ns->acc_next = NULL;
	__atomic_store_n(&ns->queued, 0, __ATOMIC_RELAXED);
	return ns;
}

/*
 * The accept turnstile (rn_sock's acc_* fields).  Records wake every thread
 * asleep on the listener's descriptor, so only one thread of the process
 * sleeps there; the others wait on acc_turn and the one leaving passes the
 * turn to a single waiter: a connection wakes two threads, not all.
 */

/*
 * Under s->mu: the sleeper leaves; 1 if a waiter is to take its place (the
 * caller wakes it with unlock_wake, once the mutex the waiter takes next is
 * free).
 */
static int pass_turn(rn_sock *s)
{
	__atomic_store_n(&s->acc_sleeper, 0, __ATOMIC_RELAXED);
	if (s->acc_waiters <= 0)
		return 0;
	__atomic_add_fetch(&s->acc_turn, 1, __ATOMIC_RELEASE);
	return 1;
}

/* Releases s->mu, then wakes one waiter if wake (the caller holds a reference to s). */
static void unlock_wake(rn_sock *s, int wake)
{
	pthread_mutex_unlock(&s->mu);
	if (wake)
		rn_sys_futex_wake(&s->acc_turn, 1);
}

/*
 * Under s->mu: a waiter leaves without its turn (a signal, cancellation);
 * the wake it may have taken goes on to another, so none waits for a
 * sleeper that never comes.
 */
static int leave_turn(rn_sock *s)
{
	s->acc_waiters--;
	if (s->acc_sleeper || s->acc_waiters <= 0)
		return 0;
	__atomic_add_fetch(&s->acc_turn, 1, __ATOMIC_RELEASE);
	return 1;
}

/* A sleeper cancelled in its wait: the turn passes, the listener's reference goes. */
static void sleeper_cancelled(void *arg)
{
	rn_sock *s = arg;

	RN_SYS_CANCEL_UNPOISON();
	pthread_mutex_lock(&s->mu);
	unlock_wake(s, pass_turn(s));
	rn_sock_unref(s);
}

/* A waiter cancelled: it leaves the turnstile, the listener's reference goes. */
static void waiter_cancelled(void *arg)
{
	rn_sock *s = arg;

	RN_SYS_CANCEL_UNPOISON();
	pthread_mutex_lock(&s->mu);
	unlock_wake(s, leave_turn(s));
	rn_sock_unref(s);
}

/*
 * Called under s->mu, returns without it: waits until the sleeper passes
 * the turn (cancellable, EINTR as accept's sleep).  0, or EINTR.
 */
static int wait_turn(rn_sock *s)
{
	int turn = __atomic_load_n(&s->acc_turn, __ATOMIC_ACQUIRE), rc, ct, err;

	s->acc_waiters++;
	pthread_mutex_unlock(&s->mu);
	pthread_cleanup_push(waiter_cancelled, s);
	ct = rn_sys_cancel_begin();
	rc = rn_sys_futex_wait(&s->acc_turn, turn);
	rn_sys_cancel_end(ct);
	pthread_cleanup_pop(0);
	err = rc < 0 && errno == EINTR ? EINTR : 0;
	pthread_mutex_lock(&s->mu);
	if (err) {
		unlock_wake(s, leave_turn(s));
		return err;
	}
	s->acc_waiters--;
	pthread_mutex_unlock(&s->mu);
	return 0;
}

/* Sleeps until a record waits (peeked, not taken), cancellable as TCP's accept. */
static ssize_t sleep_record(rn_sock *s, int fd, char *peek)
{
	ssize_t n;
	int ct;

	pthread_cleanup_push(sleeper_cancelled, s);
	ct = rn_sys_cancel_begin();
	n = rn_sys_recv(fd, peek, 1, MSG_PEEK);
	rn_sys_cancel_end(ct);
	pthread_cleanup_pop(0);
	return n;
}

/*
 * Takes the next record of listener s (fd): at once, or once one comes
 * unless the listener is non-blocking (EAGAIN).  0 with *rec, *afd and *ns
 * (NULL: another process took the connection's queue entry), or an errno.
 */
static int next_record(rn_sock *s, int fd, int nonblock, rn_accept_rec *rec, int *afd, rn_sock **ns)
{
	int err, sleeper = 0, woke = 0;

	/*
	 * The record is read and its connection taken from the queue under the
	 * listener's mutex, which the engine holds while it counts the records
	 * still unread (prune_taken): else it could take a record being read
	 * here for one a prefork worker took, and let go of the connection.
	 * The wait itself is outside the mutex (the engine queues under it).
	 */
	for (;;) {
		char peek;
		ssize_t n;

		pthread_mutex_lock(&s->mu);
		err = read_accept_rec(fd, rec, afd, MSG_DONTWAIT);
		if (!err && rec->tag == 'e') {
			/* a connection the engine could not take (budget, descriptors, memory) */
			s->acc_err = 0;
			err = rec->err ? rec->err : EMFILE;
		}
		*ns = err ? NULL : take_queued(s, *afd);
		if (err != EAGAIN || nonblock) {
			unlock_wake(s, sleeper && pass_turn(s));
			return err;
		}
		if (woke) /* another thread, or process, took the record it woke for */
			__atomic_add_fetch(&s->acc_idle_wakes, 1, __ATOMIC_RELAXED);
		woke = 0;
		if (!sleeper && s->acc_sleeper) {
			err = wait_turn(s); /* releases s->mu */
			if (err)
				return err;
			continue;
		}
		sleeper = 1;
		__atomic_store_n(&s->acc_sleeper, 1, __ATOMIC_RELAXED); /* read by inline_driven */
		pthread_mutex_unlock(&s->mu);
		/* handshakes are the engine's: it must read the rails while we sleep */
		rn_port_sock_sleeps(s);
		/* wait for a record without taking it (restarted under SA_RESTART as accept is) */
		n = sleep_record(s, fd, &peek);
		if (n <= 0) {
			err = n < 0 ? errno : EINVAL; /* 0: the engine let go of the listener */
			pthread_mutex_lock(&s->mu);
			unlock_wake(s, pass_turn(s));
			return err;
		}
		woke = 1;
	}
}

int rn_api_accept(int fd, struct sockaddr *addr, socklen_t *len, int flags)
{
	int err, nfd, afd, nonblock;
	rn_sock *s = rn_api_lookup(fd, &err), *ns;
	rn_accept_rec rec;

	if (!s)
		return rn_api_fail(err);
	if (s->kind != RN_SK_LISTEN) {
		rn_sock_unref(s);
		return rn_api_fail(EINVAL);
	}
	nonblock = rn_sys_fcntl(fd, F_GETFL, 0); /* the listener's own mode (flags are the new socket's) */
	nonblock = nonblock >= 0 && (nonblock & O_NONBLOCK);
	err = next_record(s, fd, nonblock, &rec, &afd, &ns);
	if (err) {
		rn_sock_unref(s);
		return rn_api_fail(err);
	}
	rn_sock_unref(s);
	if (!ns) {
		/*
		 * The engine let go of it meanwhile (it saw the record read:
		 * prune_taken in rn_stream.c): a connection it still serves,
		 * through the descriptor only, as in a process that inherited it.
		 */
		if (!(flags & SOCK_CLOEXEC))
			rn_sys_fcntl(afd, F_SETFD, 0);
		if (flags & SOCK_NONBLOCK)
			rn_sys_fcntl(afd, F_SETFL, O_NONBLOCK);
		rn_api_put_addr(&rec.peer, addr, len);
		return afd;
	}
	rn_sys_close(afd); /* ours is the copy the engine kept; this number may be the lowest free */
	nfd = rn_stream_accept_fd(ns, flags & SOCK_CLOEXEC);
	if (flags & SOCK_NONBLOCK)
		rn_sys_fcntl(nfd, F_SETFL, O_NONBLOCK);
	if (rn_api_tab_install(nfd, ns)) { /* the accept queue's reference moves to the table */
		rn_sys_close(nfd);
		rn_sock_unref(ns);
		return rn_api_fail(ENOMEM);
	}
	__atomic_store_n(&ns->in_app, 1, __ATOMIC_RELAXED); /* a forked child asks once it is closed here */
	pthread_mutex_lock(&ns->mu);
	rn_api_put_addr(&ns->peer, addr, len);
	pthread_mutex_unlock(&ns->mu);
	return nfd;
}

int rn_api_accept_inherited(int fd, rn_hsa *peer, int flags, int *owned)
{
	rn_accept_rec rec;
	int afd, err = read_accept_rec(fd, &rec, &afd, 0);
	rn_sock *ns;

	*owned = 0;
	if (!err && rec.tag == 'e')
		err = rec.err ? rec.err : EMFILE; /* the listening process's engine refused one */
	if (err)
		return rn_api_fail(err);
	/* the connection becomes this process's own if its owner hands it over (rn_handover.h) */
	if (rn_handover_want() && rn_handover_take(afd, &rec.from, &ns) == 0) {
		int nfd = rn_stream_accept_fd(ns, flags & SOCK_CLOEXEC);

		if (rn_api_tab_install(nfd, ns) == 0) {
			if (flags & SOCK_NONBLOCK)
				rn_sys_fcntl(nfd, F_SETFL, O_NONBLOCK);
			*peer = rec.peer;
			*owned = 1;
			return nfd;
		}
		rn_sys_close(nfd);
		rn_sock_unref(ns);
		return rn_api_fail(ENOMEM);
	}
	if (!(flags & SOCK_CLOEXEC))
		rn_sys_fcntl(afd, F_SETFD, 0);
	if (flags & SOCK_NONBLOCK)
		rn_sys_fcntl(afd, F_SETFL, O_NONBLOCK);
	*peer = rec.peer;
	return afd;
}

int ri2n_accept(int fd, struct sockaddr *addr, socklen_t *len)
{
	return rn_api_accept(fd, addr, len, 0);
}

