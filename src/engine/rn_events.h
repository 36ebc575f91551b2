/*
 * rn_events.h - the process's event queue behind ri2n_event_fd() and
 * ri2n_read_event(): a ring of the last 1024 events, filled by the engine
 * thread (rarely: state changes, never per packet), read by the application.
 */
#ifndef RN_EVENTS_H
#define RN_EVENTS_H

#include "ri2n.h"

/* Queues ev, about the socket whose cookie is owner (rn_sock's; 0: none). */
void rn_events_post(const struct ri2n_event *ev, uint64_t owner);
/*
 * The accepted socket whose cookie is owner now has descriptor number to
 * instead of from (ri2n_accept moved it): its events still queued say so.
 * Its first event is its CONNECTED; none before it is looked at.
 */
void rn_events_renumber(uint64_t owner, int from, int to);
int rn_events_fd(void);
int rn_events_read(struct ri2n_event *ev);
/* After fork, in the child: an empty queue, no descriptor. */
void rn_events_forget(void);

#endif
