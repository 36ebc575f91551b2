/*
 * test_hfollow.c - a driver's rails as the kernel's events leave them
 * (src/host/rn_hfollow.h): an address removed or a link down makes its
 * rail unusable with that cause, told once; the rail is usable again only
 * when both address and link are back; events about other interfaces or
 * other addresses change nothing; without a socket nothing is read.
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

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_follow),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
