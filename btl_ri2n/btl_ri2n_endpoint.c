/*
 * btl_ri2n_endpoint.c - peers and their connections.
 *
 * Who connects is decided by name: the process with the lower (jobid, vpid)
 * connects, the other accepts through the module's listener, so two
 * processes never build two streams.  The connecting side writes a hello
 * (its name) as the first frame; until the hello is read an accepted link
 * belongs to nobody.
 *
 * When the higher-named process has something to send first, it "nudges"
 * the lower one: a 16-byte datagram on every rail (magic, type, its name;
 * with a cluster key, and a tag under it), resent with backoff, that makes
 * the lower one connect.  Open MPI adds peers lazily, so a nudge or a hello
 * may name a process the PML has not added yet: its endpoint is created
 * without a proc and completed by add_procs later.  Frames need no
 * endpoint: the PML's headers say who sent them.
 *
 * Only processes of our job get endpoints, and only at the rail addresses
 * they published in the modex: a nudge naming anyone else, or coming from
 * an address its name did not publish, is refused (it would otherwise cost
 * an endpoint for ever, or aim our INITs at any address); a hello binds a
 * link only if the link's rails are the named process's modex addresses,
 * and never takes over a link that is up.
 *
 * A connect attempt goes to one of the peer's rails and lasts attempt_ms
 * (1 s: four INITs); if it fails the next rail is tried, until
 * connect_timeout.  So a rail that is dead when two processes first talk
 * costs a second, not the job.
 *
 * Failures: a rail failure never shows here (the core fails over inside
 * the connection).  Only a connection that dies - every rail silent past
 * dead_peer, a RESET, or no rail ever connecting - makes the endpoint
 * FAILED, and the PML's error callback gets a sentence naming the peer and
 * the rails.
 */
#include "opal_config.h"

#include <arpa/inet.h>
#include <stdio.h>
#include <string.h>
#include <time.h>

#include "opal/util/output.h"

#include "btl_ri2n.h"
#include "btl_ri2n_frag.h"
#include "rn_log.h"

#define MS UINT64_C(1000000)
#define NUDGE_FIRST_NS (20 * MS)  /* a lost nudge costs little */
#define NUDGE_MAX_NS (500 * MS)   /* the peer may be computing: its keeper answers */

uint64_t rbtl_now_ns(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * 1000000000u + (uint64_t)ts.tv_nsec;
}

uint64_t rbtl_core_now(mca_btl_ri2n_module_t *m)
{
	uint64_t t = rbtl_now_ns();

	if (t < m->core_now)
		t = m->core_now;
	m->core_now = t;
	return t;
}

static uint64_t name_key(opal_process_name_t n)
{
	return ((uint64_t)n.jobid << 32) | n.vpid;
}

/* ---- endpoints ---- */

void rbtl_ep_describe(mca_btl_ri2n_endpoint_t *ep)
{
	const char *host = ep->proc ? RI2N_PROC_HOSTNAME(ep->proc) : NULL;

	if (host)
		snprintf(ep->desc, sizeof(ep->desc), "rank %u on %s (%s)", ep->name.vpid, host,
			 OPAL_NAME_PRINT(ep->name));
	else
		snprintf(ep->desc, sizeof(ep->desc), "rank %u (%s)", ep->name.vpid,
			 OPAL_NAME_PRINT(ep->name));
}

mca_btl_ri2n_endpoint_t *rbtl_ep_find(mca_btl_ri2n_module_t *m, opal_process_name_t name,
				      int create)
{
	mca_btl_ri2n_endpoint_t *ep;
	uint64_t key = name_key(name);

	for (ep = m->eps; ep; ep = ep->next)
		if (name_key(ep->name) == key)
			return ep;
	if (!create || key == name_key(m->me))
		return NULL;
	ep = calloc(1, sizeof(*ep));
	if (!ep)
		return NULL;
	ep->name = name;
	ep->mod = m;
	ep->state = RI2N_EP_IDLE;
	ep->initiator = name_key(m->me) < key;
	OBJ_CONSTRUCT(&ep->sendq, opal_list_t);
	rbtl_ep_describe(ep);
	ep->next = m->eps;
	m->eps = ep;
	return ep;
}

void rbtl_ep_free(mca_btl_ri2n_endpoint_t *ep)
{
	opal_list_item_t *it;

	/* nothing should be left at finalize; what is goes back to its list */
	while ((it = opal_list_remove_first(&ep->sendq)) != NULL) {
		mca_btl_ri2n_frag_t *f = (mca_btl_ri2n_frag_t *)it;

		if (f->base.des_flags & MCA_BTL_DES_FLAGS_BTL_OWNERSHIP)
			rbtl_frag_return(f);
	}
	OBJ_DESTRUCT(&ep->sendq);
	if (ep->proc)
		OBJ_RELEASE(ep->proc);
	free(ep);
}

/* ---- connecting ---- */

static void fail_ep(mca_btl_ri2n_endpoint_t *ep, const char *msg);

/* A peer's published rail address as a rail: the modex gives no prefix, so our socket's decides. */
static rn_rail_addr peer_rail(const rn_addr *a)
{
	rn_rail_addr r = { .ip = a->ip, .port = a->port, .prefix = a->v6 ? 128 : 32, .v6 = a->v6,
			   .scope = a->scope };

	memcpy(r.ip6, a->ip6, sizeof(r.ip6));
	return r;
}

/* One attempt: INIT to the next of the peer's rails we share a subnet with. */
static void connect_attempt(mca_btl_ri2n_endpoint_t *ep, uint64_t now)
{
	mca_btl_ri2n_module_t *m = ep->mod;
	rn_rail_addr peer[RN_MAX_RAILS];
	rn_config cfg = m->cfg;
	uint64_t attempt = (uint64_t)mca_btl_ri2n_component.p.attempt_ms * MS;
	const rn_hdial d = { .io = &m->io, .cfg = &cfg, .env = &m->env, .peer = peer,
			     .npeer = ep->npeer };
	rn_conn *c;
	rbtl_link *l;
	char where[RN_ADDR_STRLEN];
	int r;

	for (int i = 0; i < ep->npeer; i++)
		peer[i] = peer_rail(&ep->peer[i]);
	/* short attempts, so a dead rail is left for the next one */
	cfg.connect_timeout_ns = ep->deadline_ns > now ? ep->deadline_ns - now : MS;
	if (attempt && attempt < cfg.connect_timeout_ns)
		cfg.connect_timeout_ns = attempt;
	m->mem_setup++; /* granted whatever the ceiling (rbtl_core_alloc) */
	r = rn_hconn_dial(&c, &d, &ep->next_rail, now);
	m->mem_setup--;
	l = r >= 0 ? rbtl_link_new(m, c, now) : NULL;
	if (!l) {
		if (r >= 0)
			rn_conn_del(c);
		fail_ep(ep, "no rail shares a subnet with the peer's rails, or out of memory");
		return;
	}
	l->initiator = 1;
	l->rx.bound = 1; /* we connected: the peer sends fragments, never a hello */
	l->rail = r;
	l->ep = ep;
	l->h.dirty = 1;
	ep->link = l;
	ep->state = RI2N_EP_CONNECTING;
	rn_debug("btl_ri2n: connecting to %s via %s", ep->desc,
		 rn_addr_str(ep->peer[r], where, sizeof(where)));
}

static void send_nudges(mca_btl_ri2n_endpoint_t *ep, uint64_t now)
{
	mca_btl_ri2n_module_t *m = ep->mod;
	uint8_t b[RI2N_NUDGE_LEN + RI2N_NUDGE_TAG_LEN];
	size_t n = rbtl_wire_nudge_write(b, sizeof(b), m->me.jobid, m->me.vpid,
					 m->cfg.keyed ? m->cfg.key : NULL);

	/* every rail: the first ones may be the dead ones */
	for (int i = 0; i < ep->npeer && n; i++) {
		rn_rail_addr p = peer_rail(&ep->peer[i]);
		int r = rn_hpoll_rail_for(&m->io, &p);

		if (r >= 0)
			rn_hset_send_now(&m->io, r, ep->peer[i], b, n);
	}
	ep->nudge_next_ns = now + ep->nudge_gap_ns;
	ep->nudge_gap_ns = ep->nudge_gap_ns * 2 < NUDGE_MAX_NS ? ep->nudge_gap_ns * 2 : NUDGE_MAX_NS;
}

void rbtl_ep_kick(mca_btl_ri2n_endpoint_t *ep, uint64_t now)
{
	if (ep->state != RI2N_EP_IDLE || ep->is_self)
		return;
	ep->deadline_ns = now + ep->mod->cfg.connect_timeout_ns;
	if (ep->initiator) {
		connect_attempt(ep, now);
		return;
	}
	ep->state = RI2N_EP_WAITING;
	ep->nudge_gap_ns = NUDGE_FIRST_NS;
	send_nudges(ep, now);
}

void rbtl_ep_timers(mca_btl_ri2n_module_t *m, uint64_t now, int main)
{
	(void)main;
	for (mca_btl_ri2n_endpoint_t *ep = m->eps; ep; ep = ep->next) {
		if (ep->state != RI2N_EP_WAITING)
			continue;
		if (now >= ep->deadline_ns) {
			char msg[256];

			snprintf(msg, sizeof(msg), "%s never connected back within %llu ms "
				 "(btl_ri2n_connect_timeout_ms) although asked on every rail",
				 ep->desc, (unsigned long long)(m->cfg.connect_timeout_ns / MS));
			fail_ep(ep, msg);
		} else if (now >= ep->nudge_next_ns) {
			send_nudges(ep, now);
		}
	}
}

/*
 * The endpoint of a process of our job that speaks to us from `from`: one
 * of the rail addresses it published in the modex.  Created (with those
 * addresses) for a process the PML has not added yet.  NULL for anyone else.
 */
static mca_btl_ri2n_endpoint_t *ep_admit(mca_btl_ri2n_module_t *m, opal_process_name_t name,
					 rn_addr from)
{
	mca_btl_ri2n_endpoint_t *ep = rbtl_ep_find(m, name, 0);
	rn_addr addrs[RN_MAX_RAILS];
	int n;

	if (ep && ep->npeer)
		return rn_addr_among(ep->peer, ep->npeer, from) ? ep : NULL;
	n = rbtl_modex_addrs(m, name, addrs);
	if (n == 0 || !rn_addr_among(addrs, n, from))
		return NULL;
	ep = rbtl_ep_find(m, name, 1);
	if (ep && ep->npeer == 0) {
		memcpy(ep->peer, addrs, sizeof(addrs));
		ep->npeer = n;
	}
	return ep;
}

void rbtl_ep_on_nudge(mca_btl_ri2n_module_t *m, int rail, rn_addr from, const uint8_t *d,
		      size_t len, uint64_t now)
{
	opal_process_name_t name;
	mca_btl_ri2n_endpoint_t *ep;

	(void)rail;
	if (m->finalizing)
		return;
	if (rbtl_wire_nudge_read(d, len, m->cfg.keyed ? m->cfg.key : NULL, &name.jobid,
				 &name.vpid)) {
		m->nudges_refused++;
		return;
	}
	ep = ep_admit(m, name, from);
	if (!ep || !ep->initiator) {
		/* a stranger, an address its name never published, or a higher name
		 * asking the wrong way round: no endpoint, no INIT anywhere */
		m->nudges_refused++;
		return;
	}
	if (ep->state != RI2N_EP_IDLE)
		return;
	/* the rail the nudge came in on works at least one way: try it first */
	for (int i = 0; i < ep->npeer; i++)
		if (rn_addr_eq(ep->peer[i], from))
			ep->next_rail = i;
	rbtl_ep_kick(ep, now);
}

/* True if every rail of the link is an address the process published. */
static int link_matches_modex(rbtl_link *l, const mca_btl_ri2n_endpoint_t *ep)
{
	return rn_hmon_rails_in(l->h.conn, ep->peer, ep->npeer);
}

int rbtl_ep_bind(mca_btl_ri2n_module_t *m, rbtl_link *l, opal_process_name_t name,
		 uint64_t now)
{
	mca_btl_ri2n_endpoint_t *ep = ep_admit(m, name, rn_conn_peer(l->h.conn));

	if (!ep || ep->initiator || l->initiator || !link_matches_modex(l, ep)) {
		/* a stranger, names that disagree, or rails the named process never published */
		m->hellos_refused++;
		return -1;
	}
	if (ep->link && ep->link != l && !ep->link->h.dead &&
	    rn_conn_state(ep->link->h.conn) == RN_ST_ESTABLISHED && ep->link->hello_done) {
		/* the process's stream is up: a second hello in its name is not its own */
		m->hellos_refused++;
		return -1;
	}
	if (ep->link && ep->link != l) {
		/* the peer gave up on an older attempt and made this one: drop the old */
		rbtl_link *old = ep->link;

		old->ep = NULL;
		rn_conn_abort(old->h.conn, now);
		old->h.dead = 1;
	}
	ep->link = l;
	l->ep = ep;
	l->hello_done = 1;
	l->rx.bound = 1;
	if (ep->state != RI2N_EP_FAILED) {
		ep->state = RI2N_EP_OPEN;
		ep->was_open = 1;
	}
	return 0;
}

/* ---- links ---- */

/* A link the kit reaped (rn_hconns.on_reap): its endpoint lets go of it. */
static void link_gone(void *arg, rn_hconn *h)
{
	rbtl_link *l = (rbtl_link *)h;

	(void)arg;
	if (l->ep && l->ep->link == l)
		l->ep->link = NULL;
	rbtl_rx_free(&l->rx);
	free(l);
}

void rbtl_links_init(mca_btl_ri2n_module_t *m)
{
	m->links = (rn_hconns){ .tab = &m->idtab, .io = &m->io, .lk = &m->lk,
				.on_reap = link_gone, .arg = m };
}

rbtl_link *rbtl_link_new(mca_btl_ri2n_module_t *m, rn_conn *c, uint64_t now)
{
	rbtl_link *l = calloc(1, sizeof(*l));

	if (!l)
		return NULL;
	l->mod = m;
	if (rn_hconns_add(&m->links, &l->h, c, now)) {
		free(l);
		return NULL;
	}
	return l;
}

void rbtl_link_rails_str(const rbtl_link *l, char *buf, size_t len)
{
	rn_conn_stats st;
	size_t n = 0;

	buf[0] = 0;
	rn_conn_get_stats(l->h.conn, &st);
	for (int k = 0; k < st.npaths && n < len; k++) {
		char a[RN_ADDR_STRLEN], b[RN_ADDR_STRLEN];

		n += (size_t)snprintf(buf + n, len - n, "%s%s %s -> %s (%s)", k ? ", " : "",
				      rbtl_rail_name(l->mod, st.rail[k].local_rail),
				      rn_addr_str(st.rail[k].local, a, sizeof(a)),
				      rn_addr_str(st.rail[k].remote, b, sizeof(b)),
				      st.rail[k].rx_up ? "up" : "down");
	}
	if (st.npaths == 0)
		snprintf(buf, len, "no rail paired yet");
}

/* ---- failures ---- */

void rbtl_fatal_add(mca_btl_ri2n_module_t *m, mca_btl_ri2n_endpoint_t *ep, const char *msg)
{
	rbtl_fatal *f;

	if (m->nfatal >= RI2N_MAX_FATAL)
		return;
	f = &m->fatal[m->nfatal++];
	f->proc = ep ? ep->proc : NULL;
	/* the PML prints it as a format string: no '%' may survive */
	snprintf(f->msg, sizeof(f->msg), "btl_ri2n: %s", msg);
	for (char *p = f->msg; *p; p++)
		if (*p == '%')
			*p = ' ';
}

static void fail_ep(mca_btl_ri2n_endpoint_t *ep, const char *msg)
{
	if (ep->state == RI2N_EP_FAILED)
		return;
	/* a peer only a nudge told us about, never used by the PML nor ever
	 * connected: a forged nudge must not abort the job */
	if (!ep->proc && !ep->was_open) {
		rn_info("btl_ri2n: giving up on %s, which asked us to connect: %s", ep->desc, msg);
		ep->state = RI2N_EP_IDLE;
		return;
	}
	ep->state = RI2N_EP_FAILED;
	/* the PML's handler prints it as it aborts; without one, say it here */
	if (!ep->mod->error_cb)
		rn_error("btl_ri2n: %s", msg);
	rbtl_fatal_add(ep->mod, ep, msg);
}

/* The sentence for a connection that died. */
static void death_msg(rbtl_link *l, int err, int was_up, char *msg, size_t len)
{
	mca_btl_ri2n_endpoint_t *ep = l->ep;
	const rn_config *cfg = &l->mod->cfg;
	char rails[320];

	rbtl_link_rails_str(l, rails, sizeof(rails));
	if (err == RN_ERR_TIMEDOUT && was_up)
		snprintf(msg, len, "lost every rail to %s: nothing received on any rail [%s] for "
			 "%llu ms (btl_ri2n_dead_peer_ms); the peer is dead or cut off, aborting "
			 "instead of hanging", ep->desc, rails,
			 (unsigned long long)(cfg->dead_peer_ns / MS));
	else if (!was_up)
		snprintf(msg, len, "could not connect to %s on any rail within %llu ms "
			 "(btl_ri2n_connect_timeout_ms): %s", ep->desc,
			 (unsigned long long)(cfg->connect_timeout_ns / MS),
			 err == RN_ERR_TIMEDOUT ? "no answer to the handshake" : rn_strerror(err));
	else if (err == RN_ERR_RESET)
		snprintf(msg, len, "%s reset the connection (it aborted or restarted) [%s]",
			 ep->desc, rails);
	else
		snprintf(msg, len, "connection to %s failed: %s [%s]", ep->desc, rn_strerror(err),
			 rails);
}

void rbtl_link_check(rbtl_link *l, uint64_t now)
{
	mca_btl_ri2n_endpoint_t *ep = l->ep;
	int err = rn_conn_error(l->h.conn), st = rn_conn_state(l->h.conn);
	rn_conn_stats cs;
	char msg[1024];

	if (!err && st != RN_ST_CLOSED)
		return;
	l->h.dead = 1;
	if (!ep || ep->link != l)
		return; /* an accepted link nobody claimed, or replaced: goes quietly */
	ep->link = NULL;
	if (l->mod->finalizing || ep->state == RI2N_EP_CLOSED || ep->state == RI2N_EP_FAILED)
		return;
	if (!err || l->eof) { /* the peer finished: it is finalizing */
		ep->state = RI2N_EP_CLOSED;
		return;
	}
	rn_conn_get_stats(l->h.conn, &cs);
	if (l->initiator && !cs.established_ns && now < ep->deadline_ns) {
		connect_attempt(ep, now); /* that rail did not answer: the next one */
		return;
	}
	death_msg(l, err, cs.established_ns != 0, msg, sizeof(msg));
	fail_ep(ep, msg);
}

void rbtl_report_fatal(mca_btl_ri2n_module_t *m)
{
	rbtl_fatal f[RI2N_MAX_FATAL];
	int n;

	pthread_mutex_lock(&m->lock);
	n = m->nfatal;
	memcpy(f, m->fatal, (size_t)n * sizeof(*f));
	m->nfatal = 0;
	pthread_mutex_unlock(&m->lock);
	for (int i = 0; i < n; i++) {
		if (m->error_cb)
			m->error_cb(&m->super, MCA_BTL_ERROR_FLAGS_FATAL, f[i].proc, f[i].msg);
		else
			opal_output(0, "%s", f[i].msg);
	}
}

/* ---- core events ---- */

void rbtl_on_core_event(void *user, const rn_event *ev)
{
	rbtl_link *l = user;
	rn_conn_stats st;
	char a[RN_ADDR_STRLEN], b[RN_ADDR_STRLEN];

	if (!l || (ev->type != RN_EV_RAIL_DOWN && ev->type != RN_EV_RAIL_UP))
		return; /* accept reports ESTABLISHED before the link exists; deaths: link_check */
	l->mod->rail_events++;
	rn_conn_get_stats(l->h.conn, &st);
	rn_addr_str(st.rail[ev->rail].local, a, sizeof(a));
	rn_addr_str(st.rail[ev->rail].remote, b, sizeof(b));
	rn_warn("btl_ri2n: %s: rail %s (%s -> %s) %s (%s); sending on %d, receiving on %d of %d "
		"rails", l->ep ? l->ep->desc : "peer", rbtl_rail_name(l->mod, st.rail[ev->rail].local_rail),
		a, b, ev->type == RN_EV_RAIL_DOWN ? "down" : "up again", rn_cause_name(ev->cause),
		__builtin_popcount(ev->tx_up), __builtin_popcount(ev->rx_up), st.npaths);
}
