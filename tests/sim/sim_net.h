/*
 * sim_net.h - a deterministic network of rails between two simulated hosts.
 *
 * Each rail has two directions, each a drop-tail queue drained at `rate`
 * (bits per second of UDP payload: the protocol's own efficiency is what is
 * measured, not IP/Ethernet framing), then a fixed one-way delay.  Faults:
 * random loss, duplication, reordering (extra random delay), and timed
 * windows of black-hole (packets arriving in the window are silently
 * dropped, the link looks up) or link down (the same, and a sender sending
 * in the window is told, as a pulled cable would tell it).  A window with a
 * direction only affects packets leaving that host.  A window with a size
 * limit (sim_net_mtu_window) only swallows datagrams longer than it, as a
 * rail whose path MTU shrank without telling anyone (an MTU black hole);
 * one lasting for ever is a rail with a smaller MTU.
 * Everything random comes from one seeded generator; events with equal times
 * keep their order of insertion, so a seed replays exactly.
 */
#ifndef SIM_NET_H
#define SIM_NET_H

#include <stddef.h>
#include <stdint.h>

#define SIM_MAX_RAILS 8
#define SIM_MAX_WINDOWS 16
#define SIM_NEVER UINT64_MAX

typedef struct sim_link {
	uint64_t rate_bps;    /* 0: infinitely fast */
	uint64_t delay_ns;
	uint64_t queue_bytes; /* drop-tail limit of the queue before the link */
	double loss, dup, reorder;
	uint64_t reorder_ns;  /* reordered packets get up to this much extra delay */
	double mangle;        /* an on-path attacker also delivers a mangled copy
				 (bits flipped, cut short or lengthened) of this
				 fraction of packets, from the same source */
	double junk;          /* with this fraction of packets a hostile datagram
				 follows: random bytes, a well-formed packet to a
				 connection id nobody holds, or an INIT or
				 COOKIE_ECHO with made-up fields */
	uint64_t replay_ns;   /* an attacker past a black hole records the last
				 datagram each host got through the rail and, while
				 the hole lasts, re-sends it to the other host every
				 replay_ns (the hole does not swallow the copies) */
} sim_link;

typedef struct sim_window {
	uint64_t from_ns, to_ns;
	int down; /* 1: link down (sender told), 0: black hole */
	int dir;  /* -1 both directions, else only packets leaving host `dir` */
	uint32_t above; /* 0: every packet; else only datagrams longer than this */
} sim_window;

typedef struct sim_pkt {
	uint64_t at_ns, order;
	int to_host, rail;
	uint16_t len;
	uint8_t injected; /* sent by the attacker beyond any fault */
	uint8_t *data;
} sim_pkt;

typedef struct sim_dir {
	uint64_t busy_until_ns; /* when the queue will have drained */
} sim_dir;

typedef struct sim_net {
	int nrails;
	sim_link link[SIM_MAX_RAILS];
	sim_dir dir[SIM_MAX_RAILS][2];
	sim_window win[SIM_MAX_RAILS][SIM_MAX_WINDOWS];
	int nwin[SIM_MAX_RAILS];
	uint64_t rng;
	sim_pkt *heap;
	size_t nheap, capheap;
	uint64_t order;
	/* counters */
	uint64_t sent[SIM_MAX_RAILS][2], delivered[SIM_MAX_RAILS][2];
	uint64_t sent_bytes[SIM_MAX_RAILS][2];
	uint64_t sent_type[SIM_MAX_RAILS][2][16]; /* by packet type (byte 1) */
	uint64_t dropped_queue, dropped_fault, dropped_loss, duplicated, mangled, junk;
	/* replay_ns: the recording per rail and sending host, and when it goes next */
	uint8_t *rec[SIM_MAX_RAILS][2];
	uint16_t rec_len[SIM_MAX_RAILS][2];
	uint64_t rec_next[SIM_MAX_RAILS][2];
	uint64_t replayed;
} sim_net;

void sim_net_init(sim_net *n, int nrails, uint64_t seed);
void sim_net_free(sim_net *n);
/* Adds a fault window on a rail. */
void sim_net_window(sim_net *n, int rail, uint64_t from_ns, uint64_t to_ns, int down, int dir);
/* Adds a black hole of the datagrams (UDP payloads) longer than `above` bytes. */
void sim_net_mtu_window(sim_net *n, int rail, uint64_t from_ns, uint64_t to_ns, uint32_t above,
			int dir);

/* 1 when host's queue on rail can take a packet at now. */
int sim_net_writable(const sim_net *n, int host, int rail, uint64_t now_ns);
/* When the queue will be writable again (now if it is). */
uint64_t sim_net_writable_at(const sim_net *n, int host, int rail, uint64_t now_ns);
/* Sends; returns 0, or -1 when the link is down (the sender's hard error). */
int sim_net_send(sim_net *n, uint64_t now_ns, int from_host, int rail,
		 const uint8_t *data, size_t len);
/* Time of the next delivery, SIM_NEVER if none. */
uint64_t sim_net_next(const sim_net *n);
/* Takes the next packet due at or before now; 1 if one was taken (free p->data). */
int sim_net_pop(sim_net *n, uint64_t now_ns, sim_pkt *p);

/* splitmix64 step and a double in [0,1), shared by the harness. */
uint64_t sim_rand(uint64_t *state);
double sim_uniform(uint64_t *state);

#endif
