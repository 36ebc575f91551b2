/*
 * conns_hole.c - ri2n-conns' black-hole probe: events, counters and one
 * echo (see conns_hole.h).
 */
#define _GNU_SOURCE
#include <errno.h>
#include <poll.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "conns_hole.h"
#include "ri2n.h"
#include "ri2n_kit.h"

void hole_drain_events(void)
{
	struct ri2n_event ev;

	while (ri2n_read_event(&ev) == 1)
		;
}

int hole_next_down(uint64_t since_ns, int *fd, int *rail)
{
	struct ri2n_event ev;

	while (ri2n_read_event(&ev) == 1)
		if (ev.type == RI2N_EVENT_RAIL_DOWN && ev.time_ns >= since_ns && ev.rail >= 0) {
			*fd = ev.fd;
			*rail = ev.rail;
			return 1;
		}
	return 0;
}

int hole_rail_down(int fd, int rail)
{
	struct ri2n_stats st;

	if (ri2n_stats(fd, &st) < 0 || rail < 0 || rail >= st.nrails)
		return -1;
	return !st.rail[rail].rx_up && !st.rail[rail].tx_up;
}

int hole_counts_of(int fd, int rail, hole_counts *c)
{
	struct ri2n_stats st;

	memset(c, 0, sizeof(*c));
	if (ri2n_stats(fd, &st) < 0 || rail < 0 || rail >= st.nrails)
		return -1;
	c->dead_data = st.rail[rail].tx_data;
	c->retx = st.retransmits;
	c->rto = st.rto_events;
	c->seen_down = !st.rail[rail].tx_up;
	return 0;
}

void hole_counts_diff(const hole_counts *a, const hole_counts *b, hole_counts *d)
{
	d->dead_data = b->dead_data - a->dead_data;
	d->retx = b->retx - a->retx;
	d->rto = b->rto - a->rto;
	d->seen_down = a->seen_down;
}

double hole_echo(int fd, uint64_t seed, uint64_t off, unsigned len, double timeout_s)
{
	uint8_t out[64], in[64];
	unsigned got = 0;
	double t0, deadline;

	if (len > sizeof(out))
		return -1;
	kit_pattern_fill(out, seed, off, len);
	t0 = kit_now_s();
	deadline = t0 + timeout_s;
	if (write(fd, out, len) != (ssize_t)len)
		return -1;
	while (got < len) {
		struct pollfd p = { .fd = fd, .events = POLLIN };
		double left = deadline - kit_now_s();
		ssize_t n;

		if (left <= 0)
			return -1;
		if (poll(&p, 1, (int)(left * 1000) + 1) < 0 && errno != EINTR)
			return -1;
		n = read(fd, in + got, len - got);
		if (n < 0 && (errno == EAGAIN || errno == EINTR))
			continue;
		if (n <= 0)
			return -1;
		got += (unsigned)n;
	}
	if (memcmp(in, out, len) != 0)
		return -2;
	return (kit_now_s() - t0) * 1e6;
}

static int cmp_double(const void *a, const void *b)
{
	double x = *(const double *)a, y = *(const double *)b;

	return (x > y) - (x < y);
}

void hole_med_max(double *v, int n, double *med, double *max)
{
	*med = *max = 0;
	if (n <= 0)
		return;
	qsort(v, (size_t)n, sizeof(*v), cmp_double);
	*med = n % 2 ? v[n / 2] : (v[n / 2 - 1] + v[n / 2]) / 2;
	*max = v[n - 1];
}
