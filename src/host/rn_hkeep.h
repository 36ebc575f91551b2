/*
 * rn_hkeep.h - the polling drivers' keeper thread.  A polling driver runs
 * the core only inside its caller's progress calls; a caller that makes
 * none for a while (an MPI rank computing) would leave ACKs, keepalives and
 * losses unanswered, and its peers would take it for dead.  The keeper
 * looks every period at when the driver last ran a pass and, once that is
 * older than quiet_ns, runs one itself, but only if the driver's lock is
 * free: it never delays the caller.
 *
 * The driver's lock and pass are hooks; the kit holds the thread, its
 * timing and its stop.  Started and stopped by the driver, never from the
 * keeper's own pass.
 */
#ifndef RN_HKEEP_H
#define RN_HKEEP_H

#include <pthread.h>
#include <stdint.h>

typedef struct rn_hkeep {
	uint64_t period_ns;      /* between looks; 0: rn_hkeep_start starts nothing */
	uint64_t quiet_ns;       /* a pass only once the driver's last is this old */
	unsigned idle_x;         /* after a pass that left nothing owed, look idle_x times rarer */
	uint64_t (*clock)(void); /* the clock *last is read on, in ns */
	const uint64_t *last;    /* the driver's last pass (read without its lock) */
	int (*trylock)(void *arg); /* 0: the driver's lock taken, else busy (no pass) */
	void (*unlock)(void *arg);
	int (*pass)(void *arg, uint64_t now); /* under the lock: 1 if work is still owed */
	void *arg;
	/* the kit's */
	pthread_t th;
	int on;
	int stop;
} rn_hkeep;

/*
 * Starts k's thread unless k->period_ns is 0 or it runs already.  Returns 0,
 * or -errno when no thread could be made (progress then happens only in
 * the caller's calls).
 */
int rn_hkeep_start(rn_hkeep *k);
/*
 * Stops k's thread and joins it.  The caller may hold the driver's lock
 * (the keeper only tries it); a pass begun finishes first, and none starts
 * after: the keeper reads the stop again under the lock.
 */
void rn_hkeep_stop(rn_hkeep *k);

#endif
