/*
 * test_trust.c - the listener's reply limits tell a flood from a busy
 * client: a source that echoed a valid cookie is trusted and keeps its
 * handshakes at thousands a second, forged sources stay bounded.
 */
#include "unit_common.h"

#include <inttypes.h>

#include "rn_cookie.h"
#include "rn_wire.h"

static const uint32_t CLIENT_IP = UT_IP(10, 0, 1, 1);

typedef struct tr_fix {
	ut_mem um;
	ut_rng rng;
	rn_env env;
	rn_config cfg;
	rn_rail_addr rails[2];
	rn_listener l;
	uint64_t forged;   /* xorshift state for forged sources */
} tr_fix;

static int tr_setup(void **state)
{
	tr_fix *f = calloc(1, sizeof(*f));

	assert_non_null(f);
	f->env = (rn_env){ .mem = ut_mem_of(&f->um), .rng = ut_rng_next, .user = &f->rng };
	f->rng.state = 7;
	f->forged = 0x9e3779b97f4a7c15u;
	rn_config_default(&f->cfg);
	f->rails[0] = (rn_rail_addr){ .ip = UT_IP(10, 0, 1, 2), .port = 7000, .prefix = 24 };
	f->rails[1] = (rn_rail_addr){ .ip = UT_IP(10, 0, 2, 2), .port = 7000, .prefix = 24 };
	assert_int_equal(rn_listener_init(&f->l, &f->cfg, &f->env, f->rails, 2), 0);
	*state = f;
	return 0;
}

static int tr_teardown(void **state)
{
	free(*state);
	return 0;
}

static rn_hello hello_of(uint64_t id)
{
	rn_hello h = { .id = id, .isn = (uint32_t)id * 7, .slots = 1024, .max_dgram = 1472,
		       .nrails = 1 };

	h.rails[0] = (rn_rail_addr){ .ip = CLIENT_IP, .port = 40000, .prefix = 24 };
	return h;
}

/*
 * An INIT from `from` at now: RN_LISTEN_REPLY with the INIT_ACK's id and
 * cookie in *sid and cookie (never larger than the INIT), or RN_ERR_DROP.
 */
static int send_init(tr_fix *f, uint64_t now, rn_addr from, const rn_hello *h, uint64_t *sid,
		     uint8_t *cookie)
{
	uint8_t init[RN_INIT_LEN], body[RN_INIT_LEN - RN_HDR_LEN], reply[2048];
	rn_hdr hd = { .type = RN_PT_INIT, .path = 0xff };
	rn_accept_params ap;
	rn_hello sh;
	rn_pkt p;
	size_t rlen;
	int rc;

	memset(body, 0, sizeof(body));
	assert_true(rn_wire_write_hello(body, sizeof(body), h, NULL) > 0);
	assert_int_equal(rn_wire_encode(init, sizeof(init), &hd, NULL, body, sizeof(body)),
			 RN_INIT_LEN);
	rc = rn_listener_recv(&f->l, now, 0, from, init, sizeof(init), reply, sizeof(reply), &rlen,
			      &ap);
	if (rc != RN_LISTEN_REPLY)
		return rc;
	assert_true(rlen <= sizeof(init));
	assert_int_equal(rn_wire_decode(&p, reply, rlen), 0);
	assert_int_equal(rn_wire_read_hello(&sh, p.payload, p.len, 1), 0);
	*sid = sh.id;
	memcpy(cookie, sh.cookie, RN_COOKIE_LEN);
	return rc;
}

static int send_echo(tr_fix *f, uint64_t now, rn_addr from, const rn_hello *h, uint64_t sid,
		     const uint8_t *cookie)
{
	uint8_t body[256], echo[512], reply[2048];
	rn_hdr hd = { .type = RN_PT_COOKIE_ECHO, .path = 0, .dst = sid };
	ssize_t blen = rn_wire_write_hello(body, sizeof(body), h, cookie);
	rn_accept_params ap;
	size_t rlen;
	ssize_t n;

	assert_true(blen > 0);
	n = rn_wire_encode(echo, sizeof(echo), &hd, NULL, body, (size_t)blen);
	assert_true(n > 0);
	return rn_listener_recv(&f->l, now, 0, from, echo, (size_t)n, reply, sizeof(reply), &rlen,
				&ap);
}

/* One whole handshake from the client's port `port` at now; any step refused fails the test. */
static void handshake(tr_fix *f, uint64_t now, uint16_t port, uint64_t n)
{
	rn_hello h = hello_of(n + 1);
	rn_addr from = { .ip = CLIENT_IP, .port = port };
	uint8_t cookie[RN_COOKIE_LEN];
	uint64_t sid;

	if (send_init(f, now, from, &h, &sid, cookie) != RN_LISTEN_REPLY)
		fail_msg("handshake %" PRIu64 ": INIT dropped", n);
	if (send_echo(f, now + 100 * UT_US, from, &h, sid, cookie) != RN_LISTEN_ACCEPT)
		fail_msg("handshake %" PRIu64 ": COOKIE_ECHO refused", n);
}

/* An INIT from one of 16 forged sources outside the client's subnet; 1 if answered. */
static int forged_init(tr_fix *f, uint64_t now)
{
	rn_hello h = hello_of(f->forged);
	uint8_t cookie[RN_COOKIE_LEN];
	uint64_t sid;

	f->forged ^= f->forged << 13;
	f->forged ^= f->forged >> 7;
	f->forged ^= f->forged << 17;
	rn_addr from = { .ip = UT_IP(172, 16, 0, 1) + (uint32_t)(f->forged % 16), .port = 5000 };

	return send_init(f, now, from, &h, &sid, cookie) == RN_LISTEN_REPLY;
}

/* One client at 5,000 connects a second for 3 s: not one handshake dropped. */
static void test_trust_busy_client(void **state)
{
	tr_fix *f = *state;

	for (uint64_t i = 0; i < 15000; i++)
		handshake(f, UT_T0 + i * 200 * UT_US, (uint16_t)(30000 + i % 20000), i);
	assert_int_equal(f->l.drops[RN_DROP_RATE], 0);
	assert_int_equal(f->l.accepts, 15000);
	assert_int_equal(f->l.inits, 15000);
}

/*
 * The same client while 100,000 INITs a second come from forged sources:
 * the client loses nothing, and the 16 forged sources get no more than
 * their buckets allow (a burst each, then RN_RL_RATE a second).
 */
static void test_trust_flood_beside_client(void **state)
{
	tr_fix *f = *state;
	uint64_t answered = 0, sent = 0;

	for (uint64_t i = 0; i < 10000; i++) {
		uint64_t t = UT_T0 + i * 200 * UT_US;

		handshake(f, t, (uint16_t)(30000 + i % 20000), i);
		for (int k = 0; k < 20; k++, sent++)
			answered += (uint64_t)forged_init(f, t + (uint64_t)k * 10 * UT_US);
	}
	assert_int_equal(f->l.accepts, 10000);
	/* 2 s of forged INITs: at most a burst per source, then the rate */
	assert_true(answered <= 16 * (RN_RL_BURST + 2 * RN_RL_RATE + 1));
	assert_true(sent - answered >= sent / 2);
	assert_int_equal(f->l.drops[RN_DROP_RATE], sent - answered);
}

/*
 * Trust comes only from a valid cookie echoed from the address: INITs alone
 * or echoes that fail leave a source under its bucket's limit.  Once
 * trusted, a source forged by a flooder draws at most RN_TRUST_BURST
 * replies at once (each no larger than the INIT), and trust ends
 * RN_TRUST_NS after the source's last handshake.
 */
static void test_trust_earned_bounded_expires(void **state)
{
	tr_fix *f = *state;
	rn_addr from = { .ip = CLIENT_IP, .port = 40000 };
	rn_hello h = hello_of(1);
	uint8_t cookie[RN_COOKIE_LEN];
	uint64_t sid, got = 0, t = UT_T0;

	/* INITs and echoes with a flipped cookie bit: no trust, the bucket's burst */
	for (int i = 0; i < 2 * RN_RL_BURST; i++) {
		if (send_init(f, t, from, &h, &sid, cookie) != RN_LISTEN_REPLY)
			continue;
		got++;
		cookie[3] ^= 1;
		assert_int_equal(send_echo(f, t, from, &h, sid, cookie), RN_ERR_DROP);
	}
	assert_int_equal(got, RN_RL_BURST);
	/* a second later one valid handshake earns trust: a trusted burst at once */
	t += UT_S;
	handshake(f, t, 40000, 1);
	got = 0;
	for (int i = 0; i < 2 * RN_TRUST_BURST; i++)
		got += send_init(f, t + UT_MS, from, &h, &sid, cookie) == RN_LISTEN_REPLY;
	assert_int_equal(got, RN_TRUST_BURST);
	/* trust ends RN_TRUST_NS after that handshake's echo: back to the bucket's burst */
	got = 0;
	t += 100 * UT_US + RN_TRUST_NS;
	for (int i = 0; i < 2 * RN_RL_BURST; i++)
		got += send_init(f, t, from, &h, &sid, cookie) == RN_LISTEN_REPLY;
	assert_int_equal(got, RN_RL_BURST);
}

#define TR_TEST(f) cmocka_unit_test_setup_teardown(f, tr_setup, tr_teardown)

int main(void)
{
	const struct CMUnitTest tests[] = {
		TR_TEST(test_trust_busy_client),
		TR_TEST(test_trust_flood_beside_client),
		TR_TEST(test_trust_earned_bounded_expires),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
