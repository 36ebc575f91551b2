/*
 * ri2n-churn - a connection per request: how fast connections are made,
 * used once and closed.
 *
 *   ri2n-churn serve [--port P] [--bind ADDR] [--tcp] [--workers W]
 *   ri2n-churn run HOST [--port P] [--threads T] [--count N] [--secs S] [--tcp]
 *
 * Each client thread (T, default 1: sequential connects) loops: connect,
 * write an 8-byte hello (thread and index), read its echo and check it byte
 * for byte, close; N cycles per thread (default 1000) or until S seconds
 * have passed.  The server's W threads (default 8) accept, echo the hello
 * and close once the client has closed.  --tcp: plain TCP sockets (run
 * under ri2n-run they become ri2n streams; without it, TCP is the peer).
 *
 * The client prints one line:
 *   churn done transport=ri2n threads=T conns=N failed=0 bad=0 secs=...
 *         rate=... connect_med_us=... connect_p90_us=... cycle_med_us=...
 *         cycle_p99_us=... cycle_max_us=...
 * connect: ri2n_connect (or connect) until it returns; cycle: connect to
 * close returned.  Exit status: 0 every echo verified, 1 a connect or an
 * echo failed, 2 usage.
 */
#define _GNU_SOURCE
#include <errno.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "bench_common.h"
#include "ri2n.h"

static struct {
	int port, threads, workers, count, transport;
	double secs;
	const char *host, *bind;
} opt = { .port = 7310, .threads = 1, .workers = 8, .count = 1000, .transport = BT_RI2N };

typedef struct worker {
	pthread_t th;
	int idx, lfd;
	uint64_t *connect_ns, *cycle_ns; /* per cycle, count entries */
	int done, failed, bad;
} worker;

static void print_usage(FILE *f)
{
	fprintf(f, "usage: ri2n-churn serve [--port P] [--bind ADDR] [--tcp] [--workers W]\n"
		   "       ri2n-churn run HOST [--port P] [--threads T] [--count N] [--secs S]"
		   " [--tcp]\n"
		   "       ri2n-churn --help | --version\n");
}

static void usage(void)
{
	print_usage(stderr);
	exit(2);
}

/* One accepted connection: echo the hello, then wait for the client's close. */
static void serve_one(int fd)
{
	uint8_t b[8];

	if (bench_read_full(fd, b, sizeof(b), 0) == 0 && bench_write_all(fd, b, sizeof(b), 0) == 0)
		while (read(fd, b, sizeof(b)) > 0)
			;
	bench_close(opt.transport, fd);
}

static void *serve_thread(void *arg)
{
	worker *w = arg;

	for (;;) {
		int fd = bench_accept(opt.transport, w->lfd);

		if (fd >= 0)
			serve_one(fd);
		else if (errno != EINTR && errno != ECONNABORTED && errno != EAGAIN)
			perror("accept");
	}
	return NULL;
}

static int serve(void)
{
	int lfd = bench_listen(opt.transport, opt.bind, opt.port);
	worker *w = calloc((size_t)opt.workers, sizeof(*w));

	if (lfd < 0 || !w)
		return 1;
	printf("churn serving port=%d transport=%s\n", opt.port,
	       bench_transport_name(opt.transport));
	fflush(stdout);
	for (int i = 1; i < opt.workers; i++) {
		w[i].lfd = lfd;
		pthread_create(&w[i].th, NULL, serve_thread, &w[i]);
	}
	w[0].lfd = lfd;
	serve_thread(&w[0]);
	return 0;
}

/* One cycle; 0 when the echo came back whole, -1 a connect failed, -2 a bad or missing echo. */
static int cycle(worker *w, int i)
{
	uint64_t t0 = kit_now_ns(), hello = (uint64_t)w->idx << 40 | (uint64_t)i, got = 0;
	int fd = bench_connect(opt.transport, opt.host, opt.port), rc = 0;

	if (fd < 0)
		return -1;
	w->connect_ns[i] = kit_now_ns() - t0;
	if (bench_write_all(fd, &hello, sizeof(hello), 0) ||
	    bench_read_full(fd, &got, sizeof(got), 0) || got != hello)
		rc = -2;
	bench_close(opt.transport, fd);
	w->cycle_ns[i] = kit_now_ns() - t0;
	return rc;
}

static void *run_thread(void *arg)
{
	worker *w = arg;
	double end = opt.secs > 0 ? kit_now_s() + opt.secs : 0;

	for (int i = 0; i < opt.count && (!end || kit_now_s() < end); i++) {
		int rc = cycle(w, i);

		if (rc == -1) {
			w->failed++;
			break;
		}
		w->bad += rc == -2;
		w->done++;
	}
	return NULL;
}

static int cmp_u64(const void *a, const void *b)
{
	uint64_t x = *(const uint64_t *)a, y = *(const uint64_t *)b;

	return x < y ? -1 : x > y;
}

/* The q-quantile (0..1) of the first n of v, in microseconds; sorts v. */
static double quantile_us(uint64_t *v, size_t n, double q)
{
	if (n == 0)
		return 0;
	qsort(v, n, sizeof(*v), cmp_u64);
	return (double)v[(size_t)(q * (double)(n - 1))] / 1000.0;
}

static int run(void)
{
	worker *w = calloc((size_t)opt.threads, sizeof(*w));
	uint64_t *conn_all, *cyc_all;
	size_t n = 0;
	int failed = 0, bad = 0, rc;
	double t0, secs;

	conn_all = calloc((size_t)opt.threads * (size_t)opt.count, sizeof(uint64_t));
	cyc_all = calloc((size_t)opt.threads * (size_t)opt.count, sizeof(uint64_t));
	if (!w || !conn_all || !cyc_all) {
		free(w);
		free(conn_all);
		free(cyc_all);
		return 1;
	}
	t0 = kit_now_s();
	for (int i = 0; i < opt.threads; i++) {
		w[i].idx = i;
		w[i].connect_ns = conn_all + (size_t)i * (size_t)opt.count;
		w[i].cycle_ns = cyc_all + (size_t)i * (size_t)opt.count;
		pthread_create(&w[i].th, NULL, run_thread, &w[i]);
	}
	for (int i = 0; i < opt.threads; i++) {
		pthread_join(w[i].th, NULL);
		/* gather the cycles done into the front of the arrays */
		memmove(conn_all + n, w[i].connect_ns, (size_t)w[i].done * sizeof(uint64_t));
		memmove(cyc_all + n, w[i].cycle_ns, (size_t)w[i].done * sizeof(uint64_t));
		n += (size_t)w[i].done;
		failed += w[i].failed;
		bad += w[i].bad;
	}
	secs = kit_now_s() - t0;
	printf("churn done transport=%s threads=%d conns=%zu failed=%d bad=%d secs=%.3f rate=%.0f "
	       "connect_med_us=%.1f connect_p90_us=%.1f cycle_med_us=%.1f cycle_p99_us=%.1f "
	       "cycle_max_us=%.1f\n",
	       bench_transport_name(opt.transport), opt.threads, n, failed, bad, secs,
	       (double)n / secs, quantile_us(conn_all, n, 0.5), quantile_us(conn_all, n, 0.9),
	       quantile_us(cyc_all, n, 0.5), quantile_us(cyc_all, n, 0.99),
	       quantile_us(cyc_all, n, 1.0));
	rc = failed || bad || n == 0;
	free(w);
	free(conn_all);
	free(cyc_all);
	return rc;
}

int main(int argc, char **argv)
{
	int serving;

	if (argc < 2)
		usage();
	if (!strcmp(argv[1], "--help")) {
		print_usage(stdout);
		return 0;
	}
	if (!strcmp(argv[1], "--version")) {
		printf("ri2n-churn %s\n", ri2n_version());
		return 0;
	}
	serving = !strcmp(argv[1], "serve");
	if (!serving && strcmp(argv[1], "run"))
		usage();
	int i = 2;

	if (!serving) {
		if (argc < 3)
			usage();
		opt.host = argv[i++];
	}
	for (; i < argc; i++) {
		const char *a = argv[i], *v = i + 1 < argc ? argv[i + 1] : NULL;

		if (!strcmp(a, "--tcp")) {
			opt.transport = BT_TCP;
			continue;
		}
		if (!v)
			usage();
		i++;
		if (!strcmp(a, "--port"))
			opt.port = atoi(v);
		else if (!strcmp(a, "--bind"))
			opt.bind = v;
		else if (!strcmp(a, "--threads"))
			opt.threads = atoi(v);
		else if (!strcmp(a, "--workers"))
			opt.workers = atoi(v);
		else if (!strcmp(a, "--count"))
			opt.count = atoi(v);
		else if (!strcmp(a, "--secs"))
			opt.secs = atof(v);
		else
			usage();
	}
	if (opt.threads < 1 || opt.workers < 1 || opt.count < 1)
		usage();
	return serving ? serve() : run();
}
