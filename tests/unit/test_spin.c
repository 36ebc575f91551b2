/*
 * test_spin.c - the busy-poll window (src/engine/rn_spin.h) with literal
 * wait times: it grows while waits end soon after the thread fell asleep,
 * holds while polling catches the event, shrinks to nothing when waits are
 * long, and a fixed RI2N_BUSY_POLL_US or 0 is never changed by learning.
 * Also the engine's hand-off after inline waits (src/engine/rn_handoff.h):
 * 1 ms for a ping-pong, twice an event loop's turn, never over 10 ms.
 */
#include "unit_common.h"

#include "rn_handoff.h"
#include "rn_spin.h"

#define US INT64_C(1000)

/* A ping-pong partner answering in 30 us: the window doubles until polling covers it. */
static void test_spin_grows_for_quick_partner(void **state)
{
	rn_spin s = { 0 };
	int64_t seen[8];

	(void)state;
	assert_int_equal(rn_spin_window(&s, RN_BUSY_AUTO), 0);
	for (int i = 0; i < 8; i++) {
		int64_t w = rn_spin_window(&s, RN_BUSY_AUTO);
		int caught = w >= 30 * US;

		/* slept: waking the CPU made it 70 us; polled: the answer came at 30 */
		rn_spin_update(&s, RN_BUSY_AUTO, caught ? 30 * US : 70 * US, caught);
		seen[i] = rn_spin_window(&s, RN_BUSY_AUTO);
	}
	assert_int_equal(seen[0], RN_SPIN_MIN_NS);
	assert_int_equal(seen[1], 2 * RN_SPIN_MIN_NS);
	assert_int_equal(seen[2], 4 * RN_SPIN_MIN_NS);
	assert_int_equal(seen[3], 8 * RN_SPIN_MIN_NS); /* 32 us: covers the 30 */
	for (int i = 4; i < 8; i++)
		assert_int_equal(seen[i], 8 * RN_SPIN_MIN_NS); /* caught: holds */
}

/* Never above the ceiling, however quick the waits. */
static void test_spin_ceiling(void **state)
{
	rn_spin s = { 0 };

	(void)state;
	for (int i = 0; i < 40; i++)
		rn_spin_update(&s, RN_BUSY_AUTO, rn_spin_window(&s, RN_BUSY_AUTO) + 1, 0);
	assert_int_equal(rn_spin_window(&s, RN_BUSY_AUTO), RN_SPIN_MAX_NS);
}

/* Long waits (a request every 10 ms) halve it to zero: an idle thread does not spin. */
static void test_spin_shrinks_on_long_waits(void **state)
{
	rn_spin s = { RN_SPIN_MAX_NS };
	int steps = 0;

	(void)state;
	while (rn_spin_window(&s, RN_BUSY_AUTO) > 0 && steps < 100) {
		int64_t before = rn_spin_window(&s, RN_BUSY_AUTO);

		rn_spin_update(&s, RN_BUSY_AUTO, 10000 * US, 0);
		assert_true(rn_spin_window(&s, RN_BUSY_AUTO) <= before / 2);
		steps++;
	}
	assert_int_equal(rn_spin_window(&s, RN_BUSY_AUTO), 0);
	assert_true(steps <= 7); /* 400 us to 0 in a handful of long waits (4 us is the least) */
	/* and stays there while waits stay long */
	rn_spin_update(&s, RN_BUSY_AUTO, 10000 * US, 0);
	assert_int_equal(rn_spin_window(&s, RN_BUSY_AUTO), 0);
}

/* Just beyond reach (window + ceiling + 1 ns) shrinks; just within grows. */
static void test_spin_boundary(void **state)
{
	rn_spin s = { 16 * US };

	(void)state;
	rn_spin_update(&s, RN_BUSY_AUTO, 16 * US + RN_SPIN_MAX_NS, 0);
	assert_int_equal(rn_spin_window(&s, RN_BUSY_AUTO), 32 * US);
	rn_spin_update(&s, RN_BUSY_AUTO, 32 * US + RN_SPIN_MAX_NS + 1, 0);
	assert_int_equal(rn_spin_window(&s, RN_BUSY_AUTO), 16 * US);
}

/* A fixed setting and "off" ignore what the waits were. */
static void test_spin_fixed_and_off(void **state)
{
	rn_spin s = { 0 };

	(void)state;
	assert_int_equal(rn_spin_window(&s, 50), 50 * US);
	assert_int_equal(rn_spin_window(&s, 0), 0);
	for (int i = 0; i < 5; i++) {
		rn_spin_update(&s, 50, 60 * US, 0);
		rn_spin_update(&s, 0, 60 * US, 0);
	}
	assert_int_equal(s.ns, 0);
	assert_int_equal(rn_spin_window(&s, 50), 50 * US);
	assert_int_equal(rn_spin_window(&s, 0), 0);
}

#define MS_NS UINT64_C(1000000)

/* A ping-pong comes back to its wait within microseconds: the floor, 1 ms. */
static void test_handoff_pingpong(void **state)
{
	uint64_t turn = 0, t = 5 * MS_NS;

	(void)state;
	rn_handoff_turn(&turn, 0, t); /* the first wait: no turn before it */
	assert_int_equal(turn, 0);
	assert_int_equal(rn_handoff_ns(turn), RN_HANDOFF_NS);
	for (int i = 0; i < 100; i++) {
		rn_handoff_turn(&turn, t, t + 20000); /* 20 us of work between waits */
		t += 50000;
	}
	assert_int_equal(turn, 20000);
	assert_int_equal(rn_handoff_ns(turn), RN_HANDOFF_NS);
}

/* An event loop whose turn lasts 3 ms: the engine waits 6 ms; a turn of 8 ms: 10 ms. */
static void test_handoff_event_loop(void **state)
{
	uint64_t turn = 0, t = MS_NS;

	(void)state;
	for (int i = 0; i < 50; i++, t += 4 * MS_NS)
		rn_handoff_turn(&turn, t, t + 3 * MS_NS);
	assert_int_equal(turn, 3 * MS_NS);
	assert_int_equal(rn_handoff_ns(turn), 6 * MS_NS);
	for (int i = 0; i < 50; i++, t += 9 * MS_NS)
		rn_handoff_turn(&turn, t, t + 8 * MS_NS);
	assert_true(turn > 7 * MS_NS && turn <= 8 * MS_NS);
	assert_int_equal(rn_handoff_ns(turn), RN_HANDOFF_MAX_NS);
}

/* The engine's look while threads keep the port: 1, 2, 4, 8, 16 ms, then every 16 ms. */
static void test_handoff_check_backs_off(void **state)
{
	const uint64_t want[] = { 1, 2, 4, 8, 16, 16, 16 };
	uint64_t c = 0;

	(void)state;
	for (size_t i = 0; i < sizeof(want) / sizeof(want[0]); i++) {
		c = rn_handoff_check(c);
		assert_int_equal(c, want[i] * MS_NS);
	}
	assert_int_equal(c, RN_CHECK_MAX_NS);
	assert_int_equal(rn_handoff_check(0), RN_HANDOFF_NS); /* after the engine took it back */
	assert_int_equal(rn_handoff_check(RN_CHECK_MAX_NS - 1), RN_CHECK_MAX_NS);
}

/* A second's pause counts as 10 ms; quick turns bring the floor back within a few dozen waits. */
static void test_handoff_pause_and_back(void **state)
{
	uint64_t turn = 0, t = MS_NS;
	int waits = 0;

	(void)state;
	rn_handoff_turn(&turn, t, t + 1000 * MS_NS);
	assert_int_equal(turn, RN_HANDOFF_MAX_NS);
	assert_int_equal(rn_handoff_ns(turn), RN_HANDOFF_MAX_NS);
	t += 1000 * MS_NS;
	while (rn_handoff_ns(turn) > RN_HANDOFF_NS && waits < 1000) {
		rn_handoff_turn(&turn, t, t + 10000);
		t += 20000;
		waits++;
	}
	assert_true(waits > 2 && waits < 20);
	/* a clock that did not move (two waits in the same ns) changes nothing */
	rn_handoff_turn(&turn, t, t);
	assert_int_equal(rn_handoff_ns(turn), RN_HANDOFF_NS);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_spin_grows_for_quick_partner),
		cmocka_unit_test(test_spin_ceiling),
		cmocka_unit_test(test_spin_shrinks_on_long_waits),
		cmocka_unit_test(test_spin_boundary),
		cmocka_unit_test(test_spin_fixed_and_off),
		cmocka_unit_test(test_handoff_pingpong),
		cmocka_unit_test(test_handoff_event_loop),
		cmocka_unit_test(test_handoff_pause_and_back),
		cmocka_unit_test(test_handoff_check_backs_off),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
