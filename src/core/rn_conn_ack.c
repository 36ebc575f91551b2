/*
 * rn_conn_ack.c - ACKs: the blocks we send (and the owed ACK they settle),
 * how long one may wait while answering, and what the peer's say: packets
 * acknowledged (RTT samples, the send ring's marks), packets lost (per
 * rail, by SACK gaps and timeouts) and their resends.
 */
#include <stddef.h>
#include <string.h>

#include "rn_bits.h"
#include "rn_conn.h"
#include "rn_seq.h"

/* ---- the ACKs we send ---- */

/*
 * The ACK block as it stands, with as many SACK words as fit in `room`
 * bytes.  Returns 0 if not even the block without words fits.
 */
int rn_conn_build_ack(rn_conn *c, rn_ackblk *ab, uint64_t *words, size_t room)
{
	unsigned maxw;

	if (!c->bufs_ready || room < RN_ACKBLK_LEN)
		return 0;
	maxw = (unsigned)((room - RN_ACKBLK_LEN) / 8);
	if (maxw > RN_MAX_SACK_WORDS)
		maxw = RN_MAX_SACK_WORDS;
	ab->ack = c->rq.nxt;
	ab->wnd = rn_conn_rcv_edge(c);
	ab->ts_echo = ab->ts_rx = 0;
	ab->echo_path = 0;
	for (int i = 0; i < c->npaths; i++) {
		int k = (int)((c->ack.echo_next + (unsigned)i) % (unsigned)c->npaths);

		if (c->ack.echo[k].valid) {
			ab->ts_echo = c->ack.echo[k].ts;
			ab->ts_rx = c->ack.echo[k].rx_us;
			ab->echo_path = (uint8_t)k;
			c->ack.echo_next = (unsigned)k + 1;
			break;
		}
	}
	ab->nwords = (uint16_t)rn_rob_sack(&c->rq, words, maxw);
	ab->words = words;
	return 1;
}

/*
 * A late answer's ACK block (rn_conn_hold_limit) echoes the newest arrival,
 * whichever rail it came on (the packet answered, or later).
 */
void rn_conn_echo_newest(const rn_conn *c, rn_ackblk *ab)
{
	for (int k = 0; k < c->npaths; k++)
		if (c->ack.echo[k].valid &&
		    (!ab->ts_echo || (int32_t)(c->ack.echo[k].rx_us - ab->ts_rx) > 0)) {
			ab->ts_echo = c->ack.echo[k].ts;
			ab->ts_rx = c->ack.echo[k].rx_us;
			ab->echo_path = (uint8_t)k;
		}
}

void rn_conn_ack_sent(rn_conn *c, const rn_ackblk *ab, const rn_hdr *h)
{
	if (h->flags & RN_F_LATE) { /* counted once acknowledged (rn_conn_recv_ack) */
		c->ack.late_seq = h->seq;
		c->ack.late_us = h->ts - ab->ts_rx;
		c->ack.late_sent = 1;
		c->ack.late = 0;
	}
	c->ack.pp = 0;
	c->ack.pending = 0;
	c->ack.now = 0;
	c->hs.cookie_ack_due = 0; /* the client takes any packet of ours for it (rn_conn_send.c) */
	c->ack.unacked = 0;
	c->ack.first_ns = 0;
	c->ack.adv_edge = ab->wnd;
}

/* ---- the wait while answering ---- */

/*
 * The ACK wait while answering (docs/PROTOCOL.md, "ACKs"): ack_delay_pp,
 * or twice the longest late answer counted if that is longer, never past
 * ack_hold_max.  An answer is late when the ACK it would have carried went
 * alone at the end of the wait, nothing of ours being unacknowledged (a
 * request/response whose program takes longer than the wait to write its
 * next request): its DATA then carries an ACK block echoing the newest
 * arrival and RN_F_LATE, and the late answer is its ts less that arrival
 * time, both on the holder's clock.  So both ends count the same numbers:
 * the peer as it receives the DATA, the holder once the peer acknowledged
 * it (a flagged DATA lost on the way is resent unflagged and counts on
 * neither side, and the holder never waits longer than the peer allows).
 * Answers later than ack_hold_max (an idle gap) do not count.  The limit
 * never shrinks.
 */
uint64_t rn_conn_hold_limit(const rn_config *cfg, uint32_t held_us)
{
	uint64_t l = (uint64_t)held_us * 2000;

	if (l < cfg->ack_delay_pp_ns)
		l = cfg->ack_delay_pp_ns;
	return l < cfg->ack_hold_max_ns ? l : cfg->ack_hold_max_ns;
}

void rn_conn_hold_sample(const rn_config *cfg, uint32_t *held_us, uint32_t wait_us)
{
	if (wait_us > *held_us && (uint64_t)wait_us * 1000 <= cfg->ack_hold_max_ns)
		*held_us = wait_us;
}

/* ---- what the peer's ACKs say ---- */

static void on_acked(rn_conn *c, uint32_t seq, uint64_t now_ns)
{
	rn_sslot *s = rn_sndq_slot(&c->sq, seq);

	if (s->flags & RN_SS_FLIGHT) {
		rn_rail *r = &c->rail[s->rail];

		if (s->tx_count == 1) /* unambiguous: Karn */
			rn_rail_on_rtt(r, now_ns - s->sent_ns, now_ns);
		/* the configured ring bounds the window; the ring grows to follow it */
		rn_rail_on_acked(r, s->tx_idx, &c->cfg, c->sq.max_slots, now_ns);
		if (s->flags & RN_SS_MULTI)
			r->bundle_lost = 0; /* the rail's size works */
		s->flags &= (uint8_t)~RN_SS_FLIGHT;
	}
	if (s->flags & RN_SS_COPY) {
		/*
		 * Which of the two arrived is unknown: the copy only leaves its
		 * rail's flight, and proves nothing there (no RTT, no later
		 * packets of that rail taken for lost, no round ended).
		 */
		rn_rail *cr = &c->rail[s->copy_rail];

		if (cr->inflight)
			cr->inflight--;
		s->flags &= (uint8_t)~RN_SS_COPY;
	}
	s->flags |= RN_SS_ACKED;
}

int rn_conn_ack_valid(const rn_conn *c, const rn_pkt *p)
{
	/* never beyond what was sent; never older than the largest ring */
	if (rn_seq_gt(p->ack, c->sq.nxt) || rn_seq_lt(p->ack, c->sq.una - c->sq.max_slots))
		return 0;
	if (rn_seq_lt(p->wnd, p->ack) || p->wnd - p->ack > RN_MAX_SLOTS)
		return 0;
	return 1;
}

void rn_conn_recv_ack(rn_conn *c, const rn_pkt *p, uint64_t now_ns)
{
	rn_sndq *q = &c->sq;
	uint32_t base = p->ack + 1;

	if (rn_seq_gt(p->wnd, c->peer_wnd))
		c->peer_wnd = p->wnd;
	if (p->ts_echo) {
		uint64_t rtt = (uint64_t)(uint32_t)(rn_now_us(now_ns) - p->ts_echo) * 1000;

		if (p->flags & RN_F_LATE)
			rn_conn_hold_sample(&c->cfg, &c->ack.peer_held_us, p->ts - p->ts_rx);

		if (rtt <= RN_RTO_MAX_NS)
			c->rtt_ns = c->rtt_ns ? (7 * c->rtt_ns + rtt) / 8 : rtt;
		if (p->echo_path < c->npaths) {
			rn_rail *r = &c->rail[p->echo_path];

			/* the receiver's clock paces the drains of every flow into it */
			r->peer_clock_us = p->ts_rx;
			r->peer_clock_valid = 1;
			rn_rail_on_owd(r, p->ts_rx - p->ts_echo, &c->cfg, now_ns);
		}
	}
	while (rn_seq_lt(q->una, p->ack)) {
		rn_sslot *s = rn_sndq_slot(q, q->una);

		if (!(s->flags & RN_SS_ACKED))
			on_acked(c, q->una, now_ns);
		/* the stream is done only when the cumulative ACK passes the FIN */
		if (s->flags & RN_SS_FIN)
			c->close.fin_acked = 1;
		s->flags &= (uint8_t)~(RN_SS_ACKED | RN_SS_LOST);
		q->una++;
	}
	if (c->ack.late_sent && rn_seq_lt(c->ack.late_seq, q->una)) {
		rn_conn_hold_sample(&c->cfg, &c->ack.held_us, c->ack.late_us);
		c->ack.late_sent = 0;
	}
	for (unsigned w = 0; w < p->nwords; w++) {
		uint64_t bits = rn_wire_sack_word(p, w);
		uint32_t from = base + 64 * w;

		while (bits) {
			uint32_t seq = from + (uint32_t)__builtin_ctzll(bits);

			bits &= bits - 1;
			if (rn_seq_ge(seq, q->nxt))
				break; /* never sent: ignore the rest */
			if (rn_seq_lt(seq, q->una))
				continue;
			if (!(rn_sndq_slot(q, seq)->flags & RN_SS_ACKED))
				on_acked(c, seq, now_ns);
		}
	}
	rn_conn_detect_losses(c, now_ns);
}

/* Is transmission t on rail k the copy of its packet, in flight? */
static int is_copy(const rn_sslot *s, int k, const rn_txrec *t)
{
	return (s->flags & RN_SS_COPY) && s->copy_rail == k && s->copy_idx == t->idx;
}

/* Is the transmission at the head of rail k's FIFO still unacked and in flight there? */
static int txrec_live(rn_conn *c, int k, const rn_txrec *t)
{
	rn_sslot *s;

	if (rn_seq_lt(t->seq, c->sq.una) || rn_seq_ge(t->seq, c->sq.nxt))
		return 0;
	s = rn_sndq_slot(&c->sq, t->seq);
	return ((s->flags & RN_SS_FLIGHT) && s->rail == k && s->tx_idx == t->idx) ||
	       is_copy(s, k, t);
}

/*
 * 24 packets: lost in a row from datagrams of several packets, none of
 * theirs acknowledged, the rail's size has stopped working (an MTU that
 * shrank under us: a few datagrams of 6 jumbo packets).  A random loss
 * takes a datagram or two; a rail that died whole is the failure
 * detector's, and at worst costs its size until the next try (250 ms).
 */
#define RN_BUNDLE_HOLE 24u

/* judge: a loss on a rail still in use, which may tell of its size */
static void declare_lost(rn_conn *c, int k, const rn_txrec *t, int judge, uint64_t now_ns)
{
	rn_sslot *s = rn_sndq_slot(&c->sq, t->seq);
	rn_rail *r = &c->rail[k];

	/* a late answer that may not have arrived: its resend says nothing */
	if (c->ack.late_sent && t->seq == c->ack.late_seq)
		c->ack.late_sent = 0;
	if (is_copy(s, k, t)) {
		/* a copy is never bundled; the packet is lost once both are */
		s->flags &= (uint8_t)~RN_SS_COPY;
		rn_rail_on_lost(r, t->idx, &c->cfg);
		if (!(s->flags & RN_SS_FLIGHT))
			rn_sndq_lost_push(&c->sq, t->seq);
		return;
	}
	if (judge && (s->flags & RN_SS_MULTI) && ++r->bundle_lost >= RN_BUNDLE_HOLE) {
		r->bundle_lost = 0;
		if (rn_pmtu_on_hole(&r->pm, now_ns))
			c->probe.pm_pending |= 1u << k; /* search down at once */
	}
	s->flags &= (uint8_t)~RN_SS_FLIGHT;
	rn_rail_on_lost(&c->rail[k], t->idx, &c->cfg);
	if (!(s->flags & RN_SS_COPY))
		rn_sndq_lost_push(&c->sq, t->seq);
}

/*
 * Walks each rail's FIFO from the oldest transmission: drops entries that
 * were acked or superseded, declares lost those with RN_REORDER_THRESH later
 * packets on the same rail acked, or older than the rail's RTO.
 */
void rn_conn_detect_losses(rn_conn *c, uint64_t now_ns)
{
	for (int k = 0; k < c->npaths; k++) {
		rn_rail *r = &c->rail[k];
		uint64_t rto = rn_conn_rail_rto(c, k);
		int timed_out = 0;

		while (r->fhead != r->ftail) {
			rn_txrec *t = &r->fifo[r->fhead & r->fmask];
			rn_sslot *s;

			if (!txrec_live(c, k, t)) {
				r->fhead++;
				continue;
			}
			s = rn_sndq_slot(&c->sq, t->seq);
			/* acked_idx is one past the highest index acked: idx + THRESH acked */
			if (rn_seq_lt(t->idx + RN_REORDER_THRESH, r->acked_idx)) {
				/* later packets on this rail arrived: lost */
			} else if (now_ns - (s->sent_ns > r->last_ack_ns ? s->sent_ns : r->last_ack_ns) >=
				   rto) {
				/* nothing acked on this rail for an RTO since it was sent */
				timed_out = 1;
			} else {
				break;
			}
			declare_lost(c, k, t, 1, now_ns);
			r->fhead++;
		}
		if (timed_out) {
			r->rto_backoff++;
			c->st.rto_events++;
		}
	}
}

/* Rail k stopped carrying traffic: everything in flight on it is lost. */
void rn_conn_lose_rail(rn_conn *c, int k, uint64_t now_ns)
{
	rn_rail *r = &c->rail[k];

	for (; r->fhead != r->ftail; r->fhead++) {
		rn_txrec *t = &r->fifo[r->fhead & r->fmask];

		if (txrec_live(c, k, t))
			declare_lost(c, k, t, 0, now_ns);
	}
	r->inflight = 0;
	r->bundle_lost = 0;
}

