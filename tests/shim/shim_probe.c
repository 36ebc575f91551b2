/*
 * shim_probe.c - a plain TCP program (it knows nothing of ri2n) that checks,
 * run under ri2n-run in two namespaces, the socket behaviours the shim
 * must keep: non-blocking connect with epoll and SO_ERROR, refused
 * connects, dup2 and close_range, a forked server child, threads, sendfile
 * and splice into the socket, options, TCP_INFO, v4-mapped IPv6 sockets,
 * a vfork()ed child closing everything, and which sockets stay TCP.
 *
 *   shim_probe serve PORT          listens on PORT (AF_INET), PORT+1
 *                                  (AF_INET6 "::") and PORT+2 (AF_INET, to
 *                                  be left out of RI2N_RUN_PORTS), serves one
 *                                  command per connection until killed
 *   shim_probe check ADDR PORT     runs every check against a server; prints
 *                                  "ok: ..." or "FAIL: ..." per check, exits 1
 *                                  if any failed.  Nothing must listen on
 *                                  PORT+3.  With RI2N_RUN_PORTS set, PORT+2
 *                                  must be outside it.
 *
 * Whether a descriptor really is ri2n's (a socketpair end) or still TCP is
 * read with the raw getsockname system call, which the shim cannot see.
 *
 * Commands (first byte of a connection): 'E' echo until EOF; 'F' the same
 * from a forked child, the parent closing its copy at once; 'X' a forked
 * child runs /bin/cat with the connection as stdin and stdout; 'R' read one
 * byte, wait, close with the rest unread (a reset); 'Z' send SENDFILE_BYTES
 * of a pattern with sendfile(), then SENDFILE_TAIL more with write(); 'I' answer "tcp" or "ri2n" for the accepted
 * socket, then echo.
 */
#define _GNU_SOURCE
#include <arpa/inet.h>
#include <errno.h>
#include <fcntl.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <poll.h>
#include <pthread.h>
#include <signal.h>
#include <stdarg.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/epoll.h>
#include <sys/sendfile.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <unistd.h>

#include "ri2n_kit.h"

#define SENDFILE_BYTES (8 << 20)
#define SENDFILE_TAIL (256 << 10) /* written with write() right after the sendfile() */
#define ECHO_BYTES (4 << 20)
#define NTHREADS 8

static int g_failed;

static void ok(const char *fmt, ...)
{
	va_list ap;

	printf("ok: ");
	va_start(ap, fmt);
	vprintf(fmt, ap);
	va_end(ap);
	printf("\n");
	fflush(stdout);
}

static void fail(const char *fmt, ...)
{
	va_list ap;

	printf("FAIL: ");
	va_start(ap, fmt);
	vprintf(fmt, ap);
	va_end(ap);
	printf(" (errno %s)\n", strerror(errno));
	fflush(stdout);
	g_failed = 1;
}

#define CHECK(cond, ...) do { if (cond) ok(__VA_ARGS__); else fail(__VA_ARGS__); } while (0)

/* What the descriptor really is, behind the shim: AF_UNIX for ri2n, AF_INET(6) for TCP. */
static int real_family(int fd)
{
	struct sockaddr_storage ss;
	socklen_t l = sizeof(ss);

	if (syscall(SYS_getsockname, fd, &ss, &l) < 0)
		return -1;
	return ss.ss_family;
}

/* Byte i of the stream: the test kit's pattern (tools/kit/ri2n_kit.h), seed 1. */
static uint8_t pattern(uint64_t i)
{
	return kit_pattern_byte(1, i);
}

static int write_all(int fd, const void *buf, size_t len)
{
	const char *p = buf;

	while (len) {
		ssize_t n = write(fd, p, len);

		if (n < 0 && errno == EINTR)
			continue;
		if (n <= 0)
			return -1;
		p += n;
		len -= (size_t)n;
	}
	return 0;
}

static ssize_t read_full(int fd, void *buf, size_t len)
{
	char *p = buf;
	size_t got = 0;

	while (got < len) {
		ssize_t n = read(fd, p + got, len - got);

		if (n < 0 && errno == EINTR)
			continue;
		if (n < 0)
			return -1;
		if (n == 0)
			break;
		got += (size_t)n;
	}
	return (ssize_t)got;
}

/* ---- server ---- */

static void echo(int fd)
{
	char buf[65536];
	ssize_t n;

	while ((n = read(fd, buf, sizeof(buf))) > 0)
		if (write_all(fd, buf, (size_t)n) < 0)
			break;
}

static void serve_sendfile(int fd)
{
	char path[] = "/tmp/shim_probe.XXXXXX";
	int f = mkstemp(path);
	static uint8_t buf[SENDFILE_BYTES];
	off_t off = 0;

	unlink(path);
	for (size_t i = 0; i < sizeof(buf); i++)
		buf[i] = pattern(i);
	if (f < 0 || write_all(f, buf, sizeof(buf)) < 0)
		return;
	while (off < SENDFILE_BYTES) {
		ssize_t n = sendfile(fd, f, &off, SENDFILE_BYTES - (size_t)off);

		if (n <= 0) {
			fprintf(stderr, "probe serve: sendfile: %s\n", strerror(errno));
			break;
		}
	}
	close(f);
	/*
	 * At once a plain write(), which ri2n-run serves on its fast path: it
	 * must not overtake the sendfile()'s bytes, still in the descriptor.
	 */
	for (size_t i = 0; i < SENDFILE_TAIL; i++)
		buf[i] = pattern(SENDFILE_BYTES + i);
	write_all(fd, buf, SENDFILE_TAIL);
}

static void *serve_one(void *arg)
{
	int fd = (int)(intptr_t)arg;
	char c;

	if (read(fd, &c, 1) != 1) {
		close(fd);
		return NULL;
	}
	switch (c) {
	case 'E':
		echo(fd);
		break;
	case 'R':
		if (read(fd, &c, 1) == 1)
			usleep(300000); /* let the rest arrive, then close with it unread */
		break;
	case 'Z':
		serve_sendfile(fd);
		break;
	case 'I': {
		const char *what = real_family(fd) == AF_UNIX ? "ri2n" : "tcp ";

		write_all(fd, what, 4);
		echo(fd);
		break;
	}
	}
	close(fd);
	return NULL;
}

/* The forked child serves the connection; the parent lets go of it at once. */
static void serve_forked(int fd, int exec_cat)
{
	pid_t pid = fork();

	if (pid == 0 && exec_cat) {
		/* inetd style: the connection as stdin and stdout of another program */
		dup2(fd, 0);
		dup2(fd, 1);
		close(fd);
		execl("/bin/cat", "cat", (char *)NULL);
		_exit(127);
	}
	if (pid == 0) {
		struct sockaddr_in6 peer;
		socklen_t l = sizeof(peer);
		int err = -1;
		socklen_t el = sizeof(err);

		/* ri2n answers these in the parent only; the shim must from memory */
		if (getpeername(fd, (struct sockaddr *)&peer, &l) < 0 ||
		    getsockopt(fd, SOL_SOCKET, SO_ERROR, &err, &el) < 0 || err != 0) {
			fprintf(stderr, "probe serve: forked child: getpeername/SO_ERROR: %s\n",
				strerror(errno));
			_exit(1);
		}
		echo(fd);
		close(fd);
		_exit(0);
	}
	close(fd);
}

static void *accept_loop(void *arg)
{
	int lfd = (int)(intptr_t)arg;

	for (;;) {
		int fd = accept4(lfd, NULL, NULL, SOCK_CLOEXEC);
		char c;
		pthread_t t;

		if (fd < 0) {
			if (errno == EINTR || errno == ECONNABORTED)
				continue;
			perror("probe serve: accept");
			exit(1);
		}
		if (recv(fd, &c, 1, MSG_PEEK) == 1 && (c == 'F' || c == 'X')) {
			if (read(fd, &c, 1) == 1)
				serve_forked(fd, c == 'X');
			continue;
		}
		pthread_create(&t, NULL, serve_one, (void *)(intptr_t)fd);
		pthread_detach(t);
	}
	return NULL;
}

static int listen_on(int family, int port)
{
	int fd = socket(family, SOCK_STREAM, 0), one = 1, zero = 0;

	setsockopt(fd, SOL_SOCKET, SO_REUSEADDR, &one, sizeof(one));
	if (family == AF_INET6) {
		struct sockaddr_in6 a = { .sin6_family = AF_INET6, .sin6_port = htons(port),
					  .sin6_addr = IN6ADDR_ANY_INIT };

		setsockopt(fd, IPPROTO_IPV6, IPV6_V6ONLY, &zero, sizeof(zero));
		if (bind(fd, (struct sockaddr *)&a, sizeof(a)) < 0)
			return -1;
	} else {
		struct sockaddr_in a = { .sin_family = AF_INET, .sin_port = htons(port) };

		if (bind(fd, (struct sockaddr *)&a, sizeof(a)) < 0)
			return -1;
	}
	if (listen(fd, 64) < 0)
		return -1;
	return fd;
}

static int serve(int port)
{
	int l4 = listen_on(AF_INET, port), l6 = listen_on(AF_INET6, port + 1);
	int lt = listen_on(AF_INET, port + 2); /* left out of RI2N_RUN_PORTS by the test */
	pthread_t t;

	signal(SIGPIPE, SIG_IGN);
	signal(SIGCHLD, SIG_IGN); /* forked children reap themselves */
	if (l4 < 0 || l6 < 0 || lt < 0) {
		perror("probe serve: listen");
		return 1;
	}
	/*
	 * A vfork()ed child (posix_spawn, Python's subprocess) closing every
	 * descriptor on its way to exec must not make the shim forget the
	 * parent's sockets: it shares the parent's memory.
	 */
	if (vfork() == 0) {
		close_range(3, ~0u, 0);
		dup2(2, 1);
		_exit(0);
	}
	printf("listening %s %s %s\n", real_family(l4) == AF_UNIX ? "ri2n" : "tcp",
	       real_family(l6) == AF_UNIX ? "ri2n" : "tcp", real_family(lt) == AF_UNIX ? "ri2n" : "tcp");
	fflush(stdout);
	pthread_create(&t, NULL, accept_loop, (void *)(intptr_t)l6);
	pthread_create(&t, NULL, accept_loop, (void *)(intptr_t)lt);
	accept_loop((void *)(intptr_t)l4);
	return 0;
}

/* ---- client checks ---- */

static struct sockaddr_in g_dst;

static struct sockaddr_in dst_port(int port)
{
	struct sockaddr_in a = g_dst;

	a.sin_port = htons(port);
	return a;
}

static int connect_to(struct sockaddr_in a, char cmd)
{
	int fd = socket(AF_INET, SOCK_STREAM, 0);

	if (fd < 0 || connect(fd, (struct sockaddr *)&a, sizeof(a)) < 0) {
		if (fd >= 0)
			close(fd);
		return -1;
	}
	if (cmd && write_all(fd, &cmd, 1) < 0) {
		close(fd);
		return -1;
	}
	return fd;
}

/* Writes `len` pattern bytes and reads them back, both at once (poll). */
static int echo_check(int fd, size_t len)
{
	uint8_t out[1 << 16], in[1 << 16]; /* per thread */
	size_t sent = 0, got = 0;
	int fl = fcntl(fd, F_GETFL);

	fcntl(fd, F_SETFL, fl | O_NONBLOCK);
	while (got < len) {
		struct pollfd p = { .fd = fd, .events = POLLIN | (sent < len ? POLLOUT : 0) };

		if (poll(&p, 1, 10000) <= 0)
			return -1;
		if ((p.revents & POLLOUT) && sent < len) {
			size_t n = len - sent < sizeof(out) ? len - sent : sizeof(out);
			ssize_t w;

			for (size_t i = 0; i < n; i++)
				out[i] = pattern(sent + i);
			w = write(fd, out, n);
			if (w < 0 && errno != EAGAIN)
				return -1;
			if (w > 0)
				sent += (size_t)w;
			if (sent == len)
				shutdown(fd, SHUT_WR);
		}
		if (p.revents & (POLLIN | POLLHUP | POLLERR)) {
			ssize_t r = read(fd, in, sizeof(in));

			if (r == 0)
				break;
			if (r < 0 && errno != EAGAIN)
				return -1;
			for (ssize_t i = 0; i < r; i++)
				if (in[i] != pattern(got + (size_t)i))
					return -2;
			if (r > 0)
				got += (size_t)r;
		}
	}
	fcntl(fd, F_SETFL, fl);
	return got == len ? 0 : -1;
}

/*
 * The echo of echo_check, waiting with epoll (level- or edge-triggered):
 * under ri2n-run a wait may report the descriptor from ri2n's own buffer,
 * which must read back every byte, in order, and never report a descriptor
 * with nothing to read forever (10 s without progress fails).
 */
static int echo_check_epoll(int fd, size_t len, int et)
{
	uint8_t out[1 << 16], in[1 << 16];
	size_t sent = 0, got = 0;
	int fl = fcntl(fd, F_GETFL), ep = epoll_create1(EPOLL_CLOEXEC), rc = -1;
	struct epoll_event ev = { .events = EPOLLIN | EPOLLOUT | (et ? EPOLLET : 0),
				  .data.u64 = 0x5eed0000u + (unsigned)fd };

	if (ep < 0)
		return -1;
	fcntl(fd, F_SETFL, fl | O_NONBLOCK);
	if (epoll_ctl(ep, EPOLL_CTL_ADD, fd, &ev) < 0)
		goto out;
	while (got < len) {
		struct epoll_event e[4];
		int n = epoll_wait(ep, e, 4, 10000);

		if (n <= 0)
			goto out;
		for (int i = 0; i < n; i++) {
			if (e[i].data.u64 != ev.data.u64)
				goto out; /* an event the program never registered */
			/* edge-triggered: each side goes on until EAGAIN */
			while ((e[i].events & EPOLLOUT) && sent < len) {
				size_t k = len - sent < sizeof(out) ? len - sent : sizeof(out);
				ssize_t w;

				for (size_t j = 0; j < k; j++)
					out[j] = pattern(sent + j);
				w = write(fd, out, k);
				if (w < 0 && errno != EAGAIN)
					goto out;
				if (w <= 0)
					break;
				sent += (size_t)w;
				if (sent == len)
					shutdown(fd, SHUT_WR);
				if (!et)
					break;
			}
			while (e[i].events & (EPOLLIN | EPOLLHUP | EPOLLERR)) {
				ssize_t r = read(fd, in, sizeof(in));

				if (r == 0 || (r < 0 && errno != EAGAIN))
					goto out;
				if (r < 0)
					break;
				for (ssize_t j = 0; j < r; j++)
					if (in[j] != pattern(got + (size_t)j)) {
						rc = -2;
						goto out;
					}
				got += (size_t)r;
				if (!et || got == len)
					break;
			}
		}
		if (sent == len && (ev.events & EPOLLOUT)) {
			ev.events = EPOLLIN | (et ? EPOLLET : 0); /* nothing more to write */
			epoll_ctl(ep, EPOLL_CTL_MOD, fd, &ev);
		}
	}
	rc = got == len ? 0 : -1;
out:
	close(ep);
	fcntl(fd, F_SETFL, fl);
	return rc;
}

static void check_epoll_echo(int port)
{
	for (int et = 0; et <= 1; et++) {
		int fd = connect_to(dst_port(port), 'E');

		CHECK(fd >= 0 && echo_check_epoll(fd, ECHO_BYTES, et) == 0,
		      "echo of %d bytes waiting with epoll (%s-triggered), every byte checked",
		      ECHO_BYTES, et ? "edge" : "level");
		if (fd >= 0)
			close(fd);
	}
}

static void check_nonblocking(int port)
{
	struct sockaddr_in a = dst_port(port);
	int fd = socket(AF_INET, SOCK_STREAM | SOCK_NONBLOCK, 0), ep = epoll_create1(0);
	struct epoll_event ev = { .events = EPOLLOUT }, got;
	int err = -1, rc;
	socklen_t el = sizeof(err);
	struct sockaddr_in peer, local;
	socklen_t pl = sizeof(peer), ll = sizeof(local);

	rc = connect(fd, (struct sockaddr *)&a, sizeof(a));
	CHECK(rc < 0 && errno == EINPROGRESS, "non-blocking connect: EINPROGRESS");
	epoll_ctl(ep, EPOLL_CTL_ADD, fd, &ev);
	rc = epoll_wait(ep, &got, 1, 10000);
	CHECK(rc == 1 && (got.events & EPOLLOUT), "epoll: writable once connected");
	CHECK(getsockopt(fd, SOL_SOCKET, SO_ERROR, &err, &el) == 0 && err == 0, "SO_ERROR 0");
	CHECK(real_family(fd) == AF_UNIX, "the descriptor is ri2n's");
	CHECK(getpeername(fd, (struct sockaddr *)&peer, &pl) == 0 && pl == sizeof(peer) &&
	      peer.sin_family == AF_INET && peer.sin_addr.s_addr == a.sin_addr.s_addr &&
	      peer.sin_port == a.sin_port, "getpeername: the address connected to");
	CHECK(getsockname(fd, (struct sockaddr *)&local, &ll) == 0 && local.sin_family == AF_INET &&
	      local.sin_addr.s_addr != 0, "getsockname: a rail address (%s)", inet_ntoa(local.sin_addr));
	CHECK(write_all(fd, "E", 1) == 0 && echo_check(fd, ECHO_BYTES) == 0,
	      "non-blocking echo of %d bytes", ECHO_BYTES);
	close(fd);
	close(ep);
}

static void check_refused(int port)
{
	struct sockaddr_in a = dst_port(port);
	int fd = socket(AF_INET, SOCK_STREAM, 0), rc, err = 0;
	socklen_t el = sizeof(err);
	struct pollfd p;

	rc = connect(fd, (struct sockaddr *)&a, sizeof(a));
	CHECK(rc < 0 && errno == ECONNREFUSED, "blocking connect to a closed port: ECONNREFUSED");
	close(fd);
	fd = socket(AF_INET, SOCK_STREAM | SOCK_NONBLOCK, 0);
	rc = connect(fd, (struct sockaddr *)&a, sizeof(a));
	p = (struct pollfd){ .fd = fd, .events = POLLOUT };
	poll(&p, 1, 10000);
	CHECK(rc < 0 && errno == EINPROGRESS &&
	      getsockopt(fd, SOL_SOCKET, SO_ERROR, &err, &el) == 0 && err == ECONNREFUSED,
	      "non-blocking connect to a closed port: SO_ERROR ECONNREFUSED");
	close(fd);
}

static void check_dup(int port)
{
	int fd = connect_to(dst_port(port), 'E'), d, d2;
	struct sockaddr_in peer;
	socklen_t pl = sizeof(peer);

	d = dup2(fd, 200);
	close(fd);
	CHECK(d == 200 && getpeername(200, (struct sockaddr *)&peer, &pl) == 0,
	      "dup2 to 200, original closed: getpeername on 200");
	d2 = fcntl(200, F_DUPFD_CLOEXEC, 300);
	CHECK(d2 >= 300 && (fcntl(d2, F_GETFD) & FD_CLOEXEC) && real_family(d2) == AF_UNIX,
	      "F_DUPFD_CLOEXEC: a ri2n duplicate with FD_CLOEXEC");
	close(d2);
	CHECK(echo_check(200, 1 << 20) == 0, "echo through the dup2'ed number");
	close(200);
	/* a TCP socket duplicated before connect converts under both numbers */
	fd = socket(AF_INET, SOCK_STREAM, 0);
	d = dup(fd);
	{
		struct sockaddr_in a = dst_port(port);
		int rc = connect(fd, (struct sockaddr *)&a, sizeof(a));

		CHECK(rc == 0 && real_family(fd) == AF_UNIX && real_family(d) == AF_UNIX,
		      "a socket dup'ed before connect: both numbers are ri2n's");
	}
	close(fd);
	CHECK(write_all(d, "E", 1) == 0 && echo_check(d, 1 << 20) == 0,
	      "echo through the number dup'ed before connect, the other closed");
	close(d);
	/* close_range forgets what it closes: the numbers come back as plain sockets */
	fd = connect_to(dst_port(port), 'E');
	d = dup2(fd, 400);
	close(fd);
	syscall(SYS_close_range, 400, 400, 0); /* behind the shim: a close it did not see */
	fd = socket(AF_UNIX, SOCK_STREAM, 0);
	d2 = dup2(fd, 400);
	CHECK(d == 400 && d2 == 400 && getsockname(400, (struct sockaddr *)&peer, &pl) == 0 &&
	      peer.sin_family == AF_UNIX, "a number closed behind the shim's back and reused is not ri2n");
	close(fd);
	close(400);
}

static void check_reset(int port)
{
	int fd = connect_to(dst_port(port), 'R');
	char buf[4096] = { 0 };
	ssize_t n;

	/* the socket is known by number 500 only: a reset must still reach it */
	dup2(fd, 500);
	close(fd);
	write_all(500, buf, sizeof(buf));
	n = read(500, buf, sizeof(buf));
	CHECK(n < 0 && errno == ECONNRESET, "peer closed with data unread: read fails ECONNRESET "
	      "(on a dup2'ed number, the original closed; got %zd)", n);
	close(500);
}

static void check_fork(int port)
{
	int fd = connect_to(dst_port(port), 'F');

	CHECK(fd >= 0 && echo_check(fd, ECHO_BYTES) == 0,
	      "a forked server child serves the connection (%d bytes echoed)", ECHO_BYTES);
	close(fd);
	fd = connect_to(dst_port(port), 'X');
	CHECK(fd >= 0 && echo_check(fd, ECHO_BYTES) == 0,
	      "a forked server child exec'ing cat on the connection (inetd style) echoes it");
	close(fd);
	/* the client forks too: the child uses the connection the parent made */
	fd = connect_to(dst_port(port), 'E');
	pid_t pid = fork();

	if (pid == 0) {
		int err = -1;
		socklen_t el = sizeof(err);
		struct sockaddr_in peer;
		socklen_t pl = sizeof(peer);

		_exit(echo_check(fd, 1 << 20) == 0 && getpeername(fd, (struct sockaddr *)&peer, &pl) == 0 &&
		      getsockopt(fd, SOL_SOCKET, SO_ERROR, &err, &el) == 0 ? 0 : 1);
	}
	int st = 1;

	waitpid(pid, &st, 0);
	CHECK(WIFEXITED(st) && WEXITSTATUS(st) == 0,
	      "a forked client child uses its parent's connection");
	close(fd);
}

static void *thread_echo(void *arg)
{
	int port = (int)(intptr_t)arg;
	int fd = connect_to(dst_port(port), 'E');
	intptr_t rc = fd >= 0 && real_family(fd) == AF_UNIX && echo_check(fd, 1 << 20) == 0;

	close(fd);
	return (void *)rc;
}

static void check_threads(int port)
{
	pthread_t t[NTHREADS];
	int good = 0;

	for (int i = 0; i < NTHREADS; i++)
		pthread_create(&t[i], NULL, thread_echo, (void *)(intptr_t)port);
	for (int i = 0; i < NTHREADS; i++) {
		void *r;

		pthread_join(t[i], &r);
		good += r != NULL;
	}
	CHECK(good == NTHREADS, "%d threads, a connection each, all echoed (%d good)", NTHREADS, good);
}

/*
 * fclose() closes its descriptor inside libc, out of the shim's sight unless
 * it interposes fclose: the number, reused at once by a socketpair, must be
 * the socketpair's both ways, not the ri2n connection it was.
 */
static void check_fclose_reuse(int port)
{
	int fd = connect_to(dst_port(port), 'E'), sv[2], got = 0;
	struct pollfd pf;
	FILE *f;
	char c = 0;

	if (fd < 0)
		return fail("connect for fclose");
	CHECK(real_family(fd) == AF_UNIX, "the connection is ri2n's");
	f = fdopen(fd, "r+");
	if (!f)
		return fail("fdopen: %s", strerror(errno));
	fclose(f);
	if (socketpair(AF_UNIX, SOCK_STREAM, 0, sv) < 0)
		return fail("socketpair: %s", strerror(errno));
	CHECK(sv[0] == fd, "the socketpair took the number fclose() freed (%d, was %d)", sv[0], fd);
	if (write(sv[0], "x", 1) == 1) {
		pf = (struct pollfd){ .fd = sv[1], .events = POLLIN };
		got = poll(&pf, 1, 2000) == 1 && read(sv[1], &c, 1) == 1 && c == 'x';
	}
	CHECK(got, "a write on the reused number reaches its socketpair, not the closed connection");
	got = 0;
	if (write(sv[1], "y", 1) == 1) {
		pf = (struct pollfd){ .fd = sv[0], .events = POLLIN };
		got = poll(&pf, 1, 2000) == 1 && read(sv[0], &c, 1) == 1 && c == 'y';
	}
	CHECK(got, "a read on the reused number takes from its socketpair");
	close(sv[0]);
	close(sv[1]);
}

static void check_sendfile_splice(int port)
{
	int fd = connect_to(dst_port(port), 'Z'), p[2], bad = 0;
	static uint8_t buf[65536];
	size_t got = 0;
	ssize_t n;

	/* the server sends with sendfile(); the client takes it with splice() through a pipe */
	if (pipe(p) < 0)
		return fail("pipe");
	while ((n = splice(fd, NULL, p[1], NULL, sizeof(buf), SPLICE_F_MOVE)) > 0) {
		ssize_t r = read_full(p[0], buf, (size_t)n);

		for (ssize_t i = 0; i < r; i++)
			bad += buf[i] != pattern(got + (size_t)i);
		got += (size_t)(r > 0 ? r : 0);
	}
	CHECK(n == 0 && got == SENDFILE_BYTES + SENDFILE_TAIL && !bad,
	      "sendfile() and then write() into the socket, splice() out of it: %zu bytes, "
	      "%d wrong", got, bad);
	close(p[0]);
	close(p[1]);
	close(fd);
}

static void check_options(int port)
{
	int fd = socket(AF_INET, SOCK_STREAM, 0), one = 1, v = 0, buf = 1 << 20;
	socklen_t l = sizeof(v);
	struct tcp_info ti;
	socklen_t tl = sizeof(ti);
	struct sockaddr_in a = dst_port(port);
	char ca[16] = "";
	socklen_t cl = sizeof(ca);

	setsockopt(fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof(one));
	setsockopt(fd, SOL_SOCKET, SO_KEEPALIVE, &one, sizeof(one));
	setsockopt(fd, SOL_SOCKET, SO_RCVBUF, &buf, sizeof(buf));
	CHECK(connect(fd, (struct sockaddr *)&a, sizeof(a)) == 0 && write_all(fd, "E", 1) == 0,
	      "blocking connect");
	l = sizeof(v);
	CHECK(getsockopt(fd, SOL_SOCKET, SO_KEEPALIVE, &v, &l) == 0 && v == 1,
	      "SO_KEEPALIVE set before connect reads back 1");
	l = sizeof(v);
	CHECK(getsockopt(fd, SOL_SOCKET, SO_RCVBUF, &v, &l) == 0 && v >= buf,
	      "SO_RCVBUF set before connect applies to the descriptor (%d)", v);
	v = 60;
	CHECK(setsockopt(fd, IPPROTO_TCP, TCP_KEEPIDLE, &v, sizeof(v)) == 0, "TCP_KEEPIDLE accepted");
	l = sizeof(v);
	CHECK(getsockopt(fd, IPPROTO_TCP, TCP_KEEPIDLE, &v, &l) == 0 && v == 60, "TCP_KEEPIDLE reads back");
	l = sizeof(v);
	CHECK(getsockopt(fd, SOL_SOCKET, SO_TYPE, &v, &l) == 0 && v == SOCK_STREAM, "SO_TYPE");
	l = sizeof(v);
	CHECK(getsockopt(fd, SOL_SOCKET, SO_DOMAIN, &v, &l) == 0 && v == AF_INET, "SO_DOMAIN AF_INET");
	l = sizeof(v);
	CHECK(getsockopt(fd, SOL_SOCKET, SO_PROTOCOL, &v, &l) == 0 && v == IPPROTO_TCP,
	      "SO_PROTOCOL IPPROTO_TCP");
	l = sizeof(v);
	CHECK(getsockopt(fd, IPPROTO_TCP, TCP_MAXSEG, &v, &l) == 0 && v > 500 && v < 65536,
	      "TCP_MAXSEG %d", v);
	CHECK(getsockopt(fd, IPPROTO_TCP, TCP_CONGESTION, ca, &cl) == 0 && !strcmp(ca, "ri2n"),
	      "TCP_CONGESTION \"%s\"", ca);
	CHECK(echo_check(fd, 1 << 20) == 0, "echo");
	CHECK(getsockopt(fd, IPPROTO_TCP, TCP_INFO, &ti, &tl) == 0 && ti.tcpi_state == TCP_ESTABLISHED &&
	      ti.tcpi_snd_mss > 0 && ti.tcpi_rtt > 0, "TCP_INFO: established, mss %u, rtt %u us, cwnd %u",
	      ti.tcpi_snd_mss, ti.tcpi_rtt, ti.tcpi_snd_cwnd);
	l = sizeof(v);
	errno = 0;
	CHECK(getsockopt(fd, IPPROTO_TCP, TCP_MD5SIG, &ca, &cl) < 0 && errno == ENOPROTOOPT,
	      "an option ri2n has no answer for: ENOPROTOOPT");
	close(fd);
}

static void check_v6(int port)
{
	int fd = socket(AF_INET6, SOCK_STREAM, 0);
	struct sockaddr_in6 a = { .sin6_family = AF_INET6, .sin6_port = htons(port + 1) };
	struct sockaddr_in6 peer;
	socklen_t pl = sizeof(peer);
	char buf[4] = "";

	a.sin6_addr.s6_addr[10] = a.sin6_addr.s6_addr[11] = 0xff;
	memcpy(&a.sin6_addr.s6_addr[12], &g_dst.sin_addr, 4);
	CHECK(connect(fd, (struct sockaddr *)&a, sizeof(a)) == 0 && real_family(fd) == AF_UNIX,
	      "AF_INET6 connect to a v4-mapped address, to a \"::\" listener: ri2n");
	CHECK(getpeername(fd, (struct sockaddr *)&peer, &pl) == 0 && pl == sizeof(peer) &&
	      peer.sin6_family == AF_INET6 && IN6_IS_ADDR_V4MAPPED(&peer.sin6_addr),
	      "getpeername: a v4-mapped sockaddr_in6");
	CHECK(write_all(fd, "I", 1) == 0 && read_full(fd, buf, 4) == 4 && !memcmp(buf, "ri2n", 4),
	      "the server accepted it as ri2n");
	close(fd);
}

static void check_stays_tcp(int port)
{
	/* RI2N_RUN_PORTS (set by the test) leaves port+2 out: both ends stay TCP */
	int fd = connect_to(dst_port(port + 2), 'I');
	char buf[4] = "";

	CHECK(fd >= 0 && real_family(fd) == AF_INET && read_full(fd, buf, 4) == 4 &&
	      !memcmp(buf, "tcp ", 4), "a port outside RI2N_RUN_PORTS stays TCP at both ends");
	if (fd >= 0)
		close(fd);
}

static int check(const char *addr, int port)
{
	g_dst.sin_family = AF_INET;
	if (inet_pton(AF_INET, addr, &g_dst.sin_addr) != 1)
		return 2;
	signal(SIGPIPE, SIG_IGN);
	check_nonblocking(port);
	check_epoll_echo(port);
	check_refused(port + 3);
	check_options(port);
	check_dup(port);
	check_reset(port);
	check_fork(port);
	check_threads(port);
	check_sendfile_splice(port);
	check_fclose_reuse(port);
	check_v6(port);
	if (getenv("RI2N_RUN_PORTS"))
		check_stays_tcp(port);
	return g_failed;
}

int main(int argc, char **argv)
{
	if (argc == 3 && !strcmp(argv[1], "serve"))
		return serve(atoi(argv[2]));
	if (argc == 4 && !strcmp(argv[1], "check"))
		return check(argv[2], atoi(argv[3]));
	fprintf(stderr, "usage: shim_probe serve PORT | check ADDR PORT\n");
	return 2;
}
