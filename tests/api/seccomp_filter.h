/*
 * seccomp_filter.h - the sandbox of the exec and seccomp tests: a process
 * that allows itself only the system calls given and dies on any other
 * (SECCOMP_RET_KILL_PROCESS: the parent sees SIGSYS), as an SSH daemon's
 * pre-authentication child does.  Raw BPF, as OpenSSH builds its own.
 */
#ifndef SECCOMP_FILTER_H
#define SECCOMP_FILTER_H

#include <errno.h>
#include <linux/audit.h>
#include <linux/filter.h>
#include <linux/seccomp.h>
#include <stddef.h>
#include <sys/prctl.h>
#include <sys/syscall.h>

#if defined(__x86_64__)
#define SANDBOX_ARCH AUDIT_ARCH_X86_64
#elif defined(__aarch64__)
#define SANDBOX_ARCH AUDIT_ARCH_AARCH64
#endif

/*
 * no_new_privs, then a filter allowing the n calls in nr[] (and nothing of
 * another architecture), or with deny, allowing everything but them.  0, or
 * -1 with errno.  The two prctl calls are the program's own, as in
 * OpenSSH's sandbox.
 */
static inline int sandbox_filter(const int *nr, int n, int deny)
{
#ifdef SANDBOX_ARCH
	struct sock_filter f[64];
	struct sock_fprog prog;
	int k = 0;

	if (n > 56) {
		errno = EINVAL;
		return -1;
	}
	f[k++] = (struct sock_filter)BPF_STMT(BPF_LD | BPF_W | BPF_ABS,
					      offsetof(struct seccomp_data, arch));
	f[k++] = (struct sock_filter)BPF_JUMP(BPF_JMP | BPF_JEQ | BPF_K, SANDBOX_ARCH, 1, 0);
	f[k++] = (struct sock_filter)BPF_STMT(BPF_RET | BPF_K, SECCOMP_RET_KILL_PROCESS);
	f[k++] = (struct sock_filter)BPF_STMT(BPF_LD | BPF_W | BPF_ABS,
					      offsetof(struct seccomp_data, nr));
	for (int i = 0; i < n; i++) {
		f[k++] = (struct sock_filter)BPF_JUMP(BPF_JMP | BPF_JEQ | BPF_K, (unsigned)nr[i], 0, 1);
		f[k++] = (struct sock_filter)BPF_STMT(BPF_RET | BPF_K,
						      deny ? SECCOMP_RET_KILL_PROCESS : SECCOMP_RET_ALLOW);
	}
	f[k++] = (struct sock_filter)BPF_STMT(BPF_RET | BPF_K,
					      deny ? SECCOMP_RET_ALLOW : SECCOMP_RET_KILL_PROCESS);
	prog = (struct sock_fprog){ .len = (unsigned short)k, .filter = f };
	if (prctl(PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0) < 0)
		return -1;
	return prctl(PR_SET_SECCOMP, SECCOMP_MODE_FILTER, &prog, 0, 0);
#else
	(void)nr;
	(void)n;
	(void)deny;
	errno = ENOSYS;
	return -1;
#endif
}

/* A sandbox that allows only the n calls in nr[]. */
static inline int sandbox_only(const int *nr, int n)
{
	return sandbox_filter(nr, n, 0);
}

/*
 * A filter a program execs under (inherited across exec): everything but
 * getsockopt, which the shim's descriptor checks use (a socket cookie) and
 * which the exec'd program itself then never calls.
 */
#define SANDBOX_EXEC_DENIED SYS_getsockopt

/*
 * What a sandboxed echo needs: wait for its socket (poll, as OpenSSH's
 * packet loop does: glibc's poll is the poll or the ppoll system call), read
 * and write it, leave with exit() or _exit() (exit_group; exit for a
 * thread), return from a signal handler.  A sanitizer's runtime takes down
 * its signal stack once the filter is in (its prctl interceptor):
 * sigaltstack too, there.
 */
#ifdef SYS_poll
#define SANDBOX_POLL_CALLS SYS_poll, SYS_ppoll
#else
#define SANDBOX_POLL_CALLS SYS_ppoll
#endif
#if defined(__SANITIZE_ADDRESS__) || defined(__SANITIZE_THREAD__)
#define SANDBOX_ECHO_CALLS SANDBOX_POLL_CALLS, SYS_read, SYS_write, SYS_exit_group, SYS_exit, \
			   SYS_rt_sigreturn, SYS_sigaltstack
#else
#define SANDBOX_ECHO_CALLS SANDBOX_POLL_CALLS, SYS_read, SYS_write, SYS_exit_group, SYS_exit, \
			   SYS_rt_sigreturn
#endif

/*
 * How a sandboxed child leaves: exit(), so that ri2n's exit handlers run in
 * the sandbox too; under a sanitizer _exit(), whose own exit checks
 * (LeakSanitizer) need calls the sandbox forbids.
 */
#if defined(__SANITIZE_ADDRESS__) || defined(__SANITIZE_THREAD__)
#define SANDBOX_EXIT _exit
#else
#define SANDBOX_EXIT exit
#endif

#endif
