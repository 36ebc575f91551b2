/*
 * test_sim.c - protocol scenarios over the simulated network.
 *
 *   ri2n-sim [--seeds FIRST-LAST] [--mib N] [--trace] [scenario ...]
 *
 * Every scenario moves a seeded pattern and checks every byte; each prints
 * one line per seed and, on failure, the seed and what went wrong.  Times are
 * simulated, so every figure printed is exact and repeatable for a seed.
 * --trace: the MTU black-hole scenarios also print the server's goodput per
 * 1 ms from 10 ms before the hole to 90 ms into it, and when each side
 * declared the rail down (what the bench's 100 ms bins cannot show).
 */
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "sim_check.h"
#include "sim_harness.h"

#define MIB (UINT64_C(1) << 20)

static uint64_t g_mib = 32;

/* Every byte arrived, in order, intact, and both ends closed cleanly. */
static int check_clean(const sim *s)
{
	const sim_host *c = &s->host[0], *v = &s->host[1];

	CHECK(!s->hung, "run did not finish (%s) at t=%.3f s", s->hung == 2 ? "timer loop" : "hang",
	      (double)s->now_ns / SEC);
	for (int i = 0; i < 2; i++) {
		const sim_host *h = &s->host[i];

		CHECK(h->err == 0, "host %d failed: %s", i, rn_strerror(h->err));
		CHECK(h->mismatches == 0, "host %d: %" PRIu64 " corrupted bytes", i, h->mismatches);
		CHECK(h->recvd == h->to_recv, "host %d received %" PRIu64 " of %" PRIu64 " bytes", i,
		      h->recvd, h->to_recv);
		CHECK(h->eof, "host %d saw no end of stream", i);
		for (int r = 0; r < h->nrails; r++)
			CHECK(h->data_tx_while_down[r] == 0,
			      "host %d sent %" PRIu64 " DATA packets on rail %d while it was down", i,
			      h->data_tx_while_down[r], r);
	}
	(void)c;
	(void)v;
	return 0;
}

/* Stream bytes over the time from the client's handshake completing to the server's EOF. */
static double goodput_bps(const sim *s)
{
	const sim_host *v = &s->host[1];
	const rn_event *est = sim_find_event(&s->host[0], RN_EV_ESTABLISHED, -1, 0);
	uint64_t t0 = est ? est->time_ns : s->t_start_ns;
	uint64_t t = v->t_eof_ns > t0 ? v->t_eof_ns - t0 : 0;

	return t ? (double)v->recvd * 8 * SEC / (double)t : 0;
}

static void set_links(sim *s, sim_link l)
{
	for (int r = 0; r < s->net.nrails; r++)
		s->net.link[r] = l;
}

static uint64_t g_seed;

/* A GbE-like rail; the seed varies its delay (20-40 us) so seeds differ even without loss. */
static sim_link gbe(void)
{
	return (sim_link){ .rate_bps = 1000000000, .delay_ns = 20000 + (g_seed * 7919) % 20000,
			   .queue_bytes = 2500000 };
}

/* A fault time that moves with the seed: base + 0..9 ms. */
static uint64_t at(uint64_t base_ns)
{
	return base_ns + (g_seed % 10) * MS;
}

static double g_goodput;

/* ---- scenarios ---- */

static int run_clean(uint64_t seed, int nrails, int both_ways)
{
	sim s;
	int rc;
	double want;

	sim_init(&s, nrails, seed);
	set_links(&s, gbe());
	/* long enough that the first round trips do not weigh on the figure */
	sim_start(&s, g_mib * MIB * (uint64_t)nrails / 2, both_ways ? g_mib * MIB : 0);
	sim_run(&s);
	rc = check_clean(&s);
	g_goodput = goodput_bps(&s);
	want = 0.97 * 1e9 * nrails;
	if (!rc && !both_ways && g_goodput < want) {
		snprintf(g_why, sizeof(g_why), "goodput %.1f Mbit/s below 97%% of %d x 1000 Mbit/s",
			 g_goodput / 1e6, nrails);
		rc = 1;
	}
	sim_free(&s);
	return rc;
}

static int sc_clean2(uint64_t seed) { return run_clean(seed, 2, 0); }
static int sc_clean4(uint64_t seed) { return run_clean(seed, 4, 0); }
static int sc_both_ways(uint64_t seed) { return run_clean(seed, 2, 1); }

static int run_link(uint64_t seed, sim_link l, int both_ways)
{
	sim s;
	int rc;

	sim_init(&s, 2, seed);
	set_links(&s, l);
	sim_start(&s, g_mib * MIB, both_ways ? g_mib * MIB / 4 : 0);
	sim_run(&s);
	rc = check_clean(&s);
	g_goodput = goodput_bps(&s);
	sim_free(&s);
	return rc;
}

static int sc_loss1(uint64_t seed) { sim_link l = gbe(); l.loss = 0.01; return run_link(seed, l, 1); }
static int sc_loss5(uint64_t seed) { sim_link l = gbe(); l.loss = 0.05; return run_link(seed, l, 1); }
static int sc_loss20(uint64_t seed) { sim_link l = gbe(); l.loss = 0.20; return run_link(seed, l, 1); }

static int sc_reorder(uint64_t seed)
{
	sim_link l = gbe();

	l.reorder = 0.25;
	l.reorder_ns = 2 * MS; /* up to 2 ms late: hundreds of packets deep */
	return run_link(seed, l, 1);
}

static int sc_dup(uint64_t seed)
{
	sim_link l = gbe();

	l.dup = 0.10;
	return run_link(seed, l, 1);
}

static int sc_degraded(uint64_t seed)
{
	sim s;
	int rc;

	sim_init(&s, 2, seed);
	set_links(&s, gbe());
	s.net.link[1].rate_bps = 250000000;
	sim_start(&s, g_mib * MIB, 0);
	sim_run(&s);
	rc = check_clean(&s);
	g_goodput = goodput_bps(&s);
	sim_free(&s);
	return rc;
}

/* Both sequence spaces start just below 2^32 and wrap during the transfer. */
static int sc_wrap(uint64_t seed)
{
	sim s;
	int rc;

	sim_init(&s, 2, seed);
	set_links(&s, gbe());
	/* client: id, isn; server: secret (2 draws), id, isn */
	s.host[0].forced[0] = 0;
	s.host[0].forced[1] = UINT32_MAX - 5000;
	s.host[0].nforced = 2;
	s.host[1].forced[3] = UINT32_MAX - 3000;
	s.host[1].nforced = 4;
	sim_start(&s, g_mib * MIB, g_mib * MIB / 2);
	sim_run(&s);
	rc = check_clean(&s);
	if (!rc) {
		rn_conn_stats st;

		rn_conn_get_stats(s.host[0].conn, &st);
		/* 5000 packets to the wrap: the transfer must have crossed it */
		if (st.rail[0].tx_data + st.rail[1].tx_data < 6000) {
			snprintf(g_why, sizeof(g_why), "transfer too short to wrap");
			rc = 1;
		}
	}
	g_goodput = goodput_bps(&s);
	sim_free(&s);
	return rc;
}

/* The receiver's datagram count when the fault starts (a probe). */
static uint64_t g_rx_at_fault, g_fault_ns;

static void probe_fault(sim *s, void *arg)
{
	(void)arg;
	if (!g_rx_at_fault && s->now_ns >= g_fault_ns)
		g_rx_at_fault = s->host[1].rx_packets ? s->host[1].rx_packets : 1;
}

/*
 * Rail 1 silently black-holed (both directions) from t_fail to t_heal while
 * data flows.  The receiver must detect it within a bounded number of
 * packets (five evaluation windows: two short windows and a silence of a
 * few ms at 2 Gbit/s) and 10 ms, the sender must send no DATA on it from the
 * moment it knows, and the sender must use it again within one heartbeat
 * period (plus a few ms of queueing) of the heal.
 */
static int run_blackhole(uint64_t seed, int down, int rail, uint64_t fail_ns, uint64_t mib)
{
	const uint64_t t_fail = at(fail_ns), t_heal = at(fail_ns + 80 * MS);
	sim s;
	int rc;
	const rn_event *det, *up;
	const sim_event *sdet;
	const sim_host *c, *v;
	uint64_t hb;

	sim_init(&s, 2, seed);
	set_links(&s, gbe());
	sim_net_window(&s.net, rail, t_fail, t_heal, down, -1);
	g_rx_at_fault = 0;
	g_fault_ns = t_fail;
	s.probe = probe_fault;
	sim_start(&s, mib * MIB, 0);
	sim_run(&s);
	rc = check_clean(&s);
	g_goodput = goodput_bps(&s);
	c = &s.host[0];
	v = &s.host[1];
	hb = s.cfg[0].heartbeat_ns;
	if (rc)
		goto out;
	sdet = sim_find_sim_event(v, RN_EV_RAIL_DOWN, rail, t_fail);
	CHECK(sdet, "receiver never declared rail %d down", rail);
	det = &sdet->ev;
	CHECK(sdet->rx_packets - g_rx_at_fault <= 5 * s.cfg[1].fail_window,
	      "receiver took %" PRIu64 " packets to detect", sdet->rx_packets - g_rx_at_fault);
	/* 2 Gbit/s of 1472-byte datagrams: one 100-packet window is ~0.6 ms */
	CHECK(det->time_ns - t_fail <= 10 * MS, "receiver took %.3f ms to detect",
	      (double)(det->time_ns - t_fail) / MS);
	CHECK(det->time_ns < t_heal, "detected only after the heal");
	up = sim_find_event(c, RN_EV_RAIL_UP, rail, t_heal);
	CHECK(up, "sender never used rail %d again after the heal", rail);
	CHECK(up->time_ns - t_heal <= hb + 20 * MS, "rail back in use %.1f ms after the heal",
	      (double)(up->time_ns - t_heal) / MS);
	CHECK(c->data_tx[rail] > 0, "no data on the rail at all");
	printf("    detect %.3f ms / %" PRIu64 " packets  back in use %.1f ms after heal  ",
	       (double)(det->time_ns - t_fail) / MS, sdet->rx_packets - g_rx_at_fault,
	       (double)(up->time_ns - t_heal) / MS);
out:
	sim_free(&s);
	return rc;
}

static int sc_blackhole(uint64_t seed) { return run_blackhole(seed, 0, 1, 40 * MS, 2 * g_mib); }
/* the cable of the handshake rail pulled: the sender's sends fail too */
static int sc_cable(uint64_t seed) { return run_blackhole(seed, 1, 0, 40 * MS, 2 * g_mib); }
/*
 * The same 1.2 s into the stream, after two of the window's drains (one per
 * 2^19 us of the receiver's clock, rn_rail.c): the rail that drained
 * brought few packets for a few round trips, and detection must not learn
 * that as a healthy rail's gap and wait twice as long.
 */
static int sc_blackhole_late(uint64_t seed)
{
	return run_blackhole(seed, 0, 1, 1200 * MS, 16 * g_mib);
}

/* The client's DATA per rail at the fault and at the heal (a probe). */
static uint64_t g_bk_heal_ns, g_bk_at_fault[2], g_bk_at_heal[2], g_bk_first_ns;

static void probe_backup(sim *s, void *arg)
{
	(void)arg;
	if (!g_bk_at_fault[0] && s->now_ns >= g_fault_ns)
		for (int r = 0; r < 2; r++)
			g_bk_at_fault[r] = s->host[0].data_tx[r] + (r == 0);
	if (!g_bk_first_ns && s->host[0].data_tx[1])
		g_bk_first_ns = s->now_ns;
	if (!g_bk_at_heal[0] && s->now_ns >= g_bk_heal_ns)
		for (int r = 0; r < 2; r++)
			g_bk_at_heal[r] = s->host[0].data_tx[r] + (r == 0);
}

/*
 * Rail 1 a backup rail at both ends: while rail 0 works it carries no DATA
 * (keepalives only); rail 0 silently black-holed at t_fail, the stream goes
 * on over rail 1 at once (the receiver's verdict, as sc_blackhole's, then
 * the sender's); after the heal rail 0 takes the data back and rail 1
 * carries none again.  Every byte arrives.
 */
static int sc_backup(uint64_t seed)
{
	const uint64_t t_fail = at(40 * MS), t_heal = at(120 * MS);
	const rn_event *down, *up;
	const sim_host *c;
	sim s;
	int rc;

	sim_init(&s, 2, seed);
	set_links(&s, gbe());
	s.host[0].rails[1].backup = 1;
	s.host[1].rails[1].backup = 1;
	sim_net_window(&s.net, 0, t_fail, t_heal, 0, -1);
	memset(g_bk_at_fault, 0, sizeof(g_bk_at_fault));
	memset(g_bk_at_heal, 0, sizeof(g_bk_at_heal));
	g_bk_first_ns = 0;
	g_fault_ns = t_fail;
	g_bk_heal_ns = t_heal;
	s.probe = probe_backup;
	/* about 200 ms on one GbE rail: past the heal */
	sim_start(&s, 24 * g_mib * MIB, 0);
	sim_run(&s);
	rc = check_clean(&s);
	g_goodput = goodput_bps(&s);
	c = &s.host[0];
	if (rc)
		goto out;
	CHECK(g_bk_at_fault[0] > 1000, "only %" PRIu64 " DATA packets on rail 0 before the fault",
	      g_bk_at_fault[0] - 1);
	CHECK(g_bk_at_fault[1] == 0, "%" PRIu64 " DATA packets on the backup rail while rail 0 worked",
	      g_bk_at_fault[1]);
	CHECK(c->data_tx[1] > 0, "the backup rail never carried DATA");
	CHECK(g_bk_at_heal[1] > 0, "no DATA on the backup rail during the fault");
	CHECK(g_bk_first_ns >= t_fail && g_bk_first_ns - t_fail <= 10 * MS,
	      "the backup rail took DATA %.1f ms after the fault", (double)(g_bk_first_ns - t_fail) / MS);
	down = sim_find_event(c, RN_EV_RAIL_DOWN, 0, t_fail);
	up = down ? sim_find_event(c, RN_EV_RAIL_UP, 0, t_heal) : NULL;
	CHECK(!down || up, "rail 0 never came back after the heal");
	CHECK(c->data_tx[0] > g_bk_at_heal[0] - 1, "rail 0 carried no DATA after the heal");
	CHECK(c->data_tx[1] - g_bk_at_heal[1] < (c->data_tx[0] - (g_bk_at_heal[0] - 1)) / 10,
	      "the backup rail kept carrying DATA after the heal (%" PRIu64 " packets, rail 0 %" PRIu64 ")",
	      c->data_tx[1] - g_bk_at_heal[1], c->data_tx[0] - (g_bk_at_heal[0] - 1));
	printf("    backup takes DATA %.2f ms after the fault (%" PRIu64 " packets in all); rail 0 %s  ",
	       (double)(g_bk_first_ns - t_fail) / MS, c->data_tx[1],
	       down ? "down at the sender, back after the heal" : "stalled, back after the heal");
out:
	sim_free(&s);
	return rc;
}

/* ---- MTU black holes: rail 1 loses datagrams over a size, small ones pass ---- */

/*
 * The server's received byte count at moments (a probe): [0]..[1] inside the
 * fault from 10 ms in; [2]..[3] its first 100 ms, a bench bin that starts
 * with the hole (0: not measured).
 */
static uint64_t g_mark_ns[4], g_mark_bytes[4];

/* --trace: the server's received bytes at each 1 ms from 10 ms before the fault (g_trace_t0) */
enum { TRACE_MS = 100 };
static int g_trace;
static uint64_t g_trace_t0, g_trace_bytes[TRACE_MS];

static void trace_note(const sim *s)
{
	uint64_t t0 = g_trace_t0;

	if (g_trace && t0 && s->now_ns >= t0 && s->now_ns < t0 + TRACE_MS * MS)
		g_trace_bytes[(s->now_ns - t0) / MS] = s->host[1].recvd;
}

static void trace_print(const sim *s, uint64_t t_fail)
{
	uint64_t prev = 0;

	if (!g_trace || !g_trace_t0)
		return;
	printf("\n    Mbit/s per ms from the fault (ms:rate)");
	for (int i = 0; i < TRACE_MS; i++) {
		uint64_t b = g_trace_bytes[i] ? g_trace_bytes[i] : prev;

		if (i)
			printf("%s%d:%.0f", i % 10 == 1 ? "\n     " : " ", i - 10,
			       (double)(b - prev) * 8 / 1e3);
		prev = b;
	}
	for (int h = 0; h < 2; h++) {
		const rn_event *d = sim_find_event(&s->host[h], RN_EV_RAIL_DOWN, 1, t_fail);

		printf("\n    host %d: rail 1 down %s%.3f ms after the fault", h, d ? "" : "(never) ",
		       d ? (double)(d->time_ns - t_fail) / MS : 0.0);
	}
	printf("\n    ");
}

static void probe_marks(sim *s, void *arg)
{
	const rn_event *est;

	/* arg set: the marks count from the handshake (the fault was there before it) */
	if (arg && !g_mark_ns[0] && (est = sim_find_event(&s->host[0], RN_EV_ESTABLISHED, -1, 0))) {
		g_mark_ns[0] = est->time_ns + 20 * MS;
		g_mark_ns[1] = est->time_ns + 170 * MS;
	}
	if (!g_mark_ns[0])
		return;
	trace_note(s);
	for (int i = 0; i < 4; i++)
		if (g_mark_ns[i] && !g_mark_bytes[i] && s->now_ns >= g_mark_ns[i])
			g_mark_bytes[i] = s->host[1].recvd + 1;
}

/* Events of a type on a rail in [from, to) at host h. */
static int count_events(const sim_host *h, rn_event_type type, int rail, uint64_t from, uint64_t to)
{
	int n = 0;

	for (int i = 0; i < h->nevents; i++) {
		const rn_event *e = &h->events[i].ev;

		n += e->type == type && e->rail == rail && e->time_ns >= from && e->time_ns < to;
	}
	return n;
}

/* The first RN_EV_RAIL_DOWN of the rail at or after t with cause RN_CAUSE_RX_SIZE. */
static const rn_event *find_size_event(const sim_host *h, int rail, uint64_t t)
{
	for (int i = 0; i < h->nevents; i++) {
		const rn_event *e = &h->events[i].ev;

		if (e->type == RN_EV_RAIL_DOWN && e->rail == rail && e->time_ns >= t &&
		    e->cause == RN_CAUSE_RX_SIZE)
			return e;
	}
	return NULL;
}

/*
 * Rail 1 swallows datagrams over 1000 bytes (frames over 1028) from t_fail
 * to t_heal, in direction dir (-1: both) while data flows one way or both.
 * Every host whose incoming rail 1 has the hole must declare it down within
 * 10 ms and name it an MTU black hole (RN_CAUSE_RX_SIZE: at once, or once
 * its small heartbeats keep arriving alone); small datagrams must not bring
 * it back while the hole lasts (no RAIL_UP on it in the fault: the flapping
 * that held the whole connection to 2-3 MB/s); the stream keeps >= 90% of
 * one rail (1 Gbit/s; 75% with streams both ways, see below) from 10 ms into
 * the fault to its end, and in the fault's first 100 ms (the bench's worst
 * bin: verdict, standstill and catch-up all in it); the sender uses
 * rail 1 at full size again within a heartbeat and 20 ms of the heal.  With
 * heal == 0 rail 1 never carries over 1000 bytes (a rail with a smaller MTU,
 * from before the handshake, with 1% loss on every rail): the rail stays
 * out of data service, no byte lost; times count from the handshake.
 */
static int check_mtu_hole(const sim *s, uint64_t t_fail, uint64_t t_heal, uint64_t t_end,
			  int dir, int both_ways)
{
	const uint64_t hb = s->cfg[0].heartbeat_ns;
	const rn_event *est = sim_find_event(&s->host[0], RN_EV_ESTABLISHED, -1, 0);
	/* the fault, or the connection if the fault came first */
	const uint64_t t_from = est && est->time_ns > t_fail ? est->time_ns : t_fail;
	double in_fault, first = 0;

	CHECK(g_mark_bytes[1], "the stream ended before the fault did: scenario too short");
	in_fault = (double)(g_mark_bytes[1] - g_mark_bytes[0]) * 8 * SEC /
		   (double)(g_mark_ns[1] - g_mark_ns[0]);
	printf("    in the fault %.1f Mbit/s  ", in_fault / 1e6);
	if (g_mark_ns[3]) {
		CHECK(g_mark_bytes[3], "the stream ended in the fault's first 100 ms");
		first = (double)(g_mark_bytes[3] - g_mark_bytes[2]) * 8 * SEC /
			(double)(g_mark_ns[3] - g_mark_ns[2]);
		printf("first 100 ms %.1f Mbit/s  ", first / 1e6);
	}
	trace_print(s, t_fail);
	for (int h = 0; h < 2; h++) {
		const sim_host *rx = &s->host[h], *tx = &s->host[1 - h];
		const rn_event *det, *size, *up;

		/* host h receives through the hole if packets leaving the other host fall in it */
		if (dir >= 0 && dir != 1 - h)
			continue;
		/* a receiver only judges by what it gets: the server sends data only both ways */
		if (h == 0 && !both_ways)
			continue;
		det = sim_find_event(rx, RN_EV_RAIL_DOWN, 1, t_fail);
		CHECK(det && det->time_ns < t_from + 10 * MS,
		      "host %d: rail 1 not declared down within 10 ms (%s)", h,
		      det ? "late" : "never");
		size = find_size_event(rx, 1, t_fail);
		CHECK(size && size->time_ns < t_end, "host %d: rail 1 never named an MTU black hole", h);
		CHECK(count_events(rx, RN_EV_RAIL_UP, 1, t_fail, t_end) == 0,
		      "host %d: small datagrams brought rail 1 back %d times inside the hole", h,
		      count_events(rx, RN_EV_RAIL_UP, 1, t_fail, t_end));
		CHECK(count_events(tx, RN_EV_RAIL_UP, 1, det->time_ns, t_end) == 0,
		      "host %d sent on rail 1 again inside the hole", 1 - h);
		if (t_heal != SIM_NEVER) {
			up = sim_find_event(tx, RN_EV_RAIL_UP, 1, t_heal);
			CHECK(up && up->time_ns - t_heal <= hb + 20 * MS,
			      "host %d: rail 1 not back at full size within %.0f ms of the heal", 1 - h,
			      (double)(hb + 20 * MS) / MS);
		}
		if (h == 1) {
			rn_conn_stats st;

			rn_conn_get_stats(rx->conn, &st);
			CHECK(st.rail[1].mtu_holes >= 1 && st.rail[1].small_ok > 0 &&
			      st.rail[1].small_ok <= 1000 && st.rail[1].dgram == 1472,
			      "server's rail 1 stats: %u MTU holes, small_ok %u, dgram %u",
			      st.rail[1].mtu_holes, st.rail[1].small_ok, st.rail[1].dgram);
		}
	}
	/*
	 * With a full stream the other way too, rail 0 also carries that
	 * stream's ACKs and the peer's losses: a plain black hole of the whole
	 * rail keeps 79-93% of a rail here (seeds 1-8), so that is the bar.
	 */
	CHECK(in_fault >= (both_ways ? 0.75e9 : 0.9e9),
	      "%.1f Mbit/s inside the fault, below %d%% of one rail", in_fault / 1e6,
	      both_ways ? 75 : 90);
	/*
	 * The bench's bar is every 100 ms bin; the worst bin starts with the
	 * hole (it holds the verdict, the standstill and the catch-up: the
	 * stream loses nothing there as long as rail 0 resends what rail 1
	 * lost within the bin).
	 */
	CHECK(!g_mark_ns[3] || first >= (both_ways ? 0.75e9 : 0.9e9),
	      "%.1f Mbit/s in the first 100 ms of the fault, below %d%% of one rail",
	      first / 1e6, both_ways ? 75 : 90);
	return 0;
}

static int run_mtu_hole(uint64_t seed, int dir, int both_ways, int heal)
{
	const uint64_t t_fail = heal ? at(40 * MS) : 0, t_heal = heal ? at(190 * MS) : SIM_NEVER;
	sim s;
	int rc;

	sim_init(&s, 2, seed);
	set_links(&s, gbe());
	if (!heal)
		for (int r = 0; r < 2; r++)
			s.net.link[r].loss = 0.01;
	sim_net_mtu_window(&s.net, 1, t_fail, t_heal, 1000, dir);
	memset(g_mark_bytes, 0, sizeof(g_mark_bytes));
	memset(g_mark_ns, 0, sizeof(g_mark_ns));
	memset(g_trace_bytes, 0, sizeof(g_trace_bytes));
	g_trace_t0 = heal ? t_fail - 10 * MS : 0;
	if (heal) {
		g_mark_ns[0] = t_fail + 10 * MS;
		g_mark_ns[1] = t_heal;
		g_mark_ns[2] = t_fail;
		g_mark_ns[3] = t_fail + 100 * MS;
	}
	s.probe = probe_marks;
	s.probe_arg = heal ? NULL : &s;
	sim_start(&s, 2 * g_mib * MIB, both_ways ? g_mib * MIB : 0);
	sim_run(&s);
	rc = check_clean(&s);
	g_goodput = goodput_bps(&s);
	if (!rc)
		rc = check_mtu_hole(&s, t_fail, t_heal, g_mark_ns[1], dir, both_ways);
	sim_free(&s);
	return rc;
}

static int sc_mtu_hole(uint64_t seed) { return run_mtu_hole(seed, -1, 0, 1); }
static int sc_mtu_hole_both(uint64_t seed) { return run_mtu_hole(seed, -1, 1, 1); }
/* only the server's packets meet the hole: the client judges, the server keeps sending */
static int sc_mtu_hole_back(uint64_t seed) { return run_mtu_hole(seed, 1, 1, 1); }
static int sc_mtu_small_rail(uint64_t seed) { return run_mtu_hole(seed, -1, 1, 0); }

static int sc_dead_from_start(uint64_t seed)
{
	sim s;
	int rc;

	sim_init(&s, 2, seed);
	set_links(&s, gbe());
	sim_net_window(&s.net, 1, 0, SIM_NEVER, 0, -1);
	sim_start(&s, g_mib * MIB, 0);
	sim_run(&s);
	rc = check_clean(&s);
	g_goodput = goodput_bps(&s);
	if (!rc && !sim_find_event(&s.host[1], RN_EV_RAIL_DOWN, 1, 0)) {
		snprintf(g_why, sizeof(g_why), "dead rail never declared down");
		rc = 1;
	}
	sim_free(&s);
	return rc;
}

/* Every rail dark for 2 s, far below the 30 s dead-peer timeout: it completes. */
static int sc_all_dead_short(uint64_t seed)
{
	sim s;
	int rc;

	sim_init(&s, 2, seed);
	set_links(&s, gbe());
	for (int r = 0; r < 2; r++)
		sim_net_window(&s.net, r, at(30 * MS), at(30 * MS) + 2 * SEC, 0, -1);
	sim_start(&s, g_mib * MIB, 0);
	sim_run(&s);
	rc = check_clean(&s);
	g_goodput = goodput_bps(&s);
	if (!rc && s.host[1].t_eof_ns < 2 * SEC) {
		snprintf(g_why, sizeof(g_why), "finished before the outage ended: scenario too short");
		rc = 1;
	}
	sim_free(&s);
	return rc;
}

/* Both ends fail with RN_ERR_TIMEDOUT about dead_peer after the last packet, never hang. */
static int check_timeout(const sim *s, int host, uint64_t silent_from)
{
	const sim_host *h = &s->host[host];
	uint64_t dp = s->cfg[host].dead_peer_ns;

	CHECK(!s->hung, "run did not finish: a hang");
	CHECK(h->err == RN_ERR_TIMEDOUT, "host %d ended with '%s', not a timeout", host,
	      h->err ? rn_strerror(h->err) : "no error");
	CHECK(h->t_err_ns >= silent_from + dp - 100 * MS && h->t_err_ns <= silent_from + dp + SEC,
	      "host %d timed out at %.3f s, expected about %.3f s", host,
	      (double)h->t_err_ns / SEC, (double)(silent_from + dp) / SEC);
	CHECK(h->mismatches == 0, "host %d: corrupted bytes", host);
	return 0;
}

static int sc_all_dead_long(uint64_t seed)
{
	sim s;
	int rc;

	sim_init(&s, 2, seed);
	set_links(&s, gbe());
	for (int r = 0; r < 2; r++)
		sim_net_window(&s.net, r, at(30 * MS), at(30 * MS) + 40 * SEC, 0, -1);
	sim_start(&s, g_mib * MIB, 0);
	sim_run(&s);
	rc = check_timeout(&s, 0, at(30 * MS));
	if (!rc)
		rc = check_timeout(&s, 1, at(30 * MS));
	sim_free(&s);
	return rc;
}

/*
 * Keyed; every rail dark for 40 s from 30 ms while an attacker past the hole
 * re-sends, every 100 ms, the last datagram each host got through on each
 * rail (its tag is valid).  Replays are no sign of life: both ends still
 * time out after the dead-peer timeout.
 */
static int sc_replay_dead(uint64_t seed)
{
	sim s;
	sim_link l = gbe();
	int rc;

	sim_init(&s, 2, seed);
	l.replay_ns = 100 * MS;
	set_links(&s, l);
	for (int h = 0; h < 2; h++) {
		s.cfg[h].keyed = 1;
		for (int i = 0; i < RN_KEY_LEN; i++)
			s.cfg[h].key[i] = (uint8_t)(seed * 17 + (uint64_t)i * 5);
	}
	for (int r = 0; r < 2; r++)
		sim_net_window(&s.net, r, at(30 * MS), at(30 * MS) + 40 * SEC, 0, -1);
	sim_start(&s, g_mib * MIB, 0);
	sim_run(&s);
	rc = check_timeout(&s, 0, at(30 * MS));
	if (!rc)
		rc = check_timeout(&s, 1, at(30 * MS));
	if (!rc && s.net.replayed < 100) {
		snprintf(g_why, sizeof(g_why), "only %" PRIu64 " replays", s.net.replayed);
		rc = 1;
	}
	sim_free(&s);
	return rc;
}

static int sc_vanish(uint64_t seed)
{
	sim s;
	int rc;

	sim_init(&s, 2, seed);
	set_links(&s, gbe());
	s.vanish_ns = at(40 * MS);
	sim_start(&s, g_mib * MIB, 0);
	sim_run(&s);
	rc = check_timeout(&s, 0, s.vanish_ns);
	sim_free(&s);
	return rc;
}

/*
 * The probe of sc_vanish_last_ack: the client's FIN goes alone once all its
 * bytes are acknowledged; once the server lingers, its ACKs are lost and it
 * goes.
 */
static void vanish_on_linger(sim *s, void *arg)
{
	int *fin = arg;
	rn_conn *c = s->host[0].conn;

	if (!*fin && c && rn_conn_state(c) == RN_ST_ESTABLISHED &&
	    s->host[0].sent == s->host[0].to_send && rn_conn_write_done(c) &&
	    rn_conn_shutdown(c, s->now_ns) == 0)
		*fin = 1;
	if (s->vanish_ns || !s->host[1].conn || rn_conn_state(s->host[1].conn) != RN_ST_LINGER)
		return;
	for (int r = 0; r < s->net.nrails; r++)
		sim_net_window(&s->net, r, s->now_ns, SIM_NEVER, 0, 1);
	s->vanish_ns = s->now_ns + MS;
}

/*
 * Both sides close; the server, last to get a FIN, lingers, but its ACK of
 * that FIN is lost and its process is gone 1 ms later (an exit that did not
 * wait).  The client lacks only that ACK (LAST_ACK): it must end cleanly,
 * every byte both ways delivered, 3 s (3 lingers) after the server went
 * silent, not fail at its dead-peer timeout (30 s) as it did.
 */
static int sc_vanish_last_ack(uint64_t seed)
{
	sim s;
	int rc = 0;
	int fin = 0;

	sim_init(&s, 2, seed);
	set_links(&s, gbe());
	s.probe = vanish_on_linger;
	s.probe_arg = &fin;
	s.host[0].shut = 1; /* the probe shuts the client down, not the harness */
	sim_start(&s, g_mib * MIB, 4096); /* the server's FIN goes long before the client's */
	sim_run(&s);
	CHECK(s.vanish_ns, "the server never lingered");
	CHECK(!s.hung, "run did not finish");
	CHECK(s.host[0].err == 0, "the client failed: %s", rn_strerror(s.host[0].err));
	CHECK(s.host[0].eof && s.host[0].recvd == 4096 && s.host[0].mismatches == 0,
	      "the client did not get the server's whole stream");
	CHECK(rn_conn_state(s.host[0].conn) == RN_ST_CLOSED, "the client is not closed");
	CHECK(s.host[1].eof && s.host[1].recvd == s.host[1].to_recv && s.host[1].mismatches == 0,
	      "the server did not get the client's whole stream");
	CHECK(s.now_ns <= s.vanish_ns + 3 * SEC + 500 * MS,
	      "the client closed at %.3f s, the server went at %.3f s", (double)s.now_ns / SEC,
	      (double)s.vanish_ns / SEC);
	sim_free(&s);
	return rc;
}

/* Both ends keyed; an attacker on every rail re-sends mangled copies of 20% of the packets. */
static int sc_keyed_mangle(uint64_t seed)
{
	sim s;
	sim_link l = gbe();
	rn_conn_stats st;
	int rc;

	sim_init(&s, 2, seed);
	l.mangle = 0.20;
	set_links(&s, l);
	for (int h = 0; h < 2; h++) {
		s.cfg[h].keyed = 1;
		for (int i = 0; i < RN_KEY_LEN; i++)
			s.cfg[h].key[i] = (uint8_t)(seed * 31 + (uint64_t)i * 7);
	}
	sim_start(&s, g_mib * MIB, g_mib * MIB / 4);
	sim_run(&s);
	rc = check_clean(&s);
	g_goodput = goodput_bps(&s);
	if (!rc) {
		rn_conn_get_stats(s.host[1].conn, &st);
		if (s.net.mangled < 100 || st.drops[RN_DROP_AUTH] == 0) {
			snprintf(g_why, sizeof(g_why), "%" PRIu64 " mangled copies, %" PRIu64
				 " dropped for authentication", s.net.mangled, st.drops[RN_DROP_AUTH]);
			rc = 1;
		}
	}
	sim_free(&s);
	return rc;
}

/* Hostile datagrams after 30% of the packets on every rail, both ways, no key. */
static int sc_hostile(uint64_t seed)
{
	sim s;
	sim_link l = gbe();
	int rc;

	sim_init(&s, 2, seed);
	l.junk = 0.30;
	set_links(&s, l);
	sim_start(&s, g_mib * MIB, g_mib * MIB / 4);
	sim_run(&s);
	rc = check_clean(&s);
	g_goodput = goodput_bps(&s);
	if (!rc) {
		uint64_t ld = 0;

		for (int d = 0; d < RN_DROP__COUNT; d++)
			ld += s.host[1].lis.drops[d];
		if (s.host[1].extra_accepts || s.net.junk < 1000 || ld == 0) {
			snprintf(g_why, sizeof(g_why), "%" PRIu64 " hostile datagrams, %" PRIu64
				 " listener drops, %" PRIu64 " forged handshakes accepted",
				 s.net.junk, ld, s.host[1].extra_accepts);
			rc = 1;
		}
	}
	sim_free(&s);
	return rc;
}

/* Different keys: the handshake never completes, the client times out, nothing is accepted. */
static int sc_key_mismatch(uint64_t seed)
{
	sim s;
	int rc = 0;

	sim_init(&s, 2, seed);
	set_links(&s, gbe());
	for (int h = 0; h < 2; h++) {
		s.cfg[h].keyed = 1;
		s.cfg[h].connect_timeout_ns = 2 * SEC;
		for (int i = 0; i < RN_KEY_LEN; i++)
			s.cfg[h].key[i] = (uint8_t)(seed + (uint64_t)i + (uint64_t)h);
	}
	sim_start(&s, MIB, 0);
	sim_run(&s);
	if (s.host[0].err != RN_ERR_TIMEDOUT) {
		snprintf(g_why, sizeof(g_why), "client ended with '%s', want a handshake timeout",
			 rn_strerror(s.host[0].err));
		rc = 1;
	} else if (s.host[1].conn || s.host[1].lis.accepts) {
		snprintf(g_why, sizeof(g_why), "the server accepted a connection with the wrong key");
		rc = 1;
	} else if (s.host[1].lis.drops[RN_DROP_AUTH] == 0) {
		snprintf(g_why, sizeof(g_why), "the server counted no authentication drops");
		rc = 1;
	}
	sim_free(&s);
	return rc;
}

/* ---- sizes per rail: jumbo rails, mixed rails, a path MTU that shrinks and grows ---- */

#define JUMBO 8972u /* UDP payload of an MTU 9000 rail */
#define ETH 1472u   /* ... of an MTU 1500 rail */

/* Both hosts' interfaces on rail r carry `dgram` bytes (MTU - 28). */
static void set_rail_dgram(sim *s, int r, uint32_t dgram)
{
	for (int h = 0; h < 2; h++)
		s->host[h].rails[r].max_dgram = dgram;
}

/* The size host h sends on rail r now (ri2n_stats' dgram). */
static uint32_t rail_size(const sim_host *h, int r)
{
	rn_conn_stats st;

	if (!h->conn)
		return 0;
	rn_conn_get_stats(h->conn, &st);
	return st.rail[r].dgram;
}

/* Mean size of the DATA datagrams host h sent on rail r. */
static double mean_sent(const sim *s, int h, int r)
{
	const sim_host *x = &s->host[h];

	return x->data_tx[r] ? (double)x->data_tx_bytes[r] / (double)x->data_tx[r] : 0;
}

/*
 * Rail 0 at MTU 9000 on both hosts; rail 1 at 9000 too (jumbo) or with a
 * switch in its path that only carries 1500 (mixed: the interfaces say 9000,
 * only probing finds the truth), 1% loss on both in the mixed case.  The
 * sender's rails end at their real sizes (within the search's 32 bytes),
 * the jumbo ones carrying several packets per datagram; every byte arrives.
 */
static int run_sizes(uint64_t seed, int mixed, int keyed)
{
	sim s;
	int rc;

	sim_init(&s, 2, seed);
	set_links(&s, gbe());
	for (int h = 0; h < 2 && keyed; h++) {
		s.cfg[h].keyed = 1; /* sizes count the AEAD's 24 bytes on the wire */
		for (int i = 0; i < RN_KEY_LEN; i++)
			s.cfg[h].key[i] = (uint8_t)(seed * 11 + (uint64_t)i * 3);
	}
	set_rail_dgram(&s, 0, JUMBO);
	set_rail_dgram(&s, 1, JUMBO);
	if (mixed) {
		sim_net_mtu_window(&s.net, 1, 0, SIM_NEVER, ETH, -1);
		for (int r = 0; r < 2; r++)
			s.net.link[r].loss = 0.01;
	}
	sim_start(&s, g_mib * MIB, g_mib * MIB / 4);
	sim_run(&s);
	rc = check_clean(&s);
	g_goodput = goodput_bps(&s);
	for (int h = 0; h < 2 && !rc; h++) {
		uint32_t s0 = rail_size(&s.host[h], 0), s1 = rail_size(&s.host[h], 1);
		uint32_t want1 = mixed ? ETH : JUMBO;

		printf("    host %d sizes %u %u, mean DATA %.0f %.0f  ", h, s0, s1,
		       mean_sent(&s, h, 0), mean_sent(&s, h, 1));
		CHECK(s0 <= JUMBO && s0 + 32 >= JUMBO, "host %d: rail 0 at %u bytes, not %u", h, s0,
		      JUMBO);
		CHECK(s1 <= want1 && s1 + 32 >= want1, "host %d: rail 1 at %u bytes, not %u", h, s1,
		      want1);
		/* the stream's sender bundles on a jumbo rail: more than two 1500-byte datagrams' worth */
		CHECK(h == 1 || mean_sent(&s, h, 0) > 2 * ETH,
		      "host %d: rail 0's DATA datagrams average %.0f bytes: no jumbo DATA", h,
		      mean_sent(&s, h, 0));
	}
	sim_free(&s);
	return rc;
}

static int sc_mtu_jumbo(uint64_t seed) { return run_sizes(seed, 0, 0); }
static int sc_mtu_mixed(uint64_t seed) { return run_sizes(seed, 1, 0); }
static int sc_mtu_mixed_keyed(uint64_t seed) { return run_sizes(seed, 1, 1); }

/* What the shrink-and-grow scenario watches, once per ms of simulated time. */
static struct {
	uint64_t t_fail, t_heal, next_ns, t_small, t_back;
	uint64_t data_at_small, data_at_heal;
} g_sg;

static void probe_sizes(sim *s, void *arg)
{
	uint32_t size;

	(void)arg;
	if (s->now_ns < g_sg.next_ns)
		return;
	g_sg.next_ns = s->now_ns + MS;
	size = rail_size(&s->host[0], 1);
	if (s->now_ns >= g_sg.t_fail && s->now_ns < g_sg.t_heal && !g_sg.t_small && size &&
	    size <= ETH) {
		g_sg.t_small = s->now_ns;
		g_sg.data_at_small = s->host[0].data_tx[1];
	}
	if (s->now_ns >= g_sg.t_heal && !g_sg.data_at_heal)
		g_sg.data_at_heal = s->host[0].data_tx[1] + 1;
	if (s->now_ns >= g_sg.t_heal && !g_sg.t_back && size + 32 >= JUMBO)
		g_sg.t_back = s->now_ns;
}

/*
 * Both rails at MTU 9000; rail 1's path shrinks to 1500 (datagrams over
 * 1472 bytes silently lost) for 100 ms, then grows back.  The sender's
 * rail 1 drops to a size that gets through within 50 ms and keeps carrying
 * DATA at it; its jumbo size is back within 300 ms of the heal (the old
 * size is retried every 250 ms); every byte arrives.
 */
static int sc_mtu_shrink_grow(uint64_t seed)
{
	sim s;
	int rc;

	memset(&g_sg, 0, sizeof(g_sg));
	g_sg.t_fail = at(40 * MS);
	g_sg.t_heal = g_sg.t_fail + 100 * MS;
	sim_init(&s, 2, seed);
	set_links(&s, gbe());
	set_rail_dgram(&s, 0, JUMBO);
	set_rail_dgram(&s, 1, JUMBO);
	sim_net_mtu_window(&s.net, 1, g_sg.t_fail, g_sg.t_heal, ETH, -1);
	s.probe = probe_sizes;
	sim_start(&s, 4 * g_mib * MIB, 0);
	sim_run(&s);
	rc = check_clean(&s);
	g_goodput = goodput_bps(&s);
	if (!rc) {
		printf("    small after %.1f ms, back %.1f ms after the heal  ",
		       g_sg.t_small ? (double)(g_sg.t_small - g_sg.t_fail) / MS : -1.0,
		       g_sg.t_back ? (double)(g_sg.t_back - g_sg.t_heal) / MS : -1.0);
		CHECK(g_sg.t_small && g_sg.t_small - g_sg.t_fail <= 50 * MS,
		      "rail 1 not at a size that gets through within 50 ms of the shrink");
		CHECK(g_sg.data_at_heal - 1 > g_sg.data_at_small,
		      "rail 1 carried no DATA at its small size");
		CHECK(g_sg.t_back && g_sg.t_back - g_sg.t_heal <= 300 * MS,
		      "rail 1 not back at jumbo size within 300 ms of the heal");
	}
	sim_free(&s);
	return rc;
}

typedef struct scenario {
	const char *name;
	int (*run)(uint64_t seed);
	const char *what;
} scenario;

static const scenario scenarios[] = {
	{ "clean2", sc_clean2, "2 clean rails, >= 97% of their sum" },
	{ "clean4", sc_clean4, "4 clean rails, >= 97% of their sum" },
	{ "both-ways", sc_both_ways, "2 rails, full streams in both directions" },
	{ "loss1", sc_loss1, "1% random loss on every rail" },
	{ "loss5", sc_loss5, "5% random loss on every rail" },
	{ "loss20", sc_loss20, "20% random loss on every rail" },
	{ "reorder", sc_reorder, "25% of packets up to 2 ms late" },
	{ "dup", sc_dup, "10% duplicated packets" },
	{ "degraded", sc_degraded, "1 Gbit/s + 250 Mbit/s rails" },
	{ "wrap", sc_wrap, "sequence numbers wrap around 2^32" },
	{ "blackhole", sc_blackhole, "rail 1 silently black-holed, then healed" },
	{ "blackhole-late", sc_blackhole_late, "the same 1.2 s into the stream, after two drains" },
	{ "cable", sc_cable, "rail 0 (handshake rail) cable pulled, then back" },
	{ "backup", sc_backup, "rail 1 a backup: no DATA while rail 0 works; rail 0 black-holed, healed" },
	{ "mtu-hole", sc_mtu_hole, "rail 1 drops datagrams over 1000 bytes for 150 ms, then heals" },
	{ "mtu-hole-both", sc_mtu_hole_both, "the same with full streams both ways" },
	{ "mtu-hole-back", sc_mtu_hole_back, "the hole only on the server's way, streams both ways" },
	{ "mtu-small-rail", sc_mtu_small_rail, "rail 1 never carries over 1000 bytes; 1% loss" },
	{ "mtu-jumbo", sc_mtu_jumbo, "both rails MTU 9000: probed to 8972, jumbo DATA" },
	{ "mtu-mixed", sc_mtu_mixed, "rails 9000 + 9000 behind a 1500 switch, 1% loss: 8972 + 1472" },
	{ "mtu-mixed-keyed", sc_mtu_mixed_keyed, "mtu-mixed with a cluster key (AEAD on every datagram)" },
	{ "mtu-shrink-grow", sc_mtu_shrink_grow, "rail 1's path MTU 9000 -> 1500 for 100 ms -> 9000" },
	{ "dead-from-start", sc_dead_from_start, "rail 1 dead from the start" },
	{ "all-dead-short", sc_all_dead_short, "all rails dark for 2 s (< dead-peer timeout)" },
	{ "all-dead-long", sc_all_dead_long, "all rails dark for 40 s (> dead-peer timeout)" },
	{ "replay-dead", sc_replay_dead, "keyed; all rails dark 40 s, recorded packets replayed" },
	{ "vanish", sc_vanish, "the server vanishes mid-transfer" },
	{ "vanish-last-ack", sc_vanish_last_ack, "the server lingers, loses its last ACK and goes" },
	{ "hostile", sc_hostile, "garbage, forged packets and handshakes after 30% of packets" },
	{ "keyed-mangle", sc_keyed_mangle, "keyed; mangled copies of 20% of packets injected" },
	{ "key-mismatch", sc_key_mismatch, "different keys: no connection, a timeout" },
};

int main(int argc, char **argv)
{
	uint64_t first = 1, last = 3;
	const char *only[64];
	int nonly = 0, failed = 0, ran = 0;

	for (int i = 1; i < argc; i++) {
		if (!strcmp(argv[i], "--seeds") && i + 1 < argc) {
			if (sscanf(argv[++i], "%" SCNu64 "-%" SCNu64, &first, &last) == 1)
				last = first;
		} else if (!strcmp(argv[i], "--mib") && i + 1 < argc) {
			g_mib = strtoull(argv[++i], NULL, 10);
		} else if (!strcmp(argv[i], "--trace")) {
			g_trace = 1;
		} else if (!strcmp(argv[i], "--list")) {
			for (size_t k = 0; k < sizeof(scenarios) / sizeof(*scenarios); k++)
				printf("%-16s %s\n", scenarios[k].name, scenarios[k].what);
			return 0;
		} else if (argv[i][0] == '-') {
			fprintf(stderr, "usage: %s [--seeds A-B] [--mib N] [--trace] [--list] [scenario...]\n",
				argv[0]);
			return 2;
		} else if (nonly < 64) {
			only[nonly++] = argv[i];
		}
	}
	for (size_t k = 0; k < sizeof(scenarios) / sizeof(*scenarios); k++) {
		const scenario *sc = &scenarios[k];
		int want = nonly == 0;

		for (int j = 0; j < nonly; j++)
			want |= !strcmp(only[j], sc->name);
		if (!want)
			continue;
		for (uint64_t seed = first; seed <= last; seed++) {
			int rc;

			g_why[0] = 0;
			g_goodput = 0;
			g_seed = seed;
			printf("%-16s seed %-4" PRIu64 " ", sc->name, seed);
			fflush(stdout);
			rc = sc->run(seed);
			ran++;
			if (rc) {
				failed++;
				printf("FAIL: %s (replay: ri2n-sim --seeds %" PRIu64 " %s)\n", g_why, seed,
				       sc->name);
			} else {
				printf("ok");
				if (g_goodput > 0)
					printf("  goodput %.1f Mbit/s", g_goodput / 1e6);
				printf("\n");
			}
		}
	}
	if (ran == 0) {
		fprintf(stderr, "no scenario matched\n");
		return 2;
	}
	printf("%d of %d runs passed\n", ran - failed, ran);
	return failed ? 1 : 0;
}
