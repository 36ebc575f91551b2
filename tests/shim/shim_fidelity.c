/*
 * shim_fidelity.c - a plain TCP program (it knows nothing of ri2n) doing, run
 * under ri2n-run in two namespaces, what event-driven servers and proxies do
 * and what a conversion at connect() or listen() must keep working.
 *
 *   shim_fidelity serve PORT [late]
 *                                  an epoll server, one thread: its listener
 *                                  is registered in epoll (and dup'ed) before
 *                                  listen(); echoes every connection until
 *                                  EOF, then closes it.  Prints "listening
 *                                  ri2n ri2n" (the listener and its dup, as
 *                                  the kernel sees them) or "tcp".  late:
 *                                  registered and dup'ed after listen()
 *   shim_fidelity early ADDR PORT  a client that registers its socket in
 *                                  epoll, dup()s it, sets O_ASYNC, F_SETOWN
 *                                  and FD_CLOEXEC on the dup, all before a
 *                                  non-blocking connect(); then echoes
 *                                  ECHO_BYTES through the registration made
 *                                  before connect, every byte checked
 *   shim_fidelity idle ADDR PORT SECS
 *                                  connects, one byte echoed, then idle
 *   shim_fidelity sigclose ADDR PORT
 *                                  connections closed by a SIGALRM handler
 *                                  while the shim is busy on them (see
 *                                  sigclose())
 *   shim_fidelity bind2 PORT       beside a server of PORT: bind() to PORT
 *                                  fails with EADDRINUSE (also with
 *                                  SO_REUSEADDR); PORT+1 binds and listens
 *   shim_fidelity opts ADDR PORT   blocking modes changed between reads (modes()),
 *                                  TCP_USER_TIMEOUT and SO_LINGER against the
 *                                  server: honoured or refused (see opts())
 *   shim_fidelity exiter [ADDR] PORT BYTES
 *                                  accepts on PORT (or connects to ADDR:PORT),
 *                                  writes BYTES and exit()s at once, without
 *                                  close, with its bytes unsent and the
 *                                  peer's unread
 *   shim_fidelity reader [ADDR] PORT BYTES
 *                                  the other end: sends bytes the exiter never
 *                                  reads, waits 1 s, reads (the last 4 MiB
 *                                  slowly), checks every byte and a clean EOF
 *
 * Prints "ok: ..." or "FAIL: ..." per check; exits 1 if any failed.
 * Whether a descriptor really is ri2n's (a socketpair end) is read with the
 * raw getsockname system call, which the shim cannot see.
 */
#define _GNU_SOURCE
#include <arpa/inet.h>
#include <errno.h>
#include <fcntl.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <signal.h>
#include <stdarg.h>
#include <stdint.h>
#include <stdio.h>
#include <sys/ioctl.h>
#include <stdlib.h>
#include <string.h>
#include <pthread.h>
#include <sys/epoll.h>
#include <sys/time.h>
#include <sys/socket.h>
#include <sys/syscall.h>
#include <unistd.h>

#include "ri2n_kit.h"

#define ECHO_BYTES (4 << 20)
#define MAX_CONNS 64
#define MAGIC UINT64_C(0x5eed00000000abcd) /* the client's epoll data */

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

static const char *real_kind(int fd)
{
	struct sockaddr_storage ss;
	socklen_t l = sizeof(ss);

	if (syscall(SYS_getsockname, fd, &ss, &l) < 0)
		return "none";
	return ss.ss_family == AF_UNIX ? "ri2n" : "tcp";
}

/* Byte i of the stream: the test kit's pattern (tools/kit/ri2n_kit.h), seed 1. */
static uint8_t pattern(uint64_t i)
{
	return kit_pattern_byte(1, i);
}

/* ---- the server ---- */

typedef struct conn {
	int fd;
	size_t off, len; /* bytes read and not yet echoed: buf[off, len) */
	int eof;
	uint8_t buf[1 << 16];
} conn;

static conn *g_conns[MAX_CONNS];

static void conn_end(int ep, conn *c)
{
	epoll_ctl(ep, EPOLL_CTL_DEL, c->fd, NULL);
	close(c->fd);
	for (int i = 0; i < MAX_CONNS; i++)
		if (g_conns[i] == c)
			g_conns[i] = NULL;
	free(c);
}

/* How a connection ended, for the test script: "end: eof" or "end: reset" (or another error). */
static int conn_ended(const char *how)
{
	printf("end: %s\n", how);
	fflush(stdout);
	return -1;
}

/* Reads and echoes what it can without blocking; 0 while the connection lives. */
static int conn_serve(conn *c)
{
	for (;;) {
		if (c->off < c->len) {
			ssize_t w = write(c->fd, c->buf + c->off, c->len - c->off);

			if (w < 0 && errno == EAGAIN)
				return 0;
			if (w < 0)
				return conn_ended(errno == ECONNRESET ? "reset" : strerror(errno));
			c->off += (size_t)w;
			continue;
		}
		if (c->eof)
			return conn_ended("eof"); /* everything echoed: close */
		c->off = c->len = 0;
		ssize_t r = read(c->fd, c->buf, sizeof(c->buf));

		if (r < 0 && errno == EAGAIN)
			return 0;
		if (r < 0)
			return conn_ended(errno == ECONNRESET ? "reset" : strerror(errno));
		if (r == 0)
			c->eof = 1;
		c->len = (size_t)r;
	}
}

static void serve_accept(int ep, int lfd)
{
	for (;;) {
		int fd = accept4(lfd, NULL, NULL, SOCK_NONBLOCK | SOCK_CLOEXEC), i;
		struct epoll_event ev = { .events = EPOLLIN | EPOLLOUT | EPOLLET };
		conn *c;

		if (fd < 0)
			return;
		for (i = 0; i < MAX_CONNS && g_conns[i]; i++)
			;
		c = i < MAX_CONNS ? calloc(1, sizeof(*c)) : NULL;
		if (!c) {
			close(fd);
			continue;
		}
		c->fd = fd;
		g_conns[i] = c;
		ev.data.ptr = c;
		epoll_ctl(ep, EPOLL_CTL_ADD, fd, &ev);
	}
}

/* late: register and dup after listen() (what works without carrying registrations) */
static int serve(int port, int late)
{
	struct sockaddr_in a = { .sin_family = AF_INET, .sin_port = htons((uint16_t)port) };
	int lfd = socket(AF_INET, SOCK_STREAM | SOCK_NONBLOCK, 0), one = 1;
	int ep = epoll_create1(EPOLL_CLOEXEC), dup_l;
	struct epoll_event ev = { .events = EPOLLIN, .data.ptr = NULL };

	signal(SIGPIPE, SIG_IGN);
	setsockopt(lfd, SOL_SOCKET, SO_REUSEADDR, &one, sizeof(one));
	if (bind(lfd, (struct sockaddr *)&a, sizeof(a)) < 0) {
		perror("fidelity serve: bind");
		return 1;
	}
	/* as event loops do: registered first, listening after */
	if (!late && epoll_ctl(ep, EPOLL_CTL_ADD, lfd, &ev) < 0) {
		perror("fidelity serve: epoll_ctl");
		return 1;
	}
	dup_l = late ? -1 : dup(lfd);
	if (listen(lfd, 64) < 0) {
		perror("fidelity serve: listen");
		return 1;
	}
	if (late) {
		epoll_ctl(ep, EPOLL_CTL_ADD, lfd, &ev);
		dup_l = dup(lfd);
	}
	printf("listening %s %s\n", real_kind(lfd), real_kind(dup_l));
	fflush(stdout);
	for (;;) {
		struct epoll_event e[16];
		int n = epoll_wait(ep, e, 16, -1);

		for (int i = 0; i < n; i++) {
			conn *c = e[i].data.ptr;

			if (!c)
				serve_accept(ep, lfd);
			else if (conn_serve(c) < 0)
				conn_end(ep, c);
		}
	}
}

/* ---- the client ---- */

static volatile sig_atomic_t g_sigio;

static void on_sigio(int sig)
{
	(void)sig;
	g_sigio++;
}

/* Echoes len bytes through fd, waiting in ep (edge-triggered, data MAGIC). */
static int echo_epoll(int ep, int fd, size_t len)
{
	static uint8_t out[1 << 16], in[1 << 16];
	size_t sent = 0, got = 0;

	while (got < len) {
		struct epoll_event e[4];
		int n = epoll_wait(ep, e, 4, 10000);

		if (n < 0 && errno == EINTR)
			continue;
		if (n <= 0)
			return -1; /* 10 s without an event: the registration was lost */
		for (int i = 0; i < n; i++) {
			if (e[i].data.u64 != MAGIC)
				return -3;
			while (sent < len) {
				size_t k = len - sent < sizeof(out) ? len - sent : sizeof(out);
				ssize_t w;

				for (size_t j = 0; j < k; j++)
					out[j] = pattern(sent + j);
				w = write(fd, out, k);
				if (w < 0 && errno != EAGAIN)
					return -1;
				if (w <= 0)
					break;
				sent += (size_t)w;
				if (sent == len)
					shutdown(fd, SHUT_WR);
			}
			while (got < len) {
				ssize_t r = read(fd, in, sizeof(in));

				if (r == 0 || (r < 0 && errno != EAGAIN && errno != EINTR)) {
					fprintf(stderr, "fidelity: read %zd after %zu of %zu bytes back (%zu sent): %s\n",
						r, got, len, sent, r ? strerror(errno) : "end of file");
					return -1;
				}
				if (r < 0)
					break;
				for (ssize_t j = 0; j < r; j++)
					if (in[j] != pattern(got + (size_t)j))
						return -2;
				got += (size_t)r;
			}
		}
	}
	return 0;
}

static int early(const char *addr, int port)
{
	struct sockaddr_in a = { .sin_family = AF_INET, .sin_port = htons((uint16_t)port) };
	int fd = socket(AF_INET, SOCK_STREAM | SOCK_NONBLOCK, 0), ep = epoll_create1(0), d, rc;
	struct epoll_event ev = { .events = EPOLLIN | EPOLLOUT | EPOLLET, .data.u64 = MAGIC }, got;
	int err = -1;
	socklen_t el = sizeof(err);

	if (inet_pton(AF_INET, addr, &a.sin_addr) != 1)
		return 2;
	signal(SIGPIPE, SIG_IGN);
	signal(SIGIO, on_sigio);
	/* everything tied to the open file or the number, before connect */
	CHECK(epoll_ctl(ep, EPOLL_CTL_ADD, fd, &ev) == 0, "epoll_ctl ADD before connect");
	d = dup(fd);
	CHECK(d >= 0 && fcntl(d, F_SETFD, FD_CLOEXEC) == 0, "dup before connect, FD_CLOEXEC on the dup");
	CHECK(fcntl(fd, F_SETOWN, getpid()) == 0 &&
	      fcntl(fd, F_SETFL, fcntl(fd, F_GETFL) | O_ASYNC) == 0, "F_SETOWN and O_ASYNC before connect");

	rc = connect(fd, (struct sockaddr *)&a, sizeof(a));
	CHECK(rc < 0 && errno == EINPROGRESS, "non-blocking connect: EINPROGRESS");
	CHECK(!strcmp(real_kind(fd), "ri2n") && !strcmp(real_kind(d), "ri2n"),
	      "the descriptor and its dup are both ri2n's (%s, %s)", real_kind(fd), real_kind(d));
	do
		rc = epoll_wait(ep, &got, 1, 10000);
	while (rc < 0 && errno == EINTR);
	CHECK(rc == 1 && (got.events & EPOLLOUT) && got.data.u64 == MAGIC,
	      "the registration made before connect reports it connected, with the program's data");
	CHECK(getsockopt(fd, SOL_SOCKET, SO_ERROR, &err, &el) == 0 && err == 0, "SO_ERROR 0");
	CHECK((fcntl(fd, F_GETFL) & (O_NONBLOCK | O_ASYNC)) == (O_NONBLOCK | O_ASYNC) &&
	      fcntl(fd, F_GETOWN) == getpid(), "O_NONBLOCK, O_ASYNC and the owner carried over");
	CHECK(fcntl(d, F_GETFD) == FD_CLOEXEC && fcntl(fd, F_GETFD) == 0,
	      "each number's FD_CLOEXEC carried over");
	/* an O_ASYNC program waits for the signal, not in poll: one byte there and back */
	g_sigio = 0;
	CHECK(write(d, "x", 1) == 1, "a byte written through the dup");
	for (int i = 0; i < 1000 && !g_sigio; i++)
		usleep(10000);
	CHECK(g_sigio > 0, "SIGIO delivered to the owner set before connect when the echo came back");
	{
		char c = 0;

		for (int i = 0; i < 1000 && read(fd, &c, 1) < 0 && errno == EAGAIN; i++)
			usleep(10000);
		CHECK(c == 'x', "the echoed byte read");
	}
	rc = echo_epoll(ep, fd, ECHO_BYTES);
	CHECK(rc == 0, "echo of %d bytes through the registration made before connect, every byte "
		       "checked (%d)", ECHO_BYTES, rc);
	close(d);
	close(fd);
	close(ep);
	return g_failed;
}

/* ---- exit with unread and unsent data ---- */

#define UNREAD_BYTES (1 << 20) /* the reader sends these; the exiter never reads them */
#define SLOW_TAIL (4 << 20)    /* the reader's last bytes go slowly: longer than ri2n's 1 s grace */

/* A connected socket: accepted on PORT (addr NULL) or connected to ADDR:PORT. */
static int get_conn(const char *addr, int port)
{
	struct sockaddr_in a = { .sin_family = AF_INET, .sin_port = htons((uint16_t)port) };
	int fd = socket(AF_INET, SOCK_STREAM, 0), one = 1, c;

	if (fd < 0)
		return -1;
	if (addr) {
		if (inet_pton(AF_INET, addr, &a.sin_addr) != 1 ||
		    connect(fd, (struct sockaddr *)&a, sizeof(a)) < 0)
			return -1;
		return fd;
	}
	setsockopt(fd, SOL_SOCKET, SO_REUSEADDR, &one, sizeof(one));
	if (bind(fd, (struct sockaddr *)&a, sizeof(a)) < 0 || listen(fd, 4) < 0)
		return -1;
	c = accept(fd, NULL, NULL);
	close(fd);
	return c;
}

/*
 * Writes `bytes` of the pattern and exits at once through exit(): the bytes
 * still unsent, the peer's UNREAD_BYTES unread, the socket never closed.
 */
static int exiter(const char *addr, int port, size_t bytes)
{
	static uint8_t buf[1 << 16];
	int fd = get_conn(addr, port);
	size_t sent = 0;

	if (fd < 0) {
		perror("fidelity exiter: connection");
		return 1;
	}
	signal(SIGPIPE, SIG_IGN);
	while (sent < bytes) {
		size_t k = bytes - sent < sizeof(buf) ? bytes - sent : sizeof(buf);
		ssize_t w;

		for (size_t j = 0; j < k; j++)
			buf[j] = pattern(sent + j);
		w = write(fd, buf, k);
		if (w <= 0) {
			perror("fidelity exiter: write");
			return 1;
		}
		sent += (size_t)w;
	}
	printf("wrote %zu bytes, exiting without close\n", sent);
	fflush(stdout);
	exit(0);
}

/*
 * Sends UNREAD_BYTES the exiter never reads, waits, then reads: fast, and the
 * last SLOW_TAIL bytes slowly; every byte checked; the end must be a clean
 * EOF exactly after `bytes`.
 */
static int reader(const char *addr, int port, size_t bytes)
{
	static uint8_t buf[1 << 16];
	int fd = get_conn(addr, port);
	size_t got = 0;
	ssize_t r;

	if (fd < 0) {
		perror("fidelity reader: connection");
		return 1;
	}
	signal(SIGPIPE, SIG_IGN);
	memset(buf, 'u', sizeof(buf));
	for (size_t s = 0; s < UNREAD_BYTES; s += sizeof(buf))
		if (send(fd, buf, sizeof(buf), MSG_NOSIGNAL) <= 0)
			break; /* the exiter may be gone: its business */
	sleep(1); /* the exiter exits meanwhile, its bytes still on their way */
	for (;;) {
		size_t want = got + SLOW_TAIL >= bytes ? 8192 : sizeof(buf);

		r = read(fd, buf, want);
		if (r <= 0)
			break;
		for (ssize_t j = 0; j < r; j++)
			if (buf[j] != pattern(got + (size_t)j)) {
				report(0, "byte %zu differs", got + (size_t)j);
				return 1;
			}
		got += (size_t)r;
		if (want < sizeof(buf))
			usleep(5000); /* ~1.6 MB/s: the tail takes ~2.5 s */
	}
	CHECK(r == 0 && got == bytes, "%zu of %zu bytes, every one checked, then %s", got, bytes,
	      r == 0 ? "a clean end of file" : strerror(errno));
	close(fd);
	return g_failed;
}
/* ---- errors and options as TCP's ---- */

/* A second server binding a port already served: EADDRINUSE at bind(), as TCP. */
static void bind_taken(int port, const char *whose)
{
	struct sockaddr_in a = { .sin_family = AF_INET, .sin_port = htons((uint16_t)port) };
	int one = 1;

	for (int reuse = 0; reuse <= 1; reuse++) {
		int fd = socket(AF_INET, SOCK_STREAM, 0), rc;

		if (reuse)
			setsockopt(fd, SOL_SOCKET, SO_REUSEADDR, &one, sizeof(one));
		rc = bind(fd, (struct sockaddr *)&a, sizeof(a));
		CHECK(rc < 0 && errno == EADDRINUSE, "bind to port %d, served by %s%s: EADDRINUSE",
		      port, whose, reuse ? ", with SO_REUSEADDR" : "");
		close(fd);
	}
}

static int bind2(int port)
{
	struct sockaddr_in a = { .sin_family = AF_INET, .sin_port = htons((uint16_t)(port + 1)) };
	int fd = socket(AF_INET, SOCK_STREAM, 0);

	bind_taken(port, "another process");
	/* a free port: bind and listen work there, and then it is taken */
	CHECK(bind(fd, (struct sockaddr *)&a, sizeof(a)) == 0 && listen(fd, 4) == 0 &&
	      !strcmp(real_kind(fd), "ri2n"), "bind and listen on a free port: a ri2n listener");
	bind_taken(port + 1, "this process");
	close(fd);
	return g_failed;
}

/*
 * TCP_USER_TIMEOUT and SO_LINGER: honoured or refused, never ignored.  The
 * server (serve) prints how each connection ended; the test script reads
 * "end: reset" for the abortive close.  Last, a connection with a 1.5 s
 * TCP_USER_TIMEOUT prints "blocked" and reads: the script black-holes every
 * rail, the read must fail with ETIMEDOUT (ri2n's default would take 30 s:
 * 20 s fails the check).
 */
/* ---- blocking mode changed between reads ---- */

struct late_write {
	int fd;
	const char *what;
};

static void *late_writer(void *arg)
{
	struct late_write *w = arg;

	usleep(200000);
	if (write(w->fd, w->what, strlen(w->what)) != (ssize_t)strlen(w->what))
		report(0, "the late write of '%s'", w->what);
	return NULL;
}

/* A read that must wait for the echo of what a thread writes 200 ms later: whether it got it. */
static int waits_for_echo(int fd, const char *what)
{
	struct late_write w = { fd, what };
	char buf[16] = { 0 };
	size_t n = strlen(what), got = 0;
	pthread_t t;

	pthread_create(&t, NULL, late_writer, &w);
	while (got < n) {
		ssize_t r = read(fd, buf + got, n - got);

		if (r <= 0)
			break;
		got += (size_t)r;
	}
	pthread_join(t, NULL);
	return got == n && !memcmp(buf, what, n);
}

/*
 * ri2n remembers, between reads, that a descriptor is blocking and has no
 * SO_RCVTIMEO (rather than asking the kernel at every read that finds
 * nothing): each change the program makes must count at the next read.  A
 * read believing a stale mode would block for good (the watchdog) or fail.
 */
static void modes(int fd)
{
	struct timeval tv = { 0, 200000 }, none = { 0, 0 };
	int on = 1, off = 0, fl = fcntl(fd, F_GETFL);
	char c;

	CHECK(waits_for_echo(fd, "m1"), "a blocking read waits for its bytes");
	fcntl(fd, F_SETFL, fl | O_NONBLOCK);
	CHECK(read(fd, &c, 1) < 0 && errno == EAGAIN, "O_NONBLOCK set by fcntl: the next read, EAGAIN");
	fcntl(fd, F_SETFL, fl & ~O_NONBLOCK);
	CHECK(waits_for_echo(fd, "m2"), "O_NONBLOCK cleared: the next read waits again");
	ioctl(fd, FIONBIO, &on);
	CHECK(read(fd, &c, 1) < 0 && errno == EAGAIN, "FIONBIO on: the next read, EAGAIN");
	ioctl(fd, FIONBIO, &off);
	setsockopt(fd, SOL_SOCKET, SO_RCVTIMEO, &tv, sizeof(tv));
	CHECK(read(fd, &c, 1) < 0 && (errno == EAGAIN || errno == EWOULDBLOCK),
	      "FIONBIO off, SO_RCVTIMEO 200 ms: the next read times out");
	setsockopt(fd, SOL_SOCKET, SO_RCVTIMEO, &none, sizeof(none));
	CHECK(waits_for_echo(fd, "m3"), "SO_RCVTIMEO cleared: the next read waits for its bytes");
}

static int opts(const char *addr, int port)
{
	struct sockaddr_in a = { .sin_family = AF_INET, .sin_port = htons((uint16_t)port) };
	int fd = socket(AF_INET, SOCK_STREAM, 0), v = 2000, got = 0;
	struct linger l = { 1, 5 }, lg = { 0, 0 };
	socklen_t gl = sizeof(got), ll = sizeof(lg);
	char c;

	if (inet_pton(AF_INET, addr, &a.sin_addr) != 1)
		return 2;
	signal(SIGPIPE, SIG_IGN);
	CHECK(setsockopt(fd, IPPROTO_TCP, TCP_USER_TIMEOUT, &v, sizeof(v)) == 0,
	      "TCP_USER_TIMEOUT 2000 before connect");
	CHECK(connect(fd, (struct sockaddr *)&a, sizeof(a)) == 0 && !strcmp(real_kind(fd), "ri2n"),
	      "connected over ri2n");
	CHECK(getsockopt(fd, IPPROTO_TCP, TCP_USER_TIMEOUT, &got, &gl) == 0 && got == 2000,
	      "TCP_USER_TIMEOUT reads back 2000");
	v = 9000;
	CHECK(setsockopt(fd, IPPROTO_TCP, TCP_USER_TIMEOUT, &v, sizeof(v)) < 0 && errno == EISCONN,
	      "TCP_USER_TIMEOUT changed once connected: EISCONN (ri2n fixes it at connect)");
	CHECK(setsockopt(fd, SOL_SOCKET, SO_LINGER, &l, sizeof(l)) < 0 && errno == EOPNOTSUPP,
	      "SO_LINGER {1, 5}: EOPNOTSUPP (ri2n's close does not block)");
	l.l_linger = 0;
	CHECK(setsockopt(fd, SOL_SOCKET, SO_LINGER, &l, sizeof(l)) == 0 &&
	      getsockopt(fd, SOL_SOCKET, SO_LINGER, &lg, &ll) == 0 && lg.l_onoff == 1 && lg.l_linger == 0,
	      "SO_LINGER {1, 0} set and read back");
	modes(fd);
	CHECK(write(fd, "abc", 3) == 3 && read(fd, &c, 1) == 1, "an echo before the abortive close");
	close(fd);

	/* the dead-peer timeout a TCP program asked for */
	fd = socket(AF_INET, SOCK_STREAM, 0);
	v = 1500;
	setsockopt(fd, IPPROTO_TCP, TCP_USER_TIMEOUT, &v, sizeof(v));
	if (connect(fd, (struct sockaddr *)&a, sizeof(a)) < 0 || write(fd, "x", 1) != 1 ||
	    read(fd, &c, 1) != 1) {
		report(0, "a second connection");
		return 1;
	}
	printf("blocked\n");
	fflush(stdout);
	{
		struct timeval tv = { 20, 0 };
		ssize_t r;

		setsockopt(fd, SOL_SOCKET, SO_RCVTIMEO, &tv, sizeof(tv));
		r = read(fd, &c, 1);
		CHECK(r < 0 && errno == ETIMEDOUT,
		      "every rail black-holed: the read fails with ETIMEDOUT after TCP_USER_TIMEOUT");
	}
	close(fd);
	return g_failed;
}
/* ---- close() in a signal handler ---- */

#define SIG_ROUNDS 200

static volatile int g_victim = -1; /* the handler closes this descriptor */
static volatile int g_closed, g_progress;

static void on_alarm(int sig)
{
	int fd = __atomic_exchange_n(&g_victim, -1, __ATOMIC_ACQ_REL);

	(void)sig;
	if (fd >= 0 && close(fd) == 0)
		g_closed++;
}

static void *watchdog(void *arg)
{
	int last = -1;

	sigset_t alrm;

	(void)arg;
	sigemptyset(&alrm);
	sigaddset(&alrm, SIGALRM);
	pthread_sigmask(SIG_BLOCK, &alrm, NULL); /* the handler runs in the threads under test */
	for (;;) {
		sleep(20);
		if (g_progress == last) {
			printf("FAIL: no progress in 20 s after %d of %d rounds: a close in the signal "
			       "handler deadlocked\n", last, SIG_ROUNDS);
			fflush(stdout);
			_exit(1);
		}
		last = g_progress;
	}
	return NULL;
}

/*
 * SIG_ROUNDS connections, each closed by a SIGALRM handler (a 1 ms timer)
 * while the main thread keeps calling into the shim on it (epoll_ctl,
 * getsockopt, setsockopt: the shim's and ri2n's locks); then a connection
 * still echoes.  A close that took those locks in the handler would
 * deadlock (the watchdog says so).
 */
static int sigclose(const char *addr, int port)
{
	struct sockaddr_in a = { .sin_family = AF_INET, .sin_port = htons((uint16_t)port) };
	struct itimerval it = { { 0, 1000 }, { 0, 1000 } };
	struct sigaction sa, old;
	pthread_t t;
	int ep = epoll_create1(0);

	if (inet_pton(AF_INET, addr, &a.sin_addr) != 1)
		return 2;
	signal(SIGPIPE, SIG_IGN);
	memset(&sa, 0, sizeof(sa));
	sa.sa_handler = on_alarm;
	sa.sa_flags = SA_RESTART;
	CHECK(sigaction(SIGALRM, &sa, NULL) == 0 && sigaction(SIGALRM, NULL, &old) == 0 &&
	      old.sa_handler == on_alarm, "sigaction: the handler reads back as installed");
	pthread_create(&t, NULL, watchdog, NULL);
	setitimer(ITIMER_REAL, &it, NULL);
	for (int r = 0; r < SIG_ROUNDS; r++) {
		int fd = socket(AF_INET, SOCK_STREAM, 0), one = 1, v;
		socklen_t vl = sizeof(v);
		struct epoll_event ev = { .events = EPOLLIN, .data.u64 = 1 };

		sigset_t alrm, prev;

		/* the connect itself is not what is tested: no signal meanwhile */
		sigemptyset(&alrm);
		sigaddset(&alrm, SIGALRM);
		pthread_sigmask(SIG_BLOCK, &alrm, &prev);
		if (connect(fd, (struct sockaddr *)&a, sizeof(a)) < 0) {
			report(0, "round %d: connect", r);
			return 1;
		}
		pthread_sigmask(SIG_SETMASK, &prev, NULL);
		epoll_ctl(ep, EPOLL_CTL_ADD, fd, &ev);
		__atomic_store_n(&g_victim, fd, __ATOMIC_RELEASE);
		while (__atomic_load_n(&g_victim, __ATOMIC_ACQUIRE) == fd) {
			ev.events ^= EPOLLOUT;
			epoll_ctl(ep, EPOLL_CTL_MOD, fd, &ev);
			getsockopt(fd, SOL_SOCKET, SO_TYPE, &v, &vl);
			setsockopt(fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof(one));
		}
		g_progress = r + 1;
	}
	it = (struct itimerval){ { 0, 0 }, { 0, 0 } };
	setitimer(ITIMER_REAL, &it, NULL);
	CHECK(g_closed == SIG_ROUNDS, "%d connections closed in a signal handler while the shim was "
				      "busy on them", g_closed);
	{
		int fd = socket(AF_INET, SOCK_STREAM, 0);
		char buf[8] = { 0 };

		CHECK(connect(fd, (struct sockaddr *)&a, sizeof(a)) == 0 && !strcmp(real_kind(fd), "ri2n") &&
		      write(fd, "after", 5) == 5 && read(fd, buf, 5) == 5 && !memcmp(buf, "after", 5),
		      "a connection after them echoes");
		close(fd);
	}
	close(ep);
	return g_failed;
}

int main(int argc, char **argv)
{
	if ((argc == 3 || argc == 4) && !strcmp(argv[1], "serve"))
		return serve(atoi(argv[2]), argc == 4 && !strcmp(argv[3], "late"));
	if (argc == 4 && !strcmp(argv[1], "early"))
		return early(argv[2], atoi(argv[3]));
	if (argc == 5 && !strcmp(argv[1], "idle")) {
		/* idle ADDR PORT SECS: one echoed byte, then an idle connection for SECS */
		struct sockaddr_in a = { .sin_family = AF_INET, .sin_port = htons((uint16_t)atoi(argv[3])) };
		int fd = socket(AF_INET, SOCK_STREAM, 0);
		char c;

		if (inet_pton(AF_INET, argv[2], &a.sin_addr) != 1 ||
		    connect(fd, (struct sockaddr *)&a, sizeof(a)) < 0 || write(fd, "i", 1) != 1 ||
		    read(fd, &c, 1) != 1)
			return 1;
		printf("idle\n");
		fflush(stdout);
		sleep((unsigned)atoi(argv[4]));
		return 0;
	}
	if (argc == 4 && !strcmp(argv[1], "sigclose"))
		return sigclose(argv[2], atoi(argv[3]));
	if (argc == 3 && !strcmp(argv[1], "bind2"))
		return bind2(atoi(argv[2]));
	if (argc == 4 && !strcmp(argv[1], "opts"))
		return opts(argv[2], atoi(argv[3]));
	if (argc >= 4 && (!strcmp(argv[1], "exiter") || !strcmp(argv[1], "reader"))) {
		/* exiter|reader PORT BYTES (accepts) or exiter|reader ADDR PORT BYTES (connects) */
		const char *addr = argc == 5 ? argv[2] : NULL;
		int port = atoi(argv[argc - 2]);
		size_t bytes = strtoull(argv[argc - 1], NULL, 0);

		return argv[1][0] == 'e' ? exiter(addr, port, bytes) : reader(addr, port, bytes);
	}
	fprintf(stderr, "usage: shim_fidelity serve PORT | early ADDR PORT |\n"
			"       exiter|reader [ADDR] PORT BYTES | bind2 PORT | opts ADDR PORT |\n"
			"       idle ADDR PORT SECS | sigclose ADDR PORT\n");
	return 2;
}
