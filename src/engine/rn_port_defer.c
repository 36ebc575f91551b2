/*
 * rn_port_defer.c - an inline thread's datagrams sent after the host lock
 * (rn_port_defer.h says why).
 *
 * Order: a connection's datagrams still leave each socket in the order
 * they were queued by one thread; two threads' copies may cross in the
 * kernel, which the protocol takes as it takes reordering on the wire.
 * The port counts the senders outside the lock (tx_out) and closes no
 * socket of it until they are done (rn_port.c, wait_takers).
 */
#define _GNU_SOURCE
#include <stdlib.h>

#include "rn_host_lock.h"
#include "rn_port.h"
#include "rn_port_defer.h"
#include "rn_port_int.h"

#define DEFER_SOCKS 4 /* sockets one inline call leaves queues on */

static RN_TLS struct {
	rn_usock *wait[DEFER_SOCKS]; /* queues waiting for the leave (under the lock) */
	int nwait;
	rn_usock *out[DEFER_SOCKS];  /* taken, sent after the lock */
	int nout;
	/*
	 * From the take to the end of the sends: a signal handler's call on
	 * this thread meanwhile sends under the lock, leaving t alone.
	 */
	int busy;
	rn_htake *t;                 /* DEFER_SOCKS copies, made on first use */
} t_def;

static pthread_key_t g_key;
static pthread_once_t g_once = PTHREAD_ONCE_INIT;
static int g_key_ok;

/* At the thread's exit; a later call of its own (another destructor's close) makes them again. */
static void copies_free(void *v)
{
	free(v);
	t_def.t = NULL;
}

static void key_make(void)
{
	g_key_ok = pthread_key_create(&g_key, copies_free) == 0;
}

/* This thread's copies; NULL if they cannot be had (then sends stay under the lock). */
static rn_htake *copies(void)
{
	if (t_def.t)
		return t_def.t;
	pthread_once(&g_once, key_make);
	if (!g_key_ok)
		return NULL;
	t_def.t = malloc(DEFER_SOCKS * sizeof(rn_htake));
	if (t_def.t && pthread_setspecific(g_key, t_def.t) != 0) {
		free(t_def.t);
		t_def.t = NULL;
	}
	return t_def.t;
}

int rn_port_defer(rn_usock *u)
{
	RN_OWNS_HOST();
	if (t_def.busy || __atomic_load_n(&u->defer_off, __ATOMIC_RELAXED))
		return 0;
	for (int k = 0; k < t_def.nwait; k++)
		if (t_def.wait[k] == u)
			return 1;
	if (t_def.nwait == DEFER_SOCKS || !copies())
		return 0;
	t_def.wait[t_def.nwait++] = u;
	return 1;
}

int rn_port_deferred(void)
{
	return t_def.nwait;
}

int rn_port_defer_take(void)
{
	int n = t_def.nwait;

	RN_OWNS_HOST();
	t_def.nwait = 0;
	t_def.nout = 0;
	for (int k = 0; k < n; k++)
		if (rn_port_take(t_def.wait[k], &t_def.t[t_def.nout]))
			t_def.out[t_def.nout++] = t_def.wait[k];
	t_def.busy = t_def.nout > 0;
	return t_def.nout;
}

void rn_port_defer_send(void)
{
	for (int k = 0; k < t_def.nout; k++) {
		rn_usock *u = t_def.out[k];
		rn_port *p = u->port;

		if (rn_htake_send(&t_def.t[k]) != 0)
			__atomic_store_n(&u->defer_off, 1, __ATOMIC_RELAXED);
		__atomic_sub_fetch(&p->tx_out, 1, __ATOMIC_ACQ_REL); /* u may go from here on */
	}
	t_def.nout = 0;
	t_def.busy = 0;
}

void rn_port_defer_flush(void)
{
	RN_OWNS_HOST();
	for (int k = 0; k < t_def.nwait; k++)
		rn_port_flush_usock(t_def.wait[k]);
	t_def.nwait = 0;
}
