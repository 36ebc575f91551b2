/*
 * rn_conn_dead.c - a peer process that is gone, told by its host's ICMP
 * port unreachable (rn_conn_unreachable, rn_core.h).
 *
 * A process that ends without closing (_exit, a crash, kill -9) sends no
 * RESET; its host answers our next datagrams with port unreachable, as
 * TCP's kernel answers with an RST.  ICMP is not authenticated, so an error
 * counts only if it quotes a datagram this connection sent lately to that
 * very address (rn_quote.h: our peer's id, which no host off the path has
 * seen), and the connection fails only once every rail we still send on has
 * brought one within RN_UNREACH_WINDOW_NS: the peer's rail sockets all close
 * when it dies, whereas one rail answering (an address taken over by another
 * host, a stray middlebox) says nothing of the others.
 */
#include "rn_conn.h"
#include "rn_quote.h"

/* The rail of ours that sends to dest from driver rail local_rail, or -1. */
static int rail_to(const rn_conn *c, int local_rail, rn_addr dest)
{
	for (int k = 0; k < c->npaths; k++)
		if (c->rail[k].local_rail == local_rail && rn_addr_eq(c->rail[k].remote, dest))
			return k;
	return -1;
}

/* The rails we send on (all of them if none is) with no error lately: 0 when every one had it. */
static uint32_t rails_unanswered(const rn_conn *c, uint64_t now_ns)
{
	uint32_t need = 0, missing = 0;

	for (int k = 0; k < c->npaths; k++)
		if (rn_rail_tx_up(&c->rail[k]))
			need |= 1u << k;
	if (!need)
		need = rn_conn_paths_mask(c);
	for (int k = 0; k < c->npaths; k++)
		if (((need >> k) & 1) &&
		    (!c->unreach_ns[k] || now_ns - c->unreach_ns[k] > RN_UNREACH_WINDOW_NS))
			missing |= 1u << k;
	return missing;
}

int rn_conn_unreachable(rn_conn *c, uint64_t now_ns, int local_rail, rn_addr dest,
			const uint8_t *q, size_t len)
{
	rn_quote_ref ref;
	uint32_t missing;
	int k = rail_to(c, local_rail, dest);

	RN_OWNED(c);
	/* before: rn_conn_refused; after a clean close the peer may be gone */
	if (k < 0 || c->state != RN_ST_ESTABLISHED)
		return 0;
	ref = (rn_quote_ref){ .peer_id = c->peer_id, .path = (uint8_t)k,
			      .now_us = rn_now_us(now_ns), .seq_nxt = c->sq.nxt,
			      .keyed = c->cfg.keyed };
	if (c->cfg.keyed) {
		if (!c->cr)
			return 0;
		ref.pn_epoch = c->cr->tx_epoch;
		ref.pn_count = c->cr->tx_count;
	}
	if (rn_quote_check(&ref, q, len) != RN_QUOTE_OURS) {
		c->st.unreach_foreign++;
		return 0;
	}
	c->st.unreach_ours++;
	c->unreach_ns[k] = now_ns;
	missing = rails_unanswered(c, now_ns);
	if (!missing && rn_conn_last_ack(c))
		rn_conn_end_closed(c, now_ns); /* it had everything, and left before our FIN's ACK */
	else if (!missing)
		rn_conn_fail(c, now_ns, RN_ERR_RESET);
	else /* ask the other rails now rather than at their next keepalive */
		rn_timer_on_unreachable(c, missing, now_ns);
	return 1;
}
