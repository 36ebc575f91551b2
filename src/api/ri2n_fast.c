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

ssize_t rn_api_send(int fd, int known, const struct iovec *iov, int iovcnt, int flags,
		    int *handled)
{
	int err = ENOTSOCK;
	rn_sock *s = known ? rn_api_lookup_known(fd) : rn_api_lookup(fd, &err);
	ssize_t rc;

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

ssize_t rn_api_recv(int fd, int known, const struct iovec *iov, int iovcnt, int flags,
		    int *handled)
{
	int err = ENOTSOCK;
	rn_sock *s = known ? rn_api_lookup_known(fd) : rn_api_lookup(fd, &err);
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

int rn_api_rails(int fd, rn_railref *out, int max)
{
	int err, n;
	rn_sock *s = rn_api_lookup(fd, &err);

	if (!s)
		return 0;
	n = rn_inline_rails(s, out, max);
	rn_sock_unref(s);
	return n;
}

int rn_api_epoll_note(int fd, int known, uint64_t ep_id, uint32_t events, uint64_t data,
		      rn_railref *out, int max)
{
	int err, n = 0;
	rn_sock *s = known ? rn_api_lookup_known(fd) : rn_api_lookup(fd, &err);

	if (!s)
		return 0;
	rn_inline_epoll_note(s, ep_id, events, data);
	if (out && max > 0)
		n = rn_inline_rails(s, out, max);
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

int ri2n_read_event(struct ri2n_event *ev)
{
	if (!ev) {
		errno = EINVAL;
		return -1;
	}
	return rn_events_read(ev);
}
