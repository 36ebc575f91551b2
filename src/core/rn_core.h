/*
 * rn_core.h - the ri2n protocol core, "sans-I/O".
 *
 * The core turns a byte stream into datagrams striped over several rails and
 * back, and decides everything the protocol decides: what to send, on which
 * rail, when a rail has failed or healed, when to retransmit, when the peer is
 * dead.  It never touches a socket, a clock, a thread or a random source:
 *
 *   - the caller passes datagrams in with the rail they arrived on
 *     (rn_conn_recv, rn_listener_recv) and the current time in nanoseconds;
 *   - the caller asks for datagrams to send (rn_conn_write_pkt), each with the
 *     rail and address to send it on;
 *   - the caller asks for the next timer expiry (rn_conn_expiry) and calls
 *     rn_conn_on_timer when it passes;
 *   - randomness (connection ids, initial sequence numbers) comes from the
 *     rng callback in rn_env, memory from its allocator.
 *
 * Two drivers reuse it: the threaded engine behind the socket API and the Open
 * MPI BTL's progress function; the simulator in tests/sim drives it with a
 * virtual clock.  A connection is owned by one thread at a time; the core
 * takes no locks.
 *
 * Errors are negative rn_err codes.  Codes above RN_ERR__FATAL are
 * recoverable (try again later, bad argument); codes at or below it are the
 * reason a connection died.
 */
#ifndef RN_CORE_H
#define RN_CORE_H

#include <errno.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>

#include "rn_addr.h"
#include "rn_knob_list.h"
#include "rn_replay.h"

/* All protocol limits in one place. */
enum {
	RN_MAX_RAILS = 8,          /* rails per host and paths per connection */
	RN_HDR_LEN = 24,           /* fixed header of every datagram */
	RN_ACKBLK_LEN = 20,        /* ACK block without its bitmap words */
	RN_MIN_DGRAM = 256,        /* smallest datagram size a rail may have */
	RN_MAX_DGRAM = 65507,      /* largest UDP payload over IPv4 */
	RN_INIT_LEN = 256,         /* INIT is padded to this: replies are never larger */
	RN_COOKIE_LEN = 32,        /* stateless handshake cookie */
	RN_COOKIE_SECRET_LEN = 16, /* key of the cookie MAC */
	RN_MIN_SLOTS = 64,         /* smallest send/receive ring, packets */
	RN_MAX_SLOTS = 1 << 16,    /* largest ring: keeps windows far below 2^31 */
	RN_MAX_SACK_WORDS = 128,   /* 8192 packets of selective ACK in one ACK */
	RN_KEY_LEN = 32,           /* pre-shared cluster key (RI2N_KEY) */
	RN_MAC_LEN = 16,           /* keyed: tag of handshake and stateless datagrams (rn_wire.h) */
};

/*
 * Every error, once: code, value, the errno a socket call reports for it,
 * and a sentence.  The enum, rn_strerror and rn_errno come from this list.
 * Codes above RN_ERR__FATAL: a call failed (bad argument, try again);
 * at or below it: why a connection died.
 */
#define RN_ERR_LIST(X)                                                                       \
	X(RN_OK, 0, 0, "success")                                                            \
	X(RN_ERR_INVAL, -1, EINVAL, "invalid argument")                                      \
	X(RN_ERR_NOMEM, -2, ENOMEM, "out of memory")                                         \
	X(RN_ERR_NOBUF, -3, ENOBUFS, "buffer too small")                                     \
	X(RN_ERR_AGAIN, -4, EAGAIN, "try again")                                             \
	X(RN_ERR_DROP, -5, EINVAL, "datagram dropped") /* the reason is counted */           \
	X(RN_ERR_STATE, -6, ENOTCONN, "not valid in this connection state")                  \
	X(RN_ERR_NOROUTE, -7, ENETUNREACH, "no local rail in the peer's subnet")             \
	X(RN_ERR_SHUT, -8, EPIPE, "connection shut down for writing")                        \
	X(RN_ERR_RESET, -21, ECONNRESET, "connection reset by peer")                         \
	X(RN_ERR_TIMEDOUT, -22, ETIMEDOUT, "peer silent past the dead-peer timeout")         \
	X(RN_ERR_REFUSED, -23, ECONNREFUSED, "connection refused")                           \
	X(RN_ERR_PROTO, -24, ECONNRESET, "protocol violation by peer")                       \
	X(RN_ERR_ABORTED, -25, ECONNABORTED, "connection aborted")                           \
	X(RN_ERR_UNREACH, -26, ENETUNREACH, "no rail shared with the peer")                  \
	X(RN_ERR_NOSPACE, -27, ENOMEM, "out of memory for the connection")

#define RN_ERR_ENUM(code, value, errno_, sentence) code = value,
typedef enum rn_err {
	RN_ERR_LIST(RN_ERR_ENUM)
	RN_ERR__FATAL = -20, /* codes at or below end the connection */
} rn_err;
#undef RN_ERR_ENUM

/* A short English phrase for an rn_err code ("unknown error" for others). */
const char *rn_strerror(int err);
/* The errno a socket call reports for an rn_err code (ECONNRESET for unknown ones). */
int rn_errno(int err);

/* Why a datagram was dropped; each reason has a counter. */
typedef enum rn_drop {
	RN_DROP_MALFORMED,   /* too short, bad lengths, reserved bits set */
	RN_DROP_VERSION,     /* unknown protocol version */
	RN_DROP_TYPE,        /* unknown type, or a type not valid here */
	RN_DROP_UNKNOWN_CONN,/* no connection with this id (counted by the driver) */
	RN_DROP_SOURCE,      /* not from the peer's address for that rail */
	RN_DROP_WINDOW,      /* sequence or ACK number outside the window */
	RN_DROP_DUPLICATE,   /* data already received */
	RN_DROP_COOKIE,      /* bad or stale handshake cookie */
	RN_DROP_STATE,       /* valid packet, wrong connection state */
	RN_DROP_AUTH,        /* message authentication failed */
	RN_DROP_RATE,        /* handshake from a source over its reply rate limit */
	RN_DROP_NOMEM,       /* data in the window, but no memory to grow the ring for it */
	RN_DROP_REPLAY,      /* a cookie used before, or a datagram older than its rail's traffic */
	RN_DROP__COUNT
} rn_drop;

const char *rn_drop_name(rn_drop d);

/* rn_addr (an IPv4 or IPv6 address and port) and rn_rail_addr (a rail) are in rn_addr.h. */

/*
 * Every knob of the protocol: one field per row of RN_KNOB_LIST (what users
 * set) and RN_CONFIG_LIST (the core's own), in rn_knob_list.h, which gives
 * each its meaning, unit, default and bounds.  rn_config_default() fills the
 * defaults; rn_config_check() says whether a configuration is usable.
 */
#define RN_CONFIG_FIELD_KNOB(NAME, field, kind, def, lo, hi, mca, doc) RN_KNOB_CTYPE_##kind field;
#define RN_CONFIG_FIELD(field, kind, def, lo, hi, doc) RN_KNOB_CTYPE_##kind field;
typedef struct rn_config {
	RN_KNOB_LIST(RN_CONFIG_FIELD_KNOB)
	RN_CONFIG_LIST(RN_CONFIG_FIELD)
	uint8_t keyed;             /* 1: datagrams are sealed under keys from key (rn_crypt.h) */
	uint8_t key[RN_KEY_LEN];   /* the cluster key; never logged */
} rn_config;
#undef RN_CONFIG_FIELD_KNOB
#undef RN_CONFIG_FIELD

/*
 * How keyed datagrams are sealed, as the handshake's tags bind it (rn_wire.h):
 * bit 0 integrity only, bit 1 AES-256.  Ends that differ fail the handshake
 * as ends with different keys do.
 */
static inline unsigned rn_config_seal_mode(const rn_config *cfg)
{
	return (cfg->auth_only ? 1u : 0u) | (cfg->aes256 ? 2u : 0u);
}

void rn_config_default(rn_config *cfg);
/* Returns 0 or RN_ERR_INVAL, with *why set to a sentence naming the bad knob. */
int rn_config_check(const rn_config *cfg, const char **why);
/*
 * Ring slots that hold `bytes` in packets of a datagram of max_dgram bytes:
 * a power of two within RN_MIN_SLOTS..RN_MAX_SLOTS (the BYTES knobs).
 */
uint32_t rn_config_slots(uint64_t bytes, uint32_t max_dgram);

/*
 * Memory comes from the caller.  Allocations happen at setup and, rarely, when
 * a connection's rings grow with its traffic (each time at least doubling, so
 * a handful of times in its life) or shrink after a long idle period; never
 * once per packet.
 */
typedef struct rn_mem {
	void *(*alloc)(void *user, size_t size); /* zeroed memory or NULL */
	void (*free)(void *user, void *ptr);
	void *user;
} rn_mem;

/* Events a driver may log or hand to the application. */
typedef enum rn_event_type {
	RN_EV_ESTABLISHED,
	RN_EV_RAIL_DOWN,
	RN_EV_RAIL_UP,
	RN_EV_PEER_CLOSED, /* the peer finished sending (EOF after its data) */
	RN_EV_CLOSED,      /* both directions closed cleanly (entering LINGER) */
	RN_EV_FAILED,      /* the connection died; err says why */
	RN_EV_ANSWERED,    /* client: the listener answered, COOKIE_ECHO goes out (the
			    * point where TCP's connect returns); ESTABLISHED follows */
} rn_event_type;

/* Why a rail changed state. */
typedef enum rn_cause {
	RN_CAUSE_NONE,
	RN_CAUSE_RX_COUNT,   /* receive count fell below fail_min in a window */
	RN_CAUSE_RX_SILENCE, /* nothing received for rail_timeout */
	RN_CAUSE_RX_SEEN,    /* packets arrive again */
	RN_CAUSE_PEER,       /* the peer reported it (LINK_STATE) */
	RN_CAUSE_LOCAL,      /* the driver reported a hard send error */
	RN_CAUSE_RX_SIZE,    /* small datagrams arrive, full-size ones do not (MTU black hole) */
	RN_CAUSE_SHARED,     /* another connection to the same peer judged it (rn_peer) */
	RN_CAUSE_ADDR_GONE,  /* the driver saw the rail's address removed (netlink) */
	RN_CAUSE_LINK_DOWN,  /* the driver saw the rail's link go down or away (netlink) */
	RN_CAUSE_ADDR_BACK,  /* the driver saw the rail's address come back */
	RN_CAUSE_LINK_UP,    /* the driver saw the rail's link come back up */
	RN_CAUSE_RAIL_NEW,   /* a rail that appeared at either end since the handshake (RAILS) */
	RN_CAUSE_ADDR_NEW,   /* the driver rebound the rail to another address of its interface */
} rn_cause;

const char *rn_cause_name(rn_cause c);

typedef struct rn_event {
	rn_event_type type;
	uint64_t time_ns;
	int rail;        /* path index for rail events, else -1 */
	rn_cause cause;
	int err;         /* RN_EV_FAILED: the rn_err */
	uint8_t rx_up;   /* after the event: rails this side receives on */
	uint8_t tx_up;   /* after the event: rails this side sends on */
} rn_event;

/*
 * A receiver's memory, shared by the connections it receives on (optional:
 * rn_env.rcvpool, one pool for every connection and listener of a process
 * that are driven under one lock).  Each connection's receive window is
 * the configured one (rcv_slots) but no more than an equal share of `bytes`
 * among the connections receiving now, in whole packets and halved to a
 * power of two so that the ring behind it fits in the share, and never less
 * than `floor_slots` (enough to keep a rail busy): many senders into one
 * receiver then promise together no more than it holds, instead of filling
 * the rings of the first few and losing the rest for want of memory.  A
 * window never shrinks below what was already advertised: the share takes
 * effect as the reader moves on, and a ring grown past its share (while
 * fewer received) goes back to it then.  No ring grows while the rings
 * together would pass `bytes`: a packet that would need it is dropped as
 * for want of memory and sent again, while the rings over their share
 * shrink.  Under
 * an allocator with a ceiling, give the pool at most 2/3 of it: a ring
 * moving to a block of half its size holds both for a moment.  The core
 * keeps `active` and `held`: a connection counts as receiving from its
 * first DATA until the sender's FIN has come in order, the connection
 * ends, or nothing came for 2 s.
 */
typedef struct rn_rcvpool {
	uint64_t bytes;       /* what the receive rings together may hold (0: no limit) */
	uint32_t floor_slots; /* the least window, packets (below RN_MIN_SLOTS: RN_MIN_SLOTS) */
	uint32_t active;      /* connections receiving now (the core's count) */
	uint64_t held;        /* bytes of receive ring the pool's connections hold (the core's) */
} rn_rcvpool;

/*
 * The window (packets, a power of two) a connection of `p` offers with
 * packets of pkt_bytes when `others` other connections receive: rcv_slots
 * halved until it fits in bytes / (others + 1), never below the floor.
 */
uint32_t rn_config_rcv_share(const rn_rcvpool *p, uint32_t rcv_slots, uint32_t pkt_bytes,
			     uint32_t others);

/* What the core needs from its environment. */
typedef struct rn_env {
	rn_mem mem;
	uint64_t (*rng)(void *user); /* unpredictable 64-bit values */
	void (*on_event)(void *user, const rn_event *ev); /* may be NULL */
	void *user;
	rn_rcvpool *rcvpool;         /* may be NULL: every window is rcv_slots */
	/*
	 * May be NULL.  Whether the calling thread may use the connection now
	 * (holds the driver's lock): the core asserts it at every entry that
	 * reads or changes the connection, in builds with RN_ASSERTS
	 * (rn_assert.h); elsewhere it is never called.
	 */
	int (*owns)(void *user);
} rn_env;

/* ---- counters ---- */

/*
 * A rail's own counters: the first part of rn_rail_stats.  A rail holds
 * these alone (rn_rail_counts, rn_rail.h); rn_conn_get_stats fills the
 * rest from the rail's state.
 */
#define RN_RAIL_COUNTERS                                                                     \
	rn_cause last_cause;                                                                 \
	uint64_t last_change_ns; /* time of the last state change, 0 = never */               \
	uint32_t down_events, up_events;                                                     \
	uint64_t tx_packets, tx_bytes, rx_packets, rx_bytes;                                 \
	uint64_t tx_data, rx_data; /* DATA packets */                                         \
	uint64_t retransmits;    /* DATA packets re-sent on this rail */                      \
	uint64_t lost;           /* DATA packets sent here and declared lost */               \
	uint64_t heartbeats, keepalives;                                                     \
	uint32_t mtu_holes;      /* times it failed as an MTU black hole (RN_CAUSE_RX_SIZE) */ \
	uint32_t small_ok;       /* largest datagram that still arrived then, bytes (0: none) */

typedef struct rn_rail_stats {
	RN_RAIL_COUNTERS
	rn_addr local, remote;
	int local_rail;          /* driver's rail index */
	uint8_t rx_up, tx_up;    /* this side receives / sends on it (its peer's newer verdicts included) */
	uint8_t backup;          /* a backup rail: DATA only while no other rail works (rn_rail_addr) */
	uint32_t cwnd, inflight; /* packets */
	uint64_t srtt_ns, min_rtt_ns;
	uint64_t queue_ns;       /* latest one-way queueing delay sample */
	uint32_t dgram;          /* full datagram size on this rail, bytes (UDP payload) */
} rn_rail_stats;

/*
 * A connection's own counters: every field of rn_conn_stats but the rails'
 * (each rail keeps its own, rn_rail.h).  A connection holds these alone
 * (rn_conn_counts, rn_conn.h), not RN_MAX_RAILS rail records it never fills.
 */
#define RN_CONN_COUNTERS                                                                     \
	int state;                                                                           \
	int err;                                                                             \
	uint64_t app_tx_bytes, app_rx_bytes; /* stream bytes written / delivered */           \
	uint64_t tx_packets, rx_packets;                                                     \
	uint64_t retransmits, rto_events, dup_data;                                          \
	uint64_t copies;          /* DATA packets sent a second time on another rail at once */ \
	uint64_t early_packets;   /* DATA sent before the COOKIE_ACK (rn_conn_set_early) */  \
	uint64_t sresets;         /* 1 if a stateless reset from the peer ended it */        \
	uint64_t unreach_ours;    /* ICMP port unreachable quoting a datagram we sent lately */ \
	uint64_t unreach_foreign; /* ...naming a peer rail of ours but quoting something else */ \
	uint64_t drops[RN_DROP__COUNT];                                                      \
	uint64_t established_ns;                                                             \
	uint32_t mss;                                                                        \
	/* the rings, which grow with use up to snd_slots / rcv_slots of rn_config */        \
	uint32_t snd_ring, rcv_ring; /* packets allocated now */                             \
	uint32_t ring_grows;         /* times either ring grew */                            \
	uint32_t ring_shrinks;       /* times both went back to their first size when idle */ \
	uint32_t ring_releases;      /* times an idle connection freed its rings' payload storage */ \
	int keyed;                   /* datagrams carry MACs under the cluster key */         \
	int npaths;

typedef struct rn_conn_stats {
	RN_CONN_COUNTERS
	rn_rail_stats rail[RN_MAX_RAILS];
} rn_conn_stats;

/* ---- connections ---- */

typedef enum rn_state {
	RN_ST_INIT_SENT,   /* client: INIT sent, waiting for INIT_ACK */
	RN_ST_COOKIE_SENT, /* client: COOKIE_ECHO sent, waiting for COOKIE_ACK */
	RN_ST_ESTABLISHED, /* data flows; FINs may be in progress */
	RN_ST_LINGER,      /* both directions closed; answering late FINs */
	RN_ST_CLOSED,      /* nothing more will happen; free it */
} rn_state;

const char *rn_state_name(int st);

typedef struct rn_conn rn_conn;

/* Where a datagram from rn_conn_write_pkt goes. */
typedef struct rn_tx {
	int local_rail; /* driver's rail index to send it on */
	rn_addr to;
	int path;       /* path index (for counters) */
} rn_tx;

/*
 * Opens a client connection to `peer` (any one rail address of the peer).
 * `local` lists this host's rails in the driver's order.  The INIT goes out on
 * the rail sharing the peer's subnet.  Returns 0, RN_ERR_NOROUTE,
 * RN_ERR_INVAL or RN_ERR_NOMEM.
 */
int rn_conn_connect(rn_conn **out, const rn_config *cfg, const rn_env *env,
		    const rn_rail_addr *local, int nlocal, rn_addr peer,
		    uint64_t now_ns);
/*
 * Client: bytes written once the INIT_ACK is in (RN_EV_ANSWERED) go at
 * once, right behind the COOKIE_ECHO on the handshake's rail, instead of
 * waiting a round trip for the COOKIE_ACK (docs/PROTOCOL.md, "Early
 * data").  Off by default: a driver whose first bytes the peer must not
 * see before its own hello (the BTL's, the provider's) leaves it off.
 */
void rn_conn_set_early(rn_conn *c, int on);
/* Whether rn_conn_write takes bytes in this state (established, or early data). */
int rn_conn_takes_bytes(const rn_conn *c);

/* What a listener hands over when a handshake completes (opaque to drivers). */
typedef struct rn_accept_params rn_accept_params;

/* Creates the server side of a connection from a validated COOKIE_ECHO. */
int rn_conn_accept(rn_conn **out, const rn_accept_params *p, const rn_env *env,
		   uint64_t now_ns);

/* Changes the user pointer passed to env.on_event. */
void rn_conn_set_user(rn_conn *c, void *user);

/* Frees a connection in any state.  No packet is sent. */
void rn_conn_del(rn_conn *c);

/*
 * This side's connection id: datagrams whose rn_wire_peek_dst() is this id
 * are its.  A client's id changes if its handshake restarts (a stale cookie):
 * drivers check it after rn_conn_on_timer.  Time passed to any call must
 * never go backwards.
 */
uint64_t rn_conn_id(const rn_conn *c);

/*
 * Feeds one datagram that arrived on driver rail `local_rail` from `from`.
 * Returns 0 if it was used, RN_ERR_DROP if it was dropped (counted).
 */
int rn_conn_recv(rn_conn *c, uint64_t now_ns, int local_rail, rn_addr from,
		 const uint8_t *pkt, size_t len);

/*
 * Writes the next datagram to send into buf.  `writable` has bit i set for
 * every driver rail i that can take a datagram now (back-pressure).  Returns
 * its length, 0 when there is nothing to send, or RN_ERR_NOBUF.
 */
ssize_t rn_conn_write_pkt(rn_conn *c, uint64_t now_ns, uint32_t writable,
			  uint8_t *buf, size_t cap, rn_tx *tx);

/* Reports a hard send error on a driver rail (unreachable, interface gone). */
void rn_conn_rail_error(rn_conn *c, uint64_t now_ns, int local_rail);

/*
 * Reports that driver rail local_rail cannot carry anything (its address
 * removed, its link down: `cause` says which, for the event): every path on
 * it stops sending at once, and what it held is resent on the others, as
 * for a send error.  rn_conn_rail_back undoes it.
 */
void rn_conn_rail_gone(rn_conn *c, uint64_t now_ns, int local_rail, rn_cause cause);

/*
 * Reports that driver rail local_rail works again (cause: why).  Its paths
 * send again as soon as the peer's verdict allows, and a heartbeat goes on
 * every rail at once so that both ends see it in one round trip.
 */
void rn_conn_rail_back(rn_conn *c, uint64_t now_ns, int local_rail, rn_cause cause);

/*
 * Reports a driver rail that appeared while c lives (an address came on a
 * listed interface): it becomes local rail c's next index (the driver's
 * rail index for c: one past the last).  The peer hears of it (RAILS,
 * resent until acknowledged) and every rail the two ends now share in a
 * subnet and no path uses yet becomes a path, used at once.  0,
 * RN_ERR_STATE (not established), RN_ERR_INVAL (no room, or not index
 * nlocal).
 */
int rn_conn_rail_add(rn_conn *c, uint64_t now_ns, int local_rail, const rn_rail_addr *a);

/*
 * Reports that local rail local_rail now has address a (its address went
 * away and the interface has another in the same family: the driver
 * rebound the rail's socket to it).  The rail keeps its index and its
 * paths; the peer hears of the new address in a RAILS, resent until
 * acknowledged, and addresses those paths to it from then on.  The paths
 * stay as the driver left them (gone, until rn_conn_rail_back).  0,
 * RN_ERR_STATE (not established), RN_ERR_INVAL (no such rail, or an
 * address of the other family or not valid).
 */
int rn_conn_rail_readdr(rn_conn *c, uint64_t now_ns, int local_rail, const rn_rail_addr *a);

/*
 * A connection handed to another process (rn_conn_move.c): a fresh server
 * connection (established, nothing of ours written, every byte of the
 * peer's read, no FIN, rails and keys as the handshake made them) written
 * into buf, rn_conn_move_size() bytes.  Returns that size, RN_ERR_STATE
 * (not fresh: it stays where it is) or RN_ERR_NOBUF.  c is left as it was:
 * the caller frees it (rn_conn_del: nothing is sent) once the taker has it.
 */
size_t rn_conn_move_size(void);
ssize_t rn_conn_export(const rn_conn *c, void *buf, size_t cap);
/*
 * A server connection's COOKIE_ACK waits for the answer to the client's
 * early DATA to carry it (rn_conn_send.c), and one still owed makes c
 * unfit to move: a driver about to export c calls this, and its next
 * flush sends the COOKIE_ACK at once.
 */
void rn_conn_cookie_ack_now(rn_conn *c);
/*
 * The taker's side: the connection again, on its own rails `local` (the
 * same addresses as the owner's, in the same order, other ports), which it
 * announces to the peer at once (a RAILS, as rn_conn_rail_readdr).  0,
 * RN_ERR_INVAL (not an exported connection, or other rails) or
 * RN_ERR_NOMEM.
 */
int rn_conn_import(rn_conn **out, const void *buf, size_t len, const rn_rail_addr *local,
		   int nlocal, const rn_env *env, uint64_t now_ns);

/* Reports that nothing listens at the address the INIT went to (ICMP). */
void rn_conn_refused(rn_conn *c, uint64_t now_ns);

/* How close together the port unreachables of all rails must be (rn_conn_unreachable). */
#define RN_UNREACH_WINDOW_NS UINT64_C(2000000000)

/*
 * Reports an ICMP port unreachable read on driver rail local_rail about a
 * datagram sent to dest, with the len bytes of it the error quoted (the UDP
 * payload).  Taken only when dest is the peer's address on a rail of ours
 * there and the quote is a datagram we sent lately (rn_quote.h); once every
 * rail we still send on has had one within RN_UNREACH_WINDOW_NS, the peer
 * process is gone and the connection fails with RN_ERR_RESET.  Returns 1 if
 * the error was about this connection (the caller may stop looking), else 0.
 */
int rn_conn_unreachable(rn_conn *c, uint64_t now_ns, int local_rail, rn_addr dest,
			const uint8_t *q, size_t len);

/*
 * Whether rn_conn_on_timer at now_ns judges a rail: one the receive count
 * found short, one silent for rail_timeout, or a primary that looks
 * stalled (rn_timer.c).  A driver reads every rail socket of the
 * connection before that call: packets of the suspect rail may wait
 * unread in its socket while a batch of another rail filled the count,
 * and every rail's packets while this process was held off the CPU (a
 * timer that fires late then finds all rails silent at once); any of them
 * clears the verdict.
 */
int rn_conn_verdict_pending(const rn_conn *c, uint64_t now_ns);

/*
 * The timers of a connection (rn_timer.c lists each, its period and why).
 * Some are armed by events (a hook in rn_timer.c named after the event);
 * the others follow from the connection's state (a rail's last arrival, its
 * oldest packet in flight).  Per-rail timers count as one: the earliest rail.
 */
typedef enum rn_timer_id {
	RN_TIMER_HANDSHAKE,  /* INIT / COOKIE_ECHO resent (armed) */
	RN_TIMER_CONNECT,    /* the connect gives up (armed) */
	RN_TIMER_COOKIE,     /* a cookie too old: a fresh INIT (armed) */
	RN_TIMER_ACK,        /* an owed ACK goes out (armed) */
	RN_TIMER_LINK_STATE, /* our LINK_STATE resent until acked (armed) */
	RN_TIMER_HEARTBEAT,  /* heartbeats while a rail is down (armed) */
	RN_TIMER_LINGER,     /* the end of the linger after a clean close (armed) */
	RN_TIMER_DEAD_PEER,  /* nothing from the peer on any rail */
	RN_TIMER_KEEPALIVE,  /* an idle working rail gets a keepalive */
	RN_TIMER_RAIL,       /* a rail silent too long, or judged by the receive count */
	RN_TIMER_LOSS,       /* a rail's oldest packet in flight is lost (RTO) */
	RN_TIMER_PMTU,       /* a rail's datagram size search */
	RN_TIMER_RING_IDLE,  /* grown rings go back to their first size */
	RN_TIMER__COUNT
} rn_timer_id;

/* The timer's name, for logs and tests ("handshake", "ack", ...). */
const char *rn_timer_name(int t);
/* Every timer's deadline now (UINT64_MAX: not armed in this state). */
void rn_conn_deadlines(const rn_conn *c, uint64_t at[RN_TIMER__COUNT]);
/* Earliest time rn_conn_on_timer must run, the least of rn_conn_deadlines; UINT64_MAX when none. */
uint64_t rn_conn_expiry(const rn_conn *c);
void rn_conn_on_timer(rn_conn *c, uint64_t now_ns);

/*
 * Appends stream bytes.  Returns the number accepted (may be fewer than len,
 * 0 when the send ring is full or its storage could not be made),
 * RN_ERR_SHUT after shutdown, a fatal code once the connection died,
 * RN_ERR_STATE before it is established (before the INIT_ACK with early
 * data, rn_conn_set_early).
 */
ssize_t rn_conn_write(rn_conn *c, uint64_t now_ns, const void *data, size_t len);
/*
 * Bytes rn_conn_write would accept now.  A connection idle long enough gave
 * its send ring's storage back (rn_conn_shrink): this call makes it again,
 * so the room it reports is really there (0 if the allocator failed, as for
 * a full ring).
 */
size_t rn_conn_write_space(rn_conn *c);
/* True when every byte written has been acknowledged. */
int rn_conn_write_done(const rn_conn *c);
/* True while this side still owes the peer something: unacknowledged bytes or FIN, or an ACK. */
int rn_conn_owes(const rn_conn *c);
/*
 * The stream bytes queued in the connection, as TCP's ioctls count them:
 * *rx, received in order and not read yet (SIOCINQ); *unacked, written and
 * not acknowledged by the peer, sent or not (SIOCOUTQ); *unsent, written and
 * never sent (SIOCOUTQNSD).  Each walks its ring: not for a hot path.
 */
void rn_conn_queued(const rn_conn *c, size_t *rx, size_t *unacked, size_t *unsent);

/*
 * Looks at the next in-order received bytes without copying: sets *data and
 * returns their count (>0), 0 at the peer's clean end of stream, RN_ERR_AGAIN
 * when nothing is ready, or the fatal code of a dead connection.  The bytes
 * stay put until rn_conn_consume, or until the next rn_conn_recv or
 * rn_conn_on_timer, which may move the ring (it grows and shrinks with use).
 */
ssize_t rn_conn_peek(rn_conn *c, const uint8_t **data);
/* Releases n bytes returned by rn_conn_peek. */
void rn_conn_consume(rn_conn *c, uint64_t now_ns, size_t n);
/* Copies up to len received bytes; same returns as rn_conn_peek. */
ssize_t rn_conn_read(rn_conn *c, uint64_t now_ns, void *buf, size_t len);

/* Ends this side's stream after the bytes already written (FIN). */
int rn_conn_shutdown(rn_conn *c, uint64_t now_ns);
/* Resets the connection: the peer gets RESET, further calls fail. */
void rn_conn_abort(rn_conn *c, uint64_t now_ns);

int rn_conn_state(const rn_conn *c);
/* The fatal rn_err that ended the connection, or 0. */
int rn_conn_error(const rn_conn *c);
/*
 * Whether a RESET ended the connection after the peer's whole stream (its
 * FIN in order): rn_conn_peek still gives its bytes, then 0 (the end).
 */
int rn_conn_ended_clean(const rn_conn *c);
void rn_conn_get_stats(const rn_conn *c, rn_conn_stats *st);
/*
 * True while a lingering connection (both FINs exchanged) should keep its
 * exiting process alive: for RN_EXIT_LINGER_RTOS of its retransmission
 * timeouts after the close, time enough for a peer whose ACK was lost to
 * send its FIN twice more and get ours.  A process that stays lingers for
 * the whole linger; one that exits need not wait for it.
 */
int rn_conn_exit_linger(const rn_conn *c, uint64_t now_ns);
/* Negotiated payload bytes per DATA packet. */
uint32_t rn_conn_mss(const rn_conn *c);
/* The peer address given to connect, or the peer's rail the handshake came from. */
rn_addr rn_conn_peer(const rn_conn *c);

/* ---- peer: one rail monitor for every connection to the same peer ---- */

/*
 * The rails of the connections between this process's rail sockets and one
 * remote process's (docs/PROTOCOL.md, "Rail health per peer"): what any
 * member receives is evidence for all, a verdict one member reaches (rail
 * down, up again; ours or the peer's LINK_STATE) is every member's at once,
 * and one member, the keeper, keeps the rails judged while the others are
 * idle and silent.  The driver owns the struct (it may not move while
 * connections are members) and serialises every call on its members (the
 * engine's host lock).  Both ends must group their connections: a driver
 * joins only connections whose peer is a driver that does too.
 */
typedef struct rn_peer_rail {
	rn_addr local, remote; /* the pair, as the members' path k */
	uint8_t rx_up, tx_up;  /* the shared verdicts: we receive / the peer receives on it */
	uint32_t ver;          /* the peer's gen when the verdict last changed */
	uint64_t last_rx_ns;   /* the last datagram any member received on it */
	uint64_t last_tx_ns;   /* the last datagram any member sent on it */
} rn_peer_rail;

typedef struct rn_peer {
	int nrails;
	rn_peer_rail rail[RN_MAX_RAILS];
	uint32_t gen;          /* bumped by every verdict: members compare it to theirs */
	uint64_t last_rx_any_ns;
	uint64_t last_payload_ns; /* the last DATA any member sent or received: the keeper's pace */
	uint64_t last_tx_any_ns;  /* the last datagram any member sent */
	uint64_t judge_from_ns;   /* no silence verdict before: the process was held off */
	uint8_t wake;          /* DATA after the peer's idleness: the keeper's deadlines moved */
	rn_conn *keeper;       /* keeps the rails judged (keepalives, silence, heartbeats) */
	rn_conn *members;      /* the list, through each member */
	uint32_t nmembers;
} rn_peer;

/*
 * Makes p the empty monitor of c's rails (c established).  0, or
 * RN_ERR_STATE before c has rails.
 */
int rn_peer_init(rn_peer *p, const rn_conn *c);
/* Whether c's rails are p's (the same pairs of addresses in the same order). */
int rn_peer_matches(const rn_peer *p, const rn_conn *c);
/*
 * Makes established connection c a member of p (it must match); the first
 * member is the keeper.  c takes p's verdicts at its next call.  0,
 * RN_ERR_STATE (not established, or already a member) or RN_ERR_INVAL.
 */
int rn_conn_join_peer(rn_conn *c, rn_peer *p, uint64_t now_ns);
/*
 * Takes c out of its peer (rn_conn_del does too).  Returns the member that
 * became the keeper (the driver must run its timers: it may not have
 * armed any while idle), or NULL.  p->nmembers 0: the driver may free p.
 */
rn_conn *rn_conn_leave_peer(rn_conn *c);
/* c's peer, or NULL. */
rn_peer *rn_conn_peer_of(const rn_conn *c);
/*
 * The keeper of c's peer if DATA of a member (any call on any member) ended
 * the peer's idleness since the last time this was asked: the keeper's pace
 * quickened (the driver must run its timers), else NULL.
 */
rn_conn *rn_peer_take_wake(rn_conn *c);
/* The user pointer of c's env (what env.on_event gets). */
void *rn_conn_user(const rn_conn *c);
/*
 * Whether c would send on path k now: its own send view, or a newer one of
 * its peer's that it takes at its next call.
 */
int rn_conn_rail_usable(const rn_conn *c, int k);

/* ---- listener (stateless handshake) ---- */

enum {
	RN_RL_BUCKETS = 256,     /* sources share this many rate-limit buckets */
	RN_RL_BURST = 256,       /* INIT_ACKs a source may get at once... */
	RN_RL_RATE = 1000,       /* ...and per second after that */
	RN_TRUST_SLOTS = 256,    /* sources that echoed a valid cookie, remembered (hashed) */
	RN_TRUST_BURST = 4096,   /* INIT_ACKs a trusted source may get at once... */
	RN_TRUST_RATE = 50000,   /* ...and per second after that */
};

/* How long a source that completed a handshake stays trusted (rn_listen.c). */
#define RN_TRUST_NS UINT64_C(30000000000)

/* A source that proved it receives at its address, and its own reply budget. */
typedef struct rn_trust {
	uint32_t ip;
	uint64_t until_ns; /* trusted before this (0: a free slot) */
	uint64_t tat;      /* when its replies are paid off, as rl_tat */
} rn_trust;

typedef struct rn_listener {
	rn_config cfg;
	rn_env env;
	uint8_t secret[RN_COOKIE_SECRET_LEN]; /* cookie key, from the driver's rng */
	uint32_t rl_salt;                     /* hides which sources share a bucket */
	uint64_t rl_tat[RN_RL_BUCKETS];       /* per bucket: when its replies are paid off */
	rn_trust trust[RN_TRUST_SLOTS];       /* verified sources, outside the buckets */
	rn_rail_addr rails[RN_MAX_RAILS];
	int nrails;
	uint64_t cookie_life_ns;
	rn_replay used;                       /* cookies accepted and still alive */
	uint64_t drops[RN_DROP__COUNT];
	uint64_t inits, accepts;
	uint64_t resets;          /* stateless resets sent for unknown connection ids */
	uint64_t resets_limited;  /* ...and not sent: the source was over its rate */
	uint64_t early_dropped;   /* early DATA for an id not made yet (its COOKIE_ECHO late or lost) */
	uint64_t bad_key_inits;   /* keyed: INITs whose tag failed (another cluster key, or none)... */
	rn_addr bad_key_from;     /* ...the last one's source... */
	uint64_t bad_key_told_ns; /* ...and when rn_listener_take_bad_key last reported them */
} rn_listener;

/* Sets up a listener; the secret is drawn from env->rng. */
/*
 * A rail that appeared (rn_conn_rail_add): the listener's next index; the
 * handshakes it answers from now on offer it.  0 or RN_ERR_INVAL (full).
 */
int rn_listener_rail_add(rn_listener *l, const rn_rail_addr *a);
/* Rail i's new address (rn_conn_rail_readdr): the handshakes it answers from now on offer it.  0 or RN_ERR_INVAL. */
int rn_listener_rail_set(rn_listener *l, int i, const rn_rail_addr *a);
int rn_listener_init(rn_listener *l, const rn_config *cfg, const rn_env *env,
		     const rn_rail_addr *rails, int nrails);

/*
 * Keyed: the INITs this listener refused under another cluster key (or none)
 * since the last report, at most once a second so that a retrying client or
 * a flood makes one log line: returns their count, 0 when there is nothing
 * to report now, and the last one's source in *from.
 */
uint64_t rn_listener_take_bad_key(rn_listener *l, uint64_t now_ns, rn_addr *from);

/* Wipes the listener's key and secrets before its memory goes (or accept params': their cfg). */
void rn_listener_wipe(rn_listener *l);

enum {
	RN_LISTEN_REPLY = 1,  /* send reply (reply_len bytes) back to `from` */
	RN_LISTEN_ACCEPT = 2, /* a handshake completed: call rn_conn_accept */
};

struct rn_accept_params {
	rn_config cfg;
	uint64_t id, peer_id;
	uint32_t isn, peer_isn;
	uint32_t dgram;      /* negotiated datagram size */
	uint32_t peer_slots; /* peer's receive ring */
	rn_rail_addr local[RN_MAX_RAILS];
	int nlocal;
	rn_rail_addr remote[RN_MAX_RAILS];
	int nremote;
	rn_addr from;        /* where the COOKIE_ECHO came from */
	int local_rail;
};

/*
 * Handles a datagram addressed to no connection the driver has (destination
 * id 0, or an id it does not know).  Allocates nothing.  Returns
 * RN_LISTEN_REPLY (an INIT_ACK, or a stateless reset answering a datagram
 * for an unknown id: send it back to `from` on the same rail),
 * RN_LISTEN_ACCEPT or RN_ERR_DROP.
 */
int rn_listener_recv(rn_listener *l, uint64_t now_ns, int local_rail,
		     rn_addr from, const uint8_t *pkt, size_t len,
		     uint8_t *reply, size_t cap, size_t *reply_len,
		     rn_accept_params *accepted);

/*
 * Says that the connection of an RN_LISTEN_ACCEPT could not be made (no
 * memory, a full accept queue): its cookie may be used once more, by the
 * client's next COOKIE_ECHO.  Every accept is otherwise final: the listener
 * refuses a cookie it accepted before (RN_DROP_REPLAY) for the cookie's life.
 */
void rn_listener_forget(rn_listener *l, const rn_accept_params *accepted);

/*
 * Says that the connection of an RN_LISTEN_ACCEPT is refused for good (the
 * process is out of its connection budget or descriptors): writes into
 * reply a stateless reset naming the id the client sent its COOKIE_ECHO
 * to, which ends the client's connect at once with RN_ERR_REFUSED (send it
 * to accepted->from on accepted->local_rail).  Returns its length, or 0
 * when the source is over its reply rate (the client's resent COOKIE_ECHO
 * gets the next try).
 */
size_t rn_listener_refuse(rn_listener *l, uint64_t now_ns, const rn_accept_params *accepted,
			  uint8_t *reply, size_t cap);

/* Destination connection id of a datagram, or 0 if too short to tell. */
uint64_t rn_wire_peek_dst(const uint8_t *pkt, size_t len);

/*
 * A stateless reset (a listener's answer to a datagram for a connection id
 * it does not know) has destination id 0 and names the id the peer no
 * longer knows: returns that id, or 0 if the datagram is not one.  Drivers
 * offer such a datagram to each connection of the port it came in on
 * (rn_conn_recv); the one whose peer had that id, at that address, fails
 * with RN_ERR_RESET, the others drop it after one comparison.
 */
uint64_t rn_wire_peek_sreset(const uint8_t *pkt, size_t len);

/*
 * Whether a datagram to a listener may accept a connection (a COOKIE_ECHO,
 * sealed or not): rn_listener_recv answers any other without a connection
 * made, so a driver may hand those to it where making one is not allowed.
 */
int rn_wire_peek_accepts(const uint8_t *pkt, size_t len);
/*
 * Whether a datagram is early data (DATA sent behind a COOKIE_ECHO, sealed
 * or not): a driver that put a COOKIE_ECHO aside for later keeps the early
 * data that followed it behind it, or the listener drops it as for an
 * unknown connection (its client sends it again, a timeout later).
 */
int rn_wire_peek_early(const uint8_t *pkt, size_t len);

/*
 * Whether a datagram to a listener opens a handshake (an INIT, sealed or
 * not): a driver whose accept queue is full may drop it unanswered, as TCP
 * drops a SYN then, so that a client's connect returns (RN_EV_ANSWERED)
 * only while there is room for it; the client resends its INIT.
 */
int rn_wire_peek_opens(const uint8_t *pkt, size_t len);

#endif
