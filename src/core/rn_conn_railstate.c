/*
 * rn_conn_railstate.c - a connection's rails going up and down: the
 * verdicts of both directions, what the driver reports (send errors,
 * addresses and links gone and back) and the events they make.
 */
#include <stddef.h>
#include <string.h>

#include "rn_conn.h"
#include "rn_seq.h"

/* Records a rail's state change and emits an event when "usable both ways" flips. */
static void rail_changed(rn_conn *c, int k, int was_up, rn_cause cause, uint64_t now_ns)
{
	rn_rail *r = &c->rail[k];
	int is_up = r->rx_up && rn_rail_tx_up(r);

	r->st.last_cause = cause;
	r->st.last_change_ns = now_ns;
	if (was_up == is_up)
		return;
	if (is_up)
		r->st.up_events++;
	else
		r->st.down_events++;
	rn_conn_emit(c, is_up ? RN_EV_RAIL_UP : RN_EV_RAIL_DOWN, now_ns, k, cause, 0);
}

/*
 * 1 ms: a padded heartbeat and the small one sent right after it on the same
 * rail arrive microseconds apart; if the padded one came, it came this
 * recently.
 */
#define RN_TWIN_NS UINT64_C(1000000)

/* Rail k went down as an MTU black hole: counted, with the size that still got through. */
static void note_mtu_hole(rn_conn *c, int k)
{
	rn_rail *r = &c->rail[k];

	r->mtu_hole = 1;
	r->st.mtu_holes++;
	r->st.small_ok = r->small_max + (c->cfg.keyed ? RN_AEAD_OVERHEAD : 0);
}

void rn_conn_on_small_heartbeat(rn_conn *c, int k, uint64_t now_ns)
{
	rn_rail *r = &c->rail[k];

	if (r->rx_up || r->mtu_hole)
		return;
	/* its padded twin went just before it on the same rail: if it came, it came just now */
	if (now_ns - r->last_full_rx_ns < RN_TWIN_NS) {
		r->small_alone = 0;
		return;
	}
	if (++r->small_alone < 2)
		return;
	note_mtu_hole(c, k);
	r->st.last_cause = RN_CAUSE_RX_SIZE;
	r->st.last_change_ns = now_ns;
	rn_conn_emit(c, RN_EV_RAIL_DOWN, now_ns, k, RN_CAUSE_RX_SIZE, 0);
}

void rn_conn_set_rx(rn_conn *c, int k, int up, rn_cause cause, uint64_t now_ns)
{
	rn_rail *r = &c->rail[k];
	int was_up = r->rx_up && rn_rail_tx_up(r);

	if (r->rx_up == up)
		return;
	r->rx_up = (uint8_t)up;
	if (up)
		r->grace_until_ns = now_ns + 4 * rn_conn_rtt_estimate(c) + 10000000;
	r->small_alone = 0;
	r->mtu_hole = 0;
	if (!up && cause == RN_CAUSE_RX_SIZE) {
		note_mtu_hole(c, k);
		/* already down the other way: no RAIL_DOWN below, but this one is news */
		if (!was_up)
			rn_conn_emit(c, RN_EV_RAIL_DOWN, now_ns, k, RN_CAUSE_RX_SIZE, 0);
	}
	/* tell the peer at once, then until it acknowledges */
	c->link.version++;
	c->link.pending = rn_conn_paths_mask(c);
	rn_timer_on_link_state_changed(c, now_ns);
	rail_changed(c, k, was_up, cause, now_ns);
	rn_peer_on_verdict(c, k);
	/* it carries the peer's packets again but not ours: a heartbeat shows the peer now */
	if (up && !rn_rail_tx_up(r))
		rn_timer_on_rail_back(c, now_ns);
}

void rn_conn_take_rx(rn_conn *c, int k, int up, uint64_t now_ns)
{
	rn_rail *r = &c->rail[k];
	int was_up = r->rx_up && rn_rail_tx_up(r);

	r->rx_up = (uint8_t)up;
	if (up)
		r->grace_until_ns = now_ns + 4 * rn_conn_rtt_estimate(c) + 10000000;
	r->suspect = 0;
	r->small_alone = 0;
	r->mtu_hole = 0;
	rail_changed(c, k, was_up, RN_CAUSE_SHARED, now_ns);
}

void rn_conn_set_tx(rn_conn *c, int k, int peer_up, int local_err, rn_cause cause,
		    uint64_t now_ns)
{
	rn_rail *r = &c->rail[k];
	int was_up = r->rx_up && rn_rail_tx_up(r);
	int was_tx = rn_rail_tx_up(r);

	r->peer_up = (uint8_t)peer_up;
	r->local_err = (uint8_t)local_err;
	rn_peer_on_verdict(c, k);
	if (was_tx == rn_rail_tx_up(r))
		return;
	if (was_tx) {
		/* stop using it at once: what is in flight there is lost */
		rn_conn_lose_rail(c, k, now_ns);
		rn_timer_on_rail_tx_down(c, now_ns);
	}
	rail_changed(c, k, was_up, cause, now_ns);
}

void rn_conn_rail_error(rn_conn *c, uint64_t now_ns, int local_rail)
{
	RN_OWNED(c);
	for (int k = 0; k < c->npaths; k++)
		if (c->rail[k].local_rail == local_rail && !c->rail[k].local_err)
			rn_conn_set_tx(c, k, c->rail[k].peer_up, 1, RN_CAUSE_LOCAL, now_ns);
}

void rn_conn_rail_gone(rn_conn *c, uint64_t now_ns, int local_rail, rn_cause cause)
{
	RN_OWNED(c);
	for (int k = 0; k < c->npaths; k++)
		if (c->rail[k].local_rail == local_rail && !c->rail[k].local_err)
			rn_conn_set_tx(c, k, c->rail[k].peer_up, 1, cause, now_ns);
}

void rn_conn_rail_back(rn_conn *c, uint64_t now_ns, int local_rail, rn_cause cause)
{
	int any = 0;

	RN_OWNED(c);
	for (int k = 0; k < c->npaths; k++) {
		if (c->rail[k].local_rail != local_rail)
			continue;
		any = 1;
		if (c->rail[k].local_err)
			rn_conn_set_tx(c, k, c->rail[k].peer_up, 0, cause, now_ns);
	}
	/* the peer judged the rail dead meanwhile: show it the rail lives, now */
	if (any)
		rn_timer_on_rail_back(c, now_ns);
}

void rn_conn_refused(rn_conn *c, uint64_t now_ns)
{
	RN_OWNED(c);
	/* ICMP can be forged, so it only counts before the peer has answered */
	if (c->state == RN_ST_INIT_SENT)
		rn_conn_fail(c, now_ns, RN_ERR_REFUSED);
}

