/*
 * order_kit_int.h - what order_kit.c shares with the files of more paths.
 */
#ifndef ORDER_KIT_INT_H
#define ORDER_KIT_INT_H

#include <stddef.h>

#include "order_kit.h"

#define ORDER_CHUNK_MAX 64

/* Sets o->why; -1. */
int order_fail(struct order *o, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
/* Rounds of: a chunk by `path` (its size given), a chunk by write(tx), every byte checked. */
int order_rounds(struct order *o, int rounds, int (*path)(struct order *o, size_t n, void *arg),
		 void *arg);

#endif
