/*
 * conns_srv.c - ri2n-conns serve: accepts the client's connections, echoes
 * each hello (and, during the black hole, each probe), checks the busy
 * connections' pattern and answers the client's commands on the control
 * connection (see the top of ri2n-conns.c).
 */
#define _GNU_SOURCE
#include <errno.h>
#include <inttypes.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
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

typedef struct sconn {
	int fd;
	int64_t idx;          /* the client's index, -1 until the hello is in */
	uint8_t hello[HELLO_LEN];
	unsigned hello_got;
	uint64_t got, bad;    /* pattern bytes after the hello */
	int dead;
	int probed;           /* echoed a black-hole probe; hbase: its counters before */
	hole_counts hbase;
} sconn;

static struct {
	int ep, lfd, tcp_lfd, ctl;
	sconn **by_fd;
	int cap;
	int open, ready, dead, busy_done;
	uint64_t busy_bytes, busy_bad;
	int busy_n;
	uint64_t busy_len;
	char ctl_buf[512];
	size_t ctl_n;
	/*
	 * what the client waits for: 'M' a measurement when `want` are ready, 'B' the busy
	 * verdict, 'H' the dead rail known both ways (then probes are echoed: hole_echo)
	 */
	char pending;
	int hole_echo, hole_fd, hole_rail;
	uint64_t hole_since_ns;
	char phase[16];
	int want;
	double deadline;
	memstat base, prev, idle;
	int have_idle;
	long nofile;
	uint8_t *buf;
} srv;

static void srv_add(int fd, uint32_t events)
{
	struct epoll_event ev = { .events = events, .data.fd = fd };

	epoll_ctl(srv.ep, EPOLL_CTL_ADD, fd, &ev);
}

static void srv_conn_dead(sconn *c)
{
	if (c->dead)
		return;
	c->dead = 1;
	srv.dead++;
	epoll_ctl(srv.ep, EPOLL_CTL_DEL, c->fd, NULL);
}

static void srv_accept(void)
{
	for (;;) {
		int fd = ri2n_accept(srv.lfd, NULL, NULL);
		sconn *c;

		if (fd < 0)
			return; /* EAGAIN: all taken */
		if (fd >= srv.cap) {
			int cap = fd * 2 + 64;
			sconn **n = realloc(srv.by_fd, (size_t)cap * sizeof(*n));

			if (!n) {
				close(fd);
				continue;
			}
			memset(n + srv.cap, 0, (size_t)(cap - srv.cap) * sizeof(*n));
			srv.by_fd = n;
			srv.cap = cap;
		}
		c = calloc(1, sizeof(*c));
		if (!c) {
			close(fd);
			continue;
		}
		c->fd = fd;
		c->idx = -1;
		bench_set_nonblock(fd, 1);
		srv.by_fd[fd] = c;
		srv.open++;
		srv_add(fd, EPOLLIN);
	}
}

static void srv_conn_read(sconn *c)
{
	for (;;) {
		ssize_t n = read(c->fd, srv.buf, CHUNK);
		size_t used = 0;

		if (n < 0 && errno == EAGAIN)
			return;
		if (n <= 0) {
			/* the client closes only at the end; anything earlier is a failure */
			srv_conn_dead(c);
			return;
		}
		while (c->hello_got < HELLO_LEN && used < (size_t)n)
			c->hello[c->hello_got++] = srv.buf[used++];
		if (c->idx < 0 && c->hello_got == HELLO_LEN) {
			c->idx = (int64_t)kit_get64(c->hello);
			/* the echo fits any socket buffer: a short write is a dead connection */
			if (write(c->fd, c->hello, HELLO_LEN) != HELLO_LEN) {
				srv_conn_dead(c);
				return;
			}
			srv.ready++;
		}
		if (used < (size_t)n) {
			size_t k = (size_t)n - used;

			if (srv.hole_echo && !c->probed) {
				/* a probe's first byte: the counters its echo is judged against */
				c->probed = 1;
				hole_counts_of(c->fd, srv.hole_rail, &c->hbase);
			}
			c->bad += kit_pattern_check(srv.buf + used, (uint64_t)c->idx + 1, c->got, k);
			c->got += k;
			/* a probe is a few bytes: its echo fits the socket buffer */
			if (srv.hole_echo && write(c->fd, srv.buf + used, k) != (ssize_t)k) {
				srv_conn_dead(c);
				return;
			}
			if (srv.pending == 'B' && c->got >= srv.busy_len && c->got - k < srv.busy_len)
				srv.busy_done++;
		}
	}
}

static void srv_answer_mem(void)
{
	memstat m;
	char line[512];
	int busy;

	measure(&m);
	busy = strcmp(srv.phase, "busy") == 0;

	mem_line(line, sizeof(line), "server", srv.phase, srv.ready, busy ? srv.busy_n : 0, &m,
		 &srv.base, &srv.prev, busy && srv.have_idle ? &srv.idle : NULL);
	if (strcmp(srv.phase, "idle") == 0) {
		srv.idle = m;
		srv.have_idle = 1;
	}
	srv.prev = m;
	/* append what the client cannot see from its side */
	snprintf(line + strlen(line), sizeof(line) - strlen(line), " open=%d dead=%d", srv.open,
		 srv.dead);
	ctl_send(srv.ctl, line);
}

/* The black hole: its rail known down both ways by the connection that judged it. */
static void srv_check_hole(void)
{
	char line[128];
	int ready = 0;

	if (srv.hole_fd < 0 && !hole_next_down(srv.hole_since_ns, &srv.hole_fd, &srv.hole_rail))
		srv.hole_fd = -1;
	if (srv.hole_fd >= 0)
		ready = hole_rail_down(srv.hole_fd, srv.hole_rail) == 1;
	if (!ready && kit_now_s() <= srv.deadline)
		return;
	srv.pending = 0;
	srv.hole_echo = ready;
	snprintf(line, sizeof(line), "hole ready=%d rail=%d secs=%.3f", ready, srv.hole_rail,
		 kit_now_s() - (double)srv.hole_since_ns / 1e9);
	ctl_send(srv.ctl, line);
}

/* The probes' counters since each one's first byte, summed. */
static void srv_hole_stat(void)
{
	hole_counts sum = { 0 }, now, d;
	int n = 0;
	char line[256];

	for (int fd = 0; fd < srv.cap; fd++) {
		sconn *c = srv.by_fd[fd];

		if (!c || !c->probed || hole_counts_of(c->fd, srv.hole_rail, &now) < 0)
			continue;
		hole_counts_diff(&c->hbase, &now, &d);
		sum.dead_data += d.dead_data;
		sum.retx += d.retx;
		sum.rto += d.rto;
		sum.seen_down += d.seen_down;
		n++;
	}
	srv.hole_echo = 0;
	snprintf(line, sizeof(line), "holestat probes=%d dead_rail_data=%" PRIu64
		 " retransmits=%" PRIu64 " rto=%" PRIu64 " seen_down=%d", n, sum.dead_data, sum.retx,
		 sum.rto, sum.seen_down);
	ctl_send(srv.ctl, line);
}

static void srv_check_pending(void)
{
	char line[256];

	if (srv.pending == 'H') {
		srv_check_hole();
	} else if (srv.pending == 'M' && (srv.ready >= srv.want || kit_now_s() > srv.deadline)) {
		srv.pending = 0;
		srv_answer_mem();
	} else if (srv.pending == 'B' &&
		   (srv.busy_done >= srv.busy_n || kit_now_s() > srv.deadline)) {
		uint64_t bytes = 0, bad = 0;

		srv.pending = 0;
		for (int fd = 0; fd < srv.cap; fd++) {
			sconn *c = srv.by_fd[fd];

			if (c && c->idx >= 0 && c->idx < srv.busy_n) {
				bytes += c->got;
				bad += c->bad;
			}
		}
		snprintf(line, sizeof(line), "verdict bytes=%" PRIu64 " bad=%" PRIu64 " done=%d",
			 bytes, bad, srv.busy_done);
		ctl_send(srv.ctl, line);
	}
}

/*
 * One command from the client: "MEM phase want", "BUSY n bytes", "LIMIT",
 * "HOLE since_ns" (answer once the rail of the first RAIL_DOWN since then is
 * down both ways; echo probes from then on), "HOLESTAT", "QUIT".
 */
static int srv_command(const char *cmd)
{
	char word[16];
	long long a = 0, b = 0;
	unsigned long long since;

	if (sscanf(cmd, "HOLE %llu", &since) == 1) {
		srv.hole_since_ns = since;
		srv.hole_fd = srv.hole_rail = -1;
		srv.pending = 'H';
		srv.deadline = kit_now_s() + opt.hole_wait_s;
		return 0;
	} else if (strncmp(cmd, "HOLESTAT", 8) == 0) {
		srv_hole_stat();
	} else if (sscanf(cmd, "MEM %15s %lld", word, &a) >= 1) {
		snprintf(srv.phase, sizeof(srv.phase), "%s", word);
		srv.want = (int)a;
		srv.pending = 'M';
	} else if (sscanf(cmd, "BUSY %lld %lld", &a, &b) == 2) {
		srv.busy_n = (int)a;
		srv.busy_len = (uint64_t)b;
		srv.busy_done = 0;
		for (int fd = 0; fd < srv.cap; fd++) /* any already complete */
			if (srv.by_fd[fd] && srv.by_fd[fd]->idx >= 0 &&
			    srv.by_fd[fd]->idx < srv.busy_n && srv.by_fd[fd]->got >= srv.busy_len)
				srv.busy_done++;
		srv.pending = 'B';
	} else if (strncmp(cmd, "LIMIT", 5) == 0) {
		memstat m;
		char line[128];

		measure(&m);
		snprintf(line, sizeof(line), "limit nofile=%ld fds=%d", srv.nofile, m.fds);
		ctl_send(srv.ctl, line);
	} else if (strncmp(cmd, "QUIT", 4) == 0) {
		return 1;
	}
	srv.deadline = kit_now_s() + CTL_WAIT_S;
	return 0;
}

/* Reads what the control connection has; 1 when the client is finished. */
static int srv_ctl_read(void)
{
	for (;;) {
		ssize_t n = read(srv.ctl, srv.ctl_buf + srv.ctl_n, sizeof(srv.ctl_buf) - 1 - srv.ctl_n);
		char *nl;

		if (n < 0 && errno == EAGAIN)
			return 0;
		if (n <= 0)
			return 1;
		srv.ctl_n += (size_t)n;
		srv.ctl_buf[srv.ctl_n] = 0;
		while ((nl = strchr(srv.ctl_buf, '\n'))) {
			*nl = 0;
			if (srv_command(srv.ctl_buf))
				return 1;
			srv.ctl_n -= (size_t)(nl + 1 - srv.ctl_buf);
			memmove(srv.ctl_buf, nl + 1, srv.ctl_n + 1);
		}
		if (srv.ctl_n == sizeof(srv.ctl_buf) - 1)
			srv.ctl_n = 0; /* a line this long is garbage */
	}
}

int conns_serve(void)
{
	struct sockaddr_in a;
	int one = 1;
	struct epoll_event evs[256];

	/* each accepted connection: its socketpair's two ends (the rails' sockets are shared) */
	srv.nofile = raise_nofile(2 * 100000 + 1024);
	srv.buf = malloc(CHUNK);
	srv.ep = epoll_create1(EPOLL_CLOEXEC);
	srv.lfd = ri2n_socket();
	if (bench_resolve(opt.bind, opt.port, &a) < 0 || srv.lfd < 0 ||
	    ri2n_bind(srv.lfd, (struct sockaddr *)&a, sizeof(a)) < 0 ||
	    ri2n_listen(srv.lfd, 65536) < 0) {
		fprintf(stderr, "ri2n-conns: cannot listen on port %d: %s\n", opt.port,
			strerror(errno));
		return 3;
	}
	bench_set_nonblock(srv.lfd, 1);
	srv.tcp_lfd = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
	setsockopt(srv.tcp_lfd, SOL_SOCKET, SO_REUSEADDR, &one, sizeof(one));
	if (srv.tcp_lfd < 0 || bind(srv.tcp_lfd, (struct sockaddr *)&a, sizeof(a)) < 0 ||
	    listen(srv.tcp_lfd, 4) < 0) {
		fprintf(stderr, "ri2n-conns: cannot listen on TCP port %d: %s\n", opt.port,
			strerror(errno));
		return 3;
	}
	fprintf(stderr, "ri2n-conns: serving on port %d\n", opt.port);
	srv.ctl = accept4(srv.tcp_lfd, NULL, NULL, SOCK_CLOEXEC);
	if (srv.ctl < 0)
		return 3;
	setsockopt(srv.ctl, IPPROTO_TCP, TCP_NODELAY, &one, sizeof(one));
	close(srv.tcp_lfd);
	/* the base: engine running, listener up, no connection */
	measure(&srv.base);
	srv.prev = srv.base;
	bench_set_nonblock(srv.ctl, 1);
	srv_add(srv.lfd, EPOLLIN);
	srv_add(srv.ctl, EPOLLIN);
	for (;;) {
		int n = epoll_wait(srv.ep, evs, 256, srv.pending ? 10 : 200);

		for (int i = 0; i < n; i++) {
			int fd = evs[i].data.fd;

			if (fd == srv.lfd)
				srv_accept();
			else if (fd == srv.ctl) {
				if (srv_ctl_read())
					goto out;
			} else if (fd < srv.cap && srv.by_fd[fd])
				srv_conn_read(srv.by_fd[fd]);
		}
		srv_check_pending();
	}
out:
	for (int fd = 0; fd < srv.cap; fd++)
		if (srv.by_fd[fd]) {
			close(fd);
			free(srv.by_fd[fd]);
		}
	fprintf(stderr, "ri2n-conns: server done: %d connections, %d died; closed at mono=%.3f "
		"wall=%.3f\n", srv.open, srv.dead, kit_now_s(), wall_s());
	return 0;
}
