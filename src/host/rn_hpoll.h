/*
 * rn_hpoll.h - what the polling drivers (the Open MPI BTL, the libfabric
 * provider) share around the host kit: they run the core from their
 * callers' progress calls, on one socket per rail, a table of their links
 * by connection id and one receive buffer.
 *
 *  - rn_hpoll_open/close: the sockets, the table and the buffer;
 *  - rn_hpoll_rekey: a link's table entry follows its connection's id;
 *  - RN_HPOLL_RX_ROUNDS and RN_HPOLL_FLUSH_BUDGET bound one pass.
 *
 * No locks: the driver serialises every call.
 */
#ifndef RN_HPOLL_H
#define RN_HPOLL_H

#include <stddef.h>
#include <stdint.h>

#include "rn_core.h"
#include "rn_hrail.h"
#include "rn_hsock.h"
#include "rn_htab.h"

enum {
	RN_HPOLL_RX_ROUNDS = 16,      /* receive turns per pass: bounds one progress call */
	RN_HPOLL_FLUSH_BUDGET = 1024, /* datagrams one link may send per flush */
};

/* The rail sockets a driver opens (rn_hpoll_open). */
typedef struct rn_hpoll_rails {
	const rn_rail_info *rails;
	int n;
	const rn_rail_addr *bind; /* the port to bind on each rail (0: any); NULL: any on all */
	rn_hsock_opts opts;       /* for every socket (dgram: the largest datagram); dev is set here */
	int gso;                  /* send with GSO if the first socket takes it */
} rn_hpoll_rails;

/*
 * Sets up io for r->opts.dgram-byte datagrams, tab (16 links to start)
 * and rx (a GRO run's 64 KiB when r->opts.gro, else one datagram, at
 * least 2 KiB), then opens a socket on each rail in order; io->n counts
 * those tried.  The caller sets io's ops.  Returns 0, or -errno with a
 * sentence in err; rn_hpoll_close frees what was made either way.
 */
int rn_hpoll_open(rn_hset *io, rn_hrxbuf *rx, rn_htab *tab, const rn_hpoll_rails *r, char *err,
		  size_t errlen);
/* Closes the sockets and frees the buffer and the table of rn_hpoll_open. */
void rn_hpoll_close(rn_hset *io, rn_hrxbuf *rx, rn_htab *tab);
/*
 * After the core ran c's timers: a restarted handshake gave c a new id,
 * so link v's entry in tab moves from *id to it (and *id follows).  Does
 * nothing when the id is the same or the table cannot take it.
 */
void rn_hpoll_rekey(rn_htab *tab, uint64_t *id, rn_conn *c, void *v);

#endif
