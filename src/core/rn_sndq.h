/*
 * rn_sndq.h - the send ring: stream bytes cut into packets, kept until acked.
 *
 * Bytes written by the application are cut into packets of at most `mss`
 * bytes when they are written (a short last packet keeps filling while it is
 * unsent, so small writes coalesce).  Marks through the ring:
 *
 *   una  oldest packet not yet acknowledged
 *   nxt  first packet never sent
 *   end  one past the last packet written
 *
 * Each slot remembers its last transmission (rail, time, per-rail index) so
 * an ACK can be charged to the rail that carried it.  Packets declared lost
 * wait in a FIFO to be sent again.
 *
 * The ring starts small and is resized by doubling (rn_sndq_resize) up to
 * max_slots, the configured RI2N_SNDBUF: memory follows what a connection
 * moves, not how many connections there are.  rn_sndq_space() only ever
 * promises room the ring has now, so a write never needs to allocate; the
 * connection decides when to grow (rn_conn_send.c).
 *
 * The payload storage (buf, slots * mss bytes: nearly all of a ring's
 * memory) exists only while the ring is in use: it is made on the first
 * write (rn_sndq_ensure) and given back once everything written is
 * acknowledged and the connection has been idle (rn_sndq_release, called by
 * rn_conn_shrink).  The slots, marks and lost FIFO stay, so a released ring
 * keeps its place in the stream; a FIN needs no storage.
 */
#ifndef RN_SNDQ_H
#define RN_SNDQ_H

#include <stddef.h>
#include <stdint.h>

#include "rn_core.h"

enum rn_sflag {
	RN_SS_FIN = 0x01,    /* the FIN: no payload, ends the stream */
	RN_SS_ACKED = 0x02,  /* selectively acknowledged (una has not passed it) */
	RN_SS_LOST = 0x04,   /* declared lost, waiting in the lost FIFO */
	RN_SS_FLIGHT = 0x08, /* its last transmission is in flight */
	RN_SS_MULTI = 0x10,  /* its last transmission shared a datagram with others (RN_F_MULTI) */
	RN_SS_COPY = 0x20,   /* a copy of it is in flight on copy_rail (RI2N_REDUNDANT_BYTES) */
	RN_SS_SMALL = 0x40,  /* part of a small write: each transmission goes with a copy */
};

typedef struct rn_sslot {
	uint64_t sent_ns;  /* time of the last transmission */
	uint32_t tx_idx;   /* per-rail index of the last transmission */
	uint32_t copy_idx; /* per-rail index of its copy (RN_SS_COPY) */
	uint16_t len;
	uint8_t flags;
	uint8_t rail;      /* path of the last transmission */
	uint8_t tx_count;  /* transmissions so far (a copy is not one) */
	uint8_t copy_rail; /* path of its copy (RN_SS_COPY) */
} rn_sslot;

typedef struct rn_sndq {
	const rn_mem *mem; /* for the payload storage: outlives the ring (the connection's own) */
	uint8_t *buf;      /* slots * mss bytes, or NULL while unused (see above) */
	rn_sslot *slot;
	uint32_t *lostq;          /* FIFO of lost sequence numbers */
	uint32_t lost_head, lost_tail;
	uint32_t slots, mask, mss; /* slots: allocated now, a power of two */
	uint32_t max_slots;        /* the most it may grow to (RI2N_SNDBUF) */
	uint32_t una, nxt, end;
	uint8_t fin_queued;
	uint64_t bytes_written;
} rn_sndq;

/*
 * Sets up a ring of `slots` packets of `mss` bytes that may grow to
 * max_slots (both powers of two, slots <= max_slots); `mem` must outlive
 * the ring.  0 or RN_ERR_NOMEM.
 */
int rn_sndq_init(rn_sndq *q, const rn_mem *mem, uint32_t slots, uint32_t max_slots,
		 uint32_t mss, uint32_t isn);
void rn_sndq_free(rn_sndq *q, const rn_mem *mem);
/* Makes the payload storage if the ring has none: 0 or RN_ERR_NOMEM. */
int rn_sndq_ensure(rn_sndq *q, const rn_mem *mem);
/* Frees the payload storage if nothing written is unacknowledged: 1 if it did. */
int rn_sndq_release(rn_sndq *q, const rn_mem *mem);

/*
 * Moves the ring into `slots` packets (a power of two, at least what it
 * holds, at most max_slots): bigger to grow, smaller to give memory back.
 * Every packet, mark and lost-FIFO entry keeps its meaning.  0, or
 * RN_ERR_NOMEM with the ring untouched, or RN_ERR_INVAL.
 */
int rn_sndq_resize(rn_sndq *q, const rn_mem *mem, uint32_t slots);

static inline rn_sslot *rn_sndq_slot(rn_sndq *q, uint32_t seq)
{
	return &q->slot[seq & q->mask];
}
/* A packet's payload; NULL while the ring has no storage (then every packet is a FIN). */
static inline uint8_t *rn_sndq_data(rn_sndq *q, uint32_t seq)
{
	return q->buf ? q->buf + (size_t)(seq & q->mask) * q->mss : NULL;
}

/* Bytes rn_sndq_write would take now. */
size_t rn_sndq_space(const rn_sndq *q);
/* Payload bytes of the packets in [from, q->end): from = una, not acknowledged; nxt, never sent. */
size_t rn_sndq_bytes_from(const rn_sndq *q, uint32_t from);
/* Appends bytes (making the payload storage if there is none); returns how many it took. */
size_t rn_sndq_write(rn_sndq *q, const uint8_t *data, size_t len);
/* Appends the FIN; RN_ERR_AGAIN if the ring is full. */
int rn_sndq_fin(rn_sndq *q);

/* Queues a packet for retransmission (it must be in [una, nxt)). */
void rn_sndq_lost_push(rn_sndq *q, uint32_t seq);
/* Next packet to retransmit, skipping ones acked since; 0 if none, 1 with *seq set. */
int rn_sndq_lost_pop(rn_sndq *q, uint32_t *seq);
static inline int rn_sndq_lost_empty(const rn_sndq *q)
{
	return q->lost_head == q->lost_tail;
}

#endif
