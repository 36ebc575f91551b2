/*
 * rn_timer.c - every timer of a connection, in one place.
 *
 * The driver arms a single timer at rn_conn_expiry(), the earliest of the
 * deadlines rn_conn_deadlines() lists (one per rn_timer_id, rn_core.h), and
 * calls rn_conn_on_timer() when it passes.  Timers that events arm keep
 * their deadline in c->timer[], set only by the hooks below, each named
 * after its event (rn_timer_on_connect, _on_ack_owed, _on_closed, ...); the
 * others follow from the connection's state.  The timers (defaults in
 * rn_knob_list.h):
 *
 *   handshake     INIT / COOKIE_ECHO resent at 250 ms, doubling to 2 s;
 *                 a cookie 5 s old (a full accept queue kept dropping the
 *                 COOKIE_ECHO) is dropped for a fresh INIT, as the
 *                 listener's lasts 10 s; the connect fails after
 *                 connect_timeout (30 s).
 *   ack delay     an owed ACK goes out at most ack_delay (200 us) after the
 *                 first packet it covers, if ack_every packets did not
 *                 trigger it first: few ACKs under load, prompt ones when idle.
 *   loss (RTO)    per rail: the oldest packet in flight on a rail is lost
 *                 once nothing sent on the rail was acked for the rail's
 *                 RTO since it was sent (srtt + 4 rttvar, at least rto_min
 *                 20 ms, doubling on repeats).  A last resort: most losses
 *                 are found by later packets on the same rail being acked.
 *   link state    our LINK_STATE is resent until acked, first after 2 RTT
 *                 (at least 5 ms), doubling up to the heartbeat period.
 *   heartbeat     while a rail is not usable for sending, a heartbeat goes
 *                 on every rail each heartbeat (100 ms; the paper's 3 s
 *                 made recovery slow): a healed rail is seen within one.
 *                 Heartbeats are zero-padded to the full datagram size, so
 *                 only a rail that carries full-size datagrams comes back;
 *                 a rail that is down also gets a small one, whose arrival
 *                 alone tells the peer it is an MTU black hole.
 *   keepalive     a working rail that carried nothing for keepalive
 *                 (100 ms) gets a KEEPALIVE, so idle rails stay judged.
 *                 (While full-size DATA streams, a rail without a
 *                 full-size datagram for 1.5 ms gets a padded one at once:
 *                 rn_conn_send.c, count_tx.)  A rail whose peer's host
 *                 answered with port unreachable has the others probed at
 *                 once (rn_conn_dead.c): a dead peer is known within a
 *                 round trip of the first answer, not a keepalive period.
 *   rail verdict  a rail the receive count judged failed (rn_conn_recv.c)
 *                 fails at the next timer call, due at once: the driver may
 *                 first hand over packets of that rail it has already read.
 *   rail silence  a rail we receive nothing on for rail_timeout (350 ms,
 *                 three keepalives and change) has failed: the count rule
 *                 needs traffic, this one covers light traffic.  Not once
 *                 the connection is closing and quiet (closing_quiet): the
 *                 peer owes it nothing then.
 *   idle pace     after RN_IDLE_NS (1 s) without DATA either way, keepalive,
 *                 rail silence and heartbeat periods are RN_IDLE_SCALE (10)
 *                 times longer: 10,000 idle connections send 20,000
 *                 keepalives a second on two rails, not 200,000.  Both ends
 *                 see the same DATA, so they slow down within a one-way
 *                 delay of each other; the first DATA restores the pace, and
 *                 rail silence then counts from that moment, so a rail last
 *                 heard from at the idle pace is not failed at once.
 *   peer monitor  a connection in a peer (rn_peer.c) counts rail silence
 *                 and the dead peer from the peer's last arrival too; a
 *                 muted member (not the keeper, owing nothing, nothing in
 *                 flight) arms no keepalive, rail silence, heartbeat or size
 *                 search: the keeper's timers keep every member's rails
 *                 judged, at the idle pace only once every member is idle
 *                 (the peer's last DATA, rn_peer_payload_ns).
 *   dead peer     nothing from the peer on any rail for dead_peer (30 s):
 *                 the connection fails with RN_ERR_TIMEDOUT.  In LAST_ACK
 *                 (rn_conn_last_ack: only our FIN's ACK missing) 3 lingers
 *                 of silence end it cleanly instead (the peer exited).
 *   linger        after a clean close in both directions the connection
 *                 stays linger (1 s) to re-acknowledge a FIN resent by a
 *                 peer that missed our ACK.  Lingering it runs no other
 *                 timer (no keepalive, rail verdict, probe or dead peer):
 *                 it only answers.  An exiting process waits only a few
 *                 RTOs of it (rn_conn_exit_linger).
 *   FIN           a bare FIN is DATA for loss recovery (resent on the RTO
 *                 like any) but not for the idle pace: a connection
 *                 closing after idleness stays at the idle pace, so a
 *                 close storm of thousands adds only its FINs and ACKs.
 *   size search   per rail (rn_pmtu.h): a PROBE is lost after the rail's
 *                 RTO; a rail below its ceiling looks for a bigger size
 *                 every 10 min; in an MTU black hole the old size is tried
 *                 every 250 ms, so it is back within 1 s of the heal.
 *   ring idle     rings grown by traffic go back to their first size once
 *                 they are empty and no DATA went either way for
 *                 RN_RING_IDLE_NS (2 s): an idle connection holds a few
 *                 pages, whatever it moved before.  Long enough that a
 *                 connection pausing between bursts keeps its rings (each
 *                 regrowth costs allocations and a copy of what they hold).
 */
#include "rn_conn.h"

#define RN_HS_FIRST_NS UINT64_C(250000000) /* 250 ms */
#define RN_HS_MAX_NS UINT64_C(2000000000)  /* 2 s */
#define RN_LS_MIN_NS UINT64_C(5000000)     /* 5 ms */
/* 2 s: an idle connection's grown rings shrink back (see the list above). */
#define RN_RING_IDLE_NS UINT64_C(2000000000)
/* 5 s: half the listener's cookie life (rn_listen.c); then a fresh INIT. */
#define RN_COOKIE_RESTART_NS UINT64_C(5000000000)

static uint64_t min64(uint64_t a, uint64_t b) { return a < b ? a : b; }
static uint64_t max64(uint64_t a, uint64_t b) { return a > b ? a : b; }

/*
 * base + period at the connection's pace: the period stretches
 * RN_IDLE_SCALE times if the connection is idle (RN_IDLE_NS without DATA)
 * by the time it would end.
 */
static uint64_t paced(const rn_conn *c, uint64_t base, uint64_t period)
{
	uint64_t t = base + period;

	return t < rn_peer_payload_ns(c) + RN_IDLE_NS ? t : base + period * RN_IDLE_SCALE;
}

/*
 * How long the peer may be silent before the dead-peer rule applies: in
 * rn_conn_last_ack (both sides closed, only our FIN's ACK missing) a peer
 * gone after acknowledging everything else ends the connection cleanly
 * after RN_LAST_ACK_LINGERS lingers of silence, or half the dead-peer
 * timeout if that is shorter: its process exited, or forgot us after its
 * linger (storms delay FIN resends past it), and nothing is lost.
 */
#define RN_LAST_ACK_LINGERS 3

static uint64_t last_ack_silence(const rn_conn *c)
{
	uint64_t t = min64(RN_LAST_ACK_LINGERS * c->cfg.linger_ns, c->cfg.dead_peer_ns / 2);

	return rn_conn_last_ack(c) ? t : c->cfg.dead_peer_ns;
}

/*
 * Whether silence at time at says nothing of the rails: we sent our FIN and
 * the peer sent its own or no DATA for RN_IDLE_NS.  The peer then owes us
 * nothing but ACKs, and its keepalives may stop (its peer monitor's keeper
 * closing too); in a close storm of thousands a busy engine sent nothing
 * on a rail for the idle pace's rail timeout (3.5 s), both ends failed
 * their rails, and the storm ended in resets.  A lost FIN is resent on the
 * RTO on another rail than the one that lost it, and the dead-peer rule
 * still bounds the wait, so such a connection needs no rail verdict.
 */
static int closing_quiet(const rn_conn *c, uint64_t at)
{
	return c->sq.fin_queued &&
	       (c->close.peer_fin_seen || at >= c->live.last_payload_ns + RN_IDLE_NS);
}

/*
 * Whether c sends no keepalive of its own at time at: a muted member, or a
 * closing, quiet one whose peer has a keeper.  Only its FIN is owed, which
 * the RTO resends; the keeper's keepalives keep the rails judged.  Without
 * this every member of a close storm sent a keepalive on every rail at
 * once (its rails had been silent while it was muted), then one a second:
 * 9,000 closing connections sent some 12 datagrams each, not 2 or 3.
 */
static int ka_muted(const rn_conn *c, uint64_t at)
{
	return rn_peer_muted(c) || (closing_quiet(c, at) && rn_peer_kept(c));
}

/*
 * When a working rail we hear nothing on has failed (also right after DATA
 * resumed, or after this process was held off: rn_timer_on_tx).
 */
static uint64_t rail_deadline(const rn_conn *c, const rn_rail *r)
{
	return max64(paced(c, max64(rn_peer_rx_ns(c, (int)(r - c->rail)), c->live.active_since_ns),
			   c->cfg.rail_timeout_ns),
		     rn_peer_judge_from_ns(c));
}

/* Whether rail r is judged silent at now_ns: rn_conn_on_timer fails it, rn_conn_verdict_pending reads first. */
static int rail_silent(const rn_conn *c, const rn_rail *r, uint64_t now_ns)
{
	uint64_t t;

	if (!r->rx_up || r->suspect || rn_peer_muted(c))
		return 0;
	t = rail_deadline(c, r);
	return now_ns >= t && !closing_quiet(c, t);
}

static int any_tx_down(const rn_conn *c)
{
	for (int k = 0; k < c->npaths; k++)
		if (!rn_rail_tx_up(&c->rail[k]))
			return 1;
	return 0;
}

/*
 * The longest the peer may hold its ACK: once DATA has come from it, the
 * connection may be a request/response exchange, where it waits up to
 * ack_delay_pp for its answer to carry the ACK (rn_conn_recv.c), or longer
 * once its answers came late (rn_conn_hold_limit).  Both ends run the same
 * defaults; a peer that waits longer costs spurious resends, never bytes.
 */
static uint64_t peer_ack_wait(const rn_conn *c)
{
	if (!c->ack.data_rx_ns)
		return c->cfg.ack_delay_ns;
	return rn_conn_hold_limit(&c->cfg, c->ack.peer_held_us);
}

/* When the oldest live transmission on rail k times out (UINT64_MAX if none); rto: the rail's. */
/*
 * Backup rails (rn_rail_addr.backup) take the data once no other rail
 * works.  A primary that silently swallows everything is not known as such
 * until the peer's verdict, and that needs traffic the peer does not get
 * (a lone primary carried it all): so a primary on which nothing was
 * acknowledged for RN_STALL_NS plus the rail's own delays (its measured
 * srtt + 4 rttvar, and the peer's ACK delay) while packets were out counts
 * as stalled, and the backups carry the data until an ACK arrives on it
 * again.  4 ms: ACKs of a stream come every few packets, far more often.
 * A stall wrongly seen only lends the backup some packets; the rail's
 * delays keep a slow peer (held off the CPU again and again: its RTTs
 * swing) from being seen as one, and the driver reads the rail sockets
 * before the verdict (rn_conn_verdict_pending), so ACKs that wait there
 * while this process was held off count.  Connections without a backup
 * rail never look.
 */
#define RN_STALL_NS UINT64_C(4000000)

static int has_backup(const rn_conn *c)
{
	for (int k = 0; k < c->npaths; k++)
		if (c->rail[k].backup)
			return 1;
	return 0;
}

/* When primary rail k stalls (UINT64_MAX: not watched, nothing out, or stalled already). */
static uint64_t stall_expiry(const rn_conn *c, int k)
{
	const rn_rail *r = &c->rail[k];
	const rn_sndq *q = &c->sq;
	uint64_t sent, wait;

	if (r->backup || r->stalled || !rn_rail_tx_up(r) || r->fhead == r->ftail ||
	    r->inflight == 0 || !has_backup(c))
		return UINT64_MAX;
	sent = q->slot[r->fifo[r->fhead & r->fmask].seq & q->mask].sent_ns;
	/* ack_every packets out: the peer answers at once, whatever it waits for otherwise */
	wait = r->inflight >= c->cfg.ack_every ? c->cfg.ack_delay_ns : peer_ack_wait(c);
	wait += r->srtt_ns + 4 * r->rttvar_ns;
	return (sent > r->last_ack_ns ? sent : r->last_ack_ns) + RN_STALL_NS + wait;
}

/*
 * A member's FIN in a close storm: the peer's engine takes the FINs of all
 * our members one after the other, so the ACK of ours may come after all
 * of theirs.  Resent on the rail's RTO (20 ms here), 9,000 FINs went out
 * 5 times each on average, and the resends kept the peer's engine busier
 * still.  So while only its FIN is unacknowledged, a member waits
 * RN_FIN_SPACING_NS more per member of its peer (what an engine spends
 * closing one connection, roughly); members leave the peer as they
 * linger, so the wait shrinks as the storm drains.  A lone connection
 * waits nothing more.
 */
#define RN_FIN_SPACING_NS UINT64_C(50000)

static uint64_t fin_wait(const rn_conn *c)
{
	const rn_peer *p = c->peer_m.p;

	if (!p || p->nmembers < 2 || !c->sq.fin_queued || c->sq.end - c->sq.una != 1)
		return 0;
	return (uint64_t)p->nmembers * RN_FIN_SPACING_NS;
}

static uint64_t loss_expiry(const rn_conn *c, int k, uint64_t rto)
{
	const rn_rail *r = &c->rail[k];
	const rn_sndq *q = &c->sq;

	if (r->fhead == r->ftail || r->inflight == 0)
		return UINT64_MAX;
	uint64_t sent = q->slot[r->fifo[r->fhead & r->fmask].seq & q->mask].sent_ns;

	/* the head may be stale; firing early just drops it and re-arms */
	return (sent > r->last_ack_ns ? sent : r->last_ack_ns) + rto + peer_ack_wait(c) + fin_wait(c);
}

/*
 * Rail k's retransmission timeout, plus the longest the peer may hold its
 * ACK (QUIC adds max_ack_delay to its probe timeout the same way).
 */
uint64_t rn_conn_rail_rto(const rn_conn *c, int k)
{
	return rn_rail_rto(&c->rail[k], &c->cfg) + peer_ack_wait(c) + fin_wait(c);
}

static const char *const timer_names[RN_TIMER__COUNT] = {
	[RN_TIMER_HANDSHAKE] = "handshake", [RN_TIMER_CONNECT] = "connect",
	[RN_TIMER_COOKIE] = "cookie", [RN_TIMER_ACK] = "ack",
	[RN_TIMER_LINK_STATE] = "link state", [RN_TIMER_HEARTBEAT] = "heartbeat",
	[RN_TIMER_LINGER] = "linger", [RN_TIMER_DEAD_PEER] = "dead peer",
	[RN_TIMER_KEEPALIVE] = "keepalive", [RN_TIMER_RAIL] = "rail",
	[RN_TIMER_LOSS] = "loss", [RN_TIMER_PMTU] = "size search",
	[RN_TIMER_RING_IDLE] = "ring idle",
};

const char *rn_timer_name(int t)
{
	return (unsigned)t < RN_TIMER__COUNT ? timer_names[t] : "?";
}

/*
 * Where deadlines go: every timer's (at, for rn_conn_deadlines) or only the
 * earliest (at NULL, for rn_conn_expiry, which every service pass asks).
 */
typedef struct dl_sink {
	uint64_t *at;
	uint64_t min;
} dl_sink;

static void arm(dl_sink *d, rn_timer_id t, uint64_t v)
{
	if (d->at)
		d->at[t] = min64(d->at[t], v);
	d->min = min64(d->min, v);
}

static void established_deadlines(const rn_conn *c, dl_sink *d)
{
	/* owed packets (ack.now, probe.*_pending) wait for a writable rail, not a timer */
	if (c->ack.pending && !c->ack.now)
		arm(d, RN_TIMER_ACK, c->timer[RN_TIMER_ACK]);
	/*
	 * Lingering, a connection only answers a resent FIN: it sends nothing
	 * of its own and judges no rail (its peer may be gone, as it may be).
	 */
	if (c->state == RN_ST_LINGER) {
		arm(d, RN_TIMER_LINGER, c->timer[RN_TIMER_LINGER]);
		return;
	}
	arm(d, RN_TIMER_DEAD_PEER, rn_peer_rx_any_ns(c) + last_ack_silence(c));
	if (c->link.acked != c->link.version || c->rails.acked != c->rails.version)
		arm(d, RN_TIMER_LINK_STATE, c->timer[RN_TIMER_LINK_STATE]);
	if (any_tx_down(c) && !rn_peer_muted(c))
		arm(d, RN_TIMER_HEARTBEAT, c->timer[RN_TIMER_HEARTBEAT]);
	/* only while there is something to give back: a failed shrink re-arms it 2 s on */
	if (rn_conn_can_shrink(c))
		arm(d, RN_TIMER_RING_IDLE, c->live.last_data_ns + RN_RING_IDLE_NS);
	for (int k = 0; k < c->npaths; k++) {
		const rn_rail *r = &c->rail[k];
		uint64_t rto, t;

		/* a muted member (rn_peer.c) leaves its rails to the peer's keeper */
		t = paced(c, rn_peer_tx_ns(c, k), c->cfg.keepalive_ns);
		if (rn_rail_tx_up(r) && !((c->probe.ka_pending >> k) & 1) && !ka_muted(c, t))
			arm(d, RN_TIMER_KEEPALIVE, t);
		t = r->suspect ? r->suspect_ns : rail_deadline(c, r);
		if (r->rx_up && !rn_peer_muted(c) && (r->suspect || !closing_quiet(c, t)))
			arm(d, RN_TIMER_RAIL, t);
		rto = rn_rail_rto(r, &c->cfg);
		arm(d, RN_TIMER_LOSS, loss_expiry(c, k, rto));
		arm(d, RN_TIMER_LOSS, stall_expiry(c, k));
		/* a probe due waits for a writable rail (pm_pending), not a timer */
		t = rn_pmtu_expiry(&r->pm, rto);
		if (c->state == RN_ST_ESTABLISHED && !((c->probe.pm_pending >> k) & 1) &&
		    !rn_peer_muted(c))
			arm(d, RN_TIMER_PMTU, t);
	}
}

static void deadlines(const rn_conn *c, dl_sink *d)
{
	switch (c->state) {
	case RN_ST_COOKIE_SENT:
		arm(d, RN_TIMER_COOKIE, c->timer[RN_TIMER_COOKIE]);
		/* fall through */
	case RN_ST_INIT_SENT:
		arm(d, RN_TIMER_HANDSHAKE, c->timer[RN_TIMER_HANDSHAKE]);
		arm(d, RN_TIMER_CONNECT, c->timer[RN_TIMER_CONNECT]);
		break;
	case RN_ST_ESTABLISHED:
	case RN_ST_LINGER:
		established_deadlines(c, d);
		break;
	default:
		break;
	}
}

void rn_conn_deadlines(const rn_conn *c, uint64_t at[RN_TIMER__COUNT])
{
	dl_sink d = { at, UINT64_MAX };

	for (int t = 0; t < RN_TIMER__COUNT; t++)
		at[t] = UINT64_MAX;
	deadlines(c, &d);
}

uint64_t rn_conn_expiry(const rn_conn *c)
{
	dl_sink d = { NULL, UINT64_MAX };

	deadlines(c, &d);
	return d.min;
}

/* ---- the hooks: the events that arm timers ---- */

void rn_timer_on_connect(rn_conn *c, uint64_t now_ns)
{
	c->timer[RN_TIMER_HANDSHAKE] = now_ns;
	c->timer[RN_TIMER_CONNECT] = now_ns + c->cfg.connect_timeout_ns;
}

void rn_timer_on_handshake_restart(rn_conn *c, uint64_t now_ns)
{
	c->timer[RN_TIMER_HANDSHAKE] = now_ns;
}

/*
 * An INIT or COOKIE_ECHO went out: its resend is armed from the send, not
 * from the timer that made it due, so one that a driver sends before it
 * runs the timer (at once after connect) never goes twice.
 */
void rn_timer_on_handshake_sent(rn_conn *c, uint64_t now_ns)
{
	uint64_t gap = RN_HS_FIRST_NS << (c->hs.tries < 4 ? c->hs.tries : 4);

	c->timer[RN_TIMER_HANDSHAKE] = now_ns + min64(gap, RN_HS_MAX_NS);
	if (c->hs.tries < UINT8_MAX)
		c->hs.tries++;
}

void rn_timer_on_cookie(rn_conn *c, uint64_t now_ns)
{
	c->timer[RN_TIMER_HANDSHAKE] = now_ns;
	c->timer[RN_TIMER_COOKIE] = now_ns + RN_COOKIE_RESTART_NS;
}

void rn_timer_on_ack_owed(rn_conn *c, uint64_t now_ns, uint64_t delay_ns)
{
	c->timer[RN_TIMER_ACK] = now_ns + delay_ns;
}

void rn_timer_on_link_state_changed(rn_conn *c, uint64_t now_ns)
{
	c->link.interval_ns = 0;
	c->timer[RN_TIMER_LINK_STATE] = now_ns;
}

void rn_timer_on_unreachable(rn_conn *c, uint32_t rails, uint64_t now_ns)
{
	(void)now_ns;
	c->probe.ka_pending |= rails & rn_conn_paths_mask(c);
}

void rn_timer_on_rail_tx_down(rn_conn *c, uint64_t now_ns)
{
	if (c->timer[RN_TIMER_HEARTBEAT] == 0 || c->timer[RN_TIMER_HEARTBEAT] > now_ns)
		c->timer[RN_TIMER_HEARTBEAT] = now_ns;
}

void rn_timer_on_rail_back(rn_conn *c, uint64_t now_ns)
{
	if (c->timer[RN_TIMER_HEARTBEAT] > now_ns)
		c->timer[RN_TIMER_HEARTBEAT] = now_ns;
}

/*
 * A process held off the CPU (stopped, a paused VM, a loaded host) sends
 * nothing meanwhile, not even the keepalive due on each working rail every
 * keepalive interval.  A peer held with it (two processes of one host)
 * could not speak either, so the silence it finds on waking says nothing of
 * the rails: the driver read what the sockets held first
 * (rn_conn_verdict_pending) and found nothing because nothing was sent.
 * The first timer call or datagram after such a gap (a write often comes
 * before the timers) defers the silence verdicts by one keepalive interval,
 * the time a resumed peer takes to speak; at most once per rail_timeout,
 * so rails that stay unwritable cannot defer them for ever.
 */
static void note_held_off(rn_conn *c, uint64_t now_ns)
{
	uint64_t last = rn_peer_tx_any_ns(c);
	uint64_t gap = c->cfg.keepalive_ns + (c->cfg.rail_timeout_ns - c->cfg.keepalive_ns) / 2;

	/* every datagram comes here: the common case, a keepalive interval not over, first */
	if (now_ns - last < c->cfg.keepalive_ns)
		return;
	if (last && now_ns >= paced(c, last, gap) &&
	    now_ns >= rn_peer_judge_from_ns(c) + c->cfg.rail_timeout_ns)
		rn_peer_defer_silence(c, paced(c, now_ns, c->cfg.keepalive_ns));
}

void rn_timer_on_tx(rn_conn *c, uint64_t now_ns)
{
	note_held_off(c, now_ns);
	c->live.last_tx_any_ns = now_ns;
}

void rn_timer_on_data_resumed(rn_conn *c, uint64_t now_ns)
{
	if (c->timer[RN_TIMER_HEARTBEAT] > now_ns)
		c->timer[RN_TIMER_HEARTBEAT] = now_ns;
}

void rn_timer_on_closed(rn_conn *c, uint64_t now_ns)
{
	c->timer[RN_TIMER_LINGER] = now_ns + c->cfg.linger_ns;
}

int rn_conn_last_ack(const rn_conn *c)
{
	/* the FIN is the last slot: everything before it acknowledged */
	return c->state == RN_ST_ESTABLISHED && c->bufs_ready && c->close.peer_fin_seen &&
	       c->sq.fin_queued && c->sq.end - c->sq.una == 1;
}

void rn_conn_end_closed(rn_conn *c, uint64_t now_ns)
{
	rn_conn_move(c, RN_ST_CLOSED);
	rn_conn_pool_leave(c);
	rn_conn_emit(c, RN_EV_CLOSED, now_ns, -1, RN_CAUSE_NONE, 0);
}

/* 4 RTOs: the peer's FIN resent after one, again after two more (it doubles). */
#define RN_EXIT_LINGER_RTOS 4
/* ...but at least 50 ms: an RTO measured on an idle loopback can be tiny. */
#define RN_EXIT_LINGER_MIN_NS UINT64_C(50000000)

int rn_conn_exit_linger(const rn_conn *c, uint64_t now_ns)
{
	uint64_t since, rto = 0, any = 0, span;

	if (c->state != RN_ST_LINGER)
		return 0;
	since = c->timer[RN_TIMER_LINGER] - c->cfg.linger_ns;
	/* rails with an RTT sample: an unmeasured one's initial RTO says nothing */
	for (int k = 0; k < c->npaths; k++) {
		any = max64(any, rn_conn_rail_rto(c, k));
		if (c->rail[k].srtt_ns)
			rto = max64(rto, rn_conn_rail_rto(c, k));
	}
	if (!rto)
		rto = any;
	span = max64(RN_EXIT_LINGER_RTOS * rto, RN_EXIT_LINGER_MIN_NS);
	return now_ns < c->timer[RN_TIMER_LINGER] && now_ns - since < span;
}

/* ---- what each timer does when it passes ---- */

static void on_handshake_timer(rn_conn *c, uint64_t now_ns)
{
	if (now_ns >= c->timer[RN_TIMER_CONNECT]) {
		rn_conn_fail(c, now_ns, RN_ERR_TIMEDOUT);
		return;
	}
	if (c->state == RN_ST_COOKIE_SENT && now_ns >= c->timer[RN_TIMER_COOKIE])
		rn_conn_restart_handshake(c, now_ns);
	if (now_ns < c->timer[RN_TIMER_HANDSHAKE])
		return;
	/* sending it arms the resend (rn_timer_on_handshake_sent): this covers a rail unwritable */
	c->timer[RN_TIMER_HANDSHAKE] = now_ns + RN_HS_MAX_NS;
	c->hs.due = 1;
}

static void on_link_state_timer(rn_conn *c, uint64_t now_ns)
{
	uint64_t first = 2 * rn_conn_rtt_estimate(c);

	if ((c->link.acked == c->link.version && c->rails.acked == c->rails.version) ||
	    now_ns < c->timer[RN_TIMER_LINK_STATE])
		return;
	/* our RAILS (rn_conn_rails.c) rides the same retries */
	if (c->link.acked != c->link.version)
		c->link.pending = rn_conn_paths_mask(c);
	if (c->rails.acked != c->rails.version)
		c->rails.pending = rn_conn_paths_mask(c);
	/* never longer than the heartbeat, whatever the RTT estimate says */
	if (c->link.interval_ns == 0)
		c->link.interval_ns = min64(first > RN_LS_MIN_NS ? first : RN_LS_MIN_NS,
					  c->cfg.heartbeat_ns);
	else
		c->link.interval_ns = min64(2 * c->link.interval_ns, c->cfg.heartbeat_ns);
	c->timer[RN_TIMER_LINK_STATE] = now_ns + c->link.interval_ns;
}

static void on_rail_timers(rn_conn *c, uint64_t now_ns)
{
	/*
	 * A muted member (rn_peer.c) leaves its rails to the peer's keeper: a
	 * timer acts when its deadline was armed, i.e. when the member was not
	 * muted at that deadline (the same test as established_deadlines).
	 */
	if (any_tx_down(c) && now_ns >= c->timer[RN_TIMER_HEARTBEAT] &&
	    !rn_peer_muted(c)) {
		c->probe.hb_pending = rn_conn_paths_mask(c);
		for (int k = 0; k < c->npaths; k++)
			if (!rn_rail_tx_up(&c->rail[k]))
				c->probe.hb_small_pending |= 1u << k;
		c->timer[RN_TIMER_HEARTBEAT] = paced(c, now_ns, c->cfg.heartbeat_ns);
	}
	for (int k = 0; k < c->npaths; k++) {
		rn_rail *r = &c->rail[k];
		uint64_t t = paced(c, rn_peer_tx_ns(c, k), c->cfg.keepalive_ns);

		if (rn_rail_tx_up(r) && now_ns >= t && !ka_muted(c, t))
			c->probe.ka_pending |= 1u << k;
		if (c->state == RN_ST_ESTABLISHED) {
			uint64_t rto = rn_rail_rto(r, &c->cfg);

			t = rn_pmtu_expiry(&r->pm, rto);
			if (!rn_peer_muted(c)) {
				rn_pmtu_on_timer(&r->pm, now_ns, rto);
				if (now_ns >= rn_pmtu_expiry(&r->pm, rto))
					c->probe.pm_pending |= 1u << k;
			}
		}
		if (r->rx_up && r->suspect && !rn_peer_muted(c))
			rn_conn_set_rx(c, k, 0, r->suspect == 2 ? RN_CAUSE_RX_SIZE : RN_CAUSE_RX_COUNT,
				       now_ns);
		else if (rail_silent(c, r, now_ns))
			rn_conn_set_rx(c, k, 0, RN_CAUSE_RX_SILENCE, now_ns);
		r->suspect = 0;
	}
}

int rn_conn_verdict_pending(const rn_conn *c, uint64_t now_ns)
{
	int judged = c->state == RN_ST_ESTABLISHED || c->state == RN_ST_LINGER;

	for (int k = 0; k < c->npaths; k++) {
		const rn_rail *r = &c->rail[k];

		if ((r->rx_up && r->suspect) || now_ns >= stall_expiry(c, k))
			return 1;
		/* after a stall of this process every rail looks silent at once */
		if (judged && rail_silent(c, r, now_ns))
			return 1;
	}
	return 0;
}

void rn_conn_on_timer(rn_conn *c, uint64_t now_ns)
{
	RN_OWNED(c);
	if (c->state == RN_ST_INIT_SENT || c->state == RN_ST_COOKIE_SENT) {
		on_handshake_timer(c, now_ns);
		return;
	}
	if (c->state != RN_ST_ESTABLISHED && c->state != RN_ST_LINGER)
		return;
	rn_peer_sync(c, now_ns);
	if (c->state == RN_ST_LINGER && now_ns >= c->timer[RN_TIMER_LINGER]) {
		rn_conn_move(c, RN_ST_CLOSED); /* RN_EV_CLOSED was reported on entering LINGER */
		return;
	}
	if (c->ack.pending && now_ns >= c->timer[RN_TIMER_ACK])
		c->ack.now = 1;
	if (c->state == RN_ST_LINGER)
		return; /* no rail timers: see established_deadlines */
	/* a time before the last arrival is a driver's mistake, never 2^64 ns of silence */
	if (now_ns > rn_peer_rx_any_ns(c) &&
	    now_ns - rn_peer_rx_any_ns(c) >= last_ack_silence(c)) {
		if (rn_conn_last_ack(c))
			rn_conn_end_closed(c, now_ns);
		else
			rn_conn_fail(c, now_ns, RN_ERR_TIMEDOUT);
		return;
	}
	rn_conn_detect_losses(c, now_ns);
	for (int k = 0; k < c->npaths; k++) {
		if (now_ns >= stall_expiry(c, k)) {
			/* its backups take the data (rn_conn_idle_backups), what it holds first */
			c->rail[k].stalled = 1;
			rn_conn_lose_rail(c, k, now_ns);
		}
	}
	if (now_ns - c->ack.data_rx_ns >= RN_RING_IDLE_NS)
		rn_conn_pool_leave(c); /* no longer receiving: its share goes to the others */
	rn_conn_shrink_to_share(c);
	if (now_ns - c->live.last_data_ns >= RN_RING_IDLE_NS && rn_conn_can_shrink(c))
		rn_conn_shrink(c, now_ns);
	note_held_off(c, now_ns);
	/* rail timers first: a rail they fail is a LINK_STATE whose retry is armed below */
	on_rail_timers(c, now_ns);
	on_link_state_timer(c, now_ns);
}
