/*
 * test_etimer.c - the engine's timer heap (src/engine/rn_etimer.c) without
 * its timerfd: timers set, moved and unset at literal times, then run.
 *
 * Every timer set fires exactly once, earliest first, only once its time has
 * come; a moved one fires at its last time, an unset one never; one set again
 * from its own fire function for a time already past fires at the next run.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <cmocka.h>

#include "rn_etimer.h"
#include "rn_host_lock.h"

#define N 2000

typedef struct tt {
	rn_etimer t;
	uint64_t want;  /* when it should fire, UINT64_MAX: never */
	int fired;
	uint64_t fired_at;
} tt;

static tt g_t[N];
static uint64_t g_last; /* the deadline of the last timer fired: never decreasing */
static int g_again;     /* test_rearm: times the timer set itself again */

static void on_fire(rn_etimer *t, uint64_t now)
{
	tt *x = (tt *)((char *)t - offsetof(tt, t));

	x->fired++;
	x->fired_at = now;
	assert_true(x->want <= now);
	assert_true(x->want >= g_last);
	g_last = x->want;
	assert_int_equal(t->at, UINT64_MAX); /* unset while it fires */
}

static uint64_t rnd(uint64_t n)
{
	return ((uint64_t)random() << 31 ^ (uint64_t)random()) % n;
}

/* Runs from time 0 to end in steps; checks each fired once, in time. */
static void run_until(uint64_t end, uint64_t step)
{
	for (uint64_t now = 0; now <= end; now += step) {
		rn_etimer_run(now);
		for (int i = 0; i < N; i++)
			if (g_t[i].want <= now)
				assert_int_equal(g_t[i].fired, 1);
			else
				assert_int_equal(g_t[i].fired, 0);
		if (rn_etimer_next() != UINT64_MAX)
			assert_true(rn_etimer_next() > now);
	}
}

static void test_order(void **state)
{
	(void)state;
	srandom(7);
	g_last = 0;
	rn_host_lock();
	for (int i = 0; i < N; i++) {
		rn_etimer_prep(&g_t[i].t, on_fire);
		g_t[i].fired = 0;
		g_t[i].want = rnd(1000000);
		rn_etimer_set(&g_t[i].t, g_t[i].want);
	}
	/* move half of them, earlier or later, some twice; unset a tenth */
	for (int i = 0; i < N; i += 2) {
		g_t[i].want = rnd(1000000);
		rn_etimer_set(&g_t[i].t, g_t[i].want);
		if (i % 6 == 0) {
			g_t[i].want = rnd(1000000);
			rn_etimer_set(&g_t[i].t, g_t[i].want);
		}
	}
	for (int i = 1; i < N; i += 10) {
		g_t[i].want = UINT64_MAX;
		rn_etimer_set(&g_t[i].t, UINT64_MAX);
		assert_int_equal(g_t[i].t.pos, 0);
	}
	run_until(1000000, 997);
	assert_int_equal(rn_etimer_next(), UINT64_MAX);
	for (int i = 0; i < N; i++)
		assert_int_equal(g_t[i].fired, g_t[i].want == UINT64_MAX ? 0 : 1);
	rn_host_unlock();
}

static rn_etimer g_self;

static void on_rearm(rn_etimer *t, uint64_t now)
{
	if (g_again++ < 3)
		rn_etimer_set(t, now - 1); /* already past */
}

static void test_rearm(void **state)
{
	(void)state;
	rn_host_lock();
	g_again = 0;
	rn_etimer_prep(&g_self, on_rearm);
	rn_etimer_set(&g_self, 100);
	assert_int_equal(rn_etimer_run(99), 0);
	/* one firing a run, however often it sets itself in the past */
	assert_int_equal(rn_etimer_run(100), 1);
	assert_int_equal(g_again, 1);
	assert_int_equal(rn_etimer_run(101), 1);
	assert_int_equal(rn_etimer_run(102), 1);
	assert_int_equal(rn_etimer_run(103), 1);
	assert_int_equal(g_again, 4);
	assert_int_equal(rn_etimer_run(104), 0);
	assert_int_equal(rn_etimer_next(), UINT64_MAX);
	rn_host_unlock();
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_order),
		cmocka_unit_test(test_rearm),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
