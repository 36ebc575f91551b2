/*
 * rn_henv.h - the core's environment (rn_env) from the host kit: memory
 * from the C heap and random numbers from the kernel, for the engine and
 * the libfabric provider; the BTL counts its memory itself and takes only
 * the random numbers.  Callers add their event callback.
 */
#ifndef RN_HENV_H
#define RN_HENV_H

#include <pthread.h>
#include <stdint.h>

#include "rn_core.h"

/*
 * 64 random bits from the kernel (getrandom, drawn 256 bytes at a time per
 * thread; never the same bits in a forked child); u is unused.
 */
uint64_t rn_henv_rng(void *u);
/* Heap memory and rn_henv_rng; no event callback. */
rn_env rn_henv_default(void);
/*
 * Whether the calling thread holds glibc mutex m (normal or recursive): a
 * driver's owner check (rn_env.owns) asks it of its lock, the engine's
 * signal path of its host lock.  Async-signal-safe (one raw gettid).
 */
int rn_henv_mutex_mine(pthread_mutex_t *m);

#endif
