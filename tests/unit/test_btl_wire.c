/*
 * test_btl_wire.c - the BTL's stream frames and nudges (btl_ri2n/btl_ri2n_wire.c):
 * every header checked before a byte is allocated for it, tags inside the
 * active-message table, a hello only first on an accepted stream, nudges
 * tagged under the cluster key.
 */
#include "unit_common.h"

#include "btl_ri2n_wire.h"

static size_t frame(uint8_t *b, uint32_t len, uint8_t tag, uint8_t type)
{
	b[0] = (uint8_t)(len >> 24);
	b[1] = (uint8_t)(len >> 16);
	b[2] = (uint8_t)(len >> 8);
	b[3] = (uint8_t)len;
	b[4] = tag;
	b[5] = type;
	b[6] = b[7] = 0;
	return RI2N_HDR_LEN;
}

typedef struct hdr_case {
	const char *name;
	uint32_t len;
	uint8_t tag, type, reserved;
	int bound;
	int ok;
} hdr_case;

static void test_btl_wire_headers(void **state)
{
	static const hdr_case cases[] = {
		{ "fragment after the hello", 100, 65, RI2N_FT_FRAG, 0, 1, 1 },
		{ "fragment of 64 MiB", 64u << 20, 65, RI2N_FT_FRAG, 0, 1, 1 },
		{ "fragment past 64 MiB", (64u << 20) + 1, 65, RI2N_FT_FRAG, 0, 1, 0 },
		{ "tag 254: the last in the table", 10, 254, RI2N_FT_FRAG, 0, 1, 1 },
		{ "tag 255: past the table", 10, 255, RI2N_FT_FRAG, 0, 1, 0 },
		{ "fragment before the hello", 10, 65, RI2N_FT_FRAG, 0, 0, 0 },
		{ "a huge fragment before the hello", 64u << 20, 65, RI2N_FT_FRAG, 0, 0, 0 },
		{ "hello first", RI2N_HELLO_LEN, 0, RI2N_FT_HELLO, 0, 0, 1 },
		{ "hello of 13 bytes", RI2N_HELLO_LEN + 1, 0, RI2N_FT_HELLO, 0, 0, 0 },
		{ "a second hello", RI2N_HELLO_LEN, 0, RI2N_FT_HELLO, 0, 1, 0 },
		{ "type 3", 10, 0, 3, 0, 1, 0 },
		{ "type 0", 10, 0, 0, 0, 1, 0 },
		{ "reserved bytes", 10, 65, RI2N_FT_FRAG, 1, 1, 0 },
	};

	(void)state;
	for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
		const hdr_case *tc = &cases[i];
		uint8_t h[RI2N_HDR_LEN];
		const char *why;

		frame(h, tc->len, tc->tag, tc->type);
		h[7] = tc->reserved;
		why = rbtl_wire_check_hdr(h, tc->bound);
		if ((why == NULL) != tc->ok)
			fail_msg("case \"%s\": %s", tc->name, why ? why : "accepted");
	}
}

typedef struct got {
	int n;
	uint8_t tag, type;
	size_t len;
	int bind;
	rbtl_rx *rx;
} got;

static void on_frame(void *arg, uint8_t tag, uint8_t type, uint8_t *d, size_t len)
{
	got *g = arg;

	(void)d;
	g->n++;
	g->tag = tag;
	g->type = type;
	g->len = len;
	if (type == RI2N_FT_HELLO && g->bind)
		g->rx->bound = 1;
}

/*
 * An accepted stream that announces a 64 MiB fragment before its hello is
 * refused at the header, with nothing allocated; header by header, in
 * pieces of one byte, the same.
 */
static void test_btl_wire_no_alloc_before_hello(void **state)
{
	for (int piece = 0; piece < 2; piece++) {
		rbtl_rx rx = { 0 };
		got g = { .rx = &rx };
		uint8_t b[RI2N_HDR_LEN];
		const char *why = NULL;
		ssize_t used = 0;

		(void)state;
		frame(b, 64u << 20, 65, RI2N_FT_FRAG);
		if (piece) {
			for (int i = 0; i < RI2N_HDR_LEN && used >= 0; i++)
				used = rbtl_rx_step(&rx, b + i, 1, on_frame, &g, &why);
		} else {
			used = rbtl_rx_step(&rx, b, sizeof(b), on_frame, &g, &why);
		}
		assert_int_equal(used, -1);
		assert_non_null(why);
		assert_int_equal(rx.cap, 0);
		assert_null(rx.buf);
		assert_int_equal(g.n, 0);
	}
}

/* hello, then fragments, split anywhere: each handed over whole, in order. */
static void test_btl_wire_stream(void **state)
{
	uint8_t s[256];
	size_t n = 0;
	rbtl_rx rx = { 0 };
	got g = { .rx = &rx, .bind = 1 };
	const char *why;

	(void)state;
	n += frame(s + n, RI2N_HELLO_LEN, 0, RI2N_FT_HELLO);
	s[n++] = 0x52, s[n++] = 0x32, s[n++] = 0x4e, s[n++] = 0x42;
	memset(s + n, 0, 8);
	n += 8;
	n += frame(s + n, 100, 65, RI2N_FT_FRAG);
	memset(s + n, 0xab, 100);
	n += 100;
	for (size_t cut = 1; cut < n; cut++) {
		size_t off = 0;

		memset(&rx, 0, sizeof(rx));
		g = (got){ .rx = &rx, .bind = 1 };
		while (off < n) {
			size_t give = off < cut ? cut - off : n - off;
			ssize_t used = rbtl_rx_step(&rx, s + off, give, on_frame, &g, &why);

			if (used <= 0)
				fail_msg("cut at %zu: %s", cut, why ? why : "nothing used");
			off += (size_t)used;
		}
		assert_int_equal(g.n, 2);
		assert_int_equal(g.type, RI2N_FT_FRAG);
		assert_int_equal(g.tag, 65);
		assert_int_equal(g.len, 100);
		rbtl_rx_free(&rx);
	}
}

/* Nudges: plain and tagged; a keyed receiver refuses untagged and forged ones. */
static void test_btl_wire_nudge(void **state)
{
	uint8_t key[RN_KEY_LEN] = { 1, 2, 3 }, other[RN_KEY_LEN] = { 9 };
	uint8_t b[64];
	uint32_t j, v;
	size_t n;

	(void)state;
	n = rbtl_wire_nudge_write(b, sizeof(b), 7, 9, NULL);
	assert_int_equal(n, RI2N_NUDGE_LEN);
	assert_true(rbtl_wire_is_nudge(b, n));
	assert_int_equal(rbtl_wire_nudge_read(b, n, NULL, &j, &v), 0);
	assert_int_equal(j, 7);
	assert_int_equal(v, 9);
	/* a keyed receiver: the untagged nudge is refused */
	assert_int_equal(rbtl_wire_nudge_read(b, n, key, &j, &v), -1);
	n = rbtl_wire_nudge_write(b, sizeof(b), 7, 9, key);
	assert_int_equal(n, RI2N_NUDGE_LEN + RI2N_NUDGE_TAG_LEN);
	assert_true(rbtl_wire_is_nudge(b, n));
	assert_int_equal(rbtl_wire_nudge_read(b, n, key, &j, &v), 0);
	assert_int_equal(rbtl_wire_nudge_read(b, n, other, &j, &v), -1);
	b[15] ^= 1; /* another vpid under the same tag */
	assert_int_equal(rbtl_wire_nudge_read(b, n, key, &j, &v), -1);
	assert_int_equal(rbtl_wire_nudge_write(b, RI2N_NUDGE_LEN, 7, 9, key), 0);
	/* not a nudge: ri2n's datagrams start with version 1 */
	b[0] = 1;
	assert_false(rbtl_wire_is_nudge(b, RI2N_NUDGE_LEN));
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_btl_wire_headers),
		cmocka_unit_test(test_btl_wire_no_alloc_before_hello),
		cmocka_unit_test(test_btl_wire_stream),
		cmocka_unit_test(test_btl_wire_nudge),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
