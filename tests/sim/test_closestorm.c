/*
 * test_closestorm.c - a close storm in the simulator: N connections between
 * two hosts over 2 rails with random loss, each carrying an 8-byte hello
 * (its index) that the server echoes; once every echo is verified the
 * client shuts all N down in the same nanosecond, and the server shuts each
 * down as it reads the EOF.  Every connection on both sides must end
 * clean (RN_EV_CLOSED, never RN_EV_FAILED: no dead-peer timeout, no reset)
 * within CLOSE_BOUND_NS of the storm, and reach CLOSED after its linger.
 *
 *   ri2n-sim-storm [--seeds A-B] [--conns N] [--loss PCT] [--rate MBIT] [--early 1]
 *
 * --early 1: the clients send their hello as early data, behind the
 * COOKIE_ECHO (rn_conn_set_early): a hello whose COOKIE_ECHO was lost
 * reaches a listener that drops it, and goes again once established.
 *
 * Rails are 100 Mbit/s each with 64 KiB drop-tail queues: the FINs and
 * ACKs of the storm overflow them.  Before the fix every FIN put its
 * connection back at the busy pace, so 10,000 connections sent padded
 * keepalives on both rails ten times a second (2 x 10,000 x 10 x 1.5 KB =
 * 2.4 Gbit/s): the queues dropped 350,000 datagrams and the last
 * connection closed 8-10 s after the storm.
 * All time is virtual; a seed replays exactly.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "rn_core.h"
#include "sim_net.h"

#define SEC UINT64_C(1000000000)
#define MS UINT64_C(1000000)
#define SERVER_PORT 7000
#define CONNECT_GAP_NS (200 * UINT64_C(1000)) /* 5,000 connects a second */
#define CLOSE_BOUND_NS (2 * SEC)              /* the bound */

enum { ST_NEW, ST_HELLO, ST_READY, ST_SHUT, ST_CLOSED, ST_FAILED };

typedef struct sconn {
	rn_conn *c;
	int host, idx, app, failed_err;
	uint64_t closed_ns, ver;
	uint8_t got[8];
	unsigned ngot;
	int eof;
} sconn;

typedef struct hent {
	uint64_t at, ver;
	sconn *s;
} hent;

static struct {
	sim_net net;
	rn_rail_addr rails[2][2];
	rn_config cfg;
	rn_listener lis;
	sconn *cl, **sv;
	int n, nsv;
	uint64_t now, rng[2], storm_ns;
	hent *heap;
	size_t nheap, capheap;
	sconn **dirty;
	int ndirty;
	long bad_echo, failed, ready[2];
	int stormed;
	struct { uint64_t id; sconn *s; } *tab; /* connection ids, open addressing */
	size_t tabmask;
} W;

static void *al(void *u, size_t n) { (void)u; return calloc(1, n); }
static void de(void *u, void *p) { (void)u; free(p); }
static uint64_t rng0(void *u) { (void)u; return sim_rand(&W.rng[0]); }
static uint64_t rng1(void *u) { (void)u; return sim_rand(&W.rng[1]); }

static void on_event(void *user, const rn_event *ev)
{
	sconn *s = user;

	if (!s)
		return;
	if (ev->type == RN_EV_CLOSED && s->app != ST_CLOSED) {
		s->app = ST_CLOSED;
		s->closed_ns = ev->time_ns;
	} else if (ev->type == RN_EV_FAILED && s->app != ST_FAILED) {
		s->app = ST_FAILED;
		s->failed_err = ev->err;
		W.failed++;
	}
}

static rn_env env_of(int host, sconn *s)
{
	return (rn_env){ .mem = { al, de, NULL }, .rng = host ? rng1 : rng0,
			 .on_event = on_event, .user = s };
}

/* ---- timers: a binary heap of (deadline, connection), stale entries skipped ---- */

static void heap_push(sconn *s, uint64_t at)
{
	size_t i;

	if (W.nheap == W.capheap) {
		W.capheap = W.capheap ? 2 * W.capheap : 4096;
		W.heap = realloc(W.heap, W.capheap * sizeof(*W.heap));
	}
	i = W.nheap++;
	while (i && W.heap[(i - 1) / 2].at > at) {
		W.heap[i] = W.heap[(i - 1) / 2];
		i = (i - 1) / 2;
	}
	W.heap[i] = (hent){ at, s->ver, s };
}

static hent heap_pop(void)
{
	hent top = W.heap[0], last = W.heap[--W.nheap];
	size_t i = 0;

	for (;;) {
		size_t k = 2 * i + 1;

		if (k >= W.nheap)
			break;
		if (k + 1 < W.nheap && W.heap[k + 1].at < W.heap[k].at)
			k++;
		if (W.heap[k].at >= last.at)
			break;
		W.heap[i] = W.heap[k];
		i = k;
	}
	if (W.nheap)
		W.heap[i] = last;
	return top;
}

static void touch(sconn *s)
{
	if (s->ver & 1)
		return; /* already on the dirty list */
	s->ver++;
	W.dirty[W.ndirty++] = s;
}

/* ---- the application on each connection ---- */

static void app_io(sconn *s)
{
	uint8_t hello[8];
	const uint8_t *d;
	ssize_t n;

	if (s->c == NULL || (rn_conn_state(s->c) < RN_ST_ESTABLISHED && !rn_conn_takes_bytes(s->c)))
		return;
	if (s->host == 0 && s->app == ST_NEW) {
		for (int i = 0; i < 8; i++)
			hello[i] = (uint8_t)((unsigned)s->idx >> (8 * (i & 3))) ^ (uint8_t)i;
		if (rn_conn_write(s->c, W.now, hello, 8) == 8)
			s->app = ST_HELLO;
	}
	while ((n = rn_conn_peek(s->c, &d)) > 0) {
		for (ssize_t i = 0; i < n; i++) {
			if (s->ngot < 8)
				s->got[s->ngot++] = d[i];
			else
				W.bad_echo++; /* nothing follows the hello */
		}
		rn_conn_consume(s->c, W.now, (size_t)n);
		if (s->ngot == 8 && s->host == 1 && s->app == ST_NEW) {
			if (rn_conn_write(s->c, W.now, s->got, 8) == 8) {
				s->app = ST_READY; /* echoed */
				W.ready[1]++;
			}
		} else if (s->ngot == 8 && s->host == 0 && s->app == ST_HELLO) {
			for (int i = 0; i < 8; i++)
				if (s->got[i] != ((uint8_t)((unsigned)s->idx >> (8 * (i & 3))) ^ (uint8_t)i))
					W.bad_echo++;
			s->app = ST_READY;
			W.ready[0]++;
		}
	}
	if (n == 0 && !s->eof)
		s->eof = 1;
	/* the server closes on the client's EOF, the client at the storm */
	if (s->app == ST_READY && ((s->host == 1 && s->eof) || (s->host == 0 && W.stormed))) {
		if (rn_conn_shutdown(s->c, W.now) == 0)
			s->app = ST_SHUT;
	}
}

static void flush(sconn *s)
{
	static uint8_t buf[RN_MAX_DGRAM];
	rn_tx tx;
	ssize_t n;

	while ((n = rn_conn_write_pkt(s->c, W.now, 3, buf, sizeof(buf), &tx)) > 0)
		sim_net_send(&W.net, W.now, s->host, tx.local_rail, buf, (size_t)n);
}

static void tab_put(uint64_t id, sconn *s)
{
	size_t i = (size_t)(id * UINT64_C(0x9e3779b97f4a7c15) >> 20) & W.tabmask;

	while (W.tab[i].s && W.tab[i].id != id)
		i = (i + 1) & W.tabmask;
	W.tab[i].id = id;
	W.tab[i].s = s;
}

static void service(sconn *s)
{
	uint64_t exp;

	s->ver++; /* even: off the dirty list; older heap entries are stale */
	if (!s->c)
		return;
	app_io(s);
	flush(s);
	app_io(s);
	flush(s);
	tab_put(rn_conn_id(s->c), s); /* a client's id changes if its handshake restarts */
	exp = rn_conn_expiry(s->c);
	if (exp != UINT64_MAX)
		heap_push(s, exp);
}

/* ---- delivery ---- */

static sconn *find(int host, uint64_t id)
{
	size_t i = (size_t)(id * UINT64_C(0x9e3779b97f4a7c15) >> 20) & W.tabmask;

	for (; W.tab[i].s; i = (i + 1) & W.tabmask)
		if (W.tab[i].id == id && W.tab[i].s->host == host && W.tab[i].s->c &&
		    rn_conn_id(W.tab[i].s->c) == id)
			return W.tab[i].s;
	return NULL;
}

static void deliver(const sim_pkt *p)
{
	int h = p->to_host;
	rn_addr from = { .ip = W.rails[1 - h][p->rail].ip, .port = W.rails[1 - h][p->rail].port };
	uint64_t dst = rn_wire_peek_dst(p->data, p->len);
	sconn *s = dst ? find(h, dst) : NULL;
	uint8_t reply[2048];
	size_t rlen;
	rn_accept_params ap;

	if (s) {
		rn_conn_recv(s->c, W.now, p->rail, from, p->data, p->len);
		touch(s);
		return;
	}
	if (h == 0) { /* a stateless reset: offered to every connection */
		if (rn_wire_peek_sreset(p->data, p->len))
			for (int i = 0; i < W.n; i++)
				if (W.cl[i].c) {
					rn_conn_recv(W.cl[i].c, W.now, p->rail, from, p->data, p->len);
					touch(&W.cl[i]);
				}
		return;
	}
	int rc = rn_listener_recv(&W.lis, W.now, p->rail, from, p->data, p->len, reply,
				  sizeof(reply), &rlen, &ap);

	if (rc == RN_LISTEN_REPLY) {
		sim_net_send(&W.net, W.now, 1, p->rail, reply, rlen);
	} else if (rc == RN_LISTEN_ACCEPT) {
		sconn *n = calloc(1, sizeof(*n));
		rn_env e = env_of(1, n);

		n->host = 1;
		n->idx = W.nsv;
		if (rn_conn_accept(&n->c, &ap, &e, W.now) == 0) {
			W.sv[W.nsv++] = n;
			touch(n);
		} else {
			free(n);
		}
	}
}

static int run(uint64_t seed, int n, double loss, uint64_t rate_bps, int early)
{
	uint64_t limit, next_connect = 0, next_check = 0;
	int connected = 0;
	rn_env le;

	memset(&W, 0, sizeof(W));
	W.n = n;
	W.rng[0] = seed * 2 + 1;
	W.rng[1] = seed * 2 + 2;
	sim_net_init(&W.net, 2, seed);
	for (int r = 0; r < 2; r++) {
		W.net.link[r].rate_bps = rate_bps;
		W.net.link[r].delay_ns = 50000;
		W.net.link[r].queue_bytes = 64 << 10;
		W.net.link[r].loss = loss;
		for (int h = 0; h < 2; h++)
			W.rails[h][r] = (rn_rail_addr){
				.ip = (198u << 24) | (18u << 16) | ((uint32_t)(r + 1) << 8) | (uint32_t)(h + 1),
				.port = (uint16_t)(h ? SERVER_PORT : 40000 + r), .prefix = 24 };
	}
	rn_config_default(&W.cfg);
	le = env_of(1, NULL);
	if (rn_listener_init(&W.lis, &W.cfg, &le, W.rails[1], 2))
		return 1;
	W.cl = calloc((size_t)n, sizeof(*W.cl));
	W.sv = calloc((size_t)n, sizeof(*W.sv));
	W.dirty = calloc(2 * (size_t)n + 1, sizeof(*W.dirty));
	for (W.tabmask = 1; W.tabmask < 16 * (size_t)n; W.tabmask <<= 1)
		;
	W.tab = calloc(W.tabmask, sizeof(*W.tab));
	W.tabmask--;
	limit = 120 * SEC;
	for (;;) {
		uint64_t t = sim_net_next(&W.net);
		sim_pkt p;

		/* connects, spaced as a busy client opens them */
		if (connected < n && next_connect <= W.now) {
			sconn *s = &W.cl[connected];
			rn_env e = env_of(0, s);

			s->idx = connected++;
			if (rn_conn_connect(&s->c, &W.cfg, &e, W.rails[0], 2,
					    (rn_addr){ .ip = W.rails[1][0].ip,
						       .port = SERVER_PORT },
					    W.now))
				return 1;
			rn_conn_set_early(s->c, early);
			touch(s);
			next_connect = W.now + CONNECT_GAP_NS;
		}
		while (sim_net_pop(&W.net, W.now, &p)) {
			deliver(&p);
			free(p.data);
		}
		while (W.nheap && W.heap[0].at <= W.now) {
			hent e = heap_pop();

			if (e.ver != e.s->ver)
				continue;
			rn_conn_on_timer(e.s->c, W.now);
			touch(e.s);
		}
		if (!W.storm_ns && W.ready[0] == n && W.ready[1] == n) {
			/* the storm, after a rest long enough for the idle pace */
			W.storm_ns = W.now + 3 * SEC;
			printf("  %d connections ready at t=%.3f s; storm at %.3f s\n", n,
			       (double)W.now / 1e9, (double)W.storm_ns / 1e9);
		}
		if (W.storm_ns && W.now >= W.storm_ns && !W.stormed) {
			W.stormed = 1;
			for (int i = 0; i < n; i++)
				touch(&W.cl[i]); /* all shut in this nanosecond */
		}
		while (W.ndirty)
			service(W.dirty[--W.ndirty]);
		if (W.stormed && W.now >= next_check) {
			next_check = W.now + MS;
			int done = 1;

			for (int i = 0; i < n && done; i++)
				done = rn_conn_state(W.cl[i].c) == RN_ST_CLOSED;
			for (int i = 0; i < W.nsv && done; i++)
				done = rn_conn_state(W.sv[i]->c) == RN_ST_CLOSED;
			if (done)
				break;
		}
		if (W.nheap && W.heap[0].at < t)
			t = W.heap[0].at;
		if (connected < n && next_connect < t)
			t = next_connect;
		if (W.stormed && next_check < t)
			t = next_check;
		if (W.storm_ns > W.now && W.storm_ns < t)
			t = W.storm_ns;
		if (t <= W.now)
			t = W.now + 1;
		W.now = t;
		if (W.now >= limit) {
			printf("  FAIL: not all closed within %.0f s of virtual time\n",
			       (double)limit / 1e9);
			break;
		}
	}
	{
		long cfail = 0, sfail = 0, unclosed = 0, reset = 0, timedout = 0;
		uint64_t last = 0, early_pkts = 0;

		for (int i = 0; i < n; i++) {
			rn_conn_stats st;

			if (W.cl[i].c) {
				rn_conn_get_stats(W.cl[i].c, &st);
				early_pkts += st.early_packets;
			}
		}
		if (early)
			printf("  early data: %llu hellos sent early, %llu dropped by the listener (their "
			       "COOKIE_ECHO lost)\n", (unsigned long long)early_pkts,
			       (unsigned long long)W.lis.drops[RN_DROP_UNKNOWN_CONN]);

		for (int k = 0; k < 2 * n; k++) {
			sconn *s = k < n ? &W.cl[k] : (k - n < W.nsv ? W.sv[k - n] : NULL);

			if (!s) {
				unclosed++;
				continue;
			}
			if (s->app == ST_FAILED) {
				*(k < n ? &cfail : &sfail) += 1;
				reset += s->failed_err == RN_ERR_RESET;
				timedout += s->failed_err == RN_ERR_TIMEDOUT;
			} else if (s->app != ST_CLOSED) {
				unclosed++;
			} else if (s->closed_ns > last) {
				last = s->closed_ns;
			}
		}
		printf("  seed %llu: %d connections, loss %.1f%%: client failed %ld, server failed "
		       "%ld (%ld reset, %ld dead-peer), not closed %ld, bad echo %ld; last clean "
		       "close %.3f s after the storm; queue drops %llu, loss drops %llu\n",
		       (unsigned long long)seed, n, loss * 100, cfail, sfail, reset, timedout,
		       unclosed, W.bad_echo, last > W.storm_ns ? (double)(last - W.storm_ns) / 1e9 : 0,
		       (unsigned long long)W.net.dropped_queue, (unsigned long long)W.net.dropped_loss);
		/* early: (nearly) every hello went early; without, none did */
		int ok = !cfail && !sfail && !unclosed && !W.bad_echo && W.nsv == n &&
			 last - W.storm_ns <= CLOSE_BOUND_NS && W.now < limit &&
			 (early ? early_pkts >= (uint64_t)n / 2 : early_pkts == 0);

		for (int i = 0; i < n; i++)
			rn_conn_del(W.cl[i].c);
		for (int i = 0; i < W.nsv; i++) {
			rn_conn_del(W.sv[i]->c);
			free(W.sv[i]);
		}
		free(W.cl);
		free(W.sv);
		free(W.dirty);
		free(W.heap);
		free(W.tab);
		sim_net_free(&W.net);
		return ok ? 0 : 1;
	}
}

int main(int argc, char **argv)
{
	unsigned long a = 1, b = 2;
	int n = 2000;
	double loss = 0.01;
	uint64_t rate = 100000000;
	int fails = 0, early = 0;

	for (int i = 1; i + 1 < argc; i += 2) {
		if (!strcmp(argv[i], "--seeds") && sscanf(argv[i + 1], "%lu-%lu", &a, &b) < 1)
			return 2;
		if (!strcmp(argv[i], "--seeds") && !strchr(argv[i + 1], '-'))
			b = a;
		if (!strcmp(argv[i], "--conns"))
			n = atoi(argv[i + 1]);
		if (!strcmp(argv[i], "--loss"))
			loss = atof(argv[i + 1]) / 100;
		if (!strcmp(argv[i], "--rate"))
			rate = (uint64_t)(atof(argv[i + 1]) * 1e6);
		if (!strcmp(argv[i], "--early"))
			early = atoi(argv[i + 1]) != 0;
	}
	for (unsigned long s = a; s <= b; s++) {
		int rc = run(s, n, loss, rate, early);

		printf("%s: close storm, seed %lu\n", rc ? "FAIL" : "ok", s);
		fails += rc;
	}
	return fails ? 1 : 0;
}
