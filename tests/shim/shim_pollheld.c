/*
 * shim_pollheld.c - a plain TCP program waiting in poll and select, run
 * under ri2n-run in two namespaces: the bytes a wait finds in ri2n's
 * buffer stay there for the read that follows (no copy through the
 * descriptor), and a reader the shim does not see still gets them.
 *
 *   shim_pollheld serve PORT        accepts two connections and serves
 *                                   their requests in one thread, waiting
 *                                   in poll and select by turns: each
 *                                   request (a header and up to 1000 bytes,
 *                                   checked) asks for a reply of N bytes
 *   shim_pollheld client ADDR PORT  two connections; ROUNDS rounds of a
 *                                   request on each and both replies read,
 *                                   waiting in poll (even rounds) or select
 *                                   (odd) on both at once.  After each wake-up
 *                                   the kernel's count of bytes in the
 *                                   descriptor (the raw FIONREAD system call)
 *                                   is compared with the shim's: a
 *                                   descriptor reported readable with its
 *                                   bytes in ri2n's buffer only is a held
 *                                   report, and both waits must give some.
 *                                   Then, on each connection (poll, then
 *                                   select), a reply reported held is left
 *                                   unread past ri2n's age limit and read by
 *                                   the raw read system call (a reader the
 *                                   shim does not see): it must come
 *                                   whole within 3 s (the age limit is
 *                                   50 ms; with two connections to one
 *                                   peer, one of them has no timer of its
 *                                   own running meanwhile); and again with no pause, by
 *                                   non-blocking raw reads between waits
 *                                   that keep reporting it.  The same
 *                                   through an epoll set.  Then replies
 *                                   through an edge-triggered set that come
 *                                   while the program is away from its wait
 *                                   (spent_report).  Every byte of both
 *                                   directions checked.
 *
 * Prints "ok: ..." or "FAIL: ..." per check; exits 1 if any failed.
 */
#define _GNU_SOURCE
#include <arpa/inet.h>
#include <errno.h>
#include <netinet/in.h>
#include <poll.h>
#include <signal.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/epoll.h>
#include <sys/ioctl.h>
#include <sys/select.h>
#include <sys/socket.h>
#include <sys/syscall.h>
#include <time.h>
#include <unistd.h>

#define ROUNDS 300
#define ROUNDS_ET 20 /* spent_report */
#define NCONN 2
#define HDR 8
#define MAX_REPLY (256 << 10)

static int g_failed, g_bad; /* any check failed; a byte differed */

static void fail(const char *what)
{
	printf("FAIL: %s\n", what);
	fflush(stdout);
	g_failed = 1;
}

static void die(const char *what)
{
	printf("FAIL: %s: %s\n", what, strerror(errno));
	fflush(stdout);
	exit(1);
}

/* The byte at offset off of connection c's stream in direction dir. */
static uint8_t pat(int c, int dir, uint64_t off)
{
	return (uint8_t)(off * 131u + (off >> 11) * 7u + (unsigned)c * 29u + (unsigned)dir * 101u);
}

static void fill(uint8_t *b, size_t n, int c, int dir, uint64_t off)
{
	for (size_t i = 0; i < n; i++)
		b[i] = pat(c, dir, off + i);
}

static int check(const uint8_t *b, size_t n, int c, int dir, uint64_t off)
{
	for (size_t i = 0; i < n; i++)
		if (b[i] != pat(c, dir, off + i))
			return 0;
	return 1;
}

static void write_all(int fd, const uint8_t *b, size_t n)
{
	while (n > 0) {
		ssize_t w = write(fd, b, n);

		if (w < 0 && errno == EINTR)
			continue;
		if (w <= 0)
			die("write");
		b += w;
		n -= (size_t)w;
	}
}

enum { BY_POLL, BY_SELECT, BY_EPOLL };
static const char *const g_by[] = { "poll", "select", "epoll" };

/* Waits on fd[0..n) for reading, in poll, select or epoll; rd[i] says which are readable. */
static int wait_in(const int *fd, int n, int by, int *rd)
{
	static int ep = -1;
	int rc;

	if (by == BY_EPOLL) { /* one set, level-triggered; a socket stays in once added */
		struct epoll_event ev[NCONN + 1];

		if (ep < 0 && (ep = epoll_create1(0)) < 0)
			die("epoll_create1");
		for (int i = 0; i < n; i++) {
			struct epoll_event e = { .events = EPOLLIN, .data.fd = fd[i] };

			if (fd[i] >= 0 && epoll_ctl(ep, EPOLL_CTL_ADD, fd[i], &e) < 0 && errno != EEXIST)
				die("epoll_ctl");
		}
		rc = epoll_wait(ep, ev, NCONN + 1, 10000);
		for (int i = 0; i < n; i++) {
			rd[i] = 0;
			for (int k = 0; k < rc; k++)
				rd[i] |= fd[i] >= 0 && ev[k].data.fd == fd[i];
		}
	} else if (by == BY_SELECT) {
		fd_set s;
		struct timeval tv = { 10, 0 };
		int max = -1;

		FD_ZERO(&s);
		for (int i = 0; i < n; i++) {
			if (fd[i] < 0)
				continue;
			FD_SET(fd[i], &s);
			max = fd[i] > max ? fd[i] : max;
		}
		rc = select(max + 1, &s, NULL, NULL, &tv);
		for (int i = 0; i < n; i++)
			rd[i] = rc > 0 && fd[i] >= 0 && FD_ISSET(fd[i], &s);
	} else {
		struct pollfd p[NCONN];

		for (int i = 0; i < n; i++)
			p[i] = (struct pollfd){ .fd = fd[i], .events = POLLIN };
		rc = poll(p, (nfds_t)n, 10000);
		for (int i = 0; i < n; i++)
			rd[i] = rc > 0 && (p[i].revents & (POLLIN | POLLHUP | POLLERR));
	}
	if (rc == 0) {
		errno = ETIMEDOUT;
		die(g_by[by]);
	}
	if (rc < 0)
		die(g_by[by]);
	return rc;
}

/* ---- server ---- */

typedef struct {
	int fd;
	uint8_t req[HDR + 1000];
	size_t have;
	uint64_t in, out; /* stream offsets: client to server, server to client */
} sconn;

static int serve(int port)
{
	struct sockaddr_in a = { .sin_family = AF_INET, .sin_port = htons((uint16_t)port) };
	static uint8_t reply[MAX_REPLY];
	sconn c[NCONN];
	int l = socket(AF_INET, SOCK_STREAM, 0), one = 1, open = NCONN, turn = 0;

	setsockopt(l, SOL_SOCKET, SO_REUSEADDR, &one, sizeof(one));
	if (l < 0 || bind(l, (struct sockaddr *)&a, sizeof(a)) < 0 || listen(l, 4) < 0)
		die("listen");
	printf("listening\n");
	fflush(stdout);
	for (int i = 0; i < NCONN; i++)
		c[i].fd = -1;
	for (int i = 0; i < NCONN; i++) { /* each in the client's slot */
		int fd = accept(l, NULL, NULL);
		uint8_t id;

		if (fd < 0 || read(fd, &id, 1) != 1 || id >= NCONN || c[id].fd >= 0)
			die("accept");
		memset(&c[id], 0, sizeof(c[id]));
		c[id].fd = fd;
	}
	while (open > 0) {
		int fd[NCONN], rd[NCONN];

		for (int i = 0; i < NCONN; i++)
			fd[i] = c[i].fd;
		wait_in(fd, NCONN, turn++ & 1 ? BY_SELECT : BY_POLL, rd);
		for (int i = 0; i < NCONN; i++) {
			uint32_t want, len;
			ssize_t r;

			if (!rd[i])
				continue;
			r = read(c[i].fd, c[i].req + c[i].have,
				 c[i].have < HDR ? HDR - c[i].have : HDR + 1000 - c[i].have);
			if (r <= 0)
				die("server read");
			c[i].have += (size_t)r;
			if (c[i].have < HDR)
				continue;
			memcpy(&want, c[i].req, 4);
			memcpy(&len, c[i].req + 4, 4);
			if (len > 1000 || want > MAX_REPLY)
				die("a bad request");
			if (c[i].have < HDR + len)
				continue;
			if (!check(c[i].req + HDR, len, i, 0, c[i].in)) {
				fail("server: a request's bytes differ");
				g_bad = 1;
			}
			c[i].in += len;
			c[i].have = 0;
			if (want == 0) {
				close(c[i].fd);
				c[i].fd = -1;
				open--;
				continue;
			}
			fill(reply, want, i, 1, c[i].out);
			write_all(c[i].fd, reply, want);
			c[i].out += want;
		}
	}
	return g_failed;
}

/* ---- client ---- */

typedef struct {
	int fd;
	uint64_t in, out;
	size_t left; /* reply bytes still to read */
} cconn;

static void request(cconn *c, int i, uint32_t want, uint32_t len)
{
	uint8_t b[HDR + 1000];

	memcpy(b, &want, 4);
	memcpy(b + 4, &len, 4);
	fill(b + HDR, len, i, 0, c->out);
	write_all(c->fd, b, HDR + len);
	c->out += len;
	c->left = want;
}

/* The kernel's count of the bytes in fd (the descriptor), not the shim's. */
static int kernel_inq(int fd)
{
	int n = -1;

	if (syscall(SYS_ioctl, fd, FIONREAD, &n) < 0)
		die("raw FIONREAD");
	return n;
}

static void on_alarm(int sig)
{
	static const char m[] = "FAIL: a raw reader waited 3 s: bytes held in ri2n's buffer did not "
				"reach the descriptor (the age limit is 50 ms)\n";

	(void)sig;
	(void)!write(1, m, sizeof(m) - 1);
	_exit(1);
}

/*
 * Connection i: a reply reported readable from ri2n's buffer, then left
 * unread past the age limit, is read whole by raw read system calls.
 * spin: no pause; the raw reads are non-blocking, each after a wait that
 * reports the socket readable again (a program whose reads the shim does
 * not see, polling through it): the bytes must reach the descriptor all
 * the same.
 */
static void unseen_reader(cconn *c, int i, int by, int spin)
{
	static uint8_t buf[32768]; /* twice a reply: the shim's read ends short */
	const size_t want = sizeof(buf) / 2;
	char msg[160];

	for (int attempt = 0; attempt < 50; attempt++) {
		int rd, k;
		size_t got = 0;

		request(c, i, (uint32_t)want, 0);
		wait_in(&c->fd, 1, by, &rd);
		k = kernel_inq(c->fd);
		if (k != 0) { /* in the descriptor: the shim's read (which finds it empty after) */
			while (got < want) {
				ssize_t r = read(c->fd, buf + got, sizeof(buf) - got);

				if (r <= 0)
					die("read");
				got += (size_t)r;
			}
			if (!check(buf, got, i, 1, c->in)) {
				fail("a reply's bytes differ");
				g_bad = 1;
			}
			c->in += got;
			continue;
		}
		if (!spin) {
			struct timespec ts = { 0, 300 * 1000000L };

			nanosleep(&ts, NULL); /* past the age limit (50 ms) */
		}
		alarm(3);
		while (got < want) {
			ssize_t r;

			if (spin) {
				r = syscall(SYS_recvfrom, c->fd, buf + got, want - got,
					    MSG_DONTWAIT, NULL, NULL);
				if (r < 0 && errno == EAGAIN) {
					wait_in(&c->fd, 1, by, &rd);
					continue;
				}
			} else {
				r = syscall(SYS_read, c->fd, buf + got, want - got);
			}
			if (r < 0 && errno == EINTR)
				continue;
			if (r <= 0)
				die("raw read");
			got += (size_t)r;
		}
		alarm(0);
		if (!check(buf, got, i, 1, c->in)) {
			fail("a raw read's bytes differ");
			g_bad = 1;
		}
		c->in += got;
		c->left = 0;
		{
			snprintf(msg, sizeof(msg), "a reply held after %s (attempt %d) read whole by %s",
				 g_by[by], attempt + 1,
				 spin ? "raw non-blocking reads between waits"
				      : "the raw read system call past the age limit");
			printf("ok: %s\n", msg);
			return;
		}
	}
	snprintf(msg, sizeof(msg), "%s: no reply was held in 50 attempts", g_by[by]);
	fail(msg);
}

/* Reads connection c's reply whole (edge-triggered set ep); reported: a wait just said so. */
static void read_reply(cconn *c, int i, int ep, int reported)
{
	static uint8_t buf[4096];
	struct epoll_event ev;

	while (c->left) {
		ssize_t r;

		if (!reported && epoll_wait(ep, &ev, 1, 3000) != 1)
			die("edge-triggered wait: nothing reported in 3 s");
		reported = 0;
		/* more than the reply: a read that ends short empties the descriptor */
		r = read(c->fd, buf, sizeof(buf));
		if (r <= 0 || (size_t)r > c->left)
			die("client read");
		if (!check(buf, (size_t)r, i, 1, c->in)) {
			fail("a reply's bytes differ");
			g_bad = 1;
		}
		c->in += (uint64_t)r;
		c->left -= (size_t)r;
	}
}

/*
 * Connection i through an edge-triggered epoll set (as nginx registers its
 * connections): a reply reported from ri2n's buffer and read whole spends
 * the report.  The next reply, read from the rails by the engine while
 * this thread sleeps (shorter than the age limit), must be reported by the
 * next wait, even one that does not sleep: an edge of its own, as the
 * kernel gives new bytes.  It once stayed in ri2n's buffer unreported until
 * the age limit (50 ms after the last read) sent it to the descriptor.
 */
static void spent_report(cconn *c, int i)
{
	struct epoll_event e = { .events = EPOLLIN | EPOLLET, .data.fd = c->fd }, ev;
	int ep = epoll_create1(0), got = 0;
	char msg[160];

	if (ep < 0 || epoll_ctl(ep, EPOLL_CTL_ADD, c->fd, &e) < 0)
		die("edge-triggered epoll set");
	for (int k = 0; k < ROUNDS_ET; k++) {
		int q = 0, reported;

		/* a reply the wait finds in ri2n's buffer (this thread waits when it comes) */
		request(c, i, (uint32_t)(1 + k * 10), 0);
		read_reply(c, i, ep, 0);
		/* one that comes while this thread is away: the engine reads it */
		request(c, i, (uint32_t)(1 + k * 10), 0);
		for (int t = 0; t < 100 && q <= 0; t++) {
			usleep(30000);
			if (ioctl(c->fd, FIONREAD, &q) < 0)
				die("FIONREAD");
		}
		reported = epoll_wait(ep, &ev, 1, 0) == 1;
		got += reported;
		read_reply(c, i, ep, reported);
	}
	close(ep);
	snprintf(msg, sizeof(msg), "edge-triggered epoll: %d of %d replies that came while the "
		 "program was away reported by a wait that did not sleep", got, ROUNDS_ET);
	if (got == ROUNDS_ET)
		printf("ok: %s\n", msg);
	else
		fail(msg);
}

static int client(const char *addr, int port)
{
	struct sockaddr_in a = { .sin_family = AF_INET, .sin_port = htons((uint16_t)port) };
	static uint8_t buf[MAX_REPLY];
	long wakes[2] = { 0, 0 }, held[2] = { 0, 0 };
	cconn c[NCONN];

	if (inet_pton(AF_INET, addr, &a.sin_addr) != 1)
		die("address");
	signal(SIGALRM, on_alarm);
	for (int i = 0; i < NCONN; i++) {
		uint8_t id = (uint8_t)i;

		memset(&c[i], 0, sizeof(c[i]));
		c[i].fd = socket(AF_INET, SOCK_STREAM, 0);
		if (c[i].fd < 0 || connect(c[i].fd, (struct sockaddr *)&a, sizeof(a)) < 0)
			die("connect");
		write_all(c[i].fd, &id, 1);
	}
	srand(7);
	for (int round = 0; round < ROUNDS; round++) {
		int sel = round & 1;

		for (int i = 0; i < NCONN; i++)
			request(&c[i], i, (uint32_t)(1 + rand() % MAX_REPLY), (uint32_t)(rand() % 1001));
		while (c[0].left || c[1].left) {
			int fd[NCONN], rd[NCONN];

			for (int i = 0; i < NCONN; i++)
				fd[i] = c[i].left ? c[i].fd : -1;
			wait_in(fd, NCONN, sel ? BY_SELECT : BY_POLL, rd);
			for (int i = 0; i < NCONN; i++) {
				int k, q = -1;
				ssize_t r;

				if (!rd[i])
					continue;
				wakes[sel]++;
				k = kernel_inq(c[i].fd);
				if (ioctl(c[i].fd, FIONREAD, &q) < 0)
					die("FIONREAD");
				if (k == 0 && q > 0)
					held[sel]++;
				r = read(c[i].fd, buf, c[i].left);
				if (r <= 0)
					die("client read");
				if (!check(buf, (size_t)r, i, 1, c[i].in)) {
					fail("a reply's bytes differ");
					g_bad = 1;
				}
				c[i].in += (uint64_t)r;
				c[i].left -= (size_t)r;
			}
		}
	}
	printf("%s: poll: %ld of %ld wake-ups held, select: %ld of %ld\n",
	       held[0] && held[1] ? "ok" : "FAIL", held[0], wakes[0], held[1], wakes[1]);
	if (!held[0] || !held[1])
		g_failed = 1;
	for (int spin = 0; spin < 2; spin++) {
		unseen_reader(&c[0], 0, BY_POLL, spin);
		unseen_reader(&c[1], 1, BY_SELECT, spin);
		unseen_reader(&c[spin], spin, BY_EPOLL, spin);
	}
	spent_report(&c[0], 0);
	for (int i = 0; i < NCONN; i++) {
		request(&c[i], i, 0, 0);
		close(c[i].fd);
	}
	printf("%s: %d rounds, every byte checked\n", g_bad ? "FAIL" : "ok", ROUNDS);
	return g_failed;
}

int main(int argc, char **argv)
{
	setvbuf(stdout, NULL, _IOLBF, 0);
	if (argc == 3 && strcmp(argv[1], "serve") == 0)
		return serve(atoi(argv[2]));
	if (argc == 4 && strcmp(argv[1], "client") == 0)
		return client(argv[2], atoi(argv[3]));
	fprintf(stderr, "usage: shim_pollheld serve PORT | client ADDR PORT\n");
	return 2;
}
