/*
 * rn_hrecv.h - batched receive from a set's rail sockets: GRO runs split
 * into datagrams, arrival stamps, one pass over every ready socket.
 */
#ifndef RN_HRECV_H
#define RN_HRECV_H

#include "rn_hsock.h"

#define RN_HRX_CTL (CMSG_SPACE(sizeof(int)) + CMSG_SPACE(sizeof(struct timespec)))

/* One turn's read of one socket: messages, maybe GRO runs, and where the split is. */
typedef struct rn_hrx {
	struct mmsghdr msgs[RN_HRX_TURN];
	struct iovec iov[RN_HRX_TURN];
	rn_hsa from[RN_HRX_TURN];      /* either family: the socket's */
	uint8_t ctl[RN_HRX_TURN][RN_HRX_CTL];
	uint64_t at[RN_HRX_TURN];      /* arrival, CLOCK_MONOTONIC ns (0: unknown) */
	int n, k;                      /* messages read, message being split */
	int filled;                    /* headers the kernel wrote into in the last read */
	size_t off, seg;               /* position in message k, its GRO segment size */
} rn_hrx;

/*
 * Receive buffers for a set: RN_MAX_RAILS batches of `turn` messages of
 * `bufsz` bytes.  One per thread that reads (the engine shares one under
 * its lock; the BTL has its own).
 */
typedef struct rn_hrxbuf {
	rn_hrx b[RN_MAX_RAILS];
	uint8_t *mem;
	size_t bufsz;
	int turn;
	uint64_t now;      /* CLOCK_MONOTONIC ns of the latest read that got something */
} rn_hrxbuf;

int rn_hrxbuf_init(rn_hrxbuf *r, size_t bufsz, int turn);
void rn_hrxbuf_free(rn_hrxbuf *r);

/*
 * The arrival-clock clamp: a datagram's time is the kernel's stamp `t`
 * (0: none, use `now`), never below *floor (the latest time already given
 * to the core: time never goes back) nor above `now` (the time of the
 * read).  *floor ends at the result.
 */
uint64_t rn_hclock_clamp(uint64_t *floor, uint64_t t, uint64_t now);

/*
 * One datagram of a batch read from socket `idx`: the next one, GRO runs
 * split; 0 when the batch is used up.  (Exposed for tests.)
 */
typedef struct rn_hdgram {
	const uint8_t *d;
	size_t len;
	rn_addr from;
	uint64_t at;       /* unclamped kernel time, CLOCK_MONOTONIC ns; 0 unknown */
} rn_hdgram;
int rn_hrx_next(rn_hrx *b, rn_hdgram *out);

/*
 * Reads the sockets in `want` of a set in turns: a batch from each, then
 * their datagrams handed to fn one rail at a time, until no socket filled
 * its batch or `rounds` turns.  `ready`: the sockets the caller's poller
 * reported (readable or in error); one of them found empty has its error
 * queue read, which is what its readiness was about.  *floor: the clock
 * clamp's floor (in/out); NULL: fn gets the kernel's stamp (or r->now)
 * unclamped, to clamp itself.  *more gets the sockets whose last batch was
 * full (they may hold more).  Returns the datagrams delivered.  fn may not
 * close the set's sockets.
 */
int rn_hset_recv(rn_hset *h, rn_hrxbuf *r, uint32_t want, uint32_t ready, int rounds,
		 uint64_t *floor, rn_hsock_input_fn fn, void *arg, uint32_t *more);
/*
 * One receive pass of a driver that polls from its caller's progress calls
 * (the BTL, the libfabric provider): the sockets the last pass left data in
 * (*more), else those one poll() finds ready, read as rn_hset_recv does;
 * *now, the latest time given to the core, rises to the newest arrival the
 * clock clamp allows.  An idle pass costs one poll(), a lone message two
 * system calls.  Returns the datagrams delivered.
 */
int rn_hset_pass(rn_hset *h, rn_hrxbuf *r, int rounds, uint64_t *now, rn_hsock_input_fn fn,
		 void *arg, uint32_t *more);

#endif
