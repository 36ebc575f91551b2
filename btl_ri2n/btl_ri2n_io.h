/*
 * btl_ri2n_io.h - the BTL's UDP sockets, one per rail, driven by the caller.
 *
 * The same approach as the engine's rn_port (recvmmsg in interleaved turns
 * over the rails, sendmmsg with UDP GSO runs, a small queue per socket with
 * back-pressure), but with no event loop and no thread: MPI's progress calls
 * ri2n_io_recv and ri2n_io_flush.  Every socket serves every connection of
 * the process and its listener; datagrams are told apart by connection id.
 */
#ifndef BTL_RI2N_IO_H
#define BTL_RI2N_IO_H

#include <netinet/in.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/socket.h>

#include "rn_core.h"
#include "rn_rails.h"

enum {
	RI2N_TXQ = 64,     /* datagrams queued per socket before a sendmmsg */
	RI2N_RX_TURN = 4,  /* reads (datagrams or GRO runs of ~45) per socket per turn */
};

typedef struct ri2n_txent {
	struct sockaddr_in to;
	uint64_t owner; /* connection id, to report a hard send error to it */
	uint16_t len;
} ri2n_txent;

typedef struct ri2n_sock {
	int fd;
	rn_rail_addr addr;          /* what the core calls this local rail */
	ri2n_txent q[RI2N_TXQ];
	uint8_t *bufs[RI2N_TXQ];    /* q[i]'s datagram is in bufs[i] */
	int qn;
	int blocked;                /* EAGAIN: retried at the next flush */
	uint64_t tx_dgrams, rx_dgrams, tx_errors, tx_dropped;
} ri2n_sock;

/* A datagram arrived on `rail` from `from` at `now` (CLOCK_MONOTONIC ns). */
typedef void (*ri2n_io_input_fn)(void *arg, int rail, rn_addr from, const uint8_t *d,
				 size_t len, uint64_t now);
/* Sending a datagram of connection `owner` on `rail` failed hard (errno `err`). */
typedef void (*ri2n_io_error_fn)(void *arg, int rail, uint64_t owner, int err);

typedef struct ri2n_io {
	ri2n_sock s[RN_MAX_RAILS];
	int n;
	uint32_t dgram;            /* largest datagram */
	int gso;                   /* 1: the kernel takes UDP_SEGMENT runs */
	int gro;                   /* 1: UDP_GRO asked for on every socket */
	uint32_t more;             /* sockets left with data by the last receive: no poll */
	int rx_ts;                 /* 1: datagrams carry the kernel's arrival time */
	uint64_t floor_ns;         /* times handed out never go below this (monotonic) */
	uint8_t *spare;            /* the next datagram is built here, then swapped in */
	uint8_t *rxmem;            /* per socket, RI2N_RX_TURN receive buffers of rxsz bytes */
	size_t rxsz;
	ri2n_io_error_fn on_error;
	void *arg;
} ri2n_io;

/*
 * Opens one UDP socket per rail, bound to the rail's address and a free
 * port.  Returns 0, or -errno with a sentence in err.
 */
int ri2n_io_open(ri2n_io *io, const rn_rail_info *rails, int n, uint32_t dgram, int gso,
		 int gro, int rx_ts, char *err, size_t errlen);
void ri2n_io_close(ri2n_io *io);

/* Rails (bit i = socket i) whose queue can take a datagram now. */
uint32_t ri2n_io_writable(const ri2n_io *io);
/* Where to build the next datagram (io->dgram bytes). */
static inline uint8_t *ri2n_io_spare(ri2n_io *io) { return io->spare; }
/* Queues the datagram built in the spare buffer; flushes the socket when full. */
void ri2n_io_queue(ri2n_io *io, int rail, rn_addr to, size_t len, uint64_t owner);
/* Sends what every socket has queued (also retries sockets that hit EAGAIN). */
void ri2n_io_flush(ri2n_io *io);
/* Sends one datagram now, best effort (handshake replies, nudges). */
void ri2n_io_send_now(ri2n_io *io, int rail, rn_addr to, const uint8_t *buf, size_t len);
/*
 * Reads what the sockets have, up to `rounds` turns of RI2N_RX_TURN reads
 * per socket, interleaving the rails as the sender striped them.  Each
 * datagram's time is when the kernel received it (with rx_ts), so a process
 * that was descheduled does not make the network look slow or a rail look
 * silent; times never go below io->floor_ns (the latest time the caller gave
 * the core) nor above the time of the read, and io->floor_ns ends at the
 * latest one handed out.  Returns the number of datagrams.
 */
int ri2n_io_recv(ri2n_io *io, ri2n_io_input_fn fn, void *arg, int rounds);

#endif
