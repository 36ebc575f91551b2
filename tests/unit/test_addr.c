/*
 * test_addr.c - rail addresses of either family (src/core/rn_addr.c): the
 * subnet rules, rail pairing across families, and two cores that shake
 * hands and stream over IPv6 rails (with and without a cluster key), over
 * a mixed pair (rail 0 IPv4, rail 1 IPv6) and over link-local rails whose
 * interface numbers differ per end.
 */
#include "unit_net.h"

#include "rn_rail.h"

static const uint64_t t0 = UT_T0;

/* 2001:2:0:<net>::<host>/<prefix> (RFC 5180's benchmarking prefix), as a rail. */
static rn_rail_addr v6(unsigned net, unsigned host, uint16_t port, uint8_t prefix)
{
	rn_rail_addr r = { .port = port, .prefix = prefix, .v6 = 1 };

	r.ip6[0] = 0x20;
	r.ip6[1] = 0x01;
	r.ip6[3] = 0x02;
	r.ip6[6] = (uint8_t)(net >> 8);
	r.ip6[7] = (uint8_t)net;
	r.ip6[14] = (uint8_t)(host >> 8);
	r.ip6[15] = (uint8_t)host;
	return r;
}

/* fe80::<host>/64 on interface `scope`. */
static rn_rail_addr ll(unsigned host, uint16_t port, uint32_t scope)
{
	rn_rail_addr r = { .port = port, .prefix = 64, .v6 = 1, .scope = scope };

	r.ip6[0] = 0xfe;
	r.ip6[1] = 0x80;
	r.ip6[15] = (uint8_t)host;
	return r;
}

static rn_rail_addr v4(uint32_t ip, uint16_t port, uint8_t prefix)
{
	return (rn_rail_addr){ .ip = ip, .port = port, .prefix = prefix };
}

static void test_addr_eq(void **state)
{
	rn_rail_addr a = v6(1, 1, 7000, 64), b = v6(1, 1, 7000, 64);

	(void)state;
	assert_true(rn_addr_eq(rn_addr_of_rail(&a), rn_addr_of_rail(&b)));
	b.ip6[15] = 2; /* another host: the word ip (0 for both) must not decide */
	assert_false(rn_addr_eq(rn_addr_of_rail(&a), rn_addr_of_rail(&b)));
	b = a;
	b.port = 7001;
	assert_false(rn_addr_eq(rn_addr_of_rail(&a), rn_addr_of_rail(&b)));
	assert_true(rn_addr_same_host(&(rn_addr){ .ip = 1, .port = 1 },
				      &(rn_addr){ .ip = 1, .port = 2 }));
	/* the same bits as IPv4 and as IPv6 are not one address */
	a = v4(0, 7000, 24);
	b = v6(0, 0, 7000, 64);
	memset(b.ip6, 0, sizeof(b.ip6));
	assert_false(rn_addr_eq(rn_addr_of_rail(&a), rn_addr_of_rail(&b)));
	/* link-local: one address on two links is two addresses */
	a = ll(1, 7000, 3);
	b = ll(1, 7000, 4);
	assert_false(rn_addr_eq(rn_addr_of_rail(&a), rn_addr_of_rail(&b)));
	assert_true(rn_addr_link_local(rn_addr_of_rail(&a)));
	a = v6(1, 1, 7000, 64);
	assert_false(rn_addr_link_local(rn_addr_of_rail(&a)));
	assert_false(rn_addr_link_local((rn_addr){ .ip = UT_IP(254, 128, 0, 1), .port = 1 }));
}

static void test_addr_unset_and_fold(void **state)
{
	rn_rail_addr a = v6(1, 1, 7000, 64), b = v6(1, 2, 7000, 64);
	rn_addr z = { .port = 7000, .v6 = 1 };

	(void)state;
	assert_true(rn_addr_unset(z));
	assert_true(rn_addr_unset((rn_addr){ .ip = 0, .port = 7000 }));
	assert_false(rn_addr_unset(rn_addr_of_rail(&a)));
	a.port = 0;
	assert_true(rn_addr_unset(rn_addr_of_rail(&a)));
	a.port = 7000;
	/* IPv4 folds to itself; IPv6 hosts of one /64 share a site word, not a host word */
	assert_int_equal(rn_addr_fold((rn_addr){ .ip = 0x0a000001, .port = 1 }, 64), 0x0a000001);
	assert_int_equal(rn_addr_fold(rn_addr_of_rail(&a), 64),
			 rn_addr_fold(rn_addr_of_rail(&b), 64));
	assert_int_not_equal(rn_addr_fold(rn_addr_of_rail(&a), 128),
			     rn_addr_fold(rn_addr_of_rail(&b), 128));
}

typedef struct share_case {
	const char *name;
	rn_rail_addr a, b;
	int want;
} share_case;

static void test_addr_rails_share(void **state)
{
	share_case cases[] = {
		{ "one /64", v6(1, 1, 1, 64), v6(1, 2, 1, 64), 1 },
		{ "two /64s", v6(1, 1, 1, 64), v6(2, 1, 1, 64), 0 },
		{ "the shorter prefix decides", v6(1, 1, 1, 48), v6(2, 1, 1, 64), 1 },
		{ "prefix 128, same address", v6(1, 1, 1, 128), v6(1, 1, 2, 128), 1 },
		{ "prefix 128, other address", v6(1, 1, 1, 128), v6(1, 2, 1, 128), 0 },
		{ "prefix 127 splits at the last bit", v6(1, 2, 1, 127), v6(1, 3, 1, 127), 1 },
		{ "prefix 127, other pair", v6(1, 1, 1, 127), v6(1, 2, 1, 127), 0 },
		{ "prefix 60 in the middle of a byte", v6(0x10, 1, 1, 60), v6(0x1f, 1, 1, 60), 1 },
		{ "prefix 60, next /60", v6(0x10, 1, 1, 60), v6(0x20, 1, 1, 60), 0 },
		{ "IPv4 beside IPv6", v4(UT_IP(10, 0, 1, 1), 1, 24), v6(1, 1, 1, 64), 0 },
		{ "IPv4 /24", v4(UT_IP(10, 0, 1, 1), 1, 24), v4(UT_IP(10, 0, 1, 2), 1, 24), 1 },
		{ "link-local, other scopes: each end's own", ll(1, 1, 3), ll(2, 1, 9), 1 },
		{ "link-local beside global", ll(1, 1, 3), v6(1, 1, 1, 64), 0 },
	};

	(void)state;
	for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
		const share_case *tc = &cases[i];

		if (rn_addr_rails_share(&tc->a, &tc->b) != tc->want ||
		    rn_addr_rails_share(&tc->b, &tc->a) != tc->want)
			fail_msg("case \"%s\": want %d", tc->name, tc->want);
	}
}

static void test_addr_in_rail(void **state)
{
	rn_rail_addr r = v6(1, 1, 7000, 64), o = v6(1, 9, 7000, 64), far = v6(2, 1, 7000, 64);
	rn_rail_addr lr = ll(1, 7000, 3), lo = ll(2, 7000, 3);
	rn_addr a;

	(void)state;
	assert_true(rn_addr_in_rail(&r, rn_addr_of_rail(&o)));
	assert_false(rn_addr_in_rail(&r, rn_addr_of_rail(&far)));
	assert_false(rn_addr_in_rail(&r, (rn_addr){ .ip = UT_IP(10, 0, 1, 2), .port = 7000 }));
	/* a link-local peer: on our rail's link, or on no link named */
	a = rn_addr_of_rail(&lo);
	assert_true(rn_addr_in_rail(&lr, a));
	a.scope = 0;
	assert_true(rn_addr_in_rail(&lr, a));
	a.scope = 4;
	assert_false(rn_addr_in_rail(&lr, a));
}

static void test_addr_rail_valid(void **state)
{
	rn_rail_addr r = v6(1, 1, 7000, 64);

	(void)state;
	assert_true(rn_addr_rail_valid(&r));
	r.prefix = 128;
	assert_true(rn_addr_rail_valid(&r));
	r.prefix = 129;
	assert_false(rn_addr_rail_valid(&r));
	r.prefix = 0;
	assert_false(rn_addr_rail_valid(&r));
	r = v6(1, 1, 0, 64);
	assert_false(rn_addr_rail_valid(&r));
	memset(r.ip6, 0, sizeof(r.ip6));
	r.port = 7000;
	assert_false(rn_addr_rail_valid(&r)); /* :: */
	r.ip6[0] = 0xff;
	r.ip6[1] = 0x02;
	r.ip6[15] = 1;
	assert_false(rn_addr_rail_valid(&r)); /* ff02::1, multicast */
	memset(r.ip6, 0, sizeof(r.ip6));
	r.ip6[10] = r.ip6[11] = 0xff;
	r.ip6[12] = 10;
	r.ip6[15] = 1;
	assert_false(rn_addr_rail_valid(&r)); /* ::ffff:10.0.0.1: an IPv4 rail in disguise */
	r = v6(1, 1, 7000, 64);
	r.ip = 5;
	assert_false(rn_addr_rail_valid(&r));
	r = v4(UT_IP(10, 0, 1, 1), 7000, 33);
	assert_false(rn_addr_rail_valid(&r));
	r.prefix = 32;
	assert_true(rn_addr_rail_valid(&r));
}

/* Pairing by subnet keeps to each family; the local order decides, as for IPv4. */
static void test_addr_match_mixed(void **state)
{
	rn_rail_addr l[3] = { v6(2, 1, 1, 64), v4(UT_IP(10, 0, 1, 1), 1, 24), v6(1, 1, 1, 64) };
	rn_rail_addr m[3] = { v4(UT_IP(10, 0, 1, 2), 1, 24), v6(1, 2, 1, 64), v6(2, 2, 1, 64) };
	int pairs[RN_MAX_RAILS][2];

	(void)state;
	assert_int_equal(rn_rail_match(l, 3, m, 3, pairs), 3);
	assert_int_equal(pairs[0][0], 0);
	assert_int_equal(pairs[0][1], 2);
	assert_int_equal(pairs[1][0], 1);
	assert_int_equal(pairs[1][1], 0);
	assert_int_equal(pairs[2][0], 2);
	assert_int_equal(pairs[2][1], 1);
	/* nothing in common: an IPv6 rail never pairs with an IPv4 one */
	assert_int_equal(rn_rail_match(l, 1, m, 1, pairs), 0);
}

static rn_conn_stats stats(rn_conn *c)
{
	rn_conn_stats st;

	rn_conn_get_stats(c, &st);
	return st;
}

/*
 * Streams 400 kB each way between the two sides as they are set up, and
 * checks every byte, that each of the npaths paths carried DATA both ways
 * and that nothing was dropped as from a wrong source.
 */
static void stream_both_ways(un_net *n, int npaths)
{
	uint64_t t = un_handshake(n, t0);
	const uint64_t bytes = 400000;

	for (int s = 0; s < 2; s++) {
		assert_int_equal(stats(n->side[s].c).npaths, npaths);
		n->side[s].to_send = bytes;
		n->side[s].reading = 1;
		n->side[s].shut_when_done = 1;
	}
	un_run(n, t + 2 * UT_S);
	for (int s = 0; s < 2; s++) {
		rn_conn_stats st = stats(n->side[s].c);

		assert_int_equal(n->side[s].recvd, bytes);
		assert_int_equal(n->side[s].mismatches, 0);
		assert_true(n->side[s].eof);
		assert_int_equal(n->side[s].err, 0);
		assert_int_equal(st.drops[RN_DROP_SOURCE], 0);
		assert_int_equal(st.drops[RN_DROP_MALFORMED], 0);
		for (int k = 0; k < npaths; k++) {
			assert_true(un_count(n, s, RN_PT_DATA, k, 0, UINT64_MAX) > 10);
			assert_true(st.rail[k].rx_data > 10);
		}
	}
}

/* Both ends on two IPv6 rails, 2001:2:0:<rail>::<side>/64. */
static void test_addr_conn_v6(void **state)
{
	un_net *n = un_new(2);

	(void)state;
	for (int s = 0; s < 2; s++)
		for (int r = 0; r < 2; r++)
			n->side[s].rails[r] = v6((unsigned)r + 1, (unsigned)s + 1,
						 (uint16_t)(s ? UN_PORT : 40000 + r), 64);
	stream_both_ways(n, 2);
	/* the paths' addresses are the IPv6 rails' */
	for (int s = 0; s < 2; s++) {
		rn_conn_stats st = stats(n->side[s].c);

		for (int k = 0; k < 2; k++) {
			assert_true(st.rail[k].local.v6 && st.rail[k].remote.v6);
			assert_true(rn_addr_eq(st.rail[k].remote, un_addr(n, 1 - s, k)));
		}
	}
	un_del(n);
}

/*
 * The same with a cluster key: the handshake's tags and the sealed stream
 * over IPv6 rails (the hello's IPv6 entries under the cookie and the tags).
 */
static void test_addr_conn_v6_keyed(void **state)
{
	un_net *n = un_new(2);

	(void)state;
	for (int s = 0; s < 2; s++) {
		n->side[s].cfg.keyed = 1;
		memset(n->side[s].cfg.key, 0x5a, RN_KEY_LEN);
		for (int r = 0; r < 2; r++)
			n->side[s].rails[r] = v6((unsigned)r + 1, (unsigned)s + 1,
						 (uint16_t)(s ? UN_PORT : 40000 + r), 64);
	}
	stream_both_ways(n, 2);
	un_del(n);
}

/* Rail 0 IPv4, rail 1 IPv6; the client lists them the other way round. */
static void test_addr_conn_mixed(void **state)
{
	un_net *n = un_new(2);
	un_side *cl = &n->side[UN_CLIENT];

	(void)state;
	for (int s = 0; s < 2; s++)
		n->side[s].rails[1] = v6(2, (unsigned)s + 1, (uint16_t)(s ? UN_PORT : 40001), 64);
	cl->rails[2] = cl->rails[0];
	cl->rails[0] = cl->rails[1];
	cl->rails[1] = cl->rails[2];
	stream_both_ways(n, 2);
	/* each path pairs one family: path 0 is the client's IPv6 rail with the server's */
	assert_true(stats(cl->c).rail[0].remote.v6);
	assert_false(stats(cl->c).rail[1].remote.v6);
	un_del(n);
}

/*
 * Link-local rails: fe80::<side>/64 on each side, the client's on
 * interfaces 3 and 4, the server's on 7 and 8: the ends pair them in order,
 * and each path's peer address takes its own rail's interface, so the
 * source check passes with the receiver's scope.
 */
static void test_addr_conn_link_local(void **state)
{
	un_net *n = un_new(2);

	(void)state;
	for (int s = 0; s < 2; s++)
		for (int r = 0; r < 2; r++)
			n->side[s].rails[r] = ll((unsigned)(s + 1) + 16 * (unsigned)r,
						 (uint16_t)(s ? UN_PORT : 40000 + r),
						 (uint32_t)(s ? 7 : 3) + (uint32_t)r);
	stream_both_ways(n, 2);
	for (int s = 0; s < 2; s++)
		for (int k = 0; k < 2; k++)
			assert_int_equal(stats(n->side[s].c).rail[k].remote.scope,
					 n->side[s].rails[k].scope);
	un_del(n);
}

/* A connect to an IPv6 peer no local rail's subnet holds finds no route. */
static void test_addr_connect_noroute(void **state)
{
	un_net *n = un_new(1);
	un_side *cl = &n->side[UN_CLIENT];
	rn_rail_addr far = v6(9, 2, UN_PORT, 64);
	rn_conn *c = NULL;

	(void)state;
	cl->rails[0] = v6(1, 1, 40000, 64);
	assert_int_equal(rn_conn_connect(&c, &cl->cfg, &cl->env, cl->rails, 1,
					 rn_addr_of_rail(&far), t0),
			 RN_ERR_NOROUTE);
	far = v6(1, 2, UN_PORT, 64);
	memset(far.ip6, 0, sizeof(far.ip6));
	assert_int_equal(rn_conn_connect(&c, &cl->cfg, &cl->env, cl->rails, 1,
					 rn_addr_of_rail(&far), t0),
			 RN_ERR_INVAL);
	un_del(n);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_addr_eq),
		cmocka_unit_test(test_addr_unset_and_fold),
		cmocka_unit_test(test_addr_rails_share),
		cmocka_unit_test(test_addr_in_rail),
		cmocka_unit_test(test_addr_rail_valid),
		cmocka_unit_test(test_addr_match_mixed),
		cmocka_unit_test(test_addr_conn_v6),
		cmocka_unit_test(test_addr_conn_v6_keyed),
		cmocka_unit_test(test_addr_conn_mixed),
		cmocka_unit_test(test_addr_conn_link_local),
		cmocka_unit_test(test_addr_connect_noroute),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
