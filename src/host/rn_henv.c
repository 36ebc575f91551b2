/*
 * rn_henv.c - what a driver gives the core when it has nothing of its own
 * to give (rn_henv.h): the C heap and the kernel's random numbers.
 */
#include <stdlib.h>
#include <sys/random.h>
#include <time.h>

#include "rn_henv.h"

static void *heap_alloc(void *u, size_t n)
{
	(void)u;
	return calloc(1, n);
}

static void heap_free(void *u, void *p)
{
	(void)u;
	free(p);
}

uint64_t rn_henv_rng(void *u)
{
	uint64_t v = 0;
	struct timespec ts;

	(void)u;
	if (getrandom(&v, sizeof(v), 0) != (ssize_t)sizeof(v)) { /* never in practice */
		clock_gettime(CLOCK_MONOTONIC, &ts);
		v ^= ((uint64_t)ts.tv_sec * 1000000000u + (uint64_t)ts.tv_nsec) *
		     UINT64_C(0x9e3779b97f4a7c15);
	}
	return v;
}

rn_env rn_henv_default(void)
{
	return (rn_env){ .mem = { heap_alloc, heap_free, NULL }, .rng = rn_henv_rng };
}
