/*
 * rn_conn_recv.c - datagrams in: validation, receive counting per rail,
 * DATA into the reorder ring, and the client side of the handshake.  What
 * ACKs acknowledge and show lost is rn_conn_ack.c's.
 */
#include <string.h>

#include "rn_bits.h"
#include "rn_conn.h"
#include "rn_seq.h"

static int drop(rn_conn *c, rn_drop why)
{
	c->st.drops[why]++;
	return RN_ERR_DROP;
}

/* ---- receive counting: the failure detector (paper 3.3.3) ---- */

/*
 * A rail judged by count must also have been silent for twice the longest
 * gap it showed while healthy over the last second or two, within these
 * bounds: on a loaded host, timers and queues can hold a healthy rail for a
 * few ms, and a black hole must still be found within a few ms where rails
 * are steady.  A rail that showed gaps of 10-100 ms while healthy (several
 * flows sharing shaped rails on a host with more runnable threads than
 * cores, under a sanitizer) cannot be judged in less without failing it
 * falsely: there the bound is 40 ms.
 */
#define RN_FAIL_SILENCE_MIN_NS UINT64_C(2000000)
#define RN_FAIL_SILENCE_MAX_NS UINT64_C(40000000)
#define RN_GAP_PERIOD_NS UINT64_C(1000000000)
/*
 * A rail that brought small datagrams but nothing full-size is judged after
 * twice the longest gap between full-size ones it showed while healthy over
 * the last second or two, within these bounds: the sender pads a keepalive
 * every 1.5 ms (RN_FULL_EVIDENCE_NS) on a rail carrying only small ones, but
 * that one may wait behind a queue of ACKs, and a shaper's queue on a real
 * rail (tbf, 20 ms) stretches the gaps it was sent with.  Gaps longer than
 * the upper bound are pauses of the stream, not learned.
 */
#define RN_SIZE_SILENCE_MIN_NS UINT64_C(4000000)
#define RN_SIZE_SILENCE_MAX_NS UINT64_C(30000000)

static uint64_t silence_needed(const rn_rail *r)
{
	uint64_t g = 2 * (r->gap_cur_ns > r->gap_prev_ns ? r->gap_cur_ns : r->gap_prev_ns);

	return g < RN_FAIL_SILENCE_MIN_NS ? RN_FAIL_SILENCE_MIN_NS :
	       g > RN_FAIL_SILENCE_MAX_NS ? RN_FAIL_SILENCE_MAX_NS : g;
}

/*
 * Whether the peer sent, on other rails, packets stamped at least span_ns
 * after the last one (last_ts, its clock, us) that came on this rail:
 * silence in its own clock too.  Arrival times alone mislead when the
 * sender is held off the CPU between handing one rail its datagrams and the
 * next (on a loaded host: 8-90 ms between rails' packets of one batch, same
 * send time, no packet lost).  A black hole swallows packets the peer goes
 * on stamping with its clock, so it is judged as soon as before.  The size
 * verdict asks it of the last full-size datagram.
 */
static int sent_since(const rn_conn *c, uint64_t last_rx_ns, uint32_t last_ts, uint64_t span_ns)
{
	return !last_rx_ns || /* nothing came on it yet */
	       (int32_t)(c->fresh.ts_max - last_ts) >= (int32_t)(span_ns / 1000);
}

/*
 * The same for size: the peer stamped full-size datagrams on other rails at
 * least span_ns after the last full-size one that came on this rail.  At the
 * end of a stream the peer's last full-size datagrams may all go on one rail
 * while this one brings ACKs: that is no MTU black hole, and no full-size
 * datagram was sent later than the padded keepalive this rail last brought.
 */
static int sent_full_since(const rn_conn *c, const rn_rail *r, uint64_t span_ns)
{
	return !r->last_full_rx_ns ||
	       (int32_t)(c->fresh.full_ts_max - r->last_full_rx_ts) >= (int32_t)(span_ns / 1000);
}

static uint64_t size_silence_needed(const rn_rail *r)
{
	uint64_t g = 2 * (r->gap_full_cur_ns > r->gap_full_prev_ns ? r->gap_full_cur_ns :
								      r->gap_full_prev_ns);

	return g < RN_SIZE_SILENCE_MIN_NS ? RN_SIZE_SILENCE_MIN_NS :
	       g > RN_SIZE_SILENCE_MAX_NS ? RN_SIZE_SILENCE_MAX_NS : g;
}

/*
 * Records the gap before this packet on a working rail.  Only while
 * full-size datagrams still come: the sporadic small ones an MTU black hole
 * lets through would teach it gaps that no healthy rail has.
 */
static void note_gap(rn_rail *r, uint64_t now_ns, int full)
{
	if (!full && now_ns - r->last_full_rx_ns >= RN_FAIL_SILENCE_MIN_NS)
		return;
	if (now_ns - r->gap_since_ns >= RN_GAP_PERIOD_NS) {
		r->gap_prev_ns = r->gap_cur_ns;
		r->gap_cur_ns = 0;
		r->gap_full_prev_ns = r->gap_full_cur_ns;
		r->gap_full_cur_ns = 0;
		r->gap_since_ns = now_ns;
	}
	if (r->rx_up && now_ns - r->last_rx_ns > r->gap_cur_ns)
		r->gap_cur_ns = now_ns - r->last_rx_ns;
	if (full && r->rx_up && now_ns - r->last_full_rx_ns > r->gap_full_cur_ns &&
	    now_ns - r->last_full_rx_ns <= RN_SIZE_SILENCE_MAX_NS)
		r->gap_full_cur_ns = now_ns - r->last_full_rx_ns;
}

/*
 * Every fail_window packets received, a working rail that brought fewer than
 * fail_min of them has failed.  The sender stripes round robin (and sends a
 * keepalive on any rail it passes over for a while), so a healthy rail
 * brings its share; a silent black hole brings none.  Guards keep a healthy
 * rail from being judged by a skewed sample: it must fall short in two
 * windows in a row and have been silent for longer than it ever is when
 * healthy (silence_needed: a receiver descheduled for a few ms on a busy
 * host, or a shaper's timer running late, skews one window of 100 but not
 * two and that long, in our arrival times and in the sender's clock:
 * sent_since), and a rail that just came back is left alone until the
 * sender has had a round trip to use it.
 *
 * The verdict waits for the next rn_conn_on_timer (due at once): a driver
 * reads its rails' sockets one after the other, so the window may fill from
 * a batch of one rail while packets of another already wait in its socket.
 * A packet on the suspect rail before the timer call clears it.
 */
/*
 * The same count judges size: in a window where most datagrams were full
 * size (a stream), a working rail that brought fewer than fail_min full-size
 * ones while it still brought small ones (ACKs, short writes) loses what the
 * others carry: an MTU black hole.  Its verdict is RN_CAUSE_RX_SIZE.
 */
static void evaluate_window(rn_conn *c, uint64_t now_ns)
{
	int sized = c->win.full_total >= c->cfg.fail_window / 2;

	for (int k = 0; k < c->npaths; k++) {
		rn_rail *r = &c->rail[k];
		int by_count = r->win_rx < c->cfg.fail_min;
		int by_size = !by_count && sized && r->win_full < c->cfg.fail_min;
		/* while full-size traffic is due, silence is counted in full-size datagrams */
		uint64_t quiet = now_ns - (sized ? r->last_full_rx_ns : r->last_rx_ns);

		if (sized && r->last_rx_ns > r->last_full_rx_ns && quiet < size_silence_needed(r))
			quiet = 0;
		if (r->rx_up && now_ns >= r->grace_until_ns && (by_count || by_size) &&
		    r->win_short && quiet >= silence_needed(r) &&
		    sent_since(c, sized ? r->last_full_rx_ns : r->last_rx_ns,
			       sized ? r->last_full_rx_ts : r->last_rx_ts, silence_needed(r)) &&
		    (!by_size || sent_full_since(c, r, silence_needed(r))) &&
		    !r->suspect) {
			/* an MTU black hole if small ones came since the last full one */
			r->suspect = by_size && r->last_rx_ns > r->last_full_rx_ns ? 2 : 1;
			r->suspect_ns = now_ns;
		}
		r->win_short = (uint8_t)(by_count || by_size);
		r->win_rx = 0;
		r->win_full = 0;
	}
	c->win.total = 0;
	c->win.full_total = 0;
}

/*
 * Counts a datagram of len bytes (its tag removed) on rail k.  Only a
 * full-size one (the peer's full DATA packets, its zero-padded heartbeats
 * and keepalives: all exactly c->dgram) is evidence that the rail carries
 * what we would send on it: only that brings a failed rail back and clears
 * a size suspicion.  Any datagram still keeps the count rule's verdict
 * (by_count) and the silence deadline (rn_timer.c) away.
 */
static void count_rx(rn_conn *c, int k, uint64_t now_ns, size_t len)
{
	rn_rail *r = &c->rail[k];
	int full = len >= c->dgram;

	r->st.rx_packets++;
	r->st.rx_bytes += len;
	r->validated = 1; /* the peer's address on it answers: it may carry anything */
	note_gap(r, now_ns, full);
	r->last_rx_ns = now_ns;
	if (full || r->suspect == 1)
		r->suspect = 0;
	c->live.last_rx_any_ns = now_ns;
	rn_peer_on_rx(c, k, now_ns);
	c->st.rx_packets++;
	if (r->local_err) /* the interface works again */
		rn_conn_set_tx(c, k, r->peer_up, 0, RN_CAUSE_RX_SEEN, now_ns);
	if (full) {
		r->last_full_rx_ns = now_ns;
		r->small_max = 0;
		r->win_full++;
		c->win.full_total++;
		if (!r->rx_up)
			rn_conn_set_rx(c, k, 1, RN_CAUSE_RX_SEEN, now_ns);
	} else if (len > r->small_max) {
		r->small_max = (uint32_t)len;
	}
	r->win_rx++;
	if (++c->win.total >= c->cfg.fail_window)
		evaluate_window(c, now_ns);
}

/* ---- freshness: replays count for nothing ---- */

/*
 * A datagram sent again by someone who recorded it (with the cluster key its
 * tag is still valid) must not count as a sign of life: a KEEPALIVE replayed
 * every 100 ms would keep a black-holed rail up and a dead peer alive.  Each
 * datagram carries its send time (ts, the peer's clock in us); our arrival
 * time minus it is the one-way delay plus the clocks' constant difference.
 * The smallest such offset seen is the baseline; a datagram more than
 * RN_FRESH_NS above it waited that long somewhere, which no LAN queue does
 * (8 MB of socket buffer drains in 64 ms at 1 Gbit/s) and a recording does
 * as long as it is kept.  Arrival times are the kernel's (drivers pass them),
 * so a receiver held off the CPU reads a backlog that is still fresh.  The
 * baseline follows the clocks' drift: every RN_FRESH_PERIOD_NS it becomes
 * the smallest offset of the fresh datagrams of the period (none: it stays),
 * so a replay can hold things up for at most about 2 RN_FRESH_NS after the
 * last real datagram.  A datagram as far "from the future" (a forged ts, or
 * one that spent a clock step in flight) is not fresh either and moves
 * nothing.  Should the baseline still go wrong (a peer's clock stepped, a
 * forgery without a key), a period with no fresh datagram but stale ones
 * sent later than anything ever taken (RN_FRESH_PERIOD_NS / 2 later: a live
 * sender, which no recording can be) takes those as the new baseline.
 * Without a key an on-path host can forge ts as it can forge anything; off
 * the path nobody sees a datagram to replay.
 */
#define RN_FRESH_NS UINT64_C(250000000)
#define RN_FRESH_PERIOD_NS UINT64_C(10000000000)

/* A new period: the baseline follows the fresh datagrams, or a live sender it lost. */
static void fresh_rotate(rn_conn *c, uint64_t now_ns)
{
	if (c->fresh.seen)
		c->fresh.base = c->fresh.min;
	else if (c->fresh.stale_seen &&
		 (int32_t)(c->fresh.stale_ts_hi - c->fresh.ts_max) >= (int32_t)(RN_FRESH_PERIOD_NS / 2000)) {
		c->fresh.base = c->fresh.stale_min;
		c->fresh.ts_max = c->fresh.stale_ts_hi;
	}
	c->fresh.seen = 0;
	c->fresh.stale_seen = 0;
	c->fresh.since_ns = now_ns;
}

static int fresh(rn_conn *c, uint32_t ts, uint64_t now_ns)
{
	const int32_t bound = (int32_t)(RN_FRESH_NS / 1000);
	uint32_t off = rn_now_us(now_ns) - ts;
	int32_t age;

	if (!c->fresh.valid) {
		c->fresh.valid = 1;
		c->fresh.base = c->fresh.min = off;
		c->fresh.ts_max = ts;
		c->fresh.seen = 1;
		c->fresh.since_ns = now_ns;
		return 1;
	}
	if (now_ns - c->fresh.since_ns >= RN_FRESH_PERIOD_NS)
		fresh_rotate(c, now_ns);
	age = (int32_t)(off - c->fresh.base);
	if (age > bound || age < -bound) {
		if (!c->fresh.stale_seen || (int32_t)(off - c->fresh.stale_min) < 0)
			c->fresh.stale_min = off;
		if (!c->fresh.stale_seen || (int32_t)(ts - c->fresh.stale_ts_hi) > 0)
			c->fresh.stale_ts_hi = ts;
		c->fresh.stale_seen = 1;
		return 0;
	}
	if (age < 0)
		c->fresh.base = off;
	if (!c->fresh.seen || (int32_t)(off - c->fresh.min) < 0)
		c->fresh.min = off;
	if ((int32_t)(ts - c->fresh.ts_max) > 0)
		c->fresh.ts_max = ts;
	c->fresh.seen = 1;
	return 1;
}

/* ---- packet types ---- */

/*
 * An ACK is owed.  It waits for ack_every packets or ack_delay, or, while
 * the connection answers what it receives (it sent DATA since the DATA
 * before this arrived: requests and responses), the longer ack_delay_pp:
 * the answer usually goes first and carries it, instead of an ACK of its
 * own on each side (TCP's delayed ACK in its ping-pong mode does the same).
 * A server's first DATA (first), before it sent any, is a request too: a
 * connection made to carry one (a web request with Connection: close)
 * usually answers within a few hundred microseconds, so its ACK waits
 * RN_FIRST_ANSWER_NS for the answer to carry it: one datagram fewer of
 * five.  Short enough for what the client allows without knowing (its
 * RTO, at least rto_min, plus ack_delay; a primary rail counts as stalled
 * after 4 ms unacknowledged, rn_timer.c), so nothing is resent for it.
 */
#define RN_FIRST_ANSWER_NS UINT64_C(2000000)
/* 10 ms: the most a copy lags its twin on another rail (queues of rails under load) */
#define RN_COPY_LAG_NS UINT64_C(10000000)

static void owe_ack(rn_conn *c, uint64_t now_ns, int now, int first)
{
	if (!c->ack.pending) {
		int answering = c->ack.data_tx_ns && c->ack.data_tx_ns >= c->ack.data_rx_ns;
		uint64_t pp = rn_conn_hold_limit(&c->cfg, c->ack.held_us), wait = c->cfg.ack_delay_ns;
		uint64_t fa = c->cfg.rto_min_ns / 2 < RN_FIRST_ANSWER_NS ? c->cfg.rto_min_ns / 2
									 : RN_FIRST_ANSWER_NS;

		c->ack.first_ns = now_ns;
		c->ack.pp = answering && pp > c->cfg.ack_delay_ns;
		if (c->ack.pp)
			wait = pp;
		else if (first && fa > wait)
			wait = fa;
		rn_timer_on_ack_owed(c, now_ns, wait);
	}
	c->ack.pending = 1;
	if (++c->ack.unacked >= c->cfg.ack_every || now)
		c->ack.now = 1;
}

static int recv_data(rn_conn *c, const rn_pkt *p, uint64_t now_ns);

/*
 * A DATA of several packets (RN_F_MULTI): each (u16 length, bytes) in turn
 * at seq, seq + 1, ...  The lengths must be nonzero and fill the payload
 * exactly, or nothing of it is stored.  Returns what the last packet gave.
 */
static int recv_multi(rn_conn *c, const rn_pkt *p, uint64_t now_ns)
{
	const uint8_t *d, *end = p->payload + p->len;
	rn_pkt one = *p;
	int rc = 0;

	for (d = p->payload; d < end; d += RN_MULTI_HDR + rn_get16(d))
		if (end - d < RN_MULTI_HDR || rn_get16(d) == 0 ||
		    rn_get16(d) > end - d - RN_MULTI_HDR)
			return drop(c, RN_DROP_MALFORMED);
	one.flags &= (uint8_t)~RN_F_MULTI;
	for (d = p->payload; d < end; d += RN_MULTI_HDR + one.len, one.seq++) {
		one.len = rn_get16(d);
		one.payload = d + RN_MULTI_HDR;
		rc = recv_data(c, &one, now_ns);
	}
	return rc;
}

static int recv_data(rn_conn *c, const rn_pkt *p, uint64_t now_ns)
{
	int fin = (p->flags & RN_F_FIN) != 0;
	int rc;

	if (c->state != RN_ST_ESTABLISHED && c->state != RN_ST_LINGER)
		return drop(c, RN_DROP_STATE);
	if (p->flags & RN_F_MULTI)
		return recv_multi(c, p, now_ns);
	/* a ring may not grow past the receive pool (rn_core.h): sent again later */
	rc = rn_conn_pool_room(c, p->seq) ? rn_rob_insert(&c->rq, p->seq, p->payload, p->len, fin)
					  : RN_ROB_NOMEM;
	rn_conn_pool_account(c);
	switch (rc) {
	case RN_ROB_NEW:
		if (!fin)
			rn_conn_pool_join(c);
		c->live.last_data_ns = now_ns;
		if (p->len) /* a bare FIN leaves the pace alone (rn_conn_send.c) */
			rn_conn_note_payload(c, now_ns);
		owe_ack(c, now_ns, 0, !c->is_client && !c->ack.data_rx_ns && !c->ack.data_tx_ns);
		c->ack.data_rx_ns = now_ns;
		c->ack.last_new_seq = p->seq;
		rn_conn_check_close(c, now_ns);
		return 0;
	case RN_ROB_DUP:
		c->st.dup_data++;
		/*
		 * A resend counts as traffic at its sender (rn_conn_send.c): the
		 * same here, or a peer resending into our idleness keeps its rail
		 * judges at the active pace while ours are at the idle one.
		 */
		if (p->len)
			rn_conn_note_payload(c, now_ns);
		/*
		 * The sender resent something we have: tell it at once.  Not for
		 * the redundant twin of the newest packet right behind it (a small
		 * write sent on two rails, RI2N_REDUNDANT_BYTES, marked COPY): the
		 * first one's ACK says it all, and one more would double the
		 * datagrams of a request/response.  A resend is never marked: a
		 * sender that resends is waiting for this ACK.
		 */
		if (!(p->flags & RN_F_COPY) || p->seq != c->ack.last_new_seq ||
		    now_ns - c->ack.data_rx_ns >= RN_COPY_LAG_NS)
			owe_ack(c, now_ns, 1, 0);
		return drop(c, RN_DROP_DUPLICATE);
	case RN_ROB_OUT:
		return drop(c, RN_DROP_WINDOW);
	case RN_ROB_NOMEM:
		/* not stored: the sender finds it missing from our SACKs and resends it */
		return drop(c, RN_DROP_NOMEM);
	default:
		return drop(c, RN_DROP_MALFORMED);
	}
}

static void recv_link_state(rn_conn *c, const rn_pkt *p, uint64_t now_ns)
{
	uint32_t version = rn_get32(p->payload);
	uint8_t mask = p->payload[4];

	c->link.ack_due = 1;
	c->link.ack_version = version;
	if (!rn_seq_gt(version, c->link.peer_version))
		return; /* old news, reordered */
	c->link.peer_version = version;
	for (int k = 0; k < c->npaths; k++) {
		int up = (mask >> k) & 1;

		if (up != c->rail[k].peer_up)
			rn_conn_set_tx(c, k, up, c->rail[k].local_err, RN_CAUSE_PEER, now_ns);
	}
}

/* Client handshake.  Returns 1 when the packet should go on as established traffic. */
static int recv_handshake(rn_conn *c, const rn_pkt *p, int local_rail, rn_addr from,
			  uint64_t now_ns)
{
	rn_hello h;
	int rc;

	if (p->type == RN_PT_INIT_ACK) {
		if (c->state != RN_ST_INIT_SENT)
			return drop(c, RN_DROP_STATE); /* duplicate */
		if (local_rail != c->hs.rail || !rn_addr_eq(from, c->peer))
			return drop(c, RN_DROP_SOURCE);
		if (rn_wire_read_hello(&h, p->payload, p->len, 1))
			return drop(c, RN_DROP_MALFORMED);
		c->peer_id = h.id;
		c->hs.peer_isn = h.isn;
		c->peer_slots = h.slots;
		c->dgram = h.max_dgram < c->cfg.max_dgram ? h.max_dgram : c->cfg.max_dgram;
		memcpy(c->hs.cookie, h.cookie, RN_COOKIE_LEN);
		rc = rn_conn_setup_paths(c, c->local, c->nlocal, h.rails, h.nrails, now_ns);
		if (rc) {
			rn_conn_fail(c, now_ns, rc == RN_ERR_NOROUTE ? RN_ERR_UNREACH : RN_ERR_NOSPACE);
			return RN_ERR_DROP;
		}
		c->rtt_ns = now_ns - c->hs.start_ns; /* resends make it long: bounded */
		if (c->rtt_ns > RN_RTO_MAX_NS)
			c->rtt_ns = RN_RTO_MAX_NS;
		rn_conn_move(c, RN_ST_COOKIE_SENT);
		rc = rn_conn_early_restore(c);
		if (rc) {
			rn_conn_fail(c, now_ns, rc);
			return RN_ERR_DROP;
		}
		c->hs.due = 1;
		c->hs.tries = 0;
		rn_timer_on_cookie(c, now_ns);
		c->live.last_rx_any_ns = now_ns;
		rn_conn_emit(c, RN_EV_ANSWERED, now_ns, -1, RN_CAUSE_NONE, 0);
		return 0;
	}
	if (c->state != RN_ST_COOKIE_SENT)
		return drop(c, RN_DROP_STATE);
	/*
	 * COOKIE_ACK, or any traffic of an established server (whose COOKIE_ACK
	 * was lost): established.  Rail and source are checked by the caller.
	 */
	return 1;
}

static void establish(rn_conn *c, uint64_t now_ns)
{
	rn_conn_move(c, RN_ST_ESTABLISHED);
	c->st.established_ns = now_ns;
	c->hs.due = 0;
	/* a long wait in the listener's queue is not silence on the rails */
	c->live.last_rx_any_ns = now_ns;
	for (int k = 0; k < c->npaths; k++) {
		c->rail[k].last_rx_ns = c->rail[k].last_tx_ns = now_ns;
		c->rail[k].last_full_rx_ns = c->rail[k].last_full_tx_ns = now_ns;
	}
	rn_conn_emit(c, RN_EV_ESTABLISHED, now_ns, -1, RN_CAUSE_NONE, 0);
}

/*
 * A stateless reset (rn_listen.c): the peer no longer knows the id we send
 * to.  It is ours when it names our peer's id and comes from the peer's
 * address on that rail; drivers may offer it to every connection of a port.
 */
static int recv_sreset(rn_conn *c, const rn_pkt *p, int local_rail, rn_addr from,
		       uint64_t now_ns)
{
	int ours = 0;

	if (c->peer_id == 0 || rn_get64(p->payload) != c->peer_id)
		return drop(c, RN_DROP_UNKNOWN_CONN);
	for (int k = 0; k < c->npaths; k++)
		if (c->rail[k].local_rail == local_rail && rn_addr_eq(from, c->rail[k].remote))
			ours = 1;
	if (c->state == RN_ST_COOKIE_SENT && local_rail == c->hs.rail && rn_addr_eq(from, c->peer))
		ours = 1;
	if (!ours)
		return drop(c, RN_DROP_SOURCE);
	if (c->state != RN_ST_ESTABLISHED && c->state != RN_ST_COOKIE_SENT)
		return drop(c, RN_DROP_STATE); /* closed cleanly: the peer may forget us */
	c->st.sresets++;
	/* the peer forgot us after its linger: it took our bytes and sent its FIN */
	if (rn_conn_last_ack(c)) {
		rn_conn_end_closed(c, now_ns);
		return 0;
	}
	/* before the COOKIE_ACK: the listener would not take us (out of its budget) */
	rn_conn_fail(c, now_ns, c->state == RN_ST_COOKIE_SENT ? RN_ERR_REFUSED : RN_ERR_RESET);
	return 0;
}

/*
 * Keyed: checks a datagram's tag and opens it (*pkt then points at the plain
 * datagram in c->plain).  Returns its plain length or -(1 + rn_drop).
 */
static ssize_t open_keyed(rn_conn *c, const uint8_t **pkt, size_t len, rn_addr from)
{
	ssize_t n;

	if (len >= RN_HDR_LEN && !rn_wire_cluster_sealed((*pkt)[1])) {
		if (!c->cr) /* sealed under keys the handshake has not given us yet */
			return -(1 + RN_DROP_AUTH);
		n = rn_crypt_open(c->cr, *pkt, len, c->plain, c->plain_cap);
		if (n >= 0)
			*pkt = c->plain;
		return n;
	}
	if (len >= RN_HDR_LEN && (*pkt)[1] == RN_PT_SRESET) /* its tag names the sender */
		n = rn_wire_open_reset(*pkt, len, c->cfg.key, from);
	else
		n = rn_wire_open(*pkt, len, c->cfg.key, rn_config_seal_mode(&c->cfg));
	return n < 0 ? -(1 + RN_DROP_AUTH) : n;
}

int rn_conn_recv(rn_conn *c, uint64_t now_ns, int local_rail, rn_addr from,
		 const uint8_t *pkt, size_t len)
{
	rn_pkt p;
	rn_rail *r;
	uint64_t named = rn_wire_peek_sreset(pkt, len);
	int rc, moved;

	RN_OWNED(c);
	/*
	 * Drivers offer a stateless reset to every connection of a port: the
	 * others leave it here after one comparison, uncounted (the driver
	 * counts one nobody took).
	 */
	if (named && named != c->peer_id)
		return RN_ERR_DROP;
	if (c->cfg.keyed) {
		ssize_t n = open_keyed(c, &pkt, len, from);

		if (n < 0)
			return drop(c, (rn_drop)(-n - 1));
		len = (size_t)n;
	}
	rc = rn_wire_decode(&p, pkt, len);
	if (rc)
		return drop(c, (rn_drop)(-rc - 1));
	if (p.type == RN_PT_SRESET)
		return recv_sreset(c, &p, local_rail, from, now_ns);
	if (p.dst != c->id)
		return drop(c, RN_DROP_UNKNOWN_CONN);
	if (c->state == RN_ST_CLOSED)
		return drop(c, RN_DROP_STATE);
	rn_peer_sync(c, now_ns); /* judge it with what the other members learnt */
	if (p.type == RN_PT_INIT || (p.type == RN_PT_INIT_ACK && c->state != RN_ST_INIT_SENT))
		return drop(c, RN_DROP_TYPE);
	if (c->state == RN_ST_INIT_SENT || c->state == RN_ST_COOKIE_SENT) {
		rc = recv_handshake(c, &p, local_rail, from, now_ns);
		if (rc != 1)
			return rc;
	}
	if (p.path >= c->npaths)
		return drop(c, RN_DROP_SOURCE);
	r = &c->rail[p.path];
	moved = !rn_addr_eq(from, r->remote);
	if (r->local_rail != local_rail || (moved && p.type != RN_PT_RAILS))
		return drop(c, RN_DROP_SOURCE);
	if ((p.flags & RN_F_ACK) && !rn_conn_ack_valid(c, &p))
		return drop(c, RN_DROP_WINDOW);
	/* before anything is counted or acted on: a recording proves nothing */
	if (!fresh(c, p.ts, now_ns))
		return drop(c, RN_DROP_REPLAY);
	/*
	 * From elsewhere (a RAILS, else dropped above): taken if it moves the path
	 * there (the peer's sockets all changed at once: a connection handed
	 * to another process, docs/PROTOCOL.md), which nothing from the old
	 * address could announce.
	 */
	if (moved) {
		rn_addr was[RN_MAX_RAILS];
		uint32_t gone = 0;

		for (int k = 0; k < c->npaths; k++)
			was[k] = c->rail[k].remote;
		rn_conn_recv_rails(c, &p, now_ns);
		if (!rn_addr_eq(from, r->remote))
			return drop(c, RN_DROP_SOURCE);
		/* the peer is there, it said so from there: no heartbeat need prove it */
		for (int k = 0; k < c->npaths; k++)
			if (!rn_addr_eq(was[k], c->rail[k].remote))
				gone |= 1u << k;
		c->probe.hb_pending &= ~gone;
	}
	if (c->state == RN_ST_COOKIE_SENT)
		establish(c, now_ns);

	r->last_rx_ts = p.ts;
	if (len >= c->dgram) {
		r->last_full_rx_ts = p.ts;
		if (!c->fresh.full_ts_max || (int32_t)(p.ts - c->fresh.full_ts_max) > 0)
			c->fresh.full_ts_max = p.ts;
	}
	count_rx(c, p.path, now_ns, len);
	c->ack.echo[p.path].ts = p.ts;
	c->ack.echo[p.path].rx_us = rn_now_us(now_ns);
	c->ack.echo[p.path].valid = 1;
	if (p.flags & RN_F_ACK)
		rn_conn_recv_ack(c, &p, now_ns);

	switch (p.type) {
	case RN_PT_DATA:
		r->st.rx_data++;
		rc = recv_data(c, &p, now_ns);
		break;
	case RN_PT_LINK_STATE:
		recv_link_state(c, &p, now_ns);
		rc = 0;
		break;
	case RN_PT_LINK_ACK:
		if (rn_get32(p.payload) == c->link.version)
			c->link.acked = c->link.version;
		rc = 0;
		break;
	case RN_PT_RAILS:
		rn_conn_recv_rails(c, &p, now_ns);
		rc = 0;
		break;
	case RN_PT_RAILS_ACK:
		rn_conn_recv_rails_ack(c, &p);
		rc = 0;
		break;
	case RN_PT_RESET:
		/* as TCP's RST in LAST_ACK: nothing is lost, both sides had closed */
		if (rn_conn_last_ack(c))
			rn_conn_end_closed(c, now_ns);
		else
			rn_conn_fail(c, now_ns, RN_ERR_RESET);
		rc = 0;
		break;
	case RN_PT_COOKIE_ECHO:
		/* our COOKIE_ACK was lost: say it again */
		if (!c->is_client)
			c->hs.cookie_ack_due = 1;
		rc = 0;
		break;
	case RN_PT_HEARTBEAT:
		if (len < c->dgram)
			rn_conn_on_small_heartbeat(c, p.path, now_ns);
		rc = 0;
		break;
	case RN_PT_PROBE:
		/* answered on its own rail: the size got through there (one answer owed at a time) */
		r->pm_ack_id = rn_get32(p.payload);
		r->pm_ack_size = (uint32_t)len;
		c->probe.pm_ack_pending |= 1u << p.path;
		rc = 0;
		break;
	case RN_PT_PROBE_ACK:
		rn_pmtu_on_ack(&r->pm, rn_get32(p.payload), rn_get32(p.payload + 4), now_ns);
		rc = 0;
		break;
	default: /* ACK, COOKIE_ACK, KEEPALIVE: counted above */
		rc = 0;
		break;
	}
	rn_conn_check_close(c, now_ns);
	return rc;
}
