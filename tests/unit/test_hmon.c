/*
 * test_hmon.c - rn_hmon: the peer monitor as the BTL and the libfabric
 * provider drive it (src/host/rn_hmon.h).
 *
 * Two in-memory networks with the same addresses stand for two connections
 * between the same two processes (as the provider's outbound connections
 * of each side are): the client ends must share one peer.  Literal
 * timestamps.
 */
#define _GNU_SOURCE /* rn_hsock.h: struct mmsghdr */
#include "unit_net.h"

#include "rn_hmon.h"

static const uint64_t t0 = UT_T0;

static rn_conn *cli(un_net *n) { return n->side[UN_CLIENT].c; }

/* Connections with the same rails share a peer, joined once; counts the peers made. */
static void test_hmon_groups_same_rails(void **state)
{
	un_net *a = un_new(2), *b = un_new(2);
	rn_hmon m = { 0 };

	(void)state;
	un_handshake(a, t0);
	un_handshake(b, t0);
	assert_int_equal(rn_hmon_join(&m, cli(a), a->now), 0);
	assert_int_equal(rn_hmon_join(&m, cli(a), a->now), 0); /* again: nothing */
	assert_int_equal(rn_hmon_join(&m, cli(b), b->now), 0);
	assert_non_null(rn_conn_peer_of(cli(a)));
	assert_ptr_equal(rn_conn_peer_of(cli(a)), rn_conn_peer_of(cli(b)));
	assert_int_equal(m.joined, 2);
	assert_int_equal(m.made, 1);
	assert_int_equal(rn_conn_peer_of(cli(a))->nmembers, 2);
	/* established: an unforced leave keeps it; forced, b becomes keeper */
	assert_null(rn_hmon_leave(&m, cli(a), 0));
	assert_ptr_equal(rn_hmon_leave(&m, cli(a), 1), cli(b));
	assert_null(rn_conn_peer_of(cli(a)));
	assert_null(rn_hmon_leave(&m, cli(b), 1)); /* the last: the peer goes */
	assert_int_equal(m.peers.npeers, 0);
	rn_hmon_free(&m);
	un_del(b);
	un_del(a);
}

/* A closed member leaves at the driver's next call, and its keeper role passes on. */
static void test_hmon_closed_leaves(void **state)
{
	un_net *a = un_new(2), *b = un_new(2);
	rn_hmon m = { 0 };
	rn_peer *p;

	(void)state;
	un_handshake(a, t0);
	un_handshake(b, t0);
	rn_hmon_join(&m, cli(a), a->now);
	rn_hmon_join(&m, cli(b), b->now);
	p = rn_conn_peer_of(cli(a));
	assert_ptr_equal(p->keeper, cli(a));
	rn_conn_abort(cli(a), t0 + UT_S);
	assert_int_equal(rn_conn_state(cli(a)), RN_ST_CLOSED);
	assert_ptr_equal(rn_hmon_leave(&m, cli(a), 0), cli(b));
	assert_ptr_equal(p->keeper, cli(b));
	assert_int_equal(p->nmembers, 1);
	rn_hmon_leave(&m, cli(b), 1);
	rn_hmon_free(&m);
	un_del(b);
	un_del(a);
}

/* Anything but a port unreachable with one of our headers quoted is not offered. */
static void test_hmon_unreachable_filters(void **state)
{
	rn_hmon m = { 0 };
	rn_htab t;
	uint8_t junk[64] = { 0 };
	rn_hsock_err e = { .icmp = 1, .type = 3, .code = 3, .quote = junk,
			   .quote_len = sizeof(junk) };

	(void)state;
	assert_int_equal(rn_htab_init(&t, 16), 0);
	assert_null(rn_hmon_unreachable(&m, &t, NULL, 0, &e, t0));
	e.code = 1; /* host unreachable */
	assert_null(rn_hmon_unreachable(&m, &t, NULL, 0, &e, t0));
	assert_int_equal(m.unreach, 0);
	rn_htab_free(&t);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_hmon_groups_same_rails),
		cmocka_unit_test(test_hmon_closed_leaves),
		cmocka_unit_test(test_hmon_unreachable_filters),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
