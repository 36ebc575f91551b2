/*
 * rn_conn_rails.c - rails that appear while a connection lives
 * (docs/PROTOCOL.md, "Interface events").
 *
 * An end whose driver reports a new rail (rn_conn_rail_add) sends its rail
 * list in a RAILS packet, on every path, resent with LINK_STATE's timer
 * until a RAILS_ACK names its version.  Both ends must number the paths
 * alike, so the client alone makes them: it pairs every rail no path uses
 * with one of the peer's in the same subnet (rn_rail_match, as at the
 * handshake) and appends the pairs; its RAILS lists every path, and the
 * server appends the ones it does not have.  A new path is used at once:
 * it starts up both ways, with a heartbeat owed on it so that each end
 * hears the other there (an unkeyed path carries DATA only once it has).
 */
#include <string.h>

#include "rn_conn.h"

/* The largest datagram (as c->dgram counts it) worth trying on local rail l. */
static uint32_t pm_ceiling(const rn_conn *c, const rn_rail_addr *l)
{
	uint32_t top = l->max_dgram;

	if (c->cfg.keyed)
		top = top > RN_AEAD_OVERHEAD ? top - RN_AEAD_OVERHEAD : 0;
	return top > c->dgram ? top : c->dgram;
}

int rn_conn_init_path(rn_conn *c, rn_rail *r, int li, const rn_rail_addr *l, int ri,
		      const rn_rail_addr *m, uint32_t snd_slots, uint64_t now_ns)
{
	/* the FIFO holds twice the send ring, and grows with it */
	int rc = rn_rail_init(r, &c->env.mem, 2 * snd_slots, c->cfg.init_cwnd);
	uint32_t top = pm_ceiling(c, l);

	if (rc)
		return rc;
	r->local_rail = li;
	r->remote_rail = ri;
	r->local = rn_addr_of_rail(l);
	r->remote = rn_addr_of_rail(m);
	/* the peer's scope is its own: its link-local address is on our rail's link */
	r->remote.scope = rn_addr_link_local(r->remote) ? l->scope : 0;
	r->backup = l->backup;
	r->last_rx_ns = r->last_full_rx_ns = now_ns;
	r->last_tx_ns = r->last_full_tx_ns = now_ns;
	/* from the size both ends take up to what this rail's interface carries */
	if (c->cr && top > c->plain_cap - RN_AEAD_OVERHEAD)
		top = (uint32_t)c->plain_cap - RN_AEAD_OVERHEAD; /* a later rail: what the keys' buffer holds */
	rn_pmtu_init(&r->pm, c->dgram, top, now_ns);
	/* a key holder wrote the hello; else only the handshake's own address is proven */
	r->validated = c->cfg.keyed ||
		       (r->local_rail == c->hs.rail && rn_addr_eq(r->remote, c->peer));
	return 0;
}

int rn_conn_add_path(rn_conn *c, int li, const rn_rail_addr *l, int ri, const rn_rail_addr *m,
		     uint64_t now_ns)
{
	const rn_mem *mem = &c->env.mem;
	rn_rail *rails;
	int rc;

	if (c->npaths >= RN_MAX_RAILS)
		return RN_ERR_INVAL;
	rails = mem->alloc(mem->user, (size_t)(c->npaths + 1) * sizeof(*rails));
	if (!rails)
		return RN_ERR_NOMEM;
	memset(&rails[c->npaths], 0, sizeof(*rails));
	rc = rn_conn_init_path(c, &rails[c->npaths], li, l, ri, m, c->sq.slots, now_ns);
	if (rc) {
		mem->free(mem->user, rails);
		return rc;
	}
	/* the FIFOs move with their rails: only the array is new */
	if (c->npaths)
		memcpy(rails, c->rail, (size_t)c->npaths * sizeof(*rails));
	if (c->rail)
		mem->free(mem->user, c->rail);
	c->rail = rails;
	c->rail_n = ++c->npaths;
	return 0;
}

/* Bit i set: a path uses our rail i (mine), or the peer's rail i (!mine). */
static uint32_t rails_used(const rn_conn *c, int mine)
{
	uint32_t used = 0;

	for (int k = 0; k < c->npaths; k++)
		used |= 1u << (mine ? c->rail[k].local_rail : c->rail[k].remote_rail);
	return used;
}

/* Path k is new: the user hears of it, and a heartbeat goes on it now. */
static void path_added(rn_conn *c, int k, uint64_t now_ns)
{
	c->probe.hb_pending |= 1u << k;
	rn_conn_emit(c, RN_EV_RAIL_UP, now_ns, k, RN_CAUSE_RAIL_NEW, 0);
}

/* Our rail list changed (or our paths, for a client): a new RAILS, on every path. */
static void announce(rn_conn *c, uint64_t now_ns)
{
	c->rails.version++;
	c->rails.pending = rn_conn_paths_mask(c);
	rn_timer_on_link_state_changed(c, now_ns);
}

/* The client: every pair of unused rails in one subnet becomes a path.  Returns how many. */
static int pair_new(rn_conn *c, uint64_t now_ns)
{
	rn_rail_addr l[RN_MAX_RAILS], m[RN_MAX_RAILS];
	int li[RN_MAX_RAILS], mi[RN_MAX_RAILS], pairs[RN_MAX_RAILS][2], nl = 0, nm = 0, n, added = 0;
	uint32_t lu = rails_used(c, 1), mu = rails_used(c, 0);

	for (int i = 0; i < c->nlocal; i++)
		if (!((lu >> i) & 1)) {
			li[nl] = i;
			l[nl++] = c->local[i];
		}
	for (int i = 0; i < c->rails.nremote; i++)
		if (!((mu >> i) & 1)) {
			mi[nm] = i;
			m[nm++] = c->rails.remote[i];
		}
	n = rn_rail_match(l, nl, m, nm, pairs);
	for (int k = 0; k < n; k++) {
		int a = li[pairs[k][0]], b = mi[pairs[k][1]];

		if (rn_conn_add_path(c, a, &c->local[a], b, &c->rails.remote[b], now_ns) != 0)
			break;
		path_added(c, c->npaths - 1, now_ns);
		added++;
	}
	return added;
}

/* The server: the client's paths past ours become ours, while each names rails that fit. */
static void take_paths(rn_conn *c, const rn_rails_msg *m, uint64_t now_ns)
{
	for (int k = c->npaths; k < m->npaths; k++) {
		int ci = m->pairs[k][0], si = m->pairs[k][1];
		const rn_rail_addr *l = &c->local[si], *r = &c->rails.remote[ci];

		if (si >= c->nlocal || ci >= c->rails.nremote || ((rails_used(c, 1) >> si) & 1) ||
		    ((rails_used(c, 0) >> ci) & 1))
			return;
		if (!rn_addr_rails_share(l, r) || rn_conn_add_path(c, si, l, ci, r, now_ns) != 0)
			return;
		path_added(c, k, now_ns);
	}
}

int rn_conn_rail_add(rn_conn *c, uint64_t now_ns, int local_rail, const rn_rail_addr *a)
{
	rn_rail_addr l[RN_MAX_RAILS];

	RN_OWNED(c);
	rn_peer_sync(c, now_ns);
	if (c->state != RN_ST_ESTABLISHED)
		return RN_ERR_STATE;
	if (local_rail != c->nlocal || c->nlocal >= RN_MAX_RAILS ||
	    rn_addr_unset(rn_addr_of_rail(a)))
		return RN_ERR_INVAL;
	memcpy(l, c->local, (size_t)c->nlocal * sizeof(l[0]));
	l[c->nlocal] = *a;
	if (rn_conn_set_rails(c, &c->local, &c->nlocal, l, c->nlocal + 1) != 0)
		return RN_ERR_NOMEM;
	if (c->is_client)
		pair_new(c, now_ns);
	announce(c, now_ns);
	return 0;
}

/* Local rail i's address is a now: its paths go from there. */
static int set_local(rn_conn *c, int local_rail, const rn_rail_addr *a)
{
	if (local_rail < 0 || local_rail >= c->nlocal || !rn_addr_rail_valid(a) ||
	    a->v6 != c->local[local_rail].v6)
		return RN_ERR_INVAL;
	c->local[local_rail] = *a;
	for (int k = 0; k < c->npaths; k++) {
		rn_rail *r = &c->rail[k];

		if (r->local_rail != local_rail)
			continue;
		r->local = rn_addr_of_rail(a);
		if (c->peer_m.p)
			c->peer_m.p->rail[k].local = r->local; /* the other members follow as told */
	}
	return 0;
}

int rn_conn_rail_readdr(rn_conn *c, uint64_t now_ns, int local_rail, const rn_rail_addr *a)
{
	int rc;

	RN_OWNED(c);
	rn_peer_sync(c, now_ns);
	if (c->state != RN_ST_ESTABLISHED)
		return RN_ERR_STATE;
	rc = set_local(c, local_rail, a);
	if (rc == 0)
		announce(c, now_ns);
	return rc;
}

int rn_conn_rails_moved(rn_conn *c, uint64_t now_ns, const rn_rail_addr *local, int n)
{
	RN_OWNED(c);
	if (c->state != RN_ST_ESTABLISHED || n != c->nlocal)
		return RN_ERR_STATE;
	for (int i = 0; i < n; i++)
		if (set_local(c, i, &local[i]) != 0)
			return RN_ERR_INVAL;
	/* one RAILS on every path, from the link state's timer (now), resent until acknowledged */
	c->rails.version++;
	rn_timer_on_link_state_changed(c, now_ns);
	return 0;
}

/*
 * The peer's rail i has a new address (it rebound it): the paths to it go
 * there now, if it is still in our rail's subnet.  Unkeyed, the address is
 * taken on the peer's word: such a path carries DATA again only once the
 * peer has answered there (a heartbeat is owed on it now).
 */
static void remote_moved(rn_conn *c, int i, const rn_rail_addr *m, uint64_t now_ns)
{
	for (int k = 0; k < c->npaths; k++) {
		rn_rail *r = &c->rail[k];
		const rn_rail_addr *l = &c->local[r->local_rail];

		if (r->remote_rail != i || !rn_addr_rails_share(l, m))
			continue;
		r->remote = rn_addr_of_rail(m);
		r->remote.scope = rn_addr_link_local(r->remote) ? l->scope : 0;
		r->validated = c->cfg.keyed;
		c->probe.hb_pending |= 1u << k;
		/* what went to the old address is not coming back: sent again at once */
		rn_conn_lose_rail(c, k, now_ns);
		/*
		 * Not the peer's record: the other members may still send to
		 * the old address (only this connection went to another
		 * process).  Its driver sees it no longer matches its peer.
		 */
	}
	rn_timer_on_link_state_changed(c, now_ns);
}

/* Whether two rail entries name the same address and port. */
static int same_rail(const rn_rail_addr *a, const rn_rail_addr *b)
{
	return rn_addr_eq(rn_addr_of_rail(a), rn_addr_of_rail(b)) && a->port == b->port;
}

void rn_conn_recv_rails(rn_conn *c, const rn_pkt *p, uint64_t now_ns)
{
	rn_rails_msg m;

	/* rn_wire_decode checked it */
	if (rn_wire_read_rails(&m, p->payload, p->len) != 0)
		return;
	c->rails.ack_due = 1;
	c->rails.ack_version = m.version;
	/* a copy, or an older one overtaken; a list never shrinks (a rail gone stays listed) */
	if ((int32_t)(m.version - c->rails.peer_version) <= 0 || m.nrails < c->rails.nremote)
		return;
	for (int i = 0; i < c->rails.nremote; i++)
		if (!same_rail(&c->rails.remote[i], &m.rails[i]) &&
		    c->rails.remote[i].v6 == m.rails[i].v6)
			remote_moved(c, i, &m.rails[i], now_ns);
	if (rn_conn_set_rails(c, &c->rails.remote, &c->rails.nremote, m.rails, m.nrails) != 0)
		return; /* taken when it comes again */
	c->rails.peer_version = m.version;
	if (!c->is_client)
		take_paths(c, &m, now_ns);
	else if (pair_new(c, now_ns) > 0)
		announce(c, now_ns);
}

void rn_conn_recv_rails_ack(rn_conn *c, const rn_pkt *p)
{
	if (rn_get32(p->payload) == c->rails.version)
		c->rails.acked = c->rails.version;
}

ssize_t rn_conn_rails_payload(const rn_conn *c, uint8_t *buf, size_t cap)
{
	rn_rails_msg m = { .version = c->rails.version, .nrails = (uint8_t)c->nlocal };

	memcpy(m.rails, c->local, (size_t)c->nlocal * sizeof(c->local[0]));
	if (c->is_client) {
		m.npaths = (uint8_t)c->npaths;
		for (int k = 0; k < c->npaths; k++) {
			m.pairs[k][0] = (uint8_t)c->rail[k].local_rail;
			m.pairs[k][1] = (uint8_t)c->rail[k].remote_rail;
		}
	}
	return rn_wire_write_rails(buf, cap, &m);
}
