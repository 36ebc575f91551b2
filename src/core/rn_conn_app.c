/*
 * rn_conn_app.c - the application side of a connection's stream: writes,
 * reads, shutdown and abort, and the counters it reads.
 */
#include <stddef.h>
#include <string.h>

#include "rn_conn.h"
#include "rn_seq.h"

uint64_t rn_conn_id(const rn_conn *c) { return c->id; }
void rn_conn_set_user(rn_conn *c, void *user) { c->env.user = user; }
int rn_conn_state(const rn_conn *c) { return c->state; }
int rn_conn_error(const rn_conn *c) { return c->err; }
uint32_t rn_conn_mss(const rn_conn *c) { return c->mss; }
rn_addr rn_conn_peer(const rn_conn *c) { return c->peer; }

void rn_conn_set_early(rn_conn *c, int on) { c->hs.early = on != 0; }

int rn_conn_takes_bytes(const rn_conn *c)
{
	return !c->err && (c->state == RN_ST_ESTABLISHED ||
			   (c->state == RN_ST_COOKIE_SENT && c->hs.early && c->bufs_ready));
}

ssize_t rn_conn_write(rn_conn *c, uint64_t now_ns, const void *data, size_t len)
{
	size_t n;

	RN_OWNED(c);
	(void)now_ns;
	if (c->err)
		return c->err;
	if (!rn_conn_takes_bytes(c))
		return c->state == RN_ST_LINGER || c->state == RN_ST_CLOSED ? RN_ERR_SHUT :
									      RN_ERR_STATE;
	if (c->sq.fin_queued)
		return RN_ERR_SHUT;
	n = rn_sndq_write(&c->sq, data, len);
	c->st.app_tx_bytes += n;
	return (ssize_t)n;
}

size_t rn_conn_write_space(rn_conn *c)
{
	RN_OWNED(c);
	if (!rn_conn_takes_bytes(c))
		return 0;
	/* the room promised is the ring's own: make its storage now if it was released */
	if (rn_sndq_space(&c->sq) && rn_sndq_ensure(&c->sq, &c->env.mem) < 0)
		return 0;
	return rn_sndq_space(&c->sq);
}

int rn_conn_write_done(const rn_conn *c)
{
	return c->bufs_ready && c->sq.una == c->sq.end;
}

int rn_conn_owes(const rn_conn *c)
{
	if (c->state == RN_ST_CLOSED)
		return c->close.rst_pending != 0;
	return !rn_conn_write_done(c) || c->ack.pending;
}

void rn_conn_queued(const rn_conn *c, size_t *rx, size_t *unacked, size_t *unsent)
{
	*rx = *unacked = *unsent = 0;
	if (!c->bufs_ready)
		return;
	*rx = rn_rob_ready(&c->rq);
	*unacked = rn_sndq_bytes_from(&c->sq, c->sq.una);
	*unsent = rn_sndq_bytes_from(&c->sq, c->sq.nxt);
}

ssize_t rn_conn_peek(rn_conn *c, const uint8_t **data)
{
	ssize_t n;

	RN_OWNED(c);
	if (!c->bufs_ready)
		return c->err ? c->err : RN_ERR_AGAIN;
	n = rn_rob_peek(&c->rq, data);
	/*
	 * in-order data is delivered first; then the reason the stream died,
	 * unless the peer's whole stream came before its RESET: then the end of
	 * it (TCP's RST in CLOSE_WAIT: the reader gets EOF, a writer EPIPE)
	 */
	if (c->err && n <= 0)
		return n == 0 && c->err == RN_ERR_RESET ? 0 : c->err;
	return n;
}

int rn_conn_ended_clean(const rn_conn *c)
{
	return c->state == RN_ST_CLOSED && c->err == RN_ERR_RESET && c->bufs_ready &&
	       rn_rob_fin_in_order(&c->rq);
}

void rn_conn_consume(rn_conn *c, uint64_t now_ns, size_t n)
{
	RN_OWNED(c);
	if (!c->bufs_ready)
		return;
	rn_rob_consume(&c->rq, n);
	c->st.app_rx_bytes += n;
	rn_conn_shrink_to_share(c);
	/* reopened a quarter of the window since the last advertisement: say so */
	if (c->state == RN_ST_ESTABLISHED &&
	    rn_conn_rcv_edge(c) - c->ack.adv_edge >= rn_conn_rcv_share(c) / 4) {
		c->ack.pending = 1;
		c->ack.now = 1;
		if (!c->ack.first_ns)
			c->ack.first_ns = now_ns;
	}
}

ssize_t rn_conn_read(rn_conn *c, uint64_t now_ns, void *buf, size_t len)
{
	size_t done = 0;

	RN_OWNED(c);
	while (done < len) {
		const uint8_t *p;
		ssize_t n = rn_conn_peek(c, &p);

		if (n <= 0)
			return done ? (ssize_t)done : n;
		if ((size_t)n > len - done)
			n = (ssize_t)(len - done);
		memcpy((uint8_t *)buf + done, p, (size_t)n);
		rn_conn_consume(c, now_ns, (size_t)n);
		done += (size_t)n;
	}
	return (ssize_t)done;
}

int rn_conn_shutdown(rn_conn *c, uint64_t now_ns)
{
	RN_OWNED(c);
	(void)now_ns;
	if (c->err)
		return c->err;
	if (c->state != RN_ST_ESTABLISHED)
		return c->state == RN_ST_LINGER ? 0 : RN_ERR_STATE;
	return rn_sndq_fin(&c->sq);
}

void rn_conn_abort(rn_conn *c, uint64_t now_ns)
{
	RN_OWNED(c);
	rn_conn_fail(c, now_ns, RN_ERR_ABORTED);
}

void rn_conn_get_stats(const rn_conn *c, rn_conn_stats *st)
{
	/* the same fields in the same order: the counters are the stats' first part */
	_Static_assert(offsetof(rn_conn_stats, rail) >= sizeof(rn_conn_counts) &&
			       offsetof(rn_conn_stats, npaths) == offsetof(rn_conn_counts, npaths),
		       "rn_conn_counts is the start of rn_conn_stats");
	_Static_assert(offsetof(rn_rail_stats, small_ok) == offsetof(rn_rail_counts, small_ok),
		       "rn_rail_counts is the start of rn_rail_stats");
	memset(st, 0, sizeof(*st));
	memcpy(st, &c->st, sizeof(c->st));
	st->state = c->state;
	st->err = c->err;
	st->npaths = c->npaths;
	st->mss = c->mss;
	st->snd_ring = c->bufs_ready ? c->sq.slots : 0;
	st->rcv_ring = c->bufs_ready ? c->rq.cap : 0;
	st->ring_grows += c->bufs_ready ? c->rq.grows : 0;
	st->keyed = c->cfg.keyed;
	for (int k = 0; k < c->npaths; k++) {
		const rn_rail *r = &c->rail[k];
		rn_rail_stats *rs = &st->rail[k];

		memcpy(rs, &r->st, sizeof(r->st)); /* the counters are the stats' first part */
		rs->local = r->local;
		rs->remote = r->remote;
		rs->local_rail = r->local_rail;
		rs->backup = r->backup;
		/* as it would act: a verdict its peer holds and it takes at its next call included */
		rs->rx_up = (uint8_t)rn_peer_rx_view(c, k);
		rs->tx_up = (uint8_t)rn_conn_rail_usable(c, k);
		rs->cwnd = r->cwnd;
		rs->inflight = r->inflight;
		rs->srtt_ns = r->srtt_ns;
		rs->min_rtt_ns = r->min_rtt_ns;
		rs->queue_ns = r->latest_q_ns;
		/* the size it carries now: its size search's, never below the connection's */
		rs->dgram = (rn_pmtu_size(&r->pm) > c->dgram ? rn_pmtu_size(&r->pm) : c->dgram) +
			    (c->cfg.keyed ? RN_AEAD_OVERHEAD : 0);
	}
}

