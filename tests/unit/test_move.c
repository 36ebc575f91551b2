/*
 * test_move.c - a fresh server connection handed to another process
 * (rn_conn_export, rn_conn_import, docs/PROTOCOL.md "Handing a connection
 * over"): the taker goes on from its own rail sockets (other ports), the
 * client follows them on the taker's RAILS, what the client sent meanwhile
 * to the old sockets (dropped there) is sent again at once, and both
 * streams arrive whole, with and without a cluster key.  A connection that
 * is no longer fresh does not move; a blob that is not one, or rails that
 * are not the owner's, are refused.
 */
#include "unit_net.h"

static const uint64_t t0 = UT_T0;

static rn_conn_stats stats(rn_conn *c)
{
	rn_conn_stats st;

	rn_conn_get_stats(c, &st);
	return st;
}

/* The old owner's sockets: what the client sends there until the move is dropped. */
struct gone {
	uint64_t from, until;
};

static int drop_to_owner(un_net *n, const un_rec *r, void *arg)
{
	const struct gone *g = arg;

	(void)n;
	return r->from == UN_CLIENT && r->sent_ns >= g->from && r->sent_ns < g->until;
}

/* Handshake, then the client's request, read by the server: a fresh connection. */
static uint64_t request(un_net *n, uint64_t bytes)
{
	uint64_t t = un_handshake(n, t0) + UT_MS;

	n->side[UN_CLIENT].to_send = bytes;
	n->side[UN_SERVER].reading = 1;
	un_run(n, t + 5 * UT_MS);
	assert_int_equal(n->side[UN_SERVER].recvd, bytes);
	return t + 5 * UT_MS;
}

/* The server's connection moves to rails on ports 9000 + r at t; the stream goes on. */
static void run_move(int keyed)
{
	un_net *n = un_new(2);
	un_side *sv = &n->side[UN_SERVER], *cl = &n->side[UN_CLIENT];
	const uint64_t req = 300, bytes = 3000000;
	size_t cap = rn_conn_move_size();
	uint8_t *blob = malloc(cap);
	struct gone g;
	rn_conn *c = NULL;
	rn_conn_stats st;
	ssize_t len;
	uint64_t t;

	assert_non_null(blob);
	if (keyed)
		for (int s = 0; s < 2; s++) {
			n->side[s].cfg.keyed = 1;
			memset(n->side[s].cfg.key, 0x33, RN_KEY_LEN);
		}
	t = request(n, req);
	assert_int_equal(rn_conn_export(sv->c, blob, cap - 1), RN_ERR_NOBUF);
	len = rn_conn_export(sv->c, blob, cap);
	assert_int_equal(len, (ssize_t)cap);
	/* the client's next bytes are on their way to the owner, which no longer has them */
	cl->to_send = req + 2000;
	g = (struct gone){ t, t + 300 * UT_US };
	n->filter = drop_to_owner;
	n->filter_arg = &g;
	rn_conn_del(sv->c); /* the owner forgets it: nothing is sent */
	sv->c = NULL;
	for (int r = 0; r < sv->nrails; r++)
		sv->rails[r].port = (uint16_t)(9000 + r);
	/* other rails than the owner's are refused */
	{
		rn_rail_addr other[RN_MAX_RAILS];

		memcpy(other, sv->rails, sizeof(other));
		other[1].ip ^= 0x40;
		assert_int_equal(rn_conn_import(&c, blob, (size_t)len, other, sv->nrails, &sv->env,
						t + 100 * UT_US),
				 RN_ERR_INVAL);
		assert_int_equal(rn_conn_import(&c, blob, (size_t)len, sv->rails, 1, &sv->env,
						t + 100 * UT_US),
				 RN_ERR_INVAL);
		assert_int_equal(rn_conn_import(&c, blob, (size_t)len - 1, sv->rails, sv->nrails,
						&sv->env, t + 100 * UT_US),
				 RN_ERR_INVAL);
	}
	assert_int_equal(rn_conn_import(&sv->c, blob, (size_t)len, sv->rails, sv->nrails, &sv->env,
					t + 100 * UT_US),
			 0);
	rn_conn_set_user(sv->c, sv);
	assert_int_equal(rn_conn_state(sv->c), RN_ST_ESTABLISHED);
	/* the stream both ways from the new sockets: everything arrives, in order */
	cl->to_send = req + bytes;
	cl->shut_when_done = 1;
	sv->to_send = bytes;
	sv->shut_when_done = 1;
	cl->reading = 1;
	un_run(n, t + 3 * UT_S);
	assert_int_equal(sv->recvd, req + bytes);
	assert_int_equal(cl->recvd, bytes);
	for (int s = 0; s < 2; s++) {
		assert_int_equal(n->side[s].mismatches, 0);
		assert_int_equal(n->side[s].err, 0);
		assert_true(n->side[s].eof);
	}
	/* the client sends to the taker's ports on both paths; each carried data */
	st = stats(cl->c);
	for (int k = 0; k < st.npaths; k++) {
		assert_int_equal(st.rail[k].remote.port, 9000 + k);
		assert_true(st.rail[k].rx_data > 10);
	}
	/* one RAILS per path told it, the client said it got it, and sent again what was lost */
	assert_int_equal(un_count(n, UN_SERVER, RN_PT_RAILS, -1, t, t + UT_MS), 2);
	assert_true(un_count(n, UN_CLIENT, RN_PT_RAILS_ACK, -1, t, t + UT_MS) >= 1);
	assert_true(stats(cl->c).retransmits >= 1);
	/* the keys went on: no datagram failed its tag; nothing came from elsewhere after the move */
	assert_int_equal(stats(cl->c).drops[RN_DROP_AUTH], 0);
	assert_int_equal(stats(sv->c).drops[RN_DROP_AUTH], 0);
	assert_int_equal(stats(sv->c).drops[RN_DROP_REPLAY], 0);
	free(blob);
	un_del(n);
}

static void test_move(void **state)
{
	(void)state;
	run_move(0);
}

static void test_move_keyed(void **state)
{
	(void)state;
	run_move(1);
}

/* What is not fresh stays: bytes of ours written, bytes of the peer's unread, a FIN. */
static void test_not_fresh(void **state)
{
	size_t cap = rn_conn_move_size();
	uint8_t *blob = malloc(cap);
	rn_conn *c = NULL;
	un_net *n;
	uint64_t t;

	(void)state;
	assert_non_null(blob);
	/* the server wrote its answer */
	n = un_new(2);
	t = request(n, 100);
	n->side[UN_SERVER].to_send = 10;
	un_run(n, t + 5 * UT_MS);
	assert_int_equal(rn_conn_export(n->side[UN_SERVER].c, blob, cap), RN_ERR_STATE);
	/* nor is the client's end a server's */
	assert_int_equal(rn_conn_export(n->side[UN_CLIENT].c, blob, cap), RN_ERR_STATE);
	un_del(n);
	/* the request is not read yet */
	n = un_new(2);
	t = un_handshake(n, t0) + UT_MS;
	n->side[UN_CLIENT].to_send = 100;
	un_run(n, t + 5 * UT_MS);
	assert_int_equal(rn_conn_export(n->side[UN_SERVER].c, blob, cap), RN_ERR_STATE);
	un_del(n);
	/* the client shut its side after the request */
	n = un_new(2);
	t = un_handshake(n, t0) + UT_MS;
	n->side[UN_CLIENT].to_send = 100;
	n->side[UN_CLIENT].shut_when_done = 1;
	n->side[UN_SERVER].reading = 1;
	un_run(n, t + 5 * UT_MS);
	assert_true(n->side[UN_SERVER].eof);
	assert_int_equal(rn_conn_export(n->side[UN_SERVER].c, blob, cap), RN_ERR_STATE);
	/* a blob that is not an exported connection */
	memset(blob, 0, cap);
	assert_int_equal(rn_conn_import(&c, blob, cap, n->side[UN_SERVER].rails, 2,
					&n->side[UN_SERVER].env, t),
			 RN_ERR_INVAL);
	assert_null(c);
	un_del(n);
	free(blob);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_move),
		cmocka_unit_test(test_move_keyed),
		cmocka_unit_test(test_not_fresh),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
