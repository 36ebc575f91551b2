/*
 * rn_hpeer.h - the process's peers: one rail monitor (rn_peer, rn_core.h)
 * for the connections between the same rail sockets of this process and of
 * one remote process (docs/PROTOCOL.md, "Rail health per peer").
 *
 * A driver joins each connection once it is established and takes it out
 * once it is closed (a closed keeper judges nothing), at the latest before
 * freeing it; a peer lives while it has members.  No I/O, no locks:
 * the driver serialises every call, and every call on the members' rn_conn
 * (the engine's host lock).
 */
#ifndef RN_HPEER_H
#define RN_HPEER_H

#include <stdint.h>

#include "rn_core.h"
#include "rn_htab.h"

typedef struct rn_hpeers {
	rn_htab tab;       /* hash of the rail pairs -> the first peer with that hash */
	uint32_t npeers;
} rn_hpeers;

/* An empty set.  0 or -ENOMEM. */
int rn_hpeers_init(rn_hpeers *t);
/* Frees the set (its peers must have no members left). */
void rn_hpeers_free(rn_hpeers *t);
/*
 * Makes established connection c a member of the peer of its rails, made
 * if there is none.  0, -ENOMEM, or -EINVAL (not established, or already
 * a member).
 */
int rn_hpeer_join(rn_hpeers *t, rn_conn *c, uint64_t now_ns);
/*
 * Takes c out of its peer (nothing if it is in none), freeing the peer if
 * it was the last.  Returns the member that became the peer's keeper: the
 * driver runs its timers now (an idle member armed none), or NULL.
 */
rn_conn *rn_hpeer_leave(rn_hpeers *t, rn_conn *c);

#endif
