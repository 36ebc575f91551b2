/*
 * rn_sig.h - what ri2n knows of the signal handlers and ri2n calls running
 * on the calling thread.
 *
 * The program's handlers run inside a trampoline (rn_sigcalls.c, compiled
 * into libri2n and into ri2n-run) that counts them here: whether the thread
 * is in a handler now, and how many handlers ran on it with and without
 * SA_RESTART.  A data call counts itself while it runs (rn_sig_call_begin),
 * so a call re-entered on the same thread (from a handler the trampoline
 * does not see, or from code a ri2n call runs) is known too.  Such a call
 * takes no lock and allocates nothing: the interrupted frame of the same
 * thread may hold the lock, or be inside malloc.
 *
 * Per-thread, initial-exec (RN_TLS): no allocation on first use, so safe
 * to touch in a handler.
 */
#ifndef RN_SIG_H
#define RN_SIG_H

#include <signal.h>

#include "rn_tls.h"

extern RN_TLS int rn_sig_t_handler;         /* handlers running on this thread */
extern RN_TLS int rn_sig_t_calls;           /* data calls in progress on this thread */
extern RN_TLS unsigned rn_sig_t_restart;    /* handlers run with SA_RESTART */
extern RN_TLS unsigned rn_sig_t_norestart;  /* handlers run without it */

/* Whether a data call must go the descriptor's way, lock-free (in a handler, or re-entered). */
static inline int rn_sig_unsafe(void)
{
	return rn_sig_t_handler | rn_sig_t_calls;
}

/* Whether this thread is running a handler the program installed. */
static inline int rn_sig_in_handler(void)
{
	return rn_sig_t_handler > 0;
}

/* A data call begins / ends on this thread. */
static inline void rn_sig_call_begin(void)
{
	rn_sig_t_calls++;
}

static inline void rn_sig_call_end(void)
{
	rn_sig_t_calls--;
}

/* The handlers run so far on this thread, to compare after a wait (rn_sig_restartable). */
typedef struct rn_sig_snap {
	unsigned restart, norestart;
} rn_sig_snap;

static inline rn_sig_snap rn_sig_now(void)
{
	return (rn_sig_snap){ rn_sig_t_restart, rn_sig_t_norestart };
}

/*
 * A wait begun at `before` ended with EINTR: whether the kernel would
 * restart it.  1 only if every handler run since was installed with
 * SA_RESTART (and at least one was: an EINTR no trampoline saw, from a
 * handler installed past ri2n, stays EINTR).  The caller applies the
 * socket's own rule first (a timeout set: never restarted, see signal(7)).
 */
static inline int rn_sig_restartable(rn_sig_snap before)
{
	return rn_sig_t_norestart == before.norestart && rn_sig_t_restart != before.restart;
}

/* The trampoline: a handler with the given sa_flags starts / has ended. */
static inline void rn_sig_handler_begin(void)
{
	rn_sig_t_handler++;
}

static inline void rn_sig_handler_end(int sa_flags)
{
	rn_sig_t_handler--;
	if (sa_flags & SA_RESTART)
		rn_sig_t_restart++;
	else
		rn_sig_t_norestart++;
}

#endif
