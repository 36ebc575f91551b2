/*
 * rn_addr.c - rail addresses of either family (rn_addr.h).
 */
#include <string.h>

#include "rn_addr.h"
#include "rn_rail.h"

static int zero16(const uint8_t b[16])
{
	uint8_t any = 0;

	for (int i = 0; i < 16; i++)
		any |= b[i];
	return any == 0;
}

int rn_addr_unset(rn_addr a) { return a.port == 0 || (a.v6 ? zero16(a.ip6) : a.ip == 0); }

int rn_addr_link_local(rn_addr a) { return a.v6 && a.ip6[0] == 0xfe && (a.ip6[1] & 0xc0) == 0x80; }

static uint32_t word(const uint8_t *p)
{
	return (uint32_t)p[0] << 24 | (uint32_t)p[1] << 16 | (uint32_t)p[2] << 8 | p[3];
}

uint32_t rn_addr_fold(rn_addr a, unsigned bits)
{
	uint32_t h = 0;

	if (!a.v6)
		return a.ip;
	for (unsigned i = 0; i < 4 && 32 * i < bits; i++)
		h = (h ^ word(a.ip6 + 4 * i)) * UINT32_C(0x9e3779b1) + i;
	return h;
}

rn_addr rn_addr_of_rail(const rn_rail_addr *r)
{
	rn_addr a = { .ip = r->ip, .port = r->port, .v6 = r->v6, .scope = r->scope };

	if (r->v6)
		memcpy(a.ip6, r->ip6, sizeof(a.ip6));
	return a;
}

/* Whether the first `prefix` bits of two IPv6 addresses agree (prefix 1..128). */
static int same_prefix6(const uint8_t *a, const uint8_t *b, unsigned prefix)
{
	unsigned whole = prefix / 8, rest = prefix % 8;

	if (memcmp(a, b, whole) != 0)
		return 0;
	return rest == 0 || ((a[whole] ^ b[whole]) & (uint8_t)(0xff << (8 - rest))) == 0;
}

int rn_addr_rails_share(const rn_rail_addr *a, const rn_rail_addr *b)
{
	uint8_t prefix = a->prefix < b->prefix ? a->prefix : b->prefix;

	if (a->v6 != b->v6)
		return 0;
	if (!a->v6)
		return rn_rail_same_subnet(a->ip, b->ip, prefix);
	return prefix > 0 && prefix <= 128 && same_prefix6(a->ip6, b->ip6, prefix);
}

int rn_addr_in_rail(const rn_rail_addr *r, rn_addr a)
{
	if (a.v6 != r->v6)
		return 0;
	if (!a.v6)
		return rn_rail_same_subnet(r->ip, a.ip, r->prefix);
	if (rn_addr_link_local(a) && a.scope && r->scope && a.scope != r->scope)
		return 0;
	return r->prefix > 0 && r->prefix <= 128 && same_prefix6(r->ip6, a.ip6, r->prefix);
}

int rn_addr_rail_valid(const rn_rail_addr *r)
{
	static const uint8_t mapped[12] = { 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0xff, 0xff };

	if (r->port == 0 || r->prefix == 0)
		return 0;
	if (!r->v6)
		return r->prefix <= 32 && r->ip != 0;
	/* one form per address: an IPv4 rail is an IPv4 entry, never ::ffff:a.b.c.d */
	return r->prefix <= 128 && r->ip == 0 && !zero16(r->ip6) && r->ip6[0] != 0xff &&
	       memcmp(r->ip6, mapped, sizeof(mapped)) != 0;
}
