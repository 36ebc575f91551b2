/*
 * rn_spin.h - how long a waiting thread polls before it sleeps.
 *
 * RI2N_BUSY_POLL_US fixes it (0: never), or RN_BUSY_AUTO (the default) lets
 * each thread learn it, in the manner of the kernel's haltpoll: a thread
 * whose waits end soon after it fell asleep (its peer answers within tens
 * of microseconds, but waking a sleeping CPU costs as much again) polls a
 * little longer next time, doubling from RN_SPIN_MIN_NS up to
 * RN_SPIN_MAX_NS; a wait that outlasts its window by more than
 * RN_SPIN_MAX_NS halves it, down to not polling at all.  A thread whose
 * waits are long never spins; one in a fast exchange rarely sleeps.  A
 * poll that found the event leaves the window as it is.
 *
 * Pure: the callers keep one rn_spin per thread and measure the waits.
 */
#ifndef RN_SPIN_H
#define RN_SPIN_H

#include <stdint.h>

#define RN_BUSY_AUTO (-1)
#define RN_SPIN_MIN_NS 4000
/*
 * 400 us, not 100: on these 2-core virtual machines a sleep and its wake-up
 * cost more than polling with yields for a few hundred microseconds.  A
 * forking server's children (16, each answering a request every few hundred
 * microseconds) slept 2.1-2.4 times a request with 100 us and 0.1-0.4 with
 * 400 us, at less CPU a request: 32,000 to 46,000 requests a second on an
 * unshaped bed (about TCP's), 0.60-0.65x to 0.69-0.73x TCP in the bench's
 * fork row on its shaped one (docs/API.md, "The fast path").
 */
#define RN_SPIN_MAX_NS 400000

typedef struct rn_spin {
	int64_t ns; /* the learnt window */
} rn_spin;

/* How long to poll before sleeping in the next wait (ns). */
static inline int64_t rn_spin_window(const rn_spin *s, int busy_us)
{
	return busy_us == RN_BUSY_AUTO ? s->ns : busy_us > 0 ? (int64_t)busy_us * 1000 : 0;
}

/*
 * What the wait turned out to be: waited_ns from its start to its end
 * (polling included), caught whether the polling found the event.
 */
static inline void rn_spin_update(rn_spin *s, int busy_us, int64_t waited_ns, int caught)
{
	if (busy_us != RN_BUSY_AUTO || caught)
		return;
	if (waited_ns <= s->ns + RN_SPIN_MAX_NS) {
		/* slept, but not for long: a longer poll would have caught it */
		s->ns = s->ns ? s->ns * 2 : RN_SPIN_MIN_NS;
		if (s->ns > RN_SPIN_MAX_NS)
			s->ns = RN_SPIN_MAX_NS;
	} else {
		s->ns /= 2;
		if (s->ns < RN_SPIN_MIN_NS)
			s->ns = 0;
	}
}

#endif
