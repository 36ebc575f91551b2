/*
 * rn_conn.c - connection setup (connect, accept, keys, paths), the
 * handshake's restart, events and failure, and the close check.  The
 * application side of the stream is in rn_conn_app.c, the rings' memory in
 * rn_conn_mem.c, the rails' up and down in rn_conn_railstate.c.
 */
#include <stddef.h>
#include <string.h>

#include <sodium/utils.h>

#include "rn_conn.h"
#include "rn_seq.h"

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
	    nlocal > RN_MAX_RAILS || rn_addr_unset(peer) || rn_config_check(cfg, &why))
		return RN_ERR_INVAL;
	for (int i = 0; i < nlocal && hs < 0; i++)
		if (rn_addr_in_rail(&local[i], peer))
			hs = i;
	if (hs < 0)
		return RN_ERR_NOROUTE;
	if (rn_addr_link_local(peer))
		peer.scope = local[hs].scope; /* the link the handshake goes out on */
	c = conn_new(cfg, env);
	if (!c)
		return RN_ERR_NOMEM;
	if (rn_conn_set_rails(c, &c->local, &c->nlocal, local, nlocal) != 0) {
		rn_conn_del(c);
		return RN_ERR_NOMEM;
	}
	c->is_client = 1;
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
	c->peer = p->from;
	c->hs.rail = p->local_rail;
	rc = rn_conn_set_rails(c, &c->local, &c->nlocal, p->local, p->nlocal);
	if (rc == 0)
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

/* Early bytes a restart kept (carry_early), gone. */
static void drop_carry(rn_conn *c)
{
	if (c->hs.carry)
		c->env.mem.free(c->env.mem.user, c->hs.carry);
	c->hs.carry = NULL;
	c->hs.carry_len = 0;
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

int rn_conn_set_rails(rn_conn *c, rn_rail_addr **list, int *count, const rn_rail_addr *a, int n)
{
	const rn_mem *mem = &c->env.mem;
	rn_rail_addr *l = *list;

	if (!l || n > *count) {
		l = mem->alloc(mem->user, (size_t)(n > 0 ? n : 1) * sizeof(*l));
		if (!l)
			return RN_ERR_NOMEM;
	}
	memmove(l, a, (size_t)n * sizeof(*l)); /* a may be the old list itself */
	if (l != *list) {
		if (*list)
			mem->free(mem->user, *list);
		*list = l;
	}
	*count = n;
	return 0;
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
	if (c->local)
		mem->free(mem->user, c->local);
	if (c->rails.remote)
		mem->free(mem->user, c->rails.remote);
	free_keys(c);
	drop_carry(c);
	sodium_memzero(c->cfg.key, sizeof(c->cfg.key)); /* no copy of the key outlives its use */
	mem->free(mem->user, c);
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
	snd0 = rn_conn_ring_init_slots(c->mss, c->cfg.snd_slots);
	rcv0 = rn_conn_ring_init_slots(c->mss, c->cfg.rcv_slots);
	free_rails(c);
	c->rail = mem->alloc(mem->user, (size_t)n * sizeof(*c->rail));
	if (!c->rail)
		return RN_ERR_NOMEM;
	c->rail_n = n;
	for (int k = 0; k < n; k++) {
		int li = pairs[k][c->is_client ? 0 : 1], ri = pairs[k][c->is_client ? 1 : 0];

		rc = rn_conn_init_path(c, &c->rail[k], li, c->is_client ? &client[li] : &server[li], ri,
			       c->is_client ? &server[ri] : &client[ri], snd0, now_ns);
		if (rc)
			return rc;
	}
	/* the peer's rail list: rails that appear later pair against it (rn_conn_rails.c) */
	rc = rn_conn_set_rails(c, &c->rails.remote, &c->rails.nremote, c->is_client ? server : client,
			       c->is_client ? nserver : nclient);
	if (rc)
		return rc;
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
 * Early data written before a restart (nothing is acknowledged before the
 * COOKIE_ACK): its bytes wait here for the ring the next INIT_ACK makes,
 * where they start again from the new initial sequence number.  0, or
 * RN_ERR_NOMEM.
 */
static int carry_early(rn_conn *c)
{
	const rn_mem *mem = &c->env.mem;
	rn_sndq *q = &c->sq;
	uint32_t len = 0, at = 0;

	if (!c->bufs_ready || q->una == q->end)
		return 0;
	len = (uint32_t)rn_sndq_bytes_from(q, q->una);
	c->hs.carry = mem->alloc(mem->user, len);
	if (!c->hs.carry)
		return RN_ERR_NOMEM;
	for (uint32_t s = q->una; s != q->end; s++) {
		memcpy(c->hs.carry + at, rn_sndq_data(q, s), rn_sndq_slot(q, s)->len);
		at += rn_sndq_slot(q, s)->len;
	}
	c->hs.carry_len = len;
	return 0;
}

int rn_conn_early_restore(rn_conn *c)
{
	size_t n, len = c->hs.carry_len;

	if (!c->hs.carry)
		return 0;
	/* the same listener's INIT_ACK: the ring holds what the last one held */
	n = rn_sndq_write(&c->sq, c->hs.carry, len);
	drop_carry(c);
	return n == len ? 0 : RN_ERR_NOSPACE;
}

/*
 * Back to INIT: the cookie is about to go stale at the listener (a full
 * accept queue keeps dropping our COOKIE_ECHO), so fetch a fresh one.  The
 * rails and rings set up from the old INIT_ACK are dropped; early bytes
 * wait for the next ones (carry_early).
 */
void rn_conn_restart_handshake(rn_conn *c, uint64_t now_ns)
{
	const rn_mem *mem = &c->env.mem;

	if (carry_early(c) < 0) {
		rn_conn_fail(c, now_ns, RN_ERR_NOMEM);
		return;
	}
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

/* Both directions finished: linger to re-acknowledge a late FIN, then close. */
void rn_conn_check_close(rn_conn *c, uint64_t now_ns)
{
	if (c->state != RN_ST_ESTABLISHED || !c->bufs_ready)
		return;
	if (!c->close.peer_fin_seen && rn_rob_fin_in_order(&c->rq)) {
		c->close.peer_fin_seen = 1;
		rn_conn_pool_leave(c); /* nothing more comes */
		/*
		 * The peer waits for this ACK to finish: at once if our FIN went
		 * already, else it waits as any ACK, for the FIN our program
		 * usually sends right after reading the end (one datagram, not two).
		 */
		if (c->sq.fin_queued)
			c->ack.now = 1;
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
