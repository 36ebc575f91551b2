/*
 * rn_netlink.c - the engine's side of the kernel's link and address events
 * (the socket, its parser and the rails' state are the host kit's:
 * rn_hlink.h, rn_hfollow.h).
 *
 * Each rail is usable while its interface is up with carrier and holds the
 * rail's address.  When either goes, every connection stops sending on the
 * rail at once (rn_conn_rail_gone: what it held is resent on the others),
 * rather than after the receive-count rule or a failed send notices; when
 * both are back, the connections may use it again (rn_conn_rail_back) and
 * send a heartbeat on it now.  The rail sockets stay bound to the address
 * throughout: Linux keeps a UDP socket bound to an address that went away,
 * and it receives and sends again once the address is back.  A rail whose
 * address went while its interface has another of the family (or gets one
 * later: rn_hfollow decides) moves there instead: rail_move binds its sockets anew and every
 * connection tells its peer (rn_conn_rail_readdr).
 *
 * A listed interface that had no address at start (a rail waiting for
 * one, rn_rails_discover_any) is opened when its first address comes:
 * every port meant for it opens a socket there, and every established
 * connection on the port offers it to its peer (rn_conn_rail_add).
 */
#define _GNU_SOURCE
#include <errno.h>
#include <event2/event.h>
#include <string.h>

#include "rn_engine.h"
#include "rn_ev.h"
#include "rn_hfollow.h"
#include "rn_hlink.h"
#include "rn_host_lock.h"
#include "rn_log.h"
#include "rn_netlink.h"
#include "rn_port.h"
#include "rn_rails.h"
#include "rn_stream.h"
#include "rn_sys.h"

static struct {
	rn_hfollow f;
	struct event *ev;
	uint32_t again;               /* addressed rails the engine opens at its next turn or retry */
	uint32_t moved;               /* rails the engine rebinds at its next turn or retry */
	rn_rail_info from[RN_MAX_RAILS], to[RN_MAX_RAILS]; /* a moved rail, before and after */
	int tries[RN_MAX_RAILS];
	struct event *again_ev;
} g = { .f = { .fd = -1 } };

/*
 * The kernel tells of a new address before it adds the address's local
 * route, and bind() checks that route: a socket opened at once may fail
 * with EADDRNOTAVAIL.  Such a rail is tried again every AGAIN_US, at most
 * AGAIN_TRIES times.
 */
#define AGAIN_US 2000
#define AGAIN_TRIES 50

struct apply_ctx {
	int rail;
	int down;
	rn_cause cause;
	uint64_t now;
	int conns;
};

/* One connection's paths on the engine rail: its port's socket for that rail. */
static void apply_one(rn_stream *st, void *arg)
{
	struct apply_ctx *a = arg;
	rn_port *p = st->port;

	if (!st->conn || !p)
		return;
	for (int i = 0; i < p->nsock; i++) {
		if (p->s[i].rail != a->rail)
			continue;
		if (a->down)
			rn_conn_rail_gone(st->conn, a->now, i, a->cause);
		else
			rn_conn_rail_back(st->conn, a->now, i, a->cause);
		a->conns++;
		rn_engine_dirty(st);
	}
}

/* Rail `rail` became usable or not (rn_hfollow_fn): every connection on it hears. */
static int rail_changed(void *arg, int rail, int usable, rn_cause cause)
{
	struct apply_ctx a = { .rail = rail, .down = !usable, .cause = cause, .now = rn_now_ns() };

	(void)arg;
	rn_port_each_all(apply_one, &a);
	return a.conns;
}

/* A rail opened or moved: what happened at each port. */
struct rail_ctx {
	int rail;
	int move;   /* 1: the rail moved (rn_port_rail_rebind); 0: it appeared (rn_port_rail_add) */
	int idx;
	rn_port *p;
	uint64_t now;
	int conns;
	int again;  /* a port could not bind the address yet */
	int err;    /* the last other failure, -errno */
};

/* A connection on the port: its local rail has the socket's new address, usable again. */
static void move_conn(rn_stream *st, void *arg)
{
	struct rail_ctx *a = arg;

	if (!st->conn || rn_conn_rail_readdr(st->conn, a->now, a->idx, &a->p->addrs[a->idx]) != 0)
		return; /* still in its handshake, or closing: nothing to tell */
	rn_conn_rail_back(st->conn, a->now, a->idx, RN_CAUSE_ADDR_NEW);
	a->conns++;
	rn_engine_dirty(st);
}

static void appear_conn(rn_stream *st, void *arg);

/* Port p opens its socket on the rail, or binds it anew; its connections hear. */
static void rail_port(rn_port *p, void *arg)
{
	struct rail_ctx *a = arg;
	int idx;

	if (p->dead || !((p->mask >> a->rail) & 1))
		return;
	idx = a->move ? rn_port_rail_rebind(p, a->rail) : rn_port_rail_add(p, a->rail);
	if (idx == -EADDRNOTAVAIL)
		a->again = 1;
	else if (idx < 0 && idx != -ENOENT && idx != -EEXIST)
		a->err = idx;
	if (idx < 0)
		return;
	a->idx = idx;
	a->p = p;
	rn_port_each(p, a->move ? move_conn : appear_conn, a);
}

static void arm_again(void);

/*
 * Rail i moves to g.to[i]: every port's socket on it is bound there anew,
 * every connection's path on it takes the address (its peer hears it in a
 * RAILS) and is used again.  A port that cannot bind it yet is tried again.
 */
static void rail_move(int i)
{
	const rn_rail_info *rails;
	struct rail_ctx a = { .rail = i, .move = 1, .now = rn_now_ns() };
	char was[RN_ADDR_STRLEN], now[RN_ADDR_STRLEN];

	rn_engine_rails(&rails);
	rn_rails_str(&g.from[i], was, sizeof(was));
	rn_engine_rail_set(i, &g.to[i]);
	rn_port_each_port(rail_port, &a);
	if (a.again && ++g.tries[i] < AGAIN_TRIES) {
		g.moved |= 1u << i;
		arm_again();
		return;
	}
	if (a.again || a.err) {
		rn_warn("rail %d: cannot bind its new address: %s", i,
			strerror(a.again ? EADDRNOTAVAIL : -a.err));
		if (!a.conns) {
			rn_engine_rail_set(i, &g.from[i]); /* still without its address: a later one may move it */
			return;
		}
	}
	rn_hfollow_rebound(&g.f, i);
	rn_log(RN_LOG_WARN, "rail %d (%s %s/%u): address changed from %s: rebound, %d connection%s told",
	       i, rails[i].name, rn_rails_str(&rails[i], now, sizeof(now)), rails[i].prefix, was,
	       a.conns, a.conns == 1 ? "" : "s");
}

/* A connection on the port: the port's new socket is its next local rail. */
static void appear_conn(rn_stream *st, void *arg)
{
	struct rail_ctx *a = arg;

	if (!st->conn || rn_conn_rail_add(st->conn, a->now, a->idx, &a->p->addrs[a->idx]) != 0)
		return; /* still in its handshake, or closing: it keeps the rails it has */
	a->conns++;
	rn_engine_dirty(st);
}

static void on_again(evutil_socket_t fd, short what, void *arg);

/*
 * Rail i, waiting, got its first address: every port opens it, every
 * connection hears.  Called again while a port cannot bind it yet (each
 * port opens it once: rn_port_rail_add).
 */
static void rail_open(int i)
{
	const rn_rail_info *rails;
	struct rail_ctx a = { .rail = i, .now = rn_now_ns() };
	char s[RN_ADDR_STRLEN];

	rn_engine_rails(&rails);
	rn_port_each_port(rail_port, &a);
	if (a.again && ++g.tries[i] < AGAIN_TRIES) {
		rn_debug("rail %d: its new address cannot be bound yet (its local route comes after "
			 "the event): again in %d us", i, AGAIN_US);
		g.again |= 1u << i;
		arm_again();
		if (!a.conns)
			return;
	}
	if (a.again || a.err)
		rn_warn("rail %d: cannot open a socket on it: %s", i,
			strerror(a.again ? EADDRNOTAVAIL : -a.err));
	rn_log(RN_LOG_WARN, "rail %d (%s %s/%u): new address: in use, offered to %d connection%s", i,
	       rails[i].name, rn_rails_str(&rails[i], s, sizeof(s)), rails[i].prefix, a.conns,
	       a.conns == 1 ? "" : "s");
}

/* Opens and moves the rails left for a later turn (g.again, g.moved); the host lock is held. */
static void open_again(void)
{
	uint32_t todo = g.again, moves = g.moved;

	g.again = g.moved = 0; /* rail_open and rail_move set a bit again for a rail not bindable yet */
	for (int i = 0; i < RN_MAX_RAILS; i++) {
		if ((todo >> i) & 1)
			rail_open(i);
		if ((moves >> i) & 1)
			rail_move(i);
	}
}

static void arm_again(void)
{
	struct timeval tv = { 0, AGAIN_US };

	if (!g.again_ev)
		g.again_ev = evtimer_new(rn_engine_base(), on_again, NULL);
	if (g.again_ev)
		rn_ev_add(g.again_ev, &tv);
}

/*
 * Rail i moves to `to` at the engine's next turn (rn_hfollow_move_fn:
 * sockets arm libevent's events, the engine's alone).
 */
static void move_later(void *arg, int i, const rn_rail_info *to)
{
	const rn_rail_info *rails;

	(void)arg;
	rn_engine_rails(&rails);
	if (!((g.moved >> i) & 1))
		g.from[i] = rails[i];
	g.to[i] = *to;
	g.tries[i] = 0;
	g.moved |= 1u << i;
	rn_host_kick();
}

static void on_again(evutil_socket_t fd, short what, void *arg)
{
	(void)fd;
	(void)what;
	(void)arg;
	rn_host_lock();
	open_again();
	rn_host_unlock();
}

/*
 * An address event: the first address of a rail that waited for one opens
 * it.  Opening arms libevent's events, the engine's alone (rn_ev.h): an
 * inline thread that read the event (a send error, rn_netlink_check)
 * leaves it to the engine's next turn (rn_netlink_sync).
 */
static void rail_appears(void *arg, const rn_hlink_ev *e)
{
	const rn_rail_info *rails;
	int n = rn_engine_rails(&rails);

	(void)arg;
	/* a link-local address comes with every link: such a rail is named by its address */
	if (e->type != RN_HLINK_ADDR_ADD || rn_addr_link_local(rn_hlink_addr(e)))
		return;
	for (int i = 0; i < n; i++) {
		if (rn_rails_has_addr(&rails[i]) || rails[i].ifindex != e->ifindex)
			continue;
		rn_engine_rail_addr(i, e);
		if (!rn_host_inline()) {
			rail_open(i);
			continue;
		}
		g.again |= 1u << i;
		rn_host_kick();
	}
}

void rn_netlink_sync(void)
{
	if ((g.again || g.moved) && !(g.again_ev && evtimer_pending(g.again_ev, NULL)))
		open_again();
}

void rn_netlink_check(void)
{
	rn_hfollow_read(&g.f);
}

static void on_netlink(evutil_socket_t fd, short what, void *arg)
{
	(void)fd;
	(void)what;
	(void)arg;
	rn_host_lock();
	rn_netlink_check();
	rn_host_unlock();
}

int rn_netlink_start(void)
{
	const rn_rail_info *rails;
	int n = rn_engine_rails(&rails), fd = rn_hlink_open();

	rn_hfollow_init(&g.f, rails, n, rail_changed, NULL);
	g.f.each = rail_appears; /* a listed rail without an address at start may get one */
	g.f.moved = move_later;  /* a rail whose address changed */
	if (fd < 0) {
		rn_info("netlink: %s; rail changes are noticed by their traffic only",
			strerror(-fd));
		return 0;
	}
	g.f.fd = rn_fd_own_high(fd);
	g.ev = event_new(rn_engine_base(), g.f.fd, EV_READ | EV_PERSIST, on_netlink, NULL);
	if (!g.ev || event_add(g.ev, NULL) != 0) {
		rn_info("netlink: cannot watch the socket; rail changes are noticed by their traffic only");
		if (g.ev)
			event_free(g.ev);
		g.ev = NULL;
		rn_fd_close(g.f.fd);
		g.f.fd = -1;
	}
	return 0;
}

void rn_netlink_forget(void)
{
	/* the descriptor is closed with the engine's others (rn_fd_fork_child) */
	g.f.fd = -1;
	g.ev = NULL;
	memset(g.f.no_addr, 0, sizeof(g.f.no_addr));
	memset(g.f.no_link, 0, sizeof(g.f.no_link));
	g.again = 0;
	g.again_ev = NULL;
}
