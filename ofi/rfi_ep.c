/*
 * rfi_ep.c - the endpoint: its rail sockets (the host kit), its listener,
 * its connections, and the protocol pass the application's progress calls
 * run (receive, timers, deliver, send, flush), as btl_ri2n's progress does.
 *
 * Outbound connections belong to peers (rfi_peer): the first send to a
 * peer connects to one of its rails; no answer within FI_RI2N_ATTEMPT_MS
 * and the next rail is tried, until the core's connect timeout.  Inbound
 * connections come through the listener and are named by their hello.
 */
#include <arpa/inet.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/random.h>
#include <time.h>

#include <sodium/utils.h>

#include "ri2n.h"
#include "rfi.h"
#include "rn_knobs.h"
#include "rn_log.h"

#define RX_ROUNDS 16        /* receive turns per pass: bounds one progress call */
#define FLUSH_BUDGET 1024   /* datagrams one link may send per flush */

/* ---- what the core needs ---- */

static void *core_alloc(void *u, size_t n)
{
	(void)u;
	return calloc(1, n);
}

static void core_free(void *u, void *p)
{
	(void)u;
	free(p);
}

static uint64_t core_rng(void *u)
{
	uint64_t v = 0;

	(void)u;
	if (getrandom(&v, sizeof(v), 0) != (ssize_t)sizeof(v))
		v ^= rfi_clock() * UINT64_C(0x9e3779b97f4a7c15); /* never in practice */
	return v;
}

static void on_core_event(void *user, const rn_event *ev)
{
	rfi_link *l = user;
	rfi_ep *ep = l ? l->ep : NULL;

	if (!ep)
		return;
	switch (ev->type) {
	case RN_EV_RAIL_DOWN:
	case RN_EV_RAIL_UP:
		ep->rail_events++;
		rn_info("ri2n provider: %s connection: rail %d %s (%s)", l->peer ? "outbound" : "inbound",
			ev->rail, ev->type == RN_EV_RAIL_DOWN ? "down" : "up", rn_cause_name(ev->cause));
		break;
	case RN_EV_FAILED:
		rn_warn("ri2n provider: %s connection failed: %s", l->peer ? "outbound" : "inbound",
			rn_strerror(ev->err));
		break;
	default:
		break;
	}
}

uint64_t rfi_ep_now(rfi_ep *ep)
{
	uint64_t now = rfi_clock();

	if (now < ep->core_now)
		now = ep->core_now; /* time given to the core never goes back */
	ep->core_now = now;
	return now;
}

int rfi_err_from_rn(int rn)
{
	switch (rn) {
	case RN_ERR_TIMEDOUT:
		return FI_ETIMEDOUT;
	case RN_ERR_REFUSED:
		return FI_ECONNREFUSED;
	case RN_ERR_RESET:
		return FI_ECONNRESET;
	case RN_ERR_UNREACH:
		return FI_EHOSTUNREACH;
	case RN_ERR_ABORTED:
		return FI_ECONNABORTED;
	case RN_ERR_NOSPACE:
	case RN_ERR_NOMEM:
		return FI_ENOMEM;
	default:
		return FI_EIO;
	}
}

/* ---- operations ---- */

rfi_op *rfi_op_new(rfi_ep *ep)
{
	rfi_op *op = ep->free_ops;

	if (op)
		ep->free_ops = op->next;
	else
		op = malloc(sizeof(*op));
	if (op) {
		memset(op, 0, offsetof(rfi_op, hdr));
		op->copy = NULL;
	}
	return op;
}

void rfi_op_free(rfi_ep *ep, rfi_op *op)
{
	free(op->copy);
	op->copy = NULL;
	op->next = ep->free_ops;
	ep->free_ops = op;
}

/* ---- links ---- */

static rfi_link *link_new(rfi_ep *ep, rn_conn *c, rfi_peer *p, uint64_t now)
{
	rfi_link *l = calloc(1, sizeof(*l));

	if (!l)
		return NULL;
	l->ep = ep;
	l->conn = c;
	l->peer = p;
	l->id = rn_conn_id(c);
	l->created_ns = now;
	l->src_addr = FI_ADDR_NOTAVAIL;
	l->src_gen = UINT64_MAX;
	if (rn_htab_add(&ep->idtab, l->id, l) != 0) {
		free(l);
		return NULL;
	}
	rn_conn_set_user(c, l);
	l->next = ep->links;
	ep->links = l;
	l->expiry_ns = rn_conn_expiry(c);
	return l;
}

static void link_rekey(rfi_ep *ep, rfi_link *l)
{
	uint64_t id = rn_conn_id(l->conn);

	if (id != l->id && rn_htab_rekey(&ep->idtab, l->id, id, l) == 0)
		l->id = id;
}

static void links_reap(rfi_ep *ep)
{
	rfi_link **pp = &ep->links;

	while (*pp) {
		rfi_link *l = *pp;

		if (!l->dead) {
			pp = &l->next;
			continue;
		}
		*pp = l->next;
		rn_htab_del(&ep->idtab, l->id, l);
		rn_hset_forget(&ep->io, l->id);
		if (l->peer && l->peer->link == l)
			l->peer->link = NULL;
		rn_conn_del(l->conn);
		free(l);
	}
}

void rfi_link_flush(rfi_link *l, uint64_t now)
{
	rn_hset *io = &l->ep->io;

	for (int i = 0; i < FLUSH_BUDGET; i++) {
		uint32_t w = rn_hset_writable(io);
		rn_tx tx;
		ssize_t n;

		if (!w)
			break;
		n = rn_conn_write_pkt(l->conn, now, w, rn_hset_spare(io), io->dgram, &tx);
		if (n <= 0)
			break;
		if (rn_hset_queue(io, tx.local_rail, tx.to, (size_t)n, l->id) > 0)
			rn_hset_flush_one(io, tx.local_rail);
	}
	l->expiry_ns = rn_conn_expiry(l->conn);
}

/* ---- peers ---- */

rfi_peer *rfi_peer_get(rfi_ep *ep, fi_addr_t a)
{
	const rfi_name *nm = rfi_av_get(ep->av, a);
	rfi_peer *p;

	if (!nm)
		return NULL;
	if (a >= ep->npeers) {
		size_t n = ep->npeers ? ep->npeers : 64;
		rfi_peer **v;

		while (n <= a)
			n *= 2;
		v = realloc(ep->peers, n * sizeof(*v));
		if (!v)
			return NULL;
		memset(v + ep->npeers, 0, (n - ep->npeers) * sizeof(*v));
		ep->peers = v;
		ep->npeers = n;
	}
	p = ep->peers[a];
	if (p && !rfi_name_eq(&p->name, nm)) {
		/* the AV slot names someone else now (removed, inserted again) */
		if (p->link) {
			rn_conn_abort(p->link->conn, rfi_ep_now(ep));
			p->link->peer = NULL;
			p->link->dead = 1;
		}
		rfi_peer_fail(ep, p, FI_ECANCELED);
		free(p);
		p = ep->peers[a] = NULL;
	}
	if (!p) {
		p = calloc(1, sizeof(*p));
		if (!p)
			return NULL;
		p->addr = a;
		p->name = *nm;
		ep->peers[a] = p;
	}
	return p;
}

/* Our rail sharing a subnet with the peer's rail k, or -1. */
static int local_for(const rfi_ep *ep, const rn_rail_addr *r)
{
	for (int i = 0; i < ep->io.n; i++) {
		uint8_t pl = ep->io.s[i].addr.prefix < r->prefix ? ep->io.s[i].addr.prefix : r->prefix;
		uint32_t mask = pl >= 32 ? UINT32_MAX : ~(UINT32_MAX >> pl);

		if ((ep->io.s[i].addr.ip & mask) == (r->ip & mask))
			return i;
	}
	return -1;
}

int rfi_peer_connect(rfi_ep *ep, rfi_peer *p, uint64_t now)
{
	rn_rail_addr addrs[RN_MAX_RAILS];
	rn_conn *c = NULL;
	rfi_link *l;
	int rc = RN_ERR_NOROUTE;

	for (int i = 0; i < ep->io.n; i++)
		addrs[i] = ep->io.s[i].addr;
	if (!p->attempt)
		p->give_up_ns = now + ep->cfg.connect_timeout_ns;
	/* the peer's rails in turn, from the one after the last attempt's */
	for (int k = 0; k < p->name.n; k++) {
		const rn_rail_addr *r = &p->name.rail[(p->attempt + k) % p->name.n];

		if (local_for(ep, r) < 0)
			continue;
		p->attempt += k + 1;
		rc = rn_conn_connect(&c, &ep->cfg, &ep->env, addrs, ep->io.n,
				     (rn_addr){ r->ip, r->port }, now);
		break;
	}
	if (rc != 0)
		return rc == RN_ERR_NOROUTE ? -FI_EHOSTUNREACH : -FI_ENOMEM;
	l = link_new(ep, c, p, now);
	if (!l) {
		rn_conn_del(c);
		return -FI_ENOMEM;
	}
	p->link = l;
	p->attempt_end_ns = now + rfi_k.attempt_ns;
	l->dirty = 1;
	return 0;
}

/* A connect attempt that has not been answered in time gives way to the next rail. */
static void peer_timers(rfi_ep *ep, uint64_t now)
{
	for (rfi_link *l = ep->links; l; l = l->next) {
		rfi_peer *p = l->peer;

		if (!p || l->dead || now < p->attempt_end_ns ||
		    rn_conn_state(l->conn) == RN_ST_ESTABLISHED || l->hello_done)
			continue;
		l->peer = NULL;
		l->dead = 1;
		p->link = NULL;
		if (now >= p->give_up_ns || rfi_peer_connect(ep, p, now) != 0) {
			rn_warn("ri2n provider: no answer from any rail of a peer within the "
				"connect timeout; failing its %zu queued sends", p->queued);
			ep->conn_failures++;
			rfi_peer_fail(ep, p, FI_ETIMEDOUT);
			p->attempt = 0;
		}
	}
}

/* After the core ran: connection deaths and closes. */
static void link_check(rfi_link *l, uint64_t now)
{
	rfi_ep *ep = l->ep;
	int err = rn_conn_error(l->conn), st = rn_conn_state(l->conn);
	rfi_peer *p = l->peer;

	if (!l->peer && l->eof && st == RN_ST_ESTABLISHED && !l->hello_done) {
		rn_conn_shutdown(l->conn, now); /* the peer finished: finish ours (nothing sent) */
		l->hello_done = 1;
		l->dirty = 1;
	}
	if (!err && st != RN_ST_CLOSED)
		return;
	l->dead = 1;
	if (!p) {
		if (err)
			rfi_link_lost(l, rfi_err_from_rn(err));
		return;
	}
	p->link = NULL;
	l->peer = NULL;
	if (!err)
		return;
	if (rn_conn_state(l->conn) != RN_ST_ESTABLISHED && now < p->give_up_ns &&
	    p->attempt < 2 * RN_MAX_RAILS && !l->hello_done && rfi_peer_connect(ep, p, now) == 0)
		return; /* refused or unanswered before it was up: the next rail */
	ep->conn_failures++;
	p->err = rfi_err_from_rn(err);
	rfi_peer_fail(ep, p, p->err);
	p->attempt = 0;
}

/* ---- datagrams ---- */

static void on_send_error(void *arg, int rail, uint64_t owner, int err)
{
	rfi_ep *ep = arg;
	rfi_link *l = rn_htab_get(&ep->idtab, owner);

	(void)err;
	if (l) {
		rn_conn_rail_error(l->conn, ep->core_now, rail);
		l->dirty = 1;
	}
}

static void to_link(void *arg, void *v, int rail, rn_addr from, const uint8_t *d, size_t len,
		    uint64_t now)
{
	rfi_link *l = v;

	(void)arg;
	rn_conn_recv(l->conn, now, rail, from, d, len);
	l->dirty = 1;
}

static int unbound(const rfi_ep *ep)
{
	int n = 0;

	for (const rfi_link *l = ep->links; l; l = l->next)
		n += !l->peer && !l->have_name && !l->dead;
	return n;
}

/* A datagram no link has: a stateless reset for one of ours, or the listener's. */
static int to_listener(void *arg, int rail, rn_addr from, const uint8_t *d, size_t len,
		       uint64_t now)
{
	rfi_ep *ep = arg;
	uint8_t reply[RN_INIT_LEN * 2];
	rn_accept_params ap;
	size_t rlen = 0;
	int rc;

	if (rn_wire_peek_dst(d, len) == 0 && rn_wire_peek_sreset(d, len)) {
		for (rfi_link *l = ep->links; l; l = l->next)
			if (rn_conn_recv(l->conn, now, rail, from, d, len) == 0) {
				l->dirty = 1;
				break;
			}
		return 0;
	}
	if (!ep->have_lis)
		return -1;
	rc = rn_listener_recv(&ep->lis, now, rail, from, d, len, reply, sizeof(reply), &rlen, &ap);
	if (rc == RN_LISTEN_REPLY) {
		rn_hset_send_now(&ep->io, rail, from, reply, rlen);
	} else if (rc == RN_LISTEN_ACCEPT) {
		rfi_link *l = NULL;
		rn_conn *c;

		if (unbound(ep) < RFI_MAX_UNBOUND && rn_conn_accept(&c, &ap, &ep->env, now) == 0) {
			l = link_new(ep, c, NULL, now);
			if (l)
				l->dirty = 1; /* COOKIE_ACK to send */
			else
				rn_conn_del(c);
		}
		if (!l)
			rn_listener_forget(&ep->lis, &ap); /* its COOKIE_ECHO may come again */
		sodium_memzero(ap.cfg.key, sizeof(ap.cfg.key));
	}
	return 0;
}

static int receive(rfi_ep *ep)
{
	uint32_t more = ep->rx_more, want = more ? more : rn_hset_ready(&ep->io);
	uint64_t floor = ep->core_now;
	int n;

	if (!want)
		return 0;
	n = rn_hset_recv(&ep->io, &ep->rx, want, more ? 0 : want, RX_ROUNDS, &floor,
			 rn_hdisp_input, &ep->disp, &ep->rx_more);
	if (floor > ep->core_now)
		ep->core_now = floor;
	return n;
}

/* ---- the pass ---- */

static void service(rfi_link *l, uint64_t now)
{
	l->dirty = 0;
	if (l->peer) {
		rfi_link_hello(l, now);
		if (l->hello_done && l->peer && l->peer->q)
			rfi_peer_push(l->ep, l->peer, now);
	} else {
		rfi_link_deliver(l, now);
	}
	rfi_link_flush(l, now);
	link_check(l, now);
	l->expiry_ns = rn_conn_expiry(l->conn);
}

void rfi_ep_pass(rfi_ep *ep)
{
	uint64_t now;

	if (!ep->enabled || ep->in_pass)
		return;
	ep->in_pass = 1;
	now = rfi_ep_now(ep);
	if (receive(ep))
		now = rfi_ep_now(ep);
	/* a rail verdict due: what its socket still holds comes first */
	for (rfi_link *l = ep->links; l && ep->rx_more; l = l->next)
		if (!l->dead && l->expiry_ns <= now && rn_conn_verdict_pending(l->conn)) {
			if (receive(ep))
				now = rfi_ep_now(ep);
			break;
		}
	peer_timers(ep, now);
	for (rfi_link *l = ep->links; l; l = l->next) {
		if (l->dead)
			continue;
		if (!l->peer && !l->have_name && now - l->created_ns > RFI_UNBOUND_NS &&
		    rn_conn_state(l->conn) != RN_ST_CLOSED) {
			rn_conn_abort(l->conn, now); /* no hello: not one of ours */
			l->dirty = 1;
		}
		if (l->expiry_ns <= now) {
			rn_conn_on_timer(l->conn, now);
			link_rekey(ep, l);
			l->dirty = 1;
		}
		if (l->dirty || (l->peer && l->peer->q) || (!l->peer && (l->ux || l->into)))
			service(l, now);
	}
	rn_hset_flush(&ep->io);
	links_reap(ep);
	__atomic_store_n(&ep->last_pass_ns, now, __ATOMIC_RELAXED);
	ep->in_pass = 0;
}

/* ---- the keeper ---- */

static int owes(const rfi_ep *ep)
{
	for (const rfi_link *l = ep->links; l; l = l->next)
		if (!l->dead && (rn_conn_owes(l->conn) || (l->peer && l->peer->q)))
			return 1;
	return 0;
}

/*
 * Never in the application's way: it looks at the time of the last pass
 * without the lock, and only takes the lock when nobody holds it (an
 * application inside a call is progressing already).
 */
static void *keeper_main(void *arg)
{
	rfi_ep *ep = arg;
	int idle = 0;

	while (!__atomic_load_n(&ep->keeper_stop, __ATOMIC_ACQUIRE)) {
		uint64_t ns = idle ? 50 * rfi_k.keeper_ns : rfi_k.keeper_ns;
		struct timespec ts = { (time_t)(ns / 1000000000u), (long)(ns % 1000000000u) };

		nanosleep(&ts, NULL);
		if (rfi_clock() - __atomic_load_n(&ep->last_pass_ns, __ATOMIC_RELAXED) < rfi_k.keeper_ns)
			continue; /* the application progressed lately */
		if (pthread_mutex_trylock(&ep->dom->lock) != 0)
			continue;
		if (!ep->keeper_stop) {
			rfi_ep_pass(ep);
			idle = !owes(ep);
		}
		pthread_mutex_unlock(&ep->dom->lock);
	}
	return NULL;
}

static void keeper_start(rfi_ep *ep)
{
	if (!rfi_k.keeper_ns || ep->keeper_on)
		return;
	ep->keeper_on = pthread_create(&ep->keeper, NULL, keeper_main, ep) == 0;
	if (!ep->keeper_on)
		rn_warn("ri2n provider: no keeper thread: progress only in the application's calls");
}

/* Domain lock held; releases it while the keeper finishes. */
static void keeper_stop(rfi_ep *ep)
{
	if (!ep->keeper_on)
		return;
	__atomic_store_n(&ep->keeper_stop, 1, __ATOMIC_RELEASE);
	pthread_mutex_unlock(&ep->dom->lock);
	pthread_join(ep->keeper, NULL);
	pthread_mutex_lock(&ep->dom->lock);
	ep->keeper_on = 0;
}

/* ---- setup ---- */

static int io_open(rfi_ep *ep, char *err, size_t errlen)
{
	/* RI2N_GRO=0 / RI2N_GSO=0 turn the offloads off, as for the engine */
	const char *gro = getenv("RI2N_GRO"), *gso = getenv("RI2N_GSO");
	rn_hsock_opts o = { .dgram = ep->cfg.max_dgram, .gro = !gro || strcmp(gro, "0") != 0,
			    .rx_ts = 1, .recverr = 0 };
	rn_rail_addr addrs[RN_MAX_RAILS];
	int rc = rn_hset_init(&ep->io, ep->cfg.max_dgram, 0);

	if (rc == 0)
		rc = rn_htab_init(&ep->idtab, 16);
	/* a GRO run needs 64 KiB; else one datagram */
	if (rc == 0)
		rc = rn_hrxbuf_init(&ep->rx, o.gro ? RN_HGRO_BUF :
				    (ep->cfg.max_dgram < 2048 ? 2048 : ep->cfg.max_dgram), 4);
	if (rc) {
		snprintf(err, errlen, "out of memory for socket buffers");
		return rc;
	}
	ep->io.ops = (rn_hsock_ops){ .on_send_error = on_send_error };
	ep->io.arg = ep;
	ep->disp = (rn_hdisp){ .tab = &ep->idtab, .to_conn = to_link, .to_listener = to_listener,
			       .arg = ep };
	for (int i = 0; i < ep->nrails; i++) {
		rc = rn_hsock_open(&ep->io.s[i], ep->rails[i].ip, ep->bind[i].port,
				   ep->rails[i].prefix, &o);
		ep->io.n = i + 1;
		if (rc) {
			snprintf(err, errlen, "cannot open a UDP socket on rail %s: %s",
				 ep->rails[i].name, strerror(-rc));
			return rc;
		}
		addrs[i] = ep->io.s[i].addr;
	}
	ep->io.gso = (!gso || strcmp(gso, "0") != 0) && ep->io.n > 0 &&
		     rn_hsock_probe_gso(ep->io.s[0].fd);
	if (rn_listener_init(&ep->lis, &ep->cfg, &ep->env, addrs, ep->io.n) != 0) {
		snprintf(err, errlen, "cannot set up the listener");
		return -1;
	}
	ep->have_lis = 1;
	ep->name.n = ep->io.n;
	for (int i = 0; i < ep->io.n; i++)
		ep->name.rail[i] = addrs[i];
	return 0;
}

static int config(rfi_ep *ep, char *err, size_t errlen)
{
	int min_mtu = 65535;

	ep->nrails = rn_rails_discover(ep->rails, RN_MAX_RAILS, rfi_k.rails, err, errlen);
	if (ep->nrails <= 0)
		return -1;
	for (int i = 0; i < ep->nrails; i++)
		if (ep->rails[i].mtu < min_mtu)
			min_mtu = ep->rails[i].mtu;
	rn_config_default(&ep->cfg);
	if (rn_knob_set(&ep->cfg, RI2N_MTU, min_mtu < 576 ? 576 : min_mtu) != 0) {
		snprintf(err, errlen, "rail MTU %d is not usable", min_mtu);
		return -1;
	}
	rn_knobs_from_env(&ep->cfg);
	if (rn_knobs_key_from_env(&ep->cfg) != 0) {
		snprintf(err, errlen, "the cluster key (RI2N_KEY, RI2N_KEY_FILE) is not usable");
		return -1;
	}
	ep->env = (rn_env){ .mem = { core_alloc, core_free, NULL }, .rng = core_rng,
			    .on_event = on_core_event, .user = NULL };
	return 0;
}

/* ---- fid operations ---- */

static void ep_free(rfi_ep *ep)
{
	rfi_ep_cancel_all(ep);
	for (rfi_link *l = ep->links; l; l = l->next)
		l->dead = 1;
	links_reap(ep);
	for (size_t i = 0; i < ep->npeers; i++) {
		rfi_peer *p = ep->peers[i];

		if (!p)
			continue;
		rfi_peer_fail(ep, p, FI_ECANCELED);
		free(p);
	}
	free(ep->peers);
	while (ep->free_ops) {
		rfi_op *op = ep->free_ops;

		ep->free_ops = op->next;
		free(op);
	}
	if (ep->have_lis)
		rn_listener_wipe(&ep->lis);
	rn_hset_free(&ep->io);
	rn_hrxbuf_free(&ep->rx);
	rn_htab_free(&ep->idtab);
	sodium_memzero(ep->cfg.key, sizeof(ep->cfg.key));
	free(ep);
}

/* Sent data still unacknowledged: give the peers time to take it (bounded). */
static void linger(rfi_ep *ep)
{
	uint64_t end = rfi_clock() + rfi_k.linger_ns;

	/* FIN on every stream: ours end after their data, the peers' see us go */
	for (rfi_link *l = ep->links; l; l = l->next)
		if (!l->dead && rn_conn_state(l->conn) == RN_ST_ESTABLISHED) {
			rn_conn_shutdown(l->conn, rfi_ep_now(ep));
			l->dirty = 1;
		}
	while (rfi_clock() < end) {
		int owed = 0;

		rfi_ep_pass(ep);
		for (rfi_link *l = ep->links; l; l = l->next)
			owed |= l->peer && !l->dead && !rn_conn_write_done(l->conn) &&
				rn_conn_state(l->conn) == RN_ST_ESTABLISHED;
		if (!owed)
			break;
	}
}

static int ep_close(struct fid *f)
{
	rfi_ep *ep = (rfi_ep *)f;
	rfi_domain *d = ep->dom;

	pthread_mutex_lock(&d->lock);
	keeper_stop(ep);
	if (ep->enabled)
		linger(ep);
	rn_info("ri2n provider: endpoint closed: %llu messages out (%llu bytes), %llu in (%llu "
		"bytes, %llu unexpected), %llu rail events, %llu connection failures",
		(unsigned long long)ep->msgs_out, (unsigned long long)ep->bytes_out,
		(unsigned long long)ep->msgs_in, (unsigned long long)ep->bytes_in,
		(unsigned long long)ep->unexpected, (unsigned long long)ep->rail_events,
		(unsigned long long)ep->conn_failures);
	for (rfi_link *l = ep->links; l && rn_log_enabled(RN_LOG_INFO); l = l->next) {
		rn_conn_stats st;

		rn_conn_get_stats(l->conn, &st);
		rn_info("ri2n provider: %s connection: %s, %llu packets out, %llu in, %llu "
			"retransmits, %llu timeouts, mss %u", l->peer ? "outbound" : "inbound",
			rn_state_name(st.state), (unsigned long long)st.tx_packets,
			(unsigned long long)st.rx_packets, (unsigned long long)st.retransmits,
			(unsigned long long)st.rto_events, st.mss);
	}
	ep->enabled = 0;
	if (ep->txcq)
		rfi_cq_detach(ep->txcq, ep);
	if (ep->rxcq)
		rfi_cq_detach(ep->rxcq, ep);
	if (ep->av)
		ep->av->refs--;
	ep_free(ep);
	d->refs--;
	pthread_mutex_unlock(&d->lock);
	return 0;
}

static int ep_bind(struct fid *f, struct fid *b, uint64_t flags)
{
	rfi_ep *ep = (rfi_ep *)f;
	int rc = 0;

	pthread_mutex_lock(&ep->dom->lock);
	switch (b->fclass) {
	case FI_CLASS_AV:
		if (ep->av)
			rc = -FI_EINVAL;
		else
			ep->av = (rfi_av *)b, ep->av->refs++;
		break;
	case FI_CLASS_CQ:
		if (flags & FI_TRANSMIT) {
			ep->txcq = (rfi_cq *)b;
			ep->tx_flags = flags & FI_SELECTIVE_COMPLETION;
			rc = rfi_cq_attach(ep->txcq, ep);
		}
		if (rc == 0 && (flags & FI_RECV)) {
			ep->rxcq = (rfi_cq *)b;
			ep->rx_flags = flags & FI_SELECTIVE_COMPLETION;
			rc = rfi_cq_attach(ep->rxcq, ep);
		}
		break;
	case FI_CLASS_EQ:
		break; /* nothing is ever reported there */
	default:
		rc = -FI_ENOSYS;
	}
	pthread_mutex_unlock(&ep->dom->lock);
	return rc;
}

static int ep_control(struct fid *f, int cmd, void *arg)
{
	rfi_ep *ep = (rfi_ep *)f;
	uint64_t *flags = arg;

	switch (cmd) {
	case FI_ENABLE:
		if (!ep->av || !ep->txcq || !ep->rxcq)
			return -FI_ENOCQ;
		pthread_mutex_lock(&ep->dom->lock);
		ep->enabled = 1;
		ep->last_pass_ns = rfi_clock();
		keeper_start(ep);
		pthread_mutex_unlock(&ep->dom->lock);
		return 0;
	case FI_GETOPSFLAG:
		*flags = (*flags & FI_TRANSMIT) ? ep->tx_op_flags : ep->rx_op_flags;
		return 0;
	case FI_SETOPSFLAG:
		if (*flags & FI_TRANSMIT)
			ep->tx_op_flags = *flags & ~(uint64_t)(FI_TRANSMIT | FI_RECV);
		else
			ep->rx_op_flags = *flags & ~(uint64_t)(FI_TRANSMIT | FI_RECV);
		return 0;
	default:
		return -FI_ENOSYS;
	}
}

static int ep_getname(fid_t f, void *addr, size_t *len)
{
	rfi_ep *ep = (rfi_ep *)f;
	uint8_t buf[RFI_NAME_LEN];
	size_t cap = *len;

	rfi_name_write(&ep->name, buf);
	*len = RFI_NAME_LEN;
	if (cap < RFI_NAME_LEN)
		return -FI_ETOOSMALL;
	memcpy(addr, buf, RFI_NAME_LEN);
	return 0;
}

static int cm_no_setname(fid_t f, void *a, size_t n)
{
	(void)f, (void)a, (void)n;
	return -FI_ENOSYS;
}

static int cm_no_getpeer(struct fid_ep *e, void *a, size_t *n)
{
	(void)e, (void)a, (void)n;
	return -FI_ENOSYS;
}

static int cm_no_connect(struct fid_ep *e, const void *a, const void *p, size_t n)
{
	(void)e, (void)a, (void)p, (void)n;
	return -FI_ENOSYS;
}

static int cm_no_listen(struct fid_pep *p)
{
	(void)p;
	return -FI_ENOSYS;
}

static int cm_no_accept(struct fid_ep *e, const void *p, size_t n)
{
	(void)e, (void)p, (void)n;
	return -FI_ENOSYS;
}

static int cm_no_reject(struct fid_pep *pep, fid_t h, const void *p, size_t n)
{
	(void)pep, (void)h, (void)p, (void)n;
	return -FI_ENOSYS;
}

static int cm_no_shutdown(struct fid_ep *e, uint64_t flags)
{
	(void)e, (void)flags;
	return -FI_ENOSYS;
}

static int cm_no_join(struct fid_ep *e, const void *a, uint64_t flags, struct fid_mc **mc,
		      void *ctx)
{
	(void)e, (void)a, (void)flags, (void)mc, (void)ctx;
	return -FI_ENOSYS;
}

static int ep_getopt(fid_t f, int level, int name, void *val, size_t *len)
{
	(void)f, (void)level, (void)name, (void)val, (void)len;
	return -FI_ENOPROTOOPT;
}

static int ep_setopt(fid_t f, int level, int name, const void *val, size_t len)
{
	(void)f, (void)level, (void)name, (void)val, (void)len;
	return -FI_ENOPROTOOPT;
}

static int ep_no_ctx(struct fid_ep *sep, int i, struct fi_tx_attr *a, struct fid_ep **e,
		     void *c)
{
	(void)sep, (void)i, (void)a, (void)e, (void)c;
	return -FI_ENOSYS;
}

static int ep_no_rx_ctx(struct fid_ep *sep, int i, struct fi_rx_attr *a, struct fid_ep **e,
			void *c)
{
	(void)sep, (void)i, (void)a, (void)e, (void)c;
	return -FI_ENOSYS;
}

static ssize_t ep_size_left(struct fid_ep *e)
{
	(void)e;
	return RFI_QUEUE_SIZE;
}

static struct fi_ops ep_fi_ops = {
	.size = sizeof(struct fi_ops), .close = ep_close, .bind = ep_bind,
	.control = ep_control, .ops_open = rfi_no_ops_open,
};
static struct fi_ops_ep ep_ops = {
	.size = sizeof(struct fi_ops_ep), .cancel = rfi_ep_cancel, .getopt = ep_getopt,
	.setopt = ep_setopt, .tx_ctx = ep_no_ctx, .rx_ctx = ep_no_rx_ctx,
	.rx_size_left = ep_size_left, .tx_size_left = ep_size_left,
};
static struct fi_ops_cm cm_ops = {
	.size = sizeof(struct fi_ops_cm), .setname = cm_no_setname, .getname = ep_getname,
	.getpeer = cm_no_getpeer, .connect = cm_no_connect, .listen = cm_no_listen,
	.accept = cm_no_accept, .reject = cm_no_reject, .shutdown = cm_no_shutdown,
	.join = cm_no_join,
};

int rfi_ep_open(struct fid_domain *d, struct fi_info *info, struct fid_ep **out, void *ctx)
{
	rfi_domain *dom = (rfi_domain *)d;
	rfi_ep *ep;
	char err[256];

	if (!info || (info->ep_attr && info->ep_attr->type != FI_EP_RDM &&
		      info->ep_attr->type != FI_EP_UNSPEC))
		return -FI_EINVAL;
	ep = calloc(1, sizeof(*ep));
	if (!ep)
		return -FI_ENOMEM;
	ep->dom = dom;
	ep->caps = info->caps ? info->caps : RFI_CAPS;
	ep->tx_op_flags = info->tx_attr ? info->tx_attr->op_flags : 0;
	ep->rx_op_flags = info->rx_attr ? info->rx_attr->op_flags : 0;
	if (info->src_addr) {
		rfi_name nm;

		if (rfi_name_read(&nm, info->src_addr, info->src_addrlen) == 0)
			for (int i = 0; i < nm.n; i++)
				ep->bind[i] = nm.rail[i];
	}
	ep->rx.mem = NULL;
	if (config(ep, err, sizeof(err)) != 0 || io_open(ep, err, sizeof(err)) != 0) {
		rn_warn("ri2n provider: cannot open an endpoint: %s", err);
		ep_free(ep);
		return -FI_ENODEV;
	}
	ep->ep.fid = (struct fid){ .fclass = FI_CLASS_EP, .context = ctx, .ops = &ep_fi_ops };
	ep->ep.ops = &ep_ops;
	ep->ep.cm = &cm_ops;
	ep->ep.msg = &rfi_msg_ops;
	ep->ep.tagged = &rfi_tagged_ops;
	pthread_mutex_lock(&dom->lock);
	dom->refs++;
	pthread_mutex_unlock(&dom->lock);
	*out = &ep->ep;
	return 0;
}
