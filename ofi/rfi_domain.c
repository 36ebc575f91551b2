/*
 * rfi_domain.c - the domain and its memory registration.
 *
 * ri2n copies every byte through its rings, so memory needs no registration:
 * mr_mode is 0 and fi_mr_reg hands back a key and no descriptor, for
 * programs that register anyway.
 */
#include <stdlib.h>
#include <string.h>

#include "rfi.h"

typedef struct rfi_mr {
	struct fid_mr mr;
	rfi_domain *dom;
} rfi_mr;

static int mr_close(struct fid *f)
{
	rfi_mr *m = (rfi_mr *)f;

	pthread_mutex_lock(&m->dom->lock);
	m->dom->refs--;
	pthread_mutex_unlock(&m->dom->lock);
	free(m);
	return 0;
}

static struct fi_ops mr_fi_ops = {
	.size = sizeof(struct fi_ops), .close = mr_close, .bind = rfi_no_bind,
	.control = rfi_no_control, .ops_open = rfi_no_ops_open,
};

static int mr_regattr(struct fid *f, const struct fi_mr_attr *attr, uint64_t flags,
		      struct fid_mr **out)
{
	rfi_domain *d = (rfi_domain *)f;
	rfi_mr *m;
	static uint64_t next_key;

	(void)flags;
	m = calloc(1, sizeof(*m));
	if (!m)
		return -FI_ENOMEM;
	m->dom = d;
	m->mr.fid = (struct fid){ .fclass = FI_CLASS_MR, .context = attr->context,
				  .ops = &mr_fi_ops };
	pthread_mutex_lock(&d->lock);
	m->mr.key = attr->requested_key ? attr->requested_key : ++next_key;
	d->refs++;
	pthread_mutex_unlock(&d->lock);
	m->mr.mem_desc = NULL;
	*out = &m->mr;
	return 0;
}

static int mr_regv(struct fid *f, const struct iovec *iov, size_t count, uint64_t access,
		   uint64_t offset, uint64_t key, uint64_t flags, struct fid_mr **mr, void *ctx)
{
	struct fi_mr_attr a = { .mr_iov = iov, .iov_count = count, .access = access,
				.offset = offset, .requested_key = key, .context = ctx };

	return mr_regattr(f, &a, flags, mr);
}

static int mr_reg(struct fid *f, const void *buf, size_t len, uint64_t access, uint64_t offset,
		  uint64_t key, uint64_t flags, struct fid_mr **mr, void *ctx)
{
	struct iovec v = { (void *)buf, len };

	return mr_regv(f, &v, 1, access, offset, key, flags, mr, ctx);
}

static struct fi_ops_mr mr_ops = {
	.size = sizeof(struct fi_ops_mr), .reg = mr_reg, .regv = mr_regv, .regattr = mr_regattr,
};

/* ---- the domain ---- */

static int domain_close(struct fid *f)
{
	rfi_domain *d = (rfi_domain *)f;

	if (d->refs)
		return -FI_EBUSY;
	pthread_mutex_destroy(&d->lock);
	free(d);
	return 0;
}

static int dom_no_sep(struct fid_domain *d, struct fi_info *i, struct fid_ep **e, void *c)
{
	(void)d, (void)i, (void)e, (void)c;
	return -FI_ENOSYS;
}

static int dom_no_poll(struct fid_domain *d, struct fi_poll_attr *a, struct fid_poll **p)
{
	(void)d, (void)a, (void)p;
	return -FI_ENOSYS;
}

static int dom_no_stx(struct fid_domain *d, struct fi_tx_attr *a, struct fid_stx **s, void *c)
{
	(void)d, (void)a, (void)s, (void)c;
	return -FI_ENOSYS;
}

static int dom_no_srx(struct fid_domain *d, struct fi_rx_attr *a, struct fid_ep **s, void *c)
{
	(void)d, (void)a, (void)s, (void)c;
	return -FI_ENOSYS;
}

static int dom_no_atomic(struct fid_domain *d, enum fi_datatype t, enum fi_op op,
			 struct fi_atomic_attr *a, uint64_t flags)
{
	(void)d, (void)t, (void)op, (void)a, (void)flags;
	return -FI_ENOSYS;
}

static int dom_no_coll(struct fid_domain *d, enum fi_collective_op op,
		       struct fi_collective_attr *a, uint64_t flags)
{
	(void)d, (void)op, (void)a, (void)flags;
	return -FI_ENOSYS;
}

static int dom_endpoint2(struct fid_domain *d, struct fi_info *info, struct fid_ep **ep,
			 uint64_t flags, void *ctx)
{
	return flags ? -FI_EINVAL : rfi_ep_open(d, info, ep, ctx);
}

static struct fi_ops domain_fi_ops = {
	.size = sizeof(struct fi_ops), .close = domain_close, .bind = rfi_no_bind,
	.control = rfi_no_control, .ops_open = rfi_no_ops_open,
};
static struct fi_ops_domain domain_ops = {
	.size = sizeof(struct fi_ops_domain), .av_open = rfi_av_open, .cq_open = rfi_cq_open,
	.endpoint = rfi_ep_open, .scalable_ep = dom_no_sep, .cntr_open = rfi_cntr_open,
	.poll_open = dom_no_poll, .stx_ctx = dom_no_stx, .srx_ctx = dom_no_srx,
	.query_atomic = dom_no_atomic, .query_collective = dom_no_coll,
	.endpoint2 = dom_endpoint2,
};

int rfi_domain_open(struct fid_fabric *f, struct fi_info *info, struct fid_domain **out,
		    void *ctx)
{
	rfi_domain *d;

	if (info && info->domain_attr && info->domain_attr->name &&
	    strcmp(info->domain_attr->name, RFI_FABRIC_NAME) != 0)
		return -FI_EINVAL;
	d = calloc(1, sizeof(*d));
	if (!d)
		return -FI_ENOMEM;
	pthread_mutex_init(&d->lock, NULL);
	d->fab = (rfi_fabric *)f;
	d->api = f->api_version;
	d->d.fid = (struct fid){ .fclass = FI_CLASS_DOMAIN, .context = ctx, .ops = &domain_fi_ops };
	d->d.ops = &domain_ops;
	d->d.mr = &mr_ops;
	*out = &d->d;
	return 0;
}
