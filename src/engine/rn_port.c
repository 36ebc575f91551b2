/*
 * rn_port.c - the engine's rail sockets: the host kit's sockets and table
 * (src/host) driven from libevent and from inline threads.  Which of them
 * reads the sockets at a time (the hand-off) is in rn_port_handoff.c.
 */
#define _GNU_SOURCE
#include <errno.h>
#include <event2/event.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "ri2n.h"
#include "rn_handover.h"
#include "rn_ev.h"
#include "rn_knobs.h"
#include "rn_log.h"
#include "rn_port.h"
#include "rn_port_defer.h"
#include "rn_port_int.h"
#include "rn_stream.h"
#include "rn_sys.h"

#define RX_ROUNDS 16         /* turns over the port's sockets per readiness event */
#define RX_TURN 8            /* reads (datagrams, or GRO runs of them) per socket per turn */

/*
 * Handshake datagrams an inline thread puts aside for the engine, per
 * listening port: room for 16 at first, doubled as a burst needs, up to
 * DEFQ_MAX.  A fixed 16 was too few: an event loop serving 16 clients that
 * connect at once reads their COOKIE_ECHOs and early DATA (32 datagrams) in
 * one wait, and those that did not fit were dropped; their clients waited
 * for the handshake's resend, up to 250 ms (nginx without its master, wrk
 * with 16 connections and `Connection: close`: 10% of requests 80-250 ms).
 * 1024 holds the datagrams of 512 connects arriving at once, at most 1024
 * datagrams' worth of memory, kept for the next burst.
 */
#define DEFQ_FIRST 16
#define DEFQ_MAX 1024

/* A handshake datagram an inline thread read for the engine (listener work). */
typedef struct rn_deferred {
	rn_addr from;
	int idx;
	uint32_t len;
	uint32_t cap; /* of buf */
	uint64_t at;
	uint8_t *buf;
} rn_deferred;

static rn_port *g_ports;
static int g_gso = -1; /* -1 unknown, 0 off, 1 on */
/* Rail sockets by descriptor number, for threads that waited on them with poll/epoll. */
static rn_usock **g_byfd;
static int g_byfd_cap;
static int g_sync;     /* (host lock) rn_port_sync has work */
static int g_draining; /* (host lock) the engine is taking the datagrams put aside */
/* Receive buffers, shared by every port (read under the host lock). */
static rn_hrxbuf g_rx;

static void byfd_set(int fd, rn_usock *u);
static void on_writable(evutil_socket_t fd, short what, void *arg);
static void on_send_error(void *arg, int idx, uint64_t owner, int err);
static void on_kernel_error(void *arg, int idx, const rn_hsock_err *e);
static void to_conn(void *arg, void *v, int idx, rn_addr from, const uint8_t *d, size_t len,
		    uint64_t at);
static int to_listener(void *arg, int idx, rn_addr from, const uint8_t *d, size_t len,
		       uint64_t at);
static rn_conn *conn_of(void *v);
static void on_reset(void *arg, void *v);

/*
 * The largest datagram rail ri's interface carries, when above the
 * process's datagram size (the smallest rail's): the ceiling of the rail's
 * size search (rn_pmtu.h), e.g. 8972 on a jumbo-frame rail.  0: no search.
 * RI2N_MTU in the environment fixes every rail's size.
 */
static uint32_t rail_ceiling(const rn_rail_info *ri)
{
	int64_t top = (int64_t)ri->mtu - (ri->v6 ? 48 : 28); /* IP and UDP headers */

	if (rn_knob_env(RI2N_MTU) || top <= (int64_t)rn_engine_config()->max_dgram)
		return 0;
	return top > RN_MAX_DGRAM ? RN_MAX_DGRAM : (uint32_t)top;
}

static int watch_usock(rn_port *p, int idx, const rn_rail_info *ri);

static rn_hsock_opts usock_opts(const rn_port *p, const rn_rail_info *ri)
{
	return (rn_hsock_opts){ .dgram = p->dgram, .rx_ts = 1, .recverr = 1,
				/* runs of datagrams may arrive coalesced; optional */
				.gro = rn_proc_get(RN_PROC_GRO) != 0,
				.dev = ri->pin ? ri->name : NULL };
}

static int open_usock(rn_port *p, int idx, const rn_rail_info *ri, uint16_t number)
{
	rn_usock *u = &p->s[idx];
	rn_hsock_opts o = usock_opts(p, ri);
	rn_rail_addr ra = rn_rails_addr(ri, number);
	int rc = rn_hsock_open_rail(&p->hs.s[idx], &ra, &o);

	if (p->hs.s[idx].fd >= 0)
		p->hs.s[idx].fd = rn_fd_own_high(p->hs.s[idx].fd);
	u->fd = p->hs.s[idx].fd;
	u->port = p;
	u->idx = idx;
	if (rc)
		return rc;
	return watch_usock(p, idx, ri);
}

/* The engine's events on socket idx (open: its descriptor is p->hs.s[idx].fd). */
static int watch_usock(rn_port *p, int idx, const rn_rail_info *ri)
{
	rn_usock *u = &p->s[idx];
	struct stat sb;

	u->ino = rn_sys_fstat(u->fd, &sb) == 0 ? (uint64_t)sb.st_ino : 0;
	byfd_set(u->fd, u);
	p->addrs[idx] = p->hs.s[idx].addr;
	p->addrs[idx].max_dgram = rail_ceiling(ri);
	p->addrs[idx].backup = ri->backup;
	u->rev = event_new(rn_engine_base(), u->fd, EV_READ | EV_PERSIST, rn_port_on_readable,
			   u);
	u->wev = event_new(rn_engine_base(), u->fd, EV_WRITE, on_writable, u);
	if (!u->rev || !u->wev)
		return -ENOMEM;
	rn_ev_add(u->rev, NULL);
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

	RN_OWNS_HOST();
	return u && u->ino == ino && !u->port->dead ? u : NULL;
}

/* The engine's events on socket idx go, and its descriptor's entry (before the descriptor does). */
static void unwatch_usock(rn_port *p, int idx)
{
	rn_usock *u = &p->s[idx];

	if (u->fd >= 0 && u->fd < g_byfd_cap && g_byfd[u->fd] == u)
		g_byfd[u->fd] = NULL;
	if (u->rev)
		rn_ev_free(u->rev);
	if (u->wev)
		rn_ev_free(u->wev);
	u->rev = u->wev = NULL;
}

/*
 * Threads sending the port's datagrams after the host lock (rn_port_take)
 * are done with its sockets before one closes: a system call's time, as
 * they take no lock meanwhile.  Bounded all the same (a signal handler that
 * stops one and waits for the engine).
 */
static void wait_takers(rn_port *p)
{
	for (int i = 0; __atomic_load_n(&p->tx_out, __ATOMIC_ACQUIRE) && i < 100000; i++)
		sched_yield();
}

static void close_usock(rn_port *p, int idx)
{
	rn_usock *u = &p->s[idx];

	wait_takers(p);
	unwatch_usock(p, idx);
	if (u->fd >= 0) {
		rn_fd_close(u->fd);
		p->hs.s[idx].fd = -1; /* closed: rn_hsock_close frees the rest */
	}
	rn_hsock_close(&p->hs.s[idx]);
	memset(u, 0, sizeof(*u));
	u->fd = -1;
}

static void port_free(rn_port *p)
{
	rn_port **pp;

	for (int i = 0; i < p->nsock; i++)
		close_usock(p, i);
	p->hs.n = 0;
	rn_hset_free(&p->hs);
	for (pp = &g_ports; *pp; pp = &(*pp)->next) {
		if (*pp == p) {
			*pp = p->next;
			break;
		}
	}
	rn_htab_free(&p->tab);
	rn_handover_free(p);
	if (p->lis)
		rn_listener_wipe(p->lis);
	free(p->lis);
	rn_etimer_set(&p->fallback, UINT64_MAX);
	for (int i = 0; i < p->defcap; i++)
		free(p->defq[i].buf);
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
		p->hs.n = i + 1;
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
		if (((mask >> i) & 1) && rn_rails_has_addr(&rails[i])) /* else: waiting for one */
			which[n++] = i;
	if (n == 0) {
		*err = -EADDRNOTAVAIL;
		return NULL;
	}
	/* a free number for every rail at once may take a few tries */
	for (int attempt = 0; attempt < 16; attempt++) {
		rn_port *p = calloc(1, sizeof(*p));
		uint32_t dgram = rn_engine_config()->max_dgram;

		for (int i = 0; i < n; i++) /* room for the largest any rail may carry */
			if (rail_ceiling(&rails[which[i]]) > dgram)
				dgram = rail_ceiling(&rails[which[i]]);

		if (!p) {
			*err = -ENOMEM;
			return NULL;
		}
		for (int i = 0; i < RN_MAX_RAILS; i++)
			p->s[i].fd = -1;
		p->dgram = dgram;
		p->refs = 1;
		rc = rn_hset_init(&p->hs, dgram, 0);
		p->hs.ops = (rn_hsock_ops){ .on_send_error = on_send_error,
					    .on_error = on_kernel_error };
		p->hs.arg = p;
		p->disp = (rn_hdisp){ .tab = &p->tab, .to_conn = to_conn,
				      .to_listener = to_listener, .conn_of = conn_of,
				      .on_reset = on_reset, .arg = p };
		if (rc == 0)
			rc = rn_htab_init(&p->tab, 1);
		/* one buffer for the largest GRO run (or datagram) per read */
		if (rc == 0 && !g_rx.mem)
			rc = rn_hrxbuf_init(&g_rx, RN_HGRO_BUF, RX_TURN);
		if (rc == 0)
			rc = open_all(p, rails, which, n, number, same_number);
		rn_etimer_prep(&p->fallback, rn_port_on_fallback);
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

int rn_port_rail_add(rn_port *p, int rail)
{
	const rn_rail_info *rails;
	int n = rn_engine_rails(&rails), idx = p->nsock, rc;

	if (p->dead || rail >= n || !((p->mask >> rail) & 1) || idx >= RN_MAX_RAILS)
		return -EINVAL;
	for (int i = 0; i < p->nsock; i++)
		if (p->s[i].rail == rail)
			return -EEXIST;
	/* a listening port has one number on every rail (p->number); a client's take any (0) */
	rc = open_usock(p, idx, &rails[rail], p->number);
	if (rc) {
		close_usock(p, idx);
		return rc;
	}
	if (p->addrs[idx].max_dgram > p->dgram)
		p->addrs[idx].max_dgram = p->dgram; /* what the port's buffers hold */
	p->s[idx].rail = rail;
	p->nsock = p->hs.n = idx + 1;
	if (p->lis)
		rn_listener_rail_add(p->lis, &p->addrs[idx]);
	/* the engine reads it unless threads keep the port inline now */
	if (p->rx_off)
		rn_ev_del(p->s[idx].rev);
	return idx;
}

/*
 * Socket idx anew on rail ri's address (rn_hsock_rebind: the set's buffers
 * stay), its events and bookkeeping moved to the new descriptor.  0, or
 * -errno with the old socket kept.
 */
static int rebind_usock(rn_port *p, int idx, const rn_rail_info *ri, uint16_t number)
{
	rn_usock *u = &p->s[idx];
	rn_hsock_opts o = usock_opts(p, ri);
	rn_rail_addr ra = rn_rails_addr(ri, number);
	int old = u->fd, rc;

	wait_takers(p);
	unwatch_usock(p, idx);
	rc = rn_hsock_rebind(&p->hs.s[idx], &ra, &o);
	if (rc == 0) {
		rn_fd_disown(old);
		p->hs.s[idx].fd = rn_fd_own_high(p->hs.s[idx].fd);
		u->fd = p->hs.s[idx].fd;
	}
	if (watch_usock(p, idx, ri) != 0 && rc == 0)
		rc = -ENOMEM;
	return rc;
}

int rn_port_rail_rebind(rn_port *p, int rail)
{
	const rn_rail_info *rails;
	int n = rn_engine_rails(&rails), idx = -1, rc;
	uint16_t number;

	for (int i = 0; i < p->nsock; i++)
		if (p->s[i].rail == rail)
			idx = i;
	if (p->dead || rail >= n || idx < 0)
		return -ENOENT;
	number = p->addrs[idx].port;
	rc = rebind_usock(p, idx, &rails[rail], number);
	if (rc == -EADDRINUSE && !p->lis)
		rc = rebind_usock(p, idx, &rails[rail], 0); /* a client's port may take another number */
	/* the engine reads it unless threads keep the port inline now */
	if (p->rx_off && p->s[idx].rev)
		rn_ev_del(p->s[idx].rev);
	if (p->addrs[idx].max_dgram > p->dgram)
		p->addrs[idx].max_dgram = p->dgram;
	if (rc)
		return rc;
	if (p->lis)
		rn_listener_rail_set(p->lis, idx, &p->addrs[idx]);
	/* threads polling the old socket poll the new one from their next wait */
	if (p->nwait)
		rn_port_wake_waiters(p);
	return idx;
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

rn_port *rn_port_first(void)
{
	return g_ports;
}

int rn_port_add(rn_port *p, struct rn_stream *st, uint64_t id)
{
	return rn_htab_add(&p->tab, id, st);
}

void rn_port_remove(rn_port *p, struct rn_stream *st, uint64_t id)
{
	/* queued datagrams keep no pointer to a stream about to be freed */
	rn_hset_forget(&p->hs, (uint64_t)(uintptr_t)st);
	rn_htab_del(&p->tab, id, st);
}

/* ---- receive ---- */

/* A free slot at the end of p's queue, grown as needed (DEFQ_MAX); NULL if none. */
static rn_deferred *defq_slot(rn_port *p, size_t len)
{
	rn_deferred *e;

	if (p->ndef == p->defcap) {
		int cap = p->defcap ? p->defcap * 2 : DEFQ_FIRST;
		rn_deferred *q;

		if (cap > DEFQ_MAX)
			return NULL;
		q = realloc(p->defq, (size_t)cap * sizeof(*q));
		if (!q)
			return NULL;
		memset(q + p->defcap, 0, (size_t)(cap - p->defcap) * sizeof(*q));
		p->defq = q;
		p->defcap = cap;
	}
	e = &p->defq[p->ndef];
	if (e->cap < len) {
		uint8_t *b = realloc(e->buf, len);

		if (!b)
			return NULL;
		e->buf = b;
		e->cap = (uint32_t)len;
	}
	return e;
}

/*
 * A handshake datagram read by an inline thread: accepting creates events,
 * so the engine does it.  A full queue (DEFQ_MAX) drops it; the client
 * resends.
 */
static void defer(rn_port *p, int idx, rn_addr from, const uint8_t *d, size_t len, uint64_t now)
{
	rn_deferred *e = len <= p->dgram ? defq_slot(p, len) : NULL;

	if (!e) {
		p->drops_backlog++;
		return;
	}
	p->ndef++;
	e->from = from;
	e->idx = idx;
	e->len = (uint32_t)len;
	e->at = now;
	memcpy(e->buf, d, len);
	g_sync = 1;
	rn_host_kick();
}

static void to_conn(void *arg, void *v, int idx, rn_addr from, const uint8_t *d, size_t len,
		    uint64_t at)
{
	(void)arg;
	rn_stream_input(v, idx, from, d, len, at);
}

static rn_conn *conn_of(void *v) { return ((rn_stream *)v)->conn; }

/* A stateless reset for st's peer: the core took it (rn_hdisp). */
static void on_reset(void *arg, void *v)
{
	(void)arg;
	rn_engine_dirty(v);
}

static int to_listener(void *arg, int idx, rn_addr from, const uint8_t *d, size_t len,
		       uint64_t at)
{
	rn_port *p = arg;
	int early;

	if (!p->lis)
		return -1;
	/* a connection another process took over: its peer moves there in a round trip */
	if (rn_handover_is_moved(p, rn_wire_peek_dst(d, len), at))
		return 0;
	/*
	 * Only a COOKIE_ECHO can accept, which makes events: an inline thread
	 * answers the rest (an INIT's cookie, a stateless reset) itself, with
	 * no wake-up of the engine in the handshake's way.  Early data for a
	 * connection not made yet waits behind the COOKIE_ECHOs put aside, or
	 * one the engine read first and is about to take (threads read the
	 * rail sockets at once; the engine drains the queue after its batch).
	 */
	early = rn_wire_peek_early(d, len) && !g_draining;
	if ((rn_host_inline() && (early || rn_wire_peek_accepts(d, len))) || (early && p->ndef))
		defer(p, idx, from, d, len, at);
	else
		rn_stream_listen_input(p, idx, from, d, len, at);
	return 0;
}

/*
 * A datagram read: its kernel arrival time (or the read's) clamped against
 * the latest time any thread gave the core (rn_arrival_ns), then routed.
 */
static void input(void *arg, int idx, rn_addr from, const uint8_t *d, size_t len, uint64_t at)
{
	rn_port *p = arg;
	struct timespec ts = { (time_t)(at / 1000000000u), (long)(at % 1000000000u) };

	rn_hdisp_input(&p->disp, idx, from, d, len, rn_arrival_ns(&ts, 0, g_rx.now));
	p->drops_unknown = p->disp.unknown;
}

/*
 * An error-queue entry names the destination it is about: a port
 * unreachable answering an INIT means nobody listens there; one answering
 * an established connection's datagram, whose quote checks out on every
 * rail (rn_conn_unreachable), that its peer process is gone.  Nothing else
 * fails a rail: a forged ICMP costs at most the connect it names.
 */
static void on_kernel_error(void *arg, int idx, const rn_hsock_err *e)
{
	if (rn_hsock_err_port_unreach(e)) {
		rn_stream_refused(arg, idx, e->dest);
		rn_stream_unreachable(arg, idx, e->dest, e->quote, e->quote_len);
	}
}

static void on_send_error(void *arg, int idx, uint64_t owner, int err)
{
	(void)arg;
	rn_stream_send_error((struct rn_stream *)(uintptr_t)owner, idx, err);
}

/*
 * Reads all the port's sockets in turns of a few datagrams.  Draining one
 * rail's socket before looking at the next would hand the core a hundred
 * packets of one rail in a row, and its receive count would judge the
 * other rail failed (paper 3.3.3 assumes arrivals interleave as the sender
 * stripes them).
 */
/* Reads the sockets in mask; `ready` ones were reported by a poller (error queue checked). */
int rn_port_read_ready(rn_port *p, uint32_t mask, uint32_t ready)
{
	int total;

	RN_OWNS_HOST();
	rn_port_ref(p);
	total = rn_hset_recv(&p->hs, &g_rx, mask & ((1u << p->nsock) - 1), ready, RX_ROUNDS,
			     NULL, input, p, NULL);
	if (rn_host_inline()) {
		p->inline_ns = rn_now_ns();
		if (total && p->nwait)
			rn_port_wake_ready(p); /* what they wait for may be among these */
	}
	rn_port_unref(p);
	return total;
}

int rn_port_read(rn_port *p)
{
	return rn_port_read_ready(p, UINT32_MAX, 0);
}

int rn_port_read_some(rn_port *p, uint32_t mask)
{
	return rn_port_read_ready(p, mask, mask); /* what an inline wait's poll reported */
}

void rn_port_sync_later(void)
{
	g_sync = 1;
}

/* ---- send ---- */

uint32_t rn_port_writable(const rn_port *p)
{
	return rn_hset_writable(&p->hs);
}

/* The kernel has UDP GSO if the option exists (looked at once per process). */
static int gso_on(rn_port *p)
{
	if (g_gso < 0) {
		g_gso = rn_proc_get(RN_PROC_GSO) ? rn_hsock_probe_gso(p->hs.s[0].fd) : 0;
		rn_debug("UDP GSO %s", g_gso ? "on" : "off");
	}
	return g_gso;
}

/*
 * Sends the socket's queue; after EAGAIN, only once the kernel said it is
 * writable (`writable`), and meanwhile the engine waits for that.  An
 * inline thread's queue that is not full (`later`) waits for its leave,
 * to be sent after the lock (rn_port_defer.c).
 */
static void usock_flush(rn_usock *u, int writable, int later)
{
	rn_port *p = u->port;

	RN_OWNS_HOST();
	if (p->hs.s[u->idx].blocked && !writable)
		return;
	if (later && rn_host_inline() && rn_port_defer(u))
		return;
	p->hs.gso = gso_on(p);
	if (!rn_hset_flush_one(&p->hs, u->idx)) {
		__atomic_store_n(&u->defer_off, 0, __ATOMIC_RELAXED);
		if (!p->hs.gso && g_gso > 0) {
			rn_info("UDP GSO refused: sending datagrams one by one");
			g_gso = 0;
		}
		return;
	}
	if (rn_host_inline()) { /* the engine waits for writability */
		u->want_wev = 1;
		g_sync = 1;
		rn_host_kick();
	} else {
		rn_ev_add(u->wev, NULL);
	}
}

int rn_port_queue(rn_port *p, int idx, struct rn_stream *st, rn_addr to, size_t len)
{
	int rc;

	if (len > p->dgram)
		return -1;
	rc = rn_hset_queue(&p->hs, idx, to, len, (uint64_t)(uintptr_t)st);
	if (rc > 0) /* full: out now, so the rail stays writable */
		usock_flush(&p->s[idx], 0, 0);
	return rc < 0 ? -1 : 0;
}

static void flush_all(rn_port *p, int later)
{
	for (int i = 0; i < p->nsock; i++)
		if (p->hs.s[i].qn)
			usock_flush(&p->s[i], 0, later);
}

void rn_port_flush(rn_port *p) { flush_all(p, 1); }

void rn_port_flush_now(rn_port *p) { flush_all(p, 0); }

static void on_writable(evutil_socket_t fd, short what, void *arg)
{
	rn_usock *u = arg;

	(void)fd;
	(void)what;
	rn_host_lock();
	usock_flush(u, 1, 0);
	/* connections held back by this socket may go on */
	rn_stream_port_writable(u->port);
	rn_stream_service_dirty();
	rn_host_unlock();
}

int rn_port_take(rn_usock *u, struct rn_htake *t)
{
	rn_port *p = u->port;

	RN_OWNS_HOST();
	if (!p || u->fd < 0 || !p->hs.s[u->idx].qn)
		return 0;
	p->hs.gso = gso_on(p);
	if (!__atomic_load_n(&u->defer_off, __ATOMIC_RELAXED) && rn_hset_take(&p->hs, u->idx, t)) {
		__atomic_add_fetch(&p->tx_out, 1, __ATOMIC_ACQ_REL);
		return 1;
	}
	usock_flush(u, 0, 0);
	return 0;
}

void rn_port_flush_usock(rn_usock *u)
{
	if (u->port && u->fd >= 0)
		usock_flush(u, 0, 0);
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
		if (p->want_rx) {
			p->want_rx = 0;
			if (p->rx_off && !rn_port_inline_driven(p, rn_now_ns()))
				rn_port_rx_set(p, 1);
		}
		for (int i = 0; i < p->nsock; i++) {
			if (p->s[i].want_wev) {
				p->s[i].want_wev = 0;
				if (p->hs.s[i].blocked)
					rn_ev_add(p->s[i].wev, NULL);
			}
		}
		g_draining = 1; /* early data whose COOKIE_ECHO was lost is dropped now, not put aside again */
		for (int i = 0; i < p->ndef && p->lis; i++) {
			rn_deferred *e = &p->defq[i];

			/* as if read now: a resent COOKIE_ECHO finds the connection the first made */
			rn_hdisp_input(&p->disp, e->idx, e->from, e->buf, e->len, e->at);
		}
		g_draining = 0;
		p->ndef = 0;
	}
}

void rn_port_send_now(rn_port *p, int idx, rn_addr to, const uint8_t *buf, size_t len)
{
	int rc = rn_hset_send_now(&p->hs, idx, to, buf, len);

	if (rc)
		rn_debug("handshake reply not sent: %s", strerror(-rc));
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
