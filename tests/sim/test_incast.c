/*
 * test_incast.c - many senders into one receiver over shared switches.
 *
 *   ri2n-sim-incast [--seeds FIRST-LAST] [-v] scenario ...
 *
 * Senders start one after another (each late-comer finds the queue its
 * elders built), stream a seeded pattern to one receiver over two rails
 * whose switch ports towards the receiver are the shared bottleneck, and
 * close.  Every byte is checked; while every flow runs, each 200 ms bin of
 * virtual time must share the receiver's rails fairly (Jain's index) and
 * fill them (the aggregate).  Times are simulated: every figure is exact
 * and repeatable for a seed.
 */
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "sim_check.h"
#include "sim_star.h"

static int g_verbose;
static int g_no_pool; /* --no-pool: windows not shared (what the core did before rn_rcvpool) */
static double g_jain_min, g_agg_min;

typedef struct incast {
	int nsenders;
	double loss;            /* at the switch */
	int hole;               /* rail 1 black-holed for a second mid-run */
	double jain;            /* the least index asserted per bin */
	uint64_t rx_mem;        /* the receiver's ring memory, bytes (0: unlimited) */
	uint64_t read_ms;       /* ...and its application reads every read_ms (0: at once) */
} incast;

static double jain(const double *x, int n)
{
	double s = 0, s2 = 0;

	for (int i = 0; i < n; i++) {
		s += x[i];
		s2 += x[i] * x[i];
	}
	return s2 > 0 ? s * s / (n * s2) : 1;
}

static int check_bytes(const star *s)
{
	CHECK(!s->hung, "run did not finish by t=%.3f s", (double)s->now_ns / SEC);
	for (int i = 0; i < s->nsenders; i++) {
		const star_flow *f = &s->flow[i];

		CHECK(f->err == 0 && f->rx_err == 0, "flow %d failed: %s", i,
		      rn_strerror(f->err ? f->err : f->rx_err));
		CHECK(f->mismatches == 0, "flow %d: %" PRIu64 " corrupted bytes", i, f->mismatches);
		CHECK(f->recvd == f->to_send && f->eof, "flow %d: %" PRIu64 " of %" PRIu64 " bytes",
		      i, f->recvd, f->to_send);
	}
	return 0;
}

/*
 * Fairness and aggregate in every bin from `from` until the first flow
 * ends, skipping [skip_from, skip_to).
 */
static int check_bins(const star *s, uint64_t from, uint64_t skip_from, uint64_t skip_to,
		      double want_jain, double cap_bps)
{
	uint64_t end = UINT64_MAX;
	int nbins = 0;

	for (int i = 0; i < s->nsenders; i++)
		if (s->flow[i].eof_ns < end)
			end = s->flow[i].eof_ns;
	g_jain_min = g_agg_min = 1e9;
	for (uint64_t b = from / s->bin_ns; (b + 1) * s->bin_ns <= end && b < STAR_MAX_BINS; b++) {
		double x[STAR_MAX_HOSTS], sum = 0, j, agg;

		if ((b + 1) * s->bin_ns > skip_from && b * s->bin_ns < skip_to)
			continue;
		for (int i = 0; i < s->nsenders; i++) {
			x[i] = (double)s->flow[i].bin_bytes[b];
			sum += x[i];
		}
		j = jain(x, s->nsenders);
		agg = sum * 8 * SEC / (double)s->bin_ns / cap_bps;
		if (g_verbose) {
			printf("\n    t=%5.1f s jain %.3f agg %.3f:", (double)(b * s->bin_ns) / SEC, j,
			       agg);
			for (int i = 0; i < s->nsenders; i++)
				printf(" %.0f", x[i] * 8 * SEC / (double)s->bin_ns / 1e6);
		}
		g_jain_min = j < g_jain_min ? j : g_jain_min;
		g_agg_min = agg < g_agg_min ? agg : g_agg_min;
		nbins++;
	}
	CHECK(nbins >= 8, "only %d bins with every flow running", nbins);
	CHECK(g_jain_min >= want_jain, "Jain's index fell to %.3f (wanted >= %.2f)", g_jain_min,
	      want_jain);
	CHECK(g_agg_min >= 0.85, "the aggregate fell to %.3f of the receiver's rails", g_agg_min);
	return 0;
}

static int run_incast(uint64_t seed, const incast *ic)
{
	static star s;
	int n = ic->nsenders, rc;
	uint64_t stagger = (n > 4 ? 50 : 300) * MS, last, measure = 2 * SEC;
	uint64_t settle = (n > 4 ? 2 : 1) * SEC, hole_from = 0, hole_to = 0;
	double cap, bytes;

	/* GbE ports, as on the test bed */
	star_init(&s, n, 2, 1000000000, seed);
	cap = (double)s.rail[0].rate_bps * 2;
	for (int r = 0; r < 2; r++)
		s.rail[r].loss = ic->loss;
	s.rx_mem_max = ic->rx_mem;
	s.read_every_ns = ic->read_ms * MS;
	s.use_pool = ic->rx_mem && !g_no_pool;
	last = stagger * (uint64_t)(n - 1);
	/* enough that every flow still runs `measure` after the last one settled */
	bytes = cap / 8 * (double)(last + settle + measure) / SEC / n * 1.6;
	for (int i = 0; i < n; i++) {
		s.flow[i].start_ns = stagger * (uint64_t)i + (seed % 7) * MS;
		s.flow[i].to_send = (uint64_t)bytes;
	}
	if (ic->hole) {
		hole_from = last + settle + SEC + (seed % 10) * MS;
		hole_to = hole_from + SEC;
		s.rail[1].hole_from_ns = hole_from;
		s.rail[1].hole_to_ns = hole_to;
	}
	star_run(&s);
	rc = check_bytes(&s);
	if (!rc)
		rc = check_bins(&s, last + settle, hole_from, hole_to ? hole_to + SEC : 0, ic->jain,
				cap);
	if (!rc && ic->rx_mem && s.rx_mem_refused)
		snprintf(g_why, sizeof(g_why), "(ring growth refused %" PRIu64 " times, peak %.0f KiB)",
			 s.rx_mem_refused, (double)s.rx_mem_peak / 1024);
	star_free(&s);
	return rc;
}

static const struct {
	const char *name;
	incast ic;
} g_sc[] = {
	{ "incast2", { 2, 0, 0, 0.9, 0, 0 } },
	{ "incast3", { 3, 0, 0, 0.9, 0, 0 } },
	{ "incast4", { 4, 0, 0, 0.9, 0, 0 } },
	{ "incast8", { 8, 0, 0, 0.85, 0, 0 } },
	{ "incast16", { 16, 0, 0, 0.85, 0, 0 } },
	{ "incast3-loss", { 3, 0.01, 0, 0.9, 0, 0 } },
	{ "incast8-loss", { 8, 0.01, 0, 0.85, 0, 0 } },
	{ "incast3-hole", { 3, 0, 1, 0.9, 0, 0 } },
	{ "incast8-hole", { 8, 0.005, 1, 0.85, 0, 0 } },
	/*
	 * 16 senders into a receiver with 4 MiB for all its rings, whose application
	 * reads every 4 ms: the windows share the 4 MiB (rn_rcvpool)
	 */
	{ "incast16-mem", { 16, 0, 0, 0.85, 4u << 20, 4 } },
	{ "incast8-mem", { 8, 0.005, 0, 0.85, 4u << 20, 4 } },
};

static int parse_seeds(const char *a, uint64_t *lo, uint64_t *hi)
{
	char *end;

	*lo = strtoull(a, &end, 10);
	*hi = *end == '-' ? strtoull(end + 1, &end, 10) : *lo;
	return *end || *hi < *lo ? -1 : 0;
}

int main(int argc, char **argv)
{
	uint64_t lo = 1, hi = 4;
	int fails = 0, ran = 0;

	for (int a = 1; a < argc; a++) {
		if (!strcmp(argv[a], "--seeds") && a + 1 < argc) {
			if (parse_seeds(argv[++a], &lo, &hi)) {
				fprintf(stderr, "bad seed range %s\n", argv[a]);
				return 2;
			}
			continue;
		}
		if (!strcmp(argv[a], "--no-pool")) {
			g_no_pool = 1;
			continue;
		}
		if (!strcmp(argv[a], "-v")) {
			g_verbose = 1;
			continue;
		}
		for (size_t k = 0; k < sizeof(g_sc) / sizeof(g_sc[0]); k++) {
			if (strcmp(argv[a], g_sc[k].name))
				continue;
			ran++;
			for (uint64_t seed = lo; seed <= hi; seed++) {
				int rc;

				g_why[0] = 0;
				g_jain_min = g_agg_min = 0;
				printf("%-14s seed %-4" PRIu64, g_sc[k].name, seed);
				fflush(stdout);
				rc = run_incast(seed, &g_sc[k].ic);
				printf("%s %s  least Jain %.3f, least aggregate %.3f%s%s\n",
				       g_verbose ? "\n   " : "", rc ? "FAIL" : "ok", g_jain_min,
				       g_agg_min, rc ? ": " : "", g_why);
				fails += rc;
			}
		}
	}
	if (!ran) {
		fprintf(stderr, "usage: %s [--seeds A-B] [-v] scenario...; scenarios:", argv[0]);
		for (size_t k = 0; k < sizeof(g_sc) / sizeof(g_sc[0]); k++)
			fprintf(stderr, " %s", g_sc[k].name);
		fprintf(stderr, "\n");
		return 2;
	}
	return fails ? 1 : 0;
}
