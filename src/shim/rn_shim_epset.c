/*
 * rn_shim_epset.c - the shim's records of the program's epoll sets: each
 * set's private set (rn_shim_poll.c says why), the rail sockets and still
 * connecting ri2n descriptors in it, and the ri2n listeners registered
 * with EPOLLEXCLUSIVE.
 *
 * A prefork server's workers (nginx) each register the listener they
 * inherited with EPOLLEXCLUSIVE, so that a connection wakes one of them.
 * A wait on the private set, around the program's set nested in it, loses
 * that: the kernel wakes an exclusive entry of a set nobody waits on
 * directly as if it were not exclusive, and the nested sets then wake every
 * worker's private set (one accepts, the others find nothing: on 2 cores,
 * a connection per request ran at 0.85 of one worker's rate).  So such a
 * listener goes into the private set, exclusive there, and not into the
 * program's: the process waiting on its private set is the one woken, and
 * its wait reports the listener as the program registered it.
 */
#define _GNU_SOURCE
#include <errno.h>
#include <pthread.h>
#include <stdlib.h>
#include <string.h>
#include <sys/epoll.h>

#include "rn_shim.h"
#include "rn_shim_epset.h"
#include "rn_sys.h"

static struct {
	pthread_mutex_t mu;
	ep_set **set; /* by epoll descriptor number */
	int cap;
	uint64_t next_id;
	int live;     /* sets alive (atomic: read without the lock) */
} g_ep = { .mu = PTHREAD_MUTEX_INITIALIZER };

static int g_nx; /* (atomic) exclusive registrations in every set */

/* Under g_ep.mu: number epfd no longer names its set; the last number frees it. */
static void ep_unlink(int epfd)
{
	ep_set *e = epfd >= 0 && epfd < g_ep.cap ? g_ep.set[epfd] : NULL;

	if (!e)
		return;
	g_ep.set[epfd] = NULL;
	if (--e->refs > 0)
		return;
	__atomic_sub_fetch(&g_ep.live, 1, __ATOMIC_RELAXED);
	__atomic_sub_fetch(&g_nx, e->nx, __ATOMIC_RELAXED);
	if (e->priv >= 0)
		rn_sys_close(e->priv);
	free(e);
}

static void ep_prepare(void) { pthread_mutex_lock(&g_ep.mu); }
static void ep_parent(void) { pthread_mutex_unlock(&g_ep.mu); }

/*
 * In a forked child: the private sets are the parent's (shared open files,
 * the parent's rail sockets): the child closes its copies and starts afresh.
 */
static void ep_child(void)
{
	/* the forking thread took the lock in ep_prepare: it is that thread here too */
	for (int i = 0; i < g_ep.cap; i++) {
		ep_set *e = g_ep.set[i];

		/*
		 * A set shared with the parent: its exclusive listeners go into
		 * the program's set itself, once (the child has no private set;
		 * the parent then sees them twice, reported once: ep_wait).
		 */
		for (int k = 0; e && k < e->nx; k++) {
			struct epoll_event ev = { .events = e->x[k].events, .data.u64 = e->x[k].data };

			rn_sys_epoll_ctl(i, EPOLL_CTL_ADD, e->x[k].fd, &ev);
		}
		if (e) {
			__atomic_sub_fetch(&g_nx, e->nx, __ATOMIC_RELAXED);
			e->nx = 0;
		}
		ep_unlink(i);
	}
	pthread_mutex_unlock(&g_ep.mu);
}

/*
 * Registered before anything else can be (the library's constructor): the
 * child's handler runs first in the child, so the handlers after it (ri2n's
 * engine, the program's) may close descriptors, which looks here.
 */
__attribute__((constructor)) static void ep_atfork(void)
{
	pthread_atfork(ep_prepare, ep_parent, ep_child);
}

/* Under g_ep.mu: whether the table has room for number fd (grown if need be). */
static int ep_room(int fd)
{
	if (fd >= g_ep.cap) {
		int cap = fd * 2 + 16;
		ep_set **n = realloc(g_ep.set, (size_t)cap * sizeof(*n));

		if (!n)
			return 0;
		memset(n + g_ep.cap, 0, (size_t)(cap - g_ep.cap) * sizeof(*n));
		g_ep.set = n;
		g_ep.cap = cap;
	}
	return 1;
}

/* Under g_ep.mu: the set of epfd, made on demand. */
ep_set *rn_shim_ep_get(int epfd, int make)
{
	if (epfd < 0 || (epfd >= g_ep.cap && (!make || !ep_room(epfd))))
		return NULL;
	if (!g_ep.set[epfd] && make && (g_ep.set[epfd] = calloc(1, sizeof(ep_set)))) {
		__atomic_add_fetch(&g_ep.live, 1, __ATOMIC_RELAXED);
		g_ep.set[epfd]->id = ++g_ep.next_id;
		g_ep.set[epfd]->refs = 1;
		g_ep.set[epfd]->priv = -1;
	}
	return g_ep.set[epfd];
}

uint64_t rn_shim_ep_id(int epfd)
{
	ep_set *e;
	uint64_t id;

	pthread_mutex_lock(&g_ep.mu);
	e = rn_shim_ep_get(epfd, 1);
	id = e ? e->id : 0;
	pthread_mutex_unlock(&g_ep.mu);
	return id;
}

void rn_shim_ep_forget(int fd)
{
	/*
	 * close() asks this of every descriptor: no lock while there is no set.
	 * A vfork()ed child shares the parent's memory: the records are not its.
	 */
	if (fd < 0 || !__atomic_load_n(&g_ep.live, __ATOMIC_RELAXED) || !rn_shim_tab_mine())
		return;
	pthread_mutex_lock(&g_ep.mu);
	ep_unlink(fd);
	pthread_mutex_unlock(&g_ep.mu);
}

void rn_shim_ep_forget_range(unsigned int first, unsigned int last)
{
	if (!__atomic_load_n(&g_ep.live, __ATOMIC_RELAXED) || !rn_shim_tab_mine())
		return;
	pthread_mutex_lock(&g_ep.mu);
	for (unsigned int fd = first; fd <= last && fd < (unsigned int)g_ep.cap; fd++)
		ep_unlink((int)fd);
	pthread_mutex_unlock(&g_ep.mu);
}

void rn_shim_ep_dup(int old, int nfd)
{
	ep_set *e;

	rn_shim_ep_forget(nfd);
	if (old < 0 || nfd < 0 || !__atomic_load_n(&g_ep.live, __ATOMIC_RELAXED) ||
	    !rn_shim_tab_mine())
		return;
	pthread_mutex_lock(&g_ep.mu);
	e = old < g_ep.cap ? g_ep.set[old] : NULL;
	if (e && ep_room(nfd)) {
		g_ep.set[nfd] = e;
		e->refs++;
	}
	pthread_mutex_unlock(&g_ep.mu);
}

/*
 * Under g_ep.mu: e's private set, made on first use around the program's
 * set epfd; -1 if it cannot be (the rail sockets then stay the engine's).
 */
static int ep_priv(int epfd, ep_set *e)
{
	struct epoll_event ev = { .events = EPOLLIN, .data.u64 = RN_EP_NESTED };

	if (e->priv != -1)
		return e->priv;
	e->priv = rn_sys_fd_high(rn_sys_epoll_create1(EPOLL_CLOEXEC));
	if (e->priv < 0 || rn_sys_epoll_ctl(e->priv, EPOLL_CTL_ADD, epfd, &ev) < 0) {
		/* say it once: its rail sockets stay the engine's (ELOOP: nested too deep) */
		rn_shim_log("epoll fd %d: no private set around it (%s): ri2n's engine serves its "
			    "rail sockets", epfd, strerror(errno));
		if (e->priv >= 0)
			rn_sys_close(e->priv);
		e->priv = -2;
	}
	return e->priv;
}

void rn_shim_ep_add_refs(int epfd, ep_set *e, const rn_railref *r, int n)
{
	for (int i = 0; i < n; i++) {
		struct epoll_event ev = { .events = EPOLLIN, .data.u64 = (uint32_t)r[i].fd };
		int k;

		for (k = 0; k < e->nr; k++)
			if (e->r[k].fd == r[i].fd && e->r[k].ino == r[i].ino)
				break;
		if (k < e->nr || e->nr >= RN_EP_RAILS || ep_priv(epfd, e) < 0)
			continue;
		/* EEXIST: a socket of that number was added before and is still there */
		if (rn_sys_epoll_ctl(e->priv, EPOLL_CTL_ADD, r[i].fd, &ev) == 0 || errno == EEXIST)
			e->r[e->nr++] = r[i];
	}
}

void rn_shim_ep_lock(void)
{
	pthread_mutex_lock(&g_ep.mu);
}

void rn_shim_ep_unlock(void)
{
	pthread_mutex_unlock(&g_ep.mu);
}

/* ---- listeners registered exclusively ---- */

/* Under g_ep.mu: the index of fd in e's exclusive listeners, or -1. */
static int x_find(const ep_set *e, int fd)
{
	for (int k = 0; e && k < e->nx; k++)
		if (e->x[k].fd == fd)
			return k;
	return -1;
}

/* Under g_ep.mu: fd leaves e's exclusive listeners (and its private set). */
static void x_drop(ep_set *e, int k)
{
	rn_sys_epoll_ctl(e->priv, EPOLL_CTL_DEL, e->x[k].fd, NULL);
	e->x[k] = e->x[--e->nx];
	__atomic_sub_fetch(&g_nx, 1, __ATOMIC_RELAXED);
}

static int is_listener(int fd)
{
	rn_shim_ent ent;

	return rn_shim_tab_get(fd, &ent) && ent.kind == RN_SHIM_RI2N && ent.listening;
}

int rn_shim_ep_excl_ctl(int epfd, int op, int fd, const struct epoll_event *ev)
{
	int rc = RN_EP_PASS, err = 0, k;
	ep_set *e;

	if (op == EPOLL_CTL_ADD ? !ev || !(ev->events & EPOLLEXCLUSIVE) || !is_listener(fd)
				: !__atomic_load_n(&g_nx, __ATOMIC_RELAXED))
		return RN_EP_PASS;
	pthread_mutex_lock(&g_ep.mu);
	e = rn_shim_ep_get(epfd, op == EPOLL_CTL_ADD);
	k = x_find(e, fd);
	if (op == EPOLL_CTL_ADD && e && k < 0 && e->nx < RN_EP_EXCL && ep_priv(epfd, e) >= 0) {
		struct epoll_event pev = { .events = ev->events, .data.u64 = RN_EP_XTAG | (uint32_t)fd };

		rc = rn_sys_epoll_ctl(e->priv, EPOLL_CTL_ADD, fd, &pev);
		err = errno;
		if (rc == 0) {
			e->x[e->nx++] = (rn_ep_x){ fd, ev->events, ev->data.u64 };
			__atomic_add_fetch(&g_nx, 1, __ATOMIC_RELAXED);
		}
	} else if (op == EPOLL_CTL_ADD && k >= 0) {
		rc = -1;
		err = EEXIST;
	} else if (op == EPOLL_CTL_DEL && k >= 0) {
		x_drop(e, k);
		rc = 0;
	} else if (op == EPOLL_CTL_MOD && k >= 0) {
		rc = -1; /* as the kernel: an exclusive registration cannot be modified */
		err = EINVAL;
	}
	pthread_mutex_unlock(&g_ep.mu);
	if (rc == -1)
		errno = err;
	return rc;
}

int rn_shim_ep_excl_event(const ep_set *e, const struct epoll_event *ev, struct epoll_event *out)
{
	int k = x_find(e, (int)(uint32_t)ev->data.u64);

	if (k < 0)
		return 0;
	out->events = ev->events & (e->x[k].events | EPOLLERR | EPOLLHUP);
	out->data.u64 = e->x[k].data;
	return out->events != 0;
}

void rn_shim_ep_excl_closed(int fd)
{
	if (!__atomic_load_n(&g_nx, __ATOMIC_RELAXED))
		return;
	pthread_mutex_lock(&g_ep.mu);
	for (int i = 0; i < g_ep.cap; i++) {
		ep_set *e = g_ep.set[i];
		int k = x_find(e, fd);

		if (k >= 0)
			x_drop(e, k);
	}
	pthread_mutex_unlock(&g_ep.mu);
}
