/*
 * ri2n-stream - a one-way burst transfer that prints the receiver's
 * throughput every 100 ms (the program behind the RI2N/UDP paper's Fig. 5),
 * over ri2n or over TCP with the same code, so that MPTCP runs it too:
 * `mptcpize run ri2n-stream ... --tcp` turns its TCP sockets into MPTCP ones.
 *
 *   ri2n-stream serve [--tcp] [--port P] [--bind ADDR] [--once] [common]
 *   ri2n-stream send HOST [--tcp] [--port P] (--seconds S | --bytes N) [--seed N]
 *               [--block B] [--no-verify]
 *               [--fault-at S --fault-cmd CMD] [--heal-at S --heal-cmd CMD] [common]
 *   common: [--csv FILE] [--interval MS] [--rails N] [--quiet]
 *   ri2n-stream clock      prints CLOCK_MONOTONIC in seconds
 *   ri2n-stream stamp      copies stdin to stdout, each line prefixed with the
 *                          CLOCK_MONOTONIC time it was read (e.g. behind `nft monitor`,
 *                          to know when a fault's rule went in)
 *
 * The sender streams a seeded pattern that the receiver checks byte for byte
 * (--no-verify: a constant buffer, nothing checked, for CPU-bound runs); at
 * the end the receiver sends back what it counted and both print a verdict.
 *
 * Every interval (100 ms, on a fixed schedule from a thread of its own, so
 * that a stall shows as empty intervals rather than one long one) each side
 * prints and writes to its CSV: the time since the start, CLOCK_MONOTONIC,
 * the goodput over the interval, the bytes so far, and per rail:
 *  - ri2n: the rail's state (U up, D down) and, from ri2n_stats(), the bytes
 *    and DATA packets the rail carried in the interval (received at the
 *    receiver, sent at the sender);
 *  - MPTCP: a subflow is on rail R when the sender's (the client's) address is
 *    in 198.18.R.0/24 (the test bed's plan: a subflow endpoint is bound to its
 *    rail's device even when it goes to the server's rail-1 address) or,
 *    elsewhere, in the order subflows appear;
 *    its state is S (a subflow exists) or '.', and bytes and segments come
 *    from each subflow's tcp_info (getsockopt MPTCP_TCPINFO): received at the
 *    receiver, acknowledged at the sender;
 *  - plain TCP: the connection is one subflow, on its rail.
 * Rail events of ri2n (ri2n_read_event) are printed with ri2n's own
 * CLOCK_MONOTONIC timestamps.
 *
 * --fault-at S / --heal-at S: the sender runs CMD with /bin/sh S seconds after
 * its start (e.g. `ri2n-testbed --tag x fault blackhole 1 2 on`), in a thread
 * of its own, and prints when the command started and ended.
 *
 * Lines (stderr; --quiet leaves out the per-interval ones):
 *   stream t=1.200 mono=5123.456789 mbps=1874.21 bytes=281372672 rails=UU rail_mbps=937.1;937.1 rail_pkts=81234;81230
 *   stream event role=recv mono=5124.123456 t=1.9000 rail=1 down cause="receive count below threshold"
 *   stream fault what=fault t=3.0001 mono_start=5125.300000 mono_end=5125.318000 rc=0
 * and on stdout at the end:
 *   stream done role=recv transport=ri2n bytes=... seconds=... mbps=... verified=yes bad=0 cpu_user=... cpu_sys=...
 * CSV (--csv): role,t,mono,mbps,bytes,rails,rail_mbps,rail_pkts (per-rail values ';'-separated).
 * Exit status: 0 all verified, 1 verification failed, 2 usage, 3 connection failed.
 */
#define _GNU_SOURCE
#include <arpa/inet.h>
#include <errno.h>
#include <inttypes.h>
#include <linux/tcp.h>
#include <pthread.h>
#include <signal.h>
#include <spawn.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "bench_common.h"
#include "ri2n.h"

#ifndef SOL_MPTCP
#define SOL_MPTCP 284
#endif
#ifndef IPPROTO_MPTCP
#define IPPROTO_MPTCP 262
#endif
#define BS_MPTCP_TCPINFO 2       /* linux/mptcp.h, spelled out: that header fights netinet/in.h */
#define BS_MPTCP_SUBFLOW_ADDRS 3
#define MAX_SUBFLOWS 16

#define MAGIC "RI2NST01"
#define HDR_LEN 32
#define VERDICT_LEN 16
#define UNKNOWN_LEN UINT64_MAX

extern char **environ;

static struct {
	int transport, port, once, interval_ms, quiet, verify, nrails_opt;
	double seconds, fault_at, heal_at;
	uint64_t bytes, seed;
	size_t block;
	const char *bind, *csv_path, *fault_cmd, *heal_cmd;
	FILE *csv;
	pthread_mutex_t mu;
} opt = { .transport = BT_RI2N, .port = 7200, .interval_ms = 100, .verify = 1, .seed = 1,
	  .block = 128 << 10, .fault_at = -1, .heal_at = -1, .mu = PTHREAD_MUTEX_INITIALIZER };

static void print_usage(FILE *f)
{
	fprintf(f,
		"usage: ri2n-stream serve [--tcp] [--port P] [--bind ADDR] [--once] [common]\n"
		"       ri2n-stream send HOST [--tcp] [--port P] (--seconds S | --bytes N) [--seed N]\n"
		"                   [--block B] [--no-verify] [--fault-at S --fault-cmd CMD]\n"
		"                   [--heal-at S --heal-cmd CMD] [common]\n"
		"       common: [--csv FILE] [--interval MS] [--rails N] [--quiet]\n"
		"       ri2n-stream clock | stamp\n"
		"       ri2n-stream --help | --version\n"
		"--ri2n (the default) names the transport explicitly.\n"
		"See the top of ri2n-stream.c for the output.\n");
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
		printf("ri2n-stream %s\n", ri2n_version());
		exit(0);
	}
}

/* ---- per-rail accounting ---- */

/* One TCP subflow (or the TCP connection) as last seen. */
struct subflow {
	struct sockaddr_in local, remote;
	uint64_t bytes, segs;
	int seen;
};

typedef struct meter {
	const char *role;
	int fd, sender, mptcp;
	double t0, last_t;
	_Atomic uint64_t bytes;  /* moved so far, written by the data thread */
	uint64_t last_bytes;
	int nrails;
	uint64_t last_rb[RI2N_MAX_RAILS], last_rp[RI2N_MAX_RAILS];
	struct subflow sf[MAX_SUBFLOWS];
	int nsf;
	_Atomic int stop;
	pthread_t thr;
} meter;

struct bs_subflow_data {
	uint32_t size_subflow_data, num_subflows, size_kernel, size_user;
} __attribute__((aligned(8)));

struct bs_subflow_addrs {
	struct sockaddr_storage local, remote;
};

/* Rail (0-based) of a local address: 198.18.R.x is rail R-1 (the test bed's plan). */
static int rail_of(const struct sockaddr_in *a)
{
	uint32_t ip = ntohl(a->sin_addr.s_addr);

	if ((ip >> 16) == (198u << 8 | 18u) && ((ip >> 8) & 0xff) >= 1 &&
	    ((ip >> 8) & 0xff) <= RI2N_MAX_RAILS)
		return (int)((ip >> 8) & 0xff) - 1;
	return -1;
}

static int same_flow(const struct subflow *s, const struct sockaddr_in *l,
		     const struct sockaddr_in *r)
{
	return s->local.sin_addr.s_addr == l->sin_addr.s_addr && s->local.sin_port == l->sin_port &&
	       s->remote.sin_addr.s_addr == r->sin_addr.s_addr && s->remote.sin_port == r->sin_port;
}

/*
 * Reads the connection's subflows (MPTCP: every subflow; TCP: the connection itself) into
 * loc/rem/ti; returns how many, 0 if the kernel would not say.
 */
static int read_subflows(const meter *m, struct sockaddr_in *loc, struct sockaddr_in *rem,
			 struct tcp_info *ti)
{
	socklen_t l1 = sizeof(loc[0]), l2 = sizeof(rem[0]), l3 = sizeof(ti[0]);
	struct {
		struct bs_subflow_data h;
		struct tcp_info t[MAX_SUBFLOWS];
	} bi;
	struct {
		struct bs_subflow_data h;
		struct bs_subflow_addrs a[MAX_SUBFLOWS];
	} ba;
	socklen_t li = sizeof(bi), la = sizeof(ba);
	int n;

	if (!m->mptcp) {
		if (getsockname(m->fd, (struct sockaddr *)&loc[0], &l1) < 0 ||
		    getpeername(m->fd, (struct sockaddr *)&rem[0], &l2) < 0 ||
		    getsockopt(m->fd, IPPROTO_TCP, TCP_INFO, &ti[0], &l3) < 0)
			return 0;
		return 1;
	}
	memset(&bi, 0, sizeof(bi));
	memset(&ba, 0, sizeof(ba));
	bi.h.size_subflow_data = sizeof(bi.h);
	bi.h.size_user = sizeof(struct tcp_info);
	ba.h.size_subflow_data = sizeof(ba.h);
	ba.h.size_user = sizeof(struct bs_subflow_addrs);
	if (getsockopt(m->fd, SOL_MPTCP, BS_MPTCP_TCPINFO, &bi, &li) < 0 ||
	    getsockopt(m->fd, SOL_MPTCP, BS_MPTCP_SUBFLOW_ADDRS, &ba, &la) < 0)
		return 0;
	/* both lists walk the connection's subflows in the same order */
	n = (int)(bi.h.num_subflows < ba.h.num_subflows ? bi.h.num_subflows : ba.h.num_subflows);
	n = n > MAX_SUBFLOWS ? MAX_SUBFLOWS : n;
	for (int i = 0; i < n; i++) {
		ti[i] = bi.t[i];
		memcpy(&loc[i], &ba.a[i].local, sizeof(loc[i]));
		memcpy(&rem[i], &ba.a[i].remote, sizeof(rem[i]));
	}
	return n;
}

/*
 * Adds each TCP subflow's bytes and segments since the last call to rb/rp
 * (per rail) and marks the rails that have a subflow in state[].
 */
static void tcp_rails(meter *m, uint64_t *rb, uint64_t *rp, char *state)
{
	struct sockaddr_in loc[MAX_SUBFLOWS], rem[MAX_SUBFLOWS];
	struct tcp_info ti[MAX_SUBFLOWS];
	int n;

	memset(ti, 0, sizeof(ti));
	n = read_subflows(m, loc, rem, ti);
	if (n == 0)
		return;
	for (int k = 0; k < m->nsf; k++)
		m->sf[k].seen = 0;
	for (int i = 0; i < n; i++) {
		uint64_t b = m->sender ? ti[i].tcpi_bytes_acked : ti[i].tcpi_bytes_received;
		uint64_t s = m->sender ? ti[i].tcpi_data_segs_out : ti[i].tcpi_data_segs_in;
		struct subflow *f = NULL;
		int r;

		for (int k = 0; k < m->nsf && !f; k++)
			if (same_flow(&m->sf[k], &loc[i], &rem[i]))
				f = &m->sf[k];
		if (!f && m->nsf < MAX_SUBFLOWS) {
			f = &m->sf[m->nsf++];
			*f = (struct subflow){ .local = loc[i], .remote = rem[i] };
		}
		if (!f)
			continue;
		f->seen = 1;
		/* the client's (sender's) end names the rail: its subflows are bound to the
		 * rail's device, while the server's end may be the address it was reached at */
		r = rail_of(m->sender ? &loc[i] : &rem[i]);
		if (r < 0)
			r = (int)(f - m->sf) % RI2N_MAX_RAILS;
		if (r >= m->nrails)
			m->nrails = r + 1;
		if (b >= f->bytes)
			rb[r] += b - f->bytes;
		if (s >= f->segs)
			rp[r] += s - f->segs;
		state[r] = 'S';
		f->bytes = b;
		f->segs = s;
	}
	/* subflows gone: forget them (the slot may be reused by a new one) */
	for (int k = 0; k < m->nsf;)
		if (!m->sf[k].seen)
			m->sf[k] = m->sf[--m->nsf];
		else
			k++;
}

static void ri2n_events(meter *m)
{
	struct ri2n_event e;
	static const char *const names[] = { "?", "connected", "down", "up", "closed", "failed" };

	while (ri2n_read_event(&e) == 1) {
		const char *name = e.type >= 1 && e.type <= 5 ? names[e.type] : "?";
		double mono = (double)e.time_ns / 1e9;

		if (e.missed)
			fprintf(stderr, "stream event missed=%" PRIu64 "\n", e.missed);
		if (e.rail >= 0)
			fprintf(stderr, "stream event role=%s mono=%.6f t=%.4f rail=%d %s cause=\"%s\"\n",
				m->role, mono, mono - m->t0, e.rail, name, e.cause);
		else
			fprintf(stderr, "stream event role=%s mono=%.6f t=%.4f conn %s%s%s cause=\"%s\"\n",
				m->role, mono, mono - m->t0, name, e.error ? " error=" : "",
				e.error ? strerror(e.error) : "", e.cause);
	}
}

/* One interval's line and CSV row. */
static void meter_tick(meter *m, double t)
{
	uint64_t bytes = atomic_load(&m->bytes), rb[RI2N_MAX_RAILS] = { 0 },
		 rp[RI2N_MAX_RAILS] = { 0 };
	char state[RI2N_MAX_RAILS + 1], rmb[RI2N_MAX_RAILS * 16] = "", rpk[RI2N_MAX_RAILS * 24] = "";
	double dt = t - m->last_t, mbps = dt > 0 ? (double)(bytes - m->last_bytes) * 8 / dt / 1e6 : 0;
	size_t a = 0, b = 0;

	memset(state, '.', sizeof(state));
	pthread_mutex_lock(&opt.mu);
	if (opt.transport == BT_RI2N) {
		struct ri2n_stats st;

		ri2n_events(m);
		if (ri2n_stats(m->fd, &st) == 0) {
			m->nrails = st.nrails;
			for (int i = 0; i < st.nrails; i++) {
				const struct ri2n_rail_stats *r = &st.rail[i];
				uint64_t cb = m->sender ? r->tx_bytes : r->rx_bytes;
				uint64_t cp = m->sender ? r->tx_data : r->rx_data;

				state[i] = r->up ? 'U' : 'D';
				rb[i] = cb - m->last_rb[i];
				rp[i] = cp - m->last_rp[i];
				m->last_rb[i] = cb;
				m->last_rp[i] = cp;
			}
		}
	} else {
		tcp_rails(m, rb, rp, state);
	}
	state[m->nrails] = 0;
	for (int i = 0; i < m->nrails; i++) {
		a += (size_t)snprintf(rmb + a, sizeof(rmb) - a, "%s%.1f", i ? ";" : "",
				      dt > 0 ? (double)rb[i] * 8 / dt / 1e6 : 0);
		b += (size_t)snprintf(rpk + b, sizeof(rpk) - b, "%s%" PRIu64, i ? ";" : "", rp[i]);
	}
	if (!opt.quiet)
		fprintf(stderr, "stream t=%.3f mono=%.6f mbps=%.2f bytes=%" PRIu64
			" rails=%s rail_mbps=%s rail_pkts=%s\n", t - m->t0, t, mbps, bytes,
			m->nrails ? state : "-", rmb, rpk);
	if (opt.csv)
		fprintf(opt.csv, "%s,%.3f,%.6f,%.2f,%" PRIu64 ",%s,%s,%s\n", m->role, t - m->t0, t,
			mbps, bytes, m->nrails ? state : "-", rmb, rpk);
	pthread_mutex_unlock(&opt.mu);
	m->last_t = t;
	m->last_bytes = bytes;
}

/* Ticks on an absolute schedule: interval k ends at t0 + k * interval. */
static void *meter_thread(void *arg)
{
	meter *m = arg;
	struct timespec ts;
	uint64_t k = 1;

	while (!m->stop) {
		double due = m->t0 + (double)k * opt.interval_ms / 1e3;

		ts.tv_sec = (time_t)due;
		ts.tv_nsec = (long)((due - (double)ts.tv_sec) * 1e9);
		while (clock_nanosleep(CLOCK_MONOTONIC, TIMER_ABSTIME, &ts, NULL) == EINTR &&
		       !m->stop)
			;
		if (m->stop)
			break;
		meter_tick(m, bench_now_s());
		k++;
	}
	return NULL;
}

static void meter_start(meter *m, const char *role, int fd, int sender)
{
	int proto = 0;
	socklen_t pl = sizeof(proto);

	m->role = role;
	m->fd = fd;
	m->sender = sender;
	if (opt.transport == BT_TCP && getsockopt(fd, SOL_SOCKET, SO_PROTOCOL, &proto, &pl) == 0)
		m->mptcp = proto == IPPROTO_MPTCP;
	m->nrails = opt.nrails_opt;
	m->t0 = m->last_t = bench_now_s();
	if (opt.transport != BT_RI2N) {   /* a first look: the counters start from here */
		uint64_t rb[RI2N_MAX_RAILS] = { 0 }, rp[RI2N_MAX_RAILS] = { 0 };
		char st[RI2N_MAX_RAILS + 1];

		tcp_rails(m, rb, rp, st);
	}
	pthread_create(&m->thr, NULL, meter_thread, m);
}

static void meter_stop(meter *m)
{
	m->stop = 1;
	pthread_kill(m->thr, SIGURG); /* out of its sleep (the handler does nothing) */
	pthread_join(m->thr, NULL);
	meter_tick(m, bench_now_s()); /* the last, partial interval */
}

static void on_sigurg(int sig)
{
	(void)sig;
}

static void done_line(const char *role, uint64_t bytes, double secs, int ok, uint64_t bad,
		      const char *why, const char *proto)
{
	struct rusage ru;

	getrusage(RUSAGE_SELF, &ru);
	pthread_mutex_lock(&opt.mu);
	printf("stream done role=%s transport=%s bytes=%" PRIu64 " seconds=%.3f mbps=%.2f "
	       "verified=%s bad=%" PRIu64 " cpu_user=%.3f cpu_sys=%.3f%s%s\n",
	       role, proto, bytes, secs, secs > 0 ? (double)bytes * 8 / secs / 1e6 : 0,
	       ok ? (opt.verify ? "yes" : "unchecked") : "no", bad,
	       (double)ru.ru_utime.tv_sec + (double)ru.ru_utime.tv_usec / 1e6,
	       (double)ru.ru_stime.tv_sec + (double)ru.ru_stime.tv_usec / 1e6,
	       why ? " reason=" : "", why ? why : "");
	fflush(stdout);
	pthread_mutex_unlock(&opt.mu);
}

static const char *proto_name(const meter *m)
{
	return opt.transport == BT_RI2N ? "ri2n" : m->mptcp ? "mptcp" : "tcp";
}

/* ---- receiver ---- */

static int receive(int fd)
{
	uint8_t hdr[HDR_LEN], verdict[VERDICT_LEN];
	uint8_t *buf = malloc(opt.block);
	meter m = { 0 };
	uint64_t seed, bytes = 0, bad = 0;
	const char *why = NULL;
	int verify;
	double t1;

	if (!buf || bench_read_full(fd, hdr, HDR_LEN, 0) < 0 || memcmp(hdr, MAGIC, 8) != 0) {
		fprintf(stderr, "ri2n-stream: not a ri2n-stream sender (bad or missing header)\n");
		free(buf);
		return 3;
	}
	seed = bench_get64(hdr + 8);
	verify = hdr[24];
	meter_start(&m, "recv", fd, 0);
	for (;;) {
		ssize_t n = read(fd, buf, opt.block);

		if (n < 0 && errno == EINTR)
			continue;
		if (n < 0) {
			why = strerror(errno);
			break;
		}
		if (n == 0)
			break;
		if (verify)
			bad += bench_pattern_check(buf, seed, bytes, (size_t)n);
		bytes += (uint64_t)n;
		atomic_store(&m.bytes, bytes);
	}
	t1 = bench_now_s();
	meter_stop(&m);
	bench_put64(verdict, bytes);
	bench_put64(verdict + 8, bad);
	if (!why && bench_write_all(fd, verdict, VERDICT_LEN, 0) < 0)
		why = "could not send the verdict";
	shutdown(fd, SHUT_WR);
	if (!why && bad)
		why = "corrupted-bytes";
	opt.verify = verify;
	done_line("recv", bytes, t1 - m.t0, !why, bad, why, proto_name(&m));
	if (opt.transport == BT_RI2N) {
		usleep(20000);
		pthread_mutex_lock(&opt.mu);
		ri2n_events(&m);
		pthread_mutex_unlock(&opt.mu);
	}
	free(buf);
	return why ? (bad ? 1 : 3) : 0;
}

static int serve(void)
{
	int lfd = bench_listen(opt.transport, opt.bind, opt.port), rc = 0;

	if (lfd < 0)
		return 3;
	if (!opt.quiet)
		fprintf(stderr, "ri2n-stream: %s server on port %d\n", bench_transport_name(opt.transport),
			opt.port);
	for (;;) {
		int fd = bench_accept(opt.transport, lfd);

		if (fd < 0) {
			if (errno == EINTR)
				continue;
			perror("ri2n-stream: accept");
			return 3;
		}
		rc = receive(fd);
		bench_close(opt.transport, fd);
		if (opt.once)
			break;
	}
	bench_close(opt.transport, lfd);
	return rc;
}

/* ---- sender ---- */

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
		s = bench_now_s();
		if (posix_spawn(&pid, "/bin/sh", NULL, NULL, argv, environ) == 0)
			waitpid(pid, &st, 0);
		e = bench_now_s();
		pthread_mutex_lock(&opt.mu);
		fprintf(stderr, "stream fault what=%s t=%.4f mono_start=%.6f mono_end=%.6f rc=%d\n",
			j->what[i], s - j->t0, s, e, WIFEXITED(st) ? WEXITSTATUS(st) : -1);
		pthread_mutex_unlock(&opt.mu);
	}
	return NULL;
}

static int send_stream(const char *host)
{
	uint8_t hdr[HDR_LEN] = { 0 }, verdict[VERDICT_LEN] = { 0 };
	uint8_t *buf = malloc(opt.block);
	uint64_t total = opt.seconds > 0 ? UNKNOWN_LEN : opt.bytes, bytes = 0;
	struct fault_job fj = { .at = { opt.fault_at, opt.heal_at },
				.cmd = { opt.fault_cmd, opt.heal_cmd }, .what = { "fault", "heal" } };
	pthread_t ft;
	int fd, rc = 0, faults = (opt.fault_cmd && opt.fault_at >= 0) ||
			     (opt.heal_cmd && opt.heal_at >= 0);
	meter m = { 0 };
	const char *why = NULL;
	double stop, t1;

	if (!buf)
		return 3;
	fd = bench_connect(opt.transport, host, opt.port);
	if (fd < 0) {
		done_line("send", 0, 0, 0, 0, "connect-failed", bench_transport_name(opt.transport));
		return 3;
	}
	memcpy(hdr, MAGIC, 8);
	bench_put64(hdr + 8, opt.seed);
	bench_put64(hdr + 16, total);
	hdr[24] = (uint8_t)opt.verify;
	if (!opt.verify)
		memset(buf, 0x5a, opt.block);
	if (bench_write_all(fd, hdr, HDR_LEN, 0) < 0)
		why = strerror(errno);
	meter_start(&m, "send", fd, 1);
	stop = opt.seconds > 0 ? m.t0 + opt.seconds : 0;
	fj.t0 = m.t0;
	if (faults)
		pthread_create(&ft, NULL, fault_thread, &fj);
	while (!why && bytes < total && !(stop && bench_now_s() >= stop)) {
		size_t n = total - bytes < opt.block ? (size_t)(total - bytes) : opt.block;

		if (opt.verify)
			bench_pattern_fill(buf, opt.seed, bytes, n);
		if (bench_write_all(fd, buf, n, 0) < 0) {
			why = strerror(errno);
			break;
		}
		bytes += n;
		atomic_store(&m.bytes, bytes);
	}
	shutdown(fd, SHUT_WR);
	if (!why) {
		if (bench_read_full(fd, verdict, VERDICT_LEN, 0) < 0)
			why = "no-verdict-from-the-receiver";
		else if (bench_get64(verdict) != bytes)
			why = "receiver-got-a-different-byte-count";
		else if (bench_get64(verdict + 8) != 0)
			why = "receiver-found-corrupted-bytes";
	}
	t1 = bench_now_s();
	meter_stop(&m);
	if (faults)
		pthread_join(ft, NULL);
	done_line("send", bytes, t1 - m.t0, !why, why ? bench_get64(verdict + 8) : 0, why,
		  proto_name(&m));
	if (why)
		rc = strstr(why, "corrupt") || strstr(why, "different") ? 1 : 3;
	bench_close(opt.transport, fd);
	if (opt.transport == BT_RI2N) {
		usleep(20000); /* the engine reports the close right after the last ACK */
		pthread_mutex_lock(&opt.mu);
		ri2n_events(&m);
		pthread_mutex_unlock(&opt.mu);
	}
	free(buf);
	return rc;
}

int main(int argc, char **argv)
{
	const char *cmd, *host = NULL;
	struct sigaction sa = { .sa_handler = on_sigurg };
	int rc;

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
		else if (!strcmp(a, "--ri2n"))
			opt.transport = BT_RI2N;
		else if (!strcmp(a, "--port"))
			opt.port = atoi(NEXT);
		else if (!strcmp(a, "--bind"))
			opt.bind = NEXT;
		else if (!strcmp(a, "--once"))
			opt.once = 1;
		else if (!strcmp(a, "--seconds"))
			opt.seconds = atof(NEXT);
		else if (!strcmp(a, "--bytes"))
			opt.bytes = (uint64_t)bench_parse_size(NEXT);
		else if (!strcmp(a, "--seed"))
			opt.seed = strtoull(NEXT, NULL, 0);
		else if (!strcmp(a, "--block"))
			opt.block = (size_t)bench_parse_size(NEXT);
		else if (!strcmp(a, "--no-verify"))
			opt.verify = 0;
		else if (!strcmp(a, "--fault-at"))
			opt.fault_at = atof(NEXT);
		else if (!strcmp(a, "--fault-cmd"))
			opt.fault_cmd = NEXT;
		else if (!strcmp(a, "--heal-at"))
			opt.heal_at = atof(NEXT);
		else if (!strcmp(a, "--heal-cmd"))
			opt.heal_cmd = NEXT;
		else if (!strcmp(a, "--csv"))
			opt.csv_path = NEXT;
		else if (!strcmp(a, "--interval"))
			opt.interval_ms = atoi(NEXT);
		else if (!strcmp(a, "--rails"))
			opt.nrails_opt = atoi(NEXT);
		else if (!strcmp(a, "--quiet"))
			opt.quiet = 1;
		else if (a[0] == '-' && a[1])
			usage();
		else if (!host)
			host = a;
		else
			usage();
#undef NEXT
	}
	if (!strcmp(cmd, "clock")) {
		printf("%.6f\n", bench_now_s());
		return 0;
	}
	if (!strcmp(cmd, "stamp")) {
		char line[4096];

		setvbuf(stdout, NULL, _IOLBF, 0);
		while (fgets(line, sizeof(line), stdin))
			printf("%.6f %s%s", bench_now_s(), line, strchr(line, '\n') ? "" : "\n");
		return 0;
	}
	if (opt.port <= 0 || opt.port > 65535 || opt.interval_ms <= 0 || opt.block < 1 ||
	    opt.block > (64u << 20) || opt.nrails_opt < 0 || opt.nrails_opt > RI2N_MAX_RAILS)
		usage();
	signal(SIGPIPE, SIG_IGN);
	sigaction(SIGURG, &sa, NULL);
	if (opt.csv_path) {
		opt.csv = fopen(opt.csv_path, "w");
		if (!opt.csv) {
			perror(opt.csv_path);
			return 2;
		}
		setvbuf(opt.csv, NULL, _IOLBF, 0);
		fprintf(opt.csv, "role,t,mono,mbps,bytes,rails,rail_mbps,rail_pkts\n");
	}
	if (!strcmp(cmd, "serve") && !host)
		rc = serve();
	else if (!strcmp(cmd, "send") && host && (opt.seconds > 0 || opt.bytes > 0))
		rc = send_stream(host);
	else
		usage();
	if (opt.csv)
		fclose(opt.csv);
	return rc;
}
