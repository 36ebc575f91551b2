/*
 * test_sndq.c - the send ring: packetization, coalescing, space, the FIN,
 * the FIFO of packets to resend, and resizing (growth across the sequence
 * wrap, its limits, running out of memory).
 *
 * The connection moves the marks itself (nxt when a packet goes out, una on
 * a cumulative ACK, flags on a selective one); the helpers below do the same
 * so the ring is tested as the connection uses it.
 */
#include "unit_common.h"

#include "rn_sndq.h"

enum { MSS = 100 };

typedef struct sq_fix {
	ut_mem um;
	rn_mem mem;
	rn_sndq q;
} sq_fix;

static sq_fix *sq_new(uint32_t slots, uint32_t isn)
{
	sq_fix *f = calloc(1, sizeof(*f));

	assert_non_null(f);
	f->mem = ut_mem_of(&f->um);
	assert_int_equal(rn_sndq_init(&f->q, &f->mem, slots, slots, MSS, isn), 0);
	return f;
}

static void sq_del(sq_fix *f)
{
	rn_sndq_free(&f->q, &f->mem);
	assert_int_equal(f->um.allocs, f->um.frees);
	free(f);
}

static size_t wr(rn_sndq *q, uint64_t off, size_t n)
{
	uint8_t buf[8192];

	assert_true(n <= sizeof(buf));
	ut_fill(buf, 7, off, n);
	return rn_sndq_write(q, buf, n);
}

/* Packet seq holds stream bytes [off, off + len). */
static void expect_pkt(rn_sndq *q, uint32_t seq, uint64_t off, uint16_t len)
{
	uint8_t want[MSS];

	ut_fill(want, 7, off, len);
	assert_int_equal(rn_sndq_slot(q, seq)->len, len);
	assert_memory_equal(rn_sndq_data(q, seq), want, len);
}

/* What write_data does: the packet leaves and may no longer grow. */
static void send_all(rn_sndq *q)
{
	q->nxt = q->end;
}

/* What recv_ack does for a cumulative ACK up to (not including) seq. */
static void ack_upto(rn_sndq *q, uint32_t seq)
{
	while (q->una != seq) {
		rn_sndq_slot(q, q->una)->flags &= (uint8_t)~(RN_SS_ACKED | RN_SS_LOST);
		q->una++;
	}
}

static void test_sndq_packetize(void **state)
{
	sq_fix *f = sq_new(64, 500);
	rn_sndq *q = &f->q;

	(void)state;
	assert_int_equal(wr(q, 0, 250), 250);
	assert_int_equal(q->end - q->una, 3);
	expect_pkt(q, 500, 0, 100);
	expect_pkt(q, 501, 100, 100);
	expect_pkt(q, 502, 200, 50);
	assert_int_equal(q->bytes_written, 250);
	assert_int_equal(q->nxt, 500);
	sq_del(f);
}

/* Small writes fill the unsent last packet instead of making tiny ones. */
static void test_sndq_coalesce(void **state)
{
	sq_fix *f = sq_new(64, 0);
	rn_sndq *q = &f->q;

	(void)state;
	assert_int_equal(wr(q, 0, 10), 10);
	assert_int_equal(wr(q, 10, 20), 20);
	assert_int_equal(q->end, 1);
	expect_pkt(q, 0, 0, 30);
	/* crossing mss: the rest starts the next packet */
	assert_int_equal(wr(q, 30, 90), 90);
	assert_int_equal(q->end, 2);
	expect_pkt(q, 0, 0, 100);
	expect_pkt(q, 1, 100, 20);
	/* once sent, a packet is frozen: new bytes go to a new one */
	send_all(q);
	assert_int_equal(wr(q, 120, 5), 5);
	assert_int_equal(q->end, 3);
	expect_pkt(q, 1, 100, 20);
	expect_pkt(q, 2, 120, 5);
	sq_del(f);
}

/* rn_sndq_bytes_from: the payload not acknowledged (from una) and never sent (from nxt). */
static void test_sndq_bytes_from(void **state)
{
	sq_fix *f = sq_new(64, 0);
	rn_sndq *q = &f->q;

	(void)state;
	assert_int_equal(rn_sndq_bytes_from(q, q->una), 0);
	assert_int_equal(wr(q, 0, 250), 250);
	assert_int_equal(rn_sndq_bytes_from(q, q->una), 250);
	assert_int_equal(rn_sndq_bytes_from(q, q->nxt), 250);
	send_all(q);
	assert_int_equal(wr(q, 250, 30), 30);
	assert_int_equal(rn_sndq_bytes_from(q, q->una), 280);
	assert_int_equal(rn_sndq_bytes_from(q, q->nxt), 30);
	ack_upto(q, 2); /* two full packets acknowledged */
	assert_int_equal(rn_sndq_bytes_from(q, q->una), 80);
	assert_int_equal(rn_sndq_fin(q), 0);
	assert_int_equal(rn_sndq_bytes_from(q, q->una), 80);
	sq_del(f);
}

static void test_sndq_space(void **state)
{
	sq_fix *f = sq_new(64, 0);
	rn_sndq *q = &f->q;
	uint8_t one = 1;

	(void)state;
	assert_int_equal(rn_sndq_space(q), 64 * MSS);
	assert_int_equal(wr(q, 0, 30), 30);
	/* 63 empty slots and the 70 bytes left in the growing one */
	assert_int_equal(rn_sndq_space(q), 63 * MSS + 70);
	send_all(q);
	/* the sent packet cannot grow any more */
	assert_int_equal(rn_sndq_space(q), 63 * MSS);
	/* a write larger than the space takes what fits */
	assert_int_equal(wr(q, 30, 63 * MSS + 1), 63 * MSS);
	assert_int_equal(rn_sndq_space(q), 0);
	assert_int_equal(rn_sndq_write(q, &one, 1), 0);
	/* an ACK frees a slot */
	ack_upto(q, 1);
	assert_int_equal(rn_sndq_space(q), MSS);
	assert_int_equal(wr(q, 30 + 63 * MSS, MSS), MSS);
	assert_int_equal(q->end - q->una, 64);
	assert_int_equal(rn_sndq_space(q), 0);
	sq_del(f);
}

static void test_sndq_fin(void **state)
{
	sq_fix *f = sq_new(64, 9);
	rn_sndq *q = &f->q;
	uint8_t one = 1;

	(void)state;
	assert_int_equal(wr(q, 0, 30), 30);
	assert_int_equal(rn_sndq_fin(q), 0);
	/* the FIN is its own empty packet after the data, not a flag on it */
	assert_int_equal(q->end, 11);
	assert_int_equal(rn_sndq_slot(q, 10)->flags, RN_SS_FIN);
	assert_int_equal(rn_sndq_slot(q, 10)->len, 0);
	expect_pkt(q, 9, 0, 30);
	assert_true(q->fin_queued);
	/* nothing after the FIN */
	assert_int_equal(rn_sndq_space(q), 0);
	assert_int_equal(rn_sndq_write(q, &one, 1), 0);
	/* a second FIN is the same FIN */
	assert_int_equal(rn_sndq_fin(q), 0);
	assert_int_equal(q->end, 11);
	sq_del(f);
}

/* A full ring has no slot for the FIN yet; it goes in once an ACK frees one. */
static void test_sndq_fin_full(void **state)
{
	sq_fix *f = sq_new(64, 0);
	rn_sndq *q = &f->q;

	(void)state;
	assert_int_equal(wr(q, 0, 64 * MSS), 64 * MSS);
	assert_int_equal(rn_sndq_fin(q), RN_ERR_AGAIN);
	assert_false(q->fin_queued);
	send_all(q);
	ack_upto(q, 1);
	assert_int_equal(rn_sndq_fin(q), 0);
	assert_int_equal(q->end, 65);
	assert_int_equal(rn_sndq_slot(q, 64)->flags, RN_SS_FIN);
	sq_del(f);
}

static void test_sndq_lost_fifo(void **state)
{
	sq_fix *f = sq_new(64, 0xfffffffc);
	rn_sndq *q = &f->q;
	uint32_t seq;

	(void)state;
	assert_int_equal(wr(q, 0, 10 * MSS), 10 * MSS);
	send_all(q);
	assert_true(rn_sndq_lost_empty(q));
	assert_int_equal(rn_sndq_lost_pop(q, &seq), 0);
	rn_sndq_lost_push(q, 0xfffffffe);
	rn_sndq_lost_push(q, 0xfffffffd);
	rn_sndq_lost_push(q, 2);
	/* already queued: not twice */
	rn_sndq_lost_push(q, 0xfffffffe);
	assert_true(rn_sndq_slot(q, 2)->flags & RN_SS_LOST);
	/* popped in the order they were found lost, across the wrap */
	assert_int_equal(rn_sndq_lost_pop(q, &seq), 1);
	assert_int_equal(seq, 0xfffffffe);
	assert_false(rn_sndq_slot(q, seq)->flags & RN_SS_LOST);
	assert_int_equal(rn_sndq_lost_pop(q, &seq), 1);
	assert_int_equal(seq, 0xfffffffd);
	assert_int_equal(rn_sndq_lost_pop(q, &seq), 1);
	assert_int_equal(seq, 2);
	assert_int_equal(rn_sndq_lost_pop(q, &seq), 0);
	assert_true(rn_sndq_lost_empty(q));
	/* popped, so it may be lost again */
	rn_sndq_lost_push(q, 2);
	assert_int_equal(rn_sndq_lost_pop(q, &seq), 1);
	assert_int_equal(seq, 2);
	sq_del(f);
}

/* Packets acknowledged after they were queued are not resent. */
static void test_sndq_lost_skips_acked(void **state)
{
	sq_fix *f = sq_new(64, 100);
	rn_sndq *q = &f->q;
	uint32_t seq;

	(void)state;
	assert_int_equal(wr(q, 0, 10 * MSS), 10 * MSS);
	send_all(q);
	for (uint32_t s = 100; s < 106; s++)
		rn_sndq_lost_push(q, s);
	/* 100 and 101 cumulatively acked, 103 selectively */
	ack_upto(q, 102);
	rn_sndq_slot(q, 103)->flags |= RN_SS_ACKED;
	/* a selectively acked packet is never queued */
	rn_sndq_slot(q, 107)->flags |= RN_SS_ACKED;
	rn_sndq_lost_push(q, 107);
	assert_false(rn_sndq_slot(q, 107)->flags & RN_SS_LOST);
	assert_int_equal(rn_sndq_lost_pop(q, &seq), 1);
	assert_int_equal(seq, 102);
	assert_int_equal(rn_sndq_lost_pop(q, &seq), 1);
	assert_int_equal(seq, 104);
	/* the skipped entry no longer counts as queued */
	assert_false(rn_sndq_slot(q, 103)->flags & RN_SS_LOST);
	assert_int_equal(rn_sndq_lost_pop(q, &seq), 1);
	assert_int_equal(seq, 105);
	assert_int_equal(rn_sndq_lost_pop(q, &seq), 0);
	sq_del(f);
}

/*
 * Stale entries (packets acked while queued) pile up when nobody pops; the
 * FIFO holds twice the ring and compacts when full.  Over 3 rings' worth of
 * pushes, every live entry must still come out, once, in order.
 */
static void test_sndq_lost_compaction(void **state)
{
	const uint32_t slots = 64;
	sq_fix *f = sq_new(slots, 0xffffff00);
	rn_sndq *q = &f->q;
	uint64_t off = 0;
	uint32_t seq, pushes = 0;

	(void)state;
	/* two full rings lost and then acked without a pop: 128 stale entries */
	for (int round = 0; round < 2; round++) {
		assert_int_equal(wr(q, off, slots * MSS), slots * MSS);
		off += slots * MSS;
		send_all(q);
		for (uint32_t s = q->una; s != q->nxt; s++, pushes++)
			rn_sndq_lost_push(q, s);
		ack_upto(q, q->nxt);
	}
	assert_int_equal(q->lost_tail - q->lost_head, 2 * slots);
	/* a ring of live ones: the first push compacts, dropping all the stale */
	assert_int_equal(wr(q, off, slots * MSS), slots * MSS);
	send_all(q);
	for (uint32_t s = q->una; s != q->nxt; s++, pushes++)
		rn_sndq_lost_push(q, s);
	assert_true(pushes > 2 * slots);
	assert_int_equal(q->lost_tail - q->lost_head, slots);
	/* half of them acked while queued (stale now), then 32 new ones lost */
	ack_upto(q, q->una + slots / 2);
	for (uint32_t i = 0; i < slots / 2; i++) {
		assert_int_equal(wr(q, off, MSS), MSS);
		off += MSS;
	}
	send_all(q);
	for (uint32_t s = q->nxt - slots / 2; s != q->nxt; s++)
		rn_sndq_lost_push(q, s);
	/* pops skip the stale half: the live ones come out in order */
	for (uint32_t i = 0; i < slots; i++) {
		assert_int_equal(rn_sndq_lost_pop(q, &seq), 1);
		assert_int_equal(seq, q->una + i);
	}
	assert_int_equal(rn_sndq_lost_pop(q, &seq), 0);
	sq_del(f);
}

/* The FIFO filled exactly by live and stale entries, then one push more. */
static void test_sndq_lost_compaction_keeps_live(void **state)
{
	const uint32_t slots = 64;
	sq_fix *f = sq_new(slots, 0);
	rn_sndq *q = &f->q;
	uint32_t seq, first_live;

	(void)state;
	/* 64 stale entries */
	assert_int_equal(wr(q, 0, slots * MSS), slots * MSS);
	send_all(q);
	for (uint32_t s = 0; s < slots; s++)
		rn_sndq_lost_push(q, s);
	ack_upto(q, slots);
	/* 64 live ones: the FIFO is full */
	assert_int_equal(wr(q, 0, slots * MSS), slots * MSS);
	send_all(q);
	for (uint32_t s = slots; s < 2 * slots; s++)
		rn_sndq_lost_push(q, s);
	assert_int_equal(q->lost_tail - q->lost_head, 2 * slots);
	/* acking the oldest live one makes room for one new packet */
	ack_upto(q, slots + 1);
	first_live = slots + 1;
	assert_int_equal(wr(q, 0, MSS), MSS);
	send_all(q);
	rn_sndq_lost_push(q, 2 * slots);
	/* compacted: 63 live + the new one */
	assert_int_equal(q->lost_tail - q->lost_head, slots);
	for (uint32_t s = first_live; s <= 2 * slots; s++) {
		assert_int_equal(rn_sndq_lost_pop(q, &seq), 1);
		assert_int_equal(seq, s);
	}
	assert_int_equal(rn_sndq_lost_pop(q, &seq), 0);
	sq_del(f);
}

static void test_sndq_init_nomem(void **state)
{
	ut_mem um;
	rn_mem mem;
	rn_sndq q;

	(void)state;
	/* the slots and the lost FIFO: the payload storage waits for the first write */
	for (long ok = 0; ok < 2; ok++) {
		mem = ut_mem_of(&um);
		um.fail_after = ok;
		assert_int_equal(rn_sndq_init(&q, &mem, 64, 64, MSS, 0), RN_ERR_NOMEM);
		assert_int_equal(um.frees, um.allocs);
	}
}

/* A ring of 4 packets that may grow to 16, its sequence numbers about to wrap. */
static sq_fix *sq_new_growing(uint32_t isn)
{
	sq_fix *f = calloc(1, sizeof(*f));

	assert_non_null(f);
	f->mem = ut_mem_of(&f->um);
	assert_int_equal(rn_sndq_init(&f->q, &f->mem, 4, 16, MSS, isn), 0);
	return f;
}

/*
 * Growing moves every packet, the marks, the per-slot state and the lost
 * FIFO, across the wrap of the sequence space; the new room is there at once.
 */
static void test_sndq_grow_across_wrap(void **state)
{
	const uint32_t isn = UINT32_MAX - 1; /* packets 0xfffffffe, 0xffffffff, 0, 1 */
	sq_fix *f = sq_new_growing(isn);
	rn_sndq *q = &f->q;
	uint32_t seq;

	(void)state;
	assert_int_equal(wr(q, 0, 3 * MSS + 40), 3 * MSS + 40); /* the 4th packet half full */
	q->nxt = isn + 3;                                   /* three sent, the 4th open */
	rn_sndq_slot(q, isn + 1)->flags |= RN_SS_ACKED;      /* a selective ACK */
	rn_sndq_slot(q, isn)->flags |= RN_SS_FLIGHT;
	rn_sndq_slot(q, isn)->tx_idx = 77;
	rn_sndq_lost_push(q, isn + 2);
	assert_int_equal(rn_sndq_space(q), MSS - 40);

	assert_int_equal(rn_sndq_resize(q, &f->mem, 8), 0);
	assert_int_equal(q->slots, 8);
	assert_int_equal(q->una, isn);
	assert_int_equal(q->nxt, isn + 3);
	assert_int_equal(q->end, isn + 4);
	for (uint32_t i = 0; i < 3; i++)
		expect_pkt(q, isn + i, (uint64_t)i * MSS, MSS);
	expect_pkt(q, isn + 3, 3 * MSS, 40);
	assert_true(rn_sndq_slot(q, isn + 1)->flags & RN_SS_ACKED);
	assert_int_equal(rn_sndq_slot(q, isn)->tx_idx, 77);
	/* the unsent last packet still fills up, then new packets follow it */
	assert_int_equal(rn_sndq_space(q), 4 * MSS + (MSS - 40));
	assert_int_equal(wr(q, 3 * MSS + 40, 4 * MSS + 60), 4 * MSS + 60);
	expect_pkt(q, isn + 3, 3 * MSS, MSS);
	for (uint32_t i = 4; i < 8; i++)
		expect_pkt(q, isn + i, (uint64_t)i * MSS, MSS);
	assert_int_equal(rn_sndq_space(q), 0);
	/* the lost packet is still queued, and only once */
	assert_int_equal(rn_sndq_lost_pop(q, &seq), 1);
	assert_int_equal(seq, isn + 2);
	assert_int_equal(rn_sndq_lost_pop(q, &seq), 0);
	sq_del(f);
}

/* The ring never grows past its limit nor shrinks below what it holds. */
static void test_sndq_resize_limits(void **state)
{
	sq_fix *f = sq_new_growing(1000);
	rn_sndq *q = &f->q;

	(void)state;
	assert_int_equal(rn_sndq_resize(q, &f->mem, 32), RN_ERR_INVAL); /* past max_slots */
	assert_int_equal(rn_sndq_resize(q, &f->mem, 12), RN_ERR_INVAL); /* not a power of two */
	assert_int_equal(rn_sndq_resize(q, &f->mem, 16), 0);
	assert_int_equal(rn_sndq_resize(q, &f->mem, 16), 0);            /* already that size */
	assert_int_equal(wr(q, 0, 16 * MSS + 1), 16 * MSS);                /* full at the limit */
	assert_int_equal(rn_sndq_resize(q, &f->mem, 8), RN_ERR_INVAL);  /* holds 16 packets */
	/* everything acknowledged: it may go back to a small ring */
	q->nxt = q->una = q->end;
	assert_int_equal(rn_sndq_resize(q, &f->mem, 4), 0);
	assert_int_equal(rn_sndq_space(q), 4 * MSS);
	assert_int_equal(wr(q, 16 * MSS, 2 * MSS), 2 * MSS);
	expect_pkt(q, 1017, 17 * MSS, MSS);
	sq_del(f);
}

/* Out of memory while growing: the ring is left exactly as it was, nothing leaks. */
static void test_sndq_resize_nomem(void **state)
{
	sq_fix *f = sq_new_growing(5);
	rn_sndq *q = &f->q;

	(void)state;
	assert_int_equal(wr(q, 0, 4 * MSS), 4 * MSS);
	q->nxt = q->end;
	rn_sndq_lost_push(q, 6);
	for (long ok = 0; ok < 3; ok++) {
		f->um.fail_after = ok;
		assert_int_equal(rn_sndq_resize(q, &f->mem, 16), RN_ERR_NOMEM);
		assert_int_equal(f->um.allocs - f->um.frees, 3); /* the ring's own three */
		assert_int_equal(q->slots, 4);
		for (uint32_t i = 0; i < 4; i++)
			expect_pkt(q, 5 + i, (uint64_t)i * MSS, MSS);
	}
	f->um.fail_after = -1;
	assert_int_equal(rn_sndq_resize(q, &f->mem, 16), 0);
	expect_pkt(q, 8, 3 * MSS, MSS);
	{
		uint32_t seq;

		assert_int_equal(rn_sndq_lost_pop(q, &seq), 1);
		assert_int_equal(seq, 6);
	}
	sq_del(f);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_sndq_packetize),
		cmocka_unit_test(test_sndq_coalesce),
		cmocka_unit_test(test_sndq_bytes_from),
		cmocka_unit_test(test_sndq_space),
		cmocka_unit_test(test_sndq_fin),
		cmocka_unit_test(test_sndq_fin_full),
		cmocka_unit_test(test_sndq_lost_fifo),
		cmocka_unit_test(test_sndq_lost_skips_acked),
		cmocka_unit_test(test_sndq_lost_compaction),
		cmocka_unit_test(test_sndq_lost_compaction_keeps_live),
		cmocka_unit_test(test_sndq_init_nomem),
		cmocka_unit_test(test_sndq_grow_across_wrap),
		cmocka_unit_test(test_sndq_resize_limits),
		cmocka_unit_test(test_sndq_resize_nomem),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
