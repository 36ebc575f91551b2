/*
 * rn_ev.h - the engine's calls into libevent.
 *
 * libevent is not thread-safe as the engine uses it: only a thread that is
 * not driving a connection inline (the engine thread, or one setting up or
 * tearing down while the engine does not run) arms, disarms or frees an
 * event.  An inline thread leaves such work on the engine's lists and wakes
 * it (rn_host_kick).  Debug builds check it here.
 */
#ifndef RN_EV_H
#define RN_EV_H

#include <event2/event.h>

#include "rn_engine.h"

static inline int rn_ev_add(struct event *ev, const struct timeval *tv)
{
	RN_NOT_INLINE();
	return event_add(ev, tv);
}

static inline int rn_ev_del(struct event *ev)
{
	RN_NOT_INLINE();
	return event_del(ev);
}

static inline void rn_ev_free(struct event *ev)
{
	RN_NOT_INLINE();
	event_free(ev);
}

#endif
