/*
 * test_hkeep.c - the polling drivers' keeper thread (src/host/rn_hkeep.c)
 * on a clock the test sets: it passes while the driver is quiet and never
 * once the driver passed lately, never while the driver's lock is busy,
 * never after a stop seen under the lock (which it still releases), and
 * starts nothing without a period.  Waits are bounded (2 s), never timed.
 */
#include "unit_common.h"

#include <time.h>

#include "rn_hkeep.h"

#define WAIT_LOOKS 2000 /* 1 ms each: a 2 s bound on a keeper of 1 ms */

typedef struct drv {
	uint64_t now;  /* the clock the keeper reads */
	uint64_t last; /* the driver's last pass */
	int busy;      /* the lock is held elsewhere */
	int stop_at;   /* trylock number at which a stop arrives (0: never) */
	rn_hkeep *k;
	int tries, locked, passes, unlocks;
	int bad; /* a pass outside the lock or on another clock (the keeper's thread) */
} drv;

static drv *g_drv; /* the clock hook takes no argument */

static uint64_t clock_of(void) { return __atomic_load_n(&g_drv->now, __ATOMIC_RELAXED); }

static int try_lock(void *arg)
{
	drv *d = arg;
	int n = __atomic_add_fetch(&d->tries, 1, __ATOMIC_RELAXED);

	if (d->stop_at && n == d->stop_at)
		__atomic_store_n(&d->k->stop, 1, __ATOMIC_RELEASE); /* rn_hkeep_stop, just now */
	if (__atomic_load_n(&d->busy, __ATOMIC_RELAXED))
		return -1;
	d->locked = 1;
	return 0;
}

static void unlock(void *arg)
{
	drv *d = arg;

	d->locked = 0;
	__atomic_add_fetch(&d->unlocks, 1, __ATOMIC_RELAXED);
}

static int pass(void *arg, uint64_t now)
{
	drv *d = arg;

	if (!d->locked || now != clock_of())
		d->bad++; /* cmocka asserts only on the test's own thread */
	__atomic_add_fetch(&d->passes, 1, __ATOMIC_RELAXED);
	return 1;
}

static void setup(drv *d, rn_hkeep *k)
{
	*d = (drv){ .now = 100 * UT_S, .last = 100 * UT_S, .k = k };
	*k = (rn_hkeep){ .period_ns = UT_MS,
			 .quiet_ns = 2 * UT_MS,
			 .idle_x = 1,
			 .clock = clock_of,
			 .last = &d->last,
			 .trylock = try_lock,
			 .unlock = unlock,
			 .pass = pass,
			 .arg = d };
	g_drv = d;
}

static void nap_ms(void)
{
	struct timespec ts = { 0, 1000000 };

	nanosleep(&ts, NULL);
}

/* Waits (bounded) until *v reaches n. */
static void wait_for(const int *v, int n)
{
	for (int i = 0; i < WAIT_LOOKS && __atomic_load_n(v, __ATOMIC_RELAXED) < n; i++)
		nap_ms();
	assert_true(__atomic_load_n(v, __ATOMIC_RELAXED) >= n);
}

static void test_quiet_driver(void **state)
{
	drv d;
	rn_hkeep k;
	int seen;

	(void)state;
	setup(&d, &k);
	assert_int_equal(rn_hkeep_start(&k), 0);
	/* the driver just passed: the keeper stays out */
	for (int i = 0; i < 5; i++)
		nap_ms();
	assert_int_equal(__atomic_load_n(&d.tries, __ATOMIC_RELAXED), 0);
	/* 3 ms without a pass of the driver's: the keeper runs them */
	__atomic_store_n(&d.now, d.last + 3 * UT_MS, __ATOMIC_RELAXED);
	wait_for(&d.passes, 3);
	/* the driver passes again: no more of the keeper's */
	__atomic_store_n(&d.last, d.now, __ATOMIC_RELAXED);
	seen = __atomic_load_n(&d.tries, __ATOMIC_RELAXED);
	for (int i = 0; i < 5; i++)
		nap_ms();
	rn_hkeep_stop(&k);
	assert_true(__atomic_load_n(&d.tries, __ATOMIC_RELAXED) <= seen + 1);
	assert_int_equal(d.unlocks, d.tries);
	assert_int_equal(d.bad, 0);
	assert_int_equal(k.on, 0);
}

static void test_busy_lock(void **state)
{
	drv d;
	rn_hkeep k;

	(void)state;
	setup(&d, &k);
	d.busy = 1;
	d.now = d.last + UT_S;
	assert_int_equal(rn_hkeep_start(&k), 0);
	wait_for(&d.tries, 5);
	rn_hkeep_stop(&k);
	assert_int_equal(d.passes, 0);
	assert_int_equal(d.unlocks, 0);
}

/* A stop that comes as the keeper takes the lock: no pass, the lock released, the thread gone. */
static void test_stop_under_lock(void **state)
{
	drv d;
	rn_hkeep k;

	(void)state;
	setup(&d, &k);
	d.now = d.last + UT_S;
	d.stop_at = 3;
	assert_int_equal(rn_hkeep_start(&k), 0);
	wait_for(&d.tries, 3);
	rn_hkeep_stop(&k);
	assert_int_equal(d.tries, 3);
	assert_int_equal(d.passes, 2);
	assert_int_equal(d.unlocks, 3);
	assert_false(d.locked);
}

static void test_no_period(void **state)
{
	drv d;
	rn_hkeep k;

	(void)state;
	setup(&d, &k);
	k.period_ns = 0;
	assert_int_equal(rn_hkeep_start(&k), 0);
	assert_int_equal(k.on, 0);
	rn_hkeep_stop(&k); /* nothing to stop */
	assert_int_equal(d.tries, 0);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_quiet_driver),
		cmocka_unit_test(test_busy_lock),
		cmocka_unit_test(test_stop_under_lock),
		cmocka_unit_test(test_no_period),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
