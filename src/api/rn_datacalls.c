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
 * are what TCP gives on a connected socket: none.
 */
#define _GNU_SOURCE
#include <errno.h>
#include <limits.h>
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
