/*
 * rn_hfollow.h - a driver's rails as the kernel's link and address events
 * leave them: the engine, the BTL and the provider follow their rails with
 * it while they run.
 *
 * A rail is usable while its interface is up with carrier and holds the
 * rail's address.  The driver gives its rails and a hook; rn_hfollow_apply
 * (pure but for the `moved` hook's look at the interface's addresses: the
 * unit test feeds it events) calls the hook when a rail stops
 * or starts being usable, with the cause, and logs it with the number of
 * connections the hook says it told.  The rail sockets stay bound
 * throughout: Linux keeps a UDP socket bound to an address that went away,
 * and it works again once the address is back.  A rail whose address went
 * while its interface has another of the family (not another rail's), or
 * gets one later, has moved: the optional `moved` hook hears where to, and
 * the driver binds its sockets there (rn_hfollow_rebound once it did).
 *
 * No locks: the driver serialises every call.
 */
#ifndef RN_HFOLLOW_H
#define RN_HFOLLOW_H

#include <stdint.h>

#include "rn_core.h"
#include "rn_hlink.h"
#include "rn_hrail.h"

/*
 * Rail `rail` (an index into the rails given) became usable or not for
 * `cause`: the driver tells its connections (rn_conn_rail_gone, _back) and
 * returns how many.
 */
typedef int (*rn_hfollow_fn)(void *arg, int rail, int usable, rn_cause cause);
/* Rail `rail`, its address gone, can move to `to` (the rail at its interface's other address). */
typedef void (*rn_hfollow_move_fn)(void *arg, int rail, const rn_rail_info *to);

typedef struct rn_hfollow {
	int fd;                         /* the rtnetlink socket; -1: none (no events followed) */
	const rn_rail_info *rails;
	int n;
	uint8_t no_addr[RN_MAX_RAILS];  /* the rail's address is gone from its interface */
	uint8_t no_link[RN_MAX_RAILS];  /* its interface is down, without carrier, or gone */
	uint64_t next_ns;               /* rn_hfollow_poll: the next look */
	rn_hfollow_fn changed;
	void *arg;
	/* optional: rn_hfollow_read shows it every event first, with each_arg (new rails open) */
	void (*each)(void *each_arg, const rn_hlink_ev *e);
	void *each_arg;
	rn_hfollow_move_fn moved;       /* optional, with moved_arg */
	void *moved_arg;
} rn_hfollow;

/* Every rail usable, no socket (fd -1): the driver opens one (rn_hlink_open) if it can. */
void rn_hfollow_init(rn_hfollow *f, const rn_rail_info *rails, int n, rn_hfollow_fn changed,
		     void *arg);
/* One event: the rails it concerns change, and the hook hears of each that flips. */
void rn_hfollow_apply(rn_hfollow *f, const rn_hlink_ev *e);
/* Rail i was given another address its interface has (the driver rebound it): usable as far as addresses go. */
void rn_hfollow_rebound(rn_hfollow *f, int i);
/* Reads and applies every event waiting on f->fd (none: nothing). */
void rn_hfollow_read(rn_hfollow *f);
/*
 * For polling drivers, from their pass: rn_hfollow_read at most every
 * RN_HFOLLOW_POLL_NS of the core's time (a system call when it looks).
 */
#define RN_HFOLLOW_POLL_NS UINT64_C(1000000)
void rn_hfollow_poll(rn_hfollow *f, uint64_t now);
/* Opens f's socket for a polling driver; says in the log when it cannot (rails then follow by traffic). */
void rn_hfollow_open(rn_hfollow *f);
/* Closes f's socket, if any. */
void rn_hfollow_close(rn_hfollow *f);

#endif
