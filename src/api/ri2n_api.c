/*
 * ri2n_api.c - the socket-compatible calls of ri2n.h.
 *
 * A ri2n socket is the user's end (A) of an AF_UNIX socketpair; the engine
 * owns the other end (B).  Which numbers are ri2n sockets is the
 * descriptor table's business (rn_api_tab.c).
 *
 * Until a connection is established A must not look writable (a
 * non-blocking connect is finished when poll says POLLOUT), so ri2n_socket
 * fills A's send buffer with junk the engine throws away once connected:
 * then writability means "connected or failed", and SO_ERROR says which.
 * The buffer waits at its smallest size (about 4.5 KB) and gets its own size
 * back once connected (rn_stream.c) or listening: filling and draining the
 * default 208 KiB cost a connection per request about 450 KB of copies.
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
#include "rn_handover.h"
#include "rn_engine.h"
#include "rn_events.h"
#include "rn_inline.h"
#include "rn_knobs.h"
#include "rn_stream.h"
#include "rn_api_int.h"
#include "rn_sys.h"
#include "rn_pairname.h"
#include "rn_sandbox.h"
#include "rn_sig.h"
#include "rn_inline_int.h"

int rn_api_fail(int err)
{
	errno = err;
	return -1;
}

void rn_api_copy_out(void *dst, size_t size, const void *src, size_t ours)
{
	size_t n = size < ours ? size : ours;

	memcpy(dst, src, n);
	if (size > n)
		memset((char *)dst + n, 0, size - n);
}

/*
 * Sets A's send buffer to the smallest the kernel allows, so that little
 * junk fills it; returns the size it had (what SO_SNDBUF reads), 0 if
 * unknown (then the buffer keeps its size and simply takes more junk).
 */
static int shrink_sndbuf(int fd)
{
	/* every new socketpair end starts with the system's default: read once */
	static int dflt;
	int size = __atomic_load_n(&dflt, __ATOMIC_RELAXED), one = 1;
	socklen_t l = sizeof(size);

	if (!size) {
		if (rn_sys_getsockopt(fd, SOL_SOCKET, SO_SNDBUF, &size, &l) < 0 || size <= 0)
			return 0;
		__atomic_store_n(&dflt, size, __ATOMIC_RELAXED);
	}
	if (rn_sys_setsockopt(fd, SOL_SOCKET, SO_SNDBUF, &one, sizeof(one)) < 0)
		return 0;
	return size;
}

/* Gives A the send buffer size shrink_sndbuf took (size: what SO_SNDBUF read). */
static void grow_sndbuf(int fd, int size)
{
	int half = size / 2; /* the kernel doubles what it is given (socket(7)) */

	if (size > 0 && rn_sys_setsockopt(fd, SOL_SOCKET, SO_SNDBUF, &half, sizeof(half)) < 0) {
		/* a smaller buffer: only slower */
	}
}

/*
 * Fills A's send buffer so that A polls writable only once connected.
 * MSG_DONTWAIT makes each send non-blocking on its own: the descriptor's
 * O_NONBLOCK is never touched (three fcntl calls a socket fewer).
 */
size_t rn_api_fill_junk(int fd)
{
	static const char zeros[65536];
	size_t total = 0;

	for (;;) {
		ssize_t n = rn_sys_send(fd, zeros, sizeof(zeros), MSG_DONTWAIT | MSG_NOSIGNAL);

		if (n <= 0)
			break;
		total += (size_t)n;
		if ((size_t)n < sizeof(zeros)) /* stopped short: the buffer is full */
			break;
	}
	return total;
}

/*
 * At exit, the engine thread dies with the process, and with it any bytes
 * still in its rings: what TCP's kernel would go on sending.  So exit waits
 * (up to RI2N_EXIT_LINGER_MS, 30 s) until every connection has sent its
 * bytes and its FIN and had them acknowledged.  Descriptors still open are
 * shut down for writing first: exit would close them anyway.  _exit() and
 * signals skip this, as they skip every atexit handler.
 */
static void drain_at_exit(void);

/*
 * The pause between two counts at exit: each count walks every connection
 * in the engine thread (about 40 ns each), so with thousands still pending
 * a 2 ms pace took a fifth of the engine while it had a close storm's FINs
 * and ACKs to send.  2 ms plus 2 us per pending connection, at most 20 ms:
 * 9,000 pending cost the engine about 2 %, and the exit at most 20 ms.
 */
static void pause_for(int pending)
{
	long us = 2000 + 2 * (long)(pending > 0 ? pending : 0);

	usleep((useconds_t)(us < 20000 ? us : 20000));
}

static void register_drain(void)
{
	atexit(drain_at_exit);
}

/*
 * Polls the engine with RN_CMD_PENDING(mode) until it says 0 or ms pass; the
 * last count, or -ETIMEDOUT if the engine did not answer within the ms (a
 * busy or stuck engine holds the exit no longer than that).
 */
static int wait_pending(int mode, long ms)
{
	struct timespec t0, t;
	long spent = 0;
	int pending;

	clock_gettime(CLOCK_MONOTONIC, &t0);
	for (;;) {
		pending = rn_engine_pending(mode, ms - spent > 1 ? ms - spent : 1);
		clock_gettime(CLOCK_MONOTONIC, &t);
		spent = (t.tv_sec - t0.tv_sec) * 1000 + (t.tv_nsec - t0.tv_nsec) / 1000000;
		if (pending <= 0 || spent >= ms)
			return pending;
		pause_for(pending);
		mode = mode == RN_EXIT_RESET ? RN_EXIT_OWED : mode; /* reset once, then wait */
	}
}

/*
 * Waits while connections are still open (their peer has not closed its
 * side) and their number keeps falling: in a close storm the peers' FINs
 * come in over seconds (lost in bursts, resent), and a fixed wait reset
 * those still under way.  Stops when none is left, when none closed for
 * still_ms (a peer that is not closing), or after ms; the count left.
 */
static int wait_open(int mode, long still_ms, long ms)
{
	struct timespec t0, t;
	long spent = 0, last_change = 0;
	int open = rn_engine_pending(mode, 1000), now;

	clock_gettime(CLOCK_MONOTONIC, &t0);
	while (open > 0 && spent - last_change < still_ms && spent < ms) {
		pause_for(open);
		now = rn_engine_pending(mode, 1000);
		clock_gettime(CLOCK_MONOTONIC, &t);
		spent = (t.tv_sec - t0.tv_sec) * 1000 + (t.tv_nsec - t0.tv_nsec) / 1000000;
		if (now < 0)
			return now;
		if (now < open)
			last_change = spent;
		open = now;
	}
	return open;
}

/*
 * exit's drain, or with only_closed _exit's: _exit and _Exit skip atexit,
 * but TCP's kernel goes on sending a socket's bytes and FIN after _exit if
 * the program closed it.  So there only the connections every holder of the
 * descriptor closed are waited for (RN_EXIT_CLOSED, RN_EXIT_HALF), and none
 * is reset: those still held die with the process, as they may be a
 * child's too.  A load generator's children leave so (Python's os._exit
 * after closing): their FINs died with them, and each server's side waited
 * for ICMP or its dead-peer timeout, then read a reset.
 */
static void drain(int only_closed)
{
	long linger_ms = (long)rn_proc_get(RN_PROC_EXIT_LINGER_MS);
	int owed = only_closed ? RN_EXIT_CLOSED : RN_EXIT_OWED, pending;

	/* under seccomp ri2n makes no call of its own: exit is as _exit for ri2n */
	if (rn_sandbox_on() || !rn_engine_running())
		return;
	if (!only_closed)
		rn_api_tab_shut_all(); /* what exit would close is shut down for writing */
	/* our bytes and FIN delivered, every ACK owed sent */
	pending = wait_pending(owed, linger_ms);
	if (pending == -ETIMEDOUT) {
		fprintf(stderr, "ri2n[%d]: exiting after %ld ms without word from ri2n's engine "
				"thread: the peers may not get everything\n", (int)getpid(), linger_ms);
		return;
	}
	if (pending > 0)
		fprintf(stderr, "ri2n[%d]: exiting with %d connection%s still sending after %ld ms: "
				"the peer may not get everything\n", (int)getpid(), pending,
			pending == 1 ? "" : "s", linger_ms);
	/*
	 * Peers that have not closed their side get a moment to (1 s without
	 * any of them closing), then (exit) a RESET: nobody will answer their
	 * FIN or data once this process is gone, and a reset tells them now
	 * rather than after their dead-peer timeout.
	 */
	if (wait_open(only_closed ? RN_EXIT_HALF : RN_EXIT_OPEN,
		      linger_ms < 1000 ? linger_ms : 1000, linger_ms) > 0 && !only_closed)
		wait_pending(RN_EXIT_RESET, 200);
	/*
	 * A peer that closed its side made ours linger: its FIN is acknowledged
	 * once, and that ACK may be lost.  Only this process can acknowledge the
	 * FIN it sends again, so it stays a few RTOs (rn_conn_exit_linger) after
	 * the last close: leaving at once left the peer waiting for its
	 * dead-peer timeout (30 s) whenever that one ACK was lost, staying the
	 * whole linger (1 s) made every exit a second late.
	 */
	wait_pending(owed, linger_ms);
}

static void drain_at_exit(void)
{
	drain(0);
}

/*
 * _exit and _Exit: a process that took connections over from another (a
 * forking server's child, rn_handover.h) owns their delivery and drains as
 * exit does; any other, what its program closed (drain).
 */
void rn_api_drain_quick_exit(void)
{
	drain(!rn_handover_took());
}

/* ri2n_socket; nonblock: the user's end too (O_NONBLOCK); moving: rn_api_socket's */
static int socket_x(int nonblock, int moving)
{
	int sv[2], rc;
	struct stat sb;
	rn_sock *s;

	rc = rn_engine_start();
	if (rc)
		return rn_api_fail(-rc);
	{
		static pthread_once_t once = PTHREAD_ONCE_INIT;

		pthread_once(&once, register_drain);
	}
	s = rn_sock_new();
	if (!s)
		return rn_api_fail(ENOMEM);
	/* both ends close-on-exec from birth: a fork+exec in another thread meanwhile must
	 * not carry the engine's end away; the user's end loses the flag just below */
	if (socketpair(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC | (nonblock ? SOCK_NONBLOCK : 0), 0, sv) < 0) {
		rc = errno;
		rn_sock_unref(s);
		return rn_api_fail(rc);
	}
	if (!moving)
		rn_sys_fcntl(sv[0], F_SETFD, 0); /* the user's: as a socket() without SOCK_CLOEXEC */
	rn_sys_fstat(sv[0], &sb);
	if (!nonblock)
		rn_sys_fcntl(sv[1], F_SETFL, O_NONBLOCK);
	sv[1] = rn_fd_own_high_cloexec(sv[1]);
	s->user_fd = sv[0];
	s->eng_fd = sv[1];
	s->dev = sb.st_dev;
	s->ino = sb.st_ino;
	s->cookie = rn_fd_cookie(sv[0]);
	s->cfg = *rn_engine_config();
	s->sndbuf = shrink_sndbuf(sv[0]);
	s->junk = rn_api_fill_junk(sv[0]);
	rc = rn_api_tab_install(sv[0], s);
	if (rc == 0) {
		/*
		 * The engine takes its end without the caller waiting (one hand-off
		 * fewer per connection): commands run in order, so the connect, bind
		 * or listen that follows finds it done.  Its reference is taken here,
		 * as the user may close the socket before the engine runs, and one
		 * more for the command itself: a connect made inline (rn_inline.c)
		 * may have come and gone, refused, dropping the engine's, before the
		 * command runs.
		 */
		rn_sock_ref(s);
		rn_sock_ref(s);
		rc = rn_engine_post(RN_CMD_CREATE, s);
		if (rc) {
			rn_sock_unref(s);
			rn_sock_unref(s);
		}
	}
	if (rc) {
		rn_sys_close(sv[0]);
		return rn_api_fail(-rc);
	}
	return sv[0];
}

int ri2n_socket(void)
{
	return socket_x(0, 0);
}

int rn_api_socket(int nonblock)
{
	return socket_x(nonblock, 1);
}

/*
 * The caller's address in *out: a sockaddr_in or sockaddr_in6 of at least
 * its family's size.  0, EAFNOSUPPORT (another family) or EINVAL (NULL or
 * too short).  The family is read only once the length covers it.
 */
static int take_sa(const struct sockaddr *a, socklen_t len, rn_hsa *out)
{
	sa_family_t fam;

	if (!a || len < (socklen_t)sizeof(fam))
		return EINVAL;
	memcpy(&fam, a, sizeof(fam));
	memset(out, 0, sizeof(*out));
	if (fam == AF_INET && len >= (socklen_t)sizeof(out->v4))
		memcpy(&out->v4, a, sizeof(out->v4));
	else if (fam == AF_INET6 && len >= (socklen_t)sizeof(out->v6))
		memcpy(&out->v6, a, sizeof(out->v6));
	else
		return fam == AF_INET || fam == AF_INET6 ? EINVAL : EAFNOSUPPORT;
	return 0;
}

int ri2n_bind(int fd, const struct sockaddr *addr, socklen_t len)
{
	rn_hsa a;
	int err = take_sa(addr, len, &a), rc;
	rn_sock *s;

	if (err)
		return rn_api_fail(err);
	s = rn_api_lookup(fd, &err);
	if (!s)
		return rn_api_fail(err);
	rc = rn_engine_call(RN_CMD_BIND, s, &a);
	rn_sock_unref(s);
	return rc ? rn_api_fail(-rc) : 0;
}

int ri2n_listen(int fd, int backlog)
{
	int err, rc;
	rn_sock *s = rn_api_lookup(fd, &err);

	if (!s)
		return rn_api_fail(err);
	pthread_mutex_lock(&s->mu);
	s->backlog = backlog <= 0 ? 128 : backlog > 65536 ? 65536 : backlog;
	pthread_mutex_unlock(&s->mu);
	rc = rn_engine_call(RN_CMD_LISTEN, s, NULL);
	if (rc == 0) {
		/* nothing holds a listener's A back any more: its buffer's size back */
		pthread_mutex_lock(&s->mu);
		grow_sndbuf(fd, s->sndbuf);
		s->sndbuf = 0;
		pthread_mutex_unlock(&s->mu);
	}
	rn_sock_unref(s);
	return rc ? rn_api_fail(-rc) : 0;
}

/* A thread cancelled in a wait on s: the reference its caller took goes. */
static void unref_cancelled(void *s)
{
	rn_sock_unref(s);
}

/* Sleeps until fd is writable, cancellable as TCP's connect (dropping s's reference). */
static int sleep_writable(rn_sock *s, struct pollfd *p)
{
	int rc, ct;

	pthread_cleanup_push(unref_cancelled, s);
	ct = rn_sys_cancel_begin();
	rc = rn_sys_ppoll(p, 1, NULL);
	rn_sys_cancel_end(ct);
	pthread_cleanup_pop(0);
	return rc;
}

/*
 * A connect's wait interrupted by a handler: whether TCP resumes it.  The
 * kernel restarts connect() after a handler installed with SA_RESTART, and
 * the restarted call waits on for the handshake; with SO_SNDTIMEO set, EINTR.
 */
static int connect_restarts(int fd, rn_sig_snap before)
{
	return rn_sig_restartable(before) && rn_inline_fd_timeout(fd, SO_SNDTIMEO) < 0;
}

/* Waits for a blocking connect: writability means the handshake ended. */
static int wait_connected(rn_sock *s, int fd)
{
	for (;;) {
		struct pollfd p = { .fd = fd, .events = POLLOUT };
		rn_sig_snap sig = rn_sig_now();
		int kind, err, ct;

		pthread_mutex_lock(&s->mu);
		kind = s->kind;
		err = s->so_error;
		if (kind == RN_SK_DEAD)
			s->so_error = 0;
		pthread_mutex_unlock(&s->mu);
		if (kind == RN_SK_CONNECTED)
			return 0;
		if (kind == RN_SK_DEAD)
			return err ? err : ECONNREFUSED;
		if (sleep_writable(s, &p) < 0 && errno == EINTR) {
			if (connect_restarts(fd, sig))
				continue;
			return EINTR; /* the connect goes on, as with TCP */
		}
		if (p.revents & (POLLOUT | POLLHUP | POLLERR)) {
			/* the engine updates the state before it wakes us; look again */
			ct = rn_sys_nocancel_begin(); /* a short wait, under s->mu */
			pthread_mutex_lock(&s->mu);
			while (s->kind == RN_SK_CONNECTING)
				pthread_cond_wait(&s->cv, &s->mu);
			pthread_mutex_unlock(&s->mu);
			rn_sys_nocancel_end(ct);
		}
	}
}

/* ri2n_connect; nonblock: O_NONBLOCK of fd's file, or -1 to ask; mine: fd is the caller's own */
static int connect_x(int fd, int mine, int nonblock, const struct sockaddr *addr, socklen_t len)
{
	rn_hsa a;
	int err = take_sa(addr, len, &a), rc;
	rn_sock *s;

	if (err)
		return rn_api_fail(err);
	s = mine ? rn_api_lookup_known(fd) : rn_api_lookup(fd, &err);
	if (!s)
		return rn_api_fail(mine ? EBADF : err);
	if (nonblock < 0)
		nonblock = (rn_sys_fcntl(fd, F_GETFL, 0) & O_NONBLOCK) != 0;
	s->connect_nb = nonblock;
	rc = rn_engine_connect(s, &a);
	if (rc) {
		rn_sock_unref(s);
		return rn_api_fail(-rc);
	}
	if (nonblock) {
		rn_sock_unref(s);
		return rn_api_fail(EINPROGRESS);
	}
	err = wait_connected(s, fd);
	rn_sock_unref(s);
	return err ? rn_api_fail(err) : 0;
}

int ri2n_connect(int fd, const struct sockaddr *addr, socklen_t len)
{
	return connect_x(fd, 0, -1, addr, len);
}

int rn_api_connect(int fd, int nonblock, const struct sockaddr *addr, socklen_t len)
{
	return connect_x(fd, 1, nonblock, addr, len);
}

int ri2n_close(int fd)
{
	/* the entry goes even if stale (the number is something else now); threads
	 * blocked in a fast call on the socket return EBADF if it was its last number */
	rn_api_forget(fd);
	/* the engine sees its end close and winds the connection down */
	return rn_sys_close(fd);
}

/*
 * The addresses of a ri2n connection another process owns (this one got
 * its descriptor across fork, exec or SCM_RIGHTS): the name the owner's
 * engine gave the socketpair (rn_pairname.c).  Not in a sandbox: ri2n makes
 * no call of its own there.
 */
static int name_of_handed(int fd, struct sockaddr *addr, socklen_t *len, int peer, int err)
{
	rn_hsa local = { .sa = { 0 } }, remote = { .sa = { 0 } };

	if (err != ENOTSOCK || rn_sandbox_on() || rn_pairname_get(fd, &local, &remote) < 0)
		return rn_api_fail(err);
	if (!addr || !len)
		return rn_api_fail(EINVAL);
	rn_api_put_addr(peer ? &remote : &local, addr, len);
	return 0;
}

static int name_of(int fd, struct sockaddr *addr, socklen_t *len, int peer)
{
	int err;
	rn_sock *s = rn_api_lookup(fd, &err);

	if (!s)
		return name_of_handed(fd, addr, len, peer, err);
	if (!addr || !len) {
		rn_sock_unref(s);
		return rn_api_fail(EINVAL);
	}
	pthread_mutex_lock(&s->mu);
	if (peer && s->kind != RN_SK_CONNECTED && s->kind != RN_SK_CONNECTING) {
		pthread_mutex_unlock(&s->mu);
		rn_sock_unref(s);
		return rn_api_fail(ENOTCONN);
	}
	rn_api_put_addr(peer ? &s->peer : &s->local, addr, len);
	if (!peer && s->local.sa.sa_family == 0) {
		rn_hsa any = { .v4 = { .sin_family = AF_INET } };

		rn_api_put_addr(&any, addr, len);
	}
	pthread_mutex_unlock(&s->mu);
	rn_sock_unref(s);
	return 0;
}

int ri2n_getsockname(int fd, struct sockaddr *addr, socklen_t *len)
{
	return name_of(fd, addr, len, 0);
}

int ri2n_getpeername(int fd, struct sockaddr *addr, socklen_t *len)
{
	return name_of(fd, addr, len, 1);
}


/* ---- descriptor numbers, for the LD_PRELOAD shim (src/shim) ---- */

/*
 * The shim turns a program's TCP socket into a ri2n socket at connect() or
 * listen() time, on the number the program already holds, and follows the
 * program's dup()s and close()s.  These calls keep the table above in step.
 * They use the raw system calls for dup3/close, so that an interposed dup3
 * or close (the shim's own) never sees them.
 */
int rn_api_move(int fd, int to, int flags)
{
	int err, kind, rc;
	rn_sock *s;

	if (to < 0 || to == fd || (flags & ~O_CLOEXEC))
		return rn_api_fail(EINVAL);
	s = rn_api_lookup_known(fd);
	if (!s)
		return rn_api_fail(EBADF);
	pthread_mutex_lock(&s->mu);
	kind = s->kind;
	pthread_mutex_unlock(&s->mu);
	if (kind != RN_SK_NEW && kind != RN_SK_LISTEN) {
		/* a connection is named by its number in the engine's events */
		rn_sock_unref(s);
		return rn_api_fail(EINVAL);
	}
	if (rn_sys_dup3(fd, to, flags) < 0) {
		err = errno;
		rn_sock_unref(s);
		return rn_api_fail(err);
	}
	rc = rn_api_tab_install(to, s); /* our reference moves to the table */
	if (rc) {
		rn_sys_close(to);
		rn_sock_unref(s);
		return rn_api_fail(-rc);
	}
	/* the engine reads it unlocked; it has no connection to name yet */
	__atomic_store_n(&s->user_fd, to, __ATOMIC_RELAXED);
	rn_api_forget(fd);
	rn_sys_close(fd);
	return to;
}

int rn_api_rail_match(const rn_hsa *a, int exact)
{
	const rn_rail_info *rails;
	rn_addr x = rn_hsock_sa_addr(a); /* ::ffff:a.b.c.d as a.b.c.d */
	int n, rc = rn_engine_start();
	static const uint8_t any6[16];

	if (rc)
		return rc;
	n = rn_engine_rails(&rails);
	if (!x.v6 && x.ip == 0)
		return n > 0;
	for (int i = 0; i < n; i++) {
		const rn_rail_info *ri = &rails[i];
		rn_rail_addr r = { .ip = ri->ip, .prefix = ri->prefix, .v6 = ri->v6,
				   .scope = ri->v6 ? (uint32_t)ri->ifindex : 0 };

		/* a rail still waiting for its address takes nothing */
		if (ri->v6 != x.v6 || ri->prefix == 0)
			continue;
		if (x.v6 && memcmp(x.ip6, any6, sizeof(any6)) == 0)
			return 1; /* "::": whether there is an IPv6 rail */
		memcpy(r.ip6, ri->ip6, sizeof(r.ip6));
		/* in its subnet (a link-local address with a scope: on its interface) */
		if (!rn_addr_in_rail(&r, x))
			continue;
		if (!exact || (x.v6 ? memcmp(x.ip6, r.ip6, sizeof(r.ip6)) == 0 : x.ip == r.ip))
			return 1;
	}
	return 0;
}

int rn_api_set_sndbuf(int fd, int name, const void *val, socklen_t len)
{
	int err, kind;
	rn_sock *s;

	if (name != SO_SNDBUF && name != SO_SNDBUFFORCE)
		return rn_api_fail(EINVAL);
	s = rn_api_lookup(fd, &err);
	if (!s)
		return rn_api_fail(err);
	/* the raw call: an interposed setsockopt (the shim's) may be what called us */
	if (rn_sys_setsockopt(fd, SOL_SOCKET, name, val, len) < 0) {
		err = errno;
		rn_sock_unref(s);
		return rn_api_fail(err);
	}
	/*
	 * A larger buffer would make A writable before the handshake ends: fill
	 * it up too.  The engine takes s->junk at connect or listen, under the
	 * same mutex.
	 */
	pthread_mutex_lock(&s->mu);
	kind = s->kind;
	s->sndbuf = 0; /* the user's size stays */
	if (kind == RN_SK_NEW)
		s->junk += rn_api_fill_junk(fd);
	pthread_mutex_unlock(&s->mu);
	rn_sock_unref(s);
	return 0;
}
