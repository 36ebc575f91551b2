/*
 * rn_sigcalls.c - the interposed sigaction and signal: the program's
 * handlers run inside a trampoline that tells ri2n a handler is running on
 * the thread, and with which flags (rn_sig.h).  Two interposers compile this
 * file, as they do rn_datacalls.c: libri2n itself and ri2n-run's shim.  Each
 * links its own copy of the engine, so each counts into its own rn_sig.h
 * state; a program under ri2n-run that also links libri2n has its handlers
 * wrapped twice (the shim's sigaction passes its trampoline on to
 * libri2n's), and both copies know.
 *
 * What ri2n does with it: a data call in a handler takes no lock and goes
 * the descriptor's way (ri2n_fast.c); a close in a handler under ri2n-run
 * does only what is async-signal-safe (rn_shim_sock.c); a blocking wait a
 * handler interrupted resumes if that handler was installed with
 * SA_RESTART, as the kernel's TCP does (rn_inline_io.c).
 *
 * The program sees its own handlers: the old action sigaction returns is
 * the one it installed, never the trampoline.  SIG_DFL and SIG_IGN pass
 * through as they are.  A handler that leaves by siglongjmp leaves the
 * thread counted as in a handler: its data calls stay on the descriptor's
 * way (correct, only slower).
 */
#define _GNU_SOURCE
#include <dlfcn.h>
#include <errno.h>
#include <signal.h>
#include <string.h>

#include "rn_sig.h"

#define RN_SIG_API __attribute__((visibility("default")))
/*
 * Not instrumented by TSan: its runtime installs its own handlers through
 * sigaction while it initialises, before instrumented code may run.
 */
#define NO_TSAN __attribute__((no_sanitize_thread))

/* The program's handler of each signal while the trampoline stands in for it. */
static struct {
	void (*sa)(int, siginfo_t *, void *); /* with SA_SIGINFO */
	void (*h)(int);                       /* without */
	int siginfo;                          /* SA_SIGINFO: sa, else h */
	int flags;                            /* the program's sa_flags */
} g_handler[NSIG];

static int (*real_sigaction)(int, const struct sigaction *, struct sigaction *);

NO_TSAN static void trampoline(int sig, siginfo_t *si, void *uc)
{
	int saved = errno, flags = __atomic_load_n(&g_handler[sig].flags, __ATOMIC_ACQUIRE);

	rn_sig_handler_begin();
	errno = saved;
	if (__atomic_load_n(&g_handler[sig].siginfo, __ATOMIC_ACQUIRE))
		__atomic_load_n(&g_handler[sig].sa, __ATOMIC_ACQUIRE)(sig, si, uc);
	else
		__atomic_load_n(&g_handler[sig].h, __ATOMIC_ACQUIRE)(sig);
	saved = errno;
	rn_sig_handler_end(flags);
	errno = saved;
}

NO_TSAN static int wrappable(int sig, const struct sigaction *act)
{
	if (sig <= 0 || sig >= NSIG || !act)
		return 0;
	if (act->sa_flags & SA_SIGINFO)
		return act->sa_sigaction != NULL;
	return act->sa_handler != SIG_DFL && act->sa_handler != SIG_IGN;
}

RN_SIG_API NO_TSAN int sigaction(int sig, const struct sigaction *act, struct sigaction *old)
{
	struct sigaction mine, prev;
	int rc, saved;

	if (!real_sigaction)
		*(void **)&real_sigaction = dlsym(RTLD_NEXT, "sigaction");
	if (!real_sigaction) {
		errno = ENOSYS;
		return -1;
	}
	if (sig <= 0 || sig >= NSIG)
		return real_sigaction(sig, act, old);
	if (wrappable(sig, act)) {
		mine = *act; /* the program's flags (SA_RESTART...) are the kernel's too */
		__atomic_store_n(&g_handler[sig].flags, act->sa_flags, __ATOMIC_RELEASE);
		if (act->sa_flags & SA_SIGINFO)
			__atomic_store_n(&g_handler[sig].sa, act->sa_sigaction, __ATOMIC_RELEASE);
		else
			__atomic_store_n(&g_handler[sig].h, act->sa_handler, __ATOMIC_RELEASE);
		__atomic_store_n(&g_handler[sig].siginfo, (act->sa_flags & SA_SIGINFO) != 0,
				 __ATOMIC_RELEASE);
		mine.sa_flags |= SA_SIGINFO;
		mine.sa_sigaction = trampoline;
		act = &mine;
	}
	rc = real_sigaction(sig, act, &prev);
	saved = errno;
	if (rc == 0 && old) {
		*old = prev;
		if ((prev.sa_flags & SA_SIGINFO) && prev.sa_sigaction == trampoline) {
			/* what the program installed, as it installed it */
			old->sa_flags = g_handler[sig].flags;
			if (g_handler[sig].siginfo)
				old->sa_sigaction = g_handler[sig].sa;
			else
				old->sa_handler = g_handler[sig].h;
		}
	}
	errno = saved;
	return rc;
}

/* signal(): glibc's BSD semantics (SA_RESTART, the signal blocked in its handler), through ours. */
RN_SIG_API NO_TSAN sighandler_t signal(int sig, sighandler_t h)
{
	struct sigaction act, old;

	memset(&act, 0, sizeof(act));
	act.sa_handler = h;
	act.sa_flags = SA_RESTART;
	sigemptyset(&act.sa_mask);
	if (sig > 0 && sig < NSIG)
		sigaddset(&act.sa_mask, sig);
	if (sigaction(sig, &act, &old) < 0)
		return SIG_ERR;
	return old.sa_handler;
}
