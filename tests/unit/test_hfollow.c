/*
 * test_hfollow.c - a driver's rails as the kernel's events leave them
 * (src/host/rn_hfollow.h): an address removed or a link down makes its
 * rail unusable with that cause, told once; the rail is usable again only
 * when both address and link are back; events about other interfaces or
 * other addresses change nothing; without a socket nothing is read.  IPv6
 * rails alike: an IPv4 event never matches them nor the other way round,
 * and a link-local rail is its address on its own interface only.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <string.h>

#include <cmocka.h>

#include "rn_hfollow.h"

typedef struct heard {
	int n;
	int rail[16], usable[16];
	rn_cause cause[16];
} heard;

static int hook(void *arg, int rail, int usable, rn_cause cause)
{
	heard *h = arg;

	assert_true(h->n < 16);
	h->rail[h->n] = rail;
	h->usable[h->n] = usable;
	h->cause[h->n] = cause;
	h->n++;
	return 3; /* connections told */
}

static const rn_rail_info rails[2] = {
	{ .name = "r1", .ip = 0xc6120101, .prefix = 24, .mtu = 1500, .ifindex = 7 },
	{ .name = "r2", .ip = 0xc6120201, .prefix = 24, .mtu = 1500, .ifindex = 9 },
};

static void ev(rn_hfollow *f, rn_hlink_type t, int ifindex, uint32_t ip, int up)
{
	rn_hlink_ev e = { .type = t, .ifindex = ifindex, .ip = ip, .prefix = 24,
			  .up = (uint8_t)up };

	rn_hfollow_apply(f, &e);
}

static void expect(const heard *h, int i, int rail, int usable, rn_cause cause)
{
	assert_true(i < h->n);
	assert_int_equal(h->rail[i], rail);
	assert_int_equal(h->usable[i], usable);
	assert_int_equal(h->cause[i], cause);
}

static void test_follow(void **state)
{
	rn_hfollow f;
	heard h = { 0 };

	(void)state;
	rn_hfollow_init(&f, rails, 2, hook, &h);
	assert_int_equal(f.fd, -1);
	/* not ours: another interface, another address on ours */
	ev(&f, RN_HLINK_ADDR_DEL, 8, rails[0].ip, 0);
	ev(&f, RN_HLINK_ADDR_DEL, 7, 0xc6120102, 0);
	ev(&f, RN_HLINK_LINK, 7, 0, 1); /* up and already usable: no news */
	assert_int_equal(h.n, 0);
	/* rail 0's address goes: down, once */
	ev(&f, RN_HLINK_ADDR_DEL, 7, rails[0].ip, 0);
	ev(&f, RN_HLINK_ADDR_DEL, 7, rails[0].ip, 0);
	assert_int_equal(h.n, 1);
	expect(&h, 0, 0, 0, RN_CAUSE_ADDR_GONE);
	/* its link goes too, then the address comes back: still down (no news) */
	ev(&f, RN_HLINK_LINK, 7, 0, 0);
	ev(&f, RN_HLINK_ADDR_ADD, 7, rails[0].ip, 0);
	assert_int_equal(h.n, 1);
	/* the link back: usable again, for the link */
	ev(&f, RN_HLINK_LINK, 7, 0, 1);
	assert_int_equal(h.n, 2);
	expect(&h, 1, 0, 1, RN_CAUSE_LINK_UP);
	/* rail 1's interface removed, then back with its address */
	ev(&f, RN_HLINK_LINK_DEL, 9, 0, 0);
	assert_int_equal(h.n, 3);
	expect(&h, 2, 1, 0, RN_CAUSE_LINK_DOWN);
	ev(&f, RN_HLINK_LINK, 9, 0, 1);
	assert_int_equal(h.n, 4);
	expect(&h, 3, 1, 1, RN_CAUSE_LINK_UP);
	ev(&f, RN_HLINK_ADDR_ADD, 9, rails[1].ip, 0); /* was never gone */
	assert_int_equal(h.n, 4);
	/* no socket: reading and polling do nothing */
	rn_hfollow_read(&f);
	rn_hfollow_poll(&f, UINT64_C(1) << 40);
	rn_hfollow_close(&f);
	assert_int_equal(h.n, 4);
}

/* An IPv6 address event on interface ifindex. */
static void ev6(rn_hfollow *f, rn_hlink_type t, int ifindex, const uint8_t ip6[16])
{
	rn_hlink_ev e = { .type = t, .ifindex = ifindex, .prefix = 64, .v6 = 1 };

	memcpy(e.ip6, ip6, 16);
	rn_hfollow_apply(f, &e);
}

static void test_follow6(void **state)
{
	static const uint8_t g1[16] = { 0x20, 0x01, 0, 2, 0, 0, 0, 1, 0, 0, 0, 0, 0, 0, 0, 1 };
	static const uint8_t ll[16] = { 0xfe, 0x80, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 1 };
	rn_rail_info r[3] = {
		{ .name = "r1", .prefix = 64, .mtu = 1500, .ifindex = 7, .v6 = 1 },
		{ .name = "r2", .prefix = 64, .mtu = 1500, .ifindex = 9, .v6 = 1 },
		/* an IPv4 rail on rail 0's interface */
		{ .name = "r1", .ip = 0xc6120101, .prefix = 24, .mtu = 1500, .ifindex = 7 },
	};
	rn_hfollow f;
	heard h = { 0 };
	uint8_t other[16];

	(void)state;
	memcpy(r[0].ip6, g1, 16);
	memcpy(r[1].ip6, ll, 16);
	memcpy(other, g1, 16);
	other[15] = 2;
	rn_hfollow_init(&f, r, 3, hook, &h);
	/* not ours: another address, an IPv4 event with no address, ours on another interface */
	ev6(&f, RN_HLINK_ADDR_DEL, 7, other);
	ev(&f, RN_HLINK_ADDR_DEL, 7, 0, 0);
	ev6(&f, RN_HLINK_ADDR_DEL, 8, g1);
	ev6(&f, RN_HLINK_ADDR_DEL, 7, ll); /* the link-local address is rail 1's, on 9 only */
	assert_int_equal(h.n, 0);
	/* rail 0's IPv6 address goes: rail 0 down at once, the IPv4 rail beside it untouched */
	ev6(&f, RN_HLINK_ADDR_DEL, 7, g1);
	assert_int_equal(h.n, 1);
	expect(&h, 0, 0, 0, RN_CAUSE_ADDR_GONE);
	ev6(&f, RN_HLINK_ADDR_ADD, 7, g1);
	assert_int_equal(h.n, 2);
	expect(&h, 1, 0, 1, RN_CAUSE_ADDR_BACK);
	/* the link-local rail's address on its own interface */
	ev6(&f, RN_HLINK_ADDR_DEL, 9, ll);
	assert_int_equal(h.n, 3);
	expect(&h, 2, 1, 0, RN_CAUSE_ADDR_GONE);
	/* the IPv4 rail's address goes: only it */
	ev(&f, RN_HLINK_ADDR_DEL, 7, r[2].ip, 0);
	assert_int_equal(h.n, 4);
	expect(&h, 3, 2, 0, RN_CAUSE_ADDR_GONE);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_follow),
		cmocka_unit_test(test_follow6),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
