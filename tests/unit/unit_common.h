/*
 * unit_common.h - helpers shared by the unit tests of the protocol core:
 * cmocka, an allocator that counts its calls, and a seeded rng whose first
 * values a test may force (connection ids, initial sequence numbers).
 *
 * Everything is static inline so that a test file using only part of it
 * still compiles without warnings.
 */
#ifndef UNIT_COMMON_H
#define UNIT_COMMON_H

#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "ri2n_kit.h"
#include "rn_core.h"

/* Time: one second after the epoch of the virtual clock, so "0" never means "now". */
#define UT_T0 UINT64_C(1000000000)
#define UT_US UINT64_C(1000)
#define UT_MS UINT64_C(1000000)
#define UT_S UINT64_C(1000000000)

typedef struct ut_mem {
	long allocs, frees;
	long fail_after; /* >= 0: this many more allocations succeed, then NULL */
	size_t bytes;    /* asked for and not freed yet */
} ut_mem;

/* Each block remembers its size in 16 bytes before it, for ut_mem.bytes. */
static inline void *ut_alloc(void *user, size_t size)
{
	ut_mem *m = user;
	size_t *h;

	if (m) {
		if (m->fail_after == 0)
			return NULL;
		if (m->fail_after > 0)
			m->fail_after--;
		m->allocs++;
	}
	h = calloc(1, 16 + size);
	if (!h)
		return NULL;
	*h = size;
	if (m)
		m->bytes += size;
	return (uint8_t *)h + 16;
}

static inline void ut_free(void *user, void *p)
{
	ut_mem *m = user;
	size_t *h = p ? (size_t *)((uint8_t *)p - 16) : NULL;

	if (m)
		m->frees++;
	if (m && h)
		m->bytes -= *h;
	free(h);
}

static inline rn_mem ut_mem_of(ut_mem *m)
{
	m->allocs = m->frees = 0;
	m->bytes = 0;
	m->fail_after = -1;
	return (rn_mem){ ut_alloc, ut_free, m };
}

/* splitmix64, with forced first values (0 in the list: draw one). */
typedef struct ut_rng {
	uint64_t state;
	uint64_t forced[8];
	int nforced, iforced;
	long calls;
} ut_rng;

static inline uint64_t ut_rng_next(void *user)
{
	ut_rng *r = user;
	uint64_t z;

	r->calls++;
	if (r->iforced < r->nforced) {
		uint64_t v = r->forced[r->iforced++];

		if (v)
			return v;
	}
	z = (r->state += UINT64_C(0x9e3779b97f4a7c15));
	z = (z ^ (z >> 30)) * UINT64_C(0xbf58476d1ce4e5b9);
	z = (z ^ (z >> 27)) * UINT64_C(0x94d049bb133111eb);
	return z ^ (z >> 31);
}

/* A byte of a test stream: the test kit's pattern (tools/kit/ri2n_kit.h). */
static inline uint8_t ut_pattern(uint32_t seed, uint64_t i)
{
	return kit_pattern_byte(seed, i);
}

static inline void ut_fill(uint8_t *buf, uint32_t seed, uint64_t off, size_t n)
{
	kit_pattern_fill(buf, seed, off, n);
}

#define UT_IP(a, b, c, d) \
	((uint32_t)(a) << 24 | (uint32_t)(b) << 16 | (uint32_t)(c) << 8 | (uint32_t)(d))

#endif
