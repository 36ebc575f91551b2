/*
 * rn_conn_mem.c - a connection's rings: growing the send ring with the
 * window, the receive share of the process's pool, shrinking both after
 * idleness (the part of rn_conn.c that owns memory).
 */
#include <stddef.h>
#include <string.h>

#include "rn_conn.h"
#include "rn_seq.h"

/*
 * 16 KiB: the payload each ring of a new connection holds (8 packets at the
 * usual 1448 bytes).  An idle connection then touches a few pages of rings
 * in all, well inside DESIGN.md's 64 KiB per idle connection, which also
 * pays for the driver's share; a busy one grows its rings (rn_conn_grow_send,
 * rn_rob_insert) to what its traffic needs, up to RI2N_SNDBUF / RI2N_RCVBUF.
 */
#define RN_RING_INIT_BYTES (16u * 1024)
/* 2 packets: the smallest first ring, so jumbo datagrams still start with a few. */
#define RN_RING_INIT_MIN 2u

/* The first size of a ring of packets of mss bytes that may grow to max_slots. */
uint32_t rn_conn_ring_init_slots(uint32_t mss, uint32_t max_slots)
{
	uint32_t n = RN_RING_INIT_MIN;

	while ((size_t)n * 2 * mss <= RN_RING_INIT_BYTES)
		n *= 2;
	return n < max_slots ? n : max_slots;
}

/*
 * The send ring limits the flight: half of it or more is in flight, so the
 * rails' windows (or the peer's) have outgrown it and the application's
 * next bytes would wait for ACKs with the rails idle.  Double it, and the
 * rails' send-order FIFOs with it (they hold twice the ring), as TCP's
 * autotuning keeps its send buffer at about twice the congestion window.
 * Called after new data goes out; growing is rare (log2 of RI2N_SNDBUF over
 * the first ring: 8 times at most by default) and goes through the
 * environment's allocator.  A failed allocation leaves the ring as it is
 * (the stream goes on at its pace) and is not tried again before another
 * ring's worth of packets has gone.
 */
void rn_conn_grow_send(rn_conn *c)
{
	rn_sndq *q = &c->sq;
	const rn_mem *mem = &c->env.mem;
	uint32_t slots = q->slots * 2;

	if (q->slots >= q->max_slots || 2 * (q->nxt - q->una) < q->slots ||
	    rn_seq_lt(q->nxt, c->grow_hold))
		return;
	for (int k = 0; k < c->npaths; k++) {
		if (rn_rail_fifo_resize(&c->rail[k], mem, 2 * slots) < 0) {
			c->grow_hold = q->nxt + q->slots;
			return;
		}
	}
	if (rn_sndq_resize(q, mem, slots) < 0) {
		c->grow_hold = q->nxt + q->slots;
		return;
	}
	c->st.ring_grows++;
}

uint32_t rn_conn_rcv_share(const rn_conn *c)
{
	const rn_rcvpool *p = c->env.rcvpool;

	if (!p)
		return c->rq.wnd;
	return rn_config_rcv_share(p, c->rq.wnd, c->mss, p->active - c->pool.rx);
}

uint32_t rn_conn_rcv_edge(const rn_conn *c)
{
	uint32_t e = c->rq.base + rn_conn_rcv_share(c);

	return rn_seq_gt(c->ack.adv_edge, e) ? c->ack.adv_edge : e;
}

void rn_conn_pool_account(rn_conn *c)
{
	rn_rcvpool *p = c->env.rcvpool;
	uint64_t now = c->bufs_ready && c->rq.buf ? (uint64_t)c->rq.cap * c->mss : 0;

	if (!p)
		return;
	p->held = p->held - c->pool.held + now;
	c->pool.held = now;
}

int rn_conn_pool_room(const rn_conn *c, uint32_t seq)
{
	const rn_rcvpool *p = c->env.rcvpool;
	uint32_t off = seq - c->rq.base, cap = c->rq.cap;

	if (!p || !p->bytes || off < cap || off >= c->rq.wnd)
		return 1; /* no growth (or none allowed: the ring says why) */
	while (off >= cap)
		cap *= 2;
	/* a released ring (rn_rob_release) holds nothing of the pool: it needs the whole */
	return p->held + (uint64_t)(cap - (c->rq.buf ? c->rq.cap : 0)) * c->mss <= p->bytes;
}

void rn_conn_pool_join(rn_conn *c)
{
	if (c->env.rcvpool && !c->pool.rx) {
		c->env.rcvpool->active++;
		c->pool.rx = 1;
	}
}

void rn_conn_pool_leave(rn_conn *c)
{
	if (c->env.rcvpool && c->pool.rx) {
		c->env.rcvpool->active--;
		c->pool.rx = 0;
	}
}

/*
 * A receive ring grown past this connection's share of the pool (it grew
 * while fewer connections received) goes back to the share once what it
 * holds and what we advertised both fit in it, and to its first size once
 * the peer's FIN came and was read: the memory goes to the others.  If the
 * allocation fails it stays as it is (rn_conn_consume and the timer try
 * again).
 */
void rn_conn_shrink_to_share(rn_conn *c)
{
	rn_rob *r = &c->rq;
	uint32_t cap;

	if (!c->env.rcvpool || !c->bufs_ready)
		return;
	cap = rn_conn_ring_init_slots(c->mss, r->wnd);
	if (!c->close.peer_fin_seen && rn_conn_rcv_share(c) > cap)
		cap = rn_conn_rcv_share(c);
	/* past the FIN nothing more comes, whatever we advertised */
	if (r->cap <= cap || r->max - r->base > cap ||
	    (!c->close.peer_fin_seen && c->ack.adv_edge - r->base > cap))
		return;
	if (rn_rob_resize(r, cap) == 0)
		c->st.ring_shrinks++;
	rn_conn_pool_account(c);
}

/*
 * True when the rings hold nothing and have something to give back: they
 * grew, or they still have their payload storage.
 */
int rn_conn_can_shrink(const rn_conn *c)
{
	const rn_sndq *q = &c->sq;
	const rn_rob *r = &c->rq;

	if (!c->bufs_ready || (c->state != RN_ST_ESTABLISHED && c->state != RN_ST_LINGER))
		return 0;
	if (q->slots == rn_conn_ring_init_slots(c->mss, q->max_slots) &&
	    r->cap == rn_conn_ring_init_slots(c->mss, r->wnd) && !q->buf && !r->buf)
		return 0;
	return q->una == q->end && rn_rob_drained(r);
}

/*
 * Gives an idle or lingering connection's rings back (rn_timer.c calls it once nothing
 * was sent or stored for RN_RING_IDLE_NS): grown ones go back to their
 * first size, and the payload storage of both is freed (the next byte
 * either way makes it again), so an idle connection holds only its marks.
 * Everything sent was acknowledged, so the rails' FIFOs hold only stale
 * entries: they are emptied.  If an allocation fails the rings stay as
 * they are until the next idle period.
 */
void rn_conn_shrink(rn_conn *c, uint64_t now_ns)
{
	const rn_mem *mem = &c->env.mem;
	uint32_t snd0 = rn_conn_ring_init_slots(c->mss, c->sq.max_slots);
	int ok = 1;

	c->live.last_data_ns = now_ns; /* a failure waits for the next idle period */
	if (!rn_conn_can_shrink(c))
		return;
	for (int k = 0; k < c->npaths; k++) {
		c->rail[k].fhead = c->rail[k].ftail;
		if (rn_rail_fifo_resize(&c->rail[k], mem, 2 * snd0) < 0)
			ok = 0;
	}
	if (rn_sndq_resize(&c->sq, mem, snd0) < 0)
		ok = 0;
	if (rn_rob_resize(&c->rq, rn_conn_ring_init_slots(c->mss, c->rq.wnd)) < 0)
		ok = 0;
	if (ok && (rn_sndq_release(&c->sq, mem) | rn_rob_release(&c->rq)))
		c->st.ring_releases++;
	rn_conn_pool_account(c);
	if (ok)
		c->st.ring_shrinks++;
}

