/*
 * test_hlink.c - the parser of the kernel's link and address events
 * (src/host/rn_hlink.c), fed literal rtnetlink messages as the kernel
 * writes them (little-endian, as on the machines ri2n runs on): an address
 * removed and added (IPv4 and IPv6), a link down, up without carrier and
 * up, several messages in one read, and what it must skip or stop at (an
 * IPv6 address still under duplicate detection, routes, a cut message, a
 * broken attribute).
 */
#include "unit_common.h"

#include <string.h>

#include "rn_hlink.h"

/* RTM_DELADDR: 198.18.2.1/24 on interface 3 ("r2"), IFA_ADDRESS, IFA_LOCAL, IFA_LABEL */
static const uint8_t del_addr[48] = {
	0x30, 0, 0, 0, 21, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0,     /* nlmsghdr: len 48, type 21 */
	2, 24, 0x80, 0, 3, 0, 0, 0,                             /* AF_INET, /24, permanent, index 3 */
	8, 0, 1, 0, 198, 18, 2, 1,                              /* IFA_ADDRESS */
	8, 0, 2, 0, 198, 18, 2, 1,                              /* IFA_LOCAL */
	7, 0, 3, 0, 'r', '2', 0, 0,                             /* IFA_LABEL, padded */
};

/* RTM_NEWLINK: interface 3 "r2", flags as given in bytes 24..27, IFLA_IFNAME and IFLA_MTU */
static void new_link(uint8_t m[48], uint32_t flags)
{
	static const uint8_t t[48] = {
		0x30, 0, 0, 0, 16, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, /* len 48, type 16 */
		0, 0, 1, 0, 3, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0,     /* AF_UNSPEC, ether, index 3 */
		7, 0, 3, 0, 'r', '2', 0, 0,                         /* IFLA_IFNAME */
		8, 0, 4, 0, 0xdc, 5, 0, 0,                          /* IFLA_MTU 1500 */
	};

	memcpy(m, t, 48);
	memcpy(m + 24, &flags, 4);
}

#define UP 0x1u
#define LOWER_UP 0x10000u

static void test_addr_del_add(void **state)
{
	uint8_t m[48];
	rn_hlink_ev ev[4];

	(void)state;
	assert_int_equal(rn_hlink_parse(del_addr, sizeof(del_addr), ev, 4), 1);
	assert_int_equal(ev[0].type, RN_HLINK_ADDR_DEL);
	assert_int_equal(ev[0].ifindex, 3);
	assert_int_equal(ev[0].ip, 0xc6120201u);
	assert_int_equal(ev[0].prefix, 24);
	memcpy(m, del_addr, sizeof(m));
	m[4] = 20; /* RTM_NEWADDR */
	assert_int_equal(rn_hlink_parse(m, sizeof(m), ev, 4), 1);
	assert_int_equal(ev[0].type, RN_HLINK_ADDR_ADD);
	assert_int_equal(ev[0].ip, 0xc6120201u);
}

/* RTM_DELADDR: 2001:2:0:2::1/64 on interface 3, IFA_ADDRESS alone, as the kernel sends IPv6 */
static const uint8_t del_addr6[44] = {
	0x2c, 0, 0, 0, 21, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0,     /* nlmsghdr: len 44, type 21 */
	10, 64, 0x80, 0, 3, 0, 0, 0,                            /* AF_INET6, /64, permanent, 3 */
	20, 0, 1, 0, 0x20, 0x01, 0, 2, 0, 0, 0, 2,              /* IFA_ADDRESS 2001:2:0:2:: */
	0, 0, 0, 0, 0, 0, 0, 1,                                 /* ...:0:0:0:1 */
};

static void test_addr6(void **state)
{
	static const uint8_t want[16] = { 0x20, 0x01, 0, 2, 0, 0, 0, 2, 0, 0, 0, 0, 0, 0, 0, 1 };
	uint8_t m[44];
	rn_hlink_ev ev[2];
	rn_addr a;

	(void)state;
	assert_int_equal(rn_hlink_parse(del_addr6, sizeof(del_addr6), ev, 2), 1);
	assert_int_equal(ev[0].type, RN_HLINK_ADDR_DEL);
	assert_int_equal(ev[0].ifindex, 3);
	assert_int_equal(ev[0].v6, 1);
	assert_int_equal(ev[0].ip, 0);
	assert_int_equal(ev[0].prefix, 64);
	assert_memory_equal(ev[0].ip6, want, 16);
	a = rn_hlink_addr(&ev[0]);
	assert_true(a.v6 && a.scope == 0 && memcmp(a.ip6, want, 16) == 0);
	/* added: reported, unless still tentative (duplicate detection): it cannot be bound yet */
	memcpy(m, del_addr6, sizeof(m));
	m[4] = 20;
	assert_int_equal(rn_hlink_parse(m, sizeof(m), ev, 2), 1);
	assert_int_equal(ev[0].type, RN_HLINK_ADDR_ADD);
	m[18] = 0x40; /* IFA_F_TENTATIVE */
	assert_int_equal(rn_hlink_parse(m, sizeof(m), ev, 2), 0);
	m[18] = 0x08; /* IFA_F_DADFAILED */
	assert_int_equal(rn_hlink_parse(m, sizeof(m), ev, 2), 0);
	/* a tentative address removed is still news */
	memcpy(m, del_addr6, sizeof(m));
	m[18] = 0x40;
	assert_int_equal(rn_hlink_parse(m, sizeof(m), ev, 2), 1);
	/* link-local: the event's interface is the address's scope */
	m[28] = 0xfe;
	m[29] = 0x80;
	m[30] = m[31] = m[35] = 0;
	assert_int_equal(rn_hlink_parse(m, sizeof(m), ev, 2), 1);
	a = rn_hlink_addr(&ev[0]);
	assert_true(rn_addr_link_local(a));
	assert_int_equal(a.scope, 3);
}

static void test_point_to_point(void **state)
{
	uint8_t m[48];
	rn_hlink_ev ev[1];

	(void)state;
	/* IFA_ADDRESS names the far end: the local address is IFA_LOCAL's, in either order */
	memcpy(m, del_addr, sizeof(m));
	m[31] = 9;
	assert_int_equal(rn_hlink_parse(m, sizeof(m), ev, 1), 1);
	assert_int_equal(ev[0].ip, 0xc6120201u);
	memcpy(m + 24, del_addr + 32, 8);
	memcpy(m + 32, del_addr + 24, 8);
	m[39] = 9; /* now IFA_LOCAL .1 first, then IFA_ADDRESS .9 */
	assert_int_equal(rn_hlink_parse(m, sizeof(m), ev, 1), 1);
	assert_int_equal(ev[0].ip, 0xc6120201u);
}

static void test_link_states(void **state)
{
	static const struct {
		uint32_t flags;
		int up;
	} cases[] = {
		{ UP | 0x2 | 0x40 | 0x1000 | LOWER_UP, 1 }, /* up, running, carrier */
		{ 0x2 | 0x1000, 0 },                        /* set down */
		{ UP | 0x2 | 0x1000, 0 },                   /* up, no carrier (peer down) */
		{ 0x2 | LOWER_UP, 0 },                      /* carrier but not up */
	};
	uint8_t m[48];
	rn_hlink_ev ev[1];

	(void)state;
	for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
		new_link(m, cases[i].flags);
		assert_int_equal(rn_hlink_parse(m, sizeof(m), ev, 1), 1);
		assert_int_equal(ev[0].type, RN_HLINK_LINK);
		assert_int_equal(ev[0].ifindex, 3);
		assert_int_equal(ev[0].up, cases[i].up);
		assert_string_equal(ev[0].name, "r2");
	}
	new_link(m, UP | LOWER_UP);
	m[4] = 17; /* RTM_DELLINK: gone, whatever its flags said */
	assert_int_equal(rn_hlink_parse(m, sizeof(m), ev, 1), 1);
	assert_int_equal(ev[0].type, RN_HLINK_LINK_DEL);
	assert_int_equal(ev[0].up, 0);
}

static void test_several_and_skipped(void **state)
{
	uint8_t buf[5 * 48 + 20];
	rn_hlink_ev ev[8];
	size_t n = 0;

	(void)state;
	memcpy(buf + n, del_addr, 48); /* IPv6 with a 4-byte address: no address, skipped */
	buf[n + 16] = 10;
	n += 48;
	memcpy(buf + n, del_addr, 48); /* a route (RTM_NEWROUTE): skipped */
	buf[n + 4] = 24;
	n += 48;
	memcpy(buf + n, del_addr, 48); /* taken */
	n += 48;
	new_link(buf + n, UP | LOWER_UP); /* taken */
	n += 48;
	memcpy(buf + n, del_addr, 48); /* a broken attribute: no address, no event */
	buf[n + 24] = 200; /* IFA_ADDRESS longer than the message */
	n += 48;
	memcpy(buf + n, del_addr, 20); /* cut short: parsing stops */
	n += 20;
	assert_int_equal(rn_hlink_parse(buf, n, ev, 8), 2);
	assert_int_equal(ev[0].type, RN_HLINK_ADDR_DEL);
	assert_int_equal(ev[1].type, RN_HLINK_LINK);
	assert_int_equal(ev[1].up, 1);
	/* no more than max */
	assert_int_equal(rn_hlink_parse(buf, n, ev, 1), 1);
	/* a header whose length is below its own size, or nothing at all */
	memcpy(buf, del_addr, 48);
	buf[0] = 8;
	assert_int_equal(rn_hlink_parse(buf, 48, ev, 8), 0);
	assert_int_equal(rn_hlink_parse(buf, 0, ev, 8), 0);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_addr_del_add),
		cmocka_unit_test(test_addr6),
		cmocka_unit_test(test_point_to_point),
		cmocka_unit_test(test_link_states),
		cmocka_unit_test(test_several_and_skipped),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
