/*
 * rn_htab.h - the host kit's connection table and datagram dispatch.
 *
 * Every datagram but a handshake's first carries the id its receiver chose
 * for the connection (rn_wire_peek_dst).  A table maps ids to the driver's
 * connection objects (open addressing, linear probing); what names no
 * connection goes to the listener if the sockets have one, else is dropped
 * and counted.  A connection that restarts its handshake draws a new id and
 * is filed again under it (rn_htab_rekey).  Used by the engine's ports and
 * by the BTL; no I/O, no locks (the driver holds its own).
 */
#ifndef RN_HTAB_H
#define RN_HTAB_H

#include <stddef.h>
#include <stdint.h>

#include "rn_core.h"

typedef struct rn_hent {
	uint64_t id;       /* 0: empty (ids are never 0) */
	void *v;
} rn_hent;

typedef struct rn_htab {
	rn_hent *e;
	uint32_t cap, n;   /* cap: a power of two */
} rn_htab;

/* An empty table with room for about cap entries before it grows. 0 or -ENOMEM. */
int rn_htab_init(rn_htab *t, uint32_t cap);
void rn_htab_free(rn_htab *t);
/* Files v under id (not 0, not present).  0, -EINVAL or -ENOMEM. */
int rn_htab_add(rn_htab *t, uint64_t id, void *v);
/* What id names, or NULL. */
void *rn_htab_get(const rn_htab *t, uint64_t id);
/* Removes id if it names v.  1 if removed, 0 if not there. */
int rn_htab_del(rn_htab *t, uint64_t id, const void *v);
/* v, filed under old_id, is filed under new_id instead.  0 or -errno. */
int rn_htab_rekey(rn_htab *t, uint64_t old_id, uint64_t new_id, void *v);
/* Calls fn on every entry; fn must not add or remove entries. */
void rn_htab_each(const rn_htab *t, void (*fn)(void *v, void *arg), void *arg);

/* Where datagrams go: a table, the driver's connection and listener hooks. */
typedef struct rn_hdisp {
	rn_htab *tab;
	/* a datagram for connection v */
	void (*to_conn)(void *arg, void *v, int idx, rn_addr from, const uint8_t *d, size_t len,
			uint64_t at);
	/*
	 * No connection has the datagram's id (or it has none: a handshake):
	 * the listener's, if the sockets have one.  Returns 0 if taken, -1 if
	 * there is no listener.  NULL: never a listener.
	 */
	int (*to_listener)(void *arg, int idx, rn_addr from, const uint8_t *d, size_t len,
			   uint64_t at);
	/*
	 * A stateless reset names the peer's id, not ours (rn_core.h): it is
	 * offered to each connection's rn_conn_recv (conn_of gives it) until
	 * one takes it, then on_reset(arg, v) (the driver services v).  One
	 * nobody takes is dropped and counted in unknown, never given to the
	 * listener.  conn_of NULL: resets go to the listener hook like any
	 * datagram with id 0.
	 */
	rn_conn *(*conn_of)(void *v);
	void (*on_reset)(void *arg, void *v);
	void *arg;
	uint64_t unknown;  /* datagrams for no connection and no listener: dropped */
} rn_hdisp;

/* Routes one datagram; has rn_hsock_input_fn's shape with arg = the rn_hdisp. */
void rn_hdisp_input(void *disp, int idx, rn_addr from, const uint8_t *d, size_t len,
		    uint64_t at);

#endif
