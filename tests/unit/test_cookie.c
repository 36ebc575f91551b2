/*
 * test_cookie.c - the stateless handshake: the cookie itself, and the
 * listener that answers INIT and accepts COOKIE_ECHO without keeping state.
 */
#include "unit_common.h"

#include "rn_cookie.h"
#include "rn_wire.h"

static const uint64_t CLIENT_ID = UINT64_C(0x1111222233334444);
static const uint32_t CLIENT_ISN = 0xabcdef01;

static const rn_addr CLIENT_ADDR = { .ip = UT_IP(10, 0, 1, 1), .port = 40000 };

static rn_hello client_hello(void)
{
	rn_hello h = { .id = CLIENT_ID, .isn = CLIENT_ISN, .slots = 1024, .max_dgram = 9000,
		       .nrails = 2 };

	h.rails[0] = (rn_rail_addr){ .ip = UT_IP(10, 0, 1, 1), .port = 40000, .prefix = 24 };
	h.rails[1] = (rn_rail_addr){ .ip = UT_IP(10, 0, 2, 1), .port = 40001, .prefix = 24 };
	return h;
}

/* ---- the cookie ---- */

typedef struct ck_fix {
	uint8_t secret[RN_COOKIE_SECRET_LEN];
	uint8_t raw[128];
	rn_hello client;
	rn_cookie ck;
	uint8_t cookie[RN_COOKIE_LEN];
} ck_fix;

static void ck_setup(ck_fix *f)
{
	rn_hello h = client_hello();
	ssize_t n;

	for (int i = 0; i < RN_COOKIE_SECRET_LEN; i++)
		f->secret[i] = (uint8_t)(i * 11 + 3);
	n = rn_wire_write_hello(f->raw, sizeof(f->raw), &h, NULL);
	assert_true(n > 0);
	/* decoded, so raw/raw_len point at the bytes the MAC covers */
	assert_int_equal(rn_wire_read_hello(&f->client, f->raw, (size_t)n, 0), 0);
	f->ck = (rn_cookie){ .id = UINT64_C(0x5555666677778888), .isn = 42, .t_ms = 5000 };
	rn_cookie_make(f->cookie, f->secret, &f->ck, &f->client, CLIENT_ADDR);
}

static int ck_check(ck_fix *f, const uint8_t *cookie, rn_addr from, uint32_t now_ms)
{
	rn_cookie got;
	int rc = rn_cookie_check(&got, f->secret, cookie, &f->client, from, now_ms, 10000);

	if (rc == 0) {
		assert_true(got.id == f->ck.id);
		assert_int_equal(got.isn, f->ck.isn);
		assert_int_equal(got.t_ms, f->ck.t_ms);
	}
	return rc;
}

static void test_cookie_valid(void **state)
{
	ck_fix f;

	(void)state;
	ck_setup(&f);
	assert_int_equal(ck_check(&f, f.cookie, CLIENT_ADDR, 5000), 0);
	assert_int_equal(ck_check(&f, f.cookie, CLIENT_ADDR, 5001), 0);
	/* the age limit is inclusive */
	assert_int_equal(ck_check(&f, f.cookie, CLIENT_ADDR, 15000), 0);
	assert_int_equal(ck_check(&f, f.cookie, CLIENT_ADDR, 15001), -1);
	/* a cookie from the future (clock stepped back) is not fresh either */
	assert_int_equal(ck_check(&f, f.cookie, CLIENT_ADDR, 4999), -1);
}

/* Every single bit of the cookie is covered: its fields and its MAC. */
static void test_cookie_every_bit(void **state)
{
	ck_fix f;

	(void)state;
	ck_setup(&f);
	for (int bit = 0; bit < RN_COOKIE_LEN * 8; bit++) {
		uint8_t c[RN_COOKIE_LEN];

		memcpy(c, f.cookie, sizeof(c));
		c[bit / 8] ^= (uint8_t)(1u << (bit % 8));
		if (ck_check(&f, c, CLIENT_ADDR, 5000) != -1)
			fail_msg("cookie with bit %d flipped accepted", bit);
	}
}

/* The cookie is bound to the address it was sent to and the client's parameters. */
static void test_cookie_binding(void **state)
{
	ck_fix f;
	uint8_t other_secret[RN_COOKIE_SECRET_LEN];
	rn_cookie got;
	rn_addr other_ip = CLIENT_ADDR, other_port = CLIENT_ADDR;

	(void)state;
	other_ip.ip++;
	other_port.port++;
	ck_setup(&f);
	assert_int_equal(ck_check(&f, f.cookie, other_ip, 5000), -1);
	assert_int_equal(ck_check(&f, f.cookie, other_port, 5000), -1);
	/* the client's rails changed between INIT and COOKIE_ECHO */
	f.raw[RN_HELLO_FIXED + 3] ^= 1;
	assert_int_equal(ck_check(&f, f.cookie, CLIENT_ADDR, 5000), -1);
	f.raw[RN_HELLO_FIXED + 3] ^= 1;
	assert_int_equal(ck_check(&f, f.cookie, CLIENT_ADDR, 5000), 0);
	/* another listener's secret */
	memcpy(other_secret, f.secret, sizeof(other_secret));
	other_secret[0] ^= 0x80;
	assert_int_equal(rn_cookie_check(&got, other_secret, f.cookie, &f.client, CLIENT_ADDR, 5000,
					 10000), -1);
}

/* The millisecond clock in the cookie wraps after 49 days; age is wrap-safe. */
static void test_cookie_time_wraps(void **state)
{
	ck_fix f;

	(void)state;
	ck_setup(&f);
	f.ck.t_ms = 0xfffffff0;
	rn_cookie_make(f.cookie, f.secret, &f.ck, &f.client, CLIENT_ADDR);
	assert_int_equal(ck_check(&f, f.cookie, CLIENT_ADDR, 0x10), 0);
	assert_int_equal(ck_check(&f, f.cookie, CLIENT_ADDR, 10000), -1);
}

/* A valid MAC over id 0 still makes no connection: 0 means "no connection". */
static void test_cookie_id_zero(void **state)
{
	ck_fix f;

	(void)state;
	ck_setup(&f);
	f.ck.id = 0;
	rn_cookie_make(f.cookie, f.secret, &f.ck, &f.client, CLIENT_ADDR);
	assert_int_equal(ck_check(&f, f.cookie, CLIENT_ADDR, 5000), -1);
}

/* ---- the listener ---- */

typedef struct lis_fix {
	ut_mem um;
	ut_rng rng;
	rn_env env;
	rn_config cfg;
	rn_rail_addr rails[RN_MAX_RAILS];
	rn_listener l;
	/* what the INIT_ACK said */
	uint64_t server_id;
	uint32_t server_isn;
	uint8_t cookie[RN_COOKIE_LEN];
} lis_fix;

static int lis_setup(void **state)
{
	lis_fix *f = calloc(1, sizeof(*f));

	assert_non_null(f);
	f->env = (rn_env){ .mem = ut_mem_of(&f->um), .rng = ut_rng_next, .user = &f->rng };
	f->rng.state = 99;
	rn_config_default(&f->cfg);
	f->rails[0] = (rn_rail_addr){ .ip = UT_IP(10, 0, 1, 2), .port = 7000, .prefix = 24 };
	f->rails[1] = (rn_rail_addr){ .ip = UT_IP(10, 0, 2, 2), .port = 7000, .prefix = 24 };
	assert_int_equal(rn_listener_init(&f->l, &f->cfg, &f->env, f->rails, 2), 0);
	*state = f;
	return 0;
}

static int lis_teardown(void **state)
{
	lis_fix *f = *state;

	/* the listener never allocates: not at init, not per packet */
	assert_int_equal(f->um.allocs, 0);
	free(f);
	return 0;
}

static size_t make_init(uint8_t *buf, const rn_hello *h)
{
	uint8_t body[RN_INIT_LEN - RN_HDR_LEN];
	rn_hdr hd = { .type = RN_PT_INIT, .path = 0xff };

	memset(body, 0, sizeof(body));
	assert_true(rn_wire_write_hello(body, sizeof(body), h, NULL) > 0);
	assert_int_equal(rn_wire_encode(buf, RN_INIT_LEN, &hd, NULL, body, sizeof(body)),
			 RN_INIT_LEN);
	return RN_INIT_LEN;
}

static size_t make_echo(uint8_t *buf, const rn_hello *h, uint64_t dst, const uint8_t *cookie)
{
	uint8_t body[256];
	rn_hdr hd = { .type = RN_PT_COOKIE_ECHO, .path = 0, .dst = dst };
	ssize_t blen = rn_wire_write_hello(body, sizeof(body), h, cookie);
	ssize_t n;

	assert_true(blen > 0);
	n = rn_wire_encode(buf, 512, &hd, NULL, body, (size_t)blen);
	assert_true(n > 0);
	return (size_t)n;
}

/* Sends the INIT from `from` at now; checks and remembers the INIT_ACK. */
static void do_init(lis_fix *f, uint64_t now, rn_addr from, const rn_hello *client)
{
	uint8_t init[RN_INIT_LEN], reply[2048];
	size_t rlen = 12345;
	rn_accept_params ap;
	rn_hello sh;
	rn_pkt p;
	int rc;

	make_init(init, client);
	rc = rn_listener_recv(&f->l, now, 0, from, init, sizeof(init), reply, sizeof(reply), &rlen,
			      &ap);
	assert_int_equal(rc, RN_LISTEN_REPLY);
	/* never larger than the request: no amplification by forged INITs */
	assert_true(rlen <= sizeof(init));
	assert_int_equal(rn_wire_decode(&p, reply, rlen), 0);
	assert_int_equal(p.type, RN_PT_INIT_ACK);
	assert_true(p.dst == client->id);
	assert_false(p.flags & RN_F_ACK);
	assert_int_equal(rn_wire_read_hello(&sh, p.payload, p.len, 1), 0);
	assert_true(sh.id != 0);
	assert_int_equal(sh.slots, f->cfg.rcv_slots);
	assert_int_equal(sh.max_dgram, f->cfg.max_dgram);
	assert_int_equal(sh.nrails, f->l.nrails);
	for (int i = 0; i < f->l.nrails; i++) {
		assert_int_equal(sh.rails[i].ip, f->rails[i].ip);
		assert_int_equal(sh.rails[i].port, f->rails[i].port);
		assert_int_equal(sh.rails[i].prefix, f->rails[i].prefix);
	}
	f->server_id = sh.id;
	f->server_isn = sh.isn;
	memcpy(f->cookie, sh.cookie, RN_COOKIE_LEN);
}

static void test_cookie_listener_init_args(void **state)
{
	lis_fix *f = *state;
	rn_listener l;
	rn_config bad = f->cfg;
	rn_env norng = f->env;
	long calls;

	norng.rng = NULL;
	bad.rcv_slots = 100;
	assert_int_equal(rn_listener_init(&l, &f->cfg, &f->env, f->rails, 0), RN_ERR_INVAL);
	assert_int_equal(rn_listener_init(&l, &f->cfg, &f->env, f->rails, RN_MAX_RAILS + 1),
			 RN_ERR_INVAL);
	assert_int_equal(rn_listener_init(&l, &f->cfg, &norng, f->rails, 2), RN_ERR_INVAL);
	assert_int_equal(rn_listener_init(&l, &bad, &f->env, f->rails, 2), RN_ERR_INVAL);
	assert_int_equal(rn_listener_init(&l, NULL, &f->env, f->rails, 2), RN_ERR_INVAL);
	assert_int_equal(rn_listener_init(&l, &f->cfg, &f->env, NULL, 2), RN_ERR_INVAL);
	/* the secret comes from the rng: two listeners, two secrets */
	calls = f->rng.calls;
	assert_int_equal(rn_listener_init(&l, &f->cfg, &f->env, f->rails, 2), 0);
	assert_true(f->rng.calls > calls);
	assert_memory_not_equal(l.secret, f->l.secret, RN_COOKIE_SECRET_LEN);
	assert_true(l.cookie_life_ns == 10 * UT_S);
}

/* INIT -> INIT_ACK, then COOKIE_ECHO -> ACCEPT with everything the connection needs. */
static void test_cookie_listener_accept(void **state)
{
	lis_fix *f = *state;
	const uint64_t t0 = UT_T0;
	rn_hello ch = client_hello();
	uint8_t echo[512], reply[2048];
	size_t elen, rlen;
	rn_accept_params ap;

	do_init(f, t0, CLIENT_ADDR, &ch);
	assert_int_equal(f->l.inits, 1);
	elen = make_echo(echo, &ch, f->server_id, f->cookie);
	/* the echo may come in on another rail of the listener */
	assert_int_equal(rn_listener_recv(&f->l, t0 + 300 * UT_US, 1, CLIENT_ADDR, echo, elen,
					  reply, sizeof(reply), &rlen, &ap), RN_LISTEN_ACCEPT);
	assert_int_equal(rlen, 0);
	assert_int_equal(f->l.accepts, 1);
	assert_true(ap.id == f->server_id);
	assert_int_equal(ap.isn, f->server_isn);
	assert_true(ap.peer_id == CLIENT_ID);
	assert_int_equal(ap.peer_isn, CLIENT_ISN);
	/* the smaller of the two largest datagrams */
	assert_int_equal(ap.dgram, 1472);
	assert_int_equal(ap.peer_slots, 1024);
	assert_int_equal(ap.nlocal, 2);
	assert_int_equal(ap.local[1].ip, f->rails[1].ip);
	assert_int_equal(ap.nremote, 2);
	assert_int_equal(ap.remote[0].ip, ch.rails[0].ip);
	assert_int_equal(ap.remote[1].port, ch.rails[1].port);
	assert_int_equal(ap.remote[1].prefix, 24);
	assert_int_equal(ap.from.ip, CLIENT_ADDR.ip);
	assert_int_equal(ap.from.port, CLIENT_ADDR.port);
	assert_int_equal(ap.local_rail, 1);
	assert_int_equal(ap.cfg.rcv_slots, f->cfg.rcv_slots);
	for (int d = 0; d < RN_DROP__COUNT; d++)
		assert_int_equal(f->l.drops[d], 0);
}

/* A client with smaller datagrams sets the size. */
static void test_cookie_listener_accept_small_dgram(void **state)
{
	lis_fix *f = *state;
	rn_hello ch = client_hello();
	uint8_t echo[512], reply[2048];
	size_t rlen;
	rn_accept_params ap;

	ch.max_dgram = 1000;
	do_init(f, UT_T0, CLIENT_ADDR, &ch);
	assert_int_equal(rn_listener_recv(&f->l, UT_T0 + 1, 0, CLIENT_ADDR, echo,
					  make_echo(echo, &ch, f->server_id, f->cookie), reply,
					  sizeof(reply), &rlen, &ap), RN_LISTEN_ACCEPT);
	assert_int_equal(ap.dgram, 1000);
}

/* Every INIT gets its own id and isn, and every cookie stays valid: no state. */
static void test_cookie_listener_stateless(void **state)
{
	lis_fix *f = *state;
	rn_hello ch = client_hello();
	uint8_t echo[512], reply[2048], cookie1[RN_COOKIE_LEN];
	uint64_t id1;
	size_t rlen;
	rn_accept_params ap;

	do_init(f, UT_T0, CLIENT_ADDR, &ch);
	id1 = f->server_id;
	memcpy(cookie1, f->cookie, sizeof(cookie1));
	do_init(f, UT_T0 + 1 * UT_MS, CLIENT_ADDR, &ch);
	assert_true(f->server_id != id1);
	assert_int_equal(rn_listener_recv(&f->l, UT_T0 + 2 * UT_MS, 0, CLIENT_ADDR, echo,
					  make_echo(echo, &ch, id1, cookie1), reply, sizeof(reply),
					  &rlen, &ap), RN_LISTEN_ACCEPT);
	assert_true(ap.id == id1);
	assert_int_equal(rn_listener_recv(&f->l, UT_T0 + 3 * UT_MS, 0, CLIENT_ADDR, echo,
					  make_echo(echo, &ch, f->server_id, f->cookie), reply,
					  sizeof(reply), &rlen, &ap), RN_LISTEN_ACCEPT);
	assert_true(ap.id == f->server_id);
	assert_int_equal(f->l.inits, 2);
	assert_int_equal(f->l.accepts, 2);
}

/* However many rails the server lists, its INIT_ACK is no larger than an INIT. */
static void test_cookie_listener_reply_size(void **state)
{
	lis_fix *f = *state;
	rn_hello ch = client_hello();

	for (int n = 1; n <= RN_MAX_RAILS; n++) {
		for (int i = 0; i < n; i++)
			f->rails[i] = (rn_rail_addr){ .ip = UT_IP(10, 0, i + 1, 2), .port = 7000, .prefix = 24 };
		assert_int_equal(rn_listener_init(&f->l, &f->cfg, &f->env, f->rails, n), 0);
		do_init(f, UT_T0, CLIENT_ADDR, &ch); /* checks rlen <= RN_INIT_LEN */
	}
}

/* A flood of INITs from one source gets RN_RL_BURST replies, then RN_RL_RATE a second. */
static void test_cookie_listener_rate_limit(void **state)
{
	lis_fix *f = *state;
	rn_hello ch = client_hello();
	uint8_t init[RN_INIT_LEN], reply[2048];
	rn_addr other = { .ip = UT_IP(10, 0, 1, 77), .port = 40000 };
	rn_accept_params ap;
	size_t rlen;

	for (int i = 0; i < RN_RL_BURST; i++)
		do_init(f, UT_T0, CLIENT_ADDR, &ch);
	make_init(init, &ch);
	assert_int_equal(rn_listener_recv(&f->l, UT_T0, 0, CLIENT_ADDR, init, sizeof(init), reply,
					  sizeof(reply), &rlen, &ap), RN_ERR_DROP);
	assert_int_equal(rlen, 0);
	assert_int_equal(f->l.drops[RN_DROP_RATE], 1);
	/* another source has its own budget (unless it shares the bucket: then skip) */
	if (f->l.rl_tat[((other.ip ^ f->l.rl_salt) * UINT32_C(0x9e3779b1)) >> 24] == 0)
		do_init(f, UT_T0, other, &ch);
	/* a millisecond later the first source may have one more */
	do_init(f, UT_T0 + UT_MS, CLIENT_ADDR, &ch);
	assert_int_equal(rn_listener_recv(&f->l, UT_T0 + UT_MS, 0, CLIENT_ADDR, init, sizeof(init),
					  reply, sizeof(reply), &rlen, &ap), RN_ERR_DROP);
	assert_int_equal(f->l.drops[RN_DROP_RATE], 2);
	/* and after a quiet second, a whole burst again */
	for (int i = 0; i < RN_RL_BURST; i++)
		do_init(f, UT_T0 + 1002 * UT_MS, CLIENT_ADDR, &ch);
}

/* Sends the echo of the last INIT (f->cookie) at now; returns the listener's answer. */
static int echo_last(lis_fix *f, uint64_t now, const rn_hello *ch, rn_accept_params *ap)
{
	uint8_t echo[512], reply[2048];
	size_t rlen;

	return rn_listener_recv(&f->l, now, 0, CLIENT_ADDR, echo,
				make_echo(echo, ch, f->server_id, f->cookie), reply, sizeof(reply),
				&rlen, ap);
}

/*
 * A recorded COOKIE_ECHO sent again after its connection is gone builds no
 * second connection, however late within the cookie's life; a driver that
 * could not take the connection lets the client's next echo through once.
 */
static void test_cookie_listener_replay(void **state)
{
	lis_fix *f = *state;
	rn_hello ch = client_hello();
	rn_accept_params ap;

	do_init(f, UT_T0, CLIENT_ADDR, &ch);
	assert_int_equal(echo_last(f, UT_T0 + UT_MS, &ch, &ap), RN_LISTEN_ACCEPT);
	assert_int_equal(echo_last(f, UT_T0 + 2 * UT_MS, &ch, &ap), RN_ERR_DROP);
	assert_int_equal(echo_last(f, UT_T0 + 2 * UT_S, &ch, &ap), RN_ERR_DROP);
	assert_int_equal(echo_last(f, UT_T0 + 10 * UT_S, &ch, &ap), RN_ERR_DROP);
	assert_int_equal(f->l.accepts, 1);
	assert_int_equal(f->l.drops[RN_DROP_REPLAY], 3);
	assert_int_equal(f->l.drops[RN_DROP_COOKIE], 0);
	/* past its life it is just stale */
	assert_int_equal(echo_last(f, UT_T0 + 11 * UT_S, &ch, &ap), RN_ERR_DROP);
	assert_int_equal(f->l.drops[RN_DROP_COOKIE], 1);

	/* the driver had no room: the client's resent echo gets one more go */
	do_init(f, UT_T0 + 20 * UT_S, CLIENT_ADDR, &ch);
	assert_int_equal(echo_last(f, UT_T0 + 20 * UT_S + UT_MS, &ch, &ap), RN_LISTEN_ACCEPT);
	rn_listener_forget(&f->l, &ap);
	assert_int_equal(f->l.accepts, 1);
	assert_int_equal(echo_last(f, UT_T0 + 20 * UT_S + 2 * UT_MS, &ch, &ap), RN_LISTEN_ACCEPT);
	assert_int_equal(echo_last(f, UT_T0 + 20 * UT_S + 3 * UT_MS, &ch, &ap), RN_ERR_DROP);
	assert_int_equal(f->l.accepts, 2);
	assert_int_equal(f->l.drops[RN_DROP_REPLAY], 4);
}

/*
 * More live cookies accepted than the listener remembers: no cookie is ever
 * accepted twice, cookies issued after the oldest forgotten one still work,
 * and the memory stays what it was (the fixture checks no allocation).
 */
static void test_cookie_listener_replay_full(void **state)
{
	enum { N = RN_REPLAY_SLOTS + 300 };
	lis_fix *f = *state;
	rn_hello ch = client_hello();
	static uint8_t cookies[N][RN_COOKIE_LEN];
	static uint64_t ids[N];
	uint8_t unused[RN_COOKIE_LEN];
	uint64_t unused_id, t = UT_T0;
	rn_accept_params ap;

	/* one cookie issued and never echoed, before all the others */
	do_init(f, t, CLIENT_ADDR, &ch);
	memcpy(unused, f->cookie, RN_COOKIE_LEN);
	unused_id = f->server_id;
	for (int i = 0; i < N; i++) {
		t += UT_MS; /* 1 ms apart: within the rate limit and all alive at the end */
		do_init(f, t, CLIENT_ADDR, &ch);
		memcpy(cookies[i], f->cookie, RN_COOKIE_LEN);
		ids[i] = f->server_id;
		assert_int_equal(echo_last(f, t, &ch, &ap), RN_LISTEN_ACCEPT);
	}
	assert_int_equal(f->l.accepts, N);
	/* every one of them replayed: refused, remembered or under the floor */
	for (int i = 0; i < N; i++) {
		f->server_id = ids[i];
		memcpy(f->cookie, cookies[i], RN_COOKIE_LEN);
		if (echo_last(f, t + UT_MS, &ch, &ap) != RN_ERR_DROP)
			fail_msg("cookie %d of %d accepted twice", i, N);
	}
	assert_int_equal(f->l.drops[RN_DROP_REPLAY], N);
	assert_int_equal(f->l.accepts, N);
	/* the cookie issued before the floor cannot be told from a replay: refused */
	f->server_id = unused_id;
	memcpy(f->cookie, unused, RN_COOKIE_LEN);
	assert_int_equal(echo_last(f, t + UT_MS, &ch, &ap), RN_ERR_DROP);
	/* a new one works */
	do_init(f, t + 2 * UT_MS, CLIENT_ADDR, &ch);
	assert_int_equal(echo_last(f, t + 3 * UT_MS, &ch, &ap), RN_LISTEN_ACCEPT);
}

/* Sends the listener a datagram of `type` (with an ACK block when `ack`) to connection id dst. */
static int to_unknown(lis_fix *f, uint64_t now, uint8_t type, int ack, uint64_t dst,
		      uint8_t *reply, size_t *rlen, size_t *len)
{
	uint8_t pkt[256], pl[8] = { 0 };
	rn_hdr h = { .type = type, .path = 0, .dst = dst, .flags = ack ? RN_F_ACK : 0 };
	rn_ackblk ab = { .ack = 1, .wnd = 65 };
	size_t plen = type == RN_PT_LINK_ACK ? RN_LINK_ACK_LEN :
		      type == RN_PT_RESET ? RN_RESET_LEN : type == RN_PT_SRESET ? RN_SRESET_LEN : 0;
	ssize_t n;
	rn_accept_params ap;

	if (type == RN_PT_SRESET)
		pl[7] = 1;
	n = rn_wire_encode(pkt, sizeof(pkt) - RN_MAC_LEN, &h, ack ? &ab : NULL, pl, plen);
	assert_true(n > 0);
	if (f->cfg.keyed)
		n = rn_wire_seal(pkt, (size_t)n, sizeof(pkt), f->cfg.key, rn_config_seal_mode(&f->cfg));
	*len = (size_t)n;
	return rn_listener_recv(&f->l, now, 0, CLIENT_ADDR, pkt, (size_t)n, reply, 512, rlen, &ap);
}

/*
 * A datagram for an id the listener's host does not know (it restarted)
 * gets a stateless reset naming that id, no larger than the datagram;
 * resets, handshake replies and datagrams too small to pay for one get
 * none; the source's rate limit holds.
 */
static void test_cookie_listener_sreset(void **state)
{
	lis_fix *f = *state;
	const uint64_t dst = UINT64_C(0x0123456789abcdef);
	uint8_t reply[512];
	size_t rlen, len;
	rn_pkt k;

	assert_int_equal(to_unknown(f, UT_T0, RN_PT_KEEPALIVE, 1, dst, reply, &rlen, &len),
			 RN_LISTEN_REPLY);
	assert_true(rlen <= len);
	assert_int_equal(rn_wire_decode(&k, reply, rlen), 0);
	assert_int_equal(k.type, RN_PT_SRESET);
	assert_true(k.dst == 0);
	assert_true(rn_get64(k.payload) == dst);
	assert_true(rn_wire_peek_sreset(reply, rlen) == dst);
	assert_int_equal(f->l.resets, 1);
	assert_int_equal(f->l.drops[RN_DROP_UNKNOWN_CONN], 1);
	/* DATA, ACK: the same */
	assert_int_equal(to_unknown(f, UT_T0, RN_PT_ACK, 1, dst, reply, &rlen, &len),
			 RN_LISTEN_REPLY);
	/* never answered */
	assert_int_equal(to_unknown(f, UT_T0, RN_PT_RESET, 1, dst, reply, &rlen, &len),
			 RN_ERR_DROP);
	assert_int_equal(to_unknown(f, UT_T0, RN_PT_SRESET, 0, 0, reply, &rlen, &len),
			 RN_ERR_DROP);
	assert_int_equal(to_unknown(f, UT_T0, RN_PT_COOKIE_ACK, 0, dst, reply, &rlen, &len),
			 RN_ERR_DROP);
	/* a 24-byte keepalive cannot pay for a 32-byte reset: no amplification */
	assert_int_equal(to_unknown(f, UT_T0, RN_PT_KEEPALIVE, 0, dst, reply, &rlen, &len),
			 RN_ERR_DROP);
	assert_int_equal(rlen, 0);
	assert_int_equal(f->l.resets, 2);
	/* a flood from one source: a burst, then the rate */
	for (int i = 0; i < 2 * RN_RL_BURST; i++)
		to_unknown(f, UT_T0 + UT_MS, RN_PT_KEEPALIVE, 1, dst + (uint64_t)i, reply, &rlen,
			   &len);
	assert_true(f->l.resets <= RN_RL_BURST + 2);
	assert_true(f->l.resets_limited >= RN_RL_BURST);
}

/*
 * With a cluster key, datagrams of a connection are sealed under its own
 * keys (rn_crypt.h), which no listener holds: any such datagram for an
 * unknown id draws a reset, whose tag names the listener's rail address.  The
 * peer of a connection this host lost takes it; another host's listener (same
 * key, another address) makes a reset nobody takes.  A handshake datagram
 * without its cluster tag still draws nothing.
 */
static void test_cookie_listener_sreset_keyed(void **state)
{
	lis_fix *f = *state;
	uint8_t reply[512], pkt[256];
	size_t rlen, len;
	rn_addr mine = { .ip = f->rails[0].ip, .port = f->rails[0].port };
	rn_addr other = { .ip = f->rails[0].ip + 1, .port = f->rails[0].port };
	rn_hdr h = { .type = RN_PT_INIT };
	rn_accept_params ap;
	ssize_t n;

	f->cfg.keyed = 1;
	memset(f->cfg.key, 0x42, RN_KEY_LEN);
	assert_int_equal(rn_listener_init(&f->l, &f->cfg, &f->env, f->rails, 2), 0);
	assert_int_equal(to_unknown(f, UT_T0, RN_PT_KEEPALIVE, 1, 77, reply, &rlen, &len),
			 RN_LISTEN_REPLY);
	assert_true(rlen <= len);
	assert_int_equal(rn_wire_open_reset(reply, rlen, f->cfg.key, mine),
			 (ssize_t)(rlen - RN_MAC_LEN));
	assert_true(rn_wire_peek_sreset(reply, rlen) == 77);
	/* the same reset as if another host's listener had made it: refused */
	assert_int_equal(rn_wire_open_reset(reply, rlen, f->cfg.key, other), RN_ERR_DROP);
	assert_int_equal(rn_wire_open(reply, rlen, f->cfg.key, 0), RN_ERR_DROP);
	reply[RN_HDR_LEN] ^= 1;
	assert_int_equal(rn_wire_open_reset(reply, rlen, f->cfg.key, mine), RN_ERR_DROP);
	/* an INIT without its cluster tag: dropped, counted, unanswered */
	n = rn_wire_encode(pkt, sizeof(pkt), &h, NULL, NULL, 0);
	assert_true(n > 0);
	memset(pkt + n, 0, RN_INIT_LEN - (size_t)n);
	assert_int_equal(rn_listener_recv(&f->l, UT_T0, 0, CLIENT_ADDR, pkt, RN_INIT_LEN + RN_MAC_LEN,
					  reply, sizeof(reply), &rlen, &ap),
			 RN_ERR_DROP);
	assert_int_equal(f->l.drops[RN_DROP_AUTH], 1);
	assert_int_equal(f->l.resets, 1);
	/* the operator hears of it once, with the source; a second try within 1 s: not yet */
	{
		rn_addr bad = { .ip = 0, .port = 0 };

		assert_int_equal(rn_listener_take_bad_key(&f->l, UT_T0, &bad), 1);
		assert_int_equal(bad.ip, CLIENT_ADDR.ip);
		assert_int_equal(bad.port, CLIENT_ADDR.port);
		assert_int_equal(rn_listener_recv(&f->l, UT_T0 + UT_MS, 0, CLIENT_ADDR, pkt,
						  RN_INIT_LEN + RN_MAC_LEN, reply, sizeof(reply), &rlen, &ap),
				 RN_ERR_DROP);
		assert_int_equal(rn_listener_take_bad_key(&f->l, UT_T0 + UT_MS, &bad), 0);
		assert_int_equal(rn_listener_take_bad_key(&f->l, UT_T0 + UT_S, &bad), 1);
		assert_int_equal(rn_listener_take_bad_key(&f->l, UT_T0 + 3 * UT_S, &bad), 0);
	}
}

typedef struct echo_case {
	const char *name;
	int flip_bit;     /* bit of the cookie to flip, -1 none */
	rn_addr from;     /* {0}: the INIT's address */
	uint64_t later_ns;/* the echo arrives this long after the INIT */
	int64_t dst_delta;
	uint32_t slots;   /* client slots in the echo, 0: as in the INIT */
	uint32_t rail_ip; /* client rail 1 address in the echo, 0: as in the INIT */
	int want;
} echo_case;

static void test_cookie_listener_bad_cookie(void **state)
{
	static const echo_case cases[] = {
		{ "valid", -1, { 0 }, 1 * UT_MS, 0, 0, 0, RN_LISTEN_ACCEPT },
		{ "valid 9 s later", -1, { 0 }, 9 * UT_S, 0, 0, 0, RN_LISTEN_ACCEPT },
		{ "valid at the 10 s limit", -1, { 0 }, 10 * UT_S, 0, 0, 0, RN_LISTEN_ACCEPT },
		{ "expired: 11 s later", -1, { 0 }, 11 * UT_S, 0, 0, 0, RN_ERR_DROP },
		{ "expired: 10.001 s later", -1, { 0 }, 10001 * UT_MS, 0, 0, 0, RN_ERR_DROP },
		{ "bit 0 (id) flipped", 0, { 0 }, 1 * UT_MS, 0, 0, 0, RN_ERR_DROP },
		{ "bit 70 (isn) flipped", 70, { 0 }, 1 * UT_MS, 0, 0, 0, RN_ERR_DROP },
		{ "bit 100 (time) flipped", 100, { 0 }, 1 * UT_MS, 0, 0, 0, RN_ERR_DROP },
		{ "bit 255 (MAC) flipped", 255, { 0 }, 1 * UT_MS, 0, 0, 0, RN_ERR_DROP },
		{ "another source address", -1, { .ip = UT_IP(10, 0, 1, 9), .port = 40000 }, 1 * UT_MS, 0, 0, 0,
		  RN_ERR_DROP },
		{ "another source port", -1, { .ip = UT_IP(10, 0, 1, 1), .port = 40002 }, 1 * UT_MS, 0, 0, 0,
		  RN_ERR_DROP },
		{ "wrong destination id", -1, { 0 }, 1 * UT_MS, 1, 0, 0, RN_ERR_DROP },
		{ "client slots changed", -1, { 0 }, 1 * UT_MS, 0, 2048, 0, RN_ERR_DROP },
		{ "client rail changed", -1, { 0 }, 1 * UT_MS, 0, 0, UT_IP(10, 0, 3, 1),
		  RN_ERR_DROP },
	};
	lis_fix *f = *state;

	for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
		const echo_case *tc = &cases[i];
		rn_hello ch = client_hello();
		rn_addr from = tc->from.ip ? tc->from : CLIENT_ADDR;
		uint8_t echo[512], reply[2048], cookie[RN_COOKIE_LEN];
		uint64_t dropped = f->l.drops[RN_DROP_COOKIE], accepts = f->l.accepts;
		size_t rlen;
		rn_accept_params ap;
		int rc;

		do_init(f, UT_T0, CLIENT_ADDR, &ch);
		memcpy(cookie, f->cookie, sizeof(cookie));
		if (tc->flip_bit >= 0)
			cookie[tc->flip_bit / 8] ^= (uint8_t)(1u << (tc->flip_bit % 8));
		if (tc->slots)
			ch.slots = tc->slots;
		if (tc->rail_ip)
			ch.rails[1].ip = tc->rail_ip;
		rc = rn_listener_recv(&f->l, UT_T0 + tc->later_ns, 0, from, echo,
				      make_echo(echo, &ch, f->server_id + (uint64_t)tc->dst_delta,
						cookie),
				      reply, sizeof(reply), &rlen, &ap);
		if (rc != tc->want)
			fail_msg("case \"%s\": got %d, want %d", tc->name, rc, tc->want);
		if (tc->want == RN_ERR_DROP) {
			/* counted as a cookie failure, nothing accepted */
			assert_true(f->l.drops[RN_DROP_COOKIE] == dropped + 1);
			assert_true(f->l.accepts == accepts);
		}
	}
}

typedef struct ldrop_case {
	const char *name;
	int kind;       /* what to send, see below */
	int local_rail;
	rn_drop want;
} ldrop_case;

enum { K_SHORT, K_VERSION, K_DATA, K_INIT_BAD_HELLO, K_ECHO_BAD_HELLO, K_INIT };

static size_t make_kind(uint8_t *buf, int kind)
{
	rn_hello ch = client_hello();
	rn_hdr h = { .type = RN_PT_DATA, .dst = 77 };
	uint8_t cookie[RN_COOKIE_LEN] = { 0 };
	size_t n;

	switch (kind) {
	case K_SHORT:
		memset(buf, 0, 10);
		return 10;
	case K_VERSION:
		n = make_init(buf, &ch);
		buf[0] = 9;
		return n;
	case K_DATA:
		return (size_t)rn_wire_encode(buf, 512, &h, NULL, "abc", 3);
	case K_INIT_BAD_HELLO:
		n = make_init(buf, &ch);
		buf[RN_HDR_LEN + 20] = 0; /* no rails */
		return n;
	case K_ECHO_BAD_HELLO:
		n = make_echo(buf, &ch, 77, cookie);
		buf[RN_HDR_LEN + RN_HELLO_FIXED + 6] = 40; /* prefix 40 */
		return n;
	default:
		return make_init(buf, &ch);
	}
}

/* Whatever the listener cannot use is dropped, counted by reason, and answered with nothing. */
static void test_cookie_listener_drops(void **state)
{
	static const ldrop_case cases[] = {
		{ "10 bytes", K_SHORT, 0, RN_DROP_MALFORMED },
		{ "unknown version", K_VERSION, 0, RN_DROP_VERSION },
		{ "DATA for no connection", K_DATA, 0, RN_DROP_UNKNOWN_CONN },
		{ "INIT without rails", K_INIT_BAD_HELLO, 0, RN_DROP_MALFORMED },
		{ "COOKIE_ECHO with a bad rail", K_ECHO_BAD_HELLO, 0, RN_DROP_MALFORMED },
		{ "INIT on rail -1", K_INIT, -1, RN_DROP_SOURCE },
		{ "INIT on a rail the listener lacks", K_INIT, 2, RN_DROP_SOURCE },
	};
	lis_fix *f = *state;

	for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
		const ldrop_case *tc = &cases[i];
		uint8_t pkt[512], reply[2048];
		size_t len = make_kind(pkt, tc->kind), rlen = 999;
		uint64_t before = f->l.drops[tc->want];
		rn_accept_params ap;
		int rc = rn_listener_recv(&f->l, UT_T0, tc->local_rail, CLIENT_ADDR, pkt, len, reply,
					  sizeof(reply), &rlen, &ap);

		if (rc != RN_ERR_DROP || f->l.drops[tc->want] != before + 1)
			fail_msg("case \"%s\": rc %d, drops[%s] %llu -> %llu", tc->name, rc,
				 rn_drop_name(tc->want), (unsigned long long)before,
				 (unsigned long long)f->l.drops[tc->want]);
		assert_int_equal(rlen, 0);
	}
	assert_int_equal(f->l.inits, 0);
	assert_int_equal(f->l.accepts, 0);
}

static void test_cookie_listener_reply_nobuf(void **state)
{
	lis_fix *f = *state;
	rn_hello ch = client_hello();
	uint8_t init[RN_INIT_LEN], reply[64];
	size_t rlen;
	rn_accept_params ap;

	make_init(init, &ch);
	assert_int_equal(rn_listener_recv(&f->l, UT_T0, 0, CLIENT_ADDR, init, sizeof(init), reply,
					  sizeof(reply), &rlen, &ap), RN_ERR_NOBUF);
	assert_int_equal(rlen, 0);
	assert_int_equal(f->l.inits, 0);
}

#define LIS_TEST(f) cmocka_unit_test_setup_teardown(f, lis_setup, lis_teardown)

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_cookie_valid),
		cmocka_unit_test(test_cookie_every_bit),
		cmocka_unit_test(test_cookie_binding),
		cmocka_unit_test(test_cookie_time_wraps),
		cmocka_unit_test(test_cookie_id_zero),
		LIS_TEST(test_cookie_listener_init_args),
		LIS_TEST(test_cookie_listener_accept),
		LIS_TEST(test_cookie_listener_accept_small_dgram),
		LIS_TEST(test_cookie_listener_stateless),
		LIS_TEST(test_cookie_listener_replay),
		LIS_TEST(test_cookie_listener_replay_full),
		LIS_TEST(test_cookie_listener_sreset),
		LIS_TEST(test_cookie_listener_sreset_keyed),
		LIS_TEST(test_cookie_listener_reply_size),
		LIS_TEST(test_cookie_listener_rate_limit),
		LIS_TEST(test_cookie_listener_bad_cookie),
		LIS_TEST(test_cookie_listener_drops),
		LIS_TEST(test_cookie_listener_reply_nobuf),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
