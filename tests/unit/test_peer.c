/*
 * test_peer.c - rn_peer: one rail monitor for the connections to a peer.
 *
 * Two in-memory networks (unit_net.h) with the same addresses stand for two
 * connections between the same client and server processes: their client
 * ends join one peer, their server ends another.  Network A's connections
 * join first (its ends are the keepers); B's go idle and must stay silent,
 * alive and informed.  Both networks advance together in 10 ms steps, so
 * each sees the other's evidence within 10 ms.  Literal timestamps.
 */
#include "unit_net.h"

#include "rn_conn.h"

static const uint64_t t0 = UT_T0;

typedef struct pair2 {
	un_net *a, *b;
	rn_peer pc, ps; /* the client ends' peer, the server ends' */
} pair2;

static void run2(pair2 *p, uint64_t until)
{
	for (uint64_t t = p->a->now; t < until; t += 10 * UT_MS) {
		un_run(p->a, t);
		un_run(p->b, t);
	}
	un_run(p->a, until);
	un_run(p->b, until);
}

/* Both handshakes at t0, each end joined to its process's peer, A's first. */
static void setup(pair2 *p)
{
	p->a = un_new(2);
	p->b = un_new(2);
	un_handshake(p->a, t0);
	un_handshake(p->b, t0);
	assert_int_equal(rn_peer_init(&p->pc, p->a->side[UN_CLIENT].c), 0);
	assert_int_equal(rn_peer_init(&p->ps, p->a->side[UN_SERVER].c), 0);
	assert_int_equal(rn_conn_join_peer(p->a->side[UN_CLIENT].c, &p->pc, p->a->now), 0);
	assert_int_equal(rn_conn_join_peer(p->a->side[UN_SERVER].c, &p->ps, p->a->now), 0);
	assert_int_equal(rn_conn_join_peer(p->b->side[UN_CLIENT].c, &p->pc, p->b->now), 0);
	assert_int_equal(rn_conn_join_peer(p->b->side[UN_SERVER].c, &p->ps, p->b->now), 0);
	assert_ptr_equal(p->pc.keeper, p->a->side[UN_CLIENT].c);
	assert_ptr_equal(p->ps.keeper, p->a->side[UN_SERVER].c);
	assert_int_equal(p->pc.nmembers, 2);
}

static void teardown2(pair2 *p)
{
	un_del(p->b);
	un_del(p->a);
	assert_int_equal(p->pc.nmembers, 0);
	assert_int_equal(p->ps.nmembers, 0);
}

/*
 * An idle member sends nothing once idle (1 s), past the 30 s dead-peer
 * timeout it stays established on the keeper's evidence, and the keeper
 * alone keeps both rails judged.
 */
static void test_peer_idle_member_silent(void **state)
{
	pair2 p;

	(void)state;
	setup(&p);
	run2(&p, t0 + 40 * UT_S);
	for (int s = 0; s < 2; s++) {
		assert_int_equal(un_count(p.b, s, 0, -1, t0 + 2 * UT_S, t0 + 40 * UT_S), 0);
		assert_true(un_count(p.a, s, RN_PT_KEEPALIVE, 0, t0 + 2 * UT_S, t0 + 40 * UT_S) >= 30);
		assert_true(un_count(p.a, s, RN_PT_KEEPALIVE, 1, t0 + 2 * UT_S, t0 + 40 * UT_S) >= 30);
		assert_int_equal(rn_conn_state(p.b->side[s].c), RN_ST_ESTABLISHED);
		assert_int_equal(rn_conn_state(p.a->side[s].c), RN_ST_ESTABLISHED);
	}
	teardown2(&p);
}

static int drop_rail1_after(un_net *n, const un_rec *r, void *arg)
{
	(void)n;
	return r->src_rail == 1 && r->sent_ns >= *(const uint64_t *)arg;
}

/*
 * Rail 1 black-holed in A while all idle: A's keepers fail it, and the idle
 * members in B know it at once (rn_conn_rail_usable) without a packet of
 * their own; B's client resuming later sends its DATA on rail 0 only, and
 * every byte arrives.
 */
static void test_peer_verdict_reaches_idle_member(void **state)
{
	pair2 p;
	uint64_t hole = t0 + 5 * UT_S;

	(void)state;
	setup(&p);
	/* the same rail under both networks */
	p.a->filter = p.b->filter = drop_rail1_after;
	p.a->filter_arg = p.b->filter_arg = &hole;
	run2(&p, t0 + 10 * UT_S);
	for (int s = 0; s < 2; s++) {
		assert_false(rn_conn_rail_usable(p.a->side[s].c, 1));
		assert_false(rn_conn_rail_usable(p.b->side[s].c, 1));
		assert_true(rn_conn_rail_usable(p.b->side[s].c, 0));
		assert_int_equal(un_count(p.b, s, 0, -1, t0 + 2 * UT_S, t0 + 10 * UT_S), 0);
	}
	p.b->side[UN_CLIENT].to_send = 200000;
	p.b->side[UN_SERVER].reading = 1;
	run2(&p, t0 + 12 * UT_S);
	assert_int_equal(p.b->side[UN_SERVER].recvd, 200000);
	assert_int_equal(p.b->side[UN_SERVER].mismatches, 0);
	assert_true(un_count(p.b, UN_CLIENT, RN_PT_DATA, 0, t0 + 10 * UT_S, t0 + 12 * UT_S) > 0);
	assert_int_equal(un_count(p.b, UN_CLIENT, RN_PT_DATA, 1, t0 + 10 * UT_S, t0 + 12 * UT_S), 0);
	teardown2(&p);
}

/*
 * A verdict in the peer that an idle member has not taken yet (it takes it
 * at its next call) already shows in its counters, as it would send: the
 * rail is down there too (ri2n_stats, ri2n-stat), not only in the keeper's.
 */
static void test_peer_stats_show_new_verdict(void **state)
{
	pair2 p;
	rn_conn *idle;
	rn_conn_stats st;

	(void)state;
	setup(&p);
	run2(&p, t0 + 5 * UT_S);
	idle = p.b->side[UN_CLIENT].c;
	/* as the keeper's rn_peer_on_verdict leaves it: rail 1 failed both ways */
	p.pc.rail[1].rx_up = 0;
	p.pc.rail[1].tx_up = 0;
	p.pc.rail[1].ver = ++p.pc.gen;
	assert_false(rn_conn_rail_usable(idle, 1));
	rn_conn_get_stats(idle, &st);
	assert_false(st.rail[1].rx_up);
	assert_false(st.rail[1].tx_up);
	assert_true(st.rail[0].rx_up && st.rail[0].tx_up);
	teardown2(&p);
}

/*
 * A member that carried DATA is muted as soon as it owes nothing, not a
 * second later, and the keeper (idle until then, at the idle pace) takes
 * the busiest member's pace: its keepalives come every 100 ms again on both
 * rails, while the member that carried the DATA sends nothing more.
 */
static void test_peer_member_muted_after_data(void **state)
{
	pair2 p;
	uint64_t from = t0 + 5 * UT_S + 300 * UT_MS, to = t0 + 6 * UT_S;

	(void)state;
	setup(&p);
	run2(&p, t0 + 5 * UT_S);
	p.b->side[UN_CLIENT].to_send = 1000;
	p.b->side[UN_SERVER].reading = 1;
	run2(&p, to);
	assert_int_equal(p.b->side[UN_SERVER].recvd, 1000);
	assert_int_equal(p.b->side[UN_SERVER].mismatches, 0);
	for (int s = 0; s < 2; s++) {
		assert_int_equal(un_count(p.b, s, 0, -1, from, to), 0);
		for (int k = 0; k < 2; k++)
			assert_true(un_count(p.a, s, RN_PT_KEEPALIVE, k, from, to) >= 5);
	}
	/* a second without DATA anywhere: the keeper is back at the idle pace */
	run2(&p, t0 + 9 * UT_S);
	for (int s = 0; s < 2; s++)
		assert_true(un_count(p.a, s, RN_PT_KEEPALIVE, 0, t0 + 7 * UT_S, t0 + 9 * UT_S) <= 3);
	teardown2(&p);
}

/*
 * Any member's datagrams on a rail are the other end's evidence: while B's
 * client streams on both rails, A's client, the keeper, sends no keepalive
 * of its own there (its rails carried nothing of its own all along).
 */
static void test_peer_keeper_quiet_while_member_sends(void **state)
{
	pair2 p;

	(void)state;
	setup(&p);
	run2(&p, t0 + 5 * UT_S);
	p.b->side[UN_SERVER].reading = 1;
	for (uint64_t t = t0 + 5 * UT_S; t < t0 + 7 * UT_S; t += 20 * UT_MS) {
		p.b->side[UN_CLIENT].to_send += 30000; /* a write every 20 ms */
		run2(&p, t + 20 * UT_MS);
	}
	for (int k = 0; k < 2; k++) {
		assert_true(un_count(p.b, UN_CLIENT, RN_PT_DATA, k, t0 + 6 * UT_S, t0 + 7 * UT_S) > 100);
		assert_int_equal(un_count(p.a, UN_CLIENT, RN_PT_KEEPALIVE, k, t0 + 5500 * UT_MS,
					  t0 + 7 * UT_S), 0);
	}
	assert_int_equal(p.b->side[UN_SERVER].recvd, 100 * 30000);
	assert_int_equal(p.b->side[UN_SERVER].mismatches, 0);
	teardown2(&p);
}

static int drop_client_fin(un_net *n, const un_rec *r, void *arg)
{
	(void)n;
	(void)arg;
	return r->from == UN_CLIENT && r->type == RN_PT_DATA && (r->flags & RN_F_FIN);
}

/*
 * A close storm: a member whose FIN alone is unacknowledged waits 50 us
 * more per member of its peer before resending it (the peer's engine takes
 * every member's FIN in turn): 1,000 members, 50 ms more than 2 do.
 */
static void test_peer_fin_waits_for_the_storm(void **state)
{
	pair2 p;
	uint64_t at[RN_TIMER__COUNT], lone;
	rn_conn *c;
	uint32_t real;

	(void)state;
	setup(&p);
	run2(&p, t0 + 2 * UT_S);
	p.b->filter = drop_client_fin;
	c = p.b->side[UN_CLIENT].c;
	assert_int_equal(rn_conn_shutdown(c, p.b->now), 0);
	run2(&p, t0 + 2 * UT_S + 2 * UT_MS); /* the FIN went, and was lost */
	rn_conn_deadlines(c, at);
	lone = at[RN_TIMER_LOSS];
	assert_true(lone != UINT64_MAX);
	real = p.pc.nmembers;
	p.pc.nmembers = 1000; /* as many as a storm closes together */
	rn_conn_deadlines(c, at);
	assert_true(at[RN_TIMER_LOSS] == lone + (1000 - real) * 50 * UT_US);
	p.pc.nmembers = real;
	teardown2(&p);
}

/* The keeper leaves: the member left becomes the keeper and arms its keepalives again. */
static void test_peer_keeper_handover(void **state)
{
	pair2 p;
	uint64_t at[RN_TIMER__COUNT];

	(void)state;
	setup(&p);
	run2(&p, t0 + 5 * UT_S);
	rn_conn_deadlines(p.b->side[UN_CLIENT].c, at);
	assert_int_equal(at[RN_TIMER_KEEPALIVE], UINT64_MAX);
	assert_ptr_equal(rn_conn_leave_peer(p.a->side[UN_CLIENT].c), p.b->side[UN_CLIENT].c);
	assert_ptr_equal(p.pc.keeper, p.b->side[UN_CLIENT].c);
	assert_null(rn_conn_leave_peer(p.a->side[UN_CLIENT].c)); /* not a member any more */
	rn_conn_deadlines(p.b->side[UN_CLIENT].c, at);
	assert_true(at[RN_TIMER_KEEPALIVE] != UINT64_MAX);
	run2(&p, t0 + 8 * UT_S);
	assert_true(un_count(p.b, UN_CLIENT, RN_PT_KEEPALIVE, -1, t0 + 5 * UT_S, t0 + 8 * UT_S) >= 4);
	teardown2(&p);
}

/* A keeper that closed, still a member, mutes nobody: the idle member keeps its own rails again. */
static void test_peer_closed_keeper(void **state)
{
	pair2 p;
	uint64_t at[RN_TIMER__COUNT];

	(void)state;
	setup(&p);
	run2(&p, t0 + 5 * UT_S);
	rn_conn_deadlines(p.b->side[UN_CLIENT].c, at);
	assert_int_equal(at[RN_TIMER_KEEPALIVE], UINT64_MAX);
	rn_conn_abort(p.a->side[UN_CLIENT].c, t0 + 5 * UT_S);
	assert_ptr_equal(p.pc.keeper, p.a->side[UN_CLIENT].c);
	rn_conn_deadlines(p.b->side[UN_CLIENT].c, at);
	assert_true(at[RN_TIMER_KEEPALIVE] != UINT64_MAX);
	teardown2(&p);
}

/* A connection of other rails does not join; nor one already in a peer. */
static void test_peer_join_checks(void **state)
{
	un_net *a = un_new(2), *c = un_new(1);
	rn_peer pe;

	(void)state;
	un_handshake(a, t0);
	un_handshake(c, t0);
	assert_int_equal(rn_peer_init(&pe, a->side[UN_CLIENT].c), 0);
	assert_false(rn_peer_matches(&pe, c->side[UN_CLIENT].c));
	assert_int_equal(rn_conn_join_peer(c->side[UN_CLIENT].c, &pe, t0), RN_ERR_INVAL);
	assert_int_equal(rn_conn_join_peer(a->side[UN_CLIENT].c, &pe, t0), 0);
	assert_int_equal(rn_conn_join_peer(a->side[UN_CLIENT].c, &pe, t0), RN_ERR_STATE);
	assert_null(rn_conn_peer_of(c->side[UN_CLIENT].c));
	un_del(c);
	un_del(a);
	assert_int_equal(pe.nmembers, 0);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_peer_idle_member_silent),
		cmocka_unit_test(test_peer_verdict_reaches_idle_member),
		cmocka_unit_test(test_peer_stats_show_new_verdict),
		cmocka_unit_test(test_peer_member_muted_after_data),
		cmocka_unit_test(test_peer_fin_waits_for_the_storm),
		cmocka_unit_test(test_peer_keeper_quiet_while_member_sends),
		cmocka_unit_test(test_peer_keeper_handover),
		cmocka_unit_test(test_peer_closed_keeper),
		cmocka_unit_test(test_peer_join_checks),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
