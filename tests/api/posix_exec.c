/*
 * posix_exec.c - a ri2n socket handed to another program and into a
 * sandbox, as a program linked with libri2n does it (docs/API.md, "Threads,
 * fork, exec, exit"):
 *
 *   - a server forks per connection and the child execs a program with the
 *     connection as an inherited descriptor (an SSH daemon re-executing
 *     itself): the new image's ri2n_getpeername names the client's rail
 *     address and port, ri2n_getsockname ours, and the bytes it echoes are
 *     verified (the accepted end, and the connecting end);
 *   - a connection sent over SCM_RIGHTS to a process forked before it
 *     existed: the same answers there, and verified bytes;
 *   - a forked child that locks itself in a seccomp sandbox allowing only
 *     poll, read, write and exit (privilege separation) moves verified bytes on
 *     the descriptor it inherited and exits normally (no SIGSYS);
 *   - a process that made its connection itself and then sandboxes its own
 *     thread does the same: ri2n steps aside and its engine thread (not
 *     sandboxed) serves the descriptor.
 *
 * Runs in run.sh's namespace (rails r1 and r2); every wait is bounded.
 *
 *   test_posix_exec EXEC_PEER [FILTER]
 */
#define _GNU_SOURCE
#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <sys/wait.h>
#include <unistd.h>

#include "api_harness.h"
#include "ri2n_kit.h"
#include "seccomp_filter.h"

#define WATCHDOG_S 60
#define ECHO_BYTES (4 * MIB)

static const char *g_exec_peer; /* exec_peer_ri2n */

/* ri2n_getsockname (peer 0) or ri2n_getpeername of fd, as "a.b.c.d:port". */
static const char *name_str(int fd, int peer)
{
	struct sockaddr_in a;
	socklen_t len = sizeof(a);

	assert_int_equal(peer ? ri2n_getpeername(fd, SA(&a), &len) : ri2n_getsockname(fd, SA(&a), &len), 0);
	return sin_str(&a);
}

/*
 * flow1 against a child at the other end: a child that dies first fails
 * the test at once with its status (SIGSYS: its sandbox), not after a 30 s
 * wait for bytes that cannot come.
 */
static void flow_with_child(int fd, uint32_t seed, uint64_t n, int shut, pid_t child)
{
	struct flow f = { .fd = fd, .tx_seed = seed, .rx_seed = seed, .tx_total = n,
			  .rx_total = n, .shut_wr = shut };
	uint64_t end = now_ms() + 30000;
	char why[256];

	while (run_flows(&f, 1, 200, why, sizeof(why)) < 0) {
		siginfo_t si = { 0 };

		if (!strstr(why, "timed out") || now_ms() > end)
			fail_msg("%s", why);
		/* peeked, not reaped (WNOWAIT): expect_clean_exit still finds it */
		if (waitid(P_PID, (id_t)child, &si, WEXITED | WNOHANG | WNOWAIT) == 0 &&
		    si.si_pid == child && (si.si_code != CLD_EXITED || si.si_status != 0))
			fail_msg("the child at the other end %s %d%s (%s)",
				 si.si_code == CLD_EXITED ? "failed: exit" : "died of signal", si.si_status,
				 si.si_code != CLD_EXITED && si.si_status == SIGSYS ?
					 " (SIGSYS: a system call its sandbox forbids)" : "", why);
	}
}

/* name_str for a child (no assertion): "" when the call fails. */
static const char *name_str_or(int fd, int peer)
{
	static char buf[32];
	struct sockaddr_in a;
	socklen_t len = sizeof(a);

	memset(buf, 0, sizeof(buf));
	if ((peer ? ri2n_getpeername(fd, SA(&a), &len) : ri2n_getsockname(fd, SA(&a), &len)) == 0 &&
	    len == sizeof(a))
		snprintf(buf, sizeof(buf), "%s", sin_str(&a));
	return buf;
}

/*
 * Hands `give` of a connected pair to exec_peer in a forked child (execs
 * with it inherited; the other end closed there) and echoes a verified
 * pattern through it from `keep`.
 */
static void hand_over_exec(int keep, int give)
{
	char fd[16], peer[32], local[32], bytes[24];
	pid_t pid;
	int st;

	snprintf(peer, sizeof(peer), "%s", name_str(give, 1));
	snprintf(local, sizeof(local), "%s", name_str(give, 0));
	/* the peer is the other end itself: its own address and port */
	assert_string_equal(peer, name_str(keep, 0));
	snprintf(fd, sizeof(fd), "%d", give);
	snprintf(bytes, sizeof(bytes), "%u", ECHO_BYTES);
	pid = fork_child();
	if (pid == 0) {
		close(keep);
		fcntl(give, F_SETFD, 0); /* inherited across exec */
		execl(g_exec_peer, g_exec_peer, fd, peer, local, bytes, "31", (char *)NULL);
		_exit(127);
	}
	flow_with_child(keep, 31, ECHO_BYTES, 0, pid);
	st = reap(pid, 30000);
	if (!WIFEXITED(st) || WEXITSTATUS(st) != 0)
		fail_msg("the exec'd program failed: status %#x (exit %d; 2: it printed why)", st,
			 WIFEXITED(st) ? WEXITSTATUS(st) : -1);
}

/* The accepted end across fork and exec. */
static void test_exec_accepted(void **state)
{
	int c, s;

	(void)state;
	connect_pair(&c, &s);
	hand_over_exec(c, s);
	assert_int_equal(ri2n_close(c), 0);
	assert_int_equal(ri2n_close(s), 0);
}

/* The connecting end across fork and exec. */
static void test_exec_connected(void **state)
{
	int c, s;

	(void)state;
	connect_pair(&c, &s);
	hand_over_exec(s, c);
	assert_int_equal(ri2n_close(c), 0);
	assert_int_equal(ri2n_close(s), 0);
}

/* Sends descriptor fd and the text `what` over the AF_UNIX socket u (SCM_RIGHTS). */
static void send_fd(int u, int fd, const char *what, size_t len)
{
	union {
		struct cmsghdr h;
		char buf[CMSG_SPACE(sizeof(int))];
	} cm = { 0 };
	struct iovec iov = { (void *)what, len };
	struct msghdr m = { .msg_iov = &iov, .msg_iovlen = 1, .msg_control = cm.buf,
			    .msg_controllen = sizeof(cm.buf) };
	struct cmsghdr *h = CMSG_FIRSTHDR(&m);

	h->cmsg_level = SOL_SOCKET;
	h->cmsg_type = SCM_RIGHTS;
	h->cmsg_len = CMSG_LEN(sizeof(int));
	memcpy(CMSG_DATA(h), &fd, sizeof(int));
	assert_int_equal(sendmsg(u, &m, 0), (ssize_t)len);
}

/* The descriptor sent over u, with its text in what[len]; -1 if none came. */
static int recv_fd(int u, char *what, size_t len)
{
	union {
		struct cmsghdr h;
		char buf[CMSG_SPACE(sizeof(int))];
	} cm;
	struct iovec iov = { what, len };
	struct msghdr m = { .msg_iov = &iov, .msg_iovlen = 1, .msg_control = cm.buf,
			    .msg_controllen = sizeof(cm.buf) };
	struct cmsghdr *h;
	int fd = -1;

	if (recvmsg(u, &m, MSG_WAITALL) != (ssize_t)len)
		return -1;
	for (h = CMSG_FIRSTHDR(&m); h; h = CMSG_NXTHDR(&m, h))
		if (h->cmsg_level == SOL_SOCKET && h->cmsg_type == SCM_RIGHTS)
			memcpy(&fd, CMSG_DATA(h), sizeof(int));
	return fd;
}

/*
 * In a child (sandboxed or not): echoes `total` bytes of pattern `seed` on
 * fd, then waits for the end of the stream.  0, or a nonzero exit code (no
 * stdio: a sandbox allows nothing but poll, read, write and exit).
 */
static int echo_back(int fd, uint64_t total, uint32_t seed)
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
		if (pat_check(buf, (size_t)n, seed, off) >= 0)
			return 21;
		for (ssize_t done = 0; done < n; done += w)
			if ((w = write(fd, buf + done, (size_t)(n - done))) <= 0)
				return 22;
		off += (uint64_t)n;
	}
	return read(fd, buf, 1) == 0 ? 0 : 23;
}

static const int g_calls[] = { SANDBOX_ECHO_CALLS };

static void expect_clean_exit(pid_t pid, const char *who)
{
	int st = reap(pid, 30000);

	if (WIFSIGNALED(st))
		fail_msg("%s died of signal %d%s", who, WTERMSIG(st),
			 WTERMSIG(st) == SIGSYS ? " (SIGSYS: a system call its sandbox forbids)" : "");
	if (!WIFEXITED(st) || WEXITSTATUS(st) != 0)
		fail_msg("%s failed: exit %d", who, WIFEXITED(st) ? WEXITSTATUS(st) : -1);
}

/*
 * A connection sent over SCM_RIGHTS to a process forked before it existed:
 * there ri2n_getpeername and ri2n_getsockname name it, ri2n_getsockopt
 * answers SO_TYPE, and its bytes echo back verified.
 */
static void test_scm_rights(void **state)
{
	char names[64], got[64];
	int u[2], c, s;
	pid_t pid;

	(void)state;
	assert_int_equal(socketpair(AF_UNIX, SOCK_STREAM, 0, u), 0);
	pid = fork_child();
	if (pid == 0) {
		int fd, type = 0;
		socklen_t tl = sizeof(type);

		close(u[0]);
		fd = recv_fd(u[1], names, sizeof(names));
		if (fd < 0)
			_exit(30);
		memset(got, 0, sizeof(got));
		snprintf(got, sizeof(got), "%s", name_str_or(fd, 1));
		snprintf(got + 32, 32, "%s", name_str_or(fd, 0));
		if (memcmp(got, names, 32) || memcmp(got + 32, names + 32, 32))
			_exit(31);
		if (ri2n_getsockopt(fd, SOL_SOCKET, SO_TYPE, &type, &tl) < 0 || type != SOCK_STREAM)
			_exit(32);
		_exit(echo_back(fd, ECHO_BYTES, 51));
	}
	close(u[1]);
	connect_pair(&c, &s);
	memset(names, 0, sizeof(names));
	snprintf(names, 32, "%s", name_str(s, 1));
	snprintf(names + 32, 32, "%s", name_str(s, 0));
	send_fd(u[0], s, names, sizeof(names));
	flow_with_child(c, 51, ECHO_BYTES, 1, pid);
	expect_clean_exit(pid, "the process that got the connection over SCM_RIGHTS");
	close(u[0]);
	assert_int_equal(ri2n_close(c), 0);
	assert_int_equal(ri2n_close(s), 0);
}

/* A forked child sandboxes itself and echoes on the connection it inherited. */
static void test_seccomp_forked_child(void **state)
{
	char line[4096];
	int c, s, log[2];
	ssize_t n;
	pid_t pid;

	(void)state;
	assert_int_equal(pipe2(log, O_NONBLOCK), 0);
	connect_pair(&c, &s);
	flow2(c, s, 64 * KIB, 64 * KIB, 0, 41); /* the fast path has been used on both */
	pid = fork_child();
	if (pid == 0) {
		close(c);
		dup2(log[1], 2); /* ri2n's line (RI2N_LOG=info, main) */
		if (sandbox_only(g_calls, (int)(sizeof(g_calls) / sizeof(g_calls[0]))) < 0)
			_exit(19);
		SANDBOX_EXIT(echo_back(s, ECHO_BYTES, 42));
	}
	close(log[1]);
	flow_with_child(c, 42, ECHO_BYTES, 1, pid);
	expect_clean_exit(pid, "the sandboxed child");
	n = read(log[0], line, sizeof(line) - 1);
	line[n > 0 ? n : 0] = 0;
	close(log[0]);
	if (!strstr(line, "prctl(PR_SET_NO_NEW_PRIVS): a seccomp sandbox; ri2n steps aside"))
		fail_msg("the sandboxed child did not say ri2n steps aside; its stderr: \"%s\"", line);
	assert_int_equal(ri2n_close(c), 0);
	assert_int_equal(ri2n_close(s), 0);
}

/*
 * A process with a connection of its own (its engine, its fast path)
 * sandboxes its main thread and echoes on it.
 */
static void test_seccomp_owner(void **state)
{
	struct sockaddr_in peer;
	uint16_t port;
	int l = make_listener(NULL, 2, &port), s;
	pid_t pid;

	(void)state;
	pid = fork_child();
	if (pid == 0) {
		struct sockaddr_in a = sin_of(RAIL1, port);
		uint8_t b[16];
		int c = ri2n_socket();

		close(l);
		if (c < 0 || ri2n_connect(c, SA(&a), sizeof(a)) < 0)
			_exit(18);
		/* a first exchange on the fast path, before the sandbox */
		if (read(c, b, 16) != 16 || pat_check(b, 16, 43, 0) >= 0 || write(c, b, 16) != 16)
			_exit(17);
		if (sandbox_only(g_calls, (int)(sizeof(g_calls) / sizeof(g_calls[0]))) < 0)
			_exit(19);
		/* ri2n's own calls on it say it is not theirs now, without a system call */
		if (ri2n_send(c, b, 1, MSG_NOSIGNAL) != -1 || errno != ENOTSOCK)
			_exit(16);
		SANDBOX_EXIT(echo_back(c, ECHO_BYTES, 44));
	}
	s = accept_within(l, 10000, &peer);
	flow1(s, 43, 16, 43, 16, 0, 0);
	/*
	 * The end only once every byte is back: in its sandbox the process's
	 * exit does not wait for ri2n to deliver what it wrote (as _exit).
	 */
	flow_with_child(s, 44, ECHO_BYTES, 0, pid);
	assert_int_equal(shutdown(s, SHUT_WR), 0);
	/*
	 * Its exit may not have acknowledged our FIN (as after _exit): our own
	 * exit may wait RI2N_EXIT_LINGER_MS for it (2 s here, main).
	 */
	expect_clean_exit(pid, "the sandboxed process");
	assert_int_equal(ri2n_close(s), 0);
	assert_int_equal(ri2n_close(l), 0);
}

#define T(f) HARNESS_TEST(f)

int main(int argc, char **argv)
{
	static const struct CMUnitTest tests[] = {
		T(test_exec_accepted),
		T(test_exec_connected),
		T(test_scm_rights),
		T(test_seccomp_forked_child),
		T(test_seccomp_owner),
	};

	if (argc < 2) {
		fprintf(stderr, "usage: test_posix_exec EXEC_PEER [FILTER]\n");
		return 2;
	}
	g_exec_peer = argv[1];
	/*
	 * Not harness_init: its exit hook for children asks getpid, which the
	 * sandboxed children must not need.  What else it does, here.
	 */
	setvbuf(stdout, NULL, _IOLBF, 0);
	signal(SIGPIPE, SIG_IGN);
	setenv("RI2N_RAILS", "r1,r2", 0);
	setenv("RI2N_EXIT_LINGER_MS", "2000", 0); /* test_seccomp_owner's peer may leave unacknowledged */
	setenv("RI2N_LOG", "info", 1); /* test_seccomp_forked_child reads the line of the sandbox */
	harness_watchdog("test_posix_exec", WATCHDOG_S);
	if (argc > 2)
		cmocka_set_test_filter(argv[2]);
	return cmocka_run_group_tests_name("ri2n: sockets across exec and into a sandbox", tests,
					   NULL, NULL);
}
