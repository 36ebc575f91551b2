/*
 * rn_hrecv.c - batched receive from a set's rail sockets (rn_hrecv.h):
 * recvmmsg with GRO and arrival stamps, the error queue drained between.
 */
#define _GNU_SOURCE
#include <errno.h>
#include <netinet/udp.h>
#include <poll.h>
#include <stdlib.h>
#include <string.h>
#include <sys/uio.h>
#include <time.h>
#include <unistd.h>

#include "rn_hrecv.h"
#include "rn_sys.h"

#ifndef UDP_GRO
#define UDP_GRO 104
#endif

uint64_t rn_hclock_clamp(uint64_t *floor, uint64_t t, uint64_t now)
{
	if (!t || t > now)
		t = now;
	if (t < *floor)
		t = *floor;
	*floor = t;
	return t;
}

int rn_hrxbuf_init(rn_hrxbuf *r, size_t bufsz, int turn)
{
	memset(r, 0, sizeof(*r));
	r->bufsz = bufsz;
	r->turn = turn > RN_HRX_TURN ? RN_HRX_TURN : turn;
	r->mem = malloc(bufsz * (size_t)r->turn * RN_MAX_RAILS);
	if (!r->mem)
		return -ENOMEM;
	/* every batch's headers, built once; a read resets what the kernel wrote (read_batch) */
	for (int i = 0; i < RN_MAX_RAILS; i++) {
		rn_hrx *b = &r->b[i];
		uint8_t *mem = r->mem + (size_t)i * (size_t)r->turn * r->bufsz;

		for (int k = 0; k < r->turn; k++) {
			b->iov[k] = (struct iovec){ mem + (size_t)k * r->bufsz, r->bufsz };
			b->msgs[k].msg_hdr = (struct msghdr){ .msg_name = &b->from[k],
							      .msg_namelen = sizeof(b->from[k]),
							      .msg_iov = &b->iov[k], .msg_iovlen = 1,
							      .msg_control = b->ctl[k],
							      .msg_controllen = sizeof(b->ctl[k]) };
		}
	}
	return 0;
}

void rn_hrxbuf_free(rn_hrxbuf *r)
{
	free(r->mem);
	r->mem = NULL;
}

/* The segment size of a GRO run (0 for a plain datagram). */
static size_t gro_size(struct msghdr *m)
{
	for (struct cmsghdr *c = CMSG_FIRSTHDR(m); c; c = CMSG_NXTHDR(m, c))
		if (c->cmsg_level == SOL_UDP && c->cmsg_type == UDP_GRO) {
			int v;

			memcpy(&v, CMSG_DATA(c), sizeof(v));
			return v > 0 ? (size_t)v : 0;
		}
	return 0;
}

/* The kernel's arrival stamp, CLOCK_REALTIME ns, 0 if absent. */
static uint64_t stamp_real(struct msghdr *m)
{
	for (struct cmsghdr *c = CMSG_FIRSTHDR(m); c; c = CMSG_NXTHDR(m, c))
		if (c->cmsg_level == SOL_SOCKET && c->cmsg_type == SCM_TIMESTAMPNS) {
			struct timespec ts;

			memcpy(&ts, CMSG_DATA(c), sizeof(ts));
			return (uint64_t)ts.tv_sec * 1000000000u + (uint64_t)ts.tv_nsec;
		}
	return 0;
}

static uint64_t clock_ns(clockid_t id)
{
	struct timespec ts;

	clock_gettime(id, &ts);
	return (uint64_t)ts.tv_sec * 1000000000u + (uint64_t)ts.tv_nsec;
}

int rn_hrx_next(rn_hrx *b, rn_hdgram *out)
{
	size_t len, one;

	while (b->k < b->n) {
		len = b->msgs[b->k].msg_len - b->off;
		if (b->off == 0)
			b->seg = gro_size(&b->msgs[b->k].msg_hdr);
		/* a GRO run: datagrams of `seg` bytes back to back, the last maybe shorter */
		one = b->seg && b->seg < len ? b->seg : len;
		out->d = (const uint8_t *)b->iov[b->k].iov_base + b->off;
		out->len = one;
		out->from = rn_hsock_sa_addr(&b->from[b->k]);
		out->at = b->at[b->k];
		b->off += one;
		if (b->off >= b->msgs[b->k].msg_len) {
			b->k++;
			b->off = 0;
		}
		if (one > 0)
			return 1;
	}
	return 0;
}

/* Reads up to r->turn messages from socket idx into its batch; -errno or the count. */
static int read_batch(rn_hset *h, rn_hrxbuf *r, int idx)
{
	rn_hrx *b = &r->b[idx];
	int n;

	/* the kernel wrote the lengths and flags of the messages it filled last time */
	for (int k = 0; k < b->filled; k++) {
		b->msgs[k].msg_hdr.msg_namelen = sizeof(b->from[k]);
		b->msgs[k].msg_hdr.msg_controllen = sizeof(b->ctl[k]);
		b->msgs[k].msg_hdr.msg_flags = 0;
	}
	b->filled = 0;
	b->n = b->k = 0;
	b->off = 0;
	n = rn_sys_recvmmsg(h->s[idx].fd, b->msgs, (unsigned)r->turn, MSG_DONTWAIT, NULL);
	if (n < 0)
		return -errno;
	b->n = b->filled = n;
	if (n) {
		/* the kernel stamps CLOCK_REALTIME: shift to CLOCK_MONOTONIC */
		uint64_t off = clock_ns(CLOCK_REALTIME) - clock_ns(CLOCK_MONOTONIC);

		for (int k = 0; k < n; k++) {
			uint64_t t = stamp_real(&b->msgs[k].msg_hdr);

			b->at[k] = t > off ? t - off : 0;
		}
	}
	return n;
}

/*
 * One turn: a batch from each socket in `want`, then their datagrams merged
 * one rail at a time.  Reading one rail's batch whole before the next would
 * hand the core a run of one rail (a GRO run alone holds ~45 datagrams), and
 * its receive count (fewer than M of N packets) would judge the other rail
 * failed; the sender striped them one by one, so they go in one by one.
 */
static int read_turn(rn_hset *h, rn_hrxbuf *r, uint32_t want, uint32_t ready, uint32_t *full,
		     uint64_t *floor, rn_hsock_input_fn fn, void *arg)
{
	int got = 0, more = 1, total = 0;
	uint64_t now;

	*full = 0;
	for (int i = 0; i < h->n; i++) {
		int n;

		r->b[i].n = r->b[i].k = 0;
		if (!((want >> i) & 1) || h->s[i].fd < 0)
			continue;
		n = read_batch(h, r, i);
		/*
		 * An error, or nothing although the poller said the socket was
		 * ready: the error queue may hold an entry whose sk_err a send
		 * already took, which leaves POLLERR set while reads say EAGAIN.
		 * Reading the queue clears it: no wake-up loop.
		 */
		if ((n < 0 && n != -EAGAIN && n != -EINTR) || (n == -EAGAIN && ((ready >> i) & 1)))
			rn_hset_drain_errors(h, i);
		if (n <= 0)
			continue;
		got += n;
		if (n == r->turn)
			*full |= 1u << i;
	}
	if (!got)
		return 0;
	now = clock_ns(CLOCK_MONOTONIC);
	r->now = now;
	while (more) {
		more = 0;
		for (int i = 0; i < h->n; i++) {
			rn_hdgram dg;
			uint64_t at;

			if (!rn_hrx_next(&r->b[i], &dg))
				continue;
			more = 1;
			at = floor ? rn_hclock_clamp(floor, dg.at, now) : (dg.at && dg.at < now ? dg.at : now);
			h->s[i].rx_dgrams++;
			fn(arg, i, dg.from, dg.d, dg.len, at);
			total++;
		}
	}
	return total;
}

uint32_t rn_hset_ready(const rn_hset *h)
{
	struct pollfd pf[RN_MAX_RAILS];
	uint32_t m = 0;

	for (int i = 0; i < h->n; i++)
		pf[i] = (struct pollfd){ .fd = h->s[i].fd, .events = POLLIN };
	if (rn_sys_ppoll(pf, (nfds_t)h->n, &(struct timespec){ 0, 0 }) <= 0)
		return 0;
	for (int i = 0; i < h->n; i++)
		if (pf[i].revents)
			m |= 1u << i;
	return m;
}

int rn_hset_recv(rn_hset *h, rn_hrxbuf *r, uint32_t want, uint32_t ready, int rounds,
		 uint64_t *floor, rn_hsock_input_fn fn, void *arg, uint32_t *more)
{
	int total = 0;

	for (int round = 0; round < rounds && want; round++) {
		uint32_t full;

		total += read_turn(h, r, want, round == 0 ? ready : 0, &full, floor, fn, arg);
		/* a socket that filled its batch may hold more: then read every rail
		 * of `want` again, so what the others got meanwhile stays interleaved */
		want = full ? want : 0;
	}
	if (more)
		*more = want;
	return total;
}

int rn_hset_pass(rn_hset *h, rn_hrxbuf *r, int rounds, uint64_t *now, rn_hsock_input_fn fn,
		 void *arg, uint32_t *more)
{
	uint32_t left = *more, want = left ? left : rn_hset_ready(h);
	uint64_t floor = *now;
	int n;

	if (!want)
		return 0;
	n = rn_hset_recv(h, r, want, left ? 0 : want, rounds, &floor, fn, arg, more);
	if (floor > *now)
		*now = floor;
	return n;
}
