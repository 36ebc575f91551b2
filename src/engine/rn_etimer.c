/*
 * rn_etimer.c - the engine's precise timers (see rn_etimer.h): a binary
 * min-heap of (deadline, timer) ordered by deadline, each timer knowing its
 * place so that moving or unsetting it is O(log n), and one timerfd armed
 * for the earliest deadline.
 */
#define _GNU_SOURCE
#include <errno.h>
#include <event2/event.h>
#include <stdlib.h>
#include <sys/timerfd.h>
#include <time.h>

#include "rn_engine.h"
#include "rn_etimer.h"
#include "rn_ev.h"
#include "rn_host_lock.h"
#include "rn_log.h"
#include "rn_stream.h"
#include "rn_sys.h"

/* A place in the heap: the deadline beside the timer, so that ordering reads no timer. */
typedef struct slot {
	uint64_t at;
	rn_etimer *t;
} slot;

static struct {
	slot *h;         /* the heap: h[0] is the earliest */
	uint32_t n, cap;
	int tfd;
	struct event *ev;
	uint64_t tfd_at; /* the deadline the timerfd is set for, UINT64_MAX: disarmed */
} g = { .tfd = -1, .tfd_at = UINT64_MAX };

static void put(uint32_t i, slot x)
{
	g.h[i] = x;
	x.t->pos = i + 1;
}

static void sift_up(uint32_t i)
{
	slot x = g.h[i];

	while (i > 0) {
		uint32_t up = (i - 1) / 2;

		if (g.h[up].at <= x.at)
			break;
		put(i, g.h[up]);
		i = up;
	}
	put(i, x);
}

static void sift_down(uint32_t i)
{
	slot x = g.h[i];

	for (;;) {
		uint32_t c = 2 * i + 1;

		if (c >= g.n)
			break;
		if (c + 1 < g.n && g.h[c + 1].at < g.h[c].at)
			c++;
		if (x.at <= g.h[c].at)
			break;
		put(i, g.h[c]);
		i = c;
	}
	put(i, x);
}

static void take_out(rn_etimer *t)
{
	uint32_t i = t->pos - 1;
	slot last = g.h[--g.n];

	t->pos = 0;
	if (last.t == t)
		return;
	put(i, last);
	if (i > 0 && g.h[(i - 1) / 2].at > last.at)
		sift_up(i);
	else
		sift_down(i);
}

/* The timerfd fires at the earliest deadline, or earlier (a deadline since moved later). */
static void follow(void)
{
	uint64_t at = g.n ? g.h[0].at : UINT64_MAX;
	struct itimerspec its = { { 0, 0 }, { 0, 0 } };

	if (at >= g.tfd_at || g.tfd < 0)
		return;
	/* 0 would disarm it: a time already past fires at once as 1 ns */
	its.it_value.tv_sec = (time_t)(at / 1000000000u);
	its.it_value.tv_nsec = (long)(at % 1000000000u);
	if (at == 0)
		its.it_value.tv_nsec = 1;
	if (timerfd_settime(g.tfd, TFD_TIMER_ABSTIME, &its, NULL) == 0)
		g.tfd_at = at;
}

void rn_etimer_set(rn_etimer *t, uint64_t at)
{
	RN_OWNS_HOST();
	if (at == UINT64_MAX) {
		if (t->pos)
			take_out(t);
		t->at = UINT64_MAX;
		return; /* the timerfd may fire early: nothing due, it is armed anew */
	}
	if (!t->pos) {
		if (g.n == g.cap) {
			uint32_t cap = g.cap ? g.cap * 2 : 64;
			slot *h = realloc(g.h, cap * sizeof(*h));

			if (!h) { /* kept unset: the core's timers catch up at its next event */
				rn_warn("out of memory for a timer");
				return;
			}
			g.h = h;
			g.cap = cap;
		}
		t->at = at;
		put(g.n++, (slot){ at, t });
		sift_up(g.n - 1);
	} else {
		uint64_t was = t->at;

		t->at = at;
		g.h[t->pos - 1].at = at;
		if (at < was)
			sift_up(t->pos - 1);
		else
			sift_down(t->pos - 1);
	}
	follow();
}

uint64_t rn_etimer_next(void)
{
	return g.n ? g.h[0].at : UINT64_MAX;
}

/* Each timer due at now fires once: one set again for a time already past waits for the next run. */
int rn_etimer_run(uint64_t now)
{
	uint32_t left;
	int fired = 0;

	RN_OWNS_HOST();
	for (left = g.n; left > 0 && g.n && g.h[0].at <= now; left--) {
		rn_etimer *t = g.h[0].t;

		take_out(t);
		t->at = UINT64_MAX;
		t->fn(t, now);
		fired++;
	}
	return fired;
}

/* The timerfd fired: the due timers, then the connections they touched serviced together. */
static void on_timerfd(evutil_socket_t fd, short what, void *arg)
{
	uint64_t v;

	(void)what;
	(void)arg;
	if (rn_sys_read(fd, &v, sizeof(v)) < 0) {
		/* EAGAIN: set anew meanwhile */
	}
	rn_host_lock();
	g.tfd_at = UINT64_MAX;
	rn_etimer_run(rn_now_ns());
	rn_stream_service_dirty();
	follow();
	rn_host_unlock();
}

int rn_etimer_init(void)
{
	g.tfd = rn_sys_timerfd_create(CLOCK_MONOTONIC, TFD_NONBLOCK | TFD_CLOEXEC);
	if (g.tfd < 0)
		return -errno;
	g.tfd = rn_fd_own_high(g.tfd);
	g.tfd_at = UINT64_MAX;
	g.ev = event_new(rn_engine_base(), g.tfd, EV_READ | EV_PERSIST, on_timerfd, NULL);
	if (!g.ev)
		return -ENOMEM;
	rn_ev_add(g.ev, NULL);
	follow(); /* timers set before the engine started */
	return 0;
}

void rn_etimer_forget(void)
{
	g.h = NULL; /* the parent's, left unfreed as its other objects are (rn_engine.c) */
	g.n = g.cap = 0;
	g.tfd = -1; /* closed with the engine's other descriptors */
	g.ev = NULL;
	g.tfd_at = UINT64_MAX;
}
