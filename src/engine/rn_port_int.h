/*
 * rn_port_int.h - what rn_port.c (the rail sockets, receive, send),
 * rn_port_handoff.c (the hand-off of the sockets between the engine and
 * inline threads) and rn_port_find.c (lookups and walks) share.  Everything runs under the host lock.
 */
#ifndef RN_PORT_INT_H
#define RN_PORT_INT_H

#include <event2/event.h>
#include <stdint.h>

#include "rn_port.h"

/*
 * Reads the sockets in mask; `ready` ones were reported by a poller (error
 * queue checked).  Returns the datagrams read.
 */
int rn_port_read_ready(rn_port *p, uint32_t mask, uint32_t ready);
/* The first of the process's ports (then ->next), for rn_port_find.c. */
rn_port *rn_port_first(void);
/* rn_port_sync has work at the engine's next turn (a port's readiness to re-arm). */
void rn_port_sync_later(void);
/* Turns the engine's readiness events on the port's sockets on or off. */
void rn_port_rx_set(rn_port *p, int on);
/* Whether threads drive the port inline now: then the engine keeps off its sockets. */
int rn_port_inline_driven(const rn_port *p, uint64_t now);
/* libevent callbacks: a socket of the port is readable; the hand-off's fallback look. */
void rn_port_on_readable(evutil_socket_t fd, short what, void *arg);
void rn_port_on_fallback(rn_etimer *t, uint64_t now);

/*
 * Under the host lock, at an inline thread's leave: u's queue is copied
 * into t for sending after the lock (1; the port counts the sender in
 * tx_out, which the sender drops when done), or sent now if it cannot be
 * (0).  rn_port_defer.c.
 */
int rn_port_take(rn_usock *u, struct rn_htake *t);
/* Under the host lock: u's queue goes now. */
void rn_port_flush_usock(rn_usock *u);

#endif
