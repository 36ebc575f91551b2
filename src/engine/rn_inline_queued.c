/*
 * rn_inline_queued.c - what FIONREAD (SIOCINQ), SIOCOUTQ and SIOCOUTQNSD
 * answer for a ri2n connection.
 *
 * A connection's bytes wait in two places: the socketpair (bytes the engine
 * delivered and the program has not read; bytes the program wrote that the
 * engine has not taken) and the core's rings (bytes the fast path reads
 * straight from the reorder ring, which an epoll wait may report readable
 * without ever writing them to the descriptor; bytes written and not
 * acknowledged yet).  The kernel's ioctl on the descriptor sees only the
 * first: a program sizing its read by FIONREAD right after readiness would
 * read 0 bytes and take it for the end of the stream.  Both are summed here
 * under the host lock, so no byte moving between them is counted twice or
 * missed.
 */
#define _GNU_SOURCE
#include <sys/ioctl.h>

#include "rn_inline.h"
#include "rn_stream.h"
#include "rn_sys.h"

/* The bytes waiting in descriptor fd's receive queue (FIONREAD), 0 if it cannot say. */
static size_t pair_bytes(int fd)
{
	int n = 0;

	return fd >= 0 && rn_sys_ioctl(fd, FIONREAD, &n) == 0 && n > 0 ? (size_t)n : 0;
}

int rn_inline_queued(rn_sock *s, int fd, rn_queued *q)
{
	struct rn_stream *st;
	size_t rx, unacked, unsent, in_pair, out_pair;

	rn_host_lock();
	st = s->stream;
	if (!st || !st->conn || st->fd < 0) {
		rn_host_unlock();
		return RN_INLINE_PLAIN; /* not connected, or its end already in the descriptor */
	}
	rn_conn_queued(st->conn, &rx, &unacked, &unsent);
	in_pair = pair_bytes(fd);
	/* the program's bytes the engine has not read from its end yet, past the filler */
	out_pair = pair_bytes(st->fd);
	out_pair = out_pair > st->junk_left ? out_pair - st->junk_left : 0;
	rn_host_unlock();
	q->in = in_pair + rx;
	q->out = out_pair + unacked;
	q->unsent = out_pair + unsent;
	return 0;
}
