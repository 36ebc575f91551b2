/*
 * rn_shim_epset.h - what the shim keeps of the program's epoll sets
 * (rn_shim_epset.c) for its waits (rn_shim_poll.c): each set's private set,
 * the rail sockets in it, the ri2n descriptors still connecting, and the
 * listeners registered exclusively.
 */
#ifndef RN_SHIM_EPSET_H
#define RN_SHIM_EPSET_H

#include <stdint.h>
#include <sys/epoll.h>
#include <sys/types.h>

#include "rn_api.h"

#define RN_EP_NESTED UINT64_MAX /* the private set's event for the program's set */
#define RN_EP_RAILS 64          /* rail sockets one wait adds */
#define RN_EP_EXCL 8            /* listeners one set holds exclusively */
/* The private set's event for exclusive listener fd (rail sockets: their number) */
#define RN_EP_XTAG (UINT64_C(1) << 62)
#define RN_EP_IS_X(d) ((d) != RN_EP_NESTED && ((d) & RN_EP_XTAG))

/* A ri2n listener the program registered with EPOLLEXCLUSIVE: in the private set instead. */
typedef struct rn_ep_x {
	int fd;
	uint32_t events;
	uint64_t data;
} rn_ep_x;

/* What one epoll set holds for ri2n: rail sockets added, ri2n descriptors still connecting. */
typedef struct ep_set {
	/*
	 * This set's own number, never reused: ri2n's reports name the set by
	 * it.  (Not the inode: every epoll instance has the same anonymous
	 * inode.)  A descriptor number that epoll_create gives again starts a
	 * new set.
	 */
	uint64_t id;
	int refs;   /* the program's numbers for this set (dups share it) */
	int priv;   /* ri2n's private epoll set around it: -1 until a rail socket joins, -2: none can be */
	int nr, np, nx;
	rn_railref r[RN_EP_RAILS];
	int pending[RN_EP_RAILS];
	rn_ep_x x[RN_EP_EXCL];
} ep_set;

void rn_shim_ep_lock(void);
void rn_shim_ep_unlock(void);
/* Under the lock: the set of epfd, made on demand (make), or NULL. */
ep_set *rn_shim_ep_get(int epfd, int make);
/* Under the lock: adds rail sockets r[0..n) to e's private set, those it does not have yet. */
void rn_shim_ep_add_refs(int epfd, ep_set *e, const rn_railref *r, int n);

/*
 * epoll_ctl for a ri2n listener registered with EPOLLEXCLUSIVE, and for
 * its later MOD or DEL: the call's result (0, or -1 with errno), or
 * RN_EP_PASS if fd is no such listener (the caller does the call).
 */
#define RN_EP_PASS (-2)
int rn_shim_ep_excl_ctl(int epfd, int op, int fd, const struct epoll_event *ev);
/* Under the lock: the program's event for private set event ev of e; 0 if none is due. */
int rn_shim_ep_excl_event(const ep_set *e, const struct epoll_event *ev, struct epoll_event *out);
/* Number fd is being closed: no set holds it exclusively any more. */
void rn_shim_ep_excl_closed(int fd);

#endif
