/*
 * rn_rob.h - the receive reorder ring.
 *
 * Packets are stored by sequence number in a ring of `slots` packet buffers
 * of `mss` bytes.  Three marks move forward through it:
 *
 *   base  oldest packet the application has not finished reading
 *   nxt   first missing packet: everything before it is in order
 *   max   one past the highest packet received
 *
 * The sender may send up to base + slots (the advertised window edge), so a
 * packet always has a slot.  One bit per slot says "received".  A FIN is a
 * zero-length packet; reading reaches it as end of stream.
 */
#ifndef RN_ROB_H
#define RN_ROB_H

#include <stddef.h>
#include <stdint.h>

#include "rn_core.h"

typedef struct rn_rob {
	uint8_t *buf;      /* slots * mss bytes */
	uint16_t *lens;    /* payload length of each slot */
	uint64_t *have;    /* received bit per slot */
	uint32_t slots, mask, mss;
	uint32_t base, nxt, max;
	uint32_t off;      /* bytes already read from slot `base` */
	uint32_t fin_seq;
	uint8_t fin_known; /* the FIN has arrived (maybe out of order) */
	uint64_t bytes_in; /* payload bytes stored, for counters */
} rn_rob;

enum {
	RN_ROB_NEW = 0,  /* stored */
	RN_ROB_DUP = 1,  /* already had it */
	RN_ROB_OUT = 2,  /* outside the window */
	RN_ROB_BAD = 3,  /* contradicts the FIN or too long */
};

int rn_rob_init(rn_rob *r, const rn_mem *mem, uint32_t slots, uint32_t mss, uint32_t isn);
void rn_rob_free(rn_rob *r, const rn_mem *mem);

/* Stores a packet; returns one of RN_ROB_*. */
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

/* Window edge to advertise: the sender may send seq < edge. */
static inline uint32_t rn_rob_edge(const rn_rob *r) { return r->base + r->slots; }

/* Fills up to maxw SACK words for seq nxt+1 onwards; returns how many are needed (<= maxw). */
unsigned rn_rob_sack(const rn_rob *r, uint64_t *words, unsigned maxw);

/* True once every packet up to and including the FIN has arrived. */
static inline int rn_rob_fin_in_order(const rn_rob *r)
{
	return r->fin_known && (int32_t)(r->nxt - r->fin_seq) > 0;
}

#endif
