/*
 * rn_henv.c - what a driver gives the core when it has nothing of its own
 * to give (rn_henv.h): the C heap and the kernel's random numbers.
 */
#include <stdlib.h>
#include <string.h>
#include <sys/random.h>
#include <time.h>

#include "rn_henv.h"
#include "rn_sys.h"
#include "rn_tls.h"

/*
 * Giving memory back.  An idle connection frees its rings' payload storage
 * (rn_conn_shrink): blocks of 8 KiB and more (8 packets of 1448 bytes: 11.3
 * KiB), scattered through the heap among the connections that stay.  free()
 * would keep their pages resident (it returns only the top of the heap), so
 * thousands of idle connections would keep every page they ever touched.
 * Blocks of RN_HENV_MAP_MIN bytes or more are mappings of their own
 * instead, unmapped when freed: an idle connection then holds exactly its
 * small blocks, and a busy one touches only the pages its rings use (the
 * kernel zeroes them, so no calloc pass).  A 16-byte header before every
 * block says which kind it is (the length of its mapping, or 0).  Under
 * AddressSanitizer every block comes from the heap, so its checks cover the
 * rings too.  Anonymous mappings next to each other merge in the kernel, so
 * idle connections cost no mapping each; busy ones cost one per ring.
 */
#define RN_HENV_MAP_MIN 8192u
#define RN_HENV_PAGE 4096u

typedef struct heap_hdr {
	size_t map_len; /* length of the block's own mapping; 0: from the heap */
	size_t pad;     /* keeps the block 16-byte aligned */
} heap_hdr;

#if defined(__SANITIZE_ADDRESS__)
#define RN_HENV_ASAN 1
#elif defined(__has_feature)
#if __has_feature(address_sanitizer)
#define RN_HENV_ASAN 1
#endif
#endif
#ifdef RN_HENV_ASAN
static const int map_big = 0;
#else
static const int map_big = 1;
#endif

/*
 * A few mappings kept for reuse: a program that opens and closes a
 * connection per request would otherwise map and unmap its rings every
 * time, and each unmap in a threaded process interrupts every CPU the
 * process ran on (TLB shootdown).  At most RN_HENV_KEEP blocks wait here,
 * whatever the number of connections (under 1 MiB); the lock is only ever
 * tried, never waited for (a block then goes the slow way), so a fork that
 * caught it held costs the child its cache, nothing more.
 */
#define RN_HENV_KEEP 48

static struct {
	int busy;
	int n;
	heap_hdr *blk[RN_HENV_KEEP];
} g_keep;

static int keep_lock(void)
{
	return !__atomic_exchange_n(&g_keep.busy, 1, __ATOMIC_ACQUIRE);
}

static void keep_unlock(void)
{
	__atomic_store_n(&g_keep.busy, 0, __ATOMIC_RELEASE);
}

/* A kept mapping of exactly len bytes, zeroed, or NULL. */
static heap_hdr *keep_take(size_t len)
{
	heap_hdr *h = NULL;

	if (!keep_lock())
		return NULL;
	for (int i = g_keep.n - 1; i >= 0; i--) {
		if (g_keep.blk[i]->map_len == len) {
			h = g_keep.blk[i];
			g_keep.blk[i] = g_keep.blk[--g_keep.n];
			break;
		}
	}
	keep_unlock();
	if (h)
		memset(h + 1, 0, len - sizeof(*h));
	return h;
}

/* Whether the mapping h was kept for reuse. */
static int keep_put(heap_hdr *h)
{
	int kept = 0;

	if (!keep_lock())
		return 0;
	if (g_keep.n < RN_HENV_KEEP) {
		g_keep.blk[g_keep.n++] = h;
		kept = 1;
	}
	keep_unlock();
	return kept;
}

static void *heap_alloc(void *u, size_t n)
{
	heap_hdr *h;

	(void)u;
	if (map_big && n >= RN_HENV_MAP_MIN) {
		size_t len = (n + sizeof(*h) + RN_HENV_PAGE - 1) & ~(size_t)(RN_HENV_PAGE - 1);

		if ((h = keep_take(len)))
			return h + 1;
		h = rn_sys_mmap_anon(len);
		if (h == MAP_FAILED)
			return NULL;
		h->map_len = len;
		return h + 1;
	}
	h = calloc(1, sizeof(*h) + n);
	return h ? h + 1 : NULL;
}

static void heap_free(void *u, void *p)
{
	heap_hdr *h = (heap_hdr *)p - 1;

	(void)u;
	if (!p)
		return;
	if (h->map_len) {
		if (!keep_put(h))
			rn_sys_munmap(h, h->map_len);
	}
	else
		free(h);
}

/*
 * Random numbers.  One getrandom call for every 64 bits was several system
 * calls a connection (its identifiers, initial sequence numbers, cookies),
 * so each thread keeps a pool of RNG_WORDS words from one call and hands
 * them out once each, zeroing a word as it goes.  A forked child must never
 * repeat what its parent hands out: a fork handler moves the process's
 * generation on in the child, and a pool filled in another generation is
 * refilled before use.  A signal handler that interrupts a refill takes the
 * pool as exhausted and refills it itself; the interrupted call then keeps
 * only the word it took, so no word is handed out twice.
 */
#define RNG_WORDS 32

static RN_TLS struct {
	uint64_t w[RNG_WORDS];
	unsigned next; /* the next word to hand out; RNG_WORDS and above: none left */
	unsigned gen;  /* rng_gen when it was filled */
} t_rng = { .next = RNG_WORDS };
static unsigned rng_gen = 1; /* 0 never matches: a thread's first call fills its pool */
static pthread_once_t rng_once = PTHREAD_ONCE_INIT;

static void rng_forked(void)
{
	rng_gen++;
}

static void rng_register(void)
{
	pthread_atfork(NULL, NULL, rng_forked);
}

uint64_t rn_henv_rng(void *u)
{
	uint64_t v = 0, fresh[RNG_WORDS];
	unsigned i = __atomic_fetch_add(&t_rng.next, 1, __ATOMIC_RELAXED);
	struct timespec ts;

	(void)u;
	if (i < RNG_WORDS && t_rng.gen == __atomic_load_n(&rng_gen, __ATOMIC_RELAXED)) {
		v = t_rng.w[i];
		t_rng.w[i] = 0;
		return v;
	}
	pthread_once(&rng_once, rng_register);
	if (getrandom(fresh, sizeof(fresh), 0) == (ssize_t)sizeof(fresh)) {
		v = fresh[0];
		memcpy(t_rng.w, fresh, sizeof(fresh));
		t_rng.w[0] = 0;
		t_rng.gen = __atomic_load_n(&rng_gen, __ATOMIC_RELAXED);
		__atomic_store_n(&t_rng.next, 1, __ATOMIC_RELAXED);
		explicit_bzero(fresh, sizeof(fresh));
		return v;
	}
	/* never in practice: the kernel always has random numbers for getrandom */
	if (getrandom(&v, sizeof(v), 0) != (ssize_t)sizeof(v)) {
		clock_gettime(CLOCK_MONOTONIC, &ts);
		v ^= ((uint64_t)ts.tv_sec * 1000000000u + (uint64_t)ts.tv_nsec) *
		     UINT64_C(0x9e3779b97f4a7c15);
	}
	return v;
}

rn_env rn_henv_default(void)
{
	return (rn_env){ .mem = { heap_alloc, heap_free, NULL }, .rng = rn_henv_rng };
}

int rn_henv_mutex_mine(pthread_mutex_t *m)
{
	/* glibc records the owner's thread id in every mutex kind it locks */
	return __atomic_load_n(&m->__data.__owner, __ATOMIC_RELAXED) == rn_sys_gettid();
}
