/*
 * rfi_cq.c - the completion queue.
 *
 * A ring of tagged entries (every format is a prefix of fi_cq_tagged_entry)
 * with each one's source address, and a list of error entries.  The ring
 * grows rather than drop a completion.  Reading it drives the endpoints
 * bound to it (FI_PROGRESS_MANUAL): that is when ri2n reads its rails.
 *
 * Wait objects (FI_WAIT_FD, FI_WAIT_UNSPEC): an eventfd written when a
 * completion comes while someone waits (fi_cq_sread, or the fd FI_GETWAIT
 * handed out) and by fi_cq_signal.  fi_cq_sread sleeps in ppoll on it and
 * on the bound endpoints' rail sockets (a datagram is progress to make),
 * at most until the first of their connections' timers.  The FI_GETWAIT fd
 * is an epoll set of the same, for the application's poll/epoll after
 * fi_trywait.
 */
#include <sched.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/eventfd.h>
#include <time.h>

#include "rfi.h"
#include "rn_sys.h"

#define SREAD_SLICE_NS UINT64_C(100000000) /* 100 ms: provider timers not in the core's expiry */
#define SREAD_EPS 8                         /* endpoints whose rails one sread polls */

static void notify(rfi_cq *cq);

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
	notify(cq);
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
	notify(cq);
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
	for (int k = 0; cq->pfd >= 0 && k < ep->io.n; k++) {
		struct epoll_event ev = { .events = EPOLLIN, .data.fd = ep->io.s[k].fd };

		rn_sys_epoll_ctl(cq->pfd, EPOLL_CTL_ADD, ep->io.s[k].fd, &ev);
	}
	return 0;
}

void rfi_cq_detach(rfi_cq *cq, rfi_ep *ep)
{
	for (int i = 0; i < cq->neps; i++)
		if (cq->eps[i] == ep) {
			cq->eps[i] = cq->eps[--cq->neps];
			for (int k = 0; cq->pfd >= 0 && k < ep->io.n; k++)
				rn_sys_epoll_ctl(cq->pfd, EPOLL_CTL_DEL, ep->io.s[k].fd, NULL);
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

/* The application's time (fi_cq_sread's timeout), whatever clock the core is given. */
static uint64_t mono_ns(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * 1000000000u + (uint64_t)ts.tv_nsec;
}

/* A completion came: wake whoever waits on the CQ (domain lock held). */
static void notify(rfi_cq *cq)
{
	uint64_t one = 1;

	if (cq->efd < 0 || cq->armed || (!cq->sleepers && !cq->given))
		return;
	if (rn_sys_write(cq->efd, &one, sizeof(one)) == (ssize_t)sizeof(one))
		cq->armed = 1;
}

static void drain(rfi_cq *cq)
{
	uint64_t v;

	if (cq->armed)
		(void)rn_sys_read(cq->efd, &v, sizeof(v));
	cq->armed = 0;
}

/* efd and the endpoints' rails into pf; how long until their first connection timer, ns. */
static nfds_t poll_set(rfi_cq *cq, struct pollfd *pf, uint64_t *wait_ns)
{
	uint64_t now = rfi_clock(), first = UINT64_MAX;
	nfds_t n = 0;

	pf[n++] = (struct pollfd){ .fd = cq->efd, .events = POLLIN };
	for (int i = 0; i < cq->neps && i < SREAD_EPS; i++) {
		rfi_ep *ep = cq->eps[i];

		for (int k = 0; k < ep->io.n; k++)
			pf[n++] = (struct pollfd){ .fd = ep->io.s[k].fd, .events = POLLIN };
		for (rfi_link *l = ep->links; l; l = l->next)
			if (!l->dead && l->expiry_ns < first)
				first = l->expiry_ns;
	}
	*wait_ns = first <= now ? 0 : first - now;
	return n;
}

/* Sleeps in ppoll until a completion, fi_cq_signal, a datagram, a timer or `left` ns. */
static void sleep_once(rfi_cq *cq, uint64_t left)
{
	struct pollfd pf[1 + SREAD_EPS * RN_MAX_RAILS];
	uint64_t wait;
	nfds_t n;
	struct timespec ts;

	drain(cq);
	n = poll_set(cq, pf, &wait);
	wait = wait < left ? wait : left;
	wait = wait < SREAD_SLICE_NS ? wait : SREAD_SLICE_NS;
	ts = (struct timespec){ (time_t)(wait / 1000000000u), (long)(wait % 1000000000u) };
	cq->sleepers++;
	pthread_mutex_unlock(&cq->dom->lock);
	rn_sys_ppoll(pf, n, &ts);
	pthread_mutex_lock(&cq->dom->lock);
	cq->sleepers--;
}

/* FI_WAIT_FD / FI_WAIT_UNSPEC: sleeps between looks; -FI_EAGAIN at the timeout or a signal. */
static ssize_t sread_wait(rfi_cq *cq, void *buf, size_t count, fi_addr_t *src, int timeout_ms)
{
	uint64_t start = mono_ns(),
		 limit = timeout_ms < 0 ? UINT64_MAX : (uint64_t)timeout_ms * 1000000u;
	ssize_t n;

	pthread_mutex_lock(&cq->dom->lock);
	for (;;) {
		uint64_t el;

		progress(cq);
		n = rfi_cq_take(cq, buf, count, src);
		if (n != -FI_EAGAIN)
			break;
		if (cq->wakeup) {
			cq->wakeup = 0;
			break;
		}
		el = mono_ns() - start;
		if (el >= limit)
			break;
		sleep_once(cq, limit - el);
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

		if (fids[i]->fclass == FI_CLASS_EQ) {
			if (rfi_eq_trywait((struct fid_eq *)fids[i]) != 0)
				return -FI_EAGAIN;
			continue;
		}
		if (fids[i]->fclass != FI_CLASS_CQ || cq->efd < 0)
			return -FI_EINVAL;
		pthread_mutex_lock(&cq->dom->lock);
		progress(cq);
		busy = cq->count || cq->err || cq->wakeup;
		if (!busy)
			drain(cq); /* readable again at the next completion */
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
	if (((rfi_cq *)f)->efd >= 0)
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
	uint64_t one = 1;

	if (cq->efd < 0)
		return -FI_ENOSYS;
	pthread_mutex_lock(&cq->dom->lock);
	cq->wakeup = 1;
	if (!cq->armed && rn_sys_write(cq->efd, &one, sizeof(one)) == (ssize_t)sizeof(one))
		cq->armed = 1;
	pthread_mutex_unlock(&cq->dom->lock);
	return 0;
}

static int cq_control(struct fid *f, int cmd, void *arg)
{
	rfi_cq *cq = (rfi_cq *)f;

	switch (cmd) {
	case FI_GETWAIT:
		if (cq->pfd < 0)
			return -FI_ENODATA;
		pthread_mutex_lock(&cq->dom->lock);
		cq->given = 1;
		if (cq->count || cq->err)
			notify(cq);
		pthread_mutex_unlock(&cq->dom->lock);
		*(int *)arg = cq->pfd;
		return 0;
	case FI_GETWAITOBJ:
		*(enum fi_wait_obj *)arg = cq->wait;
		return 0;
	default:
		return -FI_ENOSYS;
	}
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
	if (cq->pfd >= 0)
		rn_sys_close(cq->pfd);
	if (cq->efd >= 0)
		rn_sys_close(cq->efd);
	free(cq);
	return 0;
}

/* The eventfd, and for FI_WAIT_FD the epoll set handed out; 0 or -FI_ENOMEM. */
static int wait_open(rfi_cq *cq, enum fi_wait_obj w)
{
	struct epoll_event ev = { .events = EPOLLIN };

	cq->efd = cq->pfd = -1;
	cq->wait = w == FI_WAIT_UNSPEC ? FI_WAIT_FD : w; /* our choice: an fd */
	if (cq->wait != FI_WAIT_FD)
		return 0;
	cq->efd = rn_sys_eventfd(0, EFD_NONBLOCK | EFD_CLOEXEC);
	if (cq->efd < 0)
		return -FI_ENOMEM;
	cq->pfd = rn_sys_epoll_create1(EPOLL_CLOEXEC);
	ev.data.fd = cq->efd;
	if (cq->pfd < 0 || rn_sys_epoll_ctl(cq->pfd, EPOLL_CTL_ADD, cq->efd, &ev) != 0) {
		if (cq->pfd >= 0)
			rn_sys_close(cq->pfd);
		rn_sys_close(cq->efd);
		return -FI_ENOMEM;
	}
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
	if (!cq->ring || !cq->src || wait_open(cq, attr->wait_obj) != 0) {
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
