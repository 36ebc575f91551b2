/*
 * rn_inline_io.c - the fast path's send and receive (rn_inline_send,
 * rn_inline_recv): the calling thread puts its bytes through the core onto
 * the rails, and takes them from the core, waiting on the rails itself.
 * Under the host lock, as all of rn_inline.c.
 */
#define _GNU_SOURCE
#include <errno.h>
#include <event2/event.h>
#include <fcntl.h>
#include <poll.h>
#include <pthread.h>
#include <stdlib.h>
#include <sched.h>
#include <string.h>
#include <sys/epoll.h>
#include <sys/eventfd.h>
#include <sys/socket.h>
#include <sys/syscall.h>
#include <sys/timerfd.h>
#include <time.h>
#include <unistd.h>

#include "rn_inline.h"
#include "rn_log.h"
#include "rn_port.h"
#include "rn_stream.h"
#include "rn_inline_int.h"
#include "rn_sys.h"
#include "rn_sig.h"

/* ---- send ---- */

/* Puts as much of iov (from byte `off`) into the core as it takes; bytes taken. */
static size_t write_iov(struct rn_stream *st, uint64_t now, const struct iovec *iov, int iovcnt,
			size_t off)
{
	size_t taken = 0;

	for (int i = 0; i < iovcnt; i++) {
		size_t len = iov[i].iov_len;
		ssize_t n;

		if (off >= len) {
			off -= len;
			continue;
		}
		n = rn_conn_write(st->conn, now, (const uint8_t *)iov[i].iov_base + off, len - off);
		if (n <= 0)
			break;
		taken += (size_t)n;
		if ((size_t)n < len - off)
			break;
		off = 0;
	}
	return taken;
}

/* The part of iov from byte `off` on, as at most MAX_IOV pieces in rest; their count. */
static size_t iov_from(const struct iovec *iov, int iovcnt, size_t off, struct iovec *rest)
{
	size_t n = 0;

	for (int i = 0; i < iovcnt && n < MAX_IOV; i++) {
		if (off >= iov[i].iov_len) {
			off -= iov[i].iov_len;
			continue;
		}
		rest[n++] = (struct iovec){ (uint8_t *)iov[i].iov_base + off, iov[i].iov_len - off };
		off = 0;
	}
	return n;
}

static size_t iov_total(const struct iovec *iov, int iovcnt)
{
	size_t t = 0;

	for (int i = 0; i < iovcnt; i++)
		t += iov[i].iov_len;
	return t;
}

/* A writer cancelled while its bytes wait for room: the caller's reference goes. */
static void spill_cancelled(void *s)
{
	rn_sock_unref(s);
}

/*
 * The bytes of iov from `off` on go into the descriptor, the plain path:
 * blocking or not as the descriptor and flags say; a blocked writer can be
 * cancelled there, as in TCP's write (dropping the caller's reference to
 * s).  Bytes taken, or -errno.
 */
static ssize_t spill(rn_sock *s, int fd, const struct iovec *iov, int iovcnt, size_t off,
		     int flags)
{
	struct iovec rest[MAX_IOV];
	struct msghdr m = { .msg_iov = rest, .msg_iovlen = iov_from(iov, iovcnt, off, rest) };
	ssize_t rc;
	int ct;

	pthread_cleanup_push(spill_cancelled, s);
	ct = rn_sys_cancel_begin();
	rc = rn_sys_sendmsg(fd, &m, flags & ~MSG_MORE);
	rn_sys_cancel_end(ct);
	pthread_cleanup_pop(0);
	return rc < 0 ? -errno : rc;
}

/*
 * What the core's send ring takes goes out at once; the rest (a bulk writer
 * ahead of the window) goes into the descriptor, where the engine takes it
 * as room opens, on its own thread, while this one goes on producing: the
 * pipeline a bulk transfer needs, and the back-pressure poll(POLLOUT) shows.
 */
ssize_t rn_inline_send(rn_sock *s, int fd, const struct iovec *iov, int iovcnt, int flags)
{
	size_t total = iov_total(iov, iovcnt), sent = 0;
	struct rn_stream *st;
	ssize_t rc = 0, n;

	if (flags & ~(MSG_DONTWAIT | MSG_NOSIGNAL | MSG_MORE) || iovcnt > MAX_IOV)
		return RN_INLINE_PLAIN;
	rn_host_enter_inline();
	st = s->stream;
	if (__atomic_load_n(&s->closed, __ATOMIC_ACQUIRE)) {
		rc = -EBADF;
	} else if (!rn_inline_ok_to_send(st)) {
		rc = RN_INLINE_PLAIN;
	} else {
		uint64_t now = rn_now_ns();
		/* plain bytes in the descriptor go first; none can be there unless... */
		int first = __atomic_load_n(&s->desc_first, __ATOMIC_ACQUIRE) &&
			    __atomic_exchange_n(&s->desc_first, 0, __ATOMIC_ACQ_REL);
		int pair = first || __atomic_load_n(&s->plain_writes, __ATOMIC_RELAXED) || st->pair_tx
				   ? rn_inline_take_pair(st, now)
				   : rn_conn_write_space(st->conn) > 0;

		if (pair < 0) {
			rc = RN_INLINE_PLAIN;
		} else {
			if (pair > 0)
				sent = write_iov(st, now, iov, iovcnt, 0);
		}
	}
	rn_inline_finish(s); /* services the stream: onto the rails now, as far as windows allow */
	if (rc >= 0 && sent < total && s->stream) {
		/*
		 * The rest goes through the descriptor, after these.  From now on
		 * whoever makes room (the engine, or an inline thread reading ACKs)
		 * moves such bytes up; the engine watches the descriptor for them.
		 */
		s->stream->pair_tx = 1;
		rn_engine_dirty(s->stream);
		rn_host_kick();
	}
	rn_host_leave_inline();
	if (rc < 0 || sent == total)
		return rc < 0 ? rc : (ssize_t)sent;
	n = spill(s, fd, iov, iovcnt, sent, flags);
	if (n >= 0)
		return (ssize_t)sent + n;
	return sent ? (ssize_t)sent : n;
}

/* ---- receive ---- */

/* Copies n bytes into iov from byte `off` on; bytes copied. */
static size_t copy_out(const struct iovec *iov, int iovcnt, size_t off, const uint8_t *d, size_t n)
{
	size_t done = 0;

	for (int i = 0; i < iovcnt && done < n; i++) {
		size_t len = iov[i].iov_len, k;

		if (off >= len) {
			off -= len;
			continue;
		}
		k = len - off < n - done ? len - off : n - done;
		memcpy((uint8_t *)iov[i].iov_base + off, d + done, k);
		done += k;
		off = 0;
	}
	return done;
}

/* Reads what the engine put into the descriptor, into iov from byte `off`. */
static ssize_t read_pair(int fd, const struct iovec *iov, int iovcnt, size_t off)
{
	struct iovec rest[MAX_IOV];
	struct msghdr m = { .msg_iov = rest, .msg_iovlen = iov_from(iov, iovcnt, off, rest) };

	return rn_sys_recvmsg(fd, &m, MSG_DONTWAIT);
}

/*
 * A wait of a receive ended with EINTR (nothing received yet): whether the
 * kernel's TCP would resume it.  Its rule (signal(7), tcp_recvmsg): a
 * receive on a socket with SO_RCVTIMEO set fails with EINTR whatever the
 * handler's flags; else it resumes if the handler was installed with
 * SA_RESTART.  *timeout: the call's limit, RN_WAIT_RCVTIMEO until asked.
 */
static int recv_restarts(int fd, int64_t *timeout, rn_sig_snap before)
{
	if (!rn_sig_restartable(before))
		return 0;
	if (*timeout == RN_WAIT_RCVTIMEO)
		*timeout = rn_inline_fd_timeout(fd, SO_RCVTIMEO);
	return *timeout < 0;
}

ssize_t rn_inline_recv(rn_sock *s, int fd, const struct iovec *iov, int iovcnt, int flags)
{
	size_t total = iov_total(iov, iovcnt), got = 0;
	int nonblock = (flags & MSG_DONTWAIT) != 0, waitall = (flags & MSG_WAITALL) != 0;
	int checked = 0;
	int64_t timeout = -1;
	struct timespec t0 = { 0, 0 };
	ssize_t rc = 0;
	uint32_t ready;
	rn_sig_snap sig;

	if (iovcnt > MAX_IOV) { /* the descriptor's: what a wait reported from the core goes there */
		rn_inline_to_descriptor(s);
		return RN_INLINE_PLAIN;
	}
	rn_host_enter_inline();
	if (flags & ~(MSG_DONTWAIT | MSG_WAITALL | MSG_NOSIGNAL | MSG_CMSG_CLOEXEC)) {
		if (rn_inline_ok_to_recv(s->stream))
			rn_inline_deliver_to_pair(s->stream, rn_now_ns());
		rn_host_leave_inline();
		return RN_INLINE_PLAIN;
	}
	if (total == 0) {
		rn_host_leave_inline();
		return 0;
	}
	for (;;) {
		struct rn_stream *st = s->stream;
		const uint8_t *d;
		ssize_t n;

		if (__atomic_load_n(&s->closed, __ATOMIC_ACQUIRE)) {
			rc = got ? (ssize_t)got : -EBADF;
			break;
		}
		if (!rn_inline_ok_to_recv(st)) {
			rc = got ? (ssize_t)got : RN_INLINE_PLAIN;
			break;
		}
		/* what the engine already put into the descriptor comes first */
		if (st->pair_rx) {
			size_t room = total - got;

			n = read_pair(fd, iov, iovcnt, got);
			if (n > 0) {
				/*
				 * Short: the descriptor is empty now (only the host
				 * lock's holders fill it), so the next bytes can come
				 * from the core, and epoll can report them from there.
				 */
				if ((size_t)n < room)
					st->pair_rx = 0;
				got += (size_t)n;
				if (got == total || !waitall) {
					rc = (ssize_t)got;
					break;
				}
				continue;
			}
			if (n == 0 || errno != EAGAIN) { /* the end, or an error: the plain path's */
				rc = got ? (ssize_t)got : RN_INLINE_PLAIN;
				break;
			}
			st->pair_rx = 0;
		}
		n = rn_conn_peek(st->conn, &d);
		if (n > 0) {
			size_t k = copy_out(iov, iovcnt, got, d, (size_t)n);

			rn_conn_consume(st->conn, rn_now_ns(), k);
			/*
			 * Its program reads it: held bytes stay young.  Once it has
			 * read them all, the report is spent: an edge-triggered
			 * program (nginx) waits for the next one, which bytes the
			 * engine reads meanwhile would never get while the stream
			 * stayed held (the engine leaves a held stream's bytes in the
			 * core: they waited out RN_HELD_NS, 0-50 ms, in 5% of
			 * keep-alive requests).
			 */
			if (st->held) {
				if (rn_conn_peek(st->conn, &d) == RN_ERR_AGAIN)
					rn_inline_unhold(st);
				else
					st->held_ns = rn_now_ns();
			}
			got += k;
			if (got == total || !waitall) {
				rc = (ssize_t)got;
				break;
			}
			continue;
		}
		if (n != RN_ERR_AGAIN) { /* the end of the stream or an error: the engine tells fd */
			rc = got ? (ssize_t)got : RN_INLINE_PLAIN;
			break;
		}
		if (!checked) {
			checked = 1;
			nonblock |= rn_inline_fd_nonblock(s, fd);
			timeout = RN_WAIT_RCVTIMEO; /* asked only if a wait must sleep */
			clock_gettime(CLOCK_MONOTONIC, &t0);
		}
		if (nonblock) {
			/*
			 * Not even a look at the rails: a non-blocking reader waits with
			 * poll/epoll/select, which reads them (under ri2n-run) or has
			 * the engine hand the bytes over; two reads finding nothing
			 * would cost more than the rare datagram they catch early.
			 */
			rc = got ? (ssize_t)got : -EAGAIN;
			break;
		}
		/* a datagram already there returns at once: no read to try first */
		rn_inline_service(st, rn_now_ns());
		sig = rn_sig_now();
		rc = rn_inline_wait_port(s, st, fd, POLLIN, &timeout, &t0,
					 __atomic_load_n(&s->busy_us, __ATOMIC_RELAXED), &ready);
		if (rc == -EINTR && !got && recv_restarts(fd, &timeout, sig))
			continue;
		if (rc < 0) {
			rc = got ? (ssize_t)got : rc;
			break;
		}
		/*
		 * What the datagrams made owed (ACKs, window updates) goes out in
		 * the next pass: rn_inline_finish when they brought bytes, the
		 * service before the next wait when not.
		 */
		if (ready && s->stream == st) {
			rn_port_read_some(st->port, ready);
			rn_inline_serve_others(st); /* the port's other connections: now */
		}
	}
	rn_inline_finish(s);
	rn_host_leave_inline();
	return rc;
}

