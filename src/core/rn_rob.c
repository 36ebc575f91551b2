/*
 * rn_rob.c - the receive reorder ring.
 */
#include <string.h>

#include "rn_assert.h"
#include "rn_bits.h"
#include "rn_rob.h"
#include "rn_seq.h"

/*
 * The ring's marks in sequence order, base <= nxt <= max, everything stored in
 * [base, max) within the `cap` slots, the read offset inside slot base's packet.
 */
static void check_marks(const rn_rob *r)
{
	RN_ASSERT(r->nxt - r->base <= r->max - r->base);
	RN_ASSERT(r->max - r->base <= r->cap && r->cap <= r->wnd);
	RN_ASSERT(r->base == r->nxt ? r->off == 0 : r->off <= r->lens[r->base & r->mask]);
	(void)r;
}

/* Bits in the "received" ring for a ring of cap slots: at least 64 (rn_bits.h). */
static uint32_t bits_for(uint32_t cap)
{
	return cap < 64 ? 64 : cap;
}

int rn_rob_init(rn_rob *r, const rn_mem *mem, uint32_t cap, uint32_t wnd, uint32_t mss,
		uint32_t isn)
{
	memset(r, 0, sizeof(*r));
	if (cap == 0 || (cap & (cap - 1)) || wnd < cap || (wnd & (wnd - 1)))
		return RN_ERR_INVAL;
	r->mem = mem;
	r->cap = cap;
	r->mask = cap - 1;
	r->bmask = bits_for(cap) - 1;
	r->wnd = wnd;
	r->mss = mss;
	r->base = r->nxt = r->max = isn;
	/* no payload storage yet: the first packet makes it (rn_rob_insert) */
	r->lens = mem->alloc(mem->user, (size_t)cap * sizeof(*r->lens));
	r->have = mem->alloc(mem->user, (size_t)bits_for(cap) / 8);
	if (!r->lens || !r->have) {
		rn_rob_free(r, mem);
		return RN_ERR_NOMEM;
	}
	return 0;
}

int rn_rob_drained(const rn_rob *r)
{
	/* a FIN carries no payload: once reached, only the end of stream is left */
	return r->base == r->max || (r->fin_known && r->base == r->fin_seq);
}

int rn_rob_release(rn_rob *r)
{
	if (!r->buf || !rn_rob_drained(r))
		return 0;
	r->mem->free(r->mem->user, r->buf);
	r->buf = NULL;
	return 1;
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

int rn_rob_resize(rn_rob *r, uint32_t cap)
{
	const rn_mem *mem = r->mem;
	uint32_t bmask = bits_for(cap) - 1;
	uint8_t *buf;
	uint16_t *lens;
	uint64_t *have;

	if (cap == 0 || (cap & (cap - 1)) || cap > r->wnd || cap < r->max - r->base)
		return RN_ERR_INVAL;
	if (cap == r->cap)
		return 0;
	/* a released ring stays without payload storage: only its marks move */
	buf = r->buf ? mem->alloc(mem->user, (size_t)cap * r->mss) : NULL;
	lens = mem->alloc(mem->user, (size_t)cap * sizeof(*lens));
	have = mem->alloc(mem->user, (size_t)(bmask + 1) / 8);
	if ((r->buf && !buf) || !lens || !have) {
		if (buf)
			mem->free(mem->user, buf);
		if (lens)
			mem->free(mem->user, lens);
		if (have)
			mem->free(mem->user, have);
		return RN_ERR_NOMEM;
	}
	/* everything stored lies in [base, max): each packet to its slot in the new ring */
	for (uint32_t seq = r->base; seq != r->max; seq++) {
		uint32_t i = seq & r->mask, j = seq & (cap - 1);

		if (!rn_bits_test(r->have, r->bmask, seq))
			continue;
		lens[j] = r->lens[i];
		if (r->lens[i]) /* a bare FIN may sit in a ring without storage */
			memcpy(buf + (size_t)j * r->mss, r->buf + (size_t)i * r->mss, r->lens[i]);
		rn_bits_set(have, bmask, seq);
	}
	rn_rob_free(r, mem);
	r->buf = buf;
	r->lens = lens;
	r->have = have;
	r->cap = cap;
	r->mask = cap - 1;
	r->bmask = bmask;
	check_marks(r);
	return 0;
}

/* Doubles the ring until packet `seq` (within the window) has a slot. */
static int grow_for(rn_rob *r, uint32_t seq)
{
	uint32_t cap = r->cap;

	while (seq - r->base >= cap)
		cap *= 2;
	if (rn_rob_resize(r, cap) < 0) {
		r->nomem++;
		return -1;
	}
	r->grows++;
	return 0;
}

int rn_rob_insert(rn_rob *r, uint32_t seq, const uint8_t *data, uint16_t len, int fin)
{
	uint32_t i, off = seq - r->base;

	if (off >= r->wnd)
		return rn_seq_lt(seq, r->base) ? RN_ROB_DUP : RN_ROB_OUT;
	if (rn_seq_lt(seq, r->nxt) || (off < r->cap && rn_bits_test(r->have, r->bmask, seq)))
		return RN_ROB_DUP;
	if (len > r->mss)
		return RN_ROB_BAD;
	/* nothing may follow the FIN, and there is only one FIN */
	if (r->fin_known && (fin ? seq != r->fin_seq : rn_seq_ge(seq, r->fin_seq)))
		return RN_ROB_BAD;
	if (fin && rn_seq_lt(seq, r->max))
		return RN_ROB_BAD;
	/*
	 * Beyond the ring but inside the window we advertised: grow now.  This
	 * is the one allocation on the receive path, rare by construction (each
	 * at least doubles the ring, so a connection grows log2(wnd / cap)
	 * times at most), and it goes through the environment's allocator.
	 */
	if (off >= r->cap && grow_for(r, seq) < 0)
		return RN_ROB_NOMEM;
	/*
	 * a released (or never used) ring gets its storage back with its first
	 * packet; a bare FIN needs none (closing an idle connection allocates
	 * nothing)
	 */
	if (!r->buf && !(fin && len == 0)) {
		r->buf = r->mem->alloc(r->mem->user, (size_t)r->cap * r->mss);
		if (!r->buf) {
			r->nomem++;
			return RN_ROB_NOMEM;
		}
	}
	/* the packet's slot is its own: the ring holds [base, base + cap) */
	RN_ASSERT(seq - r->base < r->cap && len <= r->mss);
	i = seq & r->mask;
	if (len)
		memcpy(r->buf + (size_t)i * r->mss, data, len);
	r->lens[i] = len;
	r->bytes_in += len;
	rn_bits_set(r->have, r->bmask, seq);
	if (fin) {
		r->fin_known = 1;
		r->fin_seq = seq;
	}
	if (rn_seq_ge(seq, r->max))
		r->max = seq + 1;
	while (r->nxt != r->max && rn_bits_test(r->have, r->bmask, r->nxt))
		r->nxt++;
	check_marks(r);
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

size_t rn_rob_ready(const rn_rob *r)
{
	size_t n = 0;

	for (uint32_t seq = r->base; seq != r->nxt && !(r->fin_known && seq == r->fin_seq); seq++)
		n += r->lens[seq & r->mask];
	return n > r->off ? n - r->off : 0;
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
		rn_bits_clear(r->have, r->bmask, r->base);
		r->base++;
	}
	check_marks(r);
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
		uint64_t bits = rn_bits_get64(r->have, r->bmask, from);
		uint32_t valid = r->max - from;

		/* bits past max would wrap onto consumed slots: clear them */
		if (valid < 64)
			bits &= (UINT64_C(1) << valid) - 1;
		words[w] = bits;
	}
	return need;
}
