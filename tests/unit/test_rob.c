/*
 * test_rob.c - the receive reorder ring: ordering, duplicates, the window,
 * partial reads, the FIN, SACK bitmaps, sequence numbers that wrap, and a
 * ring that grows inside its window (and out of memory while growing).
 */
#include "unit_common.h"

#include "rn_rob.h"

typedef struct rob_fix {
	ut_mem um;
	rn_mem mem;
	rn_rob r;
} rob_fix;

static rob_fix *rob_new(uint32_t slots, uint32_t mss, uint32_t isn)
{
	rob_fix *f = calloc(1, sizeof(*f));

	assert_non_null(f);
	f->mem = ut_mem_of(&f->um);
	assert_int_equal(rn_rob_init(&f->r, &f->mem, slots, slots, mss, isn), 0);
	return f;
}

static void rob_del(rob_fix *f)
{
	rn_rob_free(&f->r, &f->mem);
	/* everything allocated was given back */
	assert_int_equal(f->um.allocs, f->um.frees);
	free(f);
}

/* Payload of packet seq: its bytes name it, so a misplaced packet shows. */
static void pkt_bytes(uint8_t *out, uint32_t seq, uint16_t len)
{
	for (uint16_t i = 0; i < len; i++)
		out[i] = (uint8_t)(seq * 31u + i);
}

static int ins(rn_rob *r, uint32_t seq, uint16_t len, int fin)
{
	uint8_t buf[256];

	assert_true(len <= sizeof(buf));
	pkt_bytes(buf, seq, len);
	return rn_rob_insert(r, seq, buf, len, fin);
}

/* Peeks and checks that the next bytes are packet seq's, from byte `from`. */
static void expect_peek(rn_rob *r, uint32_t seq, uint16_t len, uint16_t from)
{
	uint8_t want[256];
	const uint8_t *d = NULL;
	ssize_t n = rn_rob_peek(r, &d);

	pkt_bytes(want, seq, len);
	assert_int_equal(n, len - from);
	assert_memory_equal(d, want + from, (size_t)(len - from));
}

/* Inserts and reads n in-order packets, moving the ring forward. */
static void advance(rn_rob *r, uint32_t n)
{
	for (uint32_t i = 0; i < n; i++) {
		uint32_t seq = r->nxt;

		assert_int_equal(ins(r, seq, 3, 0), RN_ROB_NEW);
		expect_peek(r, seq, 3, 0);
		rn_rob_consume(r, 3);
	}
	assert_int_equal(r->base, r->nxt);
}

static void test_rob_in_order(void **state)
{
	rob_fix *f = rob_new(64, 16, 1000);
	rn_rob *r = &f->r;
	const uint8_t *d;

	(void)state;
	assert_int_equal(rn_rob_peek(r, &d), RN_ERR_AGAIN);
	assert_int_equal(ins(r, 1000, 10, 0), RN_ROB_NEW);
	assert_int_equal(ins(r, 1001, 16, 0), RN_ROB_NEW);
	assert_int_equal(r->nxt, 1002);
	assert_int_equal(r->max, 1002);
	assert_int_equal(r->bytes_in, 26);
	expect_peek(r, 1000, 10, 0);
	rn_rob_consume(r, 10);
	assert_int_equal(r->base, 1001);
	/* consuming opened one slot at the window edge */
	assert_int_equal(rn_rob_edge(r), 1001 + 64);
	expect_peek(r, 1001, 16, 0);
	rn_rob_consume(r, 16);
	assert_int_equal(rn_rob_peek(r, &d), RN_ERR_AGAIN);
	rob_del(f);
}

static void test_rob_out_of_order(void **state)
{
	rob_fix *f = rob_new(64, 16, 1000);
	rn_rob *r = &f->r;
	const uint8_t *d;

	(void)state;
	assert_int_equal(ins(r, 1002, 5, 0), RN_ROB_NEW);
	assert_int_equal(ins(r, 1001, 6, 0), RN_ROB_NEW);
	/* a hole at the front: nothing is readable */
	assert_int_equal(r->nxt, 1000);
	assert_int_equal(r->max, 1003);
	assert_int_equal(rn_rob_peek(r, &d), RN_ERR_AGAIN);
	assert_int_equal(ins(r, 1000, 7, 0), RN_ROB_NEW);
	assert_int_equal(r->nxt, 1003);
	expect_peek(r, 1000, 7, 0);
	rn_rob_consume(r, 7);
	expect_peek(r, 1001, 6, 0);
	rn_rob_consume(r, 6);
	expect_peek(r, 1002, 5, 0);
	rn_rob_consume(r, 5);
	assert_int_equal(rn_rob_peek(r, &d), RN_ERR_AGAIN);
	rob_del(f);
}

/* rn_rob_ready: every in-order byte up to a gap or the FIN, less what was read. */
static void test_rob_ready(void **state)
{
	rob_fix *f = rob_new(64, 16, 1000);
	rn_rob *r = &f->r;
	const uint8_t *d;

	(void)state;
	assert_int_equal(rn_rob_ready(r), 0);
	assert_int_equal(ins(r, 1000, 16, 0), RN_ROB_NEW);
	assert_int_equal(ins(r, 1001, 16, 0), RN_ROB_NEW);
	assert_int_equal(ins(r, 1003, 9, 0), RN_ROB_NEW); /* beyond a gap: not readable */
	assert_int_equal(rn_rob_ready(r), 32);
	assert_true(rn_rob_peek(r, &d) > 0);
	rn_rob_consume(r, 5);
	assert_int_equal(rn_rob_ready(r), 27);
	assert_int_equal(ins(r, 1002, 4, 0), RN_ROB_NEW);
	assert_int_equal(rn_rob_ready(r), 40);
	assert_int_equal(ins(r, 1004, 0, 1), RN_ROB_NEW); /* the FIN counts nothing */
	assert_int_equal(rn_rob_ready(r), 40);
	rob_del(f);
}

/* A duplicate never replaces the data already stored. */
static void test_rob_duplicates(void **state)
{
	rob_fix *f = rob_new(64, 16, 1000);
	rn_rob *r = &f->r;
	uint8_t other[16];

	(void)state;
	memset(other, 0x5a, sizeof(other));
	assert_int_equal(ins(r, 1000, 8, 0), RN_ROB_NEW);
	assert_int_equal(ins(r, 1005, 8, 0), RN_ROB_NEW);
	/* in order but unread */
	assert_int_equal(rn_rob_insert(r, 1000, other, 8, 0), RN_ROB_DUP);
	/* out of order, already held */
	assert_int_equal(rn_rob_insert(r, 1005, other, 8, 0), RN_ROB_DUP);
	assert_int_equal(r->bytes_in, 16);
	expect_peek(r, 1000, 8, 0);
	rn_rob_consume(r, 8);
	/* read and gone: still a duplicate, not a new packet */
	assert_int_equal(rn_rob_insert(r, 1000, other, 8, 0), RN_ROB_DUP);
	assert_int_equal(rn_rob_insert(r, 1000 - 30, other, 8, 0), RN_ROB_DUP);
	assert_int_equal(ins(r, 1001, 8, 0), RN_ROB_NEW);
	expect_peek(r, 1001, 8, 0);
	assert_int_equal(ins(r, 1002, 8, 0), RN_ROB_NEW);
	assert_int_equal(ins(r, 1003, 8, 0), RN_ROB_NEW);
	assert_int_equal(ins(r, 1004, 8, 0), RN_ROB_NEW);
	assert_int_equal(r->nxt, 1006);
	rn_rob_consume(r, 8 * 4);
	expect_peek(r, 1005, 8, 0);
	rob_del(f);
}

typedef struct win_case {
	const char *name;
	uint32_t delta; /* seq - base */
	int want;
} win_case;

static void test_rob_window(void **state)
{
	static const win_case cases[] = {
		{ "one before base", (uint32_t)-1, RN_ROB_DUP },
		{ "a ring before base", (uint32_t)-64, RN_ROB_DUP },
		{ "the last slot of the window", 63, RN_ROB_NEW },
		{ "the window edge", 64, RN_ROB_OUT },
		{ "one past the edge", 65, RN_ROB_OUT },
		{ "far ahead", 100000, RN_ROB_OUT },
		{ "2^31 - 1 ahead", 0x7fffffff, RN_ROB_OUT },
	};
	const uint32_t isn = 4000;

	(void)state;
	for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
		rob_fix *f = rob_new(64, 16, isn);
		int got = ins(&f->r, isn + cases[i].delta, 4, 0);

		if (got != cases[i].want)
			fail_msg("case \"%s\": got %d, want %d", cases[i].name, got, cases[i].want);
		/* a rejected packet leaves no trace */
		if (got != RN_ROB_NEW) {
			assert_int_equal(f->r.max, isn);
			assert_int_equal(f->r.bytes_in, 0);
		}
		rob_del(f);
	}
}

/* Reading moves the edge: what was out of the window a moment ago fits now. */
static void test_rob_window_moves(void **state)
{
	rob_fix *f = rob_new(64, 16, 4000);
	rn_rob *r = &f->r;

	(void)state;
	assert_int_equal(rn_rob_edge(r), 4064);
	assert_int_equal(ins(r, 4064, 4, 0), RN_ROB_OUT);
	assert_int_equal(ins(r, 4000, 4, 0), RN_ROB_NEW);
	/* received but not read: the window has not moved */
	assert_int_equal(ins(r, 4064, 4, 0), RN_ROB_OUT);
	rn_rob_consume(r, 4);
	assert_int_equal(rn_rob_edge(r), 4065);
	assert_int_equal(ins(r, 4064, 4, 0), RN_ROB_NEW);
	assert_int_equal(ins(r, 4065, 4, 0), RN_ROB_OUT);
	rob_del(f);
}

static void test_rob_too_long(void **state)
{
	rob_fix *f = rob_new(64, 16, 7);
	rn_rob *r = &f->r;

	(void)state;
	assert_int_equal(ins(r, 7, 17, 0), RN_ROB_BAD);
	assert_int_equal(r->nxt, 7);
	assert_int_equal(ins(r, 7, 16, 0), RN_ROB_NEW);
	expect_peek(r, 7, 16, 0);
	rob_del(f);
}

static void test_rob_partial_reads(void **state)
{
	rob_fix *f = rob_new(64, 16, 1000);
	rn_rob *r = &f->r;
	const uint8_t *d;

	(void)state;
	for (uint32_t s = 1000; s < 1003; s++)
		assert_int_equal(ins(r, s, 10, 0), RN_ROB_NEW);
	rn_rob_consume(r, 0);
	expect_peek(r, 1000, 10, 0);
	rn_rob_consume(r, 3);
	expect_peek(r, 1000, 10, 3);
	/* 7 left in the first packet, then 5 into the second */
	rn_rob_consume(r, 12);
	assert_int_equal(r->base, 1001);
	expect_peek(r, 1001, 10, 5);
	/* more than there is: stops at the hole, not beyond */
	rn_rob_consume(r, 1000);
	assert_int_equal(r->base, 1003);
	assert_int_equal(r->off, 0);
	assert_int_equal(rn_rob_peek(r, &d), RN_ERR_AGAIN);
	/* the next packet reads from its start */
	assert_int_equal(ins(r, 1003, 9, 0), RN_ROB_NEW);
	expect_peek(r, 1003, 9, 0);
	rob_del(f);
}

/* The FIN overtakes the last data: end of stream only after all of it is read. */
static void test_rob_fin_before_last_data(void **state)
{
	rob_fix *f = rob_new(64, 16, 1000);
	rn_rob *r = &f->r;
	const uint8_t *d;

	(void)state;
	assert_int_equal(ins(r, 1003, 0, 1), RN_ROB_NEW);
	assert_true(r->fin_known);
	assert_false(rn_rob_fin_in_order(r));
	assert_int_equal(rn_rob_peek(r, &d), RN_ERR_AGAIN);
	assert_int_equal(ins(r, 1001, 10, 0), RN_ROB_NEW);
	assert_int_equal(ins(r, 1002, 10, 0), RN_ROB_NEW);
	assert_false(rn_rob_fin_in_order(r));
	assert_int_equal(ins(r, 1000, 10, 0), RN_ROB_NEW);
	assert_true(rn_rob_fin_in_order(r));
	/* data first, never a premature EOF */
	expect_peek(r, 1000, 10, 0);
	rn_rob_consume(r, 10);
	expect_peek(r, 1001, 10, 0);
	rn_rob_consume(r, 15);
	expect_peek(r, 1002, 10, 5);
	rn_rob_consume(r, 5);
	assert_int_equal(rn_rob_peek(r, &d), 0);
	/* consuming at the FIN does not step over it */
	rn_rob_consume(r, 5);
	assert_int_equal(r->base, 1003);
	assert_int_equal(rn_rob_peek(r, &d), 0);
	rob_del(f);
}

typedef struct fin_case {
	const char *name;
	uint32_t seq;
	uint16_t len;
	int fin;
	int want;
} fin_case;

/* Received: 1000..1001; the FIN at 1005.  Nothing contradicting it is stored. */
static void test_rob_fin_rules(void **state)
{
	static const fin_case cases[] = {
		{ "data after the FIN", 1006, 4, 0, RN_ROB_BAD },
		{ "data far after the FIN", 1030, 4, 0, RN_ROB_BAD },
		{ "a second FIN before it", 1003, 0, 1, RN_ROB_BAD },
		{ "a second FIN after it", 1007, 0, 1, RN_ROB_BAD },
		{ "the same FIN again", 1005, 0, 1, RN_ROB_DUP },
		{ "data in the FIN's place", 1005, 4, 0, RN_ROB_DUP },
		{ "data before the FIN", 1004, 4, 0, RN_ROB_NEW },
	};

	(void)state;
	for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
		rob_fix *f = rob_new(64, 16, 1000);
		rn_rob *r = &f->r;
		int got;

		assert_int_equal(ins(r, 1000, 4, 0), RN_ROB_NEW);
		assert_int_equal(ins(r, 1001, 4, 0), RN_ROB_NEW);
		assert_int_equal(ins(r, 1005, 0, 1), RN_ROB_NEW);
		got = ins(r, cases[i].seq, cases[i].len, cases[i].fin);
		if (got != cases[i].want)
			fail_msg("case \"%s\": got %d, want %d", cases[i].name, got, cases[i].want);
		assert_int_equal(r->fin_seq, 1005);
		rob_del(f);
	}
}

/* A FIN below data already received would cut it off: refused. */
static void test_rob_fin_below_max(void **state)
{
	rob_fix *f = rob_new(64, 16, 1000);
	rn_rob *r = &f->r;

	(void)state;
	assert_int_equal(ins(r, 1004, 4, 0), RN_ROB_NEW);
	assert_int_equal(ins(r, 1002, 0, 1), RN_ROB_BAD);
	assert_int_equal(ins(r, 1004, 0, 1), RN_ROB_DUP);
	assert_false(r->fin_known);
	assert_int_equal(ins(r, 1005, 0, 1), RN_ROB_NEW);
	assert_true(r->fin_known);
	rob_del(f);
}

/* SACK words: bit b of word w is seq nxt + 1 + 64 w + b. */
static void test_rob_sack_bits(void **state)
{
	rob_fix *f = rob_new(256, 8, 1000);
	rn_rob *r = &f->r;
	uint64_t w[4];

	(void)state;
	memset(w, 0xff, sizeof(w));
	assert_int_equal(rn_rob_sack(r, w, 4), 0);
	/* one packet past the hole: one word, one bit */
	assert_int_equal(ins(r, 1001, 8, 0), RN_ROB_NEW);
	assert_int_equal(rn_rob_sack(r, w, 4), 1);
	assert_true(w[0] == 1);
	assert_int_equal(ins(r, 1003, 8, 0), RN_ROB_NEW);
	assert_int_equal(ins(r, 1064, 8, 0), RN_ROB_NEW);
	assert_int_equal(ins(r, 1065, 8, 0), RN_ROB_NEW);
	assert_int_equal(ins(r, 1130, 8, 0), RN_ROB_NEW);
	assert_int_equal(rn_rob_sack(r, w, 4), 3);
	assert_true(w[0] == (UINT64_C(1) | UINT64_C(1) << 2 | UINT64_C(1) << 63));
	assert_true(w[1] == UINT64_C(1));
	assert_true(w[2] == UINT64_C(1) << 1);
	/* fewer words than needed: the first ones, and no more written */
	w[1] = 0x77;
	assert_int_equal(rn_rob_sack(r, w, 1), 1);
	assert_true(w[1] == 0x77);
	assert_int_equal(rn_rob_sack(r, w, 0), 0);

	/* fill the first hole: the bitmap now starts after the next one (1002) */
	assert_int_equal(ins(r, 1000, 8, 0), RN_ROB_NEW);
	assert_int_equal(r->nxt, 1002);
	assert_int_equal(rn_rob_sack(r, w, 4), 2);
	assert_true(w[0] == (UINT64_C(1) | UINT64_C(1) << 61 | UINT64_C(1) << 62));
	assert_true(w[1] == UINT64_C(1) << 63);

	/* reading does not change what is acknowledged */
	rn_rob_consume(r, 16);
	assert_int_equal(rn_rob_sack(r, w, 4), 2);
	assert_true(w[1] == UINT64_C(1) << 63);
	rob_del(f);
}

/*
 * A 64-slot ring whose window has moved past the end of the ring: the SACK
 * word reads slots on both sides of the wrap, and the consumed slots after
 * `max` must read as not received.
 */
static void test_rob_sack_ring_wrap_64(void **state)
{
	rob_fix *f = rob_new(64, 8, 0);
	rn_rob *r = &f->r;
	uint64_t w[2] = { 0, 0 };

	(void)state;
	advance(r, 50);
	assert_int_equal(ins(r, 52, 8, 0), RN_ROB_NEW);
	assert_int_equal(ins(r, 60, 8, 0), RN_ROB_NEW);
	assert_int_equal(ins(r, 63, 8, 0), RN_ROB_NEW);
	assert_int_equal(ins(r, 69, 8, 0), RN_ROB_NEW);   /* slot 5: wrapped */
	assert_int_equal(ins(r, 113, 8, 0), RN_ROB_NEW);  /* slot 49: the last of the window */
	assert_int_equal(rn_rob_sack(r, w, 2), 1);
	assert_true(w[0] == (UINT64_C(1) << 1 | UINT64_C(1) << 9 | UINT64_C(1) << 12 |
			     UINT64_C(1) << 18 | UINT64_C(1) << 62));
	rob_del(f);
}

/* 128 slots, base at 100: words straddle the ring's two 64-bit words and its wrap. */
static void test_rob_sack_word_boundary_and_wrap(void **state)
{
	static const uint32_t got[] = { 101, 127, 128, 140, 191, 200, 227 };
	rob_fix *f = rob_new(128, 8, 0);
	rn_rob *r = &f->r;
	uint64_t w[4] = { 0 };

	(void)state;
	advance(r, 100);
	for (size_t i = 0; i < sizeof(got) / sizeof(got[0]); i++)
		assert_int_equal(ins(r, got[i], 8, 0), RN_ROB_NEW);
	assert_int_equal(r->nxt, 100);
	assert_int_equal(r->max, 228);
	assert_int_equal(rn_rob_sack(r, w, 4), 2);
	/* word 0: seq 101..164 */
	assert_true(w[0] == (UINT64_C(1) << 0 | UINT64_C(1) << 26 | UINT64_C(1) << 27 |
			     UINT64_C(1) << 39));
	/* word 1: seq 165..228; 228 is past max */
	assert_true(w[1] == (UINT64_C(1) << 26 | UINT64_C(1) << 35 | UINT64_C(1) << 62));
	rob_del(f);
}

/* Sequence numbers run through 2^32 as if nothing happened. */
static void test_rob_seq_wrap(void **state)
{
	const uint32_t isn = 0xfffffff0;
	rob_fix *f = rob_new(64, 16, isn);
	rn_rob *r = &f->r;
	uint64_t w[1];
	const uint8_t *d;

	(void)state;
	/* all but the first of 32 packets, backwards */
	for (uint32_t i = 31; i >= 1; i--)
		assert_int_equal(ins(r, isn + i, (uint16_t)(1 + i % 16), 0), RN_ROB_NEW);
	assert_int_equal(r->max, 0x10);
	assert_int_equal(rn_rob_sack(r, w, 1), 1);
	assert_true(w[0] == (UINT64_C(1) << 31) - 1);
	assert_int_equal(ins(r, isn, 1, 0), RN_ROB_NEW);
	assert_int_equal(r->nxt, 0x10);
	assert_int_equal(ins(r, 0x10, 0, 1), RN_ROB_NEW);
	assert_true(rn_rob_fin_in_order(r));
	for (uint32_t i = 0; i < 32; i++) {
		uint16_t len = (uint16_t)(1 + i % 16);

		expect_peek(r, isn + i, len, 0);
		rn_rob_consume(r, len);
	}
	assert_int_equal(rn_rob_peek(r, &d), 0);
	/* an old packet from before the wrap is a duplicate, not far ahead */
	assert_int_equal(ins(r, isn + 3, 4, 0), RN_ROB_DUP);
	assert_int_equal(rn_rob_edge(r), 0x10 + 64);
	rob_del(f);
}

/* Peeks and checks that the next bytes are packets first..last (each len bytes). */
static void expect_run(rn_rob *r, uint32_t first, uint32_t last, uint16_t len)
{
	const uint8_t *d = NULL;
	ssize_t n = rn_rob_peek(r, &d);

	assert_int_equal(n, (ssize_t)(last - first + 1) * len);
	for (uint32_t seq = first; seq != last + 1; seq++) {
		uint8_t want[256];

		pkt_bytes(want, seq, len);
		assert_memory_equal(d + (size_t)(seq - first) * len, want, len);
	}
}

/*
 * Full packets are handed over as one run, which ends at a short packet
 * (included), a missing one, the end of the ring's memory and the FIN.
 */
static void test_rob_peek_runs(void **state)
{
	rob_fix *f = rob_new(64, 16, 1000); /* 1000 is slot 40 */
	rn_rob *r = &f->r;
	const uint8_t *d;
	uint8_t want[16 * 4 + 5];

	(void)state;
	for (uint32_t seq = 1000; seq < 1004; seq++)
		assert_int_equal(ins(r, seq, 16, 0), RN_ROB_NEW);
	assert_int_equal(ins(r, 1004, 5, 0), RN_ROB_NEW);
	assert_int_equal(ins(r, 1006, 16, 0), RN_ROB_NEW);
	/* four full packets and the short one: 69 bytes in one piece */
	for (uint32_t k = 0; k < 4; k++)
		pkt_bytes(want + 16 * k, 1000 + k, 16);
	pkt_bytes(want + 64, 1004, 5);
	assert_int_equal(rn_rob_peek(r, &d), 69);
	assert_memory_equal(d, want, 69);
	/* from the middle of a packet, the run goes on to the same end */
	rn_rob_consume(r, 20);
	assert_int_equal(rn_rob_peek(r, &d), 49);
	assert_memory_equal(d, want + 20, 49);
	rn_rob_consume(r, 49);
	assert_int_equal(rn_rob_peek(r, &d), RN_ERR_AGAIN); /* 1005 missing */
	assert_int_equal(ins(r, 1005, 16, 0), RN_ROB_NEW);
	expect_run(r, 1005, 1006, 16); /* 1007 missing */
	rn_rob_consume(r, 32);
	/* a run across the ring's end is cut there: slots 47..63, then 0.. */
	for (uint32_t seq = 1007; seq <= 1030; seq++)
		assert_int_equal(ins(r, seq, 16, 0), RN_ROB_NEW);
	assert_int_equal(ins(r, 1031, 0, 1), RN_ROB_NEW);
	expect_run(r, 1007, 1023, 16);
	rn_rob_consume(r, 17 * 16);
	/* ...and stops before the FIN, which reads as the end afterwards */
	expect_run(r, 1024, 1030, 16);
	rn_rob_consume(r, 7 * 16);
	assert_int_equal(rn_rob_peek(r, &d), 0);
	rob_del(f);
}

/* One peek returns at most RN_ROB_PEEK_MAX bytes, in whole packets. */
static void test_rob_peek_max(void **state)
{
	const uint16_t mss = 1400;
	rob_fix *f = rob_new(512, mss, 0);
	rn_rob *r = &f->r;
	uint8_t pkt[1400];
	const uint8_t *d;
	size_t total = 0;
	ssize_t n;

	(void)state;
	for (uint32_t seq = 0; seq < 400; seq++) {
		memset(pkt, (int)seq, sizeof(pkt));
		assert_int_equal(rn_rob_insert(r, seq, pkt, mss, 0), RN_ROB_NEW);
	}
	n = rn_rob_peek(r, &d);
	assert_int_equal(n, (ssize_t)(RN_ROB_PEEK_MAX / mss) * mss);
	while ((n = rn_rob_peek(r, &d)) > 0) {
		for (ssize_t i = 0; i < n; i += mss)
			assert_int_equal(d[i], (uint8_t)((total + (size_t)i) / mss));
		assert_true(n <= (ssize_t)RN_ROB_PEEK_MAX);
		rn_rob_consume(r, (size_t)n);
		total += (size_t)n;
	}
	assert_int_equal(n, RN_ERR_AGAIN);
	assert_int_equal(total, 400u * mss);
	rob_del(f);
}

/* Out of memory half way: nothing leaks. */
static void test_rob_init_nomem(void **state)
{
	ut_mem um;
	rn_mem mem = ut_mem_of(&um);
	rn_rob r;

	(void)state;
	/* lens and have: the payload storage waits for the first packet */
	for (long ok = 0; ok < 2; ok++) {
		mem = ut_mem_of(&um);
		um.fail_after = ok;
		assert_int_equal(rn_rob_init(&r, &mem, 64, 64, 16, 0), RN_ERR_NOMEM);
		assert_int_equal(um.allocs, ok);
		assert_int_equal(um.frees, ok);
	}
}

/* A ring of 4 packets of 32 bytes in a window of 64 (16-byte packets: peeks return one each). */
static rob_fix *rob_new_growing(uint32_t isn)
{
	rob_fix *f = calloc(1, sizeof(*f));

	assert_non_null(f);
	f->mem = ut_mem_of(&f->um);
	assert_int_equal(rn_rob_init(&f->r, &f->mem, 4, 64, 32, isn), 0);
	return f;
}

/*
 * The window is the whole limit from the start; a packet beyond the ring
 * grows it (doubling until it fits), across the sequence wrap, and every
 * packet already held, the SACK bits and a partial read survive the move.
 */
static void test_rob_grow_across_wrap(void **state)
{
	const uint32_t isn = UINT32_MAX - 2;
	rob_fix *f = rob_new_growing(isn);
	rn_rob *r = &f->r;
	uint64_t w[2];

	(void)state;
	assert_int_equal(rn_rob_edge(r), isn + 64);
	assert_int_equal(ins(r, isn, 16, 0), RN_ROB_NEW);
	assert_int_equal(ins(r, isn + 2, 16, 0), RN_ROB_NEW);
	rn_rob_consume(r, 5); /* a partial read of the first packet */
	assert_int_equal(r->cap, 4);
	/* 10 past base: needs 16 slots */
	assert_int_equal(ins(r, isn + 10, 16, 0), RN_ROB_NEW);
	assert_int_equal(r->cap, 16);
	assert_int_equal(r->grows, 1);
	assert_int_equal(rn_rob_edge(r), isn + 64);   /* the window did not move */
	assert_int_equal(ins(r, isn + 2, 16, 0), RN_ROB_DUP);
	/* SACK after nxt (isn+1 missing): isn+2 and isn+10 */
	assert_int_equal(rn_rob_sack(r, w, 2), 1);
	assert_true(w[0] == ((UINT64_C(1) << 0) | (UINT64_C(1) << 8)));
	expect_peek(r, isn, 16, 5);
	rn_rob_consume(r, 11);
	assert_int_equal(ins(r, isn + 1, 16, 0), RN_ROB_NEW);
	expect_peek(r, isn + 1, 16, 0);
	rn_rob_consume(r, 16);
	expect_peek(r, isn + 2, 16, 0);
	rn_rob_consume(r, 16);
	for (uint32_t s = isn + 3; s != isn + 10; s++)
		assert_int_equal(ins(r, s, 16, 0), RN_ROB_NEW);
	for (uint32_t s = isn + 3; s != isn + 11; s++) {
		expect_peek(r, s, 16, 0);
		rn_rob_consume(r, 16);
	}
	assert_int_equal(rn_rob_peek(r, &(const uint8_t *){ NULL }), RN_ERR_AGAIN);
	rob_del(f);
}

/* Growth stops at the window: beyond it a packet is out, whatever the ring. */
static void test_rob_grow_to_window(void **state)
{
	rob_fix *f = rob_new_growing(100);
	rn_rob *r = &f->r;

	(void)state;
	assert_int_equal(ins(r, 100 + 64, 16, 0), RN_ROB_OUT);
	assert_int_equal(r->cap, 4);
	assert_int_equal(ins(r, 100 + 63, 16, 0), RN_ROB_NEW);
	assert_int_equal(r->cap, 64);
	assert_int_equal(rn_rob_resize(r, 128), RN_ERR_INVAL);
	/* a smaller ring must still hold everything from base to max */
	assert_int_equal(rn_rob_resize(r, 32), RN_ERR_INVAL);
	assert_int_equal(ins(r, 100, 16, 0), RN_ROB_NEW);
	rn_rob_consume(r, 16);
	assert_int_equal(rn_rob_resize(r, 32), RN_ERR_INVAL); /* 101..163 still spans 63 */
	rob_del(f);
}

/*
 * No memory to grow: the packet is refused (the sender resends it), the
 * ring is intact and counts it; once memory is back the resend is stored.
 */
static void test_rob_grow_nomem(void **state)
{
	rob_fix *f = rob_new_growing(7);
	rn_rob *r = &f->r;

	(void)state;
	assert_int_equal(ins(r, 7, 16, 0), RN_ROB_NEW);
	assert_int_equal(ins(r, 9, 16, 0), RN_ROB_NEW);
	for (long ok = 0; ok < 3; ok++) {
		f->um.fail_after = ok;
		assert_int_equal(ins(r, 7 + 20, 16, 0), RN_ROB_NOMEM);
		assert_int_equal(f->um.allocs - f->um.frees, 3); /* the ring's own three */
		assert_int_equal(r->cap, 4);
	}
	assert_int_equal(r->nomem, 3);
	assert_int_equal(r->max, 10);                        /* never recorded */
	f->um.fail_after = -1;
	assert_int_equal(ins(r, 7 + 20, 16, 0), RN_ROB_NEW);
	assert_int_equal(r->cap, 32);
	expect_peek(r, 7, 16, 0);
	rn_rob_consume(r, 16);
	assert_int_equal(ins(r, 8, 16, 0), RN_ROB_NEW);
	expect_peek(r, 8, 16, 0);
	rn_rob_consume(r, 16);
	expect_peek(r, 9, 16, 0);
	rob_del(f);
}

/* An emptied ring goes back to a small one and keeps working. */
static void test_rob_shrink(void **state)
{
	rob_fix *f = rob_new_growing(UINT32_MAX - 20);
	rn_rob *r = &f->r;
	const uint8_t *d;

	(void)state;
	for (uint32_t s = UINT32_MAX - 20; s != 20; s++)
		assert_int_equal(ins(r, s, 16, 0), RN_ROB_NEW);
	assert_int_equal(r->cap, 64);
	while (rn_rob_peek(r, &d) > 0)
		rn_rob_consume(r, 16);
	assert_int_equal(rn_rob_resize(r, 4), 0);
	assert_int_equal(r->cap, 4);
	assert_int_equal(ins(r, 21, 16, 0), RN_ROB_NEW);
	assert_int_equal(ins(r, 20, 16, 0), RN_ROB_NEW);
	expect_peek(r, 20, 16, 0);
	rn_rob_consume(r, 16);
	expect_peek(r, 21, 16, 0);
	rob_del(f);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_rob_in_order),
		cmocka_unit_test(test_rob_out_of_order),
		cmocka_unit_test(test_rob_ready),
		cmocka_unit_test(test_rob_duplicates),
		cmocka_unit_test(test_rob_window),
		cmocka_unit_test(test_rob_window_moves),
		cmocka_unit_test(test_rob_too_long),
		cmocka_unit_test(test_rob_partial_reads),
		cmocka_unit_test(test_rob_fin_before_last_data),
		cmocka_unit_test(test_rob_fin_rules),
		cmocka_unit_test(test_rob_fin_below_max),
		cmocka_unit_test(test_rob_sack_bits),
		cmocka_unit_test(test_rob_sack_ring_wrap_64),
		cmocka_unit_test(test_rob_sack_word_boundary_and_wrap),
		cmocka_unit_test(test_rob_seq_wrap),
		cmocka_unit_test(test_rob_peek_runs),
		cmocka_unit_test(test_rob_peek_max),
		cmocka_unit_test(test_rob_init_nomem),
		cmocka_unit_test(test_rob_grow_across_wrap),
		cmocka_unit_test(test_rob_grow_to_window),
		cmocka_unit_test(test_rob_grow_nomem),
		cmocka_unit_test(test_rob_shrink),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
