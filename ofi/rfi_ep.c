/*
 * rfi_ep.c - the endpoint object: its configuration (rails, RI2N_* knobs,
 * cluster key), the keeper thread, and the libfabric calls on it (bind,
 * enable, getname, close).  Its connections and the protocol pass are in
 * rfi_pass.c.
 */
#include <arpa/inet.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include <sodium/utils.h>

#include "ri2n.h"
#include "rfi.h"
#include "rn_henv.h"
#include "rn_knobs.h"
#include "rn_log.h"


/* ---- what the core needs ---- */

/* The core's owner check (rn_env.owns): a link's connection under its domain's lock. */
static int owns(void *user)
{
	const rfi_link *l = user;

	return !l || rn_henv_mutex_mine(&l->ep->dom->lock); /* NULL: not filed yet, the creator's */
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
		ep->stat_next_ns = 0; /* ri2n-stat shows it after this pass */
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

/* ---- the keeper (rn_hkeep.h) ---- */

static int owes(const rfi_ep *ep)
{
	for (const rfi_link *l = rfi_links(ep); l; l = rfi_link_next(l))
		if (!l->h.dead && (rn_conn_owes(l->h.conn) || (l->peer && l->peer->q)))
			return 1;
	return 0;
}

/* The domain lock, only when nobody holds it: an application inside a call progresses already. */
static int keeper_trylock(void *arg)
{
	return pthread_mutex_trylock(&((rfi_ep *)arg)->dom->lock);
}

static void keeper_unlock(void *arg) { pthread_mutex_unlock(&((rfi_ep *)arg)->dom->lock); }

/* rfi_clock as it is at each look (a test may swap it) */
static uint64_t keeper_clock(void) { return rfi_clock(); }

static int keeper_pass(void *arg, uint64_t now)
{
	rfi_ep *ep = arg;

	(void)now; /* the pass reads the clock itself */
	rfi_ep_pass(ep);
	return owes(ep);
}

static void keeper_start(rfi_ep *ep)
{
	if (ep->keep.on)
		return;
	/* nothing owed after its pass: the keeper looks 50 times rarer */
	ep->keep = (rn_hkeep){ .period_ns = rfi_k.keeper_ns, .quiet_ns = rfi_k.keeper_ns,
			       .idle_x = 50, .clock = keeper_clock, .last = &ep->last_pass_ns,
			       .trylock = keeper_trylock, .unlock = keeper_unlock,
			       .pass = keeper_pass, .arg = ep };
	if (rn_hkeep_start(&ep->keep) != 0)
		rn_warn("ri2n provider: no keeper thread: progress only in the application's calls");
}

/* Domain lock held; releases it while the keeper finishes. */
static void keeper_stop(rfi_ep *ep)
{
	if (!ep->keep.on)
		return;
	pthread_mutex_unlock(&ep->dom->lock);
	rn_hkeep_stop(&ep->keep);
	pthread_mutex_lock(&ep->dom->lock);
}

/* ---- setup ---- */

static int config(rfi_ep *ep, char *err, size_t errlen)
{
	int min_mtu;

	/* a listed interface without an address yet waits for one (rn_hgrow) */
	rn_rail_addr asked[RN_MAX_RAILS];

	ep->nrails = rn_rails_discover_any(ep->rails, RN_MAX_RAILS, rfi_k.rails, err, errlen);
	if (ep->nrails <= 0)
		return -1;
	/* the ports src_addr asked for, by address: its name lists no waiting rail */
	memcpy(asked, ep->bind, sizeof(asked));
	memset(ep->bind, 0, sizeof(ep->bind));
	for (int i = 0; i < ep->nrails; i++)
		for (int k = 0; k < RN_MAX_RAILS && rn_rails_has_addr(&ep->rails[i]); k++)
			if ((asked[k].ip || asked[k].v6) &&
			    rn_rails_is(&ep->rails[i], rn_addr_of_rail(&asked[k])))
				ep->bind[i] = asked[k];
	min_mtu = rn_rails_mtu(ep->rails, ep->nrails); /* IPv6 rails count their larger header */
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
	ep->env = rn_henv_default(); /* the heap, the kernel's random numbers */
	ep->env.on_event = on_core_event;
	ep->env.owns = owns;
	return 0;
}

/* ---- fid operations ---- */

static void ep_free(rfi_ep *ep)
{
	rfi_ep_cancel_all(ep);
	for (rfi_link *l = rfi_links(ep); l; l = rfi_link_next(l))
		l->h.dead = 1;
	rfi_links_reap(ep);
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
	rn_hfollow_close(&ep->follow);
	rn_hpoll_close(&ep->io, &ep->rx, &ep->idtab);
	rn_hmon_free(&ep->mon);
	sodium_memzero(ep->cfg.key, sizeof(ep->cfg.key));
	free(ep);
}

/* Sent data still unacknowledged: give the peers time to take it (bounded). */
static void linger(rfi_ep *ep)
{
	uint64_t end = rfi_clock() + rfi_k.linger_ns;

	/* FIN on every stream: ours end after their data, the peers' see us go */
	ep->closing = 1;
	for (rfi_link *l = rfi_links(ep); l; l = rfi_link_next(l))
		if (!l->h.dead && rn_conn_state(l->h.conn) == RN_ST_ESTABLISHED) {
			rn_conn_shutdown(l->h.conn, rfi_ep_now(ep));
			l->h.dirty = 1;
		}
	while (rfi_clock() < end) {
		int owed = 0;

		rfi_ep_pass(ep);
		for (rfi_link *l = rfi_links(ep); l; l = rfi_link_next(l))
			owed |= (l->peer || l->retired == RFI_RETIRED_OUT) && !l->h.dead &&
				!rn_conn_write_done(l->h.conn) &&
				rn_conn_state(l->h.conn) == RN_ST_ESTABLISHED;
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
		"bytes, %llu unexpected), %llu rail events, %llu connection failures, %llu "
		"hellos refused, %llu links superseded",
		(unsigned long long)ep->msgs_out, (unsigned long long)ep->bytes_out,
		(unsigned long long)ep->msgs_in, (unsigned long long)ep->bytes_in,
		(unsigned long long)ep->unexpected, (unsigned long long)ep->rail_events,
		(unsigned long long)ep->conn_failures, (unsigned long long)ep->hellos_refused,
		(unsigned long long)ep->superseded);
	rn_info("ri2n provider: rail monitors: %llu connections joined %llu; %llu port "
		"unreachable(s) taken", (unsigned long long)ep->mon.joined,
		(unsigned long long)ep->mon.made, (unsigned long long)ep->mon.unreach);
	for (rfi_link *l = rfi_links(ep); l && rn_log_enabled(RN_LOG_INFO); l = rfi_link_next(l)) {
		rn_conn_stats st;

		rn_conn_get_stats(l->h.conn, &st);
		rn_info("ri2n provider: %s connection: %s, %llu packets out, %llu in, %llu "
			"retransmits, %llu timeouts, mss %u", l->peer ? "outbound" : "inbound",
			rn_state_name(st.state), (unsigned long long)st.tx_packets,
			(unsigned long long)st.rx_packets, (unsigned long long)st.retransmits,
			(unsigned long long)st.rto_events, st.mss);
	}
	ep->enabled = 0;
	rfi_stat_close(ep);
	if (ep->txcq)
		rfi_cq_detach(ep->txcq, ep);
	if (ep->rxcq)
		rfi_cq_detach(ep->rxcq, ep);
	if (ep->txcntr)
		rfi_cntr_detach(ep->txcntr, ep);
	if (ep->rxcntr)
		rfi_cntr_detach(ep->rxcntr, ep);
	ep->txcntr = ep->rxcntr = NULL; /* the queued sends ep_free fails count nowhere */
	if (ep->av)
		ep->av->refs--;
	ep_free(ep);
	d->refs--;
	pthread_mutex_unlock(&d->lock);
	return 0;
}

/* FI_SEND / FI_RECV counters; no RMA, so no FI_READ, FI_WRITE, FI_REMOTE_*. */
static int cntr_bind(rfi_ep *ep, rfi_cntr *c, uint64_t flags)
{
	int rc = 0;

	if (flags & ~(uint64_t)(FI_SEND | FI_RECV))
		return -FI_EINVAL;
	if ((flags & FI_SEND) && !ep->txcntr && (rc = rfi_cntr_attach(c, ep)) == 0)
		ep->txcntr = c;
	if (rc == 0 && (flags & FI_RECV) && !ep->rxcntr && (rc = rfi_cntr_attach(c, ep)) == 0)
		ep->rxcntr = c;
	return rc;
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
	case FI_CLASS_CNTR:
		rc = cntr_bind(ep, (rfi_cntr *)b, flags);
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
		rfi_stat_open(ep);
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
	ep->stat_fd = -1; /* not publishing before FI_ENABLE */
	ep->follow.fd = -1; /* no netlink socket before rfi_ep_io_open */
	ep->caps = info->caps ? info->caps : RFI_CAPS;
	ep->tx_op_flags = info->tx_attr ? info->tx_attr->op_flags : 0;
	ep->rx_op_flags = info->rx_attr ? info->rx_attr->op_flags : 0;
	if (info->src_addr) {
		rfi_name nm;

		if (rfi_name_read_src(&nm, info->src_addr, info->src_addrlen) == 0)
			for (int i = 0; i < nm.n; i++)
				ep->bind[i] = nm.rail[i];
	}
	ep->rx.mem = NULL;
	if (config(ep, err, sizeof(err)) != 0 || rfi_ep_io_open(ep, err, sizeof(err)) != 0) {
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
