/*
 * ri2n-conns - many ri2n connections in one process: what each costs in
 * memory and descriptors, idle and busy.
 *
 *   ri2n-conns serve [--port P] [--bind ADDR]
 *   ri2n-conns run HOST [--port P] [--conns N] [--busy B] [--bytes SIZE]
 *              [--idle S] [--rest S] [--batch K] [--csv FILE]
 *              [--probes K --hole-cmd CMD [--hole-wait S]]
 *
 * The client (run) opens N ri2n connections (default 10000) to the server,
 * K handshakes at a time (default 256).  On each it writes an 8-byte hello
 * (the connection's index) that the server echoes back, so every connection
 * has carried data both ways before it goes quiet.  Then:
 *
 *   idle   all N held idle for S seconds (default 5; keepalives run), then
 *          both processes measure themselves;
 *   hole   with --probes K: CMD (a shell command) black-holes a rail while
 *          all are idle; once the connection that reported it down has it
 *          down both ways, in both processes (at most --hole-wait S, default
 *          30), K connections spread over the set each write 8 pattern bytes,
 *          one at a time, and wait for the server's echo (conns_hole.h).
 *          Neither the probe nor its echo may have gone onto the dead rail or
 *          been resent, by both processes' counters (ri2n_stats);
 *   busy   the first B connections (default 100) each stream SIZE bytes
 *          (default 8 MiB) of a seeded pattern that the server checks byte
 *          for byte; both measure again once the server has verified all;
 *   rest   with --rest S, everything idle again for S seconds and measured
 *          (shows whether rings shrink back).
 *
 * A measurement is the process's resident (Rss) and proportional (Pss) set
 * from /proc/self/smaps_rollup, its open descriptors (/proc/self/fd) and its
 * CPU time since the previous one.  Per connection: the Pss growth since the
 * "base" measurement divided by the connections opened since; the busy
 * figure adds each busy connection's share of the growth over the idle
 * figure.  The server's base: ri2n's engine running, its listener (and so
 * its rail sockets) open, no connection yet.  The client's: after its first
 * connection, which also opened what all of them share (its rail sockets and
 * their receive buffers); that one-time cost is its own line on stderr.  The server answers over a plain TCP
 * control connection to the same port number (ri2n uses UDP).
 *
 * Descriptors: both processes raise RLIMIT_NOFILE as far as they may (past
 * the hard limit needs CAP_SYS_RESOURCE, which a container may lack).  The
 * first connection shows what one costs on each side; if the limits cannot
 * hold N, fewer are opened and the verdict line says so (fd_limited=1,
 * wanted=N), rather than letting handshakes fail for want of a descriptor.
 *
 * Lines on stdout, one per process and phase, then the verdict:
 *   conns mem role=client phase=idle conns=10000 rss_kb=... pss_kb=... anon_kb=...
 *         fds=... cpu_pct=... secs=... pss_per_conn=... fds_per_conn=...
 *   conns probe idx=... echo_us=... dead_rail_data=0 retransmits=0 rto=0 seen_down=...
 *   conns hole rail=1 detect_s=... probes=K echoed=K echo_med_us=... echo_max_us=...
 *         rto_min_us=20000 dead_rail_data=0 retransmits=0 rto=0 seen_down=... srv_probes=K
 *         srv_dead_rail_data=0 srv_retransmits=0 srv_rto=0 verdict=ok
 *   conns done conns=10000 established=10000 failed=0 busy=100 bytes=838860800
 *         verified=yes bad=0 connect_secs=...
 * (seen_down: probed connections whose counters, ri2n_stats, had the rail
 * down for sending before their write.)
 * CSV (--csv): role,phase,conns,busy,rss_kb,pss_kb,anon_kb,fds,cpu_pct,secs,
 * pss_per_conn,rss_per_conn,fds_per_conn (per-connection figures in bytes).
 * Exit status: 0 all verified, 1 verification failed, a connection died or a
 * probe went onto the dead rail or was resent,
 * 2 usage, 3 could not connect.
 *
 * Files: the client and main here, the server in conns_srv.c, the black
 * hole's probe in conns_hole.c, measuring and the control lines in
 * conns_util.c (conns.h).
 */
#define _GNU_SOURCE
#include <errno.h>
#include <inttypes.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/epoll.h>
#include <sys/socket.h>
#include <unistd.h>

#include "bench_common.h"
#include "conns.h"
#include "conns_hole.h"
#include "ri2n.h"

#define HOLE_PROBE_LEN 8   /* a probe: pattern bytes the server echoes */
#define HOLE_ECHO_WAIT_S 10.0

struct conns_opt opt = { .port = 7300, .conns = 10000, .busy = 100, .batch = 256, .idle_s = 5,
			 .bytes = 8 << 20, .hole_wait_s = 30 };

static void print_usage(FILE *f)
{
	fprintf(f,
		"usage: ri2n-conns serve [--port P] [--bind ADDR]\n"
		"       ri2n-conns run HOST [--port P] [--conns N] [--busy B] [--bytes SIZE]\n"
		"                  [--idle S] [--rest S] [--batch K] [--csv FILE]\n"
		"                  [--probes K --hole-cmd CMD [--hole-wait S]]\n"
		"       ri2n-conns --help | --version\n"
		"See the top of ri2n-conns.c for the output.\n");
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
		printf("ri2n-conns %s\n", ri2n_version());
		exit(0);
	}
}

/* ---- client ---- */

enum { CC_CONNECTING, CC_HELLO, CC_READY, CC_DEAD };

typedef struct cconn {
	int fd, state;
	uint8_t echo[HELLO_LEN];
	unsigned echo_got;
	uint64_t sent;
} cconn;

static struct {
	int ep, ctl;
	cconn *c;
	int *slot_of_fd; /* connection index of a descriptor, -1 */
	int fd_cap;
	int ready, dead, started;
	memstat base, prev, idle;
} cli;

static void cli_dead(int i, const char *why, int err)
{
	cconn *c = &cli.c[i];

	if (c->state == CC_DEAD)
		return;
	if (cli.dead < 5)
		fprintf(stderr, "ri2n-conns: connection %d: %s%s%s\n", i, why, err ? ": " : "",
			err ? strerror(err) : "");
	if (c->state == CC_READY)
		cli.ready--;
	c->state = CC_DEAD;
	cli.dead++;
	if (c->fd >= 0)
		epoll_ctl(cli.ep, EPOLL_CTL_DEL, c->fd, NULL);
}

static int cli_track(int fd, int i)
{
	if (fd >= cli.fd_cap) {
		int cap = fd * 2 + 64;
		int *n = realloc(cli.slot_of_fd, (size_t)cap * sizeof(*n));

		if (!n)
			return -1;
		for (int k = cli.fd_cap; k < cap; k++)
			n[k] = -1;
		cli.slot_of_fd = n;
		cli.fd_cap = cap;
	}
	cli.slot_of_fd[fd] = i;
	return 0;
}

static void cli_start(int i, const struct sockaddr_in *a)
{
	cconn *c = &cli.c[i];
	struct epoll_event ev = { .events = EPOLLOUT, .data.u32 = (uint32_t)i };

	c->fd = ri2n_socket();
	if (c->fd < 0) {
		cli_dead(i, "ri2n_socket", errno);
		return;
	}
	bench_set_nonblock(c->fd, 1);
	c->state = CC_CONNECTING;
	if (cli_track(c->fd, i) < 0 ||
	    (ri2n_connect(c->fd, (const struct sockaddr *)a, sizeof(*a)) < 0 &&
	     errno != EINPROGRESS)) {
		cli_dead(i, "connect", errno);
		return;
	}
	epoll_ctl(cli.ep, EPOLL_CTL_ADD, c->fd, &ev);
}

static void cli_event(int i, uint32_t what)
{
	cconn *c = &cli.c[i];
	struct epoll_event ev = { .events = EPOLLIN, .data.u32 = (uint32_t)i };

	if (c->state == CC_CONNECTING) {
		int err = 0;
		socklen_t len = sizeof(err);
		uint8_t hello[HELLO_LEN];

		if (ri2n_getsockopt(c->fd, SOL_SOCKET, SO_ERROR, &err, &len) < 0 || err) {
			cli_dead(i, "connect", err ? err : errno);
			return;
		}
		kit_put64(hello, (uint64_t)i);
		if (write(c->fd, hello, HELLO_LEN) != HELLO_LEN) {
			cli_dead(i, "hello", errno);
			return;
		}
		c->state = CC_HELLO;
		epoll_ctl(cli.ep, EPOLL_CTL_MOD, c->fd, &ev);
		return;
	}
	if (c->state == CC_HELLO || c->state == CC_READY) {
		for (;;) {
			uint8_t buf[64];
			ssize_t n = read(c->fd, buf, sizeof(buf));

			if (n < 0 && errno == EAGAIN)
				break;
			if (n <= 0 || c->state == CC_READY) {
				/* nothing more is ever sent to an idle client connection */
				cli_dead(i, n < 0 ? "read" : n == 0 ? "end of stream" : "unexpected data",
					 n < 0 ? errno : 0);
				return;
			}
			for (ssize_t k = 0; k < n && c->echo_got < HELLO_LEN; k++)
				c->echo[c->echo_got++] = buf[k];
			if (c->echo_got == HELLO_LEN) {
				if (kit_get64(c->echo) != (uint64_t)i) {
					cli_dead(i, "wrong echo", 0);
					return;
				}
				c->state = CC_READY;
				cli.ready++;
			}
		}
	}
	(void)what;
}

/* Handles what epoll reports for up to ms milliseconds. */
static void cli_poll(int ms)
{
	struct epoll_event evs[256];
	int n = epoll_wait(cli.ep, evs, 256, ms);

	for (int k = 0; k < n; k++)
		cli_event((int)evs[k].data.u32, evs[k].events);
}

static void cli_measure(const char *phase, int busy, memstat *keep)
{
	memstat m;
	char line[512], reply[512], cmd[64];

	measure(&m);
	mem_line(line, sizeof(line), "client", phase, cli.ready, busy, &m, &cli.base, &cli.prev,
		 busy ? &cli.idle : NULL);
	snprintf(line + strlen(line), sizeof(line) - strlen(line), " open=%d dead=%d",
		 cli.ready, cli.dead);
	report(line);
	cli.prev = m;
	if (keep)
		*keep = m;
	snprintf(cmd, sizeof(cmd), "MEM %s %d", phase, cli.ready);
	if (ctl_send(cli.ctl, cmd) == 0 && ctl_recv(cli.ctl, reply, sizeof(reply)) == 0)
		report(reply);
	else
		fprintf(stderr, "ri2n-conns: the server did not answer\n");
}

/* Streams opt.bytes of pattern on connections 0..busy-1; 0 when all written. */
static int cli_stream(int busy)
{
	uint8_t *buf = malloc(CHUNK);
	int left = busy, rc = 0;
	double deadline = kit_now_s() + CTL_WAIT_S;

	for (int i = 0; i < busy; i++) {
		struct epoll_event ev = { .events = EPOLLOUT, .data.u32 = (uint32_t)i };

		if (cli.c[i].state != CC_READY) {
			left--;
			rc = -1;
			continue;
		}
		epoll_ctl(cli.ep, EPOLL_CTL_MOD, cli.c[i].fd, &ev);
	}
	while (left > 0 && kit_now_s() < deadline) {
		struct epoll_event evs[256];
		int n = epoll_wait(cli.ep, evs, 256, 100);

		for (int k = 0; k < n; k++) {
			int i = (int)evs[k].data.u32;
			cconn *c = &cli.c[i];
			struct epoll_event ev = { .events = EPOLLIN, .data.u32 = (uint32_t)i };

			if (i >= busy || c->state != CC_READY) {
				if (c->state != CC_DEAD)
					cli_event(i, evs[k].events);
				continue;
			}
			if (evs[k].events & (EPOLLERR | EPOLLHUP | EPOLLIN)) {
				cli_event(i, evs[k].events); /* data or an error: it died */
				left--;
				rc = -1;
				continue;
			}
			while (c->sent < opt.bytes) {
				size_t want = opt.bytes - c->sent < CHUNK ? opt.bytes - c->sent : CHUNK;
				ssize_t w;

				kit_pattern_fill(buf, (uint64_t)i + 1, c->sent, want);
				w = write(c->fd, buf, want);
				if (w < 0 && errno == EAGAIN)
					break;
				if (w <= 0) {
					cli_dead(i, "write", errno);
					left--;
					rc = -1;
					break;
				}
				c->sent += (uint64_t)w;
			}
			if (c->state == CC_READY && c->sent == opt.bytes) {
				epoll_ctl(cli.ep, EPOLL_CTL_MOD, c->fd, &ev);
				left--;
			}
		}
	}
	free(buf);
	return left > 0 ? -1 : rc;
}

/*
 * The client's side of the black hole: runs opt.hole_cmd, waits until the
 * first connection to report a rail down has it down both ways, and has the
 * server do the same; *rail is that rail.  0, or -1 with a message.
 */
static int cli_hole_wait(int *rail, double *detect_s)
{
	char cmd[64], reply[256];
	uint64_t since = kit_now_ns();
	double t0 = kit_now_s(), deadline = t0 + opt.hole_wait_s;
	int fd = -1, rc;

	rc = system(opt.hole_cmd);
	if (rc != 0) {
		fprintf(stderr, "ri2n-conns: the black-hole command failed (status %d)\n", rc);
		return -1;
	}
	*rail = -1;
	while (kit_now_s() < deadline) {
		cli_poll(20); /* a connection that dies meanwhile is counted */
		if (fd < 0 && !hole_next_down(since, &fd, rail))
			continue;
		if (hole_rail_down(fd, *rail) == 1)
			break;
	}
	if (fd < 0 || hole_rail_down(fd, *rail) != 1) {
		fprintf(stderr, "ri2n-conns: no rail down both ways %.0f s after the black hole\n",
			opt.hole_wait_s);
		return -1;
	}
	*detect_s = kit_now_s() - t0;
	snprintf(cmd, sizeof(cmd), "HOLE %" PRIu64, since);
	if (ctl_send(cli.ctl, cmd) || ctl_recv(cli.ctl, reply, sizeof(reply)))
		return -1;
	if (line_field(reply, "ready") != 1 || (int)line_field(reply, "rail") != *rail) {
		fprintf(stderr, "ri2n-conns: the server does not see rail %d down both ways: %s\n",
			*rail, reply);
		return -1;
	}
	return 0;
}

/*
 * After a black hole on a rail while all are idle: the first write on
 * opt.probes connections spread over the set, one at a time, each echoed
 * and checked.  Neither the probe nor its echo may go onto the dead rail
 * or be resent (the counters, both sides).  0 if all were, else -1.
 */
static int cli_hole(void)
{
	int rail, k = 0, bad = 0, lost = 0;
	double detect = 0, *us = calloc((size_t)opt.probes, sizeof(double)), med, max;
	hole_counts sum = { 0 };
	char reply[256];

	hole_drain_events(); /* the handshakes' events */
	if (!us || cli_hole_wait(&rail, &detect) < 0) {
		free(us);
		return -1;
	}
	for (int j = 0; j < opt.probes; j++) {
		int i = (int)(((int64_t)2 * j + 1) * opt.conns / (2 * opt.probes));
		cconn *c = &cli.c[i];
		hole_counts a, b, d;
		double t;

		if (c->state != CC_READY || hole_counts_of(c->fd, rail, &a) < 0) {
			lost++;
			continue;
		}
		t = hole_echo(c->fd, (uint64_t)i + 1, c->sent, HOLE_PROBE_LEN, HOLE_ECHO_WAIT_S);
		c->sent += HOLE_PROBE_LEN;
		if (t < 0 || hole_counts_of(c->fd, rail, &b) < 0) {
			cli_dead(i, t == -2 ? "probe: wrong echo" : "probe: no echo", 0);
			lost++;
			continue;
		}
		hole_counts_diff(&a, &b, &d);
		printf("conns probe idx=%d echo_us=%.0f dead_rail_data=%" PRIu64 " retransmits=%"
		       PRIu64 " rto=%" PRIu64 " seen_down=%d\n", i, t, d.dead_data, d.retx, d.rto,
		       d.seen_down);
		sum.dead_data += d.dead_data;
		sum.retx += d.retx;
		sum.rto += d.rto;
		sum.seen_down += d.seen_down;
		us[k++] = t;
	}
	if (ctl_send(cli.ctl, "HOLESTAT") || ctl_recv(cli.ctl, reply, sizeof(reply)))
		reply[0] = 0;
	hole_med_max(us, k, &med, &max);
	free(us);
	bad = lost || sum.dead_data || sum.retx || sum.rto ||
	      line_field(reply, "probes") != k || line_field(reply, "dead_rail_data") ||
	      line_field(reply, "retransmits") || line_field(reply, "rto");
	/* rto_min_us: the core's floor of the retransmission timeout (rn_knob_list.h) */
	printf("conns hole rail=%d detect_s=%.2f probes=%d echoed=%d echo_med_us=%.0f"
	       " echo_max_us=%.0f rto_min_us=20000 dead_rail_data=%" PRIu64 " retransmits=%" PRIu64
	       " rto=%" PRIu64 " seen_down=%d srv_probes=%.0f srv_dead_rail_data=%.0f"
	       " srv_retransmits=%.0f srv_rto=%.0f verdict=%s\n", rail, detect, opt.probes, k, med,
	       max, sum.dead_data, sum.retx, sum.rto, sum.seen_down, line_field(reply, "probes"),
	       line_field(reply, "dead_rail_data"), line_field(reply, "retransmits"),
	       line_field(reply, "rto"), bad ? "bad" : "ok");
	fflush(stdout);
	return bad ? -1 : 0;
}

/*
 * Opens connections 0 and 1 and lowers opt.conns to what both processes'
 * descriptor limits hold (a container may forbid raising them): a connection that could
 * not get its descriptors would fail its handshake at one end or the other.
 */
static int fit_limits(const struct sockaddr_in *a, long nofile)
{
	char reply[256];
	long srv_nofile, srv_fds0, srv_fds1, per_c, per_s, cap_c, cap_s;
	double t0 = kit_now_s();
	memstat m0, m1;

	if (ctl_send(cli.ctl, "LIMIT") || ctl_recv(cli.ctl, reply, sizeof(reply)))
		return -1;
	srv_nofile = (long)line_field(reply, "nofile");
	/*
	 * The first connection may open what later ones share (the client's
	 * port): the cost of one is what the second adds.
	 */
	cli_start(0, a);
	while (cli.ready + cli.dead < 1 && kit_now_s() - t0 < CTL_WAIT_S)
		cli_poll(20);
	if (cli.ready < 1) {
		fprintf(stderr, "ri2n-conns: the first connection failed\n");
		return -1;
	}
	measure(&m0);
	/* the base from here on: the port the first one opened is shared by all */
	fprintf(stderr, "ri2n-conns: the first connection (with the client's rail sockets) took "
		"%.0f KiB\n", (double)m0.pss_kb - (double)cli.base.pss_kb);
	cli.base = m0;
	cli.base.conns = 1;
	cli.prev = cli.base;
	{
		char line[512];

		mem_line(line, sizeof(line), "client", "base", 1, 0, &cli.base, &cli.base,
			 &cli.base, NULL);
		report(line);
	}
	if (ctl_send(cli.ctl, "LIMIT") || ctl_recv(cli.ctl, reply, sizeof(reply)))
		return -1;
	srv_fds0 = (long)line_field(reply, "fds");
	cli_start(1, a);
	while (cli.ready + cli.dead < 2 && kit_now_s() - t0 < CTL_WAIT_S)
		cli_poll(20);
	if (cli.ready < 2) {
		fprintf(stderr, "ri2n-conns: the second connection failed\n");
		return -1;
	}
	measure(&m1);
	if (ctl_send(cli.ctl, "LIMIT") || ctl_recv(cli.ctl, reply, sizeof(reply)))
		return -1;
	srv_fds1 = (long)line_field(reply, "fds");
	per_c = m1.fds - m0.fds > 0 ? m1.fds - m0.fds : 1;
	per_s = srv_fds1 - srv_fds0 > 0 ? srv_fds1 - srv_fds0 : 1;
	/* 64 spare: the processes' own files, the engine's, an accept in progress */
	cap_c = 1 + (nofile - m1.fds - 64) / per_c;
	cap_s = 1 + (srv_nofile - srv_fds1 - 64) / per_s;
	fprintf(stderr, "ri2n-conns: a connection takes %ld descriptors in the client, %ld in the"
		" server; limits %ld and %ld hold %ld and %ld connections\n", per_c, per_s, nofile,
		srv_nofile, cap_c, cap_s);
	if (cap_s < cap_c)
		cap_c = cap_s;
	if (cap_c < opt.conns) {
		fprintf(stderr, "ri2n-conns: opening %ld connections, not %d: RLIMIT_NOFILE cannot "
			"be raised further here\n", cap_c, opt.conns);
		opt.fd_limited = 1;
		opt.conns = (int)cap_c;
	}
	return 0;
}

static int run_client(void)
{
	struct sockaddr_in a;
	char reply[512];
	int one = 1, next = 0, warm, status = 0, wanted = opt.conns;
	long nofile;
	double t0, t_conn;
	uint64_t vbytes = 0, vbad = UINT64_MAX;

	/* each client connection: its socketpair's two ends and one UDP socket per rail */
	nofile = raise_nofile((long)opt.conns * (2 + RI2N_MAX_RAILS) + 1024);
	if (bench_resolve(opt.host, opt.port, &a) < 0) {
		fprintf(stderr, "ri2n-conns: cannot resolve %s\n", opt.host);
		return 2;
	}
	cli.ctl = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
	for (int tries = 0;; tries++) {
		if (connect(cli.ctl, (struct sockaddr *)&a, sizeof(a)) == 0)
			break;
		if (tries >= 100) {
			fprintf(stderr, "ri2n-conns: no server at %s:%d: %s\n", opt.host, opt.port,
				strerror(errno));
			return 3;
		}
		usleep(50000);
	}
	setsockopt(cli.ctl, IPPROTO_TCP, TCP_NODELAY, &one, sizeof(one));
	cli.c = calloc((size_t)opt.conns, sizeof(*cli.c));
	cli.ep = epoll_create1(EPOLL_CLOEXEC);
	/* the engine starts with the first socket: count it in the base, not per connection */
	warm = ri2n_socket();
	measure(&cli.base);

	/* open: the first two alone, to learn what one costs in descriptors on each side */
	t0 = kit_now_s();
	if (fit_limits(&a, nofile) < 0)
		return 3;
	if (opt.busy > opt.conns)
		opt.busy = opt.conns;
	if (opt.probes > opt.conns)
		opt.probes = opt.conns;
	next = 2;
	/* then the rest, at most `batch` handshakes at a time */
	while ((cli.ready + cli.dead < opt.conns) && kit_now_s() - t0 < CTL_WAIT_S) {
		while (next < opt.conns && next - cli.ready - cli.dead < opt.batch)
			cli_start(next++, &a);
		cli_poll(20);
	}
	t_conn = kit_now_s() - t0;
	fprintf(stderr, "ri2n-conns: %d of %d connections established in %.2f s, %d failed\n",
		cli.ready, opt.conns, t_conn, cli.dead);
	if (cli.ready == 0)
		return 3;

	/* idle: keepalives only */
	{
		double until = kit_now_s() + opt.idle_s;

		while (kit_now_s() < until)
			cli_poll(100);
	}
	cli_measure("idle", 0, &cli.idle);

	/* a rail black-holed while all are idle, then a first write on some */
	if (opt.probes > 0 && cli_hole() < 0)
		status = 1;

	/* busy: a subset streams verified data */
	if (opt.busy > 0 && opt.bytes > 0) {
		double tb = kit_now_s();
		char cmd[64];

		if (cli_stream(opt.busy) < 0)
			status = 1;
		snprintf(cmd, sizeof(cmd), "BUSY %d %" PRIu64, opt.busy, opt.bytes);
		if (ctl_send(cli.ctl, cmd) == 0 && ctl_recv(cli.ctl, reply, sizeof(reply)) == 0) {
			vbytes = (uint64_t)line_field(reply, "bytes");
			vbad = (uint64_t)line_field(reply, "bad");
		}
		fprintf(stderr, "ri2n-conns: %d connections streamed %" PRIu64 " bytes each in %.2f s"
			" (%.0f Mbit/s together); the server verified %" PRIu64 " bytes, %" PRIu64
			" bad\n", opt.busy, opt.bytes, kit_now_s() - tb,
			(double)opt.busy * (double)opt.bytes * 8 / (kit_now_s() - tb) / 1e6,
			vbytes, vbad);
		cli_measure("busy", opt.busy, NULL);
	}
	if (opt.rest_s > 0) {
		double until = kit_now_s() + opt.rest_s;

		while (kit_now_s() < until)
			cli_poll(100);
		cli_measure("rest", 0, NULL);
	}
	/* a last look: any connection that died while we measured */
	cli_poll(0);

	{
		int verified = opt.busy == 0 || opt.bytes == 0 ||
			       (vbad == 0 && vbytes == (uint64_t)opt.busy * opt.bytes);
		int established = cli.ready;

		if (!verified || cli.dead > 0)
			status = 1;
		printf("conns done conns=%d wanted=%d fd_limited=%d established=%d failed=%d busy=%d"
		       " bytes=%" PRIu64 " verified=%s bad=%" PRIu64 " connect_secs=%.2f\n",
		       opt.conns, wanted, opt.fd_limited, established, cli.dead, opt.busy, vbytes,
		       verified ? "yes" : "no", vbad == UINT64_MAX ? 0 : vbad, t_conn);
		fflush(stdout);
	}
	ctl_send(cli.ctl, "QUIT");
	{
		int n = 0;

		for (int i = 0; i < opt.conns; i++)
			if (cli.c[i].fd > 0 && close(cli.c[i].fd) == 0)
				n++;
		close(warm);
		/* the close storm's start, for the exit's delay (CLOCK_MONOTONIC) */
		fprintf(stderr, "ri2n-conns: closed %d connections at mono=%.3f wall=%.3f\n", n,
			kit_now_s(), wall_s());
	}
	return status;
}

int main(int argc, char **argv)
{
	int serve_mode;

	if (argc < 2)
		usage();
	for (int k = 1; k < argc; k++)
		help_or_version(argv[k]);
	signal(SIGPIPE, SIG_IGN);
	serve_mode = strcmp(argv[1], "serve") == 0;
	if (!serve_mode && strcmp(argv[1], "run") != 0)
		usage();
	int i = 2;

	if (!serve_mode) {
		if (argc < 3)
			usage();
		opt.host = argv[2];
		i = 3;
	}
	for (; i < argc; i++) {
		const char *o = argv[i], *v = i + 1 < argc ? argv[i + 1] : NULL;

		if (!v)
			usage();
		i++;
		if (strcmp(o, "--port") == 0)
			opt.port = atoi(v);
		else if (strcmp(o, "--bind") == 0)
			opt.bind = v;
		else if (strcmp(o, "--conns") == 0)
			opt.conns = atoi(v);
		else if (strcmp(o, "--busy") == 0)
			opt.busy = atoi(v);
		else if (strcmp(o, "--batch") == 0)
			opt.batch = atoi(v);
		else if (strcmp(o, "--idle") == 0)
			opt.idle_s = atof(v);
		else if (strcmp(o, "--rest") == 0)
			opt.rest_s = atof(v);
		else if (strcmp(o, "--csv") == 0)
			opt.csv_path = v;
		else if (strcmp(o, "--probes") == 0)
			opt.probes = atoi(v);
		else if (strcmp(o, "--hole-cmd") == 0)
			opt.hole_cmd = v;
		else if (strcmp(o, "--hole-wait") == 0)
			opt.hole_wait_s = atof(v);
		else if (strcmp(o, "--bytes") == 0) {
			int64_t b = kit_parse_size(v);

			if (b < 0)
				usage();
			opt.bytes = (uint64_t)b;
		} else
			usage();
	}
	if (opt.conns < 1 || opt.busy < 0 || opt.batch < 1 || opt.port <= 0 || opt.port > 65535 ||
	    opt.probes < 0 || (opt.probes > 0 && !opt.hole_cmd))
		usage();
	if (opt.csv_path) {
		int fresh = access(opt.csv_path, F_OK) != 0;

		opt.csv = fopen(opt.csv_path, "a");
		if (!opt.csv) {
			fprintf(stderr, "ri2n-conns: cannot write %s\n", opt.csv_path);
			return 2;
		}
		if (fresh)
			fprintf(opt.csv, "role,phase,conns,busy,rss_kb,pss_kb,anon_kb,fds,cpu_pct,secs,"
					 "pss_per_conn,rss_per_conn,fds_per_conn\n");
	}
	return serve_mode ? conns_serve() : run_client();
}
