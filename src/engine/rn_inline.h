/*
 * rn_inline.h - application threads driving their connections themselves.
 *
 * The engine thread is one driver of the core; a thread that sends or
 * waits on a connection is another.  Under the host lock (rn_host_lock) a
 * sending thread puts its bytes through the core and onto the rails'
 * sockets itself, and a receiving thread reads the rails' sockets itself
 * and takes its bytes straight from the core's reorder ring: an arriving
 * reply wakes the thread that wants it, and nothing else.
 *
 * The engine remains for timers, for connections nobody is waiting on and
 * as the fallback: whatever an inline thread cannot finish (events to arm,
 * handshakes, a connection ending, bytes nobody reads inline) it leaves on
 * the engine's lists and wakes it.  Ordering with the plain path is kept:
 * bytes the user wrote into the descriptor go before inline bytes, bytes
 * the engine already put into the descriptor are read before the core's.
 *
 * Timers: an inline thread that moves a connection's next expiry (an ACK
 * owed in 200 us) sets the connection's engine timer itself (rn_etimer.h:
 * the engine's timers are not libevent's), which wakes the engine only when
 * one is really due.
 */
#ifndef RN_INLINE_H
#define RN_INLINE_H

#include <stdint.h>
#include <sys/types.h>
#include <sys/uio.h>

#include "rn_engine.h"
#include "rn_railref.h"
#include "rn_spin.h"

struct rn_stream;

/* Returned by the calls below when the descriptor's plain path must serve the call. */
#define RN_INLINE_PLAIN (-100000)

/*
 * Sends the bytes of iov through connection s (user descriptor fd) inline:
 * what the core's send ring takes goes onto the rails at once; the rest goes
 * into fd (blocking unless MSG_DONTWAIT or O_NONBLOCK, as a TCP send does),
 * for the engine to take as room opens.  flags: MSG_DONTWAIT, MSG_NOSIGNAL,
 * MSG_MORE (accepted, ignored).  Returns the bytes taken, -errno, or
 * RN_INLINE_PLAIN: not established, shut down, or flags it does not handle;
 * the caller then uses the kernel call on fd.
 */
ssize_t rn_inline_send(rn_sock *s, int fd, const struct iovec *iov, int iovcnt, int flags);

/*
 * Receives into iov inline.  flags: MSG_DONTWAIT, MSG_WAITALL; others
 * (MSG_PEEK...) hand the core's bytes to the descriptor and return
 * RN_INLINE_PLAIN.  Returns bytes, -errno, or RN_INLINE_PLAIN (the end of the
 * stream or an error is the descriptor's to tell: the caller reads fd).
 */
ssize_t rn_inline_recv(rn_sock *s, int fd, const struct iovec *iov, int iovcnt, int flags);

/*
 * The user closed the socket's last descriptor number: threads blocked in a
 * fast call on it wake and return EBADF (the engine winds the connection
 * down as for any close).  Not from the engine thread.
 */
void rn_inline_closed(rn_sock *s);
/* The bytes of a connection queued for the program or for its peer (rn_inline_queued.c). */
typedef struct rn_queued {
	size_t in;     /* readable now (FIONREAD, SIOCINQ) */
	size_t out;    /* written and not acknowledged by the peer (SIOCOUTQ) */
	size_t unsent; /* written and never sent (SIOCOUTQNSD) */
} rn_queued;
/*
 * Fills *q for connected socket s (user descriptor fd): what its descriptor
 * holds plus what the core holds.  0, or RN_INLINE_PLAIN when s has no
 * connection (the descriptor answers).
 */
int rn_inline_queued(rn_sock *s, int fd, rn_queued *q);
/* The bytes waiting in the core go into s's descriptor now (for a reader the fast path does not serve). */
void rn_inline_to_descriptor(rn_sock *s);
/*
 * Connects s to a in the calling thread and sends the INIT from it: the
 * caller neither waits for the engine nor wakes it.  0 or -errno as
 * RN_CMD_CONNECT; RN_CMD_ENGINE_ONLY if it is left to the engine (the
 * process's client port is not open yet, or the host lock is taken).  Not from the engine thread nor with the
 * host lock held.
 */
int rn_inline_connect(rn_sock *s, const rn_hsa *a);

/*
 * Waiting with the kernel's poll or epoll (ri2n-run's interposed calls): the
 * caller adds the rail sockets of the ri2n connections it waits on to its
 * own poll set, so an arriving datagram wakes it rather than the engine.
 */
/* The rail sockets of connected socket s (at most max); 0 if it has none. */
int rn_inline_rails(rn_sock *s, rn_railref *out, int max);
/*
 * Before the wait: the engine keeps off these sockets (h[i]: a handle per
 * socket, NULL for one that is gone).  After it, rn_inline_watch_end with
 * ready[i] set for each socket the wait found readable: they are read and
 * the connections' bytes handed to their descriptors, where the caller's
 * poll finds them.  For an epoll wait (ep_id: the shim's id of the set, else 0), a
 * socket registered there whose bytes arrived is instead reported in out
 * (at most max, *nout of them) and its bytes stay in the core for the read
 * that follows (level-triggered: rn_inline_held reports it again).
 */
void rn_inline_watch_begin(const rn_railref *r, int n, void **h);
void rn_inline_watch_end(void **h, int n, const uint8_t *ready, uint64_t ep_id, rn_ready *out,
			 int max, int *nout);

/*
 * poll and select (ri2n-run): rn_inline_watch_end for a wait that asked for
 * the bytes of sockets s[0..ns) (POLLIN): one whose bytes are in the core
 * keeps them there for the read that follows and in[i] says so; the other
 * connections' bytes go to their descriptors.  rn_inline_poll_held, before
 * the wait: in[i] for those still held (level-triggered), their number.  An
 * entry of s may be NULL.  Bytes no wait has reported for RN_HELD_NS go to
 * the descriptor anyway (rn_stream.c), for a reader ri2n does not see.
 */
void rn_inline_poll_end(void **h, int n, const uint8_t *ready, rn_sock *const *s, int ns,
			uint8_t *in);
int rn_inline_poll_held(rn_sock *const *s, int ns, uint8_t *in);

/*
 * epoll (ri2n-run): socket s was added to (or modified in) the epoll set
 * with id ep_id with these events and data; events 0: removed.  Its rail
 * sockets go to out as rn_inline_rails gives them (max 0: none), under the
 * same take of the host lock (an event loop changes its events several
 * times a request).
 */
int rn_inline_epoll_note(rn_sock *s, uint64_t ep_id, uint32_t events, uint64_t data,
			 rn_railref *out, int max);
/* The sockets of epoll set ep_id whose bytes still wait in the core (before a wait). */
int rn_inline_held(uint64_t ep_id, rn_ready *out, int max);

/*
 * No wait's report stands for st's bytes any more (host lock): it is about
 * to be freed, or its program read every byte reported; bytes that come
 * later need a report of their own (a wait's, or the descriptor's, where
 * the engine then puts them).
 */
void rn_inline_unhold(struct rn_stream *st);
/* After fork, in the child. */
void rn_inline_forget(void);

/*
 * RI2N_BUSY_POLL_US: microseconds a waiting thread polls before it sleeps;
 * 0: never; RN_BUSY_AUTO (-1, the default): each thread learns it (rn_spin.h).
 */
int rn_inline_busy_default(void);
#define RN_BUSY_POLL_MAX_US 1000000 /* 1 s: beyond it, spinning is a bug, not a knob */
/* The calling thread's poll before a wait (ns), and what the wait was (rn_spin.h). */
int64_t rn_spin_budget(int busy_us);
void rn_spin_learn(int busy_us, int64_t waited_ns, int caught);

#endif
