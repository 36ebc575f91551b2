/*
 * shim_cancel.c - a plain TCP program (it knows nothing of ri2n) that
 * cancels its threads where POSIX says it may, run under ri2n-run in two
 * namespaces: a thread cancelled in a blocking call on a ri2n socket must
 * leave nothing behind, as with TCP.
 *
 *   shim_cancel serve PORT
 *       an echo-like server, one thread per connection: each request is a
 *       16-byte header (length N, seed S) and N bytes of the pattern of S,
 *       checked; the reply is N bytes of the pattern of S + 1
 *   shim_cancel client ADDR PORT SELF LPORT NOWHERE
 *       connects to the server several times and listens on SELF:LPORT.
 *       Threads block in epoll_wait, epoll_pwait, poll, ppoll, select,
 *       pselect and read on idle connections (the server never writes to
 *       them), in accept on the listener and in connect to NOWHERE (an
 *       address on the rails nobody has, port PORT); each is cancelled
 *       (pthread_cancel) and must end (joined within 10 s).  A thread with
 *       a cancel pending calls close() on a connection: cancelled there,
 *       the connection must be left as it was.  Then, on the same rails,
 *       one connection moves 4 MiB each way through blocking write and a
 *       blocking read in another thread, one 4 MiB each way driven by
 *       epoll (non-blocking), the one close() left 256 KiB each way, and
 *       the listener accepts a connection of the program's own (64 KiB
 *       each way).  Every byte is checked.  exit() must return (a SIGALRM
 *       10 s later fails it; the script sets RI2N_EXIT_LINGER_MS small).
 *
 * Prints "ok: ..." or "FAIL: ..." per check; exits 1 if any failed, 2 on
 * the watchdog (60 s), 3 if exit() hung.
 */
#define _GNU_SOURCE
#include <arpa/inet.h>
#include <errno.h>
#include <fcntl.h>
#include <netinet/in.h>
#include <poll.h>
#include <pthread.h>
#include <signal.h>
#include <stdarg.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/epoll.h>
#include <sys/select.h>
#include <sys/socket.h>
#include <time.h>
#include <unistd.h>

#include "ri2n_kit.h"

#define BULK (4u << 20)      /* bytes each way on the data connections */
#define SMALL (256u << 10)   /* on the connection a cancelled close() left */
#define SELF_BYTES (64u << 10)
#define CHUNK (64u << 10)
#define JOIN_S 10            /* a cancelled thread still there after this failed */

static int g_failed;

static void report(int good, const char *fmt, ...)
{
	va_list ap;
	int err = errno;

	printf(good ? "ok: " : "FAIL: ");
	va_start(ap, fmt);
	vprintf(fmt, ap);
	va_end(ap);
	if (!good)
		printf(" (errno %s)", strerror(err));
	printf("\n");
	fflush(stdout);
	g_failed |= !good;
}

#define CHECK(cond, ...) report((cond) != 0, __VA_ARGS__)

static void say(int fd, const char *msg)
{
	if (write(fd, msg, strlen(msg)) < 0) {
		/* nowhere to say it */
	}
}

static void on_watchdog(int sig)
{
	(void)sig;
	say(1, "FAIL: watchdog: the program hung (a transfer or a join never ended)\n");
	_exit(2);
}

static void on_exit_hang(int sig)
{
	(void)sig;
	say(1, "FAIL: exit() did not return within 10 s\n");
	_exit(3);
}

/* ---- blocking helpers, every byte checked ---- */

static int write_all(int fd, const uint8_t *p, size_t n)
{
	while (n > 0) {
		ssize_t w = write(fd, p, n);

		if (w < 0 && errno == EINTR)
			continue;
		if (w <= 0)
			return -1;
		p += w;
		n -= (size_t)w;
	}
	return 0;
}

static int read_all(int fd, uint8_t *p, size_t n)
{
	while (n > 0) {
		ssize_t r = read(fd, p, n);

		if (r < 0 && errno == EINTR)
			continue;
		if (r <= 0) {
			if (r == 0)
				errno = EPIPE;
			return -1;
		}
		p += r;
		n -= (size_t)r;
	}
	return 0;
}

/* Writes n bytes of the pattern of seed; 0 or -1. */
static int send_pattern(int fd, uint64_t seed, size_t n)
{
	static __thread uint8_t buf[CHUNK];

	for (size_t off = 0; off < n; off += CHUNK) {
		size_t k = n - off < CHUNK ? n - off : CHUNK;

		kit_pattern_fill(buf, seed, off, k);
		if (write_all(fd, buf, k) < 0)
			return -1;
	}
	return 0;
}

/* Reads n bytes that must be the pattern of seed: the bytes that differ, or -1. */
static int64_t recv_pattern(int fd, uint64_t seed, size_t n)
{
	static __thread uint8_t buf[CHUNK];
	uint64_t bad = 0;

	for (size_t off = 0; off < n; off += CHUNK) {
		size_t k = n - off < CHUNK ? n - off : CHUNK;

		if (read_all(fd, buf, k) < 0)
			return -1;
		bad += kit_pattern_check(buf, seed, off, k);
	}
	return (int64_t)bad;
}

static int send_header(int fd, uint64_t n, uint64_t seed)
{
	uint8_t h[16];

	kit_put64(h, n);
	kit_put64(h + 8, seed);
	return write_all(fd, h, sizeof(h));
}

/* ---- the server ---- */

static void *serve_conn(void *arg)
{
	int fd = (int)(intptr_t)arg;
	uint8_t h[16];

	while (read_all(fd, h, sizeof(h)) == 0) {
		uint64_t n = kit_get64(h), seed = kit_get64(h + 8);
		int64_t bad = recv_pattern(fd, seed, n);

		if (bad != 0) {
			report(0, "server: request %llu of %llu bytes: %lld bytes wrong",
			       (unsigned long long)seed, (unsigned long long)n, (long long)bad);
			break;
		}
		if (send_pattern(fd, seed + 1, n) < 0) {
			report(0, "server: reply %llu", (unsigned long long)seed);
			break;
		}
	}
	close(fd);
	return NULL;
}

static int serve(int port)
{
	struct sockaddr_in a = { .sin_family = AF_INET, .sin_port = htons((uint16_t)port) };
	int one = 1, l = socket(AF_INET, SOCK_STREAM, 0);

	setsockopt(l, SOL_SOCKET, SO_REUSEADDR, &one, sizeof(one));
	if (l < 0 || bind(l, (struct sockaddr *)&a, sizeof(a)) < 0 || listen(l, 64) < 0) {
		report(0, "server: listen on %d", port);
		return 1;
	}
	for (;;) {
		int fd = accept(l, NULL, NULL);
		pthread_t t;

		if (fd < 0) {
			if (errno == EINTR)
				continue;
			report(0, "server: accept");
			return 1;
		}
		if (pthread_create(&t, NULL, serve_conn, (void *)(intptr_t)fd) != 0) {
			report(0, "server: a thread for fd %d", fd);
			close(fd);
			continue;
		}
		pthread_detach(t);
	}
}

/* ---- the client: threads blocked, then cancelled ---- */

static struct sockaddr_in g_srv, g_nowhere;

static int conn(void)
{
	int fd = socket(AF_INET, SOCK_STREAM, 0);

	if (fd < 0 || connect(fd, (struct sockaddr *)&g_srv, sizeof(g_srv)) < 0) {
		report(0, "connect to the server");
		exit(1);
	}
	return fd;
}

enum how { EPOLL_WAIT, EPOLL_PWAIT, POLL, PPOLL, SELECT, PSELECT, READ, ACCEPT, CONNECT, NHOW };

static const char *const how_name[NHOW] = {
	"epoll_wait", "epoll_pwait", "poll", "ppoll", "select", "pselect", "read", "accept",
	"connect",
};

typedef struct blocked {
	enum how how;
	int fd;                  /* the connection (the listener for accept) */
	int ep;                  /* its epoll set, for the epoll waits */
	volatile int returned;   /* the call came back: it never should */
	pthread_t t;
} blocked;

/* Waits in b->how on b->fd, which never gets anything, until cancelled. */
static void *block_in(void *arg)
{
	blocked *b = arg;
	struct epoll_event ev;
	struct pollfd pf = { .fd = b->fd, .events = POLLIN };
	sigset_t none;
	fd_set rd;
	uint8_t byte;

	sigemptyset(&none);
	for (;;) {
		FD_ZERO(&rd);
		FD_SET(b->fd, &rd);
		switch (b->how) {
		case EPOLL_WAIT: epoll_wait(b->ep, &ev, 1, -1); break;
		case EPOLL_PWAIT: epoll_pwait(b->ep, &ev, 1, -1, &none); break;
		case POLL: poll(&pf, 1, -1); break;
		case PPOLL: ppoll(&pf, 1, NULL, &none); break;
		case SELECT: select(b->fd + 1, &rd, NULL, NULL, NULL); break;
		case PSELECT: pselect(b->fd + 1, &rd, NULL, NULL, NULL, &none); break;
		case READ: if (read(b->fd, &byte, 1) < 0) {} break;
		case ACCEPT: accept(b->fd, NULL, NULL); break;
		case CONNECT: connect(b->fd, (struct sockaddr *)&g_nowhere, sizeof(g_nowhere)); break;
		default: break;
		}
		b->returned = 1; /* nothing comes: only cancellation ends these */
	}
	return NULL;
}

/* Joins t within JOIN_S; 1 if it ended by cancellation. */
static int joined_cancelled(pthread_t t)
{
	struct timespec dl;
	void *ret = NULL;

	clock_gettime(CLOCK_REALTIME, &dl);
	dl.tv_sec += JOIN_S;
	return pthread_timedjoin_np(t, &ret, &dl) == 0 && ret == PTHREAD_CANCELED;
}

static void cancel_blocked(int lis)
{
	blocked b[NHOW];

	for (int i = 0; i < NHOW; i++) {
		int fd = i == ACCEPT ? lis : i == CONNECT ? socket(AF_INET, SOCK_STREAM, 0) : conn();

		b[i] = (blocked){ .how = (enum how)i, .fd = fd, .ep = -1 };
		if (i == EPOLL_WAIT || i == EPOLL_PWAIT) {
			struct epoll_event ev = { .events = EPOLLIN, .data.u64 = (uint64_t)i };

			b[i].ep = epoll_create1(0);
			epoll_ctl(b[i].ep, EPOLL_CTL_ADD, b[i].fd, &ev);
		}
		pthread_create(&b[i].t, NULL, block_in, &b[i]);
	}
	/* a setup delay, not a check: the threads reach their waits */
	usleep(300 * 1000);
	for (int i = 0; i < NHOW; i++)
		pthread_cancel(b[i].t);
	for (int i = 0; i < NHOW; i++) {
		CHECK(joined_cancelled(b[i].t) && !b[i].returned,
		      "a thread blocked in %s on a ri2n socket is cancelled there", how_name[i]);
		/* the idle connections and sets stay open: exit() must cope with them */
	}
}

/* A thread with a cancel pending calls close(fd): cancelled there, fd must stay as it was. */
static void *close_cancelled(void *arg)
{
	int fd = (int)(intptr_t)arg, old;

	pthread_setcancelstate(PTHREAD_CANCEL_DISABLE, &old);
	pthread_cancel(pthread_self());
	pthread_setcancelstate(old, NULL);
	close(fd);
	return NULL; /* closed without being cancelled: allowed, but then fd is gone */
}

/* ---- the client: the other connections still move their bytes ---- */

static int64_t g_read_bad = -1;

static void *read_reply(void *arg)
{
	int fd = (int)(intptr_t)arg;

	g_read_bad = recv_pattern(fd, 11, BULK);
	return NULL;
}

/* Blocking write of a request, then a blocking read of the reply in another thread. */
static void xfer_blocking(int fd)
{
	pthread_t t;

	CHECK(send_header(fd, BULK, 10) == 0 && send_pattern(fd, 10, BULK) == 0,
	      "blocking: 4 MiB written after the cancellations");
	pthread_create(&t, NULL, read_reply, (void *)(intptr_t)fd);
	pthread_join(t, NULL);
	CHECK(g_read_bad == 0, "blocking: 4 MiB read in another thread, every byte checked");
}

/* One request and its reply on a non-blocking socket, driven by epoll. */
static void xfer_epoll(int fd)
{
	int ep = epoll_create1(0);
	uint8_t out[CHUNK], in[CHUNK], h[16];
	size_t sent = 0, got = 0, hoff = 0;
	uint64_t bad = 0;
	struct epoll_event ev = { .events = EPOLLIN | EPOLLOUT, .data.u64 = 7 };

	fcntl(fd, F_SETFL, fcntl(fd, F_GETFL) | O_NONBLOCK);
	epoll_ctl(ep, EPOLL_CTL_ADD, fd, &ev);
	kit_put64(h, BULK);
	kit_put64(h + 8, 20);
	while (got < BULK) {
		struct epoll_event e;
		ssize_t n;

		if (epoll_wait(ep, &e, 1, -1) < 0 && errno != EINTR)
			break;
		while (hoff < sizeof(h) && (n = write(fd, h + hoff, sizeof(h) - hoff)) > 0)
			hoff += (size_t)n;
		while (hoff == sizeof(h) && sent < BULK) {
			size_t k = BULK - sent < CHUNK ? BULK - sent : CHUNK;

			kit_pattern_fill(out, 20, sent, k);
			if ((n = write(fd, out, k)) <= 0)
				break;
			sent += (size_t)n;
		}
		while ((n = read(fd, in, sizeof(in))) > 0) {
			bad += kit_pattern_check(in, 21, got, (size_t)n);
			got += (size_t)n;
		}
		if (n == 0)
			break;
		if (sent == BULK) {
			ev.events = EPOLLIN;
			epoll_ctl(ep, EPOLL_CTL_MOD, fd, &ev);
		}
	}
	CHECK(sent == BULK && got == BULK && bad == 0,
	      "epoll: 4 MiB each way on a non-blocking socket (sent %zu, got %zu, %llu wrong)",
	      sent, got, (unsigned long long)bad);
	close(ep);
}

/* The listener a cancelled accept() left still accepts: a connection of our own. */
static void self_accept(int lis, const struct sockaddr_in *self)
{
	int c = socket(AF_INET, SOCK_STREAM, 0), a;
	int64_t bad1 = -1, bad2 = -1;

	if (c < 0 || connect(c, (const struct sockaddr *)self, sizeof(*self)) < 0 ||
	    (a = accept(lis, NULL, NULL)) < 0) {
		report(0, "self: connect to our own listener and accept it");
		return;
	}
	if (send_pattern(c, 30, SELF_BYTES) == 0)
		bad1 = recv_pattern(a, 30, SELF_BYTES);
	if (send_pattern(a, 31, SELF_BYTES) == 0)
		bad2 = recv_pattern(c, 31, SELF_BYTES);
	CHECK(bad1 == 0 && bad2 == 0, "self: the listener a cancelled accept left accepts; 64 KiB each way");
	close(a);
	close(c);
}

static int client(const char *addr, int port, const char *self_addr, int lport, const char *nowhere)
{
	struct sockaddr_in self = { .sin_family = AF_INET, .sin_port = htons((uint16_t)lport) };
	int one = 1, lis, d, e, f;
	pthread_t t;

	g_srv = (struct sockaddr_in){ .sin_family = AF_INET, .sin_port = htons((uint16_t)port) };
	g_nowhere = g_srv;
	if (inet_pton(AF_INET, addr, &g_srv.sin_addr) != 1 ||
	    inet_pton(AF_INET, nowhere, &g_nowhere.sin_addr) != 1 ||
	    inet_pton(AF_INET, self_addr, &self.sin_addr) != 1)
		return 1;
	signal(SIGALRM, on_watchdog);
	alarm(60);
	lis = socket(AF_INET, SOCK_STREAM, 0);
	setsockopt(lis, SOL_SOCKET, SO_REUSEADDR, &one, sizeof(one));
	if (lis < 0 || bind(lis, (struct sockaddr *)&self, sizeof(self)) < 0 || listen(lis, 8) < 0) {
		report(0, "listen on %s:%d", self_addr, lport);
		return 1;
	}
	d = conn();
	e = conn();
	f = conn();
	cancel_blocked(lis);

	xfer_blocking(d);
	xfer_epoll(e);
	self_accept(lis, &self);
	pthread_create(&t, NULL, close_cancelled, (void *)(intptr_t)f);
	if (joined_cancelled(t)) {
		int64_t bad = -1;

		if (send_header(f, SMALL, 40) == 0 && send_pattern(f, 40, SMALL) == 0)
			bad = recv_pattern(f, 41, SMALL);
		CHECK(bad == 0, "a close() cancelled before it acted left its connection working "
		      "(256 KiB each way)");
	} else {
		report(1, "close() with a cancel pending closed without being cancelled (allowed)");
	}

	printf("exiting\n");
	fflush(stdout);
	signal(SIGALRM, on_exit_hang);
	alarm(10);
	exit(g_failed);
}

int main(int argc, char **argv)
{
	setvbuf(stdout, NULL, _IOLBF, 0);
	signal(SIGPIPE, SIG_IGN); /* a connection that ends is reported, not fatal */
	if (argc == 3 && strcmp(argv[1], "serve") == 0)
		return serve(atoi(argv[2]));
	if (argc == 7 && strcmp(argv[1], "client") == 0)
		return client(argv[2], atoi(argv[3]), argv[4], atoi(argv[5]), argv[6]);
	fprintf(stderr, "usage: shim_cancel serve PORT | client ADDR PORT SELF LPORT NOWHERE\n");
	return 2;
}
