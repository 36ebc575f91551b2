/*
 * sim_star.h - several hosts on shared switches, one switch per rail.
 *
 * Host h plugs into each rail's switch by one port; a datagram from host a
 * to host b on rail r waits in a's port towards the switch (a drop-tail
 * queue drained at the port's rate), crosses half the rail's delay, then
 * waits in the switch's port towards b (the shared bottleneck when several
 * hosts send to b: a finite drop-tail buffer), and crosses the other half.
 * Faults: random loss at the switch, and windows of black hole per rail
 * (the switch silently drops everything; the links look up).  All chance
 * comes from one seeded generator and equal times keep insertion order, so
 * a seed replays exactly.
 *
 * On it, senders 0..N-1 each stream a seeded pattern to host N over one
 * ri2n connection; host N accepts them all on one listener and checks every
 * byte.  The bytes each connection delivers are counted per time bin, for
 * fairness (Jain's index) over virtual time.
 *
 * The receiver may be given little memory: its application then reads only
 * every read_every_ns (a busy process), its allocator refuses ring growth
 * past rx_mem_max bytes (as the Open MPI BTL's ceiling does: a connection's
 * setup is always granted), and with use_pool its connections share their
 * receive windows through one rn_rcvpool of that size (rn_core.h).
 */
#ifndef SIM_STAR_H
#define SIM_STAR_H

#include "rn_core.h"
#include "sim_net.h"

#define STAR_MAX_HOSTS 17 /* 16 senders and the receiver */
#define STAR_MAX_BINS 400

typedef struct star_port {
	uint64_t busy_until_ns; /* when its queue will have drained */
} star_port;

typedef struct star_rail {
	uint64_t rate_bps;     /* every port on this rail */
	uint64_t delay_ns;     /* host to host, half each side of the switch */
	uint64_t queue_bytes;  /* each port's buffer */
	double loss;           /* at the switch, per datagram */
	uint64_t hole_from_ns, hole_to_ns; /* the switch black-holes everything */
} star_rail;

typedef struct star_flow {
	rn_conn *tx;            /* on the sender */
	rn_conn *rx;            /* on the receiver */
	uint64_t start_ns;      /* the sender connects at this time */
	uint64_t to_send, sent, recvd;
	uint64_t seed;
	int started, shut, eof, err, rx_err;
	uint64_t mismatches;
	uint64_t eof_ns;
	uint64_t bin_bytes[STAR_MAX_BINS]; /* bytes delivered to the receiver per bin */
} star_flow;

typedef struct star_pkt {
	uint64_t at_ns, order;
	int from, to, rail;
	int at_switch;          /* 1: reaching the switch, 0: reaching the host */
	uint16_t len;
	uint8_t *data;
} star_pkt;

typedef struct star {
	int nsenders, nrails;
	star_rail rail[SIM_MAX_RAILS];
	star_port up[STAR_MAX_HOSTS][SIM_MAX_RAILS];   /* host -> switch */
	star_port down[STAR_MAX_HOSTS][SIM_MAX_RAILS]; /* switch -> host */
	rn_rail_addr addr[STAR_MAX_HOSTS][SIM_MAX_RAILS];
	rn_config cfg;
	rn_listener lis;
	star_flow flow[STAR_MAX_HOSTS - 1];
	uint64_t rng, hrng[STAR_MAX_HOSTS];
	star_pkt *heap;
	size_t nheap, capheap;
	uint64_t order;
	uint64_t now_ns, limit_ns, bin_ns;
	int hung;
	uint64_t dropped_queue, dropped_loss, dropped_hole;
	/* the receiver's memory (all 0: unlimited, reads at once) */
	uint64_t read_every_ns, next_read_ns;
	uint64_t rx_mem_max, rx_mem_used, rx_mem_peak, rx_mem_refused;
	int rx_setup;           /* a connection is being set up: granted past the ceiling */
	int use_pool;
	rn_rcvpool pool;
} star;

/* nsenders senders and a receiver on nrails rails whose ports all run at rate_bps. */
void star_init(star *s, int nsenders, int nrails, uint64_t rate_bps, uint64_t seed);
void star_free(star *s);
/* Runs until every flow has closed at both ends, or until limit_ns. */
void star_run(star *s);

#endif
