/*
 * test_htab.c - the host kit's connection table and dispatch: add, find,
 * remove (the backward shift keeps every other entry findable), re-key,
 * growth, a random run checked against a plain array, and where datagrams
 * go (a connection, the listener, nowhere; a stateless reset to the
 * connection whose peer it names).
 */
#define _GNU_SOURCE /* rn_hsock.h: struct mmsghdr */
#include "unit_net.h"

#include <errno.h>

#include "rn_htab.h"
#include "rn_wire.h"

static void test_add_get_del(void **state)
{
	rn_htab t;
	int a, b, c;

	(void)state;
	assert_int_equal(rn_htab_init(&t, 1), 0);
	assert_int_equal(rn_htab_add(&t, 0, &a), -EINVAL); /* 0 is "empty" */
	assert_int_equal(rn_htab_add(&t, 11, &a), 0);
	assert_int_equal(rn_htab_add(&t, 22, &b), 0);
	assert_int_equal(rn_htab_add(&t, 33, &c), 0);
	assert_int_equal(t.n, 3);
	assert_ptr_equal(rn_htab_get(&t, 11), &a);
	assert_ptr_equal(rn_htab_get(&t, 22), &b);
	assert_ptr_equal(rn_htab_get(&t, 33), &c);
	assert_null(rn_htab_get(&t, 44));      /* unknown id */
	assert_null(rn_htab_get(&t, 0));
	assert_int_equal(rn_htab_del(&t, 22, &a), 0); /* not a's id: nothing happens */
	assert_ptr_equal(rn_htab_get(&t, 22), &b);
	assert_int_equal(rn_htab_del(&t, 22, &b), 1);
	assert_null(rn_htab_get(&t, 22));
	assert_int_equal(rn_htab_del(&t, 22, &b), 0);
	assert_int_equal(t.n, 2);
	rn_htab_free(&t);
}

static void test_rekey(void **state)
{
	rn_htab t;
	int a, b;

	(void)state;
	assert_int_equal(rn_htab_init(&t, 4), 0);
	assert_int_equal(rn_htab_add(&t, 0x1111, &a), 0);
	assert_int_equal(rn_htab_add(&t, 0x2222, &b), 0);
	/* a restarted handshake drew a new id: the old one names nothing */
	assert_int_equal(rn_htab_rekey(&t, 0x1111, 0x3333, &a), 0);
	assert_null(rn_htab_get(&t, 0x1111));
	assert_ptr_equal(rn_htab_get(&t, 0x3333), &a);
	assert_ptr_equal(rn_htab_get(&t, 0x2222), &b);
	assert_int_equal(rn_htab_rekey(&t, 0x3333, 0x3333, &a), 0); /* same id: no change */
	assert_int_equal(t.n, 2);
	rn_htab_free(&t);
}

static void count_one(void *v, void *arg)
{
	(void)v;
	(*(int *)arg)++;
}

/* Ids chosen so many share a home slot: deletions must shift the runs back. */
static void test_random_against_array(void **state)
{
	enum { N = 600 };
	static int objs[N];
	static uint8_t in[N];
	rn_htab t;
	uint64_t seed = 7;
	int each = 0;

	(void)state;
	assert_int_equal(rn_htab_init(&t, 1), 0);
	for (int step = 0; step < 20000; step++) {
		int k;

		seed = seed * 6364136223846793005u + 1442695040888963407u;
		k = (int)((seed >> 33) % N);
		if (in[k]) {
			assert_int_equal(rn_htab_del(&t, (uint64_t)k + 1, &objs[k]), 1);
			in[k] = 0;
		} else {
			assert_int_equal(rn_htab_add(&t, (uint64_t)k + 1, &objs[k]), 0);
			in[k] = 1;
		}
		if (step % 97 == 0)
			for (int i = 0; i < N; i++)
				assert_ptr_equal(rn_htab_get(&t, (uint64_t)i + 1), in[i] ? &objs[i] : NULL);
	}
	for (int i = 0; i < N; i++)
		assert_ptr_equal(rn_htab_get(&t, (uint64_t)i + 1), in[i] ? &objs[i] : NULL);
	rn_htab_each(&t, count_one, &each);
	assert_int_equal(each, (int)t.n);
	assert_true(t.n * 4 <= t.cap * 3); /* grew to stay at most 3/4 full */
	rn_htab_free(&t);
}

/* ---- dispatch ---- */

typedef struct route_log {
	void *conn;
	int conns, listened, has_listener;
	size_t len;
	uint64_t at;
	rn_addr from;
} route_log;

static void to_conn(void *arg, void *v, int idx, rn_addr from, const uint8_t *d, size_t len,
		    uint64_t at)
{
	route_log *r = arg;

	(void)idx;
	(void)d;
	r->conn = v;
	r->conns++;
	r->len = len;
	r->at = at;
	r->from = from;
}

static int to_listener(void *arg, int idx, rn_addr from, const uint8_t *d, size_t len,
		       uint64_t at)
{
	route_log *r = arg;

	(void)idx;
	(void)from;
	(void)d;
	(void)len;
	(void)at;
	if (!r->has_listener)
		return -1;
	r->listened++;
	return 0;
}

static void dgram_for(uint8_t *b, uint64_t id)
{
	memset(b, 0, RN_HDR_LEN);
	b[0] = 1; /* version */
	rn_put64(b + 4, id);
}

static void test_dispatch(void **state)
{
	rn_htab t;
	route_log r = { 0 };
	rn_hdisp x = { .tab = &t, .to_conn = to_conn, .to_listener = to_listener, .arg = &r };
	uint8_t b[64];
	int a;
	rn_addr from = { .ip = 0xc6120101u, .port = 4000 };

	(void)state;
	assert_int_equal(rn_htab_init(&t, 4), 0);
	assert_int_equal(rn_htab_add(&t, 0xabcdef, &a), 0);
	dgram_for(b, 0xabcdef);
	rn_hdisp_input(&x, 1, from, b, 40, UT_T0 + 5 * UT_MS);
	assert_int_equal(r.conns, 1);
	assert_ptr_equal(r.conn, &a);
	assert_int_equal(r.len, 40);
	assert_true(r.at == UT_T0 + 5 * UT_MS);
	assert_int_equal(r.from.port, 4000);
	/* an id nobody holds, no listener on these sockets: dropped, counted */
	dgram_for(b, 0x999);
	rn_hdisp_input(&x, 0, from, b, 40, UT_T0);
	assert_int_equal(r.conns, 1);
	assert_int_equal(x.unknown, 1);
	/* with a listener: it gets them (a handshake's first datagram has id 0) */
	r.has_listener = 1;
	rn_hdisp_input(&x, 0, from, b, 40, UT_T0);
	dgram_for(b, 0);
	rn_hdisp_input(&x, 0, from, b, 40, UT_T0);
	rn_hdisp_input(&x, 0, from, b, 3, UT_T0); /* too short to carry an id */
	assert_int_equal(r.listened, 3);
	assert_int_equal(x.unknown, 1);
	/* re-keyed: the new id reaches it, the old one does not */
	assert_int_equal(rn_htab_rekey(&t, 0xabcdef, 0x4242, &a), 0);
	dgram_for(b, 0x4242);
	rn_hdisp_input(&x, 0, from, b, 40, UT_T0);
	assert_int_equal(r.conns, 2);
	dgram_for(b, 0xabcdef);
	r.has_listener = 0;
	rn_hdisp_input(&x, 0, from, b, 40, UT_T0);
	assert_int_equal(r.conns, 2);
	assert_int_equal(x.unknown, 2);
	/* no listener hook at all */
	x.to_listener = NULL;
	rn_hdisp_input(&x, 0, from, b, 40, UT_T0);
	assert_int_equal(x.unknown, 3);
	rn_htab_free(&t);
}

/* A driver's link as the dispatch sees it: its connection, and the resets it took. */
typedef struct fake_link {
	rn_conn *c;
	int resets;
} fake_link;

static rn_conn *conn_of(void *v) { return ((fake_link *)v)->c; }

static void on_reset(void *arg, void *v)
{
	route_log *r = arg;

	r->conn = v;
	((fake_link *)v)->resets++;
}

/* A stateless reset naming id `named`, as a listener sends it (unkeyed). */
static size_t sreset_for(uint8_t *b, size_t cap, uint64_t named)
{
	rn_hdr h = { .type = RN_PT_SRESET, .path = 0xff };
	uint8_t body[RN_SRESET_LEN];
	ssize_t n;

	rn_put64(body, named);
	n = rn_wire_encode(b, cap, &h, NULL, body, sizeof(body));
	assert_true(n > 0);
	return (size_t)n;
}

/*
 * A stateless reset (id 0) goes to the connection whose peer it names,
 * whichever the table holds first; one nobody takes is counted, never the
 * listener's; without conn_of it is the listener's, as before.
 */
static void test_dispatch_sreset(void **state)
{
	un_net *n = un_new(1);
	fake_link cl, sv;
	rn_htab t;
	route_log r = { .has_listener = 1 };
	rn_hdisp x = { .tab = &t, .to_conn = to_conn, .to_listener = to_listener,
		       .conn_of = conn_of, .on_reset = on_reset, .arg = &r };
	uint8_t b[128];
	rn_addr from;
	uint64_t now;
	size_t len;

	(void)state;
	now = un_handshake(n, UT_T0);
	cl = (fake_link){ n->side[UN_CLIENT].c, 0 };
	sv = (fake_link){ n->side[UN_SERVER].c, 0 };
	from = un_addr(n, UN_SERVER, 0);
	assert_int_equal(rn_htab_init(&t, 4), 0);
	assert_int_equal(rn_htab_add(&t, rn_conn_id(sv.c), &sv), 0);
	assert_int_equal(rn_htab_add(&t, rn_conn_id(cl.c), &cl), 0);
	/* names an id neither has as its peer: nobody takes it, counted */
	len = sreset_for(b, sizeof(b), rn_conn_id(sv.c) ^ 0x5a5a);
	rn_hdisp_input(&x, 0, from, b, len, now);
	assert_int_equal(cl.resets + sv.resets, 0);
	assert_int_equal(r.listened, 0);
	assert_int_equal(x.unknown, 1);
	assert_int_equal(rn_conn_state(cl.c), RN_ST_ESTABLISHED);
	/* too short to be a reset: the listener's, as any datagram with id 0 */
	len = sreset_for(b, sizeof(b), rn_conn_id(sv.c));
	rn_hdisp_input(&x, 0, from, b, len - 1, now);
	assert_int_equal(r.listened, 1);
	/* without conn_of, resets are the listener's too */
	x.conn_of = NULL;
	rn_hdisp_input(&x, 0, from, b, len, now);
	assert_int_equal(r.listened, 2);
	assert_int_equal(cl.resets, 0);
	/* names the server's id, from its address: the client's, which fails */
	x.conn_of = conn_of;
	rn_hdisp_input(&x, 0, from, b, len, now);
	assert_int_equal(cl.resets, 1);
	assert_int_equal(sv.resets, 0);
	assert_ptr_equal(r.conn, &cl);
	assert_int_equal(r.listened, 2);
	assert_int_equal(x.unknown, 1);
	assert_int_equal(rn_conn_error(cl.c), RN_ERR_RESET);
	rn_htab_free(&t);
	un_del(n);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_add_get_del),
		cmocka_unit_test(test_rekey),
		cmocka_unit_test(test_random_against_array),
		cmocka_unit_test(test_dispatch),
		cmocka_unit_test(test_dispatch_sreset),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
