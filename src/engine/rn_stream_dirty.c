/*
 * rn_stream_dirty.c - the engine's turn over its streams: the dirty list
 * (streams to service after a batch of datagrams, or at the kick the
 * inline paths leave the engine), and what a rail socket reports to the
 * streams of its port (a send error, writable again, refused, unreachable).
 * The streams themselves are in rn_stream.c.
 */
#define _GNU_SOURCE
#include <errno.h>
#include <event2/event.h>
#include <stdlib.h>
#include <string.h>

#include "rn_log.h"
#include "rn_netlink.h"
#include "rn_quote.h"
#include "rn_stream.h"
#include "rn_stream_int.h"

static rn_stream *g_dirty, *g_dirty_tail; /* marked, for the next turn */
static rn_stream *g_turn;                 /* the rest of the turn being serviced */
static struct event *g_kick;

/* ---- the dirty list: streams to service after a batch ---- */

void rn_engine_dirty(rn_stream *st)
{
	RN_OWNS_HOST();
	if (st->dirty)
		return;
	st->dirty = 1;
	st->dirty_next = NULL;
	if (g_dirty_tail)
		g_dirty_tail->dirty_next = st;
	else
		g_dirty = st;
	g_dirty_tail = st;
	/* an inline thread runs its own stream and leaves the rest to the engine */
	if (rn_host_inline())
		return;
	if (g_kick && !event_pending(g_kick, EV_TIMEOUT, NULL))
		event_active(g_kick, EV_TIMEOUT, 0);
}

void rn_stream_service_dirty(void)
{
	RN_OWNS_HOST();
	/* streams marked while servicing wait for the next turn of the loop */
	g_turn = g_dirty;
	g_dirty = g_dirty_tail = NULL;
	while (g_turn) {
		rn_stream *st = g_turn;

		g_turn = st->dirty_next;
		st->dirty = 0;
		/*
		 * The time now, not the turn's start: each datagram carries its
		 * send time, and one a peer gets over 250 ms "late" is dropped as
		 * a replay (rn_conn_recv.c, fresh).  A close storm's turn of
		 * thousands of streams on a loaded machine took longer than that,
		 * and its last ACKs were dropped.
		 */
		rn_stream_service(st, rn_core_time(rn_now_ns()));
	}
}

void rn_stream_each_dirty(rn_stream_fn fn, void *ctx)
{
	rn_stream *list = g_dirty;

	g_dirty = g_dirty_tail = NULL;
	while (list) {
		rn_stream *st = list;

		list = st->dirty_next;
		st->dirty = 0;
		fn(st, ctx);
	}
}

int rn_stream_dirty_pending(void)
{
	return g_dirty != NULL;
}

/* Takes a stream off the lists of streams to service (also before it is freed). */
void rn_stream_undirty(rn_stream *st)
{
	rn_stream **pp, *prev = NULL;

	if (!st->dirty)
		return;
	st->dirty = 0;
	for (pp = &g_turn; *pp; pp = &(*pp)->dirty_next) {
		if (*pp == st) {
			*pp = st->dirty_next;
			return;
		}
	}
	for (pp = &g_dirty; *pp; prev = *pp, pp = &(*pp)->dirty_next) {
		if (*pp == st) {
			*pp = st->dirty_next;
			if (g_dirty_tail == st)
				g_dirty_tail = prev;
			return;
		}
	}
}

static void on_kick(evutil_socket_t fd, short what, void *arg)
{
	(void)fd;
	(void)what;
	(void)arg;
	rn_host_lock();
	rn_stream_service_dirty();
	rn_host_unlock();
}

int rn_stream_globals(void)
{
	if (!rn_stream_scratch)
		rn_stream_scratch = malloc(TAKE_CHUNK > RN_MAX_DGRAM ? TAKE_CHUNK : RN_MAX_DGRAM);
	if (!g_kick)
		g_kick = event_new(rn_engine_base(), -1, 0, on_kick, NULL);
	return rn_stream_scratch && g_kick ? 0 : -ENOMEM;
}

void rn_stream_send_error(rn_stream *st, int idx, int err)
{
	if (!st)
		return;
	rn_debug("connection %s: send on rail socket %d failed: %s", st->name, idx, strerror(err));
	rn_netlink_check(); /* the kernel told why first: an address removed, a link down */
	rn_conn_rail_error(st->conn, rn_now_ns(), idx);
	rn_engine_dirty(st);
}

static void mark_dirty(rn_stream *st, void *ctx)
{
	(void)ctx;
	rn_engine_dirty(st);
}

void rn_stream_port_writable(rn_port *p)
{
	rn_port_each(p, mark_dirty, NULL);
}

/* ctx: the address a port unreachable named */
static void refused_one(rn_stream *st, void *ctx)
{
	const rn_addr *to = ctx;
	rn_addr a = rn_conn_peer(st->conn);

	/* only the connection whose INIT went there: a forged error naming another does nothing */
	if (!rn_addr_eq(a, *to))
		return;
	rn_conn_refused(st->conn, rn_now_ns());
	rn_engine_dirty(st);
}

void rn_stream_refused(rn_port *p, int idx, rn_addr to)
{
	(void)idx;
	/* only a connection still sending INIT takes it (rn_conn_refused) */
	if (!p->lis)
		rn_port_each(p, refused_one, &to);
}

/* A port unreachable offered to the connections of a port (rn_stream_unreachable). */
struct unreach_ctx {
	int idx, taken;
	rn_addr to;
	const uint8_t *q;
	size_t len;
	uint64_t now;
};

static void unreachable_one(rn_stream *st, void *ctx)
{
	struct unreach_ctx *x = ctx;

	if (x->taken || !rn_conn_unreachable(st->conn, x->now, x->idx, x->to, x->q, x->len))
		return;
	x->taken = 1;
	rn_engine_dirty(st);
}

void rn_stream_unreachable(rn_port *p, int idx, rn_addr to, const uint8_t *q, size_t len)
{
	struct unreach_ctx x = { .idx = idx, .to = to, .q = q, .len = len };

	/* a quote no connection of ours could have sent costs no walk over them */
	if (rn_quote_shape(q, len) != RN_QUOTE_OURS)
		return;
	x.now = rn_core_time(rn_now_ns());
	rn_port_each(p, unreachable_one, &x);
}

void rn_stream_forget_all(void)
{
	g_dirty = g_dirty_tail = g_turn = NULL;
	g_kick = NULL;
}
