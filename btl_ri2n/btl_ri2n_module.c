/*
 * btl_ri2n_module.c - the BTL module: setup and modex, add/del procs, the
 * send paths (alloc, prepare_src, send, sendi) and finalize.
 *
 * Sends to this very process (`--mca btl ri2n` without `self`) are handed
 * to the receive callback at once, in memory, as btl/self does.
 */
#include "opal_config.h"

#include <sodium/utils.h>

#include <arpa/inet.h>
#include <stdio.h>
#include <string.h>

#include "opal/datatype/opal_convertor.h"
#include "opal/util/output.h"

#include "btl_ri2n.h"
#include "btl_ri2n_frag.h"
#include "rn_henv.h"
#include "ri2n.h"
#include "rn_knobs.h"
#include "rn_log.h"

/*
 * The modex blob: magic, version, rail count, then per rail its family (4
 * or 6), prefix length, port and address (an IPv4 one in the first 4 of
 * the 16 bytes), network byte order.  A link-local IPv6 rail's scope is
 * ours to supply: the peer's interface index means nothing here.
 */
#define MODEX_VERSION 2

typedef struct modex_rail {
	uint8_t family, prefix;
	uint16_t port;
	uint8_t addr[16];
} modex_rail;

typedef struct modex_blob {
	uint32_t magic;
	uint8_t version, nrails;
	uint16_t pad;
	modex_rail rail[RN_MAX_RAILS];
} modex_blob;

/* ---- lock ---- */

void rbtl_lock(mca_btl_ri2n_module_t *m)
{
	pthread_mutex_lock(&m->lock);
	m->depth++;
}

int rbtl_trylock(mca_btl_ri2n_module_t *m)
{
	if (pthread_mutex_trylock(&m->lock) != 0)
		return -1;
	m->depth++;
	return 0;
}

void rbtl_unlock(mca_btl_ri2n_module_t *m)
{
	int outer = --m->depth == 0;

	pthread_mutex_unlock(&m->lock);
	if (outer && m->nfatal)
		rbtl_report_fatal(m);
}

int rbtl_release(mca_btl_ri2n_module_t *m)
{
	int depth = m->depth;

	m->depth = 0;
	for (int i = 0; i < depth; i++)
		pthread_mutex_unlock(&m->lock);
	return depth;
}

void rbtl_reacquire(mca_btl_ri2n_module_t *m, int depth)
{
	for (int i = 0; i < depth; i++)
		pthread_mutex_lock(&m->lock);
	m->depth = depth;
}

/* The core's owner check (rn_env.owns): a link's connection under its module's lock. */
static int owns(void *user)
{
	const rbtl_link *l = user;

	return !l || rn_henv_mutex_mine(&l->mod->lock); /* NULL: not filed yet, the creator's */
}

/* ---- setup ---- */

static uint64_t core_now(void *arg) { return rbtl_core_now(arg); }

/* Datagrams into the link table, or the listener's (and the nudges'). */
static void to_link(void *arg, void *v, int rail, rn_addr from, const uint8_t *d, size_t len,
		    uint64_t now)
{
	rbtl_link *l = v;
	/* a handshake's rings are granted whatever the ceiling (rbtl_core_alloc) */
	int setup = rn_conn_state(l->h.conn) < RN_ST_ESTABLISHED;

	(void)arg;
	l->mod->mem_setup += setup;
	rn_conn_recv(l->h.conn, now, rail, from, d, len);
	l->mod->mem_setup -= setup;
	l->h.dirty = 1; /* a drop (duplicate) may still owe an ACK */
}

/* A rail gone or back (rn_hfollow_fn): every link hears it. */
static int rail_changed(void *arg, int rail, int usable, rn_cause cause)
{
	mca_btl_ri2n_module_t *m = arg;
	int idx = rn_hpoll_sock_of(&m->io, rail); /* none yet: a rail waiting for an address */

	return idx < 0 ? 0 : rn_hconns_rail(&m->links, idx, usable, cause, rbtl_core_now(m));
}

/*
 * One UDP socket per rail, bound to the rail's address and a free port, the
 * table that routes what they read and the kernel's word on the rails.  0,
 * or -errno with a sentence.
 */
static int io_open(mca_btl_ri2n_module_t *m, char *err, size_t errlen)
{
	const rbtl_params *pr = &mca_btl_ri2n_component.p;
	/* ICMP errors into the error queue, for a peer process that died (rn_hmon.h);
	 * the BTL's connect still gives up by its own timers, not on a port unreachable */
	int rc;

	m->lk = (rn_hpoll_links){ .tab = &m->idtab, .mon = &m->mon,
				  .conn_of = rn_hconn_conn_of, .mark = rn_hconn_mark,
				  .now = core_now, .due = rn_hconn_due, .arg = m };
	rbtl_links_init(m);
	m->open = (rn_hpoll_rails){ .rails = m->rails, .n = m->nrails, .gso = pr->gso,
				    .links = &m->lk,
				    .opts = { .dgram = m->cfg.max_dgram, .gro = pr->gro,
					      .rx_ts = pr->rx_ts, .recverr = 1 } };
	rc = rn_hpoll_open(&m->io, &m->rx, &m->idtab, &m->open, err, errlen);
	m->disp = (rn_hdisp){ .tab = &m->idtab, .to_conn = to_link,
			      .to_listener = rbtl_stream_unbound, .conn_of = rn_hconn_conn_of,
			      .on_reset = rn_hconn_on_reset, .arg = m };
	rn_hfollow_init(&m->follow, m->rails, m->nrails, rail_changed, m);
	m->follow.each = rn_hgrow_event; /* a waiting rail may get its address */
	m->follow.each_arg = &m->grow;
	m->follow.moved = rn_hgrow_moved; /* a rail whose address changed */
	m->follow.moved_arg = &m->grow;
	m->grow = (rn_hgrow){ .rails = m->rails, .open = &m->open, .links = &m->links,
			      .lis = &m->lis, .follow = &m->follow };
	rbtl_stream_pass_init(m);
	if (rc == 0)
		rn_hfollow_open(&m->follow);
	return rc;
}

static void io_close(mca_btl_ri2n_module_t *m)
{
	rn_hfollow_close(&m->follow);
	rn_hpoll_close(&m->io, &m->rx, &m->idtab);
	rn_hmon_free(&m->mon);
}

static void set_log_level(const char *s)
{
	static const char *const names[] = { "debug", "info", "warn", "error", "off" };

	rn_log_init();
	if (!s || !*s)
		return;
	for (int i = 0; i <= RN_LOG_OFF; i++) {
		if (strcmp(s, names[i]) == 0) {
			ri2n_set_log(i, NULL, NULL);
			return;
		}
	}
	opal_output(0, "btl_ri2n: btl_ri2n_log=%s is not one of debug, info, warn, error, off", s);
}

static int find_rails(mca_btl_ri2n_module_t *m, int *min_mtu)
{
	const char *inc = mca_btl_ri2n_component.p.if_include;
	const char *spec = inc && *inc ? inc : rn_proc_text(RN_PROC_RAILS);
	char why[256];

	/* a listed interface without an address yet waits for one (rn_hgrow) */
	m->nrails = rn_rails_discover_any(m->rails, RN_MAX_RAILS, spec, why, sizeof(why));
	if (m->nrails <= 0) {
		opal_output(0, "btl_ri2n: not available: %s (set btl_ri2n_if_include or RI2N_RAILS)",
			    why);
		return OPAL_ERR_NOT_AVAILABLE;
	}
	*min_mtu = rn_rails_mtu(m->rails, m->nrails); /* IPv6 rails count their larger header */
	return OPAL_SUCCESS;
}

static int modex_publish(mca_btl_ri2n_module_t *m)
{
	modex_blob b = { .magic = htonl(RI2N_MAGIC), .version = MODEX_VERSION,
			 .nrails = (uint8_t)m->io.n };
	int rc;

	for (int i = 0; i < m->io.n; i++) {
		const rn_rail_addr *a = &m->io.s[i].addr;
		uint32_t ip = htonl(a->ip);

		b.rail[i] = (modex_rail){ .family = a->v6 ? 6 : 4, .prefix = a->prefix,
					  .port = htons(a->port) };
		if (a->v6)
			memcpy(b.rail[i].addr, a->ip6, 16);
		else
			memcpy(b.rail[i].addr, &ip, 4);
	}
	OPAL_MODEX_SEND(rc, RI2N_MODEX_GLOBAL, &mca_btl_ri2n_component.super.btl_version, &b,
			offsetof(modex_blob, rail) + (size_t)m->io.n * sizeof(modex_rail));
	return rc;
}

int rbtl_module_init(mca_btl_ri2n_module_t *m)
{
	pthread_mutexattr_t a;
	rn_rail_addr addrs[RN_MAX_RAILS];
	char err[256];
	int min_mtu, rc;

	set_log_level(mca_btl_ri2n_component.p.log);
	if (find_rails(m, &min_mtu) != OPAL_SUCCESS)
		return OPAL_ERR_NOT_AVAILABLE;
	if (rbtl_params_config(&mca_btl_ri2n_component.p, min_mtu, &m->cfg, err, sizeof(err))) {
		opal_output(0, "btl_ri2n: %s", err);
		return OPAL_ERR_BAD_PARAM;
	}
	if (mca_btl_ri2n_component.p.ring_mem_mb < 0) {
		opal_output(0, "btl_ri2n: btl_ri2n_ring_mem_mb (or RI2N_RING_MEM_MB) must be a "
			    "size in MiB, or 0 for no ceiling");
		return OPAL_ERR_BAD_PARAM;
	}
	m->mem_max = (size_t)mca_btl_ri2n_component.p.ring_mem_mb << 20;
	m->me = OPAL_PROC_MY_NAME;
	{
		/* who belongs to the job: nudges and hellos from other names are refused */
		opal_process_name_t wild = { .jobid = m->me.jobid, .vpid = OPAL_VPID_WILDCARD };
		uint32_t *u32 = &m->job_size;

		OPAL_MODEX_RECV_VALUE_OPTIONAL(rc, RI2N_MODEX_JOB_SIZE, &wild, &u32, RI2N_MODEX_UINT32);
		if (rc != OPAL_SUCCESS)
			m->job_size = 0;
	}
	rbtl_share_ceiling(m);
	m->env = (rn_env){ .mem = { rbtl_core_alloc, rbtl_core_free, m }, .rng = rn_henv_rng,
			   .on_event = rbtl_on_core_event, .user = NULL,
			   .rcvpool = rbtl_rcvpool(m), .owns = owns };
	if (io_open(m, err, sizeof(err))) {
		opal_output(0, "btl_ri2n: %s", err);
		io_close(m);
		return OPAL_ERR_NOT_AVAILABLE;
	}
	for (int i = 0; i < m->io.n; i++)
		addrs[i] = m->io.s[i].addr;
	m->mem_setup++; /* the listener's tables: granted whatever the ceiling */
	rc = rn_listener_init(&m->lis, &m->cfg, &m->env, addrs, m->io.n);
	m->mem_setup--;
	if (rc == 0)
		rc = modex_publish(m);
	if (rc == 0)
		rc = rbtl_frag_lists_init(&mca_btl_ri2n_component, m->super.btl_eager_limit,
					  m->super.btl_max_send_size);
	if (rc != 0) {
		io_close(m);
		return OPAL_ERROR;
	}
	if (m->super.btl_bandwidth == 0)
		m->super.btl_bandwidth = 1000 * (uint32_t)m->nrails; /* Mbit/s, GbE rails */
	pthread_mutexattr_init(&a);
	pthread_mutexattr_settype(&a, PTHREAD_MUTEX_RECURSIVE);
	pthread_mutex_init(&m->lock, &a);
	pthread_mutexattr_destroy(&a);
	m->last_progress_ns = rbtl_now_ns();
	m->ready = 1;
	return OPAL_SUCCESS;
}

/* ---- procs ---- */

/*
 * One rail of a peer's blob as an address: 0, or -1 for one that is not a
 * rail's (a link-local one takes the scope of our rail in its subnet, and
 * without one it is no use to us).
 */
static int modex_rail_read(const mca_btl_ri2n_module_t *m, const modex_rail *r, rn_addr *out)
{
	rn_rail_addr a = { .port = ntohs(r->port), .prefix = r->prefix, .v6 = r->family == 6 };
	uint32_t ip;

	if (r->family != 4 && r->family != 6)
		return -1;
	if (a.v6) {
		memcpy(a.ip6, r->addr, 16);
	} else {
		memcpy(&ip, r->addr, 4);
		a.ip = ntohl(ip);
	}
	if (!rn_addr_rail_valid(&a))
		return -1;
	*out = rn_hpoll_peer_addr(&m->io, &a);
	return out->v6 && rn_addr_link_local(*out) && !out->scope ? -1 : 0;
}

int rbtl_modex_addrs(mca_btl_ri2n_module_t *m, opal_process_name_t name,
		     rn_addr out[RN_MAX_RAILS])
{
	uint8_t *raw = NULL;
	modex_blob *b;
	size_t size = 0;
	int rc, n = 0;

	if (name.jobid != m->me.jobid || (m->job_size && name.vpid >= m->job_size))
		return 0;
	OPAL_MODEX_RECV(rc, &mca_btl_ri2n_component.super.btl_version, &name, &raw, &size);
	b = (modex_blob *)raw;
	if (rc != OPAL_SUCCESS || !b)
		return 0;
	if (size >= offsetof(modex_blob, rail) && ntohl(b->magic) == RI2N_MAGIC &&
	    b->version == MODEX_VERSION && b->nrails <= RN_MAX_RAILS &&
	    size >= offsetof(modex_blob, rail) + b->nrails * sizeof(modex_rail)) {
		for (int i = 0; i < b->nrails; i++)
			if (modex_rail_read(m, &b->rail[i], &out[n]) == 0)
				n++;
	}
	free(b);
	return n;
}

/* The peer's rail addresses from its modex blob; 0 if it has none we can reach. */
static int modex_read(mca_btl_ri2n_module_t *m, opal_proc_t *proc, mca_btl_ri2n_endpoint_t *ep)
{
	ep->npeer = rbtl_modex_addrs(m, proc->proc_name, ep->peer);
	return ep->npeer;
}

/* True if one of our rails shares a subnet with one of the peer's. */
static int reachable_rails(const mca_btl_ri2n_module_t *m, const mca_btl_ri2n_endpoint_t *ep)
{
	for (int i = 0; i < m->io.n; i++)
		for (int k = 0; k < ep->npeer; k++)
			if (rn_addr_in_rail(&m->io.s[i].addr, ep->peer[k]))
				return 1;
	return 0;
}

static mca_btl_ri2n_endpoint_t *self_endpoint(mca_btl_ri2n_module_t *m)
{
	if (!m->self_ep) {
		m->self_ep = calloc(1, sizeof(*m->self_ep));
		if (!m->self_ep)
			return NULL;
		m->self_ep->is_self = 1;
		m->self_ep->mod = m;
		m->self_ep->name = m->me;
		m->self_ep->state = RI2N_EP_OPEN;
		OBJ_CONSTRUCT(&m->self_ep->sendq, opal_list_t);
	}
	return m->self_ep;
}

static mca_btl_ri2n_endpoint_t *add_one(mca_btl_ri2n_module_t *m, opal_proc_t *proc)
{
	mca_btl_ri2n_endpoint_t tmp = { .npeer = 0 }, *ep;

	if (opal_compare_proc(proc->proc_name, m->me) == 0)
		return self_endpoint(m);
	if (modex_read(m, proc, &tmp) == 0 || !reachable_rails(m, &tmp))
		return NULL; /* no ri2n there, or no rail in common: another BTL may reach it */
	ep = rbtl_ep_find(m, proc->proc_name, 1);
	if (!ep)
		return NULL;
	memcpy(ep->peer, tmp.peer, sizeof(ep->peer));
	ep->npeer = tmp.npeer;
	if (!ep->proc) {
		OBJ_RETAIN(proc);
		ep->proc = proc;
		rbtl_ep_describe(ep);
	}
	return ep;
}

static int rbtl_add_procs(struct mca_btl_base_module_t *btl, size_t nprocs,
			  struct opal_proc_t **procs, struct mca_btl_base_endpoint_t **peers,
			  opal_bitmap_t *reachable)
{
	mca_btl_ri2n_module_t *m = (mca_btl_ri2n_module_t *)btl;

	rbtl_lock(m);
	for (size_t i = 0; i < nprocs; i++) {
		mca_btl_ri2n_endpoint_t *ep = add_one(m, procs[i]);

		if (!ep)
			continue;
		peers[i] = ep;
		if (reachable)
			opal_bitmap_set_bit(reachable, (int)i);
	}
	rbtl_unlock(m);
	return OPAL_SUCCESS;
}

static int rbtl_del_procs(struct mca_btl_base_module_t *btl, size_t nprocs,
			  struct opal_proc_t **procs, struct mca_btl_base_endpoint_t **peers)
{
	mca_btl_ri2n_module_t *m = (mca_btl_ri2n_module_t *)btl;

	(void)procs;
	/* the connection stays until finalize closes it cleanly; only the proc goes */
	rbtl_lock(m);
	for (size_t i = 0; i < nprocs; i++) {
		mca_btl_ri2n_endpoint_t *ep = peers[i];

		if (ep && !ep->is_self && ep->proc) {
			OBJ_RELEASE(ep->proc);
			ep->proc = NULL;
		}
	}
	rbtl_unlock(m);
	return OPAL_SUCCESS;
}

static int rbtl_register_error(struct mca_btl_base_module_t *btl,
			       mca_btl_base_module_error_cb_fn_t cbfunc)
{
	((mca_btl_ri2n_module_t *)btl)->error_cb = cbfunc;
	return OPAL_SUCCESS;
}

/* ---- descriptors ---- */

static mca_btl_base_descriptor_t *rbtl_alloc(struct mca_btl_base_module_t *btl,
					     struct mca_btl_base_endpoint_t *ep, uint8_t order,
					     size_t size, uint32_t flags)
{
	mca_btl_ri2n_frag_t *f = rbtl_frag_alloc(size);

	(void)btl;
	(void)order;
	if (!f)
		return NULL;
	f->segments[0].seg_len = size;
	f->base.des_flags = flags;
	f->endpoint = ep;
	return &f->base;
}

static int rbtl_free(struct mca_btl_base_module_t *btl, mca_btl_base_descriptor_t *des)
{
	(void)btl;
	rbtl_frag_return((mca_btl_ri2n_frag_t *)des);
	return OPAL_SUCCESS;
}

/*
 * Contiguous data is not copied here: segment 1 points at the user's buffer
 * and the bytes are copied once, into the send ring, by btl_send.  Other
 * data is packed into the fragment's own buffer.
 */
static mca_btl_base_descriptor_t *rbtl_prepare_src(struct mca_btl_base_module_t *btl,
						   struct mca_btl_base_endpoint_t *ep,
						   struct opal_convertor_t *conv, uint8_t order,
						   size_t reserve, size_t *size, uint32_t flags)
{
	mca_btl_ri2n_frag_t *f;
	size_t max_data = *size;
	uint32_t count = 1;
	struct iovec iov;

	(void)btl;
	(void)order;
	if (opal_convertor_need_buffers(conv)) {
		f = rbtl_frag_alloc(reserve + max_data);
		if (!f && (f = rbtl_frag_alloc(btl->btl_max_send_size)) != NULL)
			max_data = f->size > reserve ? f->size - reserve : 0;
		if (!f)
			return NULL;
		iov = (struct iovec){ (uint8_t *)rbtl_frag_data(f) + reserve, max_data };
		if (opal_convertor_pack(conv, &iov, &count, &max_data) < 0) {
			rbtl_frag_return(f);
			return NULL;
		}
		f->segments[0].seg_len = reserve + max_data;
	} else {
		f = rbtl_frag_alloc(reserve);
		if (!f)
			return NULL;
		iov = (struct iovec){ NULL, max_data };
		if (opal_convertor_pack(conv, &iov, &count, &max_data) < 0) {
			rbtl_frag_return(f);
			return NULL;
		}
		f->segments[0].seg_len = reserve;
		f->segments[1].seg_addr.pval = iov.iov_base;
		f->segments[1].seg_len = max_data;
		f->base.des_segment_count = max_data ? 2 : 1;
	}
	f->base.des_flags = flags;
	f->endpoint = ep;
	*size = max_data;
	return &f->base;
}

/* ---- sending ---- */

/* Local completion of a fragment: the callback if asked for, then the free. */
void rbtl_frag_complete(mca_btl_ri2n_module_t *m, mca_btl_ri2n_frag_t *f, int status)
{
	int owned = f->base.des_flags & MCA_BTL_DES_FLAGS_BTL_OWNERSHIP;

	if (f->base.des_flags & MCA_BTL_DES_SEND_ALWAYS_CALLBACK)
		f->base.des_cbfunc(&m->super, f->endpoint, &f->base, status);
	if (owned)
		rbtl_frag_return(f);
}

/* To this process: the receive callback runs now, on the sender's segments. */
static int self_send(mca_btl_ri2n_module_t *m, mca_btl_ri2n_frag_t *f, uint8_t tag)
{
	rbtl_compat_deliver(&m->super, f->endpoint, tag, f->base.des_segments,
			    f->base.des_segment_count);
	rbtl_frag_complete(m, f, OPAL_SUCCESS);
	return 1;
}

static int btl_send(struct mca_btl_base_module_t *btl, struct mca_btl_base_endpoint_t *ep,
		     struct mca_btl_base_descriptor_t *des, mca_btl_base_tag_t tag)
{
	mca_btl_ri2n_module_t *m = (mca_btl_ri2n_module_t *)btl;
	mca_btl_ri2n_frag_t *f = (mca_btl_ri2n_frag_t *)des;
	uint64_t now;

	f->endpoint = ep;
	if (ep->is_self)
		return self_send(m, f, tag);
	rbtl_frag_set_hdr(f, tag);
	rbtl_lock(m);
	if (ep->state == RI2N_EP_FAILED || ep->state == RI2N_EP_CLOSED) {
		rbtl_unlock(m);
		return OPAL_ERR_UNREACH;
	}
	now = rbtl_core_now(m);
	if (ep->state == RI2N_EP_OPEN && ep->link && opal_list_is_empty(&ep->sendq)) {
		int rc = rbtl_stream_write_frag(ep->link, f, now);

		rn_hconn_flush(&m->links, &ep->link->h, now);
		rn_hset_flush(&m->io);
		if (rc == 1) {
			rbtl_unlock(m);
			rbtl_frag_complete(m, f, OPAL_SUCCESS);
			return 1;
		}
	}
	/* later: when connected, or when the ring has room (rbtl_stream_push) */
	f->base.des_flags |= MCA_BTL_DES_SEND_ALWAYS_CALLBACK;
	opal_list_append(&ep->sendq, &f->base.super.super);
	ep->queued_frags++;
	rbtl_ep_kick(ep, now);
	rbtl_unlock(m);
	return OPAL_SUCCESS;
}

static int self_sendi(mca_btl_ri2n_module_t *m, struct opal_convertor_t *conv, void *header,
		      size_t header_size, size_t payload_size, uint32_t flags, uint8_t tag)
{
	mca_btl_base_descriptor_t *des;
	size_t size = payload_size;

	des = rbtl_prepare_src(&m->super, m->self_ep, conv, MCA_BTL_NO_ORDER, header_size, &size,
			       flags | MCA_BTL_DES_FLAGS_BTL_OWNERSHIP);
	if (!des)
		return OPAL_ERR_OUT_OF_RESOURCE;
	memcpy(des->des_segments[0].seg_addr.pval, header, header_size);
	return self_send(m, (mca_btl_ri2n_frag_t *)des, tag) == 1 ? OPAL_SUCCESS : OPAL_ERROR;
}

/* Writes header + payload straight into the ring; 1 if done, 0 if it cannot now. */
static int sendi_direct(mca_btl_ri2n_module_t *m, mca_btl_ri2n_endpoint_t *ep,
			struct opal_convertor_t *conv, void *header, size_t header_size,
			size_t payload_size, uint8_t tag, uint64_t now)
{
	rn_conn *c = ep->link->h.conn;
	uint8_t hdr[RI2N_HDR_LEN];
	uint32_t len = htonl((uint32_t)(header_size + payload_size));
	void *data = NULL;

	if (rn_conn_write_space(c) < RI2N_HDR_LEN + header_size + payload_size)
		return 0;
	if (payload_size) {
		struct iovec iov = { NULL, payload_size };
		uint32_t count = 1;
		size_t max = payload_size;

		if (opal_convertor_need_buffers(conv)) {
			if (payload_size > sizeof(m->scratch))
				return 0;
			iov.iov_base = m->scratch;
		}
		if (opal_convertor_pack(conv, &iov, &count, &max) < 0 || max != payload_size)
			return 0;
		data = iov.iov_base;
	}
	memcpy(hdr, &len, 4);
	hdr[4] = tag;
	hdr[5] = RI2N_FT_FRAG;
	hdr[6] = hdr[7] = 0;
	/* the space check above makes each write whole */
	rn_conn_write(c, now, hdr, RI2N_HDR_LEN);
	rn_conn_write(c, now, header, header_size);
	if (payload_size)
		rn_conn_write(c, now, data, payload_size);
	m->frames_out++;
	m->bytes_out += header_size + payload_size;
	rn_hconn_flush(&m->links, &ep->link->h, now);
	rn_hset_flush(&m->io);
	return 1;
}

static int rbtl_sendi(struct mca_btl_base_module_t *btl, struct mca_btl_base_endpoint_t *ep,
		      struct opal_convertor_t *conv, void *header, size_t header_size,
		      size_t payload_size, uint8_t order, uint32_t flags, mca_btl_base_tag_t tag,
		      mca_btl_base_descriptor_t **descriptor)
{
	mca_btl_ri2n_module_t *m = (mca_btl_ri2n_module_t *)btl;
	int done = 0;

	if (ep->is_self)
		return self_sendi(m, conv, header, header_size, payload_size, flags, tag);
	rbtl_lock(m);
	if (ep->state == RI2N_EP_OPEN && ep->link && opal_list_is_empty(&ep->sendq))
		done = sendi_direct(m, ep, conv, header, header_size, payload_size, tag,
				    rbtl_core_now(m));
	rbtl_unlock(m);
	if (done)
		return OPAL_SUCCESS;
	/* the PML copies into this and goes the btl_send way */
	if (descriptor)
		*descriptor = rbtl_alloc(btl, ep, order, header_size + payload_size, flags);
	return OPAL_ERR_RESOURCE_BUSY;
}

/* ---- finalize ---- */

/* Ends every stream cleanly, waiting up to ~1 s for the peers' FINs. */
static void close_all(mca_btl_ri2n_module_t *m)
{
	uint64_t until = rbtl_now_ns() + UINT64_C(1000000000);

	rbtl_lock(m);
	m->finalizing = 1;
	for (rbtl_link *l = rbtl_links(m); l; l = rbtl_link_next(l)) {
		if (!l->h.dead) {
			rn_conn_shutdown(l->h.conn, rbtl_core_now(m));
			l->h.dirty = 1; /* the FIN goes out in the next pass */
		}
	}
	for (;;) {
		int open = 0;
		uint64_t now = rbtl_core_now(m);

		m->in_progress = 1;
		rbtl_stream_pass(m, now, 0);
		m->in_progress = 0;
		for (rbtl_link *l = rbtl_links(m); l; l = rbtl_link_next(l))
			open += !l->h.dead && rn_conn_state(l->h.conn) == RN_ST_ESTABLISHED;
		if (!open || now > until)
			break;
	}
	rbtl_unlock(m);
}

static int rbtl_finalize(struct mca_btl_base_module_t *btl)
{
	mca_btl_ri2n_module_t *m = (mca_btl_ri2n_module_t *)btl;

	if (!m->ready)
		return OPAL_SUCCESS;
	rbtl_keeper_stop(m);
	close_all(m);
	if (mca_btl_ri2n_component.p.verbose)
		rbtl_print_summary(m);
	rbtl_lock(m);
	m->ready = 0;
	for (rbtl_link *l = rbtl_links(m); l; l = rbtl_link_next(l))
		l->h.dead = 1;
	rn_hconns_reap(&m->links);
	while (m->eps) {
		mca_btl_ri2n_endpoint_t *ep = m->eps;

		m->eps = ep->next;
		rbtl_ep_free(ep);
	}
	if (m->self_ep) {
		OBJ_DESTRUCT(&m->self_ep->sendq);
		free(m->self_ep);
		m->self_ep = NULL;
	}
	io_close(m);
	/* the cluster key's copies go with the module */
	rn_listener_wipe(&m->lis);
	sodium_memzero(m->cfg.key, sizeof(m->cfg.key));
	m->nfatal = 0;
	rbtl_unlock(m);
	return OPAL_SUCCESS;
}

mca_btl_ri2n_module_t mca_btl_ri2n_module = {
	.super = {
		.btl_component = &mca_btl_ri2n_component.super,
		.btl_add_procs = rbtl_add_procs,
		.btl_del_procs = rbtl_del_procs,
		.btl_finalize = rbtl_finalize,
		.btl_alloc = rbtl_alloc,
		.btl_free = rbtl_free,
		.btl_prepare_src = rbtl_prepare_src,
		.btl_send = btl_send,
		.btl_sendi = rbtl_sendi,
		.btl_dump = mca_btl_base_dump,
		.btl_register_error = rbtl_register_error,
	},
};
