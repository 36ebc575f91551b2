/*
 * test_railev.c - a driver's rail events in the core (rn_conn_rail_gone,
 * rn_conn_rail_back): the rail stops at once with the driver's cause and
 * what it held goes to the other rail; back, it carries data again, and a
 * rail both ends had judged dead is working both ways within a few round
 * trips, not at the next heartbeat.
 */
#include "unit_net.h"

static const uint64_t t0 = UT_T0;
#define MSS (1472 - RN_HDR_LEN)

static rn_conn *cl(un_net *n) { return n->side[UN_CLIENT].c; }

static rn_conn_stats stats(rn_conn *c)
{
	rn_conn_stats st;

	rn_conn_get_stats(c, &st);
	return st;
}

/* A pair whose rails have both carried a datagram each way (the keepalives after the handshake). */
static un_net *pair_proven(uint64_t *t)
{
	un_net *n = un_new(2);

	*t = un_handshake(n, t0) + 150 * UT_MS;
	un_run(n, *t);
	return n;
}

static int drop_rail1(un_net *n, const un_rec *r, void *arg)
{
	(void)n;
	(void)arg;
	return r->src_rail == 1 || r->dst_rail == 1;
}

static void test_gone_and_back(void **state)
{
	uint64_t t;
	un_net *n = pair_proven(&t);
	rn_conn *c = cl(n);
	static uint8_t buf[8 * MSS];
	const rn_event *ev;
	int on1;

	(void)state;
	n->filter = un_drop_all; /* nothing arrives: what was sent stays in flight */
	assert_int_equal(rn_conn_write(c, t, buf, sizeof(buf)), sizeof(buf));
	un_flush(n, UN_CLIENT, t);
	on1 = un_count(n, UN_CLIENT, RN_PT_DATA, 1, t, t);
	assert_true(on1 > 0);
	rn_conn_rail_gone(c, t + 1, 1, RN_CAUSE_ADDR_GONE);
	ev = un_event(n, UN_CLIENT, RN_EV_RAIL_DOWN, 1, 0);
	assert_non_null(ev);
	assert_int_equal(ev->cause, RN_CAUSE_ADDR_GONE);
	assert_int_equal(ev->tx_up, 0x1);
	assert_int_equal(stats(c).rail[1].last_cause, RN_CAUSE_ADDR_GONE);
	/* what rail 1 held goes out again on rail 0 at once; nothing more on rail 1 */
	un_flush(n, UN_CLIENT, t + 2);
	assert_true(un_count(n, UN_CLIENT, RN_PT_DATA, 0, t + 2, t + 2) >= on1);
	assert_int_equal(un_count(n, UN_CLIENT, RN_PT_DATA, 1, t + 2, t + 2), 0);
	/* said twice, or with the other cause: nothing new */
	rn_conn_rail_gone(c, t + 3, 1, RN_CAUSE_LINK_DOWN);
	assert_int_equal(un_event_count(n, UN_CLIENT, RN_EV_RAIL_DOWN), 1);
	/* back before the peer noticed anything: in use again at once */
	rn_conn_rail_back(c, t + 4, 1, RN_CAUSE_ADDR_BACK);
	ev = un_event(n, UN_CLIENT, RN_EV_RAIL_UP, 1, 0);
	assert_non_null(ev);
	assert_int_equal(ev->cause, RN_CAUSE_ADDR_BACK);
	assert_int_equal(ev->tx_up, 0x3);
	n->filter = NULL;
	un_run(n, t + 20 * UT_MS);
	assert_int_equal(rn_conn_write(c, t + 20 * UT_MS, buf, sizeof(buf)), sizeof(buf));
	un_flush(n, UN_CLIENT, t + 20 * UT_MS);
	assert_true(un_count(n, UN_CLIENT, RN_PT_DATA, 1, t + 20 * UT_MS, t + 20 * UT_MS) > 0);
	/* a rail the connection does not use */
	rn_conn_rail_gone(c, t + 21 * UT_MS, 5, RN_CAUSE_ADDR_GONE);
	assert_int_equal(un_event_count(n, UN_CLIENT, RN_EV_RAIL_DOWN), 1);
	un_del(n);
}

static void test_back_after_both_judged(void **state)
{
	uint64_t t, tb;
	un_net *n = pair_proven(&t);
	rn_conn *c = cl(n);
	const rn_event *ev;

	(void)state;
	/* the address goes, and stays gone long enough for both ends' verdicts */
	rn_conn_rail_gone(c, t, 1, RN_CAUSE_ADDR_GONE);
	n->filter = drop_rail1;
	un_run(n, t + 1000 * UT_MS);
	assert_int_equal(stats(c).rail[1].rx_up, 0);
	assert_int_equal(stats(n->side[UN_SERVER].c).rail[1].rx_up, 0);
	/* between two heartbeats: the next is tens of ms away */
	tb = t + 1050 * UT_MS;
	un_run(n, tb);
	n->filter = NULL;
	rn_conn_rail_back(c, tb, 1, RN_CAUSE_ADDR_BACK);
	un_timer(n, UN_CLIENT, tb);
	un_flush(n, UN_CLIENT, tb);
	assert_true(un_count(n, UN_CLIENT, RN_PT_HEARTBEAT, 1, tb, tb) > 0);
	/*
	 * The server, hearing rail 1 again but not allowed to send on it,
	 * answers with a heartbeat at once: both directions are back in a few
	 * round trips (100 us each here), far below the 100 ms heartbeat.
	 */
	un_run(n, tb + 5 * UT_MS);
	ev = un_event(n, UN_CLIENT, RN_EV_RAIL_UP, 1, tb);
	assert_non_null(ev);
	assert_true(ev->time_ns < tb + 2 * UT_MS);
	assert_int_equal(ev->tx_up, 0x3);
	assert_int_equal(ev->rx_up, 0x3);
	un_del(n);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_gone_and_back),
		cmocka_unit_test(test_back_after_both_judged),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
