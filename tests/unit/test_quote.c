/*
 * test_quote.c - an ICMP port unreachable's quote checked against what a
 * connection sent (rn_quote.c), and a connection that fails only once every
 * rail brought a genuine one (rn_conn_dead.c); literal timestamps.
 */
#include "unit_common.h"
#include "unit_net.h"

#include "rn_conn.h"
#include "rn_quote.h"

#define ID UINT64_C(0x1122334455667788)
#define NOW_US 5000000u
#define NXT 1000u

/* A quote as a table row changes it from the reference keepalive. */
typedef struct qcase {
	const char *name;
	uint8_t type, flags, path, version;
	uint64_t dst;
	uint32_t seq, ts;
	uint16_t reserved;
	size_t len;                  /* bytes quoted */
	uint8_t keyed;
	uint32_t epoch, count;       /* keyed: the quote's packet number... */
	uint32_t ref_epoch, ref_count; /* ...and the next one the sender would use */
	uint32_t now_us, nxt;        /* 0: NOW_US, NXT */
	rn_quote_verdict want;
} qcase;

static const qcase cases[] = {
	{ "keepalive", RN_PT_KEEPALIVE, 0, 1, 1, ID, 0, NOW_US - 500, 0, 44, 0, 0, 0, 0, 0, 0, 0, RN_QUOTE_OURS },
	{ "ack", RN_PT_ACK, RN_F_ACK, 1, 1, ID, 0, NOW_US - 500, 0, 64, 0, 0, 0, 0, 0, 0, 0, RN_QUOTE_OURS },
	{ "data just sent", RN_PT_DATA, 0, 1, 1, ID, NXT - 1, NOW_US, 0, 64, 0, 0, 0, 0, 0, 0, 0, RN_QUOTE_OURS },
	{ "data oldest in window", RN_PT_DATA, 0, 1, 1, ID, NXT - 65536, NOW_US, 0, 64, 0, 0, 0, 0, 0, 0, 0, RN_QUOTE_OURS },
	{ "data older than window", RN_PT_DATA, 0, 1, 1, ID, NXT - 65537, NOW_US, 0, 64, 0, 0, 0, 0, 0, 0, 0, RN_QUOTE_SEQ },
	{ "data not yet sent", RN_PT_DATA, 0, 1, 1, ID, NXT, NOW_US, 0, 64, 0, 0, 0, 0, 0, 0, 0, RN_QUOTE_SEQ },
	{ "data far ahead", RN_PT_DATA, 0, 1, 1, ID, NXT + 5000, NOW_US, 0, 64, 0, 0, 0, 0, 0, 0, 0, RN_QUOTE_SEQ },
	{ "data across the wrap", RN_PT_DATA, 0, 1, 1, ID, 0xfffffff0u, NOW_US, 0, 64, 0, 0, 0, 0, 0, 0, 5, RN_QUOTE_OURS },
	{ "wrong id", RN_PT_KEEPALIVE, 0, 1, 1, ID ^ 1, 0, NOW_US - 500, 0, 44, 0, 0, 0, 0, 0, 0, 0, RN_QUOTE_ID },
	{ "id zero", RN_PT_KEEPALIVE, 0, 1, 1, 0, 0, NOW_US - 500, 0, 44, 0, 0, 0, 0, 0, 0, 0, RN_QUOTE_ID },
	{ "other rail", RN_PT_KEEPALIVE, 0, 0, 1, ID, 0, NOW_US - 500, 0, 44, 0, 0, 0, 0, 0, 0, 0, RN_QUOTE_PATH },
	{ "handshake rail", RN_PT_KEEPALIVE, 0, 0xff, 1, ID, 0, NOW_US - 500, 0, 44, 0, 0, 0, 0, 0, 0, 0, RN_QUOTE_PATH },
	{ "ts in the future", RN_PT_KEEPALIVE, 0, 1, 1, ID, 0, NOW_US + 1, 0, 44, 0, 0, 0, 0, 0, 0, 0, RN_QUOTE_TS },
	{ "ts 2 s old", RN_PT_KEEPALIVE, 0, 1, 1, ID, 0, NOW_US - 2000000, 0, 44, 0, 0, 0, 0, 0, 0, 0, RN_QUOTE_OURS },
	{ "ts past 2 s", RN_PT_KEEPALIVE, 0, 1, 1, ID, 0, NOW_US - 2000001, 0, 44, 0, 0, 0, 0, 0, 0, 0, RN_QUOTE_TS },
	{ "ts across the wrap", RN_PT_KEEPALIVE, 0, 1, 1, ID, 0, 0xffffff00u, 0, 44, 0, 0, 0, 0, 0, 100, 0, RN_QUOTE_OURS },
	{ "truncated header", RN_PT_KEEPALIVE, 0, 1, 1, ID, 0, NOW_US, 0, 23, 0, 0, 0, 0, 0, 0, 0, RN_QUOTE_SHORT },
	{ "nothing quoted", RN_PT_KEEPALIVE, 0, 1, 1, ID, 0, NOW_US, 0, 0, 0, 0, 0, 0, 0, 0, 0, RN_QUOTE_SHORT },
	{ "version 2", RN_PT_KEEPALIVE, 0, 1, 2, ID, 0, NOW_US, 0, 44, 0, 0, 0, 0, 0, 0, 0, RN_QUOTE_HEADER },
	{ "unknown flag", RN_PT_DATA, 0x80, 1, 1, ID, NXT - 1, NOW_US, 0, 64, 0, 0, 0, 0, 0, 0, 0, RN_QUOTE_HEADER },
	{ "reserved bytes", RN_PT_KEEPALIVE, 0, 1, 1, ID, 0, NOW_US, 7, 44, 0, 0, 0, 0, 0, 0, 0, RN_QUOTE_HEADER },
	{ "init", RN_PT_INIT, 0, 1, 1, ID, 0, NOW_US, 0, 64, 0, 0, 0, 0, 0, 0, 0, RN_QUOTE_TYPE },
	{ "reset", RN_PT_RESET, 0, 1, 1, ID, 0, NOW_US, 0, 28, 0, 0, 0, 0, 0, 0, 0, RN_QUOTE_TYPE },
	{ "stateless reset", RN_PT_SRESET, 0, 1, 1, ID, 0, NOW_US, 0, 32, 0, 0, 0, 0, 0, 0, 0, RN_QUOTE_TYPE },
	{ "type 0", 0, 0, 1, 1, ID, 0, NOW_US, 0, 44, 0, 0, 0, 0, 0, 0, 0, RN_QUOTE_TYPE },
	{ "type past the last", RN_PT__MAX + 1, 0, 1, 1, ID, 0, NOW_US, 0, 44, 0, 0, 0, 0, 0, 0, 0, RN_QUOTE_TYPE },
	/* keyed: the packet number after the header */
	{ "keyed, last pn", RN_PT_KEEPALIVE, 0, 1, 1, ID, 0, NOW_US, 0, 64, 1, 3, 10, 3, 11, 0, 0, RN_QUOTE_OURS },
	{ "keyed, pn not yet used", RN_PT_KEEPALIVE, 0, 1, 1, ID, 0, NOW_US, 0, 64, 1, 3, 11, 3, 11, 0, 0, RN_QUOTE_PN },
	{ "keyed, pn long ago", RN_PT_KEEPALIVE, 0, 1, 1, ID, 0, NOW_US, 0, 64, 1, 3, 10, 3, 70000, 0, 0, RN_QUOTE_PN },
	{ "keyed, epoch before a young one", RN_PT_KEEPALIVE, 0, 1, 1, ID, 0, NOW_US, 0, 64, 1, 2, 2000000, 3, 5, 0, 0, RN_QUOTE_OURS },
	{ "keyed, epoch before an old one", RN_PT_KEEPALIVE, 0, 1, 1, ID, 0, NOW_US, 0, 64, 1, 2, 2000000, 3, 70000, 0, 0, RN_QUOTE_PN },
	{ "keyed, epoch ahead", RN_PT_KEEPALIVE, 0, 1, 1, ID, 0, NOW_US, 0, 64, 1, 4, 0, 3, 5, 0, 0, RN_QUOTE_PN },
	{ "keyed, no pn quoted", RN_PT_KEEPALIVE, 0, 1, 1, ID, 0, NOW_US, 0, 24, 1, 3, 10, 3, 11, 0, 0, RN_QUOTE_SHORT },
	{ "keyed, wrong id", RN_PT_KEEPALIVE, 0, 1, 1, ID ^ 0x100, 0, NOW_US, 0, 64, 1, 3, 10, 3, 11, 0, 0, RN_QUOTE_ID },
};

static void test_quote_table(void **state)
{
	(void)state;
	for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
		const qcase *t = &cases[i];
		uint8_t q[64] = { 0 };
		rn_quote_ref ref = { .peer_id = ID, .path = 1, .now_us = t->now_us ? t->now_us : NOW_US,
				     .seq_nxt = t->nxt ? t->nxt : NXT, .keyed = t->keyed,
				     .pn_epoch = t->ref_epoch, .pn_count = t->ref_count };
		rn_quote_verdict got;

		q[0] = t->version;
		q[1] = t->type;
		q[2] = t->flags;
		q[3] = t->path;
		rn_put64(q + 4, t->dst);
		rn_put32(q + 12, t->seq);
		rn_put32(q + 16, t->ts);
		rn_put16(q + 20, 20);
		rn_put16(q + 22, t->reserved);
		rn_put32(q + 24, t->epoch);
		rn_put32(q + 28, t->count);
		got = rn_quote_check(&ref, q, t->len);
		if (got != t->want)
			fail_msg("%s: verdict %d, want %d", t->name, got, t->want);
	}
}

/* A datagram side s has in flight on local rail k: its first 64 bytes in q (0: none). */
static size_t queued_on(const un_net *n, int s, int k, uint8_t q[64])
{
	for (int i = 0; i < n->nq; i++)
		if (n->q[i].rec.from == s && n->q[i].rec.src_rail == k) {
			size_t len = n->q[i].rec.len < 64 ? n->q[i].rec.len : 64;

			memcpy(q, n->q[i].data, len);
			return len;
		}
	return 0;
}

/* Steps the network from *t until the client has a datagram in flight on both rails. */
static void catch_both(un_net *n, uint64_t *t, uint8_t q0[64], size_t *l0, uint8_t q1[64],
		       size_t *l1)
{
	*l0 = *l1 = 0;
	for (int i = 0; i < 10000 && !(*l0 && *l1); i++) {
		*t += 50 * UT_US;
		un_step(n, *t);
		if (!*l0)
			*l0 = queued_on(n, UN_CLIENT, 0, q0);
		if (!*l1)
			*l1 = queued_on(n, UN_CLIENT, 1, q1);
	}
	assert_true(*l0 && *l1);
}

/*
 * Two rails, keyed and not: the client sends on both; port unreachables
 * quoting its real datagrams arrive.  One rail's, however often, fails
 * nothing; forged ones (another id, another rail's datagram, another
 * destination) are not taken; the second rail's real one resets the
 * connection.
 */
static void test_dead_peer_all_rails(void **state)
{
	(void)state;
	for (int keyed = 0; keyed < 2; keyed++) {
		un_net *n = un_new(2);
		uint8_t q0[64], q1[64], bad[64];
		size_t l0, l1;
		rn_addr s0, s1;
		uint64_t t;
		rn_conn *c;
		rn_conn_stats st;

		for (int s = 0; s < 2 && keyed; s++) {
			n->side[s].cfg.keyed = 1;
			memset(n->side[s].cfg.key, 0x5a, RN_KEY_LEN);
		}
		t = un_handshake(n, UT_T0);
		c = n->side[UN_CLIENT].c;
		s0 = un_addr(n, UN_SERVER, 0);
		s1 = un_addr(n, UN_SERVER, 1);
		/* the client streams: DATA on both rails */
		n->side[UN_CLIENT].to_send = 200000;
		catch_both(n, &t, q0, &l0, q1, &l1);
		assert_true(l0 >= RN_HDR_LEN + (keyed ? RN_PN_LEN : 0u));
		t += UT_MS;

		/* one rail's errors, even many: the other rail still has the peer */
		un_flush(n, UN_CLIENT, t);
		for (int i = 0; i < 5; i++)
			assert_int_equal(rn_conn_unreachable(c, t + (uint64_t)i * UT_MS, 0, s0, q0, l0), 1);
		assert_int_equal(rn_conn_state(c), RN_ST_ESTABLISHED);
		/* ...but rail 1 is asked at once, not at its next keepalive */
		un_flush(n, UN_CLIENT, t + 4 * UT_MS);
		assert_true(un_count(n, UN_CLIENT, RN_PT_KEEPALIVE, 1, t + 4 * UT_MS, t + 4 * UT_MS + 1) >= 1);

		/* forgeries on rail 1: another id, rail 0's datagram, a truncated quote */
		memcpy(bad, q1, l1);
		bad[11] ^= 1;
		assert_int_equal(rn_conn_unreachable(c, t, 1, s1, bad, l1), 0);
		assert_int_equal(rn_conn_unreachable(c, t, 1, s1, q0, l0), 0);
		assert_int_equal(rn_conn_unreachable(c, t, 1, s1, q1, RN_HDR_LEN - 1), 0);
		/* the real datagram named at another destination, or on the wrong socket */
		assert_int_equal(rn_conn_unreachable(c, t, 1,
						     (rn_addr){ .ip = s1.ip,
								.port = (uint16_t)(s1.port + 1) },
						     q1, l1),
				 0);
		assert_int_equal(rn_conn_unreachable(c, t, 0, s1, q1, l1), 0);
		/* the real one, but 2 s late: its send time is out of the span */
		assert_int_equal(rn_conn_unreachable(c, t + 2100 * UT_MS, 1, s1, q1, l1), 0);
		assert_int_equal(rn_conn_state(c), RN_ST_ESTABLISHED);
		rn_conn_get_stats(c, &st);
		assert_int_equal(st.unreach_ours, 5);
		/* four named our rail but quoted another datagram; two named no rail of ours */
		assert_int_equal(st.unreach_foreign, 4);

		/* rail 1's own: every rail answered, the peer process is gone */
		assert_int_equal(rn_conn_unreachable(c, t + 10 * UT_MS, 1, s1, q1, l1), 1);
		assert_int_equal(rn_conn_state(c), RN_ST_CLOSED);
		assert_int_equal(rn_conn_error(c), RN_ERR_RESET);
		un_del(n);
	}
}

/* Evidence too far apart in time: rail 0's expired before rail 1's came. */
static void test_dead_peer_window(void **state)
{
	un_net *n = un_new(2);
	uint8_t q0[64], q1[64];
	size_t l0, l1;
	uint64_t t;
	rn_conn *c;

	(void)state;
	t = un_handshake(n, UT_T0);
	c = n->side[UN_CLIENT].c;
	n->side[UN_CLIENT].to_send = 100000000;
	catch_both(n, &t, q0, &l0, q1, &l1);
	/* rail 0 answered at t; rail 1 only 2.5 s later, about a datagram of then */
	assert_int_equal(rn_conn_unreachable(c, t, 0, un_addr(n, UN_SERVER, 0), q0, l0), 1);
	un_run(n, t + 2500 * UT_MS);
	t = n->now;
	catch_both(n, &t, q0, &l0, q1, &l1);
	assert_int_equal(rn_conn_unreachable(c, t, 1, un_addr(n, UN_SERVER, 1), q1, l1), 1);
	assert_int_equal(rn_conn_state(c), RN_ST_ESTABLISHED);
	/* rail 0 again, now: both within the window */
	assert_int_equal(rn_conn_unreachable(c, t, 0, un_addr(n, UN_SERVER, 0), q0, l0), 1);
	assert_int_equal(rn_conn_error(c), RN_ERR_RESET);
	un_del(n);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_quote_table),
		cmocka_unit_test(test_dead_peer_all_rails),
		cmocka_unit_test(test_dead_peer_window),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
