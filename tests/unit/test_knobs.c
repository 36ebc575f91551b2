/*
 * test_knobs.c - the table of knobs (src/core/rn_knob_list.h) as the engine
 * reads it: names, defaults, bounds, socket options and the environment.
 */
#include <ctype.h>
#include <errno.h>
#include <stdio.h>
#include <unistd.h>

#include "unit_common.h"

#include "ri2n.h"
#include "rn_knobs.h"

/* Every knob has the three names of one name: RI2N_<NAME>, btl_ri2n_<name>. */
static void test_knobs_names(void **state)
{
	(void)state;
	for (size_t i = 0; i < RN_KNOB__COUNT; i++) {
		const rn_knob *k = &rn_knobs[i];
		char want[64];
		size_t n = 0;

		n = (size_t)snprintf(want, sizeof(want), "RI2N_");
		for (const char *m = k->mca; *m && n + 1 < sizeof(want); m++)
			want[n++] = (char)toupper((unsigned char)*m);
		want[n] = 0;
		if (strcmp(want, k->env) != 0)
			fail_msg("knob %zu: MCA name %s, variable %s", i, k->mca, k->env);
		assert_ptr_equal(rn_knob_find(k->opt), k);
		assert_true(k->doc && strlen(k->doc) > 10);
		assert_true(k->lo <= k->def && k->def <= k->hi);
	}
	assert_int_equal(rn_knobs[RN_KNOB_MTU].opt, RI2N_MTU);
	assert_int_equal(rn_knobs[RN_KNOB_DEAD_PEER_MS].opt, RI2N_DEAD_PEER_MS);
	assert_null(rn_knob_find(0));
	assert_null(rn_knob_find(999));
}

/* The core's defaults read back as the table's, in the user's unit. */
static void test_knobs_defaults(void **state)
{
	rn_config c;

	(void)state;
	rn_config_default(&c);
	for (size_t i = 0; i < RN_KNOB__COUNT; i++) {
		int64_t v = -1;

		assert_int_equal(rn_knob_get(&c, rn_knobs[i].opt, &v), 0);
		if (v != rn_knobs[i].def)
			fail_msg("%s: default %lld, the table says %lld", rn_knobs[i].env,
				 (long long)v, (long long)rn_knobs[i].def);
	}
	/* the figures users were told before the table (docs/CONFIG.md, include/ri2n.h) */
	assert_true(c.heartbeat_ns == 100 * UT_MS);
	assert_true(c.rail_timeout_ns == 350 * UT_MS);
	assert_int_equal(c.max_dgram, 1472);
	assert_int_equal(c.snd_slots, 2048);
	assert_int_equal(c.rcv_slots, 2048);
	assert_int_equal(c.auth_only, 0);
	assert_true(c.ack_delay_ns == 200 * UT_US);
	assert_true(c.queue_target_ns == 4 * UT_MS);
	assert_int_equal(c.init_cwnd, 32);
}

/* Just outside its bounds a knob is refused and the configuration kept. */
static void test_knobs_bounds(void **state)
{
	(void)state;
	for (size_t i = 0; i < RN_KNOB__COUNT; i++) {
		const rn_knob *k = &rn_knobs[i];
		rn_config c, before;
		int64_t v;

		rn_config_default(&c);
		before = c;
		assert_int_equal(rn_knob_set(&c, k->opt, k->lo - 1), -EINVAL);
		assert_int_equal(rn_knob_set(&c, k->opt, k->hi + 1), -EINVAL);
		assert_memory_equal(&c, &before, sizeof(c));
		assert_int_equal(rn_knob_set(&c, k->opt, k->def), 0);
		assert_int_equal(rn_knob_get(&c, k->opt, &v), 0);
		assert_true(v == k->def);
	}
}

typedef struct set_case {
	int opt;
	int64_t v;
	int want;       /* rn_knob_set's result */
	int64_t read;   /* rn_knob_get's afterwards */
} set_case;

static void test_knobs_set(void **state)
{
	static const set_case cases[] = {
		{ RI2N_HEARTBEAT_MS, 1, 0, 1 },
		{ RI2N_HEARTBEAT_MS, 60000, 0, 60000 },
		{ RI2N_KEEPALIVE_MS, 350, -EINVAL, 100 },     /* not below rail_timeout */
		{ RI2N_RAIL_TIMEOUT_MS, 100, -EINVAL, 350 },  /* not above keepalive */
		{ RI2N_DEAD_PEER_MS, 350, -EINVAL, 30000 },   /* not above rail_timeout */
		{ RI2N_FAIL_MIN, 100, -EINVAL, 2 },           /* not below fail_window */
		{ RI2N_FAIL_MIN, 99, 0, 99 },
		{ RI2N_MTU, 9000, 0, 9000 },
		{ RI2N_MTU, 65535, 0, 65535 },                /* datagrams of 65507 */
		{ RI2N_SNDBUF, 65536, 0, 64 * 1448 },         /* at least 64 packets */
		{ RI2N_RCVBUF, 1448 * 1000, 0, 1024 * 1448 }, /* a power of two */
		{ RI2N_KEY_AUTH_ONLY, 1, 0, 1 },
		{ RI2N_KEY_AUTH_ONLY, 2, -EINVAL, 0 },
		{ RI2N_KEY_AES256, 1, 0, 1 },
		{ RI2N_KEY_AES256, 2, -EINVAL, 0 },
		{ RI2N_REDUNDANT_BYTES, 64, 0, 64 },
		{ RI2N_REDUNDANT_BYTES, 65537, -EINVAL, 0 },
		{ 999, 1, -ENOPROTOOPT, -1 },
	};

	(void)state;
	for (size_t i = 0; i < sizeof(cases) / sizeof(*cases); i++) {
		const set_case *tc = &cases[i];
		rn_config c;
		int64_t v = -1;

		rn_config_default(&c);
		if (rn_knob_set(&c, tc->opt, tc->v) != tc->want)
			fail_msg("case %zu: option %d = %lld: want %d", i, tc->opt,
				 (long long)tc->v, tc->want);
		if (tc->want == -ENOPROTOOPT) {
			assert_int_equal(rn_knob_get(&c, tc->opt, &v), -ENOPROTOOPT);
			continue;
		}
		assert_int_equal(rn_knob_get(&c, tc->opt, &v), 0);
		if (v != tc->read)
			fail_msg("case %zu: option %d reads %lld, want %lld", i, tc->opt,
				 (long long)v, (long long)tc->read);
		assert_int_equal(rn_config_check(&c, NULL), 0);
	}
}

/*
 * The environment, in the table's order: RI2N_MTU before RI2N_SNDBUF, whose
 * bytes are counted in packets of that MTU; a bad value keeps the default.
 */
static void test_knobs_env(void **state)
{
	rn_config c;

	(void)state;
	setenv("RI2N_SNDBUF", "1145344", 1); /* 128 packets of 8948 bytes */
	setenv("RI2N_MTU", "9000", 1);
	setenv("RI2N_HEARTBEAT_MS", "250", 1);
	setenv("RI2N_DEAD_PEER_MS", "12x", 1);
	setenv("RI2N_FAIL_WINDOW", "", 1);
	rn_config_default(&c);
	rn_knobs_from_env(&c);
	assert_int_equal(c.max_dgram, 8972);
	assert_int_equal(c.snd_slots, 128);
	assert_true(c.heartbeat_ns == 250 * UT_MS);
	assert_true(c.dead_peer_ns == 30000 * UT_MS);
	assert_int_equal(c.fail_window, 100);
	assert_string_equal(rn_knob_env(RI2N_MTU), "9000");
	assert_null(rn_knob_env(RI2N_FAIL_WINDOW)); /* empty: unset */
	unsetenv("RI2N_SNDBUF");
	unsetenv("RI2N_MTU");
	unsetenv("RI2N_HEARTBEAT_MS");
	unsetenv("RI2N_DEAD_PEER_MS");
	unsetenv("RI2N_FAIL_WINDOW");
	assert_null(rn_knob_env(RI2N_MTU));
}

/* A process's knobs: the default when unset or not a number in range. */
static void test_knobs_process(void **state)
{
	int64_t v = -1;

	(void)state;
	unsetenv("RI2N_STAT_MS");
	assert_int_equal(rn_proc_int(RN_PROC_STAT_MS, &v), 0);
	assert_true(v == 250);
	setenv("RI2N_STAT_MS", "20", 1);
	assert_int_equal(rn_proc_int(RN_PROC_STAT_MS, &v), 1);
	assert_true(v == 20);
	setenv("RI2N_STAT_MS", "20ms", 1);
	assert_int_equal(rn_proc_int(RN_PROC_STAT_MS, &v), -1);
	assert_true(v == 250);
	setenv("RI2N_STAT_MS", "-1", 1);
	assert_int_equal(rn_proc_int(RN_PROC_STAT_MS, &v), -1);
	unsetenv("RI2N_STAT_MS");
	setenv("RI2N_GSO", "0", 1);
	assert_true(rn_proc_get(RN_PROC_GSO) == 0);
	unsetenv("RI2N_GSO");
	assert_true(rn_proc_get(RN_PROC_GSO) == 1);
	setenv("RI2N_RAILS", "r1,r2", 1);
	assert_string_equal(rn_proc_text(RN_PROC_RAILS), "r1,r2");
	unsetenv("RI2N_RAILS");
	assert_null(rn_proc_text(RN_PROC_RAILS));
	assert_null(rn_proc_name(RN_PROC__COUNT));
	for (size_t i = 0; i < RN_PROC__COUNT; i++) {
		const rn_proc_knob *k = &rn_proc_knobs[i];

		assert_true(strncmp(k->env, "RI2N_", 5) == 0);
		assert_string_equal(rn_proc_name((int)i), k->env); /* ri2n-stat's copy, inline */
		assert_true(k->shown && *k->shown && k->doc && *k->doc);
		assert_true(k->type != RN_PROC_T_INT || (k->lo <= k->def && k->def <= k->hi));
	}
}

/*
 * The process knobs that are also socket options (RI2N_KEY,
 * RI2N_BUSY_POLL_US): one row each, in no other table; the key is never a
 * number and never in a message, even when it is refused.
 */
static void test_knobs_process_options(void **state)
{
	static const char bad[] = "0123456789abcdef0123456789abcdef0123456789abcdef0123456789abcde";
	char out[4096] = "";
	rn_config cfg;
	int64_t v = 7;
	int saved, nopt = 0;
	FILE *f;

	(void)state;
	for (size_t i = 0; i < RN_PROC__COUNT; i++) {
		const rn_proc_knob *k = &rn_proc_knobs[i];

		if (!k->opt)
			continue;
		nopt++;
		assert_null(rn_knob_find(k->opt)); /* not a connection knob too */
		for (size_t j = 0; j < i; j++)
			assert_int_not_equal(rn_proc_knobs[j].opt, k->opt);
	}
	assert_int_equal(nopt, 2);
	assert_int_equal(rn_proc_knobs[RN_PROC_KEY].opt, RI2N_KEY);
	assert_int_equal(rn_proc_knobs[RN_PROC_KEY].type, RN_PROC_T_SECRET);
	assert_int_equal(rn_proc_knobs[RN_PROC_KEY_FILE].opt, 0);
	assert_int_equal(rn_proc_knobs[RN_PROC_BUSY_POLL_US].opt, RI2N_BUSY_POLL_US);
	assert_true(rn_proc_knobs[RN_PROC_BUSY_POLL_US].def == -1);

	/* 63 digits: refused, and the message names the variable, never the digits */
	setenv("RI2N_KEY", bad, 1);
	assert_int_equal(rn_proc_int(RN_PROC_KEY, &v), 0);
	assert_true(v == 0);
	rn_config_default(&cfg);
	fflush(stderr);
	saved = dup(2);
	f = tmpfile();
	assert_non_null(f);
	dup2(fileno(f), 2);
	assert_int_equal(rn_knobs_key_from_env(&cfg), -EINVAL);
	setenv("RI2N_KEY", "", 1); /* set but empty: refused too, not taken for "no key" */
	assert_int_equal(rn_knobs_key_from_env(&cfg), -EINVAL);
	fflush(stderr);
	dup2(saved, 2);
	close(saved);
	rewind(f);
	out[fread(out, 1, sizeof(out) - 1, f)] = 0;
	fclose(f);
	unsetenv("RI2N_KEY");
	assert_false(cfg.keyed);
	assert_non_null(strstr(out, "RI2N_KEY"));
	assert_null(strstr(out, "0123456789abcdef"));
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_knobs_names),
		cmocka_unit_test(test_knobs_defaults),
		cmocka_unit_test(test_knobs_bounds),
		cmocka_unit_test(test_knobs_set),
		cmocka_unit_test(test_knobs_env),
		cmocka_unit_test(test_knobs_process),
		cmocka_unit_test(test_knobs_process_options),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
