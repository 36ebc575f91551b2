/*
 * rn_hpoll.h - what the polling drivers (the Open MPI BTL, the libfabric
 * provider) share around the host kit: they run the core from their
 * callers' progress calls, on one socket per rail, a table of their links
 * by connection id and one receive buffer.
 *
 *  - rn_hpoll_open/close: the sockets, the table and the buffer;
 *  - rn_hpoll_rekey: a link's table entry follows its connection's id;
 *  - rn_hpoll_on_send_error, rn_hpoll_on_error: the sockets' errors to the
 *    links they are about;
 *  - rn_hpoll_monitor, rn_hpoll_leave: links in their peer's monitor, and
 *    the link of a new keeper due at once;
 *  - rn_hpoll_listen: the listener's answer to a datagram for no link, and
 *    the cap on accepted links that have not said who they are;
 *  - rn_hpoll_rail_for: our socket in a peer rail's subnet;
 *  - RN_HPOLL_RX_ROUNDS and RN_HPOLL_FLUSH_BUDGET bound one pass (rn_hpass),
 *    RN_HPOLL_MAX_UNBOUND the accepted links without a hello.
 *
 * No locks: the driver serialises every call.
 */
#ifndef RN_HPOLL_H
#define RN_HPOLL_H

#include <stddef.h>
#include <stdint.h>

#include "rn_core.h"
#include "rn_hmon.h"
#include "rn_hrail.h"
#include "rn_hsock.h"
#include "rn_htab.h"

enum {
	RN_HPOLL_RX_ROUNDS = 16,      /* receive turns per pass: bounds one progress call */
	RN_HPOLL_FLUSH_BUDGET = 1024, /* datagrams one link may send per flush */
	/*
	 * Accepted links whose hello has not come yet, at most (a COOKIE_ECHO
	 * over it is dropped and resent by its client): a real peer writes its
	 * hello in its first round trip (rn_hpass resets one silent 10 s).
	 */
	RN_HPOLL_MAX_UNBOUND = 256,
};

/* A driver's links as the kit reaches them: socket errors (rn_hsock_ops' arg), the monitor. */
typedef struct rn_hpoll_links {
	rn_htab *tab;
	rn_hmon *mon;
	rn_conn *(*conn_of)(void *v);  /* link v's connection */
	void (*mark)(void *v);         /* link v has work for the next pass */
	uint64_t (*now)(void *arg);    /* the time to give the core */
	void (*due)(void *v);          /* link v runs its timers at the next pass */
	void *arg;
} rn_hpoll_links;

/* The rail sockets a driver opens (rn_hpoll_open). */
typedef struct rn_hpoll_rails {
	const rn_rail_info *rails;
	int n;
	const rn_rail_addr *bind; /* the port to bind on each rail (0: any); NULL: any on all */
	rn_hsock_opts opts;       /* for every socket (dgram: the largest datagram); dev is set here */
	int gso;                  /* send with GSO if the first socket takes it */
	rn_hpoll_links *links;    /* the arg of io's error hooks (rn_hpoll_on_*); NULL: none */
} rn_hpoll_rails;

/*
 * Sets up io for r->opts.dgram-byte datagrams, tab (16 links to start)
 * and rx (a GRO run's 64 KiB when r->opts.gro, else one datagram, at
 * least 2 KiB), then opens a socket on each rail in order but those with
 * no address yet (ip 0: waiting, rn_hpoll_rail_add), each socket naming
 * its rail (rn_hsock.rail); io's errors go to r->links.  Returns 0, or -errno with a
 * sentence in err; rn_hpoll_close frees what was made either way.
 */
int rn_hpoll_open(rn_hset *io, rn_hrxbuf *rx, rn_htab *tab, const rn_hpoll_rails *r, char *err,
		  size_t errlen);
/*
 * A rail of r with no address at rn_hpoll_open (rn_rails_discover_any:
 * skipped then) that has one now: a socket on it, io's next.  Returns its
 * index, or -errno: -EEXIST (open already), -EADDRNOTAVAIL (the kernel
 * does not let it be bound yet: its local route comes after the address
 * event; try again shortly).
 */
int rn_hpoll_rail_add(rn_hset *io, const rn_hpoll_rails *r, int rail);
/*
 * Rail `rail` of r has another address now (its old one went): its socket
 * is bound there anew (rn_hsock_rebind), with the same port number where
 * that is free (a listener's must be).  Returns its index, or -errno:
 * -ENOENT (no socket on the rail), -EADDRNOTAVAIL (not bindable yet).
 */
int rn_hpoll_rail_move(rn_hset *io, const rn_hpoll_rails *r, int rail);
/* The socket of io (its index, what the core calls the local rail) on r's rail `rail`, or -1. */
int rn_hpoll_sock_of(const rn_hset *io, int rail);
/* How a driver takes the connections its listener accepts (rn_hpoll_listen). */
typedef struct rn_hpoll_accept {
	int max_unbound;                /* accepted links without a hello at most */
	int (*unbound)(const void *v);  /* 1: link v counts against max_unbound */
	/* a link for the connection of ap (rn_conn_accept), or NULL (nothing kept) */
	void *(*on_accept)(void *arg, const rn_accept_params *ap, uint64_t now);
	void *arg;
} rn_hpoll_accept;

/*
 * A datagram for no link, given to lis (rn_listener_recv): its reply goes
 * back to `from` at once on that rail; a handshake it completes becomes a
 * link through a->on_accept, unless tab holds a->max_unbound links
 * a->unbound counts (a real peer's hello comes within a round trip; a
 * client refused resends its COOKIE_ECHO).  A connection no link took is
 * forgotten by the listener (its COOKIE_ECHO may come again).  The copy of
 * the key in the accept parameters is wiped.  Returns 1 when refused for
 * the cap, else 0.
 */
int rn_hpoll_listen(rn_listener *lis, rn_hset *io, const rn_htab *tab, const rn_hpoll_accept *a,
		    int rail, rn_addr from, const uint8_t *d, size_t len, uint64_t now);
/*
 * rn_hsock_ops.on_send_error with arg an rn_hpoll_links: a send to the
 * link whose id is owner failed on that rail (unreachable, interface
 * gone); its connection stops sending there until it hears back.
 */
void rn_hpoll_on_send_error(void *links, int rail, uint64_t owner, int err);
/*
 * rn_hsock_ops.on_error with arg an rn_hpoll_links: a port unreachable
 * read from the rail's error queue goes to the link whose datagram it
 * quotes (rn_hmon_unreachable): its peer process may be gone.
 */
void rn_hpoll_on_error(void *links, int rail, const rn_hsock_err *e);
/*
 * After the core ran c (a link's connection, its user pointer the link):
 * c joins its peer once established and leaves once it lingers
 * (rn_hmon.h); when another member becomes the peer's keeper, or c's DATA
 * ended the peer's idleness (the keeper's pace quickens), its link is due.
 */
void rn_hpoll_monitor(const rn_hpoll_links *k, rn_conn *c, uint64_t now);
/* c's link goes: c leaves its peer, and a member that becomes keeper has its link due. */
void rn_hpoll_leave(const rn_hpoll_links *k, rn_conn *c);
/*
 * The socket of io (its index) whose rail shares a subnet with a peer's
 * rail `peer` (either family), or -1.  peer->prefix is the peer rail's
 * prefix length (the family's full length when the driver does not know
 * it): the shorter of it and the socket's counts.
 */
int rn_hpoll_rail_for(const rn_hset *io, const rn_rail_addr *peer);
/*
 * A peer's rail as an address to send to and to know it by: a link-local
 * IPv6 one (a name or a modex blob carries no scope) takes the interface
 * of our socket in its subnet.
 */
rn_addr rn_hpoll_peer_addr(const rn_hset *io, const rn_rail_addr *peer);
/* Closes the sockets and frees the buffer and the table of rn_hpoll_open. */
void rn_hpoll_close(rn_hset *io, rn_hrxbuf *rx, rn_htab *tab);
/*
 * After the core ran c's timers: a restarted handshake gave c a new id,
 * so link v's entry in tab moves from *id to it (and *id follows).  Does
 * nothing when the id is the same or the table cannot take it.
 */
void rn_hpoll_rekey(rn_htab *tab, uint64_t *id, rn_conn *c, void *v);

#endif
