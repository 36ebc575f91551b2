/*
 * rn_hmon.h - rail health per peer and dead peers for the drivers that run
 * the core from their callers' progress calls (the Open MPI BTL, the
 * libfabric provider): what the engine does in rn_stream.c, in one place
 * both of them call.
 *
 *  - the peer monitor: each established connection joins the process's
 *    peer of its rail pairs (rn_hpeer.h, docs/PROTOCOL.md "Rail health per
 *    peer"), and leaves once closed or freed; a member that becomes the
 *    keeper must have its timers run at once;
 *  - a dead peer: an ICMP port unreachable read from a rail socket's error
 *    queue is offered to the connections of the driver's table, and taken
 *    by the one whose datagram it quotes (rn_conn_unreachable); once every
 *    rail it sends on has had one, that connection fails with ECONNRESET.
 *
 * No I/O, no locks: the driver serialises every call as it does its calls
 * on the connections.
 */
#ifndef RN_HMON_H
#define RN_HMON_H

#include <stdint.h>

#include "rn_core.h"
#include "rn_hpeer.h"
#include "rn_hsock.h"
#include "rn_htab.h"

typedef struct rn_hmon {
	rn_hpeers peers;
	uint8_t ready;       /* peers initialised (on the first join) */
	uint64_t joined;     /* connections that joined a peer... */
	uint64_t made;       /* ...and peers made for them: fewer when connections share one */
	uint64_t unreach;    /* port unreachables a connection took as its own */
} rn_hmon;

/* Frees the monitor's peers (every connection must have left). */
void rn_hmon_free(rn_hmon *m);
/*
 * Joins c to its peer if it is established and in none yet (nothing
 * otherwise: call it after every service of c).  0, or -ENOMEM.
 */
int rn_hmon_join(rn_hmon *m, rn_conn *c, uint64_t now_ns);
/*
 * Takes c out of its peer once it lingers or closed (force: whatever its state, as
 * before freeing it).  Returns the member that became the peer's keeper,
 * whose timers the driver runs now (rn_conn_expiry), or NULL.
 */
rn_conn *rn_hmon_leave(rn_hmon *m, rn_conn *c, int force);
/*
 * Offers error-queue entry e, read on rail socket idx, to the connections
 * of tab (conn_of gives a value's connection): a port unreachable whose
 * quote one of them sent.  Returns the value of the connection that took
 * it (the driver services it now), or NULL.
 */
void *rn_hmon_unreachable(rn_hmon *m, const rn_htab *tab, rn_conn *(*conn_of)(void *v),
			  int idx, const rn_hsock_err *e, uint64_t now_ns);
/*
 * True if connection c speaks only from addresses in set[0..n): the one
 * its handshake came from and every path's remote rail.  A driver believes
 * a name the peer gives itself (the BTL's modex, the provider's hello)
 * only on that name's own rails.  0 for a connection with no path.
 */
int rn_hmon_rails_in(const rn_conn *c, const rn_addr *set, int n);

#endif
