/*
 * api_stream.c - how a connection's stream ends and how its descriptor
 * behaves: clean EOF and half-close, a peer killed outright (ETIMEDOUT after
 * the dead-peer timeout, never EOF, never a hang), resets, a listener
 * closed with connections queued, non-blocking and vector I/O.
 */
#define _GNU_SOURCE
#include <fcntl.h>
#include <inttypes.h>
#include <poll.h>
#include <signal.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <sys/epoll.h>
#include <sys/ioctl.h>
#include <sys/select.h>
#include <sys/uio.h>
#include <sys/wait.h>
#include <unistd.h>

#include "api_harness.h"

/* ---- clean ends ---- */

/*
 * The peer writes and closes at once (close() or ri2n_close()), or leaves
 * before it was even accepted: read returns every byte, then 0, again and
 * again; SO_ERROR stays 0.
 */
void test_clean_eof(void **state)
{
	(void)state;
	for (int how = 0; how < 2; how++) {
		uint64_t n = how ? 300 * KIB : 3 * MIB;
		int c, s;
		uint8_t b[16];

		connect_pair(&c, &s);
		flow1(c, 51, n, 0, 0, 0, 0);
		if (how == 0)
			assert_int_equal(close(c), 0);
		else
			assert_int_equal(ri2n_close(c), 0);
		flow1(s, 0, 0, 51, n, 0, 1);
		assert_int_equal(read(s, b, sizeof(b)), 0); /* EOF stays EOF */
		assert_int_equal(get_so_error(s), 0);
		assert_int_equal(ri2n_close(s), 0);
	}
	{
		struct sockaddr_in peer;
		uint16_t port;
		int l = make_listener(NULL, 4, &port), c, s;

		/* a client that wrote and left before it was accepted: its bytes, then EOF */
		c = connect_to(port);
		flow1(c, 55, 40 * KIB, 0, 0, 0, 0);
		assert_int_equal(close(c), 0);
		usleep(100 * 1000);
		s = accept_within(l, 10000, &peer);
		flow1(s, 0, 0, 55, 40 * KIB, 1, 1);
		assert_int_equal(ri2n_close(s), 0);
		assert_int_equal(ri2n_close(l), 0);
	}
}

/* shutdown(SHUT_WR): the peer reads everything then EOF; the other way goes on. */
void test_half_close(void **state)
{
	int c, s;

	(void)state;
	connect_pair(&c, &s);
	flow1(c, 52, 100 * KIB, 0, 0, 1, 0); /* writes, then shutdown(SHUT_WR) */
	flow1(s, 0, 0, 52, 100 * KIB, 0, 1);  /* all of it, then EOF */
	assert_int_equal(read(s, &(char){ 0 }, 1), 0);
	flow1(s, 53, 500 * KIB, 0, 0, 0, 0);  /* the other way still works */
	flow1(c, 0, 0, 53, 500 * KIB, 0, 0);
	flow1(s, 54, 10 * KIB, 0, 0, 1, 0);   /* and closes cleanly in turn */
	flow1(c, 0, 0, 54, 10 * KIB, 0, 1);
	assert_int_equal(get_so_error(c), 0);
	assert_int_equal(get_so_error(s), 0);
	assert_int_equal(ri2n_close(c), 0);
	assert_int_equal(ri2n_close(s), 0);
}

/* ---- a peer killed outright ---- */

enum { DEATH_SEED = 61, DEATH_MARGIN_MS = 8000 };

/* In a child: moves the pattern out and throws away what comes in, until it is killed. */
__attribute__((noreturn)) static void child_stream(int fd)
{
	static uint8_t buf[64 * 1024];
	uint64_t off = 0;

	fcntl(fd, F_SETFL, fcntl(fd, F_GETFL) | O_NONBLOCK);
	for (;;) {
		struct pollfd p = { .fd = fd, .events = POLLIN | POLLOUT };

		if (poll(&p, 1, 30000) <= 0)
			_exit(20);
		if ((p.revents & POLLIN) && read(fd, buf, sizeof(buf)) == 0)
			_exit(21);
		if (p.revents & POLLOUT) {
			ssize_t w;

			pat_fill(buf, sizeof(buf), DEATH_SEED, off);
			w = send(fd, buf, sizeof(buf), MSG_NOSIGNAL | MSG_DONTWAIT);
			if (w > 0)
				off += (uint64_t)w;
			else if (w < 0 && errno != EAGAIN)
				_exit(22);
		}
	}
}

/* In a child: listens, tells its port on wfd, accepts one, streams. */
__attribute__((noreturn)) static void child_acceptor(int wfd)
{
	child_stream(child_accept_one(wfd));
}

/* The parent connects to a child that accepts; the parent's dead-peer timeout is dead_ms. */
static int death_child_accepts(pid_t *pid, int dead_ms)
{
	struct sockaddr_in a;
	uint16_t port = 0;
	int pp[2], fd;

	assert_int_equal(pipe(pp), 0);
	*pid = fork_child();
	if (*pid == 0) {
		close(pp[0]);
		child_acceptor(pp[1]);
	}
	close(pp[1]);
	assert_true(wait_fd(pp[0], POLLIN, 10000) & POLLIN);
	assert_int_equal(read(pp[0], &port, sizeof(port)), sizeof(port));
	close(pp[0]);
	fd = ri2n_socket();
	assert_true(fd >= 0);
	set_opt(fd, RI2N_DEAD_PEER_MS, dead_ms);
	set_opt(fd, RI2N_CONNECT_TIMEOUT_MS, 10000);
	a = sin_of(RAIL1, port);
	if (ri2n_connect(fd, SA(&a), sizeof(a)) < 0)
		fail_msg("connect to the child at %s: %s", sin_str(&a), strerror(errno));
	return fd;
}

/* The parent accepts a child's connection; it has its listener's timeout, dead_ms. */
static int death_child_connects(pid_t *pid, int dead_ms)
{
	struct sockaddr_in any = sin_of(NULL, 0), peer;
	socklen_t len = sizeof(any);
	int l = ri2n_socket(), fd;

	assert_true(l >= 0);
	set_opt(l, RI2N_DEAD_PEER_MS, dead_ms);
	assert_int_equal(ri2n_bind(l, SA(&any), sizeof(any)), 0);
	assert_int_equal(ri2n_listen(l, 1), 0);
	assert_int_equal(ri2n_getsockname(l, SA(&any), &len), 0);
	*pid = fork_child();
	if (*pid == 0) {
		struct sockaddr_in a = sin_of(RAIL1, ntohs(any.sin_port));
		int c = ri2n_socket();

		if (c < 0 || ri2n_connect(c, SA(&a), sizeof(a)) < 0)
			_exit(10);
		child_stream(c);
	}
	fd = accept_within(l, 10000, &peer);
	assert_int_equal(ri2n_close(l), 0);
	assert_int_equal(get_opt(fd, RI2N_DEAD_PEER_MS), dead_ms);
	return fd;
}

/* Reads (checking) and writes until `bytes` came: a transfer under way. */
static uint64_t death_transfer(int fd, uint64_t bytes)
{
	static uint8_t buf[64 * 1024];
	uint64_t rx = 0, t0 = now_ms();

	set_nonblock(fd, 1);
	while (rx < bytes) {
		short ev = wait_fd(fd, POLLIN | POLLOUT, 5000);
		ssize_t r;

		if (!ev || now_ms() - t0 > 20000)
			fail_msg("the transfer with the child stalled at %" PRIu64 " bytes", rx);
		if (ev & POLLIN) {
			r = read(fd, buf, sizeof(buf));
			if (r <= 0)
				fail_msg("read before the kill: %zd (%s)", r, strerror(errno));
			if (pat_check(buf, (size_t)r, DEATH_SEED, rx) >= 0)
				fail_msg("a wrong byte before the kill near %" PRIu64, rx);
			rx += (uint64_t)r;
		}
		if (ev & POLLOUT) {
			memset(buf, 'x', 4096);
			if (send(fd, buf, 4096, MSG_NOSIGNAL) < 0 && errno != EAGAIN)
				fail_msg("write before the kill: %s", strerror(errno));
		}
	}
	return rx;
}

/*
 * Reads what is left (checked) until the error, never 0; its time after t0.
 * want: the reason libri2n's own read gives (through the descriptor,
 * RI2N_PLAIN_FAST=0, always ECONNRESET); dead_ms: the dead-peer timeout.
 */
static uint64_t death_read_error(int fd, uint64_t rx, uint64_t t0, int want, int dead_ms)
{
	static uint8_t buf[64 * 1024];

	for (;;) {
		short ev = wait_fd(fd, POLLIN, 1000);
		ssize_t r;

		if (now_ms() - t0 > (uint64_t)dead_ms + DEATH_MARGIN_MS)
			fail_msg("no error %d ms after the peer died (dead-peer timeout %d ms): a hang",
				 (int)(now_ms() - t0), dead_ms);
		if (!ev)
			continue;
		r = read(fd, buf, sizeof(buf));
		if (r > 0) {
			if (pat_check(buf, (size_t)r, DEATH_SEED, rx) >= 0)
				fail_msg("a wrong byte after the kill near %" PRIu64, rx);
			rx += (uint64_t)r;
			continue;
		}
		if (r == 0)
			fail_msg("a clean end of file from a peer that was killed (after %" PRIu64
				 " bytes)", rx);
		if (errno == EAGAIN || errno == EINTR)
			continue;
		/*
		 * Through the descriptor (RI2N_PLAIN_FAST=0) ECONNRESET; libri2n's
		 * own read says why, as TCP's does.
		 */
		if (errno != (plain_is_fast() ? want : ECONNRESET))
			fail_msg("read failed with %s, want %s", strerror(errno),
				 strerror(plain_is_fast() ? want : ECONNRESET));
		return now_ms() - t0;
	}
}

/*
 * Writes (as a writer that never reads would: poll POLLOUT, write) until the
 * error: EPIPE or ECONNRESET, within the bound; its time after t0.
 */
static uint64_t death_write_error(int fd, uint64_t t0, int dead_ms)
{
	static uint8_t buf[64 * 1024];

	memset(buf, 'w', sizeof(buf));
	for (;;) {
		short ev = wait_fd(fd, POLLOUT, 1000);
		ssize_t w;

		if (now_ms() - t0 > (uint64_t)dead_ms + DEATH_MARGIN_MS)
			fail_msg("writes still %s %d ms after the peer died (dead-peer timeout %d "
				 "ms): a hang", ev ? "accepted" : "blocked", (int)(now_ms() - t0),
				 dead_ms);
		if (!ev)
			continue;
		w = send(fd, buf, sizeof(buf), MSG_NOSIGNAL | MSG_DONTWAIT);
		if (w >= 0 || errno == EAGAIN || errno == EINTR)
			continue;
		if (errno != EPIPE && errno != ECONNRESET)
			fail_msg("write failed with %s, want EPIPE or ECONNRESET", strerror(errno));
		return now_ms() - t0;
	}
}

/* One FAILED event for fd, with want, and no CLOSED. */
static void death_expect_event(int fd, int want)
{
	struct ri2n_event e;
	int failed = 0;

	while (ri2n_read_event(&e) == 1) {
		if (e.fd != fd)
			continue;
		assert_int_not_equal(e.type, RI2N_EVENT_CLOSED);
		if (e.type == RI2N_EVENT_FAILED) {
			assert_int_equal(e.error, want);
			failed++;
		}
	}
	assert_int_equal(failed, 1);
}

/*
 * A peer process that stops mid-transfer (no FIN, no RESET).  Stopped
 * (SIGSTOP: silent, its ports still open): the survivor's read delivers what
 * arrived, then fails within the dead-peer timeout and a margin, not
 * sooner; SO_ERROR says ETIMEDOUT.  Killed (SIGKILL: its ports closed, so
 * its host answers with port unreachable on every rail): the same with
 * ECONNRESET, long before the dead-peer timeout (10 s here).  Either way
 * write fails with EPIPE, the event queue has a FAILED event, and there is
 * never a clean end of file, never a hang.  The survivor of a dead acceptor
 * reads first; the survivor of a dead connector writes first, until
 * back-pressure stops it, and must be woken by the error.
 */
static void death_case(int child_accepts, int sig)
{
	struct ri2n_event e;
	int dead_ms = sig == SIGKILL ? 10000 : DEAD_PEER_MS;
	int want = sig == SIGKILL ? ECONNRESET : ETIMEDOUT;
	const char *who = child_accepts ? "acceptor" : "connector";
	uint64_t rx, t0, dt;
	ssize_t w;
	pid_t pid;
	int fd, err;

	fd = child_accepts ? death_child_accepts(&pid, dead_ms) : death_child_connects(&pid, dead_ms);
	rx = death_transfer(fd, 256 * KIB);
	assert_true(ri2n_event_fd() >= 0);
	while (ri2n_read_event(&e) == 1) /* only what follows the kill counts */
		;
	assert_int_equal(kill(pid, sig), 0);
	if (sig == SIGKILL)
		assert_true(WIFSIGNALED(reap(pid, 5000)));
	t0 = now_ms();
	if (!child_accepts) {
		dt = death_write_error(fd, t0, dead_ms);
		print_message("connector %s: write failed after %" PRIu64 " ms\n", strsignal(sig), dt);
		if (sig == SIGKILL)
			assert_true(dt + 1000 < (uint64_t)dead_ms);
		else
			assert_true(dt + 500 >= (uint64_t)dead_ms);
	}
	dt = death_read_error(fd, rx, t0, want, dead_ms);
	print_message("%s %s: read failed after %" PRIu64 " ms (dead-peer timeout %d ms)\n", who,
		      strsignal(sig), dt, dead_ms);
	if (sig == SIGKILL) /* its host's port unreachable told, not the timeout */
		assert_true(dt + 1000 < (uint64_t)dead_ms);
	else /* the core decides after dead_ms of silence; nothing may end it sooner */
		assert_true(dt + 500 >= (uint64_t)dead_ms);
	w = send(fd, "x", 1, MSG_NOSIGNAL);
	err = errno;
	if (w != -1 || (err != EPIPE && err != ECONNRESET))
		fail_msg("write on a dead connection: %zd (%s), want EPIPE or ECONNRESET", w,
			 strerror(err));
	assert_int_equal(get_so_error(fd), want);
	assert_int_equal(get_so_error(fd), 0);
	death_expect_event(fd, want);
	assert_int_equal(ri2n_close(fd), 0);
	if (sig != SIGKILL) {
		assert_int_equal(kill(pid, SIGKILL), 0);
		assert_true(WIFSIGNALED(reap(pid, 5000)));
	}
}

void test_death_of_acceptor(void **state)
{
	(void)state;
	death_case(1, SIGKILL);
}

void test_death_of_connector(void **state)
{
	(void)state;
	death_case(0, SIGKILL);
}

void test_silence_of_acceptor(void **state)
{
	(void)state;
	death_case(1, SIGSTOP);
}

void test_silence_of_connector(void **state)
{
	(void)state;
	death_case(0, SIGSTOP);
}

/* ---- resets ---- */

/*
 * The survivor's read fails with ECONNRESET within ms, never with EOF;
 * write fails; SO_ERROR is ECONNRESET.  after_eof: the peer's FIN was read
 * before the reset came, and then, as after TCP's RST in CLOSE_WAIT, reads
 * go on returning 0 (never an error, never bytes) and the reset shows as
 * the descriptor hanging up (POLLHUP) and writes failing.
 */
static void expect_reset(const char *what, int fd, int ms, int after_eof)
{
	uint64_t t0 = now_ms();
	char b[4096];
	ssize_t w;
	int err;

	for (;;) {
		short ev = wait_fd(fd, POLLIN, 500);
		ssize_t r;

		if (now_ms() - t0 > (uint64_t)ms)
			fail_msg("%s: no %s within %d ms of the reset", what,
				 after_eof ? "hang-up" : "ECONNRESET", ms);
		if (!ev)
			continue;
		r = recv(fd, b, sizeof(b), MSG_DONTWAIT);
		if (r > 0)
			fail_msg("%s: %zd bytes nobody sent", what, r);
		if (r == 0) {
			if (!after_eof)
				fail_msg("%s: a clean end of file where a reset was due", what);
			if (ev & POLLHUP)
				break; /* the reset came: the connection is gone */
			usleep(10 * 1000);
			continue;
		}
		if (errno == EAGAIN || errno == EINTR)
			continue;
		if (after_eof)
			fail_msg("%s: read failed with %s after the end of file, want 0", what,
				 strerror(errno));
		if (errno != ECONNRESET)
			fail_msg("%s: read failed with %s, want ECONNRESET", what, strerror(errno));
		break;
	}
	w = send(fd, "x", 1, MSG_NOSIGNAL);
	err = errno;
	if (w != -1 || (err != EPIPE && err != ECONNRESET))
		fail_msg("%s: write after a reset: %zd (%s), want EPIPE or ECONNRESET", what, w,
			 strerror(err));
	err = get_so_error(fd);
	if (after_eof ? err != ECONNRESET && err != 0 : err != ECONNRESET)
		fail_msg("%s: SO_ERROR %s", what, strerror(err));
}

/*
 * A peer closing with received data unread resets the connection, as TCP
 * does: the other side reads ECONNRESET and SO_ERROR is ECONNRESET.  So does
 * data arriving after the peer closed (after the EOF its FIN made: reads
 * stay at EOF, writes fail, as TCP's).
 */
void test_reset(void **state)
{
	int c, s, avail = 0;

	(void)state;
	for (int how = 0; how < 2; how++) {
		uint64_t end = now_ms() + 10000;

		connect_pair(&c, &s);
		flow1(s, 71, 64 * KIB, 0, 0, 0, 0);
		/* all of it waits, unread, in the client's descriptor */
		do
			assert_int_equal(ioctl(c, FIONREAD, &avail), 0);
		while (avail < (int)(64 * KIB) && now_ms() < end && usleep(5 * 1000) == 0);
		assert_int_equal(avail, 64 * KIB);
		if (how == 0)
			assert_int_equal(close(c), 0);
		else
			assert_int_equal(ri2n_close(c), 0);
		expect_reset(how ? "ri2n_close() with data unread" : "close() with data unread", s,
			     10000, 0);
		assert_int_equal(ri2n_close(s), 0);
	}
	/* the client closes with nothing unread: EOF; then the server's data resets */
	connect_pair(&c, &s);
	assert_int_equal(close(c), 0);
	flow1(s, 0, 0, 0, 0, 0, 1); /* the FIN: a clean EOF */
	assert_int_equal(send(s, "late", 4, MSG_NOSIGNAL), 4);
	expect_reset("data after the peer's close", s, 10000, 1);
	assert_int_equal(ri2n_close(s), 0);
}

/* SO_LINGER {1, 0} then close: the peer reads ECONNRESET, as after TCP's abortive close; {1, N > 0} refused. */
void test_linger_reset(void **state)
{
	struct linger lg = { .l_onoff = 1, .l_linger = 0 };
	int c, s;

	(void)state;
	connect_pair(&c, &s);
	assert_int_equal(ri2n_setsockopt(c, SOL_SOCKET, SO_LINGER, &lg, sizeof(lg)), 0);
	assert_int_equal(close(c), 0);
	expect_reset("close() after SO_LINGER {1, 0}", s, 10000, 0);
	assert_int_equal(ri2n_close(s), 0);
	/*
	 * {1, 5} would make close block until the bytes are delivered; ri2n's
	 * close delivers them in the background: refused, not ignored.  {0, *}
	 * is the graceful close: EOF.
	 */
	connect_pair(&c, &s);
	lg.l_linger = 5;
	expect_fail(ri2n_setsockopt(c, SOL_SOCKET, SO_LINGER, &lg, sizeof(lg)), EOPNOTSUPP);
	lg.l_onoff = 0;
	assert_int_equal(ri2n_setsockopt(c, SOL_SOCKET, SO_LINGER, &lg, sizeof(lg)), 0);
	assert_int_equal(close(c), 0);
	flow1(s, 0, 0, 0, 0, 0, 1);
	assert_int_equal(ri2n_close(s), 0);
}

/* Closed by one side, never by the other: reset after the closer's dead-peer timeout. */
void test_orphan_reset(void **state)
{
	struct sockaddr_in a, peer;
	uint16_t port;
	uint64_t t0;
	int l, c, s;

	(void)state;
	l = make_listener(NULL, 1, &port);
	c = ri2n_socket();
	assert_true(c >= 0);
	set_opt(c, RI2N_DEAD_PEER_MS, DEAD_PEER_MS);
	a = sin_of(RAIL1, port);
	assert_int_equal(ri2n_connect(c, SA(&a), sizeof(a)), 0);
	s = accept_within(l, 10000, &peer);
	assert_int_equal(ri2n_close(l), 0);
	assert_int_equal(close(c), 0);
	flow1(s, 0, 0, 0, 0, 0, 1); /* the FIN */
	t0 = now_ms();
	expect_reset("orphaned by the peer's close", s, DEAD_PEER_MS + DEATH_MARGIN_MS, 1);
	assert_true(now_ms() - t0 + 500 >= DEAD_PEER_MS);
	assert_int_equal(ri2n_close(s), 0);
}

/* ---- exit: the linger ---- */

/* Runs "nft ARGS" in this namespace: 0 when it worked. */
static int nft(const char *fmt, ...) __attribute__((format(printf, 1, 2)));
static int nft(const char *fmt, ...)
{
	char args[256], cmd[512];
	va_list ap;

	va_start(ap, fmt);
	vsnprintf(args, sizeof(args), fmt, ap);
	va_end(ap);
	snprintf(cmd, sizeof(cmd), "nft %s 2>/dev/null", args);
	return system(cmd);
}

/* Packets the table's counter dropped, or -1. */
static long nft_dropped(const char *table)
{
	char cmd[256], line[256];
	long n = -1;
	FILE *f;

	snprintf(cmd, sizeof(cmd), "nft list table inet %s 2>/dev/null", table);
	f = popen(cmd, "r");
	if (!f)
		return -1;
	while (fgets(line, sizeof(line), f)) {
		const char *p = strstr(line, "packets ");

		if (p)
			n = strtol(p + 8, NULL, 10);
	}
	pclose(f);
	return n;
}

enum { EXIT_SEED = 91, EXIT_BYTES = 256 * KIB, EXIT_DROP_MS = 200 };

/*
 * A process that exits before its peer has closed waits for the peer's FIN
 * (up to 1 s), and then stays for its linger (1 s), as it would had the FIN
 * come before exit: it acknowledges that FIN once, the ACK may be lost, and
 * only this process can acknowledge the FIN the peer sends again.  Here the
 * ACK is lost for sure: nftables drops every datagram to the parent's port
 * from just before the parent closes until EXIT_DROP_MS later.  The parent's
 * close must still complete (CLOSED), not end at its dead-peer timeout
 * (FAILED, ETIMEDOUT) as it did when the exiting child left at once.
 */
void test_exit_lingers(void **state)
{
	struct sockaddr_in any = sin_of(NULL, 0), peer;
	socklen_t len = sizeof(any);
	char table[32];
	uint64_t t0, end;
	long dropped;
	int l, s, status, closed = 0;
	struct ri2n_event e;
	pid_t pid;

	(void)state;
	snprintf(table, sizeof(table), "ri2n_api_%d", (int)getpid());
	if (nft("add table inet %s", table) != 0)
		skip(); /* no nft, or no right to use it in this namespace */
	nft("delete table inet %s", table);
	l = ri2n_socket();
	assert_true(l >= 0);
	set_opt(l, RI2N_DEAD_PEER_MS, DEAD_PEER_MS);
	assert_int_equal(ri2n_bind(l, SA(&any), sizeof(any)), 0);
	assert_int_equal(ri2n_listen(l, 1), 0);
	assert_int_equal(ri2n_getsockname(l, SA(&any), &len), 0);
	pid = fork_child();
	if (pid == 0) {
		struct sockaddr_in a = sin_of(RAIL1, ntohs(any.sin_port));
		int c = ri2n_socket();
		struct flow f;
		char why[256];

		if (c < 0 || ri2n_connect(c, SA(&a), sizeof(a)) < 0)
			_exit(10);
		f = (struct flow){ .fd = c, .tx_seed = EXIT_SEED, .tx_total = EXIT_BYTES,
				   .shut_wr = 1 };
		if (run_flows(&f, 1, 20000, why, sizeof(why)) != 0)
			_exit(11);
		close(c);
		exit(0); /* the drain: our bytes and FIN acknowledged, then the parent's FIN */
	}
	s = accept_within(l, 10000, &peer);
	assert_int_equal(ri2n_close(l), 0);
	assert_true(ri2n_event_fd() >= 0);
	while (ri2n_read_event(&e) == 1)
		;
	flow1(s, 0, 0, EXIT_SEED, EXIT_BYTES, 0, 1); /* every byte checked, then EOF */
	/* the ACK of our FIN will be lost: whatever the child sends us is, for a while */
	if (nft("add table inet %s", table) != 0 ||
	    nft("add chain inet %s i '{ type filter hook input priority 0; }'", table) != 0 ||
	    nft("add rule inet %s i udp dport %u counter drop", table,
		(unsigned)ntohs(any.sin_port)) != 0) {
		nft("delete table inet %s", table);
		fail_msg("could not make the nftables rule");
	}
	assert_int_equal(shutdown(s, SHUT_WR), 0);
	t0 = now_ms();
	usleep(EXIT_DROP_MS * 1000);
	dropped = nft_dropped(table);
	nft("delete table inet %s", table);
	if (dropped < 1)
		fail_msg("nothing from the child was dropped (%ld): no lost ACK to test", dropped);
	end = t0 + DEAD_PEER_MS + DEATH_MARGIN_MS;
	while (!closed && now_ms() < end) {
		if (ri2n_read_event(&e) != 1) {
			wait_fd(ri2n_event_fd(), POLLIN, 100);
			continue;
		}
		if (e.fd != s)
			continue;
		if (e.type == RI2N_EVENT_FAILED)
			fail_msg("our close failed (%s) %d ms after our FIN: the exiting peer did "
				 "not stay to acknowledge it again", strerror(e.error),
				 (int)(now_ms() - t0));
		closed = e.type == RI2N_EVENT_CLOSED;
	}
	if (!closed)
		fail_msg("no CLOSED event %d ms after our FIN", (int)(now_ms() - t0));
	print_message("closed %d ms after our FIN (%ld datagrams from the exiting child dropped)\n",
		      (int)(now_ms() - t0), dropped);
	status = reap(pid, 10000);
	assert_true(WIFEXITED(status));
	assert_int_equal(WEXITSTATUS(status), 0);
	assert_int_equal(ri2n_close(s), 0);
}

/*
 * Closing a listening socket stops accepting: connections waiting in its
 * queue are reset, connections already accepted go on, the port is free.
 */
void test_listener_close(void **state)
{
	struct sockaddr_in peer, a;
	uint16_t port;
	uint64_t end;
	int l, c1, s1, c2, rc;

	(void)state;
	l = make_listener(NULL, 4, &port);
	c1 = connect_to(port);
	s1 = accept_within(l, 10000, &peer);
	c2 = connect_to(port); /* established, waiting in the queue */
	assert_true(wait_fd(l, POLLIN, 10000) & POLLIN);
	assert_int_equal(ri2n_close(l), 0);
	expect_reset("queued when its listener closed", c2, 10000, 0);
	assert_int_equal(ri2n_close(c2), 0);
	flow2(c1, s1, 128 * KIB, 128 * KIB, 1, 111);
	assert_int_equal(ri2n_close(c1), 0);
	assert_int_equal(ri2n_close(s1), 0);
	a = sin_of(NULL, port);
	l = ri2n_socket();
	assert_true(l >= 0);
	end = now_ms() + 5000;
	while ((rc = ri2n_bind(l, SA(&a), sizeof(a))) < 0 && errno == EADDRINUSE && now_ms() < end)
		usleep(10 * 1000);
	if (rc < 0)
		fail_msg("rebinding port %u after its listener closed: %s", port, strerror(errno));
	assert_int_equal(ri2n_close(l), 0);
}

/* ---- the descriptor's I/O calls ---- */

/* O_NONBLOCK: EAGAIN when empty; poll, select and epoll see data arrive. */
void test_nonblocking_io(void **state)
{
	struct epoll_event ee = { .events = EPOLLIN }, got;
	struct timeval tv = { 10, 0 };
	fd_set rd;
	char b[64];
	int c, s, ep, n;

	(void)state;
	connect_pair(&c, &s);
	set_nonblock(c, 1);
	set_nonblock(s, 1);
	expect_fail((int)read(c, b, sizeof(b)), EAGAIN);
	expect_fail((int)recv(s, b, sizeof(b), 0), EAGAIN);
	assert_int_equal(wait_fd(c, POLLIN | POLLOUT, 1000), POLLOUT); /* writable, not readable */

	ep = epoll_create1(EPOLL_CLOEXEC);
	assert_true(ep >= 0);
	assert_int_equal(epoll_ctl(ep, EPOLL_CTL_ADD, s, &ee), 0);
	assert_int_equal(epoll_wait(ep, &got, 1, 100), 0);
	assert_int_equal(write(c, "hello", 5), 5);
	do
		n = epoll_wait(ep, &got, 1, 10000);
	while (n < 0 && errno == EINTR);
	assert_int_equal(n, 1);
	assert_true(got.events & EPOLLIN);
	assert_int_equal(recv(s, b, sizeof(b), MSG_PEEK), 5);
	assert_memory_equal(b, "hello", 5);
	assert_int_equal(read(s, b, sizeof(b)), 5);
	assert_memory_equal(b, "hello", 5);
	expect_fail((int)read(s, b, sizeof(b)), EAGAIN);
	assert_int_equal(epoll_wait(ep, &got, 1, 50), 0);
	close(ep);

	/* poll and select the other way */
	assert_int_equal(wait_fd(c, POLLIN, 50), 0);
	assert_int_equal(send(s, "world!", 6, MSG_NOSIGNAL), 6);
	assert_true(wait_fd(c, POLLIN, 10000) & POLLIN);
	FD_ZERO(&rd);
	FD_SET(c, &rd);
	assert_int_equal(select(c + 1, &rd, NULL, NULL, &tv), 1);
	assert_true(FD_ISSET(c, &rd));
	assert_int_equal(recv(c, b, sizeof(b), 0), 6);
	assert_memory_equal(b, "world!", 6);
	assert_int_equal(ri2n_close(c), 0);
	assert_int_equal(ri2n_close(s), 0);
}

/* writev/readv across buffers, recv(MSG_WAITALL), sendmsg/recvmsg of a big run. */
void test_vector_io(void **state)
{
	static uint8_t big[200 * 1024], back[200 * 1024];
	char w1[] = "scatter", w2[] = "-", w3[] = "gather", r1[5], r2[9], b[16];
	struct iovec wv[3] = { { w1, 7 }, { w2, 1 }, { w3, 6 } }, rv[2] = { { r1, 5 }, { r2, 9 } };
	struct iovec iv = { big, sizeof(big) };
	struct msghdr m = { .msg_iov = &iv, .msg_iovlen = 1 };
	uint64_t end = now_ms() + 10000;
	size_t got = 0;
	int c, s, avail = 0;

	(void)state;
	connect_pair(&c, &s);
	assert_int_equal(writev(c, wv, 3), 14);
	do
		assert_int_equal(ioctl(s, FIONREAD, &avail), 0);
	while (avail < 14 && now_ms() < end && usleep(1000) == 0);
	assert_int_equal(avail, 14);
	assert_int_equal(readv(s, rv, 2), 14);
	assert_memory_equal(r1, "scatt", 5);
	assert_memory_equal(r2, "er-gather", 9);
	/* MSG_WAITALL on a blocking descriptor: all of it in one call */
	assert_int_equal(writev(c, wv, 3), 14);
	assert_int_equal(recv(s, b, 14, MSG_WAITALL), 14);
	assert_memory_equal(b, "scatter-gather", 14);

	pat_fill(big, sizeof(big), 81, 0);
	assert_int_equal(sendmsg(s, &m, MSG_NOSIGNAL), sizeof(big)); /* blocking: all of it */
	while (got < sizeof(back)) {
		struct iovec ir = { back + got, sizeof(back) - got };
		struct msghdr mr = { .msg_iov = &ir, .msg_iovlen = 1 };
		ssize_t r;

		assert_true(wait_fd(c, POLLIN, 10000) & POLLIN);
		r = recvmsg(c, &mr, 0);
		assert_true(r > 0);
		got += (size_t)r;
	}
	assert_int_equal(pat_check(back, sizeof(back), 81, 0), -1);
	assert_int_equal(ri2n_close(c), 0);
	assert_int_equal(ri2n_close(s), 0);
}
