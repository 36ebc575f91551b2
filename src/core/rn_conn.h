/*
 * rn_conn.h - the connection struct, shared by the files that make up a
 * connection: rn_conn.c (setup, application side, state changes),
 * rn_conn_recv.c (datagrams in), rn_conn_send.c (datagrams out) and
 * rn_timer.c (timers).
 */
#ifndef RN_CONN_H
#define RN_CONN_H

#include "rn_assert.h"
#include "rn_core.h"
#include "rn_crypt.h"
#include "rn_rail.h"
#include "rn_rob.h"
#include "rn_seq.h"
#include "rn_sndq.h"
#include "rn_wire.h"

/* A packet sent on a rail is lost once this many later ones on it are acked. */
#define RN_REORDER_THRESH 3u

/*
 * A RESET goes twice on every rail (rn_conn_fail): it is never resent or
 * acknowledged, and a peer that misses it waits for its dead-peer timeout.
 * Bit k of rst_pending owes rail k its first copy, bit k + RN_RST_AGAIN
 * the second.
 */
#define RN_RST_AGAIN 16

/*
 * Idle pace (rn_timer.c): after RN_IDLE_NS without DATA either way, a
 * connection checks its rails RN_IDLE_SCALE times less often (keepalive,
 * rail timeout, heartbeat), so that thousands of idle connections cost
 * little; the first DATA restores the full pace at once.
 */
#define RN_IDLE_NS UINT64_C(1000000000)
#define RN_IDLE_SCALE 10u

/*
 * The connection's state in groups.  Each group is owned by one file: that
 * file gives its fields their meaning and does the bookkeeping; the others
 * set a flag or read a value through the names below.
 */

/* The handshake: rn_conn.c owns it (connect, accept, restart, established). */
struct rn_conn_hs {
	int rail;              /* driver rail the handshake runs on */
	uint32_t isn, peer_isn;
	uint64_t start_ns;     /* first INIT: the connection's first RTT sample */
	uint8_t tries, due;    /* resends of this step (rn_timer.c's backoff); one is due */
	uint8_t cookie[RN_COOKIE_LEN];
	uint8_t cookie_ack_due;
	uint8_t early;         /* the driver lets bytes go before the COOKIE_ACK (rn_conn_set_early) */
	uint8_t *carry;        /* bytes written before a restarted handshake, for the next ring */
	uint32_t carry_len;
};

/* ACKs we owe: rn_conn_recv.c owns them; rn_conn_send.c writes and clears them. */
struct rn_conn_ack {
	uint8_t pending, now;  /* an ACK is owed; it may not wait for the delay */
	uint32_t unacked;      /* packets since the last ACK (cfg.ack_every) */
	uint64_t first_ns;     /* the first packet the owed ACK covers */
	uint64_t data_tx_ns;   /* last new DATA sent */
	uint64_t data_rx_ns;   /* last new DATA stored */
	uint32_t last_new_seq; /* ...its sequence number */
	/*
	 * Per rail, the newest packet received: its ts and our arrival time.
	 * ACK blocks echo one rail's in turn, so every rail gets one-way delay
	 * samples whatever the pattern of arrivals.
	 */
	struct {
		uint32_t ts, rx_us;
		uint8_t valid;
	} echo[RN_MAX_RAILS];
	unsigned echo_next;
	uint32_t adv_edge;     /* window edge last advertised */
	/*
	 * The longest late answers counted (rn_conn_hold_sample), us: ours, which
	 * set how long we may hold an ACK while answering, and the peer's, which
	 * set how long we allow it to (rn_conn_hold_limit).  pp: the owed ACK
	 * waits as an answer's; late: it went alone at the end of that wait with
	 * nothing of ours unacknowledged, and the next new DATA says so.  Ours
	 * counts once the peer acknowledged that DATA (late_seq; late_us its
	 * answer), so we never wait longer than the peer allows.
	 */
	uint32_t held_us, peer_held_us;
	uint32_t late_seq, late_us;
	uint8_t pp, late, late_sent;
};

/*
 * LINK_STATE, our receive view, resent until the peer acks its version:
 * rn_timer.c owns the resends; rn_conn.c bumps the version, rn_conn_send.c
 * writes the frames, rn_conn_recv.c takes the peer's.
 */
struct rn_conn_link {
	uint32_t version, acked;
	uint64_t interval_ns;  /* the retry's backoff */
	uint32_t pending;      /* rails owed a copy of the current LINK_STATE */
	uint32_t peer_version; /* newest peer LINK_STATE applied */
	uint8_t ack_due;
	uint32_t ack_version;
};

/* Probes owed, one bit per rail: rn_conn_send.c owns them; rn_timer.c sets them. */
struct rn_conn_probe {
	uint32_t hb_pending, ka_pending; /* rails owed a heartbeat / keepalive */
	uint32_t hb_small_pending;       /* down rails owed an unpadded heartbeat too */
	uint32_t ka_full_pending;        /* rails owed a padded keepalive */
	uint32_t pm_pending;             /* rails whose size search has a probe due */
	uint32_t pm_ack_pending;         /* rails owed a PROBE_ACK */
};

/*
 * Freshness, rn_conn_recv.c's alone: our arrival time minus the peer's send
 * time, in us on both clocks, is the one-way delay plus a constant.  Its
 * smallest value is the baseline; a datagram far above it is a replay.
 */
struct rn_conn_fresh {
	uint32_t base;         /* smallest offset up to the last period */
	uint32_t min;          /* smallest offset of fresh datagrams this period */
	uint8_t valid, seen;
	uint64_t since_ns;     /* start of this period */
	uint32_t ts_max;       /* newest send time of any fresh datagram */
	uint32_t full_ts_max;  /* ...and of any full-size one (0: none yet) */
	uint32_t stale_min;    /* this period's datagrams judged stale: smallest offset... */
	uint32_t stale_ts_hi;  /* ...and newest send time */
	uint8_t stale_seen;
};

/* The receive-count window that judges rails: rn_conn_recv.c's alone (count_rx). */
struct rn_conn_win {
	uint32_t total;        /* packets in the current evaluation window */
	uint32_t full_total;   /* ...of them full-size */
};

/*
 * When traffic was last seen: rn_timer.c owns them (idle pace, ring shrink,
 * dead peer); the files that move DATA stamp them.
 */
struct rn_conn_live {
	uint64_t last_data_ns;    /* last DATA sent or stored: idle rings shrink */
	uint64_t last_payload_ns; /* last DATA sent or received: the idle pace (RN_IDLE_NS) */
	uint64_t active_since_ns; /* DATA resumed after an idle pause: rail timeouts count from here */
	uint64_t last_rx_any_ns;  /* any datagram: the dead-peer timer */
	uint64_t last_tx_any_ns;  /* any datagram sent: a long gap means the process was held off */
	uint64_t judge_from_ns;   /* held off: no silence verdict before this (rn_timer.c) */
};

/*
 * The connection's place in its receive pool (env.rcvpool, rn_core.h):
 * rn_conn.c owns it; rn_conn_recv.c and rn_timer.c join and leave through
 * the functions below.
 */
struct rn_conn_pool {
	uint8_t rx;            /* counted as receiving in the pool's active */
	uint64_t held;         /* receive ring bytes counted in the pool's held */
};

/*
 * Membership of a peer's shared rail monitor (rn_peer.c owns it): the
 * list links, the peer's gen and each rail's verdict version last taken.
 */
struct rn_conn_peer {
	rn_peer *p;
	rn_conn *next, *prev;
	uint32_t gen;
	uint32_t seen[RN_MAX_RAILS];
	uint8_t taking;        /* taking the peer's verdict: not pushed back */
};

/*
 * The copy a small write's DATA packet owes (RI2N_REDUNDANT_BYTES):
 * rn_conn_send.c's alone.  Set when the packet goes out, written by the
 * next call on the best other working rail (rn_rail_choose_copy).
 */
struct rn_conn_dup {
	uint8_t due;
	uint8_t rail;          /* the path the packet itself went on */
	uint32_t seq;
};

/*
 * Rails that appear while the connection lives (rn_conn_rails.c's alone):
 * the peer's rail list as last heard, our RAILS resent until acknowledged
 * (with LINK_STATE's timer), the peer's acknowledged.
 */
struct rn_conn_rails {
	rn_rail_addr *remote;     /* nremote of them (rn_conn_set_rails) */
	int nremote;
	uint32_t version, acked;  /* our RAILS: version 0 was the handshake's */
	uint32_t pending;         /* paths owed a copy of it */
	uint32_t peer_version;    /* the newest RAILS of the peer's taken */
	uint8_t ack_due;
	uint32_t ack_version;
};

/* The close: rn_conn.c owns it (rn_conn_check_close). */
struct rn_conn_close {
	uint8_t fin_acked, peer_fin_seen;
	uint32_t rst_pending;  /* rails still owed a RESET; bit k + RN_RST_AGAIN its second copy */
};

/* rn_conn_stats without its rail array (rn_core.h): rn_conn_get_stats fills that from the rails. */
typedef struct rn_conn_counts {
	RN_CONN_COUNTERS
} rn_conn_counts;

struct rn_conn {
	rn_config cfg;
	rn_env env;
	int state;
	int err;
	uint8_t is_client;
	uint64_t id, peer_id;

	/* addresses */
	rn_rail_addr *local;   /* nlocal of them (rn_conn_set_rails) */
	int nlocal;
	rn_addr peer;          /* connect() target, or where the COOKIE_ECHO came from */

	struct rn_conn_hs hs;

	/* negotiated */
	uint32_t dgram, mss, peer_slots;

	/* rails */
	int npaths;
	/*
	 * npaths rails, allocated by rn_conn_setup_paths for the rails the two
	 * ends share (rail_n of them): not RN_MAX_RAILS inside every connection.
	 */
	rn_rail *rail;
	int rail_n;
	unsigned rr_data, rr_ctl;   /* round-robin cursors */
	struct rn_conn_win win;

	/* streams */
	uint8_t bufs_ready;
	rn_sndq sq;
	rn_rob rq;
	uint32_t peer_wnd;          /* peer's window edge: we send seq < peer_wnd */
	uint32_t grow_hold;         /* send ring: no new try to grow before nxt passes this */

	struct rn_conn_ack ack;
	struct rn_conn_link link;
	struct rn_conn_rails rails;
	struct rn_conn_probe probe;
	struct rn_conn_fresh fresh;
	struct rn_conn_live live;
	struct rn_conn_close close;
	struct rn_conn_dup dup;
	struct rn_conn_pool pool;
	uint64_t unreach_ns[RN_MAX_RAILS]; /* last port unreachable taken per rail (rn_conn_dead.c) */
	struct rn_conn_peer peer_m;
	uint64_t rtt_ns;            /* connection RTT from timestamp echoes */

	/* keyed: the connection's keys (rn_crypt.h) and where datagrams are opened to */
	rn_crypt *cr;
	uint8_t *plain;
	size_t plain_cap;

	/* deadlines of the timers events arm (rn_timer.c's hooks); 0: never armed */
	uint64_t timer[RN_TIMER__COUNT];

	rn_conn_counts st;
};

/* rn_conn.c */
void rn_conn_emit(rn_conn *c, rn_event_type type, uint64_t now_ns, int rail,
		  rn_cause cause, int err);
void rn_conn_fail(rn_conn *c, uint64_t now_ns, int err);
void rn_conn_set_rx(rn_conn *c, int k, int up, rn_cause cause, uint64_t now_ns);
/*
 * A small heartbeat came on rail k.  The peer sends one on a rail it cannot
 * use right after a padded one: if the rail is down here and two heartbeat
 * rounds in a row brought the small one alone, it is an MTU black hole:
 * counted and reported once (RN_EV_RAIL_DOWN again, cause
 * RN_CAUSE_RX_SIZE).  Only a report: the rail stays down either way.
 */
void rn_conn_on_small_heartbeat(rn_conn *c, int k, uint64_t now_ns);
void rn_conn_set_tx(rn_conn *c, int k, int peer_up, int local_err, rn_cause cause,
		    uint64_t now_ns);
void rn_conn_check_close(rn_conn *c, uint64_t now_ns);
void rn_conn_restart_handshake(rn_conn *c, uint64_t now_ns);
/* Client, at the INIT_ACK after a restart: the early bytes carried go into the new ring. */
int rn_conn_early_restore(rn_conn *c);
/*
 * Sets one of c's rail lists (&c->local, &c->nlocal or &c->rails.remote,
 * &c->rails.nremote) to the n addresses at a: a connection holds the rails
 * it knows, not RN_MAX_RAILS of each.  The lists never shrink; one that
 * grows is allocated anew (a may point into the old one).  RN_ERR_NOMEM
 * leaves it as it was.
 */
int rn_conn_set_rails(rn_conn *c, rn_rail_addr **list, int *count, const rn_rail_addr *a, int n);
int rn_conn_setup_paths(rn_conn *c, const rn_rail_addr *client, int nclient,
			const rn_rail_addr *server, int nserver, uint64_t now_ns);
/* rn_conn_rails.c: path r from local rail li (address l) to the peer's rail ri (m), unused yet. */
int rn_conn_init_path(rn_conn *c, rn_rail *r, int li, const rn_rail_addr *l, int ri,
		      const rn_rail_addr *m, uint32_t snd_slots, uint64_t now_ns);
/*
 * Appends a path from local rail li (address l) to the peer's rail ri
 * (address m), set up as the handshake's are; the array of paths grows.
 * 0 or RN_ERR_NOMEM (nothing changed).
 */
int rn_conn_add_path(rn_conn *c, int li, const rn_rail_addr *l, int ri, const rn_rail_addr *m,
		     uint64_t now_ns);
/*
 * rn_conn_rails.c: every local rail has a new address at once (local[i] for
 * rail i, n = nlocal: a connection handed to another process, rn_conn_move.c);
 * the peer hears it in one RAILS.  0, RN_ERR_STATE or RN_ERR_INVAL.
 */
int rn_conn_rails_moved(rn_conn *c, uint64_t now_ns, const rn_rail_addr *local, int n);
/* rn_conn_rails.c: a RAILS or RAILS_ACK arrived; whether a RAILS copy is owed and its payload. */
void rn_conn_recv_rails(rn_conn *c, const rn_pkt *p, uint64_t now_ns);
void rn_conn_recv_rails_ack(rn_conn *c, const rn_pkt *p);
ssize_t rn_conn_rails_payload(const rn_conn *c, uint8_t *buf, size_t cap);
uint64_t rn_conn_rtt_estimate(const rn_conn *c);
uint32_t rn_conn_paths_mask(const rn_conn *c);
/* The first size of a ring of packets of mss bytes that may grow to max_slots (rn_conn_mem.c). */
uint32_t rn_conn_ring_init_slots(uint32_t mss, uint32_t max_slots);
/*
 * rn_conn_ack.c: the ACK block as it stands, with as many SACK words as fit
 * in room bytes (0 if not even the block fits); a late answer's block
 * echoing the newest arrival instead; an ACK block sent in h (the owed ACK
 * settled).
 */
int rn_conn_build_ack(rn_conn *c, rn_ackblk *ab, uint64_t *words, size_t room);
void rn_conn_echo_newest(const rn_conn *c, rn_ackblk *ab);
void rn_conn_ack_sent(rn_conn *c, const rn_ackblk *ab, const rn_hdr *h);
/* Whether an ACK lies within what we sent; what it acknowledges and what it shows lost. */
int rn_conn_ack_valid(const rn_conn *c, const rn_pkt *p);
void rn_conn_recv_ack(rn_conn *c, const rn_pkt *p, uint64_t now_ns);
/*
 * How long an owed ACK may wait while answering, given the longest late
 * answer counted so far; and a late answer (a DATA's ts less the arrival
 * time it echoes, us) counted into *held_us.
 */
uint64_t rn_conn_hold_limit(const rn_config *cfg, uint32_t held_us);
void rn_conn_hold_sample(const rn_config *cfg, uint32_t *held_us, uint32_t wait_us);
void rn_conn_grow_send(rn_conn *c);
/*
 * The receive window shared through env.rcvpool (rn_core.h): the window
 * this connection offers now (packets), the edge to advertise (never below
 * the last one), and its place in the pool's count of receivers.
 */
uint32_t rn_conn_rcv_share(const rn_conn *c);
uint32_t rn_conn_rcv_edge(const rn_conn *c);
void rn_conn_pool_join(rn_conn *c);
void rn_conn_pool_leave(rn_conn *c);
void rn_conn_shrink_to_share(rn_conn *c);
/* Counts the receive ring's size now in the pool's held bytes. */
void rn_conn_pool_account(rn_conn *c);
/* Whether packet seq may land: 0 if it needs the ring to grow past the pool. */
int rn_conn_pool_room(const rn_conn *c, uint32_t seq);
int rn_conn_can_shrink(const rn_conn *c);
void rn_conn_shrink(rn_conn *c, uint64_t now_ns);

/* A verdict of the peer's taken without telling our peer (rn_peer.c): see rn_peer_sync. */
void rn_conn_take_rx(rn_conn *c, int k, int up, uint64_t now_ns);

/*
 * rn_peer.c: the member's side of the shared monitor.  All are no-ops (or
 * give the connection's own values) when c is in no peer.
 */
/* Takes the peer's verdicts newer than c's: at every entry point, before anything else. */
void rn_peer_sync(rn_conn *c, uint64_t now_ns);
/* Whether c receives on path k: its own view, or a newer one of its peer's (for its counters). */
int rn_peer_rx_view(const rn_conn *c, int k);
/* c reached a verdict of its own on path k: it becomes the peer's. */
void rn_peer_on_verdict(rn_conn *c, int k);
/* A datagram arrived on path k: evidence for every member. */
void rn_peer_on_rx(rn_conn *c, int k, uint64_t now_ns);
/* The last arrival on path k, or on any rail, by any member (c's own if none). */
uint64_t rn_peer_rx_ns(const rn_conn *c, int k);
uint64_t rn_peer_rx_any_ns(const rn_conn *c);
/* A datagram went out on path k of member c. */
void rn_peer_on_tx(rn_conn *c, int k, uint64_t now_ns);
/* The last datagram sent on path k by c or any member of its peer. */
uint64_t rn_peer_tx_ns(const rn_conn *c, int k);
/* The last datagram sent on any rail by c or any member of its peer. */
uint64_t rn_peer_tx_any_ns(const rn_conn *c);
/* No silence verdict before at_ns for c and every member of its peer (rn_timer.c). */
void rn_peer_defer_silence(rn_conn *c, uint64_t at_ns);
/* The time silence verdicts wait for, c's own or its peer's (0: none). */
uint64_t rn_peer_judge_from_ns(const rn_conn *c);
/* DATA went one way or the other on member c (rn_conn_note_payload). */
void rn_peer_note_payload(rn_conn *c, uint64_t now_ns);
/* The last DATA of c or of any member of its peer: the idle pace's reference. */
uint64_t rn_peer_payload_ns(const rn_conn *c);
/*
 * Whether c leaves its rails to the keeper: a member, not the keeper,
 * owing nothing, with nothing in flight: it arms no keepalive, rail
 * silence, heartbeat or size search of its own.
 */
int rn_peer_muted(const rn_conn *c);
/* Whether another member of c's peer keeps the rails judged (an open keeper). */
int rn_peer_kept(const rn_conn *c);

/* rn_conn_recv.c */
void rn_conn_detect_losses(rn_conn *c, uint64_t now_ns);
void rn_conn_lose_rail(rn_conn *c, int k, uint64_t now_ns);
/* The rails (a bit per path) that carry no DATA now: backups while another rail works. */
uint32_t rn_conn_idle_backups(const rn_conn *c);

/*
 * rn_timer.c: the hooks that arm timers, each named after its event.
 */
/* connect(): the first INIT at once, the give-up at connect_timeout. */
void rn_timer_on_connect(rn_conn *c, uint64_t now_ns);
/* Back to INIT for a fresh cookie: an INIT at once. */
void rn_timer_on_handshake_restart(rn_conn *c, uint64_t now_ns);
/* An INIT_ACK brought a cookie: its COOKIE_ECHO at once; a fresh INIT if it ages. */
void rn_timer_on_cookie(rn_conn *c, uint64_t now_ns);
/* An INIT or COOKIE_ECHO was sent: arms its resend (250 ms, doubling to 2 s). */
void rn_timer_on_handshake_sent(rn_conn *c, uint64_t now_ns);
/* The first packet an ACK will cover arrived: the ACK goes out `delay` later. */
void rn_timer_on_ack_owed(rn_conn *c, uint64_t now_ns, uint64_t delay_ns);
/* Our receive view changed: LINK_STATE at once, then retries from the first interval. */
void rn_timer_on_link_state_changed(rn_conn *c, uint64_t now_ns);
/* A rail stopped carrying our packets: the first heartbeat right away. */
void rn_timer_on_rail_tx_down(rn_conn *c, uint64_t now_ns);
/*
 * A rail works again one way (its interface back, the peer's packets arriving
 * on it while ours do not): a heartbeat on every rail right away, so that the
 * peer sees it in a round trip rather than at its next heartbeat (100 ms).
 */
void rn_timer_on_rail_back(rn_conn *c, uint64_t now_ns);
/* A port unreachable was taken: a keepalive is owed at once on `rails` (rn_conn_dead.c). */
void rn_timer_on_unreachable(rn_conn *c, uint32_t rails, uint64_t now_ns);
/* DATA after an idle pause: a rail that is down is tried at the full pace now. */
void rn_timer_on_data_resumed(rn_conn *c, uint64_t now_ns);
/* A datagram is going out (before rn_peer_on_tx): a long gap before it defers silence verdicts. */
void rn_timer_on_tx(rn_conn *c, uint64_t now_ns);
/* Both directions closed: linger, then CLOSED. */
void rn_timer_on_closed(rn_conn *c, uint64_t now_ns);
/* Rail k's RTO plus the longest the peer may hold its ACK. */
uint64_t rn_conn_rail_rto(const rn_conn *c, int k);

/*
 * The owner check (rn_env.owns): an entry point that reads or changes c
 * asserts that its driver let the calling thread use c now.
 */
#define RN_OWNED(c) RN_ASSERT(!(c)->env.owns || (c)->env.owns((c)->env.user))

/*
 * Moves c to state `to`.  States only move forward (INIT_SENT, COOKIE_SENT,
 * ESTABLISHED, LINGER, CLOSED), but for a client going back from COOKIE_SENT
 * to INIT_SENT for a fresh cookie (rn_conn_restart_handshake); a closed
 * connection never moves again.  Checked where RN_ASSERT is (rn_assert.h).
 */
static inline void rn_conn_move(rn_conn *c, rn_state to)
{
	RN_ASSERT(c->state != RN_ST_CLOSED);
	RN_ASSERT((int)to > c->state || (c->state == RN_ST_COOKIE_SENT && to == RN_ST_INIT_SENT));
	c->state = to;
}

/* DATA to send: a lost packet to resend (maybe stale), or a new one the peer's window takes. */
static inline int rn_conn_data_owed(const rn_conn *c)
{
	return !rn_sndq_lost_empty(&c->sq) || (c->sq.nxt != c->sq.end && rn_seq_lt(c->sq.nxt, c->peer_wnd));
}

/* DATA went one way or the other: an idle connection is active again (RN_IDLE_NS). */
static inline void rn_conn_note_payload(rn_conn *c, uint64_t now_ns)
{
	/* a muted member's rails were the keeper's to judge: its own silence counts from now */
	if (now_ns - c->live.last_payload_ns >= RN_IDLE_NS ||
	    (rn_peer_kept(c) && now_ns - c->live.last_payload_ns >= c->cfg.keepalive_ns)) {
		c->live.active_since_ns = now_ns;
		rn_timer_on_data_resumed(c, now_ns);
	}
	c->live.last_payload_ns = now_ns;
	rn_peer_note_payload(c, now_ns);
}

/*
 * TCP's LAST_ACK: the peer's whole stream came (its FIN in order) and ours
 * is acknowledged up to our FIN; only the FIN's own ACK is missing.
 */
int rn_conn_last_ack(const rn_conn *c);
/* Ends a connection in rn_conn_last_ack cleanly: CLOSED, no error, RN_EV_CLOSED. */
void rn_conn_end_closed(rn_conn *c, uint64_t now_ns);

/* rn_conn_send.c */
static inline uint32_t rn_now_us(uint64_t now_ns) { return (uint32_t)(now_ns / 1000); }

#endif
