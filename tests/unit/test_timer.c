/*
 * test_timer.c - rn_conn_expiry / rn_conn_on_timer with literal timestamps:
 * handshake retries and give-up, ACK delay, RTO and its backoff, LINK_STATE
 * retries, and the contract that a timer which ran is not due again at once
 * unless it left something to send.
 */
#include "unit_net.h"

#include "rn_conn.h"

static const uint64_t t0 = UT_T0;
#define D UN_DELAY_NS
#define MS UT_MS
#define MSS (1472 - RN_HDR_LEN)

/* INIT 250 ms after the first, doubling to 2 s; the connect gives up at connect_timeout. */
static void test_timer_handshake_schedule(void **state)
{
	static const uint64_t at_ms[] = { 0, 250, 750, 1750, 3750, 5750, 7750, 9750 };
	const size_t nat = sizeof(at_ms) / sizeof(at_ms[0]);
	un_net *n = un_new(2);
	rn_conn *c;
	const rn_event *ev;
	const uint8_t *d;

	(void)state;
	n->side[UN_CLIENT].cfg.connect_timeout_ns = 10 * UT_S;
	/* nobody listens and nothing answers: INITs vanish */
	assert_int_equal(un_connect(n, t0), 0);
	c = n->side[UN_CLIENT].c;
	/* due at once: the first INIT */
	assert_true(rn_conn_expiry(c) == t0);
	un_run(n, t0 + 10 * UT_S - 1);
	assert_int_equal(un_count(n, UN_CLIENT, RN_PT_INIT, -1, 0, UINT64_MAX), (int)nat);
	for (size_t i = 0; i < nat; i++) {
		const un_rec *r = un_find(n, UN_CLIENT, RN_PT_INIT, -1, 0, (int)i);

		if (r->sent_ns != t0 + at_ms[i] * MS)
			fail_msg("INIT %zu at %llu ms, want %llu ms", i,
				 (unsigned long long)((r->sent_ns - t0) / MS),
				 (unsigned long long)at_ms[i]);
	}
	/* the next retry would be at 11.75 s: the timeout comes first */
	assert_true(rn_conn_expiry(c) == t0 + 10 * UT_S);
	assert_int_equal(rn_conn_state(c), RN_ST_INIT_SENT);
	un_run(n, t0 + 10 * UT_S);
	ev = un_event(n, UN_CLIENT, RN_EV_FAILED, -1, 0);
	assert_non_null(ev);
	assert_true(ev->time_ns == t0 + 10 * UT_S);
	assert_int_equal(ev->err, RN_ERR_TIMEDOUT);
	assert_int_equal(rn_conn_state(c), RN_ST_CLOSED);
	assert_int_equal(rn_conn_peek(c, &d), RN_ERR_TIMEDOUT);
	assert_int_equal(rn_conn_write(c, t0 + 10 * UT_S, "x", 1), RN_ERR_TIMEDOUT);
	/* never had a connection: nothing to reset, nothing more to time */
	assert_int_equal(un_flush(n, UN_CLIENT, t0 + 10 * UT_S), 0);
	assert_true(rn_conn_expiry(c) == UINT64_MAX);
	un_del(n);
}

/*
 * A driver that sends what a connect has at once, before it runs the timer
 * due at the same instant (the engine does), sends one INIT, not two; and
 * one COOKIE_ECHO for the INIT_ACK.  Each resend then comes 250 ms later.
 */
static void test_timer_handshake_sent_once(void **state)
{
	un_net *n = un_new(2);
	uint64_t t;

	(void)state;
	un_listen(n);
	assert_int_equal(un_connect(n, t0), 0);
	un_flush(n, UN_CLIENT, t0);
	un_timer(n, UN_CLIENT, t0);
	un_flush(n, UN_CLIENT, t0);
	assert_int_equal(un_count(n, UN_CLIENT, RN_PT_INIT, -1, 0, UINT64_MAX), 1);
	assert_true(rn_conn_expiry(n->side[UN_CLIENT].c) == t0 + 250 * MS);
	/* the server answers; the client echoes the cookie once, the same way */
	t = t0 + MS;
	un_deliver(n, t);
	un_flush(n, UN_SERVER, t);
	t += MS;
	un_deliver(n, t);
	un_flush(n, UN_CLIENT, t);
	un_timer(n, UN_CLIENT, t);
	un_flush(n, UN_CLIENT, t);
	assert_int_equal(un_count(n, UN_CLIENT, RN_PT_COOKIE_ECHO, -1, 0, UINT64_MAX), 1);
	assert_int_equal(un_count(n, UN_CLIENT, RN_PT_INIT, -1, 0, UINT64_MAX), 1);
	un_del(n);
}

static int drop_cookie_echo(un_net *n, const un_rec *r, void *arg)
{
	(void)n;
	(void)arg;
	return r->type == RN_PT_COOKIE_ECHO;
}

/* The server answered but the COOKIE_ECHO never gets through: same retries, same give-up. */
static void test_timer_handshake_timeout_cookie_sent(void **state)
{
	un_net *n = un_new(2);
	const rn_event *ev;

	(void)state;
	n->side[UN_CLIENT].cfg.connect_timeout_ns = 3 * UT_S;
	n->filter = drop_cookie_echo;
	un_listen(n);
	assert_int_equal(un_connect(n, t0), 0);
	un_run(n, t0 + 3 * UT_S);
	/* counted from the connect, not from the INIT_ACK */
	ev = un_event(n, UN_CLIENT, RN_EV_FAILED, -1, 0);
	assert_non_null(ev);
	assert_true(ev->time_ns == t0 + 3 * UT_S);
	assert_int_equal(ev->err, RN_ERR_TIMEDOUT);
	assert_int_equal(un_count(n, UN_CLIENT, RN_PT_INIT, -1, 0, UINT64_MAX), 1);
	assert_true(un_find(n, UN_CLIENT, RN_PT_COOKIE_ECHO, -1, 0, 0)->sent_ns == t0 + 2 * D);
	assert_true(un_find(n, UN_CLIENT, RN_PT_COOKIE_ECHO, -1, 0, 1)->sent_ns ==
		    t0 + 2 * D + 250 * MS);
	assert_true(un_find(n, UN_CLIENT, RN_PT_COOKIE_ECHO, -1, 0, 2)->sent_ns ==
		    t0 + 2 * D + 750 * MS);
	assert_int_equal(un_count(n, UN_CLIENT, RN_PT_COOKIE_ECHO, -1, 0, UINT64_MAX), 4);
	un_del(n);
}

/*
 * The COOKIE_ECHO never gets through (say the server's accept queue is full):
 * 5 s after the INIT_ACK, half the listener's 10 s cookie life, the client
 * starts over with a fresh INIT instead of echoing a cookie about to expire.
 */
static void test_timer_cookie_restart(void **state)
{
	static const uint64_t echo_ms[] = { 0, 250, 750, 1750, 3750 };
	un_net *n = un_new(2);
	const uint64_t t_ack = t0 + 2 * D, t_restart = t_ack + 5 * UT_S;
	rn_conn *c;

	(void)state;
	n->filter = drop_cookie_echo;
	n->check_expiry = 1;
	un_listen(n);
	assert_int_equal(un_connect(n, t0), 0);
	c = n->side[UN_CLIENT].c;
	un_run(n, t_restart - 1);
	assert_int_equal(rn_conn_state(c), RN_ST_COOKIE_SENT);
	assert_int_equal(un_count(n, UN_CLIENT, RN_PT_COOKIE_ECHO, -1, 0, UINT64_MAX), 5);
	for (int k = 0; k < 5; k++)
		assert_true(un_find(n, UN_CLIENT, RN_PT_COOKIE_ECHO, -1, 0, k)->sent_ns ==
			    t_ack + echo_ms[k] * MS);
	assert_true(rn_conn_expiry(c) == t_restart);
	un_run(n, t_restart);
	assert_int_equal(un_count(n, UN_CLIENT, RN_PT_INIT, -1, 0, UINT64_MAX), 2);
	assert_true(un_find(n, UN_CLIENT, RN_PT_INIT, -1, 0, 1)->sent_ns == t_restart);
	/* once: the timer that restarted also armed the INIT's retry */
	assert_int_equal(n->refire, 0);
	assert_int_equal(n->expiry_violations, 0);
	assert_true(rn_conn_expiry(c) == t_restart + 250 * MS);
	/* a fresh INIT_ACK, a fresh cookie echoed */
	un_run(n, t_restart + 2 * D);
	assert_int_equal(un_count(n, UN_SERVER, RN_PT_INIT_ACK, -1, 0, UINT64_MAX), 2);
	assert_true(un_find(n, UN_CLIENT, RN_PT_COOKIE_ECHO, -1, 0, 5)->sent_ns ==
		    t_restart + 2 * D);
	/* once the echo gets through, the connection opens normally */
	n->filter = NULL;
	un_run(n, t_restart + 300 * MS);
	assert_int_equal(rn_conn_state(c), RN_ST_ESTABLISHED);
	assert_int_equal(rn_conn_state(n->side[UN_SERVER].c), RN_ST_ESTABLISHED);
	assert_int_equal(un_event_count(n, UN_CLIENT, RN_EV_ESTABLISHED), 1);
	un_del(n); /* and the rails of the first attempt were not leaked */
}

/*
 * One packet: its ACK waits ack_delay (200 us), to the nanosecond.  But a
 * server's first DATA, a request it has not answered, waits 2 ms for the
 * answer to carry the ACK (rn_conn_recv.c, RN_FIRST_ANSWER_NS).
 */
static void test_timer_ack_delay(void **state)
{
	un_net *n = un_new(2);
	uint64_t t_est = un_handshake(n, t0), t1 = t_est + 1 * MS, ta = t1 + D;
	rn_conn *s;
	const un_rec *r;

	(void)state;
	s = n->side[UN_SERVER].c;
	assert_int_equal(rn_conn_write(n->side[UN_CLIENT].c, t1, "ping", 4), 4);
	assert_int_equal(un_flush(n, UN_CLIENT, t1), 1);
	un_deliver(n, ta);
	assert_true(rn_conn_owes(s));
	assert_true(rn_conn_expiry(s) == ta + 2 * MS);
	un_timer(n, UN_SERVER, ta + 2 * MS - 1);
	assert_int_equal(un_flush(n, UN_SERVER, ta + 2 * MS - 1), 0);
	un_timer(n, UN_SERVER, ta + 2 * MS);
	assert_int_equal(un_flush(n, UN_SERVER, ta + 2 * MS), 1);
	assert_int_equal(n->log[n->nlog - 1].type, RN_PT_ACK);
	/* the next one is no request's first: 200 us */
	t1 = ta + 3 * MS;
	ta = t1 + D;
	assert_int_equal(rn_conn_write(n->side[UN_CLIENT].c, t1, "ping", 4), 4);
	assert_int_equal(un_flush(n, UN_CLIENT, t1), 1);
	un_deliver(n, ta);
	assert_true(rn_conn_owes(s));
	assert_true(rn_conn_expiry(s) == ta + 200 * UT_US);
	assert_int_equal(un_flush(n, UN_SERVER, ta), 0);
	un_timer(n, UN_SERVER, ta + 200 * UT_US - 1);
	assert_int_equal(un_flush(n, UN_SERVER, ta + 200 * UT_US - 1), 0);
	un_timer(n, UN_SERVER, ta + 200 * UT_US);
	assert_int_equal(un_flush(n, UN_SERVER, ta + 200 * UT_US), 1);
	r = &n->log[n->nlog - 1];
	assert_int_equal(r->type, RN_PT_ACK);
	assert_int_equal(r->ack, n->side[UN_CLIENT].c->hs.isn + 2);
	assert_false(rn_conn_owes(s));
	/* nothing owed any more: the next expiry is a keepalive, far off */
	assert_true(rn_conn_expiry(s) > ta + 50 * MS);
	un_del(n);
}

/* ack_every (8) packets are acknowledged at once, 7 are not. */
static void test_timer_ack_every(void **state)
{
	un_net *n = un_new(2);
	uint64_t t_est = un_handshake(n, t0), t1 = t_est + 1 * MS;
	static uint8_t buf[8 * MSS];
	rn_conn *c = n->side[UN_CLIENT].c;

	(void)state;
	assert_int_equal(rn_conn_write(c, t1, buf, 7 * MSS), 7 * MSS);
	assert_int_equal(un_flush(n, UN_CLIENT, t1), 7);
	un_deliver(n, t1 + D);
	assert_int_equal(un_flush(n, UN_SERVER, t1 + D), 0);
	assert_int_equal(rn_conn_write(c, t1 + 1, buf, MSS), MSS);
	assert_int_equal(un_flush(n, UN_CLIENT, t1 + 1), 1);
	un_deliver(n, t1 + 1 + D);
	assert_int_equal(un_flush(n, UN_SERVER, t1 + 1 + D), 1);
	assert_int_equal(n->log[n->nlog - 1].type, RN_PT_ACK);
	assert_int_equal(n->log[n->nlog - 1].ack, c->hs.isn + 8);
	un_del(n);
}

static int drop_n_data(un_net *n, const un_rec *r, void *arg)
{
	int *left = arg;

	(void)n;
	if (*left && r->from == UN_CLIENT && r->type == RN_PT_DATA) {
		(*left)--;
		return 1;
	}
	return 0;
}

/*
 * One rail, one packet lost twice: without later packets to show the loss
 * the RTO finds it, 100 ms before any RTT sample, doubled the second time.
 */
static void test_timer_rto_backoff(void **state)
{
	un_net *n = un_new(1);
	int left = 2;
	uint64_t t_est = un_handshake(n, t0), t1 = t_est + 1 * MS;
	rn_conn *c = n->side[UN_CLIENT].c;
	uint64_t ad = c->cfg.ack_delay_ns;
	rn_conn_stats st;

	(void)state;
	n->filter = drop_n_data;
	n->filter_arg = &left;
	n->side[UN_SERVER].reading = 1;
	n->now = t1;
	assert_int_equal(rn_conn_write(c, t1, "lost twice", 10), 10);
	un_run(n, t1 + 1 * UT_S);
	assert_int_equal(un_count(n, UN_CLIENT, RN_PT_DATA, -1, 0, UINT64_MAX), 3);
	assert_true(un_find(n, UN_CLIENT, RN_PT_DATA, -1, 0, 0)->sent_ns == t1);
	/* each wait also allows the peer's ACK delay: it has sent no DATA, so ack_delay */
	assert_true(un_find(n, UN_CLIENT, RN_PT_DATA, -1, 0, 1)->sent_ns == t1 + 100 * MS + ad);
	assert_true(un_find(n, UN_CLIENT, RN_PT_DATA, -1, 0, 2)->sent_ns == t1 + 300 * MS + 2 * ad);
	rn_conn_get_stats(c, &st);
	assert_int_equal(st.rto_events, 2);
	assert_int_equal(st.retransmits, 2);
	assert_int_equal(n->side[UN_SERVER].recvd, 10);
	un_del(n);
}

/* LINK_STATE is resent until acknowledged: 5 ms, then doubling up to heartbeat_ns. */
static void test_timer_link_state_retries(void **state)
{
	static const uint64_t at_ms[] = { 0, 5, 15, 35, 75, 155, 255 };
	un_net *n = un_new(2);
	uint64_t t = un_handshake(n, t0) + 10 * MS;

	(void)state;
	n->filter = un_drop_all;
	for (int p = 0; p < 200; p++, t += 10 * UT_US) {
		un_inject_ctl(n, UN_SERVER, t, 0, RN_PT_KEEPALIVE, NULL, 0);
		un_timer(n, UN_SERVER, t); /* as a driver does after a read */
	}
	t -= 10 * UT_US;
	assert_non_null(un_event(n, UN_SERVER, RN_EV_RAIL_DOWN, 1, 0));
	n->now = t;
	un_run(n, t + 300 * MS);
	for (int r = 0; r < 2; r++) {
		assert_int_equal(un_count(n, UN_SERVER, RN_PT_LINK_STATE, r, t, t + 300 * MS), 7);
		for (int k = 0; k < 7; k++) {
			const un_rec *ls = un_find(n, UN_SERVER, RN_PT_LINK_STATE, r, t, k);

			if (ls->sent_ns != t + at_ms[k] * MS)
				fail_msg("rail %d copy %d at %.3f ms, want %llu ms", r, k,
					 (double)(ls->sent_ns - t) / 1e6, (unsigned long long)at_ms[k]);
		}
	}
	un_del(n);
}

/* ---- the expiry contract, over whole scenarios ---- */

typedef struct scen {
	const char *name;
	void (*setup)(un_net *n, void *arg);
	uint64_t run_ns;
} scen;

static int every_37th_data(un_net *n, const un_rec *r, void *arg)
{
	int *k = arg;

	(void)n;
	return r->type == RN_PT_DATA && ++*k % 37 == 0;
}

static int rail1_dark(un_net *n, const un_rec *r, void *arg)
{
	(void)arg;
	/* dark for the first 1.5 s after connecting */
	return r->src_rail == 1 && n->now < t0 + 1500 * MS;
}

static void sc_idle(un_net *n, void *arg) { (void)n; (void)arg; }

static void sc_lossy(un_net *n, void *arg)
{
	n->filter = every_37th_data;
	n->filter_arg = arg;
	for (int s = 0; s < 2; s++) {
		n->side[s].to_send = 500 * MSS;
		n->side[s].reading = 1;
		n->side[s].shut_when_done = 1;
	}
}

static void sc_dark_rail(un_net *n, void *arg)
{
	(void)arg;
	n->filter = rail1_dark;
	n->side[UN_CLIENT].to_send = 2000 * MSS;
	n->side[UN_SERVER].reading = 1;
}

static void sc_dead(un_net *n, void *arg)
{
	(void)arg;
	n->filter = un_drop_all;
	n->side[UN_CLIENT].to_send = 100 * MSS;
}

static void sc_close(un_net *n, void *arg)
{
	(void)arg;
	for (int s = 0; s < 2; s++) {
		n->side[s].to_send = 20 * MSS;
		n->side[s].reading = 1;
		n->side[s].shut_when_done = 1;
	}
}

static void sc_backpressure(un_net *n, void *arg)
{
	(void)arg;
	/* the server's rail 1 never takes a datagram, the client's takes none at all */
	n->side[UN_SERVER].writable = 0x1;
	n->side[UN_CLIENT].writable = 0x0;
	n->side[UN_SERVER].to_send = 50 * MSS;
}

static void test_timer_expiry_not_in_past(void **state)
{
	static const scen scens[] = {
		{ "idle", sc_idle, 2 * UT_S },
		{ "lossy transfer both ways", sc_lossy, 3 * UT_S },
		{ "a rail dark, then healed", sc_dark_rail, 3 * UT_S },
		{ "peer dead", sc_dead, 31 * UT_S },
		{ "graceful close and linger", sc_close, 3 * UT_S },
		{ "no writable rail", sc_backpressure, 2 * UT_S },
	};

	(void)state;
	for (size_t i = 0; i < sizeof(scens) / sizeof(scens[0]); i++) {
		un_net *n = un_new(2);
		int k = 0;
		uint64_t t_est = un_handshake(n, t0);

		n->check_expiry = 1;
		scens[i].setup(n, &k);
		un_run(n, t_est + scens[i].run_ns);
		if (n->expiry_violations)
			fail_msg("scenario \"%s\": %d times the expiry was due after on_timer with "
				 "nothing to send (first at +%.6f ms, side %d)", scens[i].name,
				 n->expiry_violations, (double)(n->first_violation_ns - t0) / 1e6,
				 n->first_violation_side);
		/* nor due again at once after sending what it owed (a LINK_STATE twice) */
		if (n->refire)
			fail_msg("scenario \"%s\": %d timer runs were due again at once after "
				 "their datagrams went out (first at +%.6f ms, side %d)", scens[i].name,
				 n->refire, (double)(n->first_refire_ns - t0) / 1e6,
				 n->first_refire_side);
		un_del(n);
	}
}

/* Every state arms its own timers; the expiry is the earliest of them, and each has a name. */
static void test_timer_deadlines(void **state)
{
	un_net *n = un_new(2);
	uint64_t at[RN_TIMER__COUNT], t_est, least = UINT64_MAX;
	rn_conn *c;

	(void)state;
	n->side[UN_CLIENT].cfg.connect_timeout_ns = 10 * UT_S;
	assert_int_equal(un_connect(n, t0), 0);
	c = n->side[UN_CLIENT].c;
	rn_conn_deadlines(c, at);
	/* connecting: the first INIT now, the give-up after connect_timeout, nothing else */
	assert_true(at[RN_TIMER_HANDSHAKE] == t0);
	assert_true(at[RN_TIMER_CONNECT] == t0 + 10 * UT_S);
	for (int t = 0; t < RN_TIMER__COUNT; t++)
		if (t != RN_TIMER_HANDSHAKE && t != RN_TIMER_CONNECT && at[t] != UINT64_MAX)
			fail_msg("timer %s armed while connecting", rn_timer_name(t));
	un_del(n);

	n = un_new(2);
	t_est = un_handshake(n, t0);
	c = n->side[UN_CLIENT].c;
	rn_conn_deadlines(c, at);
	/* established and idle: no handshake timer, the dead-peer and rail timers run */
	assert_true(at[RN_TIMER_HANDSHAKE] == UINT64_MAX && at[RN_TIMER_CONNECT] == UINT64_MAX);
	assert_true(at[RN_TIMER_LINGER] == UINT64_MAX);
	assert_true(at[RN_TIMER_DEAD_PEER] > t_est && at[RN_TIMER_DEAD_PEER] <= t_est + 30 * UT_S);
	assert_true(at[RN_TIMER_KEEPALIVE] != UINT64_MAX && at[RN_TIMER_RAIL] != UINT64_MAX);
	assert_true(at[RN_TIMER_KEEPALIVE] < at[RN_TIMER_RAIL]);
	for (int t = 0; t < RN_TIMER__COUNT; t++)
		least = at[t] < least ? at[t] : least;
	assert_true(rn_conn_expiry(c) == least);
	/* names: one each, and "?" past the end */
	for (int t = 0; t < RN_TIMER__COUNT; t++) {
		assert_string_not_equal(rn_timer_name(t), "?");
		for (int u = 0; u < t; u++)
			assert_string_not_equal(rn_timer_name(t), rn_timer_name(u));
	}
	assert_string_equal(rn_timer_name(RN_TIMER__COUNT), "?");
	un_del(n);
}

/* A closed connection has no timer and on_timer does nothing. */
static void test_timer_closed(void **state)
{
	un_net *n = un_new(2);
	uint64_t t_est = un_handshake(n, t0);
	rn_conn *c = n->side[UN_CLIENT].c;

	(void)state;
	rn_conn_abort(c, t_est + 1);
	assert_true(rn_conn_expiry(c) == UINT64_MAX);
	rn_conn_on_timer(c, t_est + 100 * UT_S);
	assert_int_equal(rn_conn_state(c), RN_ST_CLOSED);
	assert_int_equal(rn_conn_error(c), RN_ERR_ABORTED);
	assert_int_equal(un_event_count(n, UN_CLIENT, RN_EV_FAILED), 1);
	un_del(n);
}

/* Drops everything either side writes in [arg[0], arg[1]): both engines stalled. */
static int drop_between(un_net *n, const un_rec *r, void *arg)
{
	const uint64_t *w = arg;

	(void)r;
	return n->now >= w[0] && n->now < w[1];
}

/*
 * Both ends close an idle connection at once, then hear nothing for 5 s,
 * longer than the idle pace's rail timeout (3.5 s): engines stalled by a
 * close storm of thousands.  A closing connection judges no rail by that
 * silence (no rail fails: it had failed every rail of the peer at once and
 * the storm ended in resets), and once traffic flows again the FINs resent
 * on the RTO close it cleanly on both sides.
 */
static void test_timer_closing_stall(void **state)
{
	un_net *n = un_new(2);
	uint64_t t_est = un_handshake(n, t0), t1 = t_est + 2 * UT_S, w[2] = { t1, t1 + 5 * UT_S };

	(void)state;
	un_run(n, t1);
	n->filter = drop_between;
	n->filter_arg = w;
	for (int s = 0; s < 2; s++) {
		assert_int_equal(rn_conn_shutdown(n->side[s].c, t1), 0);
		n->side[s].shut = n->side[s].reading = 1;
	}
	un_step(n, t1);
	un_run(n, w[1] + 20 * UT_S);
	for (int s = 0; s < 2; s++) {
		assert_int_equal(un_event_count(n, s, RN_EV_RAIL_DOWN), 0);
		assert_int_equal(un_event_count(n, s, RN_EV_FAILED), 0);
		assert_int_equal(un_event_count(n, s, RN_EV_CLOSED), 1);
		assert_int_equal(rn_conn_state(n->side[s].c), RN_ST_CLOSED);
	}
	un_del(n);
}

/* Drops what the server writes on path 1 from *(uint64_t *)arg on. */
static int drop_server_path1(un_net *n, const un_rec *r, void *arg)
{
	return r->from == UN_SERVER && r->path == 1 && n->now >= *(const uint64_t *)arg;
}

/*
 * The idle pace: keepalives every 100 ms while DATA flows, every second
 * after a second without it (no rail falsely failed meanwhile); DATA brings
 * the 100 ms pace back at once without failing rails last heard from at
 * the idle pace; an idle connection still finds a silent rail, within the
 * idle rail timeout (10 x 350 ms).
 */
static void test_timer_idle_pace(void **state)
{
	un_net *n = un_new(2);
	uint64_t t_est = un_handshake(n, t0), t1 = t_est + 1 * MS, t2, tb;
	const rn_event *ev;
	int active, idle;

	(void)state;
	assert_int_equal(rn_conn_write(n->side[UN_CLIENT].c, t1, "ping", 4), 4);
	un_flush(n, UN_CLIENT, t1);
	un_run(n, t1 + 4000 * MS);
	/* path 1 carried no DATA: only keepalives keep it */
	active = un_count(n, UN_CLIENT, RN_PT_KEEPALIVE, 1, t1 + 50 * MS, t1 + 950 * MS);
	idle = un_count(n, UN_CLIENT, RN_PT_KEEPALIVE, 1, t1 + 1500 * MS, t1 + 3500 * MS);
	assert_true(active >= 7 && active <= 10);
	assert_true(idle >= 1 && idle <= 3);
	assert_int_equal(un_event_count(n, UN_CLIENT, RN_EV_RAIL_DOWN), 0);
	assert_int_equal(un_event_count(n, UN_SERVER, RN_EV_RAIL_DOWN), 0);

	/* DATA again: the full pace at once, and no rail failed for its idle-pace silence */
	t2 = t1 + 4000 * MS;
	assert_int_equal(rn_conn_write(n->side[UN_SERVER].c, t2, "pong", 4), 4);
	un_flush(n, UN_SERVER, t2);
	un_run(n, t2 + 500 * MS);
	assert_true(un_count(n, UN_CLIENT, RN_PT_KEEPALIVE, 1, t2, t2 + 500 * MS) >= 3);
	assert_true(un_count(n, UN_SERVER, RN_PT_KEEPALIVE, 1, t2, t2 + 500 * MS) >= 3);
	assert_int_equal(un_event_count(n, UN_CLIENT, RN_EV_RAIL_DOWN), 0);
	assert_int_equal(un_event_count(n, UN_SERVER, RN_EV_RAIL_DOWN), 0);

	/* idle again, then path 1 from the server goes silent: still found */
	tb = t2 + 3000 * MS;
	n->filter = drop_server_path1;
	n->filter_arg = &tb;
	un_run(n, tb + 10 * 350 * MS + 1500 * MS);
	ev = un_event(n, UN_CLIENT, RN_EV_RAIL_DOWN, -1, tb);
	assert_non_null(ev);
	assert_true(ev->time_ns <= tb + 10 * 350 * MS + 1000 * MS);
	un_del(n);
}

/*
 * A primary with packets out and no ACK, beside a backup rail: the stall
 * is pending (the driver reads the sockets first) only 4 ms beyond the
 * rail's own delays, and an ACK read then clears it: the backup carries
 * nothing.  Without the ACK the stall lends the backup the packets.
 */
static void test_timer_stall_pending(void **state)
{
	un_net *n;
	uint64_t t_est, t1, ta;
	rn_conn *c;

	(void)state;
	for (int acked = 1; acked >= 0; acked--) {
		n = un_new(2);
		for (int s = 0; s < 2; s++)
			n->side[s].rails[1].backup = 1;
		t_est = un_handshake(n, t0);
		t1 = t_est + 200 * MS;
		un_run(n, t1 - 1); /* keepalives prove both rails */
		c = n->side[UN_CLIENT].c;
		assert_true(c->rail[1].validated);
		c->rail[0].rttvar_ns = 2 * MS; /* a peer whose ACK gaps swing (RTO still 20 ms) */
		assert_int_equal(rn_conn_write(c, t1, "held", 4), 4);
		assert_int_equal(un_flush(n, UN_CLIENT, t1), 1);
		assert_int_equal(un_count(n, UN_CLIENT, RN_PT_DATA, 0, t1, t1), 1);
		/* 4 ms and the ACK delay are not enough: 4 rttvar more are allowed */
		assert_false(rn_conn_verdict_pending(c, t1 + 4 * MS + c->cfg.ack_delay_ns));
		assert_false(rn_conn_verdict_pending(c, t1 + 11 * MS));
		ta = t1 + 12 * MS + c->rail[0].srtt_ns + c->cfg.ack_delay_ns;
		assert_true(rn_conn_verdict_pending(c, ta));
		if (acked) { /* the server's ACK waited in the socket: read before the verdict */
			un_deliver(n, t1 + D); /* the server's first DATA: its ACK waits 2 ms */
			un_timer(n, UN_SERVER, t1 + D + 2 * MS);
			un_flush(n, UN_SERVER, t1 + D + 2 * MS);
			un_deliver(n, ta);
			assert_false(rn_conn_verdict_pending(c, ta));
		}
		rn_conn_on_timer(c, ta);
		un_flush(n, UN_CLIENT, ta);
		assert_int_equal(c->rail[0].stalled, !acked);
		assert_int_equal(un_count(n, UN_CLIENT, RN_PT_DATA, 1, 0, UINT64_MAX), !acked);
		un_del(n);
	}
}

/*
 * A process held off the CPU past rail_timeout (a stop, a loaded machine)
 * finds its rail silent when its timer fires, while the peer's packets
 * wait in the socket: the verdict is pending, so the driver reads them
 * first and the rail stays up.  With nothing to read, the peer may have
 * been held with it (one host): the verdict waits one keepalive interval
 * for it to speak, then takes the rail down if it did not.
 */
enum { SP_READ, SP_PEER_HELD, SP_SILENT };

static void test_timer_silence_pending(void **state)
{
	un_net *n;
	uint64_t t1, t2, ka;
	rn_conn *c, *sv;

	(void)state;
	for (int mode = SP_READ; mode <= SP_SILENT; mode++) {
		n = un_new(1);
		t1 = un_handshake(n, t0) + 200 * MS;
		un_run(n, t1);
		c = n->side[UN_CLIENT].c;
		sv = n->side[UN_SERVER].c;
		ka = c->cfg.keepalive_ns;
		assert_true(c->rail[0].rx_up);
		assert_false(rn_conn_verdict_pending(c, t1));
		/* the client runs again only at t2 */
		t2 = t1 + c->cfg.rail_timeout_ns + 200 * MS;
		if (mode == SP_READ) { /* the server wrote just before */
			assert_int_equal(rn_conn_write(sv, t2 - 5 * MS, "late", 4), 4);
			assert_true(un_flush(n, UN_SERVER, t2 - 5 * MS) >= 1);
		}
		assert_true(rn_conn_verdict_pending(c, t2));
		if (mode == SP_READ) {
			assert_true(un_deliver(n, t2) >= 1);
			assert_false(rn_conn_verdict_pending(c, t2));
		}
		rn_conn_on_timer(c, t2);
		assert_true(c->rail[0].rx_up); /* read, or deferred: held off */
		assert_null(un_event(n, UN_CLIENT, RN_EV_RAIL_DOWN, 0, 0));
		if (mode == SP_READ) {
			un_del(n);
			continue;
		}
		assert_false(rn_conn_verdict_pending(c, t2 + ka - 1));
		if (mode == SP_PEER_HELD) { /* the server, held too, speaks 5 ms after waking */
			assert_int_equal(rn_conn_write(sv, t2 + 5 * MS, "late", 4), 4);
			assert_true(un_flush(n, UN_SERVER, t2 + 5 * MS) >= 1);
			assert_true(un_deliver(n, t2 + 6 * MS) >= 1);
		}
		assert_int_equal(rn_conn_verdict_pending(c, t2 + ka), mode == SP_SILENT);
		rn_conn_on_timer(c, t2 + ka);
		assert_int_equal(c->rail[0].rx_up, mode == SP_PEER_HELD);
		assert_int_equal(un_event(n, UN_CLIENT, RN_EV_RAIL_DOWN, 0, 0) == NULL,
				 mode == SP_PEER_HELD);
		un_del(n);
	}
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_timer_handshake_schedule),
		cmocka_unit_test(test_timer_handshake_sent_once),
		cmocka_unit_test(test_timer_handshake_timeout_cookie_sent),
		cmocka_unit_test(test_timer_cookie_restart),
		cmocka_unit_test(test_timer_ack_delay),
		cmocka_unit_test(test_timer_ack_every),
		cmocka_unit_test(test_timer_rto_backoff),
		cmocka_unit_test(test_timer_link_state_retries),
		cmocka_unit_test(test_timer_expiry_not_in_past),
		cmocka_unit_test(test_timer_deadlines),
		cmocka_unit_test(test_timer_closed),
		cmocka_unit_test(test_timer_idle_pace),
		cmocka_unit_test(test_timer_closing_stall),
		cmocka_unit_test(test_timer_stall_pending),
		cmocka_unit_test(test_timer_silence_pending),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
