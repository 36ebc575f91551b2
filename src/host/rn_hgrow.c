/*
 * rn_hgrow.c - a polling driver's waiting rails, opened when their first
 * address comes (rn_hgrow.h).
 */
#define _GNU_SOURCE /* rn_hsock.h: struct mmsghdr */
#include <errno.h>
#include <string.h>

#include "rn_hgrow.h"
#include "rn_log.h"
#include "rn_rails.h"

void rn_hgrow_moved(void *arg, int i, const rn_rail_info *to)
{
	rn_hgrow *g = arg;

	if (!((g->moving >> i) & 1))
		g->from[i] = g->rails[i];
	g->to[i] = *to;
	g->moving |= 1u << i;
	g->tries[i] = 0;
	g->next_ns = 0;
}

void rn_hgrow_event(void *arg, const rn_hlink_ev *e)
{
	rn_hgrow *g = arg;

	/* a link-local address comes with every link: such a rail is named by its address */
	if (e->type != RN_HLINK_ADDR_ADD || rn_addr_link_local(rn_hlink_addr(e)))
		return;
	for (int i = 0; i < g->open->n; i++) {
		rn_rail_info *r = &g->rails[i];

		if (rn_rails_has_addr(r) || r->ifindex != e->ifindex)
			continue;
		rn_hlink_give(e, r);
		g->pending |= 1u << i;
		g->tries[i] = 0;
		g->next_ns = 0;
	}
}

/* Rail i's socket: opened and offered (1), to be tried again (0), or given up (-1). */
static int open_one(rn_hgrow *g, int i, uint64_t now)
{
	rn_hset *io = g->links->io;
	const rn_rail_info *r = &g->rails[i];
	int idx = rn_hpoll_rail_add(io, g->open, i), n;
	char ip[RN_ADDR_STRLEN];

	if (idx == -EADDRNOTAVAIL && ++g->tries[i] < RN_HGROW_TRIES)
		return 0;
	if (idx < 0) {
		rn_warn("rail %d (%s): cannot open a socket on its new address: %s", i, r->name,
			strerror(-idx));
		return -1;
	}
	n = rn_hconns_rail_add(g->links, idx, now);
	if (rn_listener_rail_add(g->lis, &io->s[idx].addr) != 0)
		rn_warn("rail %d (%s): the listener has no room for it: new links will not offer it",
			i, r->name);
	rn_log(RN_LOG_WARN, "rail %d (%s %s/%u): new address: in use, offered to %d link%s", i,
	       r->name, rn_rails_str(r, ip, sizeof(ip)), r->prefix, n, n == 1 ? "" : "s");
	return 1;
}

/* Rail i's socket: moved and told (1), to be tried again (0), or given up (-1). */
static int move_one(rn_hgrow *g, int i, uint64_t now)
{
	rn_hset *io = g->links->io;
	rn_rail_info *r = &g->rails[i];
	int idx, n;
	char ip[RN_ADDR_STRLEN], was[RN_ADDR_STRLEN];

	*r = g->to[i];
	idx = rn_hpoll_rail_move(io, g->open, i);
	if (idx == -EADDRNOTAVAIL && ++g->tries[i] < RN_HGROW_TRIES)
		return 0;
	if (idx < 0) {
		rn_warn("rail %d (%s): cannot bind its new address: %s", i, r->name, strerror(-idx));
		*r = g->from[i]; /* still without its address: a later one may move it */
		return -1;
	}
	n = rn_hconns_rail_readdr(g->links, idx, now);
	rn_listener_rail_set(g->lis, idx, &io->s[idx].addr);
	if (g->follow)
		rn_hfollow_rebound(g->follow, i);
	rn_log(RN_LOG_WARN, "rail %d (%s %s/%u): address changed from %s: rebound, %d link%s told",
	       i, r->name, rn_rails_str(r, ip, sizeof(ip)), r->prefix,
	       rn_rails_str(&g->from[i], was, sizeof(was)), n, n == 1 ? "" : "s");
	return 1;
}

void rn_hgrow_run(rn_hgrow *g, uint64_t now)
{
	uint32_t todo = g->pending, moves = g->moving;

	if (!(todo | moves) || now < g->next_ns)
		return;
	for (int i = 0; i < RN_MAX_RAILS; i++) {
		if (((todo >> i) & 1) && open_one(g, i, now) != 0)
			g->pending &= ~(1u << i);
		if (((moves >> i) & 1) && move_one(g, i, now) != 0)
			g->moving &= ~(1u << i);
	}
	g->next_ns = now + RN_HGROW_AGAIN_NS;
}
