/*
 * ri2n_ioctl.c - FIONREAD (SIOCINQ), SIOCOUTQ and SIOCOUTQNSD on a ri2n
 * socket, answered as TCP answers them (rn_inline_queued.c says why the
 * descriptor alone cannot).  Both interposers (libri2n, ri2n-run) call this
 * from their ioctl (rn_datacalls.c).
 */
#define _GNU_SOURCE
#include <errno.h>
#include <limits.h>
#include <linux/sockios.h>
#include <sys/ioctl.h>

#include "rn_api.h"
#include "rn_api_int.h"
#include "rn_inline.h"
#include "rn_sys.h"

int rn_api_queue_ioctl(unsigned long req)
{
	return req == FIONREAD || req == SIOCOUTQ || req == SIOCOUTQNSD;
}

static int clamp(size_t n)
{
	return n > INT_MAX ? INT_MAX : (int)n;
}

int rn_api_ioctl(int fd, int known, unsigned long req, int *val, int *handled)
{
	int err = ENOTSOCK, kind, rc;
	rn_sock *s = rn_api_lookup_as(fd, known, &err);
	rn_queued q = { 0 };

	*handled = s != NULL;
	if (!s)
		return rn_api_fail(err);
	kind = __atomic_load_n(&s->kind, __ATOMIC_ACQUIRE);
	if (kind == RN_SK_LISTEN) {
		rn_sock_unref(s);
		return rn_api_fail(EINVAL); /* as TCP: a listener has no stream */
	}
	/* a socket not connecting yet has nothing queued (its descriptor holds filler) */
	rc = kind == RN_SK_NEW ? 0 : rn_inline_queued(s, fd, &q);
	rn_sock_unref(s);
	if (rc == RN_INLINE_PLAIN) {
		int n = 0;

		/* connecting, or ended: what the engine put into the descriptor is all there is */
		if (req == FIONREAD && rn_sys_ioctl(fd, FIONREAD, &n) < 0)
			return -1;
		q.in = n > 0 ? (size_t)n : 0;
	}
	*val = clamp(req == FIONREAD ? q.in : req == SIOCOUTQ ? q.out : q.unsent);
	return 0;
}
