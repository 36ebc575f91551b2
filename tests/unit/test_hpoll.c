/*
 * test_hpoll.c - the polling drivers' kit (src/host/rn_hpoll.h): the rail
 * sockets opened over loopback (ports asked for or any, the backup flag, a
 * rail whose address is not this host's named in the error), and a link's
 * table entry following its connection's id.
 */
#define _GNU_SOURCE /* rn_hsock.h: struct mmsghdr */
#include "unit_net.h"

#include <stdio.h>
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
	rn_hpoll_rails r = { .rails = rails, .n = 2, .bind = bind,
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
	assert_int_equal(io.n, 2);
	assert_true(io.s[0].fd >= 0);
	assert_non_null(strstr(err, "rail gone0"));
	rn_hpoll_close(&io, &rx, &tab);
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

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_open_rails),
		cmocka_unit_test(test_open_rail_error),
		cmocka_unit_test(test_rekey),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
