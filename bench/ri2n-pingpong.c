/*
 * ri2n-pingpong - one-way latency over ri2n, plain TCP or plain UDP, by the
 * same code: the client writes a message of SIZE bytes, the server reads all
 * of it and writes SIZE bytes back, the client reads all of them; half of
 * that round trip is one one-way latency.  Per size it prints the median, the
 * 99th percentile, the minimum and the mean of the half round trips.
 *
 *   ri2n-pingpong serve  [--tcp|--udp] [--port P] [--bind ADDR] [--once] [--busy-poll]
 *   ri2n-pingpong client HOST [--tcp|--udp] [--port P] [--sizes LIST]
 *                 [--min-size B] [--max-size B] [--iterations N] [--warmup N]
 *                 [--budget BYTES] [--busy-poll] [--csv FILE] [--label NAME]
 *                 [--udp-max B] [--timeout S] [--fast] [--verify]
 *
 * ri2n (the default) goes through ri2n_socket/ri2n_connect/ri2n_accept; set
 * RI2N_RAILS to choose the rails.  --tcp is plain TCP with TCP_NODELAY on
 * both ends; --udp is one UDP datagram each way per message.
 *
 * Waiting: blocking read() by default; --busy-poll makes the descriptor
 * O_NONBLOCK and retries read() in a loop (the server follows the client's
 * choice over ri2n and TCP; a UDP server is told by its own --busy-poll).
 * --verify (ri2n, TCP): each message a different piece of the test kit's
 * pattern, every echo compared with it (exit 1 at the first difference).
 * --fast (ri2n only): ri2n_send/ri2n_recv, the fast API, instead of plain
 * write/read on the descriptor; the server follows the client here too.
 *
 * Sizes: powers of two from --min-size (1) to --max-size (4M), or a list
 * ("1,8,64,1k,4M").  Iterations per size: --iterations (1000), fewer for
 * big messages so that one size moves at most --budget bytes each way
 * (64M), never fewer than 20; --warmup (100, at most a fifth of them) are
 * run first and not counted.
 *
 * UDP: a message is one datagram, so UDP is measured only up to --udp-max
 * bytes (1472: one datagram in a 1500-byte MTU without IP fragmentation);
 * larger sizes print "n/a".  A datagram lost is waited for 200 ms, counted
 * and the round trip repeated (replies carry a sequence number from 4 bytes
 * up, so a late reply is not taken for the current one).
 *
 * Output, one line per size (stdout), for scripts:
 *   pingpong transport=ri2n wait=block size=8 iterations=1000 median_us=31.20
 *            p99_us=48.91 min_us=27.80 mean_us=32.05 max_us=120.40 lost=0 p999_us=60.10
 *   pingpong transport=udp wait=block size=4096 n/a reason=larger-than-one-datagram
 * --csv FILE: transport,wait,size,iterations,median_us,p99_us,min_us,mean_us,max_us,lost,
 *             p999_us
 * Exit status: 0 done, 1 a connection or transfer failed (or --timeout per
 * size passed), 2 usage.
 */
#define _GNU_SOURCE
#include <errno.h>
#include <inttypes.h>
#include <math.h>
#include <poll.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <unistd.h>

#include "bench_common.h"
#include "ri2n.h"

#define MAGIC "RI2NPP01"
#define HDR_LEN 32
#define MAX_SIZES 64
#define MIN_ITERS 20
#define UDP_WAIT_MS 200

static struct {
	int transport, port, once, busy, fast, verify, iterations, warmup, timeout_s, udp_max;
	int64_t min_size, max_size, budget;
	const char *bind, *csv_path, *label, *sizes;
} opt = { .transport = BT_RI2N, .port = 7100, .iterations = 1000, .warmup = 100,
	  .timeout_s = 120, .udp_max = 1472, .min_size = 1, .max_size = 4 << 20,
	  .budget = 64 << 20 };

static void print_usage(FILE *f)
{
	fprintf(f,
		"usage: ri2n-pingpong serve [--tcp|--udp] [--port P] [--bind ADDR] [--once] [--busy-poll]\n"
		"       ri2n-pingpong client HOST [--tcp|--udp] [--port P] [--sizes LIST]\n"
		"                     [--min-size B] [--max-size B] [--iterations N] [--warmup N]\n"
		"                     [--budget BYTES] [--busy-poll] [--csv FILE] [--label NAME]\n"
		"                     [--udp-max B] [--timeout S] [--fast] [--verify]\n"
		"       ri2n-pingpong --help | --version\n"
		"--ri2n (the default) names the transport explicitly.\n"
		"Sizes take k, M suffixes (powers of 1024).  See the top of ri2n-pingpong.c.\n");
}

static void usage(void)
{
	print_usage(stderr);
	exit(2);
}

/* --help (usage on stdout) and --version end the program with status 0. */
static void help_or_version(const char *a)
{
	if (!strcmp(a, "--help")) {
		print_usage(stdout);
		exit(0);
	}
	if (!strcmp(a, "--version")) {
		printf("ri2n-pingpong %s\n", ri2n_version());
		exit(0);
	}
}

/* ---- server ---- */

/* Serves one stream connection: per header, COUNT echoes of SIZE bytes. */
static int serve_stream_conn(int fd)
{
	uint8_t hdr[HDR_LEN], *buf = NULL;
	size_t cap = 0;
	int rc = 0, busy = 0;

	for (;;) {
		uint64_t size, count;

		if (bench_read_full(fd, hdr, HDR_LEN, busy) < 0 || memcmp(hdr, MAGIC, 8) != 0) {
			rc = -1;
			break;
		}
		size = kit_get64(hdr + 8);
		count = kit_get64(hdr + 16);
		if (size == 0)
			break; /* the client is done */
		if (hdr[24] != busy) {
			busy = hdr[24];
			bench_set_nonblock(fd, busy);
		}
		bench_fast_io = hdr[25] && opt.transport == BT_RI2N;
		if (size > cap) {
			free(buf);
			buf = malloc(size);
			cap = buf ? size : 0;
			if (!buf) {
				rc = -1;
				break;
			}
		}
		for (uint64_t i = 0; i < count; i++)
			if (bench_read_full(fd, buf, size, busy) < 0 ||
			    bench_write_all(fd, buf, size, busy) < 0) {
				fprintf(stderr, "ri2n-pingpong: echo failed at size %" PRIu64 ": %s\n",
					size, strerror(errno));
				rc = -1;
				goto out;
			}
	}
out:
	free(buf);
	return rc;
}

static int serve_udp(void)
{
	uint8_t buf[65536];
	int fd = bench_udp_bind(opt.bind, opt.port);

	if (fd < 0)
		return 1;
	if (opt.busy)
		bench_set_nonblock(fd, 1);
	fprintf(stderr, "ri2n-pingpong: udp echo on port %d\n", opt.port);
	for (;;) {
		struct sockaddr_in from;
		socklen_t flen = sizeof(from);
		ssize_t n = recvfrom(fd, buf, sizeof(buf), 0, (struct sockaddr *)&from, &flen);

		if (n < 0) {
			if (errno == EINTR || errno == EAGAIN || errno == EWOULDBLOCK)
				continue;
			perror("ri2n-pingpong: recvfrom");
			return 1;
		}
		if (n == 8 && memcmp(buf, "RI2NPPQ!", 8) == 0 && opt.once)
			return 0; /* the client's goodbye */
		sendto(fd, buf, (size_t)n, 0, (struct sockaddr *)&from, flen);
	}
}

static int serve(void)
{
	int lfd;

	if (opt.transport == BT_UDP)
		return serve_udp();
	lfd = bench_listen(opt.transport, opt.bind, opt.port);
	if (lfd < 0)
		return 1;
	fprintf(stderr, "ri2n-pingpong: %s server on port %d\n",
		bench_transport_name(opt.transport), opt.port);
	for (;;) {
		int fd = bench_accept(opt.transport, lfd), rc;

		if (fd < 0) {
			if (errno == EINTR)
				continue;
			perror("ri2n-pingpong: accept");
			return 1;
		}
		rc = serve_stream_conn(fd);
		bench_close(opt.transport, fd);
		if (opt.once)
			return rc < 0 ? 1 : 0;
	}
}

/* ---- client ---- */

/* How the client waits, as reported: block, busy, fast, fast-busy. */
static const char *wait_name(void)
{
	if (opt.fast)
		return opt.busy ? "fast-busy" : "fast";
	return opt.busy ? "busy" : "block";
}

static int cmp_double(const void *a, const void *b)
{
	double x = *(const double *)a, y = *(const double *)b;

	return x < y ? -1 : x > y;
}

/* One round trip over UDP; the reply must carry our sequence number. */
static int udp_round(int fd, uint8_t *out, uint8_t *in, size_t size, uint32_t seq,
		     uint64_t *lost)
{
	for (;;) {
		double deadline;

		if (size >= 4)
			memcpy(out, &seq, 4);
		if (send(fd, out, size, 0) < 0 && errno != ECONNREFUSED)
			return -1;
		deadline = kit_now_s() + UDP_WAIT_MS / 1e3;
		for (;;) {
			ssize_t n;

			if (!opt.busy) {
				struct pollfd p = { .fd = fd, .events = POLLIN };
				int ms = (int)((deadline - kit_now_s()) * 1e3) + 1;

				if (ms <= 0 || poll(&p, 1, ms) == 0)
					break;
			}
			n = recv(fd, in, size, opt.busy ? MSG_DONTWAIT : 0);
			if (n < 0) {
				if (errno != EAGAIN && errno != EWOULDBLOCK && errno != EINTR &&
				    errno != ECONNREFUSED)
					return -1;
				if (opt.busy && kit_now_s() > deadline)
					break;
				continue;
			}
			if ((size_t)n == size && (size < 4 || memcmp(in, &seq, 4) == 0))
				return 0;
		}
		(*lost)++; /* nothing in time: send again */
		if (*lost > 1000) {
			errno = ETIMEDOUT;
			return -1;
		}
	}
}

static void report(FILE *csv, const char *name, size_t size, double *rtt, int n, uint64_t lost)
{
	double sum = 0, med, p99, p999, lo, hi;
	int k;

	qsort(rtt, (size_t)n, sizeof(double), cmp_double);
	for (int i = 0; i < n; i++)
		sum += rtt[i];
	med = n % 2 ? rtt[n / 2] : (rtt[n / 2 - 1] + rtt[n / 2]) / 2;
	k = (int)ceil(0.99 * n) - 1;
	p99 = rtt[k < 0 ? 0 : k];
	k = (int)ceil(0.999 * n) - 1;
	p999 = rtt[k < 0 ? 0 : k];
	lo = rtt[0];
	hi = rtt[n - 1];
	/* half round trips, in microseconds */
	printf("pingpong transport=%s wait=%s size=%zu iterations=%d median_us=%.2f p99_us=%.2f "
	       "min_us=%.2f mean_us=%.2f max_us=%.2f lost=%" PRIu64 " p999_us=%.2f\n",
	       name, wait_name(), size, n, med / 2e3, p99 / 2e3, lo / 2e3,
	       sum / n / 2e3, hi / 2e3, lost, p999 / 2e3);
	fflush(stdout);
	if (csv)
		fprintf(csv, "%s,%s,%zu,%d,%.2f,%.2f,%.2f,%.2f,%.2f,%" PRIu64 ",%.2f\n", name,
			wait_name(), size, n, med / 2e3, p99 / 2e3, lo / 2e3,
			sum / n / 2e3, hi / 2e3, lost, p999 / 2e3);
}

static int parse_sizes(int64_t *sizes)
{
	int n = 0;

	if (opt.sizes) {
		char *s = strdup(opt.sizes), *save = NULL;

		for (char *t = strtok_r(s, ",", &save); t && n < MAX_SIZES;
		     t = strtok_r(NULL, ",", &save)) {
			int64_t v = kit_parse_size(t);

			if (v <= 0) {
				fprintf(stderr, "ri2n-pingpong: bad size '%s'\n", t);
				usage();
			}
			sizes[n++] = v;
		}
		free(s);
		return n;
	}
	for (int64_t v = opt.min_size; v <= opt.max_size && n < MAX_SIZES; v *= 2)
		sizes[n++] = v;
	return n;
}

/* What one client run holds: the connection, the buffers, the samples. */
struct pp_client {
	int fd;
	const char *name;
	uint8_t *out, *in;
	double *rtt;
	FILE *csv;
};

/* Iterations for SIZE: --iterations, fewer for big messages (--budget), never under 20. */
static int iterations_for(size_t size)
{
	int iters = opt.iterations;

	if ((int64_t)size * iters > opt.budget)
		iters = (int)(opt.budget / (int64_t)size);
	if (iters < MIN_ITERS)
		iters = MIN_ITERS < opt.iterations ? MIN_ITERS : opt.iterations;
	return iters;
}

/* Tells a stream server the next phase: COUNT echoes of SIZE bytes (SIZE 0: the end). */
static int send_header(int fd, uint64_t size, uint64_t count)
{
	uint8_t hdr[HDR_LEN] = { 0 };

	memcpy(hdr, MAGIC, 8);
	kit_put64(hdr + 8, size);
	kit_put64(hdr + 16, count);
	hdr[24] = (uint8_t)opt.busy;
	hdr[25] = (uint8_t)opt.fast;
	return bench_write_all(fd, hdr, HDR_LEN, opt.busy);
}

/* Measures one size (index s) and reports it; -1 with errno if the connection failed. */
static int run_size(struct pp_client *c, int s, size_t size)
{
	const char *wait = wait_name();
	int iters = iterations_for(size), warm;
	uint64_t lost = 0;

	warm = opt.warmup < iters / 5 ? opt.warmup : iters / 5;
	if (warm < 1 && opt.warmup > 0)
		warm = 1;
	if (opt.transport == BT_UDP && size > (size_t)opt.udp_max) {
		printf("pingpong transport=%s wait=%s size=%zu n/a reason=larger-than-one-datagram\n",
		       c->name, wait, size);
		if (c->csv)
			fprintf(c->csv, "%s,%s,%zu,0,n/a,n/a,n/a,n/a,n/a,0,n/a\n", c->name, wait, size);
		return 0;
	}
	alarm((unsigned)opt.timeout_s); /* a hang ends the program (SIGALRM), never the run */
	if (opt.transport != BT_UDP && send_header(c->fd, size, (uint64_t)(warm + iters)) < 0)
		return -1;
	for (int i = 0; i < warm + iters; i++) {
		uint64_t t0 = kit_now_ns();

		if (opt.transport == BT_UDP) {
			if (udp_round(c->fd, c->out, c->in, size, (uint32_t)(s << 24 | i), &lost) < 0)
				return -1;
		} else {
			if (opt.verify) /* every message different: a stale or mixed echo shows */
				kit_pattern_fill(c->out, (uint64_t)s + 1, (uint64_t)i * size, size);
			if (bench_write_all(c->fd, c->out, size, opt.busy) < 0 ||
			    bench_read_full(c->fd, c->in, size, opt.busy) < 0)
				return -1;
			if (opt.verify && memcmp(c->in, c->out, size) != 0) {
				fprintf(stderr, "ri2n-pingpong: echo %d of %zu bytes differs\n", i, size);
				exit(1);
			}
		}
		if (i >= warm)
			c->rtt[i - warm] = (double)(kit_now_ns() - t0);
	}
	report(c->csv, c->name, size, c->rtt, iters, lost);
	return 0;
}

static int client(const char *host)
{
	int64_t sizes[MAX_SIZES], maxsz = 0;
	int nsizes = parse_sizes(sizes), rc = 0;
	struct pp_client c = { .name = opt.label ? opt.label : bench_transport_name(opt.transport) };

	for (int i = 0; i < nsizes; i++)
		maxsz = sizes[i] > maxsz ? sizes[i] : maxsz;
	c.out = malloc((size_t)maxsz);
	c.in = malloc((size_t)maxsz);
	c.rtt = malloc(sizeof(double) * (size_t)opt.iterations);
	if (!c.out || !c.in || !c.rtt) {
		fprintf(stderr, "ri2n-pingpong: out of memory\n");
		return 1;
	}
	kit_pattern_fill(c.out, 1, 0, (size_t)maxsz);
	if (opt.csv_path) {
		c.csv = fopen(opt.csv_path, "w");
		if (!c.csv) {
			perror(opt.csv_path);
			return 2;
		}
		setvbuf(c.csv, NULL, _IOLBF, 0);
		fprintf(c.csv, "transport,wait,size,iterations,median_us,p99_us,min_us,mean_us,max_us,lost,p999_us\n");
	}
	alarm((unsigned)opt.timeout_s);
	c.fd = opt.transport == BT_UDP ? bench_udp_connect(host, opt.port) :
		bench_connect(opt.transport, host, opt.port);
	if (c.fd < 0)
		return 1;
	if (opt.busy)
		bench_set_nonblock(c.fd, 1);
	if (opt.fast && opt.transport != BT_RI2N) {
		fprintf(stderr, "ri2n-pingpong: --fast is ri2n's API: not with --tcp or --udp\n");
		return 2;
	}
	bench_fast_io = opt.fast;
	for (int s = 0; s < nsizes && !rc; s++)
		if (run_size(&c, s, (size_t)sizes[s]) < 0) {
			fprintf(stderr, "ri2n-pingpong: %s failed at size %" PRId64 ": %s\n", c.name,
				sizes[s], strerror(errno));
			rc = 1;
		}
	alarm(0);
	if (opt.transport == BT_UDP)
		send(c.fd, "RI2NPPQ!", 8, 0);
	else if (!rc)
		send_header(c.fd, 0, 0);
	bench_close(opt.transport, c.fd);
	if (c.csv)
		fclose(c.csv);
	free(c.out);
	free(c.in);
	free(c.rtt);
	return rc;
}

int main(int argc, char **argv)
{
	const char *cmd, *host = NULL;

	if (argc < 2)
		usage();
	cmd = argv[1];
	help_or_version(cmd);
	for (int i = 2; i < argc; i++) {
		const char *a = argv[i];

		help_or_version(a);
#define NEXT (i + 1 < argc ? argv[++i] : (usage(), ""))
		if (!strcmp(a, "--tcp"))
			opt.transport = BT_TCP;
		else if (!strcmp(a, "--udp"))
			opt.transport = BT_UDP;
		else if (!strcmp(a, "--ri2n"))
			opt.transport = BT_RI2N;
		else if (!strcmp(a, "--port"))
			opt.port = atoi(NEXT);
		else if (!strcmp(a, "--bind"))
			opt.bind = NEXT;
		else if (!strcmp(a, "--once"))
			opt.once = 1;
		else if (!strcmp(a, "--busy-poll"))
			opt.busy = 1;
		else if (!strcmp(a, "--verify"))
			opt.verify = 1;
		else if (!strcmp(a, "--fast"))
			opt.fast = 1;
		else if (!strcmp(a, "--sizes"))
			opt.sizes = NEXT;
		else if (!strcmp(a, "--min-size"))
			opt.min_size = kit_parse_size(NEXT);
		else if (!strcmp(a, "--max-size"))
			opt.max_size = kit_parse_size(NEXT);
		else if (!strcmp(a, "--iterations"))
			opt.iterations = atoi(NEXT);
		else if (!strcmp(a, "--warmup"))
			opt.warmup = atoi(NEXT);
		else if (!strcmp(a, "--budget"))
			opt.budget = kit_parse_size(NEXT);
		else if (!strcmp(a, "--csv"))
			opt.csv_path = NEXT;
		else if (!strcmp(a, "--label"))
			opt.label = NEXT;
		else if (!strcmp(a, "--udp-max"))
			opt.udp_max = (int)kit_parse_size(NEXT);
		else if (!strcmp(a, "--timeout"))
			opt.timeout_s = atoi(NEXT);
		else if (a[0] == '-' && a[1])
			usage();
		else if (!host)
			host = a;
		else
			usage();
#undef NEXT
	}
	if (opt.port <= 0 || opt.port > 65535 || opt.iterations < 1 || opt.warmup < 0 ||
	    opt.min_size < 1 || opt.max_size < opt.min_size || opt.budget < 1 ||
	    opt.udp_max < 1 || opt.udp_max > 65507 || opt.timeout_s < 1)
		usage();
	signal(SIGPIPE, SIG_IGN);
	if (!strcmp(cmd, "serve") && !host)
		return serve();
	if (!strcmp(cmd, "client") && host)
		return client(host);
	usage();
	return 2;
}
