/*
 * ri2n_fast.c - the fast path: ri2n_send/ri2n_recv and the calls the shim
 * routes through it, where the calling thread drives its connection
 * (rn_inline.c); and the event API.
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
#include "rn_inline.h"
#include "rn_knobs.h"
#include "rn_stream.h"
#include "rn_api_int.h"
#include "rn_sig.h"
#include "rn_sys.h"

/* ---- the fast path: the calling thread drives its connection (rn_inline.c) ---- */

/* A socket never connected (new, bound or listening): TCP's EPIPE / ENOTCONN. */
static int unconnected(rn_sock *s)
{
	/* written under mu, but atomically: a fast call reads it without the lock */
	int kind = __atomic_load_n(&s->kind, __ATOMIC_ACQUIRE);

	return kind == RN_SK_NEW || kind == RN_SK_LISTEN;
}

/* A thread cancelled in a blocking call on the descriptor: its reference goes. */
static void unref_cancelled(void *s)
{
	rn_sock_unref(s);
}

/*
 * ---- in a signal handler, or re-entered on a thread already in a ri2n call ----
 *
 * The interrupted frame of this very thread may hold the table's, the
 * socket's or the host lock, or be inside malloc: the call takes no lock,
 * allocates and frees nothing, and goes the descriptor's way (the user's
 * end of the socketpair, a raw system call), where the engine takes the
 * bytes.  A write leaves the number marked lock-free (rn_api_sig_wrote), so
 * the next fast send takes those bytes first: the order holds.  A number
 * the table never held is not ours (*handled 0: the interposer passes it
 * on); one it held, maybe closed since, gets the raw call, as from libc.
 *
 * A blocking write here first takes what the descriptor takes at once.
 * For the rest it waits on the engine to empty the descriptor, after waking
 * every thread asleep on ri2n's locks (rn_host_poke: the frame it
 * interrupted may have taken the wake-up the engine needed).  It cannot wait
 * if that frame holds the host lock (the engine needs it) or the table's (a
 * reader of this process may need it, and the engine the room that reader
 * makes): then it returns what the descriptor took (a short count), or
 * fails with EAGAIN if nothing.  A blocking read does not wait while the thread is inside a ri2n call
 * either (that call may be the port's waiter, which keeps the engine off the
 * rails): what the descriptor has, or EAGAIN.
 */
static ssize_t write_raw(int fd, const struct iovec *iov, int iovcnt, int flags)
{
	struct msghdr m = { .msg_iov = (struct iovec *)iov, .msg_iovlen = (size_t)iovcnt };

	/* a plain write(v) keeps working on a number reused by a pipe meanwhile */
	return flags ? rn_sys_sendmsg(fd, &m, flags) : rn_sys_writev(fd, iov, iovcnt);
}

/* The iov past its first `off` bytes, in rest (at most 64 pieces: a handler's write is small). */
static int iov_skip(const struct iovec *iov, int iovcnt, size_t off, struct iovec *rest)
{
	int n = 0;

	for (int i = 0; i < iovcnt && n < 64; i++) {
		if (off >= iov[i].iov_len) {
			off -= iov[i].iov_len;
			continue;
		}
		rest[n++] = (struct iovec){ (char *)iov[i].iov_base + off, iov[i].iov_len - off };
		off = 0;
	}
	return n;
}

static ssize_t send_unsafe(int fd, const struct iovec *iov, int iovcnt, int flags, int *handled)
{
	struct iovec rest[64];
	size_t total = 0;
	ssize_t rc, more;
	int err;

	*handled = rn_api_marked(fd);
	if (!*handled)
		return rn_api_fail(ENOTSOCK);
	for (int i = 0; i < iovcnt; i++)
		total += iov[i].iov_len;
	rc = write_raw(fd, iov, iovcnt, flags | MSG_DONTWAIT);
	err = errno;
	if (rc < 0 && err == ENOTSOCK) /* the number is something else by now: its own write */
		return rn_sys_writev(fd, iov, iovcnt);
	if (!(flags & MSG_DONTWAIT) &&
	    (rc >= 0 ? (size_t)rc < total : err == EAGAIN || err == EWOULDBLOCK) &&
	    !rn_host_held_here() && !rn_api_tab_held_here()) {
		size_t off = rc > 0 ? (size_t)rc : 0;

		rn_host_poke();
		rn_api_tab_poke();
		more = write_raw(fd, rest, iov_skip(iov, iovcnt, off, rest), flags);
		err = errno;
		rc = more >= 0 ? (ssize_t)off + more : off ? (ssize_t)off : -1;
	}
	rn_api_sig_wrote(fd);
	errno = err;
	return rc;
}

static ssize_t recv_unsafe(int fd, const struct iovec *iov, int iovcnt, int flags, int *handled)
{
	struct msghdr m = { .msg_iov = (struct iovec *)iov, .msg_iovlen = (size_t)iovcnt };

	*handled = rn_api_marked(fd);
	if (!*handled)
		return rn_api_fail(ENOTSOCK);
	if (rn_sig_t_calls)
		flags |= MSG_DONTWAIT;
	return flags ? rn_sys_recvmsg(fd, &m, flags) : rn_sys_readv(fd, iov, iovcnt);
}

/* ---- the fast path proper ---- */

static ssize_t send_fast(int fd, int known, const struct iovec *iov, int iovcnt, int flags,
			 int *handled)
{
	int err = ENOTSOCK;
	rn_sock *s;
	ssize_t rc;

	rn_api_sig_sweep(); /* bytes handlers wrote go before ours */
	s = rn_api_lookup_data(fd, known, &err);
	*handled = s != NULL;
	if (!s)
		return rn_api_fail(err);
	if (unconnected(s)) { /* TCP's answer: nothing to send on */
		rn_sock_unref(s);
		if (!(flags & MSG_NOSIGNAL))
			raise(SIGPIPE);
		return rn_api_fail(EPIPE);
	}
	rc = rn_inline_send(s, fd, iov, iovcnt, flags);
	if (rc == RN_INLINE_PLAIN)
		__atomic_store_n(&s->plain_writes, 1, __ATOMIC_RELAXED);
	rn_sock_unref(s);
	if (rc == RN_INLINE_PLAIN) {
		/* the descriptor's own send: raw, past any interposer; cancellable as TCP's */
		struct msghdr m = { .msg_iov = (struct iovec *)iov, .msg_iovlen = (size_t)iovcnt };
		int ct = rn_sys_cancel_begin();

		rc = rn_sys_sendmsg(fd, &m, flags);
		rn_sys_cancel_end(ct);
		return rc;
	}
	if (rc < 0)
		return rn_api_fail((int)-rc);
	return rc;
}

static ssize_t recv_fast(int fd, int known, const struct iovec *iov, int iovcnt, int flags,
			 int *handled)
{
	int err = ENOTSOCK;
	rn_sock *s = rn_api_lookup_data(fd, known, &err);
	ssize_t rc;

	*handled = s != NULL;
	if (!s)
		return rn_api_fail(err);
	if (unconnected(s)) {
		rn_sock_unref(s);
		return rn_api_fail(ENOTCONN);
	}
	rc = rn_inline_recv(s, fd, iov, iovcnt, flags);
	if (rc == RN_INLINE_PLAIN) {
		struct msghdr m = { .msg_iov = (struct iovec *)iov, .msg_iovlen = (size_t)iovcnt };
		int ct;

		pthread_cleanup_push(unref_cancelled, s);
		ct = rn_sys_cancel_begin();
		rc = rn_sys_recvmsg(fd, &m, flags);
		rn_sys_cancel_end(ct);
		pthread_cleanup_pop(0);
		if (rc < 0 && errno == ECONNRESET) {
			/* the descriptor can only say "reset": say why it died (ETIMEDOUT, ...) */
			pthread_mutex_lock(&s->mu);
			err = s->dead_error;
			pthread_mutex_unlock(&s->mu);
			errno = err ? err : ECONNRESET;
		}
		rn_sock_unref(s);
		return rc;
	}
	rn_sock_unref(s);
	if (rc < 0)
		return rn_api_fail((int)-rc);
	return rc;
}

ssize_t rn_api_send(int fd, int known, const struct iovec *iov, int iovcnt, int flags,
		    int *handled)
{
	ssize_t rc;

	if (rn_sig_unsafe())
		return send_unsafe(fd, iov, iovcnt, flags, handled);
	rn_sig_call_begin();
	rc = send_fast(fd, known, iov, iovcnt, flags, handled);
	rn_sig_call_end();
	return rc;
}

ssize_t rn_api_recv(int fd, int known, const struct iovec *iov, int iovcnt, int flags,
		    int *handled)
{
	ssize_t rc;

	if (rn_sig_unsafe())
		return recv_unsafe(fd, iov, iovcnt, flags, handled);
	rn_sig_call_begin();
	rc = recv_fast(fd, known, iov, iovcnt, flags, handled);
	rn_sig_call_end();
	return rc;
}

int rn_api_rails(int fd, int known, rn_railref *out, int max)
{
	int err, n;
	rn_sock *s = rn_api_lookup_known(fd);

	/*
	 * Not in the table (a connection another process's engine serves, one
	 * a forked child has not taken over yet): no rails, and no system call
	 * to say so, as an epoll wait asks at every turn.
	 */
	if (!s)
		return 0;
	if (!known) {
		rn_sock_unref(s);
		s = rn_api_lookup(fd, &err);
		if (!s)
			return 0;
	}
	n = rn_inline_rails(s, out, max);
	rn_sock_unref(s);
	return n;
}

int rn_api_poll_rails(int fd, int known, rn_railref *out, int max, void **sock)
{
	int err;
	rn_sock *s = rn_api_lookup_as(fd, known, &err);

	*sock = s;
	return s ? rn_inline_rails(s, out, max) : 0;
}

void rn_api_poll_put(void *const *socks, int n)
{
	for (int i = 0; i < n; i++)
		if (socks[i])
			rn_sock_unref(socks[i]);
}

int rn_api_epoll_note(int fd, int known, uint64_t ep_id, uint32_t events, uint64_t data,
		      rn_railref *out, int max)
{
	int err, n;
	rn_sock *s = rn_api_lookup_as(fd, known, &err);

	if (!s)
		return 0;
	n = rn_inline_epoll_note(s, ep_id, events, data, out, max);
	rn_sock_unref(s);
	return n;
}

ssize_t ri2n_send(int fd, const void *buf, size_t len, int flags)
{
	struct iovec iov = { (void *)buf, len };
	int handled;

	return rn_api_send(fd, 0, &iov, 1, flags, &handled);
}

ssize_t ri2n_recv(int fd, void *buf, size_t len, int flags)
{
	struct iovec iov = { buf, len };
	int handled;

	return rn_api_recv(fd, 0, &iov, 1, flags, &handled);
}

ssize_t ri2n_writev(int fd, const struct iovec *iov, int iovcnt)
{
	int handled;

	if (iovcnt < 0 || iovcnt > IOV_MAX)
		return rn_api_fail(EINVAL);
	return rn_api_send(fd, 0, iov, iovcnt, 0, &handled);
}

ssize_t ri2n_readv(int fd, const struct iovec *iov, int iovcnt)
{
	int handled;

	if (iovcnt < 0 || iovcnt > IOV_MAX)
		return rn_api_fail(EINVAL);
	return rn_api_recv(fd, 0, iov, iovcnt, 0, &handled);
}

int ri2n_event_fd(void)
{
	return rn_events_fd();
}

/* ri2n.h's ri2n_read_event() is a macro that passes sizeof (see ri2n_stats). */
#undef ri2n_read_event
_Static_assert(sizeof(struct ri2n_event) >= RI2N_EVENT_SIZE_V1,
	       "ri2n_event grows at its end only");

int ri2n_read_event_sz(struct ri2n_event *ev, size_t size)
{
	struct ri2n_event full;
	int got;

	if (!ev || size < RI2N_EVENT_SIZE_V1)
		return rn_api_fail(EINVAL);
	got = rn_events_read(&full);
	if (got == 1)
		rn_api_copy_out(ev, size, &full, sizeof(full));
	return got;
}

int ri2n_read_event(struct ri2n_event *ev)
{
	return ri2n_read_event_sz(ev, RI2N_EVENT_SIZE_V1);
}
