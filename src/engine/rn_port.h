/*
 * rn_port.h - a set of UDP sockets, one per rail, that some connections
 * share: a listening port (the same number on every rail, shared by the
 * listener and every connection it accepted) or a client's own sockets.
 *
 * The sockets, their batched I/O and the connection table are the host
 * kit's (src/host: rn_hsock, rn_htab), shared with the BTL; this file adds
 * what the engine needs around them: libevent readiness, the inline waits'
 * hand-off, handshakes deferred to the engine, the process's list of ports.
 */
#ifndef RN_PORT_H
#define RN_PORT_H

#include <netinet/in.h>
#include <stdint.h>

#include "rn_core.h"
#include "rn_engine.h"
#include "rn_etimer.h"
#include "rn_handoff.h"
#include "rn_hsock.h"
#include "rn_htab.h"

#define RN_TXQ RN_HTXQ   /* datagrams queued per socket */

struct rn_stream;

/* The engine's side of one rail socket (the socket itself is p->hs.s[idx]). */
typedef struct rn_usock {
	int fd;                 /* p->hs.s[idx].fd, for the inline waits' poll sets */
	int rail;               /* engine rail index */
	struct event *rev, *wev;
	struct rn_port *port;
	int idx;                /* index in the port: the core's local rail */
	int want_wev;           /* blocked by an inline thread: the engine arms wev */
	/*
	 * (atomic) A send after the lock failed (rn_port_take): the socket's
	 * datagrams go out under the lock until one such flush works.
	 */
	int defer_off;
	uint64_t ino;           /* the socket's inode: tells it from a reused number */
} rn_usock;

typedef struct rn_port {
	int nsock;
	rn_hset hs;             /* the rail sockets: batched I/O, error queue (src/host) */
	rn_usock s[RN_MAX_RAILS];
	rn_rail_addr addrs[RN_MAX_RAILS]; /* what the core calls its local rails */
	uint16_t number;        /* listening port, 0 for clients' sockets */
	uint8_t shared;         /* clients' sockets, shared by every unbound client of the process */
	uint32_t dgram;         /* buffer size of one datagram */
	rn_listener *lis;
	rn_sock *lsock;
	rn_sock *owner;         /* the socket bound to it; NULL once only connections hold it */
	uint32_t mask;          /* engine rails it was opened on */
	rn_htab tab;            /* connections by id */
	rn_hdisp disp;          /* datagrams to them or to the listener */
	int refs;
	int tx_out;             /* (atomic) threads sending its datagrams after the lock (rn_port_take) */
	uint64_t drops_unknown, drops_backlog;
	uint64_t refused;       /* handshakes refused: out of the budget or of descriptors */
	/*
	 * Inline receive (rn_inline.c): threads blocked in poll() for this
	 * port's connections.  One of them, the leader, polls the sockets; the
	 * others poll only their eventfd, written when a thread reads what they
	 * wait for, so a datagram wakes one thread, not every waiter: with 16
	 * threads each waiting on its connection of one port, every datagram
	 * used to wake all 16.  A leader that leaves wakes another waiter,
	 * which leads from its next wait.  While one waits, the engine keeps
	 * off the sockets (rx_off) for the same reason; a fallback timer gives
	 * the sockets back to the engine once nobody waits inline (rn_handoff.h
	 * says when).
	 */
	struct rn_waiter *waiters;
	struct rn_waiter *leader; /* the waiter polling the sockets, or NULL */
	int nwait;
	uint8_t rx_off, dead;
	uint8_t want_rx;        /* taken back by another thread: the engine re-arms the sockets */
	uint64_t inline_ns;     /* the last inline wait's end or read */
	uint64_t turn_ns;       /* mean time from a wait's end to the next one (rn_handoff.h) */
	uint64_t check_ns;      /* the fallback's period while threads keep the port (rn_handoff.h) */
	rn_etimer fallback;     /* the hand-off's look (rn_port_handoff.c) */
	struct rn_moved *moved; /* connections handed to other processes (rn_handover.h) */
	/* handshake datagrams an inline thread read on a listening port, for the engine */
	struct rn_deferred *defq;
	int ndef, defcap;
	struct rn_port *next;
} rn_port;


/* A thread blocked inline: its eventfd, on a port's list, and what it waits on. */
typedef struct rn_waiter {
	int efd;
	struct rn_sock *s;      /* the caller's (referenced for the wait) */
	struct rn_stream *st;   /* s->stream when the wait began: valid while still s->stream */
	struct rn_waiter *next;
} rn_waiter;

/*
 * Opens UDP sockets on the rails in `mask` (engine rail indexes), bound to
 * `number` on every rail (0: a free port, the same on every rail if
 * `same_number`, else any per rail).  Returns NULL with *err = -errno.
 */
rn_port *rn_port_open(uint32_t mask, uint16_t number, int same_number, int *err);
void rn_port_ref(rn_port *p);
void rn_port_unref(rn_port *p);
/* The listening port with this number, if this process has one. */
rn_port *rn_port_find_number(uint16_t number);
/*
 * The process's clients' port on the rails in mask, referenced, opened on
 * first use: every connection a client opens without binding shares it
 * (datagrams are told apart by connection id), so a process with many
 * connections holds one socket per rail for them, not one per connection
 * and rail, and one thread waiting on it serves them all.
 */
rn_port *rn_port_client(uint32_t mask, int *err);
/* The same, only if the port is open already (a thread that may not open one); else NULL. */
rn_port *rn_port_client_find(uint32_t mask);

int rn_port_add(rn_port *p, struct rn_stream *st, uint64_t id);
/* A connection iterator's callback: ctx is the caller's, passed through. */
typedef void (*rn_stream_fn)(struct rn_stream *st, void *ctx);
/* Calls fn(st, ctx) on every connection of the port; of every port (host lock). */
void rn_port_each(rn_port *p, rn_stream_fn fn, void *ctx);
void rn_port_each_all(rn_stream_fn fn, void *ctx);
/*
 * Engine rail `rail` got its address while p lives: p opens a socket on it
 * (the next index, which the port's connections and listener take as
 * their next local rail).  The index, or -errno (-EEXIST: p has one).
 */
int rn_port_rail_add(rn_port *p, int rail);
/*
 * Engine rail `rail` has another address now (its old one went away): p's
 * socket on it is replaced by one bound to the new address, at the same
 * index and with the same port number if it is free there.  The index, or
 * -errno (-ENOENT: p has no socket on the rail; else the old one stays).
 */
int rn_port_rail_rebind(rn_port *p, int rail);
/* Calls fn for every port (the dead too: fn checks). */
void rn_port_each_port(void (*fn)(rn_port *p, void *ctx), void *ctx);
/* Calls fn(p, ctx) on every port that has a listener. */
void rn_port_each_listener(void (*fn)(rn_port *p, void *ctx), void *ctx);
/* Removes a connection; its datagrams still queued go out without it. */
void rn_port_remove(rn_port *p, struct rn_stream *st, uint64_t id);

/* Rails (core local indexes) whose socket can take a datagram now. */
uint32_t rn_port_writable(const rn_port *p);
/*
 * Queues the len-byte datagram built in the port's spare buffer
 * (rn_hset_spare(&p->hs)) on socket idx, and sends the queue when that
 * filled it; returns 0, or -1 if the queue was full (rn_port_writable said so).
 */
int rn_port_queue(rn_port *p, int idx, struct rn_stream *st, rn_addr to, size_t len);
/* Sends what is queued on every socket of the port. */
void rn_port_flush(rn_port *p);
/*
 * The same, at once even from an inline thread (whose queues otherwise
 * wait for its leave of the host lock): for a datagram that must be on the
 * wire before anything the caller lets happen next.
 */
void rn_port_flush_now(rn_port *p);

/*
 * Reads every socket of the port, a few datagrams at a time in turns, until
 * none has more (or a bound); hands each to its connection.  Returns the
 * number read.  Inline threads and the engine both use it.
 */
int rn_port_read(rn_port *p);
/* The same, for the sockets in mask (port indexes) only. */
int rn_port_read_some(rn_port *p, uint32_t mask);
/* Engine: the port's sockets unread while an inline thread had them: read them now. */
void rn_port_catch_up(rn_port *p);
/* Host lock: the engine reads the port's sockets from now on, unless a thread waits inline. */
void rn_port_take_back(rn_port *p);
/* The same for socket s's port (takes the host lock): its thread sleeps on the engine's work. */
void rn_port_sock_sleeps(rn_sock *s);
/* A thread begins an inline wait on the port's sockets (host lock); rn_port_wait_end when it is back. */
void rn_port_wait_begin(rn_port *p, uint64_t now);
void rn_port_wait_end(rn_port *p, uint64_t now);
/*
 * An inline wait on the port ended at now (host lock; its thread already
 * left p->nwait): the hand-off's bet starts, unless a thread sleeps in
 * ri2n_accept on the port's listener, which only the engine serves.
 */
void rn_port_wait_left(rn_port *p, uint64_t now);
/* The rail socket open under descriptor number fd with inode ino, or NULL (host lock). */
rn_usock *rn_port_usock(int fd, uint64_t ino);

/* Wakes every thread blocked inline on the port (its sockets moved under them). */
void rn_port_wake_waiters(rn_port *p);
/*
 * Wakes the threads blocked inline on socket s (its last descriptor closed
 * under them): only those, not every waiter of a port that many
 * connections share.
 */
void rn_port_wake_sock(rn_port *p, const struct rn_sock *s);
/*
 * Wakes the threads blocked inline on the port whose connection has bytes,
 * its end or an error to read now (another thread read their datagrams),
 * or is no longer theirs; and a waiter to lead if none does.
 */
void rn_port_wake_ready(rn_port *p);
/* Nobody polls the port's sockets: a waiter is woken to lead from its next wait. */
void rn_port_wake_leader(rn_port *p);
/* Engine: arms what inline threads asked for, replays deferred handshakes, frees dead ports. */
void rn_port_sync(void);

/* Sends one datagram now (handshake replies); best effort. */
void rn_port_send_now(rn_port *p, int idx, rn_addr to, const uint8_t *buf, size_t len);

/* Frees every port (after fork, in the child: closes the fds, nothing else). */
void rn_port_forget_all(void);

#endif
