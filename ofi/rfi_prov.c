/*
 * rfi_prov.c - the provider's entry point (fi_prov_ini), its knobs,
 * fi_getinfo and the fabric object (its event queue: rfi_eq.c).
 */
#include <ctype.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "ri2n.h"
#include "rfi.h"
#include "rn_conf.h"
#include "rn_knobs.h"
#include "rn_log.h"

rfi_knobs rfi_k;

static uint64_t clock_mono(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * 1000000000u + (uint64_t)ts.tv_nsec;
}

uint64_t (*rfi_clock)(void) = clock_mono;

/* ---- stubs shared by every object ---- */

int rfi_no_bind(struct fid *f, struct fid *b, uint64_t flags)
{
	(void)f, (void)b, (void)flags;
	return -FI_ENOSYS;
}

int rfi_no_control(struct fid *f, int cmd, void *arg)
{
	(void)f, (void)cmd, (void)arg;
	return -FI_ENOSYS;
}

int rfi_no_ops_open(struct fid *f, const char *name, uint64_t flags, void **ops, void *ctx)
{
	(void)f, (void)name, (void)flags, (void)ops, (void)ctx;
	return -FI_ENOSYS;
}

/* ---- the fabric ---- */

static int fabric_close(struct fid *f)
{
	free(f);
	return 0;
}

static int fab_no_pep(struct fid_fabric *f, struct fi_info *i, struct fid_pep **p, void *c)
{
	(void)f, (void)i, (void)p, (void)c;
	return -FI_ENOSYS;
}

static int fab_no_wait(struct fid_fabric *f, struct fi_wait_attr *a, struct fid_wait **w)
{
	(void)f, (void)a, (void)w;
	return -FI_ENOSYS;
}

static int fab_domain2(struct fid_fabric *f, struct fi_info *info, struct fid_domain **d,
		       uint64_t flags, void *ctx)
{
	return flags ? -FI_EINVAL : rfi_domain_open(f, info, d, ctx);
}

static struct fi_ops fabric_fi_ops = {
	.size = sizeof(struct fi_ops), .close = fabric_close, .bind = rfi_no_bind,
	.control = rfi_no_control, .ops_open = rfi_no_ops_open,
};
static struct fi_ops_fabric fabric_ops = {
	.size = sizeof(struct fi_ops_fabric), .domain = rfi_domain_open,
	.passive_ep = fab_no_pep, .eq_open = rfi_eq_open, .wait_open = fab_no_wait,
	.trywait = rfi_trywait, .domain2 = fab_domain2,
};

static int fabric_open(struct fi_fabric_attr *attr, struct fid_fabric **out, void *ctx)
{
	rfi_fabric *fab;

	if (attr->name && strcmp(attr->name, RFI_FABRIC_NAME) != 0)
		return -FI_EINVAL;
	fab = calloc(1, sizeof(*fab));
	if (!fab)
		return -FI_ENOMEM;
	fab->f.fid = (struct fid){ .fclass = FI_CLASS_FABRIC, .context = ctx,
				   .ops = &fabric_fi_ops };
	fab->f.ops = &fabric_ops;
	*out = &fab->f;
	return 0;
}

/* ---- fi_getinfo ---- */

/* The first hint we cannot honour (the answer is then "no data"), or NULL. */
static const char *hints_refuse(const struct fi_info *h)
{
	if (h->caps & ~RFI_CAPS)
		return "capabilities (FI_MSG, FI_TAGGED, FI_SOURCE, FI_DIRECTED_RECV, "
		       "FI_REMOTE_CQ_DATA only)";
	if (h->addr_format != FI_FORMAT_UNSPEC)
		return "address format";
	if (h->ep_attr) {
		if (h->ep_attr->type != FI_EP_UNSPEC && h->ep_attr->type != FI_EP_RDM)
			return "endpoint type (FI_EP_RDM only)";
		if (h->ep_attr->protocol != FI_PROTO_UNSPEC)
			return "protocol";
		if (h->ep_attr->max_msg_size > RFI_MAX_MSG)
			return "max_msg_size";
		if (h->ep_attr->tx_ctx_cnt > 1 || h->ep_attr->rx_ctx_cnt > 1)
			return "scalable endpoints";
	}
	if (h->tx_attr && (h->tx_attr->op_flags & RFI_LATER_COMPLETIONS))
		return "completion level (a send completes when it is in ri2n's send ring)";
	if (h->tx_attr && ((h->tx_attr->msg_order & ~(uint64_t)FI_ORDER_SAS) ||
			   h->tx_attr->inject_size > rfi_k.inject_size ||
			   h->tx_attr->iov_limit > RFI_IOV_MAX || (h->tx_attr->caps & ~RFI_CAPS)))
		return "transmit attributes (msg_order FI_ORDER_SAS only, inject size, iov limit)";
	if (h->rx_attr && ((h->rx_attr->msg_order & ~(uint64_t)FI_ORDER_SAS) ||
			   h->rx_attr->iov_limit > RFI_IOV_MAX || (h->rx_attr->caps & ~RFI_CAPS)))
		return "receive attributes (msg_order FI_ORDER_SAS only, iov limit)";
	if (h->domain_attr) {
		const struct fi_domain_attr *d = h->domain_attr;

		if (d->name && strcmp(d->name, RFI_FABRIC_NAME) != 0)
			return "domain name";
		if (d->control_progress == FI_PROGRESS_AUTO || d->data_progress == FI_PROGRESS_AUTO)
			return "progress (FI_PROGRESS_MANUAL only)";
		if (d->cq_data_size > RFI_CQ_DATA_SIZE)
			return "cq_data_size";
		if (d->caps & ~(uint64_t)(FI_LOCAL_COMM | FI_REMOTE_COMM))
			return "domain capabilities (no shared AV)";
	}
	if (h->fabric_attr && h->fabric_attr->name &&
	    strcmp(h->fabric_attr->name, RFI_FABRIC_NAME) != 0)
		return "fabric name";
	if (h->src_addr) {
		rfi_name nm;

		if (rfi_name_read_src(&nm, h->src_addr, h->src_addrlen) != 0)
			return "source address (not an ri2n name)";
	}
	return NULL;
}

static void *dup_mem(const void *p, size_t n)
{
	void *q = p && n ? malloc(n) : NULL;

	if (q)
		memcpy(q, p, n);
	return q;
}

struct fi_info *rfi_info_new(uint32_t version, const struct fi_info *h)
{
	struct fi_info *fi = fi_allocinfo();
	uint64_t caps = h && h->caps ? h->caps : RFI_CAPS;

	if (!fi)
		return NULL;
	if (!(caps & (FI_MSG | FI_TAGGED)))
		caps |= FI_MSG | FI_TAGGED;
	fi->caps = caps;
	fi->mode = 0;
	fi->addr_format = FI_FORMAT_UNSPEC;
	if (h && h->src_addr) {
		fi->src_addr = dup_mem(h->src_addr, h->src_addrlen);
		fi->src_addrlen = fi->src_addr ? h->src_addrlen : 0;
	}
	if (h && h->dest_addr) {
		fi->dest_addr = dup_mem(h->dest_addr, h->dest_addrlen);
		fi->dest_addrlen = fi->dest_addr ? h->dest_addrlen : 0;
	}
	*fi->tx_attr = (struct fi_tx_attr){
		.caps = caps & (FI_MSG | FI_TAGGED | FI_SEND),
		.op_flags = h && h->tx_attr ? h->tx_attr->op_flags : 0,
		.msg_order = FI_ORDER_SAS, .comp_order = FI_ORDER_NONE,
		.inject_size = rfi_k.inject_size, .size = RFI_QUEUE_SIZE,
		.iov_limit = RFI_IOV_MAX,
	};
	*fi->rx_attr = (struct fi_rx_attr){
		.caps = caps & (FI_MSG | FI_TAGGED | FI_RECV | FI_SOURCE | FI_DIRECTED_RECV),
		.op_flags = h && h->rx_attr ? h->rx_attr->op_flags : 0,
		.msg_order = FI_ORDER_SAS, .comp_order = FI_ORDER_NONE,
		.total_buffered_recv = rfi_k.unexp_max, .size = RFI_QUEUE_SIZE,
		.iov_limit = RFI_IOV_MAX,
	};
	*fi->ep_attr = (struct fi_ep_attr){
		.type = FI_EP_RDM, .protocol = FI_PROTO_UNSPEC, .protocol_version = 1,
		.max_msg_size = RFI_MAX_MSG, .mem_tag_format = RFI_TAG_FORMAT,
		.tx_ctx_cnt = 1, .rx_ctx_cnt = 1,
	};
	*fi->domain_attr = (struct fi_domain_attr){
		.name = strdup(RFI_FABRIC_NAME), .threading = FI_THREAD_SAFE,
		.control_progress = FI_PROGRESS_MANUAL, .data_progress = FI_PROGRESS_MANUAL,
		.resource_mgmt = FI_RM_ENABLED,
		.av_type = h && h->domain_attr ? h->domain_attr->av_type : FI_AV_UNSPEC,
		/* before 1.5 mr_mode was an enum: "scalable" asks nothing of the application */
		.mr_mode = FI_VERSION_LT(version, FI_VERSION(1, 5)) ? FI_MR_SCALABLE : 0,
		.mr_key_size = sizeof(uint64_t), .cq_data_size = RFI_CQ_DATA_SIZE, .cq_cnt = 1024,
		.cntr_cnt = 1024,
		.ep_cnt = 1024, .tx_ctx_cnt = 1024, .rx_ctx_cnt = 1024, .max_ep_tx_ctx = 1,
		.max_ep_rx_ctx = 1, .mr_iov_limit = 1, .mr_cnt = SIZE_MAX,
		.caps = caps & (FI_LOCAL_COMM | FI_REMOTE_COMM),
	};
	fi->fabric_attr->name = strdup(RFI_FABRIC_NAME);
	fi->fabric_attr->prov_version = RFI_VERSION;
	if (!fi->domain_attr->name || !fi->fabric_attr->name) {
		fi_freeinfo(fi);
		return NULL;
	}
	return fi;
}

static int getinfo(uint32_t version, const char *node, const char *service, uint64_t flags,
		   const struct fi_info *hints, struct fi_info **info)
{
	rn_rail_info rails[RN_MAX_RAILS];
	const char *why;
	char err[256];
	int n, rc;

	*info = NULL;
	/* a listed interface waiting for its address is in no name until it has one */
	if ((n = rn_rails_discover_any(rails, RN_MAX_RAILS, rfi_k.rails, err, sizeof(err))) > 0)
		n = rn_rails_with_addr(rails, n);
	if (n <= 0) {
		rn_info("ri2n provider: no rails: %s", n < 0 ? err : "none has an address yet");
		return -FI_ENODATA;
	}
	if (hints && (why = hints_refuse(hints)) != NULL) {
		rn_info("ri2n provider: fi_getinfo: cannot offer the %s asked for (caps 0x%llx)", why,
			(unsigned long long)hints->caps);
		return -FI_ENODATA;
	}
	*info = rfi_info_new(version, hints);
	if (!*info)
		return -FI_ENOMEM;
	rc = rfi_addr_fill(*info, rails, n, node, service, flags);
	if (rc != 0) {
		fi_freeinfo(*info);
		*info = NULL;
	}
	return rc;
}

static void cleanup(void)
{
}

struct fi_provider rfi_prov = {
	.version = RFI_VERSION,
	.fi_version = RFI_API,
	.name = RFI_PROV_NAME,
	.getinfo = getinfo,
	.fabric = fabric_open,
	.cleanup = cleanup,
};

/* ---- knobs ---- */

/*
 * Parameter `name` as the system configuration file sets it, FI_RI2N_<NAME>
 * (rn_conf.h), for one libfabric's environment leaves unset: the
 * environment wins over the file.
 */
static const char *knob_conf(const char *name)
{
	char env[64];
	size_t n = (size_t)snprintf(env, sizeof(env), "FI_RI2N_");

	for (; *name && n + 1 < sizeof(env); name++)
		env[n++] = (char)toupper((unsigned char)*name);
	env[n] = '\0';
	return rn_conf_get(env, NULL);
}

/* An INT row of rfi_knob_list.h: negative or unset, its default; at most hi. */
static void knob_INT(const char *name, const char *doc, const char *shown, int def, int hi,
		     uint64_t scale, uint64_t *out)
{
	int v = def;
	const char *s;

	fi_param_define(&rfi_prov, name, FI_PARAM_INT, "%s (default %s)", doc, shown);
	if (fi_param_get_int(&rfi_prov, name, &v) != 0)
		v = (s = knob_conf(name)) != NULL ? atoi(s) : def; /* the file checked its range */
	if (v < 0)
		v = def;
	*out = (uint64_t)(v > hi ? hi : v) * scale;
}

/* A TEXT row: NULL when unset or empty. */
static void knob_TEXT(const char *name, const char *doc, const char *shown, int def, int hi,
		      uint64_t scale, const char **out)
{
	char *s = NULL;

	(void)def, (void)hi, (void)scale;
	fi_param_define(&rfi_prov, name, FI_PARAM_STRING, "%s (default: %s)", doc, shown);
	*out = fi_param_get_str(&rfi_prov, name, &s) == 0 && s && *s ? s : knob_conf(name);
}

static void knobs_read(void)
{
#define KNOB_READ(name, field, type, def, hi, scale, shown, doc) \
	knob_##type(#name, doc, shown, def, hi, scale, &rfi_k.field);
	RFI_KNOB_LIST(KNOB_READ)
#undef KNOB_READ
	if (!rfi_k.rails)
		rfi_k.rails = rn_proc_text(RN_PROC_RAILS);
}

FI_EXT_INI
{
	rn_log_init();
	knobs_read();
	return &rfi_prov;
}
