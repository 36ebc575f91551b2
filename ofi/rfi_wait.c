/*
 * rfi_wait.c - the wait object a CQ or a counter carries (FI_WAIT_FD;
 * FI_WAIT_UNSPEC is one): an eventfd written when a completion comes while
 * someone waits (a sleeping fi_cq_sread / fi_cntr_wait, or the fd that
 * FI_GETWAIT handed out) and by fi_cq_signal; and an epoll set of it and
 * the bound endpoints' rail sockets, which FI_GETWAIT hands out for the
 * application's poll/epoll after fi_trywait.
 *
 * A sleeper waits in ppoll on the eventfd and the rail sockets (a datagram
 * is progress to make: manual progress means the waiter runs it), at most
 * until the first of their connections' timers, then runs the pass again.
 * Every call but rfi_wait_init/fini with the domain lock held.
 */
#include <stdlib.h>
#include <sys/eventfd.h>
#include <time.h>

#include "rfi.h"
#include "rn_sys.h"

#define SLICE_NS UINT64_C(100000000) /* 100 ms: provider timers not in the core's expiry */
#define SLEEP_EPS 8                  /* endpoints whose rails one sleep polls */

uint64_t rfi_mono_ns(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * 1000000000u + (uint64_t)ts.tv_nsec;
}

int rfi_wait_init(rfi_wait *w, enum fi_wait_obj obj)
{
	struct epoll_event ev = { .events = EPOLLIN };

	*w = (rfi_wait){ .obj = obj == FI_WAIT_UNSPEC ? FI_WAIT_FD : obj, .efd = -1, .pfd = -1 };
	if (w->obj == FI_WAIT_NONE || w->obj == FI_WAIT_YIELD)
		return 0;
	if (w->obj != FI_WAIT_FD)
		return -FI_ENOSYS;
	w->efd = rn_sys_eventfd(0, EFD_NONBLOCK | EFD_CLOEXEC);
	w->pfd = rn_sys_epoll_create1(EPOLL_CLOEXEC);
	ev.data.fd = w->efd;
	if (w->efd < 0 || w->pfd < 0 || rn_sys_epoll_ctl(w->pfd, EPOLL_CTL_ADD, w->efd, &ev)) {
		rfi_wait_fini(w);
		return -FI_ENOMEM;
	}
	return 0;
}

void rfi_wait_fini(rfi_wait *w)
{
	if (w->pfd >= 0)
		rn_sys_close(w->pfd);
	if (w->efd >= 0)
		rn_sys_close(w->efd);
	w->efd = w->pfd = -1;
}

void rfi_wait_ep(rfi_wait *w, rfi_ep *ep, int add)
{
	for (int k = 0; w->pfd >= 0 && k < ep->io.n; k++) {
		struct epoll_event ev = { .events = EPOLLIN, .data.fd = ep->io.s[k].fd };

		rn_sys_epoll_ctl(w->pfd, add ? EPOLL_CTL_ADD : EPOLL_CTL_DEL, ep->io.s[k].fd, &ev);
	}
}

static void arm(rfi_wait *w)
{
	uint64_t one = 1;

	if (!w->armed && rn_sys_write(w->efd, &one, sizeof(one)) == (ssize_t)sizeof(one))
		w->armed = 1;
}

void rfi_wait_notify(rfi_wait *w)
{
	if (w->efd >= 0 && (w->sleepers || w->given))
		arm(w);
}

int rfi_wait_signal(rfi_wait *w)
{
	if (w->efd < 0)
		return -FI_ENOSYS;
	w->wakeup = 1;
	arm(w);
	return 0;
}

void rfi_wait_drain(rfi_wait *w)
{
	uint64_t v;

	if (w->armed)
		(void)rn_sys_read(w->efd, &v, sizeof(v));
	w->armed = 0;
}

/* efd and the endpoints' rails into pf; how long until their first connection timer, ns. */
static nfds_t poll_set(const rfi_wait *w, rfi_ep **eps, int neps, struct pollfd *pf,
		       uint64_t *wait_ns)
{
	uint64_t now = rfi_clock(), first = UINT64_MAX;
	nfds_t n = 0;

	pf[n++] = (struct pollfd){ .fd = w->efd, .events = POLLIN };
	for (int i = 0; i < neps && i < SLEEP_EPS; i++) {
		for (int k = 0; k < eps[i]->io.n; k++)
			pf[n++] = (struct pollfd){ .fd = eps[i]->io.s[k].fd, .events = POLLIN };
		for (rfi_link *l = rfi_links(eps[i]); l; l = rfi_link_next(l))
			if (!l->h.dead && l->h.expiry_ns < first)
				first = l->h.expiry_ns;
	}
	*wait_ns = first <= now ? 0 : first - now;
	return n;
}

void rfi_wait_sleep(rfi_wait *w, rfi_domain *dom, rfi_ep **eps, int neps, uint64_t left_ns)
{
	struct pollfd pf[1 + SLEEP_EPS * RN_MAX_RAILS];
	struct timespec ts;
	uint64_t wait;
	nfds_t n;

	rfi_wait_drain(w);
	n = poll_set(w, eps, neps, pf, &wait);
	wait = wait < left_ns ? wait : left_ns;
	wait = wait < SLICE_NS ? wait : SLICE_NS;
	ts = (struct timespec){ (time_t)(wait / 1000000000u), (long)(wait % 1000000000u) };
	w->sleepers++;
	pthread_mutex_unlock(&dom->lock);
	rn_sys_ppoll(pf, n, &ts);
	pthread_mutex_lock(&dom->lock);
	w->sleepers--;
}

int rfi_wait_control(rfi_wait *w, int cmd, void *arg, int ready)
{
	switch (cmd) {
	case FI_GETWAIT:
		if (w->pfd < 0)
			return -FI_ENODATA;
		w->given = 1;
		if (ready)
			arm(w);
		*(int *)arg = w->pfd;
		return 0;
	case FI_GETWAITOBJ:
		*(enum fi_wait_obj *)arg = w->obj;
		return 0;
	default:
		return -FI_ENOSYS;
	}
}
