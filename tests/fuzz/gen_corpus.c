/*
 * gen_corpus.c - writes the seed corpus of the fuzz targets from real
 * traffic of the deterministic pair (fuzz_common.h).
 *
 *   fuzz_gen_corpus DIR     writes DIR/fuzz_wire, DIR/fuzz_conn, DIR/fuzz_listen
 *
 * The pair runs a few scenarios that make it send every packet type: the
 * handshake (INIT, INIT_ACK, COOKIE_ECHO, COOKIE_ACK), a stream both ways
 * with a lost packet (DATA with and without an ACK block and SACK words,
 * ACK with SACK words, retransmissions), idle rails (KEEPALIVE), a rail cut
 * off (LINK_STATE, LINK_ACK, HEARTBEAT), a clean close (FIN), an abort
 * (RESET) and a rail that appears at the client (RAILS, RAILS_ACK).  The first datagrams of each kind are written:
 *   - fuzz_wire: the datagram itself;
 *   - fuzz_conn: an op that delivers it to its host (fuzz_ops.h), and
 *     scripts of operations that replay the scenarios' steps;
 *   - fuzz_listen: an op that feeds it to the listener, and handshake
 *     scripts (real and built INITs and COOKIE_ECHOs, stale cookies, small
 *     reply buffers, bad rails).
 * Everything is seeded: the same core writes the same files.  Fails if a
 * packet type (or DATA with SACK words, ACK with SACK words, FIN) never
 * appeared: a change to the core may call for a change to the scenarios.
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "fuzz_common.h"
#include "fuzz_ops.h"
#include "rn_wire.h"

enum {
	PER_KIND = 3,   /* datagrams kept of each kind */
	MAX_KEPT = 64,
	SCRIPT_MAX = 4096,
};

typedef struct kept {
	char name[48];
	int host, rail;
	size_t len;
	uint8_t data[FZ_DGRAM];
} kept;

static kept g_kept[MAX_KEPT];
static int g_nkept;
static unsigned g_types; /* bit t: packet type t was seen */
static const char *g_dir;
static fz_pair g_pair;

static const char *type_name(uint8_t t)
{
	static const char *const names[] = { "?", "data", "ack", "init", "init_ack",
					     "cookie_echo", "cookie_ack", "link_state",
					     "link_ack", "heartbeat", "keepalive", "reset",
					     "sreset", "probe", "probe_ack", "rails", "rails_ack" };

	return t <= RN_PT__MAX ? names[t] : "?";
}

/* The kind of a datagram: its type, FIN, ACK block, SACK words. */
static void kind_of(const rn_pkt *k, char *out, size_t cap)
{
	snprintf(out, cap, "%s%s%s%s", type_name(k->type), (k->flags & RN_F_FIN) ? "_fin" : "",
		 (k->flags & RN_F_ACK) && k->type != RN_PT_ACK ? "_ack" : "",
		 k->nwords ? "_sack" : "");
}

static void tap(void *arg, const fz_pair *p, int host, const uint8_t *pkt, size_t len, int rail)
{
	char kind[40];
	int same = 0;
	rn_pkt k;

	(void)arg;
	(void)p;
	FZ_CHECK(rn_wire_decode(&k, pkt, len) == 0, "the pair sent a bad datagram");
	g_types |= 1u << k.type;
	kind_of(&k, kind, sizeof(kind));
	for (int i = 0; i < g_nkept; i++) {
		const kept *o = &g_kept[i];
		size_t kl = strlen(kind);

		if (o->len == len && memcmp(o->data, pkt, len) == 0)
			return; /* the second pair's handshake repeats the first's */
		if (strncmp(o->name, kind, kl) == 0 && o->name[kl] == '_' && o->name[kl + 1] >= '0' &&
		    o->name[kl + 1] <= '9')
			same++;
	}
	if (same >= PER_KIND || g_nkept >= MAX_KEPT)
		return;
	snprintf(g_kept[g_nkept].name, sizeof(g_kept[0].name), "%s_%d", kind, same + 1);
	g_kept[g_nkept].host = host;
	g_kept[g_nkept].rail = rail;
	g_kept[g_nkept].len = len;
	memcpy(g_kept[g_nkept].data, pkt, len);
	g_nkept++;
}

/* ---- files ---- */

static void make_dir(const char *path)
{
	if (mkdir(path, 0777) != 0 && errno != EEXIST) {
		perror(path);
		exit(1);
	}
}

static void write_file(const char *target, const char *name, const uint8_t *data, size_t len)
{
	char path[4096];
	FILE *f;

	snprintf(path, sizeof(path), "%s/%s/%s", g_dir, target, name);
	f = fopen(path, "wb");
	if (!f || fwrite(data, 1, len, f) != len || fclose(f) != 0) {
		perror(path);
		exit(1);
	}
}

/* An input under construction. */
typedef struct script {
	uint8_t b[SCRIPT_MAX];
	size_t n;
} script;

static void put8(script *s, unsigned v)
{
	FZ_CHECK(s->n < SCRIPT_MAX, "script too long");
	s->b[s->n++] = (uint8_t)v;
}

static void put16(script *s, unsigned v)
{
	put8(s, v >> 8);
	put8(s, v & 0xff);
}

static void put32(script *s, uint32_t v)
{
	put16(s, v >> 16);
	put16(s, v & 0xffff);
}

static void put64(script *s, uint64_t v)
{
	put32(s, (uint32_t)(v >> 32));
	put32(s, (uint32_t)v);
}

static void putn(script *s, const uint8_t *d, size_t n)
{
	for (size_t i = 0; i < n; i++)
		put8(s, d[i]);
}

/* fuzz_conn: a new input, starting at `start` */
static void conn_begin(script *s, int start)
{
	s->n = 0;
	put8(s, (unsigned)start);
}

/* fuzz_conn op byte */
static void cop(script *s, int op, int x, int r, int a)
{
	put8(s, (unsigned)(op | x << 4 | r << 5 | a << 6));
}

/* fuzz_listen op byte (rsel 0-1 rails, 2 and 3 invalid ones) */
static void lop(script *s, int op, int rsel, int a)
{
	put8(s, (unsigned)(op | rsel << 3 | a << 5));
}

/* fuzz_conn: FZC_FLUSH of up to max (1-8) datagrams, each with fate `fate` */
static void cflush(script *s, int x, unsigned writable, unsigned max, int cap, int fate)
{
	unsigned f = (unsigned)fate * 0x55;

	cop(s, FZC_FLUSH, x, 0, 0);
	put8(s, writable | (max - 1) << 2 | (cap >= 0 ? 32 : 0));
	if (cap >= 0)
		put8(s, (unsigned)cap);
	put8(s, f);
	if (max > 4)
		put8(s, f);
}

/* fuzz_conn: the clock moves about ms milliseconds */
static void ctime_ms(script *s, unsigned ms)
{
	uint64_t ns = (uint64_t)ms * 1000000;
	int hi = 0;

	while (hi < 15 && (ns >> (3 * hi)) > 256)
		hi++;
	cop(s, FZC_TIME, hi & 1, (hi >> 1) & 1, hi >> 2);
	put8(s, (unsigned)((ns >> (3 * hi)) ? (ns >> (3 * hi)) - 1 : 0));
}

static void save(const char *target, const char *name, const script *s)
{
	write_file(target, name, s->b, s->n);
}

/* ---- scenarios: real traffic ---- */

static void scenario_stream(fz_pair *p)
{
	fz_pkt *k;

	fz_pair_open(p);
	fz_app_write(p, 0, 20000);
	fz_app_write(p, 1, 8000);
	fz_pump(p, 5, 0);
	/* two DATA of a burst are lost: SACK words, then retransmissions */
	fz_app_write(p, 0, 6000);
	fz_app_write(p, 1, 3000);
	for (int i = 0; fz_write_pkt(p, 0, 3, FZ_CAP, &k) > 0; i++) {
		k->held = 0;
		if (i != 0 && i != 5)
			fz_deliver_pkt(p, k);
	}
	fz_pump(p, 30, 0);
	/* again with the server idle: standalone ACKs with SACK words */
	fz_app_write(p, 0, 6000);
	for (int i = 0; fz_write_pkt(p, 0, 3, FZ_CAP, &k) > 0; i++) {
		k->held = 0;
		if (i != 0 && i != 5)
			fz_deliver_pkt(p, k);
	}
	fz_pump(p, 30, 0);
	/* idle: keepalives */
	fz_advance(p, UINT64_C(150000000));
	fz_pump(p, 2, 0);
	/* rail 1 silent past rail_timeout (350 ms): LINK_STATE, LINK_ACK, HEARTBEAT */
	for (int i = 0; i < 4; i++) {
		fz_advance(p, UINT64_C(120000000));
		fz_pump(p, 2, 2);
	}
	fz_app_write(p, 0, 2000);
	fz_pump(p, 10, 2);
	/* healed */
	fz_advance(p, UINT64_C(120000000));
	fz_pump(p, 10, 0);
	/* clean close both ways */
	fz_app_shutdown(p, 0);
	fz_app_shutdown(p, 1);
	fz_pump(p, 20, 0);
	fz_advance(p, UINT64_C(1100000000));
	fz_pump(p, 2, 0);
	FZ_CHECK(p->h[0].state == RN_ST_CLOSED && p->h[1].state == RN_ST_CLOSED,
		 "the stream scenario did not close: states %d %d", p->h[0].state, p->h[1].state);
	fz_pair_close(p);
}

static void scenario_abort(fz_pair *p)
{
	fz_pair_open(p);
	fz_app_write(p, 1, 1000);
	fz_pump(p, 2, 0);
	rn_conn_abort(p->h[0].conn, p->now);
	fz_pump(p, 2, 0);
	fz_pair_close(p);
}

/* 2001:2:0:99::<host>/64, an IPv6 rail (RFC 5180's benchmarking prefix). */
static rn_rail_addr rail6(unsigned host, uint16_t port)
{
	rn_rail_addr a = {
		.port = port, .prefix = 64, .v6 = 1, .ip6 = { 0x20, 0x01, 0, 0x02, 0, 0, 0, 0x99 }
	};

	a.ip6[15] = (uint8_t)host;
	return a;
}

/*
 * A third client rail appears, in no subnet of the server's: RAILS and its
 * ACK, no new path; then a fourth, IPv6: a RAILS listing both families.
 */
static void scenario_rails(fz_pair *p)
{
	rn_rail_addr a = { .ip = UINT32_C(0x0a630001), .port = 40100, .prefix = 24 };
	rn_rail_addr a6 = rail6(1, 40101);

	fz_pair_open(p);
	fz_app_write(p, 0, 1000);
	fz_pump(p, 2, 0);
	if (rn_conn_rail_add(p->h[0].conn, p->now, FZ_RAILS, &a) != 0)
		abort();
	fz_pump(p, 2, 0);
	if (rn_conn_rail_add(p->h[0].conn, p->now, FZ_RAILS + 1, &a6) != 0)
		abort();
	fz_pump(p, 2, 0);
	fz_pair_close(p);
}

/* An INIT whose hello lists IPv4 and IPv6 rails, padded as a client pads it. */
static void v6_inputs(void)
{
	rn_hello h = { .id = UINT64_C(0x0123456789abcdef),
		       .isn = 7,
		       .slots = 256,
		       .max_dgram = 1472,
		       .nrails = 3 };
	rn_hdr hd = { .type = RN_PT_INIT, .path = 0xff, .ts = 1 };
	uint8_t body[RN_INIT_LEN] = { 0 }, dg[RN_INIT_LEN];
	script s = { .n = 0 };
	ssize_t n;

	h.rails[0] = rail6(1, 40000);
	h.rails[1] = fz_rail(0, 1);
	h.rails[2] = rail6(2, 40002);
	h.rails[2].prefix = 128;
	if (rn_wire_write_hello(body, sizeof(body), &h, NULL) < 0)
		abort();
	n = rn_wire_encode(dg, sizeof(dg), &hd, NULL, body, RN_INIT_LEN - RN_HDR_LEN);
	if (n < 0)
		abort();
	write_file("fuzz_wire", "init_v6", dg, (size_t)n);
	lop(&s, FZL_RAW, 0, 0);
	put16(&s, (unsigned)n);
	putn(&s, dg, (size_t)n);
	save("fuzz_listen", "init_v6", &s);
}

/* ---- fuzz_conn scripts ---- */

static void conn_scripts(void)
{
	script s;

	conn_begin(&s, FZC_START_ESTABLISHED);
	cop(&s, FZC_PUMP, 0, 0, 0);
	put8(&s, 9);
	save("fuzz_conn", "pump", &s);

	conn_begin(&s, FZC_START_ESTABLISHED);
	cop(&s, FZC_WRITE, 0, 0, 0);
	put8(&s, 255);
	cop(&s, FZC_WRITE, 1, 0, 0);
	put8(&s, 100);
	cop(&s, FZC_PUMP, 0, 0, 0);
	put8(&s, 20);
	cop(&s, FZC_READ, 0, 0, 0);
	put8(&s, 200);
	cop(&s, FZC_READ, 1, 1, 0);
	put8(&s, 255);
	save("fuzz_conn", "write_pump_read", &s);

	for (int r = 0; r < 2; r++) {
		conn_begin(&s, FZC_START_ESTABLISHED);
		cop(&s, FZC_DELIVER_HELD, 0, r, 0);
		cop(&s, FZC_PUMP, 0, 0, 0);
		put8(&s, 5);
		save("fuzz_conn", r ? "deliver_held_newest_first" : "deliver_held", &s);
	}

	/* a whole flight lost: the RTO fires */
	conn_begin(&s, FZC_START_ESTABLISHED);
	cop(&s, FZC_WRITE, 0, 0, 0);
	put8(&s, 120);
	cflush(&s, 0, 3, 8, -1, FZC_FATE_DROP);
	ctime_ms(&s, 150);
	cop(&s, FZC_TIMER, 0, 0, 0);
	cop(&s, FZC_PUMP, 0, 0, 0);
	put8(&s, 10);
	save("fuzz_conn", "loss_rto", &s);

	/* datagrams out of a flush: each fate once, then a small buffer */
	conn_begin(&s, FZC_START_ESTABLISHED);
	cop(&s, FZC_WRITE, 0, 0, 0);
	put8(&s, 60);
	cop(&s, FZC_FLUSH, 0, 0, 0);
	put8(&s, 3 | 3 << 2);
	put8(&s, 0xe4); /* deliver, drop, hold, twice */
	cflush(&s, 1, 1, 1, 60, FZC_FATE_DELIVER);
	cflush(&s, 1, 2, 1, -1, FZC_FATE_DELIVER);
	cop(&s, FZC_DELIVER_HELD, 0, 0, 0);
	save("fuzz_conn", "flush_fates", &s);

	/* rail 1 cut off: failure detected, LINK_STATE, heartbeats, recovery */
	conn_begin(&s, FZC_START_ESTABLISHED);
	for (int i = 0; i < 4; i++) {
		ctime_ms(&s, 120);
		cop(&s, FZC_PUMP, 0, 0, 2);
		put8(&s, 2);
	}
	cop(&s, FZC_TIMER, 0, 1, 0);
	cop(&s, FZC_TIMER, 1, 1, 0);
	ctime_ms(&s, 120);
	cop(&s, FZC_PUMP, 0, 0, 0);
	put8(&s, 8);
	save("fuzz_conn", "rail_cut", &s);

	conn_begin(&s, FZC_START_ESTABLISHED);
	cop(&s, FZC_RAIL_ERROR, 0, 1, 0);
	cop(&s, FZC_PUMP, 0, 0, 0);
	put8(&s, 4);
	ctime_ms(&s, 120);
	cop(&s, FZC_TIMER, 0, 1, 0);
	cop(&s, FZC_PUMP, 0, 0, 0);
	put8(&s, 4);
	save("fuzz_conn", "rail_error", &s);

	conn_begin(&s, FZC_START_ESTABLISHED);
	cop(&s, FZC_SHUTDOWN, 0, 0, 0);
	cop(&s, FZC_SHUTDOWN, 1, 0, 0);
	cop(&s, FZC_PUMP, 0, 0, 0);
	put8(&s, 20);
	ctime_ms(&s, 1100);
	cop(&s, FZC_TIMER, 0, 0, 0);
	cop(&s, FZC_TIMER, 1, 0, 0);
	cop(&s, FZC_READ, 0, 0, 0);
	put8(&s, 10);
	save("fuzz_conn", "fin_linger_close", &s);

	conn_begin(&s, FZC_START_ESTABLISHED);
	cop(&s, FZC_ABORT, 0, 0, 0);
	cflush(&s, 0, 3, 4, -1, FZC_FATE_DELIVER);
	cop(&s, FZC_READ, 1, 0, 0);
	put8(&s, 255);
	cop(&s, FZC_WRITE, 1, 0, 0);
	put8(&s, 1);
	save("fuzz_conn", "abort", &s);

	conn_begin(&s, FZC_START_ESTABLISHED);
	ctime_ms(&s, 31000);
	cop(&s, FZC_TIMER, 0, 0, 0);
	cop(&s, FZC_TIMER, 1, 0, 0);
	cop(&s, FZC_REFUSED, 0, 0, 0);
	save("fuzz_conn", "dead_peer", &s);

	/* every pool datagram again, then each mutated once, from each address */
	conn_begin(&s, FZC_START_ESTABLISHED);
	for (int i = 0; i < FZ_POOL; i++) {
		cop(&s, FZC_REPLAY, 0, 0, 0);
		put8(&s, (unsigned)i);
	}
	save("fuzz_conn", "replay_pool", &s);
	conn_begin(&s, FZC_START_ESTABLISHED);
	for (int i = 0; i < FZ_POOL; i++) {
		cop(&s, FZC_MUTATE, 0, i & 1, (i >> 1) & 3);
		put8(&s, (unsigned)i);
		put8(&s, 1);
		put16(&s, (unsigned)(24 + i));
		put8(&s, 0x01);
	}
	save("fuzz_conn", "mutate_pool", &s);

	/* crafted: an ACK with two SACK words, DATA with the real bytes, LINK_STATE */
	conn_begin(&s, FZC_START_ESTABLISHED);
	cop(&s, FZC_CRAFT, 0, 0, 0);
	put8(&s, RN_PT_ACK - 1);
	put8(&s, FZC_CRAFT_ACK | 2 << FZC_CRAFT_WORDS_SHIFT);
	put16(&s, 0);      /* seq */
	put16(&s, 0xfffe); /* ack: two before the next new seq */
	put16(&s, 0);      /* wnd: ack + slots */
	put16(&s, 300);    /* ts_echo 300 us ago */
	put16(&s, 100);
	put8(&s, 0);
	put64(&s, UINT64_C(0x5));
	put64(&s, 0);
	save("fuzz_conn", "craft_ack_sack", &s);

	conn_begin(&s, FZC_START_ESTABLISHED);
	cop(&s, FZC_CRAFT, 1, 1, 0);
	put8(&s, RN_PT_DATA - 1);
	put8(&s, FZC_CRAFT_PATTERN);
	put16(&s, 0xffff); /* the last DATA the client sent */
	cop(&s, FZC_READ, 1, 0, 0);
	put8(&s, 255);
	save("fuzz_conn", "craft_data_real", &s);

	conn_begin(&s, FZC_START_ESTABLISHED);
	cop(&s, FZC_CRAFT, 0, 0, 0);
	put8(&s, RN_PT_LINK_STATE - 1);
	put8(&s, FZC_CRAFT_ACK);
	put16(&s, 0);
	put16(&s, 0);
	put16(&s, 0);
	put16(&s, 200);
	put16(&s, 50);
	put8(&s, 1);
	put32(&s, 7);      /* version */
	put32(&s, 0x01000000); /* rail 0 only */
	cflush(&s, 0, 3, 8, -1, FZC_FATE_DELIVER);
	ctime_ms(&s, 120);
	cop(&s, FZC_TIMER, 0, 0, 0);
	save("fuzz_conn", "craft_link_state", &s);

	conn_begin(&s, FZC_START_ESTABLISHED);
	cop(&s, FZC_RAW, 1, 1, 0);
	put8(&s, FZC_FIX_DST | FZC_FIX_HEADER | FZC_FIX_PATH);
	put16(&s, 24 + 20 + 8 + 100);
	for (int i = 0; i < 24 + 20 + 8 + 100; i++)
		put8(&s, (unsigned)(i * 37 + 1));
	save("fuzz_conn", "raw_fixed", &s);

	/* every clock scale, with timers */
	conn_begin(&s, FZC_START_ESTABLISHED);
	for (int hi = 0; hi < 12; hi++) {
		cop(&s, FZC_TIME, hi & 1, (hi >> 1) & 1, hi >> 2);
		put8(&s, 0x10);
		cop(&s, FZC_TIMER, hi & 1, 0, 0);
		cop(&s, FZC_PUMP, 0, 0, 0);
		put8(&s, 1);
	}
	save("fuzz_conn", "time_scales", &s);

	/* the handshake: held datagrams delivered, retransmissions, timeout */
	conn_begin(&s, FZC_START_INIT_SENT);
	cop(&s, FZC_DELIVER_HELD, 0, 0, 0);
	cop(&s, FZC_DELIVER_HELD, 0, 0, 0);
	cflush(&s, 0, 3, 4, -1, FZC_FATE_DELIVER);
	cflush(&s, 1, 3, 4, -1, FZC_FATE_DELIVER);
	cop(&s, FZC_PUMP, 0, 0, 0);
	put8(&s, 3);
	save("fuzz_conn", "hs_complete", &s);

	conn_begin(&s, FZC_START_INIT_SENT);
	ctime_ms(&s, 300);
	cop(&s, FZC_TIMER, 0, 0, 0);
	cflush(&s, 0, 3, 1, -1, FZC_FATE_HOLD);
	cop(&s, FZC_DELIVER_HELD, 0, 1, 0);
	cop(&s, FZC_DELIVER_HELD, 0, 0, 0);
	cop(&s, FZC_PUMP, 0, 0, 0);
	put8(&s, 3);
	save("fuzz_conn", "hs_init_resent", &s);

	conn_begin(&s, FZC_START_COOKIE_SENT);
	for (int i = 0; i < 6; i++) {
		ctime_ms(&s, 2100);
		cop(&s, FZC_TIMER, 0, 0, 0);
		cflush(&s, 0, 3, 1, -1, FZC_FATE_HOLD);
	}
	ctime_ms(&s, 31000);
	cop(&s, FZC_TIMER, 0, 0, 0);
	save("fuzz_conn", "hs_timeout", &s);

	/* the server's COOKIE_ACK is lost: its first DATA establishes the client */
	conn_begin(&s, FZC_START_COOKIE_SENT);
	cop(&s, FZC_DELIVER_HELD, 0, 0, 0);
	cflush(&s, 1, 3, 1, -1, FZC_FATE_DROP);
	cop(&s, FZC_WRITE, 1, 0, 0);
	put8(&s, 3);
	cop(&s, FZC_PUMP, 0, 0, 0);
	put8(&s, 3);
	save("fuzz_conn", "hs_cookie_ack_lost", &s);
}

/* ---- fuzz_listen scripts ---- */

static void listen_scripts(void)
{
	script s;

	s = (script){ .n = 0 };
	lop(&s, FZL_REPLAY_INIT, 0, 0);
	save("fuzz_listen", "replay_init", &s);

	s = (script){ .n = 0 };
	lop(&s, FZL_REPLAY_ECHO, 0, 0);
	lop(&s, FZL_REPLAY_ECHO, 1, 0);
	save("fuzz_listen", "replay_echo", &s);

	/* INIT from the client's other rail, echoed from there */
	s = (script){ .n = 0 };
	lop(&s, FZL_REPLAY_INIT, 1, 1);
	lop(&s, FZL_ECHO_ISSUED, 1, 1);
	put8(&s, 1);
	put8(&s, 0);
	lop(&s, FZL_ECHO_ISSUED, 0, 0);
	put8(&s, 1);
	put8(&s, 0);
	save("fuzz_listen", "init_echo_other_rail", &s);

	/* the cookie goes stale after 10 s */
	s = (script){ .n = 0 };
	lop(&s, FZL_TIME, 0, 0);
	put8(&s, 20);
	put16(&s, 9000); /* 9001 << 20 ns: 9.4 s */
	lop(&s, FZL_REPLAY_ECHO, 0, 0);
	lop(&s, FZL_TIME, 0, 0);
	put8(&s, 20);
	put16(&s, 1000);
	lop(&s, FZL_REPLAY_ECHO, 0, 0);
	save("fuzz_listen", "stale_cookie", &s);

	s = (script){ .n = 0 };
	lop(&s, FZL_MUT_INIT, 0, 0);
	put8(&s, 1);
	put16(&s, RN_HDR_LEN + 20);
	put8(&s, 0x01);
	lop(&s, FZL_MUT_ECHO, 0, 0);
	put8(&s, 1);
	put16(&s, 0x8000 | 100);
	put8(&s, 0xff);
	lop(&s, FZL_MUT_ECHO, 0, 0);
	put8(&s, 8);
	put8(&s, 1);
	save("fuzz_listen", "mutated_real", &s);

	/* an INIT with 8 rails, four in the listener's subnets, then its echo */
	s = (script){ .n = 0 };
	lop(&s, FZL_INIT, 0, 0);
	put64(&s, UINT64_C(0x1122334455667788));
	put32(&s, 0xfffffff0);
	put8(&s, 8); /* 256 slots */
	put16(&s, 1500);
	put8(&s, 8);
	for (int i = 0; i < 8; i++) {
		put32(&s, (198u << 24) | (18u << 16) | ((uint32_t)(i % 3 + 1) << 8) | (uint32_t)(10 + i));
		put16(&s, (unsigned)(5000 + i));
		put8(&s, i == 7 ? 16 : 24);
	}
	lop(&s, FZL_ECHO_ISSUED, 0, 0);
	put8(&s, 1);
	put8(&s, 0);
	save("fuzz_listen", "init_8_rails", &s);

	/* an INIT whose rails share no subnet with the listener: NOROUTE on accept */
	s = (script){ .n = 0 };
	lop(&s, FZL_INIT, 0, 3);
	put64(&s, 42);
	put32(&s, 1);
	put8(&s, 6);
	put16(&s, 256);
	put8(&s, 1);
	put32(&s, (10u << 24) | 1);
	put16(&s, 9);
	put8(&s, 8);
	lop(&s, FZL_ECHO_ISSUED, 0, 3);
	put8(&s, 1);
	put8(&s, 0);
	save("fuzz_listen", "init_no_route", &s);

	s = (script){ .n = 0 };
	put8(&s, FZL_REPLAY_INIT | 0x80);
	put8(&s, 60);
	put8(&s, FZL_REPLAY_INIT | 0x80);
	put8(&s, 200);
	save("fuzz_listen", "small_reply_buffer", &s);

	s = (script){ .n = 0 };
	lop(&s, FZL_REPLAY_INIT, 2, 0);
	lop(&s, FZL_REPLAY_ECHO, 3, 0);
	lop(&s, FZL_REPLAY_ECHO, 0, 2);
	save("fuzz_listen", "bad_rail_and_source", &s);
}

/* Each kept datagram: itself (wire), delivered (conn), fed to the listener (listen). */
static void datagram_inputs(void)
{
	for (int i = 0; i < g_nkept; i++) {
		const kept *k = &g_kept[i];
		script s;

		write_file("fuzz_wire", k->name, k->data, k->len);
		/* handshake replies to a client that waits for them */
		conn_begin(&s, k->data[1] == RN_PT_INIT_ACK     ? FZC_START_INIT_SENT :
			       k->data[1] == RN_PT_COOKIE_ACK ? FZC_START_COOKIE_SENT :
								FZC_START_ESTABLISHED);
		cop(&s, FZC_RAW, 1 - k->host, k->rail, 0);
		put8(&s, 0);
		put16(&s, (unsigned)k->len);
		putn(&s, k->data, k->len);
		save("fuzz_conn", k->name, &s);
		s.n = 0;
		lop(&s, FZL_RAW, k->rail, k->host == 0 ? 0 : 3);
		put16(&s, (unsigned)k->len);
		putn(&s, k->data, k->len);
		save("fuzz_listen", k->name, &s);
	}
}

int main(int argc, char **argv)
{
	static const char *const targets[] = { "fuzz_wire", "fuzz_conn", "fuzz_listen" };
	/* kinds beyond one per type: DATA with and without ACK block and SACK words, FIN */
	static const char *const required[] = { "data", "data_ack", "data_ack_sack", "ack_sack",
						 "data_fin" };
	char path[4096];
	int missing = 0;

	if (argc != 2) {
		fprintf(stderr, "usage: %s CORPUS_DIR\n", argv[0]);
		return 2;
	}
	g_dir = argv[1];
	make_dir(g_dir);
	for (int i = 0; i < 3; i++) {
		snprintf(path, sizeof(path), "%s/%s", g_dir, targets[i]);
		make_dir(path);
	}
	g_pair.tap = tap;
	scenario_stream(&g_pair);
	scenario_abort(&g_pair);
	scenario_rails(&g_pair);
	for (uint8_t t = 1; t <= RN_PT__MAX; t++) {
		if (!((g_types >> t) & 1)) {
			fprintf(stderr, "no %s datagram was sent\n", type_name(t));
			missing = 1;
		}
	}
	for (size_t i = 0; i < sizeof(required) / sizeof(required[0]); i++) {
		int found = 0;

		for (int j = 0; j < g_nkept && !found; j++)
			found = strncmp(g_kept[j].name, required[i], strlen(required[i])) == 0 &&
				g_kept[j].name[strlen(required[i])] == '_' &&
				g_kept[j].name[strlen(required[i]) + 1] >= '0' &&
				g_kept[j].name[strlen(required[i]) + 1] <= '9';
		if (!found) {
			fprintf(stderr, "no %s datagram was sent\n", required[i]);
			missing = 1;
		}
	}
	datagram_inputs();
	v6_inputs();
	conn_scripts();
	listen_scripts();
	printf("%d datagrams of %s kinds written to %s\n", g_nkept, missing ? "some" : "all",
	       g_dir);
	return missing;
}
