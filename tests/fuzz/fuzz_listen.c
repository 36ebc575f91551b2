/*
 * fuzz_listen.c - libFuzzer target: the stateless handshake (rn_listen.c,
 * rn_cookie.c).
 *
 * Each input gets a fresh listener with the server's seed of fz_pair, and
 * first feeds it the real client INIT of fz_pair at the same time, so it
 * issues the same cookie as in the pair and the real COOKIE_ECHO is valid.
 * The input is then a sequence of operations (fuzz_ops.h): raw datagrams,
 * the real INIT and COOKIE_ECHO mutated, COOKIE_ECHOs built from cookies
 * issued in this run, INITs built from fields, clock steps, on valid and
 * invalid rails, from the right and wrong addresses, into reply buffers of
 * any size.  Invariants:
 *   - the listener never calls the allocator, and never writes more than
 *     the reply buffer (it is exactly that big);
 *   - a reply is an INIT_ACK to the INIT's sender id, no longer than the
 *     request, carrying the listener's rails and a cookie; every call is
 *     counted once: inits, accepts or one drop reason;
 *   - a reply to a datagram for an unknown connection id is a stateless
 *     reset naming that id, counted once as a reset and once as a drop;
 *   - ACCEPT only once per cookie, only for a COOKIE_ECHO whose cookie this
 *     listener issued in this run, echoed with the same client parameters, from the address
 *     the INIT came from, at most the cookie life (10 s) later, to the
 *     connection id the cookie names; the accept parameters are what the
 *     handshake said, and rn_conn_accept on them works or says NOROUTE and
 *     frees everything.
 */
#include <stdlib.h>
#include <string.h>

#include "fuzz_common.h"
#include "fuzz_ops.h"
#include "rn_wire.h"

enum {
	MAX_OPS = 1000,
	MAX_ISSUED = MAX_OPS + 1,
	HELLO_MAX = RN_HELLO_FIXED + RN_RAIL_WIRE_MAX * RN_MAX_RAILS,
};

/* 10 s, the listener's cookie life, plus the millisecond the cookie rounds off. */
#define COOKIE_LIFE_NS UINT64_C(10001000000)
/* 2^32 ms, 49.7 days: the cookie's 32-bit millisecond clock wraps (an open bug). */
#define COOKIE_WRAP_NS (UINT64_C(4294967296) * 1000000)

/* A cookie the listener issued, and what it was issued for. */
typedef struct issued {
	uint8_t cookie[RN_COOKIE_LEN];
	rn_addr from;
	uint64_t t_ns;
	uint64_t server_id;
	uint8_t hello[HELLO_MAX]; /* the client's parameters it covers */
	size_t hello_len;
	int accepted;             /* a cookie builds one connection */
} issued;

typedef struct lctx {
	rn_listener l;
	rn_config cfg;
	uint64_t rng, now;
	fz_mem mem;      /* the listener's: forbidden */
	fz_mem conn_mem; /* rn_conn_accept's */
	issued iss[MAX_ISSUED];
	int niss;
} lctx;

/* The real client's INIT and COOKIE_ECHO, from fz_pair. */
static struct {
	int ready;
	uint8_t init[FZ_DGRAM], echo[FZ_DGRAM];
	size_t init_len, echo_len;
} g_real;

static fz_pair g_pair;
static lctx g_ctx;

static void capture(void *arg, const fz_pair *p, int host, const uint8_t *pkt, size_t len,
		    int rail)
{
	(void)arg;
	(void)p;
	(void)rail;
	if (host != 0 || len > FZ_DGRAM)
		return;
	if (pkt[1] == RN_PT_INIT && !g_real.init_len) {
		memcpy(g_real.init, pkt, len);
		g_real.init_len = len;
	} else if (pkt[1] == RN_PT_COOKIE_ECHO && !g_real.echo_len) {
		memcpy(g_real.echo, pkt, len);
		g_real.echo_len = len;
	}
}

static void capture_real(void)
{
	g_pair.tap = capture;
	fz_pair_open(&g_pair);
	fz_pair_close(&g_pair);
	FZ_CHECK(g_real.init_len && g_real.echo_len, "the pair sent no INIT or COOKIE_ECHO");
	g_real.ready = 1;
}

static uint64_t drops_total(const rn_listener *l)
{
	uint64_t n = 0;

	for (int i = 0; i < RN_DROP__COUNT; i++)
		n += l->drops[i];
	return n;
}

/* A stateless reset answers only a decodable datagram to an unknown id, and names that id. */
static void check_sreset(const uint8_t *req, size_t len, const uint8_t *reply, size_t rlen)
{
	rn_pkt q, k;

	FZ_CHECK(rn_wire_decode(&q, req, len) == 0 && q.dst != 0 && q.type != RN_PT_INIT &&
			 q.type != RN_PT_COOKIE_ECHO && q.type != RN_PT_RESET &&
			 q.type != RN_PT_SRESET && q.type != RN_PT_INIT_ACK &&
			 q.type != RN_PT_COOKIE_ACK,
		 "stateless reset for a datagram of type %u to id %#llx", q.type,
		 (unsigned long long)q.dst);
	FZ_CHECK(rn_wire_decode(&k, reply, rlen) == 0 && k.dst == 0 &&
			 rn_get64(k.payload) == q.dst,
		 "stateless reset does not name the id the datagram was sent to");
}

static void check_reply(lctx *x, rn_addr from, const uint8_t *req, size_t len,
			const uint8_t *reply, size_t rlen, size_t cap)
{
	rn_pkt q, k;
	rn_hello client, server;
	issued *is;

	FZ_CHECK(rlen > 0 && rlen <= len && rlen <= cap,
		 "listener replied %zu bytes to %zu (buffer %zu)", rlen, len, cap);
	if (rlen > 1 && reply[1] == RN_PT_SRESET) {
		check_sreset(req, len, reply, rlen);
		return;
	}
	FZ_CHECK(rn_wire_decode(&q, req, len) == 0 && q.type == RN_PT_INIT &&
			 rn_wire_read_hello(&client, q.payload, q.len, 0) == 0,
		 "listener answered a datagram that is not a valid INIT");
	FZ_CHECK(rn_wire_decode(&k, reply, rlen) == 0 && k.type == RN_PT_INIT_ACK && k.flags == 0,
		 "listener's reply is not an INIT_ACK");
	FZ_CHECK(k.dst == client.id, "INIT_ACK to id %#llx, the INIT came from %#llx",
		 (unsigned long long)k.dst, (unsigned long long)client.id);
	FZ_CHECK(rn_wire_read_hello(&server, k.payload, k.len, 1) == 0, "INIT_ACK hello invalid");
	FZ_CHECK(server.nrails == x->l.nrails && server.slots == x->cfg.rcv_slots &&
			 server.max_dgram == x->cfg.max_dgram,
		 "INIT_ACK says %u rails, %u slots, %u bytes", server.nrails, server.slots,
		 server.max_dgram);
	for (int i = 0; i < server.nrails; i++)
		FZ_CHECK(server.rails[i].ip == x->l.rails[i].ip &&
				 server.rails[i].port == x->l.rails[i].port,
			 "INIT_ACK rail %d is not the listener's", i);
	FZ_CHECK(x->niss < MAX_ISSUED, "more replies than operations");
	is = &x->iss[x->niss++];
	memcpy(is->cookie, server.cookie, RN_COOKIE_LEN);
	is->from = from;
	is->t_ns = x->now;
	is->server_id = server.id;
	is->accepted = 0;
	is->hello_len = client.raw_len;
	memcpy(is->hello, client.raw, client.raw_len);
}

static issued *find_issued(lctx *x, const uint8_t *cookie)
{
	for (int i = 0; i < x->niss; i++)
		if (memcmp(x->iss[i].cookie, cookie, RN_COOKIE_LEN) == 0)
			return &x->iss[i];
	return NULL;
}

static void check_accept(lctx *x, int rail, rn_addr from, const uint8_t *req, size_t len,
			 const rn_accept_params *ap)
{
	rn_env env = { .mem = fz_mem_of(&x->conn_mem), .rng = fz_rng_next, .user = &x->rng };
	issued *is;
	rn_conn *c = NULL;
	rn_hello client;
	rn_pkt q;
	int rc;

	FZ_CHECK(rn_wire_decode(&q, req, len) == 0 && q.type == RN_PT_COOKIE_ECHO &&
			 rn_wire_read_hello(&client, q.payload, q.len, 1) == 0,
		 "ACCEPT for a datagram that is not a valid COOKIE_ECHO");
	is = find_issued(x, client.cookie);
	FZ_CHECK(is, "ACCEPT for a cookie this listener never issued");
	FZ_CHECK(!is->accepted, "a cookie accepted twice (a replayed COOKIE_ECHO)");
	is->accepted = 1;
	FZ_CHECK(fz_addr_eq(is->from, from), "cookie issued to %#x:%u accepted from %#x:%u",
		 is->from.ip, is->from.port, from.ip, from.port);
	FZ_CHECK(is->hello_len == client.raw_len && memcmp(is->hello, client.raw, client.raw_len) == 0,
		 "cookie accepted with other client parameters than it was issued for");
	FZ_CHECK(x->now - is->t_ns < COOKIE_LIFE_NS,
		 "cookie issued at %llu ns accepted at %llu ns (%.3f s later)",
		 (unsigned long long)is->t_ns, (unsigned long long)x->now,
		 (double)(x->now - is->t_ns) / 1e9);
	FZ_CHECK(q.dst == is->server_id && ap->id == is->server_id,
		 "COOKIE_ECHO to %#llx accepted as %#llx, cookie names %#llx",
		 (unsigned long long)q.dst, (unsigned long long)ap->id,
		 (unsigned long long)is->server_id);
	FZ_CHECK(ap->peer_id == client.id && ap->peer_isn == client.isn &&
			 ap->peer_slots == client.slots && fz_addr_eq(ap->from, from) &&
			 ap->local_rail == rail && ap->nlocal == x->l.nrails &&
			 ap->nremote == client.nrails && ap->isn == rn_get32(client.cookie + 8) &&
			 ap->dgram == (client.max_dgram < x->cfg.max_dgram ? client.max_dgram :
									     x->cfg.max_dgram),
		 "accept parameters differ from the handshake");

	rc = rn_conn_accept(&c, ap, &env, x->now);
	FZ_CHECK((rc == 0 && c && rn_conn_state(c) == RN_ST_ESTABLISHED) ||
			 (rc == RN_ERR_NOROUTE && !c),
		 "rn_conn_accept returned %d", rc);
	rn_conn_del(c);
	FZ_CHECK(x->conn_mem.live == 0, "rn_conn_accept/del leaked %ld allocations",
		 x->conn_mem.live);
}

/* One datagram into the listener, with every outcome checked. */
static int lrecv(lctx *x, int rail, rn_addr from, const uint8_t *pkt, size_t len, size_t cap)
{
	uint8_t *req = malloc(len ? len : 1), *reply = malloc(cap ? cap : 1);
	uint64_t drops = drops_total(&x->l), inits = x->l.inits, accepts = x->l.accepts;
	rn_accept_params ap;
	size_t rlen = SIZE_MAX;
	int rc;

	FZ_CHECK(req && reply, "out of memory");
	memcpy(req, pkt, len);
	memset(&ap, 0, sizeof(ap));
	uint64_t resets = x->l.resets;

	rc = rn_listener_recv(&x->l, x->now, rail, from, req, len, reply, cap, &rlen, &ap);
	switch (rc) {
	case RN_LISTEN_REPLY:
		check_reply(x, from, req, len, reply, rlen, cap);
		if (reply[1] == RN_PT_SRESET)
			FZ_CHECK(x->l.resets == resets + 1 && x->l.inits == inits &&
					 x->l.accepts == accepts && drops_total(&x->l) == drops + 1,
				 "a stateless reset not counted once");
		else
			FZ_CHECK(x->l.inits == inits + 1 && x->l.accepts == accepts &&
					 drops_total(&x->l) == drops,
				 "a reply not counted once as an INIT");
		break;
	case RN_LISTEN_ACCEPT:
		FZ_CHECK(rlen == 0, "ACCEPT with a %zu-byte reply", rlen);
		check_accept(x, rail, from, req, len, &ap);
		FZ_CHECK(x->l.accepts == accepts + 1 && x->l.inits == inits &&
				 drops_total(&x->l) == drops,
			 "an accept not counted once");
		break;
	case RN_ERR_DROP:
		FZ_CHECK(rlen == 0, "drop with a %zu-byte reply", rlen);
		FZ_CHECK(drops_total(&x->l) == drops + 1 && x->l.inits == inits &&
				 x->l.accepts == accepts,
			 "a drop not counted once");
		break;
	case RN_ERR_NOBUF:
		/* not in rn_core.h's list of returns: the reply did not fit */
		FZ_CHECK(cap < RN_HDR_LEN + HELLO_MAX + RN_COOKIE_LEN, "NOBUF with %zu bytes", cap);
		FZ_CHECK(x->l.inits == inits && x->l.accepts == accepts, "NOBUF counted as work");
		break;
	default:
		FZ_CHECK(0, "rn_listener_recv returned %d", rc);
	}
	free(req);
	free(reply);
	return rc;
}

/* A copy of pkt, cut short and mutated as the input says. */
static size_t mutated(fz_in *in, const uint8_t *pkt, size_t len, uint8_t *out)
{
	uint8_t n = fz_u8(in);

	memcpy(out, pkt, len);
	if (n & 8)
		len -= fz_u8(in) % (len + 1);
	return fz_mutate(in, out, len, n & 7);
}

/* A COOKIE_ECHO as the client would send it for issued cookie i. */
static size_t echo_issued(const issued *is, uint8_t *out, size_t cap)
{
	uint8_t body[HELLO_MAX + RN_COOKIE_LEN];
	rn_hdr h = { .type = RN_PT_COOKIE_ECHO, .dst = is->server_id };
	ssize_t n;

	memcpy(body, is->hello, is->hello_len);
	memcpy(body + is->hello_len, is->cookie, RN_COOKIE_LEN);
	n = rn_wire_encode(out, cap, &h, NULL, body, is->hello_len + RN_COOKIE_LEN);
	FZ_CHECK(n > 0, "cannot encode a COOKIE_ECHO");
	return (size_t)n;
}

/* An INIT from fields, padded as clients pad it. */
static size_t init_from(fz_in *in, uint8_t *out, size_t cap)
{
	uint8_t body[RN_INIT_LEN - RN_HDR_LEN] = { 0 };
	rn_hello h = { 0 };
	rn_hdr hd = { .type = RN_PT_INIT, .path = 0xff };
	ssize_t n;

	h.id = fz_u64(in);
	h.isn = fz_u32(in);
	h.slots = UINT32_C(1) << (fz_u8(in) % 20);
	h.max_dgram = fz_u16(in);
	h.nrails = (uint8_t)(fz_u8(in) % (RN_MAX_RAILS + 1));
	for (int i = 0; i < h.nrails; i++) {
		h.rails[i].ip = fz_u32(in);
		h.rails[i].port = fz_u16(in);
		h.rails[i].prefix = fz_u8(in);
	}
	FZ_CHECK(rn_wire_write_hello(body, sizeof(body), &h, NULL) > 0, "cannot write a hello");
	n = rn_wire_encode(out, cap, &hd, NULL, body, sizeof(body));
	FZ_CHECK(n == RN_INIT_LEN, "cannot encode an INIT");
	return (size_t)n;
}

static void run_op(lctx *x, fz_in *in)
{
	uint8_t b = fz_u8(in), pkt[FZ_MAX_PKT];
	int rsel = (b >> 3) & 3, a = (b >> 5) & 3;
	int rail = rsel < 2 ? rsel : rsel == 2 ? 2 : -1;
	size_t cap = (b & 0x80) ? fz_u8(in) : FZ_CAP;
	rn_addr from = fz_from(0, rsel & 1, a);
	size_t len;

	switch (b & 7) {
	case FZL_RAW:
		len = fz_bytes(in, pkt, fz_u16(in) % FZ_MAX_PKT);
		break;
	case FZL_MUT_INIT:
		len = mutated(in, g_real.init, g_real.init_len, pkt);
		break;
	case FZL_MUT_ECHO:
		len = mutated(in, g_real.echo, g_real.echo_len, pkt);
		break;
	case FZL_ECHO_ISSUED: {
		uint8_t i = fz_u8(in);
		uint8_t echo[FZ_MAX_PKT];

		if (x->niss == 0)
			return;
		len = echo_issued(&x->iss[i % x->niss], echo, sizeof(echo));
		len = mutated(in, echo, len, pkt);
		break;
	}
	case FZL_TIME: {
		unsigned shift = fz_u8(in) % 40;
		uint64_t dt = ((uint64_t)fz_u16(in) + 1) << shift;

		x->now = dt > FZ_TIME_MAX - x->now ? FZ_TIME_MAX : x->now + dt;
		return;
	}
	case FZL_INIT:
		len = init_from(in, pkt, sizeof(pkt));
		break;
	case FZL_REPLAY_INIT:
		memcpy(pkt, g_real.init, g_real.init_len);
		len = g_real.init_len;
		break;
	default: /* FZL_REPLAY_ECHO */
		memcpy(pkt, g_real.echo, g_real.echo_len);
		len = g_real.echo_len;
		break;
	}
	lrecv(x, rail, from, pkt, len, cap);
}

/* A fresh listener that has answered the real INIT exactly as in fz_pair. */
static void listener_open(lctx *x)
{
	rn_rail_addr rails[FZ_RAILS];
	rn_env env = { .mem = fz_mem_of(&x->mem), .rng = fz_rng_next, .user = &x->rng };
	rn_pkt k;
	rn_hello h;
	int rc;

	x->rng = FZ_SEED_SERVER;
	x->now = FZ_T0;
	x->niss = 0;
	x->mem = (fz_mem){ .forbid = 1, .who = "the listener" };
	x->conn_mem = (fz_mem){ .who = "rn_conn_accept" };
	fz_config(&x->cfg);
	for (int r = 0; r < FZ_RAILS; r++)
		rails[r] = fz_rail(1, r);
	rc = rn_listener_init(&x->l, &x->cfg, &env, rails, FZ_RAILS);
	FZ_CHECK(rc == 0, "rn_listener_init: %d", rc);
	rc = lrecv(x, 0, fz_addr(0, 0), g_real.init, g_real.init_len, FZ_CAP);
	FZ_CHECK(rc == RN_LISTEN_REPLY, "the real INIT got %d", rc);
	/* same seed, time and INIT: the same cookie as the pair's, so its echo is valid */
	FZ_CHECK(rn_wire_decode(&k, g_real.echo, g_real.echo_len) == 0 &&
			 rn_wire_read_hello(&h, k.payload, k.len, 1) == 0 &&
			 memcmp(h.cookie, x->iss[0].cookie, RN_COOKIE_LEN) == 0,
		 "the listener is not deterministic: its cookie differs from the pair's");
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	lctx *x = &g_ctx;
	fz_in in = { data, size };

	if (!g_real.ready)
		capture_real();
	listener_open(x);
	for (int ops = 0; in.n > 0 && ops < MAX_OPS; ops++)
		run_op(x, &in);
	return 0;
}
