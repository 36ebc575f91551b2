/*
 * rn_sandbox.c - ri2n steps aside under seccomp.
 *
 * A server's pre-authentication child (an SSH daemon's privilege
 * separation) installs a seccomp filter that allows the few system calls
 * its own code makes and kills the process (SIGSYS) on any other.  ri2n
 * makes calls of its own on the program's behalf (a socket cookie to check
 * a descriptor, a getpid, the rails' I/O): inside such a sandbox any of them
 * can kill the child.  So from the moment the program asks for a filter ri2n
 * makes none: its interposers pass every call straight on and its
 * descriptors carry data through the socketpair, served by the engine of
 * the process that owns the connection (a sandboxed child is normally a
 * fork of the unsandboxed server, whose engine goes on serving it).
 *
 * The moment is seen three ways: prctl(PR_SET_SECCOMP) and
 * prctl(PR_SET_NO_NEW_PRIVS, 1) interposed (rn_seccomp.c; libseccomp and
 * OpenSSH both set no_new_privs before the filter, and an unprivileged
 * process must), and a filter already there at load (inherited across
 * exec).  The flag is never cleared: filters are never removed.
 */
#define _GNU_SOURCE
#include <errno.h>
#include <fcntl.h>
#include <stdlib.h>
#include <string.h>

#include "rn_log.h"
#include "rn_sandbox.h"
#include "rn_sys.h"

static int g_on; /* (atomic) */

int rn_sandbox_on(void)
{
	return __atomic_load_n(&g_on, __ATOMIC_RELAXED);
}

void rn_sandbox_enter(const char *how)
{
	int saved = errno;

	if (__atomic_exchange_n(&g_on, 1, __ATOMIC_ACQ_REL))
		return;
	/* no getpid here: an inherited filter may forbid it */
	rn_info("%s: a seccomp sandbox; ri2n steps aside (no system call of its own from now "
		"on: ri2n sockets carry data through their descriptor, served by the process "
		"that owns them)", how);
	errno = saved;
}

/* The number after "Seccomp:" in /proc/self/status; 0 if the line is missing. */
static int seccomp_mode(void)
{
	char buf[4096], *p;
	ssize_t n, got = 0;
	int fd = rn_sys_open("/proc/self/status", O_RDONLY | O_CLOEXEC);

	if (fd < 0)
		return 0;
	while (got < (ssize_t)sizeof(buf) - 1 &&
	       (n = rn_sys_read(fd, buf + got, sizeof(buf) - 1 - (size_t)got)) > 0)
		got += n;
	rn_sys_close(fd);
	buf[got] = 0;
	p = strstr(buf, "\nSeccomp:");
	return p ? atoi(p + strlen("\nSeccomp:")) : 0;
}

void rn_sandbox_check_at_load(void)
{
	int saved = errno;

	/*
	 * Silently: a log line (time, pid, stderr) needs calls the inherited
	 * filter may forbid; the process that installed it said so already.
	 */
	if (!rn_sandbox_on() && seccomp_mode() != 0)
		__atomic_store_n(&g_on, 1, __ATOMIC_RELEASE);
	errno = saved;
}
