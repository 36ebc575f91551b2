/*
 * rn_hconn.c - a polling driver's links: their life in the driver's list
 * and table, and connecting over the peer's rails in turn (rn_hconn.h).
 */
#define _GNU_SOURCE /* rn_hsock.h: struct mmsghdr */
#include "rn_hconn.h"

#include <errno.h>

int rn_hconns_add(rn_hconns *s, rn_hconn *h, rn_conn *c, uint64_t now)
{
	h->conn = c;
	h->id = rn_conn_id(c);
	h->created_ns = now;
	h->expiry_ns = rn_conn_expiry(c);
	if (rn_htab_add(s->tab, h->id, h) != 0)
		return -ENOMEM;
	rn_conn_set_user(c, h);
	h->prev = NULL;
	h->next = s->head;
	if (s->head)
		s->head->prev = h;
	s->head = h;
	return 0;
}

void rn_hconn_rekey(rn_hconns *s, rn_hconn *h) { rn_hpoll_rekey(s->tab, &h->id, h->conn, h); }

/* h leaves the list and the table; what the kit made for it goes. */
static void unlink_conn(rn_hconns *s, rn_hconn *h)
{
	if (h->prev)
		h->prev->next = h->next;
	else
		s->head = h->next;
	if (h->next)
		h->next->prev = h->prev;
	h->next = h->prev = NULL;
	rn_htab_del(s->tab, h->id, h);
	if (s->io)
		rn_hset_forget(s->io, h->id);
	rn_hpoll_leave(s->lk, h->conn);
	rn_conn_del(h->conn);
	h->conn = NULL;
}

void rn_hconns_reap(rn_hconns *s)
{
	rn_hconn *h = s->head, *next;

	for (; h; h = next) {
		next = h->next;
		if (!h->dead)
			continue;
		unlink_conn(s, h);
		s->on_reap(s->arg, h);
	}
}

int rn_hconns_verdict_due(const rn_hconns *s, uint32_t rx_more, uint64_t now)
{
	for (const rn_hconn *h = s->head; h && rx_more; h = h->next)
		if (!h->dead && h->expiry_ns <= now && rn_conn_verdict_pending(h->conn, now))
			return 1;
	return 0;
}

void rn_hconn_timer(rn_hconns *s, rn_hconn *h, uint64_t now)
{
	rn_conn_on_timer(h->conn, now);
	rn_hconn_rekey(s, h);
	h->dirty = 1;
}

int rn_hconn_dial(rn_conn **c, const rn_hdial *d, int *next, uint64_t now)
{
	rn_rail_addr local[RN_MAX_RAILS];

	*c = NULL;
	for (int i = 0; i < d->io->n; i++)
		local[i] = d->io->s[i].addr;
	for (int k = 0; k < d->npeer; k++) {
		int r = (int)(((unsigned)*next + (unsigned)k) % (unsigned)d->npeer);
		const rn_rail_addr *p = &d->peer[r];
		int rc;

		if (rn_hpoll_rail_for(d->io, p) < 0)
			continue;
		*next += k + 1;
		rc = rn_conn_connect(c, d->cfg, d->env, local, d->io->n,
				     rn_hpoll_peer_addr(d->io, p), now);
		return rc ? rc : r;
	}
	return RN_ERR_NOROUTE;
}

rn_conn *rn_hconn_conn_of(void *v) { return ((rn_hconn *)v)->conn; }

void rn_hconn_mark(void *v) { ((rn_hconn *)v)->dirty = 1; }

void rn_hconn_due(void *v) { ((rn_hconn *)v)->expiry_ns = 0; }

int rn_hconns_rail(rn_hconns *s, int rail, int usable, rn_cause cause, uint64_t now)
{
	int n = 0;

	for (rn_hconn *h = s->head; h; h = h->next) {
		if (h->dead || !h->conn)
			continue;
		if (usable)
			rn_conn_rail_back(h->conn, now, rail, cause);
		else
			rn_conn_rail_gone(h->conn, now, rail, cause);
		h->dirty = 1;
		n++;
	}
	return n;
}

int rn_hconns_rail_add(rn_hconns *s, int idx, uint64_t now)
{
	int n = 0;

	for (rn_hconn *h = s->head; h; h = h->next) {
		if (h->dead || !h->conn ||
		    rn_conn_rail_add(h->conn, now, idx, &s->io->s[idx].addr) != 0)
			continue;
		h->dirty = 1;
		n++;
	}
	return n;
}

int rn_hconns_rail_readdr(rn_hconns *s, int idx, uint64_t now)
{
	int n = 0;

	for (rn_hconn *h = s->head; h; h = h->next) {
		if (h->dead || !h->conn ||
		    rn_conn_rail_readdr(h->conn, now, idx, &s->io->s[idx].addr) != 0)
			continue;
		rn_conn_rail_back(h->conn, now, idx, RN_CAUSE_ADDR_NEW);
		h->dirty = 1;
		n++;
	}
	return n;
}

void rn_hconn_flush(const rn_hconns *s, rn_hconn *h, uint64_t now)
{
	rn_hset_send_conn(s->io, h->conn, h->id, now, RN_HPOLL_FLUSH_BUDGET);
	/* what was just sent armed timers (loss, keepalive): a send from outside
	 * the pass too, and the pass only looks at this cached value */
	h->expiry_ns = rn_conn_expiry(h->conn);
}

void rn_hconn_on_reset(void *arg, void *v)
{
	(void)arg;
	((rn_hconn *)v)->dirty = 1;
}
