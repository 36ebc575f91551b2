/*
 * ri2n-xfer - move bytes over ri2n and check every one of them.
 *
 *   ri2n-xfer serve [--port P] [--bind ADDR] [--once] [--out FILE|-]
 *   ri2n-xfer send HOST BYTES|--seconds S [--port P] [--seed N] [--duplex] [--file FILE|-]
 *   common: [--interval MS] [--csv FILE] [--quiet]
 *   ri2n-xfer clock     prints CLOCK_MONOTONIC in seconds (to line up faults)
 *
 * The sender streams a seeded pattern (or a file, or stdin) and the receiver
 * checks every byte of the pattern as it arrives (a file is checked by its
 * SHA-256 at the end).  --duplex makes the server stream the same amount
 * back on the same connection at the same time, checked by the client.
 * Each side prints a line every interval (100 ms): elapsed time, throughput
 * over the interval, bytes so far, each rail's state (U up, D down) and
 * DATA packets sent per rail in the interval; a line for every rail state
 * change with the engine's own timestamp and cause; and a final verdict
 * with a line per rail.  Exit status: 0 all bytes verified, 1 verification
 * failed, 2 usage, 3 connection failed or died.
 *
 * Lines look like:
 *   xfer t=1.200 mbps=1874.21 bytes=281372672 rails=UD data=8123,0
 *   xfer event t=1.134 rail=1 down fd=5 cause="receive count below threshold"
 *   xfer done role=recv bytes=536870912 seconds=2.312 mbps=1857.63 verified=yes
 *   xfer rail=1 local=198.18.2.1 remote=198.18.2.2 up=1 downs=1 ups=1 ...
 * The CSV (--csv) has one row per interval: role,t,mono,mbps,bytes,rails,data.
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
	int port, quiet, once, interval_ms, duplex;
	double seconds;
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

static void print_usage(FILE *f)
{
	fprintf(f,
		"usage: ri2n-xfer serve [--port P] [--bind ADDR] [--once] [--out FILE|-]\n"
		"       ri2n-xfer send HOST BYTES|--seconds S [--port P] [--seed N] [--duplex]\n"
		"                 [--file FILE|-]\n"
		"       common: [--interval MS] [--csv FILE] [--quiet]\n"
		"       ri2n-xfer clock\n"
		"       ri2n-xfer --help | --version\n"
		"BYTES takes K, M, G suffixes (powers of 1024).\n");
}

__attribute__((noreturn)) static void die_usage(void)
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
		printf("ri2n-xfer %s\n", ri2n_version());
		exit(0);
	}
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
	int events;     /* this one reports rail changes (one per connection) */
	double t0, last_t;
	uint64_t last_bytes;
	int nrails;
	uint64_t last_data[RI2N_MAX_RAILS];
} progress;

/*
 * Prints the events ri2n reported (ri2n_read_event) for this process; the
 * connection's own, or all of them for a server with several.
 */
static void print_events(progress *p)
{
	struct ri2n_event e;
	static const char *const names[] = { "?", "connected", "down", "up", "closed", "failed" };

	while (p->events && ri2n_read_event(&e) == 1) {
		const char *name = e.type >= 1 && e.type <= 5 ? names[e.type] : "?";

		if (e.missed)
			fprintf(stderr, "xfer event missed=%llu\n", (unsigned long long)e.missed);
		if (e.rail >= 0)
			fprintf(stderr, "xfer event t=%.4f rail=%d %s fd=%d cause=\"%s\"\n",
				(double)e.time_ns / 1e9 - p->t0, e.rail, name, e.fd, e.cause);
		else
			fprintf(stderr, "xfer event t=%.4f conn %s fd=%d%s%s cause=\"%s\"\n",
				(double)e.time_ns / 1e9 - p->t0, name, e.fd, e.error ? " error=" : "",
				e.error ? strerror(e.error) : "", e.cause);
	}
}

/* Rail states and DATA packets sent per rail since the last call. */
static void rails_str(progress *p, char *rails, size_t rlen, char *data, size_t dlen)
{
	struct ri2n_stats st;
	size_t k = 0, d = 0;

	rails[0] = data[0] = 0;
	if (ri2n_stats(p->fd, &st) < 0) {
		snprintf(rails, rlen, "-");
		return;
	}
	for (int i = 0; i < st.nrails && k + 1 < rlen; i++) {
		const struct ri2n_rail_stats *r = &st.rail[i];

		rails[k++] = r->up ? 'U' : 'D';
		d += (size_t)snprintf(data + d, dlen - d, "%s%" PRIu64, i ? "," : "",
				      r->tx_data - (i < p->nrails ? p->last_data[i] : 0));
		p->last_data[i] = r->tx_data;
	}
	rails[k] = 0;
	p->nrails = st.nrails;
}

static void tick(progress *p, uint64_t bytes, int force)
{
	double t = now_s();
	char rails[RI2N_MAX_RAILS + 2], data[RI2N_MAX_RAILS * 24];
	double mbps;

	if (!force && (t - p->last_t) * 1000 < opt.interval_ms)
		return;
	mbps = t > p->last_t ? (double)(bytes - p->last_bytes) * 8 / (t - p->last_t) / 1e6 : 0;
	pthread_mutex_lock(&opt.out_mu);
	print_events(p);
	rails_str(p, rails, sizeof(rails), data, sizeof(data));
	if (!opt.quiet)
		fprintf(stderr, "xfer t=%.3f mbps=%.2f bytes=%" PRIu64 " rails=%s data=%s\n",
			t - p->t0, mbps, bytes, rails, data);
	if (opt.csv)
		fprintf(opt.csv, "%s,%.3f,%.6f,%.2f,%" PRIu64 ",%s,%s\n", p->role, t - p->t0, t,
			mbps, bytes, rails, data);
	pthread_mutex_unlock(&opt.out_mu);
	p->last_t = t;
	p->last_bytes = bytes;
}

/* One line per rail with its counters, after the verdict. */
static void rail_summary(int fd)
{
	struct ri2n_stats st;

	if (ri2n_stats(fd, &st) < 0)
		return;
	pthread_mutex_lock(&opt.out_mu);
	for (int i = 0; i < st.nrails; i++) {
		const struct ri2n_rail_stats *r = &st.rail[i];
		char l[32], m[32];

		inet_ntop(AF_INET, &r->local.sin_addr, l, sizeof(l));
		inet_ntop(AF_INET, &r->remote.sin_addr, m, sizeof(m));
		printf("xfer rail=%d local=%s remote=%s up=%d downs=%u ups=%u tx_data=%" PRIu64
		       " rx_data=%" PRIu64 " retransmits=%" PRIu64 " lost=%" PRIu64
		       " heartbeats=%" PRIu64 " dgram=%u mtu_holes=%u small_ok=%u\n", i, l, m, r->up,
		       r->down_events, r->up_events, r->tx_data, r->rx_data, r->retransmits, r->lost,
		       r->heartbeats, r->dgram, r->mtu_holes, r->small_ok);
	}
	fflush(stdout);
	pthread_mutex_unlock(&opt.out_mu);
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

/* ---- moving bytes ---- */

#define BACK_SEED UINT64_C(0x5a5a5a5a5a5a5a5a) /* the duplex return stream's seed */

typedef struct flow {
	int fd, in, out;       /* in: file to send (-1: pattern); out: copy of what arrives */
	uint64_t seed, total;  /* total: UNKNOWN_LEN until EOF or seconds */
	int mode;
	double seconds;
	uint64_t bytes, bad;
	uint8_t sha[32];
	const char *why;
	progress pg;
} flow;

/* Sends total bytes (or for `seconds`, or a whole file) on f->fd. */
static void flow_send(flow *f)
{
	uint8_t *buf = malloc(BLOCK);
	crypto_hash_sha256_state hs;
	double stop = f->seconds > 0 ? now_s() + f->seconds : 0;

	crypto_hash_sha256_init(&hs);
	while (buf && !f->why && f->bytes < f->total && !(stop && now_s() >= stop)) {
		size_t n = f->total - f->bytes < BLOCK ? (size_t)(f->total - f->bytes) : BLOCK;

		if (f->in >= 0) {
			ssize_t r = read(f->in, buf, BLOCK);

			if (r < 0 && errno == EINTR)
				continue;
			if (r <= 0) {
				if (r < 0)
					f->why = strerror(errno);
				break;
			}
			n = (size_t)r;
			crypto_hash_sha256_update(&hs, buf, n);
		} else {
			pattern(buf, f->seed, f->bytes, n);
		}
		if (write_all(f->fd, buf, n) < 0) {
			f->why = strerror(errno);
			break;
		}
		f->bytes += n;
		tick(&f->pg, f->bytes, 0);
	}
	crypto_hash_sha256_final(&hs, f->sha);
	free(buf);
}

/* Reads until EOF (or total bytes), checking the pattern or hashing. */
static void flow_recv(flow *f)
{
	uint8_t *buf = malloc(BLOCK), *want = malloc(BLOCK);
	crypto_hash_sha256_state hs;

	crypto_hash_sha256_init(&hs);
	while (buf && want && f->bytes < f->total) {
		size_t room = f->total - f->bytes < BLOCK ? (size_t)(f->total - f->bytes) : BLOCK;
		ssize_t n = read(f->fd, buf, room);

		if (n < 0 && errno == EINTR)
			continue;
		if (n < 0) {
			f->why = strerror(errno);
			break;
		}
		if (n == 0)
			break;
		if (f->mode == MODE_PATTERN) {
			pattern(want, f->seed, f->bytes, (size_t)n);
			if (memcmp(want, buf, (size_t)n) != 0)
				for (ssize_t i = 0; i < n; i++)
					f->bad += want[i] != buf[i];
		} else { /* a file or stdin: checked by its SHA-256 */
			crypto_hash_sha256_update(&hs, buf, (unsigned long long)n);
		}
		if (f->out >= 0 && write_all(f->out, buf, (size_t)n) < 0) {
			f->why = "writing the output failed";
			break;
		}
		f->bytes += (uint64_t)n;
		tick(&f->pg, f->bytes, 0);
	}
	crypto_hash_sha256_final(&hs, f->sha);
	free(buf);
	free(want);
}

static void *flow_send_thread(void *arg)
{
	flow_send(arg);
	return NULL;
}

static void *flow_recv_thread(void *arg)
{
	flow_recv(arg);
	return NULL;
}

/* ---- receiving ---- */

static int receive(int fd)
{
	uint8_t hdr[HDR_LEN], verdict[VERDICT_LEN] = { 0 };
	flow in = { .fd = fd, .in = -1, .out = -1, .total = UNKNOWN_LEN };
	flow back = { .fd = fd, .in = -1, .out = -1 };
	pthread_t bt;
	uint64_t announced;
	int duplex;
	const char *why;
	double t1;

	if (read_full(fd, hdr, HDR_LEN) != HDR_LEN || memcmp(hdr, MAGIC, 8) != 0) {
		fprintf(stderr, "ri2n-xfer: not a ri2n-xfer sender (bad or missing header)\n");
		return 1;
	}
	in.seed = get64(hdr + 8);
	announced = get64(hdr + 16);
	in.mode = hdr[24];
	duplex = hdr[25];
	if (opt.out)
		in.out = strcmp(opt.out, "-") == 0 ? 1 :
			open(opt.out, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
	in.pg = (progress){ .role = "recv", .fd = fd, .events = 1 };
	in.pg.t0 = in.pg.last_t = now_s();
	if (duplex) {
		back.seed = in.seed ^ BACK_SEED;
		back.total = announced;
		back.pg = (progress){ .role = "send-back", .fd = fd, .t0 = in.pg.t0,
				      .last_t = in.pg.t0 };
		pthread_create(&bt, NULL, flow_send_thread, &back);
	}
	flow_recv(&in);
	t1 = now_s();
	tick(&in.pg, in.bytes, 1);
	if (duplex)
		pthread_join(bt, NULL);
	why = in.why;
	if (!why && announced != UNKNOWN_LEN && in.bytes != announced)
		why = "stream ended early";
	if (!why && in.bad)
		why = "corrupted bytes";
	if (!why && back.why)
		why = back.why;
	/* after our own stream (duplex): what arrived, for the sender to judge */
	put64(verdict, in.bytes);
	put64(verdict + 8, in.bad);
	memcpy(verdict + 16, in.sha, 32);
	if (write_all(fd, verdict, VERDICT_LEN) < 0 && !why)
		why = "could not send the verdict";
	shutdown(fd, SHUT_WR);
	done_line("recv", in.bytes, t1 - in.pg.t0, !why, why);
	rail_summary(fd);
	if (in.bad)
		fprintf(stderr, "ri2n-xfer: %" PRIu64 " corrupted bytes\n", in.bad);
	if (in.out > 1)
		close(in.out);
	return why ? 1 : 0;
}

typedef struct rx_job {
	int fd;
	struct sockaddr_in peer;
} rx_job;

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
	int lfd, rc = 0;

	if (opt.bind_addr && inet_pton(AF_INET, opt.bind_addr, &a.sin_addr) != 1) {
		fprintf(stderr, "ri2n-xfer: --bind %s is not an IPv4 address\n", opt.bind_addr);
		return 2;
	}
	lfd = ri2n_socket();
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
			int e = errno;

			free(j);
			if (e == EINTR)
				continue;
			fprintf(stderr, "ri2n-xfer: accept: %s\n", strerror(e));
			/* out of connections or memory for one: the others go on, as a server's do */
			if (e == EMFILE || e == ENFILE || e == ENOBUFS || e == ENOMEM)
				continue;
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

/* The receiver's verdict on what arrived; NULL if all is well. */
static const char *check_verdict(int fd, const flow *out)
{
	uint8_t v[VERDICT_LEN];
	ssize_t r = read_full(fd, v, VERDICT_LEN);

	if (r != VERDICT_LEN)
		return r < 0 ? strerror(errno) : "connection ended before the receiver's verdict";
	if (get64(v) != out->bytes)
		return "receiver got a different byte count";
	if (get64(v + 8) != 0)
		return "receiver found corrupted bytes";
	if (out->mode == MODE_DATA && memcmp(v + 16, out->sha, 32) != 0)
		return "SHA-256 differs";
	return NULL;
}

static int send_stream(const char *host, uint64_t total)
{
	struct sockaddr_in a = { .sin_family = AF_INET, .sin_port = htons((uint16_t)opt.port) };
	uint8_t hdr[HDR_LEN] = { 0 };
	flow out = { .in = -1, .out = -1, .seed = opt.seed, .total = total,
		     .seconds = opt.seconds };
	flow back = { .in = -1, .out = -1 };
	pthread_t bt;
	const char *why = NULL;
	int fd, corrupt;
	double t1;

	if (resolve(host, &a) < 0) {
		fprintf(stderr, "ri2n-xfer: cannot resolve %s\n", host);
		return 2;
	}
	if (opt.file) {
		out.in = strcmp(opt.file, "-") == 0 ? 0 : open(opt.file, O_RDONLY | O_CLOEXEC);
		if (out.in < 0) {
			fprintf(stderr, "ri2n-xfer: %s: %s\n", opt.file, strerror(errno));
			return 2;
		}
		out.mode = MODE_DATA;
		out.total = UNKNOWN_LEN;
	}
	if (opt.seconds > 0)
		out.total = UNKNOWN_LEN;
	fd = ri2n_socket();
	if (fd < 0 || ri2n_connect(fd, (struct sockaddr *)&a, sizeof(a)) < 0) {
		fprintf(stderr, "ri2n-xfer: cannot connect to %s:%d: %s\n", host, opt.port,
			strerror(errno));
		return 3;
	}
	out.fd = fd;
	out.pg = (progress){ .role = "send", .fd = fd, .events = 1 };
	memcpy(hdr, MAGIC, 8);
	put64(hdr + 8, opt.seed);
	put64(hdr + 16, out.total);
	hdr[24] = (uint8_t)out.mode;
	hdr[25] = (uint8_t)opt.duplex;
	out.pg.t0 = out.pg.last_t = now_s();
	if (write_all(fd, hdr, HDR_LEN) < 0)
		out.why = strerror(errno);
	if (opt.duplex) {
		back = (flow){ .fd = fd, .in = -1, .out = -1, .seed = opt.seed ^ BACK_SEED,
			       .total = total };
		back.pg = (progress){ .role = "recv-back", .fd = fd, .t0 = out.pg.t0,
				      .last_t = out.pg.t0 };
		pthread_create(&bt, NULL, flow_recv_thread, &back);
	}
	flow_send(&out);
	shutdown(fd, SHUT_WR);
	if (opt.duplex) {
		pthread_join(bt, NULL);
		if (back.why)
			why = back.why;
		else if (back.bad)
			why = "corrupted bytes in the return stream";
		else if (back.bytes != total)
			why = "return stream ended early";
	}
	if (!why)
		why = out.why;
	if (!why)
		why = check_verdict(fd, &out);
	t1 = now_s();
	tick(&out.pg, out.bytes, 1);
	done_line("send", out.bytes, t1 - out.pg.t0, !why, why);
	if (opt.duplex)
		done_line("recv-back", back.bytes, t1 - out.pg.t0,
			  !back.why && !back.bad && back.bytes == total, NULL);
	rail_summary(fd);
	ri2n_close(fd);
	usleep(20000); /* the engine reports the close right after the last ACK */
	pthread_mutex_lock(&opt.out_mu);
	print_events(&out.pg);
	pthread_mutex_unlock(&opt.out_mu);
	if (out.in > 0)
		close(out.in);
	if (!why)
		return 0;
	corrupt = strstr(why, "receiver") || strstr(why, "corrupt") || strstr(why, "SHA");
	return corrupt ? 1 : 3;
}

int main(int argc, char **argv)
{
	const char *cmd, *host = NULL, *bytes = NULL;
	int rc;

	if (argc < 2)
		die_usage();
	cmd = argv[1];
	help_or_version(cmd);
	for (int i = 2; i < argc; i++) {
		const char *a = argv[i];

		help_or_version(a);
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
		else if (!strcmp(a, "--duplex"))
			opt.duplex = 1;
		else if (!strcmp(a, "--seconds"))
			opt.seconds = atof(NEXT);
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
		fprintf(opt.csv, "role,t,mono,mbps,bytes,rails,data\n");
	}
	if (!strcmp(cmd, "clock")) {
		printf("%.6f\n", now_s());
		return 0;
	}
	if (opt.duplex && (!bytes || opt.file || opt.seconds > 0)) {
		fprintf(stderr, "ri2n-xfer: --duplex needs BYTES (not --file or --seconds)\n");
		return 2;
	}
	if (!strcmp(cmd, "serve") && !host)
		rc = serve();
	else if (!strcmp(cmd, "send") && host && (bytes || opt.file || opt.seconds > 0))
		rc = send_stream(host, bytes ? parse_size(bytes) : UNKNOWN_LEN);
	else
		die_usage();
	if (opt.csv)
		fclose(opt.csv);
	return rc;
}
