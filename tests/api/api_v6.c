/*
 * api_v6.c - the socket API over IPv6 rails: bind, listen, connect,
 * accept, getsockname and getpeername take and give struct sockaddr_in6,
 * and the stream is the same stream.
 *
 * The events of an IPv6 connection carry its addresses in their IPv6
 * fields; a forked child reads an inherited IPv6 connection's names.
 *
 * Runs inside run.sh's namespace with RI2N_API_V6=1: r1 and r2 then also
 * hold 2001:2:0:1::1/64 and 2001:2:0:2::1/64, and the rails are those two
 * addresses (RI2N_RAILS names them), so every connection here is IPv6 on
 * both rails.
 *
 *   test_api_v6 [FILTER [SKIP]]
 */
#define _GNU_SOURCE
#include <arpa/inet.h>
#include <poll.h>
#include <stdio.h>
#include <stdlib.h>
#include <sys/wait.h>
#include <unistd.h>

#include "api_harness.h"

#define V6_RAIL1 "2001:2:0:1::1"
#define V6_RAIL2 "2001:2:0:2::1"
#define V6_NOT_RAIL "2001:2:0:3::1"

static struct sockaddr_in6 sin6_of(const char *ip, uint16_t port)
{
	struct sockaddr_in6 a = { .sin6_family = AF_INET6, .sin6_port = htons(port) };

	if (ip)
		assert_int_equal(inet_pton(AF_INET6, ip, &a.sin6_addr), 1);
	return a;
}

/* Whether a is the IPv6 address ip (any port if port is 0). */
static void expect_sin6(const struct sockaddr_in6 *a, socklen_t len, const char *ip,
			uint16_t port)
{
	struct sockaddr_in6 want = sin6_of(ip, port);
	char got[INET6_ADDRSTRLEN];

	assert_int_equal(len, sizeof(*a));
	assert_int_equal(a->sin6_family, AF_INET6);
	inet_ntop(AF_INET6, &a->sin6_addr, got, sizeof(got));
	if (memcmp(&a->sin6_addr, &want.sin6_addr, sizeof(want.sin6_addr)) != 0)
		fail_msg("address %s, want %s", got, ip);
	if (port)
		assert_int_equal(ntohs(a->sin6_port), port);
	else
		assert_int_not_equal(a->sin6_port, 0);
}

/* A listener bound to ip (NULL: ::) on a free port. */
static int listen6(const char *ip, uint16_t *port)
{
	struct sockaddr_in6 a = sin6_of(ip, 0), got;
	socklen_t len = sizeof(got);
	int l = ri2n_socket();

	assert_true(l >= 0);
	assert_int_equal(ri2n_bind(l, SA(&a), sizeof(a)), 0);
	assert_int_equal(ri2n_listen(l, 4), 0);
	assert_int_equal(ri2n_getsockname(l, SA(&got), &len), 0);
	expect_sin6(&got, len, ip ? ip : "::", 0);
	*port = ntohs(got.sin6_port);
	return l;
}

static int accept6(int l, struct sockaddr_in6 *peer)
{
	socklen_t len = sizeof(*peer);
	int fd;

	if (!(wait_fd(l, POLLIN, 10000) & POLLIN))
		fail_msg("no connection to accept within 10 s");
	fd = ri2n_accept(l, SA(peer), &len);
	if (fd < 0)
		fail_msg("ri2n_accept: %s", strerror(errno));
	assert_int_equal(len, sizeof(*peer));
	assert_int_equal(peer->sin6_family, AF_INET6);
	return fd;
}

/* Connect to rail 1's IPv6 address and stream both ways; every name is IPv6. */
static void test_v6_round_trip(void **state)
{
	struct sockaddr_in6 to, peer, name;
	socklen_t len;
	struct ri2n_stats st;
	uint16_t port;
	int l = listen6(NULL, &port), c = ri2n_socket(), s;

	(void)state;
	assert_true(c >= 0);
	to = sin6_of(V6_RAIL1, port);
	if (ri2n_connect(c, SA(&to), sizeof(to)) < 0)
		fail_msg("ri2n_connect to [%s]:%u: %s", V6_RAIL1, port, strerror(errno));
	s = accept6(l, &peer);
	flow2(c, s, 4 * MIB, 4 * MIB, 1, 61);
	/* the client's names: its rail-1 address, the server's */
	len = sizeof(name);
	assert_int_equal(ri2n_getpeername(c, SA(&name), &len), 0);
	expect_sin6(&name, len, V6_RAIL1, port);
	len = sizeof(name);
	assert_int_equal(ri2n_getsockname(c, SA(&name), &len), 0);
	expect_sin6(&name, len, V6_RAIL1, 0);
	/* the server's: the client's as accept gave it */
	len = sizeof(name);
	assert_int_equal(ri2n_getpeername(s, SA(&name), &len), 0);
	expect_sin6(&name, len, V6_RAIL1, ntohs(peer.sin6_port));
	len = sizeof(name);
	assert_int_equal(ri2n_getsockname(s, SA(&name), &len), 0);
	expect_sin6(&name, len, V6_RAIL1, port);
	/* a short buffer gets the start and the full length, as getsockname(2) */
	len = sizeof(struct sockaddr_in);
	assert_int_equal(ri2n_getsockname(s, SA(&name), &len), 0);
	assert_int_equal(len, sizeof(struct sockaddr_in6));
	/* both rails, IPv6 at both ends, in the IPv6 fields */
	assert_int_equal(ri2n_stats(c, &st), 0);
	assert_int_equal(st.nrails, 2);
	for (int k = 0; k < 2; k++) {
		assert_int_equal(st.rail6[k].local.sin6_family, AF_INET6);
		assert_int_equal(st.rail6[k].remote.sin6_family, AF_INET6);
		assert_int_equal(st.rail[k].local.sin_family, 0);
		assert_true(st.rail[k].rx_data + st.rail[k].tx_data > 0);
	}
	assert_int_equal(ri2n_close(c), 0);
	assert_int_equal(ri2n_close(s), 0);
	assert_int_equal(ri2n_close(l), 0);
}

/* The CONNECTED events of both ends name the peer in peer6; peer (IPv4) stays zero. */
static void test_v6_events(void **state)
{
	struct sockaddr_in6 to, peer;
	struct ri2n_event e;
	uint16_t port;
	int l, c, s, seen = 0;
	uint64_t end;

	(void)state;
	ri2n_event_fd();
	while (ri2n_read_event(&e) == 1) /* what earlier tests left */
		;
	l = listen6(NULL, &port);
	c = ri2n_socket();
	to = sin6_of(V6_RAIL1, port);
	assert_int_equal(ri2n_connect(c, SA(&to), sizeof(to)), 0);
	s = accept6(l, &peer);
	end = now_ms() + 10000;
	while (seen != 3 && now_ms() < end) {
		if (ri2n_read_event(&e) != 1) {
			usleep(10 * 1000);
			continue;
		}
		if (e.type != RI2N_EVENT_CONNECTED || (e.fd != c && e.fd != s))
			continue;
		assert_int_equal(e.peer.sin_family, 0);
		assert_int_equal(e.peer6.sin6_family, AF_INET6);
		expect_sin6(&e.peer6, sizeof(e.peer6), V6_RAIL1, e.fd == c ? port : 0);
		seen |= e.fd == c ? 1 : 2;
	}
	if (seen != 3)
		fail_msg("CONNECTED events seen: client %d, server %d", seen & 1, !!(seen & 2));
	assert_int_equal(ri2n_close(c), 0);
	assert_int_equal(ri2n_close(s), 0);
	assert_int_equal(ri2n_close(l), 0);
}

/* Bound to rail 2's IPv6 address: a connection to it runs there, names say so. */
static void test_v6_bind_rail2(void **state)
{
	struct sockaddr_in6 to, peer, name;
	socklen_t len = sizeof(name);
	uint16_t port;
	int l = listen6(V6_RAIL2, &port), c = ri2n_socket(), s;

	(void)state;
	to = sin6_of(V6_RAIL2, port);
	assert_int_equal(ri2n_connect(c, SA(&to), sizeof(to)), 0);
	s = accept6(l, &peer);
	flow2(c, s, 256 * KIB, 256 * KIB, 1, 62);
	assert_int_equal(ri2n_getsockname(s, SA(&name), &len), 0);
	expect_sin6(&name, len, V6_RAIL2, port);
	assert_int_equal(ri2n_close(c), 0);
	assert_int_equal(ri2n_close(s), 0);
	assert_int_equal(ri2n_close(l), 0);
}

/*
 * In a forked child (no ri2n state of its own for them) the inherited
 * descriptors still name their IPv6 connections: the owner's engine wrote
 * the addresses on their socketpairs.  0 if every name is right, else the
 * number of the first wrong one.
 */
static int child_names(int c, int s, const struct sockaddr_in6 *to, const struct sockaddr_in6 *peer)
{
	struct { int fd, peer; const struct sockaddr_in6 *want; } q[] = {
		{ c, 1, to }, { s, 0, to }, { s, 1, peer },
	};

	for (int i = 0; i < 3; i++) {
		struct sockaddr_in6 got;
		socklen_t len = sizeof(got);
		int rc = q[i].peer ? ri2n_getpeername(q[i].fd, SA(&got), &len)
				   : ri2n_getsockname(q[i].fd, SA(&got), &len);

		if (rc < 0 || len != sizeof(got) || got.sin6_family != AF_INET6 ||
		    got.sin6_port != q[i].want->sin6_port ||
		    memcmp(&got.sin6_addr, &q[i].want->sin6_addr, sizeof(got.sin6_addr)) != 0)
			return 10 + i;
	}
	/* ri2n_getsockname on the connecting end: its rail-1 address, some port */
	{
		struct sockaddr_in6 got;
		socklen_t len = sizeof(got);

		if (ri2n_getsockname(c, SA(&got), &len) < 0 || got.sin6_family != AF_INET6 ||
		    got.sin6_port != peer->sin6_port)
			return 20;
	}
	return 0;
}

static void test_v6_handed(void **state)
{
	struct sockaddr_in6 to, peer;
	uint16_t port;
	int l = listen6(NULL, &port), c = ri2n_socket(), s, st;
	pid_t pid;

	(void)state;
	to = sin6_of(V6_RAIL1, port);
	assert_int_equal(ri2n_connect(c, SA(&to), sizeof(to)), 0);
	s = accept6(l, &peer);
	flow2(c, s, 64 * KIB, 64 * KIB, 0, 63); /* both ends established and named */
	pid = fork();
	assert_true(pid >= 0);
	if (pid == 0)
		_exit(child_names(c, s, &to, &peer));
	assert_int_equal(waitpid(pid, &st, 0), pid);
	if (!WIFEXITED(st) || WEXITSTATUS(st) != 0)
		fail_msg("the forked child read a wrong name (check %d)",
			 WIFEXITED(st) ? WEXITSTATUS(st) : -1);
	flow2(c, s, 256 * KIB, 256 * KIB, 1, 64); /* and the parent's connection goes on */
	assert_int_equal(ri2n_close(c), 0);
	assert_int_equal(ri2n_close(s), 0);
	assert_int_equal(ri2n_close(l), 0);
}

/* What is refused, and how. */
static void test_v6_bad_addresses(void **state)
{
	struct sockaddr_in6 a = sin6_of(V6_NOT_RAIL, 7000), any = sin6_of(NULL, 0);
	struct sockaddr_in v4 = sin_of(RAIL1, 7000);
	struct sockaddr_un_like {
		sa_family_t family;
		char path[30];
	} un = { .family = AF_UNIX };
	int fd = ri2n_socket();

	(void)state;
	assert_true(fd >= 0);
	/* a length short of the family's struct */
	expect_fail(ri2n_bind(fd, SA(&any), sizeof(struct sockaddr_in)), EINVAL);
	expect_fail(ri2n_connect(fd, SA(&a), sizeof(a) - 1), EINVAL);
	expect_fail(ri2n_connect(fd, SA(&a), 1), EINVAL);
	/* another family */
	expect_fail(ri2n_bind(fd, SA(&un), sizeof(un)), EAFNOSUPPORT);
	expect_fail(ri2n_connect(fd, SA(&un), sizeof(un)), EAFNOSUPPORT);
	/* an IPv6 address that is no rail's; the unspecified address with a port */
	expect_fail(ri2n_bind(fd, SA(&a), sizeof(a)), EADDRNOTAVAIL);
	any.sin6_port = htons(7000);
	expect_fail(ri2n_connect(fd, SA(&any), sizeof(any)), EINVAL);
	/* no rail of this host is IPv4: no rail in the peer's subnet */
	expect_fail(ri2n_connect(fd, SA(&v4), sizeof(v4)), ENETUNREACH);
	assert_int_equal(ri2n_close(fd), 0);
}

int main(int argc, char **argv)
{
	static const struct CMUnitTest tests[] = {
		HARNESS_TEST(test_v6_round_trip),
		HARNESS_TEST(test_v6_bind_rail2),
		HARNESS_TEST(test_v6_events),
		HARNESS_TEST(test_v6_handed),
		HARNESS_TEST(test_v6_bad_addresses),
	};

	harness_init();
	setenv("RI2N_RAILS", V6_RAIL1 "," V6_RAIL2, 0);
	setenv("RI2N_EXIT_LINGER_MS", "5000", 0);
	harness_watchdog("test_api_v6", 100);
	if (argc > 1)
		cmocka_set_test_filter(argv[1]);
	if (argc > 2)
		cmocka_set_skip_filter(argv[2]);
	return cmocka_run_group_tests(tests, NULL, NULL);
}
