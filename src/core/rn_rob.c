/*
 * rn_rob.c - the receive reorder ring.
 */
#include <string.h>

#include "rn_bits.h"
#include "rn_rob.h"
#include "rn_seq.h"

int rn_rob_init(rn_rob *r, const rn_mem *mem, uint32_t slots, uint32_t mss, uint32_t isn)
{
	memset(r, 0, sizeof(*r));
	r->slots = slots;
	r->mask = slots - 1;
	r->mss = mss;
	r->base = r->nxt = r->max = isn;
	r->buf = mem->alloc(mem->user, (size_t)slots * mss);
	r->lens = mem->alloc(mem->user, (size_t)slots * sizeof(*r->lens));
	r->have = mem->alloc(mem->user, (size_t)slots / 8);
	if (!r->buf || !r->lens || !r->have) {
		rn_rob_free(r, mem);
		return RN_ERR_NOMEM;
	}
	return 0;
}

void rn_rob_free(rn_rob *r, const rn_mem *mem)
{
	if (r->buf)
		mem->free(mem->user, r->buf);
	if (r->lens)
		mem->free(mem->user, r->lens);
	if (r->have)
		mem->free(mem->user, r->have);
	r->buf = NULL;
	r->lens = NULL;
	r->have = NULL;
}

int rn_rob_insert(rn_rob *r, uint32_t seq, const uint8_t *data, uint16_t len, int fin)
{
	uint32_t i;

	if ((uint32_t)(seq - r->base) >= r->slots)
		return rn_seq_lt(seq, r->base) ? RN_ROB_DUP : RN_ROB_OUT;
	if (rn_seq_lt(seq, r->nxt) || rn_bits_test(r->have, r->mask, seq))
		return RN_ROB_DUP;
	if (len > r->mss)
		return RN_ROB_BAD;
	/* nothing may follow the FIN, and there is only one FIN */
	if (r->fin_known && (fin ? seq != r->fin_seq : rn_seq_ge(seq, r->fin_seq)))
		return RN_ROB_BAD;
	if (fin && rn_seq_lt(seq, r->max))
		return RN_ROB_BAD;
	i = seq & r->mask;
	if (len)
		memcpy(r->buf + (size_t)i * r->mss, data, len);
	r->lens[i] = len;
	r->bytes_in += len;
	rn_bits_set(r->have, r->mask, seq);
	if (fin) {
		r->fin_known = 1;
		r->fin_seq = seq;
	}
	if (rn_seq_ge(seq, r->max))
		r->max = seq + 1;
	while (r->nxt != r->max && rn_bits_test(r->have, r->mask, r->nxt))
		r->nxt++;
	return RN_ROB_NEW;
}

ssize_t rn_rob_peek(const rn_rob *r, const uint8_t **data)
{
	uint32_t i;
	size_t n;

	if (r->base == r->nxt)
		return RN_ERR_AGAIN;
	if (r->fin_known && r->base == r->fin_seq)
		return 0;
	i = r->base & r->mask;
	*data = r->buf + (size_t)i * r->mss + r->off;
	n = r->lens[i] - r->off;
	/*
	 * Full packets lie end to end in the ring: hand over the whole run up to
	 * a short packet, a missing one, the FIN or the ring's end, so a driver
	 * moves it in one call (one socket write instead of one per packet).
	 */
	for (uint32_t seq = r->base + 1;
	     r->lens[i] == r->mss && seq != r->nxt && (seq & r->mask) != 0 &&
	     !(r->fin_known && seq == r->fin_seq) && n + r->mss <= RN_ROB_PEEK_MAX;
	     seq++) {
		i = seq & r->mask;
		n += r->lens[i];
	}
	return (ssize_t)n;
}

void rn_rob_consume(rn_rob *r, size_t n)
{
	while (n > 0 && r->base != r->nxt &&
	       !(r->fin_known && r->base == r->fin_seq)) {
		uint32_t i = r->base & r->mask;
		size_t left = r->lens[i] - r->off;

		if (n < left) {
			r->off += (uint32_t)n;
			return;
		}
		n -= left;
		r->off = 0;
		rn_bits_clear(r->have, r->mask, r->base);
		r->base++;
	}
}

unsigned rn_rob_sack(const rn_rob *r, uint64_t *words, unsigned maxw)
{
	uint32_t span = r->max - r->nxt; /* packets nxt .. max-1; nxt itself is missing */
	unsigned need, w;

	if (span <= 1)
		return 0;
	need = (span - 1 + 63) / 64;
	if (need > maxw)
		need = maxw;
	for (w = 0; w < need; w++) {
		uint32_t from = r->nxt + 1 + 64 * w;
		uint64_t bits = rn_bits_get64(r->have, r->mask, from);
		uint32_t valid = r->max - from;

		/* bits past max would wrap onto consumed slots: clear them */
		if (valid < 64)
			bits &= (UINT64_C(1) << valid) - 1;
		words[w] = bits;
	}
	return need;
}
