/*
 * rn_peer.c - one rail monitor for every connection to the same peer.
 *
 * The connections between this process's rail sockets and one remote
 * process's cross the same rails: judging each rail once per connection
 * costs keepalives, wake-ups and verdicts in proportion to the number of
 * connections, for one answer.  A peer (rn_core.h) holds that answer:
 *
 *   evidence   the last arrival on each rail, and on any, by any member:
 *              a member's rail silence and dead-peer deadlines count from
 *              the later of its own and the peer's; and the last datagram
 *              any member sent on each rail, which is the other end's
 *              evidence: a keepalive is due only when no member sent
 *              anything there for the keepalive period (a new keeper
 *              does not send one at once);
 *   verdicts   each rail's receive and send view, with the peer's gen at
 *              its last change: a member that decides (its own silence or
 *              count, a LINK_STATE its peer sent it, packets on a failed
 *              rail) pushes the verdict here; every other member takes it
 *              at its next call (rn_peer_sync), and reads it at once
 *              (rn_conn_rail_usable);
 *   keeper     one member arms keepalives, rail silence, heartbeats and
 *              size searches whatever happens; the others do only while
 *              they owe something (rn_peer_muted): a member with nothing
 *              in flight and nothing owed sends nothing, however recently
 *              it carried DATA.  The keeper keeps the pace of the busiest
 *              member (the idle pace only once every member is idle:
 *              rn_peer_payload_ns), so the rails stay judged as closely as
 *              each member's own keepalives judged them, at a cost that
 *              does not grow with the number of members.
 *
 * A member takes a receive verdict silently (no LINK_STATE of its own): its
 * own peer learns it from the member that reached it, through its peer's
 * monitor.  A lone member is the keeper, its evidence the peer's, and no
 * verdict is ever another's: it behaves exactly as without a peer.
 */
#include <string.h>

#include "rn_conn.h"

static uint64_t max64(uint64_t a, uint64_t b) { return a > b ? a : b; }

int rn_peer_init(rn_peer *p, const rn_conn *c)
{
	memset(p, 0, sizeof(*p));
	if (c->npaths <= 0 || c->state != RN_ST_ESTABLISHED)
		return RN_ERR_STATE;
	p->nrails = c->npaths;
	for (int k = 0; k < c->npaths; k++) {
		const rn_rail *r = &c->rail[k];

		p->rail[k] = (rn_peer_rail){ .local = r->local, .remote = r->remote,
					     .rx_up = r->rx_up, .tx_up = r->peer_up,
					     .last_rx_ns = r->last_rx_ns, .last_tx_ns = r->last_tx_ns };
	}
	p->last_rx_any_ns = c->live.last_rx_any_ns;
	p->last_payload_ns = c->live.last_payload_ns;
	return 0;
}

int rn_peer_matches(const rn_peer *p, const rn_conn *c)
{
	if (p->nrails != c->npaths)
		return 0;
	for (int k = 0; k < c->npaths; k++)
		if (!rn_addr_eq(p->rail[k].local, c->rail[k].local) ||
		    !rn_addr_eq(p->rail[k].remote, c->rail[k].remote))
			return 0;
	return 1;
}

int rn_conn_join_peer(rn_conn *c, rn_peer *p, uint64_t now_ns)
{
	if (c->peer_m.p || c->state != RN_ST_ESTABLISHED)
		return RN_ERR_STATE;
	if (!rn_peer_matches(p, c))
		return RN_ERR_INVAL;
	c->peer_m.p = p;
	c->peer_m.prev = NULL;
	c->peer_m.next = p->members;
	if (p->members)
		p->members->peer_m.prev = c;
	p->members = c;
	p->nmembers++;
	if (!p->keeper)
		p->keeper = c;
	/* every verdict the peer holds is news to a newcomer: taken at its next call */
	c->peer_m.gen = p->gen - 1;
	for (int k = 0; k < c->npaths; k++)
		c->peer_m.seen[k] = p->rail[k].ver - 1;
	/* its own arrivals so far are evidence too */
	for (int k = 0; k < c->npaths; k++)
		p->rail[k].last_rx_ns = max64(p->rail[k].last_rx_ns, c->rail[k].last_rx_ns);
	p->last_rx_any_ns = max64(p->last_rx_any_ns, c->live.last_rx_any_ns);
	(void)now_ns;
	return 0;
}

rn_conn *rn_conn_leave_peer(rn_conn *c)
{
	rn_peer *p = c->peer_m.p;

	if (!p)
		return NULL;
	if (c->peer_m.prev)
		c->peer_m.prev->peer_m.next = c->peer_m.next;
	else
		p->members = c->peer_m.next;
	if (c->peer_m.next)
		c->peer_m.next->peer_m.prev = c->peer_m.prev;
	p->nmembers--;
	c->peer_m.p = NULL;
	c->peer_m.next = c->peer_m.prev = NULL;
	if (p->keeper != c)
		return NULL;
	p->keeper = p->members;
	return p->keeper;
}

rn_peer *rn_conn_peer_of(const rn_conn *c) { return c->peer_m.p; }

void rn_peer_note_payload(rn_conn *c, uint64_t now_ns)
{
	rn_peer *p = c->peer_m.p;

	if (!p)
		return;
	/* the keeper was at the idle pace: its keepalives must come 10 times as often now */
	if (p->keeper && p->keeper != c && now_ns - p->last_payload_ns >= RN_IDLE_NS)
		p->wake = 1;
	p->last_payload_ns = max64(p->last_payload_ns, now_ns);
}

uint64_t rn_peer_payload_ns(const rn_conn *c)
{
	const rn_peer *p = c->peer_m.p;

	return p ? max64(c->live.last_payload_ns, p->last_payload_ns) : c->live.last_payload_ns;
}

rn_conn *rn_peer_take_wake(rn_conn *c)
{
	rn_peer *p = c->peer_m.p;

	if (!p || !p->wake)
		return NULL;
	p->wake = 0;
	return p->keeper;
}

void *rn_conn_user(const rn_conn *c) { return c->env.user; }

int rn_conn_rail_usable(const rn_conn *c, int k)
{
	const rn_peer *p = c->peer_m.p;

	if (k < 0 || k >= c->npaths)
		return 0;
	if (p && p->rail[k].ver != c->peer_m.seen[k])
		return p->rail[k].tx_up && !c->rail[k].local_err;
	return rn_rail_tx_up(&c->rail[k]);
}

int rn_peer_rx_view(const rn_conn *c, int k)
{
	const rn_peer *p = c->peer_m.p;

	if (p && p->rail[k].ver != c->peer_m.seen[k])
		return p->rail[k].rx_up;
	return c->rail[k].rx_up;
}

void rn_peer_sync(rn_conn *c, uint64_t now_ns)
{
	rn_peer *p = c->peer_m.p;

	if (!p || c->peer_m.gen == p->gen)
		return;
	if (c->state != RN_ST_ESTABLISHED && c->state != RN_ST_LINGER)
		return;
	c->peer_m.gen = p->gen;
	c->peer_m.taking = 1;
	for (int k = 0; k < c->npaths; k++) {
		const rn_peer_rail *pr = &p->rail[k];
		rn_rail *r = &c->rail[k];

		if (pr->ver == c->peer_m.seen[k])
			continue;
		c->peer_m.seen[k] = pr->ver;
		if (r->rx_up != pr->rx_up)
			rn_conn_take_rx(c, k, pr->rx_up, now_ns);
		if (r->peer_up != pr->tx_up)
			rn_conn_set_tx(c, k, pr->tx_up, r->local_err, RN_CAUSE_SHARED, now_ns);
	}
	c->peer_m.taking = 0;
}

void rn_peer_on_verdict(rn_conn *c, int k)
{
	rn_peer *p = c->peer_m.p;
	rn_peer_rail *pr;
	const rn_rail *r = &c->rail[k];

	if (!p || c->peer_m.taking)
		return;
	pr = &p->rail[k];
	if (pr->rx_up == r->rx_up && pr->tx_up == r->peer_up)
		return;
	pr->rx_up = r->rx_up;
	pr->tx_up = r->peer_up;
	pr->ver = ++p->gen;
	c->peer_m.seen[k] = pr->ver;
	/* c has every other verdict it had before: only this one is new to the others */
	if (c->peer_m.gen == p->gen - 1)
		c->peer_m.gen = p->gen;
}

void rn_peer_on_rx(rn_conn *c, int k, uint64_t now_ns)
{
	rn_peer *p = c->peer_m.p;

	if (!p)
		return;
	p->rail[k].last_rx_ns = now_ns;
	p->last_rx_any_ns = now_ns;
}

void rn_peer_on_tx(rn_conn *c, int k, uint64_t now_ns)
{
	rn_peer *p = c->peer_m.p;

	if (p)
		p->rail[k].last_tx_ns = p->last_tx_any_ns = now_ns;
}

uint64_t rn_peer_tx_any_ns(const rn_conn *c)
{
	const rn_peer *p = c->peer_m.p;

	return p ? max64(c->live.last_tx_any_ns, p->last_tx_any_ns) : c->live.last_tx_any_ns;
}

void rn_peer_defer_silence(rn_conn *c, uint64_t at_ns)
{
	c->live.judge_from_ns = at_ns;
	if (c->peer_m.p)
		c->peer_m.p->judge_from_ns = at_ns;
}

uint64_t rn_peer_judge_from_ns(const rn_conn *c)
{
	const rn_peer *p = c->peer_m.p;

	return p ? max64(c->live.judge_from_ns, p->judge_from_ns) : c->live.judge_from_ns;
}

uint64_t rn_peer_tx_ns(const rn_conn *c, int k)
{
	const rn_peer *p = c->peer_m.p;

	return p ? max64(c->rail[k].last_tx_ns, p->rail[k].last_tx_ns) : c->rail[k].last_tx_ns;
}

uint64_t rn_peer_rx_ns(const rn_conn *c, int k)
{
	const rn_peer *p = c->peer_m.p;

	return p ? max64(c->rail[k].last_rx_ns, p->rail[k].last_rx_ns) : c->rail[k].last_rx_ns;
}

uint64_t rn_peer_rx_any_ns(const rn_conn *c)
{
	const rn_peer *p = c->peer_m.p;

	return p ? max64(c->live.last_rx_any_ns, p->last_rx_any_ns) : c->live.last_rx_any_ns;
}

/* Nothing in flight, nothing owed, nothing to tell: the connection has no reason to send. */
static int owes_nothing(const rn_conn *c)
{
	const struct rn_conn_probe *pr = &c->probe;

	return c->state == RN_ST_ESTABLISHED && rn_conn_write_done(c) && !c->ack.pending &&
	       c->link.acked == c->link.version && !c->link.ack_due &&
	       !(pr->hb_pending | pr->ka_pending | pr->hb_small_pending | pr->ka_full_pending |
		 pr->pm_pending | pr->pm_ack_pending) &&
	       !c->close.rst_pending;
}

int rn_peer_kept(const rn_conn *c)
{
	const rn_peer *p = c->peer_m.p;

	/*
	 * A keeper that lingers or closed judges nothing (lingering runs no
	 * keepalive): until the driver names another, nobody is muted.
	 */
	return p && p->keeper != c && p->keeper && p->keeper->state == RN_ST_ESTABLISHED;
}

int rn_peer_muted(const rn_conn *c)
{
	return rn_peer_kept(c) && owes_nothing(c);
}
