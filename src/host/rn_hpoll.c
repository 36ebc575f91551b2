/*
 * rn_hpoll.c - the polling drivers' sockets, link table and listener
 * (rn_hpoll.h).
 */
#define _GNU_SOURCE /* rn_hsock.h: struct mmsghdr */
#include <errno.h>
#include <stdio.h>
#include <string.h>

#include <sodium/utils.h>

#include "rn_hpoll.h"
#include "rn_rail.h"
#include "rn_rails.h"

/* Opens rail `rail` of r on io's next socket: its index, or -errno. */
static int open_rail(rn_hset *io, const rn_hpoll_rails *r, int rail)
{
	const rn_rail_info *ri = &r->rails[rail];
	rn_hsock_opts o = r->opts;
	rn_rail_addr ra = rn_rails_addr(ri, r->bind ? r->bind[rail].port : 0);
	int idx = io->n, rc;

	if (idx >= RN_MAX_RAILS)
		return -ENOSPC;
	o.dev = ri->pin ? ri->name : NULL; /* rails sharing a subnet */
	rc = rn_hsock_open_rail(&io->s[idx], &ra, &o);
	if (rc) {
		rn_hsock_close(&io->s[idx]); /* its buffers, if the socket was made */
		return rc;
	}
	io->s[idx].addr.backup = ri->backup; /* "if:backup" in the rail list */
	io->s[idx].rail = (uint8_t)rail;
	io->n = idx + 1;
	return idx;
}

static int open_all(rn_hset *io, rn_hrxbuf *rx, rn_htab *tab, const rn_hpoll_rails *r, char *err,
		    size_t errlen)
{
	const rn_hsock_opts *o = &r->opts;
	int rc = rn_hset_init(io, o->dgram, 0);

	if (rc == 0)
		rc = rn_htab_init(tab, 16);
	/* a GRO run needs 64 KiB; else one datagram */
	if (rc == 0)
		rc = rn_hrxbuf_init(rx, o->gro ? RN_HGRO_BUF : (o->dgram < 2048 ? 2048 : o->dgram), 4);
	if (rc) {
		snprintf(err, errlen, "out of memory for socket buffers");
		return rc;
	}
	for (int i = 0; i < r->n; i++) {
		if (!rn_rails_has_addr(&r->rails[i]))
			continue; /* waiting for an address (rn_hgrow) */
		rc = open_rail(io, r, i);
		if (rc < 0) {
			snprintf(err, errlen, "cannot open a UDP socket on rail %s: %s",
				 r->rails[i].name, strerror(-rc));
			return rc;
		}
	}
	if (io->n == 0) {
		snprintf(err, errlen, "no rail has an address yet");
		return -EADDRNOTAVAIL;
	}
	io->gso = r->gso && rn_hsock_probe_gso(io->s[0].fd);
	return 0;
}

int rn_hpoll_rail_add(rn_hset *io, const rn_hpoll_rails *r, int rail)
{
	if (rail < 0 || rail >= r->n || !rn_rails_has_addr(&r->rails[rail]))
		return -EINVAL;
	if (rn_hpoll_sock_of(io, rail) >= 0)
		return -EEXIST;
	return open_rail(io, r, rail);
}

int rn_hpoll_rail_move(rn_hset *io, const rn_hpoll_rails *r, int rail)
{
	int idx = rn_hpoll_sock_of(io, rail), rc;
	const rn_rail_info *ri;
	rn_hsock_opts o = r->opts;
	rn_rail_addr ra;

	if (idx < 0 || rail >= r->n)
		return -ENOENT;
	ri = &r->rails[rail];
	o.dev = ri->pin ? ri->name : NULL;
	ra = rn_rails_addr(ri, io->s[idx].addr.port);
	rc = rn_hsock_rebind(&io->s[idx], &ra, &o);
	if (rc == -EADDRINUSE && !(r->bind && r->bind[rail].port)) {
		ra.port = 0; /* a number of its own, told to the peers with the address */
		rc = rn_hsock_rebind(&io->s[idx], &ra, &o);
	}
	if (rc)
		return rc;
	io->s[idx].addr.backup = ri->backup;
	return idx;
}

int rn_hpoll_sock_of(const rn_hset *io, int rail)
{
	for (int i = 0; i < io->n; i++)
		if (io->s[i].rail == rail)
			return i;
	return -1;
}

int rn_hpoll_open(rn_hset *io, rn_hrxbuf *rx, rn_htab *tab, const rn_hpoll_rails *r, char *err,
		  size_t errlen)
{
	int rc = open_all(io, rx, tab, r, err, errlen);

	if (r->links) {
		io->ops = (rn_hsock_ops){ .on_send_error = rn_hpoll_on_send_error,
					  .on_error = rn_hpoll_on_error };
		io->arg = r->links;
	}
	return rc;
}

void rn_hpoll_close(rn_hset *io, rn_hrxbuf *rx, rn_htab *tab)
{
	rn_hset_free(io);
	rn_hrxbuf_free(rx);
	rn_htab_free(tab);
}

int rn_hpoll_rail_for(const rn_hset *io, const rn_rail_addr *peer)
{
	for (int i = 0; i < io->n; i++)
		if (rn_addr_rails_share(&io->s[i].addr, peer))
			return i;
	return -1;
}

rn_addr rn_hpoll_peer_addr(const rn_hset *io, const rn_rail_addr *peer)
{
	rn_addr a = rn_addr_of_rail(peer);
	int k;

	if (a.v6 && !a.scope && rn_addr_link_local(a) && (k = rn_hpoll_rail_for(io, peer)) >= 0)
		a.scope = io->s[k].addr.scope;
	return a;
}

void rn_hpoll_rekey(rn_htab *tab, uint64_t *id, rn_conn *c, void *v)
{
	uint64_t now_id = rn_conn_id(c);

	if (now_id != *id && rn_htab_rekey(tab, *id, now_id, v) == 0)
		*id = now_id;
}

void rn_hpoll_on_send_error(void *links, int rail, uint64_t owner, int err)
{
	const rn_hpoll_links *k = links;
	void *v = rn_htab_get(k->tab, owner);

	(void)err;
	if (v) {
		rn_conn_rail_error(k->conn_of(v), k->now(k->arg), rail);
		k->mark(v);
	}
}

void rn_hpoll_on_error(void *links, int rail, const rn_hsock_err *e)
{
	const rn_hpoll_links *k = links;
	void *v = rn_hmon_unreachable(k->mon, k->tab, k->conn_of, rail, e, k->now(k->arg));

	if (v)
		k->mark(v);
}

/* A member that became its peer's keeper (NULL: none) runs its timers at once. */
static void keeper_due(const rn_hpoll_links *k, rn_conn *keeper)
{
	void *v = keeper ? rn_conn_user(keeper) : NULL;

	if (v)
		k->due(v);
}

void rn_hpoll_monitor(const rn_hpoll_links *k, rn_conn *c, uint64_t now)
{
	rn_hmon_join(k->mon, c, now);
	keeper_due(k, rn_peer_take_wake(c)); /* DATA after the peer's idleness */
	keeper_due(k, rn_hmon_leave(k->mon, c, 0));
}

void rn_hpoll_leave(const rn_hpoll_links *k, rn_conn *c)
{
	keeper_due(k, rn_hmon_leave(k->mon, c, 1));
}

/* Links of tab that a->unbound counts. */
static int unbound(const rn_htab *tab, const rn_hpoll_accept *a)
{
	int n = 0;

	for (uint32_t i = 0; i < tab->cap; i++)
		n += tab->e[i].id && a->unbound(tab->e[i].v);
	return n;
}

int rn_hpoll_listen(rn_listener *lis, rn_hset *io, const rn_htab *tab, const rn_hpoll_accept *a,
		    int rail, rn_addr from, const uint8_t *d, size_t len, uint64_t now)
{
	uint8_t reply[RN_INIT_LEN * 2];
	rn_accept_params ap;
	size_t rlen = 0;
	void *v = NULL;
	int rc = rn_listener_recv(lis, now, rail, from, d, len, reply, sizeof(reply), &rlen, &ap);
	int refused = 0;

	if (rc == RN_LISTEN_REPLY)
		rn_hset_send_now(io, rail, from, reply, rlen);
	if (rc != RN_LISTEN_ACCEPT)
		return 0;
	refused = unbound(tab, a) >= a->max_unbound;
	if (!refused)
		v = a->on_accept(a->arg, &ap, now);
	if (!v)
		rn_listener_forget(lis, &ap); /* its COOKIE_ECHO may come again */
	sodium_memzero(ap.cfg.key, sizeof(ap.cfg.key)); /* a copy of the key */
	return refused;
}
