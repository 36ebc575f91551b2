/*
 * rn_replay.h - the cookies a listener has already accepted.
 *
 * A cookie stays valid for its whole life (10 s), but a connection may be
 * over and freed long before: without memory, a COOKIE_ECHO recorded on the
 * wire and sent again would build the same connection (same ids, same
 * sequence numbers) and have its recorded data accepted a second time.  So a
 * listener remembers the server id of every cookie it accepted until the
 * cookie expires, and refuses a second use.
 *
 * Memory is fixed: a ring of the last RN_REPLAY_SLOTS accepts in the order
 * they happened, indexed by a hash of the id.  When the ring is full of
 * cookies still alive, the oldest entry is overwritten and its issue time
 * becomes a floor: a cookie issued at or before the floor is refused
 * whatever its id (every accepted cookie issued after the floor is still in
 * the ring).  Under a very high accept rate a cookie's useful life thus
 * shrinks to what the ring covers (4096 accepts), never does a replay pass.
 * Server ids come from the listener's rng and are MAC-protected in the
 * cookie, so nobody can aim at a hash bucket.
 */
#ifndef RN_REPLAY_H
#define RN_REPLAY_H

#include <stdint.h>

enum {
	RN_REPLAY_SLOTS = 4096,   /* accepts remembered (power of two, < 65535) */
	RN_REPLAY_BUCKETS = 4096, /* hash buckets over them (power of two) */
};

typedef struct rn_replay {
	uint64_t id[RN_REPLAY_SLOTS];   /* accepted server id; 0 = free slot */
	uint32_t t_ms[RN_REPLAY_SLOTS]; /* its cookie's issue time, ms (wrapping) */
	uint16_t next[RN_REPLAY_SLOTS]; /* hash chain */
	uint16_t head[RN_REPLAY_BUCKETS];
	uint32_t pos;                   /* accepts so far: the ring's write position */
	uint32_t floor_ms;              /* cookies issued at or before it are refused... */
	uint8_t has_floor;              /* ...once an unexpired entry was overwritten */
	uint64_t evictions;             /* unexpired entries overwritten (floor raised) */
} rn_replay;

void rn_replay_init(rn_replay *r);

/*
 * True if the cookie (server id, issue time t_ms) was accepted before or is
 * older than the floor.  Times are ms on the listener's wrapping clock;
 * cookies older than life_ms are the cookie check's business.
 */
int rn_replay_seen(const rn_replay *r, uint64_t id, uint32_t t_ms, uint32_t now_ms,
		   uint32_t life_ms);

/* Records an accepted cookie (after rn_replay_seen said no). */
void rn_replay_add(rn_replay *r, uint64_t id, uint32_t t_ms, uint32_t now_ms, uint32_t life_ms);

/* Forgets an accepted cookie: the driver could not take the connection and the client will retry. */
void rn_replay_forget(rn_replay *r, uint64_t id);

#endif
