/*
 * rfi_eq.c - the event queue.
 *
 * Programs open one on every fabric (fi_pingpong does); an RDM endpoint of
 * ours never reports on it: connections are ri2n's business and their
 * failures surface on the CQ.  What it holds is what the application
 * writes there (fi_eq_write), in order.  With a wait object (FI_WAIT_FD,
 * FI_WAIT_UNSPEC) fi_eq_sread sleeps on an eventfd until an event or its
 * timeout, and FI_GETWAIT hands that fd out; FI_WAIT_YIELD spins with
 * sched_yield, as the application asked.
 */
#include <sched.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/eventfd.h>
#include <time.h>

#include "rfi.h"
#include "rn_sys.h"

#define EQ_MAX_EVENT 4096 /* bytes of one written event */

typedef struct rfi_event {
	struct rfi_event *next;
	uint32_t type;
	uint64_t flags;
	size_t len;
	uint8_t data[];
} rfi_event;

typedef struct rfi_eq {
	struct fid_eq eq;
	pthread_mutex_t lock;
	rfi_event *head, *tail;
	enum fi_wait_obj wait;
	int efd;                    /* readable while events are queued; -1: no wait object */
} rfi_eq;

static uint64_t mono_ns(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * 1000000000u + (uint64_t)ts.tv_nsec;
}

/* Takes (or with FI_PEEK, copies) the first event; lock held. */
static ssize_t take(rfi_eq *q, uint32_t *type, void *buf, size_t len, uint64_t flags)
{
	rfi_event *e = q->head;
	uint64_t v;

	if (!e)
		return -FI_EAGAIN;
	if (len < e->len)
		return -FI_ETOOSMALL;
	if (type)
		*type = e->type;
	if (e->len)
		memcpy(buf, e->data, e->len);
	if (flags & FI_PEEK)
		return (ssize_t)e->len;
	q->head = e->next;
	if (!q->head) {
		q->tail = NULL;
		if (q->efd >= 0)
			(void)rn_sys_read(q->efd, &v, sizeof(v)); /* empty: not readable */
	}
	len = e->len;
	free(e);
	return (ssize_t)len;
}

static ssize_t eq_read(struct fid_eq *f, uint32_t *type, void *buf, size_t len, uint64_t flags)
{
	rfi_eq *q = (rfi_eq *)f;
	ssize_t n;

	pthread_mutex_lock(&q->lock);
	n = take(q, type, buf, len, flags);
	pthread_mutex_unlock(&q->lock);
	return n;
}

static ssize_t eq_readerr(struct fid_eq *f, struct fi_eq_err_entry *buf, uint64_t flags)
{
	(void)f, (void)buf, (void)flags;
	return -FI_EAGAIN; /* nothing of ours ever fails on the EQ */
}

static ssize_t eq_write(struct fid_eq *f, uint32_t type, const void *buf, size_t len,
			uint64_t flags)
{
	rfi_eq *q = (rfi_eq *)f;
	rfi_event *e;
	uint64_t one = 1;

	if (len > EQ_MAX_EVENT || (len && !buf))
		return -FI_EINVAL;
	e = malloc(sizeof(*e) + len);
	if (!e)
		return -FI_ENOMEM;
	*e = (rfi_event){ .type = type, .flags = flags, .len = len };
	if (len)
		memcpy(e->data, buf, len);
	pthread_mutex_lock(&q->lock);
	if (q->tail)
		q->tail->next = e;
	else
		q->head = e;
	q->tail = e;
	if (q->efd >= 0 && q->head == e)
		(void)rn_sys_write(q->efd, &one, sizeof(one));
	pthread_mutex_unlock(&q->lock);
	return (ssize_t)len;
}

static ssize_t eq_sread(struct fid_eq *f, uint32_t *type, void *buf, size_t len, int timeout,
			uint64_t flags)
{
	rfi_eq *q = (rfi_eq *)f;
	uint64_t start = mono_ns(), limit = timeout < 0 ? UINT64_MAX : (uint64_t)timeout * 1000000u;

	if (q->wait == FI_WAIT_NONE)
		return -FI_ENOSYS; /* nothing to wait on */
	for (;;) {
		struct pollfd pf = { .fd = q->efd, .events = POLLIN };
		uint64_t el, w;
		struct timespec ts;
		ssize_t n = eq_read(f, type, buf, len, flags);

		if (n != -FI_EAGAIN)
			return n;
		el = mono_ns() - start;
		if (el >= limit)
			return -FI_EAGAIN;
		w = limit - el;
		ts = (struct timespec){ (time_t)(w / 1000000000u), (long)(w % 1000000000u) };
		if (q->efd < 0)
			sched_yield(); /* FI_WAIT_YIELD: the application chose to spin */
		else
			rn_sys_ppoll(&pf, 1, timeout < 0 ? NULL : &ts);
	}
}

int rfi_eq_trywait(struct fid_eq *f)
{
	rfi_eq *q = (rfi_eq *)f;
	int busy;

	pthread_mutex_lock(&q->lock);
	busy = q->head != NULL;
	pthread_mutex_unlock(&q->lock);
	return busy ? -FI_EAGAIN : 0;
}

static const char *eq_strerror(struct fid_eq *eq, int prov_errno, const void *err_data,
			       char *buf, size_t len)
{
	(void)eq, (void)err_data;
	if (buf && len) {
		snprintf(buf, len, "%s", rn_strerror(-prov_errno));
		return buf;
	}
	return rn_strerror(-prov_errno);
}

static int eq_control(struct fid *f, int cmd, void *arg)
{
	rfi_eq *q = (rfi_eq *)f;

	switch (cmd) {
	case FI_GETWAIT:
		if (q->efd < 0)
			return -FI_ENODATA;
		*(int *)arg = q->efd;
		return 0;
	case FI_GETWAITOBJ:
		*(enum fi_wait_obj *)arg = q->wait;
		return 0;
	default:
		return -FI_ENOSYS;
	}
}

static int eq_close(struct fid *f)
{
	rfi_eq *q = (rfi_eq *)f;

	while (q->head) {
		rfi_event *e = q->head;

		q->head = e->next;
		free(e);
	}
	if (q->efd >= 0)
		rn_sys_close(q->efd);
	pthread_mutex_destroy(&q->lock);
	free(q);
	return 0;
}

static struct fi_ops eq_fi_ops = {
	.size = sizeof(struct fi_ops), .close = eq_close, .bind = rfi_no_bind,
	.control = eq_control, .ops_open = rfi_no_ops_open,
};
static struct fi_ops_eq eq_ops = {
	.size = sizeof(struct fi_ops_eq), .read = eq_read, .readerr = eq_readerr,
	.write = eq_write, .sread = eq_sread, .strerror = eq_strerror,
};

int rfi_eq_open(struct fid_fabric *fab, struct fi_eq_attr *attr, struct fid_eq **out, void *ctx)
{
	enum fi_wait_obj w = attr ? attr->wait_obj : FI_WAIT_NONE;
	rfi_eq *q;

	(void)fab;
	if (w == FI_WAIT_UNSPEC)
		w = FI_WAIT_FD; /* our choice: an fd */
	if (w != FI_WAIT_NONE && w != FI_WAIT_FD && w != FI_WAIT_YIELD)
		return -FI_ENOSYS;
	q = calloc(1, sizeof(*q));
	if (!q)
		return -FI_ENOMEM;
	q->wait = w;
	q->efd = w == FI_WAIT_FD ? rn_sys_eventfd(0, EFD_NONBLOCK | EFD_CLOEXEC) : -1;
	if (w == FI_WAIT_FD && q->efd < 0) {
		free(q);
		return -FI_ENOMEM;
	}
	pthread_mutex_init(&q->lock, NULL);
	q->eq.fid = (struct fid){ .fclass = FI_CLASS_EQ, .context = ctx, .ops = &eq_fi_ops };
	q->eq.ops = &eq_ops;
	*out = &q->eq;
	return 0;
}
