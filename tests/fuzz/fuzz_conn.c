/*
 * fuzz_conn.c - libFuzzer target: the datagram input path of a connection.
 *
 * Each input starts from the same established pair (fz_pair_open: client
 * and server over 2 rails, fixed seeds and timestamps) that has exchanged
 * some data, with half of the client's last burst and the server's answer
 * still in flight; or, if its first byte says so (fuzz_ops.h), from the
 * client halfway through the handshake, its INIT or COOKIE_ECHO held.
 * The rest of the input is a sequence of operations (fuzz_ops.h):
 * datagrams delivered to either end (raw, crafted from fields, or real ones
 * replayed or mutated, from the right or a wrong address), clock steps,
 * rn_conn_write_pkt with its output delivered, dropped, held or doubled,
 * application writes and reads, timers, shutdown, abort, rail errors.
 * fz_pair_check and the fz_* calls assert the invariants listed in
 * fuzz_pair.c after every operation.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "fuzz_common.h"
#include "fuzz_ops.h"
#include "rn_wire.h"

enum {
	MAX_OPS = 2000, /* bounds the work per input with pump rounds */
	MSS = FZ_DGRAM - RN_HDR_LEN,
};

static fz_pair g_pair; /* large: kept out of the stack, reset by fz_pair_open */

/* Data both ways; the client's second burst is half delivered, the rest in flight. */
static void setup_traffic(fz_pair *p)
{
	fz_pkt *k;

	fz_app_write(p, 0, 6000);
	fz_app_write(p, 1, 3000);
	fz_pump(p, 3, 0);
	fz_app_write(p, 0, 6000);
	for (int i = 0; i < 64 && fz_write_pkt(p, 0, 3, FZ_CAP, &k) > 0; i++) {
		if (i % 2 == 0) {
			k->held = 0;
			fz_deliver_pkt(p, k);
		}
	}
	fz_advance(p, FZ_STEP_NS);
	fz_timer(p, 1, 1);
	/* the server's answer: ACKs with SACK words, held */
	for (int i = 0; i < 8 && fz_write_pkt(p, 1, 3, FZ_CAP, &k) > 0; i++)
		;
	fz_app_read(p, 1, SIZE_MAX, 1);
	fz_advance(p, FZ_STEP_NS);
}

/* Makes a datagram's fixed header consistent with its length. */
static void fix_header(uint8_t *buf, size_t len)
{
	size_t body;

	if (len < RN_HDR_LEN)
		return;
	body = len - RN_HDR_LEN;
	buf[0] = RN_WIRE_VERSION;
	buf[2] &= RN_F__ALL;
	buf[22] = buf[23] = 0;
	if (buf[2] & RN_F_ACK) {
		if (body < RN_ACKBLK_LEN) {
			buf[2] &= (uint8_t)~RN_F_ACK;
		} else {
			size_t words = rn_get16(buf + RN_HDR_LEN + 18);
			size_t room = (body - RN_ACKBLK_LEN) / 8;

			if (words > room || words > RN_MAX_SACK_WORDS)
				words = room < RN_MAX_SACK_WORDS ? room : RN_MAX_SACK_WORDS;
			buf[RN_HDR_LEN + 17] = 0;
			rn_put16(buf + RN_HDR_LEN + 18, (uint16_t)words);
			body -= RN_ACKBLK_LEN + 8 * words;
		}
	}
	rn_put16(buf + 20, (uint16_t)body);
}

static uint64_t conn_id(const fz_pair *p, int host)
{
	return p->h[host].conn ? rn_conn_id(p->h[host].conn) : 0;
}

static void op_raw(fz_pair *p, fz_in *in, int x, int r, int a)
{
	uint8_t buf[FZ_MAX_PKT];
	uint8_t fix = fz_u8(in);
	size_t len = fz_bytes(in, buf, fz_u16(in) % FZ_MAX_PKT);

	if ((fix & FZC_FIX_DST) && len >= 12)
		rn_put64(buf + 4, conn_id(p, x));
	if (fix & FZC_FIX_HEADER)
		fix_header(buf, len);
	if ((fix & FZC_FIX_PATH) && len >= 4)
		buf[3] = (uint8_t)r;
	fz_deliver(p, x, r, fz_from(1 - x, r, a), buf, len, 0);
}

/* A pool datagram again, mutated or not, to its own host. */
static void op_pool(fz_pair *p, fz_in *in, int r, int a, int mutate)
{
	uint8_t idx = fz_u8(in);
	fz_pkt k;
	int rail;

	if (p->npool == 0)
		return;
	k = p->pool[idx % p->npool];
	if (mutate) {
		uint8_t m = fz_u8(in);

		if (m & 8)
			k.len -= fz_u8(in) % (k.len + 1);
		if ((m & 16) && k.len >= 12)
			rn_put64(k.data + 4, conn_id(p, k.to));
		fz_mutate(in, k.data, k.len, m & 7);
	}
	rail = r ? 1 - k.rail : k.rail;
	fz_deliver(p, k.to, rail, fz_from(1 - k.to, rail, a), k.data, k.len, !mutate);
}

static size_t fixed_len(uint8_t type)
{
	switch (type) {
	case RN_PT_ACK:
	case RN_PT_COOKIE_ACK:
	case RN_PT_HEARTBEAT:
	case RN_PT_KEEPALIVE:
		return 0;
	case RN_PT_LINK_STATE:
		return RN_LINK_STATE_LEN;
	case RN_PT_LINK_ACK:
		return RN_LINK_ACK_LEN;
	case RN_PT_RESET:
		return RN_RESET_LEN;
	default:
		return SIZE_MAX;
	}
}

/* DATA payload from the pattern: the bytes really sent at that seq, if known. */
static size_t craft_pattern(const fz_pair *p, int from, uint32_t seq, uint8_t *pl, size_t len)
{
	const fz_host *o = &p->h[from];
	uint32_t i = seq - o->seq_base;
	uint64_t off = o->sent_off;

	if (o->seq_known && i < o->nsent && i < FZ_SEQMAP) {
		off = o->sent[i].off;
		len = o->sent[i].len;
	}
	kit_pattern_fill(pl, o->tx_seed, off, len);
	return len;
}

static void op_craft(fz_pair *p, fz_in *in, int x, int r, int a)
{
	uint8_t type = (uint8_t)(1 + fz_u8(in) % RN_PT__MAX);
	uint8_t fl = fz_u8(in);
	int from = 1 - x;
	uint32_t now_us = (uint32_t)(p->now / 1000);
	rn_hdr h = { .type = type, .flags = (fl & FZC_CRAFT_FIN) ? RN_F_FIN : 0,
		     .dst = conn_id(p, x), .ts = now_us };
	uint64_t words[3];
	uint8_t pl[MSS], buf[FZ_MAX_PKT];
	rn_ackblk ab = { 0 };
	size_t len;
	ssize_t n;

	h.path = (fl & FZC_CRAFT_PATH) ? fz_u8(in) : (uint8_t)r;
	h.seq = fz_next_seq(p, from) + (uint32_t)(int32_t)(int16_t)fz_u16(in);
	if (fl & FZC_CRAFT_ACK) {
		ab.ack = fz_next_seq(p, x) + (uint32_t)(int32_t)(int16_t)fz_u16(in);
		ab.wnd = ab.ack + (fz_u16(in) ^ FZ_SLOTS);
		ab.ts_echo = now_us - fz_u16(in);
		ab.ts_rx = ab.ts_echo + fz_u16(in);
		ab.echo_path = fz_u8(in);
		ab.nwords = (fl >> FZC_CRAFT_WORDS_SHIFT) & 3;
		for (unsigned w = 0; w < ab.nwords; w++)
			words[w] = fz_u64(in);
		ab.words = words;
	}
	len = fixed_len(type);
	if (len == SIZE_MAX)
		len = fz_u16(in) % (MSS + 1);
	memset(pl, 0, sizeof(pl));
	if ((fl & FZC_CRAFT_PATTERN) && type == RN_PT_DATA)
		len = craft_pattern(p, from, h.seq, pl, len);
	else
		fz_bytes(in, pl, len);
	n = rn_wire_encode(buf, sizeof(buf), &h, (fl & FZC_CRAFT_ACK) ? &ab : NULL, pl, len);
	if (n > 0)
		fz_deliver(p, x, r, fz_from(from, r, a), buf, (size_t)n, 0);
}

static void op_flush(fz_pair *p, fz_in *in, int x)
{
	uint8_t m = fz_u8(in);
	unsigned max = ((m >> 2) & 7) + 1;
	size_t cap = (m & 32) ? fz_u8(in) : FZ_CAP;
	uint8_t fates[2];

	/* read up front, so a script's next op does not depend on what was sent */
	fates[0] = fz_u8(in);
	fates[1] = max > 4 ? fz_u8(in) : 0;
	for (unsigned i = 0; i < max; i++) {
		int fate = (fates[i / 4] >> (2 * (i % 4))) & 3;
		fz_pkt *k, copy;

		if (fz_write_pkt(p, x, m & 3, cap, &k) <= 0)
			return;
		if (fate == FZC_FATE_HOLD)
			continue;
		k->held = 0;
		if (fate == FZC_FATE_DROP)
			continue;
		copy = *k;
		fz_deliver_pkt(p, &copy);
		if (fate == FZC_FATE_TWICE)
			fz_deliver_pkt(p, &copy);
	}
}

static void deliver_held(fz_pair *p, int newest_first)
{
	unsigned start = p->npool < FZ_POOL ? 0 : p->pool_next % FZ_POOL;
	unsigned n = p->npool;

	for (unsigned i = 0; i < n; i++) {
		unsigned j = newest_first ? n - 1 - i : i;
		fz_pkt *k = &p->pool[(start + j) % FZ_POOL];
		fz_pkt copy;

		if (!k->held)
			continue;
		k->held = 0;
		copy = *k;
		fz_deliver_pkt(p, &copy);
	}
}

static void run_op(fz_pair *p, fz_in *in)
{
	uint8_t b = fz_u8(in);
	int x = (b >> 4) & 1, r = (b >> 5) & 1, a = b >> 6;
	rn_conn *c = p->h[x].conn;

	switch (b & 15) {
	case FZC_RAW:
		op_raw(p, in, x, r, a);
		break;
	case FZC_MUTATE:
		op_pool(p, in, r, a, 1);
		break;
	case FZC_REPLAY:
		op_pool(p, in, r, a, 0);
		break;
	case FZC_CRAFT:
		op_craft(p, in, x, r, a);
		break;
	case FZC_TIME:
		fz_advance(p, ((uint64_t)fz_u8(in) + 1) << (3 * (b >> 4)));
		break;
	case FZC_FLUSH:
		op_flush(p, in, x);
		break;
	case FZC_WRITE:
		fz_app_write(p, x, ((size_t)fz_u8(in) + 1) * 64);
		break;
	case FZC_READ:
		fz_app_read(p, x, ((size_t)fz_u8(in) + 1) * 32, r);
		break;
	case FZC_TIMER:
		fz_timer(p, x, r);
		break;
	case FZC_PUMP:
		fz_pump(p, fz_u8(in) % 32 + 1, (uint32_t)a);
		break;
	case FZC_SHUTDOWN:
		fz_app_shutdown(p, x);
		break;
	case FZC_RAIL_ERROR:
		if (c) /* no server connection before the handshake ends */
			rn_conn_rail_error(c, p->now, r);
		break;
	case FZC_ABORT:
		if (c)
			rn_conn_abort(c, p->now);
		break;
	case FZC_DELIVER_HELD:
		deliver_held(p, r);
		break;
	case FZC_REFUSED:
		if (c)
			rn_conn_refused(c, p->now);
		break;
	default: /* FZC_CHECK */
		break;
	}
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	fz_pair *p = &g_pair;
	fz_in in = { data, size };

	/* the first byte: where the run starts (mostly from an established pair) */
	switch (fz_u8(&in) & 3) {
	case FZC_START_INIT_SENT:
		fz_pair_open_at(p, FZ_STAGE_INIT_SENT);
		break;
	case FZC_START_COOKIE_SENT:
		fz_pair_open_at(p, FZ_STAGE_COOKIE_SENT);
		break;
	default:
		fz_pair_open(p);
		setup_traffic(p);
		break;
	}
	fz_pair_check(p);
	for (int ops = 0; in.n > 0 && ops < MAX_OPS; ops++) {
		run_op(p, &in);
		fz_pair_check(p);
	}
	fz_drain(p);
	if (getenv("RI2N_FUZZ_VERBOSE")) { /* what an input did, to check a seed does its job */
		printf("  drain %.3f s%s; client addresses %#llx, server is %#llx\n",
		       (double)p->drain_ns / 1e9,
		       p->forged_any ? " (skipped: forged datagrams taken)" : "",
		       (unsigned long long)p->client_dst, (unsigned long long)conn_id(p, 1));
		for (int i = 0; i < 2; i++)
			printf("  host %d: state %s (%s), wrote %llu, read %llu%s%s\n", i,
			       p->h[i].conn ? rn_state_name(rn_conn_state(p->h[i].conn)) : "none",
			       p->h[i].conn ? rn_strerror(rn_conn_error(p->h[i].conn)) : "-",
			       (unsigned long long)p->h[i].written, (unsigned long long)p->h[i].recvd,
			       p->h[i].eof ? ", end of stream" : "", p->h[i].tainted ? ", tainted" : "");
	}
	fz_pair_close(p);
	return 0;
}
