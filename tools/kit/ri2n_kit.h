/*
 * ri2n_kit.h - the test kit every verified transfer shares: the byte
 * pattern, big-endian integers, the clock and sizes on command lines.
 * ri2n-xfer / ri2n-stream, the bench programs, and the unit, simulator,
 * fuzz, API, shim, MPI and libfabric tests all check their bytes with it.
 *
 * Header only (static inline), so that a test built by another compiler
 * (mpicc) or into a preloaded library needs nothing to link.
 */
#ifndef RI2N_KIT_H
#define RI2N_KIT_H

#include <endian.h>
#include <errno.h>
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

/*
 * The pattern: byte i of the stream of `seed` is byte (i mod 8) of word
 * i / 8, word w being (w * K) ^ mix(seed), little-endian.  A byte delivered
 * at the wrong offset, from another stream (another seed) or twice differs
 * from the one expected; one multiplication per 8 bytes keeps a sender and a
 * receiver that check every byte far above 10 Gbit/s.
 */
#define KIT_PATTERN_K UINT64_C(0x9e3779b97f4a7c15)

/* splitmix64's finalizer: every bit of z moves about half of the result's. */
static inline uint64_t kit_mix(uint64_t z)
{
	z += KIT_PATTERN_K;
	z = (z ^ (z >> 30)) * UINT64_C(0xbf58476d1ce4e5b9);
	z = (z ^ (z >> 27)) * UINT64_C(0x94d049bb133111eb);
	return z ^ (z >> 31);
}

static inline uint64_t kit_pattern_word(uint64_t key, uint64_t w)
{
	return (w * KIT_PATTERN_K) ^ key; /* key: kit_mix(seed) */
}

/* Byte i of the stream of `seed`. */
static inline uint8_t kit_pattern_byte(uint64_t seed, uint64_t i)
{
	return (uint8_t)(kit_pattern_word(kit_mix(seed), i >> 3) >> (8 * (i & 7)));
}

/* Fills buf with the bytes [off, off + n) of the stream of `seed`. */
static inline void kit_pattern_fill(uint8_t *buf, uint64_t seed, uint64_t off, size_t n)
{
	uint64_t key = kit_mix(seed);
	size_t i = 0;

	for (; i < n && ((off + i) & 7); i++) /* up to a word's start */
		buf[i] = (uint8_t)(kit_pattern_word(key, (off + i) >> 3) >> (8 * ((off + i) & 7)));
	for (; i + 8 <= n; i += 8) {
		uint64_t w = htole64(kit_pattern_word(key, (off + i) >> 3));

		memcpy(buf + i, &w, 8); /* one store */
	}
	for (; i < n; i++)
		buf[i] = (uint8_t)(kit_pattern_word(key, (off + i) >> 3) >> (8 * ((off + i) & 7)));
}

/* How many bytes of buf differ from the bytes [off, off + n) of the stream of `seed`. */
static inline uint64_t kit_pattern_check(const uint8_t *buf, uint64_t seed, uint64_t off, size_t n)
{
	uint64_t key = kit_mix(seed), bad = 0;
	size_t i = 0;

	for (; i < n && ((off + i) & 7); i++)
		bad += buf[i] != (uint8_t)(kit_pattern_word(key, (off + i) >> 3) >> (8 * ((off + i) & 7)));
	for (; i + 8 <= n; i += 8) {
		uint64_t w = kit_pattern_word(key, (off + i) >> 3), v;

		memcpy(&v, buf + i, 8); /* one load */
		v = le64toh(v);
		if (v != w)
			for (int b = 0; b < 8; b++)
				bad += (uint8_t)(v >> (8 * b)) != (uint8_t)(w >> (8 * b));
	}
	for (; i < n; i++)
		bad += buf[i] != (uint8_t)(kit_pattern_word(key, (off + i) >> 3) >> (8 * ((off + i) & 7)));
	return bad;
}

/* ---- integers on the wire (big-endian) ---- */

static inline void kit_put64(uint8_t *p, uint64_t v)
{
	for (int i = 7; i >= 0; i--, v >>= 8)
		p[i] = (uint8_t)v;
}

static inline uint64_t kit_get64(const uint8_t *p)
{
	uint64_t v = 0;

	for (int i = 0; i < 8; i++)
		v = v << 8 | p[i];
	return v;
}

/* ---- the clock: CLOCK_MONOTONIC, the clock ri2n's events use ---- */

static inline double kit_now_s(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (double)ts.tv_sec + (double)ts.tv_nsec / 1e9;
}

static inline uint64_t kit_now_ns(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * 1000000000u + (uint64_t)ts.tv_nsec;
}

/* ---- arguments ---- */

/* "4096", "64k", "4M", "1G", "4MiB", "4MB" (powers of 1024) -> bytes; -1 if not a size. */
static inline int64_t kit_parse_size(const char *s)
{
	char *end;
	double v;
	int64_t mul = 1;

	errno = 0;
	v = strtod(s, &end);
	if (end == s || v < 0 || errno)
		return -1;
	switch (*end) {
	case 'k': case 'K': mul = INT64_C(1) << 10; end++; break;
	case 'm': case 'M': mul = INT64_C(1) << 20; end++; break;
	case 'g': case 'G': mul = INT64_C(1) << 30; end++; break;
	default: break;
	}
	if (*end == 'i')
		end++;
	if (*end == 'B')
		end++;
	if (*end)
		return -1;
	return (int64_t)(v * (double)mul);
}

#endif
