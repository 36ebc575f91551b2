/*
 * rn_sndq.c - the send ring.
 */
#include <string.h>

#include "rn_assert.h"
#include "rn_seq.h"
#include "rn_sndq.h"

int rn_sndq_init(rn_sndq *q, const rn_mem *mem, uint32_t slots, uint32_t max_slots,
		 uint32_t mss, uint32_t isn)
{
	memset(q, 0, sizeof(*q));
	if (slots == 0 || (slots & (slots - 1)) || max_slots < slots ||
	    (max_slots & (max_slots - 1)))
		return RN_ERR_INVAL;
	q->mem = mem;
	q->slots = slots;
	q->mask = slots - 1;
	q->max_slots = max_slots;
	q->mss = mss;
	q->una = q->nxt = q->end = isn;
	/* no payload storage yet: the first write makes it (rn_sndq_ensure) */
	q->slot = mem->alloc(mem->user, (size_t)slots * sizeof(*q->slot));
	/*
	 * A packet is queued at most once at a time (RN_SS_LOST); entries of
	 * packets acked since linger until popped, so the FIFO has room for
	 * twice the ring and is compacted in the rare case it fills.
	 */
	q->lostq = mem->alloc(mem->user, (size_t)slots * 2 * sizeof(*q->lostq));
	if (!q->slot || !q->lostq) {
		rn_sndq_free(q, mem);
		return RN_ERR_NOMEM;
	}
	return 0;
}

int rn_sndq_ensure(rn_sndq *q, const rn_mem *mem)
{
	if (q->buf)
		return 0;
	q->buf = mem->alloc(mem->user, (size_t)q->slots * q->mss);
	return q->buf ? 0 : RN_ERR_NOMEM;
}

int rn_sndq_release(rn_sndq *q, const rn_mem *mem)
{
	if (!q->buf || q->una != q->end)
		return 0;
	mem->free(mem->user, q->buf);
	q->buf = NULL;
	return 1;
}

void rn_sndq_free(rn_sndq *q, const rn_mem *mem)
{
	if (q->buf)
		mem->free(mem->user, q->buf);
	if (q->slot)
		mem->free(mem->user, q->slot);
	if (q->lostq)
		mem->free(mem->user, q->lostq);
	q->buf = NULL;
	q->slot = NULL;
	q->lostq = NULL;
}

/*
 * The ring's marks in sequence order, una <= nxt <= end, with at most `slots`
 * packets between una and end: every packet from una on has its own slot.
 */
static void check_marks(const rn_sndq *q)
{
	RN_ASSERT(q->end - q->una <= q->slots);
	RN_ASSERT(q->nxt - q->una <= q->end - q->una);
	RN_ASSERT(q->lost_tail - q->lost_head <= 2 * q->slots);
	(void)q;
}

/* Room left in the last packet if it is unsent and can still grow. */
static uint32_t tail_room(const rn_sndq *q)
{
	const rn_sslot *s;

	if (q->end == q->nxt)
		return 0;
	s = &q->slot[(q->end - 1) & q->mask];
	if (s->flags & RN_SS_FIN)
		return 0;
	RN_ASSERT(s->len <= q->mss);
	return q->mss - s->len;
}

size_t rn_sndq_space(const rn_sndq *q)
{
	if (q->fin_queued)
		return 0;
	return (size_t)(q->slots - (q->end - q->una)) * q->mss + tail_room(q);
}

size_t rn_sndq_bytes_from(const rn_sndq *q, uint32_t from)
{
	size_t n = 0;

	for (uint32_t seq = from; seq != q->end; seq++)
		n += q->slot[seq & q->mask].len;
	return n;
}

size_t rn_sndq_write(rn_sndq *q, const uint8_t *data, size_t len)
{
	size_t done = 0;

	if (q->fin_queued || !len || rn_sndq_ensure(q, q->mem) < 0)
		return 0;
	check_marks(q);
	while (done < len) {
		uint32_t room = tail_room(q);
		size_t n;
		rn_sslot *s;

		if (room == 0) {
			if (q->end - q->una >= q->slots)
				break;
			s = &q->slot[q->end & q->mask];
			memset(s, 0, sizeof(*s));
			q->end++;
			room = q->mss;
		}
		s = &q->slot[(q->end - 1) & q->mask];
		n = len - done < room ? len - done : room;
		RN_ASSERT(s->len + n <= q->mss && q->end - q->una <= q->slots);
		memcpy(rn_sndq_data(q, q->end - 1) + s->len, data + done, n);
		s->len = (uint16_t)(s->len + n);
		done += n;
	}
	q->bytes_written += done;
	return done;
}

int rn_sndq_fin(rn_sndq *q)
{
	rn_sslot *s;

	if (q->fin_queued)
		return 0;
	check_marks(q);
	if (q->end - q->una >= q->slots)
		return RN_ERR_AGAIN;
	s = &q->slot[q->end & q->mask];
	memset(s, 0, sizeof(*s));
	s->flags = RN_SS_FIN;
	q->end++;
	q->fin_queued = 1;
	return 0;
}

/* Drops FIFO entries of packets acked since they were queued. */
static void lost_compact(rn_sndq *q)
{
	uint32_t cap_mask = 2 * q->slots - 1, out = q->lost_head;

	for (uint32_t i = q->lost_head; i != q->lost_tail; i++) {
		uint32_t s = q->lostq[i & cap_mask];

		if (rn_seq_ge(s, q->una) && rn_seq_lt(s, q->nxt) &&
		    (rn_sndq_slot(q, s)->flags & RN_SS_LOST))
			q->lostq[out++ & cap_mask] = s;
	}
	q->lost_tail = out;
}

int rn_sndq_resize(rn_sndq *q, const rn_mem *mem, uint32_t slots)
{
	uint32_t old_fifo = 2 * q->slots - 1, n;
	uint8_t *buf;
	rn_sslot *slot;
	uint32_t *lostq;

	if (slots == 0 || (slots & (slots - 1)) || slots > q->max_slots ||
	    slots < q->end - q->una)
		return RN_ERR_INVAL;
	if (slots == q->slots)
		return 0;
	/* a released ring stays without payload storage: only its marks move */
	buf = q->buf ? mem->alloc(mem->user, (size_t)slots * q->mss) : NULL;
	slot = mem->alloc(mem->user, (size_t)slots * sizeof(*slot));
	lostq = mem->alloc(mem->user, (size_t)slots * 2 * sizeof(*lostq));
	if ((q->buf && !buf) || !slot || !lostq) {
		if (buf)
			mem->free(mem->user, buf);
		if (slot)
			mem->free(mem->user, slot);
		if (lostq)
			mem->free(mem->user, lostq);
		return RN_ERR_NOMEM;
	}
	/* a smaller FIFO holds the live entries once the stale ones are gone */
	if (q->lost_tail - q->lost_head > 2 * slots)
		lost_compact(q);
	for (uint32_t seq = q->una; seq != q->end; seq++) {
		const rn_sslot *s = rn_sndq_slot(q, seq);

		slot[seq & (slots - 1)] = *s;
		if (s->len)
			memcpy(buf + (size_t)(seq & (slots - 1)) * q->mss, rn_sndq_data(q, seq), s->len);
	}
	n = q->lost_tail - q->lost_head;
	for (uint32_t i = 0; i < n; i++)
		lostq[i] = q->lostq[(q->lost_head + i) & old_fifo];
	rn_sndq_free(q, mem);
	q->buf = buf;
	q->slot = slot;
	q->lostq = lostq;
	q->lost_head = 0;
	q->lost_tail = n;
	q->slots = slots;
	q->mask = slots - 1;
	check_marks(q);
	return 0;
}

void rn_sndq_lost_push(rn_sndq *q, uint32_t seq)
{
	rn_sslot *s = rn_sndq_slot(q, seq);

	if (s->flags & (RN_SS_LOST | RN_SS_ACKED))
		return;
	if (q->lost_tail - q->lost_head >= 2 * q->slots)
		lost_compact(q);
	/* compacting leaves only packets marked lost in [una, nxt): at most slots */
	RN_ASSERT(q->lost_tail - q->lost_head < 2 * q->slots);
	RN_ASSERT(rn_seq_ge(seq, q->una) && rn_seq_lt(seq, q->nxt));
	s->flags |= RN_SS_LOST;
	q->lostq[q->lost_tail & (2 * q->slots - 1)] = seq;
	q->lost_tail++;
}

int rn_sndq_lost_pop(rn_sndq *q, uint32_t *seq)
{
	while (q->lost_head != q->lost_tail) {
		uint32_t s = q->lostq[q->lost_head & (2 * q->slots - 1)];
		rn_sslot *sl;

		q->lost_head++;
		if (rn_seq_lt(s, q->una))
			continue; /* cumulatively acked since */
		sl = rn_sndq_slot(q, s);
		if (!(sl->flags & RN_SS_LOST))
			continue;
		sl->flags &= (uint8_t)~RN_SS_LOST;
		if (sl->flags & RN_SS_ACKED)
			continue;
		*seq = s;
		return 1;
	}
	return 0;
}
