/*
 * rn_sandbox.h - ri2n steps aside in a process under a seccomp filter
 * (rn_sandbox.c).
 */
#ifndef RN_SANDBOX_H
#define RN_SANDBOX_H

/*
 * Whether this process is (or is about to be) under a seccomp filter: from
 * then on ri2n makes no system call on the program's behalf; the data calls
 * pass straight to libc and ri2n descriptors carry data the descriptor's way.
 * Lock-free, no system call.
 */
int rn_sandbox_on(void);

/*
 * The program is about to install a seccomp filter (or set no_new_privs,
 * which comes first): says so in one log line, then steps aside.  Called by
 * the interposed prctl before the real call, while every system call is
 * still allowed.  how: what the program called, for the log line.
 */
void rn_sandbox_enter(const char *how);

/*
 * At load (ri2n-run's shim): a filter inherited across exec (/proc/self/status "Seccomp:"
 * other than 0) means stepping aside from the start, without a log line.
 * The check opens and reads a file, as the dynamic loader just did to load
 * ri2n.
 */
void rn_sandbox_check_at_load(void);

#endif
