/*
 * fuzz_pair.c - the deterministic pair: setup, datagrams out and in
 * (fuzz_common.h; the application and timers are in fuzz_drive.c).
 *
 * Invariants the pair checks on every call, whatever the fuzzer fed in:
 *   - every datagram rn_conn_write_pkt writes fits its buffer and the
 *     negotiated size, decodes, is addressed to the peer's connection id
 *     and goes to the peer's address of a writable rail; DATA never goes
 *     on a rail whose send side is down;
 *   - new DATA is numbered in order and carries exactly the bytes the
 *     application wrote, at the right stream offset; a retransmission
 *     carries the bytes of the first transmission; the FIN comes after
 *     the last byte written before the shutdown;
 *   - rn_conn_recv returns 0 or RN_ERR_DROP, and only accepts a datagram
 *     that decodes, is addressed to it, and comes from the peer's address
 *     of that path on that path's rail;
 *   - the application reads exactly the bytes the other side wrote, in
 *     order, then the end of stream where the other side shut down (until
 *     a forged DATA is accepted: an unauthenticated transport takes it, so
 *     from then on only the amounts are not checked);
 *   - states only move forward (but for a client's handshake restart from
 *     COOKIE_SENT to INIT_SENT), counters agree with what the application
 *     did, events are stamped with the current time;
 *   - after rn_conn_on_timer the expiry is in the future, or sending what
 *     is owed puts it there (fz_timer, fuzz_drive.c);
 *   - after the input, a clean network delivers every byte and FIN within
 *     the dead-peer timeout, unless a forged datagram got in (fz_drain);
 *   - every allocation is freed by rn_conn_del, the listener allocates
 *     nothing.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "fuzz_common.h"
#include "rn_wire.h"

/* ---- the pair: environment ---- */

static uint64_t host_rng(void *user)
{
	fz_host *h = user;

	return fz_rng_next(&h->rng);
}

static void host_event(void *user, const rn_event *ev)
{
	fz_host *h = user;
	fz_pair *p = h->pair;

	p->nevents++;
	FZ_CHECK(ev->time_ns == p->now, "host %d: event %d stamped %llu at %llu", h->id,
		 (int)ev->type, (unsigned long long)ev->time_ns, (unsigned long long)p->now);
	FZ_CHECK(ev->type >= RN_EV_ESTABLISHED && ev->type <= RN_EV_ANSWERED,
		 "host %d: unknown event type %d", h->id, (int)ev->type);
	if (ev->type == RN_EV_RAIL_DOWN || ev->type == RN_EV_RAIL_UP)
		FZ_CHECK(ev->rail >= 0 && ev->rail < FZ_RAILS, "host %d: rail event on rail %d",
			 h->id, ev->rail);
	if (ev->type == RN_EV_FAILED)
		FZ_CHECK(fz_is_fatal(ev->err), "host %d: failed with recoverable code %d",
			 h->id, ev->err);
}

static rn_env host_env(fz_pair *p, int host)
{
	return (rn_env){ .mem = fz_mem_of(&p->mem), .rng = host_rng, .on_event = host_event,
			 .user = &p->h[host] };
}

static fz_pkt *pool_push(fz_pair *p, int to, int rail, const uint8_t *pkt, size_t len)
{
	fz_pkt *k = &p->pool[p->pool_next++ % FZ_POOL];

	FZ_CHECK(len <= sizeof(k->data), "a %zu-byte datagram does not fit the pool", len);
	if (p->npool < FZ_POOL)
		p->npool++;
	k->to = to;
	k->rail = rail;
	k->held = 1;
	k->len = len;
	memcpy(k->data, pkt, len);
	return k;
}

/* Index of the rail of `host` with address a, or -1. */
static int rail_of(int host, rn_addr a)
{
	for (int r = 0; r < FZ_RAILS; r++)
		if (fz_addr_eq(a, fz_addr(host, r)))
			return r;
	return -1;
}

uint32_t fz_next_seq(const fz_pair *p, int host)
{
	const fz_host *h = &p->h[host];

	return h->seq_known ? h->seq_base + h->nsent : 0;
}

void fz_advance(fz_pair *p, uint64_t dt_ns)
{
	p->now = dt_ns > FZ_TIME_MAX - p->now ? FZ_TIME_MAX : p->now + dt_ns;
}

/* ---- datagrams out ---- */

/* A DATA packet host sent: new ones are recorded, retransmissions compared. */
static void record_data(fz_pair *p, int host, const rn_pkt *k)
{
	fz_host *h = &p->h[host];
	int fin = (k->flags & RN_F_FIN) != 0;
	uint32_t i;
	uint64_t off;

	if (!h->seq_known) {
		h->seq_known = 1;
		h->seq_base = k->seq;
	}
	i = k->seq - h->seq_base;
	if (i < h->nsent) {
		const fz_sent *s = &h->sent[i];

		if (i >= FZ_SEQMAP)
			return; /* beyond what we remember */
		FZ_CHECK(s->len == k->len && s->fin == fin,
			 "host %d resent seq %u with %u bytes fin %d, first sent with %u fin %d",
			 host, k->seq, k->len, fin, s->len, s->fin);
		FZ_CHECK((kit_pattern_check(k->payload, h->tx_seed, s->off, s->len) == 0),
			 "host %d resent seq %u with other bytes than the first time", host, k->seq);
		return;
	}
	FZ_CHECK(i == h->nsent, "host %d sent new DATA seq %u, expected %u", host, k->seq,
		 h->seq_base + h->nsent);
	off = h->sent_off;
	if (i < FZ_SEQMAP)
		h->sent[i] = (fz_sent){ .off = off, .len = k->len, .fin = (uint8_t)fin };
	h->nsent++;
	h->sent_off += k->len;
	FZ_CHECK(h->sent_off <= h->written, "host %d sent stream bytes up to %llu, wrote %llu",
		 host, (unsigned long long)h->sent_off, (unsigned long long)h->written);
	FZ_CHECK((kit_pattern_check(k->payload, h->tx_seed, off, k->len) == 0),
		 "host %d sent seq %u (offset %llu) with bytes it was not given", host, k->seq,
		 (unsigned long long)off);
	if (fin)
		FZ_CHECK(h->shut && off == h->shut_at,
			 "host %d sent FIN at offset %llu, shut down %d at %llu", host,
			 (unsigned long long)off, h->shut, (unsigned long long)h->shut_at);
}

/* Did the listener answer an INIT of this run with server id `id`? */
static int id_issued(const fz_pair *p, uint64_t id)
{
	if (p->nids > FZ_MAX_IDS)
		return 1; /* forgot some: cannot tell */
	for (unsigned i = 0; i < p->nids; i++)
		if (p->ids[i] == id)
			return 1;
	return 0;
}

/* Did the listener create a connection with id `id` in this run? */
static int id_accepted(const fz_pair *p, uint64_t id)
{
	if (p->nacc > FZ_MAX_IDS)
		return 1;
	for (unsigned i = 0; i < p->nacc; i++)
		if (p->acc[i] == id)
			return 1;
	return 0;
}

/* Records the client's current id; true if id is one it has had. */
static int client_had_id(fz_pair *p, uint64_t id)
{
	uint64_t cur = p->h[0].conn ? rn_conn_id(p->h[0].conn) : 0;
	int seen = 0;

	for (int i = 0; i < p->nclient_ids; i++)
		seen |= p->client_ids[i] == cur;
	if (cur && !seen && p->nclient_ids < 8)
		p->client_ids[p->nclient_ids++] = cur;
	for (int i = 0; i < p->nclient_ids; i++)
		if (p->client_ids[i] == id)
			return 1;
	return 0;
}

static void check_output(fz_pair *p, int host, uint32_t writable, const uint8_t *buf,
			 size_t n, size_t cap, const rn_tx *tx)
{
	fz_host *h = &p->h[host];
	rn_conn *peer = p->h[1 - host].conn;
	rn_pkt k;
	int rc = rn_wire_decode(&k, buf, n);
	int prail = rail_of(1 - host, tx->to);

	/* remember the client's id while it lasts: a restart replaces it */
	(void)client_had_id(p, 0);

	FZ_CHECK(n <= cap && n <= p->cfg.max_dgram, "host %d wrote %zu bytes (cap %zu, dgram %u)",
		 host, n, cap, p->cfg.max_dgram);
	FZ_CHECK(rc == 0, "host %d wrote a datagram that does not decode (%d), type %u flags %#x, "
		 "%zu bytes, cap %zu", host, rc, buf[1], buf[2], n, cap);
	FZ_CHECK(tx->local_rail >= 0 && tx->local_rail < FZ_RAILS &&
			 ((writable >> tx->local_rail) & 1),
		 "host %d sent on rail %d, writable %#x", host, tx->local_rail, writable);
	if (k.type == RN_PT_INIT) {
		int st = rn_conn_state(h->conn);

		FZ_CHECK(host == 0 && st == RN_ST_INIT_SENT && prail == 0 && tx->local_rail == 0 &&
				 k.dst == 0,
			 "host %d sent INIT in state %d to rail %d", host, st, prail);
		return;
	}
	if (p->forged_hs)
		return; /* rails, ids and sequence numbers are the fuzzer's */
	FZ_CHECK(prail >= 0, "host %d sent to %#x:%u, not a peer rail", host, tx->to.ip,
		 tx->to.port);
	FZ_CHECK(prail == tx->local_rail, "host %d: rail %d sent to the peer's rail %d", host,
		 tx->local_rail, prail);
	if (host == 1) {
		/* the connection an abandoned cookie made still talks to the client's old id */
		FZ_CHECK(k.dst == rn_conn_id(peer) || client_had_id(p, k.dst),
			 "server wrote to id %#llx, client is %#llx",
			 (unsigned long long)k.dst, (unsigned long long)rn_conn_id(peer));
	} else {
		/* a client that restarted its handshake may talk to another server id */
		FZ_CHECK(id_issued(p, k.dst), "client wrote to id %#llx, which the listener never "
			 "gave it", (unsigned long long)k.dst);
		/*
		 * Established: a packet of the server's connection got here, so it
		 * exists (unless a forged one did: anyone can fake a COOKIE_ACK).
		 */
		if ((rn_conn_state(h->conn) == RN_ST_ESTABLISHED ||
		     rn_conn_state(h->conn) == RN_ST_LINGER) && !p->forged_any)
			FZ_CHECK(id_accepted(p, k.dst),
				 "client established towards server id %#llx, which no COOKIE_ECHO "
				 "created (the server's connection is %#llx)",
				 (unsigned long long)k.dst,
				 (unsigned long long)(peer ? rn_conn_id(peer) : 0));
		p->client_dst = k.dst;
	}
	if (tx->path >= 0)
		FZ_CHECK(tx->path == k.path && k.path < FZ_RAILS && tx->path == tx->local_rail,
			 "host %d: tx path %d, header path %u, rail %d", host, tx->path, k.path,
			 tx->local_rail);
	if (k.type == RN_PT_DATA) {
		rn_conn_stats st;

		rn_conn_get_stats(h->conn, &st);
		FZ_CHECK(st.rail[k.path].tx_up, "host %d sent DATA on path %u, which is down",
			 host, k.path);
		record_data(p, host, &k);
	}
}

ssize_t fz_write_pkt(fz_pair *p, int host, uint32_t writable, size_t cap, fz_pkt **out)
{
	fz_host *h = &p->h[host];
	rn_tx tx = { .local_rail = -1, .path = -2 };
	uint8_t *buf;
	ssize_t n;

	*out = NULL;
	if (!h->conn)
		return 0;
	buf = malloc(cap ? cap : 1);
	FZ_CHECK(buf, "out of memory");
	n = rn_conn_write_pkt(h->conn, p->now, writable, buf, cap, &tx);
	if (n <= 0) {
		FZ_CHECK(n == 0 || (n == RN_ERR_NOBUF && cap < p->cfg.max_dgram),
			 "host %d: rn_conn_write_pkt returned %zd with cap %zu", host, n, cap);
		free(buf);
		return n;
	}
	check_output(p, host, writable, buf, (size_t)n, cap, &tx);
	*out = pool_push(p, 1 - host, tx.local_rail, buf, (size_t)n);
	if (p->tap)
		p->tap(p->tap_arg, p, host, buf, (size_t)n, tx.local_rail);
	free(buf);
	return n;
}

/* ---- datagrams in ---- */

/* Is this DATA, which host `from` is said to have sent, the real thing? */
static int data_genuine(const fz_pair *p, int from, const rn_pkt *k)
{
	const fz_host *s = &p->h[from];
	uint32_t i = k->seq - s->seq_base;
	const fz_sent *e;

	if (!s->seq_known || i >= s->nsent || i >= FZ_SEQMAP)
		return 0;
	e = &s->sent[i];
	return e->len == k->len && e->fin == ((k->flags & RN_F_FIN) != 0) &&
	       (kit_pattern_check(k->payload, s->tx_seed, e->off, e->len) == 0);
}

/* Is this datagram, byte for byte, one the pair sent (a listener reply, say)? */
static int in_pool(const fz_pair *p, const uint8_t *pkt, size_t len)
{
	for (unsigned i = 0; i < p->npool; i++)
		if (p->pool[i].len == len && memcmp(p->pool[i].data, pkt, len) == 0)
			return 1;
	return 0;
}

/* A DATA without an ACK block carrying what the peer really sent at that seq: harmless. */
static int same_as_sent(const fz_pair *p, int to, const rn_pkt *k)
{
	return k->type == RN_PT_DATA && !(k->flags & RN_F_ACK) && data_genuine(p, 1 - to, k);
}

/*
 * The address checks are judged against the paths as they were when the
 * datagram came (before: a RAILS message may move the very path it came on).
 */
static void check_accepted(fz_pair *p, int to, int rail, rn_addr from, const uint8_t *pkt,
			   size_t len, int genuine, const rn_conn_stats *before)
{
	fz_host *h = &p->h[to];
	int state_before = before->state;
	rn_conn_stats st;
	rn_pkt k;

	FZ_CHECK(rn_wire_decode(&k, pkt, len) == 0, "host %d accepted a datagram that does not decode",
		 to);
	if (k.type == RN_PT_SRESET) {
		/* a stateless reset names the peer's id (addressed to none) and ends the connection */
		rn_conn_get_stats(h->conn, &st);
		FZ_CHECK(k.dst == 0 && rn_get64(k.payload) != 0 &&
				 (rn_conn_error(h->conn) == RN_ERR_RESET ||
				  rn_conn_error(h->conn) == RN_ERR_REFUSED),
			 "host %d took a stateless reset and is still %s (error %d)", to,
			 rn_state_name(rn_conn_state(h->conn)), rn_conn_error(h->conn));
		if (!genuine && !in_pool(p, pkt, len))
			p->forged_any = 1;
		return;
	}
	FZ_CHECK(k.dst == rn_conn_id(h->conn), "host %d accepted a datagram for id %#llx", to,
		 (unsigned long long)k.dst);
	if (k.type == RN_PT_INIT_ACK) {
		FZ_CHECK(to == 0 && state_before == RN_ST_INIT_SENT && rail == 0 &&
				 fz_addr_eq(from, fz_addr(1, 0)),
			 "host %d accepted INIT_ACK in state %d on rail %d from %#x:%u", to,
			 state_before, rail, from.ip, from.port);
		if (!genuine && !in_pool(p, pkt, len)) {
			/* the client now believes the fuzzer's rails and sequence numbers */
			p->forged_any = 1;
			p->forged_hs = 1;
			p->h[0].tainted = p->h[1].tainted = 1;
		}
		return;
	}
	FZ_CHECK(k.path < before->npaths && before->rail[k.path].local_rail == rail &&
			 fz_addr_eq(before->rail[k.path].remote, from),
		 "host %d accepted type %u path %u on rail %d from %#x:%u: not that path's peer",
		 to, k.type, k.path, rail, from.ip, from.port);
	if (!genuine && !in_pool(p, pkt, len) && !same_as_sent(p, to, &k))
		p->forged_any = 1;
	if (!genuine && k.type == RN_PT_DATA && !data_genuine(p, 1 - to, &k))
		h->tainted = 1;
}

/*
 * Would this datagram pass the connection's address checks?  A DATA that
 * rn_conn_recv drops as a duplicate or out of window has had its ACK block
 * applied all the same, so a forged one counts as taken.
 */
static int from_the_peer(const fz_pair *p, int to, int rail, rn_addr from, const uint8_t *pkt,
			 size_t len)
{
	rn_conn *c = p->h[to].conn;
	rn_conn_stats st;
	rn_pkt k;

	if (rn_wire_decode(&k, pkt, len) != 0 || k.dst != rn_conn_id(c) || in_pool(p, pkt, len) ||
	    same_as_sent(p, to, &k))
		return 0;
	rn_conn_get_stats(c, &st);
	return k.path < st.npaths && st.rail[k.path].local_rail == rail &&
	       fz_addr_eq(st.rail[k.path].remote, from);
}

/* A new connection for a host: nothing written, read or sent yet. */
static void host_reset_app(fz_host *h)
{
	h->state = RN_ST_ESTABLISHED;
	h->written = h->shut_at = h->recvd = h->sent_off = 0;
	h->shut = h->eof = h->tainted = h->seq_known = 0;
	h->seq_base = h->nsent = 0;
}

/* A datagram the server's connection does not claim: the listener's. */
static int to_listener(fz_pair *p, int rail, rn_addr from, const uint8_t *pkt, size_t len)
{
	rn_env env = host_env(p, 1);
	rn_accept_params ap;
	uint8_t *reply = malloc(FZ_CAP);
	size_t rlen = 0;
	int rc, back;

	FZ_CHECK(reply, "out of memory");
	p->mem.forbid = 1; /* the listener allocates nothing */
	p->mem.who = "the listener";
	rc = rn_listener_recv(&p->lis, p->now, rail, from, pkt, len, reply, FZ_CAP, &rlen, &ap);
	p->mem.forbid = 0;
	p->mem.who = "a connection";
	if (rc == RN_LISTEN_REPLY) {
		rn_pkt k;

		FZ_CHECK(rlen > 0 && rlen <= len, "listener replied %zu bytes to %zu", rlen, len);
		FZ_CHECK(rn_wire_decode(&k, reply, rlen) == 0 && k.len >= 8,
			 "listener reply does not decode");
		if (k.type == RN_PT_INIT_ACK) {
			if (p->nids < FZ_MAX_IDS)
				p->ids[p->nids] = rn_get64(k.payload); /* the hello's id */
			p->nids++;
		}
		back = rail_of(0, from);
		if (back == rail) { /* a reply to anyone else leaves the pair */
			pool_push(p, 0, rail, reply, rlen);
			if (p->tap)
				p->tap(p->tap_arg, p, 1, reply, rlen, rail);
		}
	} else if (rc == RN_LISTEN_ACCEPT) {
		rn_conn *c = NULL;

		rc = rn_conn_accept(&c, &ap, &env, p->now);
		FZ_CHECK(rc == 0 || rc == RN_ERR_NOROUTE, "rn_conn_accept returned %d", rc);
		if (c && p->nacc < FZ_MAX_IDS)
			p->acc[p->nacc] = ap.id;
		p->nacc += c != NULL;
		if (!p->h[1].conn) {
			p->h[1].conn = c;
		} else if (c && ap.id == p->client_dst && rn_conn_id(p->h[1].conn) != ap.id) {
			/* the client restarted its handshake: this one is its server now */
			rn_conn_del(p->h[1].conn);
			p->h[1].conn = c;
			host_reset_app(&p->h[1]);
		} else {
			rn_conn_del(c); /* a second connection: not part of the pair */
		}
		rc = 0;
	} else {
		FZ_CHECK(rc == RN_ERR_DROP, "rn_listener_recv returned %d", rc);
		FZ_CHECK(rlen == 0, "listener dropped but set a %zu-byte reply", rlen);
	}
	free(reply);
	return rc;
}

int fz_deliver(fz_pair *p, int to, int rail, rn_addr from, const uint8_t *pkt, size_t len,
	       int genuine)
{
	fz_host *h = &p->h[to];
	uint8_t *buf = malloc(len ? len : 1); /* exactly len: an over-read is caught */
	uint64_t dst = rn_wire_peek_dst(pkt, len);
	int rc;

	FZ_CHECK(buf, "out of memory");
	memcpy(buf, pkt, len);
	if (to == 1 && (!h->conn || dst != rn_conn_id(h->conn))) {
		rc = to_listener(p, rail, from, buf, len);
	} else if (h->conn) {
		rn_conn_stats before;

		rn_conn_get_stats(h->conn, &before);
		rc = rn_conn_recv(h->conn, p->now, rail, from, buf, len);
		FZ_CHECK(rc == 0 || rc == RN_ERR_DROP, "rn_conn_recv returned %d", rc);
		if (rc == 0)
			check_accepted(p, to, rail, from, buf, len, genuine, &before);
		else if (!genuine && !p->forged_any && from_the_peer(p, to, rail, from, buf, len))
			p->forged_any = 1; /* dropped, but its ACK block may have been used */
	} else {
		rc = RN_ERR_DROP;
	}
	free(buf);
	return rc;
}

int fz_deliver_pkt(fz_pair *p, const fz_pkt *k)
{
	return fz_deliver(p, k->to, k->rail, fz_addr(1 - k->to, k->rail), k->data, k->len, 1);
}

/* ---- setup ---- */

static void deliver_last(fz_pair *p)
{
	fz_pkt *k = &p->pool[(p->pool_next - 1) % FZ_POOL];

	k->held = 0;
	fz_deliver_pkt(p, k);
}

void fz_pair_open_at(fz_pair *p, int stage)
{
	rn_rail_addr rails[2][FZ_RAILS];
	rn_env env;
	fz_pkt *k;
	int rc;

	for (int i = 0; i < 2; i++) {
		memset(&p->h[i], 0, offsetof(fz_host, sent));
		p->h[i].pair = p;
		p->h[i].id = i;
		p->h[i].rng = i ? FZ_SEED_SERVER : FZ_SEED_CLIENT;
		p->h[i].tx_seed = i ? FZ_PATTERN_SERVER : FZ_PATTERN_CLIENT;
		for (int r = 0; r < FZ_RAILS; r++)
			rails[i][r] = fz_rail(i, r);
	}
	p->mem = (fz_mem){ .who = "a connection" };
	fz_config(&p->cfg);
	p->now = FZ_T0;
	p->npool = p->pool_next = 0;
	p->nevents = 0;
	p->forged_hs = 0;
	p->forged_any = 0;
	p->nids = p->nacc = 0;
	p->client_dst = 0;

	env = host_env(p, 1);
	rc = rn_listener_init(&p->lis, &p->cfg, &env, rails[1], FZ_RAILS);
	FZ_CHECK(rc == 0, "rn_listener_init: %d", rc);
	env = host_env(p, 0);
	rc = rn_conn_connect(&p->h[0].conn, &p->cfg, &env, rails[0], FZ_RAILS, fz_addr(1, 0),
			     p->now);
	FZ_CHECK(rc == 0, "rn_conn_connect: %d", rc);

	/* INIT to the listener, at FZ_T0 exactly: fuzz_listen replays it */
	FZ_CHECK(fz_write_pkt(p, 0, 3, FZ_CAP, &k) == RN_INIT_LEN, "no INIT");
	if (stage == FZ_STAGE_INIT_SENT)
		return;
	deliver_last(p);
	FZ_CHECK(p->npool == 2 && p->pool[1].data[1] == RN_PT_INIT_ACK, "no INIT_ACK");
	fz_advance(p, FZ_STEP_NS);
	deliver_last(p);
	FZ_CHECK(fz_write_pkt(p, 0, 3, FZ_CAP, &k) > 0 && k->data[1] == RN_PT_COOKIE_ECHO,
		 "no COOKIE_ECHO");
	fz_pair_check(p);
	if (stage == FZ_STAGE_COOKIE_SENT)
		return;
	deliver_last(p);
	FZ_CHECK(p->h[1].conn != NULL, "the listener did not accept");
	fz_advance(p, FZ_STEP_NS);
	FZ_CHECK(fz_write_pkt(p, 1, 3, FZ_CAP, &k) > 0 && k->data[1] == RN_PT_COOKIE_ACK,
		 "no COOKIE_ACK");
	deliver_last(p);
	fz_pair_check(p);
	FZ_CHECK(p->h[0].state == RN_ST_ESTABLISHED && p->h[1].state == RN_ST_ESTABLISHED,
		 "handshake did not complete: states %d %d", p->h[0].state, p->h[1].state);
	fz_advance(p, FZ_STEP_NS);
}

void fz_pair_open(fz_pair *p)
{
	fz_pair_open_at(p, FZ_STAGE_ESTABLISHED);
}

void fz_pair_close(fz_pair *p)
{
	for (int i = 0; i < 2; i++) {
		rn_conn_del(p->h[i].conn);
		p->h[i].conn = NULL;
	}
	FZ_CHECK(p->mem.live == 0, "%ld allocations not freed by rn_conn_del", p->mem.live);
}
