/*
 * rn_handover.h - a prefork worker drives the connections it accepts, a
 * forking server's child the one it serves.
 *
 * A listener's handshakes are its process's engine's (the owner's): it
 * makes the connection and writes an accept record on the listening
 * descriptor, which a process that inherited it (nginx's workers) may read.
 * Without more, that worker's reads and writes would cross the owner's
 * engine for the whole life of the connection, as would those of a child
 * the owner forked after accepting.  Instead the worker (at its accept) or
 * the child (at its first read or write, rn_api_lookup_data) asks the
 * owner for it: the owner hands over the fresh connection (rn_conn_export)
 * and its end of the socketpair, forgets it, and drops whatever still
 * arrives for it unanswered for a while; the taker makes it again on its
 * own rail sockets (rn_conn_import), whose new ports the peer hears in a
 * RAILS at once, and drives it as its own (fast path, its own engine).  A
 * connection that is no longer fresh stays the owner's, served through the
 * descriptor as before.  docs/PROTOCOL.md, "Handing a connection over".
 */
#ifndef RN_HANDOVER_H
#define RN_HANDOVER_H

#include <stdint.h>

#include "rn_engine.h"
#include "rn_htab.h"

struct rn_port;
struct rn_stream;

/* Connections a port handed over: their late datagrams are dropped, not answered with a reset. */
typedef struct rn_moved {
	rn_htab tab;                    /* id -> the port (any non-NULL) */
	struct rn_moved_ent {
		uint64_t id, at;
	} *ring;                        /* oldest first from head */
	uint32_t head, len;
	uint64_t dropped;               /* datagrams dropped for them */
} rn_moved;

/* Engine, at listen: the owner's request socket, made once per process.  0 or -errno. */
int rn_handover_owner_init(void);
/* Where a taker asks for accepted connection ns (owner 0 if it cannot: no request socket). */
void rn_handover_fill(rn_take_from *f, const rn_sock *ns);
/* Host lock: st was handed over; its port remembers its id. */
void rn_handover_moved(struct rn_port *p, uint64_t id, uint64_t now);
/* Host lock: whether a datagram for id on p is a handed-over connection's (dropped, counted). */
int rn_handover_is_moved(struct rn_port *p, uint64_t id, uint64_t now);
void rn_handover_free(struct rn_port *p);

/*
 * The taker (any thread but the engine's, no lock held): asks the owner
 * named in f for the connection whose end A is afd.  0 with *out, a
 * connected socket of this process's engine (the caller's reference),
 * or -errno: -EAGAIN, the owner keeps it (not fresh any more), -ENOTSUP
 * (handing over is off, or the record names no owner), else a failure;
 * in every case but 0 afd is as it was and the owner still serves it.
 */
int rn_handover_take(int afd, const rn_take_from *f, rn_sock **out);

/* Engine commands of the taker (rn_engine.c runs them). */
int rn_handover_cmd_port(void *arg);
int rn_handover_cmd_import(rn_sock *s, void *arg);

/*
 * Whether a prefork worker asks for the connection it just accepted.  A
 * handover costs about what relaying a few requests costs: a worker whose
 * connections lately lived a request or two (a connection per request)
 * takes one in RN_TAKE_SAMPLE only, to keep measuring, and leaves the
 * rest to the owner's engine.
 */
int rn_handover_want(void);
/* A connection taken over here ended after life_ns (host lock). */
void rn_handover_ended(uint64_t life_ns);
/* Connections this process took over from another (0 in a process that took none). */
unsigned long rn_handover_took(void);

/* After fork, in the child: the parent's request socket is not the child's. */
void rn_handover_forget(void);

#endif
