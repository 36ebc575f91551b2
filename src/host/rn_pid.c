/*
 * rn_pid.c - this process's id without a system call.
 *
 * ri2n asks "am I still the process that made this?" on most socket calls
 * (the engine, the descriptor tables, the knobs' snapshot): a forked child
 * shares none of its parent's engine.  A getpid each time was 11 system
 * calls of a connection per request under ri2n-run.  The id is read once
 * and read again in a child of fork (the fork handler below, registered
 * before any other of ri2n's so it runs first in the child) and of _Fork
 * (rn_pid_forked, from its interposer: no fork handler runs there).
 *
 * A child that shares our memory without a fork handler (vfork, clone with
 * or without CLONE_VM) would read its parent's id here and take the
 * parent's state for its own, so once the program made such a child
 * (rn_pid_unsure, from the vfork and clone interposers) every call asks the
 * kernel again, for the rest of the process's life: the parent cannot tell
 * when the child is done with the memory.  A raw clone system call is not
 * seen; such a child must not use ri2n's sockets.
 */
#define _GNU_SOURCE
#include <pthread.h>

#include "rn_sys.h"

static pid_t g_pid;   /* (atomic) 0: not read yet */
static int g_unsure;  /* (atomic) a child that shares our memory may be running */

void rn_pid_forked(void)
{
	__atomic_store_n(&g_pid, rn_sys_getpid(), __ATOMIC_RELAXED);
}

void rn_pid_unsure(void)
{
	__atomic_store_n(&g_unsure, 1, __ATOMIC_RELAXED);
}

pid_t rn_pid(void)
{
	pid_t pid;

	if (__atomic_load_n(&g_unsure, __ATOMIC_RELAXED))
		return rn_sys_getpid();
	pid = __atomic_load_n(&g_pid, __ATOMIC_RELAXED);
	if (!pid) {
		pid = rn_sys_getpid();
		__atomic_store_n(&g_pid, pid, __ATOMIC_RELAXED);
	}
	return pid;
}

/* First among ri2n's constructors: the child's id is right before another fork handler asks. */
__attribute__((constructor(101))) static void pid_init(void)
{
	pthread_atfork(NULL, NULL, rn_pid_forked);
	rn_pid_forked();
}
