/*
 * api_connect.c - connecting, accepting and binding: blocking and not, the
 * addresses both ends report, refused, unreachable and silent peers, a
 * signal during connect, bind's errors, and the accept queue's bound.
 */
#define _GNU_SOURCE
#include <arpa/inet.h>
#include <dirent.h>
#include <fcntl.h>
#include <inttypes.h>
#include <poll.h>
#include <pthread.h>
#include <signal.h>
#include <stdio.h>
#include <sys/epoll.h>
#include <unistd.h>

#include "api_harness.h"

/* The names both ends of a fresh connection report, and what accept said. */
static void check_names(int l, int c, int s, const struct sockaddr_in *to,
			const struct sockaddr_in *accepted)
{
	struct sockaddr_in a;
	socklen_t len = sizeof(a);

	/* the listener: bound to every rail, no peer */
	assert_int_equal(ri2n_getsockname(l, SA(&a), &len), 0);
	assert_int_equal(a.sin_family, AF_INET);
	assert_int_equal(a.sin_addr.s_addr, htonl(INADDR_ANY));
	assert_int_equal(a.sin_port, to->sin_port);
	expect_fail(ri2n_getpeername(l, SA(&a), &len), ENOTCONN);
	/* accept told where the handshake came from: the client's rail in to's subnet */
	assert_int_equal(accepted->sin_family, AF_INET);
	assert_int_equal(ntohl(accepted->sin_addr.s_addr) >> 8, ntohl(to->sin_addr.s_addr) >> 8);
	assert_int_not_equal(accepted->sin_port, 0);
	/* the client: that address; its peer: the address it connected to */
	len = sizeof(a);
	assert_int_equal(ri2n_getsockname(c, SA(&a), &len), 0);
	assert_int_equal(len, sizeof(a));
	assert_string_equal(sin_str(&a), sin_str(accepted));
	len = sizeof(a);
	assert_int_equal(ri2n_getpeername(c, SA(&a), &len), 0);
	assert_string_equal(sin_str(&a), sin_str(to));
	/* the accepted end: the mirror image */
	len = sizeof(a);
	assert_int_equal(ri2n_getsockname(s, SA(&a), &len), 0);
	assert_string_equal(sin_str(&a), sin_str(to));
	len = sizeof(a);
	assert_int_equal(ri2n_getpeername(s, SA(&a), &len), 0);
	assert_string_equal(sin_str(&a), sin_str(accepted));
}

/* One end of a connection that moved `bytes` each way: two rails up, bytes counted. */
static void check_stats(int fd, const char *side, uint64_t bytes)
{
	struct ri2n_stats st;

	memset(&st, 0, sizeof(st));
	assert_int_equal(ri2n_stats(fd, &st), 0);
	assert_non_null(st.state);
	assert_string_equal(st.state, "established");
	assert_int_equal(st.error, 0);
	assert_int_equal(st.nrails, 2);
	assert_true(st.mss > 0);
	assert_true(st.established_ns > 0);
	assert_true(st.app_tx_bytes == bytes);
	assert_true(st.app_rx_bytes == bytes); /* all of it was read */
	assert_true(st.tx_packets > 0 && st.rx_packets > 0);
	for (int k = 0; k < st.nrails; k++) {
		const struct ri2n_rail_stats *r = &st.rail[k];

		if (!r->up || !r->rx_up || !r->tx_up)
			fail_msg("%s: rail %d (%s -> %s) not up: rx %d tx %d, %s", side, k,
				 sin_str(&r->local), sin_str(&r->remote), r->rx_up, r->tx_up,
				 r->last_cause ? r->last_cause : "?");
		assert_true(r->tx_bytes > 0 && r->rx_bytes > 0);
		assert_true(r->tx_packets > 0 && r->rx_packets > 0);
		assert_int_equal(r->local.sin_family, AF_INET);
		assert_int_equal(r->remote.sin_family, AF_INET);
		/* matched by subnet: rail k joins the same /24 at both ends */
		assert_int_equal(ntohl(r->local.sin_addr.s_addr) >> 8,
				 ntohl(r->remote.sin_addr.s_addr) >> 8);
	}
	assert_int_not_equal(ntohl(st.rail[0].local.sin_addr.s_addr) >> 8,
			     ntohl(st.rail[1].local.sin_addr.s_addr) >> 8);
	/* the stream really is striped: each rail carried DATA one way or the other */
	assert_true(st.rail[0].tx_data + st.rail[0].rx_data > 0);
	assert_true(st.rail[1].tx_data + st.rail[1].rx_data > 0);
	assert_true(st.rail[0].tx_data + st.rail[1].tx_data > 0);
}

/*
 * Blocking connect and accept, 1 MiB each way with every byte checked, the
 * addresses of both ends, and the statistics of a two-rail connection.
 */
void test_blocking_round_trip(void **state)
{
	struct sockaddr_in peer, to;
	uint16_t port;
	int l, c, s, v = 0;
	socklen_t len = sizeof(v);

	(void)state;
	l = make_listener(NULL, 4, &port);
	c = connect_to(port);
	s = accept_within(l, 10000, &peer);
	to = sin_of(RAIL1, port);
	check_names(l, c, s, &to, &peer);
	assert_int_equal(ri2n_getsockopt(c, SOL_SOCKET, SO_TYPE, &v, &len), 0);
	assert_int_equal(v, SOCK_STREAM);
	assert_int_equal(get_so_error(c), 0);
	assert_int_equal(get_so_error(s), 0);

	flow2(c, s, 1 * MIB, 1 * MIB, 0, 11);
	check_stats(c, "client", 1 * MIB);
	check_stats(s, "accepted", 1 * MIB);
	expect_fail(ri2n_stats(c, NULL), EINVAL);

	/* descriptors as socket() and accept() give them: blocking, not close-on-exec */
	assert_int_equal(fcntl(c, F_GETFD) & FD_CLOEXEC, 0);
	assert_int_equal(fcntl(s, F_GETFD) & FD_CLOEXEC, 0);
	assert_int_equal(fcntl(c, F_GETFL) & O_NONBLOCK, 0);
	assert_int_equal(fcntl(s, F_GETFL) & O_NONBLOCK, 0);
	assert_int_equal(ri2n_close(c), 0);
	assert_int_equal(ri2n_close(s), 0);
	assert_int_equal(ri2n_close(l), 0);
}

/* A listener on every rail reached at its rail-2 address: the names say rail 2. */
void test_connect_rail2_address(void **state)
{
	struct sockaddr_in peer, to;
	struct ri2n_stats st;
	uint16_t port;
	int l, c, s;

	(void)state;
	l = make_listener(NULL, 4, &port);
	to = sin_of(RAIL2, port);
	c = ri2n_socket();
	assert_true(c >= 0);
	assert_int_equal(ri2n_connect(c, SA(&to), sizeof(to)), 0);
	s = accept_within(l, 10000, &peer);
	assert_string_equal(inet_ntoa(peer.sin_addr), RAIL2);
	check_names(l, c, s, &to, &peer);
	assert_int_equal(ri2n_stats(s, &st), 0);
	assert_int_equal(st.nrails, 2); /* still both rails */
	flow2(c, s, 64 * KIB, 64 * KIB, 1, 13);
	assert_int_equal(ri2n_close(c), 0);
	assert_int_equal(ri2n_close(s), 0);
	assert_int_equal(ri2n_close(l), 0);
}

/* A listener bound to one rail's address takes connections there, over that rail. */
void test_bind_one_rail(void **state)
{
	struct sockaddr_in a = sin_of(RAIL2, 0), peer;
	struct ri2n_stats st;
	socklen_t len = sizeof(a);
	uint16_t port;
	int l = ri2n_socket(), c, s;

	(void)state;
	assert_true(l >= 0);
	assert_int_equal(ri2n_bind(l, SA(&a), sizeof(a)), 0);
	assert_int_equal(ri2n_listen(l, 0), 0); /* <= 0: the default backlog */
	assert_int_equal(ri2n_getsockname(l, SA(&a), &len), 0);
	assert_string_equal(inet_ntoa(a.sin_addr), RAIL2);
	port = ntohs(a.sin_port);
	assert_int_not_equal(port, 0);

	a = sin_of(RAIL2, port);
	c = ri2n_socket();
	assert_true(c >= 0);
	if (ri2n_connect(c, SA(&a), sizeof(a)) < 0)
		fail_msg("connect to %s: %s", sin_str(&a), strerror(errno));
	s = accept_within(l, 10000, &peer);
	assert_string_equal(inet_ntoa(peer.sin_addr), RAIL2);
	assert_int_equal(ri2n_stats(c, &st), 0);
	assert_int_equal(st.nrails, 1); /* the listener has only rail 2 */
	assert_string_equal(inet_ntoa(st.rail[0].remote.sin_addr), RAIL2);
	flow2(c, s, 64 * KIB, 64 * KIB, 1, 21);
	assert_int_equal(ri2n_close(c), 0);
	assert_int_equal(ri2n_close(s), 0);
	assert_int_equal(ri2n_close(l), 0);
}

/* Reads n bytes of pattern seed from fd (blocking or not), 10 s at most. */
static void read_pattern(int fd, size_t n, uint32_t seed)
{
	static uint8_t buf[64 * 1024];
	size_t got = 0;
	uint64_t t0 = now_ms();

	assert_true(n <= sizeof(buf));
	while (got < n) {
		ssize_t r = read(fd, buf + got, n - got);

		if (r > 0)
			got += (size_t)r;
		else if (r < 0 && (errno == EAGAIN || errno == EINTR))
			wait_fd(fd, POLLIN, 100);
		else
			fail_msg("read after %zu of %zu bytes: %s", got, n, r ? strerror(errno) : "EOF");
		if (now_ms() - t0 > 10000)
			fail_msg("only %zu of %zu bytes within 10 s", got, n);
	}
	assert_int_equal(pat_check(buf, n, seed, 0), -1);
}

/*
 * Non-blocking connect: not writable before connect, EINPROGRESS, then
 * POLLOUT (poll) and EPOLLOUT (epoll), SO_ERROR 0, and data flows.  The send
 * buffer, held small while connecting, has its size back (SO_SNDBUF reads
 * the same before and after) and takes a 64 KiB write whole at once, as
 * TCP's does.
 */
void test_nonblocking_connect(void **state)
{
	static uint8_t first[64 * 1024];
	struct sockaddr_in peer;
	uint16_t port;
	int l, c, s, before, after;
	socklen_t ol;

	(void)state;
	l = make_listener(NULL, 4, &port);
	for (int use_epoll = 0; use_epoll < 2; use_epoll++) {
		struct sockaddr_in a = sin_of(RAIL1, port);
		short ev;

		c = ri2n_socket();
		assert_true(c >= 0);
		set_nonblock(c, 1);
		ol = sizeof(before);
		assert_int_equal(ri2n_getsockopt(c, SOL_SOCKET, SO_SNDBUF, &before, &ol), 0);
		/* an unconnected socket must not look writable: POLLOUT means "handshake over" */
		ev = wait_fd(c, POLLOUT, 0);
		assert_false(ev & POLLOUT);
		expect_fail(ri2n_connect(c, SA(&a), sizeof(a)), EINPROGRESS);
		if (!use_epoll) {
			ev = wait_fd(c, POLLOUT, 10000);
			if (!(ev & POLLOUT))
				fail_msg("connect did not finish within 10 s (revents %#x)", ev);
			assert_false(ev & (POLLERR | POLLHUP));
		} else {
			struct epoll_event ee = { .events = EPOLLOUT }, got;
			int ep = epoll_create1(EPOLL_CLOEXEC), n;

			assert_true(ep >= 0);
			assert_int_equal(epoll_ctl(ep, EPOLL_CTL_ADD, c, &ee), 0);
			do
				n = epoll_wait(ep, &got, 1, 10000);
			while (n < 0 && errno == EINTR);
			assert_int_equal(n, 1);
			assert_true(got.events & EPOLLOUT);
			close(ep);
		}
		assert_int_equal(get_so_error(c), 0);
		ol = sizeof(after);
		assert_int_equal(getsockopt(c, SOL_SOCKET, SO_SNDBUF, &after, &ol), 0);
		assert_int_equal(after, before);
		assert_true(before >= (int)sizeof(first) * 2); /* the kernel's default, not the floor */
		pat_fill(first, sizeof(first), 41 + (uint32_t)use_epoll, 0);
		assert_int_equal(write(c, first, sizeof(first)), (ssize_t)sizeof(first));
		s = accept_within(l, 10000, &peer);
		read_pattern(s, sizeof(first), 41 + (uint32_t)use_epoll);
		flow2(c, s, 200 * KIB, 100 * KIB, 1, 31 + (uint32_t)use_epoll * 2);
		assert_int_equal(ri2n_close(c), 0);
		assert_int_equal(ri2n_close(s), 0);
	}
	assert_int_equal(ri2n_close(l), 0);
}

/* Nobody listens: ECONNREFUSED, blocking and non-blocking (then SO_ERROR, once). */
void test_connect_refused(void **state)
{
	uint16_t port = dead_port();
	struct sockaddr_in a = sin_of(RAIL1, port);
	uint64_t t0;
	short ev;
	int c;

	(void)state;
	c = ri2n_socket();
	assert_true(c >= 0);
	t0 = now_ms();
	expect_fail(ri2n_connect(c, SA(&a), sizeof(a)), ECONNREFUSED);
	assert_true(now_ms() - t0 < 10000);
	/* a blocking connect reported it: nothing left pending */
	assert_int_equal(get_so_error(c), 0);
	assert_int_equal(ri2n_close(c), 0);

	c = ri2n_socket();
	assert_true(c >= 0);
	set_nonblock(c, 1);
	expect_fail(ri2n_connect(c, SA(&a), sizeof(a)), EINPROGRESS);
	ev = wait_fd(c, POLLOUT, 10000);
	if (!(ev & (POLLOUT | POLLERR | POLLHUP)))
		fail_msg("a refused connect never polled POLLOUT/POLLERR (revents %#x)", ev);
	assert_int_equal(get_so_error(c), ECONNREFUSED);
	assert_int_equal(get_so_error(c), 0); /* reading SO_ERROR clears it */
	/* the descriptor of a failed connect is no connection */
	expect_fail(ri2n_stats(c, &(struct ri2n_stats){ 0 }), ENOTCONN);
	assert_int_equal(ri2n_close(c), 0);
}

/* No rail in the peer's subnet: ENETUNREACH at once; a silent peer: ETIMEDOUT. */
void test_connect_unreachable_and_timeout(void **state)
{
	struct sockaddr_in a = sin_of(NO_RAIL_NET, 7000);
	uint64_t t0, dt;
	short ev;
	int c;

	(void)state;
	for (int nb = 0; nb < 2; nb++) {
		c = ri2n_socket();
		assert_true(c >= 0);
		set_nonblock(c, nb);
		expect_fail(ri2n_connect(c, SA(&a), sizeof(a)), ENETUNREACH);
		assert_int_equal(ri2n_close(c), 0);
	}

	/* blocking, RI2N_CONNECT_TIMEOUT_MS 1000 */
	a = sin_of(SILENT, 7000);
	c = ri2n_socket();
	assert_true(c >= 0);
	set_opt(c, RI2N_CONNECT_TIMEOUT_MS, 1000);
	assert_int_equal(get_opt(c, RI2N_CONNECT_TIMEOUT_MS), 1000);
	t0 = now_ms();
	expect_fail(ri2n_connect(c, SA(&a), sizeof(a)), ETIMEDOUT);
	dt = now_ms() - t0;
	print_message("blocking connect to a silent address: ETIMEDOUT after %" PRIu64 " ms\n", dt);
	assert_true(dt >= 900);
	assert_true(dt < 1000 + 8000);
	assert_int_equal(ri2n_close(c), 0);

	/* non-blocking: not writable while the handshake goes on, then SO_ERROR says why */
	c = ri2n_socket();
	assert_true(c >= 0);
	set_opt(c, RI2N_CONNECT_TIMEOUT_MS, 1500);
	set_nonblock(c, 1);
	t0 = now_ms();
	expect_fail(ri2n_connect(c, SA(&a), sizeof(a)), EINPROGRESS);
	ev = wait_fd(c, POLLOUT | POLLIN, 300);
	assert_int_equal(ev, 0); /* the handshake is not over: no event at all */
	{
		char b;

		expect_fail((int)read(c, &b, 1), EAGAIN); /* nothing to read yet either */
	}
	ev = wait_fd(c, POLLOUT, 10000);
	dt = now_ms() - t0;
	if (!(ev & (POLLOUT | POLLERR | POLLHUP)))
		fail_msg("a timed-out connect never polled POLLOUT/POLLERR (revents %#x)", ev);
	assert_true(dt >= 1400 && dt < 1500 + 8000);
	assert_int_equal(get_so_error(c), ETIMEDOUT);
	assert_int_equal(get_so_error(c), 0);
	assert_int_equal(ri2n_close(c), 0);
}

static void on_usr1(int sig)
{
	(void)sig;
}

/* Sends SIGUSR1 to target after ms. */
struct kicker {
	pthread_t target;
	int ms;
};

static void *kick_main(void *arg)
{
	struct kicker *k = arg;

	usleep((useconds_t)k->ms * 1000);
	pthread_kill(k->target, SIGUSR1);
	return NULL;
}

/* A blocking connect interrupted by a signal: EINTR, and the connect goes on. */
void test_connect_eintr(void **state)
{
	struct sigaction sa = { .sa_handler = on_usr1 }, old; /* no SA_RESTART */
	struct kicker k = { .target = pthread_self(), .ms = 300 };
	struct sockaddr_in a = sin_of(SILENT, 7000);
	pthread_t th;
	short ev;
	int c;

	(void)state;
	sigemptyset(&sa.sa_mask);
	assert_int_equal(sigaction(SIGUSR1, &sa, &old), 0);
	c = ri2n_socket();
	assert_true(c >= 0);
	set_opt(c, RI2N_CONNECT_TIMEOUT_MS, 2000);
	assert_int_equal(pthread_create(&th, NULL, kick_main, &k), 0);
	expect_fail(ri2n_connect(c, SA(&a), sizeof(a)), EINTR);
	pthread_join(th, NULL);
	sigaction(SIGUSR1, &old, NULL);
	expect_fail(ri2n_connect(c, SA(&a), sizeof(a)), EALREADY); /* still going on */
	ev = wait_fd(c, POLLOUT, 10000);
	if (!(ev & (POLLOUT | POLLERR | POLLHUP)))
		fail_msg("the interrupted connect never ended (revents %#x)", ev);
	assert_int_equal(get_so_error(c), ETIMEDOUT);
	assert_int_equal(ri2n_close(c), 0);
}

/* bind: EADDRINUSE, EADDRNOTAVAIL, port 0, and EINVAL twice on one socket. */
void test_bind(void **state)
{
	struct sockaddr_in a = sin_of(NULL, 0), got;
	socklen_t len = sizeof(got);
	uint16_t port;
	int s1, s2, s3;

	(void)state;
	s1 = ri2n_socket();
	assert_true(s1 >= 0);
	assert_int_equal(ri2n_bind(s1, SA(&a), sizeof(a)), 0);
	assert_int_equal(ri2n_getsockname(s1, SA(&got), &len), 0);
	assert_int_equal(len, sizeof(got));
	port = ntohs(got.sin_port);
	assert_int_not_equal(port, 0); /* port 0 picked one */
	/* a second bind of the same socket */
	expect_fail(ri2n_bind(s1, SA(&a), sizeof(a)), EINVAL);

	s2 = ri2n_socket();
	assert_true(s2 >= 0);
	a = sin_of(NULL, port);
	expect_fail(ri2n_bind(s2, SA(&a), sizeof(a)), EADDRINUSE);
	a = sin_of(RAIL1, port);
	expect_fail(ri2n_bind(s2, SA(&a), sizeof(a)), EADDRINUSE);
	/* not a rail's address */
	a = sin_of(NOT_RAIL, 0);
	expect_fail(ri2n_bind(s2, SA(&a), sizeof(a)), EADDRNOTAVAIL);
	a = sin_of("127.0.0.1", 0);
	expect_fail(ri2n_bind(s2, SA(&a), sizeof(a)), EADDRNOTAVAIL);
	a = sin_of(NO_RAIL_NET, 0);
	expect_fail(ri2n_bind(s2, SA(&a), sizeof(a)), EADDRNOTAVAIL);
	/* the failures left it usable: a rail's address, port 0 */
	a = sin_of(RAIL1, 0);
	assert_int_equal(ri2n_bind(s2, SA(&a), sizeof(a)), 0);
	len = sizeof(got);
	assert_int_equal(ri2n_getsockname(s2, SA(&got), &len), 0);
	assert_string_equal(inet_ntoa(got.sin_addr), RAIL1);
	assert_int_not_equal(ntohs(got.sin_port), 0);
	assert_int_not_equal(ntohs(got.sin_port), port);

	/* the port is free again once its socket is closed */
	assert_int_equal(ri2n_close(s1), 0);
	s3 = ri2n_socket();
	assert_true(s3 >= 0);
	a = sin_of(NULL, port);
	{
		uint64_t end = now_ms() + 5000;
		int rc;

		/* the engine lets go of the port when it sees the close: soon, not at once */
		while ((rc = ri2n_bind(s3, SA(&a), sizeof(a))) < 0 && errno == EADDRINUSE &&
		       now_ms() < end)
			usleep(10 * 1000);
		if (rc < 0)
			fail_msg("rebinding port %u after close: %s", port, strerror(errno));
	}
	assert_int_equal(ri2n_close(s2), 0);
	assert_int_equal(ri2n_close(s3), 0);
}

/* A client bound first connects from its port; an unbound socket's name is 0.0.0.0:0. */
void test_bind_then_connect(void **state)
{
	struct sockaddr_in a, got, peer;
	socklen_t len;
	uint16_t lport, cport;
	int l, c, sv;

	(void)state;
	l = make_listener(NULL, 1, &lport);
	c = ri2n_socket();
	assert_true(c >= 0);
	len = sizeof(got);
	assert_int_equal(ri2n_getsockname(c, SA(&got), &len), 0);
	assert_int_equal(got.sin_family, AF_INET);
	assert_int_equal(got.sin_addr.s_addr, 0);
	assert_int_equal(got.sin_port, 0);
	a = sin_of(NULL, 0);
	assert_int_equal(ri2n_bind(c, SA(&a), sizeof(a)), 0);
	len = sizeof(got);
	assert_int_equal(ri2n_getsockname(c, SA(&got), &len), 0);
	cport = ntohs(got.sin_port);
	a = sin_of(RAIL1, lport);
	assert_int_equal(ri2n_connect(c, SA(&a), sizeof(a)), 0);
	sv = accept_within(l, 10000, &peer);
	assert_int_equal(ntohs(peer.sin_port), cport);
	len = sizeof(got);
	assert_int_equal(ri2n_getsockname(c, SA(&got), &len), 0);
	assert_string_equal(sin_str(&got), sin_str(&peer));
	flow2(c, sv, 4 * KIB, 4 * KIB, 1, 17);
	assert_int_equal(ri2n_close(c), 0);
	assert_int_equal(ri2n_close(sv), 0);
	assert_int_equal(ri2n_close(l), 0);
}

/*
 * The process's sockets (UDP, socketpairs): what a connection costs in
 * descriptors.  Files are left out: the engine thread opens its statistics
 * snapshot and /proc files for a moment now and then, whenever it likes.
 */
static int open_sockets(void)
{
	DIR *d = opendir("/proc/self/fd");
	struct dirent *e;
	char path[300], to[64];
	ssize_t n;
	int count = 0;

	assert_non_null(d);
	while ((e = readdir(d))) {
		snprintf(path, sizeof(path), "/proc/self/fd/%s", e->d_name);
		n = readlink(path, to, sizeof(to) - 1);
		if (n > 0) {
			to[n] = 0;
			count += strncmp(to, "socket:", 7) == 0;
		}
	}
	closedir(d);
	return count;
}

/*
 * open_sockets() once two counts 20 ms apart agree (1 s at most): right after
 * a connect the engine may still hold a duplicate of the new descriptor, through
 * which it gave the send buffer its size back (rn_stream.c).
 */
static int settled_sockets(void)
{
	int n = open_sockets(), m;

	for (int k = 0; k < 50; k++, n = m) {
		usleep(20 * 1000);
		m = open_sockets();
		if (m == n)
			break;
	}
	return n;
}

/*
 * Clients of one process share their UDP sockets: after the first
 * connection (which opens them), each further one costs its two socketpair
 * descriptors and the accepted end's two, nothing per rail.  Sixteen
 * connections on the shared sockets move patterns both ways at once, every
 * byte checked; half of them close, the rest go on undisturbed; a bound
 * client still gets a port of its own.
 */
void test_shared_client_port(void **state)
{
	enum { N = 16 };
	int c[N], sv[N], l, before, bound, bsv;
	uint16_t lport;
	struct sockaddr_in a, got, peer;
	socklen_t len = sizeof(got);
	struct flow f[2 * N];
	char why[200];

	(void)state;
	l = make_listener(NULL, N, &lport);
	for (int i = 0; i < N; i++) {
		before = settled_sockets();
		c[i] = connect_to(lport);
		sv[i] = accept_within(l, 10000, NULL);
		if (i > 0) /* the first also opened the clients' UDP sockets */
			assert_int_equal(settled_sockets() - before, 4);
	}
	for (int i = 0; i < N; i++) {
		f[2 * i] = (struct flow){ .fd = c[i], .tx_seed = 100 + (uint32_t)i, .rx_seed = 200 + (uint32_t)i,
					  .tx_total = 256 * KIB, .rx_total = 128 * KIB };
		f[2 * i + 1] = (struct flow){ .fd = sv[i], .tx_seed = 200 + (uint32_t)i, .rx_seed = 100 + (uint32_t)i,
					      .tx_total = 128 * KIB, .rx_total = 256 * KIB };
	}
	if (run_flows(f, 2 * N, 30000, why, sizeof(why)) != 0)
		fail_msg("16 connections on shared sockets: %s", why);
	for (int i = 0; i < N; i += 2) {
		assert_int_equal(ri2n_close(c[i]), 0);
		assert_int_equal(ri2n_close(sv[i]), 0);
	}
	for (int i = 1; i < N; i += 2) {
		f[i - 1] = (struct flow){ .fd = c[i], .tx_seed = 300 + (uint32_t)i, .rx_seed = 400 + (uint32_t)i,
					  .tx_total = 512 * KIB, .rx_total = 512 * KIB, .shut_wr = 1, .want_eof = 1 };
		f[i] = (struct flow){ .fd = sv[i], .tx_seed = 400 + (uint32_t)i, .rx_seed = 300 + (uint32_t)i,
				      .tx_total = 512 * KIB, .rx_total = 512 * KIB, .shut_wr = 1, .want_eof = 1 };
	}
	if (run_flows(f, N, 30000, why, sizeof(why)) != 0)
		fail_msg("8 connections after 8 others closed: %s", why);
	/* bound: its own port, not the shared one */
	bound = ri2n_socket();
	a = sin_of(NULL, 0);
	assert_int_equal(ri2n_bind(bound, SA(&a), sizeof(a)), 0);
	assert_int_equal(ri2n_getsockname(bound, SA(&got), &len), 0);
	a = sin_of(RAIL1, lport);
	assert_int_equal(ri2n_connect(bound, SA(&a), sizeof(a)), 0);
	bsv = accept_within(l, 10000, &peer);
	assert_int_equal(ntohs(peer.sin_port), ntohs(got.sin_port));
	flow2(bound, bsv, 64 * KIB, 64 * KIB, 1, 23);
	assert_int_equal(ri2n_close(bound), 0);
	assert_int_equal(ri2n_close(bsv), 0);
	for (int i = 1; i < N; i += 2) {
		assert_int_equal(ri2n_close(c[i]), 0);
		assert_int_equal(ri2n_close(sv[i]), 0);
	}
	assert_int_equal(ri2n_close(l), 0);
}

/*
 * A listening socket with backlog 2: two clients connect and their
 * connections wait in the queue; while it is full the listener answers no
 * INIT (as TCP answers no SYN), so three more clients' connects do not
 * return however long nobody accepts; all five get in as the acceptor takes
 * them one by one.  Non-blocking accept on an empty queue: EAGAIN; the
 * listening descriptor polls readable while one waits.
 */
void test_accept_backlog(void **state)
{
	enum { N = 5, BACKLOG = 2 };
	struct sockaddr_in peer;
	int c[N], s[N], seen[N] = { 0 }, up;
	uint16_t port;
	uint64_t end;
	int l;

	(void)state;
	l = make_listener(NULL, BACKLOG, &port);
	set_nonblock(l, 1);
	{
		socklen_t len = sizeof(peer);

		expect_fail(ri2n_accept(l, SA(&peer), &len), EAGAIN);
		assert_int_equal(wait_fd(l, POLLIN, 100), 0); /* nothing waiting: not readable */
	}
	for (int i = 0; i < N; i++) {
		struct sockaddr_in a = sin_of(RAIL1, port);

		c[i] = ri2n_socket();
		assert_true(c[i] >= 0);
		set_nonblock(c[i], 1);
		expect_fail(ri2n_connect(c[i], SA(&a), sizeof(a)), EINPROGRESS);
		if (i != BACKLOG - 1)
			continue;
		/* the queue's room: these connect, and their connections queue */
		end = now_ms() + 10000;
		do {
			up = 0;
			for (int k = 0; k < BACKLOG; k++)
				up += (wait_fd(c[k], POLLOUT, 0) & POLLOUT) != 0;
		} while (up < BACKLOG && now_ms() < end && usleep(10 * 1000) == 0);
		assert_int_equal(up, BACKLOG);
		/* a connected client writes at once: its bytes wait for the accept */
		for (int k = 0; k < BACKLOG; k++) {
			uint8_t id = (uint8_t)k;

			assert_int_equal(send(c[k], &id, 1, MSG_NOSIGNAL), 1);
		}
		usleep(200 * 1000); /* their COOKIE_ECHOs reach the queue (a round trip) */
	}
	/* the listener signals a waiting connection */
	assert_true(wait_fd(l, POLLIN, 10000) & POLLIN);
	usleep(700 * 1000); /* the others resend their INITs meanwhile: the full queue ignores them */
	up = 0;
	for (int i = 0; i < N; i++)
		up += (wait_fd(c[i], POLLOUT, 0) & POLLOUT) != 0;
	assert_int_equal(up, BACKLOG);

	/* accept one by one: every client gets in */
	for (int k = 0; k < N; k++) {
		socklen_t len = sizeof(peer);

		if (!(wait_fd(l, POLLIN, 15000) & POLLIN))
			fail_msg("connection %d of %d never came (backlog 2)", k + 1, N);
		s[k] = ri2n_accept(l, SA(&peer), &len);
		if (s[k] < 0)
			fail_msg("accept %d: %s", k + 1, strerror(errno));
		assert_string_equal(inet_ntoa(peer.sin_addr), RAIL1);
		/* as accept(): the new descriptor does not inherit O_NONBLOCK */
		assert_int_equal(fcntl(s[k], F_GETFL) & O_NONBLOCK, 0);
	}
	{
		socklen_t len = sizeof(peer);

		expect_fail(ri2n_accept(l, SA(&peer), &len), EAGAIN);
	}
	for (int i = 0; i < N; i++) {
		short ev = wait_fd(c[i], POLLOUT, 10000);
		uint8_t id = (uint8_t)i;

		if (!(ev & POLLOUT))
			fail_msg("client %d not connected after its accept (revents %#x)", i, ev);
		assert_int_equal(get_so_error(c[i]), 0);
		if (i >= BACKLOG)
			assert_int_equal(send(c[i], &id, 1, MSG_NOSIGNAL), 1);
	}
	/* each accepted descriptor is one client's connection: ids pair them */
	for (int k = 0; k < N; k++) {
		uint8_t id = 0xff;

		assert_true(wait_fd(s[k], POLLIN, 10000) & POLLIN);
		assert_int_equal(read(s[k], &id, 1), 1);
		assert_true(id < N);
		assert_int_equal(seen[id], 0);
		seen[id] = 1;
		assert_int_equal(send(s[k], &id, 1, MSG_NOSIGNAL), 1);
	}
	for (int i = 0; i < N; i++) {
		uint8_t id = 0xff;

		assert_true(wait_fd(c[i], POLLIN, 10000) & POLLIN);
		assert_int_equal(read(c[i], &id, 1), 1);
		assert_int_equal(id, i);
	}
	for (int i = 0; i < N; i++) {
		assert_int_equal(ri2n_close(c[i]), 0);
		assert_int_equal(ri2n_close(s[i]), 0);
	}
	assert_int_equal(ri2n_close(l), 0);
}

/*
 * A full accept queue delays clients, it does not lose them (docs/API.md:
 * "more clients wait (they resend their INIT) rather than fail"), however
 * slow the acceptor: here one waits 11 s for its turn, its connect pending
 * all the while.
 */
void test_accept_backlog_slow_acceptor(void **state)
{
	struct sockaddr_in a, peer;
	uint16_t port;
	int l, c1, c2, s1, s2;
	short ev;

	(void)state;
	l = make_listener(NULL, 1, &port);
	a = sin_of(RAIL1, port);
	c1 = ri2n_socket();
	c2 = ri2n_socket();
	assert_true(c1 >= 0 && c2 >= 0);
	set_nonblock(c1, 1);
	set_nonblock(c2, 1);
	set_opt(c2, RI2N_CONNECT_TIMEOUT_MS, 60000); /* the queue's wait, not the handshake's */
	expect_fail(ri2n_connect(c1, SA(&a), sizeof(a)), EINPROGRESS);
	assert_true(wait_fd(c1, POLLOUT, 10000) & POLLOUT); /* queued */
	expect_fail(ri2n_connect(c2, SA(&a), sizeof(a)), EINPROGRESS);
	sleep(11); /* an acceptor busy elsewhere */
	assert_false(wait_fd(c2, POLLOUT, 0) & POLLOUT); /* the queue was full */
	s1 = accept_within(l, 1000, &peer);
	/* c2 resends its INIT at most every 2 s: its turn comes */
	ev = wait_fd(l, POLLIN, 8000);
	if (!(ev & POLLIN)) {
		ri2n_close(c1);
		ri2n_close(c2);
		ri2n_close(s1);
		ri2n_close(l);
		fail_msg("a client that waited 11 s for room in the accept queue never got in "
			 "(its INITs unanswered while the queue is full, rn_stream_listen_input; "
			 "the client fails with ETIMEDOUT at its connect timeout)");
	}
	s2 = accept_within(l, 1000, &peer);
	assert_true(wait_fd(c2, POLLOUT, 10000) & POLLOUT);
	assert_int_equal(get_so_error(c2), 0);
	flow2(c2, s2, 4 * KIB, 4 * KIB, 1, 131);
	assert_int_equal(ri2n_close(c1), 0);
	assert_int_equal(ri2n_close(c2), 0);
	assert_int_equal(ri2n_close(s1), 0);
	assert_int_equal(ri2n_close(s2), 0);
	assert_int_equal(ri2n_close(l), 0);
}
