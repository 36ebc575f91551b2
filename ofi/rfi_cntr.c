/*
 * rfi_cntr.c - counters: a count of the operations an endpoint completed
 * (FI_SEND: sends, injects included, whether or not they write a CQ entry;
 * FI_RECV: receives) and of those that failed.  Reading or waiting on one
 * drives the endpoints bound to it (FI_PROGRESS_MANUAL), as a CQ read
 * does; fi_cntr_wait sleeps on the counter's wait object (rfi_wait.c) or,
 * with FI_WAIT_NONE / FI_WAIT_YIELD, yields between looks.
 */
#include <sched.h>
#include <stdlib.h>

#include "rfi.h"

void rfi_cntr_inc(rfi_cntr *c, int failed)
{
	if (failed)
		c->err++;
	else
		c->value++;
	rfi_wait_notify(&c->wait);
}

int rfi_cntr_attach(rfi_cntr *c, rfi_ep *ep)
{
	rfi_ep **eps;

	for (int i = 0; i < c->neps; i++)
		if (c->eps[i] == ep)
			return 0;
	eps = realloc(c->eps, (size_t)(c->neps + 1) * sizeof(*eps));
	if (!eps)
		return -FI_ENOMEM;
	c->eps = eps;
	c->eps[c->neps++] = ep;
	rfi_wait_ep(&c->wait, ep, 1);
	return 0;
}

void rfi_cntr_detach(rfi_cntr *c, rfi_ep *ep)
{
	for (int i = 0; i < c->neps; i++)
		if (c->eps[i] == ep) {
			c->eps[i] = c->eps[--c->neps];
			rfi_wait_ep(&c->wait, ep, 0);
			return;
		}
}

static void progress(rfi_cntr *c)
{
	for (int i = 0; i < c->neps; i++)
		rfi_ep_pass(c->eps[i]);
}

/* Reads value or err after a progress pass. */
static uint64_t look(struct fid_cntr *f, int err)
{
	rfi_cntr *c = (rfi_cntr *)f;
	uint64_t v;

	pthread_mutex_lock(&c->dom->lock);
	progress(c);
	v = err ? c->err : c->value;
	pthread_mutex_unlock(&c->dom->lock);
	return v;
}

static uint64_t cntr_read(struct fid_cntr *f)
{
	return look(f, 0);
}

static uint64_t cntr_readerr(struct fid_cntr *f)
{
	return look(f, 1);
}

/* Adds to (set 0) or sets value or err; a waiter looks again. */
static int change(struct fid_cntr *f, int err, int set, uint64_t v)
{
	rfi_cntr *c = (rfi_cntr *)f;
	uint64_t *at = err ? &c->err : &c->value;

	pthread_mutex_lock(&c->dom->lock);
	*at = set ? v : *at + v;
	rfi_wait_notify(&c->wait);
	pthread_mutex_unlock(&c->dom->lock);
	return 0;
}

static int cntr_add(struct fid_cntr *f, uint64_t v)
{
	return change(f, 0, 0, v);
}

static int cntr_set(struct fid_cntr *f, uint64_t v)
{
	return change(f, 0, 1, v);
}

static int cntr_adderr(struct fid_cntr *f, uint64_t v)
{
	return change(f, 1, 0, v);
}

static int cntr_seterr(struct fid_cntr *f, uint64_t v)
{
	return change(f, 1, 1, v);
}

/* 0 once the count reaches threshold; -FI_EAVAIL if an operation failed meanwhile. */
static int cntr_wait(struct fid_cntr *f, uint64_t threshold, int timeout_ms)
{
	rfi_cntr *c = (rfi_cntr *)f;
	uint64_t start = rfi_mono_ns(),
		 limit = timeout_ms < 0 ? UINT64_MAX : (uint64_t)timeout_ms * 1000000u, err0;
	int rc;

	pthread_mutex_lock(&c->dom->lock);
	err0 = c->err;
	for (;;) {
		uint64_t el;

		progress(c);
		if (c->value >= threshold) {
			rc = 0;
			break;
		}
		if (c->err != err0) {
			rc = -FI_EAVAIL;
			break;
		}
		el = rfi_mono_ns() - start;
		if (el >= limit) {
			rc = -FI_ETIMEDOUT;
			break;
		}
		if (c->wait.efd >= 0) {
			rfi_wait_sleep(&c->wait, c->dom, c->eps, c->neps, limit - el);
		} else {
			pthread_mutex_unlock(&c->dom->lock);
			sched_yield(); /* no wait object: the application chose to spin */
			pthread_mutex_lock(&c->dom->lock);
		}
	}
	pthread_mutex_unlock(&c->dom->lock);
	return rc;
}

static int cntr_control(struct fid *f, int cmd, void *arg)
{
	rfi_cntr *c = (rfi_cntr *)f;
	int rc;

	pthread_mutex_lock(&c->dom->lock);
	rc = rfi_wait_control(&c->wait, cmd, arg, 0);
	pthread_mutex_unlock(&c->dom->lock);
	return rc;
}

static int cntr_close(struct fid *f)
{
	rfi_cntr *c = (rfi_cntr *)f;

	pthread_mutex_lock(&c->dom->lock);
	if (c->neps) {
		pthread_mutex_unlock(&c->dom->lock);
		return -FI_EBUSY;
	}
	c->dom->refs--;
	pthread_mutex_unlock(&c->dom->lock);
	rfi_wait_fini(&c->wait);
	free(c->eps);
	free(c);
	return 0;
}

static struct fi_ops cntr_fi_ops = {
	.size = sizeof(struct fi_ops), .close = cntr_close, .bind = rfi_no_bind,
	.control = cntr_control, .ops_open = rfi_no_ops_open,
};
static struct fi_ops_cntr cntr_ops = {
	.size = sizeof(struct fi_ops_cntr), .read = cntr_read, .readerr = cntr_readerr,
	.add = cntr_add, .set = cntr_set, .wait = cntr_wait, .adderr = cntr_adderr,
	.seterr = cntr_seterr,
};

int rfi_cntr_open(struct fid_domain *d, struct fi_cntr_attr *attr, struct fid_cntr **out,
		  void *ctx)
{
	rfi_domain *dom = (rfi_domain *)d;
	enum fi_wait_obj w = attr ? attr->wait_obj : FI_WAIT_NONE;
	rfi_cntr *c;
	int rc;

	if (attr && (attr->events != FI_CNTR_EVENTS_COMP || attr->flags))
		return -FI_ENOSYS;
	c = calloc(1, sizeof(*c));
	if (!c)
		return -FI_ENOMEM;
	rc = rfi_wait_init(&c->wait, w);
	if (rc) {
		free(c);
		return rc;
	}
	c->dom = dom;
	c->cntr.fid = (struct fid){ .fclass = FI_CLASS_CNTR, .context = ctx, .ops = &cntr_fi_ops };
	c->cntr.ops = &cntr_ops;
	pthread_mutex_lock(&dom->lock);
	dom->refs++;
	pthread_mutex_unlock(&dom->lock);
	*out = &c->cntr;
	return 0;
}
