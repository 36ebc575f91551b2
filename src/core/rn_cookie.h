/*
 * rn_cookie.h - the stateless handshake cookie.
 *
 * A server answers INIT without keeping anything: what it needs later (its
 * connection id and initial sequence number, chosen now) travels to the
 * client and back in a cookie, with the time it was made and a MAC under the
 * listener's secret over all of it, the client's parameters and the client's
 * address.  Only a COOKIE_ECHO with a valid, fresh cookie creates state.
 *
 * Layout (RN_COOKIE_LEN = 32): u64 server id, u32 server isn, u32 time in
 * ms (wrapping), 16-byte SipHash-x-2-4 MAC (libsodium).
 */
#ifndef RN_COOKIE_H
#define RN_COOKIE_H

#include <stdint.h>

#include "rn_core.h"
#include "rn_wire.h"

typedef struct rn_cookie {
	uint64_t id;
	uint32_t isn;
	uint32_t t_ms;
} rn_cookie;

/* Writes a cookie binding ck to the client's hello parameters and address. */
void rn_cookie_make(uint8_t out[RN_COOKIE_LEN], const uint8_t secret[RN_COOKIE_SECRET_LEN],
		    const rn_cookie *ck, const rn_hello *client, rn_addr from);

/*
 * Checks a cookie echoed with the client's parameters from `from`.  Returns
 * 0 and fills ck if the MAC is right and it is at most life_ms old.
 */
int rn_cookie_check(rn_cookie *ck, const uint8_t secret[RN_COOKIE_SECRET_LEN],
		    const uint8_t in[RN_COOKIE_LEN], const rn_hello *client, rn_addr from,
		    uint32_t now_ms, uint32_t life_ms);

#endif
