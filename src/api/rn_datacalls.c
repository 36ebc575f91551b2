/*
 * rn_datacalls.c - the interposed data calls: read, write, readv, writev,
 * recv, send, recvfrom, sendto, recvmsg, sendmsg (rn_datacalls.h).
 *
 * On a ri2n socket each goes through ri2n's fast path (rn_api_send /
 * rn_api_recv, see rn_inline.h): the program's own thread puts its bytes
 * onto the rails and, waiting for a reply, polls the rails itself, instead
 * of crossing the socketpair and waking ri2n's engine thread on the way.
 * Everything else passes straight through: a descriptor that is not ours
 * costs one lock-free look-up (rn_dc_ours).  Addresses and ancillary data
 * are what TCP gives on a connected socket: none.  Below them, the writers
 * that only mark the socket.
 */
#define _GNU_SOURCE
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <stdarg.h>
#include <stdio.h>
#include <sys/ioctl.h>
#include <sys/sendfile.h>
#include <sys/socket.h>
#include <sys/uio.h>
#include <unistd.h>

#include "rn_api.h"
#include "rn_datacalls.h"

#define RN_DC_API __attribute__((visibility("default")))
#define REAL (rn_dc_real())

/*
 * The fast path for fd, if it is a ri2n socket: 1 with *rc the call's
 * result (errno set on -1); 0 if it is not (errno as it was).
 */
static int fast_send(int fd, const struct iovec *iov, int iovcnt, int flags, ssize_t *rc)
{
	int saved = errno, handled;

	*rc = rn_api_send(fd, rn_dc_known(), iov, iovcnt, flags, &handled);
	if (!handled)
		errno = saved;
	return handled;
}

static int fast_recv(int fd, const struct iovec *iov, int iovcnt, int flags, ssize_t *rc)
{
	int saved = errno, handled;

	*rc = rn_api_recv(fd, rn_dc_known(), iov, iovcnt, flags, &handled);
	if (!handled)
		errno = saved;
	return handled;
}

RN_DC_API ssize_t read(int fd, void *buf, size_t len)
{
	struct iovec iov = { buf, len };
	ssize_t rc;

	if (rn_dc_ours(fd) && fast_recv(fd, &iov, 1, 0, &rc))
		return rc;
	return REAL->read(fd, buf, len);
}

RN_DC_API ssize_t write(int fd, const void *buf, size_t len)
{
	struct iovec iov = { (void *)buf, len };
	ssize_t rc;

	if (rn_dc_ours(fd) && fast_send(fd, &iov, 1, 0, &rc))
		return rc;
	return REAL->write(fd, buf, len);
}

RN_DC_API ssize_t readv(int fd, const struct iovec *iov, int iovcnt)
{
	ssize_t rc;

	if (iovcnt >= 0 && iovcnt <= IOV_MAX && rn_dc_ours(fd) && fast_recv(fd, iov, iovcnt, 0, &rc))
		return rc;
	return REAL->readv(fd, iov, iovcnt);
}

RN_DC_API ssize_t writev(int fd, const struct iovec *iov, int iovcnt)
{
	ssize_t rc;

	if (iovcnt >= 0 && iovcnt <= IOV_MAX && rn_dc_ours(fd) && fast_send(fd, iov, iovcnt, 0, &rc))
		return rc;
	return REAL->writev(fd, iov, iovcnt);
}

RN_DC_API ssize_t recv(int fd, void *buf, size_t len, int flags)
{
	struct iovec iov = { buf, len };
	ssize_t rc;

	if (rn_dc_ours(fd) && fast_recv(fd, &iov, 1, flags, &rc))
		return rc;
	return REAL->recv(fd, buf, len, flags);
}

RN_DC_API ssize_t send(int fd, const void *buf, size_t len, int flags)
{
	struct iovec iov = { (void *)buf, len };
	ssize_t rc;

	if (rn_dc_ours(fd) && fast_send(fd, &iov, 1, flags, &rc))
		return rc;
	return REAL->send(fd, buf, len, flags);
}

RN_DC_API ssize_t recvfrom(int fd, void *buf, size_t len, int flags, struct sockaddr *addr,
			     socklen_t *alen)
{
	struct iovec iov = { buf, len };
	ssize_t rc;

	if (rn_dc_ours(fd) && fast_recv(fd, &iov, 1, flags, &rc)) {
		if (rc >= 0 && addr && alen)
			*alen = 0; /* a connected stream names no sender */
		return rc;
	}
	return REAL->recvfrom(fd, buf, len, flags, addr, alen);
}

RN_DC_API ssize_t sendto(int fd, const void *buf, size_t len, int flags,
			   const struct sockaddr *addr, socklen_t alen)
{
	struct iovec iov = { (void *)buf, len };
	ssize_t rc;

	/* TCP ignores the address of a sendto on a connected socket: so do we */
	if (rn_dc_ours(fd) && fast_send(fd, &iov, 1, flags, &rc))
		return rc;
	return REAL->sendto(fd, buf, len, flags, addr, alen);
}

RN_DC_API ssize_t recvmsg(int fd, struct msghdr *m, int flags)
{
	ssize_t rc;

	if (m && m->msg_iovlen <= IOV_MAX && rn_dc_ours(fd) &&
	    fast_recv(fd, m->msg_iov, (int)m->msg_iovlen, flags, &rc)) {
		if (rc >= 0) {
			m->msg_namelen = 0;
			m->msg_controllen = 0;
			m->msg_flags = 0;
		}
		return rc;
	}
	return REAL->recvmsg(fd, m, flags);
}

RN_DC_API ssize_t sendmsg(int fd, const struct msghdr *m, int flags)
{
	ssize_t rc;

	/* ancillary data means nothing to a TCP stream either */
	if (m && m->msg_iovlen <= IOV_MAX && rn_dc_ours(fd) &&
	    fast_send(fd, m->msg_iov, (int)m->msg_iovlen, flags, &rc))
		return rc;
	return REAL->sendmsg(fd, m, flags);
}

/*
 * ---- writers that only mark the socket ----
 *
 * They put their bytes into the descriptor, where ri2n's engine takes them:
 * the socket is marked first, so that fast sends after them take those
 * bytes first and the order holds (rn_api_note_plain).
 */

static void mark_plain(int fd)
{
	if (rn_dc_ours(fd)) {
		int saved = errno;

		rn_api_note_plain(fd);
		errno = saved;
	}
}

RN_DC_API ssize_t sendfile(int out, int in, off_t *off, size_t count)
{
	mark_plain(out);
	return REAL->sendfile(out, in, off, count);
}

RN_DC_API ssize_t sendfile64(int out, int in, off64_t *off, size_t count)
{
	mark_plain(out);
	return REAL->sendfile64(out, in, off, count);
}

RN_DC_API ssize_t splice(int in, loff_t *in_off, int out, loff_t *out_off, size_t len,
			   unsigned int flags)
{
	if (rn_dc_ours(in)) { /* it reads the descriptor: what an epoll wait reported from ri2n goes there */
		int saved = errno;

		rn_api_to_descriptor(in);
		errno = saved;
	}
	mark_plain(out);
	return REAL->splice(in, in_off, out, out_off, len, flags);
}

RN_DC_API int sendmmsg(int fd, struct mmsghdr *v, unsigned int n, int flags)
{
	mark_plain(fd);
	return REAL->sendmmsg(fd, v, n, flags);
}

RN_DC_API FILE *fdopen(int fd, const char *mode)
{
	mark_plain(fd);
	return REAL->fdopen(fd, mode);
}

RN_DC_API int vdprintf(int fd, const char *fmt, va_list ap)
{
	mark_plain(fd);
	return REAL->vdprintf(fd, fmt, ap);
}

/*
 * shutdown is the descriptor's own: the engine sees the end there and sends
 * FIN after the bytes before it.  A fast send after it must fail (EPIPE), not
 * slip its bytes in before the FIN: marked, the next one looks into the
 * descriptor first and finds the end.
 */
RN_DC_API int shutdown(int fd, int how)
{
	if (how != SHUT_RD)
		mark_plain(fd);
	return REAL->shutdown(fd, how);
}

RN_DC_API int dprintf(int fd, const char *fmt, ...)
{
	va_list ap;
	int rc;

	va_start(ap, fmt);
	rc = vdprintf(fd, fmt, ap);
	va_end(ap);
	return rc;
}

/*
 * ioctl: FIONREAD (SIOCINQ), SIOCOUTQ and SIOCOUTQNSD on a ri2n socket count
 * what waits in ri2n's buffers too (ri2n_ioctl.c); every other request, and
 * every other descriptor, passes on.  The third argument is a pointer or a
 * word, absent for some requests: read as a word either way, as libc does.
 */
RN_DC_API int ioctl(int fd, unsigned long req, ...)
{
	va_list ap;
	void *arg;

	va_start(ap, req);
	arg = va_arg(ap, void *);
	va_end(ap);
	if (arg && rn_api_queue_ioctl(req) && rn_dc_ours(fd)) {
		int saved = errno, handled, val, rc = rn_api_ioctl(fd, rn_dc_known(), req, &val, &handled);

		if (handled) {
			if (rc == 0)
				*(int *)arg = val;
			return rc;
		}
		errno = saved;
	}
	return REAL->ioctl(fd, req, arg);
}
