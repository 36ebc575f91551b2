/*
 * order_kit.c - the paths of order_kit.h.  Each round writes a chunk (1 to
 * 64 bytes) by the path under test, then the next chunk with write() on the
 * socket's own number, then reads both at the other end and checks every
 * byte against the pattern: a path whose bytes wait somewhere the next
 * write overtakes shows as a wrong byte in the first rounds.
 */
#define _GNU_SOURCE
#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <spawn.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <unistd.h>

#include "order_kit.h"
#include "order_kit_int.h"
#include "ri2n_kit.h"

#define CHUNK_MAX ORDER_CHUNK_MAX

extern char **environ;

void order_init(struct order *o, int tx, int rx, uint32_t seed, const char *self)
{
	memset(o, 0, sizeof(*o));
	o->tx = tx;
	o->rx = rx;
	o->seed = seed;
	o->rng = seed | 1;
	o->self = self;
}

int order_fail(struct order *o, const char *fmt, ...)
{
	va_list ap;

	va_start(ap, fmt);
	vsnprintf(o->why, sizeof(o->why), fmt, ap);
	va_end(ap);
	return -1;
}

static size_t chunk(struct order *o)
{
	o->rng = o->rng * 1103515245u + 12345u;
	return 1 + (o->rng >> 16) % CHUNK_MAX;
}

/* The next n bytes of the stream, written whole to fd with write(). */
static int put(struct order *o, int fd, size_t n)
{
	uint8_t buf[CHUNK_MAX];
	size_t done = 0;

	kit_pattern_fill(buf, o->seed, o->sent, n);
	while (done < n) {
		ssize_t w = write(fd, buf + done, n - done);

		if (w < 0 && errno == EINTR)
			continue;
		if (w <= 0)
			return order_fail(o, "write(%d): %s", fd, strerror(errno));
		done += (size_t)w;
	}
	o->sent += n;
	return 0;
}

/* Reads up to o->sent at the receiver, every byte checked; round r for the message. */
static int expect(struct order *o, int r)
{
	uint8_t buf[4 * CHUNK_MAX];

	while (o->got < o->sent) {
		struct pollfd p = { o->rx, POLLIN, 0 };
		size_t want = o->sent - o->got < sizeof(buf) ? (size_t)(o->sent - o->got) : sizeof(buf);
		ssize_t n;

		if (poll(&p, 1, ORDER_WAIT_MS) == 0)
			return order_fail(o, "round %d: byte %llu never came (%d ms)", r,
				    (unsigned long long)o->got, ORDER_WAIT_MS);
		n = read(o->rx, buf, want);
		if (n < 0 && (errno == EINTR || errno == EAGAIN))
			continue;
		if (n <= 0)
			return order_fail(o, "round %d: read: %s", r, n ? strerror(errno) : "end of stream");
		for (ssize_t i = 0; i < n; i++)
			if (buf[i] != kit_pattern_byte(o->seed, o->got + (uint64_t)i))
				return order_fail(o, "round %d: byte %llu out of order", r,
					    (unsigned long long)(o->got + (uint64_t)i));
		o->got += (uint64_t)n;
	}
	return 0;
}

int order_rounds(struct order *o, int rounds, int (*path)(struct order *o, size_t n, void *arg),
		 void *arg)
{
	for (int r = 0; r < rounds; r++)
		if (path(o, chunk(o), arg) || put(o, o->tx, chunk(o)) || expect(o, r))
			return -1;
	return 0;
}

/* ---- in this process ---- */

static int by_fd(struct order *o, size_t n, void *arg)
{
	return put(o, *(int *)arg, n);
}

/* write(dup(fd)), then write(fd) */
int order_dup(struct order *o, int rounds)
{
	int d = dup(o->tx), rc;

	if (d < 0)
		return order_fail(o, "dup: %s", strerror(errno));
	rc = order_rounds(o, rounds, by_fd, &d);
	close(d);
	return rc;
}

/* F_DUPFD (a number of at least 100), then write(fd) */
int order_dupfd(struct order *o, int rounds)
{
	int d = fcntl(o->tx, F_DUPFD_CLOEXEC, 100), rc;

	if (d < 0)
		return order_fail(o, "F_DUPFD: %s", strerror(errno));
	rc = order_rounds(o, rounds, by_fd, &d);
	close(d);
	return rc;
}

static int by_stdio(struct order *o, size_t n, void *arg)
{
	FILE *f = arg;
	uint8_t buf[CHUNK_MAX];

	kit_pattern_fill(buf, o->seed, o->sent, n);
	if (fwrite(buf, 1, n, f) != n || fflush(f) != 0)
		return order_fail(o, "stdio: %s", strerror(errno));
	o->sent += n;
	return 0;
}

/* The inetd/HTTP idiom: a header by fprintf on fdopen(dup(fd)) + fflush, the body by write(fd). */
int order_fdopen(struct order *o, int rounds)
{
	int d = dup(o->tx), rc;
	FILE *f = d < 0 ? NULL : fdopen(d, "w");

	if (!f) {
		if (d >= 0)
			close(d);
		return order_fail(o, "fdopen(dup): %s", strerror(errno));
	}
	rc = order_rounds(o, rounds, by_stdio, f);
	fclose(f);
	return rc;
}

/* dup2(fd, 1), stdout's own FILE (printf's) + fflush, then write(fd); stdout back after */
int order_stdout(struct order *o, int rounds)
{
	int saved, rc;

	fflush(stdout);
	saved = dup(STDOUT_FILENO);
	if (saved < 0 || dup2(o->tx, STDOUT_FILENO) < 0)
		return order_fail(o, "dup2 onto stdout: %s", strerror(errno));
	rc = order_rounds(o, rounds, by_stdio, stdout);
	fflush(stdout);
	dup2(saved, STDOUT_FILENO);
	close(saved);
	return rc;
}

/* ---- a child process writing ---- */

struct req {
	uint64_t off;
	uint32_t n; /* 0: done */
};

/* The child's side: chunks as asked on ctl, written to fd with write(), each answered on ack. */
static int writer_loop(int fd, int ctl, int ack, uint32_t seed)
{
	struct req q;
	uint8_t buf[CHUNK_MAX];

	while (read(ctl, &q, sizeof(q)) == (ssize_t)sizeof(q) && q.n > 0 && q.n <= CHUNK_MAX) {
		size_t done = 0;

		kit_pattern_fill(buf, seed, q.off, q.n);
		while (done < q.n) {
			ssize_t w = write(fd, buf + done, q.n - done);

			if (w <= 0)
				return 3;
			done += (size_t)w;
		}
		if (write(ack, "k", 1) != 1)
			return 4;
	}
	return 0;
}

int order_writer_main(int argc, char **argv)
{
	if (argc != 6)
		return 2;
	return writer_loop(atoi(argv[2]), atoi(argv[3]), atoi(argv[4]),
			   (uint32_t)strtoul(argv[5], NULL, 0));
}

struct child {
	pid_t pid;
	int ctl, ack; /* ours: requests out, answers in */
};

/* A chunk by the child, written and answered before the next write here. */
static int by_child(struct order *o, size_t n, void *arg)
{
	struct child *c = arg;
	struct req q = { o->sent, (uint32_t)n };
	struct pollfd p = { c->ack, POLLIN, 0 };
	char k;

	if (write(c->ctl, &q, sizeof(q)) != (ssize_t)sizeof(q))
		return order_fail(o, "the writer child is gone: %s", strerror(errno));
	if (poll(&p, 1, ORDER_WAIT_MS) != 1 || read(c->ack, &k, 1) != 1)
		return order_fail(o, "the writer child did not answer within %d ms", ORDER_WAIT_MS);
	o->sent += n;
	return 0;
}

/* Ends the child: done, then its status (killed after ORDER_WAIT_MS). */
static int child_end(struct order *o, struct child *c, int rc)
{
	int st = 0;

	close(c->ctl);
	close(c->ack);
	for (int i = 0; i < ORDER_WAIT_MS / 10; i++) {
		if (waitpid(c->pid, &st, WNOHANG) == c->pid)
			break;
		if (i == ORDER_WAIT_MS / 10 - 1) {
			kill(c->pid, SIGKILL);
			waitpid(c->pid, &st, 0);
		}
		usleep(10 * 1000);
	}
	if (rc == 0 && !(WIFEXITED(st) && WEXITSTATUS(st) == 0))
		return order_fail(o, "the writer child ended with status %#x", st);
	return rc;
}

/* Pipes for a child: ours in c, the child's ends in cfd[2] (ctl read end, ack write end). */
static int child_pipes(struct order *o, struct child *c, int cfd[2])
{
	int a[2], b[2];

	if (pipe2(a, O_CLOEXEC) || pipe2(b, O_CLOEXEC))
		return order_fail(o, "pipe: %s", strerror(errno));
	c->ctl = a[1];
	c->ack = b[0];
	cfd[0] = a[0];
	cfd[1] = b[1];
	return 0;
}

/* The child's argv: PROG --order-writer FD CTL ACK SEED (its numbers made inheritable). */
static void writer_argv(struct order *o, int cfd[2], char num[4][16], char *argv[7])
{
	fcntl(cfd[0], F_SETFD, 0);
	fcntl(cfd[1], F_SETFD, 0);
	snprintf(num[0], 16, "%d", o->tx);
	snprintf(num[1], 16, "%d", cfd[0]);
	snprintf(num[2], 16, "%d", cfd[1]);
	snprintf(num[3], 16, "%u", o->seed);
	argv[0] = (char *)o->self;
	argv[1] = (char *)ORDER_WRITER;
	argv[2] = num[0];
	argv[3] = num[1];
	argv[4] = num[2];
	argv[5] = num[3];
	argv[6] = NULL;
}

static int run_child(struct order *o, int rounds, struct child *c, int cfd[2])
{
	close(cfd[0]);
	close(cfd[1]);
	return child_end(o, c, order_rounds(o, rounds, by_child, c));
}

/* A posix_spawn'ed child (the socket inherited) writes, then write(fd) here. */
int order_spawn(struct order *o, int rounds)
{
	struct child c;
	int cfd[2], err;
	char num[4][16], *argv[7];

	if (child_pipes(o, &c, cfd))
		return -1;
	writer_argv(o, cfd, num, argv);
	err = posix_spawn(&c.pid, o->self, NULL, NULL, argv, environ);
	if (err) {
		close(cfd[0]);
		close(cfd[1]);
		close(c.ctl);
		close(c.ack);
		return order_fail(o, "posix_spawn: %s", strerror(err));
	}
	return run_child(o, rounds, &c, cfd);
}

/* The same with a vfork'ed child that execs. */
int order_vfork(struct order *o, int rounds)
{
	struct child c;
	int cfd[2];
	char num[4][16], *argv[7];

	if (child_pipes(o, &c, cfd))
		return -1;
	writer_argv(o, cfd, num, argv);
	c.pid = vfork();
	if (c.pid == 0) {
		execve(o->self, argv, environ);
		_exit(127);
	}
	if (c.pid < 0) {
		close(cfd[0]);
		close(cfd[1]);
		close(c.ctl);
		close(c.ack);
		return order_fail(o, "vfork: %s", strerror(errno));
	}
	return run_child(o, rounds, &c, cfd);
}

/* The child of order_rights: takes one descriptor from u, then writes on it. */
static void rights_child(int u, int ctl, int ack, uint32_t seed)
{
	char b;
	int fd = -1;
	union {
		struct cmsghdr h;
		char buf[CMSG_SPACE(sizeof(int))];
	} cm;
	struct iovec iov = { &b, 1 };
	struct msghdr m = { .msg_iov = &iov, .msg_iovlen = 1, .msg_control = cm.buf,
			    .msg_controllen = sizeof(cm.buf) };
	struct cmsghdr *c;

	if (recvmsg(u, &m, 0) != 1 || !(c = CMSG_FIRSTHDR(&m)) || c->cmsg_type != SCM_RIGHTS)
		_exit(5);
	memcpy(&fd, CMSG_DATA(c), sizeof(fd));
	_exit(writer_loop(fd, ctl, ack, seed));
}

int order_rights(struct order *o, int rounds, int (*make)(struct order *o, void *arg), void *arg)
{
	struct child c;
	int cfd[2], u[2];
	char b = 'f';
	union {
		struct cmsghdr h;
		char buf[CMSG_SPACE(sizeof(int))];
	} cm;
	struct iovec iov = { &b, 1 };
	struct msghdr m = { .msg_iov = &iov, .msg_iovlen = 1, .msg_control = cm.buf,
			    .msg_controllen = sizeof(cm.buf) };
	struct cmsghdr *h;

	if (socketpair(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0, u))
		return order_fail(o, "socketpair: %s", strerror(errno));
	if (child_pipes(o, &c, cfd))
		return -1;
	fflush(stdout);
	fflush(stderr);
	c.pid = fork(); /* before the connection exists: nothing of it is inherited */
	if (c.pid == 0) {
		close(u[0]);
		close(c.ctl); /* or the parent's close never ends the child's reads */
		close(c.ack);
		rights_child(u[1], cfd[0], cfd[1], o->seed);
	}
	close(u[1]);
	if (c.pid < 0) {
		close(u[0]);
		close(cfd[0]);
		close(cfd[1]);
		close(c.ctl);
		close(c.ack);
		return order_fail(o, "fork: %s", strerror(errno));
	}
	if (make(o, arg)) {
		close(u[0]);
		close(cfd[0]);
		close(cfd[1]);
		return child_end(o, &c, -1);
	}
	h = CMSG_FIRSTHDR(&m);
	h->cmsg_level = SOL_SOCKET;
	h->cmsg_type = SCM_RIGHTS;
	h->cmsg_len = CMSG_LEN(sizeof(int));
	memcpy(CMSG_DATA(h), &o->tx, sizeof(int));
	if (sendmsg(u[0], &m, 0) != 1) {
		close(u[0]);
		return order_fail(o, "SCM_RIGHTS: %s", strerror(errno));
	}
	close(u[0]);
	return run_child(o, rounds, &c, cfd);
}
