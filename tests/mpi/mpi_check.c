/*
 * mpi_check.c - a verified MPI workload for the ri2n BTL tests.
 *
 * Every byte that crosses the network is checked against what the sender
 * put there.  Phases (all by default, or --phases a,b,...):
 *
 *   pingpong   ranks paired (r, r^1): sizes 1 B .. 4 MiB (powers of two and
 *              odd sizes around the BTL's limits), both directions checked
 *   self       messages a rank sends to itself, 1 B .. 4 MiB (over
 *              `--mca btl ri2n` alone these take the BTL's in-memory path)
 *   latency    8-byte ping-pong, one-way latency = round trip / 2
 *   stream     even ranks stream to r+1: a window of non-blocking sends of
 *              --bw-size bytes for --bw-seconds; the receiver checks every
 *              message and prints MB/s per interval and overall
 *   allreduce  MPI_SUM of int64 vectors (1, 1000, 262144 elements), checked
 *   alltoall   blocks of 1 KiB and 256 KiB, each stamped (src, dst, round)
 *   sendrecv   random pairs each round (same seed everywhere), random sizes
 *              up to 1 MiB, checked both ways
 *   memory     (only when asked; first) Pss growth per peer: idle (one small
 *              message each way), busy (alltoalls of 256 KiB), rested again
 *   idle       (only when asked; after memory) one checked message each way
 *              between every pair, then no MPI call for --idle-seconds
 *   compute    (only when asked) the lower rank of each pair makes no MPI call
 *              for --compute-seconds while its partner waits in MPI_Recv: a
 *              long computation must not look like a dead peer
 *
 * The collectives are the ones the TSUBAME study used to expose bad links.
 * Rank 0 prints "mpi_check ..." lines (key=value) and "mpi_check result=PASS";
 * a mismatch prints where it was and aborts the job with code 3.  Before the
 * stream phase every rank prints "mpi_check phase=stream start" so a test
 * script can inject a fault while data streams.
 */
#include <mpi.h>
#include <stdarg.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "ri2n_kit.h"

static int g_rank, g_size;
static const char *g_phases = "pingpong,self,latency,stream,allreduce,alltoall,sendrecv";
static size_t g_max = 4u << 20;
static double g_bw_seconds = 5.0, g_interval = 0.5;
static size_t g_bw_size = 1u << 20;
static int g_window = 16, g_lat_iters = 20000, g_rounds = 20;
static double g_compute = 5.0, g_mem_idle = 3.0, g_idle = 10.0;
static double g_t0;

/* ---- patterns ---- */

static uint64_t mix(uint64_t x)
{
	x ^= x >> 33;
	x *= UINT64_C(0xff51afd7ed558ccd);
	x ^= x >> 33;
	x *= UINT64_C(0xc4ceb9fe1a85ec53);
	return x ^ (x >> 33);
}

/* The bytes of message `key`: the test kit's pattern (tools/kit/ri2n_kit.h). */
static void fill(uint8_t *b, size_t n, uint64_t key)
{
	kit_pattern_fill(b, key, 0, n);
}

static void fail(const char *what, size_t n, uint64_t key, const uint8_t *got)
{
	uint8_t *want = malloc(n ? n : 1);
	size_t at = 0;

	fill(want, n, key);
	while (at < n && got[at] == want[at])
		at++;
	fprintf(stderr, "mpi_check rank %d: %s: %zu bytes, first bad byte at %zu "
		"(got 0x%02x want 0x%02x)\n", g_rank, what, n, at, at < n ? got[at] : 0,
		at < n ? want[at] : 0);
	fflush(stderr);
	MPI_Abort(MPI_COMM_WORLD, 3);
}

static void check(const char *what, const uint8_t *b, size_t n, uint64_t key, uint8_t *tmp)
{
	fill(tmp, n, key);
	if (memcmp(b, tmp, n) != 0)
		fail(what, n, key, b);
}

static uint64_t key_of(uint64_t phase, uint64_t a, uint64_t b, uint64_t c)
{
	return mix(phase * 1000003 + a) ^ mix(b * 7919 + c * 104729 + 17);
}

static double now_s(void)
{
	return MPI_Wtime();
}

static int phase_on(const char *p)
{
	const char *s = g_phases;
	size_t n = strlen(p);

	while ((s = strstr(s, p)) != NULL) {
		if ((s == g_phases || s[-1] == ',') && (s[n] == ',' || s[n] == 0))
			return 1;
		s += n;
	}
	return 0;
}

static void say(const char *fmt, ...) __attribute__((format(printf, 1, 2)));
static void say(const char *fmt, ...)
{
	va_list ap;

	if (g_rank != 0)
		return;
	va_start(ap, fmt);
	printf("mpi_check ");
	vprintf(fmt, ap);
	printf("\n");
	fflush(stdout);
	va_end(ap);
}

/* ---- point to point ---- */

static int partner(void)
{
	int p = g_rank ^ 1;

	return p < g_size ? p : -1;
}

static void pingpong_size(size_t n, int iters, uint8_t *sb, uint8_t *rb, uint8_t *tmp)
{
	int p = partner();
	double t0;

	if (p < 0)
		return;
	t0 = now_s();
	for (int it = 0; it < iters; it++) {
		uint64_t k0 = key_of(1, n, (uint64_t)it, 0), k1 = key_of(1, n, (uint64_t)it, 1);

		if (g_rank < p) {
			fill(sb, n, k0);
			MPI_Send(sb, (int)n, MPI_BYTE, p, 1, MPI_COMM_WORLD);
			MPI_Recv(rb, (int)n, MPI_BYTE, p, 2, MPI_COMM_WORLD, MPI_STATUS_IGNORE);
			check("pingpong reply", rb, n, k1, tmp);
		} else {
			MPI_Recv(rb, (int)n, MPI_BYTE, p, 1, MPI_COMM_WORLD, MPI_STATUS_IGNORE);
			check("pingpong", rb, n, k0, tmp);
			fill(sb, n, k1);
			MPI_Send(sb, (int)n, MPI_BYTE, p, 2, MPI_COMM_WORLD);
		}
	}
	if (g_rank == 0)
		say("pingpong size=%zu iters=%d ok one_way_us=%.1f", n, iters,
		    (now_s() - t0) / iters / 2 * 1e6);
}

static void phase_pingpong(void)
{
	static const size_t odd[] = { 3, 1000, 1447, 1448, 1449, 65535, 65536, 65537,
				      262143, 262145, 1000003 };
	uint8_t *sb = malloc(g_max), *rb = malloc(g_max), *tmp = malloc(g_max);

	for (size_t n = 1; n <= g_max; n *= 2)
		pingpong_size(n, n <= 65536 ? 20 : 4, sb, rb, tmp);
	for (size_t i = 0; i < sizeof(odd) / sizeof(*odd); i++)
		if (odd[i] <= g_max)
			pingpong_size(odd[i], 4, sb, rb, tmp);
	free(sb);
	free(rb);
	free(tmp);
	MPI_Barrier(MPI_COMM_WORLD);
	say("phase=pingpong ok t=%.2f", now_s() - g_t0);
}

static void phase_self(void)
{
	uint8_t *sb = malloc(g_max), *rb = malloc(g_max), *tmp = malloc(g_max);

	for (size_t n = 1; n <= g_max; n = n * 4 + 1) {
		uint64_t key = key_of(2, (uint64_t)g_rank, n, 0);
		MPI_Request rq;

		fill(sb, n, key);
		MPI_Isend(sb, (int)n, MPI_BYTE, g_rank, 9, MPI_COMM_WORLD, &rq);
		MPI_Recv(rb, (int)n, MPI_BYTE, g_rank, 9, MPI_COMM_WORLD, MPI_STATUS_IGNORE);
		MPI_Wait(&rq, MPI_STATUS_IGNORE);
		check("self", rb, n, key, tmp);
	}
	free(sb);
	free(rb);
	free(tmp);
	MPI_Barrier(MPI_COMM_WORLD);
	say("phase=self ok t=%.2f", now_s() - g_t0);
}

static int cmp_double(const void *a, const void *b)
{
	double x = *(const double *)a, y = *(const double *)b;

	return x < y ? -1 : x > y;
}

/* 8-byte ping-pong: the mean, and the median of every round trip (robust to
 * a rank being descheduled on a busy machine), as one-way microseconds. */
static void phase_latency(void)
{
	int p = partner(), warm = 1000;
	char s[8] = "ri2n-lt", r[8];
	double *rtt = malloc(sizeof(double) * (size_t)g_lat_iters), t0 = 0, t;

	MPI_Barrier(MPI_COMM_WORLD);
	if (p >= 0) {
		for (int it = 0; it < warm + g_lat_iters; it++) {
			t = now_s();
			if (it == warm)
				t0 = t;
			if (g_rank < p) {
				MPI_Send(s, 8, MPI_BYTE, p, 3, MPI_COMM_WORLD);
				MPI_Recv(r, 8, MPI_BYTE, p, 3, MPI_COMM_WORLD, MPI_STATUS_IGNORE);
			} else {
				MPI_Recv(r, 8, MPI_BYTE, p, 3, MPI_COMM_WORLD, MPI_STATUS_IGNORE);
				MPI_Send(r, 8, MPI_BYTE, p, 3, MPI_COMM_WORLD);
			}
			if (it >= warm)
				rtt[it - warm] = now_s() - t;
		}
		if (memcmp(r, s, 8) != 0)
			fail("latency", 8, 0, (uint8_t *)r);
		t = now_s() - t0;
		qsort(rtt, (size_t)g_lat_iters, sizeof(double), cmp_double);
		if (g_rank == 0)
			say("latency size=8 iters=%d one_way_us=%.2f median_one_way_us=%.2f "
			    "p10_one_way_us=%.2f", g_lat_iters, t / g_lat_iters / 2 * 1e6,
			    rtt[g_lat_iters / 2] / 2 * 1e6, rtt[g_lat_iters / 10] / 2 * 1e6);
	}
	free(rtt);
	MPI_Barrier(MPI_COMM_WORLD);
}

/* ---- streaming ---- */

/*
 * Message `seq` is the pattern of slot seq % window with `seq` stamped at the
 * start of every 4 KiB: the receiver compares every byte (memcmp against the
 * slot's pattern, the stamps one by one) without generating patterns at line
 * rate, which would take the CPU the network needs on a small machine.
 */
#define STAMP_EVERY 4096

static void stamp(uint8_t *b, size_t n, uint64_t seq)
{
	for (size_t off = 0; off + 8 <= n; off += STAMP_EVERY) {
		uint64_t v = seq ^ off;

		memcpy(b + off, &v, 8);
	}
}

static uint8_t **slot_patterns(int from)
{
	uint8_t **p = malloc(sizeof(*p) * (size_t)g_window);

	for (int w = 0; w < g_window; w++) {
		p[w] = malloc(g_bw_size);
		fill(p[w], g_bw_size, key_of(4, (uint64_t)from, (uint64_t)w, 0));
	}
	return p;
}

static void stream_send(int to)
{
	uint8_t **b = slot_patterns(g_rank);
	MPI_Request *rq = malloc(sizeof(*rq) * (size_t)g_window), stop_rq;
	uint64_t seq = 0;
	int stop = 0, flag = 0;

	for (int w = 0; w < g_window; w++)
		rq[w] = MPI_REQUEST_NULL;
	/* the receiver says when time is up: no clock agreement needed */
	MPI_Irecv(&stop, 1, MPI_INT, to, 5, MPI_COMM_WORLD, &stop_rq);
	while (!flag) {
		int w = (int)(seq % (uint64_t)g_window);

		MPI_Wait(&rq[w], MPI_STATUS_IGNORE);
		stamp(b[w], g_bw_size, seq);
		MPI_Isend(b[w], (int)g_bw_size, MPI_BYTE, to, 4, MPI_COMM_WORLD, &rq[w]);
		seq++;
		MPI_Test(&stop_rq, &flag, MPI_STATUS_IGNORE);
	}
	MPI_Send(&seq, 1, MPI_UINT64_T, to, 6, MPI_COMM_WORLD);
	MPI_Waitall(g_window, rq, MPI_STATUSES_IGNORE);
	for (int w = 0; w < g_window; w++)
		free(b[w]);
	free(b);
	free(rq);
}

static void stream_check(const uint8_t *b, const uint8_t *pat, uint64_t seq, int from)
{
	for (size_t off = 0; off < g_bw_size; off += STAMP_EVERY) {
		size_t n = g_bw_size - off < STAMP_EVERY ? g_bw_size - off : STAMP_EVERY;
		uint64_t v;

		if (n >= 8) {
			memcpy(&v, b + off, 8);
			if (v != (seq ^ off)) {
				fprintf(stderr, "mpi_check rank %d: stream message %llu from %d: "
					"stamp at %zu says %llu\n", g_rank, (unsigned long long)seq,
					from, off, (unsigned long long)(v ^ off));
				MPI_Abort(MPI_COMM_WORLD, 3);
			}
		}
		if (n > 8 && memcmp(b + off + 8, pat + off + 8, n - 8) != 0)
			fail("stream", g_bw_size, key_of(4, (uint64_t)from,
							 seq % (uint64_t)g_window, 0), b);
	}
}

static void stream_report(double t0, double *tick, uint64_t got, uint64_t *last)
{
	double t = now_s();

	if (t - *tick < g_interval)
		return;
	printf("mpi_check stream rank=%d t=%.2f MBps=%.1f\n", g_rank, t - t0,
	       (double)(got - *last) * (double)g_bw_size / (t - *tick) / 1e6);
	fflush(stdout);
	*tick = t;
	*last = got;
}

static void stream_recv(int from)
{
	uint8_t **b = malloc(sizeof(*b) * (size_t)g_window), **pat = slot_patterns(from);
	MPI_Request *rq = malloc(sizeof(*rq) * (size_t)g_window), total_rq = MPI_REQUEST_NULL;
	uint64_t got = 0, last = 0, total = UINT64_MAX;
	double t0, tick, t_end = 0;
	int one = 1;

	for (int w = 0; w < g_window; w++) {
		b[w] = malloc(g_bw_size);
		MPI_Irecv(b[w], (int)g_bw_size, MPI_BYTE, from, 4, MPI_COMM_WORLD, &rq[w]);
	}
	t0 = tick = now_s();
	while (got < total) {
		int w = (int)(got % (uint64_t)g_window), idx;
		MPI_Request two[2] = { rq[w], total_rq };

		/* before the count is known a message may or may not come: wait for either */
		MPI_Waitany(2, two, &idx, MPI_STATUS_IGNORE);
		rq[w] = two[0];
		total_rq = two[1];
		if (idx == 1)
			continue; /* the count: the loop condition now knows it */
		stream_check(b[w], pat[w], got, from);
		got++;
		stream_report(t0, &tick, got, &last);
		if (t_end == 0 && now_s() - t0 >= g_bw_seconds) {
			t_end = now_s();
			printf("mpi_check stream rank=%d from=%d bytes=%llu seconds=%.3f MBps=%.1f\n",
			       g_rank, from, (unsigned long long)(got * g_bw_size), t_end - t0,
			       (double)got * (double)g_bw_size / (t_end - t0) / 1e6);
			fflush(stdout);
			MPI_Send(&one, 1, MPI_INT, from, 5, MPI_COMM_WORLD);
			MPI_Irecv(&total, 1, MPI_UINT64_T, from, 6, MPI_COMM_WORLD, &total_rq);
		}
		if (got + (uint64_t)g_window - 1 < total)
			MPI_Irecv(b[w], (int)g_bw_size, MPI_BYTE, from, 4, MPI_COMM_WORLD, &rq[w]);
	}
	/* receives posted past the end will never match */
	for (int w = 0; w < g_window; w++) {
		if (rq[w] != MPI_REQUEST_NULL) {
			MPI_Cancel(&rq[w]);
			MPI_Wait(&rq[w], MPI_STATUS_IGNORE);
		}
		free(b[w]);
		free(pat[w]);
	}
	free(b);
	free(pat);
	free(rq);
}

static void phase_stream(void)
{
	int p = partner();

	MPI_Barrier(MPI_COMM_WORLD);
	printf("mpi_check phase=stream start rank=%d\n", g_rank);
	fflush(stdout);
	if (p >= 0) {
		if (g_rank < p)
			stream_send(p);
		else
			stream_recv(p);
	}
	MPI_Barrier(MPI_COMM_WORLD);
	say("phase=stream ok t=%.2f", now_s() - g_t0);
}

/* ---- collectives ---- */

static void phase_allreduce(void)
{
	static const int lens[] = { 1, 1000, 262144 };

	for (size_t k = 0; k < sizeof(lens) / sizeof(*lens); k++) {
		int n = lens[k];
		int64_t *in = malloc(sizeof(*in) * (size_t)n), *out = malloc(sizeof(*out) * (size_t)n);

		for (int it = 0; it < g_rounds; it++) {
			for (int i = 0; i < n; i++)
				in[i] = (int64_t)(mix((uint64_t)(g_rank * 131 + i + it)) >> 20);
			MPI_Allreduce(in, out, n, MPI_INT64_T, MPI_SUM, MPI_COMM_WORLD);
			for (int i = 0; i < n; i++) {
				int64_t want = 0;

				for (int r = 0; r < g_size; r++)
					want += (int64_t)(mix((uint64_t)(r * 131 + i + it)) >> 20);
				if (out[i] != want) {
					fprintf(stderr, "mpi_check rank %d: allreduce n=%d element %d: "
						"%lld != %lld\n", g_rank, n, i, (long long)out[i],
						(long long)want);
					MPI_Abort(MPI_COMM_WORLD, 3);
				}
			}
		}
		free(in);
		free(out);
		say("allreduce n=%d rounds=%d ok", n, g_rounds);
	}
	say("phase=allreduce ok t=%.2f", now_s() - g_t0);
}

static void phase_alltoall(void)
{
	static const size_t blocks[] = { 1024, 256 * 1024 };

	for (size_t k = 0; k < sizeof(blocks) / sizeof(*blocks); k++) {
		size_t bs = blocks[k];
		uint8_t *sb = malloc(bs * (size_t)g_size), *rb = malloc(bs * (size_t)g_size);
		uint8_t *tmp = malloc(bs);

		double busy = 0, slowest;

		for (int it = 0; it < g_rounds; it++) {
			double t;

			for (int d = 0; d < g_size; d++)
				fill(sb + bs * (size_t)d, bs, key_of(5, (uint64_t)g_rank, (uint64_t)d,
								      (uint64_t)it + bs));
			t = now_s();
			MPI_Alltoall(sb, (int)bs, MPI_BYTE, rb, (int)bs, MPI_BYTE, MPI_COMM_WORLD);
			busy += now_s() - t;
			for (int s = 0; s < g_size; s++)
				check("alltoall", rb + bs * (size_t)s, bs,
				      key_of(5, (uint64_t)s, (uint64_t)g_rank, (uint64_t)it + bs), tmp);
		}
		free(sb);
		free(rb);
		free(tmp);
		/* the time in MPI_Alltoall of the slowest rank; each rank sends size-1 blocks a round */
		MPI_Reduce(&busy, &slowest, 1, MPI_DOUBLE, MPI_MAX, 0, MPI_COMM_WORLD);
		say("alltoall block=%zu rounds=%d ok MBps_per_rank=%.1f", bs, g_rounds,
		    slowest > 0 ? (double)bs * (g_size - 1) * g_rounds / slowest / 1e6 : 0.0);
	}
	say("phase=alltoall ok t=%.2f", now_s() - g_t0);
}

/* Pairs for round `it`: the same shuffle on every rank. */
static int random_partner(int it)
{
	int *perm = malloc(sizeof(int) * (size_t)g_size), me = -1, p;
	uint64_t st = mix((uint64_t)it + 99);

	for (int i = 0; i < g_size; i++)
		perm[i] = i;
	for (int i = g_size - 1; i > 0; i--) {
		int j, t;

		st = mix(st);
		j = (int)(st % (uint64_t)(i + 1));
		t = perm[i];
		perm[i] = perm[j];
		perm[j] = t;
	}
	for (int i = 0; i < g_size; i++)
		if (perm[i] == g_rank)
			me = i;
	p = (me ^ 1) < g_size ? perm[me ^ 1] : -1;
	free(perm);
	return p;
}

static void phase_sendrecv(void)
{
	size_t cap = 1u << 20;
	uint8_t *sb = malloc(cap), *rb = malloc(cap), *tmp = malloc(cap);

	for (int it = 0; it < g_rounds * 5; it++) {
		int p = random_partner(it);
		size_t out, in;

		if (p < 0)
			continue;
		out = 1 + (size_t)(mix((uint64_t)(it * 64 + g_rank)) % cap);
		in = 1 + (size_t)(mix((uint64_t)(it * 64 + p)) % cap);
		fill(sb, out, key_of(6, (uint64_t)g_rank, (uint64_t)p, (uint64_t)it));
		MPI_Sendrecv(sb, (int)out, MPI_BYTE, p, 7, rb, (int)in, MPI_BYTE, p, 7, MPI_COMM_WORLD,
			     MPI_STATUS_IGNORE);
		check("sendrecv", rb, in, key_of(6, (uint64_t)p, (uint64_t)g_rank, (uint64_t)it), tmp);
	}
	free(sb);
	free(rb);
	free(tmp);
	MPI_Barrier(MPI_COMM_WORLD);
	say("phase=sendrecv rounds=%d ok t=%.2f", g_rounds * 5, now_s() - g_t0);
}

/* ---- a long computation ---- */

static void nap(double s)
{
	struct timespec ts = { (time_t)s, (long)((s - (double)(time_t)s) * 1e9) };

	/* no MPI call at all meanwhile: only the BTL's keeper speaks for us */
	while (nanosleep(&ts, &ts) != 0)
		;
}

/* ---- memory per peer ---- */

/* This process's proportional set size (KiB), or -1. */
static long pss_kib(void)
{
	FILE *f = fopen("/proc/self/smaps_rollup", "r");
	char line[256];
	long v = -1;

	if (!f)
		return -1;
	while (fgets(line, sizeof(line), f))
		if (sscanf(line, "Pss: %ld kB", &v) == 1)
			break;
	fclose(f);
	return v;
}

/* One small message, checked, to and from every other rank: every link is open. */
static void hello_all(uint8_t *sb, uint8_t *rb, uint8_t *tmp, size_t small)
{
	for (int k = 1; k < g_size; k++) {
		int to = (g_rank + k) % g_size, from = (g_rank + g_size - k) % g_size;

		fill(sb, small, key_of(8, (uint64_t)g_rank, (uint64_t)to, 0));
		MPI_Sendrecv(sb, (int)small, MPI_BYTE, to, 8, rb, (int)small, MPI_BYTE, from, 8,
			     MPI_COMM_WORLD, MPI_STATUS_IGNORE);
		check("hello", rb, small, key_of(8, (uint64_t)from, (uint64_t)g_rank, 0), tmp);
	}
	MPI_Barrier(MPI_COMM_WORLD);
}

/*
 * Every link open, then no MPI call for --idle-seconds on any rank: what
 * the rails carry meanwhile is the BTL's idle cost (run_mpi.sh idle counts
 * it from "phase=idle start").
 */
static void phase_idle(void)
{
	uint8_t sb[64], rb[64], tmp[64];

	hello_all(sb, rb, tmp, sizeof(sb));
	say("phase=idle start seconds=%.1f t=%.2f", g_idle, now_s() - g_t0);
	nap(g_idle);
	MPI_Barrier(MPI_COMM_WORLD);
	say("phase=idle ok t=%.2f", now_s() - g_t0);
}

/*
 * How much a peer costs: Pss before any message, after one small message to
 * and from every other rank and --mem-idle seconds of rest (idle), right after
 * --rounds alltoalls of 256 KiB blocks (busy), and after the same rest again
 * (rested: grown rings shrink back after 2 s idle).  Every buffer the phase
 * uses is touched before the first reading, so the growth is the MPI
 * library's and the BTL's.  The largest growth over the ranks, per peer.
 * Meant to run first (--phases memory,...): a connection opened before it
 * would not be counted.
 */
static void phase_memory(void)
{
	const size_t bs = 256 * 1024, small = 64;
	size_t n = bs * (size_t)g_size;
	uint8_t *sb = malloc(n), *rb = malloc(n), *tmp = malloc(bs);
	long p[4], grow[3], worst[3];
	int peers = g_size - 1;

	memset(sb, 1, n);
	memset(rb, 1, n);
	memset(tmp, 1, bs);
	p[0] = pss_kib();
	hello_all(sb, rb, tmp, small);
	nap(g_mem_idle);
	p[1] = pss_kib();
	for (int it = 0; it < g_rounds; it++) {
		for (int d = 0; d < g_size; d++)
			fill(sb + bs * (size_t)d, bs, key_of(9, (uint64_t)g_rank, (uint64_t)d, (uint64_t)it));
		MPI_Alltoall(sb, (int)bs, MPI_BYTE, rb, (int)bs, MPI_BYTE, MPI_COMM_WORLD);
		for (int s = 0; s < g_size; s++)
			check("memory alltoall", rb + bs * (size_t)s, bs,
			      key_of(9, (uint64_t)s, (uint64_t)g_rank, (uint64_t)it), tmp);
	}
	p[2] = pss_kib();
	MPI_Barrier(MPI_COMM_WORLD);
	nap(g_mem_idle);
	p[3] = pss_kib();
	for (int i = 0; i < 3; i++)
		grow[i] = p[0] < 0 || p[i + 1] < 0 ? -1 : p[i + 1] - p[0];
	MPI_Reduce(grow, worst, 3, MPI_LONG, MPI_MAX, 0, MPI_COMM_WORLD);
	free(sb);
	free(rb);
	free(tmp);
	if (peers > 0)
		say("memory peers=%d pss_start_kib=%ld idle_kib_per_peer=%.1f busy_kib_per_peer=%.1f "
		    "rested_kib_per_peer=%.1f", peers, p[0], (double)worst[0] / peers,
		    (double)worst[1] / peers, (double)worst[2] / peers);
	say("phase=memory ok t=%.2f", now_s() - g_t0);
}

static void phase_compute(void)
{
	int p = partner();
	uint64_t v = 0;
	double t;

	MPI_Barrier(MPI_COMM_WORLD);
	/* 1: the lower rank computes while its partner waits for it */
	if (p >= 0 && g_rank < p) {
		nap(g_compute);
		v = 0x600dcafe;
		MPI_Send(&v, 1, MPI_UINT64_T, p, 8, MPI_COMM_WORLD);
	} else if (p >= 0) {
		MPI_Recv(&v, 1, MPI_UINT64_T, p, 8, MPI_COMM_WORLD, MPI_STATUS_IGNORE);
		if (v != 0x600dcafe)
			fail("compute", 8, 0, (uint8_t *)&v);
	}
	/* 2: the higher rank computes while a message for it arrives; once back in
	 * MPI it must have it at once, not after the next packet happens by */
	if (p >= 0 && g_rank < p) {
		v = 0xfeedbeef;
		MPI_Send(&v, 1, MPI_UINT64_T, p, 8, MPI_COMM_WORLD);
	} else if (p >= 0) {
		nap(1.0);
		t = now_s();
		MPI_Recv(&v, 1, MPI_UINT64_T, p, 8, MPI_COMM_WORLD, MPI_STATUS_IGNORE);
		if (v != 0xfeedbeef)
			fail("compute", 8, 0, (uint8_t *)&v);
		printf("mpi_check compute rank=%d recv_after_nap_ms=%.2f\n", g_rank,
		       (now_s() - t) * 1e3);
	}
	MPI_Barrier(MPI_COMM_WORLD);
	say("phase=compute seconds=%.1f ok t=%.2f", g_compute, now_s() - g_t0);
}

/* ---- main ---- */

static size_t parse_size(const char *s)
{
	char *end;
	double v = strtod(s, &end);

	if (*end == 'k' || *end == 'K')
		v *= 1024;
	else if (*end == 'm' || *end == 'M')
		v *= 1024 * 1024;
	return (size_t)v;
}

static void parse_args(int argc, char **argv)
{
	for (int i = 1; i + 1 < argc; i += 2) {
		const char *k = argv[i], *v = argv[i + 1];

		if (!strcmp(k, "--phases"))
			g_phases = v;
		else if (!strcmp(k, "--max-size"))
			g_max = parse_size(v);
		else if (!strcmp(k, "--bw-seconds"))
			g_bw_seconds = atof(v);
		else if (!strcmp(k, "--bw-size"))
			g_bw_size = parse_size(v);
		else if (!strcmp(k, "--window"))
			g_window = atoi(v);
		else if (!strcmp(k, "--lat-iters"))
			g_lat_iters = atoi(v);
		else if (!strcmp(k, "--rounds"))
			g_rounds = atoi(v);
		else if (!strcmp(k, "--interval"))
			g_interval = atof(v);
		else if (!strcmp(k, "--compute-seconds"))
			g_compute = atof(v);
		else if (!strcmp(k, "--mem-idle"))
			g_mem_idle = atof(v);
		else if (!strcmp(k, "--idle-seconds"))
			g_idle = atof(v);
		else if (g_rank == 0)
			fprintf(stderr, "mpi_check: unknown option %s\n", k);
	}
	if (g_bw_size < 4096 + 8)
		g_bw_size = 4096 + 8;
}

int main(int argc, char **argv)
{
	double t0;

	MPI_Init(&argc, &argv);
	MPI_Comm_rank(MPI_COMM_WORLD, &g_rank);
	MPI_Comm_size(MPI_COMM_WORLD, &g_size);
	parse_args(argc, argv);
	t0 = g_t0 = now_s();
	say("start ranks=%d phases=%s", g_size, g_phases);
	if (phase_on("memory"))
		phase_memory();
	if (phase_on("idle"))
		phase_idle();
	if (phase_on("pingpong"))
		phase_pingpong();
	if (phase_on("self"))
		phase_self();
	if (phase_on("latency"))
		phase_latency();
	if (phase_on("stream"))
		phase_stream();
	if (phase_on("allreduce"))
		phase_allreduce();
	if (phase_on("alltoall"))
		phase_alltoall();
	if (phase_on("sendrecv"))
		phase_sendrecv();
	if (phase_on("compute"))
		phase_compute();
	MPI_Barrier(MPI_COMM_WORLD);
	say("result=PASS seconds=%.1f", now_s() - t0);
	MPI_Finalize();
	return 0;
}
