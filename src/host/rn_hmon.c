/*
 * rn_hmon.c - the peer monitor and dead peers for polling drivers
 * (see rn_hmon.h).
 */
#define _GNU_SOURCE /* rn_hsock.h: struct mmsghdr */
#include <errno.h>

#include "rn_hmon.h"
#include "rn_quote.h"

void rn_hmon_free(rn_hmon *m)
{
	if (m->ready)
		rn_hpeers_free(&m->peers);
	m->ready = 0;
}

int rn_hmon_join(rn_hmon *m, rn_conn *c, uint64_t now_ns)
{
	uint32_t before;
	int rc;

	if (rn_conn_peer_of(c) || rn_conn_state(c) != RN_ST_ESTABLISHED)
		return 0;
	if (!m->ready) {
		if (rn_hpeers_init(&m->peers))
			return -ENOMEM;
		m->ready = 1;
	}
	before = m->peers.npeers;
	rc = rn_hpeer_join(&m->peers, c, now_ns);
	m->joined += rc == 0;
	m->made += m->peers.npeers - before;
	return rc == -ENOMEM ? rc : 0;
}

rn_conn *rn_hmon_leave(rn_hmon *m, rn_conn *c, int force)
{
	/* a lingering or closed keeper judges nothing: another member takes over now */
	if (!m->ready || !rn_conn_peer_of(c) || (!force && rn_conn_state(c) < RN_ST_LINGER))
		return NULL;
	return rn_hpeer_leave(&m->peers, c);
}

struct offer {
	rn_conn *(*conn_of)(void *v);
	const rn_hsock_err *e;
	int idx;
	uint64_t now;
	void *taken;
};

static void offer_one(void *v, void *arg)
{
	struct offer *o = arg;

	if (!o->taken && rn_conn_unreachable(o->conn_of(v), o->now, o->idx, o->e->dest,
					     o->e->quote, o->e->quote_len))
		o->taken = v;
}

void *rn_hmon_unreachable(rn_hmon *m, const rn_htab *tab, rn_conn *(*conn_of)(void *v),
			  int idx, const rn_hsock_err *e, uint64_t now_ns)
{
	struct offer o = { .conn_of = conn_of, .e = e, .idx = idx, .now = now_ns };

	/* port unreachable only; a quote no connection of ours could have sent costs no walk */
	if (!rn_hsock_err_port_unreach(e) ||
	    rn_quote_shape(e->quote, e->quote_len) != RN_QUOTE_OURS)
		return NULL;
	rn_htab_each(tab, offer_one, &o);
	m->unreach += o.taken != NULL;
	return o.taken;
}

/* ---- whose rails ---- */

int rn_hmon_rails_in(const rn_conn *c, const rn_addr *set, int n)
{
	rn_conn_stats st;

	rn_conn_get_stats(c, &st);
	if (!rn_addr_among(set, n, rn_conn_peer(c)) || st.npaths == 0)
		return 0;
	for (int k = 0; k < st.npaths; k++)
		if (!rn_addr_among(set, n, st.rail[k].remote))
			return 0;
	return 1;
}
