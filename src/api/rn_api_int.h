/*
 * rn_api_int.h - what the API's files (ri2n_api.c, ri2n_accept.c,
 * ri2n_opt.c, ri2n_fast.c) share: the descriptor table and small helpers.
 */
#ifndef RN_API_INT_H
#define RN_API_INT_H

#include <netinet/in.h>
#include <stddef.h>
#include <sys/socket.h>

#include "rn_engine.h"

/* errno = err; -1 */
int rn_api_fail(int err);
/* The socket behind fd, referenced; NULL with *err EBADF or ENOTSOCK. */
rn_sock *rn_api_lookup(int fd, int *err);
/* The same without checking that fd still is that open file (see ri2n_api.c). */
rn_sock *rn_api_lookup_known(int fd);
/* rn_api_lookup_known's if the caller sees every close of fd (known), else rn_api_lookup's. */
rn_sock *rn_api_lookup_as(int fd, int known, int *err);
/*
 * The lookup of the data calls (known: rn_api_lookup_known's, else
 * rn_api_lookup's): in a forked child, a connection its parent accepted
 * becomes the child's own at the first such call (rn_handover_take), once
 * the parent no longer holds it.
 */
rn_sock *rn_api_lookup_data(int fd, int known, int *err);
/*
 * Whether the table holds number fd (it may be stale: the number closed and
 * reused); lock-free, no system call.
 */
int rn_api_marked(int fd);
/*
 * A signal handler (or a re-entered call) wrote into number fd past the
 * fast path: lock-free, allocation-free, async-signal-safe.
 */
void rn_api_sig_wrote(int fd);
/*
 * Outside handlers, before a fast send: the sockets handlers wrote into
 * since the last call take their descriptor's bytes first at their next
 * fast send (rn_sock.desc_first).  Cheap when none did.
 */
void rn_api_sig_sweep(void);
/* Async-signal-safe: every thread asleep on the table's lock wakes (see rn_host_poke). */
void rn_api_tab_poke(void);
/*
 * Async-signal-safe: whether the calling thread holds the table's lock (a
 * handler asks it of the frame it interrupted).
 */
int rn_api_tab_held_here(void);
/* fd's entry becomes s (the table takes s's reference); 0 or -ENOMEM. */
int rn_api_tab_install(int fd, rn_sock *s);
/* Fills a new socket's send buffer so that it polls writable only once connected. */
size_t rn_api_fill_junk(int fd);
/* At exit: every connected socket still open is shut down for writing. */
void rn_api_tab_shut_all(void);
void rn_api_put_addr(const rn_hsa *in, struct sockaddr *addr, socklen_t *len);
/*
 * Copies our `ours`-byte struct src into the caller's `size`-byte one: the
 * first min(size, ours) bytes, the rest of a larger one zeroed (fields this
 * library does not know of).  For the calls whose struct grows at its end.
 */
void rn_api_copy_out(void *dst, size_t size, const void *src, size_t ours);

#endif
