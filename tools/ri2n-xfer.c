/*
 * ri2n-xfer - move bytes over ri2n and check every one of them.
 *
 *   ri2n-xfer serve [--port P] [--bind ADDR] [--once] [--out FILE|-]
 *   ri2n-xfer send HOST BYTES [--port P] [--seed S] [--file FILE|-]
 *   common: [--interval MS] [--csv FILE] [--quiet]
 *
 * The sender streams a seeded pattern (or a file, or stdin) and the receiver
 * checks every byte of the pattern as it arrives (a file is checked by its
 * SHA-256 at the end).  Each side prints a line every interval (100 ms):
 * elapsed time, throughput over the interval, bytes so far and each rail's
 * state (U up, D down), and a final verdict.  Exit status: 0 all bytes
 * verified, 1 verification failed, 2 usage, 3 connection failed.
 *
 * Lines look like:
 *   xfer t=1.200 mbps=1874.21 bytes=281372672 rails=UD
 *   xfer done role=recv bytes=536870912 seconds=2.312 mbps=1857.63 verified=yes
 */
#define _GNU_SOURCE
#include <arpa/inet.h>
#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <netdb.h>
#include <pthread.h>
#include <signal.h>
#include <sodium.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <time.h>
#include <unistd.h>

#include "ri2n.h"

#define MAGIC "RI2NXFR1"
#define HDR_LEN 32
#define VERDICT_LEN 48
#define BLOCK (256 << 10)
#define UNKNOWN_LEN UINT64_MAX

enum { MODE_PATTERN = 0, MODE_DATA = 1 };

static struct {
	int port, quiet, once, interval_ms;
	const char *bind_addr, *csv_path, *file, *out;
	uint64_t seed;
	FILE *csv;
	pthread_mutex_t out_mu;
} opt = { .port = 7000, .interval_ms = 100, .seed = 1, .out_mu = PTHREAD_MUTEX_INITIALIZER };

static double now_s(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (double)ts.tv_sec + (double)ts.tv_nsec / 1e9;
}

static void die_usage(void)
{
	fprintf(stderr,
		"usage: ri2n-xfer serve [--port P] [--bind ADDR] [--once] [--out FILE|-]\n"
		"       ri2n-xfer send HOST BYTES [--port P] [--seed S] [--file FILE|-]\n"
		"       common: [--interval MS] [--csv FILE] [--quiet]\n"
		"BYTES takes K, M, G suffixes (powers of 1024).\n");
	exit(2);
}

/* ---- the pattern: byte i depends only on the seed and i ---- */

static uint64_t mix(uint64_t z)
{
	z += UINT64_C(0x9e3779b97f4a7c15);
	z = (z ^ (z >> 30)) * UINT64_C(0xbf58476d1ce4e5b9);
	z = (z ^ (z >> 27)) * UINT64_C(0x94d049bb133111eb);
	return z ^ (z >> 31);
}

static void pattern(uint8_t *buf, uint64_t seed, uint64_t off, size_t n)
{
	size_t i = 0;

	while (i < n) {
		uint64_t pos = off + i, w = mix(seed ^ (pos >> 3) * UINT64_C(0x100000001b3));

		for (unsigned b = (unsigned)(pos & 7); b < 8 && i < n; b++, i++)
			buf[i] = (uint8_t)(w >> (8 * b));
	}
}

/* ---- progress ---- */

typedef struct progress {
	const char *role;
	int fd;
	double t0, last_t;
	uint64_t last_bytes;
} progress;

static void rails_str(int fd, char *out, size_t len)
{
	struct ri2n_stats st;
	size_t k = 0;

	if (ri2n_stats(fd, &st) < 0) {
		snprintf(out, len, "-");
		return;
	}
	for (int i = 0; i < st.nrails && k + 1 < len; i++)
		out[k++] = st.rail[i].up ? 'U' : 'D';
	out[k] = 0;
}

static void tick(progress *p, uint64_t bytes, int force)
{
	double t = now_s();
	char rails[RI2N_MAX_RAILS + 2];
	double mbps;

	if (!force && (t - p->last_t) * 1000 < opt.interval_ms)
		return;
	mbps = t > p->last_t ? (double)(bytes - p->last_bytes) * 8 / (t - p->last_t) / 1e6 : 0;
	rails_str(p->fd, rails, sizeof(rails));
	pthread_mutex_lock(&opt.out_mu);
	if (!opt.quiet)
		fprintf(stderr, "xfer t=%.3f mbps=%.2f bytes=%" PRIu64 " rails=%s\n", t - p->t0,
			mbps, bytes, rails);
	if (opt.csv)
		fprintf(opt.csv, "%s,%.3f,%.2f,%" PRIu64 ",%s\n", p->role, t - p->t0, mbps, bytes,
			rails);
	pthread_mutex_unlock(&opt.out_mu);
	p->last_t = t;
	p->last_bytes = bytes;
}

static void done_line(const char *role, uint64_t bytes, double secs, int ok, const char *why)
{
	pthread_mutex_lock(&opt.out_mu);
	printf("xfer done role=%s bytes=%" PRIu64 " seconds=%.3f mbps=%.2f verified=%s%s%s\n",
	       role, bytes, secs, secs > 0 ? (double)bytes * 8 / secs / 1e6 : 0,
	       ok ? "yes" : "no", why ? " reason=" : "", why ? why : "");
	fflush(stdout);
	pthread_mutex_unlock(&opt.out_mu);
}

/* ---- plumbing ---- */

static int write_all(int fd, const void *buf, size_t n)
{
	const uint8_t *p = buf;

	while (n > 0) {
		ssize_t w = write(fd, p, n);

		if (w < 0) {
			if (errno == EINTR)
				continue;
			return -1;
		}
		p += w;
		n -= (size_t)w;
	}
	return 0;
}

static ssize_t read_full(int fd, void *buf, size_t n)
{
	size_t got = 0;

	while (got < n) {
		ssize_t r = read(fd, (uint8_t *)buf + got, n - got);

		if (r < 0) {
			if (errno == EINTR)
				continue;
			return -1;
		}
		if (r == 0)
			break;
		got += (size_t)r;
	}
	return (ssize_t)got;
}

static void put64(uint8_t *p, uint64_t v)
{
	for (int i = 7; i >= 0; i--, v >>= 8)
		p[i] = (uint8_t)v;
}

static uint64_t get64(const uint8_t *p)
{
	uint64_t v = 0;

	for (int i = 0; i < 8; i++)
		v = v << 8 | p[i];
	return v;
}

/* ---- receiving ---- */

typedef struct rx_job {
	int fd;
	struct sockaddr_in peer;
} rx_job;

static int receive(int fd)
{
	uint8_t hdr[HDR_LEN], verdict[VERDICT_LEN] = { 0 }, sha[32];
	uint8_t *buf = malloc(BLOCK), *want = malloc(BLOCK);
	crypto_hash_sha256_state hs;
	uint64_t seed, total, got = 0, bad = 0;
	progress pg = { .role = "recv", .fd = fd };
	int mode, out = -1, ok;
	const char *why = NULL;
	double t1;

	if (!buf || !want || read_full(fd, hdr, HDR_LEN) != HDR_LEN ||
	    memcmp(hdr, MAGIC, 8) != 0) {
		fprintf(stderr, "ri2n-xfer: not a ri2n-xfer sender (bad or missing header)\n");
		free(buf);
		free(want);
		return 1;
	}
	seed = get64(hdr + 8);
	total = get64(hdr + 16);
	mode = hdr[24];
	if (opt.out)
		out = strcmp(opt.out, "-") == 0 ? 1 :
						  open(opt.out, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
	crypto_hash_sha256_init(&hs);
	pg.t0 = pg.last_t = now_s();
	for (;;) {
		ssize_t n = read(fd, buf, BLOCK);

		if (n < 0 && errno == EINTR)
			continue;
		if (n < 0) {
			why = strerror(errno);
			break;
		}
		if (n == 0)
			break;
		if (mode == MODE_PATTERN) {
			pattern(want, seed, got, (size_t)n);
			if (memcmp(want, buf, (size_t)n) != 0)
				for (ssize_t i = 0; i < n; i++)
					bad += want[i] != buf[i];
		}
		else /* a file or stdin: checked by its SHA-256 */
			crypto_hash_sha256_update(&hs, buf, (unsigned long long)n);
		if (out >= 0 && write_all(out, buf, (size_t)n) < 0) {
			why = "writing the output failed";
			break;
		}
		got += (uint64_t)n;
		tick(&pg, got, 0);
	}
	t1 = now_s();
	tick(&pg, got, 1);
	crypto_hash_sha256_final(&hs, sha);
	if (!why && total != UNKNOWN_LEN && got != total)
		why = "stream ended early";
	if (!why && bad)
		why = "corrupted bytes";
	ok = !why;
	/* tell the sender what arrived */
	put64(verdict, got);
	put64(verdict + 8, bad);
	memcpy(verdict + 16, sha, 32);
	if (write_all(fd, verdict, VERDICT_LEN) < 0 && ok)
		why = "could not send the verdict";
	done_line("recv", got, t1 - pg.t0, ok, why ? why : (bad ? "corrupted" : NULL));
	if (bad)
		fprintf(stderr, "ri2n-xfer: %" PRIu64 " corrupted bytes\n", bad);
	if (out > 1)
		close(out);
	free(buf);
	free(want);
	return ok ? 0 : 1;
}

static void *rx_thread(void *arg)
{
	rx_job *j = arg;

	receive(j->fd);
	ri2n_close(j->fd);
	free(j);
	return NULL;
}

static int serve(void)
{
	struct sockaddr_in a = { .sin_family = AF_INET, .sin_port = htons((uint16_t)opt.port) };
	int lfd = ri2n_socket(), rc = 0;

	if (opt.bind_addr && inet_pton(AF_INET, opt.bind_addr, &a.sin_addr) != 1) {
		fprintf(stderr, "ri2n-xfer: --bind %s is not an IPv4 address\n", opt.bind_addr);
		return 2;
	}
	if (lfd < 0 || ri2n_bind(lfd, (struct sockaddr *)&a, sizeof(a)) < 0 ||
	    ri2n_listen(lfd, 64) < 0) {
		fprintf(stderr, "ri2n-xfer: cannot listen on port %d: %s\n", opt.port, strerror(errno));
		return 3;
	}
	if (!opt.quiet)
		fprintf(stderr, "ri2n-xfer: listening on port %d\n", opt.port);
	for (;;) {
		rx_job *j = calloc(1, sizeof(*j));
		socklen_t len = sizeof(j->peer);
		pthread_t t;

		j->fd = ri2n_accept(lfd, (struct sockaddr *)&j->peer, &len);
		if (j->fd < 0) {
			if (errno == EINTR) {
				free(j);
				continue;
			}
			fprintf(stderr, "ri2n-xfer: accept: %s\n", strerror(errno));
			free(j);
			return 3;
		}
		if (opt.once) {
			rc = receive(j->fd);
			ri2n_close(j->fd);
			free(j);
			break;
		}
		pthread_create(&t, NULL, rx_thread, j);
		pthread_detach(t);
	}
	ri2n_close(lfd);
	return rc;
}

/* ---- sending ---- */

static int resolve(const char *host, struct sockaddr_in *a)
{
	struct addrinfo hints = { .ai_family = AF_INET, .ai_socktype = SOCK_STREAM }, *res;

	if (inet_pton(AF_INET, host, &a->sin_addr) == 1)
		return 0;
	if (getaddrinfo(host, NULL, &hints, &res) != 0)
		return -1;
	a->sin_addr = ((struct sockaddr_in *)res->ai_addr)->sin_addr;
	freeaddrinfo(res);
	return 0;
}

static uint64_t parse_size(const char *s)
{
	char *end;
	double v = strtod(s, &end);
	uint64_t mul = 1;

	if (end == s || v < 0)
		die_usage();
	switch (*end) {
	case 'k': case 'K': mul = 1ull << 10; end++; break;
	case 'm': case 'M': mul = 1ull << 20; end++; break;
	case 'g': case 'G': mul = 1ull << 30; end++; break;
	case 0: break;
	default: die_usage();
	}
	if (*end)
		die_usage();
	return (uint64_t)(v * (double)mul);
}

static int send_stream(const char *host, uint64_t total)
{
	struct sockaddr_in a = { .sin_family = AF_INET, .sin_port = htons((uint16_t)opt.port) };
	uint8_t hdr[HDR_LEN] = { 0 }, verdict[VERDICT_LEN], sha[32];
	uint8_t *buf = malloc(BLOCK);
	crypto_hash_sha256_state hs;
	progress pg = { .role = "send" };
	uint64_t sent = 0;
	int fd, in = -1, mode = opt.file ? MODE_DATA : MODE_PATTERN, ok;
	const char *why = NULL;
	double t1;

	if (resolve(host, &a) < 0) {
		fprintf(stderr, "ri2n-xfer: cannot resolve %s\n", host);
		return 2;
	}
	if (opt.file) {
		in = strcmp(opt.file, "-") == 0 ? 0 : open(opt.file, O_RDONLY | O_CLOEXEC);
		if (in < 0) {
			fprintf(stderr, "ri2n-xfer: %s: %s\n", opt.file, strerror(errno));
			return 2;
		}
		total = UNKNOWN_LEN;
	}
	fd = ri2n_socket();
	if (fd < 0 || ri2n_connect(fd, (struct sockaddr *)&a, sizeof(a)) < 0) {
		fprintf(stderr, "ri2n-xfer: cannot connect to %s:%d: %s\n", host, opt.port,
			strerror(errno));
		return 3;
	}
	pg.fd = fd;
	memcpy(hdr, MAGIC, 8);
	put64(hdr + 8, opt.seed);
	put64(hdr + 16, total);
	hdr[24] = (uint8_t)mode;
	crypto_hash_sha256_init(&hs);
	pg.t0 = pg.last_t = now_s();
	if (write_all(fd, hdr, HDR_LEN) < 0)
		why = strerror(errno);
	while (!why && sent < total) {
		size_t n = total - sent < BLOCK ? (size_t)(total - sent) : BLOCK;

		if (in >= 0) {
			ssize_t r = read(in, buf, BLOCK);

			if (r < 0 && errno == EINTR)
				continue;
			if (r <= 0) {
				if (r < 0)
					why = strerror(errno);
				break;
			}
			n = (size_t)r;
		} else {
			pattern(buf, opt.seed, sent, n);
		}
		if (mode == MODE_DATA)
			crypto_hash_sha256_update(&hs, buf, n);
		if (write_all(fd, buf, n) < 0) {
			why = strerror(errno);
			break;
		}
		sent += n;
		tick(&pg, sent, 0);
	}
	shutdown(fd, SHUT_WR);
	crypto_hash_sha256_final(&hs, sha);
	/* the receiver's verdict says what really arrived */
	if (!why) {
		ssize_t r = read_full(fd, verdict, VERDICT_LEN);

		if (r != VERDICT_LEN)
			why = r < 0 ? strerror(errno) : "connection ended before the receiver's verdict";
		else if (get64(verdict) != sent)
			why = "receiver got a different byte count";
		else if (get64(verdict + 8) != 0)
			why = "receiver found corrupted bytes";
		else if (memcmp(verdict + 16, sha, 32) != 0)
			why = "SHA-256 differs";
	}
	t1 = now_s();
	tick(&pg, sent, 1);
	ok = !why;
	done_line("send", sent, t1 - pg.t0, ok, why);
	ri2n_close(fd);
	free(buf);
	if (in > 0)
		close(in);
	return ok ? 0 : (why && strstr(why, "receiver") ? 1 : 3);
}

int main(int argc, char **argv)
{
	const char *cmd, *host = NULL, *bytes = NULL;
	int rc;

	if (argc < 2)
		die_usage();
	cmd = argv[1];
	for (int i = 2; i < argc; i++) {
		const char *a = argv[i];

#define NEXT (i + 1 < argc ? argv[++i] : (die_usage(), ""))
		if (!strcmp(a, "--port"))
			opt.port = atoi(NEXT);
		else if (!strcmp(a, "--bind"))
			opt.bind_addr = NEXT;
		else if (!strcmp(a, "--once"))
			opt.once = 1;
		else if (!strcmp(a, "--out"))
			opt.out = NEXT;
		else if (!strcmp(a, "--seed"))
			opt.seed = strtoull(NEXT, NULL, 0);
		else if (!strcmp(a, "--file"))
			opt.file = NEXT;
		else if (!strcmp(a, "--interval"))
			opt.interval_ms = atoi(NEXT);
		else if (!strcmp(a, "--csv"))
			opt.csv_path = NEXT;
		else if (!strcmp(a, "--quiet"))
			opt.quiet = 1;
		else if (a[0] == '-' && a[1])
			die_usage();
		else if (!host)
			host = a;
		else if (!bytes)
			bytes = a;
		else
			die_usage();
#undef NEXT
	}
	if (opt.port <= 0 || opt.port > 65535 || opt.interval_ms <= 0)
		die_usage();
	if (sodium_init() < 0)
		return 3;
	signal(SIGPIPE, SIG_IGN);
	if (opt.csv_path) {
		opt.csv = fopen(opt.csv_path, "w");
		if (!opt.csv) {
			fprintf(stderr, "ri2n-xfer: %s: %s\n", opt.csv_path, strerror(errno));
			return 2;
		}
		setvbuf(opt.csv, NULL, _IOLBF, 0);
		fprintf(opt.csv, "role,t,mbps,bytes,rails\n");
	}
	if (!strcmp(cmd, "serve") && !host)
		rc = serve();
	else if (!strcmp(cmd, "send") && host && (bytes || opt.file))
		rc = send_stream(host, bytes ? parse_size(bytes) : 0);
	else
		die_usage();
	if (opt.csv)
		fclose(opt.csv);
	return rc;
}
