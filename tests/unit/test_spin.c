/*
 * test_spin.c - the busy-poll window (src/engine/rn_spin.h) with literal
 * wait times: it grows while waits end soon after the thread fell asleep,
 * holds while polling catches the event, shrinks to nothing when waits are
 * long, and a fixed RI2N_BUSY_POLL_US or 0 is never changed by learning.
 */
#include "unit_common.h"

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
	assert_true(steps <= 5); /* 100 us to 0 in a handful of long waits */
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

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_spin_grows_for_quick_partner),
		cmocka_unit_test(test_spin_ceiling),
		cmocka_unit_test(test_spin_shrinks_on_long_waits),
		cmocka_unit_test(test_spin_boundary),
		cmocka_unit_test(test_spin_fixed_and_off),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
