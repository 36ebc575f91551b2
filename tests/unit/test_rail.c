/*
 * test_rail.c - rail pairing by subnet, the rail choice, and one rail's
 * congestion window, RTT and RTO.
 */
#include "unit_common.h"

#include "rn_rail.h"

#define A(a, b, c, d, pfx) { .ip = UT_IP(a, b, c, d), .port = 7000, .prefix = pfx }

/* ---- subnets and pairing ---- */

typedef struct subnet_case {
	uint32_t a, b;
	uint8_t prefix;
	int want;
} subnet_case;

static void test_rail_same_subnet(void **state)
{
	static const subnet_case cases[] = {
		{ UT_IP(10, 0, 1, 1), UT_IP(10, 0, 1, 2), 24, 1 },
		{ UT_IP(10, 0, 1, 1), UT_IP(10, 0, 2, 1), 24, 0 },
		{ UT_IP(10, 0, 1, 1), UT_IP(10, 0, 2, 1), 16, 1 },
		{ UT_IP(10, 0, 1, 1), UT_IP(10, 0, 1, 129), 25, 0 },
		/* /32: only the address itself */
		{ UT_IP(10, 0, 1, 1), UT_IP(10, 0, 1, 1), 32, 1 },
		{ UT_IP(10, 0, 1, 1), UT_IP(10, 0, 1, 2), 32, 0 },
		/* /31: a point-to-point pair */
		{ UT_IP(10, 0, 0, 2), UT_IP(10, 0, 0, 3), 31, 1 },
		{ UT_IP(10, 0, 0, 1), UT_IP(10, 0, 0, 2), 31, 0 },
		/* /1: only the top bit counts */
		{ UT_IP(10, 0, 0, 1), UT_IP(127, 255, 255, 255), 1, 1 },
		{ UT_IP(10, 0, 0, 1), UT_IP(128, 0, 0, 1), 1, 0 },
		{ UT_IP(128, 0, 0, 0), UT_IP(255, 255, 255, 255), 1, 1 },
		/* /0 would match everything: never a subnet */
		{ UT_IP(10, 0, 0, 1), UT_IP(10, 0, 0, 1), 0, 0 },
		{ UT_IP(10, 0, 0, 1), UT_IP(200, 0, 0, 1), 0, 0 },
	};

	(void)state;
	for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
		const subnet_case *tc = &cases[i];
		int got = rn_rail_same_subnet(tc->a, tc->b, tc->prefix);

		if (got != tc->want)
			fail_msg("case %zu: %08x %08x /%u: got %d", i, tc->a, tc->b, tc->prefix, got);
		/* symmetric */
		assert_int_equal(rn_rail_same_subnet(tc->b, tc->a, tc->prefix), got);
	}
}

typedef struct match_case {
	const char *name;
	int nlocal, nremote;
	rn_rail_addr local[4], remote[4];
	int npairs;
	int pairs[4][2];
} match_case;

static const match_case match_cases[] = {
	{ "same order", 2, 2, { A(10, 0, 1, 1, 24), A(10, 0, 2, 1, 24) },
	  { A(10, 0, 1, 2, 24), A(10, 0, 2, 2, 24) }, 2, { { 0, 0 }, { 1, 1 } } },
	{ "remote in the other order", 2, 2, { A(10, 0, 1, 1, 24), A(10, 0, 2, 1, 24) },
	  { A(10, 0, 2, 2, 24), A(10, 0, 1, 2, 24) }, 2, { { 0, 1 }, { 1, 0 } } },
	/* pairs follow the local order: both ends number rails by the client's list */
	{ "local in the other order", 2, 2, { A(10, 0, 2, 1, 24), A(10, 0, 1, 1, 24) },
	  { A(10, 0, 1, 2, 24), A(10, 0, 2, 2, 24) }, 2, { { 0, 1 }, { 1, 0 } } },
	{ "local rail with no partner", 3, 2,
	  { A(10, 0, 1, 1, 24), A(10, 0, 3, 1, 24), A(10, 0, 2, 1, 24) },
	  { A(10, 0, 1, 2, 24), A(10, 0, 2, 2, 24) }, 2, { { 0, 0 }, { 2, 1 } } },
	{ "remote rail with no partner", 2, 3, { A(10, 0, 1, 1, 24), A(10, 0, 2, 1, 24) },
	  { A(10, 0, 9, 2, 24), A(10, 0, 2, 2, 24), A(10, 0, 1, 2, 24) }, 2,
	  { { 0, 2 }, { 1, 1 } } },
	/* one local rail takes one remote rail, the first one */
	{ "two remote rails in one subnet", 1, 2, { A(10, 0, 1, 1, 24) },
	  { A(10, 0, 1, 2, 24), A(10, 0, 1, 3, 24) }, 1, { { 0, 0 } } },
	/* a remote rail is used once: the second local rail gets the second */
	{ "two rails in one subnet on both sides", 2, 2, { A(10, 0, 1, 1, 24), A(10, 0, 1, 5, 24) },
	  { A(10, 0, 1, 2, 24), A(10, 0, 1, 3, 24) }, 2, { { 0, 0 }, { 1, 1 } } },
	{ "two local rails, one remote", 2, 1, { A(10, 0, 1, 1, 24), A(10, 0, 1, 5, 24) },
	  { A(10, 0, 1, 2, 24) }, 1, { { 0, 0 } } },
	/* different prefixes: the shorter one decides */
	{ "/24 and /16", 1, 1, { A(10, 0, 1, 1, 24) }, { A(10, 0, 2, 2, 16) }, 1, { { 0, 0 } } },
	{ "/25 and /24", 1, 1, { A(10, 0, 1, 1, 25) }, { A(10, 0, 1, 200, 24) }, 1, { { 0, 0 } } },
	{ "/16 and /24, different /16", 1, 1, { A(10, 1, 1, 1, 16) }, { A(10, 2, 1, 1, 24) }, 0,
	  { { 0 } } },
	{ "/32 and /24", 1, 1, { A(10, 0, 1, 1, 32) }, { A(10, 0, 1, 2, 24) }, 1, { { 0, 0 } } },
	{ "no common subnet", 2, 2, { A(10, 0, 1, 1, 24), A(10, 0, 2, 1, 24) },
	  { A(10, 0, 3, 2, 24), A(10, 0, 4, 2, 24) }, 0, { { 0 } } },
};

static void test_rail_match(void **state)
{
	(void)state;
	for (size_t i = 0; i < sizeof(match_cases) / sizeof(match_cases[0]); i++) {
		const match_case *tc = &match_cases[i];
		int pairs[RN_MAX_RAILS][2];
		int n = rn_rail_match(tc->local, tc->nlocal, tc->remote, tc->nremote, pairs);

		if (n != tc->npairs)
			fail_msg("case \"%s\": %d pairs, want %d", tc->name, n, tc->npairs);
		for (int k = 0; k < n; k++)
			if (pairs[k][0] != tc->pairs[k][0] || pairs[k][1] != tc->pairs[k][1])
				fail_msg("case \"%s\": pair %d is (%d,%d), want (%d,%d)", tc->name, k,
					 pairs[k][0], pairs[k][1], tc->pairs[k][0], tc->pairs[k][1]);
	}
}

/* Eight rails each side, listed in opposite orders. */
static void test_rail_match_eight(void **state)
{
	rn_rail_addr l[RN_MAX_RAILS], r[RN_MAX_RAILS];
	int pairs[RN_MAX_RAILS][2];

	(void)state;
	for (int i = 0; i < RN_MAX_RAILS; i++) {
		l[i] = (rn_rail_addr){ .ip = UT_IP(10, 1, i, 1), .port = 1, .prefix = 24 };
		r[RN_MAX_RAILS - 1 - i] =
				(rn_rail_addr){ .ip = UT_IP(10, 1, i, 2), .port = 2, .prefix = 24 };
	}
	assert_int_equal(rn_rail_match(l, RN_MAX_RAILS, r, RN_MAX_RAILS, pairs), RN_MAX_RAILS);
	for (int i = 0; i < RN_MAX_RAILS; i++) {
		assert_int_equal(pairs[i][0], i);
		assert_int_equal(pairs[i][1], RN_MAX_RAILS - 1 - i);
	}
}

/* ---- the rail choice ---- */

typedef struct choose_case {
	uint32_t usable;
	int nrails;
	unsigned start;
	int want;
} choose_case;

static void test_rail_choose(void **state)
{
	static const choose_case cases[] = {
		{ 0x3, 2, 0, 0 },
		{ 0x3, 2, 1, 1 },
		{ 0x3, 2, 2, 0 },        /* the cursor wraps */
		{ 0x2, 2, 0, 1 },        /* skips an unusable rail */
		{ 0x1, 2, 1, 0 },        /* ...wrapping around to find one */
		{ 0x5, 3, 1, 2 },
		{ 0x5, 3, 3, 0 },
		{ 0x6, 4, 3, 1 },
		{ 0xff, 8, 7, 7 },
		{ 0x80, 8, 0, 7 },
		{ 0x3, 2, UINT32_MAX, 1 },
		{ 0x0, 4, 0, -1 },       /* nothing usable */
		{ 0x8, 3, 0, -1 },       /* a bit past the last rail means nothing */
		{ 0x1, 0, 0, -1 },
	};

	(void)state;
	for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
		const choose_case *tc = &cases[i];
		int got = rn_rail_choose(tc->usable, tc->nrails, tc->start);

		if (got != tc->want)
			fail_msg("case %zu: usable %#x of %d from %u: got %d, want %d", i, tc->usable,
				 tc->nrails, tc->start, got, tc->want);
	}
}

/* The caller's cursor after each choice makes a round robin over usable rails. */
static void test_rail_choose_round_robin(void **state)
{
	static const int want[] = { 0, 1, 3, 0, 1, 3, 0 };
	unsigned cursor = 0;

	(void)state;
	for (size_t i = 0; i < sizeof(want) / sizeof(want[0]); i++) {
		int k = rn_rail_choose(0xb, 4, cursor);

		assert_int_equal(k, want[i]);
		cursor = (unsigned)k + 1;
	}
}

/* The copy's rail (RI2N_REDUNDANT_BYTES): rails as {rx_up, srtt in us}, one case a row. */
typedef struct copy_case {
	int nrails;
	uint8_t rx_up[4];
	uint32_t srtt_us[4];
	uint32_t usable;
	int primary;
	int want;
} copy_case;

static void test_rail_choose_copy(void **state)
{
	static const copy_case cases[] = {
		{ 2, { 1, 1 }, { 50, 50 }, 0x3, 0, 1 },            /* the other one */
		{ 2, { 1, 1 }, { 50, 50 }, 0x3, 1, 0 },
		{ 2, { 1, 1 }, { 50, 50 }, 0x1, 0, -1 },           /* only the primary works: none */
		{ 1, { 1 }, { 50 }, 0x1, 0, -1 },                  /* one rail: none */
		{ 2, { 1, 1 }, { 50, 50 }, 0x0, 0, -1 },
		{ 3, { 1, 1, 1 }, { 90, 40, 70 }, 0x7, 0, 1 },     /* the lowest RTT */
		{ 3, { 1, 1, 1 }, { 90, 40, 70 }, 0x7, 1, 2 },
		{ 3, { 1, 1, 1 }, { 90, 40, 70 }, 0x5, 1, 2 },     /* only usable ones */
		{ 3, { 1, 0, 1 }, { 90, 10, 70 }, 0x7, 0, 2 },     /* received on beats faster */
		{ 3, { 1, 1, 1 }, { 90, 0, 70 }, 0x7, 0, 2 },      /* measured beats unknown */
		{ 3, { 1, 1, 1 }, { 0, 0, 0 }, 0x7, 0, 1 },        /* a tie: the lowest index */
		{ 4, { 1, 1, 1, 1 }, { 30, 30, 30, 30 }, 0xe, 0, 1 },
	};

	(void)state;
	for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
		const copy_case *tc = &cases[i];
		rn_rail rails[4];
		int got;

		memset(rails, 0, sizeof(rails));
		for (int k = 0; k < tc->nrails; k++) {
			rails[k].rx_up = tc->rx_up[k];
			rails[k].srtt_ns = (uint64_t)tc->srtt_us[k] * 1000;
		}
		got = rn_rail_choose_copy(rails, tc->nrails, tc->usable, tc->primary);
		if (got != tc->want)
			fail_msg("case %zu: got %d, want %d", i, got, tc->want);
	}
}

/* ---- one rail's congestion state ---- */

typedef struct rail_fix {
	ut_mem um;
	rn_mem mem;
	rn_config cfg;
	rn_rail r;
} rail_fix;

static rail_fix *rail_new(uint32_t init_cwnd)
{
	rail_fix *f = calloc(1, sizeof(*f));

	assert_non_null(f);
	f->mem = ut_mem_of(&f->um);
	rn_config_default(&f->cfg);
	assert_int_equal(rn_rail_init(&f->r, &f->mem, 1024, init_cwnd), 0);
	return f;
}

static void rail_del(rail_fix *f)
{
	rn_rail_free(&f->r, &f->mem);
	assert_int_equal(f->um.allocs, f->um.frees);
	free(f);
}

static void send_n(rn_rail *r, uint32_t n, uint64_t now)
{
	for (uint32_t i = 0; i < n; i++)
		rn_rail_on_send(r, 1000 + r->tx_idx, now);
}

static void ack_range(rail_fix *f, uint32_t from, uint32_t to, uint64_t now)
{
	for (uint32_t i = from; i < to; i++)
		rn_rail_on_acked(&f->r, i, &f->cfg, 1 << 16, now);
}

static void test_rail_init_and_send(void **state)
{
	rail_fix *f = rail_new(32);
	rn_rail *r = &f->r;
	const uint64_t t0 = UT_T0;

	(void)state;
	assert_int_equal(r->cwnd, 32);
	assert_true(r->rx_up && r->peer_up && rn_rail_tx_up(r));
	assert_true(rn_rail_has_room(r));
	assert_int_equal(rn_rail_on_send(r, 77, t0), 0);
	assert_int_equal(rn_rail_on_send(r, 78, t0 + 5), 1);
	assert_int_equal(r->inflight, 2);
	assert_int_equal(r->last_tx_ns, t0 + 5);
	/* the send-order FIFO, for per-rail loss detection */
	assert_int_equal(r->ftail - r->fhead, 2);
	assert_int_equal(r->fifo[0].seq, 77);
	assert_int_equal(r->fifo[1].seq, 78);
	assert_int_equal(r->fifo[1].idx, 1);
	/* an ACK of the second: acked_idx is one past the highest */
	rn_rail_on_acked(r, 1, &f->cfg, 1 << 16, t0 + 10);
	assert_int_equal(r->acked_idx, 2);
	assert_int_equal(r->last_ack_ns, t0 + 10);
	/* an older one later does not move it back */
	rn_rail_on_acked(r, 0, &f->cfg, 1 << 16, t0 + 11);
	assert_int_equal(r->acked_idx, 2);
	assert_int_equal(r->inflight, 0);
	/* and inflight never goes below zero */
	rn_rail_on_acked(r, 0, &f->cfg, 1 << 16, t0 + 12);
	assert_int_equal(r->inflight, 0);
	/* a send error or the peer's verdict stops sending */
	r->local_err = 1;
	assert_false(rn_rail_tx_up(r));
	r->local_err = 0;
	r->peer_up = 0;
	assert_false(rn_rail_tx_up(r));
	rail_del(f);
}

/* Startup doubles the window per round while the window limits and no queue shows. */
static void test_rail_cwnd_grows(void **state)
{
	rail_fix *f = rail_new(8);
	rn_rail *r = &f->r;
	const uint64_t t0 = UT_T0;

	(void)state;
	send_n(r, 8, t0);
	assert_true(r->cwnd_limited);
	assert_false(rn_rail_has_room(r));
	rn_rail_on_owd(r, 500, &f->cfg, t0 + 100 * UT_US);
	ack_range(f, 0, 1, t0 + 200 * UT_US);
	assert_int_equal(r->cwnd, 16);
	ack_range(f, 1, 8, t0 + 210 * UT_US);
	/* no new round ended inside it */
	assert_int_equal(r->cwnd, 16);
	assert_true(rn_rail_has_room(r));

	/* a round that did not fill the window: no growth, whatever the queue */
	send_n(r, 4, t0 + 300 * UT_US);
	rn_rail_on_owd(r, 500, &f->cfg, t0 + 400 * UT_US);
	ack_range(f, 8, 12, t0 + 500 * UT_US);
	assert_int_equal(r->cwnd, 16);

	/* a full round with no delay sample: no evidence, no growth */
	send_n(r, 16, t0 + 600 * UT_US);
	ack_range(f, 12, 13, t0 + 700 * UT_US);
	assert_int_equal(r->cwnd, 16);

	/* the same with a sample under the target: doubles again */
	ack_range(f, 13, 28, t0 + 710 * UT_US);
	send_n(r, 16, t0 + 720 * UT_US);
	rn_rail_on_owd(r, 600, &f->cfg, t0 + 800 * UT_US); /* 100 us of queue */
	ack_range(f, 28, 29, t0 + 900 * UT_US);
	assert_int_equal(r->cwnd, 32);
	rail_del(f);
}

/*
 * After startup the window grows by 2 packets per round (additive: flows
 * sharing a queue converge), by an eighth while the queue is under a
 * quarter of the target (room nobody uses), up to max_cwnd.
 */
static void test_rail_cwnd_grows_slowly_after_startup(void **state)
{
	rail_fix *f = rail_new(32);
	rn_rail *r = &f->r;
	const uint64_t t0 = UT_T0;

	(void)state;
	r->owd_min = 1000; /* the floor, from an earlier round */
	r->owd_valid = 1;
	send_n(r, 32, t0);
	/* 2.5 ms: over half the 4 ms target ends startup... */
	rn_rail_on_owd(r, 3500, &f->cfg, t0 + 1);
	assert_false(r->startup);
	/* ...and 1.5 ms, the round's least: between a quarter and half the target */
	rn_rail_on_owd(r, 2500, &f->cfg, t0 + 2);
	assert_int_equal(r->latest_q_ns, 1500 * UT_US);
	rn_rail_on_acked(r, 0, &f->cfg, 1 << 16, t0 + 3);
	assert_int_equal(r->cwnd, 34);
	/* a round with no queue at all: an eighth */
	ack_range(f, 1, 32, t0 + 4);
	send_n(r, 34, t0 + 5);
	rn_rail_on_owd(r, 1000, &f->cfg, t0 + 6);
	rn_rail_on_acked(r, 32, &f->cfg, 1 << 16, t0 + 7);
	assert_int_equal(r->cwnd, 38);
	/* the cap */
	ack_range(f, 33, 66, t0 + 8);
	send_n(r, 38, t0 + 9);
	rn_rail_on_owd(r, 1000, &f->cfg, t0 + 10);
	rn_rail_on_acked(r, 66, &f->cfg, 40, t0 + 11);
	assert_int_equal(r->cwnd, 40);
	rail_del(f);
}

typedef struct queue_case {
	uint32_t q_us;   /* one-way queueing delay sampled over a round */
	uint32_t cwnd;   /* window before */
	uint32_t want;   /* window after the round */
} queue_case;

/*
 * A round whose queue is over the round's threshold (between half
 * the 4 ms target and the target) shrinks the window to 7/8, and by
 * target/queue more over the target, rounded, never below half; a queue at
 * or under half the target never does.
 */
static void test_rail_cwnd_shrinks_on_queue(void **state)
{
	static const queue_case cases[] = {
		{ 8000, 32, 16 },   /* 32 * 7/8 * 4/8 = 14: never below half in one round */
		{ 5000, 32, 22 },   /* 32 * 7/8 * 4/5 = 22.4 */
		{ 4100, 32, 27 },   /* 27.3 */
		{ 4000, 32, 28 },   /* at the target: over every threshold */
		{ 4000, 100, 88 },  /* 87.5, rounded */
		{ 40000, 32, 16 },
		{ 2000, 32, 32 },   /* half the target: under every threshold */
		{ 40000, 4, 4 },    /* never below 4 packets */
		{ 40000, 6, 4 },
	};

	(void)state;
	for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
		const queue_case *tc = &cases[i];
		rail_fix *f = rail_new(tc->cwnd);
		rn_rail *r = &f->r;
		const uint64_t t0 = UT_T0;

		/* a first round that learns the delay floor */
		send_n(r, 2, t0);
		rn_rail_on_owd(r, 1000, &f->cfg, t0 + 1);
		ack_range(f, 0, 1, t0 + 2);
		assert_int_equal(r->cwnd, tc->cwnd);
		/* a round with only queued samples */
		rn_rail_on_owd(r, 1000 + tc->q_us, &f->cfg, t0 + 3);
		ack_range(f, 1, 2, t0 + 4);
		send_n(r, 1, t0 + 5);
		ack_range(f, 2, 3, t0 + 6);
		if (r->cwnd != tc->want)
			fail_msg("case %zu: queue %u us, cwnd %u: got %u, want %u", i, tc->q_us,
				 tc->cwnd, r->cwnd, tc->want);
		rail_del(f);
	}
}

/*
 * A round is judged on the least of its first 4 queue samples: the least,
 * as noise only ever makes a sample late; a fixed number, as a flow with a
 * larger window gets more samples per round and the least of more samples
 * is lower (it would shrink less often than the others at the same queue).
 * After a shrink the next round is not judged: its samples are of packets
 * sent before it.
 */
static void test_rail_cwnd_round_queue(void **state)
{
	rail_fix *f = rail_new(32);
	rn_rail *r = &f->r;
	const uint64_t t0 = UT_T0;

	(void)state;
	send_n(r, 2, t0);
	rn_rail_on_owd(r, 1000, &f->cfg, t0 + 1);
	ack_range(f, 0, 1, t0 + 2);
	/* one sample without a queue beside a 20 ms one: no queue */
	rn_rail_on_owd(r, 1000 + 20000, &f->cfg, t0 + 3);
	rn_rail_on_owd(r, 1000 + 100, &f->cfg, t0 + 4);
	assert_int_equal(r->latest_q_ns, 100 * UT_US);
	send_n(r, 1, t0 + 5);
	ack_range(f, 1, 3, t0 + 6);
	assert_int_equal(r->cwnd, 32);
	/* 5 ms or more in the first four: 32 * 7/8 * 4/5; the fifth sample is not looked at */
	rn_rail_on_owd(r, 1000 + 6000, &f->cfg, t0 + 7);
	rn_rail_on_owd(r, 1000 + 5000, &f->cfg, t0 + 7);
	rn_rail_on_owd(r, 1000 + 7000, &f->cfg, t0 + 7);
	rn_rail_on_owd(r, 1000 + 8000, &f->cfg, t0 + 7);
	rn_rail_on_owd(r, 1000 + 100, &f->cfg, t0 + 7);
	send_n(r, 1, t0 + 8);
	ack_range(f, 3, 4, t0 + 9);
	assert_int_equal(r->cwnd, 22);
	assert_true(r->dec_hold);
	/* the stale round: however large its queue, no second shrink */
	send_n(r, 1, t0 + 10);
	rn_rail_on_owd(r, 1000 + 20000, &f->cfg, t0 + 11);
	ack_range(f, 4, 5, t0 + 12);
	assert_int_equal(r->cwnd, 22);
	assert_false(r->dec_hold);
	rail_del(f);
}

/*
 * The threshold moves between rounds over half the target: at 3 ms of
 * queue, some rounds shrink and some do not, so a flow whose floor is off
 * by a little is only a little less likely to shrink (never starves the
 * others for good).
 */
static void test_rail_cwnd_threshold_dither(void **state)
{
	int shrank = 0;

	(void)state;
	for (uint32_t k = 0; k < 64; k++) {
		rail_fix *f = rail_new(32);
		rn_rail *r = &f->r;
		const uint64_t t0 = UT_T0;

		r->startup = 0;
		r->tx_idx = r->round_end = r->acked_idx = 1000 + 7 * k;
		r->owd_min = 1000;
		r->owd_valid = 1;
		send_n(r, 1, t0);
		rn_rail_on_owd(r, 1000 + 3000, &f->cfg, t0 + 1);
		rn_rail_on_acked(r, r->round_end, &f->cfg, 1 << 16, t0 + 5);
		shrank += r->cwnd < 32;
		rail_del(f);
	}
	/* 3 ms is over the threshold in about half of the rounds */
	if (shrank < 16 || shrank > 48)
		fail_msg("%d of 64 rounds shrank", shrank);
}

/*
 * The drain: a window-limited rail drops to 2 packets until what it sent
 * before is acknowledged, takes the least delay of one more round as its
 * floor (lower than before: the queue a late-comer mistook for its floor),
 * then goes straight back to its window.  One comes each time the peer's
 * clock enters a new 2^19 us period (none in the first).
 */
static void test_rail_drain(void **state)
{
	rail_fix *f = rail_new(32);
	rn_rail *r = &f->r;
	const uint64_t t0 = UT_T0;
	uint32_t base;

	(void)state;
	r->peer_clock_us = 5u << 19;
	r->peer_clock_valid = 1;
	/* floor learned with 3 ms of someone else's queue under it */
	rn_rail_on_owd(r, 4000, &f->cfg, t0);
	r->startup = 0;
	send_n(r, 32, t0);
	ack_range(f, 0, 1, t0 + 1); /* the first round: notes the peer's clock period */
	assert_int_equal(r->drain, RN_DRAIN_OFF);
	assert_int_equal(r->cwnd, 36); /* no queue seen: an eighth more */
	send_n(r, 5, t0 + 2); /* the window full again */
	rn_rail_on_owd(r, 4000, &f->cfg, t0 + 3);
	r->peer_clock_us = (6u << 19) + 3; /* the receiver's clock enters a new period */
	ack_range(f, 1, 37, t0 + 101 * UT_MS);
	assert_int_equal(r->drain, RN_DRAIN_EMPTY);
	assert_int_equal(r->cwnd, 2);
	assert_int_equal(r->drain_saved, 36);
	/* everything sent before acknowledged: measure over one more round */
	send_n(r, 2, t0 + 101 * UT_MS);
	ack_range(f, 37, 38, t0 + 102 * UT_MS);
	assert_int_equal(r->drain, RN_DRAIN_MEASURE);
	send_n(r, 1, t0 + 102 * UT_MS);
	base = r->tx_idx;
	/* the queue has gone: 1 ms is the true floor */
	rn_rail_on_owd(r, 1500, &f->cfg, t0 + 103 * UT_MS);
	rn_rail_on_owd(r, 1000, &f->cfg, t0 + 103 * UT_MS);
	ack_range(f, 38, base, t0 + 104 * UT_MS);
	assert_int_equal(r->drain, RN_DRAIN_OFF);
	assert_int_equal(r->owd_min, 1000);
	assert_int_equal(r->cwnd, 36);
	/* no new drain within the same period of the peer's clock... */
	for (int k = 0; k < 3; k++) {
		send_n(r, r->cwnd, t0 + (110 + k) * UT_MS);
		rn_rail_on_owd(r, 2000, &f->cfg, t0 + (110 + k) * UT_MS);
		ack_range(f, r->acked_idx, r->tx_idx, t0 + (111 + k) * UT_MS);
		assert_int_equal(r->drain, RN_DRAIN_OFF);
	}
	/* ...and one as soon as it turns */
	r->peer_clock_us = (7u << 19) + 10;
	send_n(r, r->cwnd, t0 + 120 * UT_MS);
	rn_rail_on_owd(r, 2000, &f->cfg, t0 + 120 * UT_MS);
	ack_range(f, r->acked_idx, r->tx_idx, t0 + 121 * UT_MS);
	assert_int_equal(r->drain, RN_DRAIN_EMPTY);
	/* a loss with a queue during the drain shrinks the window it goes back to */
	base = r->drain_saved;
	rn_rail_on_owd(r, 1000 + 3000, &f->cfg, t0 + 122 * UT_MS);
	send_n(r, 1, t0 + 122 * UT_MS);
	rn_rail_on_lost(r, r->tx_idx - 1, &f->cfg);
	assert_int_equal(r->drain_saved, base * 7 / 10);
	assert_int_equal(r->cwnd, 2);
	rail_del(f);
}

/* A loss shrinks the window only when the rail shows a queue, once per event. */
static void test_rail_loss(void **state)
{
	rail_fix *f = rail_new(20);
	rn_rail *r = &f->r;
	const uint64_t t0 = UT_T0;

	(void)state;
	send_n(r, 10, t0);
	/* no delay sample at all: noise on the wire */
	rn_rail_on_lost(r, 0, &f->cfg);
	assert_int_equal(r->cwnd, 20);
	assert_int_equal(r->inflight, 9);
	assert_int_equal(r->st.lost, 1);
	/* 1.9 ms of queue: under half the 4 ms target, still not congestion */
	rn_rail_on_owd(r, 1000, &f->cfg, t0 + 1);
	rn_rail_on_owd(r, 2900, &f->cfg, t0 + 2);
	rn_rail_on_lost(r, 1, &f->cfg);
	assert_int_equal(r->cwnd, 20);
	assert_true(r->startup);
	/* 3 ms: congestion */
	rn_rail_on_owd(r, 4000, &f->cfg, t0 + 3);
	rn_rail_on_lost(r, 2, &f->cfg);
	assert_int_equal(r->cwnd, 14);
	assert_false(r->startup);
	/* more losses of packets sent before the reaction: the same event */
	rn_rail_on_lost(r, 3, &f->cfg);
	rn_rail_on_lost(r, 9, &f->cfg);
	assert_int_equal(r->cwnd, 14);
	assert_int_equal(r->st.lost, 5);
	/* a loss of a packet sent after it: a new event */
	send_n(r, 1, t0 + 4);
	rn_rail_on_lost(r, 10, &f->cfg);
	assert_int_equal(r->cwnd, 9);
	/* never below 4 packets */
	for (int i = 0; i < 5; i++) {
		send_n(r, 1, t0 + 5);
		rn_rail_on_lost(r, r->tx_idx - 1, &f->cfg);
	}
	assert_int_equal(r->cwnd, 4);
	rail_del(f);
}

static void test_rail_rto(void **state)
{
	rail_fix *f = rail_new(32);
	rn_rail *r = &f->r;
	rn_config cfg = f->cfg;
	const uint64_t t0 = UT_T0;

	(void)state;
	/* no sample yet: 100 ms */
	assert_true(rn_rail_rto(r, &cfg) == 100 * UT_MS);
	cfg.rto_min_ns = 200 * UT_MS;
	assert_true(rn_rail_rto(r, &cfg) == 200 * UT_MS);
	cfg.rto_min_ns = 20 * UT_MS;
	/* 1 ms of RTT: srtt + 4 rttvar = 3 ms, held up by the 20 ms floor */
	rn_rail_on_rtt(r, 1 * UT_MS, t0);
	assert_true(r->srtt_ns == 1 * UT_MS);
	assert_true(r->rttvar_ns == 500 * UT_US);
	assert_true(rn_rail_rto(r, &cfg) == 20 * UT_MS);
	cfg.rto_min_ns = 1 * UT_MS;
	assert_true(rn_rail_rto(r, &cfg) == 3 * UT_MS);
	/* backoff doubles, up to 64 times */
	r->rto_backoff = 1;
	assert_true(rn_rail_rto(r, &cfg) == 6 * UT_MS);
	r->rto_backoff = 3;
	assert_true(rn_rail_rto(r, &cfg) == 24 * UT_MS);
	r->rto_backoff = 6;
	assert_true(rn_rail_rto(r, &cfg) == 192 * UT_MS);
	r->rto_backoff = 20;
	assert_true(rn_rail_rto(r, &cfg) == 192 * UT_MS);
	/* a new sample ends the backoff */
	rn_rail_on_rtt(r, 1 * UT_MS, t0 + 1);
	assert_int_equal(r->rto_backoff, 0);
	rail_del(f);
}

static void test_rail_rtt_estimates(void **state)
{
	rail_fix *f = rail_new(32);
	rn_rail *r = &f->r;
	const uint64_t t0 = UT_T0;

	(void)state;
	rn_rail_on_rtt(r, 100 * UT_MS, t0);
	assert_true(rn_rail_rto(r, &f->cfg) == 300 * UT_MS);
	rn_rail_on_rtt(r, 200 * UT_MS, t0 + 1 * UT_S);
	/* RFC 6298: rttvar = 3/4 rttvar + 1/4 |err|, srtt = 7/8 srtt + 1/8 rtt */
	assert_true(r->rttvar_ns == 62500 * UT_US);
	assert_true(r->srtt_ns == 112500 * UT_US);
	assert_true(r->min_rtt_ns == 100 * UT_MS);
	rn_rail_on_rtt(r, 50 * UT_MS, t0 + 2 * UT_S);
	assert_true(r->min_rtt_ns == 50 * UT_MS);
	/* the floor is re-learned after 10 s, as routes change */
	rn_rail_on_rtt(r, 80 * UT_MS, t0 + 5 * UT_S);
	assert_true(r->min_rtt_ns == 50 * UT_MS);
	rn_rail_on_rtt(r, 80 * UT_MS, t0 + 13 * UT_S);
	assert_true(r->min_rtt_ns == 80 * UT_MS);
	rail_del(f);
}

/* One-way delay: the floor cancels the clock offset; it wraps with the 32-bit us clock. */
static void test_rail_owd_wrap(void **state)
{
	rail_fix *f = rail_new(32);
	rn_rail *r = &f->r;
	const uint64_t t0 = UT_T0;

	(void)state;
	rn_rail_on_owd(r, 0xfffffff0, &f->cfg, t0);
	assert_int_equal(r->latest_q_ns, 0);
	/* 0x20 us later in wrapping arithmetic: a 32 us queue, not 4000 s */
	rn_rail_on_owd(r, 0x10, &f->cfg, t0 + 1);
	assert_int_equal(r->latest_q_ns, 32 * UT_US);
	/* a smaller delay lowers the floor */
	rn_rail_on_owd(r, 0xffffff00, &f->cfg, t0 + 2);
	assert_int_equal(r->owd_min, 0xffffff00);
	assert_int_equal(r->latest_q_ns, 0);
	rail_del(f);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_rail_same_subnet),
		cmocka_unit_test(test_rail_match),
		cmocka_unit_test(test_rail_match_eight),
		cmocka_unit_test(test_rail_choose),
		cmocka_unit_test(test_rail_choose_round_robin),
		cmocka_unit_test(test_rail_choose_copy),
		cmocka_unit_test(test_rail_init_and_send),
		cmocka_unit_test(test_rail_cwnd_grows),
		cmocka_unit_test(test_rail_cwnd_grows_slowly_after_startup),
		cmocka_unit_test(test_rail_cwnd_shrinks_on_queue),
		cmocka_unit_test(test_rail_cwnd_round_queue),
		cmocka_unit_test(test_rail_cwnd_threshold_dither),
		cmocka_unit_test(test_rail_drain),
		cmocka_unit_test(test_rail_loss),
		cmocka_unit_test(test_rail_rto),
		cmocka_unit_test(test_rail_rtt_estimates),
		cmocka_unit_test(test_rail_owd_wrap),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
