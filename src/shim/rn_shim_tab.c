/*
 * rn_shim_tab.c - what the shim remembers about each descriptor number it
 * cares about: a TCP socket that may still become ri2n, or a ri2n socket.
 *
 * Most calls the shim sees are on descriptors it does not care about (the
 * engine's own, files, pipes), so "is there an entry?" is a lock-free look
 * at a two-level table (pages of 1024 slots, allocated on first use, never
 * freed), safe even from a signal handler's close().  Entries are read and
 * written under one mutex, as copies.  Each entry carries the device and
 * inode of the open file it describes: a number the program closed behind
 * our back (a close the shim did not see, e.g. glibc's fclose) and got
 * again for something else is told apart and forgotten.
 *
 * The table belongs to one process.  A vfork()ed child (posix_spawn,
 * Python's subprocess) shares our memory until it execs and calls close,
 * dup2 or close_range on the way: it must not touch the parent's table, so
 * in any process that is not the owner (no fork handler ran: vfork, clone)
 * the shim knows nothing and everything passes through.
 */
#define _GNU_SOURCE
#include <errno.h>
#include <pthread.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "rn_api.h"
#include "rn_datacalls.h"
#include "rn_shim.h"
#include "rn_sig.h"
#include "rn_sys.h"

#define PAGE_BITS 10
#define PAGE_SIZE (1 << PAGE_BITS)
#define NPAGES 1024 /* 1M descriptors, the kernel's usual nr_open */

static struct {
	pthread_mutex_t mu;
	rn_shim_ent **page[NPAGES]; /* page[i][j]: number i * PAGE_SIZE + j */
	pid_t owner;                /* the process this memory is the table of */
	rn_shim_ent *retired;       /* (atomic) entries closed in a signal handler */
} g = { .mu = PTHREAD_MUTEX_INITIALIZER };

static void atfork_prepare(void) { pthread_mutex_lock(&g.mu); }
static void atfork_parent(void) { pthread_mutex_unlock(&g.mu); }

static void atfork_child(void)
{
	/* entries stay valid in a forked child: the descriptors are inherited */
	g.owner = rn_pid();
	pthread_mutex_unlock(&g.mu);
}

static int g_sees_closes; /* rn_shim_sees_closes; set once, at load */

int rn_shim_sees_closes(void)
{
	return g_sees_closes;
}

__attribute__((constructor)) static void tab_init(void)
{
	const char *plain = getenv("RI2N_RUN_PLAIN_WRITES"), *check = getenv("RI2N_RUN_CHECK_FDS");

	g.owner = rn_pid();
	/*
	 * The shim serves every write on a ri2n descriptor, or marks the socket
	 * (rn_shim_io.c): unless another interposer comes first (rn_dc_first).
	 */
	if ((!plain || strcmp(plain, "1") != 0) && rn_dc_first())
		rn_api_writes_seen();
	g_sees_closes = !check || strcmp(check, "1") != 0;
	pthread_atfork(atfork_prepare, atfork_parent, atfork_child);
}

int rn_shim_tab_mine(void)
{
	/* under seccomp the shim knows nothing (and asks no getpid) */
	return !rn_api_sandbox_on() && rn_pid() == __atomic_load_n(&g.owner, __ATOMIC_RELAXED);
}

/* The slot of fd, NULL if its page does not exist (and `make` is 0). Under g.mu to make. */
static rn_shim_ent **slot(int fd, int make)
{
	rn_shim_ent **p;

	if (fd < 0 || fd >= NPAGES * PAGE_SIZE)
		return NULL;
	p = __atomic_load_n(&g.page[fd >> PAGE_BITS], __ATOMIC_ACQUIRE);
	if (!p && make) {
		p = calloc(PAGE_SIZE, sizeof(*p));
		if (!p)
			return NULL;
		__atomic_store_n(&g.page[fd >> PAGE_BITS], p, __ATOMIC_RELEASE);
	}
	return p ? &p[fd & (PAGE_SIZE - 1)] : NULL;
}

int rn_shim_tab_has(int fd)
{
	rn_shim_ent **s = slot(fd, 0);

	return s && __atomic_load_n(s, __ATOMIC_ACQUIRE) != NULL && !rn_api_sandbox_on();
}

/*
 * Under g.mu: fd's entry, read once.  A close in a signal handler may take
 * the entry out at any moment without the mutex; it goes on the retire
 * list, freed only by a later drain, so what is read stays valid until then.
 */
static rn_shim_ent *entry_locked(int fd)
{
	rn_shim_ent **s = slot(fd, 0);

	return s ? __atomic_load_n(s, __ATOMIC_ACQUIRE) : NULL;
}

int rn_shim_tab_get(int fd, rn_shim_ent *e)
{
	int saved = errno, found = 0, trusted = rn_shim_sees_closes();
	uint64_t cookie;
	rn_shim_ent **s, *cur, *stale = NULL;

	if (!rn_shim_tab_has(fd) || !rn_shim_tab_mine())
		return 0;
	rn_shim_tab_drain();
	/*
	 * The table is trusted as for data calls when the shim sees every
	 * close (rn_shim_sees_closes): a connection's fcntl, option and epoll
	 * calls asked the kernel for a cookie each, four system calls per
	 * connection a load generator opens.
	 */
	cookie = trusted ? 0 : rn_api_fd_cookie(fd);
	pthread_mutex_lock(&g.mu);
	s = slot(fd, 0);
	cur = entry_locked(fd);
	if (cur) {
		if (trusted || (cur->cookie == cookie && cookie)) {
			*e = *cur;
			found = 1;
		} else {
			/* exchanged: a close in a signal handler may take it at the same time */
			stale = __atomic_exchange_n(s, NULL, __ATOMIC_ACQ_REL);
		}
	}
	pthread_mutex_unlock(&g.mu);
	free(stale);
	errno = saved;
	return found;
}

int rn_shim_tab_kind(int fd)
{
	int kind = RN_SHIM_NONE;
	rn_shim_ent *cur;

	if (!rn_shim_tab_has(fd))
		return RN_SHIM_NONE;
	pthread_mutex_lock(&g.mu); /* a signal handler's close retires entries, a drain frees them */
	cur = entry_locked(fd);
	if (cur)
		kind = cur->kind;
	pthread_mutex_unlock(&g.mu);
	return kind;
}

/* rn_shim_tab_set, with the open file's identity known (ri2n's own socket), else asked */
static void tab_set(int fd, const rn_shim_ent *e, int ri2n)
{
	int saved = errno;
	struct stat sb;
	rn_shim_ent *n, *old = NULL, **s;
	dev_t dev;
	ino_t ino;
	uint64_t cookie;

	if (!rn_shim_tab_mine())
		return;
	rn_shim_tab_drain();
	n = malloc(sizeof(*n));
	if (n && (!ri2n || rn_api_ident(fd, &dev, &ino, &cookie) < 0)) {
		if (fstat(fd, &sb) < 0) {
			free(n);
			n = NULL;
		} else {
			dev = sb.st_dev;
			ino = sb.st_ino;
			cookie = rn_api_fd_cookie(fd);
		}
	}
	if (!n) {
		rn_shim_tab_drop(fd);
		errno = saved;
		return;
	}
	*n = *e;
	n->dev = dev;
	n->ino = ino;
	n->cookie = cookie;
	pthread_mutex_lock(&g.mu);
	s = slot(fd, 1);
	if (s) {
		old = __atomic_exchange_n(s, n, __ATOMIC_ACQ_REL);
		n = NULL;
	}
	pthread_mutex_unlock(&g.mu);
	free(old);
	free(n);
	errno = saved;
}

void rn_shim_tab_set(int fd, const rn_shim_ent *e)
{
	tab_set(fd, e, 0);
}

void rn_shim_tab_set_ri2n(int fd, const rn_shim_ent *e)
{
	tab_set(fd, e, 1);
}

int rn_shim_tab_drop(int fd)
{
	int saved = errno, kind = RN_SHIM_NONE;
	rn_shim_ent **s, *old = NULL;

	if (!rn_shim_tab_has(fd) || !rn_shim_tab_mine())
		return RN_SHIM_NONE;
	rn_shim_tab_drain();
	pthread_mutex_lock(&g.mu);
	s = slot(fd, 0);
	if (s && (old = __atomic_exchange_n(s, NULL, __ATOMIC_ACQ_REL)))
		kind = old->kind;
	pthread_mutex_unlock(&g.mu);
	free(old);
	errno = saved;
	return kind;
}

void rn_shim_tab_note_opt(int fd, int level, int name, const void *val, socklen_t len)
{
	rn_shim_ent *e;

	if (!val || len > sizeof(((rn_shim_opt *)0)->val) || !rn_shim_tab_mine())
		return;
	pthread_mutex_lock(&g.mu);
	/* read once: a close in a signal handler may empty the slot between two reads */
	e = entry_locked(fd);
	if (e) {
		int i;

		for (i = 0; i < e->nopt; i++)
			if (e->opt[i].level == level && e->opt[i].name == name)
				break;
		if (i < RN_SHIM_MAXOPT) {
			e->opt[i] = (rn_shim_opt){ .level = level, .name = name, .len = len };
			memcpy(e->opt[i].val, val, len);
			if (i == e->nopt)
				e->nopt++;
		}
	}
	pthread_mutex_unlock(&g.mu);
}

void rn_shim_tab_note_addr(int fd, int peer, const rn_hsa *a)
{
	rn_shim_ent *cur;

	if (!rn_shim_tab_mine())
		return;
	pthread_mutex_lock(&g.mu);
	cur = entry_locked(fd);
	if (cur) {
		if (peer) {
			cur->peer = *a;
			cur->have_peer = 1;
		} else {
			cur->local = *a;
			cur->have_local = 1;
		}
	}
	pthread_mutex_unlock(&g.mu);
}

const rn_shim_opt *rn_shim_ent_opt(const rn_shim_ent *e, int level, int name)
{
	for (int i = 0; i < e->nopt; i++)
		if (e->opt[i].level == level && e->opt[i].name == name)
			return &e->opt[i];
	return NULL;
}

void rn_shim_tab_note_ep(int fd, int op, int epfd, uint64_t ep_id, const struct epoll_event *ev)
{
	rn_shim_ent *e;

	if (!rn_shim_tab_mine())
		return;
	pthread_mutex_lock(&g.mu);
	e = entry_locked(fd);
	if (e && e->kind == RN_SHIM_TCP) {
		int i;

		for (i = 0; i < e->nep; i++)
			if (e->ep[i].epfd == epfd && e->ep[i].ep_id == ep_id)
				break;
		if (op == EPOLL_CTL_DEL) {
			if (i < e->nep)
				e->ep[i] = e->ep[--e->nep];
		} else if (ev && i < RN_SHIM_MAXEP) {
			e->ep[i] = (rn_shim_epreg){ .epfd = epfd, .ep_id = ep_id,
						    .events = ev->events, .data = ev->data.u64 };
			if (i == e->nep)
				e->nep++;
		} else if (ev) {
			e->ep_lost = 1;
		}
	}
	pthread_mutex_unlock(&g.mu);
}

void rn_shim_tab_note_shared(int fd)
{
	rn_shim_ent *cur;

	if (!rn_shim_tab_mine())
		return;
	pthread_mutex_lock(&g.mu);
	cur = entry_locked(fd);
	if (cur)
		cur->shared = 1;
	pthread_mutex_unlock(&g.mu);
}

int rn_shim_tab_others(int fd, const rn_shim_ent *e, int *out, int max)
{
	int n = 0;

	if (!rn_shim_tab_mine())
		return 0;
	pthread_mutex_lock(&g.mu);
	for (int p = 0; p < NPAGES && n < max; p++) {
		rn_shim_ent **pg = __atomic_load_n(&g.page[p], __ATOMIC_ACQUIRE);

		for (int j = 0; pg && j < PAGE_SIZE && n < max; j++) {
			int o = p * PAGE_SIZE + j;

			if (o != fd && pg[j] && pg[j]->dev == e->dev && pg[j]->ino == e->ino)
				out[n++] = o;
		}
	}
	pthread_mutex_unlock(&g.mu);
	return n;
}

void rn_shim_tab_retire(int fd)
{
	rn_shim_ent **s, *e;

	if (!rn_shim_tab_mine() || !(s = slot(fd, 0)))
		return;
	e = __atomic_exchange_n(s, NULL, __ATOMIC_ACQ_REL);
	if (!e)
		return;
	e->retired_fd = fd;
	e->retired_next = __atomic_load_n(&g.retired, __ATOMIC_RELAXED);
	while (!__atomic_compare_exchange_n(&g.retired, &e->retired_next, e, 1, __ATOMIC_RELEASE,
					    __ATOMIC_RELAXED))
		;
}

void rn_shim_tab_drain(void)
{
	rn_shim_ent *e;
	int saved = errno;

	/* not in a handler; not on ri2n's engine thread, which may hold what ri2n_api takes */
	if (!__atomic_load_n(&g.retired, __ATOMIC_ACQUIRE) || rn_sig_in_handler() ||
	    rn_shim_engine_thread())
		return;
	e = __atomic_exchange_n(&g.retired, NULL, __ATOMIC_ACQUIRE);
	/* a reader that found an entry before it was retired copies it under the lock: wait it out */
	pthread_mutex_lock(&g.mu);
	pthread_mutex_unlock(&g.mu);
	while (e) {
		rn_shim_ent *next = e->retired_next;

		if (e->kind == RN_SHIM_RI2N)
			rn_api_forget_closed(e->retired_fd, e->dev, e->ino);
		free(e);
		e = next;
	}
	errno = saved;
}
