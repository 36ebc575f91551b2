/*
 * rn_engine.h - the engine: one communication thread per process that runs
 * the core over real UDP sockets, one per rail: timers, handshakes, and
 * every connection no application thread drives itself.
 *
 * Protocol state (ports, streams, the core's connections) is guarded by the
 * host lock (rn_host_lock.h), which the engine holds around each of its
 * callbacks and an application thread holds while it drives a connection
 * inline (rn_inline.h: the fast path).  Setting sockets up (bind, listen,
 * connect) stays with the engine: API threads hand it commands
 * (rn_engine_call) through a queue and an eventfd wake-up, and wait for the
 * answer.  What both sides share about a socket is in rn_sock, guarded by
 * its mutex.  Each connection's user descriptor is one end of a socketpair
 * whose other end the engine reads and writes for plain read/write/poll.
 *
 *   user fd (A) <== socketpair ==> engine fd (B) <-> rn_stream (core rn_conn)
 *        \__ fast path (rn_inline.c), same stream ___/    <-> rn_port: UDP socket per rail
 */
#ifndef RN_ENGINE_H
#define RN_ENGINE_H

#include <netinet/in.h>
#include <pthread.h>
#include <stdint.h>
#include <sys/types.h>

#include "rn_core.h"
#include "rn_host_lock.h"
#include "rn_hlink.h"
#include "rn_rails.h"

/*
 * What the engine sends on a listener's socketpair per connection waiting
 * for accept (one record per sendmsg, with the connection's descriptor A
 * attached as SCM_RIGHTS): the listening process takes its own copy from
 * the accept queue, and a process that inherited the listener (a prefork
 * worker) accepts with the attached descriptor, which the listening
 * process's engine serves.
 */
/*
 * Where a connection of another process's engine is, for a process that
 * holds its descriptor and asks for it (rn_handover.h).  owner 0: nowhere
 * it could be asked.
 */
typedef struct rn_take_from {
	pid_t owner;
	uint16_t port;           /* the listening port it came in on */
	uint32_t mask;           /* that port's engine rails */
	uint64_t id;             /* the connection's id there */
	rn_hsa peer;
} rn_take_from;

typedef struct rn_accept_rec {
	char tag;                /* 'a'; 'e': no connection, ri2n_accept fails once with err */
	rn_hsa peer;             /* the connection's peer */
	int err;                 /* 'e': EMFILE or ENOBUFS (the connection budget, memory) */
	rn_take_from from;       /* 'a': who may hand the connection over to the reader (rn_handover.h) */
} rn_accept_rec;

enum rn_cmd_type {
	RN_CMD_CREATE,  /* the engine takes its end of a new socket */
	RN_CMD_BIND,
	RN_CMD_LISTEN,
	RN_CMD_CONNECT,
	RN_CMD_STATS,
	RN_CMD_PENDING, /* at exit: connections owing, open, reset (arg: int *, RN_EXIT_*) */
	RN_CMD_TAKE_PORT,   /* a taker's rail sockets (rn_handover.h) */
	RN_CMD_TAKE_IMPORT, /* a connection handed over becomes this engine's */
};

/*
 * Runs a command in the engine thread and waits for it.  arg: the rn_hsa
 * (either family) for BIND/CONNECT, an rn_conn_stats for STATS.  Returns 0
 * or -errno.
 */
int rn_engine_call(int type, rn_sock *s, void *arg);

/*
 * RN_CMD_CONNECT, in the calling thread when it can (rn_inline_connect):
 * a connection per request no longer waits on the engine thread for each
 * connect.  Returns 0 or -errno.
 */
int rn_engine_connect(rn_sock *s, const rn_hsa *a);
/* Connects done so far by rn_engine_connect, and how many of them inline (ri2n-stat). */
void rn_engine_connects(unsigned long long *all, unsigned long long *inline_done);

/*
 * Queues a command for the engine thread without waiting for it (only for
 * commands with no argument and no answer: RN_CMD_CREATE); commands run in
 * the order they were queued, so a later rn_engine_call on the same socket
 * finds it done.  Returns 0, or -errno if it could not be queued.
 */
int rn_engine_post(int type, rn_sock *s);

/*
 * RN_CMD_PENDING(mode) in the engine thread, waited for at most ms: the
 * count, or -ETIMEDOUT if the engine did not answer in time (the exit drain
 * stays bounded whatever the engine is doing; the command it left behind is
 * on the heap and the engine frees it), -ENOMEM.
 */
int rn_engine_pending(int mode, long ms);

/* Starts the engine if this process has none (also after fork); 0 or -errno. */
int rn_engine_start(void);
/* True if this process's engine runs. */
int rn_engine_running(void);
/* Whether the calling thread is the engine (its waits are its own, never ri2n-run's). */
int rn_engine_self(void);
/* The process-wide defaults: environment knobs over the core's defaults. */
const rn_config *rn_engine_config(void);
/* This host's rails, as discovered at start. */
int rn_engine_rails(const rn_rail_info **rails);
/*
 * A rail that waited for its address has one now, the address event e's
 * (either family; rn_netlink.c, under the host lock).
 */
void rn_engine_rail_addr(int rail, const rn_hlink_ev *e);
/* The same from another rail's record: rail takes r's address and prefix (a move, or back). */
void rn_engine_rail_set(int rail, const rn_rail_info *r);

/*
 * Wakes the engine to run what inline threads left it; coalesced until it
 * runs (host lock).  Here, not in rn_host_lock.h: it writes the engine's
 * wake-up eventfd.
 */
void rn_host_kick(void);

/* ---- inside the engine thread ---- */

/*
 * Whether this thread is making the engine's event base: ri2n-run moves the
 * descriptors libevent makes meanwhile out of the program's numbers too.
 */
int rn_engine_making(void);
struct event_base *rn_engine_base(void);
const rn_env *rn_engine_env(void);
/* Marks a stream to be serviced once the current batch of datagrams is done. */
void rn_engine_dirty(struct rn_stream *st);
/*
 * A connection's life moved (a connect, a listener's handshake, a close): for
 * the next RN_CHURN_SPIN_NS the engine polls before it sleeps (engine_main).
 */
void rn_engine_churn(void);
/* Places the calling thread by RI2N_CPU or near the rails' NICs (hwloc). */
void rn_place_thread(const rn_rail_info *rails, int nrails);

#endif
