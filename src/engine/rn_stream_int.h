/*
 * rn_stream_int.h - what the engine's stream files (rn_stream.c, rn_accept.c,
 * rn_cmd.c) share among themselves; nothing outside src/engine uses it.
 * Everything here runs under the host lock.
 */
#ifndef RN_STREAM_INT_H
#define RN_STREAM_INT_H

#include <netinet/in.h>
#include <stdint.h>

#include "rn_stream.h"

#define TAKE_CHUNK (256 << 10) /* bytes moved between a socketpair and the core at once */

/* One datagram or one chunk of user data (rn_stream_globals makes it). */
extern uint8_t *rn_stream_scratch;

/* The engine's scratch buffer and wake-up event, made once; 0 or -ENOMEM. */
int rn_stream_globals(void);
/* A stream for connection c on port p, for socket s (which it references). */
rn_stream *rn_stream_new(rn_conn *c, rn_port *p, rn_sock *s);
/* The core's events for a stream's connection (rn_conn_set_user). */
void rn_stream_on_core_event(void *user, const rn_event *ev);
/* The handshake is done: the socket is connected, its descriptor goes live (rn_stream.c). */
void rn_stream_connected(rn_stream *st);
/* After the core took datagrams: a listener's answer makes the stream connected (RN_EV_ANSWERED). */
void rn_stream_answered(rn_stream *st, uint64_t now);
/* Moves data both ways, sends what the core owes, re-arms the timer; may free st. */
void rn_stream_service(rn_stream *st, uint64_t now);
/* Posts an event of the public API (ri2n_events) about st. */
void rn_stream_post(rn_stream *st, int type, int rail, int error, const char *cause);
/* a as a socket address of its family (an IPv6 one with its scope). */
rn_hsa rn_stream_sin(rn_addr a);
/*
 * The local address of the path to peer's own address (the rail the
 * connection was made on), into *out: 1, or 0 with *out untouched.
 */
int rn_stream_local_of(const rn_conn_stats *cs, rn_addr peer, rn_hsa *out);
/* The engine's end of a socketpair gets a large buffer. */
void rn_stream_pair_buf(int fd);
/* Whether every holder of the user's end closed it (the engine's end hangs up). */
int rn_stream_user_gone(rn_stream *st);

/* The budget of accepted connections (rn_accept.c): -1 when none is left. */
int rn_stream_budget_take(void);
void rn_stream_budget_give(rn_stream *st);
/* A handshake this process cannot take: the client hears it, the application too. */
void rn_stream_refuse(rn_port *p, const rn_accept_params *ap, int err, uint64_t now);
/* Listener ls: queued connections another process took are let go. */
void rn_stream_prune_taken(rn_sock *ls);
/* ns left listener ls's accept queue for another process: the engine's copy of A goes. */
void rn_stream_unqueue(rn_sock *ls, rn_sock *ns);
/* Listener ls closed: the connections waiting for accept are reset. */
void rn_stream_drop_accept_queue(rn_sock *ls);

#endif
