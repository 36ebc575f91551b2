/*
 * order_kit.h - byte order across the ways a program shares a stream
 * socket's descriptor (dup, stdio, child processes, SCM_RIGHTS): each path
 * alternates with a plain write() on the socket's own number for many
 * rounds, a numbered byte stream (the kit's pattern) checked at the
 * receiver after every round.  Plain C, no test framework: tests/api's
 * posix_order (libri2n) and tests/shim's shim_order (TCP under ri2n-run)
 * run the same paths.
 *
 * Every function returns 0, or -1 with a sentence in o->why.  Every wait is
 * bounded (ORDER_WAIT_MS).
 */
#ifndef ORDER_KIT_H
#define ORDER_KIT_H

#include <stddef.h>
#include <stdint.h>

#define ORDER_WAIT_MS 5000 /* a round's bytes, or a child's answer: never a hang */

struct order {
	int tx, rx;          /* the connection's two ends, both in this process */
	uint32_t seed;       /* the pattern's */
	uint64_t sent, got;  /* stream offsets */
	uint32_t rng;        /* chunk sizes */
	const char *self;    /* this program, for children that exec it (ORDER_WRITER) */
	char why[256];
};

/* argv[1] of a child writer: `PROG --order-writer FD CTL ACK SEED`. */
#define ORDER_WRITER "--order-writer"

void order_init(struct order *o, int tx, int rx, uint32_t seed, const char *self);

/* Each path, `rounds` rounds; see order_kit.c for what each does. */
int order_dup(struct order *o, int rounds);
int order_fdopen(struct order *o, int rounds);
int order_stdout(struct order *o, int rounds);
int order_dupfd(struct order *o, int rounds);
int order_spawn(struct order *o, int rounds);
int order_vfork(struct order *o, int rounds);
int order_dprintf(struct order *o, int rounds);  /* order_fortify.c */
int order_pwritev2(struct order *o, int rounds); /* order_fortify.c */
/* The child is forked before o->tx exists; tx reaches it over SCM_RIGHTS. */
int order_rights(struct order *o, int rounds, int (*make)(struct order *o, void *arg), void *arg);

/* A child writer's main (argv as ORDER_WRITER says): its exit status. */
int order_writer_main(int argc, char **argv);

#endif
