/*
 * rfi_cq.c - the completion queue.
 *
 * A ring of tagged entries (every format is a prefix of fi_cq_tagged_entry)
 * with each one's source address, and a list of error entries.  The ring
 * grows rather than drop a completion.  Reading it drives the endpoints
 * bound to it (FI_PROGRESS_MANUAL): that is when ri2n reads its rails.
 *
 * Wait objects (FI_WAIT_FD, FI_WAIT_UNSPEC: rfi_wait.c): fi_cq_sread
 * sleeps until a completion, fi_cq_signal, a datagram or a timer;
 * FI_GETWAIT hands out an fd for poll/epoll after fi_trywait.
 */
#include <sched.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "rfi.h"

static size_t entry_size(enum fi_cq_format f)
{
	switch (f) {
	case FI_CQ_FORMAT_CONTEXT:
		return sizeof(struct fi_cq_entry);
	case FI_CQ_FORMAT_MSG:
		return sizeof(struct fi_cq_msg_entry);
	case FI_CQ_FORMAT_DATA:
		return sizeof(struct fi_cq_data_entry);
	default:
		return sizeof(struct fi_cq_tagged_entry);
	}
}

static int grow(rfi_cq *cq)
{
	size_t cap = cq->cap * 2;
	struct fi_cq_tagged_entry *ring = malloc(cap * sizeof(*ring));
	fi_addr_t *src = malloc(cap * sizeof(*src));

	if (!ring || !src) {
		free(ring);
		free(src);
		return -FI_ENOMEM;
	}
	for (size_t i = 0; i < cq->count; i++) {
		ring[i] = cq->ring[(cq->head + i) % cq->cap];
		src[i] = cq->src[(cq->head + i) % cq->cap];
	}
	free(cq->ring);
	free(cq->src);
	cq->ring = ring;
	cq->src = src;
	cq->cap = cap;
	cq->head = 0;
	return 0;
}

int rfi_cq_push(rfi_cq *cq, const struct fi_cq_tagged_entry *e, fi_addr_t src)
{
	size_t at;

	if (cq->count == cq->cap && grow(cq) != 0) {
		cq->overruns++;
		return -FI_EAGAIN;
	}
	at = (cq->head + cq->count) % cq->cap;
	cq->ring[at] = *e;
	cq->src[at] = src;
	cq->count++;
	rfi_wait_notify(&cq->wait);
	return 0;
}

void rfi_cq_push_err(rfi_cq *cq, const struct fi_cq_tagged_entry *e, int err, size_t olen,
		     int prov_errno)
{
	rfi_cqerr *x = calloc(1, sizeof(*x));

	if (!x) {
		cq->overruns++;
		return;
	}
	x->e = (struct fi_cq_err_entry){ .op_context = e->op_context, .flags = e->flags,
					 .len = e->len, .buf = e->buf, .tag = e->tag,
					 .olen = olen, .err = err, .prov_errno = prov_errno };
	if (cq->err_tail)
		cq->err_tail->next = x;
	else
		cq->err = x;
	cq->err_tail = x;
	rfi_wait_notify(&cq->wait);
}

ssize_t rfi_cq_take(rfi_cq *cq, void *buf, size_t count, fi_addr_t *src)
{
	size_t sz = entry_size(cq->format), n = 0;

	while (n < count && cq->count) {
		memcpy((uint8_t *)buf + n * sz, &cq->ring[cq->head], sz);
		if (src)
			src[n] = cq->src[cq->head];
		cq->head = (cq->head + 1) % cq->cap;
		cq->count--;
		n++;
	}
	if (n)
		return (ssize_t)n;
	return cq->err ? -FI_EAVAIL : -FI_EAGAIN;
}

int rfi_cq_attach(rfi_cq *cq, rfi_ep *ep)
{
	rfi_ep **eps;

	for (int i = 0; i < cq->neps; i++)
		if (cq->eps[i] == ep)
			return 0;
	eps = realloc(cq->eps, (size_t)(cq->neps + 1) * sizeof(*eps));
	if (!eps)
		return -FI_ENOMEM;
	cq->eps = eps;
	cq->eps[cq->neps++] = ep;
	rfi_wait_ep(&cq->wait, ep, 1);
	return 0;
}

void rfi_cq_detach(rfi_cq *cq, rfi_ep *ep)
{
	for (int i = 0; i < cq->neps; i++)
		if (cq->eps[i] == ep) {
			cq->eps[i] = cq->eps[--cq->neps];
			rfi_wait_ep(&cq->wait, ep, 0);
			return;
		}
}

static void progress(rfi_cq *cq)
{
	for (int i = 0; i < cq->neps; i++)
		rfi_ep_pass(cq->eps[i]);
}

static ssize_t cq_readfrom(struct fid_cq *f, void *buf, size_t count, fi_addr_t *src)
{
	rfi_cq *cq = (rfi_cq *)f;
	ssize_t n;

	pthread_mutex_lock(&cq->dom->lock);
	progress(cq);
	n = rfi_cq_take(cq, buf, count, src);
	pthread_mutex_unlock(&cq->dom->lock);
	return n;
}

static ssize_t cq_read(struct fid_cq *f, void *buf, size_t count)
{
	return cq_readfrom(f, buf, count, NULL);
}

static ssize_t cq_readerr(struct fid_cq *f, struct fi_cq_err_entry *buf, uint64_t flags)
{
	rfi_cq *cq = (rfi_cq *)f;
	rfi_cqerr *x;
	size_t keep;

	(void)flags;
	pthread_mutex_lock(&cq->dom->lock);
	x = cq->err;
	if (x) {
		cq->err = x->next;
		if (!cq->err)
			cq->err_tail = NULL;
	}
	pthread_mutex_unlock(&cq->dom->lock);
	if (!x)
		return -FI_EAGAIN;
	/* from 1.5 the caller may offer a buffer for provider data: we have none */
	keep = buf->err_data_size;
	*buf = x->e;
	if (!FI_VERSION_LT(cq->dom->api, FI_VERSION(1, 5)))
		buf->err_data_size = 0;
	(void)keep;
	free(x);
	return 1;
}

/* ---- waiting ---- */

/* FI_WAIT_FD: sleeps between looks; -FI_EAGAIN at the timeout or a signal. */
static ssize_t sread_wait(rfi_cq *cq, void *buf, size_t count, fi_addr_t *src, int timeout_ms)
{
	uint64_t start = rfi_mono_ns(),
		 limit = timeout_ms < 0 ? UINT64_MAX : (uint64_t)timeout_ms * 1000000u;
	ssize_t n;

	pthread_mutex_lock(&cq->dom->lock);
	for (;;) {
		uint64_t el;

		progress(cq);
		n = rfi_cq_take(cq, buf, count, src);
		if (n != -FI_EAGAIN)
			break;
		if (cq->wait.wakeup) {
			cq->wait.wakeup = 0;
			break;
		}
		el = rfi_mono_ns() - start;
		if (el >= limit)
			break;
		rfi_wait_sleep(&cq->wait, cq->dom, cq->eps, cq->neps, limit - el);
	}
	pthread_mutex_unlock(&cq->dom->lock);
	return n;
}

int rfi_trywait(struct fid_fabric *f, struct fid **fids, int count)
{
	(void)f;
	for (int i = 0; i < count; i++) {
		rfi_cq *cq = (rfi_cq *)fids[i];
		int busy;

		if (fids[i]->fclass == FI_CLASS_CNTR) {
			rfi_cntr *c = (rfi_cntr *)fids[i];

			if (c->wait.efd < 0)
				return -FI_EINVAL;
			pthread_mutex_lock(&c->dom->lock);
			rfi_wait_drain(&c->wait); /* readable again at the next completion */
			pthread_mutex_unlock(&c->dom->lock);
			continue;
		}
		if (fids[i]->fclass == FI_CLASS_EQ) {
			if (rfi_eq_trywait((struct fid_eq *)fids[i]) != 0)
				return -FI_EAGAIN;
			continue;
		}
		if (fids[i]->fclass != FI_CLASS_CQ || cq->wait.efd < 0)
			return -FI_EINVAL;
		pthread_mutex_lock(&cq->dom->lock);
		progress(cq);
		busy = cq->count || cq->err || cq->wait.wakeup;
		if (!busy)
			rfi_wait_drain(&cq->wait); /* readable again at the next completion */
		pthread_mutex_unlock(&cq->dom->lock);
		if (busy)
			return -FI_EAGAIN;
	}
	return 0;
}

static ssize_t cq_sreadfrom(struct fid_cq *f, void *buf, size_t count, fi_addr_t *src,
			    const void *cond, int timeout_ms)
{
	uint64_t end = rfi_clock() + (uint64_t)(timeout_ms < 0 ? 0 : timeout_ms) * 1000000u;

	(void)cond;
	if (((rfi_cq *)f)->wait.efd >= 0)
		return sread_wait((rfi_cq *)f, buf, count, src, timeout_ms);
	/* FI_WAIT_NONE, FI_WAIT_YIELD: no wait object, the caller asked to spin */
	for (;;) {
		ssize_t n = cq_readfrom(f, buf, count, src);

		if (n != -FI_EAGAIN)
			return n;
		if (timeout_ms >= 0 && rfi_clock() >= end)
			return -FI_EAGAIN;
		sched_yield();
	}
}

static ssize_t cq_sread(struct fid_cq *f, void *buf, size_t count, const void *cond,
			int timeout_ms)
{
	return cq_sreadfrom(f, buf, count, NULL, cond, timeout_ms);
}

static int cq_signal(struct fid_cq *f)
{
	rfi_cq *cq = (rfi_cq *)f;
	int rc;

	pthread_mutex_lock(&cq->dom->lock);
	rc = rfi_wait_signal(&cq->wait);
	pthread_mutex_unlock(&cq->dom->lock);
	return rc;
}

static int cq_control(struct fid *f, int cmd, void *arg)
{
	rfi_cq *cq = (rfi_cq *)f;
	int rc;

	pthread_mutex_lock(&cq->dom->lock);
	rc = rfi_wait_control(&cq->wait, cmd, arg, cq->count || cq->err);
	pthread_mutex_unlock(&cq->dom->lock);
	return rc;
}

static const char *cq_strerror(struct fid_cq *f, int prov_errno, const void *err_data, char *buf,
			       size_t len)
{
	const char *s = prov_errno ? rn_strerror(-prov_errno) : "no ri2n error";

	(void)f, (void)err_data;
	if (buf && len) {
		snprintf(buf, len, "ri2n: %s", s);
		return buf;
	}
	return s;
}

static int cq_close(struct fid *f)
{
	rfi_cq *cq = (rfi_cq *)f;

	if (cq->neps)
		return -FI_EBUSY;
	while (cq->err) {
		rfi_cqerr *x = cq->err;

		cq->err = x->next;
		free(x);
	}
	pthread_mutex_lock(&cq->dom->lock);
	cq->dom->refs--;
	pthread_mutex_unlock(&cq->dom->lock);
	free(cq->ring);
	free(cq->src);
	free(cq->eps);
	rfi_wait_fini(&cq->wait);
	free(cq);
	return 0;
}

static struct fi_ops cq_fi_ops = {
	.size = sizeof(struct fi_ops), .close = cq_close, .bind = rfi_no_bind,
	.control = cq_control, .ops_open = rfi_no_ops_open,
};
static struct fi_ops_cq cq_ops = {
	.size = sizeof(struct fi_ops_cq), .read = cq_read, .readfrom = cq_readfrom,
	.readerr = cq_readerr, .sread = cq_sread, .sreadfrom = cq_sreadfrom,
	.signal = cq_signal, .strerror = cq_strerror,
};

int rfi_cq_open(struct fid_domain *d, struct fi_cq_attr *attr, struct fid_cq **out, void *ctx)
{
	rfi_domain *dom = (rfi_domain *)d;
	rfi_cq *cq;

	if (attr->wait_obj != FI_WAIT_NONE && attr->wait_obj != FI_WAIT_UNSPEC &&
	    attr->wait_obj != FI_WAIT_YIELD && attr->wait_obj != FI_WAIT_FD)
		return -FI_ENOSYS;
	if (attr->flags & FI_AFFINITY)
		return -FI_ENOSYS;
	cq = calloc(1, sizeof(*cq));
	if (!cq)
		return -FI_ENOMEM;
	cq->dom = dom;
	cq->format = attr->format == FI_CQ_FORMAT_UNSPEC ? FI_CQ_FORMAT_CONTEXT : attr->format;
	if (cq->format > FI_CQ_FORMAT_TAGGED) {
		free(cq);
		return -FI_ENOSYS;
	}
	cq->cap = attr->size ? attr->size : RFI_CQ_SIZE;
	cq->ring = malloc(cq->cap * sizeof(*cq->ring));
	cq->src = malloc(cq->cap * sizeof(*cq->src));
	if (!cq->ring || !cq->src || rfi_wait_init(&cq->wait, attr->wait_obj) != 0) {
		free(cq->ring);
		free(cq->src);
		free(cq);
		return -FI_ENOMEM;
	}
	cq->cq.fid = (struct fid){ .fclass = FI_CLASS_CQ, .context = ctx, .ops = &cq_fi_ops };
	cq->cq.ops = &cq_ops;
	pthread_mutex_lock(&dom->lock);
	dom->refs++;
	pthread_mutex_unlock(&dom->lock);
	*out = &cq->cq;
	return 0;
}
