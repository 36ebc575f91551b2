/*
 * rn_netlink.c - the engine's side of the kernel's link and address events
 * (the socket and its parser are the host kit's: rn_hlink.h).
 *
 * Each rail is usable while its interface is up with carrier and holds the
 * rail's address.  When either goes, every connection stops sending on the
 * rail at once (rn_conn_rail_gone: what it held is resent on the others),
 * rather than after the receive-count rule or a failed send notices; when
 * both are back, the connections may use it again (rn_conn_rail_back) and
 * send a heartbeat on it now.  The rail sockets stay bound to the address
 * throughout: Linux keeps a UDP socket bound to an address that went away,
 * and it receives and sends again once the address is back.
 */
#define _GNU_SOURCE
#include <event2/event.h>
#include <string.h>

#include "rn_engine.h"
#include "rn_hlink.h"
#include "rn_host_lock.h"
#include "rn_log.h"
#include "rn_netlink.h"
#include "rn_port.h"
#include "rn_rails.h"
#include "rn_stream.h"
#include "rn_sys.h"

/* A read's buffer: the kernel sends a message per change, a few hundred bytes each. */
#define RN_NL_BUF 8192
#define RN_NL_EVS 64

static struct {
	int fd;
	struct event *ev;
	uint8_t no_addr[RN_MAX_RAILS]; /* the rail's address is gone from its interface */
	uint8_t no_link[RN_MAX_RAILS]; /* its interface is down, without carrier, or gone */
} g = { .fd = -1 };

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

/* Rail r was usable (was_ok) and may not be now, or the other way round. */
static void rail_changed(const rn_rail_info *r, int rail, int was_ok, rn_cause cause)
{
	int ok = !g.no_addr[rail] && !g.no_link[rail];
	struct apply_ctx a = { .rail = rail, .down = !ok, .cause = cause, .now = rn_now_ns() };
	char ip[32];

	if (ok == was_ok)
		return;
	rn_port_each_all(apply_one, &a);
	rn_log(ok ? RN_LOG_INFO : RN_LOG_WARN, "rail %d (%s %s): %s: %s for %d connection%s", rail,
	       r->name, rn_ip_str(r->ip, ip, sizeof(ip)), rn_cause_name(cause),
	       ok ? "in use again" : "down", a.conns, a.conns == 1 ? "" : "s");
}

static void apply(const rn_hlink_ev *e)
{
	const rn_rail_info *rails;
	int n = rn_engine_rails(&rails);

	for (int i = 0; i < n; i++) {
		const rn_rail_info *r = &rails[i];
		int was_ok = !g.no_addr[i] && !g.no_link[i];
		rn_cause cause;

		if (e->ifindex != r->ifindex)
			continue;
		switch (e->type) {
		case RN_HLINK_ADDR_ADD:
		case RN_HLINK_ADDR_DEL:
			if (e->ip != r->ip)
				continue;
			g.no_addr[i] = e->type == RN_HLINK_ADDR_DEL;
			cause = g.no_addr[i] ? RN_CAUSE_ADDR_GONE : RN_CAUSE_ADDR_BACK;
			break;
		case RN_HLINK_LINK:
		case RN_HLINK_LINK_DEL:
			g.no_link[i] = !e->up;
			cause = g.no_link[i] ? RN_CAUSE_LINK_DOWN : RN_CAUSE_LINK_UP;
			break;
		default:
			continue;
		}
		rail_changed(r, i, was_ok, cause);
	}
}

void rn_netlink_check(void)
{
	uint8_t buf[RN_NL_BUF];
	rn_hlink_ev ev[RN_NL_EVS];

	if (g.fd < 0)
		return;
	for (;;) {
		ssize_t len = rn_hlink_read(g.fd, buf, sizeof(buf));
		int n;

		if (len == -ENOBUFS) {
			/* the kernel dropped events: later ones still come, and the rules catch the rest */
			rn_warn("netlink: events lost (receive buffer full); rail changes may be noticed late");
			continue;
		}
		if (len <= 0)
			return;
		n = rn_hlink_parse(buf, (size_t)len, ev, RN_NL_EVS);
		for (int i = 0; i < n; i++)
			apply(&ev[i]);
	}
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
	int fd = rn_hlink_open();

	if (fd < 0) {
		rn_info("netlink: %s; rail changes are noticed by their traffic only",
			strerror(-fd));
		return 0;
	}
	g.fd = rn_fd_own_high(fd);
	g.ev = event_new(rn_engine_base(), g.fd, EV_READ | EV_PERSIST, on_netlink, NULL);
	if (!g.ev || event_add(g.ev, NULL) != 0) {
		rn_info("netlink: cannot watch the socket; rail changes are noticed by their traffic only");
		if (g.ev)
			event_free(g.ev);
		g.ev = NULL;
		rn_fd_close(g.fd);
		g.fd = -1;
	}
	return 0;
}

void rn_netlink_forget(void)
{
	/* the descriptor is closed with the engine's others (rn_fd_fork_child) */
	g.fd = -1;
	g.ev = NULL;
	memset(g.no_addr, 0, sizeof(g.no_addr));
	memset(g.no_link, 0, sizeof(g.no_link));
}
