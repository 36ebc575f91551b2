/*
 * rn_stream.h - a connection inside the engine: the core's rn_conn, the
 * engine's end of the user's socketpair, and its timer.  Also the engine's
 * side of every socket command (bind, listen, connect, stats).
 *
 * Moving data: bytes the user writes are read from the socketpair into the
 * core's send ring as far as it has room (no room: the socketpair fills and
 * the user's write blocks, which is the back-pressure); bytes the core has
 * in order are written into the socketpair as far as it takes them (full:
 * the window the core advertises closes, which is the peer's back-pressure).
 */
#ifndef RN_STREAM_H
#define RN_STREAM_H

#include <stdint.h>

#include "rn_core.h"
#include "rn_engine.h"
#include "rn_etimer.h"
#include "rn_port.h"

/*
 * A connection inside the engine.  Its state is guarded by the host lock
 * (rn_host_lock): the engine thread and inline threads (rn_inline.c) both
 * drive it.
 */
typedef struct rn_stream {
	rn_conn *conn;
	rn_port *port;
	rn_sock *sock;
	uint64_t id;
	int fd;                  /* B, the engine's end of the socketpair; -1 once closed */
	struct event *rev, *wev;
	rn_etimer tm;            /* the core's expiry as armed (tm.at), UINT64_MAX: none */
	size_t junk_left;        /* bytes to discard before the user's data */
	uint8_t user_ready;      /* the watched descriptor said readable: take() is due */
	uint8_t rd_on, dirty, user_eof, fin_queued, eof_sent, reset_done, gone, connected;
	uint64_t orphan_ns;      /* when the user went away with the stream open */
	uint64_t created_ns;
	uint8_t server;          /* accepted, not connected */
	uint8_t answered;        /* the listener answered: connected once the COOKIE_ECHO left */
	uint8_t budgeted;        /* holds one of the process's accepted connections (rn_stream.c) */
	uint8_t peer_tried;      /* joined its peer's rail monitor, or tried (rn_hpeer.h) */
	uint8_t taken;           /* taken over from another process (rn_handover.h); 2: its life counted */
	struct rn_stream *dirty_next;
	/*
	 * Inline drivers (rn_inline.c): pair_rx says the engine wrote bytes (or
	 * the end) into the socketpair since an inline reader last found it
	 * empty, so those come first; pair_tx: a fast send once left bytes in
	 * the socketpair for lack of room, so inline threads making room move
	 * such bytes up too (sticky: a bulk writer may do it again any time).
	 */
	uint8_t pair_rx, pair_tx;
	/* held: its bytes stay in the core, reported to a wait (rn_inline_held, _poll_held) */
	uint8_t held;
	uint64_t held_ns;        /* when they were first reported, or the program last read some */
	struct rn_stream *held_next, **held_pprev; /* the list of held streams (rn_inline.c) */
	char name[RN_ADDR_STRLEN]; /* "198.18.1.2:7000", "[2001:2::2]:7000", for logs */
} rn_stream;

/*
 * How long bytes a wait reported from the core stay there unread: then the
 * descriptor gets them (deliver in rn_stream.c, the waits in rn_inline.c),
 * for a reader ri2n does not see.  (rn_stream.c spells it too, the same.)
 */
#define RN_HELD_NS UINT64_C(50000000)

/* A datagram for this stream's connection arrived on port socket idx. */
void rn_stream_input(struct rn_stream *st, int idx, rn_addr from, const uint8_t *d,
		     size_t len, uint64_t now);
/* A datagram for no known connection on a listening port. */
void rn_stream_listen_input(rn_port *p, int idx, rn_addr from, const uint8_t *d, size_t len,
			    uint64_t now);
/* ICMP port unreachable from `to` on port socket idx. */
void rn_stream_refused(rn_port *p, int idx, rn_addr to);
/* The same about an established connection's datagram, len bytes of it quoted (rn_conn_unreachable). */
void rn_stream_unreachable(rn_port *p, int idx, rn_addr to, const uint8_t *q, size_t len);
/* A hard error sending this stream's datagram on port socket idx. */
void rn_stream_send_error(struct rn_stream *st, int idx, int err);
/* A socket of the port is writable again: streams it held back may send. */
void rn_stream_port_writable(rn_port *p);
/* Services every stream marked since the last call. */
void rn_stream_service_dirty(void);
/* Takes every marked stream off the list and calls fn on it (which may mark it again). */
void rn_stream_each_dirty(rn_stream_fn fn, void *ctx);
/* Whether streams wait to be serviced. */
int rn_stream_dirty_pending(void);
/* Takes a stream off the list of streams to service. */
void rn_stream_undirty(struct rn_stream *st);
/*
 * Moves the datagrams the core wants sent to the port's queues and sends
 * them (at most a budget of them); 1 if more are waiting.
 */
int rn_stream_flush(struct rn_stream *st, uint64_t now);
/* The stream's timer passed: runs the core's timers, then services it (engine). */
void rn_stream_fire_timer(struct rn_stream *st, uint64_t now);
/* The core's expiry (rn_conn_expiry) is exp: sets the stream's engine timer for it (host lock). */
void rn_stream_arm(struct rn_stream *st, uint64_t exp);

/*
 * Engine side of the socket commands; each returns 0 or -errno.  create
 * takes the engine's reference the caller took for it (rn_engine_post: no
 * one waits), and on failure kills the socket and drops that reference.
 */
int rn_stream_cmd_create(rn_sock *s);
int rn_stream_cmd_bind(rn_sock *s, const rn_hsa *a);
int rn_stream_cmd_listen(rn_sock *s);
int rn_stream_cmd_connect(rn_sock *s, const rn_hsa *a);
/* connect from an inline thread when the port is not open yet: only the engine may open it */
#define RN_CMD_ENGINE_ONLY 1
int rn_stream_cmd_stats(rn_sock *s, rn_conn_stats *st);
enum { RN_EXIT_OWED, RN_EXIT_OPEN, RN_EXIT_RESET, RN_EXIT_CLOSED, RN_EXIT_HALF };
int rn_stream_cmd_pending(int mode);

/*
 * ri2n_accept hands connection ns, taken from its listener's queue, to the
 * program: end A moves from the number the engine kept it under to the
 * lowest one free now, as TCP's accept would return, and the engine names
 * it by that number from then on (its events still queued too).  FD_CLOEXEC
 * as cloexec says.  Returns the number (the old one if none lower is free).
 */
int rn_stream_accept_fd(rn_sock *ns, int cloexec);

/* What ri2n-stat shows of a connection. */
typedef struct rn_stream_info {
	const char *name;
	int fd, server;
	uint64_t created_ns;
	rn_hsa local, peer;
	rn_conn_stats cs;
} rn_stream_info;

void rn_stream_get_info(struct rn_stream *st, rn_stream_info *out);

/*
 * Another process took st over with end B (rn_handover.c): st goes without
 * a word to its peer or its user, and what still arrives for it is dropped
 * (host lock).
 */
void rn_stream_moved(struct rn_stream *st, uint64_t now);
/* After fork, in the child: forget the parent's streams, closing only fds. */
void rn_stream_forget_all(void);

#endif
