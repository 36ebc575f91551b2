/*
 * test_rails.c - a rail that appears while a connection lives
 * (rn_conn_rail_add, RAILS and RAILS_ACK): at either end it becomes a path
 * both ends number alike, it carries data within a few round trips, the
 * stream loses nothing, and a lost RAILS is resent until acknowledged; a
 * rail that takes another address (rn_conn_rail_readdr) keeps its path.
 */
#include "unit_net.h"

static const uint64_t t0 = UT_T0;

static rn_conn_stats stats(rn_conn *c)
{
	rn_conn_stats st;

	rn_conn_get_stats(c, &st);
	return st;
}

/* Two rails at the handshake; side `late` has a third that appears later. */
static un_net *pair_late(int late, uint64_t *t)
{
	un_net *n = un_new(3);

	n->side[late].nrails = 2;
	n->side[late].writable = 0x3;
	*t = un_handshake(n, t0) + 10 * UT_MS;
	un_run(n, *t);
	for (int s = 0; s < 2; s++)
		assert_int_equal(stats(n->side[s].c).npaths, 2);
	return n;
}

/* Side `late`'s third rail appears at t, mid-stream. */
static void appear(un_net *n, int late, uint64_t t)
{
	un_side *sd = &n->side[late];

	sd->nrails = 3;
	sd->writable = 0x7;
	assert_int_equal(rn_conn_rail_add(sd->c, t, 2, &sd->rails[2]), 0);
}

/* Streams both ways while `late`'s rail appears; every byte checked, path 2 carries data. */
static un_net *run_appear(int late, un_filter filter)
{
	uint64_t t;
	un_net *n = pair_late(late, &t);
	const uint64_t bytes = 20000000;
	const rn_event *ev;

	/* the stream runs (the simulated rails are fast: a third of it is through in 2 ms) */
	for (int s = 0; s < 2; s++) {
		n->side[s].to_send = bytes / 3;
		n->side[s].reading = 1;
	}
	un_run(n, t + 2 * UT_MS);
	for (int s = 0; s < 2; s++) {
		assert_true(n->side[s].recvd > 0);
		n->side[s].to_send = 2 * bytes / 3;
	}
	n->filter = filter;
	appear(n, late, t + 2 * UT_MS);
	/* the last third after RAILS retries (5 ms on) had their time */
	un_run(n, t + 60 * UT_MS);
	for (int s = 0; s < 2; s++) {
		n->side[s].to_send = bytes;
		n->side[s].shut_when_done = 1;
	}
	un_run(n, t + 3 * UT_S);
	for (int s = 0; s < 2; s++) {
		rn_conn_stats st = stats(n->side[s].c);

		assert_int_equal(st.npaths, 3);
		assert_int_equal(n->side[s].recvd, bytes);
		assert_int_equal(n->side[s].mismatches, 0);
		assert_int_equal(n->side[s].err, 0);
		assert_true(n->side[s].eof);
		/* the new path, numbered alike at both ends, carried data each way */
		assert_true(un_count(n, s, RN_PT_DATA, 2, 0, UINT64_MAX) > 10);
		assert_true(st.rail[2].rx_data > 10);
		assert_int_equal(st.drops[RN_DROP_MALFORMED], 0);
		ev = un_event(n, s, RN_EV_RAIL_UP, 2, 0);
		assert_non_null(ev);
		assert_int_equal(ev->cause, RN_CAUSE_RAIL_NEW);
	}
	/* the client numbered it: it sent a RAILS either way */
	assert_true(un_count(n, UN_CLIENT, RN_PT_RAILS, -1, 0, UINT64_MAX) > 0);
	return n;
}

static void test_client_rail_appears(void **state)
{
	(void)state;
	un_del(run_appear(UN_CLIENT, NULL));
}

static void test_server_rail_appears(void **state)
{
	(void)state;
	un_del(run_appear(UN_SERVER, NULL));
}

/* The first round of RAILS copies is lost (one per path): the retry brings the path anyway. */
static int drop_first_rails(un_net *n, const un_rec *r, void *arg)
{
	static int dropped;

	(void)n;
	(void)arg;
	if (r == NULL)
		return dropped = 0;
	return r->type == RN_PT_RAILS && dropped < 3 ? ++dropped : 0;
}

static void test_rails_lost_resent(void **state)
{
	(void)state;
	for (int late = 0; late < 2; late++) {
		un_net *n;

		drop_first_rails(NULL, NULL, NULL);
		n = run_appear(late, drop_first_rails);
		/* the lost copies were sent again, and the retries stopped once acknowledged */
		assert_true(un_count(n, late, RN_PT_RAILS, -1, 0, UINT64_MAX) > 3);
		assert_true(un_count(n, !late, RN_PT_RAILS_ACK, -1, 0, UINT64_MAX) > 0);
		assert_int_equal(un_count(n, late, RN_PT_RAILS, -1, n->now - UT_S, UINT64_MAX), 0);
		un_del(n);
	}
}

/* A rail in no subnet the peer has makes no path, and changes nothing else. */
static void test_rail_without_peer(void **state)
{
	uint64_t t;
	un_net *n = pair_late(UN_CLIENT, &t);
	un_side *sd = &n->side[UN_CLIENT];

	(void)state;
	sd->rails[2].ip = UT_IP(10, 9, 9, 1);
	appear(n, UN_CLIENT, t);
	un_run(n, t + 200 * UT_MS);
	for (int s = 0; s < 2; s++)
		assert_int_equal(stats(n->side[s].c).npaths, 2);
	/* the server heard and acknowledged it: the RAILS is no longer resent */
	assert_true(un_count(n, UN_SERVER, RN_PT_RAILS_ACK, -1, 0, UINT64_MAX) > 0);
	assert_int_equal(un_count(n, UN_CLIENT, RN_PT_RAILS, -1, t + 100 * UT_MS, UINT64_MAX), 0);
	/* and its index is checked */
	assert_int_equal(rn_conn_rail_add(sd->c, t, 5, &sd->rails[2]), RN_ERR_INVAL);
	un_del(n);
}

/*
 * Side `moving`'s rail 1 takes another address in its subnet mid-stream (the
 * driver rebound it): the peer hears it in a RAILS, addresses path 1 there,
 * and the path carries data both ways again; nothing is lost.
 */
static void run_readdr(int moving)
{
	un_net *n = un_new(2);
	un_side *sd = &n->side[moving];
	uint64_t t = un_handshake(n, t0) + 10 * UT_MS;
	const uint64_t bytes = 20000000;
	rn_rail_addr was = sd->rails[1];
	rn_conn_stats st;
	uint64_t rx1[2];

	for (int s = 0; s < 2; s++) {
		n->side[s].to_send = bytes / 3;
		n->side[s].reading = 1;
	}
	un_run(n, t + 2 * UT_MS);
	t += 2 * UT_MS;
	/* what the core refuses: no such rail, the other family, no address */
	rn_rail_addr v6 = { .v6 = 1, .ip6 = { 0x20, 0x01, 0, 2 }, .prefix = 64, .port = was.port };
	rn_rail_addr none = { .prefix = 24, .port = was.port };

	v6.ip6[15] = 1;
	assert_int_equal(rn_conn_rail_readdr(sd->c, t, 2, &was), RN_ERR_INVAL);
	assert_int_equal(rn_conn_rail_readdr(sd->c, t, 1, &v6), RN_ERR_INVAL);
	assert_int_equal(rn_conn_rail_readdr(sd->c, t, 1, &none), RN_ERR_INVAL);
	sd->rails[1].ip = (was.ip & 0xffffff00u) | 0x77u; /* the old address is gone from the net */
	assert_int_equal(rn_conn_rail_readdr(sd->c, t, 1, &sd->rails[1]), 0);
	for (int s = 0; s < 2; s++)
		n->side[s].to_send = 2 * bytes / 3;
	/* the last third once the RAILS (and any retry, 5 ms on) had their time */
	un_run(n, t + 60 * UT_MS);
	for (int s = 0; s < 2; s++) {
		rx1[s] = stats(n->side[s].c).rail[1].rx_data;
		n->side[s].to_send = bytes;
		n->side[s].shut_when_done = 1;
	}
	un_run(n, t + 3 * UT_S);
	for (int s = 0; s < 2; s++) {
		st = stats(n->side[s].c);
		assert_int_equal(st.npaths, 2);
		/* each end took DATA on path 1 from then on: the peer's new address is its own */
		assert_true(st.rail[1].rx_data > rx1[s] + 10);
		assert_int_equal(n->side[s].recvd, bytes);
		assert_int_equal(n->side[s].mismatches, 0);
		assert_int_equal(n->side[s].err, 0);
		assert_true(n->side[s].eof);
		/* path 1 carried data each way after the change (the RAILS had 60 ms) */
		assert_true(un_count(n, s, RN_PT_DATA, 1, t + 60 * UT_MS, UINT64_MAX) > 10);
	}
	st = stats(n->side[!moving].c);
	assert_true(rn_addr_eq(st.rail[1].remote, rn_addr_of_rail(&sd->rails[1])));
	st = stats(sd->c);
	assert_true(rn_addr_eq(st.rail[1].local, rn_addr_of_rail(&sd->rails[1])));
	assert_true(un_count(n, moving, RN_PT_RAILS, -1, t, UINT64_MAX) > 0);
	assert_true(un_count(n, !moving, RN_PT_RAILS_ACK, -1, t, UINT64_MAX) > 0);
	un_del(n);
}

static void test_client_rail_readdressed(void **state)
{
	(void)state;
	run_readdr(UN_CLIENT);
}

static void test_server_rail_readdressed(void **state)
{
	(void)state;
	run_readdr(UN_SERVER);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_client_rail_appears),
		cmocka_unit_test(test_server_rail_appears),
		cmocka_unit_test(test_rails_lost_resent),
		cmocka_unit_test(test_rail_without_peer),
		cmocka_unit_test(test_client_rail_readdressed),
		cmocka_unit_test(test_server_rail_readdressed),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
