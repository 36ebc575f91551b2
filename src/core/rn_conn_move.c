/*
 * rn_conn_move.c - a connection handed to another process: a prefork
 * worker takes over what the process owning its listener accepted, so
 * that the worker drives it itself (docs/PROTOCOL.md, "Handing a
 * connection over").
 *
 * Only a fresh server connection moves: established, with nothing of ours
 * written yet, every byte of the peer's read out of the ring (the owner's
 * driver handed those to the application's descriptor, which moves with
 * it), no FIN either way, its rails and both receive views as the
 * handshake made them, keys in their first epoch.  Such a connection is
 * its handshake plus a few counters: the taker makes it again as the
 * listener did (rn_conn_accept) and sets the counters, so nothing with
 * pointers crosses.  Then it moves its rails to the taker's sockets
 * (rn_conn_rails_moved): the peer hears a RAILS from there and sends there
 * from then on.
 */
#include <string.h>

#include <sodium/utils.h>

#include "rn_conn.h"

#define MOVE_MAGIC 0x726e6d31u /* "rnm1" */

struct move_blob {
	uint32_t magic;
	uint32_t size;           /* sizeof(struct move_blob): both ends run the same build */
	rn_accept_params ap;
	uint32_t rx_next;        /* the peer's next sequence number, read up to here */
	uint32_t peer_wnd;
	uint64_t rtt_ns;
	struct rn_conn_fresh fresh;
	uint8_t keyed;
	rn_crypt_counts counts;
};

size_t rn_conn_move_size(void)
{
	return sizeof(struct move_blob);
}

/* Whether c is fresh (above): nothing but its handshake and counters to carry. */
static int movable(const rn_conn *c)
{
	const rn_rob *q = &c->rq;

	return c->state == RN_ST_ESTABLISHED && !c->is_client && c->bufs_ready && !c->err &&
	       !c->hs.cookie_ack_due &&
	       c->sq.una == c->hs.isn && c->sq.end == c->hs.isn && !c->sq.fin_queued &&
	       q->base == q->nxt && q->nxt == q->max && q->off == 0 && !q->fin_known &&
	       c->rails.version == 0 && c->rails.peer_version == 0 && c->link.version == 0 &&
	       c->link.peer_version == 0 && !c->close.rst_pending && !c->close.peer_fin_seen;
}

void rn_conn_cookie_ack_now(rn_conn *c)
{
	RN_OWNED(c);
	if (c->hs.cookie_ack_due && c->ack.pending)
		c->ack.now = 1;
}

ssize_t rn_conn_export(const rn_conn *c, void *buf, size_t cap)
{
	struct move_blob b;

	RN_OWNED(c);
	if (cap < sizeof(b))
		return RN_ERR_NOBUF;
	if (!movable(c))
		return RN_ERR_STATE;
	memset(&b, 0, sizeof(b));
	b.magic = MOVE_MAGIC;
	b.size = sizeof(b);
	b.keyed = c->cfg.keyed;
	if (c->cr && rn_crypt_counts_get(c->cr, &b.counts) != 0)
		return RN_ERR_STATE;
	b.ap.cfg = c->cfg;
	b.ap.id = c->id;
	b.ap.peer_id = c->peer_id;
	b.ap.isn = c->hs.isn;
	b.ap.peer_isn = c->hs.peer_isn;
	b.ap.dgram = c->dgram + (c->cfg.keyed ? RN_AEAD_OVERHEAD : 0); /* as negotiated */
	b.ap.peer_slots = c->peer_slots;
	b.ap.nlocal = c->nlocal;
	memcpy(b.ap.local, c->local, (size_t)c->nlocal * sizeof(*c->local));
	b.ap.nremote = c->rails.nremote;
	memcpy(b.ap.remote, c->rails.remote, (size_t)c->rails.nremote * sizeof(*c->rails.remote));
	b.ap.from = c->peer;
	b.ap.local_rail = c->hs.rail;
	b.rx_next = c->rq.base;
	b.peer_wnd = c->peer_wnd;
	b.rtt_ns = c->rtt_ns;
	b.fresh = c->fresh;
	memcpy(buf, &b, sizeof(b));
	sodium_memzero(&b, sizeof(b)); /* the cluster key and the counters */
	return (ssize_t)sizeof(b);
}

int rn_conn_import(rn_conn **out, const void *buf, size_t len, const rn_rail_addr *local,
		   int nlocal, const rn_env *env, uint64_t now_ns)
{
	struct move_blob b;
	rn_conn *c;
	int rc = RN_ERR_INVAL;

	*out = NULL;
	if (len != sizeof(b))
		return RN_ERR_INVAL;
	memcpy(&b, buf, sizeof(b));
	if (b.magic != MOVE_MAGIC || b.size != sizeof(b) || b.ap.nlocal != nlocal ||
	    nlocal <= 0 || nlocal > RN_MAX_RAILS || b.ap.nremote <= 0 ||
	    b.ap.nremote > RN_MAX_RAILS || b.keyed != b.ap.cfg.keyed)
		goto out;
	/* the taker's rails are the owner's, on other ports */
	for (int i = 0; i < nlocal; i++) {
		rn_addr a = rn_addr_of_rail(&local[i]), o = rn_addr_of_rail(&b.ap.local[i]);

		if (!rn_addr_rail_valid(&local[i]) || !rn_addr_same_host(&a, &o))
			goto out;
	}
	rc = rn_conn_accept(&c, &b.ap, env, now_ns);
	if (rc)
		goto out;
	c->hs.cookie_ack_due = 0; /* the owner sent it */
	c->rq.base = c->rq.nxt = c->rq.max = b.rx_next;
	c->ack.adv_edge = c->rq.base + rn_conn_rcv_share(c);
	c->peer_wnd = b.peer_wnd;
	c->rtt_ns = b.rtt_ns;
	c->fresh = b.fresh;
	if (c->cr)
		rn_crypt_counts_set(c->cr, &b.counts);
	rc = rn_conn_rails_moved(c, now_ns, local, nlocal);
	if (rc) {
		rn_conn_del(c);
		goto out;
	}
	*out = c;
out:
	sodium_memzero(&b, sizeof(b));
	return rc;
}
