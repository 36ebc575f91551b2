/*
 * rn_rail.h - everything a connection knows about one rail.
 *
 * A connection's rails are the pairs (local rail, peer rail) that share a
 * subnet, numbered in the client's rail order so both ends agree on the index
 * carried in every header.  Each rail has two independent views:
 *
 *   rx_up    this side receives on it (decided here by receive counting)
 *   tx_up    this side may send on it (the peer's verdict, via LINK_STATE,
 *            and no local send error)
 *
 * plus its congestion state: packets in flight, a congestion window that
 * grows additively and shrinks multiplicatively on the queueing delay the
 * rail builds up (so a slow rail never holds more than about queue_target
 * of data, and flows sharing a bottleneck converge to equal shares; see
 * docs/PROTOCOL.md), RTT estimates, and a FIFO of
 * transmissions in send order for per-rail loss detection: a rail is a FIFO
 * link, so a packet is lost once packets sent after it on the same rail have
 * been acknowledged, whatever the reordering between rails.
 */
#ifndef RN_RAIL_H
#define RN_RAIL_H

#include <stdint.h>

#include "rn_core.h"
#include "rn_pmtu.h"

/*
 * The RTO's ceiling, and the longest round trip believed: a sample above it
 * (a process or a peer held off the CPU, a clock step) says nothing of the
 * path and would stretch every timer derived from the RTT.
 */
#define RN_RTO_MAX_NS UINT64_C(2000000000)

/* One transmission, in a rail's send-order FIFO. */
typedef struct rn_txrec {
	uint32_t seq;
	uint32_t idx; /* the rail's transmission index */
} rn_txrec;

enum {
	RN_DRAIN_OFF = 0,
	RN_DRAIN_EMPTY = 1,   /* at the least window until what it sent before is acknowledged */
	RN_DRAIN_MEASURE = 2, /* one more round at the least window, taking the delay floor */
};

/* rn_rail_stats without what rn_conn_get_stats reads from the rail itself (rn_core.h) */
typedef struct rn_rail_counts {
	RN_RAIL_COUNTERS
} rn_rail_counts;

typedef struct rn_rail {
	int local_rail; /* driver's rail index */
	int remote_rail; /* index in the peer's rail list */
	rn_addr local, remote;

	/* receive view */
	uint8_t rx_up;
	uint32_t win_rx;         /* packets this evaluation window */
	uint8_t win_short;       /* the last window already brought too few */
	uint8_t suspect;         /* judged failed by count; the next timer call decides */
	uint64_t suspect_ns;     /* when the count judged it */
	/* the longest gap between packets on this working rail, this and last second */
	uint64_t gap_cur_ns, gap_prev_ns, gap_since_ns;
	uint64_t gap_full_cur_ns, gap_full_prev_ns; /* the same between full-size datagrams */
	uint64_t last_rx_ns;
	uint32_t last_rx_ts;     /* the peer's send time (us) of the last packet on it */
	uint64_t grace_until_ns; /* just recovered: not judged by count yet */
	/*
	 * Full-size evidence (see count_rx in rn_conn_recv.c): a rail that
	 * loses large datagrams and passes small ones (an MTU black hole) must
	 * not be kept up or revived by the small ones.
	 */
	uint32_t win_full;       /* full-size datagrams this evaluation window */
	uint64_t last_full_rx_ns;
	uint32_t last_full_rx_ts; /* the peer's send time (us) of the last full-size one */
	uint32_t small_max;      /* largest datagram below full size since the last full one */
	uint8_t small_alone;     /* down: small heartbeats whose padded twin was lost, in a row */
	uint8_t mtu_hole;        /* down, and known to be an MTU black hole */

	/*
	 * Its datagram size, found by probing (rn_pmtu.h): a rail whose size
	 * holds several packets carries them in one datagram (RN_F_MULTI).
	 * bundle_lost counts packets sent in such datagrams lost in a row with
	 * none of them acknowledged: RN_BUNDLE_HOLE of them is a black hole
	 * at that size (rn_conn_recv.c).
	 */
	rn_pmtu pm;
	uint32_t pm_ack_id, pm_ack_size; /* a PROBE_ACK we owe on this rail */
	uint32_t bundle_lost;

	/* send view */
	/*
	 * The peer's address on this rail came from its hello; without a key
	 * anyone can write a hello, naming someone else's address.  Until a
	 * datagram of the connection arrives from that address (or the
	 * handshake ran over it, or the hello was authenticated) the rail
	 * carries no DATA and no ACKs, only keepalives (one per keepalive
	 * period, or per quarter window of packets on the others: a 44-byte
	 * datagram per 25 sent, which is also what proves the address to the
	 * peer): a listener cannot be made to stream at a third host.
	 */
	uint8_t validated;
	uint8_t backup;    /* DATA only while no other rail works (rn_rail_addr.backup) */
	uint8_t stalled;   /* nothing acknowledged here for RN_STALL_NS with packets out (rn_timer.c) */
	uint8_t peer_up;    /* the peer receives on it (LINK_STATE) */
	uint8_t local_err;  /* the driver saw a hard send error */
	uint64_t last_tx_ns;
	uint64_t last_full_tx_ns; /* keepalives go padded when nothing full went for a while */
	uint64_t tx_mark;   /* the connection's packet count at the last send here */

	/* congestion control and RTT */
	uint32_t cwnd, inflight;
	uint64_t last_ack_ns;  /* last time a packet sent here was acknowledged */
	uint32_t tx_idx;       /* next transmission index */
	uint32_t acked_idx;    /* one past the highest index acknowledged */
	uint32_t round_end;    /* index closing the current round trip */
	uint32_t recover_idx;  /* losses of packets sent before this are one event */
	uint8_t startup;       /* still doubling per round */
	uint8_t cwnd_limited;  /* hit the window during this round */
	uint8_t dec_hold;      /* shrank at the end of the last round: this one is stale */
	uint8_t rto_backoff;
	uint64_t srtt_ns, rttvar_ns, min_rtt_ns, min_rtt_stamp;
	/* one-way delay (peer clock minus ours, wrapping us): its floor, and the queue above it */
	uint32_t owd_min;
	uint8_t owd_valid;
	uint64_t owd_stamp;
	uint64_t round_q_ns, latest_q_ns; /* this round's queue (ns, see end_round), the last sample */
	uint32_t round_q_n;                /* queue samples this round */
	/*
	 * The drain (see rn_rail.c): once per period of the peer's clock a window-limited
	 * rail drops to RN_CWND_MIN until its own queue has gone, measures the
	 * delay floor over one round, and goes back to drain_saved.
	 */
	uint8_t drain;          /* RN_DRAIN_* */
	uint32_t drain_saved;   /* the window before it, restored after */
	uint32_t drain_owd;     /* least one-way delay while measuring */
	uint8_t drain_owd_valid;
	uint64_t drain_next_ns; /* the next one without the peer's clock (0: no round ended yet) */
	uint32_t drain_epoch;   /* the peer's clock period of the last one */
	uint32_t peer_clock_us; /* the peer's clock at the last ACK (its arrival time) */
	uint8_t peer_clock_valid;

	/* send-order FIFO of transmissions */
	rn_txrec *fifo;
	uint32_t fhead, ftail, fmask;

	rn_rail_counts st;
} rn_rail;

static inline int rn_rail_tx_up(const rn_rail *r) { return r->peer_up && !r->local_err; }

/*
 * Pairs local and remote rails by subnet: for each local rail in order, the
 * first unused remote rail in the same subnet.  Writes pairs[k] = {local
 * index, remote index}; returns the number of pairs.
 */
int rn_rail_match(const rn_rail_addr *local, int nlocal,
		  const rn_rail_addr *remote, int nremote, int pairs[][2]);

/* True if a and b are in the same subnet of prefix length `prefix`. */
int rn_rail_same_subnet(uint32_t a, uint32_t b, uint8_t prefix);

/*
 * The rail choice: the first rail at or after `start` (round robin) whose bit
 * is set in `usable`.  Returns its index or -1.  Callers build `usable` from
 * rails that are up, writable, and have room in their window.
 */
int rn_rail_choose(uint32_t usable, int nrails, unsigned start);

/*
 * The rail for the copy of a packet sent on `primary` (RI2N_REDUNDANT_BYTES):
 * of the other rails in `usable` (built as for rn_rail_choose), one we also
 * receive on, then one with an RTT measured, then the lowest smoothed RTT;
 * the lowest index on a tie.  Returns its index, or -1 when no other rail
 * is usable (then there is no copy).
 */
int rn_rail_choose_copy(const rn_rail *rails, int nrails, uint32_t usable, int primary);

int rn_rail_init(rn_rail *r, const rn_mem *mem, uint32_t fifo_slots, uint32_t init_cwnd);
void rn_rail_free(rn_rail *r, const rn_mem *mem);
/*
 * Moves the send-order FIFO into fifo_slots entries (a power of two that
 * holds every entry): it follows the send ring as that grows or shrinks.
 * 0, RN_ERR_NOMEM with the FIFO untouched, or RN_ERR_INVAL.
 */
int rn_rail_fifo_resize(rn_rail *r, const rn_mem *mem, uint32_t fifo_slots);

/* True if the rail may take another DATA packet (window not full). */
static inline int rn_rail_has_room(const rn_rail *r) { return r->inflight < r->cwnd; }

/* Records a DATA transmission; returns its index. 0 if the FIFO was full (caller treats the oldest as lost). */
uint32_t rn_rail_on_send(rn_rail *r, uint32_t seq, uint64_t now_ns);

/* An RTT sample from a packet that was sent once. */
void rn_rail_on_rtt(rn_rail *r, uint64_t rtt_ns, uint64_t now_ns);
/*
 * A one-way delay sample: the peer's arrival time minus our send time, in
 * wrapping microseconds (the clocks' offset cancels against the floor).
 * Queueing is measured one way so that the peer's own traffic queued in the
 * other direction, which delays our ACKs, does not count against us.
 */
void rn_rail_on_owd(rn_rail *r, uint32_t owd_us, const rn_config *cfg, uint64_t now_ns);
/* A packet sent on this rail with index idx was acknowledged. */
void rn_rail_on_acked(rn_rail *r, uint32_t idx, const rn_config *cfg, uint32_t max_cwnd,
		      uint64_t now_ns);
/*
 * A packet sent on this rail with index idx was declared lost.  It shrinks
 * the window (x0.7, once per round trip; during a drain, the window the
 * drain goes back to) only when the rail shows queueing: a loss on an empty
 * queue is noise on the wire (or a failing rail, which the receiver
 * judges), and backing off from it would only cost throughput.
 */
void rn_rail_on_lost(rn_rail *r, uint32_t idx, const rn_config *cfg);

/* Retransmission timeout of this rail. */
uint64_t rn_rail_rto(const rn_rail *r, const rn_config *cfg);

#endif
