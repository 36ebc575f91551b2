/*
 * rn_api_tab.c - the API's descriptor table: which descriptor numbers of
 * the process are ri2n sockets (rn_api_int.h).
 *
 * The table maps a number to its rn_sock and checks, by the socket's
 * cookie, that the number still is that socket: the user may close() it
 * directly and get the number again for something else.  Each entry has a
 * generation, so a call that finds its entry stale drops it only if nobody
 * installed another meanwhile.  A bitmap of the numbers it holds (and of
 * those a signal handler wrote through) is readable without any lock, for
 * the data calls every descriptor of the program goes through.
 */
#define _GNU_SOURCE
#include <errno.h>
#include <pthread.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <unistd.h>

#include "rn_api.h"
#include "rn_api_int.h"
#include "rn_engine.h"
#include "rn_handover.h"
#include "rn_inline.h"
#include "rn_sandbox.h"
#include "rn_sig.h"
#include "rn_sys.h"

static struct {
	pthread_mutex_t mu;
	rn_sock **tab;
	uint32_t *gen; /* per number: bumped whenever its entry changes (rn_api_lookup) */
	int cap;
	int atfork;
} g_tab = { .mu = PTHREAD_MUTEX_INITIALIZER };

/* Where this thread is with g_tab.mu, as t_host in rn_engine.c: 0 out, 1 taking, 2 held, 3 leaving. */
static RN_TLS volatile int t_tab;

static void tab_lock(void)
{
	t_tab = 1;
	pthread_mutex_lock(&g_tab.mu);
	t_tab = 2;
}

static void tab_unlock(void)
{
	t_tab = 3;
	pthread_mutex_unlock(&g_tab.mu);
	t_tab = 0;
}

int rn_api_tab_held_here(void)
{
	int at = t_tab;

	return at == 1 ? rn_host_mutex_mine(&g_tab.mu) : at != 0;
}

/*
 * Which numbers the table holds, readable without its lock: the data calls
 * of a program linked with libri2n (ri2n_plain.c) ask it of every
 * descriptor they see.  Pages of 4096 numbers, made on first use and never
 * freed (the table itself moves when it grows); numbers past the last page
 * are never marked, and take the descriptor's way.  A page holds two bits
 * per number: words [0, WORDS) whether the table holds it, words [WORDS,
 * 2 WORDS) whether a signal handler wrote into it (rn_api_sig_wrote).
 */
#define MARK_PAGE_BITS 4096
#define MARK_PAGES 1024
#define MARK_WORDS (MARK_PAGE_BITS / 64)
static uint64_t *g_mark[MARK_PAGES];
static int g_sig_any; /* (atomic) some handler-written bit may be set: rn_api_sig_sweep */

/* Under g_tab.mu: fd's bit, on or off. */
static void mark(int fd, int on)
{
	int page = fd / MARK_PAGE_BITS, bit = fd % MARK_PAGE_BITS;
	uint64_t *p;

	if (page >= MARK_PAGES)
		return;
	p = __atomic_load_n(&g_mark[page], __ATOMIC_ACQUIRE);
	if (!p) {
		if (!on || !(p = calloc(2 * MARK_WORDS, sizeof(*p))))
			return; /* unmarked: the number just takes the slow way */
		__atomic_store_n(&g_mark[page], p, __ATOMIC_RELEASE);
	}
	if (on)
		__atomic_fetch_or(&p[bit / 64], 1ull << (bit % 64), __ATOMIC_RELEASE);
	else
		__atomic_fetch_and(&p[bit / 64], ~(1ull << (bit % 64)), __ATOMIC_RELEASE);
}

int rn_api_marked(int fd)
{
	unsigned page = (unsigned)fd / MARK_PAGE_BITS, bit = (unsigned)fd % MARK_PAGE_BITS;
	uint64_t *p;

	if (page >= MARK_PAGES || !(p = __atomic_load_n(&g_mark[page], __ATOMIC_ACQUIRE)))
		return 0;
	return (int)(__atomic_load_n(&p[bit / 64], __ATOMIC_ACQUIRE) >> (bit % 64) & 1);
}

/*
 * A signal handler wrote into number fd past the fast path: lock-free, no
 * allocation (the page exists: fd is marked).  The next fast send of this
 * process, on any number of that socket, takes the descriptor's bytes first
 * (rn_api_sig_sweep).
 */
void rn_api_sig_wrote(int fd)
{
	unsigned page = (unsigned)fd / MARK_PAGE_BITS, bit = (unsigned)fd % MARK_PAGE_BITS;
	uint64_t *p;

	if (page >= MARK_PAGES || !(p = __atomic_load_n(&g_mark[page], __ATOMIC_ACQUIRE)))
		return;
	__atomic_fetch_or(&p[MARK_WORDS + bit / 64], 1ull << (bit % 64), __ATOMIC_RELEASE);
	__atomic_store_n(&g_sig_any, 1, __ATOMIC_RELEASE);
}

/* Outside handlers: the sockets of the numbers handlers wrote into get desc_first; bits cleared. */
static void sig_sweep(void)
{
	for (int page = 0; page < MARK_PAGES; page++) {
		uint64_t *p = __atomic_load_n(&g_mark[page], __ATOMIC_ACQUIRE);

		for (int w = 0; p && w < MARK_WORDS; w++) {
			uint64_t bits;

			if (!__atomic_load_n(&p[MARK_WORDS + w], __ATOMIC_RELAXED))
				continue;
			/* cleared before the socket is told: a write after this sets it again */
			bits = __atomic_exchange_n(&p[MARK_WORDS + w], 0, __ATOMIC_ACQ_REL);
			for (; bits; bits &= bits - 1) {
				int fd = page * MARK_PAGE_BITS + w * 64 + __builtin_ctzll(bits);

				tab_lock();
				if (fd < g_tab.cap && g_tab.tab[fd])
					__atomic_store_n(&g_tab.tab[fd]->desc_first, 1, __ATOMIC_RELEASE);
				tab_unlock();
			}
		}
	}
}

void rn_api_sig_sweep(void)
{
	if (__atomic_load_n(&g_sig_any, __ATOMIC_ACQUIRE) &&
	    __atomic_exchange_n(&g_sig_any, 0, __ATOMIC_ACQ_REL))
		sig_sweep();
}

/* Under g_tab.mu: number fd holds s now (NULL: nothing). */
static void tab_set(int fd, rn_sock *s)
{
	if (g_tab.tab[fd])
		g_tab.tab[fd]->tab_nums--;
	if (s)
		s->tab_nums++;
	g_tab.tab[fd] = s;
	g_tab.gen[fd]++;
	mark(fd, s != NULL);
}

void rn_api_tab_poke(void)
{
	/* as rn_host_poke: a sleeper a handler stopped may hold the table's wake-up */
	rn_sys_futex_wake_all(&g_tab.mu.__data.__lock);
}


/*
 * Before a fork (or a spawn, rn_datacalls.c): the child will write to these
 * sockets' descriptors the plain way (its own table is empty), so fast sends
 * here must take what is in the descriptor first from now on.
 */
static void tab_plain_all(void)
{
	tab_lock();
	for (int i = 0; i < g_tab.cap; i++)
		if (g_tab.tab[i]) {
			__atomic_store_n(&g_tab.tab[i]->plain_writes, 1, __ATOMIC_RELAXED);
			__atomic_store_n(&g_tab.tab[i]->shared, 1, __ATOMIC_RELAXED);
		}
	tab_unlock();
}

/*
 * A forked child's inherited connections (tab_forget): each becomes the
 * child's own at its first call here (rn_handover_take), as a forking
 * server's child takes over the connection its parent accepted; until then
 * (and if its parent keeps it) the parent's engine serves it through the
 * descriptor.  Their numbers stay marked, so that the data calls ask.
 */
typedef struct inherited {
	int fd;
	dev_t dev;
	ino_t ino;
	rn_take_from from;
	int tries;         /* asked while the parent still held it (EBUSY) */
	uint64_t next_ns;  /* ...and not again before this */
} inherited;

#define INH_TRIES 10   /* 1 ms, doubling: about a second after the first data call */
static inherited *g_inh; /* (g_tab.mu) */
static int g_ninh;

static void tab_forget(void)
{
	pid_t parent = getppid();
	int n = 0;

	/* a forked child: the parent's sockets are the parent engine's business */
	free(g_inh);
	g_inh = NULL;
	g_ninh = 0;
	for (int i = 0; i < g_tab.cap; i++)
		n += g_tab.tab[i] && g_tab.tab[i]->take_port && g_tab.tab[i]->kind == RN_SK_CONNECTED;
	if (n && (g_inh = calloc((size_t)n, sizeof(*g_inh))) != NULL) {
		for (int i = 0; i < g_tab.cap; i++) {
			rn_sock *s = g_tab.tab[i];

			if (!s || !s->take_port || s->kind != RN_SK_CONNECTED)
				continue;
			g_inh[g_ninh++] = (inherited){
				.fd = i, .dev = s->dev, .ino = s->ino,
				.from = { .owner = parent, .port = s->take_port, .mask = s->take_mask,
					  .id = s->take_id, .peer = s->peer } };
		}
	}
	g_tab.tab = NULL;
	g_tab.gen = NULL;
	g_tab.cap = 0;
	for (int i = 0; i < MARK_PAGES; i++)
		if (g_mark[i])
			memset(g_mark[i], 0, 2 * MARK_WORDS * sizeof(uint64_t));
	for (int i = 0; i < g_ninh; i++)
		mark(g_inh[i].fd, 1);
	g_sig_any = 0;
	pthread_mutex_init(&g_tab.mu, NULL);
}

/*
 * fd, not in the table, may be a connection this forked child inherited:
 * taken over now, it is (the caller's reference).  Else NULL, and fd is
 * the descriptor it was.
 */
static rn_sock *take_inherited(int fd)
{
	inherited e = { .fd = -1 };
	uint64_t now = rn_now_ns();
	struct stat sb;
	rn_sock *s = NULL;
	int rc = -EBADF;

	tab_lock();
	for (int i = 0; i < g_ninh; i++) {
		if (g_inh[i].fd != fd || now < g_inh[i].next_ns)
			continue;
		e = g_inh[i];
		g_inh[i] = g_inh[--g_ninh];
		break;
	}
	tab_unlock();
	if (e.fd < 0)
		return NULL;
	if (rn_sys_fstat(fd, &sb) == 0 && sb.st_dev == e.dev && sb.st_ino == e.ino)
		rc = rn_handover_take(fd, &e.from, &s);
	if (rc == 0) {
		if (rn_api_tab_install(fd, s) == 0) {
			rn_sock_ref(s); /* the table's, and the caller's */
			return s;
		}
		rn_sock_unref(s); /* no room to keep it: it dies with the reference */
		return NULL;
	}
	tab_lock();
	if (rc == -EBUSY && ++e.tries < INH_TRIES) {
		/* the parent still holds it: asked again at a later call (the slot is free) */
		e.next_ns = now + (UINT64_C(1000000) << e.tries);
		g_inh[g_ninh++] = e;
	} else {
		mark(fd, 0);
	}
	tab_unlock();
	return NULL;
}

rn_sock *rn_api_lookup_data(int fd, int known, int *err)
{
	rn_sock *s = rn_api_lookup_as(fd, known, err);

	/* not in a handler, nor in a data call a handler interrupted (the lock-free way there) */
	if (!s && __atomic_load_n(&g_ninh, __ATOMIC_RELAXED) && !rn_sig_in_handler() &&
	    rn_sig_t_calls <= 1)
		s = take_inherited(fd);
	return s;
}

int rn_api_tab_install(int fd, rn_sock *s)
{
	rn_sock *old;

	tab_lock();
	if (!g_tab.atfork) {
		pthread_atfork(tab_plain_all, NULL, tab_forget);
		g_tab.atfork = 1;
	}
	if (fd >= g_tab.cap) {
		int cap = fd * 2 + 64;
		rn_sock **n = realloc(g_tab.tab, (size_t)cap * sizeof(*n));
		uint32_t *gen;

		if (n)
			g_tab.tab = n; /* the old cap stays right until both have grown */
		gen = n ? realloc(g_tab.gen, (size_t)cap * sizeof(*gen)) : NULL;
		if (!gen) {
			tab_unlock();
			return -ENOMEM;
		}
		memset(n + g_tab.cap, 0, (size_t)(cap - g_tab.cap) * sizeof(*n));
		memset(gen + g_tab.cap, 0, (size_t)(cap - g_tab.cap) * sizeof(*gen));
		g_tab.gen = gen;
		g_tab.cap = cap;
	}
	old = g_tab.tab[fd]; /* a stale entry: the number was closed and reused */
	tab_set(fd, s);
	if (old)
		rn_sock_unref(old);
	/*
	 * On 0, 1 or 2 libc's own stdio (printf, perror, a FILE it opened
	 * without fdopen) writes to the socket with a write we never see.
	 */
	if (fd <= STDERR_FILENO)
		__atomic_store_n(&s->plain_writes, 1, __ATOMIC_RELAXED);
	tab_unlock();
	return 0;
}

/*
 * Under g_tab.mu: drops fd's entry if it still is s as of generation gen (a
 * data call found fd no longer s's); 0 if the entry changed meanwhile (fd
 * was closed and made a ri2n socket again: that entry is not ours to drop).
 */
static int tab_drop_if(int fd, rn_sock *s, uint32_t gen)
{
	if (fd >= g_tab.cap || g_tab.tab[fd] != s || g_tab.gen[fd] != gen)
		return 0;
	tab_set(fd, NULL);
	rn_sock_unref(s); /* the table's reference */
	return 1;
}

/*
 * The socket behind fd, referenced; NULL with *err EBADF or ENOTSOCK.  The
 * entry is read first, then the kernel asked what fd is: an entry found
 * stale is dropped only if it is still the one read, so a lookup racing a
 * close and a ri2n_socket that reused the number never drops the new
 * socket's entry; it looks again.
 */
rn_sock *rn_api_lookup(int fd, int *err)
{
	if (rn_sandbox_on()) { /* no system call of ours: nothing is ri2n's here */
		*err = ENOTSOCK;
		return NULL;
	}
	for (;;) {
		rn_sock *s = NULL;
		uint32_t gen = 0;
		uint64_t cookie;
		int why, dropped;

		tab_lock();
		if (fd >= 0 && fd < g_tab.cap && (s = g_tab.tab[fd])) {
			gen = g_tab.gen[fd];
			rn_sock_ref(s);
		}
		tab_unlock();
		cookie = rn_fd_cookie(fd);
		if (s && cookie && s->cookie == cookie)
			return s;
		why = cookie ? ENOTSOCK : errno == ENOTSOCK ? ENOTSOCK : EBADF;
		if (!s) {
			*err = why;
			return NULL;
		}
		/* closed without ri2n_close, the number maybe reused */
		tab_lock();
		dropped = tab_drop_if(fd, s, gen);
		tab_unlock();
		rn_sock_unref(s);
		if (dropped) {
			*err = why;
			return NULL;
		}
	}
}

void rn_api_writes_seen(void)
{
	rn_sock_writes_seen();
}

void rn_api_flags_changed(void)
{
	rn_sock_flags_changed();
}

void rn_api_plain_all(void)
{
	tab_plain_all();
}

void rn_api_to_descriptor(int fd)
{
	int err;
	rn_sock *s;

	if (rn_sig_unsafe())
		return; /* no lock here: what the core holds stays there, the reader gets the descriptor's */
	s = rn_api_lookup(fd, &err);
	if (s) {
		rn_inline_to_descriptor(s);
		rn_sock_unref(s);
	}
}

void rn_api_all_to_descriptor(void)
{
	for (int fd = 0;; fd++) {
		rn_sock *s = NULL;
		int more;

		tab_lock();
		more = fd < g_tab.cap;
		if (more && (s = g_tab.tab[fd]))
			rn_sock_ref(s);
		tab_unlock();
		if (!more)
			return;
		if (s) {
			rn_inline_to_descriptor(s);
			rn_sock_unref(s);
		}
	}
}

void rn_api_note_plain(int fd)
{
	int err;
	rn_sock *s;

	if (rn_sig_unsafe()) { /* in a handler: the lock-free mark, read by the next fast send */
		rn_api_sig_wrote(fd);
		return;
	}
	s = rn_api_lookup(fd, &err);
	if (s) {
		__atomic_store_n(&s->plain_writes, 1, __ATOMIC_RELAXED);
		__atomic_store_n(&s->shared, 1, __ATOMIC_RELAXED);
		rn_sock_unref(s);
	}
}

/*
 * The socket behind fd, referenced, as the table has it: for a caller that
 * knows fd still is the same open file as when it was last looked up.
 */
rn_sock *rn_api_lookup_known(int fd)
{
	rn_sock *s = NULL;

	tab_lock();
	if (fd >= 0 && fd < g_tab.cap && (s = g_tab.tab[fd]))
		rn_sock_ref(s);
	tab_unlock();
	return s;
}

rn_sock *rn_api_lookup_as(int fd, int known, int *err)
{
	return known ? rn_api_lookup_known(fd) : rn_api_lookup(fd, err);
}

int rn_api_ident(int fd, dev_t *dev, ino_t *ino, uint64_t *cookie)
{
	rn_sock *s = rn_api_lookup_known(fd);

	if (!s)
		return -1;
	*dev = s->dev;
	*ino = s->ino;
	*cookie = s->cookie;
	rn_sock_unref(s);
	return 0;
}

int rn_api_is_ri2n(int fd)
{
	int err;
	rn_sock *s = rn_api_lookup(fd, &err);

	if (!s)
		return 0;
	rn_sock_unref(s);
	return 1;
}

/* Under g_tab.mu: whether no other number of the table holds s. */
static int last_number(const rn_sock *s)
{
	return s->tab_nums == 0; /* counted: a scan of the table cost a close microseconds */
}

int rn_api_dup(int fd, int dup)
{
	struct stat sb;
	int err, rc;
	rn_sock *s = rn_api_lookup(fd, &err);

	if (!s)
		return rn_api_fail(err);
	if (rn_sys_fstat(dup, &sb) < 0 || sb.st_ino != s->ino || sb.st_dev != s->dev) {
		rn_sock_unref(s);
		return rn_api_fail(EINVAL);
	}
	rc = rn_api_tab_install(dup, s); /* the lookup's reference moves to the table */
	if (rc) {
		rn_sock_unref(s);
		return rn_api_fail(-rc);
	}
	return 0;
}

/*
 * Under g_tab.mu: fd's entry goes.  Returns the socket if fd was its last
 * number (the caller then closes it with rn_inline_closed and drops the
 * reference, outside the lock), else NULL.
 */
static rn_sock *forget_locked(int fd)
{
	rn_sock *s = NULL;

	if (fd >= 0 && fd < g_tab.cap && g_tab.tab[fd]) {
		s = g_tab.tab[fd];
		tab_set(fd, NULL);
		/*
		 * The engine resets the user's end through s->user_fd (see
		 * close_with_reset in rn_stream.c): if that was this number, point
		 * it at another number still holding the same socket, if any.
		 */
		if (s->tab_nums > 0 && __atomic_load_n(&s->user_fd, __ATOMIC_RELAXED) == fd) {
			for (int o = 0; o < g_tab.cap; o++) {
				struct stat sb;

				if (g_tab.tab[o] == s && rn_sys_fstat(o, &sb) == 0 && sb.st_ino == s->ino &&
				    sb.st_dev == s->dev) {
					__atomic_store_n(&s->user_fd, o, __ATOMIC_RELAXED);
					break;
				}
			}
		}
	}
	if (s && !last_number(s)) {
		rn_sock_unref(s);
		s = NULL;
	}
	return s;
}

/* After forget_locked: its last number gone, threads blocked on s return. */
static void forget_finish(rn_sock *s)
{
	if (s) {
		rn_inline_closed(s);
		rn_sock_unref(s);
	}
}

void rn_api_forget(int fd)
{
	rn_sock *s;

	tab_lock();
	s = forget_locked(fd);
	tab_unlock();
	forget_finish(s);
}

void rn_api_forget_closed(int fd, dev_t dev, ino_t ino)
{
	rn_sock *s = NULL;

	/* one hold of the lock: a socket that took the number meanwhile keeps its entry */
	tab_lock();
	if (fd >= 0 && fd < g_tab.cap && g_tab.tab[fd] && g_tab.tab[fd]->ino == ino &&
	    g_tab.tab[fd]->dev == dev)
		s = forget_locked(fd);
	tab_unlock();
	forget_finish(s);
}

/*
 * At exit: every connected socket still open is shut down for writing, as
 * the exit's close would (the raw call: not our own shutdown, which takes
 * the table's lock).  So is every socket still connecting: the engine's
 * watch sees the shutdown and gives the connect up, as exit's close drops a
 * TCP socket in SYN_SENT; left open, one that connected a moment later
 * counted as owing its FIN until the whole exit linger (30 s) ran out.
 */
void rn_api_tab_shut_all(void)
{
	tab_lock();
	for (int fd = 0; fd < g_tab.cap; fd++) {
		struct stat sb;
		rn_sock *s = g_tab.tab[fd];
		int kind = s ? __atomic_load_n(&s->kind, __ATOMIC_ACQUIRE) : RN_SK_DEAD;

		if ((kind == RN_SK_CONNECTED || kind == RN_SK_CONNECTING) && rn_sys_fstat(fd, &sb) == 0 &&
		    s->ino == sb.st_ino && s->dev == sb.st_dev)
			rn_sys_shutdown(fd, SHUT_WR);
	}
	tab_unlock();
}
