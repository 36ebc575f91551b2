/*
 * rn_hsock.c - rail sockets: options, batched send with GSO and
 * back-pressure, the error queue (receiving: rn_hrecv.c).
 */
#define _GNU_SOURCE
#include <errno.h>
#include <time.h>
#include <linux/errqueue.h>
#include <netinet/udp.h>
#include <poll.h>
#include <stdlib.h>
#include <string.h>
#include <sys/uio.h>
#include <time.h>
#include <unistd.h>

#include "rn_hsock.h"
#include "rn_sys.h"

#ifndef UDP_SEGMENT
#define UDP_SEGMENT 103
#endif
#ifndef UDP_GRO
#define UDP_GRO 104
#endif

#define SOCK_BUF (8 << 20)     /* kernel buffer per socket: ~5000 datagrams */
#define GSO_MAX_SEGS 64
#define GSO_MAX_BYTES 65000    /* a GSO message must fit one UDP datagram's length */
#define ERRQ_MAX 256           /* error-queue entries read per drain: bounds one call */

/* ---- opening ---- */

static void set_buf(int fd, int force, int opt)
{
	int v = SOCK_BUF;

	/* root may go past net.core.[rw]mem_max; others get what the limit allows */
	if (rn_sys_setsockopt(fd, SOL_SOCKET, force, &v, sizeof(v)) < 0)
		rn_sys_setsockopt(fd, SOL_SOCKET, opt, &v, sizeof(v));
}

/* Pins fd to interface dev (SO_BINDTODEVICE).  0 or -errno. */
static int pin(int fd, const char *dev)
{
	/* the name without its NUL: the kernel takes up to IFNAMSIZ bytes */
	if (rn_sys_setsockopt(fd, SOL_SOCKET, SO_BINDTODEVICE, dev, (socklen_t)strlen(dev)) < 0)
		return -errno;
	return 0;
}

socklen_t rn_hsock_sa_of(rn_hsa *sa, rn_addr a)
{
	memset(sa, 0, sizeof(*sa));
	if (!a.v6) {
		sa->v4.sin_family = AF_INET;
		sa->v4.sin_port = htons(a.port);
		sa->v4.sin_addr.s_addr = htonl(a.ip);
		return sizeof(sa->v4);
	}
	sa->v6.sin6_family = AF_INET6;
	sa->v6.sin6_port = htons(a.port);
	memcpy(&sa->v6.sin6_addr, a.ip6, sizeof(a.ip6));
	sa->v6.sin6_scope_id = a.scope;
	return sizeof(sa->v6);
}

rn_addr rn_hsock_sa_addr(const rn_hsa *sa)
{
	rn_addr a = { .ip = 0 };

	if (sa->sa.sa_family == AF_INET) {
		a.ip = ntohl(sa->v4.sin_addr.s_addr);
		a.port = ntohs(sa->v4.sin_port);
	} else if (sa->sa.sa_family == AF_INET6) {
		const uint8_t *b = sa->v6.sin6_addr.s6_addr;

		a.port = ntohs(sa->v6.sin6_port);
		if (IN6_IS_ADDR_V4MAPPED(&sa->v6.sin6_addr)) {
			a.ip = (uint32_t)b[12] << 24 | (uint32_t)b[13] << 16 | (uint32_t)b[14] << 8 |
			       b[15];
			return a;
		}
		a.v6 = 1;
		memcpy(a.ip6, b, sizeof(a.ip6));
		a.scope = rn_addr_link_local(a) ? sa->v6.sin6_scope_id : 0;
	}
	return a;
}

/* The options only one family has: path MTU discovery off, ICMP errors queued. */
static void family_opts(int fd, int v6, const rn_hsock_opts *o)
{
	/*
	 * PROBE: DF set, and the path MTU the kernel learned from ICMP is not
	 * applied to this socket.  ri2n sizes its own datagrams (RI2N_MTU, the
	 * interface's MTU); with DO, one forged "fragmentation needed" quoting
	 * our port planted a 552-byte path MTU for 10 minutes and every
	 * full-size send failed with EMSGSIZE (issue 14, finding 1).  IPv6
	 * routers never fragment: PROBE there keeps a forged "packet too big"
	 * from shrinking our datagrams the same way.
	 */
	int one = 1, pmtu = v6 ? IPV6_PMTUDISC_PROBE : IP_PMTUDISC_PROBE;

	if (v6) {
		/* an IPv4 rail has a socket of its own: this one takes IPv6 only */
		rn_sys_setsockopt(fd, IPPROTO_IPV6, IPV6_V6ONLY, &one, sizeof(one));
		rn_sys_setsockopt(fd, IPPROTO_IPV6, IPV6_MTU_DISCOVER, &pmtu, sizeof(pmtu));
	} else {
		rn_sys_setsockopt(fd, IPPROTO_IP, IP_MTU_DISCOVER, &pmtu, sizeof(pmtu));
	}
	/* ICMP errors (port unreachable: connection refused) come back to us */
	if (o->recverr)
		rn_sys_setsockopt(fd, v6 ? IPPROTO_IPV6 : IPPROTO_IP, v6 ? IPV6_RECVERR : IP_RECVERR,
				  &one, sizeof(one));
}

int rn_hsock_open(rn_hsock *s, uint32_t ip, uint16_t port, uint8_t prefix,
		  const rn_hsock_opts *o)
{
	rn_rail_addr a = { .ip = ip, .port = port, .prefix = prefix };

	return rn_hsock_open_rail(s, &a, o);
}

/*
 * A socket bound to ra with o's options: its descriptor in *fd (-1 if none
 * was made; left open on a later failure) and ra with the port the kernel
 * gave in *addr.  0 or -errno.
 */
static int bound_fd(int *fd, rn_rail_addr *addr, const rn_rail_addr *ra, const rn_hsock_opts *o)
{
	rn_hsa a;
	socklen_t alen = rn_hsock_sa_of(&a, rn_addr_of_rail(ra)), blen = alen;
	int one = 1;

	*fd = rn_sys_socket(ra->v6 ? AF_INET6 : AF_INET, SOCK_DGRAM | SOCK_NONBLOCK | SOCK_CLOEXEC,
			    0);
	if (*fd < 0)
		return -errno;
	set_buf(*fd, SO_RCVBUFFORCE, SO_RCVBUF);
	set_buf(*fd, SO_SNDBUFFORCE, SO_SNDBUF);
	family_opts(*fd, ra->v6, o);
	/*
	 * The kernel's arrival time of each datagram: after the driver was held
	 * off the CPU, a backlog keeps its real arrival times, so receive
	 * counting does not take a busy host for a silent rail.
	 */
	if (o->rx_ts)
		rn_sys_setsockopt(*fd, SOL_SOCKET, SO_TIMESTAMPNS, &one, sizeof(one));
	/* runs of datagrams may arrive coalesced (split again in rn_hrx_next) */
	if (o->gro)
		rn_sys_setsockopt(*fd, SOL_UDP, UDP_GRO, &one, sizeof(one));
	if (o->dev) {
		int rc = pin(*fd, o->dev);

		if (rc)
			return rc;
	}
	if (rn_sys_bind(*fd, &a.sa, alen) < 0 || rn_sys_getsockname(*fd, &a.sa, &blen) < 0)
		return -errno;
	*addr = *ra;
	addr->port = rn_hsock_sa_addr(&a).port;
	return 0;
}

int rn_hsock_rebind(rn_hsock *s, const rn_rail_addr *ra, const rn_hsock_opts *o)
{
	rn_rail_addr a;
	int fd, rc = bound_fd(&fd, &a, ra, o);

	if (rc) {
		if (fd >= 0)
			rn_sys_close(fd);
		return rc;
	}
	if (s->fd >= 0)
		rn_sys_close(s->fd);
	s->fd = fd;
	s->addr = a;
	s->qn = 0; /* what was queued for the old address: loss recovery resends it */
	s->blocked = 0;
	return 0;
}

int rn_hsock_open_rail(rn_hsock *s, const rn_rail_addr *ra, const rn_hsock_opts *o)
{
	int rc;

	memset(s, 0, sizeof(*s));
	rc = bound_fd(&s->fd, &s->addr, ra, o);
	if (rc)
		return rc;
	/* one block; pages are touched only as the queue fills */
	s->mem = malloc((size_t)RN_HTXQ * o->dgram);
	if (!s->mem)
		return -ENOMEM;
	for (int k = 0; k < RN_HTXQ; k++)
		s->bufs[k] = s->mem + (size_t)k * o->dgram;
	return 0;
}

void rn_hsock_close(rn_hsock *s)
{
	if (s->fd >= 0)
		rn_sys_close(s->fd);
	free(s->mem);
	memset(s, 0, sizeof(*s));
	s->fd = -1;
}

int rn_hsock_probe_gso(int fd)
{
	int seg = 1000, ok = rn_sys_setsockopt(fd, SOL_UDP, UDP_SEGMENT, &seg, sizeof(seg)) == 0;

	seg = 0;
	rn_sys_setsockopt(fd, SOL_UDP, UDP_SEGMENT, &seg, sizeof(seg));
	return ok;
}

int rn_hset_init(rn_hset *h, uint32_t dgram, int gso)
{
	memset(h, 0, sizeof(*h));
	for (int i = 0; i < RN_MAX_RAILS; i++)
		h->s[i].fd = -1;
	h->dgram = dgram;
	h->gso = gso;
	h->spare = h->own = malloc(dgram);
	return h->spare ? 0 : -ENOMEM;
}

void rn_hset_free(rn_hset *h)
{
	for (int i = 0; i < h->n; i++)
		rn_hsock_close(&h->s[i]);
	free(h->own);
	h->spare = h->own = NULL;
	h->n = 0;
}

/* ---- sending ---- */

uint32_t rn_hset_writable(const rn_hset *h)
{
	uint32_t m = 0;

	for (int i = 0; i < h->n; i++)
		if (!h->s[i].blocked && h->s[i].qn < RN_HTXQ)
			m |= 1u << i;
	return m;
}

int rn_hset_queue(rn_hset *h, int idx, rn_addr to, size_t len, uint64_t owner)
{
	rn_hsock *s = &h->s[idx];
	uint8_t *b;

	if (s->qn >= RN_HTXQ || len > h->dgram) {
		s->tx_dropped++; /* the caller ignored writable: loss recovery resends */
		return -1;
	}
	/* swap buffers instead of copying the datagram */
	b = s->bufs[s->qn];
	s->bufs[s->qn] = h->spare;
	h->spare = b;
	s->q[s->qn] = (rn_htx){ .owner = owner, .len = (uint16_t)len };
	rn_hsock_sa_of(&s->q[s->qn].to, to);
	s->qn++;
	return s->qn == RN_HTXQ;
}

static int same_dest(const rn_htx *a, const rn_htx *b)
{
	if (a->to.sa.sa_family != b->to.sa.sa_family)
		return 0;
	if (a->to.sa.sa_family == AF_INET)
		return a->to.v4.sin_addr.s_addr == b->to.v4.sin_addr.s_addr &&
		       a->to.v4.sin_port == b->to.v4.sin_port;
	return a->to.v6.sin6_port == b->to.v6.sin6_port &&
	       a->to.v6.sin6_scope_id == b->to.v6.sin6_scope_id &&
	       memcmp(&a->to.v6.sin6_addr, &b->to.v6.sin6_addr, sizeof(struct in6_addr)) == 0;
}

/* rn_hsock_build_msgs for q[0..qn) in bufs[0..qn): a socket's queue or a take's */
static int build_msgs(const rn_htx *q, uint8_t *const *bufs, int qn, int gso,
		      struct mmsghdr *msgs, struct iovec *iov, uint8_t *ctl, int *counts)
{
	int nm = 0, k = 0;

	while (k < qn) {
		int run = 1;
		size_t bytes = q[k].len;
		struct msghdr *h = &msgs[nm].msg_hdr;

		while (gso && k + run < qn && run < GSO_MAX_SEGS && same_dest(&q[k], &q[k + run]) &&
		       q[k + run].len <= q[k].len && bytes + q[k + run].len <= GSO_MAX_BYTES) {
			bytes += q[k + run].len;
			run++;
			if (q[k + run - 1].len < q[k].len)
				break; /* a short one ends a run */
		}
		for (int j = 0; j < run; j++)
			iov[k + j] = (struct iovec){ bufs[k + j], q[k + j].len };
		*h = (struct msghdr){ .msg_name = (void *)&q[k].to,
				      .msg_namelen = sizeof(q[k].to),
				      .msg_iov = &iov[k], .msg_iovlen = (size_t)run };
		if (run > 1) {
			struct cmsghdr *cm = (struct cmsghdr *)(ctl + (size_t)nm *
							       CMSG_SPACE(sizeof(uint16_t)));

			h->msg_control = cm;
			h->msg_controllen = CMSG_SPACE(sizeof(uint16_t));
			cm->cmsg_level = SOL_UDP;
			cm->cmsg_type = UDP_SEGMENT;
			cm->cmsg_len = CMSG_LEN(sizeof(uint16_t));
			*(uint16_t *)CMSG_DATA(cm) = q[k].len;
		}
		counts[nm++] = run;
		k += run;
	}
	return nm;
}

int rn_hsock_build_msgs(const rn_hsock *s, int gso, struct mmsghdr *msgs, struct iovec *iov,
			uint8_t *ctl, int *counts)
{
	return build_msgs(s->q, s->bufs, s->qn, gso, msgs, iov, ctl, counts);
}

/* Forgets the first n queued datagrams; their buffers go to the back. */
static void drop_front(rn_hsock *s, int n)
{
	uint8_t *done[RN_HTXQ];

	memcpy(done, s->bufs, (size_t)n * sizeof(*done));
	memmove(s->bufs, s->bufs + n, (size_t)(s->qn - n) * sizeof(*done));
	memmove(s->q, s->q + n, (size_t)(s->qn - n) * sizeof(*s->q));
	memcpy(s->bufs + (s->qn - n), done, (size_t)n * sizeof(*done));
	s->qn -= n;
}

/*
 * A send failed with e.  Errors the kernel reports from an ICMP message
 * (sk_err, set by any destination's error on this shared socket) come out
 * of whichever send is next: they say nothing about the datagram at the
 * front.  The error queue says whom they were about; after reading it the
 * send is retried.  Only an error the kernel gives again with nothing in
 * the error queue belongs to the datagram (no route, interface gone,
 * filtered).  Returns 1 to retry, 0 when the front message was dealt with.
 */
static int send_failed(rn_hset *h, int idx, int e, int count)
{
	rn_hsock *s = &h->s[idx];

	if (rn_hset_drain_errors(h, idx) > 0 || e == ECONNREFUSED)
		return 1; /* someone else's error; ECONNREFUSED is only ever ICMP's */
	s->tx_errors++;
	/*
	 * ENOBUFS: a full qdisc dropped it; EMSGSIZE: larger than the interface
	 * takes (we chose the size: the core's loss recovery and RI2N_MTU are
	 * the answer, not a failed rail).  Anything else: that rail failed.
	 */
	if (e != ENOBUFS && e != EMSGSIZE && h->ops.on_send_error && s->q[0].owner)
		h->ops.on_send_error(h->arg, idx, s->q[0].owner, e);
	drop_front(s, count);
	return 0;
}

int rn_hset_flush_one(rn_hset *h, int idx)
{
	rn_hsock *s = &h->s[idx];
	struct mmsghdr msgs[RN_HTXQ];
	struct iovec iov[RN_HTXQ];
	uint8_t ctl[RN_HTXQ * CMSG_SPACE(sizeof(uint16_t))];
	int counts[RN_HTXQ], retries = 0;

	s->blocked = 0;
	while (s->qn > 0) {
		int nm = rn_hsock_build_msgs(s, h->gso, msgs, iov, ctl, counts), sent, done = 0;

		sent = rn_sys_sendmmsg(s->fd, msgs, (unsigned)nm, MSG_DONTWAIT);
		if (sent < 0) {
			int e = errno;

			if (e == EAGAIN || e == EINTR) {
				s->blocked = 1; /* the core sees the rail unwritable until a flush works */
				return 1;
			}
			if ((e == EIO || e == EINVAL || e == EOPNOTSUPP) && counts[0] > 1 && h->gso) {
				h->gso = 0; /* the device refused GSO: one by one from now on */
				continue;
			}
			/* bounded: a flood of ICMP cannot keep us here */
			if (send_failed(h, idx, e, counts[0]) && ++retries > 4) {
				s->tx_errors++;
				drop_front(s, counts[0]);
			}
			continue;
		}
		for (int m = 0; m < sent; m++)
			done += counts[m];
		s->tx_dgrams += (uint64_t)done;
		drop_front(s, done);
	}
	return 0;
}

int rn_hset_take(rn_hset *h, int idx, rn_htake *t)
{
	rn_hsock *s = &h->s[idx];
	size_t at = 0;

	if (s->blocked || s->qn > RN_HTAKE_MAX || s->fd < 0)
		return 0;
	for (int k = 0; k < s->qn; k++)
		at += s->q[k].len;
	if (at > RN_HTAKE_BYTES)
		return 0;
	at = 0;
	for (int k = 0; k < s->qn; k++) {
		t->q[k] = s->q[k];
		t->bufs[k] = t->mem + at;
		memcpy(t->bufs[k], s->bufs[k], s->q[k].len);
		at += s->q[k].len;
	}
	t->n = s->qn;
	t->fd = s->fd;
	t->gso = h->gso;
	s->tx_dgrams += (uint64_t)s->qn;
	s->qn = 0; /* the buffers stay where they are, free */
	return 1;
}

int rn_htake_send(rn_htake *t)
{
	struct mmsghdr msgs[RN_HTAKE_MAX];
	struct iovec iov[RN_HTAKE_MAX];
	uint8_t ctl[RN_HTAKE_MAX * CMSG_SPACE(sizeof(uint16_t))];
	int counts[RN_HTAKE_MAX], nm = build_msgs(t->q, t->bufs, t->n, t->gso, msgs, iov, ctl, counts);

	for (int m = 0; m < nm;) {
		int sent = rn_sys_sendmmsg(t->fd, msgs + m, (unsigned)(nm - m), MSG_DONTWAIT);

		if (sent < 0 && errno == EINTR)
			continue;
		if (sent <= 0)
			return sent < 0 ? errno : EAGAIN;
		m += sent;
	}
	return 0;
}

void rn_hset_flush(rn_hset *h)
{
	for (int i = 0; i < h->n; i++)
		if (h->s[i].qn)
			rn_hset_flush_one(h, i);
}

void rn_hset_forget(rn_hset *h, uint64_t owner)
{
	for (int i = 0; i < h->n; i++)
		for (int k = 0; k < h->s[i].qn; k++)
			if (h->s[i].q[k].owner == owner)
				h->s[i].q[k].owner = 0;
}

int rn_hset_send_now(rn_hset *h, int idx, rn_addr to, const uint8_t *buf, size_t len)
{
	rn_hsa a;
	socklen_t alen = rn_hsock_sa_of(&a, to);
	int e = 0;

	for (int tries = 0; tries < 2; tries++) {
		if (rn_sys_sendto(h->s[idx].fd, buf, len, MSG_DONTWAIT, &a.sa, alen) >= 0)
			return 0;
		e = errno;
		/* an ICMP error about someone else surfaced here: read it, try again */
		if (e == EAGAIN || rn_hset_drain_errors(h, idx) == 0)
			break;
	}
	h->s[idx].tx_errors++;
	return -e;
}

/* ---- the error queue ---- */

int rn_hset_drain_errors(rn_hset *h, int idx)
{
	rn_hsock *s = &h->s[idx];
	int n = 0;

	for (; n < ERRQ_MAX; n++) {
		/* the quoted datagram: ri2n's header and packet number fit */
		uint8_t data[64], ctl[512];
		rn_hsa to = { .sa.sa_family = AF_UNSPEC };
		struct iovec iov = { data, sizeof(data) };
		struct msghdr m = { .msg_name = &to, .msg_namelen = sizeof(to), .msg_iov = &iov,
				    .msg_iovlen = 1, .msg_control = ctl,
				    .msg_controllen = sizeof(ctl) };
		ssize_t got = rn_sys_recvmsg(s->fd, &m, MSG_ERRQUEUE | MSG_DONTWAIT);

		if (got < 0)
			break;
		s->err_icmp++;
		for (struct cmsghdr *c = CMSG_FIRSTHDR(&m); c; c = CMSG_NXTHDR(&m, c)) {
			struct sock_extended_err ee;
			rn_hsock_err e;

			if (!(c->cmsg_level == IPPROTO_IP && c->cmsg_type == IP_RECVERR) &&
			    !(c->cmsg_level == IPPROTO_IPV6 && c->cmsg_type == IPV6_RECVERR))
				continue;
			memcpy(&ee, CMSG_DATA(c), sizeof(ee));
			/* msg_name: the original destination, whom the error is about */
			e = (rn_hsock_err){ .dest = rn_hsock_sa_addr(&to),
					    .err = (int)ee.ee_errno,
					    .icmp = ee.ee_origin == SO_EE_ORIGIN_ICMP ||
						    ee.ee_origin == SO_EE_ORIGIN_ICMP6,
					    .type = ee.ee_type, .code = ee.ee_code,
					    .quote = data, .quote_len = (size_t)got };
			if (h->ops.on_error)
				h->ops.on_error(h->arg, idx, &e);
		}
	}
	return n;
}

int rn_hset_send_conn(rn_hset *h, rn_conn *c, uint64_t owner, uint64_t now, int budget)
{
	int i;

	for (i = 0; i < budget; i++) {
		uint32_t w = rn_hset_writable(h);
		rn_tx tx;
		ssize_t n;

		if (!w)
			break;
		n = rn_conn_write_pkt(c, now, w, rn_hset_spare(h), h->dgram, &tx);
		if (n <= 0)
			break;
		if (rn_hset_queue(h, tx.local_rail, tx.to, (size_t)n, owner) > 0)
			rn_hset_flush_one(h, tx.local_rail);
	}
	return i;
}
