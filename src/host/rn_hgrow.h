/*
 * rn_hgrow.h - a polling driver's rails that get their first address while
 * it runs (the BTL, the provider; the engine's own is rn_netlink.c).
 *
 * A listed interface with no address at start is a waiting rail
 * (rn_rails_discover_any: ip 0), with no socket (rn_hpoll_open skips
 * it).  When the kernel announces its first address (rn_hgrow_event, from
 * the rn_hfollow each hook), the rail takes it, and the next pass
 * (rn_hgrow_run) opens a socket on it, offers it to every established
 * link's peer (rn_hconns_rail_add: RAILS) and to the handshakes the
 * listener answers from then on.  The kernel announces an address before
 * it adds the address's local route, which bind() checks: a rail not
 * bindable yet is tried again every RN_HGROW_AGAIN_NS, RN_HGROW_TRIES
 * times at most.
 *
 * A rail whose address goes while its interface has another of the family,
 * or gets another later (rn_hfollow tells rn_hgrow_moved), moves there at
 * the next pass: its socket is bound anew at the same index
 * (rn_hpoll_rail_move), and every link tells its peer the new address
 * (rn_hconns_rail_readdr).  Either family: a waiting rail takes its first
 * IPv4 or global IPv6 address, a moving one stays in its family.
 *
 * No locks: the driver serialises every call.
 */
#ifndef RN_HGROW_H
#define RN_HGROW_H

#include <stdint.h>

#include "rn_core.h"
#include "rn_hconn.h"
#include "rn_hfollow.h"
#include "rn_hlink.h"
#include "rn_hpoll.h"
#include "rn_hrail.h"

#define RN_HGROW_AGAIN_NS UINT64_C(2000000)
#define RN_HGROW_TRIES 50

typedef struct rn_hgrow {
	rn_rail_info *rails;        /* the driver's rails (open->rails is the same array) */
	const rn_hpoll_rails *open; /* how the driver opened its sockets */
	rn_hconns *links;           /* its links, and its sockets (links->io) */
	rn_listener *lis;           /* its listener */
	rn_hfollow *follow;         /* how the driver follows the kernel (which rails lost their address) */
	uint32_t pending;           /* rails whose address came, their socket not open yet */
	uint32_t moving;            /* rails whose socket moves to to[i] at the next pass */
	rn_rail_info from[RN_MAX_RAILS], to[RN_MAX_RAILS]; /* a moving rail, before and after */
	uint8_t tries[RN_MAX_RAILS];
	uint64_t next_ns;           /* rn_hgrow_run: the next try */
} rn_hgrow;

/*
 * One kernel event (rn_hfollow.each, each_arg the rn_hgrow): a waiting
 * rail's first address makes it pending.
 */
void rn_hgrow_event(void *g, const rn_hlink_ev *e);
/* Rail i can move to `to` (rn_hfollow.moved, moved_arg the rn_hgrow): at the next pass. */
void rn_hgrow_moved(void *g, int i, const rn_rail_info *to);
/* From the pass: pending rails open, moving ones move; every link and the listener hear (logged). */
void rn_hgrow_run(rn_hgrow *g, uint64_t now);

#endif
