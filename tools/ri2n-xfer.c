/*
 * ri2n-xfer (also ri2n-stream) - move bytes over ri2n, or over TCP with the
 * same code, and check every one of them.
 *
 *   ri2n-xfer serve [--port P] [--bind ADDR] [--once] [--out FILE|-] [--tcp]
 *   ri2n-xfer send HOST [BYTES | --bytes N | --seconds S] [--port P] [--seed N]
 *             [--duplex] [--file FILE|-] [--block B] [--no-verify] [--tcp]
 *             [--fault-at S --fault-cmd CMD] [--heal-at S --heal-cmd CMD]
 *   common: [--interval MS] [--csv FILE] [--rails N] [--quiet] [--ri2n | --tcp]
 *   ri2n-xfer clock      prints CLOCK_MONOTONIC in seconds (to line up faults)
 *   ri2n-xfer stamp      copies stdin to stdout, each line prefixed with the
 *                        CLOCK_MONOTONIC time it was read (behind `nft monitor`)
 *
 * Run as ri2n-stream (a link to this program, what bench/run.sh runs, also as
 * `mptcpize run ri2n-stream ... --tcp`), it takes the same options and
 * prints the bench's lines (xfer_meter.c); its default port is 7200 and its
 * block 128 KiB (ri2n-xfer: 7000, 256 KiB).
 *
 * The sender streams a seeded pattern (ri2n_kit.h; or a file, or stdin) and
 * the receiver checks every byte of the pattern as it arrives (a file by its
 * SHA-256 at the end; --no-verify: a constant buffer, nothing checked, for
 * CPU-bound runs).  --duplex makes the server stream the same amount back
 * on the same connection at the same time, checked by the client.  At the
 * end the receiver sends back what it counted and both print a verdict.
 * --fault-at S / --heal-at S: the sender runs CMD with /bin/sh S seconds
 * after its start, in a thread of its own, and prints when it started and
 * ended ("stream fault what=fault t=3.0001 mono_start=... mono_end=... rc=0").
 *
 * Exit status: 0 all bytes verified, 1 verification failed, 2 usage, 3
 * connection failed or died.
 */
#define _GNU_SOURCE
#include <arpa/inet.h>
#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <libgen.h>
#include <pthread.h>
#include <signal.h>
#include <sodium.h>
#include <spawn.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "bench_common.h"
#include "ri2n.h"
#include "ri2n_kit.h"
#include "xfer.h"

#define MAGIC "RI2NXF02"
#define HDR_LEN 32      /* magic, seed, bytes (or UNKNOWN_LEN), mode, duplex */
#define VERDICT_LEN 48  /* bytes received, bytes wrong, SHA-256 of a file */
#define UNKNOWN_LEN UINT64_MAX
#define BACK_SEED UINT64_C(0x5a5a5a5a5a5a5a5a) /* the duplex return stream's seed */

enum { MODE_PATTERN = 0, MODE_DATA = 1, MODE_NONE = 2 };

extern char **environ;

xfer_opt opt = { .transport = BT_RI2N, .interval_ms = 100, .verify = 1, .seed = 1,
		 .fault_at = -1, .heal_at = -1, .mu = PTHREAD_MUTEX_INITIALIZER };

static void print_usage(FILE *f)
{
	fprintf(f,
		"usage: %s serve [--port P] [--bind ADDR] [--once] [--out FILE|-] [common]\n"
		"       %s send HOST [BYTES | --bytes N | --seconds S] [--port P] [--seed N]\n"
		"                 [--duplex] [--file FILE|-] [--block B] [--no-verify]\n"
		"                 [--fault-at S --fault-cmd CMD] [--heal-at S --heal-cmd CMD] [common]\n"
		"       common: [--ri2n | --tcp] [--interval MS] [--csv FILE] [--rails N] [--quiet]\n"
		"       %s clock | stamp\n"
		"       %s --help | --version\n"
		"BYTES takes K, M, G suffixes (powers of 1024).  ri2n-xfer and ri2n-stream are one\n"
		"program; the name chooses the lines it prints (see the top of tools/ri2n-xfer.c).\n",
		opt.prog, opt.prog, opt.prog, opt.prog);
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
		printf("%s %s\n", opt.prog, ri2n_version());
		exit(0);
	}
}

/* ---- moving bytes ---- */

/* One direction of a connection. */
typedef struct flow {
	int fd, in, out;       /* in: file to send (-1: pattern); out: copy of what arrives */
	uint64_t seed, total;  /* total: UNKNOWN_LEN until EOF or seconds */
	int mode;
	double seconds;
	uint64_t bytes, bad;
	uint8_t sha[32];
	const char *why;
	xfer_meter m;
} flow;

/* Sends total bytes (or for `seconds`, or a whole file) on f->fd. */
static void flow_send(flow *f)
{
	uint8_t *buf = malloc(opt.block);
	crypto_hash_sha256_state hs;
	double stop = f->seconds > 0 ? kit_now_s() + f->seconds : 0;

	crypto_hash_sha256_init(&hs);
	if (buf && f->mode == MODE_NONE)
		memset(buf, 0x5a, opt.block);
	while (buf && !f->why && f->bytes < f->total && !(stop && kit_now_s() >= stop)) {
		size_t n = f->total - f->bytes < opt.block ? (size_t)(f->total - f->bytes) : opt.block;

		if (f->in >= 0) {
			ssize_t r = read(f->in, buf, opt.block);

			if (r < 0 && errno == EINTR)
				continue;
			if (r <= 0) {
				if (r < 0)
					f->why = strerror(errno);
				break;
			}
			n = (size_t)r;
			crypto_hash_sha256_update(&hs, buf, n);
		} else if (f->mode == MODE_PATTERN) {
			kit_pattern_fill(buf, f->seed, f->bytes, n);
		}
		if (bench_write_all(f->fd, buf, n, 0) < 0) {
			f->why = strerror(errno);
			break;
		}
		f->bytes += n;
		atomic_store(&f->m.bytes, f->bytes);
	}
	crypto_hash_sha256_final(&hs, f->sha);
	free(buf);
}

/* Reads until EOF (or total bytes), checking the pattern or hashing. */
static void flow_recv(flow *f)
{
	uint8_t *buf = malloc(opt.block);
	crypto_hash_sha256_state hs;

	crypto_hash_sha256_init(&hs);
	while (buf && f->bytes < f->total) {
		size_t room = f->total - f->bytes < opt.block ? (size_t)(f->total - f->bytes) : opt.block;
		ssize_t n = read(f->fd, buf, room);

		if (n < 0 && errno == EINTR)
			continue;
		if (n < 0) {
			f->why = strerror(errno);
			break;
		}
		if (n == 0)
			break;
		if (f->mode == MODE_PATTERN)
			f->bad += kit_pattern_check(buf, f->seed, f->bytes, (size_t)n);
		else if (f->mode == MODE_DATA) /* a file or stdin: checked by its SHA-256 */
			crypto_hash_sha256_update(&hs, buf, (unsigned long long)n);
		if (f->out >= 0 && bench_write_all(f->out, buf, (size_t)n, 0) < 0) {
			f->why = "writing the output failed";
			break;
		}
		f->bytes += (uint64_t)n;
		atomic_store(&f->m.bytes, f->bytes);
	}
	crypto_hash_sha256_final(&hs, f->sha);
	free(buf);
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

/* After the last bytes: ri2n reports the close right after the last ACK. */
static void last_events(const xfer_meter *m)
{
	if (opt.transport != BT_RI2N)
		return;
	usleep(20000);
	pthread_mutex_lock(&opt.mu);
	xfer_events(m);
	pthread_mutex_unlock(&opt.mu);
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
	double t0, t1;

	if (bench_read_full(fd, hdr, HDR_LEN, 0) < 0 || memcmp(hdr, MAGIC, 8) != 0) {
		fprintf(stderr, "%s: not a %s sender (bad or missing header)\n", opt.prog, opt.prog);
		return opt.style == XS_XFER ? 1 : 3;
	}
	in.seed = kit_get64(hdr + 8);
	announced = kit_get64(hdr + 16);
	in.mode = hdr[24];
	duplex = hdr[25];
	in.m.unchecked = in.mode == MODE_NONE; /* what the verdict line says */
	if (opt.out)
		in.out = strcmp(opt.out, "-") == 0 ? 1 :
			open(opt.out, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
	t0 = kit_now_s();
	xfer_meter_start(&in.m, "recv", fd, 0, 1, t0);
	if (duplex) {
		back.seed = in.seed ^ BACK_SEED;
		back.total = announced;
		xfer_meter_start(&back.m, "send-back", fd, 1, 0, t0);
		pthread_create(&bt, NULL, flow_send_thread, &back);
	}
	flow_recv(&in);
	t1 = kit_now_s();
	xfer_meter_stop(&in.m);
	if (duplex) {
		pthread_join(bt, NULL);
		xfer_meter_stop(&back.m);
	}
	why = in.why;
	if (!why && announced != UNKNOWN_LEN && in.bytes != announced)
		why = "stream ended early";
	if (!why && in.bad)
		why = "corrupted bytes";
	if (!why && back.why)
		why = back.why;
	/* after our own stream (duplex): what arrived, for the sender to judge */
	kit_put64(verdict, in.bytes);
	kit_put64(verdict + 8, in.bad);
	memcpy(verdict + 16, in.sha, 32);
	if (bench_write_all(fd, verdict, VERDICT_LEN, 0) < 0 && !why)
		why = "could not send the verdict";
	shutdown(fd, SHUT_WR);
	xfer_done(&in.m, in.bytes, t1 - t0, in.bad, why);
	if (in.bad)
		fprintf(stderr, "%s: %" PRIu64 " corrupted bytes\n", opt.prog, in.bad);
	last_events(&in.m);
	if (in.out > 1)
		close(in.out);
	if (!why)
		return 0;
	return opt.style == XS_XFER || in.bad ? 1 : 3;
}

static void *rx_thread(void *arg)
{
	int fd = (int)(intptr_t)arg;

	receive(fd);
	bench_close(opt.transport, fd);
	return NULL;
}

static int serve(void)
{
	struct in_addr any;
	int lfd, rc = 0;

	if (opt.bind && inet_pton(AF_INET, opt.bind, &any) != 1 && !strchr(opt.bind, ':')) {
		fprintf(stderr, "%s: --bind %s is not an IPv4 or IPv6 address\n", opt.prog, opt.bind);
		return 2;
	}
	lfd = bench_listen(opt.transport, opt.bind, opt.port);
	if (lfd < 0)
		return 3;
	if (!opt.quiet)
		fprintf(stderr, "%s: %s server listening on port %d\n", opt.prog,
			bench_transport_name(opt.transport), opt.port);
	for (;;) {
		int fd = bench_accept(opt.transport, lfd), e = errno;
		pthread_t t;

		if (fd < 0) {
			if (e == EINTR)
				continue;
			fprintf(stderr, "%s: accept: %s\n", opt.prog, strerror(e));
			/* out of connections or memory for one: the others go on, as a server's do */
			if (e == EMFILE || e == ENFILE || e == ENOBUFS || e == ENOMEM)
				continue;
			return 3;
		}
		/* ri2n-stream measures one stream at a time; ri2n-xfer serves them all */
		if (opt.once || opt.style == XS_STREAM) {
			rc = receive(fd);
			bench_close(opt.transport, fd);
			if (opt.once)
				break;
			continue;
		}
		pthread_create(&t, NULL, rx_thread, (void *)(intptr_t)fd);
		pthread_detach(t);
	}
	bench_close(opt.transport, lfd);
	return rc;
}

/* ---- sending ---- */

struct fault_job {
	double t0;
	double at[2];
	const char *cmd[2], *what[2];
};

/* Runs the fault and heal commands on schedule, printing when each ran. */
static void *fault_thread(void *arg)
{
	struct fault_job *j = arg;

	for (int i = 0; i < 2; i++) {
		double due = j->t0 + j->at[i], s, e;
		struct timespec ts;
		pid_t pid;
		int st = -1;
		char *argv[] = { "sh", "-c", (char *)j->cmd[i], NULL };

		if (!j->cmd[i] || j->at[i] < 0)
			continue;
		ts.tv_sec = (time_t)due;
		ts.tv_nsec = (long)((due - (double)ts.tv_sec) * 1e9);
		while (clock_nanosleep(CLOCK_MONOTONIC, TIMER_ABSTIME, &ts, NULL) == EINTR)
			;
		s = kit_now_s();
		if (posix_spawn(&pid, "/bin/sh", NULL, NULL, argv, environ) == 0)
			waitpid(pid, &st, 0);
		e = kit_now_s();
		pthread_mutex_lock(&opt.mu);
		fprintf(stderr, "stream fault what=%s t=%.4f mono_start=%.6f mono_end=%.6f rc=%d\n",
			j->what[i], s - j->t0, s, e, WIFEXITED(st) ? WEXITSTATUS(st) : -1);
		pthread_mutex_unlock(&opt.mu);
	}
	return NULL;
}

/* The receiver's verdict on what arrived; NULL if all is well.  *bad: its count. */
static const char *check_verdict(int fd, const flow *out, uint64_t *bad)
{
	uint8_t v[VERDICT_LEN];
	size_t got = 0;

	while (got < VERDICT_LEN) {
		ssize_t r = read(fd, v + got, VERDICT_LEN - got);

		if (r < 0 && errno == EINTR)
			continue;
		if (r < 0)
			return strerror(errno);
		if (r == 0)
			return "connection ended before the receiver's verdict";
		got += (size_t)r;
	}
	*bad = kit_get64(v + 8);
	if (kit_get64(v) != out->bytes)
		return "receiver got a different byte count";
	if (*bad != 0)
		return "receiver found corrupted bytes";
	if (out->mode == MODE_DATA && memcmp(v + 16, out->sha, 32) != 0)
		return "SHA-256 differs";
	return NULL;
}

/* Opens what --file names (MODE_DATA), or nothing; 0 or 2 (usage). */
static int open_input(flow *out)
{
	if (!opt.file)
		return 0;
	out->in = strcmp(opt.file, "-") == 0 ? 0 : open(opt.file, O_RDONLY | O_CLOEXEC);
	if (out->in < 0) {
		fprintf(stderr, "%s: %s: %s\n", opt.prog, opt.file, strerror(errno));
		return 2;
	}
	out->mode = MODE_DATA;
	out->total = UNKNOWN_LEN;
	return 0;
}

/* The return stream of --duplex, once both ends are done: NULL if it was whole. */
static const char *back_why(const flow *back, uint64_t total)
{
	if (back->why)
		return back->why;
	if (back->bad)
		return "corrupted bytes in the return stream";
	if (back->bytes != total)
		return "return stream ended early";
	return NULL;
}

static int send_stream(const char *host, uint64_t total)
{
	uint8_t hdr[HDR_LEN] = { 0 };
	flow out = { .in = -1, .out = -1, .seed = opt.seed, .total = total,
		     .seconds = opt.seconds, .mode = opt.verify ? MODE_PATTERN : MODE_NONE };
	flow back = { .in = -1, .out = -1 };
	struct fault_job fj = { .at = { opt.fault_at, opt.heal_at },
				.cmd = { opt.fault_cmd, opt.heal_cmd }, .what = { "fault", "heal" } };
	int faults = (opt.fault_cmd && opt.fault_at >= 0) || (opt.heal_cmd && opt.heal_at >= 0);
	pthread_t bt, ft;
	const char *why = NULL;
	uint64_t bad = 0;
	int fd, rc;
	double t1;

	if (open_input(&out))
		return 2;
	if (opt.seconds > 0)
		out.total = UNKNOWN_LEN;
	fd = bench_connect(opt.transport, host, opt.port);
	if (fd < 0) {
		if (opt.style == XS_STREAM)
			xfer_done(&(xfer_meter){ .role = "send" }, 0, 0, 0, "connect-failed");
		return 3;
	}
	out.fd = fd;
	memcpy(hdr, MAGIC, 8);
	kit_put64(hdr + 8, opt.seed);
	kit_put64(hdr + 16, out.total);
	hdr[24] = (uint8_t)out.mode;
	hdr[25] = (uint8_t)opt.duplex;
	if (bench_write_all(fd, hdr, HDR_LEN, 0) < 0)
		out.why = strerror(errno);
	fj.t0 = kit_now_s();
	out.m.unchecked = out.mode == MODE_NONE;
	xfer_meter_start(&out.m, "send", fd, 1, 1, fj.t0);
	if (opt.duplex) {
		back = (flow){ .fd = fd, .in = -1, .out = -1, .seed = opt.seed ^ BACK_SEED,
			       .total = total };
		xfer_meter_start(&back.m, "recv-back", fd, 0, 0, fj.t0);
		pthread_create(&bt, NULL, flow_recv_thread, &back);
	}
	if (faults)
		pthread_create(&ft, NULL, fault_thread, &fj);
	flow_send(&out);
	shutdown(fd, SHUT_WR);
	if (opt.duplex) {
		pthread_join(bt, NULL);
		why = back_why(&back, total);
	}
	if (!why)
		why = out.why;
	if (!why)
		why = check_verdict(fd, &out, &bad);
	t1 = kit_now_s();
	xfer_meter_stop(&out.m);
	if (opt.duplex)
		xfer_meter_stop(&back.m);
	if (faults)
		pthread_join(ft, NULL);
	xfer_done(&out.m, out.bytes, t1 - fj.t0, bad, why);
	if (opt.duplex)
		xfer_done(&back.m, back.bytes, t1 - fj.t0, back.bad, back_why(&back, total));
	bench_close(opt.transport, fd);
	last_events(&out.m);
	if (out.in > 0)
		close(out.in);
	if (!why)
		return 0;
	/* the bytes were wrong (1), or the connection failed (3) */
	rc = strstr(why, "corrupt") || strstr(why, "different") || strstr(why, "SHA") ||
	     (opt.style == XS_XFER && strstr(why, "receiver"));
	return rc ? 1 : 3;
}

/* ---- the command line ---- */

static uint64_t size_arg(const char *s)
{
	int64_t v = kit_parse_size(s);

	if (v < 0)
		die_usage();
	return (uint64_t)v;
}

/* Parses argv[2..]; returns the first word that is not an option (HOST) and the second (BYTES). */
static void parse(int argc, char **argv, const char **host, const char **bytes)
{
	for (int i = 2; i < argc; i++) {
		const char *a = argv[i];

		help_or_version(a);
#define NEXT (i + 1 < argc ? argv[++i] : (die_usage(), ""))
		if (!strcmp(a, "--tcp")) opt.transport = BT_TCP;
		else if (!strcmp(a, "--ri2n")) opt.transport = BT_RI2N;
		else if (!strcmp(a, "--port")) opt.port = atoi(NEXT);
		else if (!strcmp(a, "--bind")) opt.bind = NEXT;
		else if (!strcmp(a, "--once")) opt.once = 1;
		else if (!strcmp(a, "--out")) opt.out = NEXT;
		else if (!strcmp(a, "--seed")) opt.seed = strtoull(NEXT, NULL, 0);
		else if (!strcmp(a, "--file")) opt.file = NEXT;
		else if (!strcmp(a, "--duplex")) opt.duplex = 1;
		else if (!strcmp(a, "--seconds")) opt.seconds = atof(NEXT);
		else if (!strcmp(a, "--bytes")) opt.bytes = size_arg(NEXT);
		else if (!strcmp(a, "--block")) opt.block = (size_t)size_arg(NEXT);
		else if (!strcmp(a, "--no-verify")) opt.verify = 0;
		else if (!strcmp(a, "--fault-at")) opt.fault_at = atof(NEXT);
		else if (!strcmp(a, "--fault-cmd")) opt.fault_cmd = NEXT;
		else if (!strcmp(a, "--heal-at")) opt.heal_at = atof(NEXT);
		else if (!strcmp(a, "--heal-cmd")) opt.heal_cmd = NEXT;
		else if (!strcmp(a, "--interval")) opt.interval_ms = atoi(NEXT);
		else if (!strcmp(a, "--csv")) opt.csv_path = NEXT;
		else if (!strcmp(a, "--rails")) opt.nrails = atoi(NEXT);
		else if (!strcmp(a, "--quiet")) opt.quiet = 1;
		else if (a[0] == '-' && a[1]) die_usage();
		else if (!*host) *host = a;
		else if (!*bytes) *bytes = a;
		else die_usage();
#undef NEXT
	}
}

/* `stamp`: stdin to stdout, each line after the time it was read. */
static int stamp(void)
{
	char line[4096];

	setvbuf(stdout, NULL, _IOLBF, 0);
	while (fgets(line, sizeof(line), stdin))
		printf("%.6f %s%s", kit_now_s(), line, strchr(line, '\n') ? "" : "\n");
	return 0;
}

int main(int argc, char **argv)
{
	const char *cmd, *host = NULL, *bytes = NULL;
	int stream = strcmp(basename(argv[0]), "ri2n-stream") == 0, rc;

	opt.style = stream ? XS_STREAM : XS_XFER;
	opt.prog = stream ? "ri2n-stream" : "ri2n-xfer";
	opt.port = stream ? 7200 : 7000;
	opt.block = stream ? 128 << 10 : 256 << 10;
	if (argc < 2)
		die_usage();
	cmd = argv[1];
	help_or_version(cmd);
	parse(argc, argv, &host, &bytes);
	if (!strcmp(cmd, "clock")) {
		printf("%.6f\n", kit_now_s());
		return 0;
	}
	if (!strcmp(cmd, "stamp"))
		return stamp();
	if (opt.port <= 0 || opt.port > 65535 || opt.interval_ms <= 0 || opt.block < 1 ||
	    opt.block > (64u << 20) || opt.nrails < 0 || opt.nrails > RI2N_MAX_RAILS)
		die_usage();
	if (bytes)
		opt.bytes = size_arg(bytes);
	if (opt.duplex && (!opt.bytes || opt.file || opt.seconds > 0)) {
		fprintf(stderr, "%s: --duplex needs BYTES (not --file or --seconds)\n", opt.prog);
		return 2;
	}
	if (sodium_init() < 0)
		return 3;
	xfer_signals();
	if (xfer_csv_open() < 0)
		return 2;
	if (!strcmp(cmd, "serve") && !host)
		rc = serve();
	else if (!strcmp(cmd, "send") && host && (opt.bytes || opt.file || opt.seconds > 0))
		rc = send_stream(host, opt.seconds > 0 || opt.file ? UNKNOWN_LEN : opt.bytes);
	else
		die_usage();
	if (opt.csv)
		fclose(opt.csv);
	return rc;
}
