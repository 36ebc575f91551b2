/*
 * rn_hsock.h - the host kit's rail sockets: one UDP socket per rail, with
 * batched receive and batched send, shared by every driver of the core (the
 * engine thread, application threads driving inline, the Open MPI BTL).
 *
 * No event loop, no threads, no clock of its own beyond stamping a read:
 * the caller polls, calls, and gets datagrams and errors back through
 * callbacks.  What it does for every driver:
 *  - receive (rn_hrecv.h): recvmmsg into caller-owned batches, UDP GRO runs split again
 *    into their datagrams, each datagram timed by the kernel's arrival stamp
 *    (CLOCK_REALTIME shifted to CLOCK_MONOTONIC), read in turns over the
 *    rails so the core sees them interleaved as the sender striped them;
 *  - send: a small queue per socket sent with sendmmsg, runs of equal-size
 *    datagrams to one address as UDP GSO messages, EAGAIN kept as
 *    back-pressure (the socket reads "not writable" until a flush works);
 *  - errors: ri2n sizes its own datagrams, so a forged ICMP "fragmentation
 *    needed" changes nothing we send (IP_PMTUDISC_PROBE); ICMP errors are
 *    read from the error queue and reported for the destination they name,
 *    never charged to whichever datagram happened to be sent next.
 */
#ifndef RN_HSOCK_H
#define RN_HSOCK_H

/* struct mmsghdr needs _GNU_SOURCE before the first system header */

#include <netinet/in.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/socket.h>

#include "rn_core.h"
#include "rn_hsa.h"

enum {
	RN_HTXQ = 64,          /* datagrams queued per socket */
	RN_HRX_TURN = 8,       /* most messages (datagrams or GRO runs) per socket per turn */
	RN_HGRO_BUF = 65536,   /* one GRO run */
};

/* rn_hsa, a socket address of either family, is in rn_hsa.h. */

/*
 * Fills *sa with a (an IPv6 address with its scope as sin6_scope_id);
 * returns the length to pass to the kernel.
 */
socklen_t rn_hsock_sa_of(rn_hsa *sa, rn_addr a);
/*
 * The rn_addr of a socket address the kernel wrote: AF_INET, or AF_INET6
 * (a v4-mapped one as IPv4; the scope kept only for a link-local one).
 * Another family gives the unset address.
 */
rn_addr rn_hsock_sa_addr(const rn_hsa *sa);

/* A queued datagram: where it goes and whose it is (for a hard send error). */
typedef struct rn_htx {
	rn_hsa to;
	uint64_t owner;
	uint16_t len;
} rn_htx;

typedef struct rn_hsock {
	int fd;
	rn_rail_addr addr;             /* what the core calls this local rail */
	uint8_t rail;                  /* the polling drivers' rail it is on (rn_hpoll_sock_of) */
	rn_htx q[RN_HTXQ];
	uint8_t *bufs[RN_HTXQ];        /* q[i]'s datagram is in bufs[i] */
	uint8_t *mem;                  /* the block bufs point into */
	int qn;
	int blocked;                   /* EAGAIN: not writable until a flush works */
	uint64_t tx_dgrams, rx_dgrams, tx_errors, tx_dropped;
	uint64_t err_icmp;             /* error-queue entries read */
} rn_hsock;

/* What the kernel said went wrong, for one destination. */
typedef struct rn_hsock_err {
	rn_addr dest;      /* the destination of the datagram that caused it */
	int err;           /* errno */
	uint8_t icmp;      /* 1: an ICMP error (type/code valid), 0: local */
	uint8_t type, code;
	/*
	 * The start of the datagram the error answers, as the ICMP quoted it
	 * (its UDP payload: our header first); quote_len may be 0.
	 */
	const uint8_t *quote;
	size_t quote_len;
} rn_hsock_err;

/*
 * A datagram was delivered: socket `idx`, sender, bytes, arrival time
 * (CLOCK_MONOTONIC ns, already clamped by the set's clock).
 */
typedef void (*rn_hsock_input_fn)(void *arg, int idx, rn_addr from, const uint8_t *d,
				  size_t len, uint64_t at);
/*
 * Hooks of a set, any may be NULL.  on_send_error: sending a datagram of
 * `owner` on socket idx failed for a reason of its own (interface gone,
 * no route, filtered); the rail to that peer is unusable.  on_error: the
 * error queue named a destination (a port unreachable: nobody listens
 * there); only connections to that destination should care.
 */
typedef struct rn_hsock_ops {
	void (*on_send_error)(void *arg, int idx, uint64_t owner, int err);
	void (*on_error)(void *arg, int idx, const rn_hsock_err *e);
} rn_hsock_ops;

/*
 * Whether e is an ICMP port unreachable (ICMP type 3 code 3, ICMPv6 type 1
 * code 4): nothing listens at e->dest.
 */
static inline int rn_hsock_err_port_unreach(const rn_hsock_err *e)
{
	return e->icmp && (e->dest.v6 ? e->type == 1 && e->code == 4 : e->type == 3 && e->code == 3);
}

/* Options for rn_hsock_open. */
typedef struct rn_hsock_opts {
	uint32_t dgram;    /* largest datagram queued */
	int gro;           /* ask for UDP GRO */
	int rx_ts;         /* ask for kernel arrival stamps */
	int recverr;       /* ICMP errors into the error queue */
	/*
	 * Interface to pin the socket to (SO_BINDTODEVICE), NULL: none.  A rail
	 * sharing its subnet with another needs it: the kernel would send both
	 * rails' datagrams out of the first interface of the subnet.
	 */
	const char *dev;
} rn_hsock_opts;

/*
 * Opens a UDP socket bound to ip:port (host order; port 0: any), pinned to
 * o->dev if set, and allocates its send buffers.  Returns 0 or -errno
 * (s->fd -1 if no socket; -EPERM: the kernel would not pin it: CAP_NET_RAW
 * is needed before Linux 5.7, from 5.7 on anyone may pin a socket once).
 */
int rn_hsock_open(rn_hsock *s, uint32_t ip, uint16_t port, uint8_t prefix,
		  const rn_hsock_opts *o);
/*
 * The same for a rail of either family: an IPv6 rail's socket is AF_INET6
 * with IPV6_V6ONLY (it never takes IPv4 traffic: an IPv4 rail has its own
 * socket), bound to a->ip6 on interface a->scope if link-local.  s->addr
 * is *a with the port the kernel chose.
 */
int rn_hsock_open_rail(rn_hsock *s, const rn_rail_addr *a, const rn_hsock_opts *o);
/*
 * Socket s of a set (rn_hset) on another address: a new descriptor bound to
 * a with o's options replaces s's, whose queue is dropped; its buffers stay
 * (they move between the set's sockets).  0, or -errno with s unchanged.
 */
int rn_hsock_rebind(rn_hsock *s, const rn_rail_addr *a, const rn_hsock_opts *o);
/*
 * Closes the socket (unless s->fd was set to -1 first) and frees its block
 * of buffers; in a set, only as part of closing the whole set.
 */
void rn_hsock_close(rn_hsock *s);
/* The kernel has UDP GSO on this socket (the option exists). */
int rn_hsock_probe_gso(int fd);

/*
 * A set of rail sockets with the same drivers' hooks: what the engine calls
 * a port and the BTL its io.  The caller opens s[0..n-1] with rn_hsock_open.
 */
typedef struct rn_hset {
	rn_hsock s[RN_MAX_RAILS];
	int n;
	uint32_t dgram;
	int gso;                       /* 1: send runs with UDP_SEGMENT */
	/*
	 * The next datagram is built here, then swapped into a socket's queue:
	 * buffers move between the spare and the sockets' blocks, so the set's
	 * sockets are closed together (rn_hset_free) and `own` is what
	 * rn_hset_init allocated, wherever it is now.
	 */
	uint8_t *spare, *own;
	rn_hsock_ops ops;
	void *arg;
} rn_hset;

/* Initializes an empty set (no sockets) for datagrams of up to dgram bytes. */
int rn_hset_init(rn_hset *h, uint32_t dgram, int gso);
/* Closes every socket and frees the buffers. */
void rn_hset_free(rn_hset *h);

/* Sockets (bit i = socket i) whose queue can take a datagram now. */
uint32_t rn_hset_writable(const rn_hset *h);
/* Where to build the next datagram (h->dgram bytes). */
static inline uint8_t *rn_hset_spare(rn_hset *h) { return h->spare; }
/*
 * Queues the datagram built in the spare buffer on socket idx.  Returns 0,
 * 1 if that filled the queue (the caller sends it: rn_hset_flush_one), or
 * -1 if the queue was full (dropped, counted: loss recovery resends).
 */
int rn_hset_queue(rn_hset *h, int idx, rn_addr to, size_t len, uint64_t owner);
/*
 * Sockets of the set with something to read or an error pending: one poll
 * for every rail, timeout 0 (drivers that spin on progress, like MPI's).
 */
uint32_t rn_hset_ready(const rn_hset *h);
/* Sends what every socket has queued (retries sockets that hit EAGAIN). */
void rn_hset_flush(rn_hset *h);
/* Sends socket idx's queue; returns 1 if it stays blocked (EAGAIN). */
int rn_hset_flush_one(rn_hset *h, int idx);
/* Queued datagrams of `owner` lose their owner (it is being freed). */
void rn_hset_forget(rn_hset *h, uint64_t owner);
/* Sends one datagram now, best effort (handshake replies); 0 or -errno. */
int rn_hset_send_now(rn_hset *h, int idx, rn_addr to, const uint8_t *buf, size_t len);
/*
 * Reads socket idx's error queue to the end, calling ops.on_error for each
 * entry with the destination it names.  Returns the entries read.
 */
int rn_hset_drain_errors(rn_hset *h, int idx);

/*
 * Groups q[0..qn) into sendmmsg messages: with gso, a run of datagrams to
 * one address, all of the first one's size but a shorter last, at most
 * 64 datagrams and 65000 bytes, is one message.  counts[m] gets the
 * datagrams in message m; returns the messages.  (Exposed for tests.)
 */
int rn_hsock_build_msgs(const rn_hsock *s, int gso, struct mmsghdr *msgs, struct iovec *iov,
			uint8_t *ctl, int *counts);

/*
 * Datagrams taken out of a socket's queue (rn_hset_take) to be sent after
 * the lock that guards the set is let go (rn_htake_send): the sending
 * system call, with the receiver's softirq a veth runs in it, is most of a
 * small request's time under that lock, and threads that answer requests
 * on the same port queued behind it.  Copies, so the set's buffers never
 * leave it; only short queues are taken (a request's answer and its ACK).
 */
enum {
	RN_HTAKE_MAX = 8,          /* datagrams */
	RN_HTAKE_BYTES = 16384,    /* bytes */
};

typedef struct rn_htake {
	int fd, gso, n;
	rn_htx q[RN_HTAKE_MAX];
	uint8_t *bufs[RN_HTAKE_MAX];
	uint8_t mem[RN_HTAKE_BYTES];
} rn_htake;

/*
 * 1: socket idx's whole queue was copied into t and left the queue (counted
 * as sent); 0: it stays queued (too long, or the socket is blocked).
 */
int rn_hset_take(rn_hset *h, int idx, rn_htake *t);
/*
 * Sends what t holds.  0 when every datagram went; else the errno of the
 * first that did not, and the rest are dropped (the core's loss recovery
 * resends them): the caller sends through the queue again, under its lock,
 * where errors are told apart (rn_hset_flush_one).
 */
int rn_htake_send(rn_htake *t);

/*
 * What connection c owes goes onto the set's rails, at most `budget`
 * datagrams, while a rail is writable; a full queue goes out at once so the
 * rail stays usable (the rest waits for the caller's flush).  owner tags
 * the datagrams for error reports.  Returns the datagrams queued.
 */
int rn_hset_send_conn(rn_hset *h, rn_conn *c, uint64_t owner, uint64_t now, int budget);

/* the receive half, which the set's users mostly want too */
#include "rn_hrecv.h"

#endif
