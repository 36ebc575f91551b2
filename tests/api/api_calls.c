/*
 * api_calls.c - the calls' error contract: bad descriptors, bad addresses,
 * calls in the wrong state; and options: RI2N_SOL knobs, the TCP options
 * programs set, SO_ERROR, and RI2N_* variables from the environment.
 */
#define _GNU_SOURCE
#include <arpa/inet.h>
#include <fcntl.h>
#include <netinet/tcp.h>
#include <poll.h>
#include <stdio.h>
#include <stdlib.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/time.h>
#include <sys/wait.h>
#include <unistd.h>

#include "api_harness.h"

/* Every call on a descriptor that is not a ri2n socket fails with err, and nothing crashes. */
static void expect_all_calls_fail(int fd, int err)
{
	struct sockaddr_in a = sin_of(RAIL1, 7000);
	socklen_t len = sizeof(a);
	struct ri2n_stats st;
	int v = 1;

	expect_fail(ri2n_bind(fd, SA(&a), sizeof(a)), err);
	expect_fail(ri2n_listen(fd, 1), err);
	expect_fail(ri2n_accept(fd, SA(&a), &len), err);
	expect_fail(ri2n_connect(fd, SA(&a), sizeof(a)), err);
	expect_fail(ri2n_getsockname(fd, SA(&a), &len), err);
	expect_fail(ri2n_getpeername(fd, SA(&a), &len), err);
	expect_fail(ri2n_setsockopt(fd, RI2N_SOL, RI2N_HEARTBEAT_MS, &v, sizeof(v)), err);
	len = sizeof(v);
	expect_fail(ri2n_getsockopt(fd, SOL_SOCKET, SO_ERROR, &v, &len), err);
	expect_fail(ri2n_stats(fd, &st), err);
}

/* EBADF for what is no descriptor, ENOTSOCK for what is no ri2n socket. */
void test_bad_descriptors(void **state)
{
	int fd, hi, p[2], tcp;

	(void)state;
	/* EBADF: -1, a number nothing has, a ri2n socket closed with plain close() */
	expect_all_calls_fail(-1, EBADF);
	expect_fail(ri2n_close(-1), EBADF);
	fd = ri2n_socket();
	assert_true(fd >= 0);
	hi = fcntl(fd, F_DUPFD, 900);
	assert_true(hi >= 900);
	close(hi);
	expect_all_calls_fail(hi, EBADF);
	close(fd);
	expect_all_calls_fail(fd, EBADF);

	/* ENOTSOCK: a pipe (which may even get the closed socket's number), a TCP socket */
	assert_int_equal(pipe(p), 0);
	expect_all_calls_fail(p[0], ENOTSOCK);
	expect_all_calls_fail(p[1], ENOTSOCK);
	close(p[0]);
	close(p[1]);
	tcp = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
	assert_true(tcp >= 0);
	expect_all_calls_fail(tcp, ENOTSOCK);
	close(tcp);
	/* a ri2n socket's number reused for something else is no longer that socket */
	fd = ri2n_socket();
	assert_true(fd >= 0);
	close(fd);
	assert_int_equal(pipe(p), 0);
	if (p[0] != fd && p[1] != fd)
		assert_int_equal(dup2(p[0], fd), fd);
	expect_all_calls_fail(fd, ENOTSOCK);
	if (p[0] != fd && p[1] != fd)
		close(fd);
	close(p[0]);
	close(p[1]);
}

/* Addresses: NULL, short, IPv6, address or port 0; NULL results. */
void test_bad_addresses(void **state)
{
	struct sockaddr_in a = sin_of(RAIL1, 7000), z = sin_of(NULL, 7000), zp = sin_of(RAIL1, 0);
	struct sockaddr_in6 a6 = { .sin6_family = AF_INET6, .sin6_port = htons(7000),
				   .sin6_addr = IN6ADDR_LOOPBACK_INIT };
	struct sockaddr_in un = a;
	socklen_t len = sizeof(a);
	int fd, v = 1;

	(void)state;
	fd = ri2n_socket();
	assert_true(fd >= 0);
	expect_fail(ri2n_bind(fd, NULL, sizeof(a)), EINVAL);
	expect_fail(ri2n_bind(fd, SA(&a), sizeof(a) - 1), EINVAL);
	expect_fail(ri2n_bind(fd, SA(&a), 0), EINVAL);
	/* IPv6 is a family ri2n takes: ::1 is only no rail of this host's (IPv4 rails) */
	expect_fail(ri2n_bind(fd, SA(&a6), sizeof(a6)), EADDRNOTAVAIL);
	expect_fail(ri2n_bind(fd, SA(&a6), sizeof(a)), EINVAL);
	un.sin_family = AF_UNIX;
	expect_fail(ri2n_bind(fd, SA(&un), sizeof(un)), EAFNOSUPPORT);
	expect_fail(ri2n_bind(fd, SA(&un), 1), EINVAL);
	expect_fail(ri2n_connect(fd, NULL, sizeof(a)), EINVAL);
	expect_fail(ri2n_connect(fd, SA(&a), sizeof(a) - 1), EINVAL);
	expect_fail(ri2n_connect(fd, SA(&a6), sizeof(a6) - 1), EINVAL);
	expect_fail(ri2n_connect(fd, SA(&un), sizeof(un)), EAFNOSUPPORT);
	expect_fail(ri2n_connect(fd, SA(&z), sizeof(z)), EINVAL);
	expect_fail(ri2n_connect(fd, SA(&zp), sizeof(zp)), EINVAL);
	expect_fail(ri2n_getsockname(fd, NULL, &len), EINVAL);
	expect_fail(ri2n_getsockname(fd, SA(&a), NULL), EINVAL);
	expect_fail(ri2n_setsockopt(fd, RI2N_SOL, RI2N_HEARTBEAT_MS, NULL, sizeof(int)), EINVAL);
	expect_fail(ri2n_setsockopt(fd, RI2N_SOL, RI2N_HEARTBEAT_MS, &v, 1), EINVAL);
	len = 1;
	expect_fail(ri2n_getsockopt(fd, SOL_SOCKET, SO_ERROR, &v, &len), EINVAL);
	expect_fail(ri2n_getsockopt(fd, SOL_SOCKET, SO_ERROR, NULL, NULL), EINVAL);
	expect_fail(ri2n_stats(fd, NULL), EINVAL);
	expect_fail(ri2n_read_event(NULL), EINVAL);
	/* none of that hurt it: it still connects */
	{
		struct sockaddr_in peer;
		uint16_t port;
		int l = make_listener(NULL, 1, &port), s;

		a = sin_of(RAIL1, port);
		assert_int_equal(ri2n_connect(fd, SA(&a), sizeof(a)), 0);
		s = accept_within(l, 10000, &peer);
		flow2(fd, s, 4 * KIB, 4 * KIB, 1, 43);
		assert_int_equal(ri2n_close(s), 0);
		assert_int_equal(ri2n_close(l), 0);
	}
	assert_int_equal(ri2n_close(fd), 0);
}

/* A call in the wrong state: EINVAL, ENOTCONN, EISCONN, EALREADY. */
void test_bad_states(void **state)
{
	struct sockaddr_in a, b;
	socklen_t len = sizeof(a);
	uint16_t port;
	int fd, c, s, l, one = 1;

	(void)state;
	/* a new socket: no peer, no statistics, nothing to accept */
	fd = ri2n_socket();
	assert_true(fd >= 0);
	expect_fail(ri2n_getpeername(fd, SA(&a), &len), ENOTCONN);
	expect_fail(ri2n_stats(fd, &(struct ri2n_stats){ 0 }), ENOTCONN);
	expect_fail(ri2n_accept(fd, SA(&a), &len), EINVAL);
	assert_int_equal(ri2n_close(fd), 0);

	/* a connected socket: no listen, no accept, no bind, no second connect */
	connect_pair(&c, &s);
	l = make_listener(NULL, 2, &port);
	b = sin_of(RAIL1, port);
	a = sin_of(NULL, 0);
	expect_fail(ri2n_listen(c, 4), EINVAL);
	expect_fail(ri2n_listen(s, 4), EINVAL);
	len = sizeof(a);
	expect_fail(ri2n_accept(c, SA(&a), &len), EINVAL);
	expect_fail(ri2n_accept(s, NULL, NULL), EINVAL);
	expect_fail(ri2n_connect(c, SA(&b), sizeof(b)), EISCONN);
	expect_fail(ri2n_connect(s, SA(&b), sizeof(b)), EISCONN);
	expect_fail(ri2n_bind(c, SA(&a), sizeof(a)), EINVAL);
	/* a listening socket cannot connect or be bound again; listen again is fine (BSD) */
	assert_int_equal(ri2n_connect(l, SA(&b), sizeof(b)), -1);
	expect_fail(ri2n_bind(l, SA(&a), sizeof(a)), EINVAL);
	assert_int_equal(ri2n_listen(l, 8), 0);
	assert_int_equal(ri2n_close(l), 0);
	flow2(c, s, 4 * KIB, 4 * KIB, 1, 41); /* still a working connection after all that */
	assert_int_equal(ri2n_close(c), 0);
	assert_int_equal(ri2n_close(s), 0);

	/* a connect in progress: EALREADY; options and listen are too late */
	c = ri2n_socket();
	assert_true(c >= 0);
	set_opt(c, RI2N_CONNECT_TIMEOUT_MS, 5000);
	set_nonblock(c, 1);
	a = sin_of(SILENT, 7000);
	expect_fail(ri2n_connect(c, SA(&a), sizeof(a)), EINPROGRESS);
	expect_fail(ri2n_connect(c, SA(&a), sizeof(a)), EALREADY);
	expect_fail(ri2n_listen(c, 1), EINVAL);
	expect_fail(ri2n_setsockopt(c, RI2N_SOL, RI2N_HEARTBEAT_MS, &one, sizeof(one)), EISCONN);
	len = sizeof(a);
	assert_int_equal(ri2n_getpeername(c, SA(&a), &len), 0); /* the address connected to */
	assert_string_equal(inet_ntoa(a.sin_addr), SILENT);
	assert_int_equal(ri2n_close(c), 0); /* closing a connecting socket gives up on it */
}

/*
 * RI2N_SOL options: set, read back, bad and inconsistent values, unknown
 * ones; the SOL_SOCKET / IPPROTO_TCP options TCP programs set; SO_ERROR
 * read once.
 */
void test_options(void **state)
{
	int fd, v;
	socklen_t len = sizeof(v);

	(void)state;
	fd = ri2n_socket();
	assert_true(fd >= 0);
	set_opt(fd, RI2N_HEARTBEAT_MS, 50);
	assert_int_equal(get_opt(fd, RI2N_HEARTBEAT_MS), 50);
	v = 0;
	expect_fail(ri2n_setsockopt(fd, RI2N_SOL, RI2N_HEARTBEAT_MS, &v, sizeof(v)), EINVAL);
	v = -5;
	expect_fail(ri2n_setsockopt(fd, RI2N_SOL, RI2N_HEARTBEAT_MS, &v, sizeof(v)), EINVAL);
	v = 60001;
	expect_fail(ri2n_setsockopt(fd, RI2N_SOL, RI2N_HEARTBEAT_MS, &v, sizeof(v)), EINVAL);
	assert_int_equal(get_opt(fd, RI2N_HEARTBEAT_MS), 50); /* a refused value changes nothing */
	/* valid alone, inconsistent with the rest: the dead-peer timeout under the rail timeout */
	v = 100;
	expect_fail(ri2n_setsockopt(fd, RI2N_SOL, RI2N_DEAD_PEER_MS, &v, sizeof(v)), EINVAL);
	assert_int_equal(get_opt(fd, RI2N_DEAD_PEER_MS), 30000);
	set_opt(fd, RI2N_DEAD_PEER_MS, 5000);
	assert_int_equal(get_opt(fd, RI2N_DEAD_PEER_MS), 5000);
	v = 1;
	expect_fail(ri2n_setsockopt(fd, RI2N_SOL, 999, &v, sizeof(v)), ENOPROTOOPT);
	expect_fail(ri2n_getsockopt(fd, RI2N_SOL, 999, &v, &len), ENOPROTOOPT);
	expect_fail(ri2n_setsockopt(fd, RI2N_SOL, 0, &v, sizeof(v)), ENOPROTOOPT);
	for (int o = RI2N_HEARTBEAT_MS; o <= RI2N_RCVBUF; o++) /* every one reads back */
		assert_true(get_opt(fd, o) > 0);
	assert_int_equal(get_opt(fd, RI2N_MTU), 1500); /* the rails' MTU */
	/* larger than the process's datagrams: refused (it used to stall the connection) */
	v = 9000;
	expect_fail(ri2n_setsockopt(fd, RI2N_SOL, RI2N_MTU, &v, sizeof(v)), EINVAL);
	v = 1501;
	expect_fail(ri2n_setsockopt(fd, RI2N_SOL, RI2N_MTU, &v, sizeof(v)), EINVAL);
	assert_int_equal(get_opt(fd, RI2N_MTU), 1500);
	set_opt(fd, RI2N_MTU, 1400); /* smaller is fine */
	assert_int_equal(get_opt(fd, RI2N_MTU), 1400);

	/* what TCP programs set: accepted (and ignored) */
	v = 1;
	assert_int_equal(ri2n_setsockopt(fd, SOL_SOCKET, SO_KEEPALIVE, &v, sizeof(v)), 0);
	assert_int_equal(ri2n_setsockopt(fd, SOL_SOCKET, SO_REUSEADDR, &v, sizeof(v)), 0);
	assert_int_equal(ri2n_setsockopt(fd, IPPROTO_TCP, TCP_NODELAY, &v, sizeof(v)), 0);
	v = 0;
	len = sizeof(v);
	assert_int_equal(ri2n_getsockopt(fd, IPPROTO_TCP, TCP_NODELAY, &v, &len), 0);
	assert_int_equal(v, 1);
	/* what ri2n does not know */
	v = 1;
	expect_fail(ri2n_setsockopt(fd, SOL_SOCKET, SO_BROADCAST, &v, sizeof(v)), ENOPROTOOPT);
	expect_fail(ri2n_setsockopt(fd, IPPROTO_TCP, TCP_CORK, &v, sizeof(v)), ENOPROTOOPT);
	expect_fail(ri2n_setsockopt(fd, 12345, 1, &v, sizeof(v)), ENOPROTOOPT);
	len = sizeof(v);
	expect_fail(ri2n_getsockopt(fd, IPPROTO_TCP, TCP_MAXSEG, &v, &len), ENOPROTOOPT);
	assert_int_equal(ri2n_close(fd), 0);

	/* SO_ERROR: a refused connect's error, once; reading it clears it */
	{
		struct sockaddr_in a = sin_of(RAIL1, dead_port());

		fd = ri2n_socket();
		assert_true(fd >= 0);
		set_nonblock(fd, 1);
		expect_fail(ri2n_connect(fd, SA(&a), sizeof(a)), EINPROGRESS);
		assert_true(wait_fd(fd, POLLOUT, 10000) & (POLLOUT | POLLERR | POLLHUP));
		assert_int_equal(get_so_error(fd), ECONNREFUSED);
		assert_int_equal(get_so_error(fd), 0);
		assert_int_equal(ri2n_close(fd), 0);
	}
}

/*
 * Options belong to the connection set up with them: EISCONN once connected
 * or listening; an accepted connection has its listener's.  The options
 * that apply to the application's descriptor (SO_RCVTIMEO) still work.
 */
void test_options_fixed_after_connect(void **state)
{
	struct sockaddr_in a, peer;
	struct timeval tv = { 0, 200 * 1000 };
	socklen_t len = sizeof(a);
	uint16_t port;
	uint64_t t0;
	int l, c, s, v = 50;
	char b;

	(void)state;
	l = ri2n_socket();
	assert_true(l >= 0);
	set_opt(l, RI2N_KEEPALIVE_MS, 80);
	a = sin_of(NULL, 0);
	assert_int_equal(ri2n_bind(l, SA(&a), sizeof(a)), 0);
	assert_int_equal(ri2n_listen(l, 1), 0);
	expect_fail(ri2n_setsockopt(l, RI2N_SOL, RI2N_HEARTBEAT_MS, &v, sizeof(v)), EISCONN);
	assert_int_equal(ri2n_getsockname(l, SA(&a), &len), 0);
	port = ntohs(a.sin_port);
	c = ri2n_socket();
	assert_true(c >= 0);
	set_opt(c, RI2N_HEARTBEAT_MS, 50);
	a = sin_of(RAIL1, port);
	assert_int_equal(ri2n_connect(c, SA(&a), sizeof(a)), 0);
	s = accept_within(l, 10000, &peer);
	assert_int_equal(get_opt(c, RI2N_HEARTBEAT_MS), 50);
	assert_int_equal(get_opt(s, RI2N_KEEPALIVE_MS), 80); /* the listener's */
	assert_int_equal(get_opt(s, RI2N_HEARTBEAT_MS), 100);
	v = 60;
	expect_fail(ri2n_setsockopt(c, RI2N_SOL, RI2N_HEARTBEAT_MS, &v, sizeof(v)), EISCONN);
	expect_fail(ri2n_setsockopt(s, RI2N_SOL, RI2N_HEARTBEAT_MS, &v, sizeof(v)), EISCONN);
	assert_int_equal(get_opt(c, RI2N_HEARTBEAT_MS), 50);
	/* the TCP ones stay harmless on a connected socket */
	v = 1;
	assert_int_equal(ri2n_setsockopt(c, IPPROTO_TCP, TCP_NODELAY, &v, sizeof(v)), 0);
	assert_int_equal(ri2n_setsockopt(c, SOL_SOCKET, SO_KEEPALIVE, &v, sizeof(v)), 0);
	/* SO_RCVTIMEO applies to the descriptor the application holds */
	assert_int_equal(ri2n_setsockopt(c, SOL_SOCKET, SO_RCVTIMEO, &tv, sizeof(tv)), 0);
	t0 = now_ms();
	expect_fail((int)read(c, &b, 1), EAGAIN);
	assert_true(now_ms() - t0 >= 150 && now_ms() - t0 < 5000);
	tv.tv_usec = 0;
	assert_int_equal(ri2n_setsockopt(c, SOL_SOCKET, SO_RCVTIMEO, &tv, sizeof(tv)), 0);
	flow2(c, s, 8 * KIB, 8 * KIB, 1, 91);
	assert_int_equal(ri2n_close(c), 0);
	assert_int_equal(ri2n_close(s), 0);
	assert_int_equal(ri2n_close(l), 0);
}

/* In the child: the options its fresh engine took from the environment, or _exit(code). */
__attribute__((noreturn)) static void env_child(int out, int err)
{
	static const int opt[4] = { RI2N_HEARTBEAT_MS, RI2N_DEAD_PEER_MS, RI2N_FAIL_MIN,
				    RI2N_KEEPALIVE_MS };
	int fd, r[4];

	dup2(err, 2);
	setenv("RI2N_HEARTBEAT_MS", "abc", 1); /* not a number */
	setenv("RI2N_DEAD_PEER_MS", "1", 1);   /* below its range */
	setenv("RI2N_FAIL_MIN", "12x", 1);     /* trailing junk */
	setenv("RI2N_KEEPALIVE_MS", "70", 1);  /* a good one, applied */
	fd = ri2n_socket(); /* the child's own engine reads the environment now */
	if (fd < 0)
		_exit(10);
	for (int i = 0; i < 4; i++) {
		socklen_t len = sizeof(int);

		if (ri2n_getsockopt(fd, RI2N_SOL, opt[i], &r[i], &len))
			_exit(11);
	}
	if (write(out, r, sizeof(r)) != sizeof(r))
		_exit(12);
	ri2n_close(fd);
	_exit(0);
}

/*
 * RI2N_* variables are read when a process's engine starts: a bad value is
 * a warning on stderr and the default (docs/CONFIG.md).  A forked child
 * starts an engine of its own, so it can try them.
 */
void test_options_from_environment(void **state)
{
	int out[2], err[2], vals[4] = { -1, -1, -1, -1 }, st;
	char text[8192];
	size_t tn = 0;
	pid_t pid;

	(void)state;
	assert_int_equal(pipe(out), 0);
	assert_int_equal(pipe(err), 0);
	pid = fork_child();
	if (pid == 0) {
		close(out[0]);
		close(err[0]);
		env_child(out[1], err[1]);
	}
	close(out[1]);
	close(err[1]);
	st = reap(pid, 20000);
	assert_true(WIFEXITED(st));
	assert_int_equal(WEXITSTATUS(st), 0);
	assert_int_equal(read(out[0], vals, sizeof(vals)), sizeof(vals));
	for (ssize_t r; (r = read(err[0], text + tn, sizeof(text) - 1 - tn)) > 0;)
		tn += (size_t)r;
	text[tn] = 0;
	close(out[0]);
	close(err[0]);
	assert_int_equal(vals[0], 100); /* the defaults of docs/CONFIG.md */
	assert_int_equal(vals[1], 30000);
	assert_int_equal(vals[2], 2);
	assert_int_equal(vals[3], 70);
	if (!strstr(text, "RI2N_HEARTBEAT_MS=abc") || !strstr(text, "RI2N_DEAD_PEER_MS=1 ") ||
	    !strstr(text, "RI2N_FAIL_MIN=12x") || !strstr(text, "not valid"))
		fail_msg("the child's stderr lacks a warning per bad variable:\n%s", text);
	if (strstr(text, "RI2N_KEEPALIVE_MS"))
		fail_msg("a warning about a good value:\n%s", text);
}

/* A listener on RAIL1 whose socket got `key` (NULL: none) before listening. */
static int keyed_listener(const uint8_t *key, uint16_t *port)
{
	struct sockaddr_in a = sin_of(RAIL1, 0), got;
	socklen_t len = sizeof(got);
	int l = ri2n_socket();

	assert_true(l >= 0);
	if (key)
		assert_int_equal(ri2n_setsockopt(l, RI2N_SOL, RI2N_KEY, key, 32), 0);
	assert_int_equal(ri2n_bind(l, SA(&a), sizeof(a)), 0);
	assert_int_equal(ri2n_listen(l, 4), 0);
	assert_int_equal(ri2n_getsockname(l, SA(&got), &len), 0);
	*port = ntohs(got.sin_port);
	return l;
}

/* A client socket with `key` (NULL: none) and a 1.5 s handshake timeout. */
static int keyed_client(const uint8_t *key)
{
	int fd = ri2n_socket();

	assert_true(fd >= 0);
	if (key)
		assert_int_equal(ri2n_setsockopt(fd, RI2N_SOL, RI2N_KEY, key, 32), 0);
	set_opt(fd, RI2N_CONNECT_TIMEOUT_MS, 1500);
	return fd;
}

void test_key_option(void **state)
{
	uint8_t key[33], other[32];
	struct sockaddr_in peer, to;
	uint16_t port;
	int fd, l, s, v;
	socklen_t len = sizeof(v);

	(void)state;
	for (int i = 0; i < 33; i++)
		key[i] = (uint8_t)(i * 37 + 11);
	memcpy(other, key, 32);
	other[0] ^= 0x80;

	/* setting, clearing, reading back: never the key itself */
	fd = ri2n_socket();
	assert_true(fd >= 0);
	assert_int_equal(get_opt(fd, RI2N_KEY), 0);
	expect_fail(ri2n_setsockopt(fd, RI2N_SOL, RI2N_KEY, key, 31), EINVAL);
	expect_fail(ri2n_setsockopt(fd, RI2N_SOL, RI2N_KEY, key, 33), EINVAL);
	expect_fail(ri2n_setsockopt(fd, RI2N_SOL, RI2N_KEY, NULL, 32), EINVAL);
	assert_int_equal(get_opt(fd, RI2N_KEY), 0);
	assert_int_equal(ri2n_setsockopt(fd, RI2N_SOL, RI2N_KEY, key, 32), 0);
	assert_int_equal(ri2n_getsockopt(fd, RI2N_SOL, RI2N_KEY, &v, &len), 0);
	assert_int_equal(len, sizeof(int));
	assert_int_equal(v, 1);
	assert_int_equal(ri2n_setsockopt(fd, RI2N_SOL, RI2N_KEY, NULL, 0), 0);
	assert_int_equal(get_opt(fd, RI2N_KEY), 0);
	/* even the smallest MTU leaves room for the keyed handshake */
	set_opt(fd, RI2N_MTU, 576);
	assert_int_equal(ri2n_setsockopt(fd, RI2N_SOL, RI2N_KEY, key, 32), 0);
	assert_int_equal(ri2n_close(fd), 0);

	/* the same key at both ends: a verified stream both ways, then fixed */
	l = keyed_listener(key, &port);
	fd = keyed_client(key);
	to = sin_of(RAIL1, port);
	assert_int_equal(ri2n_connect(fd, SA(&to), sizeof(to)), 0);
	s = accept_within(l, 5000, &peer);
	assert_int_equal(get_opt(s, RI2N_KEY), 1);
	expect_fail(ri2n_setsockopt(fd, RI2N_SOL, RI2N_KEY, key, 32), EISCONN);
	flow2(fd, s, 4 * MIB, 1 * MIB, 1, 77);
	{
		struct ri2n_stats st;

		/* the packet number and the tag take 24 bytes of every packet */
		assert_int_equal(ri2n_stats(fd, &st), 0);
		assert_int_equal(st.mss, 1448 - 24);
	}
	assert_int_equal(ri2n_close(fd), 0);
	assert_int_equal(ri2n_close(s), 0);

	/* another key, or none: the handshake never completes, nothing is accepted (a
	 * handshake the listener took would end in milliseconds: 600 ms is long enough) */
	fd = keyed_client(other);
	set_opt(fd, RI2N_CONNECT_TIMEOUT_MS, 600);
	expect_fail(ri2n_connect(fd, SA(&to), sizeof(to)), ETIMEDOUT);
	assert_int_equal(ri2n_close(fd), 0);
	fd = keyed_client(NULL);
	set_opt(fd, RI2N_CONNECT_TIMEOUT_MS, 600);
	expect_fail(ri2n_connect(fd, SA(&to), sizeof(to)), ETIMEDOUT);
	assert_int_equal(ri2n_close(fd), 0);
	assert_false(wait_fd(l, POLLIN, 100) & POLLIN);
	assert_int_equal(ri2n_close(l), 0);
}

/* A child with RI2N_KEY / RI2N_KEY_FILE set to `key` / `file`: exit 0 when ri2n_socket
 * fails with EINVAL, 1 when it works with a keyed socket, 2 otherwise. */
__attribute__((noreturn)) static void key_child(int err, const char *key, const char *file)
{
	int fd;

	dup2(err, 2);
	if (key)
		setenv("RI2N_KEY", key, 1);
	if (file)
		setenv("RI2N_KEY_FILE", file, 1);
	fd = ri2n_socket();
	if (fd < 0)
		_exit(errno == EINVAL ? 0 : 2);
	_exit(get_opt(fd, RI2N_KEY) == 1 ? 1 : 2);
}

/* Runs key_child; returns its exit code, its stderr in text. */
static int run_key_child(const char *key, const char *file, char *text, size_t cap)
{
	int err[2], st;
	size_t tn = 0;
	pid_t pid;

	assert_int_equal(pipe(err), 0);
	pid = fork_child();
	if (pid == 0) {
		close(err[0]);
		key_child(err[1], key, file);
	}
	close(err[1]);
	st = reap(pid, 20000);
	for (ssize_t r; (r = read(err[0], text + tn, cap - 1 - tn)) > 0;)
		tn += (size_t)r;
	text[tn] = 0;
	close(err[0]);
	assert_true(WIFEXITED(st));
	return WEXITSTATUS(st);
}

/*
 * A key in the environment that cannot be used is an error, not a warning
 * (running unauthenticated would be silently insecure), and the message
 * never shows the key.
 */
void test_key_from_environment(void **state)
{
	static const char good[] =
		"00112233445566778899aabbccddeeff00112233445566778899aabbccddeeff";
	static const char bad[] = "00112233445566778899aabbccddeeff00112233445566778899aabbccddeefZ";
	char text[8192], path[] = "/tmp/ri2n-key.XXXXXX";
	int fd;

	(void)state;
	assert_int_equal(run_key_child(good, NULL, text, sizeof(text)), 1);
	assert_int_equal(run_key_child(bad, NULL, text, sizeof(text)), 0);
	if (!strstr(text, "RI2N_KEY must hold 64 hexadecimal digits") || strstr(text, "0011"))
		fail_msg("want the reason and never the key on stderr:\n%s", text);
	assert_int_equal(run_key_child("abc", NULL, text, sizeof(text)), 0);
	/* from a file, with the newline an editor leaves */
	fd = mkstemp(path);
	assert_true(fd >= 0);
	assert_int_equal(write(fd, good, sizeof(good) - 1), (ssize_t)sizeof(good) - 1);
	assert_int_equal(write(fd, "\n", 1), 1);
	close(fd);
	assert_int_equal(run_key_child(NULL, path, text, sizeof(text)), 1);
	assert_int_equal(run_key_child(good, path, text, sizeof(text)), 0); /* both: which one? */
	/* a key file other users can read is no secret: refused, as ssh refuses its keys */
	assert_int_equal(chmod(path, 0644), 0);
	assert_int_equal(run_key_child(NULL, path, text, sizeof(text)), 0);
	if (!strstr(text, "readable or writable by other users") || strstr(text, "0011"))
		fail_msg("want the file's mode as the reason, never the key:\n%s", text);
	assert_int_equal(chmod(path, 0600), 0);
	assert_int_equal(run_key_child(NULL, path, text, sizeof(text)), 1);
	unlink(path);
	assert_int_equal(run_key_child(NULL, path, text, sizeof(text)), 0); /* gone */
	if (!strstr(text, "cannot read the cluster key file"))
		fail_msg("want the file's problem on stderr:\n%s", text);
}
