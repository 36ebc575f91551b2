/*
 * xfer_meter.c - what the verified-transfer program prints: a line and a CSV
 * row every interval, ri2n's rail events, the verdict and the rails' counters.
 *
 * Per interval, each side prints the time since the start, the goodput over
 * the interval, the bytes so far and per rail:
 *  - ri2n: the rail's state (U up, D down) and, from ri2n_stats(), the bytes
 *    and DATA packets it carried in the interval (received at the receiver,
 *    sent at the sender; ri2n-xfer's `data` column: DATA packets sent);
 *  - MPTCP (`mptcpize run ri2n-stream --tcp`): a subflow is on rail R when
 *    the client's address is in 198.18.R.0/24 (the test bed's plan) or,
 *    elsewhere, in the order subflows appear; its state is S (a subflow
 *    exists) or '.', its bytes and segments come from its tcp_info
 *    (getsockopt MPTCP_TCPINFO): received at the receiver, acknowledged at
 *    the sender;
 *  - plain TCP: the connection is one subflow, on its rail.
 *
 * ri2n-xfer's lines:
 *   xfer t=1.200 mbps=1874.21 bytes=281372672 rails=UD data=8123,0
 *   xfer event t=1.1340 rail=1 down fd=5 cause="receive count below threshold"
 *   xfer done role=recv bytes=536870912 seconds=2.312 mbps=1857.63 verified=yes
 *   xfer rail=1 local=198.18.2.1 remote=198.18.2.2 up=1 downs=1 ups=1 ...
 *   xfer rail=1 local=[2001:2:0:2::1] remote=[2001:2:0:2::2] ...   (an IPv6 rail)
 *   CSV: role,t,mono,mbps,bytes,rails,data (one data column a rail)
 * ri2n-stream's:
 *   stream t=1.200 mono=5123.456789 mbps=1874.21 bytes=281372672 rails=UU rail_mbps=937.1;937.1 rail_pkts=81234;81230
 *   stream event role=recv mono=5124.123456 t=1.9000 rail=1 down cause="receive count below threshold"
 *   stream done role=recv transport=ri2n bytes=... seconds=... mbps=... verified=yes bad=0 cpu_user=... cpu_sys=...
 *   CSV: role,t,mono,mbps,bytes,rails,rail_mbps,rail_pkts (per-rail values ';'-separated)
 */
#define _GNU_SOURCE
#include <arpa/inet.h>
#include <errno.h>
#include <inttypes.h>
#include <linux/tcp.h>
#include <signal.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <sys/socket.h>
#include <time.h>

#include "bench_common.h"
#include "ri2n_kit.h"
#include "xfer.h"

#ifndef SOL_MPTCP
#define SOL_MPTCP 284
#endif
#ifndef IPPROTO_MPTCP
#define IPPROTO_MPTCP 262
#endif
#define XF_MPTCP_TCPINFO 2       /* linux/mptcp.h, spelled out: that header fights netinet/in.h */
#define XF_MPTCP_SUBFLOW_ADDRS 3

struct xf_subflow_data {
	uint32_t size_subflow_data, num_subflows, size_kernel, size_user;
} __attribute__((aligned(8)));

struct xf_subflow_addrs {
	struct sockaddr_storage local, remote;
};

/* Rail (0-based) of a local address: 198.18.R.x is rail R-1 (the test bed's plan). */
static int rail_of(const struct sockaddr_in *a)
{
	uint32_t ip = ntohl(a->sin_addr.s_addr);

	if ((ip >> 16) == (198u << 8 | 18u) && ((ip >> 8) & 0xff) >= 1 &&
	    ((ip >> 8) & 0xff) <= RI2N_MAX_RAILS)
		return (int)((ip >> 8) & 0xff) - 1;
	return -1;
}

static int same_flow(const xfer_subflow *s, const struct sockaddr_in *l, const struct sockaddr_in *r)
{
	return s->local.sin_addr.s_addr == l->sin_addr.s_addr && s->local.sin_port == l->sin_port &&
	       s->remote.sin_addr.s_addr == r->sin_addr.s_addr && s->remote.sin_port == r->sin_port;
}

/*
 * Reads the connection's subflows (MPTCP: every subflow; TCP: the connection
 * itself) into loc/rem/ti; returns how many, 0 if the kernel would not say.
 */
static int read_subflows(const xfer_meter *m, struct sockaddr_in *loc, struct sockaddr_in *rem,
			 struct tcp_info *ti)
{
	socklen_t l1 = sizeof(loc[0]), l2 = sizeof(rem[0]), l3 = sizeof(ti[0]);
	struct {
		struct xf_subflow_data h;
		struct tcp_info t[XFER_MAX_SUBFLOWS];
	} bi;
	struct {
		struct xf_subflow_data h;
		struct xf_subflow_addrs a[XFER_MAX_SUBFLOWS];
	} ba;
	socklen_t li = sizeof(bi), la = sizeof(ba);
	int n;

	if (!m->mptcp) {
		if (getsockname(m->fd, (struct sockaddr *)&loc[0], &l1) < 0 ||
		    getpeername(m->fd, (struct sockaddr *)&rem[0], &l2) < 0 ||
		    getsockopt(m->fd, IPPROTO_TCP, TCP_INFO, &ti[0], &l3) < 0)
			return 0;
		return 1;
	}
	memset(&bi, 0, sizeof(bi));
	memset(&ba, 0, sizeof(ba));
	bi.h.size_subflow_data = sizeof(bi.h);
	bi.h.size_user = sizeof(struct tcp_info);
	ba.h.size_subflow_data = sizeof(ba.h);
	ba.h.size_user = sizeof(struct xf_subflow_addrs);
	if (getsockopt(m->fd, SOL_MPTCP, XF_MPTCP_TCPINFO, &bi, &li) < 0 ||
	    getsockopt(m->fd, SOL_MPTCP, XF_MPTCP_SUBFLOW_ADDRS, &ba, &la) < 0)
		return 0;
	/* both lists walk the connection's subflows in the same order */
	n = (int)(bi.h.num_subflows < ba.h.num_subflows ? bi.h.num_subflows : ba.h.num_subflows);
	n = n > XFER_MAX_SUBFLOWS ? XFER_MAX_SUBFLOWS : n;
	for (int i = 0; i < n; i++) {
		ti[i] = bi.t[i];
		memcpy(&loc[i], &ba.a[i].local, sizeof(loc[i]));
		memcpy(&rem[i], &ba.a[i].remote, sizeof(rem[i]));
	}
	return n;
}

/*
 * Adds each TCP subflow's bytes and segments since the last call to rb/rp
 * (per rail) and marks the rails that have a subflow in state[].
 */
static void tcp_rails(xfer_meter *m, uint64_t *rb, uint64_t *rp, char *state)
{
	struct sockaddr_in loc[XFER_MAX_SUBFLOWS], rem[XFER_MAX_SUBFLOWS];
	struct tcp_info ti[XFER_MAX_SUBFLOWS];
	int n;

	memset(ti, 0, sizeof(ti));
	n = read_subflows(m, loc, rem, ti);
	if (n == 0)
		return;
	for (int k = 0; k < m->nsf; k++)
		m->sf[k].seen = 0;
	for (int i = 0; i < n; i++) {
		uint64_t b = m->sender ? ti[i].tcpi_bytes_acked : ti[i].tcpi_bytes_received;
		uint64_t s = m->sender ? ti[i].tcpi_data_segs_out : ti[i].tcpi_data_segs_in;
		xfer_subflow *f = NULL;
		int r;

		for (int k = 0; k < m->nsf && !f; k++)
			if (same_flow(&m->sf[k], &loc[i], &rem[i]))
				f = &m->sf[k];
		if (!f && m->nsf < XFER_MAX_SUBFLOWS) {
			f = &m->sf[m->nsf++];
			*f = (xfer_subflow){ .local = loc[i], .remote = rem[i] };
		}
		if (!f)
			continue;
		f->seen = 1;
		/* the client's (sender's) end names the rail: its subflows are bound to the
		 * rail's device, while the server's end may be the address it was reached at */
		r = rail_of(m->sender ? &loc[i] : &rem[i]);
		if (r < 0)
			r = (int)(f - m->sf) % RI2N_MAX_RAILS;
		if (r >= m->nrails)
			m->nrails = r + 1;
		if (b >= f->bytes)
			rb[r] += b - f->bytes;
		if (s >= f->segs)
			rp[r] += s - f->segs;
		state[r] = 'S';
		f->bytes = b;
		f->segs = s;
	}
	/* subflows gone: forget them (the slot may be reused by a new one) */
	for (int k = 0; k < m->nsf;)
		if (!m->sf[k].seen)
			m->sf[k] = m->sf[--m->nsf];
		else
			k++;
}

void xfer_events(const xfer_meter *m)
{
	static const char *const names[] = { "?", "connected", "down", "up", "closed", "failed" };
	const char *p = opt.style == XS_XFER ? "xfer" : "stream";
	struct ri2n_event e;

	if (opt.transport != BT_RI2N)
		return;
	while (ri2n_read_event(&e) == 1) {
		const char *name = e.type >= 1 && e.type <= 5 ? names[e.type] : "?";
		double mono = (double)e.time_ns / 1e9;
		const char *err = e.error ? strerror(e.error) : "", *eq = e.error ? " error=" : "";

		if (e.missed)
			fprintf(stderr, "%s event missed=%" PRIu64 "\n", p, e.missed);
		if (opt.style == XS_XFER && e.rail >= 0)
			fprintf(stderr, "xfer event t=%.4f rail=%d %s fd=%d cause=\"%s\"\n",
				mono - m->t0, e.rail, name, e.fd, e.cause);
		else if (opt.style == XS_XFER)
			fprintf(stderr, "xfer event t=%.4f conn %s fd=%d%s%s cause=\"%s\"\n",
				mono - m->t0, name, e.fd, eq, err, e.cause);
		else if (e.rail >= 0)
			fprintf(stderr, "stream event role=%s mono=%.6f t=%.4f rail=%d %s cause=\"%s\"\n",
				m->role, mono, mono - m->t0, e.rail, name, e.cause);
		else
			fprintf(stderr, "stream event role=%s mono=%.6f t=%.4f conn %s%s%s cause=\"%s\"\n",
				m->role, mono, mono - m->t0, name, eq, err, e.cause);
	}
}

/* The rails' states and counters since the last interval: bytes, packets, DATA sent. */
typedef struct rails_now {
	char state[RI2N_MAX_RAILS + 1];
	uint64_t rb[RI2N_MAX_RAILS], rp[RI2N_MAX_RAILS], tx[RI2N_MAX_RAILS];
	int known; /* ri2n_stats answered (ri2n) */
} rails_now;

static void read_rails(xfer_meter *m, rails_now *r)
{
	struct ri2n_stats st;

	memset(r, 0, sizeof(*r));
	memset(r->state, '.', sizeof(r->state));
	if (opt.transport != BT_RI2N) {
		tcp_rails(m, r->rb, r->rp, r->state);
		r->known = 1;
		return;
	}
	if (ri2n_stats(m->fd, &st) < 0)
		return;
	r->known = 1;
	m->nrails = st.nrails;
	for (int i = 0; i < st.nrails; i++) {
		const struct ri2n_rail_stats *s = &st.rail[i];
		uint64_t cb = m->sender ? s->tx_bytes : s->rx_bytes;
		uint64_t cp = m->sender ? s->tx_data : s->rx_data;

		r->state[i] = s->up ? 'U' : 'D';
		r->rb[i] = cb - m->last_rb[i];
		r->rp[i] = cp - m->last_rp[i];
		r->tx[i] = s->tx_data - m->last_tx[i];
		m->last_rb[i] = cb;
		m->last_rp[i] = cp;
		m->last_tx[i] = s->tx_data;
	}
}

/*
 * One interval's line and CSV row.  Its time is taken once the rails'
 * counters are read (the lock and the stats call wait tens of ms on a
 * loaded host): a row never holds packets sent after its time, which the
 * tests compare with a heal's.
 */
static void tick(xfer_meter *m)
{
	uint64_t bytes;
	double t, dt, mbps;
	char rmb[RI2N_MAX_RAILS * 16] = "", rpk[RI2N_MAX_RAILS * 24] = "", data[RI2N_MAX_RAILS * 24] = "";
	size_t a = 0, b = 0, c = 0;
	const char *rails;
	rails_now r;

	pthread_mutex_lock(&opt.mu);
	if (m->events)
		xfer_events(m);
	read_rails(m, &r);
	t = kit_now_s();
	bytes = atomic_load(&m->bytes);
	dt = t - m->last_t;
	mbps = dt > 0 ? (double)(bytes - m->last_bytes) * 8 / dt / 1e6 : 0;
	r.state[m->nrails] = 0;
	for (int i = 0; i < m->nrails; i++) {
		a += (size_t)snprintf(rmb + a, sizeof(rmb) - a, "%s%.1f", i ? ";" : "",
				      dt > 0 ? (double)r.rb[i] * 8 / dt / 1e6 : 0);
		b += (size_t)snprintf(rpk + b, sizeof(rpk) - b, "%s%" PRIu64, i ? ";" : "", r.rp[i]);
		c += (size_t)snprintf(data + c, sizeof(data) - c, "%s%" PRIu64, i ? "," : "", r.tx[i]);
	}
	rails = m->nrails && r.known ? r.state : "-";
	if (opt.style == XS_XFER) {
		if (!opt.quiet)
			fprintf(stderr, "xfer t=%.3f mbps=%.2f bytes=%" PRIu64 " rails=%s data=%s\n",
				t - m->t0, mbps, bytes, rails, data);
		if (opt.csv)
			fprintf(opt.csv, "%s,%.3f,%.6f,%.2f,%" PRIu64 ",%s,%s\n", m->role, t - m->t0,
				t, mbps, bytes, rails, data);
	} else {
		if (!opt.quiet)
			fprintf(stderr, "stream t=%.3f mono=%.6f mbps=%.2f bytes=%" PRIu64
				" rails=%s rail_mbps=%s rail_pkts=%s\n", t - m->t0, t, mbps, bytes,
				rails, rmb, rpk);
		if (opt.csv)
			fprintf(opt.csv, "%s,%.3f,%.6f,%.2f,%" PRIu64 ",%s,%s,%s\n", m->role,
				t - m->t0, t, mbps, bytes, rails, rmb, rpk);
	}
	pthread_mutex_unlock(&opt.mu);
	m->last_t = t;
	m->last_bytes = bytes;
}

/* Ticks on an absolute schedule: interval k ends at t0 + k * interval. */
static void *meter_thread(void *arg)
{
	xfer_meter *m = arg;
	struct timespec ts;
	uint64_t k = 1;

	while (!m->stop) {
		double due = m->t0 + (double)k * opt.interval_ms / 1e3;

		ts.tv_sec = (time_t)due;
		ts.tv_nsec = (long)((due - (double)ts.tv_sec) * 1e9);
		while (clock_nanosleep(CLOCK_MONOTONIC, TIMER_ABSTIME, &ts, NULL) == EINTR &&
		       !m->stop)
			;
		if (m->stop)
			break;
		tick(m);
		k++;
	}
	return NULL;
}

void xfer_meter_start(xfer_meter *m, const char *role, int fd, int sender, int events, double t0)
{
	int proto = 0;
	socklen_t pl = sizeof(proto);

	m->role = role;
	m->fd = fd;
	m->sender = sender;
	m->events = events;
	if (opt.transport == BT_TCP && getsockopt(fd, SOL_SOCKET, SO_PROTOCOL, &proto, &pl) == 0)
		m->mptcp = proto == IPPROTO_MPTCP;
	m->nrails = opt.nrails;
	m->t0 = m->last_t = t0;
	if (opt.transport != BT_RI2N) { /* a first look: the counters start from here */
		uint64_t rb[RI2N_MAX_RAILS] = { 0 }, rp[RI2N_MAX_RAILS] = { 0 };
		char st[RI2N_MAX_RAILS + 1];

		tcp_rails(m, rb, rp, st);
	}
	pthread_create(&m->thr, NULL, meter_thread, m);
}

void xfer_meter_stop(xfer_meter *m)
{
	m->stop = 1;
	pthread_kill(m->thr, SIGURG); /* out of its sleep (the handler does nothing) */
	pthread_join(m->thr, NULL);
	tick(m); /* the last, partial interval */
}

const char *xfer_proto(const xfer_meter *m)
{
	return opt.transport == BT_RI2N ? "ri2n" : m->mptcp ? "mptcp" : "tcp";
}

/* ri2n-xfer: one line per rail with its counters, after the verdict. */
static void rail_summary(int fd)
{
	struct ri2n_stats st;

	if (opt.transport != BT_RI2N || ri2n_stats(fd, &st) < 0)
		return;
	for (int i = 0; i < st.nrails; i++) {
		const struct ri2n_rail_stats *r = &st.rail[i];
		const struct ri2n_rail_addr6 *r6 = &st.rail6[i];
		char l[INET6_ADDRSTRLEN + 2], m[INET6_ADDRSTRLEN + 2];

		/* an IPv6 rail's ends in brackets, as ri2n-stat shows them */
		if (r6->local.sin6_family == AF_INET6) {
			l[0] = m[0] = '[';
			inet_ntop(AF_INET6, &r6->local.sin6_addr, l + 1, sizeof(l) - 2);
			inet_ntop(AF_INET6, &r6->remote.sin6_addr, m + 1, sizeof(m) - 2);
			strcat(l, "]");
			strcat(m, "]");
		} else {
			inet_ntop(AF_INET, &r->local.sin_addr, l, sizeof(l));
			inet_ntop(AF_INET, &r->remote.sin_addr, m, sizeof(m));
		}
		printf("xfer rail=%d local=%s remote=%s up=%d downs=%u ups=%u tx_data=%" PRIu64
		       " rx_data=%" PRIu64 " retransmits=%" PRIu64 " lost=%" PRIu64
		       " heartbeats=%" PRIu64 " dgram=%u mtu_holes=%u small_ok=%u\n", i, l, m, r->up,
		       r->down_events, r->up_events, r->tx_data, r->rx_data, r->retransmits, r->lost,
		       r->heartbeats, r->dgram, r->mtu_holes, r->small_ok);
	}
}

void xfer_done(const xfer_meter *m, uint64_t bytes, double secs, uint64_t bad, const char *why)
{
	double mbps = secs > 0 ? (double)bytes * 8 / secs / 1e6 : 0;
	struct rusage ru;
	char reason[160] = "";

	pthread_mutex_lock(&opt.mu);
	if (opt.style == XS_XFER) {
		printf("xfer done role=%s bytes=%" PRIu64 " seconds=%.3f mbps=%.2f verified=%s%s%s\n",
		       m->role, bytes, secs, mbps, why ? "no" : "yes", why ? " reason=" : "",
		       why ? why : "");
		if (m->events) /* once a connection: not for the duplex return stream */
			rail_summary(m->fd);
	} else {
		/* the bench reads one word: "stream ended early" is "stream-ended-early" */
		for (size_t i = 0; why && why[i] && i + 1 < sizeof(reason); i++)
			reason[i] = why[i] == ' ' ? '-' : why[i];
		getrusage(RUSAGE_SELF, &ru);
		printf("stream done role=%s transport=%s bytes=%" PRIu64 " seconds=%.3f mbps=%.2f "
		       "verified=%s bad=%" PRIu64 " cpu_user=%.3f cpu_sys=%.3f%s%s\n",
		       m->role, xfer_proto(m), bytes, secs, mbps,
		       why ? "no" : m->unchecked ? "unchecked" : "yes", bad,
		       (double)ru.ru_utime.tv_sec + (double)ru.ru_utime.tv_usec / 1e6,
		       (double)ru.ru_stime.tv_sec + (double)ru.ru_stime.tv_usec / 1e6,
		       why ? " reason=" : "", reason);
	}
	fflush(stdout);
	pthread_mutex_unlock(&opt.mu);
}

int xfer_csv_open(void)
{
	if (!opt.csv_path)
		return 0;
	opt.csv = fopen(opt.csv_path, "w");
	if (!opt.csv) {
		fprintf(stderr, "%s: %s: %s\n", opt.prog, opt.csv_path, strerror(errno));
		return -1;
	}
	setvbuf(opt.csv, NULL, _IOLBF, 0);
	fprintf(opt.csv, opt.style == XS_XFER ? "role,t,mono,mbps,bytes,rails,data\n"
					      : "role,t,mono,mbps,bytes,rails,rail_mbps,rail_pkts\n");
	return 0;
}

static void on_sigurg(int sig)
{
	(void)sig;
}

void xfer_signals(void)
{
	struct sigaction sa = { .sa_handler = on_sigurg };

	signal(SIGPIPE, SIG_IGN);
	sigaction(SIGURG, &sa, NULL);
}
