/*
 * rn_shim_real.c - libc's own socket calls, behind the shim's.
 *
 * dlsym(RTLD_NEXT) finds the definition after ours in the lookup order:
 * libc's.  Resolved once, on the first call of any interposed function
 * (which may come before our constructor, from another library's); every
 * thread resolving at once writes the same values.
 */
#define _GNU_SOURCE
#include <dlfcn.h>
#include <errno.h>
#include <stdarg.h>
#include <unistd.h>

#include "rn_shim.h"
#include "rn_sys.h"

static rn_shim_real g_real;
static int g_ready;

/* Used when libc lacks close_range (before glibc 2.34). */
static int sys_close_range(unsigned int first, unsigned int last, int flags)
{
	return rn_sys_close_range(first, last, (unsigned int)flags);
}

/* Used when libc lacks closefrom (before glibc 2.34). */
static void sys_closefrom(int low)
{
	rn_sys_close_range((unsigned int)low, ~0u, 0);
}

#define FIND(f) (*(void **)&g_real.f = dlsym(RTLD_NEXT, #f))

const rn_shim_real *rn_shim_real_get(void)
{
	if (__atomic_load_n(&g_ready, __ATOMIC_ACQUIRE))
		return &g_real;
	int saved = errno;

	FIND(socket);
	FIND(bind);
	FIND(listen);
	FIND(accept);
	FIND(accept4);
	FIND(connect);
	FIND(getsockname);
	FIND(getpeername);
	FIND(setsockopt);
	FIND(getsockopt);
	FIND(close);
	FIND(close_range);
	FIND(dup);
	FIND(dup2);
	FIND(dup3);
	FIND(fcntl);
	FIND(fcntl64);
	RN_DATACALLS_FIND(&g_real.io);
	FIND(epoll_create);
	FIND(epoll_create1);
	FIND(epoll_ctl);
	FIND(epoll_pwait);
	FIND(ppoll);
	FIND(select);
	FIND(pselect);
	FIND(fclose);
	FIND(closefrom);
	FIND(pipe2);
	FIND(timerfd_create);
	FIND(eventfd);
	if (!g_real.close_range)
		g_real.close_range = sys_close_range;
	if (!g_real.closefrom)
		g_real.closefrom = sys_closefrom;
	if (!g_real.fcntl64)
		g_real.fcntl64 = g_real.fcntl;
	__atomic_store_n(&g_ready, 1, __ATOMIC_RELEASE);
	errno = saved;
	return &g_real;
}

__attribute__((constructor)) static void rn_shim_real_init(void)
{
	rn_shim_real_get();
}
