/*
 * test_config.c - the defaults, the checks on every knob, and the names of
 * codes a person reads in logs and ri2n-stat.
 */
#include "unit_common.h"

#define MS UT_MS

static void test_config_defaults_pass(void **state)
{
	rn_config c;
	const char *why = "unset";

	(void)state;
	rn_config_default(&c);
	assert_int_equal(rn_config_check(&c, &why), 0);
	assert_null(why);
	/* the documented defaults (docs/CONFIG.md): the paper's N and M, 100 ms heartbeats */
	assert_int_equal(c.fail_window, 100);
	assert_int_equal(c.fail_min, 2);
	assert_true(c.heartbeat_ns == 100 * MS);
	assert_true(c.dead_peer_ns == 30000 * MS);
	assert_int_equal(c.max_dgram, 1472);
	/* why may be NULL */
	assert_int_equal(rn_config_check(&c, NULL), 0);
}

typedef struct cfg_case {
	const char *name;
	void (*set)(rn_config *c);
	const char *knob; /* a word the sentence must contain */
	int want;         /* 0 or RN_ERR_INVAL */
} cfg_case;

/* One setter per case keeps the table readable: each names the knob it breaks. */
static void dgram_small(rn_config *c) { c->max_dgram = 255; }
static void dgram_min(rn_config *c) { c->max_dgram = 256; }
static void dgram_big(rn_config *c) { c->max_dgram = 65508; }
static void dgram_max(rn_config *c) { c->max_dgram = 65507; }
static void snd_npow2(rn_config *c) { c->snd_slots = 3000; }
static void snd_small(rn_config *c) { c->snd_slots = 32; }
static void snd_big(rn_config *c) { c->snd_slots = 1u << 17; }
static void snd_min(rn_config *c) { c->snd_slots = 64; c->init_cwnd = 64; }
static void rcv_npow2(rn_config *c) { c->rcv_slots = 65535; }
static void rcv_zero(rn_config *c) { c->rcv_slots = 0; }
static void rcv_max(rn_config *c) { c->rcv_slots = 1u << 16; }
static void win_small(rn_config *c) { c->fail_window = 1; c->fail_min = 1; }
static void win_big(rn_config *c) { c->fail_window = 100001; }
static void min_zero(rn_config *c) { c->fail_min = 0; }
static void min_eq_win(rn_config *c) { c->fail_min = c->fail_window; }
static void min_below_win(rn_config *c) { c->fail_min = c->fail_window - 1; }
static void ack_zero(rn_config *c) { c->ack_every = 0; }
static void ack_big(rn_config *c) { c->ack_every = 1025; }
static void hb_small(rn_config *c) { c->heartbeat_ns = MS - 1; }
static void ka_small(rn_config *c) { c->keepalive_ns = 999999; }
static void rto_eq_ka(rn_config *c) { c->rail_timeout_ns = c->keepalive_ns; }
static void dead_eq_rail(rn_config *c) { c->dead_peer_ns = c->rail_timeout_ns; }
static void conn_small(rn_config *c) { c->connect_timeout_ns = MS - 1; }
static void rtomin_small(rn_config *c) { c->rto_min_ns = 99999; }
static void ackpp_small(rn_config *c) { c->ack_delay_pp_ns = c->ack_delay_ns - 1; }
static void cwnd_small(rn_config *c) { c->init_cwnd = 3; }
static void cwnd_big(rn_config *c) { c->init_cwnd = c->snd_slots + 1; }
static void cwnd_eq_slots(rn_config *c) { c->init_cwnd = c->snd_slots; }
static void keyed_two(rn_config *c) { c->keyed = 2; }
static void keyed_small(rn_config *c) { c->keyed = 1; c->max_dgram = 271; }
static void keyed_min(rn_config *c) { c->keyed = 1; c->max_dgram = 272; }

static const cfg_case cfg_cases[] = {
	{ "max_dgram 255", dgram_small, "max_dgram", RN_ERR_INVAL },
	{ "max_dgram 65508", dgram_big, "max_dgram", RN_ERR_INVAL },
	{ "max_dgram 256", dgram_min, NULL, 0 },
	{ "max_dgram 65507", dgram_max, NULL, 0 },
	{ "snd_slots 3000", snd_npow2, "snd_slots", RN_ERR_INVAL },
	{ "snd_slots 32", snd_small, "snd_slots", RN_ERR_INVAL },
	{ "snd_slots 2^17", snd_big, "snd_slots", RN_ERR_INVAL },
	{ "snd_slots 64", snd_min, NULL, 0 },
	{ "rcv_slots 65535", rcv_npow2, "rcv_slots", RN_ERR_INVAL },
	{ "rcv_slots 0", rcv_zero, "rcv_slots", RN_ERR_INVAL },
	{ "rcv_slots 2^16", rcv_max, NULL, 0 },
	{ "fail_window 1", win_small, "fail_window", RN_ERR_INVAL },
	{ "fail_window 100001", win_big, "fail_window", RN_ERR_INVAL },
	{ "fail_min 0", min_zero, "fail_min", RN_ERR_INVAL },
	{ "fail_min = fail_window", min_eq_win, "fail_min", RN_ERR_INVAL },
	{ "fail_min = fail_window - 1", min_below_win, NULL, 0 },
	{ "ack_every 0", ack_zero, "ack_every", RN_ERR_INVAL },
	{ "ack_every 1025", ack_big, "ack_every", RN_ERR_INVAL },
	{ "heartbeat under 1 ms", hb_small, "heartbeat", RN_ERR_INVAL },
	{ "keepalive under 1 ms", ka_small, "keepalive", RN_ERR_INVAL },
	/* a rail must get keepalives before it is judged silent */
	{ "rail_timeout = keepalive", rto_eq_ka, "rail_timeout", RN_ERR_INVAL },
	{ "dead_peer = rail_timeout", dead_eq_rail, "dead_peer", RN_ERR_INVAL },
	{ "connect timeout under 1 ms", conn_small, "connect", RN_ERR_INVAL },
	{ "rto_min under 100 us", rtomin_small, "rto_min", RN_ERR_INVAL },
	{ "ack_delay_pp under ack_delay", ackpp_small, "ack_delay_pp", RN_ERR_INVAL },
	{ "init_cwnd 3", cwnd_small, "init_cwnd", RN_ERR_INVAL },
	{ "init_cwnd above snd_slots", cwnd_big, "init_cwnd", RN_ERR_INVAL },
	{ "init_cwnd = snd_slots", cwnd_eq_slots, NULL, 0 },
	{ "keyed 2", keyed_two, "keyed", RN_ERR_INVAL },
	/* a keyed INIT is 256 bytes and its tag */
	{ "keyed, max_dgram 271", keyed_small, "key", RN_ERR_INVAL },
	{ "keyed, max_dgram 272", keyed_min, NULL, 0 },
};

static void test_config_bad_values(void **state)
{
	(void)state;
	for (size_t i = 0; i < sizeof(cfg_cases) / sizeof(cfg_cases[0]); i++) {
		const cfg_case *tc = &cfg_cases[i];
		rn_config c;
		const char *why = "unset";
		int rc;

		rn_config_default(&c);
		tc->set(&c);
		rc = rn_config_check(&c, &why);
		if (rc != tc->want)
			fail_msg("case \"%s\": got %d, want %d", tc->name, rc, tc->want);
		if (tc->want == 0) {
			assert_null(why);
			continue;
		}
		/* a sentence a person can act on: it names the knob */
		if (!why || !strstr(why, tc->knob))
			fail_msg("case \"%s\": why = \"%s\", want it to name %s", tc->name,
				 why ? why : "(null)", tc->knob);
		assert_int_equal(rn_config_check(&c, NULL), RN_ERR_INVAL);
	}
}

static void test_config_strerror(void **state)
{
	static const int codes[] = {
		RN_OK, RN_ERR_INVAL, RN_ERR_NOMEM, RN_ERR_NOBUF, RN_ERR_AGAIN, RN_ERR_DROP,
		RN_ERR_STATE, RN_ERR_NOROUTE, RN_ERR_SHUT, RN_ERR_RESET, RN_ERR_TIMEDOUT,
		RN_ERR_REFUSED, RN_ERR_PROTO, RN_ERR_ABORTED,
	};
	const char *unknown = rn_strerror(-1000);

	(void)state;
	assert_non_null(unknown);
	for (size_t i = 0; i < sizeof(codes) / sizeof(codes[0]); i++) {
		const char *s = rn_strerror(codes[i]);

		assert_non_null(s);
		assert_true(strlen(s) > 0);
		assert_string_not_equal(s, "?");
		if (strcmp(s, unknown) == 0)
			fail_msg("code %d has no phrase of its own", codes[i]);
		/* two codes, two phrases */
		for (size_t j = 0; j < i; j++)
			assert_string_not_equal(s, rn_strerror(codes[j]));
	}
	/* every fatal code really is at or below the line */
	assert_true(RN_ERR_RESET <= RN_ERR__FATAL && RN_ERR_ABORTED <= RN_ERR__FATAL);
	assert_true(RN_ERR_SHUT > RN_ERR__FATAL);
}

static void test_config_drop_names(void **state)
{
	(void)state;
	for (int d = 0; d < RN_DROP__COUNT; d++) {
		const char *s = rn_drop_name((rn_drop)d);

		assert_non_null(s);
		assert_string_not_equal(s, "?");
		for (int e = 0; e < d; e++)
			assert_string_not_equal(s, rn_drop_name((rn_drop)e));
	}
	assert_string_equal(rn_drop_name(RN_DROP__COUNT), "?");
	assert_string_equal(rn_drop_name((rn_drop)-1), "?");
}

static void test_config_cause_names(void **state)
{
	static const rn_cause causes[] = {
		RN_CAUSE_NONE, RN_CAUSE_RX_COUNT, RN_CAUSE_RX_SILENCE, RN_CAUSE_RX_SEEN,
		RN_CAUSE_PEER, RN_CAUSE_LOCAL,
	};

	(void)state;
	for (size_t i = 0; i < sizeof(causes) / sizeof(causes[0]); i++) {
		const char *s = rn_cause_name(causes[i]);

		assert_non_null(s);
		assert_string_not_equal(s, "?");
		for (size_t j = 0; j < i; j++)
			assert_string_not_equal(s, rn_cause_name(causes[j]));
	}
	assert_string_equal(rn_cause_name((rn_cause)99), "?");
}

static void test_config_state_names(void **state)
{
	static const int states[] = {
		RN_ST_INIT_SENT, RN_ST_COOKIE_SENT, RN_ST_ESTABLISHED, RN_ST_LINGER, RN_ST_CLOSED,
	};

	(void)state;
	for (size_t i = 0; i < sizeof(states) / sizeof(states[0]); i++) {
		const char *s = rn_state_name(states[i]);

		assert_non_null(s);
		assert_string_not_equal(s, "?");
		for (size_t j = 0; j < i; j++)
			assert_string_not_equal(s, rn_state_name(states[j]));
	}
	assert_string_equal(rn_state_name(-1), "?");
	assert_string_equal(rn_state_name(RN_ST_CLOSED + 1), "?");
}

/* The error list: every code has its own sentence and an errno; unknown codes say so. */
static void test_error_list(void **state)
{
#define ERR_ROW(code, value, errno_, sentence) { code, errno_, sentence },
	static const struct { int code, err; const char *sentence; } rows[] = { RN_ERR_LIST(ERR_ROW) };
#undef ERR_ROW
	size_t n = sizeof(rows) / sizeof(rows[0]);

	(void)state;
	for (size_t i = 0; i < n; i++) {
		assert_string_equal(rn_strerror(rows[i].code), rows[i].sentence);
		assert_int_equal(rn_errno(rows[i].code), rows[i].err);
		assert_true(rows[i].code == RN_OK ? rows[i].err == 0 : rows[i].err > 0);
		for (size_t j = 0; j < i; j++) {
			assert_int_not_equal(rows[i].code, rows[j].code);
			assert_string_not_equal(rows[i].sentence, rows[j].sentence);
		}
	}
	/* what socket calls report for the ends a connection can meet */
	assert_int_equal(rn_errno(RN_ERR_TIMEDOUT), ETIMEDOUT);
	assert_int_equal(rn_errno(RN_ERR_REFUSED), ECONNREFUSED);
	assert_int_equal(rn_errno(RN_ERR_RESET), ECONNRESET);
	assert_int_equal(rn_errno(RN_ERR_NOROUTE), ENETUNREACH);
	assert_string_equal(rn_strerror(-999), "unknown error");
	assert_int_equal(rn_errno(-999), ECONNRESET);
}

/* The receive pool's share (rn_core.h): a table of cases. */
static void test_config_rcv_share(void **state)
{
	rn_rcvpool p = { .bytes = 4u << 20 };
	static const struct {
		uint32_t rcv_slots, others, floor, want;
	} cases[] = {
		{ 2048, 0, 0, 2048 },  /* alone: 4 MiB holds 2896 packets, the window is whole */
		{ 2048, 1, 0, 1024 },  /* 1448 fit: halved to a power of two */
		{ 2048, 15, 0, 128 },  /* 181 fit */
		{ 2048, 99, 0, 64 },   /* 28 fit: never below RN_MIN_SLOTS */
		{ 2048, 99, 256, 256 }, /* ...nor below the pool's floor */
		{ 64, 15, 0, 64 },     /* a small window stays as it is */
	};

	(void)state;
	for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
		p.floor_slots = cases[i].floor;
		assert_int_equal(rn_config_rcv_share(&p, cases[i].rcv_slots, 1448, cases[i].others),
				 cases[i].want);
	}
	/* no pool, or one without a size: the configured window */
	assert_int_equal(rn_config_rcv_share(NULL, 2048, 1448, 99), 2048);
	p.bytes = 0;
	assert_int_equal(rn_config_rcv_share(&p, 2048, 1448, 99), 2048);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_error_list),
		cmocka_unit_test(test_config_defaults_pass),
		cmocka_unit_test(test_config_bad_values),
		cmocka_unit_test(test_config_strerror),
		cmocka_unit_test(test_config_drop_names),
		cmocka_unit_test(test_config_cause_names),
		cmocka_unit_test(test_config_state_names),
		cmocka_unit_test(test_config_rcv_share),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
