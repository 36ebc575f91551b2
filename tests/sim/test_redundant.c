/*
 * test_redundant.c - redundant small messages (RI2N_REDUNDANT_BYTES) over
 * the simulated network.
 *
 *   ri2n-sim-redundant [--seeds FIRST-LAST] [scenario ...]
 *
 * lossy: 8-byte request/response over 2 GbE rails, rail 1 losing 1% of
 * its datagrams each way.  Without copies, a request or answer lost on
 * rail 1 waits for a retransmission (the RTO's 20 ms floor: nothing else
 * follows it on that rail to show the loss).  With copies on, no message
 * waits for one: each packet also went on rail 0.  Both runs of a seed
 * print their round-trip distribution; every byte is checked, and the
 * copies must leave the rails' verdicts alone (no rail-down event).
 *
 * lossy-keyed: the same with a cluster key at both ends.
 *
 * one-rail: the same with copies on while rail 1's cable is out for 200 ms:
 * no copy goes out while rail 0 is the only rail that works, none on the
 * dead rail, and every message arrives.
 */
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "sim_check.h"
#include "sim_harness.h"

#define NMSG 2000
#define MSG 8
/* 5 ms: far over a GbE round trip with its ACK delays, far under the RTO's 20 ms floor */
#define SLOW_NS (5 * MS)

static sim_link gbe(uint64_t seed)
{
	return (sim_link){ .rate_bps = 1000000000, .delay_ns = 20000 + (seed * 7919) % 20000,
			   .queue_bytes = 2500000 };
}

/* Every byte arrived both ways, intact, both ends closed clean, no DATA on a rail known down. */
static int check_clean(const sim *s, uint64_t nmsg)
{
	CHECK(!s->hung, "run did not finish (%s) at t=%.3f s", s->hung == 2 ? "timer loop" : "hang",
	      (double)s->now_ns / SEC);
	for (int i = 0; i < 2; i++) {
		const sim_host *h = &s->host[i];

		CHECK(h->err == 0, "host %d failed: %s", i, rn_strerror(h->err));
		CHECK(h->mismatches == 0, "host %d: %" PRIu64 " corrupted bytes", i, h->mismatches);
		CHECK(h->recvd == h->to_recv, "host %d received %" PRIu64 " of %" PRIu64 " bytes", i,
		      h->recvd, h->to_recv);
		CHECK(h->eof, "host %d saw no end of stream", i);
		for (int r = 0; r < h->nrails; r++)
			CHECK(h->data_tx_while_down[r] == 0,
			      "host %d sent %" PRIu64 " DATA packets on rail %d while it was down", i,
			      h->data_tx_while_down[r], r);
	}
	CHECK(s->host[0].nlat == nmsg, "%" PRIu64 " of %" PRIu64 " answers", s->host[0].nlat, nmsg);
	return 0;
}

static int cmp_u64(const void *a, const void *b)
{
	uint64_t x = *(const uint64_t *)a, y = *(const uint64_t *)b;

	return x < y ? -1 : x > y;
}

/* What one run measured. */
typedef struct rr_result {
	uint64_t slow, p50, p99, p999, max;
	uint64_t copies, retransmits, rto_events, rail_downs;
} rr_result;

static void summarize(sim *s, rr_result *r)
{
	sim_host *c = &s->host[0];

	memset(r, 0, sizeof(*r));
	for (uint64_t i = 0; i < c->nlat; i++)
		r->slow += c->lat_ns[i] > SLOW_NS;
	qsort(c->lat_ns, c->nlat, sizeof(*c->lat_ns), cmp_u64);
	if (c->nlat) {
		r->p50 = c->lat_ns[c->nlat / 2];
		r->p99 = c->lat_ns[c->nlat * 99 / 100];
		r->p999 = c->lat_ns[c->nlat * 999 / 1000];
		r->max = c->lat_ns[c->nlat - 1];
	}
	for (int i = 0; i < 2; i++) {
		rn_conn_stats st;

		if (!s->host[i].conn)
			continue;
		rn_conn_get_stats(s->host[i].conn, &st);
		r->copies += st.copies;
		r->retransmits += st.retransmits;
		r->rto_events += st.rto_events;
		for (int e = 0; e < s->host[i].nevents; e++)
			r->rail_downs += s->host[i].events[e].ev.type == RN_EV_RAIL_DOWN;
	}
}

static void print_result(const char *name, const rr_result *r)
{
	printf("\n    %-9s rtt p50 %6.1f us p99 %7.1f us p99.9 %7.1f us max %7.1f us, %" PRIu64
	       " over 5 ms; %" PRIu64 " copies, %" PRIu64 " resent, %" PRIu64 " RTOs",
	       name, (double)r->p50 / 1e3, (double)r->p99 / 1e3, (double)r->p999 / 1e3,
	       (double)r->max / 1e3, r->slow, r->copies, r->retransmits, r->rto_events);
}

/* lossy-keyed: the same with a cluster key (each copy sealed under its own packet number) */
static int g_keyed;

/* An 8-byte request/response run; redundant: copies of messages up to 64 bytes at both ends. */
static int run_rr(uint64_t seed, int redundant, double loss, uint64_t down_from, rr_result *res)
{
	sim s;
	int rc;

	sim_init(&s, 2, seed);
	for (int r = 0; r < 2; r++)
		s.net.link[r] = gbe(seed);
	s.net.link[1].loss = loss;
	if (down_from)
		sim_net_window(&s.net, 1, down_from, down_from + 200 * MS, 1, -1);
	s.limit_ns = 60 * SEC;
	for (int h = 0; h < 2; h++) {
		s.cfg[h].redundant_bytes = redundant ? 64 : 0;
		s.cfg[h].keyed = (uint8_t)g_keyed;
		for (int i = 0; i < RN_KEY_LEN; i++)
			s.cfg[h].key[i] = (uint8_t)(seed * 29 + (uint64_t)i * 3);
	}
	rc = sim_start_rr(&s, NMSG, MSG);
	if (rc) {
		sim_free(&s);
		CHECK(0, "start failed: %s", rn_strerror(rc));
	}
	sim_run(&s);
	rc = check_clean(&s, NMSG);
	summarize(&s, res);
	sim_free(&s);
	return rc;
}

static int sc_lossy(uint64_t seed)
{
	rr_result off, on;

	if (run_rr(seed, 0, 0.01, 0, &off) || run_rr(seed, 1, 0.01, 0, &on))
		return 1;
	print_result("normal", &off);
	print_result("redundant", &on);
	printf("\n   ");
	CHECK(off.copies == 0, "%" PRIu64 " copies with the option off", off.copies);
	/* the premise: without copies a loss on rail 1 costs a retransmission's wait */
	CHECK(off.slow > 0, "no message waited for a retransmission without copies");
	/* nearly all: the first few go before the server has proven the client's rail 1 */
	CHECK(on.copies >= 2 * NMSG * 95 / 100, "%" PRIu64 " copies for %d requests and answers",
	      on.copies, 2 * NMSG);
	CHECK(on.slow == 0, "%" PRIu64 " messages waited over 5 ms with copies (max %.1f ms)",
	      on.slow, (double)on.max / 1e6);
	CHECK(off.rail_downs == 0 && on.rail_downs == 0,
	      "a rail was judged down (%" PRIu64 " normal, %" PRIu64 " redundant)", off.rail_downs,
	      on.rail_downs);
	return 0;
}

static int sc_lossy_keyed(uint64_t seed)
{
	int rc;

	g_keyed = 1;
	rc = sc_lossy(seed);
	g_keyed = 0;
	return rc;
}

/* The client's copies when rail 1 went down, and any made while it stayed down. */
static uint64_t g_down_from, g_copies_at, g_copies_while;

static void probe_one_rail(sim *s, void *arg)
{
	rn_conn_stats st;

	(void)arg;
	if (!s->host[0].conn || s->now_ns < g_down_from + 1 * MS)
		return;
	rn_conn_get_stats(s->host[0].conn, &st);
	if (s->now_ns < g_down_from + 2 * MS)
		g_copies_at = st.copies;
	else if (s->now_ns < g_down_from + 200 * MS && st.copies > g_copies_at)
		g_copies_while = st.copies - g_copies_at;
}

static int sc_one_rail(uint64_t seed)
{
	rr_result on;
	uint64_t end;
	sim s;
	int rc;

	g_down_from = 50 * MS;
	g_copies_at = g_copies_while = 0;
	sim_init(&s, 2, seed);
	for (int r = 0; r < 2; r++)
		s.net.link[r] = gbe(seed);
	/* the cable out: the sender's next send on rail 1 fails, its copies stop */
	sim_net_window(&s.net, 1, g_down_from, g_down_from + 200 * MS, 1, -1);
	s.limit_ns = 60 * SEC;
	for (int h = 0; h < 2; h++)
		s.cfg[h].redundant_bytes = 64;
	s.probe = probe_one_rail;
	rc = sim_start_rr(&s, 5 * NMSG, MSG);
	if (rc) {
		sim_free(&s);
		CHECK(0, "start failed: %s", rn_strerror(rc));
	}
	sim_run(&s);
	rc = check_clean(&s, 5 * NMSG);
	summarize(&s, &on);
	end = s.now_ns;
	sim_free(&s);
	if (rc)
		return rc;
	print_result("one rail", &on);
	printf("\n   ");
	CHECK(end > g_down_from + 200 * MS, "done before the cable came back");
	CHECK(g_copies_at > 0, "no copies before the cable was pulled");
	CHECK(g_copies_while == 0, "%" PRIu64 " copies while rail 0 was the only rail working",
	      g_copies_while);
	return 0;
}

typedef struct scenario {
	const char *name;
	int (*run)(uint64_t seed);
	const char *what;
} scenario;

static const scenario scenarios[] = {
	{ "lossy", sc_lossy, "8 B request/response, 1% loss on rail 1: copies vs none" },
	{ "lossy-keyed", sc_lossy_keyed, "lossy with a cluster key at both ends" },
	{ "one-rail", sc_one_rail, "copies on, rail 1's cable out 200 ms: none while it is" },
};

int main(int argc, char **argv)
{
	uint64_t first = 1, last = 3;
	int failed = 0, ran = 0, a = 1;

	if (a + 1 < argc && !strcmp(argv[a], "--seeds")) {
		if (sscanf(argv[a + 1], "%" SCNu64 "-%" SCNu64, &first, &last) == 1)
			last = first;
		a += 2;
	}
	for (size_t k = 0; k < sizeof(scenarios) / sizeof(*scenarios); k++) {
		const scenario *sc = &scenarios[k];
		int want = a == argc;

		for (int j = a; j < argc; j++)
			want |= !strcmp(argv[j], sc->name);
		for (uint64_t seed = first; want && seed <= last; seed++) {
			g_why[0] = 0;
			printf("%-9s seed %-4" PRIu64 " ", sc->name, seed);
			fflush(stdout);
			ran++;
			if (sc->run(seed)) {
				failed++;
				printf("FAIL: %s (replay: ri2n-sim-redundant --seeds %" PRIu64 " %s)\n",
				       g_why, seed, sc->name);
			} else {
				printf(" ok\n");
			}
		}
	}
	if (ran == 0) {
		fprintf(stderr, "usage: %s [--seeds A-B] [lossy|lossy-keyed|one-rail ...]\n", argv[0]);
		return 2;
	}
	printf("%d of %d runs passed\n", ran - failed, ran);
	return failed ? 1 : 0;
}
