/*
 * rn_bits.h - a ring of bits indexed by sequence number.
 *
 * The receive ring and the send ring each keep one bit per slot ("received",
 * "selectively acknowledged").  The ring has a power-of-two number of bits,
 * at least 64, so a 64-bit window starting at any position is at most two
 * words, which is how SACK bitmaps are built and compared word by word.
 */
#ifndef RN_BITS_H
#define RN_BITS_H

#include <stdint.h>

static inline int rn_bits_test(const uint64_t *w, uint32_t mask, uint32_t pos)
{
	pos &= mask;
	return (int)((w[pos >> 6] >> (pos & 63)) & 1);
}

static inline void rn_bits_set(uint64_t *w, uint32_t mask, uint32_t pos)
{
	pos &= mask;
	w[pos >> 6] |= UINT64_C(1) << (pos & 63);
}

static inline void rn_bits_clear(uint64_t *w, uint32_t mask, uint32_t pos)
{
	pos &= mask;
	w[pos >> 6] &= ~(UINT64_C(1) << (pos & 63));
}

/* The 64 bits at pos, pos+1, ... pos+63 (bit 0 of the result is pos). */
static inline uint64_t rn_bits_get64(const uint64_t *w, uint32_t mask, uint32_t pos)
{
	uint32_t nwords = (mask + 1) >> 6;
	uint32_t wi, sh;

	pos &= mask;
	wi = pos >> 6;
	sh = pos & 63;
	if (sh == 0)
		return w[wi];
	return (w[wi] >> sh) | (w[(wi + 1) & (nwords - 1)] << (64 - sh));
}

#endif
