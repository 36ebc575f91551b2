/*
 * rn_seccomp.c - the interposed prctl: a program about to install a
 * seccomp filter makes ri2n step aside first (rn_sandbox.h).  Compiled into
 * both interposers, libri2n and ri2n-run's shim, like rn_datacalls.c.
 *
 * prctl(PR_SET_SECCOMP, ...) installs a filter (OpenSSH's sandbox does it
 * this way); prctl(PR_SET_NO_NEW_PRIVS, 1) comes before any filter an
 * unprivileged process installs, whichever way (libseccomp then uses the
 * seccomp system call through syscall(), which ri2n does not interpose: its
 * own system calls go through syscall() too).  Either one, seen here before
 * it reaches the kernel, switches ri2n off for the rest of the process's
 * life; the log line is written while every call is still allowed.
 *
 * A filter already there at load (inherited across exec) means stepping
 * aside from the start under ri2n-run only: the program did not choose ri2n,
 * so its TCP staying TCP is the safe answer to a filter the shim cannot
 * read.  A program linked with libri2n chose it, like any library it links:
 * whoever filters it allows ri2n's calls (a systemd unit's SystemCallFilter),
 * and ri2n works there as anywhere.
 */
#define _GNU_SOURCE
#include <dlfcn.h>
#include <errno.h>
#include <stdarg.h>
#include <sys/prctl.h>

#include "rn_api.h"
#include "rn_sandbox.h"
#include "rn_sys.h"
#ifdef RN_IN_SHIM
#include "rn_shim.h"
#endif

#define RN_SC_API __attribute__((visibility("default")))

static int (*g_real_prctl)(int, ...);

__attribute__((constructor)) static void seccomp_init(void)
{
	int saved = errno;

	*(void **)&g_real_prctl = dlsym(RTLD_NEXT, "prctl");
#ifdef RN_IN_SHIM
	rn_sandbox_check_at_load();
	if (rn_sandbox_on() && rn_shim_verbose()) {
		/* no pid in it: getpid may be what the filter forbids; write rarely is */
		static const char line[] = "ri2n-run: started under a seccomp filter: the shim "
					   "steps aside (TCP stays TCP; calls pass straight on)\n";

		if (rn_sys_write(2, line, sizeof(line) - 1) < 0) {
			/* nowhere to say it */
		}
	}
#endif
	errno = saved;
}

RN_SC_API int prctl(int option, ...)
{
	unsigned long a[4];
	va_list ap;

	/* prctl takes up to four more arguments, as unsigned long: pass all four on */
	va_start(ap, option);
	for (int i = 0; i < 4; i++)
		a[i] = va_arg(ap, unsigned long);
	va_end(ap);
	if (option == PR_SET_SECCOMP || (option == PR_SET_NO_NEW_PRIVS && a[0] == 1)) {
		int first = !rn_sandbox_on();

		const char *how = option == PR_SET_SECCOMP ? "prctl(PR_SET_SECCOMP)" :
							     "prctl(PR_SET_NO_NEW_PRIVS)";

		rn_sandbox_enter(how);
		if (first) {
			/* bytes the fast path read ahead must be where the plain reads look */
			rn_api_all_to_descriptor();
#ifdef RN_IN_SHIM
			rn_shim_log("%s: a seccomp sandbox: the shim steps aside (every call passes "
				    "straight on; ri2n sockets carry data through their descriptor)", how);
#endif
		}
	}
	if (!g_real_prctl)
		seccomp_init(); /* called before our constructor ran (another library's) */
	if (!g_real_prctl) {
		errno = ENOSYS;
		return -1;
	}
	return g_real_prctl(option, a[0], a[1], a[2], a[3]);
}
