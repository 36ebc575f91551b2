/*
 * test_conn.c - a connection between two endpoints wired back to back in
 * memory (unit_net.c): handshake, data, source checks, ACK validation, loss
 * recovery, flow control, failure detection, LINK_STATE, heartbeats,
 * keepalives, dead peer, reset and close.
 *
 * Times are literal: the client connects at t0 and every datagram takes
 * D = 100 us, so the handshake runs INIT t0, INIT_ACK t0+D, COOKIE_ECHO
 * t0+2D, server established t0+3D, client established t0+4D.
 */
#include <inttypes.h>
#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include "unit_net.h"

#include "rn_conn.h" /* a few checks read the send ring's marks */

static const uint64_t t0 = UT_T0;
#define D UN_DELAY_NS
#define MSS (1472 - RN_HDR_LEN)
/* zero padding that makes a heartbeat or keepalive full size (1472 bytes): full-size evidence */
static const uint8_t full_pad[MSS];
#define PAD full_pad, MSS

static un_net *pair(int nrails, uint64_t *t_est)
{
	un_net *n = un_new(nrails);
	uint64_t t = un_handshake(n, t0);

	if (t_est)
		*t_est = t;
	return n;
}

/*
 * A pair whose every rail has carried a datagram each way (the keepalives
 * 100 ms after the handshake): without a key, a rail carries DATA only once
 * the peer's address on it has been heard from.
 */
static un_net *pair_proven(int nrails, uint64_t *t)
{
	un_net *n = pair(nrails, t);

	*t += 150 * UT_MS;
	un_run(n, *t);
	return n;
}

static rn_conn *cl(un_net *n) { return n->side[UN_CLIENT].c; }
static rn_conn *sv(un_net *n) { return n->side[UN_SERVER].c; }

static rn_conn_stats stats(rn_conn *c)
{
	rn_conn_stats st;

	rn_conn_get_stats(c, &st);
	return st;
}

/* Sequence numbers of side s's DATA on `path` (-1 any) sent in [from, to], in send order. */
static int data_seqs(const un_net *n, int s, int path, uint64_t from, uint64_t to,
		     uint32_t *out, int max)
{
	int k = 0;

	for (int i = 0; i < n->nlog && k < max; i++) {
		const un_rec *r = &n->log[i];

		if (r->from == s && r->type == RN_PT_DATA && (path < 0 || r->path == path) &&
		    r->sent_ns >= from && r->sent_ns <= to)
			out[k++] = r->seq;
	}
	return k;
}

/* ---- setup and handshake ---- */

static void test_conn_connect_args(void **state)
{
	un_net *n = un_new(2);
	un_side *c = &n->side[UN_CLIENT];
	rn_addr srv = un_addr(n, UN_SERVER, 0);
	rn_config bad = c->cfg;
	rn_env norng = c->env;
	rn_conn *conn = (rn_conn *)&conn;

	(void)state;
	bad.snd_slots = 1000;
	norng.rng = NULL;
	/* no local rail in the peer's subnet */
	assert_int_equal(rn_conn_connect(&conn, &c->cfg, &c->env, c->rails, c->nrails,
					 (rn_addr){ .ip = UT_IP(192, 168, 0, 1), .port = UN_PORT }, t0),
			 RN_ERR_NOROUTE);
	assert_null(conn);
	assert_int_equal(rn_conn_connect(&conn, &c->cfg, &c->env, c->rails, 0, srv, t0),
			 RN_ERR_INVAL);
	assert_int_equal(rn_conn_connect(&conn, &c->cfg, &c->env, c->rails, RN_MAX_RAILS + 1, srv,
					 t0), RN_ERR_INVAL);
	assert_int_equal(rn_conn_connect(&conn, &c->cfg, &c->env, c->rails, 2,
					 (rn_addr){ .ip = 0, .port = UN_PORT }, t0), RN_ERR_INVAL);
	assert_int_equal(rn_conn_connect(&conn, &c->cfg, &c->env, c->rails, 2,
					 (rn_addr){ .ip = srv.ip, .port = 0 }, t0), RN_ERR_INVAL);
	assert_int_equal(rn_conn_connect(&conn, &bad, &c->env, c->rails, 2, srv, t0), RN_ERR_INVAL);
	assert_int_equal(rn_conn_connect(&conn, &c->cfg, &norng, c->rails, 2, srv, t0),
			 RN_ERR_INVAL);
	assert_null(conn);
	/* none of them allocated anything */
	assert_int_equal(c->um.allocs, 0);
	/* the INIT leaves on the rail in the peer's subnet, whichever that is */
	assert_int_equal(rn_conn_connect(&c->c, &c->cfg, &c->env, c->rails, 2,
					 un_addr(n, UN_SERVER, 1), t0), 0);
	assert_int_equal(un_flush(n, UN_CLIENT, t0), 1);
	assert_int_equal(n->log[0].type, RN_PT_INIT);
	assert_int_equal(n->log[0].src_rail, 1);
	assert_int_equal(n->log[0].dst_rail, 1);
	un_del(n);
}

/* Out of memory at any allocation: an error, and nothing leaks. */
static void test_conn_nomem(void **state)
{
	un_net *n = un_new(2);
	un_side *cs = &n->side[UN_CLIENT], *ss = &n->side[UN_SERVER];
	rn_accept_params ap;
	uint8_t reply[UN_DGRAM];
	size_t rlen;
	rn_conn *c = (rn_conn *)&c;
	long ok;
	const uint8_t *d;

	(void)state;
	for (int k = 0; k < 2; k++) { /* the connection, then its rail list */
		cs->um.fail_after = k;
		assert_int_equal(un_connect(n, t0), RN_ERR_NOMEM);
		assert_null(cs->c);
		assert_int_equal(cs->um.allocs, cs->um.frees);
	}
	cs->um.fail_after = -1;

	/* the server: every allocation of accept fails in turn */
	un_listen(n);
	assert_int_equal(un_connect(n, t0), 0);
	un_run(n, t0 + 2 * D);
	assert_int_equal(n->nq, 1);
	assert_int_equal(n->q[0].rec.type, RN_PT_COOKIE_ECHO);
	assert_int_equal(rn_listener_recv(&ss->lis, t0 + 3 * D, 0, n->q[0].src, n->q[0].data,
					  n->q[0].rec.len, reply, sizeof(reply), &rlen, &ap),
			 RN_LISTEN_ACCEPT);
	for (ok = 0;; ok++) {
		int rc;

		ss->um.fail_after = ok;
		rc = rn_conn_accept(&c, &ap, &ss->env, t0 + 3 * D);
		assert_true(ss->um.allocs == ss->um.frees || rc == 0);
		if (rc == 0)
			break;
		assert_int_equal(rc, RN_ERR_NOMEM);
		assert_null(c);
		assert_true(ok < 100);
	}
	/*
	 * the connection, its rail list and its peer's, its rails, one
	 * send-order FIFO per rail, and two rings of two arrays (no payload yet)
	 */
	assert_int_equal(ok, 1 + 2 + 1 + 2 + 2 + 2);
	rn_conn_del(c);
	ss->um.fail_after = -1;
	un_del(n);

	/* the client: the rails for the INIT_ACK cannot be allocated */
	n = un_new(2);
	cs = &n->side[UN_CLIENT];
	un_listen(n);
	assert_int_equal(un_connect(n, t0), 0);
	cs->um.fail_after = 0;
	un_run(n, t0 + 2 * D);
	assert_int_equal(rn_conn_state(cs->c), RN_ST_CLOSED);
	assert_non_null(un_event(n, UN_CLIENT, RN_EV_FAILED, -1, 0));
	assert_true(rn_conn_error(cs->c) < 0);
	assert_true(rn_conn_peek(cs->c, &d) < 0 && rn_conn_peek(cs->c, &d) != RN_ERR_AGAIN);
	/* it never had a connection at the server: no RESET, no COOKIE_ECHO */
	assert_int_equal(un_count(n, UN_CLIENT, 0, -1, t0 + 2 * D, UINT64_MAX), 0);
	assert_true(rn_conn_expiry(cs->c) == UINT64_MAX);
	un_del(n);
}

static void test_conn_handshake(void **state)
{
	un_net *n = un_new(2);
	const rn_event *ce, *se, *ae;
	const un_rec *r;
	const uint8_t *d;

	(void)state;
	un_listen(n);
	assert_int_equal(un_connect(n, t0), 0);
	assert_int_equal(rn_conn_state(cl(n)), RN_ST_INIT_SENT);
	/* nothing flows before the handshake completes */
	assert_int_equal(rn_conn_write(cl(n), t0, "x", 1), RN_ERR_STATE);
	assert_int_equal(rn_conn_peek(cl(n), &d), RN_ERR_AGAIN);
	assert_int_equal(rn_conn_shutdown(cl(n), t0), RN_ERR_STATE);
	assert_int_equal(rn_conn_write_space(cl(n)), 0);
	un_run(n, t0 + 2 * D);
	assert_int_equal(rn_conn_state(cl(n)), RN_ST_COOKIE_SENT);
	/* answered, but early data is the driver's choice (rn_conn_set_early): off */
	assert_int_equal(rn_conn_write(cl(n), t0 + 2 * D, "x", 1), RN_ERR_STATE);
	assert_int_equal(rn_conn_write_space(cl(n)), 0);
	assert_false(rn_conn_takes_bytes(cl(n)));
	/* the listener kept nothing for the INIT */
	assert_null(sv(n));
	un_run(n, t0 + 10 * UT_MS);

	r = un_find(n, UN_CLIENT, RN_PT_INIT, -1, 0, 0);
	assert_non_null(r);
	assert_true(r->sent_ns == t0);
	assert_int_equal(r->len, RN_INIT_LEN);
	r = un_find(n, UN_SERVER, RN_PT_INIT_ACK, -1, 0, 0);
	assert_non_null(r);
	assert_true(r->sent_ns == t0 + D);
	assert_true(r->len <= RN_INIT_LEN);
	r = un_find(n, UN_CLIENT, RN_PT_COOKIE_ECHO, -1, 0, 0);
	assert_non_null(r);
	assert_true(r->sent_ns == t0 + 2 * D);
	r = un_find(n, UN_SERVER, RN_PT_COOKIE_ACK, -1, 0, 0);
	assert_non_null(r);
	assert_true(r->sent_ns == t0 + 3 * D);
	/* each exactly once */
	assert_int_equal(un_count(n, UN_CLIENT, RN_PT_INIT, -1, 0, UINT64_MAX), 1);
	assert_int_equal(un_count(n, UN_CLIENT, RN_PT_COOKIE_ECHO, -1, 0, UINT64_MAX), 1);
	assert_int_equal(un_count(n, UN_SERVER, RN_PT_COOKIE_ACK, -1, 0, UINT64_MAX), 1);

	se = un_event(n, UN_SERVER, RN_EV_ESTABLISHED, -1, 0);
	ce = un_event(n, UN_CLIENT, RN_EV_ESTABLISHED, -1, 0);
	assert_non_null(se);
	assert_non_null(ce);
	assert_true(se->time_ns == t0 + 3 * D);
	assert_true(ce->time_ns == t0 + 4 * D);
	/* the client's connect may return one round trip in, at the answer (as TCP's) */
	ae = un_event(n, UN_CLIENT, RN_EV_ANSWERED, -1, 0);
	assert_non_null(ae);
	assert_true(ae->time_ns == t0 + 2 * D);
	assert_int_equal(un_event_count(n, UN_CLIENT, RN_EV_ANSWERED), 1);
	assert_int_equal(un_event_count(n, UN_SERVER, RN_EV_ANSWERED), 0);
	/* both rails up both ways from the start */
	assert_int_equal(ce->rx_up, 0x3);
	assert_int_equal(ce->tx_up, 0x3);
	assert_int_equal(un_event_count(n, UN_CLIENT, RN_EV_ESTABLISHED), 1);
	assert_int_equal(un_event_count(n, UN_SERVER, RN_EV_ESTABLISHED), 1);
	assert_int_equal(rn_conn_state(cl(n)), RN_ST_ESTABLISHED);
	assert_int_equal(rn_conn_state(sv(n)), RN_ST_ESTABLISHED);
	assert_int_equal(rn_conn_mss(cl(n)), MSS);
	assert_int_equal(rn_conn_mss(sv(n)), MSS);
	assert_int_equal(stats(cl(n)).npaths, 2);
	assert_int_equal(stats(sv(n)).npaths, 2);
	/* both ends number the rails alike */
	for (int k = 0; k < 2; k++) {
		assert_int_equal(stats(cl(n)).rail[k].remote.ip, n->side[UN_SERVER].rails[k].ip);
		assert_int_equal(stats(sv(n)).rail[k].remote.ip, n->side[UN_CLIENT].rails[k].ip);
	}
	assert_int_equal(rn_conn_peer(sv(n)).ip, un_addr(n, UN_CLIENT, 0).ip);
	assert_int_equal(rn_conn_peer(sv(n)).port, un_addr(n, UN_CLIENT, 0).port);
	assert_int_equal(rn_conn_peek(cl(n), &d), RN_ERR_AGAIN);
	for (int d2 = 0; d2 < RN_DROP__COUNT; d2++) {
		assert_int_equal(stats(cl(n)).drops[d2], 0);
		assert_int_equal(stats(sv(n)).drops[d2], 0);
	}
	un_del(n);
}

/* Drops the next *left DATA datagrams side writes. */
static int drop_data_of(int side, const un_rec *r, int *left)
{
	if (*left && r->from == side && r->type == RN_PT_DATA) {
		(*left)--;
		return 1;
	}
	return 0;
}

/* Drops the client's next *arg DATA datagrams... */
static int drop_first_data(un_net *n, const un_rec *r, void *arg)
{
	(void)n;
	return drop_data_of(UN_CLIENT, r, arg);
}

/* ...or the server's. */
static int drop_first_server_data(un_net *n, const un_rec *r, void *arg)
{
	(void)n;
	return drop_data_of(UN_SERVER, r, arg);
}

/*
 * Request/response: the sender's RTO allows for the peer's ACK delay.  A
 * server that takes 30 ms to answer holds its ACK up to ack_delay_pp; the
 * client must not resend the request meanwhile.  A request lost on the way
 * is resent once the RTO plus that delay has passed.
 */
static void test_conn_rto_allows_ack_delay(void **state)
{
	uint64_t t, t2, rto;
	un_net *n = pair_proven(1, &t);
	int left = 0;
	char buf[64];

	(void)state;
	n->filter = drop_first_data;
	n->filter_arg = &left;
	/* one exchange: the client has now received DATA */
	assert_int_equal(rn_conn_write(cl(n), t, "request1", 8), 8);
	un_run(n, t + 5 * UT_MS);
	assert_int_equal(rn_conn_read(sv(n), t + 5 * UT_MS, buf, sizeof(buf)), 8);
	assert_int_equal(rn_conn_write(sv(n), t + 5 * UT_MS, "response", 8), 8);
	un_run(n, t + 10 * UT_MS);
	assert_int_equal(rn_conn_read(cl(n), t + 10 * UT_MS, buf, sizeof(buf)), 8);
	rto = rn_rail_rto(&cl(n)->rail[0], &cl(n)->cfg);
	assert_true(rn_conn_rail_rto(cl(n), 0) == rto + cl(n)->cfg.ack_delay_pp_ns);
	assert_true(cl(n)->cfg.ack_delay_pp_ns > rto); /* else this tests nothing */

	/* a slow answer: the server's ACK waits ack_delay_pp, the client waits for it */
	t2 = t + 20 * UT_MS;
	assert_int_equal(rn_conn_write(cl(n), t2, "request2", 8), 8);
	un_run(n, t2 + 30 * UT_MS);
	assert_int_equal(stats(cl(n)).retransmits, 0);
	assert_int_equal(un_count(n, UN_SERVER, RN_PT_ACK, -1, t2, t2 + 30 * UT_MS), 0);
	assert_int_equal(rn_conn_read(sv(n), t2 + 30 * UT_MS, buf, sizeof(buf)), 8);
	assert_int_equal(rn_conn_write(sv(n), t2 + 30 * UT_MS, "answer 2", 8), 8);
	un_run(n, t2 + 200 * UT_MS);
	assert_int_equal(stats(cl(n)).retransmits, 0);
	assert_int_equal(rn_conn_read(cl(n), t2 + 200 * UT_MS, buf, sizeof(buf)), 8);

	/* a lost request: resent after the RTO and the peer's ACK delay, not before */
	left = 1;
	t2 += 300 * UT_MS;
	un_run(n, t2);
	rto = rn_conn_rail_rto(cl(n), 0);
	assert_int_equal(rn_conn_write(cl(n), t2, "request3", 8), 8);
	un_run(n, t2 + rto - 1);
	assert_int_equal(stats(cl(n)).retransmits, 0);
	un_run(n, t2 + rto + 5 * UT_MS);
	assert_int_equal(stats(cl(n)).retransmits, 1);
	assert_int_equal(rn_conn_read(sv(n), t2 + rto + 5 * UT_MS, buf, sizeof(buf)), 8);
	assert_memory_equal(buf, "request3", 8);
	un_del(n);
}

static int drop_first_of_type(un_net *n, const un_rec *r, void *arg)
{
	int *type = arg;

	(void)n;
	if (*type && r->type == *type) {
		*type = 0;
		return 1;
	}
	return 0;
}

/* The INIT_ACK is lost: the client says INIT again after 250 ms, and that completes. */
static void test_conn_init_ack_lost(void **state)
{
	un_net *n = un_new(2);
	int type = RN_PT_INIT_ACK;
	const un_rec *r;

	(void)state;
	n->filter = drop_first_of_type;
	n->filter_arg = &type;
	un_listen(n);
	assert_int_equal(un_connect(n, t0), 0);
	un_run(n, t0 + 10 * UT_MS);
	assert_true(rn_conn_expiry(cl(n)) == t0 + 250 * UT_MS);
	un_run(n, t0 + 250 * UT_MS - 1);
	assert_int_equal(un_count(n, UN_CLIENT, RN_PT_INIT, -1, 0, UINT64_MAX), 1);
	un_run(n, t0 + 300 * UT_MS);
	r = un_find(n, UN_CLIENT, RN_PT_INIT, -1, 0, 1);
	assert_non_null(r);
	assert_true(r->sent_ns == t0 + 250 * UT_MS);
	assert_int_equal(un_count(n, UN_CLIENT, RN_PT_INIT, -1, 0, UINT64_MAX), 2);
	assert_non_null(un_event(n, UN_CLIENT, RN_EV_ESTABLISHED, -1, 0));
	assert_true(un_event(n, UN_CLIENT, RN_EV_ESTABLISHED, -1, 0)->time_ns ==
		    t0 + 250 * UT_MS + 4 * D);
	assert_int_equal(rn_conn_state(sv(n)), RN_ST_ESTABLISHED);
	un_del(n);
}

/* The COOKIE_ACK is lost but the server's first data arrives: that establishes the client. */
static void test_conn_cookie_ack_lost_data(void **state)
{
	un_net *n = un_new(2);
	int type = RN_PT_COOKIE_ACK;

	(void)state;
	n->filter = drop_first_of_type;
	n->filter_arg = &type;
	n->side[UN_SERVER].to_send = 3000;
	n->side[UN_CLIENT].reading = 1;
	un_listen(n);
	assert_int_equal(un_connect(n, t0), 0);
	un_run(n, t0 + 20 * UT_MS);
	assert_int_equal(type, 0); /* the COOKIE_ACK was dropped */
	assert_non_null(un_event(n, UN_CLIENT, RN_EV_ESTABLISHED, -1, 0));
	assert_true(un_event(n, UN_CLIENT, RN_EV_ESTABLISHED, -1, 0)->time_ns == t0 + 4 * D);
	/* and the data that established it was not lost */
	assert_int_equal(n->side[UN_CLIENT].recvd, 3000);
	assert_int_equal(n->side[UN_CLIENT].mismatches, 0);
	un_del(n);
}

/* The COOKIE_ACK is lost and the server is quiet: the resent COOKIE_ECHO gets another. */
static void test_conn_cookie_ack_lost_resent(void **state)
{
	un_net *n = un_new(2);
	int type = RN_PT_COOKIE_ACK;
	const uint64_t echo2 = t0 + 2 * D + 250 * UT_MS;

	(void)state;
	/* keepalives later than the COOKIE_ECHO timer, so only that can save it */
	for (int s = 0; s < 2; s++) {
		n->side[s].cfg.keepalive_ns = 1 * UT_S;
		n->side[s].cfg.rail_timeout_ns = 3500 * UT_MS;
	}
	n->filter = drop_first_of_type;
	n->filter_arg = &type;
	un_listen(n);
	assert_int_equal(un_connect(n, t0), 0);
	un_run(n, t0 + 200 * UT_MS);
	assert_int_equal(rn_conn_state(cl(n)), RN_ST_COOKIE_SENT);
	assert_int_equal(rn_conn_state(sv(n)), RN_ST_ESTABLISHED);
	un_run(n, t0 + 400 * UT_MS);
	assert_non_null(un_find(n, UN_CLIENT, RN_PT_COOKIE_ECHO, -1, 0, 1));
	assert_true(un_find(n, UN_CLIENT, RN_PT_COOKIE_ECHO, -1, 0, 1)->sent_ns == echo2);
	assert_int_equal(un_count(n, UN_SERVER, RN_PT_COOKIE_ACK, -1, 0, UINT64_MAX), 2);
	assert_true(un_event(n, UN_CLIENT, RN_EV_ESTABLISHED, -1, 0)->time_ns == echo2 + 2 * D);
	/* the server did not make a second connection or a second event */
	assert_int_equal(un_event_count(n, UN_SERVER, RN_EV_ESTABLISHED), 1);
	assert_int_equal(n->side[UN_SERVER].lis.accepts, 1);
	un_del(n);
}

/* ---- early data ---- */

/* A client whose driver lets bytes go early, writing to_send bytes; a reading server. */
static un_net *early_pair(uint64_t to_send, int keyed)
{
	un_net *n = un_new(2);

	for (int s = 0; keyed && s < 2; s++) {
		n->side[s].cfg.keyed = 1;
		memset(n->side[s].cfg.key, 0x5a, RN_KEY_LEN);
	}
	n->side[UN_CLIENT].to_send = to_send;
	n->side[UN_SERVER].reading = 1;
	un_listen(n);
	assert_int_equal(un_connect(n, t0), 0);
	rn_conn_set_early(cl(n), 1);
	/* not before the INIT_ACK: nothing to send it to yet */
	assert_false(rn_conn_takes_bytes(cl(n)));
	assert_int_equal(rn_conn_write(cl(n), t0, "x", 1), RN_ERR_STATE);
	return n;
}

/* The client's DATA flagged early, from `from` on. */
static int early_count(const un_net *n, uint64_t from)
{
	int k = 0;

	for (int i = 0; i < n->nlog; i++)
		k += n->log[i].from == UN_CLIENT && n->log[i].type == RN_PT_DATA &&
		     (n->log[i].flags & RN_F_EARLY) && n->log[i].sent_ns >= from;
	return k;
}

/* Bytes written once the INIT_ACK is in go right behind the COOKIE_ECHO, a round trip early. */
static void early_data(int keyed)
{
	un_net *n = early_pair(3000, keyed);
	const un_rec *e, *r;

	un_run(n, t0 + 3 * D);
	e = un_find(n, UN_CLIENT, RN_PT_COOKIE_ECHO, -1, 0, 0);
	r = un_find(n, UN_CLIENT, RN_PT_DATA, -1, 0, 0);
	assert_non_null(e);
	assert_non_null(r);
	/* at once, after the COOKIE_ECHO, on its rail, flagged, with no ACK block */
	assert_true(e->sent_ns == t0 + 2 * D && r->sent_ns == t0 + 2 * D && r > e);
	assert_int_equal(r->src_rail, e->src_rail);
	assert_true(r->flags & RN_F_EARLY);
	assert_false(r->flags & (RN_F_ACK | RN_F_FIN));
	assert_int_equal(early_count(n, 0), 3); /* 3000 bytes, 1448 a packet */
	assert_int_equal(un_count(n, UN_CLIENT, RN_PT_DATA, -1, 0, UINT64_MAX), 3);
	/* the server has every byte as it is established, the client is not yet */
	assert_int_equal(rn_conn_state(sv(n)), RN_ST_ESTABLISHED);
	assert_int_equal(rn_conn_state(cl(n)), RN_ST_COOKIE_SENT);
	assert_int_equal(n->side[UN_SERVER].recvd, 3000);
	assert_int_equal(n->side[UN_SERVER].mismatches, 0);
	un_run(n, t0 + 20 * UT_MS);
	assert_int_equal(rn_conn_state(cl(n)), RN_ST_ESTABLISHED);
	/* the server's COOKIE_ACK waited for an answer, as its ACK did: 2 ms (rn_conn_recv.c) */
	assert_int_equal(un_count(n, UN_SERVER, RN_PT_COOKIE_ACK, -1, 0, UINT64_MAX), 1);
	assert_true(un_event(n, UN_CLIENT, RN_EV_ESTABLISHED, -1, 0)->time_ns ==
		    t0 + 4 * D + 2 * UT_MS);
	/* acknowledged, nothing dropped or sent twice, nothing flagged once established */
	assert_true(rn_conn_write_done(cl(n)));
	assert_int_equal(n->side[UN_SERVER].lis.drops[RN_DROP_UNKNOWN_CONN], 0);
	assert_int_equal(stats(cl(n)).retransmits, 0);
	assert_int_equal(stats(cl(n)).early_packets, 3);
	assert_int_equal(un_count(n, UN_CLIENT, RN_PT_DATA, -1, 0, UINT64_MAX), 3);
	n->side[UN_CLIENT].to_send += 1000;
	un_run(n, t0 + 40 * UT_MS);
	assert_int_equal(n->side[UN_SERVER].recvd, 4000);
	assert_int_equal(early_count(n, 0), 3);
	un_del(n);
}

static void test_conn_early_data(void **state)
{
	(void)state;
	early_data(0);
	early_data(1); /* sealed under the connection's keys, made at the INIT_ACK */
}

/*
 * The server answers the early data at once: its answer carries the ACK
 * and stands for the COOKIE_ACK (the client takes any packet of the
 * established server for it), one datagram fewer than a COOKIE_ACK and
 * then the answer.
 */
static void test_conn_early_answer(void **state)
{
	(void)state;
	for (int keyed = 0; keyed <= 1; keyed++) {
		un_net *n = early_pair(300, keyed);

		n->side[UN_SERVER].to_send = 500;
		n->side[UN_CLIENT].reading = 1;
		un_run(n, t0 + 20 * UT_MS);
		assert_int_equal(rn_conn_state(cl(n)), RN_ST_ESTABLISHED);
		assert_int_equal(un_count(n, UN_SERVER, RN_PT_COOKIE_ACK, -1, 0, UINT64_MAX), 0);
		assert_true(un_event(n, UN_CLIENT, RN_EV_ESTABLISHED, -1, 0)->time_ns == t0 + 4 * D);
		assert_int_equal(n->side[UN_SERVER].recvd, 300);
		assert_int_equal(n->side[UN_CLIENT].recvd, 500);
		assert_int_equal(n->side[UN_SERVER].mismatches + n->side[UN_CLIENT].mismatches, 0);
		un_run(n, t0 + 100 * UT_MS); /* the client holds the answer's ACK for its next request */
		assert_true(rn_conn_write_done(cl(n)) && rn_conn_write_done(sv(n)));
		assert_int_equal(stats(cl(n)).retransmits + stats(sv(n)).retransmits, 0);
		assert_int_equal(un_count(n, UN_SERVER, RN_PT_COOKIE_ACK, -1, 0, UINT64_MAX), 0);
		un_del(n);
	}
}

/*
 * The COOKIE_ECHO is lost: its early data reaches a listener that does not
 * know the id, which drops it without a stateless reset (that would end
 * the connect).  The COOKIE_ECHO resent 250 ms later makes the connection,
 * and the bytes go again, as any lost DATA, once established.
 */
static void early_echo_lost(int keyed)
{
	un_net *n = early_pair(1000, keyed);
	int type = RN_PT_COOKIE_ECHO;
	const uint64_t echo2 = t0 + 2 * D + 250 * UT_MS;

	n->filter = drop_first_of_type;
	n->filter_arg = &type;
	un_run(n, t0 + 200 * UT_MS);
	assert_int_equal(type, 0);
	assert_int_equal(early_count(n, 0), 1);
	assert_int_equal(n->side[UN_SERVER].lis.drops[RN_DROP_UNKNOWN_CONN], 1);
	assert_int_equal(n->side[UN_SERVER].lis.resets, 0);
	assert_int_equal(un_count(n, UN_SERVER, 0, -1, 0, UINT64_MAX), 1); /* the INIT_ACK alone */
	assert_int_equal(rn_conn_state(cl(n)), RN_ST_COOKIE_SENT);
	assert_int_equal(rn_conn_error(cl(n)), 0);
	un_run(n, t0 + 1 * UT_S);
	assert_true(un_event(n, UN_CLIENT, RN_EV_ESTABLISHED, -1, 0)->time_ns == echo2 + 2 * D);
	assert_int_equal(n->side[UN_SERVER].recvd, 1000);
	assert_int_equal(n->side[UN_SERVER].mismatches, 0);
	assert_true(rn_conn_write_done(cl(n)));
	/* sent again once established, unflagged, and only once */
	assert_int_equal(stats(cl(n)).retransmits, 1);
	assert_int_equal(early_count(n, 0), 1);
	un_del(n);
}

static void test_conn_early_data_echo_lost(void **state)
{
	(void)state;
	early_echo_lost(0);
	early_echo_lost(1); /* a listener holds no connection keys: it reads the flag in the clear */
}

/* Never echoed: the COOKIE_ECHO was dropped by every filter call before `at`. */
static int drop_echo_until(un_net *n, const un_rec *r, void *arg)
{
	return r->type == RN_PT_COOKIE_ECHO && n->now < *(uint64_t *)arg;
}

/*
 * No COOKIE_ECHO gets through until the client fetches a fresh cookie (5 s):
 * the early bytes written before it go again behind the new COOKIE_ECHO,
 * numbered from the new initial sequence number, and arrive once.
 */
static void test_conn_early_data_restart(void **state)
{
	un_net *n = early_pair(2000, 0);
	uint64_t until = t0 + 5 * UT_S, id0; /* the restart: 5 s after the answer */

	(void)state;
	for (int s = 0; s < 2; s++) { /* quiet rails: the handshake's timers alone */
		n->side[s].cfg.keepalive_ns = 10 * UT_S;
		n->side[s].cfg.rail_timeout_ns = 30 * UT_S;
	}
	n->filter = drop_echo_until;
	n->filter_arg = &until;
	un_run(n, t0 + 3 * D);
	id0 = rn_conn_id(cl(n));
	assert_int_equal(early_count(n, 0), 2);
	un_run(n, t0 + 7 * UT_S);
	assert_true(rn_conn_id(cl(n)) != id0); /* restarted: a new identity */
	assert_int_equal(rn_conn_state(cl(n)), RN_ST_ESTABLISHED);
	assert_int_equal(n->side[UN_SERVER].recvd, 2000);
	assert_int_equal(n->side[UN_SERVER].mismatches, 0);
	assert_true(rn_conn_write_done(cl(n)));
	assert_int_equal(n->side[UN_SERVER].lis.accepts, 1);
	assert_int_equal(n->side[UN_SERVER].lis.resets, 0);
	/* the new handshake's early packets carried them (2 before, 2 after), none sent again */
	assert_int_equal(early_count(n, until), 2);
	assert_int_equal(un_count(n, UN_CLIENT, RN_PT_DATA, -1, until, UINT64_MAX), 2);
	assert_int_equal(stats(cl(n)).retransmits, 0);
	assert_int_equal(stats(cl(n)).app_tx_bytes, 2000);
	un_del(n);
}

/* ---- data ---- */

static void test_conn_data_both_ways(void **state)
{
	uint64_t t_est;
	un_net *n = pair(2, &t_est);
	const uint64_t up = 300000, down = 200000;

	(void)state;
	n->side[UN_CLIENT].to_send = up;
	n->side[UN_SERVER].to_send = down;
	for (int s = 0; s < 2; s++) {
		n->side[s].reading = 1;
		n->side[s].shut_when_done = 1;
	}
	un_run(n, t_est + 2 * UT_S);
	assert_int_equal(n->side[UN_SERVER].recvd, up);
	assert_int_equal(n->side[UN_CLIENT].recvd, down);
	for (int s = 0; s < 2; s++) {
		rn_conn_stats st = stats(n->side[s].c);

		assert_int_equal(n->side[s].mismatches, 0);
		assert_true(n->side[s].eof);
		assert_int_equal(n->side[s].err, 0);
		/* striped: both rails carried data */
		assert_true(un_count(n, s, RN_PT_DATA, 0, 0, UINT64_MAX) > 10);
		assert_true(un_count(n, s, RN_PT_DATA, 1, 0, UINT64_MAX) > 10);
		assert_int_equal(st.drops[RN_DROP_WINDOW], 0);
		assert_int_equal(st.drops[RN_DROP_MALFORMED], 0);
		assert_int_equal(st.drops[RN_DROP_SOURCE], 0);
		/* a lossless network needs no retransmission */
		assert_int_equal(st.retransmits, 0);
		assert_true(rn_conn_write_done(n->side[s].c));
	}
	assert_int_equal(stats(cl(n)).app_tx_bytes, up);
	assert_int_equal(stats(sv(n)).app_rx_bytes, up);
	un_del(n);
}

/*
 * Packets of 576 bytes (max_dgram 600) over rails whose interfaces carry
 * 1472: each side's size search confirms 1472 by PROBE and PROBE_ACK (the
 * first probe is the ceiling), and the stream then goes two packets per
 * DATA (RN_F_MULTI) on both rails; every byte arrives in order, nothing is
 * resent or dropped.
 */
static void test_conn_multi_packet_datagrams(void **state)
{
	un_net *n = un_new(2);
	const uint64_t up = 400000;
	uint64_t t_est;
	const un_rec *pr;

	(void)state;
	for (int s = 0; s < 2; s++) {
		n->side[s].cfg.max_dgram = 600;
		for (int r = 0; r < 2; r++)
			n->side[s].rails[r].max_dgram = 1472;
	}
	t_est = un_handshake(n, t0);
	n->side[UN_CLIENT].to_send = up;
	n->side[UN_CLIENT].shut_when_done = 1;
	n->side[UN_SERVER].reading = 1;
	un_run(n, t_est + 2 * UT_S);
	assert_int_equal(n->side[UN_SERVER].recvd, up);
	assert_int_equal(n->side[UN_SERVER].mismatches, 0);
	assert_true(n->side[UN_SERVER].eof);
	pr = un_find(n, UN_CLIENT, RN_PT_PROBE, -1, 0, 0);
	assert_non_null(pr);
	assert_int_equal(pr->len, 1472);
	assert_true(un_count(n, UN_SERVER, RN_PT_PROBE_ACK, -1, 0, UINT64_MAX) >= 1);
	for (int r = 0; r < 2; r++) {
		int multi = 0;

		assert_int_equal(stats(cl(n)).rail[r].dgram, 1472);
		for (int k = 0; k < n->nlog; k++) {
			const un_rec *d = &n->log[k];

			if (d->from == UN_CLIENT && d->type == RN_PT_DATA && d->path == r &&
			    (d->flags & RN_F_MULTI)) {
				assert_true(d->len > 600 && d->len <= 1472);
				multi++;
			}
		}
		/* rail 1 carries DATA once its address is proven (its first keepalive, 100 ms) */
		assert_true(multi > 50);
	}
	assert_int_equal(stats(cl(n)).retransmits, 0);
	assert_int_equal(stats(sv(n)).drops[RN_DROP_MALFORMED], 0);
	assert_int_equal(stats(sv(n)).drops[RN_DROP_DUPLICATE], 0);
	un_del(n);
}

/* A MULTI DATA whose lengths do not fill it exactly, or name an empty packet, is malformed. */
static void test_conn_multi_malformed(void **state)
{
	uint64_t t_est;
	un_net *n = pair_proven(2, &t_est);
	const uint64_t t1 = t_est + 1 * UT_MS;
	static const struct {
		uint8_t body[12];
		size_t len;
	} cases[] = {
		{ { 0, 5, 1, 2, 3, 4 }, 6 },                /* says 5, holds 4 */
		{ { 0, 2, 1, 2, 0 }, 5 },                   /* a dangling byte after the first */
		{ { 0, 0, 0, 2, 1, 2 }, 6 },                /* an empty packet */
		{ { 0, 2, 1, 2, 0, 9, 1, 2, 3 }, 9 },        /* the second runs past the end */
	};

	(void)state;
	for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
		/* the lengths are checked before any packet is stored (seq need not be in the window) */
		rn_hdr h = { .type = RN_PT_DATA, .flags = RN_F_MULTI, .path = 0,
			     .dst = rn_conn_id(sv(n)) };

		assert_int_equal(un_inject(n, UN_SERVER, t1, 0, un_addr(n, UN_CLIENT, 0), &h, NULL,
					   cases[i].body, cases[i].len), RN_ERR_DROP);
		assert_int_equal(stats(sv(n)).drops[RN_DROP_MALFORMED], (uint64_t)(i + 1));
		assert_int_equal(stats(sv(n)).drops[RN_DROP_WINDOW], 0);
	}
	un_del(n);
}

/*
 * A client whose program takes 90 ms to send its next request (1000 redis
 * clients on one thread take 60-130 ms): at 40 ms the ACK of each response
 * would go alone.  The first request after such an ACK is a late answer
 * and says so: the wait grows to twice it (up to ack_hold_max), so from the
 * second exchange on each request carries the ACK and nothing else goes
 * out.  The server's RTO allows for the longer wait (no resend), both ends
 * count the same late answers, and a lost response is resent once the RTO
 * and that wait have passed.  The server, which answers at once, keeps
 * 40 ms.
 */
static void test_conn_ack_hold_grows(void **state)
{
	uint64_t t, t2, rto, wait;
	un_net *n = pair_proven(1, &t);
	const uint64_t PP = 40 * UT_MS, MAX = 200 * UT_MS, THINK = 90 * UT_MS;
	int left = 0, alone[8];
	char buf[64];

	(void)state;
	assert_true(cl(n)->cfg.ack_delay_pp_ns == PP && cl(n)->cfg.ack_hold_max_ns == MAX);
	t2 = t + 10 * UT_MS;
	for (int i = 0; i < 8; i++) {
		uint64_t got;

		assert_int_equal(rn_conn_write(cl(n), t2, "request.", 8), 8);
		un_run(n, t2 + 2 * D);
		assert_int_equal(rn_conn_read(sv(n), t2 + 2 * D, buf, sizeof(buf)), 8);
		assert_int_equal(rn_conn_write(sv(n), t2 + 2 * D, "response", 8), 8);
		un_run(n, t2 + 4 * D);
		got = t2 + 4 * D;
		assert_int_equal(rn_conn_read(cl(n), got, buf, sizeof(buf)), 8);
		t2 = got + THINK;
		un_run(n, t2);
		alone[i] = un_count(n, UN_CLIENT, RN_PT_ACK, -1, got, t2);
		/* both ends counted the same waits */
		assert_int_equal(cl(n)->ack.held_us, sv(n)->ack.peer_held_us);
	}
	/* 40 ms: too short, an ACK of its own; the late request makes it 180 ms */
	assert_int_equal(alone[0], 1);
	for (int i = 1; i < 8; i++)
		assert_int_equal(alone[i], 0);
	assert_int_equal(stats(sv(n)).retransmits, 0);
	assert_int_equal(stats(cl(n)).retransmits, 0);
	/* twice the think time (and the response's last hop), within ack_hold_max */
	wait = rn_conn_hold_limit(&cl(n)->cfg, cl(n)->ack.held_us);
	assert_true(wait >= 2 * THINK && wait <= 2 * (THINK + 4 * D) && wait < MAX);
	rto = rn_rail_rto(&sv(n)->rail[0], &sv(n)->cfg);
	assert_true(rn_conn_rail_rto(sv(n), 0) == rto + wait);
	/* the server answers at once: its own wait stays at ack_delay_pp */
	assert_true(sv(n)->ack.held_us < 1000);
	assert_true(rn_conn_rail_rto(cl(n), 0) == rn_rail_rto(&cl(n)->rail[0], &cl(n)->cfg) + PP);

	/* a lost response: resent after the RTO and the client's longer wait, not before */
	n->filter = drop_first_data;
	n->filter_arg = &left;
	assert_int_equal(rn_conn_write(cl(n), t2, "request.", 8), 8);
	un_run(n, t2 + 2 * D);
	assert_int_equal(rn_conn_read(sv(n), t2 + 2 * D, buf, sizeof(buf)), 8);
	rto = rn_conn_rail_rto(sv(n), 0);
	left = 1;
	n->filter = drop_first_server_data;
	assert_int_equal(rn_conn_write(sv(n), t2 + 2 * D, "response", 8), 8);
	un_run(n, t2 + 2 * D + rto - 1);
	assert_int_equal(stats(sv(n)).retransmits, 0);
	un_run(n, t2 + 2 * D + rto + 5 * UT_MS);
	assert_int_equal(stats(sv(n)).retransmits, 1);
	assert_int_equal(rn_conn_read(cl(n), t2 + 2 * D + rto + 5 * UT_MS, buf, sizeof(buf)), 8);
	un_del(n);
}

/* Drops the next *arg DATA datagrams flagged as late answers. */
static int drop_late(un_net *n, const un_rec *r, void *arg)
{
	int *left = arg;

	(void)n;
	if (*left && r->type == RN_PT_DATA && (r->flags & RN_F_LATE)) {
		(*left)--;
		return 1;
	}
	return 0;
}

/*
 * A late answer lost on the way counts on neither side: its resend is not
 * flagged, the client keeps the 40 ms the server allows for, and the next
 * late answer that arrives counts on both.
 */
static void test_conn_ack_hold_late_lost(void **state)
{
	uint64_t t, t2;
	un_net *n = pair_proven(1, &t);
	const uint64_t THINK = 90 * UT_MS;
	int left = 1, late[4];
	char buf[64];

	(void)state;
	n->filter = drop_late;
	n->filter_arg = &left;
	t2 = t + 10 * UT_MS;
	for (int i = 0; i < 4; i++) {
		uint64_t got;

		assert_int_equal(rn_conn_write(cl(n), t2, "request.", 8), 8);
		un_run(n, t2 + 2 * D + 200 * UT_MS); /* the lost one's resend, after the RTO */
		assert_int_equal(rn_conn_read(sv(n), t2 + 2 * D + 200 * UT_MS, buf, sizeof(buf)), 8);
		got = t2 + 200 * UT_MS + 2 * D;
		assert_int_equal(rn_conn_write(sv(n), got, "response", 8), 8);
		un_run(n, got + 2 * D);
		assert_int_equal(rn_conn_read(cl(n), got + 2 * D, buf, sizeof(buf)), 8);
		late[i] = cl(n)->ack.held_us != 0;
		assert_true(cl(n)->ack.held_us <= sv(n)->ack.peer_held_us);
		t2 = got + 2 * D + THINK;
		un_run(n, t2);
	}
	/* the first late request was lost: nothing counted; the second counted on both */
	assert_int_equal(left, 0);
	assert_int_equal(late[0], 0);
	assert_int_equal(late[1], 0);
	assert_int_equal(late[2], 1);
	assert_int_equal(cl(n)->ack.held_us, sv(n)->ack.peer_held_us);
	assert_int_equal(stats(cl(n)).retransmits, 1);
	assert_int_equal(stats(sv(n)).retransmits, 0);
	un_del(n);
}

/*
 * The ACK delay: 200 us for a receiver that does not answer, 2 ms while the
 * connection answers what it receives (requests and responses), where the
 * answer carries the ACK and no ACK of its own goes out.
 */
static void test_conn_ack_delay_answering(void **state)
{
	uint64_t t;
	un_net *n = pair_proven(1, &t);
	uint64_t t1 = t + 10 * UT_MS, a1 = t1 + D, t2, a2;
	const uint64_t PP = 40 * UT_MS; /* the default ack_delay_pp, as TCP's delayed ACK */
	char buf[64];

	(void)state;
	/* a first request: the server has never sent DATA; 2 ms for its first answer */
	assert_int_equal(rn_conn_write(cl(n), t1, "request1", 8), 8);
	un_flush(n, UN_CLIENT, t1);
	un_deliver(n, a1);
	assert_true(sv(n)->ack.pending);
	assert_true(sv(n)->timer[RN_TIMER_ACK] == a1 + 2 * UT_MS);
	/* its response goes out at once and carries the ACK: no ACK of its own */
	assert_int_equal(rn_conn_read(sv(n), a1, buf, sizeof(buf)), 8);
	assert_int_equal(rn_conn_write(sv(n), a1, "response", 8), 8);
	un_flush(n, UN_SERVER, a1);
	assert_false(sv(n)->ack.pending);
	/* the client sent DATA before this DATA came: it answers, ack_delay_pp */
	un_deliver(n, a1 + D);
	assert_true(cl(n)->ack.pending);
	assert_true(cl(n)->timer[RN_TIMER_ACK] == a1 + D + PP);
	assert_true(rn_conn_expiry(cl(n)) > a1 + D + cl(n)->cfg.ack_delay_ns);
	/* the next request, 500 us later, carries the ACK; the server now answers too */
	t2 = a1 + D + 500 * UT_US;
	un_timer(n, UN_CLIENT, t2);
	assert_int_equal(un_count(n, UN_CLIENT, RN_PT_ACK, -1, t1, t2), 0);
	assert_int_equal(rn_conn_read(cl(n), t2, buf, sizeof(buf)), 8);
	assert_int_equal(rn_conn_write(cl(n), t2, "request2", 8), 8);
	un_flush(n, UN_CLIENT, t2);
	assert_false(cl(n)->ack.pending);
	a2 = t2 + D;
	un_deliver(n, a2);
	assert_true(sv(n)->timer[RN_TIMER_ACK] == a2 + PP);
	/* unanswered, the ACK still goes out by itself at ack_delay_pp, not later */
	un_timer(n, UN_SERVER, a2 + PP - 1);
	un_flush(n, UN_SERVER, a2 + PP - 1);
	assert_int_equal(un_count(n, UN_SERVER, RN_PT_ACK, -1, a2, a2 + PP), 0);
	un_timer(n, UN_SERVER, a2 + PP);
	un_flush(n, UN_SERVER, a2 + PP);
	assert_int_equal(un_count(n, UN_SERVER, RN_PT_ACK, -1, a2, a2 + PP), 1);
	un_del(n);
}

/*
 * A round-trip sample from a stalled process (an ACK echoing a time 19 s
 * old) is not believed, and a LINK_STATE is resent within the heartbeat
 * whatever the RTT estimate: before, a 19 s estimate spaced the resends
 * 39 s apart, so a lost LINK_STATE kept the peer off a working rail
 * (fuzz_conn found it: crashes/fuzz_conn/ls-resend-stalled-rtt).
 */
static void test_conn_link_state_stalled_rtt(void **state)
{
	uint64_t t;
	un_net *n = pair_proven(2, &t);
	rn_conn *c = cl(n);
	uint64_t t1 = t + 10 * UT_MS, before = rn_conn_rtt_estimate(c);
	rn_hdr h = { .type = RN_PT_ACK, .flags = RN_F_ACK, .path = 0, .dst = rn_conn_id(c) };
	rn_ackblk ab = { .ack = c->sq.una - 1, .wnd = c->peer_wnd,
			 .ts_echo = rn_now_us(t1) - 19000000, .ts_rx = 1, .echo_path = 0 };

	(void)state;
	assert_int_equal(un_inject(n, UN_CLIENT, t1, 0, un_addr(n, UN_SERVER, 0), &h, &ab, NULL, 0), 0);
	assert_true(rn_conn_rtt_estimate(c) == before);
	/* an estimate that long anyway (an old sample): LINK_STATE still every heartbeat */
	c->rtt_ns = 19 * UT_S;
	n->filter = un_drop_all;
	rn_conn_set_rx(c, 1, 0, RN_CAUSE_RX_COUNT, t1);
	un_run(n, t1 + c->cfg.heartbeat_ns + 10 * UT_MS);
	assert_true(un_count(n, UN_CLIENT, RN_PT_LINK_STATE, -1, t1, t1 + 10 * UT_MS) >= 1);
	assert_true(un_count(n, UN_CLIENT, RN_PT_LINK_STATE, -1, t1 + 10 * UT_MS,
			     t1 + c->cfg.heartbeat_ns + 10 * UT_MS) >= 1);
	un_del(n);
}

/* Sequence numbers that start just below 2^32 on both sides. */
static void test_conn_seq_wrap(void **state)
{
	un_net *n = un_new(2);
	uint32_t seqs[1024];
	int k, low = 0, high = 0;

	(void)state;
	/* client: id drawn, isn forced; server: secret (2), id drawn, isn forced */
	n->side[UN_CLIENT].rng = (ut_rng){ .state = 5, .forced = { 0, 0xfffffff0 }, .nforced = 2 };
	n->side[UN_SERVER].rng = (ut_rng){ .state = 6, .forced = { 0, 0, 0, 0xffffffe0 },
					   .nforced = 4 };
	un_handshake(n, t0);
	for (int s = 0; s < 2; s++) {
		n->side[s].to_send = 200 * MSS + 17;
		n->side[s].reading = 1;
		n->side[s].shut_when_done = 1;
	}
	un_run(n, n->now + 1 * UT_S);
	for (int s = 0; s < 2; s++) {
		assert_int_equal(n->side[s].recvd, 200 * MSS + 17);
		assert_int_equal(n->side[s].mismatches, 0);
		assert_true(n->side[s].eof);
	}
	k = data_seqs(n, UN_CLIENT, -1, 0, UINT64_MAX, seqs, 1024);
	for (int i = 0; i < k; i++) {
		low += seqs[i] < 0x1000;
		high += seqs[i] >= 0xfffffff0;
	}
	assert_true(low > 0 && high > 0);
	un_del(n);
}

/* ---- what the receiver refuses ---- */

typedef struct src_case {
	const char *name;
	int local_rail; /* where it arrives */
	rn_addr from;
	int path;       /* rail index in the header */
	int want;       /* 0 or RN_ERR_DROP (RN_DROP_SOURCE) */
} src_case;

static void test_conn_wrong_source(void **state)
{
	un_net *n = pair(2, NULL);
	const rn_addr c0 = un_addr(n, UN_CLIENT, 0), c1 = un_addr(n, UN_CLIENT, 1);
	const uint16_t port1 = (uint16_t)(c0.port + 1);
	const src_case cases[] = {
		{ "another port", 0, { .ip = c0.ip, .port = port1 }, 0, RN_ERR_DROP },
		{ "another address", 0, { .ip = c0.ip + 5, .port = c0.port }, 0, RN_ERR_DROP },
		{ "rail 1's address on rail 0", 0, c1, 0, RN_ERR_DROP },
		{ "right address, wrong local rail", 1, c0, 0, RN_ERR_DROP },
		{ "header names rail 1, came on rail 0", 0, c0, 1, RN_ERR_DROP },
		{ "header names a rail that does not exist", 0, c0, 2, RN_ERR_DROP },
		{ "header names rail 255", 0, c0, 255, RN_ERR_DROP },
		{ "right on rail 0", 0, c0, 0, 0 },
		{ "right on rail 1", 1, c1, 1, 0 },
	};
	const uint64_t t1 = n->now + 1 * UT_MS;

	(void)state;
	for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
		const src_case *tc = &cases[i];
		rn_hdr h = { .type = RN_PT_KEEPALIVE, .path = (uint8_t)tc->path,
			     .dst = rn_conn_id(sv(n)) };
		rn_conn_stats before = stats(sv(n)), after;
		int rc = un_inject(n, UN_SERVER, t1, tc->local_rail, tc->from, &h, NULL, NULL, 0);

		after = stats(sv(n));
		if (rc != tc->want)
			fail_msg("case \"%s\": got %d, want %d", tc->name, rc, tc->want);
		if (tc->want) {
			assert_true(after.drops[RN_DROP_SOURCE] == before.drops[RN_DROP_SOURCE] + 1);
			/* a dropped packet is not evidence that a rail works */
			assert_true(after.rx_packets == before.rx_packets);
		} else {
			assert_true(after.rail[tc->path].rx_packets ==
				    before.rail[tc->path].rx_packets + 1);
		}
	}
	un_del(n);
}

/* Other datagrams a connection must not take. */
static void test_conn_foreign_packets(void **state)
{
	uint64_t t_est;
	un_net *n = pair(2, &t_est);
	const uint64_t t1 = t_est + 1 * UT_MS;
	uint8_t body[RN_HELLO_FIXED + 8 + RN_COOKIE_LEN] = { 0 };
	rn_hdr h = { .type = RN_PT_KEEPALIVE, .path = 0, .dst = rn_conn_id(cl(n)) + 1 };
	uint8_t junk[10] = { 1, 2, 3 };
	rn_conn_stats st;

	(void)state;
	/* another connection's id */
	assert_int_equal(un_inject(n, UN_CLIENT, t1, 0, un_addr(n, UN_SERVER, 0), &h, NULL, NULL, 0),
			 RN_ERR_DROP);
	/* an INIT_ACK once past the handshake */
	h = (rn_hdr){ .type = RN_PT_INIT_ACK, .path = 0xff, .dst = rn_conn_id(cl(n)) };
	assert_int_equal(un_inject(n, UN_CLIENT, t1, 0, un_addr(n, UN_SERVER, 0), &h, NULL, body,
				   sizeof(body)), RN_ERR_DROP);
	/* not a datagram at all */
	assert_int_equal(rn_conn_recv(cl(n), t1, 0, un_addr(n, UN_SERVER, 0), junk, sizeof(junk)),
			 RN_ERR_DROP);
	st = stats(cl(n));
	assert_int_equal(st.drops[RN_DROP_UNKNOWN_CONN], 1);
	assert_int_equal(st.drops[RN_DROP_TYPE], 1);
	assert_int_equal(st.drops[RN_DROP_MALFORMED], 1);
	assert_int_equal(rn_conn_state(cl(n)), RN_ST_ESTABLISHED);
	un_del(n);
}

typedef struct ack_case {
	const char *name;
	int64_t ack_delta;  /* ack - sq.nxt */
	int64_t wnd_delta;  /* wnd - ack */
	int want;
} ack_case;

/* An ACK must acknowledge only what was sent, with a sane window. */
static void test_conn_ack_window(void **state)
{
	static const ack_case cases[] = {
		{ "one past what was sent", 1, 64, RN_ERR_DROP },
		{ "written but never sent", 3, 64, RN_ERR_DROP },
		{ "far ahead", 100000, 64, RN_ERR_DROP },
		{ "older than a whole ring", -(2048 + 4), 64, RN_ERR_DROP },
		{ "window edge below the ACK", 0, -1, RN_ERR_DROP },
		{ "window larger than any ring", 0, RN_MAX_SLOTS + 1, RN_ERR_DROP },
		{ "an old ACK is fine", -3, 64, 0 },
		{ "everything sent, acked", 0, 2048, 0 },
	};
	uint64_t t_est;
	un_net *n = pair(2, &t_est);
	rn_conn *c = cl(n);
	uint64_t t1 = t_est + 1 * UT_MS;
	uint32_t nxt;

	(void)state;
	n->filter = un_drop_all; /* the data stays in flight */
	assert_int_equal(rn_conn_write(c, t1, "abcdefgh", 8), 8);
	un_flush(n, UN_CLIENT, t1);
	n->side[UN_CLIENT].writable = 0;
	for (int i = 0; i < 3; i++) {
		/* three more packets that stay unsent: the rails are not writable */
		static uint8_t big[MSS];

		assert_int_equal(rn_conn_write(c, t1, big, MSS), MSS);
	}
	nxt = c->sq.nxt;
	assert_int_equal(nxt - c->hs.isn, 1);
	assert_int_equal(c->sq.end - nxt, 3);
	for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
		const ack_case *tc = &cases[i];
		uint32_t ack = nxt + (uint32_t)tc->ack_delta;
		rn_ackblk ab = { .ack = ack, .wnd = ack + (uint32_t)tc->wnd_delta };
		rn_hdr h = { .type = RN_PT_ACK, .path = 0, .dst = rn_conn_id(c) };
		uint64_t before = stats(c).drops[RN_DROP_WINDOW];
		int rc = un_inject(n, UN_CLIENT, t1 + 10, 0, un_addr(n, UN_SERVER, 0), &h, &ab,
				   NULL, 0);

		if (rc != tc->want)
			fail_msg("case \"%s\": got %d, want %d", tc->name, rc, tc->want);
		assert_true(stats(c).drops[RN_DROP_WINDOW] == before + (tc->want ? 1 : 0));
		/* a refused ACK acknowledged nothing */
		if (tc->want)
			assert_int_equal(c->sq.una, c->hs.isn);
	}
	/* the last, valid one acknowledged the packet in flight */
	assert_int_equal(c->sq.una, nxt);
	un_del(n);
}

/* A duplicate tells the receiver its ACK was lost: it acknowledges at once. */
static void test_conn_duplicate_data(void **state)
{
	uint64_t t_est;
	un_net *n = pair(2, &t_est);
	const uint64_t t1 = t_est + 1 * UT_MS;
	rn_hdr h = { .type = RN_PT_DATA, .path = 0, .dst = rn_conn_id(sv(n)),
		     .seq = cl(n)->hs.isn };

	(void)state;
	assert_int_equal(un_inject(n, UN_SERVER, t1, 0, un_addr(n, UN_CLIENT, 0), &h, NULL, "hello",
				   5), 0);
	/* one packet: the ACK waits for ack_delay */
	assert_int_equal(un_flush(n, UN_SERVER, t1), 0);
	/* resent an RTO (20 ms at least) later */
	assert_int_equal(un_inject(n, UN_SERVER, t1 + 20 * UT_MS, 0, un_addr(n, UN_CLIENT, 0), &h,
				   NULL, "HELLO", 5), RN_ERR_DROP);
	assert_int_equal(stats(sv(n)).drops[RN_DROP_DUPLICATE], 1);
	assert_int_equal(stats(sv(n)).dup_data, 1);
	assert_int_equal(un_flush(n, UN_SERVER, t1 + 20 * UT_MS), 1);
	assert_int_equal(n->log[n->nlog - 1].type, RN_PT_ACK);
	assert_int_equal(n->log[n->nlog - 1].ack, cl(n)->hs.isn + 1);
	un_del(n);
}

/*
 * The owner check (rn_env.owns): in builds with RN_ASSERTS an entry point
 * called by a thread its driver did not let in aborts; elsewhere the check
 * is compiled out and never called.
 */
static int owner_calls, owner_lets;

static int owner_check(void *user)
{
	(void)user;
	owner_calls++;
	return owner_lets;
}

static void test_conn_owner_check(void **state)
{
	uint64_t t_est;
	un_net *n = pair(2, &t_est);

	(void)state;
	sv(n)->env.owns = owner_check;
	owner_lets = 1;
	owner_calls = 0;
	rn_conn_on_timer(sv(n), t_est + UT_MS);
#ifdef RN_ASSERTS
	assert_true(owner_calls > 0);
	{
		int st = 0;
		pid_t pid = fork();

		assert_true(pid >= 0);
		if (pid == 0) {
			owner_lets = 0;
			rn_conn_on_timer(sv(n), t_est + 2 * UT_MS); /* aborts */
			_exit(0);
		}
		assert_int_equal(waitpid(pid, &st, 0), pid);
		assert_true(WIFSIGNALED(st) && WTERMSIG(st) == SIGABRT);
	}
#else
	assert_int_equal(owner_calls, 0);
#endif
	sv(n)->env.owns = NULL;
	un_del(n);
}

/*
 * The copy of the newest packet right behind it on the other rail
 * (RI2N_REDUNDANT_BYTES, flagged COPY) is dropped and counted, and asks for
 * no ACK of its own: the one owed for its twin covers it.  The same
 * duplicate unflagged (a sender resending a stalled rail's packet on the
 * other rail, which waits for this ACK) is acknowledged at once.
 */
static void test_conn_copy_no_ack(void **state)
{
	uint64_t t_est;
	un_net *n = pair(2, &t_est);
	const uint64_t t1 = t_est + 1 * UT_MS;
	rn_hdr h = { .type = RN_PT_DATA, .path = 0, .dst = rn_conn_id(sv(n)),
		     .seq = cl(n)->hs.isn };

	(void)state;
	assert_int_equal(un_inject(n, UN_SERVER, t1, 0, un_addr(n, UN_CLIENT, 0), &h, NULL, "hello",
				   5), 0);
	h.path = 1;
	h.flags = RN_F_COPY;
	assert_int_equal(un_inject(n, UN_SERVER, t1 + 30 * UT_US, 1, un_addr(n, UN_CLIENT, 1), &h,
				   NULL, "hello", 5), RN_ERR_DROP);
	assert_int_equal(stats(sv(n)).dup_data, 1);
	assert_int_equal(stats(sv(n)).rail[1].rx_data, 1); /* evidence for rail 1 all the same */
	assert_int_equal(un_flush(n, UN_SERVER, t1 + 30 * UT_US), 0);
	/* unflagged: a resend, whose sender waits for the ACK */
	h.flags = 0;
	assert_int_equal(un_inject(n, UN_SERVER, t1 + 60 * UT_US, 1, un_addr(n, UN_CLIENT, 1), &h,
				   NULL, "hello", 5), RN_ERR_DROP);
	assert_int_equal(stats(sv(n)).dup_data, 2);
	assert_int_equal(un_flush(n, UN_SERVER, t1 + 60 * UT_US), 1);
	assert_int_equal(n->log[n->nlog - 1].type, RN_PT_ACK);
	assert_int_equal(n->log[n->nlog - 1].ack, cl(n)->hs.isn + 1);
	un_del(n);
}

/* ---- loss recovery ---- */

/*
 * Per-rail loss detection, exactly: 8 packets on rail 0 only; selective ACKs
 * for the 2nd, 3rd, then 4th.  The first is lost once three packets sent
 * after it on its rail are acknowledged (docs/PROTOCOL.md), not before.
 */
static void test_conn_loss_three_later_acked(void **state)
{
	uint64_t t_est;
	un_net *n = pair(2, &t_est);
	rn_conn *c = cl(n);
	const uint64_t t1 = t_est + 1 * UT_MS;
	static uint8_t buf[8 * MSS];
	const uint64_t sacks[] = { 0x1, 0x3, 0x7 }; /* seq isn+1, +2, +3 */
	uint32_t isn = c->hs.isn;
	int before;

	(void)state;
	n->filter = un_drop_all;
	n->side[UN_CLIENT].writable = 0x1;
	assert_int_equal(rn_conn_write(c, t1, buf, sizeof(buf)), sizeof(buf));
	assert_int_equal(un_flush(n, UN_CLIENT, t1), 8);
	assert_int_equal(un_count(n, UN_CLIENT, RN_PT_DATA, 0, t1, t1), 8);
	for (int i = 0; i < 3; i++) {
		uint64_t w = sacks[i];
		rn_ackblk ab = { .ack = isn, .wnd = isn + 2048, .nwords = 1, .words = &w };
		rn_hdr h = { .type = RN_PT_ACK, .path = 0, .dst = rn_conn_id(c) };
		uint64_t t = t1 + (uint64_t)(i + 1) * 10 * UT_US;

		assert_int_equal(un_inject(n, UN_CLIENT, t, 0, un_addr(n, UN_SERVER, 0), &h, &ab,
					   NULL, 0), 0);
		before = n->nlog;
		un_flush(n, UN_CLIENT, t);
		if (i < 2) {
			if (un_count(n, UN_CLIENT, RN_PT_DATA, -1, t, t))
				fail_msg("declared lost with only %d later packets acked", i + 1);
			assert_int_equal(stats(c).rail[0].lost, 0);
		} else {
			const un_rec *r = un_find(n, UN_CLIENT, RN_PT_DATA, -1, t, 0);

			assert_non_null(r);
			assert_int_equal(r->seq, isn);
			assert_int_equal(n->nlog - before, 1);
			assert_int_equal(stats(c).rail[0].lost, 1);
			assert_int_equal(stats(c).retransmits, 1);
		}
	}
	un_del(n);
}

/* A lost packet is found by later ACKs (no RTO) and resent on the other rail. */
static void test_conn_loss_resent_other_rail(void **state)
{
	uint64_t t_est;
	un_net *n = pair_proven(2, &t_est);
	int left = 1;
	const uint64_t t1 = t_est + 1 * UT_MS;
	const un_rec *first, *again;
	uint32_t seq;

	(void)state;
	n->side[UN_CLIENT].to_send = 12 * MSS;
	n->side[UN_SERVER].reading = 1;
	n->filter = drop_first_data;
	n->filter_arg = &left;
	un_run(n, t1);
	un_run(n, t1 + 50 * UT_MS);
	first = un_find(n, UN_CLIENT, RN_PT_DATA, -1, 0, 0);
	assert_non_null(first);
	assert_true(first->dropped);
	seq = first->seq;
	again = NULL;
	for (int i = 0; i < n->nlog; i++)
		if (&n->log[i] != first && n->log[i].from == UN_CLIENT &&
		    n->log[i].type == RN_PT_DATA && n->log[i].seq == seq)
			again = &n->log[i];
	assert_non_null(again);
	assert_int_not_equal(again->path, first->path);
	/* found by the ACKs of later packets, well before any RTO (20 ms at least) */
	assert_true(again->sent_ns - first->sent_ns < 1 * UT_MS);
	assert_int_equal(stats(cl(n)).retransmits, 1);
	assert_int_equal(stats(cl(n)).rto_events, 0);
	assert_int_equal(stats(cl(n)).rail[first->path].lost, 1);
	assert_int_equal(n->side[UN_SERVER].recvd, 12 * MSS);
	assert_int_equal(n->side[UN_SERVER].mismatches, 0);
	un_del(n);
}

/* ---- flow control ---- */

static void test_conn_flow_control(void **state)
{
	un_net *n = un_new(2);
	const uint64_t total = 200 * (uint64_t)MSS;
	uint32_t seqs[4096], isn, max_off = 0;
	int k;

	(void)state;
	n->side[UN_SERVER].cfg.rcv_slots = 64;
	n->side[UN_CLIENT].cfg.snd_slots = 256;
	un_handshake(n, t0);
	isn = cl(n)->hs.isn;
	n->side[UN_CLIENT].to_send = total;
	/* the receiver does not read: the sender must stop at its window edge */
	un_run(n, n->now + 200 * UT_MS);
	k = data_seqs(n, UN_CLIENT, -1, 0, UINT64_MAX, seqs, 4096);
	for (int i = 0; i < k; i++)
		if (seqs[i] - isn > max_off)
			max_off = seqs[i] - isn;
	assert_int_equal(max_off, 63);
	assert_int_equal(stats(sv(n)).drops[RN_DROP_WINDOW], 0);
	assert_false(rn_conn_write_done(cl(n)));
	/* no data was resent: waiting for the window is not a loss */
	assert_int_equal(stats(cl(n)).retransmits, 0);
	/* reading reopens the window; everything arrives, never beyond the edge */
	n->side[UN_SERVER].reading = 1;
	un_run(n, n->now + 2 * UT_S);
	assert_int_equal(n->side[UN_SERVER].recvd, total);
	assert_int_equal(n->side[UN_SERVER].mismatches, 0);
	assert_int_equal(stats(sv(n)).drops[RN_DROP_WINDOW], 0);
	assert_true(rn_conn_write_done(cl(n)));
	un_del(n);
}

/* ---- failure detection by receive counting ---- */

typedef struct count_case {
	const char *name;
	uint64_t start_ns;    /* first packet this long after the server accepted */
	uint64_t spacing_ns;
	int rail1_per_100;    /* of every 100 packets, this many come on rail 1 */
	int total;
	int down_at;          /* the packet (1-based) whose arrival fails rail 1; 0: never */
} count_case;

static void test_conn_rx_count_failure(void **state)
{
	static const count_case cases[] = {
		/* two windows of 100 short, silent for > 2 ms: the second window fails it */
		{ "rail 1 silent", 10 * UT_MS, 10 * UT_US, 0, 300, 200 },
		/* fail_min = 2 is enough */
		{ "two of every 100 on rail 1", 10 * UT_MS, 10 * UT_US, 2, 400, 0 },
		/* short in windows 1..3, but silent for 2 ms only by window 4 */
		{ "silent, not yet for 2 ms", 100 * UT_US, 5 * UT_US, 0, 500, 400 },
	};

	(void)state;
	for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
		const count_case *tc = &cases[i];
		un_net *n = pair(2, NULL);
		const uint64_t t_acc = t0 + 3 * D;
		const rn_event *ev;
		int down_at = 0;

		for (int p = 1; p <= tc->total && !down_at; p++) {
			uint64_t t = t_acc + tc->start_ns + (uint64_t)(p - 1) * tc->spacing_ns;
			int rail = (p - 1) % 100 < tc->rail1_per_100;

			assert_int_equal(un_inject_ctl(n, UN_SERVER, t, rail, RN_PT_KEEPALIVE, NULL, 0),
					 0);
			un_timer(n, UN_SERVER, t); /* the verdict waits for the timer call */
			if (un_event(n, UN_SERVER, RN_EV_RAIL_DOWN, -1, 0))
				down_at = p;
		}
		if (down_at != tc->down_at)
			fail_msg("case \"%s\": rail down at packet %d, want %d", tc->name, down_at,
				 tc->down_at);
		if (!down_at) {
			un_del(n);
			continue;
		}
		ev = un_event(n, UN_SERVER, RN_EV_RAIL_DOWN, -1, 0);
		assert_int_equal(ev->rail, 1);
		assert_int_equal(ev->cause, RN_CAUSE_RX_COUNT);
		assert_int_equal(ev->rx_up, 0x1);
		assert_int_equal(ev->tx_up, 0x3);
		assert_int_equal(un_event_count(n, UN_SERVER, RN_EV_RAIL_DOWN), 1);
		/* the peer is told at once, on every rail (the failed one may work one way) */
		un_flush(n, UN_SERVER, ev->time_ns);
		for (int r = 0; r < 2; r++) {
			const un_rec *ls = un_find(n, UN_SERVER, RN_PT_LINK_STATE, r, ev->time_ns, 0);
			const uint8_t want[8] = { 0, 0, 0, 1, 0x1, 0, 0, 0 };

			assert_non_null(ls);
			assert_memory_equal(ls->head, want, sizeof(want));
			assert_int_equal(un_count(n, UN_SERVER, RN_PT_LINK_STATE, r, ev->time_ns,
						  ev->time_ns), 1);
		}
		un_del(n);
	}
}

/*
 * A driver reads one rail's socket, then the other's: the window may fill
 * from a backlog of rail 0 while rail 1's packets of the same moments wait
 * to be read.  The count judges rail 1 short, but its packets handed over
 * before the timer call clear it: no failure, no LINK_STATE.  The same
 * backlog with nothing from rail 1 after it does fail the rail.
 */
static void test_conn_rx_count_batch_skew(void **state)
{
	for (int rail1_after = 1; rail1_after >= 0; rail1_after--) {
		un_net *n = pair(2, NULL);
		uint64_t t = t0 + 3 * D + 10 * UT_MS;

		(void)state;
		/* both rails in step for a while */
		for (int p = 0; p < 100; p++, t += 10 * UT_US)
			un_inject_ctl(n, UN_SERVER, t, p % 2, RN_PT_KEEPALIVE, NULL, 0);
		un_timer(n, UN_SERVER, t);
		/* a 50 ms backlog (more than the 40 ms of silence a rail may need to fail):
		 * 500 of rail 0's packets read first, kernel stamps 100 us apart */
		for (int p = 0; p < 500; p++)
			un_inject_ctl(n, UN_SERVER, t + (uint64_t)p * 100 * UT_US, 0,
				      RN_PT_KEEPALIVE, NULL, 0);
		/* then rail 1's, read from its socket in the same pass: their stamps are
		 * older, but time given to the core never goes back (the engine clamps) */
		t += 499 * 100 * UT_US;
		if (rail1_after)
			for (int p = 0; p < 500; p++)
				un_inject_ctl(n, UN_SERVER, t, 1, RN_PT_KEEPALIVE, NULL, 0);
		un_timer(n, UN_SERVER, t);
		if (rail1_after) {
			assert_null(un_event(n, UN_SERVER, RN_EV_RAIL_DOWN, -1, 0));
			assert_int_equal(stats(sv(n)).rail[1].rx_up, 1);
			un_flush(n, UN_SERVER, t);
			assert_null(un_find(n, UN_SERVER, RN_PT_LINK_STATE, -1, 0, 0));
		} else {
			const rn_event *ev = un_event(n, UN_SERVER, RN_EV_RAIL_DOWN, 1, 0);

			assert_non_null(ev);
			assert_int_equal(ev->cause, RN_CAUSE_RX_COUNT);
		}
		un_del(n);
	}
}

/*
 * A sender held off the CPU between handing its rails their datagrams:
 * rail 1's share of a batch arrives, rail 0's share of the same batch (the
 * same send time) 50 ms later, 300 packets of it.  In arrival times rail 1
 * is silent for 50 ms over three windows; in the sender's clock it is not
 * silent at all: no failure.  The same arrivals stamped as the sender's
 * clock runs (what a black hole of rail 1 looks like) fail it.
 */
static void test_conn_rx_count_sender_stall(void **state)
{
	for (int stalled = 1; stalled >= 0; stalled--) {
		un_net *n = pair(2, NULL);
		uint64_t t = t0 + 3 * D + 10 * UT_MS, batch;

		(void)state;
		for (int p = 0; p < 100; p++, t += 10 * UT_US)
			un_inject_ctl(n, UN_SERVER, t, p % 2, RN_PT_KEEPALIVE, NULL, 0);
		un_timer(n, UN_SERVER, t);
		batch = t;
		for (int p = 0; p < 10; p++)
			un_inject_ctl(n, UN_SERVER, t, 1, RN_PT_KEEPALIVE, NULL, 0);
		t += 50 * UT_MS;
		for (int p = 0; p < 300; p++, t += 5 * UT_US) {
			rn_hdr h = { .type = RN_PT_KEEPALIVE, .path = 0, .dst = rn_conn_id(sv(n)),
				     .ts = (uint32_t)((stalled ? batch : t) / 1000) };

			assert_int_equal(un_inject(n, UN_SERVER, t, 0, un_addr(n, UN_CLIENT, 0), &h,
						   NULL, NULL, 0), 0);
			un_timer(n, UN_SERVER, t);
		}
		if (stalled) {
			assert_null(un_event(n, UN_SERVER, RN_EV_RAIL_DOWN, -1, 0));
			assert_int_equal(stats(sv(n)).rail[1].rx_up, 1);
		} else {
			const rn_event *ev = un_event(n, UN_SERVER, RN_EV_RAIL_DOWN, 1, 0);

			assert_non_null(ev);
			assert_int_equal(ev->cause, RN_CAUSE_RX_COUNT);
		}
		un_del(n);
	}
}

/* A heartbeat arriving on a failed rail brings it back, and the peer is told. */
static void test_conn_heartbeat_marks_up(void **state)
{
	un_net *n = pair(2, NULL);
	const uint64_t t1 = t0 + 10 * UT_MS;
	const uint8_t want[8] = { 0, 0, 0, 2, 0x3, 0, 0, 0 };
	const rn_event *ev;
	uint64_t t = t1;

	(void)state;
	for (int p = 0; p < 200; p++, t += 10 * UT_US) {
		un_inject_ctl(n, UN_SERVER, t, 0, RN_PT_KEEPALIVE, NULL, 0);
		un_timer(n, UN_SERVER, t);
	}
	assert_non_null(un_event(n, UN_SERVER, RN_EV_RAIL_DOWN, 1, 0));
	assert_int_equal(stats(sv(n)).rail[1].rx_up, 0);
	/* a small heartbeat is no evidence: an MTU black hole passes those */
	assert_int_equal(un_inject_ctl(n, UN_SERVER, t, 1, RN_PT_HEARTBEAT, NULL, 0), 0);
	assert_null(un_event(n, UN_SERVER, RN_EV_RAIL_UP, 1, 0));
	assert_int_equal(stats(sv(n)).rail[1].rx_up, 0);
	/* nor is padding that is not zeros (strict decoding) */
	{
		uint8_t junk[MSS] = { 0 };

		junk[MSS - 1] = 1;
		assert_int_equal(un_inject_ctl(n, UN_SERVER, t, 1, RN_PT_HEARTBEAT, junk, MSS),
				 RN_ERR_DROP);
	}
	assert_int_equal(un_inject_ctl(n, UN_SERVER, t, 1, RN_PT_HEARTBEAT, PAD), 0);
	ev = un_event(n, UN_SERVER, RN_EV_RAIL_UP, 1, 0);
	assert_non_null(ev);
	assert_true(ev->time_ns == t);
	assert_int_equal(ev->cause, RN_CAUSE_RX_SEEN);
	assert_int_equal(ev->rx_up, 0x3);
	un_flush(n, UN_SERVER, t);
	for (int r = 0; r < 2; r++) {
		const un_rec *ls = un_find(n, UN_SERVER, RN_PT_LINK_STATE, r, t, 0);

		assert_non_null(ls);
		assert_memory_equal(ls->head, want, sizeof(want));
	}
	un_del(n);
}

/* ---- MTU black holes: full-size evidence ---- */

/*
 * A stream of full-size datagrams on rail 0 and only small ones on rail 1
 * (one in four, 25 us apart): rail 1 keeps its count, but brings fewer than
 * fail_min full-size ones per window.  It fails as an MTU black hole after
 * at least 4 ms without a full-size one, reporting the largest datagram that
 * still came; while full-size ones come too, it stays up.
 */
static void test_conn_size_verdict(void **state)
{
	for (int full_too = 0; full_too < 2; full_too++) {
		un_net *n = pair(2, NULL);
		uint64_t t = t0 + 10 * UT_MS, t1;
		const rn_event *ev;
		rn_conn_stats st;

		(void)state;
		/* both rails in step, full size: one window of 100 */
		for (int p = 0; p < 100; p++, t += 10 * UT_US) {
			un_inject_ctl(n, UN_SERVER, t, p % 2, RN_PT_KEEPALIVE, PAD);
			un_timer(n, UN_SERVER, t);
		}
		/* then rail 1 brings only small datagrams, one in four, 25 us apart */
		t1 = t;
		for (int p = 0; p < 1600; p++, t += 25 * UT_US) {
			if (p % 4 != 3)
				un_inject_ctl(n, UN_SERVER, t, 0, RN_PT_KEEPALIVE, PAD);
			else if (full_too && p % 8 == 3)
				un_inject_ctl(n, UN_SERVER, t, 1, RN_PT_KEEPALIVE, PAD);
			else
				un_inject_ctl(n, UN_SERVER, t, 1, RN_PT_KEEPALIVE, NULL, 0);
			un_timer(n, UN_SERVER, t);
			/* under 4 ms without a full-size datagram is not yet a verdict */
			if (t < t1 + 4 * UT_MS)
				assert_null(un_event(n, UN_SERVER, RN_EV_RAIL_DOWN, -1, 0));
		}
		st = stats(sv(n));
		if (full_too) {
			/* every second one of rail 1's is full size: it stays up */
			assert_null(un_event(n, UN_SERVER, RN_EV_RAIL_DOWN, -1, 0));
			assert_int_equal(st.rail[1].rx_up, 1);
			un_del(n);
			continue;
		}
		ev = un_event(n, UN_SERVER, RN_EV_RAIL_DOWN, 1, 0);
		assert_non_null(ev);
		assert_int_equal(ev->cause, RN_CAUSE_RX_SIZE);
		/* the second short window closes 5 ms in (2 x 100 packets, 25 us apart) */
		/*
		 * Not before 4 ms, and within 30 ms: it also needs twice the longest
		 * gap between full-size datagrams the rail showed while healthy (the
		 * ~10 ms before the first one counts: up to the 30 ms cap).
		 */
		assert_true(ev->time_ns >= t1 + 4 * UT_MS && ev->time_ns <= t1 + 30 * UT_MS);
		assert_int_equal(st.rail[1].rx_up, 0);
		assert_int_equal(st.rail[1].mtu_holes, 1);
		assert_int_equal(st.rail[1].small_ok, RN_HDR_LEN); /* a bare keepalive */
		assert_int_equal(st.rail[1].dgram, 1472);
		/* small ones keep coming: they do not bring it back; one full-size one does */
		un_inject_ctl(n, UN_SERVER, t, 1, RN_PT_KEEPALIVE, NULL, 0);
		assert_null(un_event(n, UN_SERVER, RN_EV_RAIL_UP, 1, 0));
		un_inject_ctl(n, UN_SERVER, t + 1, 1, RN_PT_KEEPALIVE, PAD);
		ev = un_event(n, UN_SERVER, RN_EV_RAIL_UP, 1, 0);
		assert_non_null(ev);
		assert_true(ev->time_ns == t + 1);
		un_del(n);
	}
}

/*
 * The end of a stream: the peer's last full-size datagrams all go on rail 0
 * (sent within 1 ms of rail 1's last full-size one, arriving over 40 ms
 * behind a queue) while rail 1 brings only small ones (ACKs).  In arrival
 * times rail 1 lacks full-size datagrams for 40 ms; in the peer's clock no
 * full-size datagram was sent much after its last one there: no verdict.
 * The same arrivals stamped as the peer's clock runs (it goes on streaming
 * on rail 0: an MTU black hole on rail 1) fail it by size.
 */
static void test_conn_size_verdict_stream_end(void **state)
{
	for (int hole = 0; hole < 2; hole++) {
		un_net *n = pair(2, NULL);
		uint64_t t = t0 + 10 * UT_MS, t1;

		(void)state;
		for (int p = 0; p < 100; p++, t += 10 * UT_US) {
			un_inject_ctl(n, UN_SERVER, t, p % 2, RN_PT_KEEPALIVE, PAD);
			un_timer(n, UN_SERVER, t);
		}
		t1 = t;
		for (int p = 0; p < 1600; p++, t += 25 * UT_US) {
			/* rail 0: full size, sent in the 1 ms after t1 unless streaming on */
			uint64_t sent = hole ? t : t1 + (uint64_t)p * UT_MS / 1600;
			rn_hdr h = { .type = RN_PT_KEEPALIVE, .path = 0, .dst = rn_conn_id(sv(n)),
				     .ts = (uint32_t)(sent / 1000) };

			assert_int_equal(un_inject(n, UN_SERVER, t, 0, un_addr(n, UN_CLIENT, 0), &h,
						   NULL, PAD), 0);
			if (p % 4 == 3)
				un_inject_ctl(n, UN_SERVER, t, 1, RN_PT_KEEPALIVE, NULL, 0);
			un_timer(n, UN_SERVER, t);
		}
		if (hole) {
			const rn_event *ev = un_event(n, UN_SERVER, RN_EV_RAIL_DOWN, 1, 0);

			assert_non_null(ev);
			assert_int_equal(ev->cause, RN_CAUSE_RX_SIZE);
		} else {
			assert_null(un_event(n, UN_SERVER, RN_EV_RAIL_DOWN, -1, 0));
			assert_int_equal(stats(sv(n)).rail[1].rx_up, 1);
		}
		un_del(n);
	}
}

/*
 * Rail 1 failed by count (nothing came).  The peer's heartbeat rounds send
 * a padded heartbeat, then a small one.  A round whose padded one arrives
 * (just before its small twin) says nothing; two rounds in a row of the
 * small one alone name the rail an MTU black hole: a second RAIL_DOWN,
 * cause RN_CAUSE_RX_SIZE, counted once however many rounds follow.
 */
static void test_conn_small_heartbeats_alone(void **state)
{
	un_net *n = pair(2, NULL);
	uint64_t t = t0 + 10 * UT_MS;
	const uint64_t hb = 100 * UT_MS;
	const rn_event *ev;

	(void)state;
	for (int p = 0; p < 200; p++, t += 10 * UT_US) {
		un_inject_ctl(n, UN_SERVER, t, 0, RN_PT_KEEPALIVE, PAD);
		un_timer(n, UN_SERVER, t);
	}
	assert_int_equal(un_event(n, UN_SERVER, RN_EV_RAIL_DOWN, 1, 0)->cause, RN_CAUSE_RX_COUNT);
	/* a heartbeat round: the small one alone (its padded twin was lost) */
	un_inject_ctl(n, UN_SERVER, t, 1, RN_PT_HEARTBEAT, NULL, 0);
	/* the next round gets through whole: the count starts over */
	t += hb;
	un_inject_ctl(n, UN_SERVER, t, 1, RN_PT_HEARTBEAT, PAD);
	assert_non_null(un_event(n, UN_SERVER, RN_EV_RAIL_UP, 1, 0));
	/* down again by count (once its grace after coming back is over), then
	 * three rounds of the small one alone */
	t += 20 * UT_MS;
	for (int p = 0; p < 200; p++) {
		t += 10 * UT_US;
		un_inject_ctl(n, UN_SERVER, t, 0, RN_PT_KEEPALIVE, PAD);
		un_timer(n, UN_SERVER, t);
	}
	assert_int_equal(un_event_count(n, UN_SERVER, RN_EV_RAIL_DOWN), 2);
	for (int round = 0; round < 3; round++) {
		t += hb;
		assert_int_equal(un_inject_ctl(n, UN_SERVER, t, 1, RN_PT_HEARTBEAT, NULL, 0), 0);
		assert_int_equal(un_event_count(n, UN_SERVER, RN_EV_RAIL_DOWN), round == 0 ? 2 : 3);
	}
	ev = un_event(n, UN_SERVER, RN_EV_RAIL_DOWN, 1, t - 2 * hb);
	assert_non_null(ev);
	assert_int_equal(ev->cause, RN_CAUSE_RX_SIZE);
	assert_true(ev->time_ns == t - hb);
	assert_int_equal(stats(sv(n)).rail[1].mtu_holes, 1);
	assert_int_equal(stats(sv(n)).rail[1].down_events, 2); /* a report, not a change */
	assert_int_equal(stats(sv(n)).rail[1].rx_up, 0);
	un_del(n);
}

/* ---- LINK_STATE from the peer, heartbeats ---- */

static void test_conn_link_state_applied(void **state)
{
	uint64_t t_est;
	un_net *n = pair_proven(2, &t_est);
	rn_conn *c = cl(n);
	const uint64_t t1 = t_est + 1 * UT_MS, t2 = t1 + 10 * UT_US;
	const uint8_t ls[8] = { 0, 0, 0, 1, 0x1, 0, 0, 0 };
	static uint8_t buf[8 * MSS];
	uint32_t on1[8], again[16];
	const rn_event *ev;
	const un_rec *ack;
	int k1, k;

	(void)state;
	n->filter = un_drop_all; /* everything stays in flight */
	assert_int_equal(rn_conn_write(c, t1, buf, sizeof(buf)), sizeof(buf));
	assert_int_equal(un_flush(n, UN_CLIENT, t1), 8);
	k1 = data_seqs(n, UN_CLIENT, 1, t1, t1, on1, 8);
	assert_int_equal(k1, 4);

	/* the server says: I do not receive on rail 1 */
	assert_int_equal(un_inject_ctl(n, UN_CLIENT, t2, 0, RN_PT_LINK_STATE, ls, sizeof(ls)), 0);
	ev = un_event(n, UN_CLIENT, RN_EV_RAIL_DOWN, 1, 0);
	assert_non_null(ev);
	assert_int_equal(ev->cause, RN_CAUSE_PEER);
	assert_int_equal(ev->tx_up, 0x1);
	assert_int_equal(ev->rx_up, 0x3);
	/* what was in flight on rail 1 is lost, resent on rail 0 at once */
	assert_int_equal(stats(c).rail[1].lost, 4);
	assert_int_equal(stats(c).rail[1].inflight, 0);
	un_flush(n, UN_CLIENT, t2);
	assert_int_equal(un_count(n, UN_CLIENT, RN_PT_DATA, 1, t2, t2), 0);
	k = data_seqs(n, UN_CLIENT, 0, t2, t2, again, 16);
	assert_int_equal(k, 4);
	for (int i = 0; i < 4; i++)
		assert_int_equal(again[i], on1[i]);
	ack = un_find(n, UN_CLIENT, RN_PT_LINK_ACK, -1, t2, 0);
	assert_non_null(ack);
	assert_memory_equal(ack->head, ls, 4);
	/* an old copy of the same LINK_STATE changes nothing but is acked again */
	assert_int_equal(un_inject_ctl(n, UN_CLIENT, t2, 1, RN_PT_LINK_STATE, ls, sizeof(ls)), 0);
	assert_int_equal(un_event_count(n, UN_CLIENT, RN_EV_RAIL_DOWN), 1);
	/* heartbeats start at once, on every rail; the down rail also gets a small one */
	assert_true(rn_conn_expiry(c) == t2);
	un_timer(n, UN_CLIENT, t2);
	un_flush(n, UN_CLIENT, t2);
	assert_int_equal(un_count(n, UN_CLIENT, RN_PT_HEARTBEAT, 0, t2, t2), 1);
	assert_int_equal(un_count(n, UN_CLIENT, RN_PT_HEARTBEAT, 1, t2, t2), 2);
	assert_int_equal(un_find(n, UN_CLIENT, RN_PT_HEARTBEAT, 0, t2, 0)->len, 1472);
	assert_int_equal(un_find(n, UN_CLIENT, RN_PT_HEARTBEAT, 1, t2, 0)->len, 1472);
	assert_true(un_find(n, UN_CLIENT, RN_PT_HEARTBEAT, 1, t2, 1)->len < 100);
	/* new data: rail 0 only */
	assert_int_equal(rn_conn_write(c, t2 + 1, buf, 6 * MSS), 6 * MSS);
	assert_int_equal(un_flush(n, UN_CLIENT, t2 + 1), 6);
	assert_int_equal(un_count(n, UN_CLIENT, RN_PT_DATA, 0, t2 + 1, t2 + 1), 6);
	un_del(n);
}

/* While a rail cannot be sent on, heartbeats go out on every rail each heartbeat_ns. */
static void test_conn_heartbeats_while_down(void **state)
{
	uint64_t t_est;
	un_net *n = pair_proven(2, &t_est); /* padded heartbeats go to proven addresses only */
	const uint64_t t1 = t_est + 1 * UT_MS;
	const uint8_t ls[8] = { 0, 0, 0, 1, 0x1, 0, 0, 0 };

	(void)state;
	n->filter = un_drop_all;
	assert_int_equal(un_inject_ctl(n, UN_CLIENT, t1, 0, RN_PT_LINK_STATE, ls, sizeof(ls)), 0);
	n->now = t1;
	un_run(n, t1 + 250 * UT_MS);
	/* rail 0: one full-size heartbeat a period; rail 1 (down): a full and a small one */
	for (int r = 0; r < 2; r++) {
		assert_int_equal(un_count(n, UN_CLIENT, RN_PT_HEARTBEAT, r, t1, t1 + 250 * UT_MS),
				 3 * (1 + r));
		for (int k = 0; k < 3 * (1 + r); k++) {
			const un_rec *hb = un_find(n, UN_CLIENT, RN_PT_HEARTBEAT, r, t1, k);

			assert_true(hb->sent_ns == t1 + (uint64_t)(k / (1 + r)) * 100 * UT_MS);
			assert_true(k % 2 || r == 0 ? 1 : hb->len == 1472);
		}
	}
	assert_int_equal(stats(cl(n)).rail[1].heartbeats, 6);
	/* the server never lost a rail: it sends none */
	assert_int_equal(un_count(n, UN_SERVER, RN_PT_HEARTBEAT, -1, 0, UINT64_MAX), 0);
	un_del(n);
}

/* ---- liveness ---- */

/* An idle rail gets a KEEPALIVE after keepalive_ns without sending. */
static void test_conn_keepalive(void **state)
{
	un_net *n = pair(2, NULL);
	const uint64_t tx0 = t0 + 4 * D; /* establishing counts as the client's last send */
	const uint64_t tw = t0 + 150 * UT_MS;

	(void)state;
	n->side[UN_SERVER].reading = 1;
	un_run(n, tx0 + 100 * UT_MS - 1);
	assert_int_equal(un_count(n, UN_CLIENT, RN_PT_KEEPALIVE, -1, 0, UINT64_MAX), 0);
	un_run(n, tw - 1);
	for (int r = 0; r < 2; r++) {
		assert_int_equal(un_count(n, UN_CLIENT, RN_PT_KEEPALIVE, r, 0, UINT64_MAX), 1);
		assert_true(un_find(n, UN_CLIENT, RN_PT_KEEPALIVE, r, 0, 0)->sent_ns ==
			    tx0 + 100 * UT_MS);
	}
	for (int r = 0; r < 2; r++) /* idle keepalives stay small (see RN_FULL_EVIDENCE_NS) */
		assert_true(un_find(n, UN_CLIENT, RN_PT_KEEPALIVE, r, 0, 0)->len < 100);
	/* data on rail 0 at tw postpones rail 0's next keepalive, not rail 1's */
	n->now = tw; /* nothing is due in between */
	n->side[UN_CLIENT].to_send = 100;
	un_run(n, t0 + 400 * UT_MS);
	assert_int_equal(un_find(n, UN_CLIENT, RN_PT_DATA, -1, 0, 0)->path, 0);
	assert_true(un_find(n, UN_CLIENT, RN_PT_KEEPALIVE, 0, tw, 0)->sent_ns == tw + 100 * UT_MS);
	assert_true(un_find(n, UN_CLIENT, RN_PT_KEEPALIVE, 1, tw, 0)->sent_ns == tx0 + 200 * UT_MS);
	assert_int_equal(stats(cl(n)).rail[1].keepalives, 3);
	/* keepalives keep every rail judged alive */
	assert_int_equal(un_event_count(n, UN_CLIENT, RN_EV_RAIL_DOWN), 0);
	assert_int_equal(un_event_count(n, UN_SERVER, RN_EV_RAIL_DOWN), 0);
	un_del(n);
}

static int drop_client_rail1(un_net *n, const un_rec *r, void *arg)
{
	int *broken = arg;

	(void)n;
	return *broken && r->from == UN_CLIENT && r->src_rail == 1;
}

/*
 * Client -> server on rail 1 black-holes from the start: the server finds it
 * silent after rail_timeout, tells the client, the client heartbeats; the
 * rail heals and the next heartbeat brings it back on both sides.
 */
static void test_conn_rail_silence_and_heal(void **state)
{
	un_net *n = un_new(2);
	int broken = 1;
	const uint64_t t_acc = t0 + 3 * D;
	const uint64_t t_down = t_acc + 350 * UT_MS;
	const uint64_t t_ls = t_down + D;
	const rn_event *ev;

	(void)state;
	n->filter = drop_client_rail1;
	n->filter_arg = &broken;
	un_handshake(n, t0);
	un_run(n, t_down - 1);
	assert_int_equal(un_event_count(n, UN_SERVER, RN_EV_RAIL_DOWN), 0);
	un_run(n, t_down);
	ev = un_event(n, UN_SERVER, RN_EV_RAIL_DOWN, -1, 0);
	assert_non_null(ev);
	assert_int_equal(ev->rail, 1);
	assert_int_equal(ev->cause, RN_CAUSE_RX_SILENCE);
	assert_true(ev->time_ns == t_down);
	un_run(n, t_ls + 150 * UT_MS);
	ev = un_event(n, UN_CLIENT, RN_EV_RAIL_DOWN, -1, 0);
	assert_non_null(ev);
	assert_int_equal(ev->rail, 1);
	assert_int_equal(ev->cause, RN_CAUSE_PEER);
	assert_true(ev->time_ns == t_ls);
	/* a full and a small heartbeat each period on the down rail */
	assert_int_equal(un_count(n, UN_CLIENT, RN_PT_HEARTBEAT, 1, t_ls, t_ls + 150 * UT_MS), 4);
	assert_true(un_find(n, UN_CLIENT, RN_PT_HEARTBEAT, 1, 0, 2)->sent_ns == t_ls + 100 * UT_MS);
	/* the server's LINK_STATE was acknowledged: not resent for ever */
	assert_int_equal(un_count(n, UN_SERVER, RN_PT_LINK_STATE, -1, t_down + 50 * UT_MS,
				  UINT64_MAX), 0);

	broken = 0;
	un_run(n, t_ls + 400 * UT_MS);
	ev = un_event(n, UN_SERVER, RN_EV_RAIL_UP, 1, 0);
	assert_non_null(ev);
	assert_int_equal(ev->cause, RN_CAUSE_RX_SEEN);
	assert_true(ev->time_ns == t_ls + 200 * UT_MS + D);
	ev = un_event(n, UN_CLIENT, RN_EV_RAIL_UP, 1, 0);
	assert_non_null(ev);
	assert_int_equal(ev->cause, RN_CAUSE_PEER);
	assert_true(ev->time_ns == t_ls + 200 * UT_MS + 2 * D);
	assert_int_equal(ev->tx_up, 0x3);
	/* all rails work again: the heartbeats stop */
	assert_int_equal(un_count(n, UN_CLIENT, RN_PT_HEARTBEAT, -1, t_ls + 200 * UT_MS + 3 * D,
				  UINT64_MAX), 0);
	un_del(n);
}

/* ---- freshness: replayed datagrams are no sign of life ---- */

/* Sends side `to` a copy of datagram r as recorded (header only: keepalives carry nothing). */
static int replay(un_net *n, int to, uint64_t now, const un_rec *r)
{
	rn_hdr h = { .type = r->type, .path = r->hpath, .dst = r->dst, .seq = r->seq,
		     .ts = rn_now_us(r->sent_ns) };

	return un_inject(n, to, now, r->src_rail, un_addr(n, 1 - to, r->src_rail), &h, NULL,
			 NULL, 0);
}

/*
 * Client -> server on rail 1 black-holes while an attacker replays a
 * KEEPALIVE it recorded on that rail every 100 ms: the rail still fails, at
 * most rail_timeout plus twice the 250 ms freshness bound after the hole.
 */
static void test_conn_replayed_keepalive_black_hole(void **state)
{
	uint64_t t_est;
	un_net *n = pair(2, &t_est);
	int broken = 0;
	const uint64_t t_b = t_est + 500 * UT_MS;
	const un_rec *rec;
	un_rec cap;
	const rn_event *ev;

	(void)state;
	n->filter = drop_client_rail1;
	n->filter_arg = &broken;
	un_run(n, t_b);
	/* the last keepalive the client sent on rail 1 before the hole */
	rec = un_find(n, UN_CLIENT, RN_PT_KEEPALIVE, 1, t_b - 150 * UT_MS, 0);
	assert_non_null(rec);
	cap = *rec;
	broken = 1;
	for (uint64_t t = t_b; t < t_b + 2 * UT_S; t += 100 * UT_MS) {
		un_run(n, t);
		replay(n, UN_SERVER, t, &cap);
	}
	ev = un_event(n, UN_SERVER, RN_EV_RAIL_DOWN, 1, t_b);
	assert_non_null(ev);
	assert_true(ev->time_ns <= t_b + 350 * UT_MS + 500 * UT_MS);
	assert_true(stats(sv(n)).drops[RN_DROP_REPLAY] >= 10);
	/* and it stays down: the replays do not bring it back */
	assert_int_equal(stats(sv(n)).rail[1].rx_up, 0);
	assert_null(un_event(n, UN_SERVER, RN_EV_RAIL_UP, 1, ev->time_ns));
	/* rail 0 was never disturbed */
	assert_null(un_event(n, UN_SERVER, RN_EV_RAIL_DOWN, 0, 0));
	un_del(n);
}

/* The peer is gone; its keepalives, replayed on both rails, do not keep it alive. */
static void test_conn_replayed_keepalive_dead_peer(void **state)
{
	uint64_t t_est;
	un_net *n = pair(2, &t_est);
	const uint64_t t_d = t_est + 500 * UT_MS;
	un_rec cap[2];
	const rn_event *ev;

	(void)state;
	un_run(n, t_d);
	for (int k = 0; k < 2; k++) {
		const un_rec *rec = un_find(n, UN_CLIENT, RN_PT_KEEPALIVE, k, t_d - 150 * UT_MS, 0);

		assert_non_null(rec);
		cap[k] = *rec;
	}
	n->filter = un_drop_all;
	for (uint64_t t = t_d; t < t_d + 32 * UT_S; t += 100 * UT_MS) {
		un_run(n, t);
		if (rn_conn_state(sv(n)) != RN_ST_CLOSED)
			for (int k = 0; k < 2; k++)
				replay(n, UN_SERVER, t, &cap[k]);
	}
	ev = un_event(n, UN_SERVER, RN_EV_FAILED, -1, 0);
	assert_non_null(ev);
	assert_int_equal(ev->err, RN_ERR_TIMEDOUT);
	assert_true(ev->time_ns <= t_d + 30 * UT_S + 500 * UT_MS);
	un_del(n);
}

/*
 * Freshness is judged against the peer's clock, which drifts: a peer whose
 * clock runs 200 ppm fast or slow keeps both rails up for an hour, nothing
 * dropped; one whose datagrams are late by 100 ms (a queue) is still fresh.
 */
static void test_conn_fresh_clock_drift(void **state)
{
	static const int64_t ppm[] = { 200, -200 };

	(void)state;
	for (int i = 0; i < 2; i++) {
		uint64_t t_est;
		un_net *n = pair(2, &t_est);
		uint64_t t;

		n->filter = un_drop_all; /* the test speaks for the client */
		for (t = t_est; t < t_est + 3600 * UT_S; t += 50 * UT_MS) {
			int64_t el = (int64_t)(t - t_est);
			uint64_t peer = t_est + (uint64_t)(el + el / 1000000 * ppm[i]);
			rn_hdr h = { .type = RN_PT_KEEPALIVE, .dst = rn_conn_id(sv(n)),
				     .ts = rn_now_us(peer - D) };

			/* every 10 minutes, one datagram waited 100 ms in a queue */
			if ((t - t_est) % (600 * UT_S) == 0)
				h.ts = rn_now_us(peer - D - 100 * UT_MS);
			un_run(n, t);
			for (int k = 0; k < 2; k++) {
				h.path = (uint8_t)k;
				assert_int_equal(un_inject(n, UN_SERVER, t, k, un_addr(n, UN_CLIENT, k),
							   &h, NULL, PAD), 0);
			}
		}
		assert_int_equal(rn_conn_state(sv(n)), RN_ST_ESTABLISHED);
		assert_int_equal(stats(sv(n)).drops[RN_DROP_REPLAY], 0);
		assert_null(un_event(n, UN_SERVER, RN_EV_RAIL_DOWN, -1, 0));
		un_del(n);
	}
}

/* All rails silent: the connection dies after dead_peer_ns with an error, never EOF. */
static void test_conn_dead_peer(void **state)
{
	un_net *n = pair(2, NULL);
	const uint64_t cl_dead = t0 + 4 * D + 30 * UT_S; /* last heard: COOKIE_ACK */
	const uint64_t sv_dead = t0 + 3 * D + 30 * UT_S; /* last heard: accept */
	const rn_event *ev;
	const uint8_t *d;

	(void)state;
	n->filter = un_drop_all;
	un_run(n, sv_dead - 1);
	assert_int_equal(rn_conn_state(sv(n)), RN_ST_ESTABLISHED);
	assert_int_equal(rn_conn_peek(sv(n), &d), RN_ERR_AGAIN);
	un_run(n, cl_dead);
	for (int s = 0; s < 2; s++) {
		rn_conn *c = n->side[s].c;
		uint64_t when = s == UN_CLIENT ? cl_dead : sv_dead;

		ev = un_event(n, s, RN_EV_FAILED, -1, 0);
		assert_non_null(ev);
		assert_true(ev->time_ns == when);
		assert_int_equal(ev->err, RN_ERR_TIMEDOUT);
		assert_int_equal(rn_conn_state(c), RN_ST_CLOSED);
		assert_int_equal(rn_conn_error(c), RN_ERR_TIMEDOUT);
		assert_int_equal(rn_conn_peek(c, &d), RN_ERR_TIMEDOUT);
		assert_int_equal(rn_conn_write(c, when, "x", 1), RN_ERR_TIMEDOUT);
		/* a RESET on every rail, in case the peer is alive but cut off one way,
		 * twice: nothing resends it */
		assert_int_equal(un_count(n, s, RN_PT_RESET, 0, when, when), 2);
		assert_int_equal(un_count(n, s, RN_PT_RESET, 1, when, when), 2);
		assert_true(rn_conn_expiry(c) == UINT64_MAX);
		assert_int_equal(rn_conn_owes(c), 0);
	}
	un_del(n);
}

/*
 * A driver that hands a timer call a time taken before the datagrams it
 * read since (their arrival times are later) gets no failure: that is a
 * moment before the last arrival, not 2^64 ns of silence.
 */
static void test_conn_timer_before_arrival(void **state)
{
	un_net *n = pair(2, NULL);
	uint64_t t = t0 + 3 * D + 10 * UT_MS;

	(void)state;
	assert_int_equal(un_inject_ctl(n, UN_SERVER, t, 0, RN_PT_KEEPALIVE, NULL, 0), 0);
	rn_conn_on_timer(sv(n), t - 5 * UT_US);
	assert_null(un_event(n, UN_SERVER, RN_EV_FAILED, -1, 0));
	assert_int_equal(rn_conn_state(sv(n)), RN_ST_ESTABLISHED);
	un_del(n);
}

/*
 * The peer's clock steps 5 s ahead (its datagrams all look "from the
 * future"): they are not fresh at first, but as a live sender's times pass
 * everything taken before, the baseline follows within two 10 s periods:
 * the connection lives, its rails come back, nothing is lost for good.
 */
static void test_conn_fresh_peer_clock_step(void **state)
{
	uint64_t t_est;
	un_net *n = pair_proven(2, &t_est); /* the baseline is set by real datagrams */
	const uint64_t step = 5 * UT_S;
	uint64_t t;

	(void)state;
	n->filter = un_drop_all; /* the test speaks for the client */
	for (t = t_est; t < t_est + 25 * UT_S; t += 50 * UT_MS) {
		rn_hdr h = { .type = RN_PT_KEEPALIVE, .dst = rn_conn_id(sv(n)),
			     .ts = rn_now_us(t + step - D) };

		un_run(n, t);
		for (int k = 0; k < 2; k++) {
			h.path = (uint8_t)k;
			un_inject(n, UN_SERVER, t, k, un_addr(n, UN_CLIENT, k), &h, NULL, PAD);
		}
	}
	assert_int_equal(rn_conn_state(sv(n)), RN_ST_ESTABLISHED);
	assert_true(stats(sv(n)).drops[RN_DROP_REPLAY] > 0);
	/* the last datagrams were fresh again: both rails received on */
	assert_int_equal(stats(sv(n)).rail[0].rx_up, 1);
	assert_int_equal(stats(sv(n)).rail[1].rx_up, 1);
	un_del(n);
}

/* ---- rails named in an unkeyed hello ---- */

static int drop_client_rail1_always(un_net *n, const un_rec *r, void *arg)
{
	(void)n;
	(void)arg;
	return r->from == UN_CLIENT && r->src_rail == 1;
}

/*
 * Without a key the client's hello may name anyone's address as its rail 1.
 * Until a datagram comes from that address the server sends no DATA and no
 * ACK there, only keepalives (here the address never answers: the client's
 * rail 1 is cut from the start); the stream flows on rail 0, whole.
 */
static void test_conn_unproven_rail_no_data(void **state)
{
	uint64_t t_est;
	un_net *n = pair(2, &t_est);
	int sent, ka;

	(void)state;
	n->filter = drop_client_rail1_always;
	n->side[UN_SERVER].to_send = 2000 * MSS;
	n->side[UN_CLIENT].reading = 1;
	un_run(n, t_est + 2 * UT_S);
	assert_int_equal(n->side[UN_CLIENT].recvd, 2000 * MSS);
	assert_int_equal(n->side[UN_CLIENT].mismatches, 0);
	assert_int_equal(un_count(n, UN_SERVER, RN_PT_DATA, 1, 0, UINT64_MAX), 0);
	assert_int_equal(un_count(n, UN_SERVER, RN_PT_ACK, 1, 0, UINT64_MAX), 0);
	sent = un_count(n, UN_SERVER, 0, -1, 0, UINT64_MAX);
	ka = un_count(n, UN_SERVER, RN_PT_KEEPALIVE, 1, 0, UINT64_MAX) +
	     un_count(n, UN_SERVER, RN_PT_HEARTBEAT, 1, 0, UINT64_MAX) +
	     un_count(n, UN_SERVER, RN_PT_LINK_STATE, 1, 0, UINT64_MAX);
	/* a keepalive per quarter window of packets, heartbeats and notices: a trickle */
	assert_true(ka * 20 <= sent);
	/* of small datagrams: none is padded to full size towards an unproven address */
	for (int i = 0; i < n->nlog; i++)
		if (n->log[i].from == UN_SERVER && n->log[i].path == 1)
			assert_true(n->log[i].len < 100);
	/* the client's rail 1 works the other way and is proven there: it may use it */
	assert_true(stats(cl(n)).rail[1].rx_packets > 0);
	un_del(n);
}

/* ---- stateless reset ---- */

/*
 * The server process restarts on the same port (its connection is gone, a
 * new listener with a new secret): the client's next keepalive draws a
 * stateless reset and the client fails with RESET within one keepalive
 * period and a round trip, not after the 30 s dead-peer timeout.
 */
static void test_conn_sreset_restarted_server(void **state)
{
	uint64_t t_est;
	un_net *n = pair(2, &t_est);
	const uint64_t t_r = t_est + 300 * UT_MS;
	const rn_event *ev;
	rn_conn_stats st;

	(void)state;
	un_run(n, t_r);
	rn_conn_del(sv(n));
	n->side[UN_SERVER].c = NULL;
	n->side[UN_SERVER].rng.state ^= 0x5555; /* a new process: a new listener secret */
	un_listen(n);
	un_run(n, t_r + UT_S);
	ev = un_event(n, UN_CLIENT, RN_EV_FAILED, -1, t_r);
	assert_non_null(ev);
	assert_int_equal(ev->err, RN_ERR_RESET);
	assert_true(ev->time_ns <= t_r + 100 * UT_MS + 2 * D);
	assert_int_equal(rn_conn_error(cl(n)), RN_ERR_RESET);
	rn_conn_get_stats(cl(n), &st);
	assert_true(st.sresets == 1);
	assert_true(n->side[UN_SERVER].lis.resets >= 1);
	/* the client, reset, sends no RESET back: no ping-pong */
	assert_int_equal(un_count(n, UN_CLIENT, RN_PT_RESET, -1, t_r, UINT64_MAX), 0);
	un_del(n);
}

typedef struct sreset_case {
	const char *name;
	int64_t id_delta;  /* named id: the client's peer id plus this */
	int rail;          /* local rail it arrives on */
	int from_rail;     /* the server rail address it claims to come from */
	int from_port_delta;
	int want;
} sreset_case;

/* Only the peer's id, from the peer's address on that rail, resets; anything else is dropped. */
static void test_conn_sreset_forged(void **state)
{
	static const sreset_case cases[] = {
		{ "another id", 1, 0, 0, 0, RN_ERR_DROP },
		{ "our own id", 0x7fffffff, 0, 0, 0, RN_ERR_DROP },
		{ "the peer's rail 1 address on rail 0", 0, 0, 1, 0, RN_ERR_DROP },
		{ "another port", 0, 0, 0, 1, RN_ERR_DROP },
		{ "right on rail 1", 0, 1, 1, 0, 0 },
	};
	uint64_t t_est;
	un_net *n = pair(2, &t_est);
	rn_conn *c = cl(n);

	(void)state;
	for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
		const sreset_case *tc = &cases[i];
		uint8_t body[RN_SRESET_LEN];
		rn_hdr h = { .type = RN_PT_SRESET, .path = 0xff };
		rn_addr from = un_addr(n, UN_SERVER, tc->from_rail);
		uint64_t named = c->peer_id + (uint64_t)tc->id_delta;
		int rc;

		if (tc->id_delta == 0x7fffffff)
			named = rn_conn_id(c);
		from.port = (uint16_t)(from.port + tc->from_port_delta);
		rn_put64(body, named);
		rc = un_inject(n, UN_CLIENT, t_est + UT_MS, tc->rail, from, &h, NULL, body,
			       sizeof(body));
		if (rc != tc->want)
			fail_msg("case \"%s\": got %d, want %d", tc->name, rc, tc->want);
		if (tc->want)
			assert_int_equal(rn_conn_state(c), RN_ST_ESTABLISHED);
	}
	assert_int_equal(rn_conn_error(c), RN_ERR_RESET);
	un_del(n);
}

/* A listener out of its budget refuses the COOKIE_ECHO: the connect fails at once, refused. */
static void test_conn_sreset_refused_handshake(void **state)
{
	un_net *n = un_new(2);
	int type = RN_PT_COOKIE_ECHO;
	uint8_t body[RN_SRESET_LEN], reply[256];
	rn_accept_params ap = { .id = 0 };
	rn_hdr h = { .type = RN_PT_SRESET, .path = 0xff };
	size_t rlen;

	(void)state;
	n->filter = drop_first_of_type; /* the listener's answer is made by hand below */
	n->filter_arg = &type;
	un_listen(n);
	assert_int_equal(un_connect(n, t0), 0);
	un_run(n, t0 + 3 * D);
	assert_int_equal(rn_conn_state(cl(n)), RN_ST_COOKIE_SENT);
	/* what rn_listener_refuse writes for this client's echo */
	ap.id = cl(n)->peer_id;
	ap.from = un_addr(n, UN_CLIENT, 0);
	rlen = rn_listener_refuse(&n->side[UN_SERVER].lis, t0 + 3 * D, &ap, reply, sizeof(reply));
	assert_true(rlen > 0);
	assert_true(rn_wire_peek_sreset(reply, rlen) == ap.id);
	rn_put64(body, rn_wire_peek_sreset(reply, rlen));
	assert_int_equal(un_inject(n, UN_CLIENT, t0 + 4 * D, 0, un_addr(n, UN_SERVER, 0), &h, NULL,
				   body, sizeof(body)), 0);
	assert_int_equal(rn_conn_error(cl(n)), RN_ERR_REFUSED);
	un_del(n);
}

/* A connection closed cleanly (lingering) takes a reset quietly: the peer may forget it. */
static void test_conn_sreset_after_close(void **state)
{
	uint64_t t_est;
	un_net *n = pair(2, &t_est);
	uint8_t body[RN_SRESET_LEN];
	rn_hdr h = { .type = RN_PT_SRESET, .path = 0xff };
	uint64_t t;

	(void)state;
	n->side[UN_CLIENT].shut_when_done = 1;
	n->side[UN_SERVER].shut_when_done = 1;
	un_run(n, t_est + 50 * UT_MS);
	t = t_est + 50 * UT_MS;
	if (rn_conn_state(cl(n)) != RN_ST_LINGER)
		fail_msg("client in state %s, not linger", rn_state_name(rn_conn_state(cl(n))));
	rn_put64(body, cl(n)->peer_id);
	assert_int_equal(un_inject(n, UN_CLIENT, t, 0, un_addr(n, UN_SERVER, 0), &h, NULL, body,
				   sizeof(body)), RN_ERR_DROP);
	assert_int_equal(rn_conn_error(cl(n)), 0);
	un_del(n);
}

/* ---- reset and abort ---- */

static void test_conn_abort_and_reset(void **state)
{
	un_net *n = un_new(3);
	uint64_t t_est, t1;
	const uint8_t reason[4] = { 0, 25, 0, 0 }; /* -RN_ERR_ABORTED */
	const rn_event *ev;
	const uint8_t *d;

	(void)state;
	t_est = un_handshake(n, t0);
	t1 = t_est + 1 * UT_MS;
	n->now = t1;
	rn_conn_abort(sv(n), t1);
	assert_int_equal(rn_conn_state(sv(n)), RN_ST_CLOSED);
	assert_int_equal(rn_conn_peek(sv(n), &d), RN_ERR_ABORTED);
	assert_int_equal(rn_conn_write(sv(n), t1, "x", 1), RN_ERR_ABORTED);
	ev = un_event(n, UN_SERVER, RN_EV_FAILED, -1, 0);
	assert_non_null(ev);
	assert_int_equal(ev->err, RN_ERR_ABORTED);
	assert_true(rn_conn_owes(sv(n)));
	/* a RESET on every rail, saying why, then every rail's second copy */
	assert_int_equal(un_flush(n, UN_SERVER, t1), 6);
	for (int r = 0; r < 3; r++) {
		for (int copy = 0; copy < 2; copy++) {
			const un_rec *rs = un_find(n, UN_SERVER, RN_PT_RESET, r, t1, copy);

			assert_non_null(rs);
			assert_memory_equal(rs->head, reason, 4);
			assert_int_equal(rs, &n->log[n->nlog - 6 + copy * 3 + r]);
		}
	}
	assert_false(rn_conn_owes(sv(n)));
	/* the first to arrive resets the client; the others find it closed */
	un_run(n, t1 + 10 * UT_MS);
	ev = un_event(n, UN_CLIENT, RN_EV_FAILED, -1, 0);
	assert_non_null(ev);
	assert_true(ev->time_ns == t1 + D);
	assert_int_equal(ev->err, RN_ERR_RESET);
	assert_int_equal(rn_conn_peek(cl(n), &d), RN_ERR_RESET);
	assert_int_equal(rn_conn_write(cl(n), t1 + D, "x", 1), RN_ERR_RESET);
	assert_int_equal(stats(cl(n)).drops[RN_DROP_STATE], 5);
	/* a reset is not answered with a reset */
	assert_int_equal(un_count(n, UN_CLIENT, RN_PT_RESET, -1, 0, UINT64_MAX), 0);
	un_del(n);
}

/* Data received before the RESET can still be read; then the error. */
static void test_conn_reset_after_data(void **state)
{
	uint64_t t_est;
	un_net *n = pair(2, &t_est);
	const uint64_t t1 = t_est + 1 * UT_MS;
	uint8_t buf[16];

	(void)state;
	assert_int_equal(rn_conn_write(sv(n), t1, "last words", 10), 10);
	un_flush(n, UN_SERVER, t1);
	rn_conn_abort(sv(n), t1 + 1);
	un_flush(n, UN_SERVER, t1 + 1);
	un_deliver(n, t1 + 1 + D);
	assert_int_equal(rn_conn_read(cl(n), t1 + 1 + D, buf, sizeof(buf)), 10);
	assert_memory_equal(buf, "last words", 10);
	assert_int_equal(rn_conn_read(cl(n), t1 + 1 + D, buf, sizeof(buf)), RN_ERR_RESET);
	un_del(n);
}

/*
 * A RESET after the peer's FIN (a process that exited): its bytes, then the
 * end of the stream, as TCP's RST in CLOSE_WAIT; a RESET after data without
 * the FIN stays an error (above).
 */
static void test_conn_reset_after_fin(void **state)
{
	uint64_t t_est;
	un_net *n = pair(2, &t_est);
	const uint64_t t1 = t_est + 1 * UT_MS;
	const uint8_t *d;
	uint8_t buf[16];

	(void)state;
	assert_int_equal(rn_conn_write(sv(n), t1, "last words", 10), 10);
	assert_int_equal(rn_conn_shutdown(sv(n), t1), 0);
	un_flush(n, UN_SERVER, t1);
	rn_conn_abort(sv(n), t1 + 1);
	un_flush(n, UN_SERVER, t1 + 1);
	un_deliver(n, t1 + 1 + D);
	assert_int_equal(rn_conn_state(cl(n)), RN_ST_CLOSED);
	assert_int_equal(rn_conn_error(cl(n)), RN_ERR_RESET);
	assert_true(rn_conn_ended_clean(cl(n)));
	assert_int_equal(rn_conn_read(cl(n), t1 + 1 + D, buf, sizeof(buf)), 10);
	assert_memory_equal(buf, "last words", 10);
	assert_int_equal(rn_conn_peek(cl(n), &d), 0);
	assert_int_equal(rn_conn_read(cl(n), t1 + 1 + D, buf, sizeof(buf)), 0);
	un_del(n);
}

/*
 * A connection that carries one request (a web request with Connection:
 * close): the server's answer and its FIN carry the ACK of the request
 * (its first DATA waits 2 ms for an answer), and the client's FIN, sent
 * as its program reads the end, carries the ACK of the server's FIN.
 * After the handshake the client sends two datagrams and the server three
 * (the answer, the FIN, the last ACK), every byte arrives, and nothing is
 * resent.  An answer slower than 2 ms
 * gets an ACK of its own first, still without a resend.
 */
static void test_conn_request_per_connection(void **state)
{
	(void)state;
	for (int slow = 0; slow < 2; slow++) {
		uint64_t t_est;
		un_net *n = pair(1, &t_est);
		const uint64_t t1 = t_est + 1 * UT_MS, a1 = t1 + D;
		const uint64_t t2 = a1 + (slow ? 3 : 0) * UT_MS + 300 * UT_US, a2 = t2 + D;
		uint8_t buf[64];

		assert_int_equal(rn_conn_write(cl(n), t1, "GET /small", 10), 10);
		un_flush(n, UN_CLIENT, t1);
		un_deliver(n, a1);
		assert_true(sv(n)->ack.pending);
		un_run(n, t2);
		assert_int_equal(rn_conn_read(sv(n), t2, buf, sizeof(buf)), 10);
		assert_memory_equal(buf, "GET /small", 10);
		assert_int_equal(rn_conn_write(sv(n), t2, "200 OK body", 11), 11);
		assert_int_equal(rn_conn_shutdown(sv(n), t2), 0);
		un_flush(n, UN_SERVER, t2);
		un_deliver(n, a2);
		/* the driver flushes before the program runs: the ACK of the FIN waits */
		assert_int_equal(un_flush(n, UN_CLIENT, a2), 0);
		/* the client read the end: its FIN goes at once and carries the ACK */
		assert_int_equal(rn_conn_read(cl(n), a2, buf, sizeof(buf)), 11);
		assert_memory_equal(buf, "200 OK body", 11);
		assert_int_equal(rn_conn_read(cl(n), a2, buf, sizeof(buf)), 0);
		assert_int_equal(rn_conn_shutdown(cl(n), a2), 0);
		un_run(n, a2 + 10 * UT_MS);
		assert_int_equal(rn_conn_state(cl(n)), RN_ST_LINGER);
		assert_int_equal(rn_conn_state(sv(n)), RN_ST_LINGER);
		/* client: the request, its FIN with the ACK; server: the answer, its FIN, the last ACK */
		assert_int_equal(un_count(n, UN_CLIENT, RN_PT_DATA, -1, t1, UINT64_MAX), 2);
		assert_int_equal(un_count(n, UN_CLIENT, RN_PT_ACK, -1, t1, UINT64_MAX), 0);
		assert_int_equal(un_count(n, UN_SERVER, RN_PT_DATA, -1, t1, UINT64_MAX), 2);
		assert_int_equal(un_count(n, UN_SERVER, RN_PT_ACK, -1, t1, UINT64_MAX), 1 + slow);
		if (slow)
			assert_int_equal(un_find(n, UN_SERVER, RN_PT_ACK, -1, t1, 0)->sent_ns,
					 a1 + 2 * UT_MS);
		assert_int_equal(stats(cl(n)).retransmits, 0);
		assert_int_equal(stats(sv(n)).retransmits, 0);
		un_del(n);
	}
}

/* ---- close ---- */

static void test_conn_graceful_close(void **state)
{
	uint64_t t_est, t_closed[2];
	un_net *n = pair(2, &t_est);
	const uint8_t *d;

	(void)state;
	n->side[UN_CLIENT].to_send = 10000;
	for (int s = 0; s < 2; s++) {
		n->side[s].reading = 1;
		n->side[s].shut_when_done = 1;
	}
	un_run(n, t_est + 100 * UT_MS);
	for (int s = 0; s < 2; s++) {
		rn_conn *c = n->side[s].c;
		const rn_event *ev = un_event(n, s, RN_EV_CLOSED, -1, 0);

		assert_true(n->side[s].eof);
		assert_int_equal(n->side[s].err, 0);
		assert_non_null(un_event(n, s, RN_EV_PEER_CLOSED, -1, 0));
		assert_non_null(ev);
		t_closed[s] = ev->time_ns;
		assert_int_equal(rn_conn_state(c), RN_ST_LINGER);
		/* EOF, not an error */
		assert_int_equal(rn_conn_peek(c, &d), 0);
		assert_int_equal(rn_conn_error(c), 0);
		assert_int_equal(rn_conn_write(c, n->now, "x", 1), RN_ERR_SHUT);
		assert_true(rn_conn_write_done(c));
		assert_int_equal(un_event_count(n, s, RN_EV_FAILED), 0);
	}
	assert_int_equal(n->side[UN_SERVER].recvd, 10000);
	/* LINGER for linger_ns, then CLOSED (in time order: both may end at once) */
	for (int i = 0; i < 2; i++) {
		uint64_t e0 = t_closed[0] + n->side[0].cfg.linger_ns;
		uint64_t e1 = t_closed[1] + n->side[1].cfg.linger_ns;
		uint64_t end = i == 0 ? (e0 < e1 ? e0 : e1) : (e0 < e1 ? e1 : e0);

		if (i == 1 && e0 == e1)
			break;
		un_run(n, end - 1);
		for (int s = 0; s < 2; s++)
			if (t_closed[s] + n->side[s].cfg.linger_ns == end)
				assert_int_equal(rn_conn_state(n->side[s].c), RN_ST_LINGER);
		un_run(n, end);
		for (int s = 0; s < 2; s++) {
			if (t_closed[s] + n->side[s].cfg.linger_ns != end)
				continue;
			assert_int_equal(rn_conn_state(n->side[s].c), RN_ST_CLOSED);
			assert_int_equal(rn_conn_peek(n->side[s].c, &d), 0);
			assert_int_equal(rn_conn_error(n->side[s].c), 0);
			/* a clean close sends no RESET */
			assert_false(rn_conn_owes(n->side[s].c));
		}
	}
	for (int s = 0; s < 2; s++)
		assert_int_equal(un_count(n, s, RN_PT_RESET, -1, 0, UINT64_MAX), 0);
	un_del(n);
}

/* Drops a datagram with probability pct % (random, seeded), counting what it dropped. */
struct lossy {
	ut_rng rng;
	unsigned pct;
	long dropped;
};

static int drop_random(un_net *n, const un_rec *r, void *arg)
{
	struct lossy *l = arg;

	(void)n;
	(void)r;
	if (ut_rng_next(&l->rng) % 100 >= l->pct)
		return 0;
	l->dropped++;
	return 1;
}

enum { LC_SEEDS = 200, LC_BYTES = 300000, LC_BACK = 20000 };

/*
 * Random loss of 5, 10 and 20 % on every datagram either way after the
 * handshake, over many seeds: the client sends LC_BYTES and shuts down; the
 * server sends LC_BACK, reads to the end, and only then shuts down (the
 * order of ri2n-xfer).  Every byte arrives, both ends report CLOSED within
 * 2 s of the server's shutdown (the close exchange retries at the RTO, tens
 * of ms), neither fails, and after the linger both are CLOSED without error
 * and owe nothing.
 */
static void test_conn_close_under_loss(void **state)
{
	static const unsigned pcts[] = { 5, 10, 20 };
	long worst_ms = 0;

	(void)state;
	for (unsigned ip = 0; ip < sizeof(pcts) / sizeof(pcts[0]); ip++) {
		for (int seed = 1; seed <= LC_SEEDS; seed++) {
			struct lossy l = { .rng = { .state = (uint64_t)seed * 7919 + pcts[ip] },
					   .pct = pcts[ip] };
			uint64_t t, t_shut = 0, end;
			un_net *n = pair(2, &t);
			const rn_event *ev[2];

			n->filter = drop_random;
			n->filter_arg = &l;
			n->side[UN_CLIENT].to_send = LC_BYTES;
			n->side[UN_CLIENT].shut_when_done = 1;
			n->side[UN_SERVER].to_send = LC_BACK;
			for (int s = 0; s < 2; s++)
				n->side[s].reading = 1;
			end = t + 60 * UT_S;
			while (!t_shut && t < end) {
				t += UT_MS;
				un_run(n, t);
				if (n->side[UN_SERVER].eof && !n->side[UN_SERVER].shut_when_done) {
					n->side[UN_SERVER].shut_when_done = 1;
					un_app(n, UN_SERVER, t);
					t_shut = t;
				}
			}
			if (!t_shut)
				fail_msg("%u%% loss, seed %d: the server never read the end of the "
					 "stream (%" PRIu64 " of %u bytes)", pcts[ip], seed,
					 n->side[UN_SERVER].recvd, LC_BYTES);
			un_run(n, t_shut + 2 * UT_S);
			for (int s = 0; s < 2; s++) {
				un_side *sd = &n->side[s];

				ev[s] = un_event(n, s, RN_EV_CLOSED, -1, 0);
				if (un_event_count(n, s, RN_EV_FAILED) || !ev[s])
					fail_msg("%u%% loss, seed %d: the %s %s within 2 s of the "
						 "server's shutdown (state %d, %ld dropped)", pcts[ip],
						 seed, s ? "server" : "client",
						 un_event_count(n, s, RN_EV_FAILED) ? "failed" :
										      "did not close",
						 rn_conn_state(sd->c), l.dropped);
				assert_int_equal(sd->shut, 1);
				assert_int_equal(sd->eof, 1);
				assert_int_equal(sd->err, 0);
				assert_int_equal(sd->mismatches, 0);
				assert_int_equal(sd->recvd, s ? LC_BYTES : LC_BACK);
				if ((long)((ev[s]->time_ns - t_shut) / UT_MS) > worst_ms)
					worst_ms = (long)((ev[s]->time_ns - t_shut) / UT_MS);
			}
			un_run(n, t_shut + 2 * UT_S + n->side[0].cfg.linger_ns);
			for (int s = 0; s < 2; s++) {
				rn_conn *c = n->side[s].c;

				assert_int_equal(rn_conn_state(c), RN_ST_CLOSED);
				assert_int_equal(rn_conn_error(c), 0);
				assert_false(rn_conn_owes(c));
				assert_int_equal(un_count(n, s, RN_PT_RESET, -1, 0, UINT64_MAX), 0);
			}
			un_del(n);
		}
	}
	print_message("close under loss: %d seeds at each of 5, 10, 20 %%, both CLOSED at most "
		      "%ld ms after the server's shutdown\n", LC_SEEDS, worst_ms);
}

static void test_conn_write_after_shutdown(void **state)
{
	uint64_t t_est;
	un_net *n = pair(2, &t_est);
	rn_conn *c = cl(n);
	const uint64_t t1 = t_est + 1 * UT_MS;

	(void)state;
	assert_int_equal(rn_conn_write(c, t1, "abc", 3), 3);
	assert_int_equal(rn_conn_shutdown(c, t1), 0);
	assert_int_equal(rn_conn_write(c, t1, "d", 1), RN_ERR_SHUT);
	assert_int_equal(rn_conn_write_space(c), 0);
	/* shutting down twice is harmless */
	assert_int_equal(rn_conn_shutdown(c, t1), 0);
	/* the peer still gets the bytes written before, then EOF */
	n->side[UN_SERVER].reading = 1;
	n->now = t1;
	un_run(n, t1 + 10 * UT_MS);
	assert_int_equal(n->side[UN_SERVER].recvd, 3);
	assert_true(n->side[UN_SERVER].eof);
	/* the other direction stays open */
	assert_int_equal(rn_conn_write(sv(n), n->now, "e", 1), 1);
	un_del(n);
}

/* ---- refused ---- */

static void test_conn_refused(void **state)
{
	un_net *n = un_new(2);
	const uint8_t *d;
	const rn_event *ev;

	(void)state;
	assert_int_equal(un_connect(n, t0), 0);
	un_run(n, t0 + 1 * UT_MS);
	rn_conn_refused(cl(n), t0 + 1 * UT_MS);
	assert_int_equal(rn_conn_state(cl(n)), RN_ST_CLOSED);
	assert_int_equal(rn_conn_error(cl(n)), RN_ERR_REFUSED);
	assert_int_equal(rn_conn_peek(cl(n), &d), RN_ERR_REFUSED);
	assert_int_equal(rn_conn_write(cl(n), t0 + 1 * UT_MS, "x", 1), RN_ERR_REFUSED);
	ev = un_event(n, UN_CLIENT, RN_EV_FAILED, -1, 0);
	assert_non_null(ev);
	assert_int_equal(ev->err, RN_ERR_REFUSED);
	/* nobody to reset */
	assert_int_equal(un_flush(n, UN_CLIENT, t0 + 1 * UT_MS), 0);
	assert_true(rn_conn_expiry(cl(n)) == UINT64_MAX);
	un_del(n);
}

/* ICMP can be forged: once the peer has answered, "refused" is ignored. */
static void test_conn_refused_ignored(void **state)
{
	uint64_t t_est;
	un_net *n = un_new(2);

	(void)state;
	un_listen(n);
	assert_int_equal(un_connect(n, t0), 0);
	un_run(n, t0 + 2 * D);
	assert_int_equal(rn_conn_state(cl(n)), RN_ST_COOKIE_SENT);
	rn_conn_refused(cl(n), t0 + 2 * D);
	assert_int_equal(rn_conn_state(cl(n)), RN_ST_COOKIE_SENT);
	un_run(n, t0 + 1 * UT_MS);
	t_est = un_event(n, UN_CLIENT, RN_EV_ESTABLISHED, -1, 0)->time_ns;
	rn_conn_refused(cl(n), t_est + 1);
	assert_int_equal(rn_conn_state(cl(n)), RN_ST_ESTABLISHED);
	assert_int_equal(rn_conn_error(cl(n)), 0);
	assert_int_equal(un_event_count(n, UN_CLIENT, RN_EV_FAILED), 0);
	un_del(n);
}

/* ---- local send errors ---- */

static void test_conn_rail_error(void **state)
{
	uint64_t t_est;
	un_net *n = pair(2, &t_est);
	rn_conn *c = cl(n);
	const uint64_t t1 = t_est + 1 * UT_MS;
	static uint8_t buf[6 * MSS];
	const rn_event *ev;

	(void)state;
	n->filter = un_drop_all;
	rn_conn_rail_error(c, t1, 1);
	ev = un_event(n, UN_CLIENT, RN_EV_RAIL_DOWN, 1, 0);
	assert_non_null(ev);
	assert_int_equal(ev->cause, RN_CAUSE_LOCAL);
	assert_int_equal(ev->tx_up, 0x1);
	/* our receive view did not change: no LINK_STATE */
	assert_int_equal(ev->rx_up, 0x3);
	assert_int_equal(stats(c).rail[1].last_cause, RN_CAUSE_LOCAL);
	/* a second report changes nothing */
	rn_conn_rail_error(c, t1, 1);
	assert_int_equal(un_event_count(n, UN_CLIENT, RN_EV_RAIL_DOWN), 1);
	assert_int_equal(rn_conn_write(c, t1, buf, sizeof(buf)), sizeof(buf));
	un_flush(n, UN_CLIENT, t1);
	assert_int_equal(un_count(n, UN_CLIENT, RN_PT_DATA, 0, t1, t1), 6);
	assert_int_equal(un_count(n, UN_CLIENT, RN_PT_DATA, 1, t1, t1), 0);
	assert_int_equal(un_count(n, UN_CLIENT, RN_PT_LINK_STATE, -1, t1, t1), 0);
	/* a packet arriving on that rail shows the interface works again */
	assert_int_equal(un_inject_ctl(n, UN_CLIENT, t1 + 10, 1, RN_PT_KEEPALIVE, NULL, 0), 0);
	ev = un_event(n, UN_CLIENT, RN_EV_RAIL_UP, 1, 0);
	assert_non_null(ev);
	assert_int_equal(ev->cause, RN_CAUSE_RX_SEEN);
	assert_int_equal(ev->tx_up, 0x3);
	/* and it carries data again */
	assert_int_equal(rn_conn_write(c, t1 + 20, buf, 4 * MSS), 4 * MSS);
	un_flush(n, UN_CLIENT, t1 + 20);
	assert_true(un_count(n, UN_CLIENT, RN_PT_DATA, 1, t1 + 20, t1 + 20) > 0);
	/* a report for a rail the connection does not use is ignored */
	rn_conn_rail_error(c, t1 + 30, 5);
	assert_int_equal(un_event_count(n, UN_CLIENT, RN_EV_RAIL_DOWN), 1);
	un_del(n);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_conn_connect_args),
		cmocka_unit_test(test_conn_nomem),
		cmocka_unit_test(test_conn_handshake),
		cmocka_unit_test(test_conn_init_ack_lost),
		cmocka_unit_test(test_conn_cookie_ack_lost_data),
		cmocka_unit_test(test_conn_cookie_ack_lost_resent),
		cmocka_unit_test(test_conn_request_per_connection),
		cmocka_unit_test(test_conn_early_data),
		cmocka_unit_test(test_conn_early_answer),
		cmocka_unit_test(test_conn_early_data_echo_lost),
		cmocka_unit_test(test_conn_early_data_restart),
		cmocka_unit_test(test_conn_data_both_ways),
		cmocka_unit_test(test_conn_ack_delay_answering),
		cmocka_unit_test(test_conn_ack_hold_grows),
		cmocka_unit_test(test_conn_ack_hold_late_lost),
		cmocka_unit_test(test_conn_rto_allows_ack_delay),
		cmocka_unit_test(test_conn_link_state_stalled_rtt),
		cmocka_unit_test(test_conn_multi_packet_datagrams),
		cmocka_unit_test(test_conn_multi_malformed),
		cmocka_unit_test(test_conn_seq_wrap),
		cmocka_unit_test(test_conn_wrong_source),
		cmocka_unit_test(test_conn_foreign_packets),
		cmocka_unit_test(test_conn_ack_window),
		cmocka_unit_test(test_conn_duplicate_data),
		cmocka_unit_test(test_conn_owner_check),
		cmocka_unit_test(test_conn_copy_no_ack),
		cmocka_unit_test(test_conn_loss_three_later_acked),
		cmocka_unit_test(test_conn_loss_resent_other_rail),
		cmocka_unit_test(test_conn_flow_control),
		cmocka_unit_test(test_conn_rx_count_failure),
		cmocka_unit_test(test_conn_rx_count_batch_skew),
		cmocka_unit_test(test_conn_rx_count_sender_stall),
		cmocka_unit_test(test_conn_timer_before_arrival),
		cmocka_unit_test(test_conn_heartbeat_marks_up),
		cmocka_unit_test(test_conn_size_verdict),
		cmocka_unit_test(test_conn_size_verdict_stream_end),
		cmocka_unit_test(test_conn_small_heartbeats_alone),
		cmocka_unit_test(test_conn_link_state_applied),
		cmocka_unit_test(test_conn_heartbeats_while_down),
		cmocka_unit_test(test_conn_keepalive),
		cmocka_unit_test(test_conn_rail_silence_and_heal),
		cmocka_unit_test(test_conn_dead_peer),
		cmocka_unit_test(test_conn_replayed_keepalive_black_hole),
		cmocka_unit_test(test_conn_replayed_keepalive_dead_peer),
		cmocka_unit_test(test_conn_fresh_clock_drift),
		cmocka_unit_test(test_conn_fresh_peer_clock_step),
		cmocka_unit_test(test_conn_unproven_rail_no_data),
		cmocka_unit_test(test_conn_sreset_restarted_server),
		cmocka_unit_test(test_conn_sreset_forged),
		cmocka_unit_test(test_conn_sreset_after_close),
		cmocka_unit_test(test_conn_sreset_refused_handshake),
		cmocka_unit_test(test_conn_abort_and_reset),
		cmocka_unit_test(test_conn_reset_after_data),
		cmocka_unit_test(test_conn_reset_after_fin),
		cmocka_unit_test(test_conn_graceful_close),
		cmocka_unit_test(test_conn_close_under_loss),
		cmocka_unit_test(test_conn_write_after_shutdown),
		cmocka_unit_test(test_conn_refused),
		cmocka_unit_test(test_conn_refused_ignored),
		cmocka_unit_test(test_conn_rail_error),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
