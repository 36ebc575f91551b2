/*
 * test_wire.c - the datagram format: every packet type round-trips, and every
 * malformed datagram is rejected with the drop reason the core counts.
 */
#include <sodium.h>

#include "unit_common.h"

#include "rn_wire.h"

enum { WIRE_OK = -1 };
static const uint64_t DST = UINT64_C(0x0123456789abcdef);

/* The rn_drop a decode returned, or WIRE_OK. */
static int decode_result(rn_pkt *p, const uint8_t *buf, size_t len)
{
	int rc = rn_wire_decode(p, buf, len);

	if (rc == 0)
		return WIRE_OK;
	assert_true(rc < 0 && rc >= -RN_DROP__COUNT);
	return -rc - 1;
}

static void put_be(uint8_t *p, int width, uint64_t v)
{
	for (int i = width - 1; i >= 0; i--, v >>= 8)
		p[i] = (uint8_t)v;
}

/* ---- round trip ---- */

typedef struct rt_case {
	const char *name;
	uint8_t type, flags;
	uint64_t dst;
	int ack;           /* with an ACK block */
	unsigned nwords;   /* SACK words in it */
	size_t plen;
} rt_case;

static const rt_case rt_cases[] = {
	{ "DATA", RN_PT_DATA, 0, DST, 0, 0, 1000 },
	{ "DATA + ACK", RN_PT_DATA, 0, DST, 1, 0, 1000 },
	{ "DATA + ACK + 3 SACK words", RN_PT_DATA, 0, DST, 1, 3, 7 },
	{ "DATA FIN", RN_PT_DATA, RN_F_FIN, DST, 0, 0, 0 },
	{ "DATA FIN + ACK + SACK", RN_PT_DATA, RN_F_FIN, DST, 1, 2, 0 },
	{ "DATA LATE + ACK", RN_PT_DATA, RN_F_LATE, DST, 1, 0, 100 },
	{ "DATA EARLY", RN_PT_DATA, RN_F_EARLY, DST, 0, 0, 100 },
	{ "ACK", RN_PT_ACK, 0, DST, 1, 0, 0 },
	{ "ACK + 1 SACK word", RN_PT_ACK, 0, DST, 1, 1, 0 },
	{ "ACK + 128 SACK words (the most)", RN_PT_ACK, 0, DST, 1, RN_MAX_SACK_WORDS, 0 },
	{ "INIT padded exactly", RN_PT_INIT, 0, 0, 0, 0, RN_INIT_LEN - RN_HDR_LEN },
	{ "INIT padded more", RN_PT_INIT, 0, 0, 0, 0, 400 },
	{ "INIT_ACK", RN_PT_INIT_ACK, 0, DST, 0, 0, RN_HELLO_FIXED + 8 + RN_COOKIE_LEN },
	{ "COOKIE_ECHO", RN_PT_COOKIE_ECHO, 0, DST, 0, 0, RN_HELLO_FIXED + 16 + RN_COOKIE_LEN },
	{ "COOKIE_ACK", RN_PT_COOKIE_ACK, 0, DST, 0, 0, 0 },
	{ "COOKIE_ACK + ACK", RN_PT_COOKIE_ACK, 0, DST, 1, 1, 0 },
	{ "LINK_STATE", RN_PT_LINK_STATE, 0, DST, 0, 0, RN_LINK_STATE_LEN },
	{ "LINK_STATE + ACK", RN_PT_LINK_STATE, 0, DST, 1, 2, RN_LINK_STATE_LEN },
	{ "LINK_ACK", RN_PT_LINK_ACK, 0, DST, 0, 0, RN_LINK_ACK_LEN },
	{ "LINK_ACK + ACK", RN_PT_LINK_ACK, 0, DST, 1, 0, RN_LINK_ACK_LEN },
	{ "HEARTBEAT", RN_PT_HEARTBEAT, 0, DST, 0, 0, 0 },
	{ "HEARTBEAT + ACK", RN_PT_HEARTBEAT, 0, DST, 1, 4, 0 },
	{ "KEEPALIVE", RN_PT_KEEPALIVE, 0, DST, 0, 0, 0 },
	{ "KEEPALIVE + ACK", RN_PT_KEEPALIVE, 0, DST, 1, 0, 0 },
	{ "HEARTBEAT zero-padded", RN_PT_HEARTBEAT, 0, DST, 0, 0, 1000 },
	{ "KEEPALIVE + ACK zero-padded", RN_PT_KEEPALIVE, 0, DST, 1, 2, 1000 },
	{ "RESET", RN_PT_RESET, 0, DST, 0, 0, RN_RESET_LEN },
	{ "RESET + ACK", RN_PT_RESET, 0, DST, 1, 1, RN_RESET_LEN },
};

static void test_wire_round_trip(void **state)
{
	static uint8_t buf[4096], payload[1024];
	uint64_t words[RN_MAX_SACK_WORDS];

	(void)state;
	for (unsigned i = 0; i < RN_MAX_SACK_WORDS; i++)
		words[i] = UINT64_C(0x8000000000000001) ^
			   ((uint64_t)i * UINT64_C(0x0101010101010101));
	for (size_t i = 0; i < sizeof(rt_cases) / sizeof(rt_cases[0]); i++) {
		const rt_case *tc = &rt_cases[i];
		rn_hdr h = { .type = tc->type, .flags = tc->flags, .path = 5, .dst = tc->dst,
			     .seq = 0xfffffffe, .ts = 0x12345678 };
		rn_ackblk ab = { .ack = 0xdeadbeef, .wnd = 0xdeadbeef + 2048, .ts_echo = 77,
				 .ts_rx = 0x87654321, .echo_path = 3, .nwords = (uint16_t)tc->nwords,
				 .words = words };
		rn_pkt p;
		ssize_t n;

		/* INIT, HEARTBEAT, KEEPALIVE carry zero padding; others any bytes */
		for (size_t b = 0; b < tc->plen; b++)
			payload[b] = tc->type == RN_PT_INIT || tc->type == RN_PT_HEARTBEAT ||
					     tc->type == RN_PT_KEEPALIVE ? 0 : (uint8_t)(b * 7 + 1);
		n = rn_wire_encode(buf, sizeof(buf), &h, tc->ack ? &ab : NULL, payload, tc->plen);
		print_message("case %s\n", tc->name);
		assert_int_equal(n, rn_wire_size(tc->ack, tc->nwords, tc->plen));
		assert_int_equal(decode_result(&p, buf, (size_t)n), WIRE_OK);
		assert_int_equal(p.type, tc->type);
		assert_int_equal(p.flags, tc->flags | (tc->ack ? RN_F_ACK : 0));
		assert_int_equal(p.path, 5);
		assert_true(p.dst == tc->dst);
		assert_int_equal(p.seq, 0xfffffffe);
		assert_int_equal(p.ts, 0x12345678);
		assert_int_equal(p.len, tc->plen);
		assert_ptr_equal(p.payload, buf + n - (ssize_t)tc->plen);
		if (tc->plen)
			assert_memory_equal(p.payload, payload, tc->plen);
		if (tc->ack) {
			assert_int_equal(p.ack, 0xdeadbeef);
			assert_int_equal(p.wnd, 0xdeadbeef + 2048);
			assert_int_equal(p.ts_echo, 77);
			assert_int_equal(p.ts_rx, 0x87654321);
			assert_int_equal(p.echo_path, 3);
			assert_int_equal(p.nwords, tc->nwords);
			for (unsigned w = 0; w < tc->nwords; w++)
				assert_true(rn_wire_sack_word(&p, w) == words[w]);
		} else {
			assert_int_equal(p.nwords, 0);
		}
		/* a word past the ones sent reads as "nothing received" */
		assert_true(rn_wire_sack_word(&p, tc->nwords) == 0);
	}
}

/* Header fields sit where docs/PROTOCOL.md puts them, big-endian. */
static void test_wire_layout(void **state)
{
	uint8_t buf[64];
	rn_hdr h = { .type = RN_PT_DATA, .path = 2, .dst = DST, .seq = 0x01020304,
		     .ts = 0x0a0b0c0d };
	const uint8_t want[24] = { 1, RN_PT_DATA, 0, 2, 0x01, 0x23, 0x45, 0x67, 0x89, 0xab, 0xcd,
				   0xef, 1, 2, 3, 4, 0x0a, 0x0b, 0x0c, 0x0d, 0, 3, 0, 0 };

	(void)state;
	assert_int_equal(rn_wire_encode(buf, sizeof(buf), &h, NULL, "xyz", 3), 27);
	assert_memory_equal(buf, want, sizeof(want));
	assert_memory_equal(buf + 24, "xyz", 3);
	assert_true(rn_wire_peek_dst(buf, 27) == DST);
	assert_true(rn_wire_peek_dst(buf, RN_HDR_LEN) == DST);
	/* too short to tell: 0, which no connection uses */
	assert_true(rn_wire_peek_dst(buf, RN_HDR_LEN - 1) == 0);
}

/* The encoder never writes past cap, whatever is too long. */
static void test_wire_encode_nobuf(void **state)
{
	uint8_t buf[256], payload[100] = { 0 };
	uint64_t words[2] = { 1, 2 };
	rn_hdr h = { .type = RN_PT_DATA, .dst = DST };
	rn_ackblk ab = { .nwords = 2, .words = words };
	size_t need = rn_wire_size(1, 2, 100);

	(void)state;
	assert_int_equal(need, 24 + 20 + 16 + 100);
	memset(buf, 0xee, sizeof(buf));
	assert_int_equal(rn_wire_encode(buf, need - 1, &h, &ab, payload, 100), RN_ERR_NOBUF);
	/* nothing was written on failure */
	for (size_t i = 0; i < sizeof(buf); i++)
		assert_int_equal(buf[i], 0xee);
	assert_int_equal(rn_wire_encode(buf, need, &h, &ab, payload, 100), (ssize_t)need);
	assert_int_equal(buf[need], 0xee);
	assert_int_equal(rn_wire_encode(buf, RN_HDR_LEN - 1, &h, NULL, NULL, 0), RN_ERR_NOBUF);
	/* a payload the 16-bit length field cannot carry */
	assert_int_equal(rn_wire_encode(buf, SIZE_MAX, &h, NULL, payload, 65536), RN_ERR_NOBUF);
}

/* ---- strict decoding: a table of malformed datagrams ---- */

typedef struct poke {
	int off; /* byte offset; 0 with width 0: none */
	int width;
	uint64_t val;
} poke;

typedef struct bad_case {
	const char *name;
	uint8_t type, flags;
	uint64_t dst;
	int ack;
	unsigned nwords;
	size_t plen;
	poke pk[2];
	long trunc;   /* >= 0: cut the datagram to this many bytes */
	size_t extra; /* zero bytes appended */
	int want;     /* rn_drop, or WIRE_OK */
} bad_case;

#define NOCUT (-1)
#define HDR RN_HDR_LEN
#define AB RN_HDR_LEN /* offset of the ACK block */

static const bad_case bad_cases[] = {
	/* lengths of the datagram itself */
	{ "empty", RN_PT_DATA, 0, DST, 0, 0, 10, {{0}}, 0, 0, RN_DROP_MALFORMED },
	{ "one byte short of a header", RN_PT_KEEPALIVE, 0, DST, 0, 0, 0, {{0}}, HDR - 1, 0,
	  RN_DROP_MALFORMED },
	/* version comes first: a future version may change everything after it */
	{ "version 0", RN_PT_DATA, 0, DST, 0, 0, 10, {{ 0, 1, 0 }}, NOCUT, 0, RN_DROP_VERSION },
	{ "version 2", RN_PT_DATA, 0, DST, 0, 0, 10, {{ 0, 1, 2 }}, NOCUT, 0, RN_DROP_VERSION },
	{ "version before type", RN_PT_DATA, 0, DST, 0, 0, 10, {{ 0, 1, 2 }, { 1, 1, 99 }}, NOCUT,
	  0, RN_DROP_VERSION },
	{ "version before length", RN_PT_DATA, 0, DST, 0, 0, 10, {{ 0, 1, 9 }}, HDR + 3, 0,
	  RN_DROP_VERSION },
	{ "type 0", RN_PT_DATA, 0, DST, 0, 0, 10, {{ 1, 1, 0 }}, NOCUT, 0, RN_DROP_TYPE },
	{ "type 17", RN_PT_DATA, 0, DST, 0, 0, 10, {{ 1, 1, RN_PT__MAX + 1 }}, NOCUT, 0, RN_DROP_TYPE },
	{ "type 255", RN_PT_DATA, 0, DST, 0, 0, 10, {{ 1, 1, 255 }}, NOCUT, 0, RN_DROP_TYPE },
	/* reserved bits must be zero so they can be given a meaning later */
	{ "flag 0x40", RN_PT_DATA, 0, DST, 0, 0, 10, {{ 2, 1, 0x40 }}, NOCUT, 0, RN_DROP_MALFORMED },
	/* early data: before the COOKIE_ACK a client acknowledges nothing and sends no FIN */
	{ "EARLY with an ACK block", RN_PT_DATA, 0, DST, 1, 0, 10, {{ 2, 1, 0x21 }}, NOCUT, 0,
	  RN_DROP_MALFORMED },
	{ "EARLY with FIN", RN_PT_DATA, RN_F_FIN, DST, 0, 0, 0, {{ 2, 1, 0x22 }}, NOCUT, 0,
	  RN_DROP_MALFORMED },
	{ "EARLY on a KEEPALIVE", RN_PT_KEEPALIVE, 0, DST, 1, 0, 0, {{ 2, 1, 0x21 }}, NOCUT, 0,
	  RN_DROP_MALFORMED },
	{ "LATE without an ACK block", RN_PT_DATA, 0, DST, 0, 0, 10, {{ 2, 1, 0x10 }}, NOCUT, 0,
	  RN_DROP_MALFORMED },
	{ "LATE on an ACK", RN_PT_ACK, 0, DST, 1, 0, 0, {{ 2, 1, 0x11 }}, NOCUT, 0, RN_DROP_MALFORMED },
	{ "COPY on an ACK", RN_PT_ACK, 0, DST, 0, 0, 0, {{ 2, 1, 0x09 }}, NOCUT, 0, RN_DROP_MALFORMED },
	{ "flag 0x80", RN_PT_DATA, 0, DST, 0, 0, 10, {{ 2, 1, 0x80 }}, NOCUT, 0, RN_DROP_MALFORMED },
	{ "header byte 22", RN_PT_DATA, 0, DST, 0, 0, 10, {{ 22, 1, 1 }}, NOCUT, 0,
	  RN_DROP_MALFORMED },
	{ "header byte 23", RN_PT_DATA, 0, DST, 0, 0, 10, {{ 23, 1, 0x80 }}, NOCUT, 0,
	  RN_DROP_MALFORMED },
	{ "ACK block byte 17", RN_PT_ACK, 0, DST, 1, 0, 0, {{ AB + 17, 1, 1 }}, NOCUT, 0,
	  RN_DROP_MALFORMED },
	/* flags on the wrong type */
	{ "FIN on HEARTBEAT", RN_PT_HEARTBEAT, RN_F_FIN, DST, 0, 0, 0, {{0}}, NOCUT, 0,
	  RN_DROP_MALFORMED },
	{ "FIN on ACK", RN_PT_ACK, RN_F_FIN, DST, 1, 0, 0, {{0}}, NOCUT, 0, RN_DROP_MALFORMED },
	{ "FIN on RESET", RN_PT_RESET, RN_F_FIN, DST, 0, 0, RN_RESET_LEN, {{0}}, NOCUT, 0,
	  RN_DROP_MALFORMED },
	{ "FIN with payload", RN_PT_DATA, RN_F_FIN, DST, 0, 0, 10, {{0}}, NOCUT, 0,
	  RN_DROP_MALFORMED },
	{ "DATA without payload or FIN", RN_PT_DATA, 0, DST, 0, 0, 0, {{0}}, NOCUT, 0,
	  RN_DROP_MALFORMED },
	/* several packets in one datagram: DATA only, never the FIN, room for a length */
	{ "MULTI with FIN", RN_PT_DATA, RN_F_MULTI | RN_F_FIN, DST, 0, 0, 0, {{0}}, NOCUT, 0,
	  RN_DROP_MALFORMED },
	{ "MULTI on KEEPALIVE", RN_PT_KEEPALIVE, RN_F_MULTI, DST, 0, 0, 4, {{0}}, NOCUT, 0,
	  RN_DROP_MALFORMED },
	{ "MULTI, one byte", RN_PT_DATA, RN_F_MULTI, DST, 0, 0, 1, {{0}}, NOCUT, 0,
	  RN_DROP_MALFORMED },
	/* size probes: an id, zeros after it; the answer has a fixed length */
	{ "PROBE without id", RN_PT_PROBE, 0, DST, 0, 0, 3, {{0}}, NOCUT, 0, RN_DROP_MALFORMED },
	{ "PROBE padding not zero", RN_PT_PROBE, 0, DST, 0, 0, 100, {{ HDR + 50, 1, 1 }}, NOCUT, 0,
	  RN_DROP_MALFORMED },
	{ "PROBE_ACK short", RN_PT_PROBE_ACK, 0, DST, 0, 0, RN_PROBE_ACK_LEN - 1, {{0}}, NOCUT, 0,
	  RN_DROP_MALFORMED },
	{ "PROBE_ACK long", RN_PT_PROBE_ACK, 0, DST, 0, 0, RN_PROBE_ACK_LEN + 1, {{0}}, NOCUT, 0,
	  RN_DROP_MALFORMED },
	{ "PROBE padded", RN_PT_PROBE, 0, DST, 0, 0, 1500, {{ HDR, 4, 77 }}, NOCUT, 0, WIRE_OK },
	{ "PROBE_ACK", RN_PT_PROBE_ACK, 0, DST, 1, 2, RN_PROBE_ACK_LEN, {{0}}, NOCUT, 0, WIRE_OK },
	{ "MULTI DATA", RN_PT_DATA, RN_F_MULTI, DST, 1, 1, 900, {{0}}, NOCUT, 0, WIRE_OK },
	{ "ACK without ACK block", RN_PT_ACK, 0, DST, 0, 0, 0, {{0}}, NOCUT, 0, RN_DROP_MALFORMED },
	{ "ACK flag on INIT", RN_PT_INIT, 0, 0, 1, 0, RN_INIT_LEN - HDR - RN_ACKBLK_LEN, {{0}},
	  NOCUT, 0, RN_DROP_MALFORMED },
	{ "ACK flag on INIT_ACK", RN_PT_INIT_ACK, 0, DST, 1, 0, 56, {{0}}, NOCUT, 0,
	  RN_DROP_MALFORMED },
	{ "ACK flag on COOKIE_ECHO", RN_PT_COOKIE_ECHO, 0, DST, 1, 0, 64, {{0}}, NOCUT, 0,
	  RN_DROP_MALFORMED },
	/* the payload length must match exactly, both ways */
	{ "length field one more", RN_PT_DATA, 0, DST, 0, 0, 10, {{ 20, 2, 11 }}, NOCUT, 0,
	  RN_DROP_MALFORMED },
	{ "length field one less", RN_PT_DATA, 0, DST, 0, 0, 10, {{ 20, 2, 9 }}, NOCUT, 0,
	  RN_DROP_MALFORMED },
	{ "length field 65535", RN_PT_DATA, 0, DST, 0, 0, 10, {{ 20, 2, 65535 }}, NOCUT, 0,
	  RN_DROP_MALFORMED },
	{ "a trailing byte", RN_PT_DATA, 0, DST, 0, 0, 10, {{0}}, NOCUT, 1, RN_DROP_MALFORMED },
	{ "payload cut short", RN_PT_DATA, 0, DST, 0, 0, 10, {{0}}, HDR + 5, 0,
	  RN_DROP_MALFORMED },
	{ "payload with ACK block, length one less", RN_PT_DATA, 0, DST, 1, 1, 10,
	  {{ 20, 2, 9 }}, NOCUT, 0, RN_DROP_MALFORMED },
	/* the ACK block must be all there before it is read */
	{ "ACK flag, no block", RN_PT_HEARTBEAT, 0, DST, 0, 0, 0, {{ 2, 1, RN_F_ACK }}, NOCUT, 0,
	  RN_DROP_MALFORMED },
	{ "ACK block truncated", RN_PT_ACK, 0, DST, 1, 0, 0, {{0}}, AB + RN_ACKBLK_LEN - 1, 0,
	  RN_DROP_MALFORMED },
	{ "SACK words truncated", RN_PT_ACK, 0, DST, 1, 2, 0, {{0}}, AB + RN_ACKBLK_LEN + 15, 0,
	  RN_DROP_MALFORMED },
	{ "SACK count larger than the words", RN_PT_ACK, 0, DST, 1, 2, 0, {{ AB + 18, 2, 3 }},
	  NOCUT, 0, RN_DROP_MALFORMED },
	/* 129 words, all present: refused by count, not by length */
	{ "129 SACK words", RN_PT_ACK, 0, DST, 1, 0, 0, {{ AB + 18, 2, 129 }}, NOCUT, 129 * 8,
	  RN_DROP_MALFORMED },
	{ "65535 SACK words", RN_PT_ACK, 0, DST, 1, 0, 0, {{ AB + 18, 2, 65535 }}, NOCUT, 0,
	  RN_DROP_MALFORMED },
	/* INIT: padded so no reply is larger, and addressed to nobody */
	{ "INIT 100 bytes", RN_PT_INIT, 0, 0, 0, 0, 100 - HDR, {{0}}, NOCUT, 0, RN_DROP_MALFORMED },
	{ "INIT one byte short", RN_PT_INIT, 0, 0, 0, 0, RN_INIT_LEN - HDR - 1, {{0}}, NOCUT, 0,
	  RN_DROP_MALFORMED },
	{ "INIT exactly padded", RN_PT_INIT, 0, 0, 0, 0, RN_INIT_LEN - HDR, {{0}}, NOCUT, 0,
	  WIRE_OK },
	{ "INIT with a destination", RN_PT_INIT, 0, 5, 0, 0, RN_INIT_LEN - HDR, {{0}}, NOCUT, 0,
	  RN_DROP_MALFORMED },
	{ "INIT_ACK shorter than hello + cookie", RN_PT_INIT_ACK, 0, DST, 0, 0,
	  RN_HELLO_FIXED + RN_COOKIE_LEN - 1, {{0}}, NOCUT, 0, RN_DROP_MALFORMED },
	{ "INIT_ACK hello + cookie", RN_PT_INIT_ACK, 0, DST, 0, 0, RN_HELLO_FIXED + RN_COOKIE_LEN,
	  {{0}}, NOCUT, 0, WIRE_OK },
	{ "COOKIE_ECHO short", RN_PT_COOKIE_ECHO, 0, DST, 0, 0, RN_HELLO_FIXED, {{0}}, NOCUT, 0,
	  RN_DROP_MALFORMED },
	/* destination 0 is "no connection": only INIT may carry it */
	{ "DATA to 0", RN_PT_DATA, 0, 0, 0, 0, 10, {{0}}, NOCUT, 0, RN_DROP_MALFORMED },
	{ "ACK to 0", RN_PT_ACK, 0, 0, 1, 0, 0, {{0}}, NOCUT, 0, RN_DROP_MALFORMED },
	{ "INIT_ACK to 0", RN_PT_INIT_ACK, 0, 0, 0, 0, 56, {{0}}, NOCUT, 0, RN_DROP_MALFORMED },
	{ "COOKIE_ECHO to 0", RN_PT_COOKIE_ECHO, 0, 0, 0, 0, 64, {{0}}, NOCUT, 0,
	  RN_DROP_MALFORMED },
	{ "HEARTBEAT to 0", RN_PT_HEARTBEAT, 0, 0, 0, 0, 0, {{0}}, NOCUT, 0, RN_DROP_MALFORMED },
	{ "RESET to 0", RN_PT_RESET, 0, 0, 0, 0, RN_RESET_LEN, {{0}}, NOCUT, 0, RN_DROP_MALFORMED },
	/* fixed payload lengths of the control packets */
	{ "LINK_STATE 7", RN_PT_LINK_STATE, 0, DST, 0, 0, 7, {{0}}, NOCUT, 0, RN_DROP_MALFORMED },
	{ "LINK_STATE 9", RN_PT_LINK_STATE, 0, DST, 0, 0, 9, {{0}}, NOCUT, 0, RN_DROP_MALFORMED },
	{ "LINK_STATE 0", RN_PT_LINK_STATE, 0, DST, 1, 0, 0, {{0}}, NOCUT, 0, RN_DROP_MALFORMED },
	{ "LINK_ACK 3", RN_PT_LINK_ACK, 0, DST, 0, 0, 3, {{0}}, NOCUT, 0, RN_DROP_MALFORMED },
	{ "LINK_ACK 5", RN_PT_LINK_ACK, 0, DST, 0, 0, 5, {{0}}, NOCUT, 0, RN_DROP_MALFORMED },
	{ "RESET 0", RN_PT_RESET, 0, DST, 0, 0, 0, {{0}}, NOCUT, 0, RN_DROP_MALFORMED },
	{ "RESET 8", RN_PT_RESET, 0, DST, 0, 0, 8, {{0}}, NOCUT, 0, RN_DROP_MALFORMED },
	{ "COOKIE_ACK 1", RN_PT_COOKIE_ACK, 0, DST, 0, 0, 1, {{0}}, NOCUT, 0, RN_DROP_MALFORMED },
	/* heartbeats and keepalives carry only zero padding */
	{ "HEARTBEAT padding not zero", RN_PT_HEARTBEAT, 0, DST, 0, 0, 1, {{ HDR, 1, 1 }}, NOCUT, 0,
	  RN_DROP_MALFORMED },
	{ "KEEPALIVE padding not zero", RN_PT_KEEPALIVE, 0, DST, 0, 0, 1400, {{ HDR + 1399, 1, 0x80 }},
	  NOCUT, 0, RN_DROP_MALFORMED },
	{ "ACK with payload", RN_PT_ACK, 0, DST, 1, 0, 1, {{0}}, NOCUT, 0, RN_DROP_MALFORMED },
};

static size_t build_case(uint8_t *buf, size_t cap, const bad_case *tc)
{
	static uint8_t payload[2048];
	uint64_t words[4] = { 1, 2, 3, 4 };
	rn_hdr h = { .type = tc->type, .flags = tc->flags, .path = 1, .dst = tc->dst, .seq = 9 };
	rn_ackblk ab = { .ack = 1, .wnd = 100, .nwords = (uint16_t)tc->nwords, .words = words };
	ssize_t n;
	size_t len;

	memset(payload, 0, sizeof(payload));
	n = rn_wire_encode(buf, cap, &h, tc->ack ? &ab : NULL, payload, tc->plen);
	assert_true(n > 0);
	len = (size_t)n;
	for (int i = 0; i < 2; i++)
		if (tc->pk[i].width)
			put_be(buf + tc->pk[i].off, tc->pk[i].width, tc->pk[i].val);
	memset(buf + len, 0, tc->extra);
	len += tc->extra;
	if (tc->trunc >= 0)
		len = (size_t)tc->trunc;
	return len;
}

static void test_wire_decode_rejects(void **state)
{
	static uint8_t buf[4096];

	(void)state;
	for (size_t i = 0; i < sizeof(bad_cases) / sizeof(bad_cases[0]); i++) {
		const bad_case *tc = &bad_cases[i];
		size_t len = build_case(buf, sizeof(buf), tc);
		rn_pkt p;
		int got = decode_result(&p, buf, len);

		if (got != tc->want)
			fail_msg("case \"%s\": got %s, want %s", tc->name,
				 got == WIRE_OK ? "accepted" : rn_drop_name((rn_drop)got),
				 tc->want == WIRE_OK ? "accepted" : rn_drop_name((rn_drop)tc->want));
	}
}

/* The largest UDP payload is the largest datagram; one more byte cannot be real. */
static void test_wire_decode_size_limit(void **state)
{
	static uint8_t buf[RN_MAX_DGRAM + 16], payload[RN_MAX_DGRAM];
	rn_hdr h = { .type = RN_PT_DATA, .dst = DST };
	size_t plen = RN_MAX_DGRAM - RN_HDR_LEN;
	rn_pkt p;

	(void)state;
	assert_int_equal(rn_wire_encode(buf, sizeof(buf), &h, NULL, payload, plen),
			 RN_MAX_DGRAM);
	assert_int_equal(decode_result(&p, buf, RN_MAX_DGRAM), WIRE_OK);
	assert_int_equal(p.len, plen);
	assert_int_equal(decode_result(&p, buf, RN_MAX_DGRAM + 1), RN_DROP_MALFORMED);
}

/* ---- handshake parameters ---- */

static rn_hello hello2(void)
{
	rn_hello h = { .id = UINT64_C(0xfedcba9876543210), .isn = 0x80000001, .slots = 1024,
		       .max_dgram = 9000, .nrails = 2 };

	h.rails[0] = (rn_rail_addr){ .ip = UT_IP(10, 0, 1, 1), .port = 40000, .prefix = 24 };
	h.rails[1] = (rn_rail_addr){ .ip = UT_IP(10, 0, 2, 1), .port = 40001, .prefix = 32 };
	return h;
}

static void test_wire_hello_round_trip(void **state)
{
	uint8_t buf[512], cookie[RN_COOKIE_LEN];
	rn_hello h = hello2(), d;
	ssize_t n;

	(void)state;
	for (int i = 0; i < RN_COOKIE_LEN; i++)
		cookie[i] = (uint8_t)(0xa0 + i);
	/* with a cookie (INIT_ACK, COOKIE_ECHO): nothing may follow it */
	n = rn_wire_write_hello(buf, sizeof(buf), &h, cookie);
	assert_int_equal(n, RN_HELLO_FIXED + 2 * RN_RAIL_WIRE_LEN + RN_COOKIE_LEN);
	assert_int_equal(rn_wire_read_hello(&d, buf, (size_t)n, 1), 0);
	assert_true(d.id == h.id);
	assert_int_equal(d.isn, h.isn);
	assert_int_equal(d.slots, 1024);
	assert_int_equal(d.max_dgram, 9000);
	assert_int_equal(d.nrails, 2);
	for (int r = 0; r < 2; r++) {
		assert_int_equal(d.rails[r].ip, h.rails[r].ip);
		assert_int_equal(d.rails[r].port, h.rails[r].port);
		assert_int_equal(d.rails[r].prefix, h.rails[r].prefix);
	}
	assert_non_null(d.cookie);
	assert_memory_equal(d.cookie, cookie, RN_COOKIE_LEN);
	/* the cookie MAC covers exactly the parameters before the cookie */
	assert_ptr_equal(d.raw, buf);
	assert_int_equal(d.raw_len, RN_HELLO_FIXED + 2 * RN_RAIL_WIRE_LEN);

	/* without (INIT): zero padding to any length is allowed */
	n = rn_wire_write_hello(buf, sizeof(buf), &h, NULL);
	assert_int_equal(n, RN_HELLO_FIXED + 2 * RN_RAIL_WIRE_LEN);
	memset(buf + n, 0, sizeof(buf) - (size_t)n);
	assert_int_equal(rn_wire_read_hello(&d, buf, (size_t)n, 0), 0);
	assert_null(d.cookie);
	assert_int_equal(rn_wire_read_hello(&d, buf, RN_INIT_LEN - RN_HDR_LEN, 0), 0);
	assert_int_equal(d.rails[1].prefix, 32);
}

/* Eight rails, the most a host has, all survive the trip in order. */
static void test_wire_hello_eight_rails(void **state)
{
	uint8_t buf[512];
	rn_hello h = hello2(), d;
	ssize_t n;

	(void)state;
	h.nrails = RN_MAX_RAILS;
	for (int r = 0; r < RN_MAX_RAILS; r++)
		h.rails[r] = (rn_rail_addr){ .ip = UT_IP(192, 168, r, 7),
					     .port = (uint16_t)(1 + r),
					     .prefix = (uint8_t)(1 + r * 4) };
	n = rn_wire_write_hello(buf, sizeof(buf), &h, NULL);
	assert_int_equal(n, RN_HELLO_FIXED + RN_MAX_RAILS * RN_RAIL_WIRE_LEN);
	/* it still fits an INIT: the INIT length bounds every reply */
	assert_true(RN_HDR_LEN + n + RN_COOKIE_LEN <= RN_INIT_LEN);
	assert_int_equal(rn_wire_read_hello(&d, buf, (size_t)n, 0), 0);
	for (int r = 0; r < RN_MAX_RAILS; r++) {
		assert_int_equal(d.rails[r].ip, h.rails[r].ip);
		assert_int_equal(d.rails[r].port, 1 + r);
		assert_int_equal(d.rails[r].prefix, 1 + r * 4);
	}
}

static void test_wire_hello_nobuf(void **state)
{
	uint8_t buf[512], cookie[RN_COOKIE_LEN] = { 0 };
	rn_hello h = hello2();
	size_t need = RN_HELLO_FIXED + 2 * RN_RAIL_WIRE_LEN + RN_COOKIE_LEN;

	(void)state;
	assert_int_equal(rn_wire_write_hello(buf, need - 1, &h, cookie), RN_ERR_NOBUF);
	assert_int_equal(rn_wire_write_hello(buf, need, &h, cookie), (ssize_t)need);
	/* more rails than the format carries */
	h.nrails = RN_MAX_RAILS + 1;
	assert_int_equal(rn_wire_write_hello(buf, sizeof(buf), &h, NULL), RN_ERR_NOBUF);
}

typedef struct hello_case {
	const char *name;
	poke pk;
	long len;        /* bytes given to the reader; -1: the whole INIT body */
	int with_cookie;
	int want;
} hello_case;

#define R0 RN_HELLO_FIXED                    /* first rail */
#define R1 (RN_HELLO_FIXED + RN_RAIL_WIRE_LEN) /* second rail */
#define BODY (RN_HELLO_FIXED + 2 * RN_RAIL_WIRE_LEN)

static const hello_case hello_cases[] = {
	{ "valid INIT body", { 0, 0, 0 }, -1, 0, WIRE_OK },
	{ "valid, no padding", { 0, 0, 0 }, BODY, 0, WIRE_OK },
	{ "id 0", { 0, 8, 0 }, -1, 0, RN_DROP_MALFORMED },
	{ "nrails 0", { 20, 1, 0 }, -1, 0, RN_DROP_MALFORMED },
	{ "nrails 9", { 20, 1, 9 }, -1, 0, RN_DROP_MALFORMED },
	{ "reserved byte 21", { 21, 1, 1 }, -1, 0, RN_DROP_MALFORMED },
	{ "reserved byte 23", { 23, 1, 0x40 }, -1, 0, RN_DROP_MALFORMED },
	{ "slots 100: not a power of two", { 12, 4, 100 }, -1, 0, RN_DROP_MALFORMED },
	{ "slots 96: not a power of two", { 12, 4, 96 }, -1, 0, RN_DROP_MALFORMED },
	{ "slots 32: below the minimum", { 12, 4, 32 }, -1, 0, RN_DROP_MALFORMED },
	{ "slots 0", { 12, 4, 0 }, -1, 0, RN_DROP_MALFORMED },
	{ "slots 2^17: above the maximum", { 12, 4, 1u << 17 }, -1, 0, RN_DROP_MALFORMED },
	{ "slots 64: the minimum", { 12, 4, 64 }, -1, 0, WIRE_OK },
	{ "slots 2^16: the maximum", { 12, 4, 1u << 16 }, -1, 0, WIRE_OK },
	{ "max_dgram 255", { 16, 4, 255 }, -1, 0, RN_DROP_MALFORMED },
	{ "max_dgram 65508", { 16, 4, 65508 }, -1, 0, RN_DROP_MALFORMED },
	{ "rail prefix 0", { R0 + 6, 1, 0 }, -1, 0, RN_DROP_MALFORMED },
	{ "rail prefix 33", { R0 + 6, 1, 33 }, -1, 0, RN_DROP_MALFORMED },
	{ "rail prefix 1", { R0 + 6, 1, 1 }, -1, 0, WIRE_OK },
	{ "rail ip 0", { R0, 4, 0 }, -1, 0, RN_DROP_MALFORMED },
	{ "rail port 0", { R0 + 4, 2, 0 }, -1, 0, RN_DROP_MALFORMED },
	{ "rail reserved byte", { R0 + 7, 1, 1 }, -1, 0, RN_DROP_MALFORMED },
	{ "second rail prefix 33", { R1 + 6, 1, 33 }, -1, 0, RN_DROP_MALFORMED },
	{ "second rail ip 0", { R1, 4, 0 }, -1, 0, RN_DROP_MALFORMED },
	/* INIT padding must be zero: nothing may hide in it */
	{ "INIT padding byte set", { BODY + 10, 1, 1 }, -1, 0, RN_DROP_MALFORMED },
	{ "INIT last padding byte set", { RN_INIT_LEN - RN_HDR_LEN - 1, 1, 0x80 }, -1, 0,
	  RN_DROP_MALFORMED },
	{ "shorter than the fixed part", { 0, 0, 0 }, RN_HELLO_FIXED - 1, 0, RN_DROP_MALFORMED },
	{ "rail list cut", { 0, 0, 0 }, BODY - 1, 0, RN_DROP_MALFORMED },
	/* with a cookie the length is exact */
	{ "cookie", { 0, 0, 0 }, BODY + RN_COOKIE_LEN, 1, WIRE_OK },
	{ "cookie cut", { 0, 0, 0 }, BODY + RN_COOKIE_LEN - 1, 1, RN_DROP_MALFORMED },
	{ "byte after the cookie", { 0, 0, 0 }, BODY + RN_COOKIE_LEN + 1, 1, RN_DROP_MALFORMED },
};

static void test_wire_hello_rejects(void **state)
{
	(void)state;
	for (size_t i = 0; i < sizeof(hello_cases) / sizeof(hello_cases[0]); i++) {
		const hello_case *tc = &hello_cases[i];
		uint8_t buf[RN_INIT_LEN];
		rn_hello h = hello2(), d;
		size_t len = tc->len < 0 ? RN_INIT_LEN - RN_HDR_LEN : (size_t)tc->len;
		int rc;

		memset(buf, 0, sizeof(buf));
		assert_int_equal(rn_wire_write_hello(buf, sizeof(buf), &h, NULL), BODY);
		if (tc->pk.width)
			put_be(buf + tc->pk.off, tc->pk.width, tc->pk.val);
		rc = rn_wire_read_hello(&d, buf, len, tc->with_cookie);
		rc = rc == 0 ? WIRE_OK : -rc - 1;
		if (rc != tc->want)
			fail_msg("case \"%s\": got %d, want %d", tc->name, rc, tc->want);
	}
}

/* ---- RAILS: a live connection's rail list (and the client's paths) ---- */

static rn_rails_msg rails3(void)
{
	rn_rails_msg m = { .version = 7, .nrails = 3, .npaths = 2 };

	for (int i = 0; i < 3; i++)
		m.rails[i] = (rn_rail_addr){ .ip = UT_IP(198, 18, i, 1),
					     .port = (uint16_t)(9000 + i),
					     .prefix = 24 };
	m.pairs[0][0] = 0;
	m.pairs[0][1] = 1;
	m.pairs[1][0] = 2;
	m.pairs[1][1] = 0;
	return m;
}

static void test_wire_rails(void **state)
{
	rn_rails_msg m = rails3(), d;
	uint8_t buf[128], pkt[256];
	size_t want = RN_RAILS_FIXED + 3 * RN_RAIL_WIRE_LEN + 2 * RN_PAIR_WIRE_LEN;
	rn_hdr h = { .type = RN_PT_RAILS, .path = 0, .dst = DST, .seq = 1, .ts = 2 };
	rn_pkt p;
	ssize_t n;

	(void)state;
	assert_int_equal(rn_wire_write_rails(buf, sizeof(buf), &m), want);
	assert_int_equal(rn_wire_write_rails(buf, want - 1, &m), RN_ERR_NOBUF);
	assert_int_equal(rn_wire_read_rails(&d, buf, want), 0);
	assert_int_equal(d.version, 7);
	assert_int_equal(d.nrails, 3);
	assert_int_equal(d.npaths, 2);
	for (int i = 0; i < 3; i++) {
		assert_int_equal(d.rails[i].ip, m.rails[i].ip);
		assert_int_equal(d.rails[i].port, m.rails[i].port);
		assert_int_equal(d.rails[i].prefix, 24);
	}
	assert_memory_equal(d.pairs, m.pairs, 2 * sizeof(m.pairs[0]));
	/* as a datagram: rn_wire_decode checks the list itself */
	n = rn_wire_encode(pkt, sizeof(pkt), &h, NULL, buf, want);
	assert_true(n > 0);
	assert_int_equal(rn_wire_decode(&p, pkt, (size_t)n), 0);
	assert_int_equal(p.len, want);
	/* refused: one byte more or less, no rail, a zero address, a pair past the rails' limit */
	assert_int_not_equal(rn_wire_read_rails(&d, buf, want - 1), 0);
	assert_int_not_equal(rn_wire_read_rails(&d, buf, want + 1), 0);
	assert_int_not_equal(rn_wire_read_rails(&d, buf, RN_RAILS_FIXED - 1), 0);
	buf[4] = 0;
	assert_int_not_equal(rn_wire_read_rails(&d, buf, want), 0);
	buf[4] = 3;
	buf[6] = 1;
	assert_int_not_equal(rn_wire_read_rails(&d, buf, want), 0);
	buf[6] = 0;
	memset(buf + RN_RAILS_FIXED, 0, 4);
	assert_int_not_equal(rn_wire_read_rails(&d, buf, want), 0);
	pkt[RN_HDR_LEN + RN_RAILS_FIXED] = 0; /* the same in the datagram */
	pkt[RN_HDR_LEN + RN_RAILS_FIXED + 1] = 0;
	pkt[RN_HDR_LEN + RN_RAILS_FIXED + 2] = 0;
	pkt[RN_HDR_LEN + RN_RAILS_FIXED + 3] = 0;
	assert_int_equal(rn_wire_decode(&p, pkt, (size_t)n), -(1 + RN_DROP_MALFORMED));
	m.pairs[1][1] = RN_MAX_RAILS;
	assert_int_equal(rn_wire_write_rails(buf, sizeof(buf), &m), want);
	assert_int_not_equal(rn_wire_read_rails(&d, buf, want), 0);
	/* RAILS_ACK: exactly a version */
	h.type = RN_PT_RAILS_ACK;
	n = rn_wire_encode(pkt, sizeof(pkt), &h, NULL, buf, RN_RAILS_ACK_LEN);
	assert_int_equal(rn_wire_decode(&p, pkt, (size_t)n), 0);
	n = rn_wire_encode(pkt, sizeof(pkt), &h, NULL, buf, RN_RAILS_ACK_LEN + 1);
	assert_int_equal(rn_wire_decode(&p, pkt, (size_t)n), -(1 + RN_DROP_MALFORMED));
}

/* ---- authentication tags ---- */

static void test_wire_seal_open(void **state)
{
	uint8_t key[RN_KEY_LEN], other[RN_KEY_LEN], buf[256], copy[256];
	rn_hdr h = { .type = RN_PT_DATA, .path = 1, .dst = DST, .seq = 77, .ts = 5 };
	const char msg[] = "sixteen bytes!!";
	ssize_t n, sealed;

	(void)state;
	for (int i = 0; i < RN_KEY_LEN; i++) {
		key[i] = (uint8_t)(i * 13 + 1);
		other[i] = key[i];
	}
	other[RN_KEY_LEN - 1] ^= 1;
	n = rn_wire_encode(buf, sizeof(buf), &h, NULL, msg, sizeof(msg));
	assert_true(n > 0);
	/* no room for the tag */
	assert_int_equal(rn_wire_seal(buf, (size_t)n, (size_t)n + RN_MAC_LEN - 1, key, 0), RN_ERR_NOBUF);
	sealed = rn_wire_seal(buf, (size_t)n, sizeof(buf), key, 0);
	assert_int_equal(sealed, n + RN_MAC_LEN);
	assert_int_equal(rn_wire_open(buf, (size_t)sealed, key, 0), n);
	/* the wrong key, any flipped bit, a cut or a lengthened datagram: rejected */
	assert_int_equal(rn_wire_open(buf, (size_t)sealed, other, 0), RN_ERR_DROP);
	for (ssize_t bit = 0; bit < sealed * 8; bit++) {
		memcpy(copy, buf, (size_t)sealed);
		copy[bit / 8] ^= (uint8_t)(1u << (bit % 8));
		assert_int_equal(rn_wire_open(copy, (size_t)sealed, key, 0), RN_ERR_DROP);
	}
	for (ssize_t len = 0; len < sealed; len++)
		assert_int_equal(rn_wire_open(buf, (size_t)len, key, 0), RN_ERR_DROP);
	memcpy(copy, buf, (size_t)sealed);
	copy[sealed] = 0;
	assert_int_equal(rn_wire_open(copy, (size_t)sealed + 1, key, 0), RN_ERR_DROP);
	/* the same bytes to another connection id or sequence number: another tag */
	h.seq = 78;
	n = rn_wire_encode(copy, sizeof(copy), &h, NULL, msg, sizeof(msg));
	assert_int_equal(rn_wire_seal(copy, (size_t)n, sizeof(copy), key, 0), sealed);
	assert_memory_not_equal(copy + n, buf + n, RN_MAC_LEN);
	/*
	 * The seal mode is bound into the tag: ends that would seal their
	 * connection differently (integrity only, AES-256) fail the handshake as
	 * ends with another key do.  Mode 0's tag is plain keyed BLAKE2b.
	 */
	{
		uint8_t plain[RN_MAC_LEN];

		crypto_generichash_blake2b(plain, sizeof(plain), buf, (size_t)n, key, RN_KEY_LEN);
		assert_memory_equal(plain, buf + n, RN_MAC_LEN);
	}
	for (unsigned m = 0; m < 4; m++) {
		memcpy(copy, buf, (size_t)n);
		assert_int_equal(rn_wire_seal(copy, (size_t)n, sizeof(copy), key, m), sealed);
		for (unsigned o = 0; o < 4; o++)
			assert_int_equal(rn_wire_open(copy, (size_t)sealed, key, o), o == m ? n : RN_ERR_DROP);
	}
}

/* ---- IPv6 rail entries (docs/PROTOCOL.md, "Rail entries") ---- */

/* 2001:2:0:<net>::<host>/64, RFC 5180's benchmarking prefix. */
static rn_rail_addr rail6(unsigned net, unsigned host, uint16_t port)
{
	rn_rail_addr r = { .port = port, .prefix = 64, .v6 = 1 };

	r.ip6[0] = 0x20;
	r.ip6[1] = 0x01;
	r.ip6[3] = 0x02;
	r.ip6[7] = (uint8_t)net;
	r.ip6[15] = (uint8_t)host;
	return r;
}

static void assert_rail_equal(const rn_rail_addr *a, const rn_rail_addr *b)
{
	assert_int_equal(a->v6, b->v6);
	assert_int_equal(a->ip, b->ip);
	assert_int_equal(a->port, b->port);
	assert_int_equal(a->prefix, b->prefix);
	assert_memory_equal(a->ip6, b->ip6, sizeof(a->ip6));
}

/* A mixed list (IPv4, IPv6, IPv6 /128) in a hello: the bytes as documented, and back. */
static void test_wire_hello_v6(void **state)
{
	uint8_t buf[512], cookie[RN_COOKIE_LEN] = { 1 };
	rn_hello h = hello2(), d;
	size_t body = RN_HELLO_FIXED + RN_RAIL_WIRE_LEN + 2 * RN_RAIL6_WIRE_LEN;
	const uint8_t *e;
	ssize_t n;

	(void)state;
	h.nrails = 3;
	h.rails[1] = rail6(1, 1, 40001);
	h.rails[2] = rail6(2, 1, 40002);
	h.rails[2].prefix = 128;
	h.rails[2].ip6[4] = 0xab; /* a byte of the tail */
	n = rn_wire_write_hello(buf, sizeof(buf), &h, cookie);
	assert_int_equal(n, body + RN_COOKIE_LEN);
	/* the IPv4 entry is today's: address, port, prefix, a zero */
	e = buf + RN_HELLO_FIXED;
	assert_memory_equal(e, ((uint8_t[]){ 10, 0, 1, 1, 0x9c, 0x40, 24, 0 }), 8);
	/* the IPv6 entry: the address's first 4 bytes, port, prefix, family 6, its last 12 */
	e += RN_RAIL_WIRE_LEN;
	assert_memory_equal(e, ((uint8_t[]){ 0x20, 0x01, 0, 0x02, 0x9c, 0x41, 64, 6 }), 8);
	assert_memory_equal(e + 8, h.rails[1].ip6 + 4, 12);
	assert_int_equal(rn_wire_read_hello(&d, buf, (size_t)n, 1), 0);
	assert_int_equal(d.nrails, 3);
	for (int r = 0; r < 3; r++)
		assert_rail_equal(&d.rails[r], &h.rails[r]);
	assert_int_equal(d.raw_len, body);
	assert_memory_equal(d.cookie, cookie, RN_COOKIE_LEN);
	/* an INIT's zero padding after IPv6 rails */
	n = rn_wire_write_hello(buf, sizeof(buf), &h, NULL);
	memset(buf + n, 0, sizeof(buf) - (size_t)n);
	assert_int_equal(rn_wire_read_hello(&d, buf, RN_INIT_LEN - RN_HDR_LEN, 0), 0);
	assert_rail_equal(&d.rails[2], &h.rails[2]);
}

/* Eight IPv6 rails still fit an INIT: no reply outgrows its request, keyed or not. */
static void test_wire_hello_eight_v6(void **state)
{
	uint8_t buf[512];
	rn_hello h = hello2(), d;
	ssize_t n;

	(void)state;
	h.nrails = RN_MAX_RAILS;
	for (int r = 0; r < RN_MAX_RAILS; r++)
		h.rails[r] = rail6((unsigned)r, 1, (uint16_t)(1 + r));
	n = rn_wire_write_hello(buf, sizeof(buf), &h, NULL);
	assert_int_equal(n, RN_HELLO_FIXED + RN_MAX_RAILS * RN_RAIL6_WIRE_LEN);
	assert_true(RN_HDR_LEN + n + RN_COOKIE_LEN <= RN_INIT_LEN);
	assert_int_equal(rn_wire_read_hello(&d, buf, (size_t)n, 0), 0);
	for (int r = 0; r < RN_MAX_RAILS; r++)
		assert_rail_equal(&d.rails[r], &h.rails[r]);
}

/* Hellos with an IPv6 entry that is cut short, of an unknown family, or no rail. */
static void test_wire_hello_v6_rejects(void **state)
{
	uint8_t buf[512], cookie[RN_COOKIE_LEN] = { 0 };
	rn_hello h = hello2(), d;
	const size_t r1 = RN_HELLO_FIXED + RN_RAIL_WIRE_LEN; /* the IPv6 entry */
	size_t len;
	struct {
		const char *name;
		size_t off;
		uint8_t val;
	} pokes[] = {
		{ "family 4", r1 + 7, 4 },     { "family 255", r1 + 7, 0xff },
		{ "prefix 129", r1 + 6, 129 }, { "prefix 0", r1 + 6, 0 },
		{ "port 0", r1 + 4, 0 },       { "multicast ff..", r1, 0xff },
	};

	(void)state;
	h.rails[1] = rail6(1, 1, 40001);
	h.rails[1].port = 0x9c00; /* one byte of the port is enough to zero it */
	len = (size_t)rn_wire_write_hello(buf, sizeof(buf), &h, cookie);
	assert_int_equal(len, r1 + RN_RAIL6_WIRE_LEN + RN_COOKIE_LEN);
	assert_int_equal(rn_wire_read_hello(&d, buf, len, 1), 0);
	for (size_t i = 0; i < sizeof(pokes) / sizeof(pokes[0]); i++) {
		uint8_t was = buf[pokes[i].off];

		buf[pokes[i].off] = pokes[i].val;
		if (rn_wire_read_hello(&d, buf, len, 1) != -(1 + RN_DROP_MALFORMED))
			fail_msg("case \"%s\" accepted", pokes[i].name);
		buf[pokes[i].off] = was;
	}
	/* cut short: the entry's tail runs into the cookie, or past the end */
	assert_int_not_equal(rn_wire_read_hello(&d, buf, len - 1, 1), 0);
	assert_int_not_equal(rn_wire_read_hello(&d, buf, r1 + RN_RAIL_WIRE_LEN, 0), 0);
	assert_int_not_equal(rn_wire_read_hello(&d, buf, r1 + RN_RAIL6_WIRE_LEN - 1, 0), 0);
	/* the rails alone, without a cookie, read as an INIT's */
	assert_int_equal(rn_wire_read_hello(&d, buf, r1 + RN_RAIL6_WIRE_LEN, 0), 0);
	/* the whole address zero, or an IPv4 address in IPv6 form */
	memset(buf + r1, 0, 4);
	memset(buf + r1 + 8, 0, 12);
	assert_int_not_equal(rn_wire_read_hello(&d, buf, len, 1), 0);
	buf[r1 + 8 + 6] = buf[r1 + 8 + 7] = 0xff;
	buf[r1 + 8 + 8] = 10;
	buf[r1 + 8 + 11] = 1;
	assert_int_not_equal(rn_wire_read_hello(&d, buf, len, 1), 0);
}

/* RAILS with IPv4 and IPv6 rails and the client's pairs: lengths exact, bad entries refused. */
static void test_wire_rails_v6(void **state)
{
	rn_rails_msg m = rails3(), d;
	uint8_t buf[256], pkt[320];
	size_t want = RN_RAILS_FIXED + RN_RAIL_WIRE_LEN + 2 * RN_RAIL6_WIRE_LEN +
		      2 * RN_PAIR_WIRE_LEN;
	rn_hdr h = { .type = RN_PT_RAILS, .path = 0, .dst = DST, .seq = 1, .ts = 2 };
	rn_pkt p;
	ssize_t n;

	(void)state;
	m.rails[0] = rail6(1, 1, 9000);
	m.rails[2] = rail6(3, 1, 9002);
	assert_int_equal(rn_wire_write_rails(buf, sizeof(buf), &m), want);
	assert_int_equal(rn_wire_write_rails(buf, want - 1, &m), RN_ERR_NOBUF);
	assert_int_equal(rn_wire_read_rails(&d, buf, want), 0);
	for (int i = 0; i < 3; i++)
		assert_rail_equal(&d.rails[i], &m.rails[i]);
	assert_memory_equal(d.pairs, m.pairs, 2 * sizeof(m.pairs[0]));
	n = rn_wire_encode(pkt, sizeof(pkt), &h, NULL, buf, want);
	assert_int_equal(rn_wire_decode(&p, pkt, (size_t)n), 0);
	/* one byte more or less; a length that would fit 8-byte entries only */
	assert_int_not_equal(rn_wire_read_rails(&d, buf, want - 1), 0);
	assert_int_not_equal(rn_wire_read_rails(&d, buf, want + 1), 0);
	assert_int_not_equal(rn_wire_read_rails(&d, buf,
						RN_RAILS_FIXED + 3 * RN_RAIL_WIRE_LEN +
								2 * RN_PAIR_WIRE_LEN),
			     0);
	/* the first entry's family byte unknown: the datagram is malformed */
	pkt[RN_HDR_LEN + RN_RAILS_FIXED + 7] = 5;
	assert_int_equal(rn_wire_decode(&p, pkt, (size_t)n), -(1 + RN_DROP_MALFORMED));
	/* family 0 on an IPv6 entry: read as IPv4, the rest no longer adds up */
	buf[RN_RAILS_FIXED + 7] = 0;
	assert_int_not_equal(rn_wire_read_rails(&d, buf, want), 0);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_wire_round_trip),
		cmocka_unit_test(test_wire_layout),
		cmocka_unit_test(test_wire_encode_nobuf),
		cmocka_unit_test(test_wire_decode_rejects),
		cmocka_unit_test(test_wire_decode_size_limit),
		cmocka_unit_test(test_wire_hello_round_trip),
		cmocka_unit_test(test_wire_hello_eight_rails),
		cmocka_unit_test(test_wire_hello_nobuf),
		cmocka_unit_test(test_wire_hello_rejects),
		cmocka_unit_test(test_wire_rails),
		cmocka_unit_test(test_wire_hello_v6),
		cmocka_unit_test(test_wire_hello_eight_v6),
		cmocka_unit_test(test_wire_hello_v6_rejects),
		cmocka_unit_test(test_wire_rails_v6),
		cmocka_unit_test(test_wire_seal_open),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
