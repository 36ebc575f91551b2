/*
 * conns_hole.h - ri2n-conns' black-hole probe (--hole-cmd, --probes): what a
 * connection that was idle while a rail died does with its first write.
 *
 * Both processes learn that the rail died from the first RAIL_DOWN event
 * after the fault (ri2n_read_event: it names the connection that judged it,
 * whose counters hold the verdict), then wait until that connection has the
 * rail down both ways.  Then each probed connection's first write goes out
 * and its echo comes back; the counters below, read before and after, say
 * whether either DATA packet went onto the dead rail or was resent.
 */
#ifndef CONNS_HOLE_H
#define CONNS_HOLE_H

#include <stdint.h>

/* The counters of one connection the probe compares. */
typedef struct hole_counts {
	uint64_t dead_data; /* DATA packets sent on the dead rail */
	uint64_t retx;      /* DATA packets resent, any rail */
	uint64_t rto;       /* retransmission timeouts */
	int seen_down;      /* the connection's own counters had the rail down for sending */
} hole_counts;

/* Drops every event waiting in the process's queue (the handshakes' ones). */
void hole_drain_events(void);

/*
 * Looks at the waiting events for the first RAIL_DOWN at or after since_ns
 * (CLOCK_MONOTONIC), without blocking.  1 with *fd and *rail set, else 0.
 */
int hole_next_down(uint64_t since_ns, int *fd, int *rail);

/* 1 when fd's counters have rail down both ways, 0 not yet, -1 if fd has no counters. */
int hole_rail_down(int fd, int rail);

/* Fills *c from fd's counters for the dead rail; -1 if fd has none. */
int hole_counts_of(int fd, int rail, hole_counts *c);

/* *d = b - a, field by field (seen_down: a's). */
void hole_counts_diff(const hole_counts *a, const hole_counts *b, hole_counts *d);

/*
 * Writes len (<= 64) bytes of the seeded pattern at offset off on the
 * connected descriptor fd (non-blocking) and waits at most timeout_s for
 * the same bytes to come back.  Returns the microseconds from the write to
 * the last byte of the echo; -1 if it failed or did not come; -2 if what came
 * back was not what was sent.
 */
double hole_echo(int fd, uint64_t seed, uint64_t off, unsigned len, double timeout_s);

/* The median and the largest of n values (sorts v). */
void hole_med_max(double *v, int n, double *med, double *max);

#endif
