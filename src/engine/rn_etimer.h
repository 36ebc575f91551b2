/*
 * rn_etimer.h - the engine's precise timers: one min-heap of deadlines on
 * one timerfd (CLOCK_MONOTONIC, absolute), re-armed only when the earliest
 * deadline moves earlier.
 *
 * Every connection's timer (ACK delays of hundreds of microseconds, RTOs,
 * stalls) and each port's hand-off look are one of these.  libevent's own
 * precise timers re-armed a timerfd on every turn of the loop, two system
 * calls a turn, a dozen per connection opened and closed; the engine's
 * libevent base now keeps only coarse timers (status snapshots, netlink
 * retries), which need no timerfd at all.
 *
 * A deadline that moves later leaves the timerfd where it is: the early
 * firing finds nothing due and arms it for the new earliest.  Timers are set
 * and fire under the host lock; the fire functions run with it held, then
 * the engine services what they made dirty.
 */
#ifndef RN_ETIMER_H
#define RN_ETIMER_H

#include <stdint.h>

typedef struct rn_etimer rn_etimer;
typedef void rn_etimer_fn(rn_etimer *t, uint64_t now);

struct rn_etimer {
	uint64_t at;     /* its deadline (rn_now_ns), UINT64_MAX: not set */
	uint32_t pos;    /* its place in the heap plus one, 0: not in it */
	rn_etimer_fn *fn;
};

/* A timer not set, firing fn when it is. */
static inline void rn_etimer_prep(rn_etimer *t, rn_etimer_fn *fn)
{
	t->at = UINT64_MAX;
	t->pos = 0;
	t->fn = fn;
}

/* Sets t to fire at `at` (rn_now_ns; past: at the engine's next turn), UINT64_MAX: unsets it. */
void rn_etimer_set(rn_etimer *t, uint64_t at);

/* The earliest deadline set, UINT64_MAX: none (host lock). */
uint64_t rn_etimer_next(void);

/*
 * Fires every timer due at now, earliest first, each once (one its fire
 * function sets again for a time already past waits for the next run, as a
 * libevent timer would); how many fired.  The engine runs it when the
 * timerfd fires (host lock).
 */
int rn_etimer_run(uint64_t now);

/* The timerfd and its libevent event, at engine start. */
int rn_etimer_init(void);

/* In a forked child: the parent's timers are not the child's (rn_engine.c). */
void rn_etimer_forget(void);

#endif
