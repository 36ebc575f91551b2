/*
 * rn_port.c - UDP sockets per rail: batched receive, demultiplexing by
 * connection id, queued and batched send with back-pressure.
 */
#define _GNU_SOURCE
#include <errno.h>
#include <event2/event.h>
#include <linux/errqueue.h>
#include <netinet/in.h>
#include <netinet/udp.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/uio.h>
#include <unistd.h>

#include "rn_log.h"
#include "rn_port.h"
#include "rn_stream.h"

#ifndef UDP_SEGMENT
#define UDP_SEGMENT 103
#endif
#ifndef UDP_GRO
#define UDP_GRO 104
#endif

#define RX_BATCH 64
#define RX_ROUNDS 16         /* turns over the port's sockets per readiness event */
#define RX_TURN 8            /* reads (datagrams, or GRO runs of them) per socket per turn */
#define SOCK_BUF (8 << 20)   /* kernel buffer per UDP socket: ~5000 datagrams */
#define GSO_MAX_SEGS 64
#define GSO_MAX_BYTES 65000

typedef struct pentry {
	uint64_t id;
	struct rn_stream *st;
	struct pentry *next;
} pentry;

#define DEFQ 16            /* handshake datagrams deferred per listening port */

/* A handshake datagram an inline thread read for the engine (listener work). */
typedef struct rn_deferred {
	rn_addr from;
	int idx;
	uint32_t len;
	uint64_t at;
	uint8_t *buf;
} rn_deferred;

static rn_port *g_ports;
static int g_gso = -1; /* -1 unknown, 0 off, 1 on */
/* Rail sockets by descriptor number, for threads that waited on them with poll/epoll. */
static rn_usock **g_byfd;
static int g_byfd_cap;
static int g_sync;     /* (host lock) rn_port_sync has work */

/* Receive buffers, shared by every socket (one engine thread). */
static struct {
	struct mmsghdr msgs[RX_BATCH];
	struct iovec iov[RX_BATCH];
	struct sockaddr_in from[RX_BATCH];
	uint8_t ctl[RX_BATCH][CMSG_SPACE(sizeof(int)) + CMSG_SPACE(sizeof(struct timespec))];
	uint8_t *buf;
	size_t bufsz;
} g_rx;

static int rx_init(size_t dgram)
{
	if (g_rx.buf && g_rx.bufsz >= dgram)
		return 0;
	free(g_rx.buf);
	g_rx.bufsz = dgram < 2048 ? 2048 : dgram;
	g_rx.buf = malloc(g_rx.bufsz * RX_BATCH);
	if (!g_rx.buf)
		return -ENOMEM;
	return 0;
}

static void set_buf(int fd, int opt_force, int opt)
{
	int v = SOCK_BUF;

	/* root may exceed net.core.[rw]mem_max; others get what the limit allows */
	if (setsockopt(fd, SOL_SOCKET, opt_force, &v, sizeof(v)) < 0)
		setsockopt(fd, SOL_SOCKET, opt, &v, sizeof(v));
}

static void byfd_set(int fd, rn_usock *u);
static void on_readable(evutil_socket_t fd, short what, void *arg);
static void on_writable(evutil_socket_t fd, short what, void *arg);
static void on_fallback(evutil_socket_t fd, short what, void *arg);

static int open_usock(rn_port *p, int idx, const rn_rail_info *ri, uint16_t number)
{
	rn_usock *u = &p->s[idx];
	struct sockaddr_in a = { .sin_family = AF_INET, .sin_port = htons(number),
				 .sin_addr.s_addr = htonl(ri->ip) };
	socklen_t alen = sizeof(a);
	int one = 1, pmtu = IP_PMTUDISC_DO;

	u->fd = socket(AF_INET, SOCK_DGRAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0);
	if (u->fd < 0)
		return -errno;
	rn_fd_own(u->fd);
	u->port = p;
	u->idx = idx;
	set_buf(u->fd, SO_RCVBUFFORCE, SO_RCVBUF);
	set_buf(u->fd, SO_SNDBUFFORCE, SO_SNDBUF);
	/* no fragmentation: a datagram too big for a rail is an error, not a slow path */
	setsockopt(u->fd, IPPROTO_IP, IP_MTU_DISCOVER, &pmtu, sizeof(pmtu));
	/* ICMP errors (port unreachable: connection refused) come back to us */
	setsockopt(u->fd, IPPROTO_IP, IP_RECVERR, &one, sizeof(one));
	/*
	 * The kernel's arrival time of each datagram: after the engine was held
	 * off the CPU, a backlog keeps its real arrival times, so receive
	 * counting does not take a busy host for a silent rail.
	 */
	setsockopt(u->fd, SOL_SOCKET, SO_TIMESTAMPNS, &one, sizeof(one));
	/* runs of datagrams may arrive coalesced (split again in read_turn); optional */
	if (!getenv("RI2N_GRO") || strcmp(getenv("RI2N_GRO"), "0") != 0)
		setsockopt(u->fd, SOL_UDP, UDP_GRO, &one, sizeof(one));
	if (bind(u->fd, (struct sockaddr *)&a, sizeof(a)) < 0)
		return -errno;
	{
		struct stat sb;

		u->ino = fstat(u->fd, &sb) == 0 ? (uint64_t)sb.st_ino : 0;
		byfd_set(u->fd, u);
	}
	if (getsockname(u->fd, (struct sockaddr *)&a, &alen) < 0)
		return -errno;
	p->addrs[idx] = (rn_rail_addr){ .ip = ri->ip, .port = ntohs(a.sin_port),
					.prefix = ri->prefix };
	u->bufs = malloc((size_t)RN_TXQ * p->dgram);
	u->rev = event_new(rn_engine_base(), u->fd, EV_READ | EV_PERSIST, on_readable, u);
	u->wev = event_new(rn_engine_base(), u->fd, EV_WRITE, on_writable, u);
	if (!u->bufs || !u->rev || !u->wev)
		return -ENOMEM;
	event_add(u->rev, NULL);
	return 0;
}

static void byfd_set(int fd, rn_usock *u)
{
	if (fd < 0)
		return;
	if (fd >= g_byfd_cap) {
		int cap = fd * 2 + 64;
		rn_usock **n = realloc(g_byfd, (size_t)cap * sizeof(*n));

		if (!n)
			return; /* such a socket is only never found by rn_port_usock */
		memset(n + g_byfd_cap, 0, (size_t)(cap - g_byfd_cap) * sizeof(*n));
		g_byfd = n;
		g_byfd_cap = cap;
	}
	g_byfd[fd] = u;
}

rn_usock *rn_port_usock(int fd, uint64_t ino)
{
	rn_usock *u = fd >= 0 && fd < g_byfd_cap ? g_byfd[fd] : NULL;

	return u && u->ino == ino && !u->port->dead ? u : NULL;
}

static void close_usock(rn_usock *u)
{
	if (u->fd >= 0 && u->fd < g_byfd_cap && g_byfd[u->fd] == u)
		g_byfd[u->fd] = NULL;
	if (u->rev)
		event_free(u->rev);
	if (u->wev)
		event_free(u->wev);
	rn_fd_close(u->fd);
	free(u->bufs);
	memset(u, 0, sizeof(*u));
	u->fd = -1;
}

static void port_free(rn_port *p)
{
	rn_port **pp;

	for (int i = 0; i < p->nsock; i++)
		close_usock(&p->s[i]);
	for (pp = &g_ports; *pp; pp = &(*pp)->next) {
		if (*pp == p) {
			*pp = p->next;
			break;
		}
	}
	for (uint32_t b = 0; b < p->tabcap; b++) {
		pentry *e = (pentry *)p->tab[b], *n;

		for (; e; e = n) {
			n = e->next;
			free(e);
		}
	}
	free(p->tab);
	if (p->lis)
		rn_listener_wipe(p->lis);
	free(p->lis);
	if (p->fallback)
		event_free(p->fallback);
	if (p->defq)
		free(p->defq[0].buf);
	free(p->defq);
	free(p);
}

static int open_all(rn_port *p, const rn_rail_info *rails, const int *which, int n,
		    uint16_t number, int same_number)
{
	for (int i = 0; i < n; i++) {
		int rc = open_usock(p, i, &rails[which[i]], number);

		p->s[i].rail = which[i];
		p->nsock = i + 1;
		if (rc)
			return rc;
		if (same_number && number == 0)
			number = p->addrs[0].port; /* the others take the first one's number */
	}
	return 0;
}

rn_port *rn_port_open(uint32_t mask, uint16_t number, int same_number, int *err)
{
	const rn_rail_info *rails;
	int nrails = rn_engine_rails(&rails), which[RN_MAX_RAILS], n = 0, rc = 0;

	for (int i = 0; i < nrails; i++)
		if ((mask >> i) & 1)
			which[n++] = i;
	if (n == 0) {
		*err = -EADDRNOTAVAIL;
		return NULL;
	}
	/* a free number for every rail at once may take a few tries */
	for (int attempt = 0; attempt < 16; attempt++) {
		rn_port *p = calloc(1, sizeof(*p));
		uint32_t dgram = rn_engine_config()->max_dgram;

		if (!p) {
			*err = -ENOMEM;
			return NULL;
		}
		for (int i = 0; i < RN_MAX_RAILS; i++)
			p->s[i].fd = -1;
		p->dgram = dgram;
		p->refs = 1;
		p->tabcap = 64;
		p->tab = calloc(p->tabcap, sizeof(*p->tab));
		rc = p->tab ? rx_init(RN_MAX_DGRAM) : -ENOMEM;
		if (rc == 0)
			rc = open_all(p, rails, which, n, number, same_number);
		if (rc == 0) {
			p->fallback = evtimer_new(rn_engine_base(), on_fallback, p);
			rc = p->fallback ? 0 : -ENOMEM;
		}
		if (rc == 0) {
			p->number = same_number ? p->addrs[0].port : 0;
			p->mask = mask;
			p->next = g_ports;
			g_ports = p;
			return p;
		}
		port_free(p);
		if (!(rc == -EADDRINUSE && number == 0 && same_number))
			break;
	}
	*err = rc;
	return NULL;
}

void rn_port_ref(rn_port *p)
{
	p->refs++;
}

void rn_port_unref(rn_port *p)
{
	if (--p->refs > 0)
		return;
	if (rn_host_inline()) { /* its events are libevent's: the engine frees it */
		p->dead = 1;
		g_sync = 1;
		rn_host_kick();
		return;
	}
	port_free(p);
}

rn_port *rn_port_find_number(uint16_t number)
{
	for (rn_port *p = g_ports; p; p = p->next)
		if (p->number == number && number != 0 && !p->dead)
			return p;
	return NULL;
}

static uint32_t bucket(const rn_port *p, uint64_t id)
{
	return (uint32_t)((id * UINT64_C(0x9e3779b97f4a7c15)) >> 32) & (p->tabcap - 1);
}

int rn_port_add(rn_port *p, struct rn_stream *st, uint64_t id)
{
	pentry *e = malloc(sizeof(*e));
	uint32_t b;

	if (!e)
		return -ENOMEM;
	if (p->tabn >= p->tabcap) { /* keep chains short: double */
		uint32_t cap = p->tabcap * 2;
		struct rn_stream **tab = calloc(cap, sizeof(*tab));

		if (tab) {
			struct rn_stream **old = p->tab;
			uint32_t oldcap = p->tabcap;

			p->tab = tab;
			p->tabcap = cap;
			for (uint32_t i = 0; i < oldcap; i++) {
				pentry *x = (pentry *)old[i], *nx;

				for (; x; x = nx) {
					nx = x->next;
					b = bucket(p, x->id);
					x->next = (pentry *)p->tab[b];
					p->tab[b] = (struct rn_stream *)x;
				}
			}
			free(old);
		}
	}
	e->id = id;
	e->st = st;
	b = bucket(p, id);
	e->next = (pentry *)p->tab[b];
	p->tab[b] = (struct rn_stream *)e;
	p->tabn++;
	return 0;
}

void rn_port_remove(rn_port *p, struct rn_stream *st, uint64_t id)
{
	pentry **pp = (pentry **)&p->tab[bucket(p, id)];

	/* queued datagrams keep no pointer to a stream about to be freed */
	for (int i = 0; i < p->nsock; i++)
		for (int k = 0; k < p->s[i].qn; k++)
			if (p->s[i].q[k].st == st)
				p->s[i].q[k].st = NULL;

	for (; *pp; pp = &(*pp)->next) {
		if ((*pp)->id == id) {
			pentry *e = *pp;

			*pp = e->next;
			free(e);
			p->tabn--;
			return;
		}
	}
}

void rn_port_each(rn_port *p, void (*fn)(struct rn_stream *st))
{
	for (uint32_t b = 0; b < p->tabcap; b++)
		for (pentry *e = (pentry *)p->tab[b]; e; e = e->next)
			fn(e->st);
}

void rn_port_each_all(void (*fn)(struct rn_stream *st))
{
	for (rn_port *p = g_ports; p; p = p->next)
		rn_port_each(p, fn);
}

void rn_port_each_listener(void (*fn)(rn_port *p))
{
	for (rn_port *p = g_ports; p; p = p->next)
		if (p->lis)
			fn(p);
}

static struct rn_stream *lookup(const rn_port *p, uint64_t id)
{
	for (pentry *e = (pentry *)p->tab[bucket(p, id)]; e; e = e->next)
		if (e->id == id)
			return e->st;
	return NULL;
}

/* ---- receive ---- */

static rn_addr addr_of(const struct sockaddr_in *a)
{
	return (rn_addr){ ntohl(a->sin_addr.s_addr), ntohs(a->sin_port) };
}

/*
 * A handshake datagram read by an inline thread: accepting creates events,
 * so the engine does it.  A full queue drops it; the client resends.
 */
static void defer(rn_port *p, int idx, rn_addr from, const uint8_t *d, size_t len, uint64_t now)
{
	rn_deferred *e;

	if (!p->defq) {
		uint8_t *buf = malloc((size_t)DEFQ * p->dgram);

		p->defq = calloc(DEFQ, sizeof(*p->defq));
		if (!p->defq || !buf) {
			free(p->defq);
			free(buf);
			p->defq = NULL;
			p->drops_backlog++;
			return;
		}
		for (int i = 0; i < DEFQ; i++)
			p->defq[i].buf = buf + (size_t)i * p->dgram;
	}
	if (p->ndef >= DEFQ || len > p->dgram) {
		p->drops_backlog++;
		return;
	}
	e = &p->defq[p->ndef++];
	e->from = from;
	e->idx = idx;
	e->len = (uint32_t)len;
	e->at = now;
	memcpy(e->buf, d, len);
	g_sync = 1;
	rn_host_kick();
}

/*
 * A stateless reset names the peer's id, not ours (rn_core.h): it goes to
 * the connection of the port whose peer that was, if any.  Returns 0 when
 * the datagram is not a stateless reset.
 */
static int sreset_input(rn_port *p, int idx, rn_addr from, const uint8_t *d, size_t len,
			uint64_t now)
{
	if (!rn_wire_peek_sreset(d, len))
		return 0;
	for (uint32_t b = 0; b < p->tabcap; b++)
		for (pentry *e = (pentry *)p->tab[b]; e; e = e->next)
			if (rn_stream_sreset_input(e->st, idx, from, d, len, now))
				return 1;
	p->drops_unknown++;
	return 1;
}

static void input(rn_port *p, int idx, rn_addr from, const uint8_t *d, size_t len, uint64_t now)
{
	uint64_t dst = rn_wire_peek_dst(d, len);
	struct rn_stream *st = dst ? lookup(p, dst) : NULL;

	if (st) {
		rn_stream_input(st, idx, from, d, len, now);
		return;
	}
	if (!dst && sreset_input(p, idx, from, d, len, now))
		return;
	if (p->lis && rn_host_inline()) {
		defer(p, idx, from, d, len, now);
		return;
	}
	if (p->lis) {
		rn_stream_listen_input(p, idx, from, d, len, now);
		return;
	}
	p->drops_unknown++;
}

/* ICMP errors: a port unreachable answering an INIT means nobody listens. */
static void drain_errors(rn_usock *u)
{
	for (int i = 0; i < 64; i++) {
		uint8_t data[256], ctl[512];
		struct sockaddr_in to;
		struct iovec iov = { data, sizeof(data) };
		struct msghdr m = { .msg_name = &to, .msg_namelen = sizeof(to), .msg_iov = &iov,
				    .msg_iovlen = 1, .msg_control = ctl,
				    .msg_controllen = sizeof(ctl) };

		if (recvmsg(u->fd, &m, MSG_ERRQUEUE | MSG_DONTWAIT) < 0)
			return;
		for (struct cmsghdr *c = CMSG_FIRSTHDR(&m); c; c = CMSG_NXTHDR(&m, c)) {
			struct sock_extended_err *ee;

			if (c->cmsg_level != IPPROTO_IP || c->cmsg_type != IP_RECVERR)
				continue;
			ee = (struct sock_extended_err *)CMSG_DATA(c);
			if (ee->ee_origin == SO_EE_ORIGIN_ICMP && ee->ee_type == 3 &&
			    ee->ee_code == 3)
				rn_stream_refused(u->port, u->idx, addr_of(&to));
		}
	}
}

/* The segment size of a GRO run (0 for a plain datagram) and the arrival time. */
static size_t rx_meta(struct msghdr *h, struct timespec *ts)
{
	size_t seg = 0;

	ts->tv_sec = 0;
	for (struct cmsghdr *c = CMSG_FIRSTHDR(h); c; c = CMSG_NXTHDR(h, c)) {
		if (c->cmsg_level == SOL_UDP && c->cmsg_type == UDP_GRO)
			seg = (size_t)*(int *)CMSG_DATA(c);
		else if (c->cmsg_level == SOL_SOCKET && c->cmsg_type == SCM_TIMESTAMPNS)
			memcpy(ts, CMSG_DATA(c), sizeof(*ts));
	}
	return seg;
}

/* Reads up to RX_TURN datagrams (or runs) from socket idx; returns how many, 0 if none. */
static int read_turn(rn_port *p, int idx)
{
	rn_usock *u = &p->s[idx];
	int64_t rt_minus_mono;
	uint64_t now;
	int n;

	for (int i = 0; i < RX_TURN; i++) {
		g_rx.iov[i] = (struct iovec){ g_rx.buf + (size_t)i * g_rx.bufsz, g_rx.bufsz };
		g_rx.msgs[i].msg_hdr = (struct msghdr){
			.msg_name = &g_rx.from[i], .msg_namelen = sizeof(g_rx.from[i]),
			.msg_iov = &g_rx.iov[i], .msg_iovlen = 1, .msg_control = g_rx.ctl[i],
			.msg_controllen = sizeof(g_rx.ctl[i]) };
	}
	n = recvmmsg(u->fd, g_rx.msgs, RX_TURN, MSG_DONTWAIT, NULL);
	if (n < 0) {
		if (errno != EAGAIN && errno != EINTR) {
			drain_errors(u); /* an ICMP error was pending */
			return 1;
		}
		return 0;
	}
	{
		struct timespec rt, mono;

		/* the clock itself, not rn_now_ns(): that marks time given to the core */
		clock_gettime(CLOCK_REALTIME, &rt);
		clock_gettime(CLOCK_MONOTONIC, &mono);
		now = (uint64_t)mono.tv_sec * 1000000000u + (uint64_t)mono.tv_nsec;
		rt_minus_mono = (int64_t)rt.tv_sec * 1000000000 + rt.tv_nsec - (int64_t)now;
	}
	for (int i = 0; i < n && p->s[idx].fd >= 0; i++) {
		const uint8_t *d = g_rx.iov[i].iov_base;
		struct timespec ts;
		size_t len = g_rx.msgs[i].msg_len, seg = rx_meta(&g_rx.msgs[i].msg_hdr, &ts);
		uint64_t at = ts.tv_sec ? rn_arrival_ns(&ts, rt_minus_mono, now) : now;

		/* a GRO run: datagrams of `seg` bytes back to back, the last maybe shorter */
		while (len > 0 && p->s[idx].fd >= 0) {
			size_t one = seg && seg < len ? seg : len;

			input(p, idx, addr_of(&g_rx.from[i]), d, one, at);
			d += one;
			len -= one;
		}
	}
	return n;
}

/*
 * Reads all the port's sockets in turns of a few datagrams.  Draining one
 * rail's socket before looking at the next would hand the core a hundred
 * packets of one rail in a row, and its receive count would judge the
 * other rail failed (paper 3.3.3 assumes arrivals interleave as the sender
 * stripes them).
 */
int rn_port_read(rn_port *p)
{
	return rn_port_read_some(p, UINT32_MAX);
}

int rn_port_read_some(rn_port *p, uint32_t mask)
{
	int total = 0;

	rn_port_ref(p);
	for (int round = 0; round < RX_ROUNDS && mask; round++) {
		int got = 0;

		for (int idx = 0; idx < p->nsock; idx++) {
			int n;

			if (!((mask >> idx) & 1) || p->s[idx].fd < 0)
				continue;
			n = read_turn(p, idx);
			if (n < RX_TURN)
				mask &= ~(1u << idx); /* drained: no read that finds nothing */
			got += n;
		}
		total += got;
		if (!got)
			break;
	}
	if (rn_host_inline()) {
		p->inline_ns = rn_now_ns();
		if (total && p->nwait)
			rn_port_wake_waiters(p); /* what they wait for may be among these */
	}
	rn_port_unref(p);
	return total;
}

static void rx_set(rn_port *p, int on)
{
	for (int i = 0; i < p->nsock; i++) {
		if (!p->s[i].rev)
			continue;
		if (on)
			event_add(p->s[i].rev, NULL);
		else
			event_del(p->s[i].rev);
	}
	p->rx_off = (uint8_t)!on;
}

/*
 * Whether threads drive the port inline: one waits on its sockets now, or
 * one came back from such a wait less than RN_HANDOFF_NS ago (an event loop
 * between two epoll waits, a ping-pong between a reply and the next
 * receive).  Then the engine keeps off the sockets: a datagram wakes one
 * thread, and the engine does not contend for the host lock with a busy
 * one.  Only waits count (p->inline_ns is set when a wait ends or reads):
 * a non-blocking read never looks at the rails, so a program that reads
 * inline but waits elsewhere keeps the engine on duty.
 */
static int inline_driven(const rn_port *p)
{
	return p->nwait > 0 || (p->inline_ns && rn_now_ns() - p->inline_ns < RN_HANDOFF_NS);
}

/*
 * The engine looks again after RN_HANDOFF_NS.  (A period doubling while
 * inline threads keep the port was tried: fewer engine wake-ups, but an
 * 8-byte ping-pong on two pinned one-core hosts went from 34.6 to 39 us.)
 */
static void arm_fallback(rn_port *p)
{
	struct timeval tv = { 0, (suseconds_t)(RN_HANDOFF_NS / 1000) };

	evtimer_add(p->fallback, &tv);
}

/* Any socket of the port readable: read them, unless inline threads do. */
static void on_readable(evutil_socket_t fd, short what, void *arg)
{
	rn_usock *u = arg;
	rn_port *p = u->port;

	(void)fd;
	(void)what;
	rn_host_lock();
	if (inline_driven(p)) {
		/* one wake-up per datagram, the inline thread's: stay off until it leaves */
		rx_set(p, 0);
		arm_fallback(p);
	} else {
		rn_port_read(p);
		rn_stream_service_dirty();
	}
	rn_host_unlock();
}

void rn_port_catch_up(rn_port *p)
{
	if (p->rx_off && !inline_driven(p)) {
		rx_set(p, 1);
		rn_port_read(p);
	}
}

/* The engine kept off the port for inline threads: take it back once they are gone. */
static void on_fallback(evutil_socket_t fd, short what, void *arg)
{
	rn_port *p = arg;

	(void)fd;
	(void)what;
	rn_host_lock();
	if (p->rx_off) {
		/* a thread back within the period will wait again: keep off (no toggling) */
		if (inline_driven(p)) {
			arm_fallback(p);
		} else {
			rx_set(p, 1);
			rn_port_read(p);
			rn_stream_service_dirty();
		}
	}
	rn_host_unlock();
}

void rn_port_wake_waiters(rn_port *p)
{
	uint64_t one = 1;

	for (rn_waiter *w = p->waiters; w; w = w->next)
		if (write(w->efd, &one, sizeof(one)) < 0) {
			/* saturated: it is awake anyway */
		}
}

/* ---- send ---- */

uint32_t rn_port_writable(const rn_port *p)
{
	uint32_t m = 0;

	for (int i = 0; i < p->nsock; i++)
		if (!p->s[i].blocked && p->s[i].qn < RN_TXQ)
			m |= 1u << i;
	return m;
}

int rn_port_queue(rn_port *p, int idx, struct rn_stream *st, rn_addr to,
		  const uint8_t *data, size_t len)
{
	rn_usock *u = &p->s[idx];
	rn_txent *e;

	if (u->qn >= RN_TXQ || len > p->dgram)
		return -1;
	e = &u->q[u->qn];
	e->st = st;
	e->to = (struct sockaddr_in){ .sin_family = AF_INET, .sin_port = htons(to.port),
				      .sin_addr.s_addr = htonl(to.ip) };
	e->len = (uint16_t)len;
	e->buf = u->bufs + (size_t)u->qn * p->dgram;
	memcpy(e->buf, data, len);
	u->qn++;
	return 0;
}

static int same_dest(const rn_txent *a, const rn_txent *b)
{
	return a->to.sin_addr.s_addr == b->to.sin_addr.s_addr && a->to.sin_port == b->to.sin_port;
}

/*
 * Groups the queue into messages: with GSO, a run of datagrams to the same
 * address, all of the first one's size but the last, goes as one message.
 * Returns the number of messages; counts[m] = datagrams in message m.
 */
static int build_msgs(rn_usock *u, struct mmsghdr *msgs, struct iovec *iov, uint8_t *ctl,
		      int *counts)
{
	int nm = 0, k = 0;

	while (k < u->qn) {
		int run = 1;
		size_t bytes = u->q[k].len;
		struct msghdr *h = &msgs[nm].msg_hdr;

		if (g_gso > 0) {
			while (k + run < u->qn && run < GSO_MAX_SEGS &&
			       same_dest(&u->q[k], &u->q[k + run]) &&
			       u->q[k + run].len <= u->q[k].len &&
			       bytes + u->q[k + run].len <= GSO_MAX_BYTES) {
				bytes += u->q[k + run].len;
				run++;
				if (u->q[k + run - 1].len < u->q[k].len)
					break; /* a short one ends a run */
			}
		}
		for (int j = 0; j < run; j++)
			iov[k + j] = (struct iovec){ u->q[k + j].buf, u->q[k + j].len };
		*h = (struct msghdr){ .msg_name = &u->q[k].to, .msg_namelen = sizeof(u->q[k].to),
				      .msg_iov = &iov[k], .msg_iovlen = (size_t)run };
		if (run > 1) {
			uint8_t *c = ctl + (size_t)nm * CMSG_SPACE(sizeof(uint16_t));
			struct cmsghdr *cm = (struct cmsghdr *)c;

			h->msg_control = c;
			h->msg_controllen = CMSG_SPACE(sizeof(uint16_t));
			cm->cmsg_level = SOL_UDP;
			cm->cmsg_type = UDP_SEGMENT;
			cm->cmsg_len = CMSG_LEN(sizeof(uint16_t));
			*(uint16_t *)CMSG_DATA(cm) = u->q[k].len;
		}
		counts[nm++] = run;
		k += run;
	}
	return nm;
}

static void drop_front(rn_usock *u, int n)
{
	/* the queue is short (64): shifting keeps buffers in order */
	for (int i = n; i < u->qn; i++) {
		uint8_t *b = u->q[i - n].buf;

		memcpy(b, u->q[i].buf, u->q[i].len);
		u->q[i - n] = u->q[i];
		u->q[i - n].buf = b;
	}
	u->qn -= n;
}

static void usock_flush(rn_usock *u)
{
	struct mmsghdr msgs[RN_TXQ];
	struct iovec iov[RN_TXQ];
	uint8_t ctl[RN_TXQ * CMSG_SPACE(sizeof(uint16_t))];
	int counts[RN_TXQ];

	while (u->qn > 0 && !u->blocked) {
		int nm = build_msgs(u, msgs, iov, ctl, counts), sent, done = 0;

		sent = sendmmsg(u->fd, msgs, (unsigned)nm, MSG_DONTWAIT);
		if (sent < 0) {
			int e = errno;

			if (e == EAGAIN || e == EINTR) {
				u->blocked = 1;
				if (rn_host_inline()) { /* the engine waits for writability */
					u->want_wev = 1;
					g_sync = 1;
					rn_host_kick();
				} else {
					event_add(u->wev, NULL);
				}
				return;
			}
			if ((e == EIO || e == EINVAL || e == EOPNOTSUPP) && counts[0] > 1 && g_gso) {
				rn_info("UDP GSO refused (%s): sending datagrams one by one",
					strerror(e));
				g_gso = 0;
				continue;
			}
			/* ENOBUFS: dropped by a full qdisc, loss recovery resends.  Others
			 * (unreachable, interface gone, filtered): that rail failed. */
			if (e != ENOBUFS)
				rn_stream_send_error(u->q[0].st, u->idx, e);
			drop_front(u, counts[0]);
			continue;
		}
		for (int m = 0; m < sent; m++)
			done += counts[m];
		drop_front(u, done);
	}
}

void rn_port_flush(rn_port *p)
{
	if (g_gso < 0) {
		const char *env = getenv("RI2N_GSO");
		int seg = 1000;

		/* the kernel has UDP GSO if the option exists */
		g_gso = (env && strcmp(env, "0") == 0) ? 0 :
			setsockopt(p->s[0].fd, SOL_UDP, UDP_SEGMENT, &seg, sizeof(seg)) == 0;
		seg = 0;
		setsockopt(p->s[0].fd, SOL_UDP, UDP_SEGMENT, &seg, sizeof(seg));
		rn_debug("UDP GSO %s", g_gso ? "on" : "off");
	}
	for (int i = 0; i < p->nsock; i++)
		if (p->s[i].qn)
			usock_flush(&p->s[i]);
}

static void on_writable(evutil_socket_t fd, short what, void *arg)
{
	rn_usock *u = arg;

	(void)fd;
	(void)what;
	rn_host_lock();
	u->blocked = 0;
	usock_flush(u);
	/* connections held back by this socket may go on */
	rn_stream_port_writable(u->port);
	rn_stream_service_dirty();
	rn_host_unlock();
}

void rn_port_sync(void)
{
	rn_port *p, *next;

	if (!g_sync)
		return;
	g_sync = 0;
	for (p = g_ports; p; p = next) {
		next = p->next;
		if (p->dead) {
			port_free(p);
			continue;
		}
		for (int i = 0; i < p->nsock; i++) {
			if (p->s[i].want_wev) {
				p->s[i].want_wev = 0;
				if (p->s[i].blocked)
					event_add(p->s[i].wev, NULL);
			}
		}
		for (int i = 0; i < p->ndef && p->lis; i++) {
			rn_deferred *e = &p->defq[i];

			/* as if read now: a resent COOKIE_ECHO finds the connection the first made */
			input(p, e->idx, e->from, e->buf, e->len, e->at);
		}
		p->ndef = 0;
	}
}

void rn_port_send_now(rn_port *p, int idx, rn_addr to, const uint8_t *buf, size_t len)
{
	struct sockaddr_in a = { .sin_family = AF_INET, .sin_port = htons(to.port),
				 .sin_addr.s_addr = htonl(to.ip) };

	if (sendto(p->s[idx].fd, buf, len, MSG_DONTWAIT, (struct sockaddr *)&a, sizeof(a)) < 0)
		rn_debug("handshake reply not sent: %s", strerror(errno));
}

void rn_port_forget_all(void)
{
	/* the descriptors were closed with every other one the engine owned */
	g_ports = NULL;
	g_gso = -1;
	g_sync = 0;
	free(g_byfd); /* the parent's sockets are closed in the child */
	g_byfd = NULL;
	g_byfd_cap = 0;
}
