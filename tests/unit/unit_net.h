/*
 * unit_net.h - two rn_conn endpoints wired back to back in memory, for the
 * connection and timer tests.
 *
 * Side 0 is the client, side 1 the server (a listener until the handshake
 * completes).  Rail i of each side is 10.0.(i+1).(side+1)/24, so local rail i
 * of one side talks to rail i of the other.  A datagram written at time t
 * arrives at t + delay_ns (100 us unless a test changes it), unless the
 * test's drop filter swallows it.  Every datagram written is logged (also
 * dropped ones) with its decoded header and the first bytes of its payload.
 *
 * Nothing here is a simulator: there is no rate, no queue, no randomness.
 * Tests either step the primitives by hand (un_flush, un_deliver,
 * un_inject) at literal times, or let un_run move time from one due event
 * to the next.  UN_TRACE=1 in the environment prints every datagram.
 */
#ifndef UNIT_NET_H
#define UNIT_NET_H

#include "unit_common.h"

#include "rn_wire.h"

enum {
	UN_CLIENT = 0,
	UN_SERVER = 1,
	UN_DGRAM = 1500,     /* largest datagram the tests use (cfg.max_dgram is 1472) */
	UN_MAX_EVENTS = 1024,
	UN_HEAD = 16,        /* payload bytes kept in the log */
	UN_PORT = 7000,
};

#define UN_DELAY_NS (100 * UT_US)

/* One datagram as logged. */
typedef struct un_rec {
	int from;           /* side that wrote it */
	int src_rail;       /* its local rail */
	int dst_rail;       /* the receiver's local rail (-1: no rail has tx.to) */
	int path;           /* tx.path */
	uint64_t sent_ns;
	int dropped;        /* swallowed by the filter */
	size_t len;
	/* decoded header */
	uint8_t type, flags, hpath;
	uint64_t dst;
	uint32_t seq;
	uint32_t ack, wnd;  /* valid when flags & RN_F_ACK */
	uint16_t nwords, plen;
	uint8_t head[UN_HEAD];
	/* keyed: sealed under the connection's keys (only the header fields above are known) */
	uint8_t sealed;
	uint64_t pn;        /* its packet number: epoch << 32 | counter */
} un_rec;

/* One datagram on its way. */
typedef struct un_pkt {
	un_rec rec;
	uint64_t arrive_ns;
	rn_addr src;
	uint8_t data[UN_DGRAM];
} un_pkt;

typedef struct un_side {
	int id;
	rn_conn *c;
	rn_config cfg;
	rn_env env;
	ut_mem um;
	ut_rng rng;
	rn_rail_addr rails[RN_MAX_RAILS];
	int nrails;
	uint32_t writable;      /* driver rails that take datagrams */
	rn_listener lis;
	int listening;
	rn_event ev[UN_MAX_EVENTS];
	int nev;

	/* the application: writes a pattern, reads and checks the peer's */
	uint64_t to_send, sent;
	int shut_when_done, shut;
	int reading;
	uint64_t recvd, mismatches;
	int eof, err;
	uint64_t eof_ns;
} un_side;

struct un_net;
/* Returns nonzero to drop the datagram. */
typedef int (*un_filter)(struct un_net *n, const un_rec *r, void *arg);

typedef struct un_net {
	un_side side[2];
	uint64_t delay_ns;
	uint64_t now;
	un_pkt *q;              /* in flight, in send order */
	int nq, capq;
	un_rec *log;
	int nlog, caplog;
	un_filter filter;
	void *filter_arg;
	/* timer property: after on_timer(T), expiry <= T only when something is owed */
	int check_expiry;
	int expiry_violations;
	uint64_t first_violation_ns;
	int first_violation_side;
	/* ...and how often the timer was still due after the owed datagrams went out */
	int refire;
	uint64_t first_refire_ns;
	int first_refire_side;
} un_net;

/* A network of nrails rails, default configuration on both sides. */
un_net *un_new(int nrails);
void un_del(un_net *n);

/* The server listens; the client connects to the server's rail 0. */
void un_listen(un_net *n);
int un_connect(un_net *n, uint64_t now);

/* Writes everything side s has to send at now (logged, filtered, queued). */
int un_flush(un_net *n, int s, uint64_t now);
/* Delivers everything that has arrived by now. */
int un_deliver(un_net *n, uint64_t now);
/* Runs side s's timer if due. */
void un_timer(un_net *n, int s, uint64_t now);
/* The application of side s writes and reads. */
void un_app(un_net *n, int s, uint64_t now);
/* deliver, timers, applications, flush: one instant. */
void un_step(un_net *n, uint64_t now);
/* Steps from n->now to each due event up to and including `until`. */
void un_run(un_net *n, uint64_t until);
/* un_run until both sides are established; returns the time it happened. */
uint64_t un_handshake(un_net *n, uint64_t t0);

/* Hands side `to` a datagram written by the test, as if from the peer's rail (h->ts 0: sent now). */
int un_inject(un_net *n, int to, uint64_t now, int local_rail, rn_addr from,
	      const rn_hdr *h, const rn_ackblk *ab, const void *payload, size_t len);
/* The same with the usual header: to side `to`'s connection, on path = rail. */
int un_inject_ctl(un_net *n, int to, uint64_t now, int rail, uint8_t type,
		  const void *payload, size_t len);
/* Address of side s's rail i. */
rn_addr un_addr(const un_net *n, int s, int rail);

/* Datagrams side s wrote of a type (0: any) on a path (-1: any) in [from, to]. */
int un_count(const un_net *n, int s, int type, int path, uint64_t from, uint64_t to);
/* The k-th (0-based) such datagram, or NULL. */
const un_rec *un_find(const un_net *n, int s, int type, int path, uint64_t from, int k);
/* The first event of a type on side s (rail -1: any) at or after t, or NULL. */
const rn_event *un_event(const un_net *n, int s, rn_event_type type, int rail, uint64_t t);
int un_event_count(const un_net *n, int s, rn_event_type type);

/* Filters */
int un_drop_all(un_net *n, const un_rec *r, void *arg);

#endif
