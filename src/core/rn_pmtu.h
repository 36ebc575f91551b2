/*
 * rn_pmtu.h - the datagram size of one rail, found by probing (in the spirit
 * of RFC 8899, datagram packetization-layer path MTU discovery).
 *
 * A rail starts at a base size it assumes works (the configured datagram
 * size) and probes upward with padded probes; only the peer's
 * acknowledgement of a probe confirms a size.  ICMP is never an input here:
 * no function below takes one, so "fragmentation needed" (forged or not)
 * cannot change a size.
 *
 *   SEARCH  looking for a bigger size: the ceiling first (most rails work at
 *           their interface's MTU: one round trip), then a binary search
 *           between lo (works) and hi (does not), to within RN_PMTU_STEP.
 *   DONE    at the largest size found; after RN_PMTU_REPROBE_NS (or at once
 *           when the ceiling rises) it searches upward again: a rail whose
 *           MTU grew is used at its new size.
 *   HOLE    datagrams of the confirmed size stopped getting through while
 *           small ones pass (an MTU black hole, judged by the connection or
 *           by probes at that size going unanswered).  The rail's size is
 *           what a downward search confirms (0 until then); the old size is
 *           tried again every RN_PMTU_HEAL_NS, so it is back within that
 *           (plus a round trip) of the heal.
 *
 * One probe is in flight at a time; one that is not acknowledged within the
 * caller's timeout is lost, and a size fails after RN_PMTU_TRIES losses in a
 * row (a random loss does not shrink a rail).  The answer to the last probe
 * taken as lost still confirms its size when it comes (a queue that held it
 * longer than the timeout: a rail saturated both ways at start), except in
 * a hole, where an answer to a probe sent before says nothing of now.  Pure
 * state, no I/O, time passed in: the caller sends the probes and feeds back
 * what happened.
 */
#ifndef RN_PMTU_H
#define RN_PMTU_H

#include <stdint.h>

enum {
	RN_PMTU_FLOOR = 256, /* smallest size searched (RN_MIN_DGRAM) */
	RN_PMTU_STEP = 32,   /* a search ends when works and fails are this close, bytes */
	RN_PMTU_TRIES = 2,   /* unanswered probes in a row before a size is taken as failing */
};

/* 10 min: RFC 8899's PMTU_RAISE_TIMER; a probe every 10 min costs nothing. */
#define RN_PMTU_REPROBE_NS UINT64_C(600000000000)
/* 250 ms: in a hole the old size is retried this often, so it is back within 1 s of the heal. */
#define RN_PMTU_HEAL_NS UINT64_C(250000000)

typedef enum rn_pmtu_state {
	RN_PMTU_SEARCH = 0,
	RN_PMTU_DONE = 1,
	RN_PMTU_HOLE = 2,
} rn_pmtu_state;

typedef struct rn_pmtu {
	uint32_t ceiling;   /* largest size ever tried (the interface's, or the peer's limit) */
	uint32_t size;      /* the rail's working size: confirmed, or the base (0: none in a hole) */
	uint32_t lo, hi;    /* search: lo works, hi fails (ceiling + 1: not tried yet) */
	uint32_t target;    /* HOLE: the size before it, retried every RN_PMTU_HEAL_NS */
	uint32_t probe;     /* size of the probe in flight (0: none) */
	uint32_t probe_id;  /* its id, echoed by the acknowledgement */
	uint32_t lost, lost_id; /* the last probe taken as lost (0: none), whose late answer still counts */
	uint32_t next_id;
	uint64_t probe_ns;  /* when it went */
	uint64_t next_ns;   /* DONE: next upward search; HOLE: next try of the old size */
	uint32_t holes;     /* times the rail went into a hole */
	uint8_t tries;      /* probes of this size unanswered in a row */
	uint8_t state;      /* rn_pmtu_state */
} rn_pmtu;

/*
 * Starts at `base` (assumed to work) with `ceiling` the largest size to try
 * (base <= ceiling).  The first probe is due at once when ceiling > base.
 */
void rn_pmtu_init(rn_pmtu *p, uint32_t base, uint32_t ceiling, uint64_t now_ns);

/* The rail's working size in bytes (UDP payload); 0 in a hole before a size is confirmed. */
static inline uint32_t rn_pmtu_size(const rn_pmtu *p) { return p->size; }

/*
 * A probe to send now: returns its size (the caller pads a datagram to
 * exactly that) and sets *id, which the peer's acknowledgement must echo;
 * 0 if none is due (one in flight, or nothing to look for yet).
 */
uint32_t rn_pmtu_next_probe(rn_pmtu *p, uint64_t now_ns, uint32_t *id);

/* When rn_pmtu_on_timer has work: the probe's loss or the next probe; UINT64_MAX if never. */
uint64_t rn_pmtu_expiry(const rn_pmtu *p, uint64_t timeout_ns);

/* A probe unanswered for timeout_ns is lost. */
void rn_pmtu_on_timer(rn_pmtu *p, uint64_t now_ns, uint64_t timeout_ns);

/*
 * The peer acknowledged probe `id` of `size` bytes (the one in flight, or
 * the last taken as lost).  Returns 1 if the rail's working size changed,
 * 0 if not (also for a stale or unknown id).
 */
int rn_pmtu_on_ack(rn_pmtu *p, uint32_t id, uint32_t size, uint64_t now_ns);

/*
 * Datagrams of the working size are lost while smaller ones arrive (the
 * connection's size verdict).  The rail goes into HOLE: its size is 0 until
 * a smaller probe is acknowledged.  Returns 1 if the size changed.
 */
int rn_pmtu_on_hole(rn_pmtu *p, uint64_t now_ns);

/* The ceiling changed (the peer's limit, a new interface MTU): a rise searches at once. */
void rn_pmtu_set_ceiling(rn_pmtu *p, uint32_t ceiling, uint64_t now_ns);

#endif
