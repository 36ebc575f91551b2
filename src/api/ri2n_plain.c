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
 */
#define _GNU_SOURCE
#include <dlfcn.h>
#include <errno.h>

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

/*
 * At load, before any thread needs them: the calls to pass on to, and
 * whether ours serve ri2n descriptors.  If they do, this process's writes
 * to a ri2n descriptor are seen (the data calls, or the marking writers of
 * rn_datacalls.c), so a fast send need not first look into the descriptor
 * for bytes written past it (rn_api_writes_seen): a system call per send.
 */
__attribute__((constructor)) static void plain_init(void)
{
	int saved = errno;

	rn_dc_real();
	g_on = rn_proc_get(RN_PROC_PLAIN_FAST) != 0;
	if (g_on)
		rn_api_writes_seen();
	errno = saved;
}
