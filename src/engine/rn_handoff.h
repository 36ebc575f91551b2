/*
 * rn_handoff.h - how long the engine keeps off a port's rail sockets after
 * the last inline wait on them ended.
 *
 * While a thread waits on a port's sockets (rn_inline.c) the engine leaves
 * them alone, so that a datagram wakes one thread.  Between two waits the
 * program does its own work: a ping-pong turns around in microseconds, an
 * event loop over a thousand connections in several milliseconds.  If the
 * engine took the sockets back during such a turn, every reply arriving
 * meanwhile would cross the engine thread and the connection's descriptor
 * (a wake-up, two copies and a lock hand-off each) although the loop reads
 * the rails itself the moment it waits again.  So the engine keeps off for
 * twice the program's mean turn, within [RN_HANDOFF_NS, RN_HANDOFF_MAX_NS]:
 * what arrives after the program stopped waiting altogether waits at most
 * that long for the engine.
 *
 * Pure: the port keeps the mean and the times.
 */
#ifndef RN_HANDOFF_H
#define RN_HANDOFF_H

#include <stdint.h>

#define RN_HANDOFF_NS UINT64_C(1000000)      /* 1 ms: a ping-pong's */
#define RN_HANDOFF_MAX_NS UINT64_C(10000000) /* 10 ms: an event loop's at most */
#define RN_CHECK_MAX_NS UINT64_C(16000000)   /* see rn_handoff_check */

/*
 * A wait begins at now; the last one ended at last_end (0: none yet).  The
 * turn between them updates the running mean *turn_ns (a quarter weight;
 * turns longer than RN_HANDOFF_MAX_NS count as that).
 */
static inline void rn_handoff_turn(uint64_t *turn_ns, uint64_t last_end, uint64_t now)
{
	uint64_t turn;

	if (!last_end || now <= last_end)
		return;
	turn = now - last_end;
	if (turn > RN_HANDOFF_MAX_NS)
		turn = RN_HANDOFF_MAX_NS;
	*turn_ns = *turn_ns ? *turn_ns - *turn_ns / 4 + turn / 4 : turn;
}

/* How long after a wait ended the engine stays off the sockets. */
static inline uint64_t rn_handoff_ns(uint64_t turn_ns)
{
	uint64_t h = 2 * turn_ns;

	return h < RN_HANDOFF_NS ? RN_HANDOFF_NS : h > RN_HANDOFF_MAX_NS ? RN_HANDOFF_MAX_NS : h;
}

/*
 * The engine cannot know when the last waiting thread leaves for good, so
 * it looks every so often (its fallback timer) while threads keep the port.
 * Each look wakes the engine thread, which on a busy host preempts one
 * that is working: at a look every millisecond, an 8-byte ping-pong took
 * about 1300 engine wake-ups a second per host and 3 % of its round trips
 * were 15-20 us slower (p99 4x the median).  So the period doubles, from
 * RN_HANDOFF_NS up to RN_CHECK_MAX_NS, each time a look finds threads still
 * there, and starts again once the engine has taken the port back.  The
 * price: bytes that arrive after a long-inline program stops waiting
 * inline reach the descriptor (a plain poll) up to the handoff plus one
 * period later; a blocking or inline wait still gets them at once.
 */
static inline uint64_t rn_handoff_check(uint64_t check_ns)
{
	return !check_ns ? RN_HANDOFF_NS : check_ns >= RN_CHECK_MAX_NS / 2 ? RN_CHECK_MAX_NS
									    : 2 * check_ns;
}

#endif
