/*
 * rn_events.c - the process's event queue.
 */
#define _GNU_SOURCE /* rn_sys.h: struct mmsghdr */
#include <errno.h>
#include <pthread.h>
#include <stdint.h>
#include <string.h>
#include <sys/eventfd.h>
#include <unistd.h>

#include "rn_sys.h"
#include "rn_engine.h"
#include "rn_events.h"
#include "rn_sys.h"

#define QLEN 1024

static struct {
	pthread_mutex_t mu;
	struct ri2n_event q[QLEN];
	uint64_t owner[QLEN]; /* the socket each is about (rn_events_post) */
	uint32_t head, tail;  /* tail - head events waiting */
	uint64_t missed;      /* dropped since the last one read */
	int fd;               /* eventfd, once asked for; readable while events wait */
} g = { .mu = PTHREAD_MUTEX_INITIALIZER, .fd = -1 };

static void signal_fd(void)
{
	uint64_t one = 1;

	if (g.fd >= 0 && rn_sys_write(g.fd, &one, sizeof(one)) < 0) {
		/* saturated: it is readable anyway */
	}
}

static void drain_fd(void)
{
	uint64_t v;

	if (g.fd >= 0 && rn_sys_read(g.fd, &v, sizeof(v)) < 0) {
		/* EAGAIN: nothing to clear */
	}
}

void rn_events_post(const struct ri2n_event *ev, uint64_t owner)
{
	pthread_mutex_lock(&g.mu);
	if (g.tail - g.head == QLEN) { /* full: the oldest goes */
		g.head++;
		g.missed++;
	}
	g.q[g.tail % QLEN] = *ev;
	g.owner[g.tail % QLEN] = owner;
	if (g.tail++ == g.head)
		signal_fd();
	pthread_mutex_unlock(&g.mu);
}

void rn_events_renumber(uint64_t owner, int from, int to)
{
	pthread_mutex_lock(&g.mu);
	/* newest first, down to its CONNECTED, its first: a short walk when events wait unread */
	for (uint32_t i = g.tail; i != g.head; i--) {
		struct ri2n_event *e = &g.q[(i - 1) % QLEN];

		if (g.owner[(i - 1) % QLEN] != owner || e->fd != from)
			continue;
		e->fd = to;
		if (e->type == RI2N_EVENT_CONNECTED)
			break;
	}
	pthread_mutex_unlock(&g.mu);
}

int rn_events_fd(void)
{
	int fd;

	pthread_mutex_lock(&g.mu);
	if (g.fd < 0) {
		g.fd = rn_sys_eventfd(0, EFD_NONBLOCK | EFD_CLOEXEC);
		if (g.fd >= 0) {
			g.fd = rn_fd_own_high(g.fd);
			if (g.tail != g.head)
				signal_fd();
		}
	}
	fd = g.fd;
	pthread_mutex_unlock(&g.mu);
	if (fd < 0)
		errno = EMFILE;
	return fd;
}

int rn_events_read(struct ri2n_event *ev)
{
	int got = 0;

	pthread_mutex_lock(&g.mu);
	if (g.tail != g.head) {
		*ev = g.q[g.head % QLEN];
		ev->missed = g.missed;
		g.missed = 0;
		g.head++;
		got = 1;
	}
	if (g.tail == g.head)
		drain_fd();
	pthread_mutex_unlock(&g.mu);
	return got;
}

void rn_events_forget(void)
{
	pthread_mutex_init(&g.mu, NULL);
	g.head = g.tail = 0;
	g.missed = 0;
	g.fd = -1; /* closed with the engine's other descriptors */
}
