/*
 * rn_rob.h - the receive reorder ring.
 *
 * Packets are stored by sequence number in a ring of `cap` packet buffers
 * of `mss` bytes.  Three marks move forward through it:
 *
 *   base  oldest packet the application has not finished reading
 *   nxt   first missing packet: everything before it is in order
 *   max   one past the highest packet received
 *
 * The sender may send up to base + wnd (the advertised window edge).  The
 * window is the configured RI2N_RCVBUF from the start, so the sender is
 * never held back by a ring still small; the ring itself starts small and
 * doubles (moving what it holds) when a packet lands beyond it, up to wnd
 * packets.  Growth is rare (a handful of times in a connection's life) and
 * amortised over the packets that filled the ring; when the allocator
 * fails, the packet is dropped and counted (RN_ROB_NOMEM) and the sender
 * resends it like any loss.  Only connections that receive a lot pay for a
 * big ring; an idle one keeps a few packets' worth.
 *
 * The payload storage (buf, cap * mss bytes: nearly all of the ring's
 * memory) exists only while the ring is in use: the first packet stored
 * makes it, and rn_rob_release gives it back once everything received was
 * read (the connection calls it after an idle period, rn_conn_shrink).
 * lens, have and the marks stay, so a released ring keeps its place in the
 * stream and its window.
 *
 * One bit per slot says "received" (at least 64 bits, see rn_bits.h).  A
 * FIN is a zero-length packet; reading reaches it as end of stream.
 */
#ifndef RN_ROB_H
#define RN_ROB_H

#include <stddef.h>
#include <stdint.h>

#include "rn_core.h"

typedef struct rn_rob {
	const rn_mem *mem; /* for growing: outlives the ring (the connection's own) */
	uint8_t *buf;      /* cap * mss bytes */
	uint16_t *lens;    /* payload length of each slot */
	uint64_t *have;    /* received bit per slot, bmask + 1 bits */
	uint32_t cap, mask, bmask, mss; /* cap: slots allocated now (a power of two) */
	uint32_t wnd;      /* window, packets: the most cap may grow to */
	uint32_t base, nxt, max;
	uint32_t off;      /* bytes already read from slot `base` */
	uint32_t fin_seq;
	uint8_t fin_known; /* the FIN has arrived (maybe out of order) */
	uint64_t bytes_in; /* payload bytes stored, for counters */
	uint32_t grows;    /* times the ring grew */
	uint64_t nomem;    /* packets dropped: no memory to grow for them */
} rn_rob;

enum {
	RN_ROB_NEW = 0,  /* stored */
	RN_ROB_DUP = 1,  /* already had it */
	RN_ROB_OUT = 2,  /* outside the window */
	RN_ROB_BAD = 3,  /* contradicts the FIN or too long */
	RN_ROB_NOMEM = 4,/* in the window, but the ring could not grow to hold it */
};

/*
 * Sets up a ring of `cap` packets of `mss` bytes and a window of `wnd`
 * packets (both powers of two, cap <= wnd); `mem` must outlive the ring.
 * 0, RN_ERR_NOMEM or RN_ERR_INVAL.
 */
int rn_rob_init(rn_rob *r, const rn_mem *mem, uint32_t cap, uint32_t wnd, uint32_t mss,
		uint32_t isn);
void rn_rob_free(rn_rob *r, const rn_mem *mem);
/* Whether nothing is left to read but (maybe) the end of stream. */
int rn_rob_drained(const rn_rob *r);

/* Frees the payload storage if the ring holds nothing (rn_rob_drained): 1 if it did. */
int rn_rob_release(rn_rob *r);

/*
 * Moves the ring into `cap` slots (a power of two, at most wnd, holding
 * every packet stored from base on): bigger to grow, smaller to give memory
 * back when idle.  0, RN_ERR_NOMEM with the ring untouched, RN_ERR_INVAL.
 */
int rn_rob_resize(rn_rob *r, uint32_t cap);

/* Stores a packet (growing the ring if it lands beyond it); one of RN_ROB_*. */
int rn_rob_insert(rn_rob *r, uint32_t seq, const uint8_t *data, uint16_t len, int fin);

/* The most bytes one peek returns: bounds the work of a peek and of one write of it. */
#define RN_ROB_PEEK_MAX (256u * 1024)

/*
 * Next in-order bytes: >0 count with *data set, 0 at end of stream, RN_ERR_AGAIN.
 * The bytes of one packet, or of a run of full packets that are contiguous
 * in the ring (at most RN_ROB_PEEK_MAX).
 */
ssize_t rn_rob_peek(const rn_rob *r, const uint8_t **data);
/* Marks n bytes of the last peek as read. */
void rn_rob_consume(rn_rob *r, size_t n);
/* Bytes readable now: every in-order byte up to the first gap or the FIN. */
size_t rn_rob_ready(const rn_rob *r);

/* Window edge to advertise: the sender may send seq < edge. */
static inline uint32_t rn_rob_edge(const rn_rob *r) { return r->base + r->wnd; }

/* Fills up to maxw SACK words for seq nxt+1 onwards; returns how many are needed (<= maxw). */
unsigned rn_rob_sack(const rn_rob *r, uint64_t *words, unsigned maxw);

/* True once every packet up to and including the FIN has arrived. */
static inline int rn_rob_fin_in_order(const rn_rob *r)
{
	return r->fin_known && (int32_t)(r->nxt - r->fin_seq) > 0;
}

#endif
