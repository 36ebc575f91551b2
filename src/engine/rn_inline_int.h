/*
 * rn_inline_int.h - what rn_inline.c (timers, epoll readiness),
 * rn_inline_wait.c (waits) and rn_inline_io.c (send, receive) share.
 * Everything runs under the host lock.
 */
#ifndef RN_INLINE_INT_H
#define RN_INLINE_INT_H

#include <stdint.h>
#include <time.h>

#include "rn_inline.h"
#include "rn_stream.h"

#define MAX_IOV 64

int rn_inline_ok_to_send(const struct rn_stream *st);
int rn_inline_ok_to_recv(const struct rn_stream *st);
/*
 * Bytes the user wrote into the descriptor (the plain path) go into the core
 * before any inline byte.  1: none left there; 0: the core is full first;
 * -1: the user shut the descriptor down for writing.
 */
int rn_inline_take_pair(struct rn_stream *st, uint64_t now);
/* The core's bytes go into the descriptor (for a call the inline path does not serve). */
void rn_inline_deliver_to_pair(struct rn_stream *st, uint64_t now);
/* Sends what the core owes, runs due timers; 1 if the engine must look at st. */
int rn_inline_service(struct rn_stream *st, uint64_t now);
/* The end of an inline call: every connection touched is served. */
void rn_inline_finish(rn_sock *s);
/*
 * In the middle of an inline call, after a read of the port: every other
 * connection whose datagrams it read is served now (bytes to its
 * descriptor, ACKs and data out), not when the call ends; self stays for
 * the caller.
 */
void rn_inline_serve_others(struct rn_stream *self);
/*
 * Waits on st's rails and fd (see rn_inline.c); 0, or -errno.  *timeout_ns:
 * the whole call's limit from t0 (-1: none), or RN_WAIT_RCVTIMEO: fd's
 * SO_RCVTIMEO, asked of the kernel (and stored there) only if the wait must
 * sleep, which a wait that polling ends never does.  The sleep is a
 * cancellation point: a thread cancelled there gives back what the wait
 * holds and the caller's reference to s (the fast calls' look-up's).
 */
#define RN_WAIT_RCVTIMEO (-2)
int rn_inline_wait_port(rn_sock *s, struct rn_stream *st, int fd, short events, int64_t *timeout_ns,
			const struct timespec *t0, int busy_us, uint32_t *ready);
int64_t rn_inline_fd_timeout(int fd, int opt);
int rn_inline_fd_nonblock(rn_sock *s, int fd);
int64_t rn_inline_sock_rcvtimeo(rn_sock *s, int fd);
int64_t rn_inline_left_of(int64_t total, const struct timespec *t0);
/* After fork: the calling thread's wake-up descriptor is the parent's; it is let go. */
void rn_inline_wait_forget(void);

/* rn_inline_rails under the host lock, held by the caller. */
int rn_inline_rails_of(rn_sock *s, rn_railref *out, int max);

#endif
