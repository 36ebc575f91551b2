/*
 * test_peers.c - many connections between two hosts share one rail monitor
 * per peer (rn_peer, docs/PROTOCOL.md "Rail health per peer").
 *
 * N connections open between a client process and a server process over 2
 * simulated rails, each carries a short seeded message, then all idle.
 * Each host groups its established connections into one rn_peer, as the
 * engine does.  Literal timestamps:
 *
 *   2 s - 5 s   all idle: the packets on the rails are counted;
 *   5 s         rail 1 black-holed both ways, for good;
 *   9 s         every connection of both hosts no longer sends on rail 1
 *               (the idle detection time: 1 s keepalives, 3.5 s silence,
 *               and the LINK_STATE's way back);
 *   40 s        past the 30 s dead-peer timeout of an idle member that
 *               hears nothing of its own: every client connection writes
 *               a second message; every byte arrives, none on rail 1.
 *
 * `conns N` runs it for N; `same` runs it for 1 and for 100 and checks the
 * idle packet count is the same: independent of the number of connections.
 * `--no-peer` leaves connections ungrouped (each judges its rails alone),
 * which is how the scenario fails without the shared monitor.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "ri2n_kit.h"
#include "rn_core.h"
#include "rn_wire.h"
#include "sim_net.h"

#define MAXC 128
#define PORT 7000
#define S(x) ((uint64_t)(x) * 1000000000u)
#define MSG1 1000
#define MSG2 20000
#define STUCK_MAX 100000

typedef struct pc {
	rn_conn *c;
	uint64_t sent, recvd, want_sent, want_recvd;
	uint64_t seed;
	uint64_t mismatches;
	int err;
} pc;

typedef struct host {
	int id;
	rn_rail_addr rails[2];
	pc conn[MAXC];
	int n;
	rn_listener lis;
	rn_peer peer;
	int peer_ready;
	uint64_t rng;
} host;

typedef struct world {
	sim_net net;
	host h[2];
	int nconns, grouped;
	uint64_t now;
	uint64_t data_on_dead;   /* DATA sent on rail 1 after the verdict time */
	uint64_t seed;
	uint64_t steps;
	uint64_t stuck;          /* steps a timer was still due right after it ran */
	uint64_t stuck_row;      /* ...in a row: past STUCK_MAX the run gives up */
} world;

static void *a_alloc(void *u, size_t n) { (void)u; return calloc(1, n); }
static void a_free(void *u, void *p) { (void)u; free(p); }
static uint64_t a_rng(void *u) { return sim_rand(u); }

static rn_env env_of(host *h)
{
	return (rn_env){ .mem = { a_alloc, a_free, NULL }, .rng = a_rng, .user = &h->rng };
}

static void w_init(world *w, int nconns, int grouped, uint64_t seed)
{
	rn_config cfg;

	memset(w, 0, sizeof(*w));
	w->nconns = nconns;
	w->grouped = grouped;
	w->seed = seed;
	sim_net_init(&w->net, 2, seed);
	for (int r = 0; r < 2; r++)
		w->net.link[r] = (sim_link){ .rate_bps = UINT64_C(1000000000), .delay_ns = 50000,
					     .queue_bytes = 1 << 20 };
	for (int i = 0; i < 2; i++) {
		host *h = &w->h[i];

		h->id = i;
		h->rng = seed * 3 + (uint64_t)i + 1;
		for (int r = 0; r < 2; r++)
			h->rails[r] = (rn_rail_addr){
				.ip = (198u << 24) | (18u << 16) | ((uint32_t)(r + 1) << 8) | (uint32_t)(i + 1),
				.port = (uint16_t)(i ? PORT : 40000), .prefix = 24 };
	}
	rn_config_default(&cfg);
	{
		rn_env e = env_of(&w->h[1]);

		if (rn_listener_init(&w->h[1].lis, &cfg, &e, w->h[1].rails, 2))
			abort();
	}
	for (int k = 0; k < nconns; k++) {
		rn_env e = env_of(&w->h[0]);
		pc *p = &w->h[0].conn[w->h[0].n++];

		if (rn_conn_connect(&p->c, &cfg, &e, w->h[0].rails, 2,
				    (rn_addr){ .ip = w->h[1].rails[0].ip, .port = PORT }, 0))
			abort();
		p->seed = seed * 1000 + (uint64_t)k;
		p->want_sent = MSG1;
	}
}

static pc *find(host *h, uint64_t id)
{
	for (int i = 0; i < h->n; i++)
		if (h->conn[i].c && rn_conn_id(h->conn[i].c) == id)
			return &h->conn[i];
	return NULL;
}

static void deliver(world *w, const sim_pkt *p)
{
	host *h = &w->h[p->to_host], *o = &w->h[1 - p->to_host];
	rn_addr from = { .ip = o->rails[p->rail].ip, .port = o->rails[p->rail].port };
	pc *c = find(h, rn_wire_peek_dst(p->data, p->len));
	uint8_t reply[2048];
	size_t rlen;
	rn_accept_params ap;
	int rc;

	if (c) {
		rn_conn_recv(c->c, w->now, p->rail, from, p->data, p->len);
		return;
	}
	if (h->id != 1)
		return;
	rc = rn_listener_recv(&h->lis, w->now, p->rail, from, p->data, p->len, reply,
			      sizeof(reply), &rlen, &ap);
	if (rc == RN_LISTEN_REPLY) {
		sim_net_send(&w->net, w->now, 1, p->rail, reply, rlen);
	} else if (rc == RN_LISTEN_ACCEPT && h->n < MAXC) {
		rn_env e = env_of(h);
		pc *n = &h->conn[h->n];

		/* accepted in connect order (nothing is lost): connection k carries seed k */
		n->seed = w->seed * 1000 + (uint64_t)h->n;
		if (rn_conn_accept(&n->c, &ap, &e, w->now) == 0)
			h->n++;
	}
}

/* The driver's part: an established connection joins its host's peer. */
static void group(world *w, host *h, pc *p)
{
	if (!w->grouped || rn_conn_peer_of(p->c) || rn_conn_state(p->c) != RN_ST_ESTABLISHED)
		return;
	if (!h->peer_ready) {
		if (rn_peer_init(&h->peer, p->c))
			return;
		h->peer_ready = 1;
	}
	if (rn_conn_join_peer(p->c, &h->peer, w->now))
		abort();
}

static void app(world *w, host *h, pc *p)
{
	static uint8_t buf[MSG2];

	if (rn_conn_state(p->c) < RN_ST_ESTABLISHED)
		return;
	while (p->sent < p->want_sent) {
		size_t n = (size_t)(p->want_sent - p->sent);
		ssize_t k;

		kit_pattern_fill(buf, p->seed, p->sent, n);
		k = rn_conn_write(p->c, w->now, buf, n);
		if (k <= 0)
			break;
		p->sent += (uint64_t)k;
	}
	for (;;) {
		const uint8_t *d;
		ssize_t n = rn_conn_peek(p->c, &d);

		if (n <= 0) {
			if (n < 0 && n != RN_ERR_AGAIN && !p->err)
				p->err = (int)n;
			break;
		}
		/* the server's copy of connection k carries the client's seed k */
		p->mismatches += kit_pattern_check(d, p->seed, p->recvd, (size_t)n);
		p->recvd += (uint64_t)n;
		rn_conn_consume(p->c, w->now, (size_t)n);
	}
	(void)h;
}

static void flush(world *w, host *h, pc *p, uint64_t dead_after)
{
	static uint8_t buf[RN_MAX_DGRAM];

	for (;;) {
		uint32_t writable = 0;
		rn_tx tx;
		ssize_t n;

		for (int r = 0; r < 2; r++)
			if (sim_net_writable(&w->net, h->id, r, w->now))
				writable |= 1u << r;
		n = rn_conn_write_pkt(p->c, w->now, writable, buf, sizeof(buf), &tx);
		if (n <= 0)
			break;
		if (buf[1] == RN_PT_DATA && tx.local_rail == 1 && w->now >= dead_after)
			w->data_on_dead++;
		if (sim_net_send(&w->net, w->now, h->id, tx.local_rail, buf, (size_t)n) < 0)
			rn_conn_rail_error(p->c, w->now, tx.local_rail);
	}
}

/*
 * A real driver's timer fires late (an event loop's granularity, a busy
 * thread): connection k's runs 1 + k % 40 ms after its expiry, so a timer
 * that stays due after it ran shows up as a loop (w->stuck), not a wait.
 */
#define TIMER_LATE(k) (UINT64_C(1000000) * (1 + (uint64_t)(k) % 40))

static uint64_t next_time(world *w)
{
	uint64_t t = sim_net_next(&w->net);

	for (int i = 0; i < 2; i++)
		for (int k = 0; k < w->h[i].n; k++) {
			uint64_t e = rn_conn_expiry(w->h[i].conn[k].c);

			if (e != UINT64_MAX && e > w->now)
				e += TIMER_LATE(k);
			if (e < t)
				t = e;
		}
	for (int i = 0; i < 2; i++)
		for (int r = 0; r < 2; r++) {
			uint64_t e = sim_net_writable_at(&w->net, i, r, w->now);

			if (e > w->now && e < t)
				t = e;
		}
	if (t <= w->now) {
		w->stuck++; /* due again right after running: a core bug, not a wait */
		w->stuck_row++;
		return w->now + 1;
	}
	w->stuck_row = 0;
	return t;
}

/* Runs until `until` (the last step at or before it). */
static void run(world *w, uint64_t until, uint64_t dead_after)
{
	while (w->now <= until) {
		sim_pkt p;
		uint64_t t;

		while (sim_net_pop(&w->net, w->now, &p)) {
			deliver(w, &p);
			free(p.data);
		}
		for (int i = 0; i < 2; i++)
			for (int k = 0; k < w->h[i].n; k++) {
				pc *c = &w->h[i].conn[k];

				if (rn_conn_expiry(c->c) <= w->now)
					rn_conn_on_timer(c->c, w->now);
				app(w, &w->h[i], c);
				group(w, &w->h[i], c);
				flush(w, &w->h[i], c, dead_after);
				app(w, &w->h[i], c);
			}
		w->steps++;
		t = next_time(w);
		if (t > until || w->stuck_row > STUCK_MAX)
			break;
		w->now = t;
	}
	w->now = until;
}

static uint64_t rail_packets(const world *w)
{
	uint64_t n = 0;

	for (int r = 0; r < 2; r++)
		n += w->net.sent[r][0] + w->net.sent[r][1];
	return n;
}

static void w_free(world *w)
{
	for (int i = 0; i < 2; i++)
		for (int k = 0; k < w->h[i].n; k++)
			rn_conn_del(w->h[i].conn[k].c);
	sim_net_free(&w->net);
}

#define CHECK(cond, ...)                                                  \
	do {                                                              \
		if (!(cond)) {                                            \
			printf("  FAIL (seed %llu, %d conns): ", (unsigned long long)seed, n); \
			printf(__VA_ARGS__);                              \
			printf("\n");                                     \
			fails++;                                          \
		}                                                         \
	} while (0)

/* One run with n connections; *idle_pkts: the packets on the rails from 2 s to 5 s. */
static int scenario(int n, int grouped, uint64_t seed, uint64_t *idle_pkts)
{
	static world w;
	uint64_t at2, at5;
	int fails = 0;

	w_init(&w, n, grouped, seed);
	run(&w, S(2), UINT64_MAX);
	CHECK(w.h[1].n == n, "%d of the connections accepted", w.h[1].n);
	at2 = rail_packets(&w);
	sim_net_window(&w.net, 1, S(5), SIM_NEVER, 0, -1);
	run(&w, S(5), UINT64_MAX);
	at5 = rail_packets(&w);
	*idle_pkts = at5 - at2;
	run(&w, S(9), UINT64_MAX);
	for (int i = 0; i < 2; i++)
		for (int k = 0; k < w.h[i].n; k++) {
			pc *c = &w.h[i].conn[k];

			CHECK(rn_conn_state(c->c) == RN_ST_ESTABLISHED, "host %d conn %d in state %d", i, k,
			      rn_conn_state(c->c));
			CHECK(!rn_conn_rail_usable(c->c, 1), "host %d conn %d still sends on rail 1 at 9 s",
			      i, k);
			CHECK(rn_conn_rail_usable(c->c, 0), "host %d conn %d lost rail 0", i, k);
		}
	run(&w, S(40), S(9));
	for (int k = 0; k < w.h[0].n; k++)
		w.h[0].conn[k].want_sent = MSG1 + MSG2;
	run(&w, S(42), S(9));
	for (int k = 0; k < w.h[1].n; k++) {
		pc *s = &w.h[1].conn[k];

		CHECK(s->recvd == MSG1 + MSG2 && s->mismatches == 0 && s->err == 0,
		      "server conn %d: %llu bytes, %llu wrong, err %d", k, (unsigned long long)s->recvd,
		      (unsigned long long)s->mismatches, s->err);
	}
	for (int k = 0; k < w.h[0].n; k++)
		CHECK(w.h[0].conn[k].err == 0, "client conn %d failed: %d", k, w.h[0].conn[k].err);
	CHECK(w.stuck < 1000, "%llu steps found a timer due right after it ran (a timer loop)",
	      (unsigned long long)w.stuck);
	CHECK(w.data_on_dead == 0, "%llu DATA packets went into the dead rail after 9 s",
	      (unsigned long long)w.data_on_dead);
	printf("  seed %llu, %d conns%s: %llu packets on the rails while idle (2-5 s), %llu steps\n",
	       (unsigned long long)seed, n, grouped ? "" : " (ungrouped)",
	       (unsigned long long)*idle_pkts, (unsigned long long)w.steps);
	w_free(&w);
	return fails;
}

int main(int argc, char **argv)
{
	int grouped = 1, a = 1, fails = 0;
	uint64_t s0 = 1, s1 = 2;

	if (a < argc && !strcmp(argv[a], "--no-peer")) {
		grouped = 0;
		a++;
	}
	if (a + 1 < argc && !strcmp(argv[a], "--seeds")) {
		if (sscanf(argv[a + 1], "%llu-%llu", (unsigned long long *)&s0,
			   (unsigned long long *)&s1) != 2)
			s1 = s0;
		a += 2;
	}
	if (a >= argc) {
		fprintf(stderr, "usage: %s [--no-peer] [--seeds A-B] conns N | same\n", argv[0]);
		return 2;
	}
	for (uint64_t seed = s0; seed <= s1; seed++) {
		uint64_t one, many;

		if (!strcmp(argv[a], "conns") && a + 1 < argc) {
			fails += scenario(atoi(argv[a + 1]), grouped, seed, &one);
		} else if (!strcmp(argv[a], "same")) {
			int n = 100;

			fails += scenario(1, grouped, seed, &one);
			fails += scenario(n, grouped, seed, &many);
			CHECK(many == one, "idle packets: %llu with 100 connections, %llu with 1",
			      (unsigned long long)many, (unsigned long long)one);
		} else {
			fprintf(stderr, "unknown scenario %s\n", argv[a]);
			return 2;
		}
	}
	printf("%s\n", fails ? "FAIL" : "ok");
	return fails ? 1 : 0;
}
