/*
 * rn_engine.c - the engine thread: start on first use, the command queue,
 * the process-wide configuration, and what happens across fork().
 */
#define _GNU_SOURCE
#include <errno.h>
#include <event2/event.h>
#include <pthread.h>
#include <sched.h>
#include <signal.h>
#include <sodium.h>
#include <stdlib.h>
#include <string.h>
#include <sys/eventfd.h>
#include <sys/socket.h>
#include <time.h>
#include <unistd.h>

#include "ri2n.h"
#include "rn_henv.h"
#include "rn_handover.h"
#include "rn_events.h"
#include "rn_inline.h"
#include "rn_knobs.h"
#include "rn_log.h"
#include "rn_netlink.h"
#include "rn_port.h"
#include "rn_publish.h"
#include "rn_stream.h"
#include "rn_sys.h"

typedef struct rn_cmd {
	int type;
	rn_sock *s;
	void *arg;
	int rc;
	int done;
	int orphan;  /* (g.mu) its waiter gave up: the engine frees it (rn_engine_pending) */
	int mode;    /* rn_engine_pending's argument, kept in the command itself */
	pthread_cond_t cv;
	struct rn_cmd *next;
} rn_cmd;

static struct {
	pthread_mutex_t mu; /* the command queue, and start/stop */
	int started;
	pid_t pid;          /* the process this engine runs in */
	pthread_t thread;
	struct event_base *base;
	int wake_fd;
	struct event *wake_ev;
	rn_cmd *head, *tail;
	rn_config cfg;
	rn_rail_info rails[RN_MAX_RAILS];
	int nrails;
	rn_env env;
} g = { .mu = PTHREAD_MUTEX_INITIALIZER, .wake_fd = -1 };

static int g_kicked; /* (host lock) a wake-up is on its way to the engine */
static RN_TLS int t_engine; /* this thread is the engine */

int rn_engine_self(void)
{
	return t_engine;
}

static __thread int t_making;

int rn_engine_making(void)
{
	return t_making;
}

void rn_host_kick(void)
{
	uint64_t one = 1;

	if (g_kicked || g.wake_fd < 0)
		return;
	g_kicked = 1;
	if (rn_sys_write(g.wake_fd, &one, sizeof(one)) < 0) {
		/* saturated: a wake-up is pending anyway */
	}
}

struct event_base *rn_engine_base(void) { return g.base; }
const rn_env *rn_engine_env(void) { return &g.env; }
const rn_config *rn_engine_config(void) { return &g.cfg; }

int rn_engine_rails(const rn_rail_info **rails)
{
	*rails = g.rails;
	return g.nrails;
}

void rn_engine_rail_addr(int rail, const rn_hlink_ev *e)
{
	rn_hlink_give(e, &g.rails[rail]);
}

void rn_engine_rail_set(int rail, const rn_rail_info *r)
{
	g.rails[rail].ip = r->ip;
	g.rails[rail].v6 = r->v6;
	memcpy(g.rails[rail].ip6, r->ip6, sizeof(r->ip6));
	g.rails[rail].prefix = r->prefix;
}

/* ---- commands ---- */

static int run_cmd(rn_cmd *c)
{
	switch (c->type) {
	case RN_CMD_CREATE:
		return rn_stream_cmd_create(c->s);
	case RN_CMD_BIND:
		return rn_stream_cmd_bind(c->s, c->arg);
	case RN_CMD_LISTEN:
		return rn_stream_cmd_listen(c->s);
	case RN_CMD_CONNECT:
		return rn_stream_cmd_connect(c->s, c->arg);
	case RN_CMD_STATS:
		return rn_stream_cmd_stats(c->s, c->arg);
	case RN_CMD_PENDING:
		return rn_stream_cmd_pending(c->arg ? *(int *)c->arg : 0);
	case RN_CMD_TAKE_PORT:
		return rn_handover_cmd_port(c->arg);
	case RN_CMD_TAKE_IMPORT:
		return rn_handover_cmd_import(c->s, c->arg);
	default:
		return -EINVAL;
	}
}

static void on_wake(evutil_socket_t fd, short what, void *arg)
{
	uint64_t v;

	(void)what;
	(void)arg;
	if (rn_sys_read(fd, &v, sizeof(v)) < 0) {
		/* EAGAIN: woken for commands already taken */
	}
	rn_host_lock();
	g_kicked = 0;
	for (;;) {
		rn_cmd *c;
		int orphan;

		pthread_mutex_lock(&g.mu);
		c = g.head;
		if (c) {
			g.head = c->next;
			if (!g.head)
				g.tail = NULL;
		}
		pthread_mutex_unlock(&g.mu);
		if (!c)
			break;
		c->rc = run_cmd(c);
		pthread_mutex_lock(&g.mu);
		c->done = 1;
		orphan = c->orphan;
		if (!orphan)
			pthread_cond_signal(&c->cv);
		pthread_mutex_unlock(&g.mu);
		if (orphan) {
			pthread_cond_destroy(&c->cv);
			free(c);
		}
	}
	rn_port_sync();
	rn_netlink_sync();
	rn_stream_service_dirty();
	rn_host_unlock();
}

/* Queues c for the engine thread and wakes it. */
static void cmd_post(rn_cmd *c)
{
	uint64_t one = 1;

	pthread_mutex_lock(&g.mu);
	if (g.tail)
		g.tail->next = c;
	else
		g.head = c;
	g.tail = c;
	pthread_mutex_unlock(&g.mu);
	if (rn_sys_write(g.wake_fd, &one, sizeof(one)) < 0) {
		/* the counter is saturated: a wake-up is pending anyway */
	}
}

int rn_engine_call(int type, rn_sock *s, void *arg)
{
	rn_cmd c = { .type = type, .s = s, .arg = arg };
	int rc = rn_engine_start(), ct;

	if (rc)
		return rc;
	if (pthread_equal(pthread_self(), g.thread))
		return run_cmd(&c);
	/* no cancellation while c, on this stack, is queued or g.mu held */
	ct = rn_sys_nocancel_begin();
	pthread_cond_init(&c.cv, NULL);
	cmd_post(&c);
	pthread_mutex_lock(&g.mu);
	while (!c.done)
		pthread_cond_wait(&c.cv, &g.mu);
	pthread_mutex_unlock(&g.mu);
	pthread_cond_destroy(&c.cv);
	rn_sys_nocancel_end(ct);
	return c.rc;
}

static unsigned long long g_connects, g_connects_inline; /* (atomic) */

int rn_engine_connect(rn_sock *s, const rn_hsa *a)
{
	int rc = rn_engine_start();

	if (rc)
		return rc;
	__atomic_add_fetch(&g_connects, 1, __ATOMIC_RELAXED);
	if (!pthread_equal(pthread_self(), g.thread) && !rn_host_held_here()) {
		rc = rn_inline_connect(s, a);
		if (rc != RN_CMD_ENGINE_ONLY) {
			__atomic_add_fetch(&g_connects_inline, 1, __ATOMIC_RELAXED);
			return rc;
		}
	}
	return rn_engine_call(RN_CMD_CONNECT, s, (void *)a);
}

void rn_engine_connects(unsigned long long *all, unsigned long long *inline_done)
{
	*all = __atomic_load_n(&g_connects, __ATOMIC_RELAXED);
	*inline_done = __atomic_load_n(&g_connects_inline, __ATOMIC_RELAXED);
}

int rn_engine_post(int type, rn_sock *s)
{
	rn_cmd *c;
	int rc = rn_engine_start(), ct;

	if (rc)
		return rc;
	if (pthread_equal(pthread_self(), g.thread))
		return run_cmd(&(rn_cmd){ .type = type, .s = s });
	c = calloc(1, sizeof(*c));
	if (!c)
		return -ENOMEM;
	c->type = type;
	c->s = s;
	c->orphan = 1; /* nobody waits: the engine frees it */
	pthread_cond_init(&c->cv, NULL);
	ct = rn_sys_nocancel_begin(); /* no cancellation with g.mu held */
	cmd_post(c);
	rn_sys_nocancel_end(ct);
	return 0;
}

int rn_engine_pending(int mode, long ms)
{
	rn_cmd *c;
	pthread_condattr_t ca;
	struct timespec dl;
	int rc = rn_engine_start(), done, ct;

	if (rc)
		return rc;
	if (pthread_equal(pthread_self(), g.thread))
		return run_cmd(&(rn_cmd){ .type = RN_CMD_PENDING, .arg = &mode });
	c = calloc(1, sizeof(*c));
	if (!c)
		return -ENOMEM;
	c->type = RN_CMD_PENDING;
	c->mode = mode;
	c->arg = &c->mode; /* nothing in it points into this stack: it may outlive the call */
	pthread_condattr_init(&ca);
	pthread_condattr_setclock(&ca, CLOCK_MONOTONIC);
	pthread_cond_init(&c->cv, &ca);
	pthread_condattr_destroy(&ca);
	ct = rn_sys_nocancel_begin();
	cmd_post(c);
	clock_gettime(CLOCK_MONOTONIC, &dl);
	dl.tv_sec += ms / 1000;
	dl.tv_nsec += (ms % 1000) * 1000000;
	if (dl.tv_nsec >= 1000000000) {
		dl.tv_sec++;
		dl.tv_nsec -= 1000000000;
	}
	pthread_mutex_lock(&g.mu);
	while (!c->done && pthread_cond_timedwait(&c->cv, &g.mu, &dl) != ETIMEDOUT)
		;
	done = c->done;
	c->orphan = !done; /* the engine frees it when (if ever) it gets to it */
	rc = c->rc;
	pthread_mutex_unlock(&g.mu);
	if (done) {
		pthread_cond_destroy(&c->cv);
		free(c);
	}
	rn_sys_nocancel_end(ct);
	return done ? rc : -ETIMEDOUT;
}

/* ---- the thread ---- */

static int64_t since_ns(const struct timespec *t0)
{
	struct timespec t;

	clock_gettime(CLOCK_MONOTONIC, &t);
	return (int64_t)(t.tv_sec - t0->tv_sec) * 1000000000 + (t.tv_nsec - t0->tv_nsec);
}

/*
 * One turn of the event loop.  With busy polling (RI2N_BUSY_POLL_US, by
 * default adaptive: rn_spin_budget) the engine first looks for events
 * without sleeping for a while: a program that reads and writes its
 * descriptor plainly has its datagrams taken off the rails without the
 * cost of waking the engine's CPU.  Every callback takes the host lock, so
 * the lock count tells whether a look found work.
 */
static void engine_turn(int busy)
{
	int64_t spin = rn_spin_budget(busy);
	struct timespec t0;

	clock_gettime(CLOCK_MONOTONIC, &t0);
	if (spin > 0) {
		unsigned long before = rn_host_lock_count();

		do {
			event_base_loop(g.base, EVLOOP_NONBLOCK);
			if (rn_host_lock_count() != before) {
				rn_spin_learn(busy, since_ns(&t0), 1);
				return;
			}
			sched_yield(); /* a thread runnable on this CPU goes first */
		} while (since_ns(&t0) < spin);
	}
	event_base_loop(g.base, EVLOOP_ONCE);
	rn_spin_learn(busy, since_ns(&t0), 0);
}

/*
 * Adaptive polling in the engine, for connection churn only.  A process
 * that opens and closes connections by the thousand (a web server, its load
 * generator) waits on the engine for every handshake and close, each a
 * wake-up of a sleeping thread; polling for up to RN_CHURN_SPIN_US after each
 * turn while connections come and go took nginx + wrk with a connection per
 * request from about 4.1 to 7.1 k requests/s (16 clients, 2 cores) and cut the
 * CPU per request.  A stream alone (no connect, accept or close within
 * RN_CHURN_SPIN_NS) keeps the engine sleeping, as below.
 */
#define RN_CHURN_SPIN_US 100
#define RN_CHURN_SPIN_NS UINT64_C(20000000)
static uint64_t g_churn_ns; /* (atomic) the last rn_engine_churn */

void rn_engine_churn(void)
{
	__atomic_store_n(&g_churn_ns, rn_now_ns(), __ATOMIC_RELAXED);
}

/* The engine's polling for this turn (RI2N_BUSY_POLL_US, else churn's). */
static int engine_busy(void)
{
	int busy = rn_inline_busy_default();
	uint64_t last;

	if (busy != RN_BUSY_AUTO)
		return busy;
	last = __atomic_load_n(&g_churn_ns, __ATOMIC_RELAXED);
	return last && rn_now_ns() - last < RN_CHURN_SPIN_NS ? RN_CHURN_SPIN_US : 0;
}

static void *engine_main(void *arg)
{
	(void)arg;
	pthread_setname_np(pthread_self(), "ri2n-engine");
	t_engine = 1;
	rn_place_thread(g.rails, g.nrails);
	rn_publish_start();
	/*
	 * Only a fixed RI2N_BUSY_POLL_US makes the engine poll: adaptive polling
	 * took plain read/write's 8-byte one-way time from 40-50 to 10-25 us
	 * unpinned, but reading each datagram as it lands made the receive-count
	 * rule fail a healthy rail for a moment at the end of a stream (a rail
	 * the sender stopped using for 2 ms: netns_restart), so it is left to
	 * threads waiting inline, but for connection churn (engine_busy).
	 */
	for (;;)
		engine_turn(engine_busy());
	return NULL;
}

static void log_rails(void)
{
	for (int i = 0; i < g.nrails; i++) {
		char ip[RN_ADDR_STRLEN];

		if (!rn_rails_has_addr(&g.rails[i])) {
			rn_info("rail %d: %s: no address yet; used once it has one", i,
				g.rails[i].name);
			continue;
		}
		rn_info("rail %d: %s %s/%u mtu %d", i, g.rails[i].name,
			rn_rails_str(&g.rails[i], ip, sizeof(ip)), g.rails[i].prefix, g.rails[i].mtu);
	}
}

static int configure(void)
{
	char why[256];
	int mtu, rc;

	rn_knobs_snapshot();
	rn_config_default(&g.cfg);
	/* a listed interface without an address yet waits for one (rn_netlink.c) */
	g.nrails = rn_rails_discover_any(g.rails, RN_MAX_RAILS, rn_proc_text(RN_PROC_RAILS), why,
					 sizeof(why));
	if (g.nrails <= 0) {
		rn_error("no rails: %s", why);
		g.nrails = 0;
		return -ENETDOWN;
	}
	log_rails();
	/* the smallest rail MTU bounds every datagram (IPv4 rails search up: rail_ceiling) */
	mtu = rn_rails_mtu(g.rails, g.nrails);
	rn_knob_set(&g.cfg, RI2N_MTU, mtu < 576 ? 576 : mtu);
	rn_knobs_from_env(&g.cfg);
	rc = rn_knobs_key_from_env(&g.cfg);
	if (rc)
		return rc;
	g.env = rn_henv_default(); /* the heap, the kernel's random numbers */
	return 0;
}

static void atfork_prepare(void)
{
	rn_host_fork_hold();
	pthread_mutex_lock(&g.mu);
	rn_fd_fork_hold();
}

static void atfork_parent(void)
{
	rn_fd_fork_release();
	pthread_mutex_unlock(&g.mu);
	rn_host_fork_release();
}

/*
 * The child has no engine thread.  It lets go of every descriptor the
 * parent's engine owns (holding them would keep the parent's ports bound
 * and hide the parent's closes from the user ends), forgets the parent's
 * objects without freeing them, and starts its own engine on first use.
 */
static void atfork_child(void)
{
	rn_fd_fork_child();
	g.started = 0;
	g.base = NULL;
	g.wake_ev = NULL;
	g.wake_fd = -1;
	g.head = g.tail = NULL;
	rn_port_forget_all();
	rn_stream_forget_all();
	rn_events_forget();
	rn_publish_forget();
	rn_netlink_forget();
	rn_inline_forget();
	rn_etimer_forget();
	rn_handover_forget();
	g_kicked = 0;
	pthread_mutex_unlock(&g.mu);
	rn_host_fork_release();
}

int rn_engine_running(void)
{
	int on;

	pthread_mutex_lock(&g.mu);
	on = g.started && g.pid == rn_pid();
	pthread_mutex_unlock(&g.mu);
	return on;
}

int rn_engine_start(void)
{
	static pthread_once_t once = PTHREAD_ONCE_INIT;
	struct event_config *ec;
	sigset_t all, old;
	int rc = 0;

	pthread_mutex_lock(&g.mu);
	if (g.started && g.pid == rn_pid()) {
		pthread_mutex_unlock(&g.mu);
		return 0;
	}
	pthread_once(&once, rn_log_init);
	if (sodium_init() < 0) {
		rc = -ENOSYS;
		goto out;
	}
	rc = configure();
	if (rc)
		goto out;
	ec = event_config_new();
	if (!ec) {
		rc = -ENOMEM;
		goto out;
	}
	/*
	 * ACK delays are hundreds of microseconds, but those timers are the
	 * engine's own (rn_etimer.h): libevent's are coarse, and a precise one
	 * would cost a timerfd_settime on every turn
	 */
	event_config_require_features(ec, EV_FEATURE_EARLY_CLOSE);
	t_making = 1;
	g.base = event_base_new_with_config(ec);
	t_making = 0;
	event_config_free(ec);
	g.wake_fd = rn_sys_eventfd(0, EFD_NONBLOCK | EFD_CLOEXEC);
	if (!g.base || g.wake_fd < 0) {
		rc = -ENOMEM;
		goto out;
	}
	g.wake_fd = rn_fd_own_high(g.wake_fd);
	g.wake_ev = event_new(g.base, g.wake_fd, EV_READ | EV_PERSIST, on_wake, NULL);
	event_add(g.wake_ev, NULL);
	rn_netlink_start();
	rc = rn_etimer_init();
	if (rc)
		goto out;
	/* the user's signal handlers never run on the engine thread */
	sigfillset(&all);
	pthread_sigmask(SIG_SETMASK, &all, &old);
	rc = -pthread_create(&g.thread, NULL, engine_main, NULL);
	pthread_sigmask(SIG_SETMASK, &old, NULL);
	if (rc)
		goto out;
	{
		static int registered;

		if (!registered) {
			pthread_atfork(atfork_prepare, atfork_parent, atfork_child);
			registered = 1;
		}
	}
	g.started = 1;
	g.pid = rn_pid();
	rn_debug("engine started with %d rail%s, datagrams of %u bytes", g.nrails,
		 g.nrails == 1 ? "" : "s", g.cfg.max_dgram);
out:
	pthread_mutex_unlock(&g.mu);
	return rc;
}
