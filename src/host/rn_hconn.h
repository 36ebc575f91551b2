/*
 * rn_hconn.h - a polling driver's links (the Open MPI BTL's, the libfabric
 * provider's): one connection each, filed in the driver's table by its id
 * and kept in one list the pass walks.
 *
 *  - rn_hconn: the kit's part of a link, the first member of the driver's
 *    link struct (so the table and the list hold the link itself);
 *  - rn_hconns_add, rn_hconn_rekey, rn_hconns_reap: a link's life (filed,
 *    filed again under a new id, freed once dead, with a hook for what the
 *    driver holds beside it);
 *  - rn_hconns_verdict_due, rn_hconn_timer: the pass's steps on the
 *    links' timers (a rail verdict reads what the sockets hold first);
 *  - rn_hconn_dial: one connect attempt over the peer's rails in turn;
 *  - rn_hconns_rail: a rail gone or back (rn_hfollow) told to every link;
 *    rn_hconns_rail_add: a new one offered to every link;
 *  - rn_hconn_flush: what a link's connection owes onto the rail sockets;
 *  - rn_hconn_conn_of, _mark, _due, _on_reset: the hooks rn_hpoll_links
 *    and rn_hdisp take, for links whose first member is their rn_hconn.
 *
 * No locks: the driver serialises every call.
 */
#ifndef RN_HCONN_H
#define RN_HCONN_H

#include <stdint.h>

#include "rn_core.h"
#include "rn_hpoll.h"

/* The kit's part of a driver's link: the first member of the driver's struct. */
typedef struct rn_hconn {
	rn_conn *conn;
	uint64_t id;                  /* rn_conn_id, its key in the table: datagrams carry it */
	struct rn_hconn *next, *prev; /* the driver's list, newest first */
	uint64_t created_ns;
	uint64_t expiry_ns;           /* cached rn_conn_expiry */
	uint8_t dead;                 /* freed by the next rn_hconns_reap */
	uint8_t dirty;                /* has work: the next pass services it */
} rn_hconn;

/* A driver's links: its list, its table and what a link leaves when it goes. */
typedef struct rn_hconns {
	rn_hconn *head;
	rn_htab *tab;              /* links by id (rn_hpoll_open made it) */
	rn_hset *io;               /* a freed link's queued datagrams are forgotten here */
	const rn_hpoll_links *lk;  /* the monitor a freed link's connection leaves */
	/*
	 * Link h is out of the list and the table, its connection freed
	 * (h->conn NULL): the driver drops what points at it and frees it.
	 */
	void (*on_reap)(void *arg, rn_hconn *h);
	void *arg;
} rn_hconns;

/*
 * Link h (zeroed by the driver, its first member h) takes connection c:
 * its id, its expiry and now as its birth; h is filed under the id, heads
 * the list and becomes c's user pointer.  0, or -ENOMEM (nothing kept:
 * the driver frees h and c).
 */
int rn_hconns_add(rn_hconns *s, rn_hconn *h, rn_conn *c, uint64_t now);
/*
 * After the core ran h's timers: a restarted handshake gave its
 * connection a new id, and h's entry follows (rn_hpoll_rekey).
 */
void rn_hconn_rekey(rn_hconns *s, rn_hconn *h);
/*
 * Frees every link marked dead: out of the list and the table, its queued
 * datagrams forgotten, its connection out of its peer's monitor and freed,
 * then s->on_reap.  A link whose leaving makes another its peer's keeper
 * has that one due (rn_hpoll_leave).
 */
void rn_hconns_reap(rn_hconns *s);

/*
 * Before a pass runs the links' timers: 1 when the sockets were left with
 * data (rx_more, rn_hset_pass) and a live link's timer is due with a rail
 * verdict pending (rn_conn_verdict_pending): the driver receives once more
 * first, so the verdict judges the rail on what has already arrived.
 */
int rn_hconns_verdict_due(const rn_hconns *s, uint32_t rx_more, uint64_t now);
/*
 * Runs h's due timers (the caller checked h->expiry_ns <= now): a restarted
 * handshake refiles h (rn_hconn_rekey), and h is dirty (it may owe datagrams).
 */
void rn_hconn_timer(rn_hconns *s, rn_hconn *h, uint64_t now);

/* A connect attempt: our sockets, the connection's settings, the peer's rails. */
typedef struct rn_hdial {
	const rn_hset *io;          /* its sockets' addresses are the connection's local rails */
	const rn_config *cfg;
	const rn_env *env;
	const rn_rail_addr *peer;   /* prefix: the peer rail's, or 32 when unknown */
	int npeer;
} rn_hdial;

/*
 * One attempt over the peer's rails in turn: from d->peer[*next % npeer]
 * on, the first rail that shares a subnet with one of our sockets
 * (rn_hpoll_rail_for) gets the INIT of a new connection *c
 * (rn_conn_connect), and *next moves past it, so the attempt after a
 * failed one goes to the rail after it.  Returns that rail's index in
 * d->peer; RN_ERR_NOROUTE when none of the peer's rails is in our
 * subnets (*next unchanged); or rn_conn_connect's error (*next moved).
 */
int rn_hconn_dial(rn_conn **c, const rn_hdial *d, int *next, uint64_t now);

/*
 * Our rail (socket) `rail` stopped or started being usable for `cause`
 * (rn_hfollow): every live link's connection hears it (rn_conn_rail_gone,
 * rn_conn_rail_back) and is dirty.  Returns how many links heard.
 */
int rn_hconns_rail(rn_hconns *s, int rail, int usable, rn_cause cause, uint64_t now);
/*
 * Our new socket idx (a rail that got its first address: rn_hgrow) is
 * offered to every established link's peer (rn_conn_rail_add: a RAILS
 * packet); a link still in its handshake or closing keeps the rails it
 * has.  Returns how many links took it.
 */
int rn_hconns_rail_add(rn_hconns *s, int idx, uint64_t now);
/*
 * Our socket idx was bound to its rail's new address (rn_hgrow): every
 * established link takes it (rn_conn_rail_readdr: its peer hears it in a
 * RAILS) and uses the rail again.  Returns how many links took it.
 */
int rn_hconns_rail_readdr(rn_hconns *s, int idx, uint64_t now);

/*
 * What h's connection owes goes onto the rail sockets (at most
 * RN_HPOLL_FLUSH_BUDGET datagrams), and h's cached expiry follows what
 * that armed; for a send outside the pass too.
 */
void rn_hconn_flush(const rn_hconns *s, rn_hconn *h, uint64_t now);

/* A stateless reset the core took for link v (rn_hdisp.on_reset): v is serviced next. */
void rn_hconn_on_reset(void *arg, void *v);

/* Link v's connection (rn_hpoll_links.conn_of, rn_hdisp.conn_of). */
rn_conn *rn_hconn_conn_of(void *v);
/* Link v has work for the next pass (rn_hpoll_links.mark). */
void rn_hconn_mark(void *v);
/* Link v runs its timers at the next pass (rn_hpoll_links.due). */
void rn_hconn_due(void *v);

#endif
