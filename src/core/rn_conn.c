/*
 * rn_conn.c - connection setup, the application side of the stream, and the
 * state changes every other part of the connection goes through.
 */
#include <stddef.h>
#include <string.h>

#include <sodium/utils.h>

#include "rn_conn.h"
#include "rn_seq.h"

/*
 * 16 KiB: the payload each ring of a new connection holds (8 packets at the
 * usual 1448 bytes).  An idle connection then touches a few pages of rings
 * in all, well inside DESIGN.md's 64 KiB per idle connection, which also
 * pays for the driver's share; a busy one grows its rings (rn_conn_grow_send,
 * rn_rob_insert) to what its traffic needs, up to RI2N_SNDBUF / RI2N_RCVBUF.
 */
#define RN_RING_INIT_BYTES (16u * 1024)
/* 2 packets: the smallest first ring, so jumbo datagrams still start with a few. */
#define RN_RING_INIT_MIN 2u

/* The first size of a ring of packets of mss bytes that may grow to max_slots. */
static uint32_t ring_init_slots(uint32_t mss, uint32_t max_slots)
{
	uint32_t n = RN_RING_INIT_MIN;

	while ((size_t)n * 2 * mss <= RN_RING_INIT_BYTES)
		n *= 2;
	return n < max_slots ? n : max_slots;
}

static rn_conn *conn_new(const rn_config *cfg, const rn_env *env)
{
	rn_conn *c = env->mem.alloc(env->mem.user, sizeof(*c));

	if (!c)
		return NULL;
	memset(c, 0, sizeof(*c));
	c->cfg = *cfg;
	c->env = *env;
	c->hs.rail = -1;
	do
		c->id = env->rng(env->user);
	while (c->id == 0);
	c->hs.isn = (uint32_t)env->rng(env->user);
	return c;
}

int rn_conn_connect(rn_conn **out, const rn_config *cfg, const rn_env *env,
		    const rn_rail_addr *local, int nlocal, rn_addr peer,
		    uint64_t now_ns)
{
	const char *why;
	rn_conn *c;
	int hs = -1;

	*out = NULL;
	if (!cfg || !env || !env->rng || !env->mem.alloc || !local || nlocal <= 0 ||
	    nlocal > RN_MAX_RAILS || peer.ip == 0 || peer.port == 0 ||
	    rn_config_check(cfg, &why))
		return RN_ERR_INVAL;
	for (int i = 0; i < nlocal && hs < 0; i++)
		if (rn_rail_same_subnet(local[i].ip, peer.ip, local[i].prefix))
			hs = i;
	if (hs < 0)
		return RN_ERR_NOROUTE;
	c = conn_new(cfg, env);
	if (!c)
		return RN_ERR_NOMEM;
	c->is_client = 1;
	memcpy(c->local, local, sizeof(*local) * (size_t)nlocal);
	c->nlocal = nlocal;
	c->peer = peer;
	c->hs.rail = hs;
	c->state = RN_ST_INIT_SENT;
	c->hs.start_ns = now_ns;
	rn_timer_on_connect(c, now_ns);
	c->hs.due = 1;
	*out = c;
	return 0;
}

int rn_conn_accept(rn_conn **out, const rn_accept_params *p, const rn_env *env,
		   uint64_t now_ns)
{
	rn_conn *c;
	int rc;

	*out = NULL;
	c = conn_new(&p->cfg, env);
	if (!c)
		return RN_ERR_NOMEM;
	c->id = p->id;
	c->hs.isn = p->isn;
	c->peer_id = p->peer_id;
	c->hs.peer_isn = p->peer_isn;
	c->dgram = p->dgram;
	c->peer_slots = p->peer_slots;
	memcpy(c->local, p->local, sizeof(p->local));
	c->nlocal = p->nlocal;
	c->peer = p->from;
	c->hs.rail = p->local_rail;
	rc = rn_conn_setup_paths(c, p->remote, p->nremote, p->local, p->nlocal, now_ns);
	if (rc) {
		rn_conn_del(c);
		return rc;
	}
	c->state = RN_ST_ESTABLISHED;
	c->st.established_ns = now_ns;
	c->hs.cookie_ack_due = 1;
	rn_conn_emit(c, RN_EV_ESTABLISHED, now_ns, -1, RN_CAUSE_NONE, 0);
	*out = c;
	return 0;
}

static void free_keys(rn_conn *c)
{
	if (!c->cr)
		return;
	rn_crypt_free(c->cr);
	sodium_memzero(c->plain, c->plain_cap); /* the last datagram opened */
	c->env.mem.free(c->env.mem.user, c->cr);
	c->cr = NULL;
	c->plain = NULL;
	c->plain_cap = 0;
}

/*
 * Keyed: derives the connection's keys from the cluster key and both ends'
 * ids and initial sequence numbers (rn_crypt_init), and makes room to open
 * datagrams of up to dgram bytes (the largest any of our rails takes).  A client whose handshake restarted
 * derives them again from the new values.
 */
static int make_keys(rn_conn *c, uint32_t dgram, uint64_t now_ns)
{
	const rn_mem *mem = &c->env.mem;
	int rc;

	free_keys(c);
	c->cr = mem->alloc(mem->user, sizeof(*c->cr) + dgram);
	if (!c->cr)
		return RN_ERR_NOMEM;
	rc = rn_crypt_init(c->cr, c->cfg.key, c->is_client, c->is_client ? c->id : c->peer_id,
			   c->is_client ? c->peer_id : c->id, c->is_client ? c->hs.isn : c->hs.peer_isn,
			   c->is_client ? c->hs.peer_isn : c->hs.isn,
			   (c->cfg.auth_only ? RN_CRYPT_AUTH_ONLY : 0) |
				   (c->cfg.aes256 ? RN_CRYPT_AES256 : 0),
			   now_ns);
	if (rc) {
		mem->free(mem->user, c->cr);
		c->cr = NULL;
		return rc;
	}
	c->plain = (uint8_t *)(c->cr + 1);
	c->plain_cap = dgram;
	return 0;
}

/* Frees the rails (rn_conn_setup_paths made them) with their FIFOs. */
static void free_rails(rn_conn *c)
{
	const rn_mem *mem = &c->env.mem;

	for (int k = 0; k < c->rail_n; k++)
		rn_rail_free(&c->rail[k], mem);
	if (c->rail)
		mem->free(mem->user, c->rail);
	c->rail = NULL;
	c->rail_n = 0;
	c->npaths = 0;
}

void rn_conn_del(rn_conn *c)
{
	const rn_mem *mem;

	if (!c)
		return;
	mem = &c->env.mem;
	rn_conn_leave_peer(c);
	rn_conn_pool_leave(c);
	rn_sndq_free(&c->sq, mem);
	rn_rob_free(&c->rq, mem);
	c->bufs_ready = 0;
	rn_conn_pool_account(c);
	free_rails(c);
	free_keys(c);
	sodium_memzero(c->cfg.key, sizeof(c->cfg.key)); /* no copy of the key outlives its use */
	mem->free(mem->user, c);
}

/* The largest datagram (as c->dgram counts it) worth trying on local rail l. */
static uint32_t pm_ceiling(const rn_conn *c, const rn_rail_addr *l)
{
	uint32_t top = l->max_dgram;

	if (c->cfg.keyed)
		top = top > RN_AEAD_OVERHEAD ? top - RN_AEAD_OVERHEAD : 0;
	return top > c->dgram ? top : c->dgram;
}

/*
 * Builds the rails from both sides' rail lists (client list first, so both
 * ends number them the same) and allocates the rings.  Called by the client
 * on INIT_ACK and by the server on accept.
 */
int rn_conn_setup_paths(rn_conn *c, const rn_rail_addr *client, int nclient,
			const rn_rail_addr *server, int nserver, uint64_t now_ns)
{
	int pairs[RN_MAX_RAILS][2];
	int n = rn_rail_match(client, nclient, server, nserver, pairs);
	const rn_mem *mem = &c->env.mem;
	uint32_t snd0, rcv0, top = c->dgram;
	int rc;

	if (n == 0)
		return RN_ERR_NOROUTE;
	for (int k = 0; k < n; k++) {
		const rn_rail_addr *l = c->is_client ? &client[pairs[k][0]] : &server[pairs[k][1]];

		if (l->max_dgram > top)
			top = l->max_dgram;
	}
	if (c->cfg.keyed) {
		rc = make_keys(c, top, now_ns);
		if (rc)
			return rc;
		c->dgram -= RN_AEAD_OVERHEAD; /* packet number and tag */
	}
	c->mss = c->dgram - RN_HDR_LEN;
	snd0 = ring_init_slots(c->mss, c->cfg.snd_slots);
	rcv0 = ring_init_slots(c->mss, c->cfg.rcv_slots);
	free_rails(c);
	c->rail = mem->alloc(mem->user, (size_t)n * sizeof(*c->rail));
	if (!c->rail)
		return RN_ERR_NOMEM;
	c->rail_n = n;
	for (int k = 0; k < n; k++) {
		rn_rail *r = &c->rail[k];
		const rn_rail_addr *l, *m;

		if (c->is_client) {
			l = &client[pairs[k][0]];
			m = &server[pairs[k][1]];
			r->local_rail = pairs[k][0];
		} else {
			l = &server[pairs[k][1]];
			m = &client[pairs[k][0]];
			r->local_rail = pairs[k][1];
		}
		r->local = (rn_addr){ l->ip, l->port };
		r->remote = (rn_addr){ m->ip, m->port };
		/* the FIFO holds twice the send ring, and grows with it */
		rc = rn_rail_init(r, mem, 2 * snd0, c->cfg.init_cwnd);
		if (rc)
			return rc;
		r->backup = l->backup;
		r->last_rx_ns = r->last_full_rx_ns = now_ns;
		r->last_tx_ns = r->last_full_tx_ns = now_ns;
		/* from the size both ends take up to what this rail's interface carries */
		rn_pmtu_init(&r->pm, c->dgram, pm_ceiling(c, l), now_ns);
		/* a key holder wrote the hello; else only the handshake's own address is proven */
		r->validated = c->cfg.keyed ||
			       (r->local_rail == c->hs.rail && r->remote.ip == c->peer.ip &&
				r->remote.port == c->peer.port);
	}
	c->npaths = n;
	rc = rn_sndq_init(&c->sq, mem, snd0, c->cfg.snd_slots, c->mss, c->hs.isn);
	if (rc)
		return rc;
	/* the window is the whole RI2N_RCVBUF from the start: the ring grows as data lands */
	rc = rn_rob_init(&c->rq, mem, rcv0, c->cfg.rcv_slots, c->mss, c->hs.peer_isn);
	if (rc)
		return rc;
	c->live.last_data_ns = now_ns;
	c->live.last_payload_ns = c->live.active_since_ns = now_ns;
	c->grow_hold = c->hs.isn;
	c->peer_wnd = c->hs.isn + c->peer_slots;
	/* what our hello offered (rn_conn_send.c, rn_listen.c), at most */
	c->ack.adv_edge = c->rq.base + rn_conn_rcv_share(c);
	c->bufs_ready = 1;
	rn_conn_pool_account(c);
	c->live.last_rx_any_ns = now_ns;
	c->link.interval_ns = 0;
	return 0;
}

/*
 * Back to INIT: the cookie is about to go stale at the listener (a full
 * accept queue keeps dropping our COOKIE_ECHO), so fetch a fresh one.  The
 * rails and rings set up from the old INIT_ACK are dropped.
 */
void rn_conn_restart_handshake(rn_conn *c, uint64_t now_ns)
{
	const rn_mem *mem = &c->env.mem;

	rn_sndq_free(&c->sq, mem);
	rn_rob_free(&c->rq, mem);
	free_rails(c);
	c->bufs_ready = 0;
	rn_conn_pool_account(c);
	/*
	 * A new identity: the server connection our first cookie created may
	 * still answer, and must not be taken for the one the new cookie makes.
	 * The driver re-keys its demultiplexing by rn_conn_id().
	 */
	do
		c->id = c->env.rng(c->env.user);
	while (c->id == 0);
	c->hs.isn = (uint32_t)c->env.rng(c->env.user);
	rn_conn_move(c, RN_ST_INIT_SENT);
	c->hs.tries = 0;
	c->hs.due = 1;
	rn_timer_on_handshake_restart(c, now_ns);
}

uint32_t rn_conn_paths_mask(const rn_conn *c)
{
	return c->npaths ? (uint32_t)((1u << c->npaths) - 1) : 0;
}

/* The largest smoothed RTT of the rails, or the handshake's; 1 ms if unknown. */
uint64_t rn_conn_rtt_estimate(const rn_conn *c)
{
	uint64_t rtt = c->rtt_ns;

	for (int k = 0; k < c->npaths; k++)
		if (c->rail[k].srtt_ns > rtt)
			rtt = c->rail[k].srtt_ns;
	return rtt ? rtt : 1000000;
}

/*
 * The send ring limits the flight: half of it or more is in flight, so the
 * rails' windows (or the peer's) have outgrown it and the application's
 * next bytes would wait for ACKs with the rails idle.  Double it, and the
 * rails' send-order FIFOs with it (they hold twice the ring), as TCP's
 * autotuning keeps its send buffer at about twice the congestion window.
 * Called after new data goes out; growing is rare (log2 of RI2N_SNDBUF over
 * the first ring: 8 times at most by default) and goes through the
 * environment's allocator.  A failed allocation leaves the ring as it is
 * (the stream goes on at its pace) and is not tried again before another
 * ring's worth of packets has gone.
 */
void rn_conn_grow_send(rn_conn *c)
{
	rn_sndq *q = &c->sq;
	const rn_mem *mem = &c->env.mem;
	uint32_t slots = q->slots * 2;

	if (q->slots >= q->max_slots || 2 * (q->nxt - q->una) < q->slots ||
	    rn_seq_lt(q->nxt, c->grow_hold))
		return;
	for (int k = 0; k < c->npaths; k++) {
		if (rn_rail_fifo_resize(&c->rail[k], mem, 2 * slots) < 0) {
			c->grow_hold = q->nxt + q->slots;
			return;
		}
	}
	if (rn_sndq_resize(q, mem, slots) < 0) {
		c->grow_hold = q->nxt + q->slots;
		return;
	}
	c->st.ring_grows++;
}

uint32_t rn_conn_rcv_share(const rn_conn *c)
{
	const rn_rcvpool *p = c->env.rcvpool;

	if (!p)
		return c->rq.wnd;
	return rn_config_rcv_share(p, c->rq.wnd, c->mss, p->active - c->pool.rx);
}

uint32_t rn_conn_rcv_edge(const rn_conn *c)
{
	uint32_t e = c->rq.base + rn_conn_rcv_share(c);

	return rn_seq_gt(c->ack.adv_edge, e) ? c->ack.adv_edge : e;
}

void rn_conn_pool_account(rn_conn *c)
{
	rn_rcvpool *p = c->env.rcvpool;
	uint64_t now = c->bufs_ready && c->rq.buf ? (uint64_t)c->rq.cap * c->mss : 0;

	if (!p)
		return;
	p->held = p->held - c->pool.held + now;
	c->pool.held = now;
}

int rn_conn_pool_room(const rn_conn *c, uint32_t seq)
{
	const rn_rcvpool *p = c->env.rcvpool;
	uint32_t off = seq - c->rq.base, cap = c->rq.cap;

	if (!p || !p->bytes || off < cap || off >= c->rq.wnd)
		return 1; /* no growth (or none allowed: the ring says why) */
	while (off >= cap)
		cap *= 2;
	/* a released ring (rn_rob_release) holds nothing of the pool: it needs the whole */
	return p->held + (uint64_t)(cap - (c->rq.buf ? c->rq.cap : 0)) * c->mss <= p->bytes;
}

void rn_conn_pool_join(rn_conn *c)
{
	if (c->env.rcvpool && !c->pool.rx) {
		c->env.rcvpool->active++;
		c->pool.rx = 1;
	}
}

void rn_conn_pool_leave(rn_conn *c)
{
	if (c->env.rcvpool && c->pool.rx) {
		c->env.rcvpool->active--;
		c->pool.rx = 0;
	}
}

/*
 * A receive ring grown past this connection's share of the pool (it grew
 * while fewer connections received) goes back to the share once what it
 * holds and what we advertised both fit in it, and to its first size once
 * the peer's FIN came and was read: the memory goes to the others.  If the
 * allocation fails it stays as it is (rn_conn_consume and the timer try
 * again).
 */
void rn_conn_shrink_to_share(rn_conn *c)
{
	rn_rob *r = &c->rq;
	uint32_t cap;

	if (!c->env.rcvpool || !c->bufs_ready)
		return;
	cap = ring_init_slots(c->mss, r->wnd);
	if (!c->close.peer_fin_seen && rn_conn_rcv_share(c) > cap)
		cap = rn_conn_rcv_share(c);
	/* past the FIN nothing more comes, whatever we advertised */
	if (r->cap <= cap || r->max - r->base > cap ||
	    (!c->close.peer_fin_seen && c->ack.adv_edge - r->base > cap))
		return;
	if (rn_rob_resize(r, cap) == 0)
		c->st.ring_shrinks++;
	rn_conn_pool_account(c);
}

/*
 * True when the rings hold nothing and have something to give back: they
 * grew, or they still have their payload storage.
 */
int rn_conn_can_shrink(const rn_conn *c)
{
	const rn_sndq *q = &c->sq;
	const rn_rob *r = &c->rq;

	if (!c->bufs_ready || (c->state != RN_ST_ESTABLISHED && c->state != RN_ST_LINGER))
		return 0;
	if (q->slots == ring_init_slots(c->mss, q->max_slots) &&
	    r->cap == ring_init_slots(c->mss, r->wnd) && !q->buf && !r->buf)
		return 0;
	return q->una == q->end && rn_rob_drained(r);
}

/*
 * Gives an idle or lingering connection's rings back (rn_timer.c calls it once nothing
 * was sent or stored for RN_RING_IDLE_NS): grown ones go back to their
 * first size, and the payload storage of both is freed (the next byte
 * either way makes it again), so an idle connection holds only its marks.
 * Everything sent was acknowledged, so the rails' FIFOs hold only stale
 * entries: they are emptied.  If an allocation fails the rings stay as
 * they are until the next idle period.
 */
void rn_conn_shrink(rn_conn *c, uint64_t now_ns)
{
	const rn_mem *mem = &c->env.mem;
	uint32_t snd0 = ring_init_slots(c->mss, c->sq.max_slots);
	int ok = 1;

	c->live.last_data_ns = now_ns; /* a failure waits for the next idle period */
	if (!rn_conn_can_shrink(c))
		return;
	for (int k = 0; k < c->npaths; k++) {
		c->rail[k].fhead = c->rail[k].ftail;
		if (rn_rail_fifo_resize(&c->rail[k], mem, 2 * snd0) < 0)
			ok = 0;
	}
	if (rn_sndq_resize(&c->sq, mem, snd0) < 0)
		ok = 0;
	if (rn_rob_resize(&c->rq, ring_init_slots(c->mss, c->rq.wnd)) < 0)
		ok = 0;
	if (ok && (rn_sndq_release(&c->sq, mem) | rn_rob_release(&c->rq)))
		c->st.ring_releases++;
	rn_conn_pool_account(c);
	if (ok)
		c->st.ring_shrinks++;
}

void rn_conn_emit(rn_conn *c, rn_event_type type, uint64_t now_ns, int rail,
		  rn_cause cause, int err)
{
	rn_event ev = { .type = type, .time_ns = now_ns, .rail = rail,
			.cause = cause, .err = err };

	if (!c->env.on_event)
		return;
	for (int k = 0; k < c->npaths; k++) {
		ev.rx_up |= (uint8_t)(c->rail[k].rx_up << k);
		ev.tx_up |= (uint8_t)(rn_rail_tx_up(&c->rail[k]) << k);
	}
	c->env.on_event(c->env.user, &ev);
}

void rn_conn_fail(rn_conn *c, uint64_t now_ns, int err)
{
	if (c->state == RN_ST_CLOSED)
		return;
	if (err > RN_ERR__FATAL)
		err = RN_ERR_PROTO; /* a dead connection's code is always a fatal one */
	/* tell the peer, unless it told us or never had state */
	if (err != RN_ERR_RESET && err != RN_ERR_REFUSED && c->bufs_ready)
		c->close.rst_pending = rn_conn_paths_mask(c) * ((1u << RN_RST_AGAIN) + 1);
	rn_conn_move(c, RN_ST_CLOSED);
	c->err = err;
	c->st.err = err;
	rn_conn_pool_leave(c);
	rn_conn_emit(c, RN_EV_FAILED, now_ns, -1, RN_CAUSE_NONE, err);
}

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

/* Both directions finished: linger to re-acknowledge a late FIN, then close. */
void rn_conn_check_close(rn_conn *c, uint64_t now_ns)
{
	if (c->state != RN_ST_ESTABLISHED || !c->bufs_ready)
		return;
	if (!c->close.peer_fin_seen && rn_rob_fin_in_order(&c->rq)) {
		c->close.peer_fin_seen = 1;
		rn_conn_pool_leave(c); /* nothing more comes */
		c->ack.now = 1; /* the peer waits for this ACK to finish: no delay */
		rn_conn_emit(c, RN_EV_PEER_CLOSED, now_ns, -1, RN_CAUSE_NONE, 0);
	}
	if (c->close.fin_acked && c->close.peer_fin_seen) {
		rn_conn_move(c, RN_ST_LINGER);
		rn_timer_on_closed(c, now_ns);
		/*
		 * Everything sent was acknowledged and nothing more comes: a
		 * lingering connection needs no payload storage (unless the
		 * application has yet to read what came), and giving it back now
		 * lets the next connection reuse it rather than wait out the linger.
		 */
		rn_conn_shrink(c, now_ns);
		rn_conn_emit(c, RN_EV_CLOSED, now_ns, -1, RN_CAUSE_NONE, 0);
	}
}

uint64_t rn_conn_id(const rn_conn *c) { return c->id; }
void rn_conn_set_user(rn_conn *c, void *user) { c->env.user = user; }
int rn_conn_state(const rn_conn *c) { return c->state; }
int rn_conn_error(const rn_conn *c) { return c->err; }
uint32_t rn_conn_mss(const rn_conn *c) { return c->mss; }
rn_addr rn_conn_peer(const rn_conn *c) { return c->peer; }

ssize_t rn_conn_write(rn_conn *c, uint64_t now_ns, const void *data, size_t len)
{
	size_t n;

	(void)now_ns;
	if (c->err)
		return c->err;
	if (c->state != RN_ST_ESTABLISHED)
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
	if (c->state != RN_ST_ESTABLISHED || c->err)
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
	(void)now_ns;
	if (c->err)
		return c->err;
	if (c->state != RN_ST_ESTABLISHED)
		return c->state == RN_ST_LINGER ? 0 : RN_ERR_STATE;
	return rn_sndq_fin(&c->sq);
}

void rn_conn_abort(rn_conn *c, uint64_t now_ns)
{
	rn_conn_fail(c, now_ns, RN_ERR_ABORTED);
}

void rn_conn_rail_error(rn_conn *c, uint64_t now_ns, int local_rail)
{
	for (int k = 0; k < c->npaths; k++)
		if (c->rail[k].local_rail == local_rail && !c->rail[k].local_err)
			rn_conn_set_tx(c, k, c->rail[k].peer_up, 1, RN_CAUSE_LOCAL, now_ns);
}

void rn_conn_rail_gone(rn_conn *c, uint64_t now_ns, int local_rail, rn_cause cause)
{
	for (int k = 0; k < c->npaths; k++)
		if (c->rail[k].local_rail == local_rail && !c->rail[k].local_err)
			rn_conn_set_tx(c, k, c->rail[k].peer_up, 1, cause, now_ns);
}

void rn_conn_rail_back(rn_conn *c, uint64_t now_ns, int local_rail, rn_cause cause)
{
	int any = 0;

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
	/* ICMP can be forged, so it only counts before the peer has answered */
	if (c->state == RN_ST_INIT_SENT)
		rn_conn_fail(c, now_ns, RN_ERR_REFUSED);
}

void rn_conn_get_stats(const rn_conn *c, rn_conn_stats *st)
{
	/* the same fields in the same order: the counters are the stats' first part */
	_Static_assert(offsetof(rn_conn_stats, rail) >= sizeof(rn_conn_counts) &&
			       offsetof(rn_conn_stats, npaths) == offsetof(rn_conn_counts, npaths),
		       "rn_conn_counts is the start of rn_conn_stats");
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

		*rs = r->st;
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
