/*
 * test_pmtu.c - one rail's datagram size found by probing (rn_pmtu.c):
 * upward search, confirmation only by acknowledgement (late ones too), a black hole and its
 * heal, re-probing after RN_PMTU_REPROBE_NS, ceilings; literal timestamps.
 */
#include "unit_common.h"

#include "rn_pmtu.h"

/* A probe timeout as the connection would pass it (the rail's RTO). */
#define TMO (20 * UT_MS)

/* Sends the probe due at `now`; returns its size (0: none) and sets *id. */
static uint32_t probe_at(rn_pmtu *p, uint64_t now, uint32_t *id)
{
	*id = 0;
	return rn_pmtu_next_probe(p, now, id);
}

/* The probe due at *t is `size` bytes (its id in *id) and goes unanswered past the timeout. */
static void lose_probe(rn_pmtu *p, uint64_t *t, uint32_t size, uint32_t *id)
{
	assert_int_equal(probe_at(p, *t, id), size);
	*t += TMO;
	rn_pmtu_on_timer(p, *t, TMO);
}

/*
 * Runs the rail at literal times from *now: every 1 ms the due probe goes,
 * the ones of at most `mtu` bytes are acknowledged 1 ms later, the others
 * time out.  Stops once nothing is due until `until`.  Returns the probes sent.
 */
static int run_rail(rn_pmtu *p, uint32_t mtu, uint64_t *now, uint64_t until)
{
	int sent = 0;

	while (*now < until) {
		uint32_t id, s = probe_at(p, *now, &id);

		if (s) {
			sent++;
			if (s <= mtu) {
				*now += UT_MS;
				rn_pmtu_on_ack(p, id, s, *now);
			} else {
				*now += TMO;
				rn_pmtu_on_timer(p, *now, TMO);
			}
			continue;
		}
		if (rn_pmtu_expiry(p, TMO) > until)
			break;
		*now += UT_MS;
		rn_pmtu_on_timer(p, *now, TMO);
	}
	return sent;
}

static void test_pmtu_ceiling_first(void **state)
{
	rn_pmtu p;
	uint32_t id;

	(void)state;
	rn_pmtu_init(&p, 1472, 8972, UT_T0);
	assert_int_equal(rn_pmtu_size(&p), 1472); /* the base works before any probe */
	assert_int_equal(rn_pmtu_expiry(&p, TMO), 0); /* due at once */
	assert_int_equal(probe_at(&p, UT_T0, &id), 8972);
	assert_int_equal(probe_at(&p, UT_T0, &id), 0); /* one in flight at a time */
	assert_int_equal(rn_pmtu_expiry(&p, TMO), UT_T0 + TMO);
	assert_int_equal(rn_pmtu_on_ack(&p, p.probe_id, 8972, UT_T0 + 200 * UT_US), 1);
	assert_int_equal(rn_pmtu_size(&p), 8972);
	assert_int_equal(p.state, RN_PMTU_DONE);
	/* at the ceiling: nothing more to look for */
	assert_int_equal(rn_pmtu_expiry(&p, TMO), UINT64_MAX);
	assert_int_equal(probe_at(&p, UT_T0 + 700 * UT_S, &id), 0);
}

static void test_pmtu_no_search_at_ceiling(void **state)
{
	rn_pmtu p;
	uint32_t id;

	(void)state;
	rn_pmtu_init(&p, 1472, 1472, UT_T0);
	assert_int_equal(p.state, RN_PMTU_DONE);
	assert_int_equal(probe_at(&p, UT_T0, &id), 0);
	assert_int_equal(rn_pmtu_size(&p), 1472);
}

/* A rail whose real limit is between base and ceiling: the search lands within a step of it. */
static void test_pmtu_search_finds_limit(void **state)
{
	static const uint32_t limits[] = { 1472, 1500, 3972, 4000, 8000, 8971 };

	(void)state;
	for (size_t i = 0; i < sizeof(limits) / sizeof(limits[0]); i++) {
		rn_pmtu p;
		uint64_t now = UT_T0;
		int sent;

		rn_pmtu_init(&p, 1472, 8972, now);
		sent = run_rail(&p, limits[i], &now, UT_T0 + 10 * UT_S);
		if (rn_pmtu_size(&p) > limits[i] || rn_pmtu_size(&p) + RN_PMTU_STEP < limits[i])
			fail_msg("limit %u: size %u", limits[i], rn_pmtu_size(&p));
		assert_int_equal(p.state, RN_PMTU_DONE);
		/* a binary search: a few dozen probes at most, each size tried RN_PMTU_TRIES times */
		assert_true(sent <= 2 * 12);
		assert_true(p.next_ns > now && p.next_ns <= now + RN_PMTU_REPROBE_NS);
	}
}

/* One lost probe is not a failure: the same size is tried again and confirmed. */
static void test_pmtu_single_loss(void **state)
{
	rn_pmtu p;
	uint32_t id;

	(void)state;
	rn_pmtu_init(&p, 1472, 8972, UT_T0);
	assert_int_equal(probe_at(&p, UT_T0, &id), 8972);
	rn_pmtu_on_timer(&p, UT_T0 + TMO - 1, TMO); /* not yet */
	assert_int_equal(p.probe, 8972);
	rn_pmtu_on_timer(&p, UT_T0 + TMO, TMO);
	assert_int_equal(p.probe, 0);
	assert_int_equal(rn_pmtu_size(&p), 1472);
	assert_int_equal(probe_at(&p, UT_T0 + TMO, &id), 8972); /* again, not smaller */
	assert_int_equal(rn_pmtu_on_ack(&p, id, 8972, UT_T0 + TMO + 300 * UT_US), 1);
	assert_int_equal(rn_pmtu_size(&p), 8972);
}

/* Only the answer to the probe in flight counts: stale ids and other sizes change nothing. */
static void test_pmtu_ack_must_match(void **state)
{
	rn_pmtu p;
	uint32_t id, old;

	(void)state;
	rn_pmtu_init(&p, 1472, 8972, UT_T0);
	assert_int_equal(rn_pmtu_on_ack(&p, 1, 8972, UT_T0), 0); /* nothing in flight */
	assert_int_equal(probe_at(&p, UT_T0, &id), 8972);
	assert_int_equal(rn_pmtu_on_ack(&p, id + 1, 8972, UT_T0 + UT_MS), 0);
	assert_int_equal(rn_pmtu_on_ack(&p, id, 4000, UT_T0 + UT_MS), 0);
	assert_int_equal(rn_pmtu_size(&p), 1472);
	/* lost: its late answer still confirms the size, once; the retry's then tells nothing */
	rn_pmtu_on_timer(&p, UT_T0 + TMO, TMO);
	old = id;
	assert_int_equal(probe_at(&p, UT_T0 + TMO, &id), 8972);
	assert_true(id != old);
	assert_int_equal(rn_pmtu_on_ack(&p, old + 7, 8972, UT_T0 + TMO + UT_MS), 0);
	assert_int_equal(rn_pmtu_on_ack(&p, old, 4000, UT_T0 + TMO + UT_MS), 0);
	assert_int_equal(rn_pmtu_size(&p), 1472);
	assert_int_equal(rn_pmtu_on_ack(&p, old, 8972, UT_T0 + TMO + UT_MS), 1);
	assert_int_equal(rn_pmtu_size(&p), 8972);
	assert_int_equal(p.state, RN_PMTU_DONE);
	assert_int_equal(rn_pmtu_on_ack(&p, old, 8972, UT_T0 + TMO + 2 * UT_MS), 0);
	assert_int_equal(rn_pmtu_on_ack(&p, id, 8972, UT_T0 + TMO + 2 * UT_MS), 0);
	assert_int_equal(rn_pmtu_size(&p), 8972);
}

/*
 * A rail loaded both ways from the start (queues longer than the timeout):
 * both probes at the ceiling are taken as lost and the search goes on
 * below; the late answer of the last one still confirms the ceiling, and
 * the probe then in flight has nothing left to tell.
 */
static void test_pmtu_late_answer(void **state)
{
	rn_pmtu p;
	uint64_t t = UT_T0;
	uint32_t id1, id2, id3;

	(void)state;
	rn_pmtu_init(&p, 1472, 8972, t);
	lose_probe(&p, &t, 8972, &id1);
	lose_probe(&p, &t, 8972, &id2);
	assert_int_equal(p.hi, 8972); /* failed for now */
	assert_int_equal(probe_at(&p, t, &id3), 5222);
	/* only the last probe taken as lost counts late */
	assert_int_equal(rn_pmtu_on_ack(&p, id1, 8972, t + UT_MS), 0);
	assert_int_equal(rn_pmtu_size(&p), 1472);
	assert_int_equal(rn_pmtu_on_ack(&p, id2, 8972, t + UT_MS), 1);
	assert_int_equal(rn_pmtu_size(&p), 8972);
	assert_int_equal(p.state, RN_PMTU_DONE);
	assert_int_equal(p.probe, 0);
	assert_int_equal(rn_pmtu_on_ack(&p, id3, 5222, t + 2 * UT_MS), 0);
	assert_int_equal(rn_pmtu_size(&p), 8972);
	assert_int_equal(rn_pmtu_expiry(&p, TMO), UINT64_MAX);
}

/* A late answer below the size found, or in the middle of a search: the search goes on from it. */
static void test_pmtu_late_answer_mid_search(void **state)
{
	rn_pmtu p;
	uint64_t t = UT_T0;
	uint32_t id, lost;

	(void)state;
	rn_pmtu_init(&p, 1472, 8972, t);
	lose_probe(&p, &t, 8972, &id); /* the ceiling fails for real */
	lose_probe(&p, &t, 8972, &id);
	lose_probe(&p, &t, 5222, &lost); /* lost once: tried again */
	assert_int_equal(probe_at(&p, t, &id), 5222);
	assert_int_equal(rn_pmtu_on_ack(&p, lost, 5222, t + UT_MS), 1);
	assert_int_equal(rn_pmtu_size(&p), 5222);
	assert_int_equal(p.state, RN_PMTU_SEARCH);
	assert_int_equal(p.lo, 5222);
	assert_int_equal(p.hi, 8972);
	assert_int_equal(p.probe, 0); /* the retry of 5222 has nothing left to tell */
	assert_int_equal(probe_at(&p, t + UT_MS, &id), 7097); /* and the search goes on above */
}

/*
 * A rail at 1472 starts dropping frames over 1000 bytes (UDP payload over
 * 958) at 2 s and heals at 5 s: in the hole the downward search confirms a
 * size that gets through within a few probes; the old size is back within
 * RN_PMTU_HEAL_NS of the heal.
 */
static void test_pmtu_hole_and_heal(void **state)
{
	rn_pmtu p;
	uint64_t now = UT_T0;
	uint32_t id, s;

	(void)state;
	rn_pmtu_init(&p, 1472, 1472, now);
	now = UT_T0 + 2 * UT_S;
	assert_int_equal(rn_pmtu_on_hole(&p, now), 1);
	assert_int_equal(p.state, RN_PMTU_HOLE);
	assert_int_equal(rn_pmtu_size(&p), 0);
	assert_int_equal(p.holes, 1);
	assert_int_equal(rn_pmtu_on_hole(&p, now), 0); /* nothing more to lose */
	assert_int_equal(p.holes, 1);
	/* first probe: half way between nothing and the old size */
	assert_int_equal(probe_at(&p, now, &id), 736);
	now += UT_MS;
	assert_int_equal(rn_pmtu_on_ack(&p, id, 736, now), 1);
	assert_int_equal(rn_pmtu_size(&p), 736);
	run_rail(&p, 958, &now, UT_T0 + 2 * UT_S + 240 * UT_MS);
	assert_true(rn_pmtu_size(&p) <= 958 && rn_pmtu_size(&p) + RN_PMTU_STEP >= 958);
	assert_int_equal(p.state, RN_PMTU_HOLE);
	/* search over: the next thing due is the old size, 250 ms after the hole */
	assert_int_equal(rn_pmtu_expiry(&p, TMO), UT_T0 + 2 * UT_S + RN_PMTU_HEAL_NS);
	now = UT_T0 + 2 * UT_S + RN_PMTU_HEAL_NS;
	assert_int_equal(probe_at(&p, now, &id), 1472);
	now += TMO;
	rn_pmtu_on_timer(&p, now, TMO); /* still a hole: tried again 250 ms after that probe */
	assert_int_equal(rn_pmtu_expiry(&p, TMO), now - TMO + RN_PMTU_HEAL_NS);
	assert_true(rn_pmtu_size(&p) > 900); /* the working size stays */
	/* the fault lasts to 5 s; then the old size is back within RN_PMTU_HEAL_NS + a round trip */
	run_rail(&p, 958, &now, UT_T0 + 5 * UT_S);
	assert_int_equal(p.state, RN_PMTU_HOLE);
	assert_true(rn_pmtu_size(&p) <= 958);
	for (;;) {
		s = probe_at(&p, now, &id);
		if (s == 1472)
			break;
		assert_true(now < UT_T0 + 5 * UT_S + RN_PMTU_HEAL_NS);
		now += UT_MS;
		rn_pmtu_on_timer(&p, now, TMO);
	}
	now += UT_MS;
	assert_int_equal(rn_pmtu_on_ack(&p, id, 1472, now), 1);
	assert_int_equal(rn_pmtu_size(&p), 1472);
	assert_int_equal(p.state, RN_PMTU_DONE);
	assert_true(now <= UT_T0 + 5 * UT_S + RN_PMTU_HEAL_NS + UT_MS);
}

/* A hole where even the smallest probe is lost: size 0 (no data), the old size still retried. */
static void test_pmtu_hole_nothing_works(void **state)
{
	rn_pmtu p;
	uint64_t now = UT_T0;
	uint32_t id;

	(void)state;
	rn_pmtu_init(&p, 1472, 1472, now);
	rn_pmtu_on_hole(&p, now);
	run_rail(&p, 100, &now, UT_T0 + 200 * UT_MS);
	assert_int_equal(rn_pmtu_size(&p), 0);
	assert_int_equal(rn_pmtu_expiry(&p, TMO), UT_T0 + RN_PMTU_HEAL_NS);
	assert_int_equal(probe_at(&p, UT_T0 + RN_PMTU_HEAL_NS, &id), 1472);
	assert_int_equal(rn_pmtu_on_ack(&p, id, 1472, UT_T0 + RN_PMTU_HEAL_NS + UT_MS), 1);
	assert_int_equal(rn_pmtu_size(&p), 1472);
}

/* A probe in flight when the hole is judged is no evidence afterwards. */
static void test_pmtu_hole_forgets_probe(void **state)
{
	rn_pmtu p;
	uint32_t id;

	(void)state;
	rn_pmtu_init(&p, 1472, 8972, UT_T0);
	assert_int_equal(probe_at(&p, UT_T0, &id), 8972);
	rn_pmtu_on_hole(&p, UT_T0 + UT_MS);
	assert_int_equal(rn_pmtu_on_ack(&p, id, 8972, UT_T0 + 2 * UT_MS), 0);
	assert_int_equal(rn_pmtu_size(&p), 0);
	assert_int_equal(p.target, 1472);
	/* nor is a probe taken as lost before it, answered late */
	rn_pmtu_init(&p, 1472, 8972, UT_T0);
	assert_int_equal(probe_at(&p, UT_T0, &id), 8972);
	rn_pmtu_on_timer(&p, UT_T0 + TMO, TMO);
	rn_pmtu_on_hole(&p, UT_T0 + TMO + UT_MS);
	assert_int_equal(rn_pmtu_on_ack(&p, id, 8972, UT_T0 + TMO + 2 * UT_MS), 0);
	assert_int_equal(rn_pmtu_size(&p), 0);
}

/* A rail whose MTU grew is found at its new size at the next re-probe, 10 min on. */
static void test_pmtu_reprobe_grows(void **state)
{
	rn_pmtu p;
	uint64_t now = UT_T0;
	uint32_t id;

	(void)state;
	rn_pmtu_init(&p, 1472, 8972, now);
	run_rail(&p, 1472, &now, UT_T0 + UT_S);
	assert_int_equal(rn_pmtu_size(&p), 1472);
	assert_int_equal(p.state, RN_PMTU_DONE);
	assert_true(rn_pmtu_expiry(&p, TMO) <= UT_T0 + UT_S + RN_PMTU_REPROBE_NS);
	assert_int_equal(probe_at(&p, UT_T0 + 300 * UT_S, &id), 0);
	now = rn_pmtu_expiry(&p, TMO);
	assert_int_equal(probe_at(&p, now, &id), 8972);
	assert_int_equal(rn_pmtu_on_ack(&p, id, 8972, now + UT_MS), 1);
	assert_int_equal(rn_pmtu_size(&p), 8972);
}

/* The ceiling: a rise searches at once, a fall clamps the size. */
static void test_pmtu_ceiling_changes(void **state)
{
	rn_pmtu p;
	uint64_t now = UT_T0;
	uint32_t id;

	(void)state;
	rn_pmtu_init(&p, 1472, 1472, now);
	rn_pmtu_set_ceiling(&p, 8972, now);
	assert_int_equal(probe_at(&p, now, &id), 8972);
	assert_int_equal(rn_pmtu_on_ack(&p, id, 8972, now + UT_MS), 1);
	rn_pmtu_set_ceiling(&p, 4000, now + 2 * UT_MS);
	assert_int_equal(rn_pmtu_size(&p), 4000);
	assert_int_equal(p.state, RN_PMTU_DONE);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_pmtu_ceiling_first),
		cmocka_unit_test(test_pmtu_no_search_at_ceiling),
		cmocka_unit_test(test_pmtu_search_finds_limit),
		cmocka_unit_test(test_pmtu_single_loss),
		cmocka_unit_test(test_pmtu_ack_must_match),
		cmocka_unit_test(test_pmtu_late_answer),
		cmocka_unit_test(test_pmtu_late_answer_mid_search),
		cmocka_unit_test(test_pmtu_hole_and_heal),
		cmocka_unit_test(test_pmtu_hole_nothing_works),
		cmocka_unit_test(test_pmtu_hole_forgets_probe),
		cmocka_unit_test(test_pmtu_reprobe_grows),
		cmocka_unit_test(test_pmtu_ceiling_changes),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
