/*
 * ri2n_plain.c - plain read/write on a ri2n descriptor, the fast way.
 *
 * libri2n.so defines the data calls itself (rn_datacalls.c): a program
 * linked with it finds them before libc's, so its read, write, recv, send
 * and their vector and message forms on a ri2n socket take the fast path,
 * as ri2n_recv/ri2n_send do, and every other descriptor passes on to libc
 * after one lock-free look-up.  RI2N_PLAIN_FAST=0 turns this off (the calls
 * then reach the descriptor and ri2n's engine thread, as they always may:
 * raw system calls, stdio, a static build).
 *
 * ri2n-run does the same with its own table: a program under it that also
 * links libri2n finds ri2n-run's calls first, which pass ours on to here.
 *
 * The duplicating calls (dup, dup2, dup3, fcntl F_DUPFD and
 * F_DUPFD_CLOEXEC) are followed here, as ri2n-run follows them in its
 * own table (rn_shim_sock.c): the new number joins the table, so that its
 * writes take the fast path too and stay in order with the old number's.
 */
#define _GNU_SOURCE
#include <dlfcn.h>
#include <errno.h>
#include <fcntl.h>
#include <stdarg.h>
#include <unistd.h>

#include "rn_api.h"
#include "rn_api_int.h"
#include "rn_datacalls.h"
#include "rn_knobs.h"
#include "rn_sandbox.h"

static rn_datacalls_real g_real;
static int g_ready; /* 1 once g_real is filled */
static int g_on; /* RI2N_PLAIN_FAST, read at load */

const rn_datacalls_real *rn_dc_real(void)
{
	if (!__atomic_load_n(&g_ready, __ATOMIC_ACQUIRE)) {
		int saved = errno;

		/* every thread resolving at once writes the same values */
		RN_DATACALLS_FIND(&g_real);
		__atomic_store_n(&g_ready, 1, __ATOMIC_RELEASE);
		errno = saved;
	}
	return &g_real;
}

int rn_dc_ours(int fd)
{
	/* every descriptor that is not ri2n's ends at the first test; none in a sandbox */
	return rn_api_marked(fd) && __atomic_load_n(&g_on, __ATOMIC_RELAXED) > 0 && !rn_sandbox_on();
}

int rn_dc_known(void)
{
	return 0; /* close() is libc's: ask the kernel whether fd still is the socket */
}

/* ---- the duplicating calls ---- */

static struct {
	int (*dup)(int);
	int (*dup2)(int, int);
	int (*dup3)(int, int, int);
	int (*fcntl)(int, int, ...);
	int (*fcntl64)(int, int, ...);
} g_dup;
static int g_dup_ready;

static void dup_find(void)
{
	if (__atomic_load_n(&g_dup_ready, __ATOMIC_ACQUIRE))
		return;
	*(void **)&g_dup.dup = dlsym(RTLD_NEXT, "dup");
	*(void **)&g_dup.dup2 = dlsym(RTLD_NEXT, "dup2");
	*(void **)&g_dup.dup3 = dlsym(RTLD_NEXT, "dup3");
	*(void **)&g_dup.fcntl = dlsym(RTLD_NEXT, "fcntl");
	*(void **)&g_dup.fcntl64 = dlsym(RTLD_NEXT, "fcntl64");
	if (!g_dup.fcntl64)
		g_dup.fcntl64 = g_dup.fcntl;
	__atomic_store_n(&g_dup_ready, 1, __ATOMIC_RELEASE);
}

/*
 * nfd was just made a duplicate of old.  If old is a ri2n socket, nfd joins
 * the table; if it cannot (no memory), the socket is marked instead: its
 * fast sends look into the descriptor first, where nfd's writes wait.
 */
static void after_dup(int old, int nfd)
{
	int saved = errno;

	if (rn_dc_ours(old) && rn_api_dup(old, nfd) < 0)
		rn_api_note_plain(old);
	errno = saved;
}

__attribute__((visibility("default"))) int dup(int old)
{
	int nfd;

	dup_find();
	nfd = g_dup.dup(old);
	if (nfd >= 0)
		after_dup(old, nfd);
	return nfd;
}

__attribute__((visibility("default"))) int dup2(int old, int nfd)
{
	int rc;

	dup_find();
	rc = g_dup.dup2(old, nfd);
	if (rc >= 0 && old != nfd)
		after_dup(old, nfd);
	return rc;
}

__attribute__((visibility("default"))) int dup3(int old, int nfd, int flags)
{
	int rc;

	dup_find();
	rc = g_dup.dup3(old, nfd, flags);
	if (rc >= 0)
		after_dup(old, nfd);
	return rc;
}

static int fcntl_common(int (*real)(int, int, ...), int fd, int cmd, void *arg)
{
	int rc = real(fd, cmd, arg);

	if (rc >= 0 && (cmd == F_DUPFD || cmd == F_DUPFD_CLOEXEC))
		after_dup(fd, rc);
	return rc;
}

__attribute__((visibility("default"))) int fcntl(int fd, int cmd, ...)
{
	va_list ap;
	void *arg;

	/* the third argument is an int, a pointer or absent: a word either way (as glibc reads it) */
	va_start(ap, cmd);
	arg = va_arg(ap, void *);
	va_end(ap);
	dup_find();
	return fcntl_common(g_dup.fcntl, fd, cmd, arg);
}

__attribute__((visibility("default"))) int fcntl64(int fd, int cmd, ...)
{
	va_list ap;
	void *arg;

	va_start(ap, cmd);
	arg = va_arg(ap, void *);
	va_end(ap);
	dup_find();
	return fcntl_common(g_dup.fcntl64, fd, cmd, arg);
}

/*
 * At load, before any thread needs them: the calls to pass on to, and
 * whether ours serve ri2n descriptors.  If they do, this process's writes
 * to a ri2n descriptor are seen (the data calls, or the marking writers of
 * rn_datacalls.c), so a fast send need not first look into the descriptor
 * for bytes written past it (rn_api_writes_seen): a system call per send.
 * Not if the program's calls are not ours (libri2n loaded by dlopen, or
 * another interposer ahead of it: rn_dc_first): then every fast send looks.
 */
__attribute__((constructor)) static void plain_init(void)
{
	int saved = errno;

	rn_dc_real();
	dup_find();
	g_on = rn_proc_get(RN_PROC_PLAIN_FAST) != 0;
	if (g_on && rn_dc_first())
		rn_api_writes_seen();
	errno = saved;
}
