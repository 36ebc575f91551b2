/*
 * shim_exec.c - a plain TCP program (no ri2n of its own: run it under
 * ri2n-run) that hands its connections across exec and into a seccomp
 * sandbox, as an SSH daemon does (docs/RI2N-RUN.md, "Processes and threads").
 *
 *   shim_exec exec EXEC_PEER   a server accepts, forks, and the child execs
 *                              EXEC_PEER with the connection inherited: it
 *                              must see the client's rail address and port
 *                              in getpeername, ours in getsockname, a TCP
 *                              socket in SO_DOMAIN/SO_PROTOCOL, and echo a
 *                              verified pattern; then the same with the
 *                              client's end, and with a connection sent
 *                              over SCM_RIGHTS to a child that execs it
 *   shim_exec seccomp          a forked child sandboxes itself (poll, read, write,
 *                              exit only) and echoes on the connection it
 *                              inherited
 *   shim_exec seccomp-owner    a child makes its own connection, sandboxes
 *                              its thread and echoes on it
 *   shim_exec seccomp-exec EXEC_PEER
 *                              a forked child sets a filter without
 *                              getsockopt and execs EXEC_PEER, which
 *                              echoes on the connection it inherited
 *
 * Both ends are in this process and its children, over RAIL (198.18.1.1,
 * tests/api/run.sh's namespace).  Exit 0, or 1 with a line on stderr; every
 * wait is bounded.
 */
#define _GNU_SOURCE
#include <arpa/inet.h>
#include <errno.h>
#include <fcntl.h>
#include <netinet/in.h>
#include <poll.h>
#include <signal.h>
#include <stdarg.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/prctl.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "ri2n_kit.h"
#include "../api/seccomp_filter.h"

#define RAIL "198.18.1.1"
#define ECHO_BYTES (4u << 20)
#define WAIT_MS 30000

__attribute__((noreturn, format(printf, 1, 2))) static void die(const char *fmt, ...)
{
	va_list ap;

	fprintf(stderr, "shim_exec: ");
	va_start(ap, fmt);
	vfprintf(stderr, fmt, ap);
	va_end(ap);
	fprintf(stderr, "\n");
	exit(1);
}

static uint64_t now_ms(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * 1000 + (uint64_t)ts.tv_nsec / 1000000;
}

static const char *name_str(int fd, int peer, char *buf)
{
	struct sockaddr_in a;
	socklen_t len = sizeof(a);
	char ip[INET_ADDRSTRLEN];

	if ((peer ? getpeername(fd, (struct sockaddr *)&a, &len) :
		    getsockname(fd, (struct sockaddr *)&a, &len)) < 0 || a.sin_family != AF_INET)
		die("fd %d: %s: %s", fd, peer ? "getpeername" : "getsockname", strerror(errno));
	inet_ntop(AF_INET, &a.sin_addr, ip, sizeof(ip));
	snprintf(buf, 40, "%s:%u", ip, ntohs(a.sin_port));
	return buf;
}

/* A listener on every address (ri2n-run converts it) and its port. */
static int listener(uint16_t *port)
{
	struct sockaddr_in a = { .sin_family = AF_INET };
	socklen_t len = sizeof(a);
	int l = socket(AF_INET, SOCK_STREAM, 0);

	if (l < 0 || bind(l, (struct sockaddr *)&a, sizeof(a)) < 0 || listen(l, 4) < 0 ||
	    getsockname(l, (struct sockaddr *)&a, &len) < 0)
		die("listener: %s", strerror(errno));
	*port = ntohs(a.sin_port);
	return l;
}

static int connect_rail(uint16_t port)
{
	struct sockaddr_in a = { .sin_family = AF_INET, .sin_port = htons(port) };
	int c = socket(AF_INET, SOCK_STREAM, 0);

	inet_pton(AF_INET, RAIL, &a.sin_addr);
	if (c < 0 || connect(c, (struct sockaddr *)&a, sizeof(a)) < 0)
		return -1;
	return c;
}

static int accept_within(int l)
{
	struct pollfd p = { .fd = l, .events = POLLIN };

	if (poll(&p, 1, WAIT_MS) != 1)
		die("no connection to accept within %d ms", WAIT_MS);
	return accept(l, NULL, NULL);
}

static pid_t g_child; /* the child at the other end of an echo: its death ends the wait */


/*
 * Writes `total` bytes of pattern `seed` on fd and reads them back, every
 * byte checked; shut: then shutdown(SHUT_WR).  Non-blocking, in one poll
 * loop; a child (g_child) that dies before the echo is done fails at once.
 */
static void echo_through(int fd, uint64_t total, uint64_t seed, int shut)
{
	static uint8_t tx[64 * 1024], rx[64 * 1024];
	uint64_t sent = 0, got = 0, end = now_ms() + WAIT_MS;

	fcntl(fd, F_SETFL, fcntl(fd, F_GETFL) | O_NONBLOCK);
	while (got < total) {
		struct pollfd p = { .fd = fd, .events = POLLIN | (sent < total ? POLLOUT : 0) };
		ssize_t n;

		if (now_ms() > end)
			die("echo: %llu of %llu bytes back after %d ms", (unsigned long long)got,
			    (unsigned long long)total, WAIT_MS);
		if (poll(&p, 1, 100) <= 0) {
			siginfo_t si = { 0 };

			/* peeked, not reaped (WNOWAIT): reap_clean still finds it */
			if (g_child > 0 &&
			    waitid(P_PID, (id_t)g_child, &si, WEXITED | WNOHANG | WNOWAIT) == 0 &&
			    si.si_pid == g_child && (si.si_code != CLD_EXITED || si.si_status != 0))
				die("the child at the other end %s %d%s",
				    si.si_code == CLD_EXITED ? "failed: exit" : "died of signal",
				    si.si_status, si.si_status == SIGSYS && si.si_code != CLD_EXITED ?
						      " (SIGSYS: a system call its sandbox forbids)" : "");
			continue;
		}
		if (sent < total && (p.revents & POLLOUT)) {
			size_t k = total - sent < sizeof(tx) ? (size_t)(total - sent) : sizeof(tx);

			kit_pattern_fill(tx, seed, sent, k);
			n = write(fd, tx, k);
			if (n > 0)
				sent += (uint64_t)n;
			else if (n < 0 && errno != EAGAIN)
				die("echo: write: %s", strerror(errno));
			if (sent == total && shut)
				shutdown(fd, SHUT_WR);
		}
		n = read(fd, rx, sizeof(rx));
		if (n == 0)
			die("echo: end of stream after %llu bytes", (unsigned long long)got);
		if (n < 0 && errno != EAGAIN)
			die("echo: read: %s", strerror(errno));
		if (n > 0) {
			if (kit_pattern_check(rx, seed, got, (size_t)n) != 0)
				die("echo: byte %llu onwards is wrong", (unsigned long long)got);
			got += (uint64_t)n;
		}
	}
	fcntl(fd, F_SETFL, fcntl(fd, F_GETFL) & ~O_NONBLOCK);
}

static void reap_clean(pid_t pid, const char *who)
{
	uint64_t end = now_ms() + WAIT_MS;
	int st;

	while (waitpid(pid, &st, WNOHANG) != pid) {
		if (now_ms() > end) {
			kill(pid, SIGKILL);
			waitpid(pid, &st, 0);
			die("%s did not finish within %d ms", who, WAIT_MS);
		}
		usleep(10000);
	}
	if (WIFSIGNALED(st))
		die("%s died of signal %d%s", who, WTERMSIG(st),
		    WTERMSIG(st) == SIGSYS ? " (SIGSYS: a system call its sandbox forbids)" : "");
	if (!WIFEXITED(st) || WEXITSTATUS(st) != 0)
		die("%s failed: exit %d", who, WIFEXITED(st) ? WEXITSTATUS(st) : -1);
}

static pid_t fork_child(void)
{
	pid_t pid = fork();

	if (pid < 0)
		die("fork: %s", strerror(errno));
	if (pid == 0)
		prctl(PR_SET_PDEATHSIG, SIGKILL);
	g_child = pid;
	return pid;
}

/* fork, and exec_peer with `give` inherited; `keep` echoes through it. */
static void hand_over_exec(const char *exec_peer, int keep, int give, uint64_t seed)
{
	char fd[16], peer[40], local[40], mine[40], bytes[24], sd[24];
	pid_t pid;

	name_str(give, 1, peer);
	name_str(give, 0, local);
	if (strcmp(peer, name_str(keep, 0, mine)) != 0)
		die("fd %d: peer %s, but the other end is %s", give, peer, mine);
	snprintf(fd, sizeof(fd), "%d", give);
	snprintf(bytes, sizeof(bytes), "%u", ECHO_BYTES);
	snprintf(sd, sizeof(sd), "%llu", (unsigned long long)seed);
	pid = fork_child();
	if (pid == 0) {
		close(keep);
		execl(exec_peer, exec_peer, fd, peer, local, bytes, sd, (char *)NULL);
		_exit(127);
	}
	echo_through(keep, ECHO_BYTES, seed, 0);
	reap_clean(pid, "the exec'd program");
}

/* Sends descriptor fd over the AF_UNIX socket u (SCM_RIGHTS). */
static void send_fd(int u, int fd)
{
	union {
		struct cmsghdr h;
		char buf[CMSG_SPACE(sizeof(int))];
	} cm = { 0 };
	struct iovec iov = { "f", 1 };
	struct msghdr m = { .msg_iov = &iov, .msg_iovlen = 1, .msg_control = cm.buf,
			    .msg_controllen = sizeof(cm.buf) };
	struct cmsghdr *h = CMSG_FIRSTHDR(&m);

	h->cmsg_level = SOL_SOCKET;
	h->cmsg_type = SCM_RIGHTS;
	h->cmsg_len = CMSG_LEN(sizeof(int));
	memcpy(CMSG_DATA(h), &fd, sizeof(int));
	if (sendmsg(u, &m, 0) != 1)
		die("sendmsg SCM_RIGHTS: %s", strerror(errno));
}

/* The descriptor sent over u, or -1. */
static int recv_fd(int u)
{
	union {
		struct cmsghdr h;
		char buf[CMSG_SPACE(sizeof(int))];
	} cm;
	char b;
	struct iovec iov = { &b, 1 };
	struct msghdr m = { .msg_iov = &iov, .msg_iovlen = 1, .msg_control = cm.buf,
			    .msg_controllen = sizeof(cm.buf) };
	struct cmsghdr *h;
	int fd = -1;

	if (recvmsg(u, &m, 0) != 1)
		return -1;
	for (h = CMSG_FIRSTHDR(&m); h; h = CMSG_NXTHDR(&m, h))
		if (h->cmsg_level == SOL_SOCKET && h->cmsg_type == SCM_RIGHTS)
			memcpy(&fd, CMSG_DATA(h), sizeof(int));
	return fd;
}

static void pair(int *c, int *s);

/*
 * A child forked before the connection exists gets it over SCM_RIGHTS and
 * execs exec_peer with it (the addresses go along in the arguments).
 */
static void hand_over_scm(const char *exec_peer, uint64_t seed)
{
	char fd[16], peer[40], local[40], mine[40], bytes[24], sd[24];
	int u[2], c, s, got;
	pid_t pid;

	if (socketpair(AF_UNIX, SOCK_STREAM, 0, u) < 0)
		die("socketpair: %s", strerror(errno));
	pid = fork_child();
	if (pid == 0) {
		close(u[0]);
		got = recv_fd(u[1]);
		if (got < 0 || read(u[1], peer, sizeof(peer)) != (ssize_t)sizeof(peer) ||
		    read(u[1], local, sizeof(local)) != (ssize_t)sizeof(local))
			_exit(126);
		snprintf(fd, sizeof(fd), "%d", got);
		snprintf(bytes, sizeof(bytes), "%u", ECHO_BYTES);
		snprintf(sd, sizeof(sd), "%llu", (unsigned long long)seed);
		execl(exec_peer, exec_peer, fd, peer, local, bytes, sd, (char *)NULL);
		_exit(127);
	}
	close(u[1]);
	pair(&c, &s);
	name_str(s, 1, peer);
	name_str(s, 0, local);
	if (strcmp(peer, name_str(c, 0, mine)) != 0)
		die("fd %d: peer %s, but the other end is %s", s, peer, mine);
	send_fd(u[0], s);
	if (write(u[0], peer, sizeof(peer)) != (ssize_t)sizeof(peer) ||
	    write(u[0], local, sizeof(local)) != (ssize_t)sizeof(local))
		die("write to the child: %s", strerror(errno));
	close(s); /* the child's copy is the connection's only one now */
	echo_through(c, ECHO_BYTES, seed, 0);
	reap_clean(pid, "the program that got the connection over SCM_RIGHTS");
	close(c);
	close(u[0]);
}

static void pair(int *c, int *s)
{
	uint16_t port;
	int l = listener(&port);

	*c = connect_rail(port);
	if (*c < 0)
		die("connect: %s", strerror(errno));
	*s = accept_within(l);
	if (*s < 0)
		die("accept: %s", strerror(errno));
	close(l);
}

/* In a sandbox: echoes total bytes of pattern seed, then waits for the end. 0 or an exit code. */
static int sandboxed_echo(int fd, uint64_t total, uint64_t seed)
{
	static uint8_t buf[64 * 1024];
	uint64_t off = 0;
	ssize_t n, w;

	while (off < total) {
		struct pollfd p = { .fd = fd, .events = POLLIN };

		if (poll(&p, 1, 30000) != 1)
			return 24;
		n = read(fd, buf, sizeof(buf) < total - off ? sizeof(buf) : (size_t)(total - off));
		if (n <= 0)
			return 20;
		if (kit_pattern_check(buf, seed, off, (size_t)n) != 0)
			return 21;
		for (ssize_t done = 0; done < n; done += w)
			if ((w = write(fd, buf + done, (size_t)(n - done))) <= 0)
				return 22;
		off += (uint64_t)n;
	}
	return read(fd, buf, 1) == 0 ? 0 : 23;
}

static const int g_calls[] = { SANDBOX_ECHO_CALLS };
#define NCALLS ((int)(sizeof(g_calls) / sizeof(g_calls[0])))

/*
 * The shim's line (RI2N_RUN_VERBOSE, set in main) from the child's stderr,
 * the pipe log_r: it must say it steps aside, and why (`what`).
 */
static void expect_step_aside_line(int log_r, const char *what)
{
	char buf[4096];
	ssize_t n = read(log_r, buf, sizeof(buf) - 1);

	buf[n > 0 ? n : 0] = 0;
	if (!strstr(buf, what))
		die("the sandboxed child did not say \"%s\"; its stderr: \"%s\"", what, buf);
}

static void seccomp_forked(void)
{
	uint8_t b[16];
	int c, s, log[2];
	pid_t pid;

	if (pipe2(log, O_NONBLOCK) < 0)
		die("pipe: %s", strerror(errno));
	pair(&c, &s);
	/* a first exchange both ways on the fast path, before the fork */
	kit_pattern_fill(b, 7, 0, sizeof(b));
	if (write(c, b, sizeof(b)) != (ssize_t)sizeof(b) || read(s, b, sizeof(b)) != (ssize_t)sizeof(b) ||
	    kit_pattern_check(b, 7, 0, sizeof(b)) || write(s, b, sizeof(b)) != (ssize_t)sizeof(b) ||
	    read(c, b, sizeof(b)) != (ssize_t)sizeof(b) || kit_pattern_check(b, 7, 0, sizeof(b)))
		die("first exchange: %s", strerror(errno));
	pid = fork_child();
	if (pid == 0) {
		close(c);
		dup2(log[1], 2);
		if (sandbox_only(g_calls, NCALLS) < 0)
			_exit(19);
		SANDBOX_EXIT(sandboxed_echo(s, ECHO_BYTES, 8));
	}
	close(log[1]);
	echo_through(c, ECHO_BYTES, 8, 1);
	reap_clean(pid, "the sandboxed child");
	expect_step_aside_line(log[0], "prctl(PR_SET_NO_NEW_PRIVS): a seccomp sandbox: the shim "
				"steps aside");
	close(log[0]);
	close(c);
	close(s);
}

static void seccomp_owner(void)
{
	uint16_t port;
	int l = listener(&port), s;
	pid_t pid = fork_child();

	if (pid == 0) {
		uint8_t b[16];
		int c = connect_rail(port);

		close(l);
		if (c < 0)
			_exit(18);
		if (read(c, b, 16) != 16 || kit_pattern_check(b, 9, 0, 16) || write(c, b, 16) != 16)
			_exit(17);
		if (sandbox_only(g_calls, NCALLS) < 0)
			_exit(19);
		SANDBOX_EXIT(sandboxed_echo(c, ECHO_BYTES, 10));
	}
	s = accept_within(l);
	if (s < 0)
		die("accept: %s", strerror(errno));
	echo_through(s, 16, 9, 0);
	/*
	 * The end only once every byte is back: in its sandbox the process's
	 * exit does not wait for ri2n to deliver what it wrote (as _exit).
	 */
	echo_through(s, ECHO_BYTES, 10, 0);
	shutdown(s, SHUT_WR);
	/*
	 * Its exit may not have acknowledged our FIN (as after _exit): our own
	 * exit may wait RI2N_EXIT_LINGER_MS for it (2 s in the ctest).
	 */
	reap_clean(pid, "the sandboxed process");
	close(s);
	close(l);
}

#if defined(__SANITIZE_THREAD__)
/* a forked child starts an engine thread of its own (seccomp-owner) */
const char *__tsan_default_options(void);
const char *__tsan_default_options(void)
{
	return "die_after_fork=0";
}
#endif

/*
 * A forked child locks itself in a sandbox that forbids getsockopt and
 * execs exec_peer with the connection: the shim, loaded under the filter,
 * sees it at load and steps aside (adopting the descriptor would ask its
 * socket cookie by getsockopt).
 */
static void seccomp_exec(const char *exec_peer)
{
	static const int denied[] = { SANDBOX_EXEC_DENIED };
	char fd[16], bytes[24];
	int c, s, log[2];
	pid_t pid;

	if (pipe2(log, O_NONBLOCK) < 0)
		die("pipe: %s", strerror(errno));
	pair(&c, &s);
	snprintf(fd, sizeof(fd), "%d", s);
	snprintf(bytes, sizeof(bytes), "%u", ECHO_BYTES);
	pid = fork_child();
	if (pid == 0) {
		close(c);
		dup2(log[1], 2);
		if (sandbox_filter(denied, 1, 1) < 0)
			_exit(19);
		execl(exec_peer, exec_peer, fd, "-", "-", bytes, "12", (char *)NULL);
		_exit(127);
	}
	close(log[1]);
	echo_through(c, ECHO_BYTES, 12, 0);
	reap_clean(pid, "the program exec'd under a filter");
	expect_step_aside_line(log[0], "ri2n-run: started under a seccomp filter: the shim steps aside");
	close(log[0]);
	close(c);
	close(s);
}

int main(int argc, char **argv)
{
	int c, s;

	signal(SIGPIPE, SIG_IGN);
	alarm(120); /* a hang fails (SIGALRM kills) rather than stalls */
	if (argc == 3 && strcmp(argv[1], "exec") == 0) {
		pair(&c, &s);
		hand_over_exec(argv[2], c, s, 5);
		close(s);
		close(c);
		pair(&c, &s);
		hand_over_exec(argv[2], s, c, 6);
		close(s);
		close(c);
		hand_over_scm(argv[2], 11);
	} else if (argc >= 2 && strcmp(argv[1], "seccomp") == 0) {
		setenv("RI2N_RUN_VERBOSE", "1", 1); /* the line the sandboxed child writes */
		seccomp_forked();
	} else if (argc >= 2 && strcmp(argv[1], "seccomp-owner") == 0) {
		seccomp_owner();
	} else if (argc == 3 && strcmp(argv[1], "seccomp-exec") == 0) {
		setenv("RI2N_RUN_VERBOSE", "1", 1); /* the line the exec'd program writes */
		seccomp_exec(argv[2]);
	} else {
		die("usage: shim_exec exec EXEC_PEER | seccomp | seccomp-owner | "
		    "seccomp-exec EXEC_PEER");
	}
	printf("shim_exec %s: ok\n", argv[1]);
	return 0;
}
