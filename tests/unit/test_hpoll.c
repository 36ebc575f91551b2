/*
 * test_hpoll.c - the polling drivers' kit (src/host/rn_hpoll.h): the rail
 * sockets opened over loopback (ports asked for or any, the backup flag, a
 * rail whose address is not this host's named in the error), and a link's
 * table entry following its connection's id, and the listener's answers:
 * the reply sent, the cap on links without a hello, an accept refused for
 * it taken the next time, a cookie accepted once only; and the sockets'
 * errors reaching the link they are about; the link of a new keeper due;
 * our socket in a peer rail's subnet.
 */
#define _GNU_SOURCE /* rn_hsock.h: struct mmsghdr */
#include "unit_net.h"

#include <arpa/inet.h>
#include <poll.h>
#include <stdio.h>
#include <sys/socket.h>
#include <string.h>

#include "rn_hpoll.h"

#define LO 0x7f000001u

static rn_rail_info rail(const char *name, uint32_t ip, int backup)
{
	rn_rail_info r = { .ip = ip, .prefix = 8, .backup = (uint8_t)backup };

	snprintf(r.name, sizeof(r.name), "%s", name);
	return r;
}

/* Two loopback rails: one on any port, one on the port asked for, the second a backup. */
static void test_open_rails(void **state)
{
	rn_rail_info rails[2] = { rail("lo", LO, 0), rail("lo2", LO, 1) };
	rn_rail_addr bind[2] = { { 0 } };
	rn_hpoll_links k = { 0 };
	rn_hpoll_rails r = { .rails = rails, .n = 2, .bind = bind, .links = &k,
			     .opts = { .dgram = 1472, .rx_ts = 1, .recverr = 1 } };
	rn_hset io;
	rn_hrxbuf rx;
	rn_htab tab;
	char err[128] = "";

	(void)state;
	/* the port asked for: the first socket's, once it is free again */
	assert_int_equal(rn_hpoll_open(&io, &rx, &tab, &r, err, sizeof(err)), 0);
	bind[1].port = io.s[0].addr.port;
	rn_hpoll_close(&io, &rx, &tab);
	assert_int_equal(rn_hpoll_open(&io, &rx, &tab, &r, err, sizeof(err)), 0);
	assert_int_equal(io.n, 2);
	assert_true(io.s[0].addr.port != 0);
	assert_int_equal(io.s[1].addr.port, bind[1].port);
	assert_true(io.s[0].addr.ip == LO && io.s[1].addr.ip == LO);
	assert_int_equal(io.s[0].addr.backup, 0);
	assert_int_equal(io.s[1].addr.backup, 1);
	assert_int_equal(io.gso, 0); /* not asked for */
	assert_ptr_equal(io.arg, &k); /* its errors go to the links */
	assert_true(io.ops.on_send_error == rn_hpoll_on_send_error);
	assert_true(io.ops.on_error == rn_hpoll_on_error);
	assert_true(rx.bufsz >= 2048);
	assert_int_equal(tab.n, 0);
	assert_true(tab.cap >= 16);
	rn_hpoll_close(&io, &rx, &tab);
}

/* A rail whose address this host does not have: the error names it, the rails before it opened. */
static void test_open_rail_error(void **state)
{
	rn_rail_info rails[2] = { rail("lo", LO, 0), rail("gone0", 0xc0000201u, 0) };
	rn_hpoll_rails r = { .rails = rails, .n = 2, .opts = { .dgram = 1472 } };
	rn_hset io;
	rn_hrxbuf rx;
	rn_htab tab;
	char err[128] = "";

	(void)state;
	assert_true(rn_hpoll_open(&io, &rx, &tab, &r, err, sizeof(err)) < 0);
	assert_int_equal(io.n, 1); /* the failed socket is closed at once, not kept */
	assert_true(io.s[0].fd >= 0);
	assert_int_equal(io.s[0].rail, 0);
	assert_non_null(strstr(err, "rail gone0"));
	rn_hpoll_close(&io, &rx, &tab);
}

static int rail_for(const rn_hset *io, uint32_t ip, uint8_t prefix)
{
	rn_rail_addr a = { .ip = ip, .port = 1, .prefix = prefix };

	return rn_hpoll_rail_for(io, &a);
}

static int rail_for6(const rn_hset *io, const char *ip, uint8_t prefix)
{
	rn_rail_addr a = { .v6 = 1, .port = 1, .prefix = prefix };

	assert_int_equal(inet_pton(AF_INET6, ip, a.ip6), 1);
	return rn_hpoll_rail_for(io, &a);
}

/* Our socket in a peer rail's subnet: the shorter prefix counts; none for a subnet of no rail. */
static void test_rail_for(void **state)
{
	static rn_hset io; /* large: sockets with their queues */

	(void)state;
	io.n = 3;
	io.s[0].addr = (rn_rail_addr){ .ip = 0xc6120101u, .prefix = 24 }; /* 198.18.1.1/24 */
	io.s[1].addr = (rn_rail_addr){ .ip = 0xc6120201u, .prefix = 24 }; /* 198.18.2.1/24 */
	io.s[2].addr = (rn_rail_addr){ .v6 = 1, .prefix = 64 };            /* 2001:2:0:3::1/64 */
	assert_int_equal(inet_pton(AF_INET6, "2001:2:0:3::1", io.s[2].addr.ip6), 1);
	assert_int_equal(rail_for(&io, 0xc6120202u, 32), 1);
	assert_int_equal(rail_for(&io, 0xc6120102u, 24), 0);
	assert_int_equal(rail_for(&io, 0xc6120302u, 32), -1);
	/* the peer's rail is a /16: 198.18.3.2 shares it with our first */
	assert_int_equal(rail_for(&io, 0xc6120302u, 16), 0);
	/* IPv6: the subnet decides, never an address of the other family */
	assert_int_equal(rail_for6(&io, "2001:2:0:3::2", 128), 2);
	assert_int_equal(rail_for6(&io, "2001:2:0:3::2", 64), 2);
	assert_int_equal(rail_for6(&io, "2001:2:0:4::2", 128), -1);
	assert_int_equal(rail_for6(&io, "2001:2:0:4::2", 48), 2);
	assert_int_equal(rail_for6(&io, "::ffff:198.18.1.2", 128), -1);
	io.n = 0;
	assert_int_equal(rail_for(&io, 0xc6120102u, 24), -1);
}

/* After a handshake restart the connection's id changed: the entry moves with it. */
static void test_rekey(void **state)
{
	un_net *n = un_new(1);
	rn_conn *c;
	rn_htab tab;
	int link;
	uint64_t id, was;

	(void)state;
	un_connect(n, UT_T0);
	c = n->side[UN_CLIENT].c;
	id = was = rn_conn_id(c) ^ 0x77;
	assert_int_equal(rn_htab_init(&tab, 4), 0);
	assert_int_equal(rn_htab_add(&tab, id, &link), 0);
	rn_hpoll_rekey(&tab, &id, c, &link);
	assert_true(id == rn_conn_id(c));
	assert_ptr_equal(rn_htab_get(&tab, id), &link);
	assert_null(rn_htab_get(&tab, was));
	/* the same id: nothing moves */
	rn_hpoll_rekey(&tab, &id, c, &link);
	assert_true(id == rn_conn_id(c));
	assert_int_equal(tab.n, 1);
	rn_htab_free(&tab);
	un_del(n);
}

/* The accepting side of test_listen: its links, and how many the cap counts. */
typedef struct accepts {
	const rn_env *env;
	int calls, counted;
	rn_conn *c;
} accepts;

static int counted(const void *v)
{
	return *(const int *)v;
}

static void *take(void *arg, const rn_accept_params *ap, uint64_t now)
{
	accepts *a = arg;

	a->calls++;
	assert_int_equal(rn_conn_accept(&a->c, ap, a->env, now), 0);
	return a->c;
}

/* The client's next datagram (un_net's queue), of the type asked for. */
static size_t next_dgram(un_net *n, uint8_t *b, uint8_t type, uint64_t now)
{
	size_t len;

	n->nq = 0;
	assert_true(un_flush(n, UN_CLIENT, now) > 0);
	assert_int_equal(n->q[0].rec.type, type);
	len = n->q[0].rec.len;
	memcpy(b, n->q[0].data, len);
	return len;
}

/*
 * A handshake through rn_hpoll_listen, over loopback: socket 1 stands for
 * the client's address.  Its INIT_ACK goes back at once; its COOKIE_ECHO is
 * refused while the cap is full and taken once it is not; the same cookie
 * again is not accepted twice.
 */
static void test_listen(void **state)
{
	rn_rail_info rails[2] = { rail("lo", LO, 0), rail("lo2", LO, 0) };
	rn_hpoll_rails r = { .rails = rails, .n = 2, .opts = { .dgram = 1472 } };
	un_net *n = un_new(1);
	accepts acc = { .env = &n->side[UN_SERVER].env };
	rn_hpoll_accept a = { .max_unbound = 1, .unbound = counted, .on_accept = take,
			      .arg = &acc };
	rn_listener *lis = &n->side[UN_SERVER].lis;
	struct pollfd pfd;
	uint8_t b[UN_DGRAM];
	rn_hset io;
	rn_hrxbuf rx;
	rn_htab tab;
	char err[128];
	rn_addr from;
	uint64_t now = UT_T0;
	size_t len;
	ssize_t got;
	int one = 1;

	(void)state;
	assert_int_equal(rn_hpoll_open(&io, &rx, &tab, &r, err, sizeof(err)), 0);
	from = (rn_addr){ .ip = io.s[1].addr.ip, .port = io.s[1].addr.port };
	un_listen(n);
	assert_int_equal(un_connect(n, now), 0);
	len = next_dgram(n, b, RN_PT_INIT, now);
	assert_int_equal(rn_hpoll_listen(lis, &io, &tab, &a, 0, from, b, len, now), 0);
	pfd = (struct pollfd){ .fd = io.s[1].fd, .events = POLLIN };
	assert_int_equal(poll(&pfd, 1, 2000), 1);
	got = recv(io.s[1].fd, b, sizeof(b), 0);
	assert_true(got > 0);
	assert_int_equal(rn_conn_recv(n->side[UN_CLIENT].c, now, 0, un_addr(n, UN_SERVER, 0), b,
				      (size_t)got), 0);
	len = next_dgram(n, b, RN_PT_COOKIE_ECHO, now);
	/* one link without a hello already: refused, nothing made */
	assert_int_equal(rn_htab_add(&tab, 0x99, &one), 0);
	assert_int_equal(rn_hpoll_listen(lis, &io, &tab, &a, 0, from, b, len, now), 1);
	assert_int_equal(acc.calls, 0);
	/* it said who it is: the resent COOKIE_ECHO is taken */
	one = 0;
	assert_int_equal(rn_hpoll_listen(lis, &io, &tab, &a, 0, from, b, len, now + UT_MS), 0);
	assert_int_equal(acc.calls, 1);
	assert_non_null(acc.c);
	/* the same cookie once more: a replay, no second connection */
	assert_int_equal(rn_hpoll_listen(lis, &io, &tab, &a, 0, from, b, len, now + 2 * UT_MS), 0);
	assert_int_equal(acc.calls, 1);
	rn_conn_del(acc.c);
	rn_hpoll_close(&io, &rx, &tab);
	un_del(n);
}

/* The hooks of test_errors: links marked and clock reads. */
typedef struct marks {
	int marked, clock_reads;
	void *last;
} marks;

static marks g_marks;

static rn_conn *link_conn(void *v) { return *(rn_conn **)v; }

static void mark_link(void *v)
{
	g_marks.marked++;
	g_marks.last = v;
}

static uint64_t clock_now(void *arg)
{
	(void)arg;
	g_marks.clock_reads++;
	return UT_T0 + UT_S;
}

/*
 * A send error reaches the link its owner id names, and only that one; an
 * error that quotes no datagram of ours reaches no link.
 */
static void test_errors(void **state)
{
	un_net *n = un_new(2);
	rn_htab tab;
	rn_hmon mon = { 0 };
	rn_conn *link;
	rn_hpoll_links k = { .tab = &tab, .mon = &mon, .conn_of = link_conn, .mark = mark_link,
			     .now = clock_now };
	rn_hsock_err e = { .err = 111, .icmp = 1, .type = 3, .code = 3 };

	(void)state;
	un_handshake(n, UT_T0);
	link = n->side[UN_CLIENT].c;
	assert_int_equal(rn_htab_init(&tab, 4), 0);
	assert_int_equal(rn_htab_add(&tab, rn_conn_id(link), &link), 0);
	rn_hpoll_on_send_error(&k, 1, rn_conn_id(link) ^ 1, 101); /* nobody's */
	assert_int_equal(g_marks.marked, 0);
	rn_hpoll_on_send_error(&k, 1, rn_conn_id(link), 101);
	assert_int_equal(g_marks.marked, 1);
	assert_ptr_equal(g_marks.last, &link);
	assert_int_equal(g_marks.clock_reads, 1);
	rn_hpoll_on_error(&k, 0, &e);
	assert_int_equal(g_marks.marked, 1);
	rn_hmon_free(&mon);
	rn_htab_free(&tab);
	un_del(n);
}

static int g_due;
static void *g_due_link;

static void due_link(void *v)
{
	g_due++;
	g_due_link = v;
}

/*
 * Two links to one peer process (same rails): both join its monitor once
 * established; when the keeper's link goes, the other becomes keeper and
 * its link is due at once.
 */
static void test_keeper_due(void **state)
{
	un_net *a = un_new(2), *b = un_new(2);
	rn_hmon mon = { 0 };
	rn_hpoll_links k = { .mon = &mon, .due = due_link };
	int la, lb;
	rn_conn *ca, *cb;

	(void)state;
	un_handshake(a, UT_T0);
	un_handshake(b, UT_T0);
	ca = a->side[UN_CLIENT].c;
	cb = b->side[UN_CLIENT].c;
	rn_conn_set_user(ca, &la);
	rn_conn_set_user(cb, &lb);
	rn_hpoll_monitor(&k, ca, a->now);
	rn_hpoll_monitor(&k, cb, b->now);
	assert_ptr_equal(rn_conn_peer_of(ca), rn_conn_peer_of(cb));
	assert_int_equal(g_due, 0);
	rn_hpoll_leave(&k, ca);
	assert_int_equal(g_due, 1);
	assert_ptr_equal(g_due_link, &lb);
	rn_hpoll_leave(&k, cb); /* the last: nobody left to keep it */
	assert_int_equal(g_due, 1);
	rn_hmon_free(&mon);
	un_del(b);
	un_del(a);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_open_rails),
		cmocka_unit_test(test_open_rail_error),
		cmocka_unit_test(test_rail_for),
		cmocka_unit_test(test_rekey),
		cmocka_unit_test(test_listen),
		cmocka_unit_test(test_errors),
		cmocka_unit_test(test_keeper_due),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
