/*
 * rn_hpass.h - one pass of a polling driver (the Open MPI BTL's progress,
 * the libfabric provider's): the kit's skeleton, the driver's hooks for
 * what differs.
 *
 * A pass, in this order:
 *  1. time given to the core never goes back (*core_now rises to now);
 *  2. the rail sockets are read, at most RN_HPOLL_RX_ROUNDS turns, into
 *     the links (rn_hdisp); the clock is read again if anything came;
 *  3. the kernel's word on the rails (rn_hfollow_poll), and a rail that
 *     got its first address opened and offered (rn_hgrow_run);
 *  4. the verdict re-read: a link timer due with a rail verdict pending
 *     while the sockets still hold data (rn_hconns_verdict_due) reads
 *     them once more;
 *  5. the driver's own timers (connect attempts, nudges);
 *  6. each live link: an accepted one silent past RN_HPOLL_UNBOUND_NS is
 *     reset, the driver's check, its due timers (rn_hconn_timer), and when
 *     it has work its service: the driver's serve, a flush of at most
 *     RN_HPOLL_FLUSH_BUDGET datagrams, the driver's settle, the monitor;
 *  7. the queued datagrams go out, the dead links are reaped, the driver's
 *     after hook.
 *
 * No locks: the driver serialises every call.
 */
#ifndef RN_HPASS_H
#define RN_HPASS_H

#include <stdint.h>

#include "rn_hconn.h"
#include "rn_hfollow.h"
#include "rn_hgrow.h"

/* 10 s: an accepted peer says who it is within a round trip; a stranger never does */
#define RN_HPASS_UNBOUND_NS UINT64_C(10000000000)

/*
 * What differs between the drivers.  arg is rn_hpass_run's; link hooks get
 * the link's rn_hconn (the first member of the driver's link).  NULL hooks
 * are skipped unless said otherwise.
 */
typedef struct rn_hpass_ops {
	uint64_t (*now)(void *arg);  /* the clock, never below *core_now (required) */
	/* the driver's timers that are not a link's: connect attempts, nudges */
	void (*timers)(void *arg, uint64_t now);
	/* 1: link v was accepted and has not said who it is (rn_hpoll_accept.unbound) */
	int (*unbound)(const void *v);
	/* link h is reset for no hello within RN_HPASS_UNBOUND_NS: count it, say so */
	void (*on_unbound_late)(void *arg, rn_hconn *h, uint64_t now);
	/* link h's own checks before its timers run (a stall, an idle buffer) */
	void (*check)(void *arg, rn_hconn *h, uint64_t now);
	/* 1: link h has work beyond h->dirty (a send queue, unread input) */
	int (*busy)(void *arg, rn_hconn *h);
	/*
	 * Link h's turn before its flush: deliver, hello, push (required).
	 * Clears h->dirty when it took the link's input.  Returns the events
	 * (messages delivered or sent) it made.
	 */
	int (*serve)(void *arg, rn_hconn *h, uint64_t now);
	/* after h's flush: its deaths, closes, reconnects */
	void (*settle)(void *arg, rn_hconn *h, uint64_t now);
	/* the end of the pass, after the reap (statistics, warnings) */
	void (*after)(void *arg, uint64_t now);
	/* the receive (tests); NULL: rn_hset_pass */
	int (*recv)(rn_hset *io, rn_hrxbuf *rx, int rounds, uint64_t *now,
		    rn_hsock_input_fn fn, void *arg, uint32_t *more);
} rn_hpass_ops;

/* A driver's pass: what the kit reads and writes, and the driver's hooks. */
typedef struct rn_hpass {
	rn_hconns *links;    /* its io and lk are the rail sockets and the monitor */
	rn_hrxbuf *rx;
	rn_hdisp *disp;      /* where datagrams go */
	rn_hfollow *follow;  /* NULL: none */
	rn_hgrow *grow;      /* rails that get their first address; NULL: none */
	uint64_t *core_now;  /* the latest time given to the core */
	uint32_t *rx_more;   /* sockets the last receive left data in */
	const rn_hpass_ops *ops;
} rn_hpass;

/*
 * One pass at time now (the driver's clock), hooks called with arg.
 * Returns the datagrams read plus the events the serve hooks made: 0 when
 * nothing happened.
 */
int rn_hpass_run(const rn_hpass *p, void *arg, uint64_t now);

#endif
