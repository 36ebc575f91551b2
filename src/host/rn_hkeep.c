/*
 * rn_hkeep.c - the polling drivers' keeper thread (rn_hkeep.h).
 */
#include <errno.h>
#include <time.h>

#include "rn_hkeep.h"

static void sleep_ns(uint64_t ns)
{
	struct timespec ts = { (time_t)(ns / 1000000000u), (long)(ns % 1000000000u) };

	while (nanosleep(&ts, &ts) < 0 && errno == EINTR)
		;
}

static int stopping(const rn_hkeep *k) { return __atomic_load_n(&k->stop, __ATOMIC_ACQUIRE); }

static void *keeper_main(void *arg)
{
	rn_hkeep *k = arg;
	int idle = 0;

	while (!stopping(k)) {
		sleep_ns(idle && k->idle_x > 1 ? k->idle_x * k->period_ns : k->period_ns);
		if (k->clock() - __atomic_load_n(k->last, __ATOMIC_RELAXED) < k->quiet_ns)
			continue; /* the driver ran lately: its caller is progressing */
		if (k->trylock(k->arg) != 0)
			continue;
		if (!stopping(k))
			idle = !k->pass(k->arg, k->clock());
		k->unlock(k->arg);
	}
	return NULL;
}

int rn_hkeep_start(rn_hkeep *k)
{
	int rc;

	if (!k->period_ns || k->on)
		return 0;
	k->stop = 0;
	rc = pthread_create(&k->th, NULL, keeper_main, k);
	k->on = rc == 0;
	return -rc;
}

void rn_hkeep_stop(rn_hkeep *k)
{
	if (!k->on)
		return;
	__atomic_store_n(&k->stop, 1, __ATOMIC_RELEASE);
	pthread_join(k->th, NULL);
	k->on = 0;
}
