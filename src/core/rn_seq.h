/*
 * rn_seq.h - 32-bit sequence numbers that wrap.
 *
 * Two sequence numbers compare by the sign of their 32-bit difference, so
 * order holds across the wrap as long as they are less than 2^31 apart; ring
 * sizes are capped far below that (RN_MAX_SLOTS).
 */
#ifndef RN_SEQ_H
#define RN_SEQ_H

#include <stdint.h>

static inline int rn_seq_lt(uint32_t a, uint32_t b) { return (int32_t)(a - b) < 0; }
static inline int rn_seq_le(uint32_t a, uint32_t b) { return (int32_t)(a - b) <= 0; }
static inline int rn_seq_gt(uint32_t a, uint32_t b) { return (int32_t)(a - b) > 0; }
static inline int rn_seq_ge(uint32_t a, uint32_t b) { return (int32_t)(a - b) >= 0; }
static inline uint32_t rn_seq_max(uint32_t a, uint32_t b) { return rn_seq_gt(a, b) ? a : b; }

#endif
