/*
 * rn_cookie.c - the stateless handshake cookie.
 */
#include <string.h>

#include <sodium/crypto_shorthash_siphash24.h>
#include <sodium/utils.h>

#include "rn_cookie.h"

enum { MAC_LEN = 16, CK_FIXED = 16, ADDR_MAX = 22 /* IPv6 address, port, scope */ };

/* MAC over the cookie's fixed part, the client's parameters and address. */
static void cookie_mac(uint8_t mac[MAC_LEN], const uint8_t secret[RN_COOKIE_SECRET_LEN],
		       const uint8_t fixed[CK_FIXED], const rn_hello *client, rn_addr from)
{
	uint8_t msg[CK_FIXED + RN_HELLO_FIXED + RN_RAIL_WIRE_MAX * RN_MAX_RAILS + ADDR_MAX];
	size_t n = 0, raw = client->raw_len;

	if (raw > sizeof(msg) - CK_FIXED - ADDR_MAX)
		raw = sizeof(msg) - CK_FIXED - ADDR_MAX; /* cannot happen: hello is bounded */
	memcpy(msg, fixed, CK_FIXED);
	n += CK_FIXED;
	memcpy(msg + n, client->raw, raw);
	n += raw;
	if (from.v6) { /* its 16 bytes, port and (link-local) interface */
		memcpy(msg + n, from.ip6, 16);
		rn_put16(msg + n + 16, from.port);
		rn_put32(msg + n + 18, from.scope);
		n += ADDR_MAX;
	} else {
		rn_put32(msg + n, from.ip);
		rn_put16(msg + n + 4, from.port);
		n += 6;
	}
	crypto_shorthash_siphashx24(mac, msg, n, secret);
}

void rn_cookie_make(uint8_t out[RN_COOKIE_LEN], const uint8_t secret[RN_COOKIE_SECRET_LEN],
		    const rn_cookie *ck, const rn_hello *client, rn_addr from)
{
	rn_put64(out, ck->id);
	rn_put32(out + 8, ck->isn);
	rn_put32(out + 12, ck->t_ms);
	cookie_mac(out + CK_FIXED, secret, out, client, from);
}

int rn_cookie_check(rn_cookie *ck, const uint8_t secret[RN_COOKIE_SECRET_LEN],
		    const uint8_t in[RN_COOKIE_LEN], const rn_hello *client, rn_addr from,
		    uint32_t now_ms, uint32_t life_ms)
{
	uint8_t mac[MAC_LEN];

	cookie_mac(mac, secret, in, client, from);
	if (sodium_memcmp(mac, in + CK_FIXED, MAC_LEN) != 0)
		return -1;
	ck->id = rn_get64(in);
	ck->isn = rn_get32(in + 8);
	ck->t_ms = rn_get32(in + 12);
	if (ck->id == 0 || now_ms - ck->t_ms > life_ms)
		return -1;
	return 0;
}
