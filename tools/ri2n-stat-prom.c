/*
 * ri2n-stat-prom.c - ri2n-stat --prometheus: the snapshots in Prometheus'
 * text exposition format (version 0.0.4), for node_exporter's textfile
 * collector or any scraper that reads a file.
 *
 * Every process (and libfabric endpoint) gives per-process series (its
 * connections summed), per-listener series and per-rail series (its
 * connections summed rail by rail); --prometheus=conns adds series per
 * connection and per connection and rail, which a host with thousands of
 * connections should not send by default.  Names follow Prometheus'
 * conventions: counters end in _total, times are in seconds, sizes in
 * bytes; rails are labelled from 1 (rail="1" is the test bed's r1), as
 * ri2n-stat's table numbers them.  A family's samples are printed together
 * under one HELP and TYPE, as the format wants.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "ri2n-stat.h"

/* Which records a family's samples come from. */
typedef enum { AT_PROC, AT_LISTENER, AT_RAIL, AT_CONN, AT_CONN_RAIL } at_level;

/* How a sample's value is made from the records' fields. */
typedef enum {
	V_SUM,     /* the field, summed over connections (or rails) when aggregated */
	V_US,      /* microseconds -> seconds (a rail's smoothed RTT; a mean when aggregated) */
	V_MS,      /* milliseconds -> seconds */
	V_STATES,  /* how many connections (or rails) are in each state: a state label */
	V_UP,      /* 1 when the rail is up */
	V_DROPS,   /* drops_<reason>, one sample per reason: a reason label */
	V_INFO,    /* 1, with the connection's role and state as labels */
	V_PLAIN,   /* the process record's field as it is */
} v_how;

typedef struct fam {
	const char *name, *type;
	at_level at;
	v_how how;
	const char *field, *help;
} fam;

static const fam fams[] = {
	{ "ri2n_snapshot_time_seconds", "gauge", AT_PROC, V_PLAIN, "time",
	  "When the process wrote the snapshot read (Unix time; it writes one every RI2N_STAT_MS)" },
	{ "ri2n_connections", "gauge", AT_PROC, V_STATES, "state",
	  "Open connections of the process by state" },
	{ "ri2n_sent_bytes_total", "counter", AT_PROC, V_SUM, "app_tx_bytes",
	  "Stream bytes the application wrote, summed over the open connections" },
	{ "ri2n_received_bytes_total", "counter", AT_PROC, V_SUM, "app_rx_bytes",
	  "Stream bytes delivered to the application, summed over the open connections" },
	{ "ri2n_sent_packets_total", "counter", AT_PROC, V_SUM, "tx_packets",
	  "Packets sent on all rails, summed over the open connections" },
	{ "ri2n_received_packets_total", "counter", AT_PROC, V_SUM, "rx_packets",
	  "Packets received on all rails, summed over the open connections" },
	{ "ri2n_retransmits_total", "counter", AT_PROC, V_SUM, "retransmits",
	  "DATA packets sent again, summed over the open connections" },
	{ "ri2n_copies_total", "counter", AT_PROC, V_SUM, "copies",
	  "DATA packets also sent on a second rail (RI2N_REDUNDANT_BYTES), summed over the open connections" },
	{ "ri2n_timeouts_total", "counter", AT_PROC, V_SUM, "rto",
	  "Retransmission timeouts, summed over the open connections" },
	{ "ri2n_dropped_packets_total", "counter", AT_PROC, V_DROPS, NULL,
	  "Datagrams dropped by the connections, by reason, summed over the open connections" },
	{ "ri2n_listener_handshakes_total", "counter", AT_LISTENER, V_SUM, "inits",
	  "Handshakes a listener answered" },
	{ "ri2n_listener_accepted_total", "counter", AT_LISTENER, V_SUM, "accepts",
	  "Connections a listener accepted" },
	{ "ri2n_listener_dropped_packets_total", "counter", AT_LISTENER, V_SUM, "drops",
	  "Datagrams a listener did not use (malformed, forged, unknown, backlog full)" },
	{ "ri2n_listener_queued_connections", "gauge", AT_LISTENER, V_SUM, "queued",
	  "Connections waiting to be accepted" },
	{ "ri2n_rail_connections", "gauge", AT_RAIL, V_STATES, "state",
	  "Open connections on which the rail is up or down" },
	{ "ri2n_rail_sent_bytes_total", "counter", AT_RAIL, V_SUM, "tx_bytes",
	  "Bytes of datagrams sent on the rail, summed over the open connections" },
	{ "ri2n_rail_received_bytes_total", "counter", AT_RAIL, V_SUM, "rx_bytes",
	  "Bytes of datagrams received on the rail, summed over the open connections" },
	{ "ri2n_rail_sent_packets_total", "counter", AT_RAIL, V_SUM, "tx_packets",
	  "Packets sent on the rail, summed over the open connections" },
	{ "ri2n_rail_received_packets_total", "counter", AT_RAIL, V_SUM, "rx_packets",
	  "Packets received on the rail, summed over the open connections" },
	{ "ri2n_rail_retransmits_total", "counter", AT_RAIL, V_SUM, "retransmits",
	  "DATA packets sent again on the rail, summed over the open connections" },
	{ "ri2n_rail_lost_packets_total", "counter", AT_RAIL, V_SUM, "lost",
	  "DATA packets sent on the rail and declared lost, summed over the open connections" },
	{ "ri2n_rail_heartbeats_total", "counter", AT_RAIL, V_SUM, "heartbeats",
	  "Heartbeats sent on the rail, summed over the open connections" },
	{ "ri2n_rail_down_events_total", "counter", AT_RAIL, V_SUM, "downs",
	  "Times the rail was found down, summed over the open connections" },
	{ "ri2n_rail_up_events_total", "counter", AT_RAIL, V_SUM, "ups",
	  "Times the rail came back up, summed over the open connections" },
	{ "ri2n_rail_rtt_seconds", "gauge", AT_RAIL, V_US, "srtt_us",
	  "Smoothed round-trip time on the rail, the mean over the connections that measured one" },
	{ "ri2n_conn_info", "gauge", AT_CONN, V_INFO, NULL,
	  "A connection (1), with its role and state" },
	{ "ri2n_conn_age_seconds", "gauge", AT_CONN, V_MS, "age_ms",
	  "Time since the connection was made" },
	{ "ri2n_conn_sent_bytes_total", "counter", AT_CONN, V_SUM, "app_tx_bytes",
	  "Stream bytes the application wrote on the connection" },
	{ "ri2n_conn_received_bytes_total", "counter", AT_CONN, V_SUM, "app_rx_bytes",
	  "Stream bytes the connection delivered to the application" },
	{ "ri2n_conn_sent_packets_total", "counter", AT_CONN, V_SUM, "tx_packets",
	  "Packets the connection sent on all rails" },
	{ "ri2n_conn_received_packets_total", "counter", AT_CONN, V_SUM, "rx_packets",
	  "Packets the connection received on all rails" },
	{ "ri2n_conn_retransmits_total", "counter", AT_CONN, V_SUM, "retransmits",
	  "DATA packets the connection sent again" },
	{ "ri2n_conn_copies_total", "counter", AT_CONN, V_SUM, "copies",
	  "DATA packets the connection also sent on a second rail (RI2N_REDUNDANT_BYTES)" },
	{ "ri2n_conn_timeouts_total", "counter", AT_CONN, V_SUM, "rto",
	  "Retransmission timeouts of the connection" },
	{ "ri2n_conn_dropped_packets_total", "counter", AT_CONN, V_DROPS, NULL,
	  "Datagrams the connection dropped, by reason" },
	{ "ri2n_conn_rail_up", "gauge", AT_CONN_RAIL, V_UP, "state",
	  "1 when the rail is up on the connection, 0 when down" },
	{ "ri2n_conn_rail_sent_bytes_total", "counter", AT_CONN_RAIL, V_SUM, "tx_bytes",
	  "Bytes of datagrams the connection sent on the rail" },
	{ "ri2n_conn_rail_received_bytes_total", "counter", AT_CONN_RAIL, V_SUM, "rx_bytes",
	  "Bytes of datagrams the connection received on the rail" },
	{ "ri2n_conn_rail_sent_packets_total", "counter", AT_CONN_RAIL, V_SUM, "tx_packets",
	  "Packets the connection sent on the rail" },
	{ "ri2n_conn_rail_received_packets_total", "counter", AT_CONN_RAIL, V_SUM, "rx_packets",
	  "Packets the connection received on the rail" },
	{ "ri2n_conn_rail_retransmits_total", "counter", AT_CONN_RAIL, V_SUM, "retransmits",
	  "DATA packets the connection sent again on the rail" },
	{ "ri2n_conn_rail_lost_packets_total", "counter", AT_CONN_RAIL, V_SUM, "lost",
	  "DATA packets the connection sent on the rail and declared lost" },
	{ "ri2n_conn_rail_down_events_total", "counter", AT_CONN_RAIL, V_SUM, "downs",
	  "Times the connection found the rail down" },
	{ "ri2n_conn_rail_up_events_total", "counter", AT_CONN_RAIL, V_SUM, "ups",
	  "Times the rail came back up on the connection" },
	{ "ri2n_conn_rail_rtt_seconds", "gauge", AT_CONN_RAIL, V_US, "srtt_us",
	  "Smoothed round-trip time the connection measured on the rail" },
};

static const char *const reasons[] = { "malformed", "source", "window", "duplicate", "auth",
				       "other" };

/* A label value as the format wants it: backslash, quote and newline escaped. */
static void esc(const char *in, char *out, size_t len)
{
	size_t o = 0;

	for (; *in && o + 3 < len; in++) {
		if (*in == '\\' || *in == '"' || *in == '\n') {
			out[o++] = '\\';
			out[o++] = *in == '\n' ? 'n' : *in;
		} else {
			out[o++] = *in;
		}
	}
	out[o] = 0;
}

/* pid, program and, for a libfabric endpoint, the endpoint: unique per snapshot file. */
static void proc_labels(const snap *s, char *out, size_t len)
{
	const rec *p = &s->r[1];
	char cmd[160], ep[160];

	esc(stat_get(p, "cmd"), cmd, sizeof(cmd));
	esc(stat_get(p, "endpoint"), ep, sizeof(ep));
	snprintf(out, len, "pid=\"%s\",program=\"%s\"%s%s%s", stat_get(p, "pid"), cmd,
		 *ep ? ",endpoint=\"" : "", ep, *ep ? "\"" : "");
}

static void conn_labels(const rec *c, char *out, size_t len)
{
	char l[160], p[160];

	esc(stat_get(c, "local"), l, sizeof(l));
	esc(stat_get(c, "peer"), p, sizeof(p));
	snprintf(out, len, "local=\"%s\",peer=\"%s\"", l, p);
}

/* A rail: its number from 1 and its local address (a connection's rail i is local rail i). */
static void rail_labels(const rec *r, char *out, size_t len)
{
	char l[160];

	esc(stat_get(r, "local"), l, sizeof(l));
	snprintf(out, len, "rail=\"%lld\",rail_local=\"%s\"", stat_num(r, "index") + 1, l);
}

/* One connection's value (not summed). */
static void sample(const fam *f, const char *labels, const rec *r)
{
	switch (f->how) {
	case V_SUM:
		printf("%s{%s} %lld\n", f->name, labels, stat_num(r, f->field));
		break;
	case V_US:
		if (stat_num(r, f->field) > 0) /* 0: no round trip measured yet */
			printf("%s{%s} %.6f\n", f->name, labels, stat_num(r, f->field) / 1e6);
		break;
	case V_MS:
		printf("%s{%s} %.3f\n", f->name, labels, stat_num(r, f->field) / 1e3);
		break;
	case V_UP:
		printf("%s{%s} %d\n", f->name, labels, !strcmp(stat_get(r, f->field), "up"));
		break;
	case V_DROPS:
		for (size_t k = 0; k < sizeof(reasons) / sizeof(reasons[0]); k++) {
			char key[32];

			snprintf(key, sizeof(key), "drops_%s", reasons[k]);
			printf("%s{%s,reason=\"%s\"} %lld\n", f->name, labels, reasons[k],
			       stat_num(r, key));
		}
		break;
	case V_INFO: {
		char role[160], state[160];

		esc(stat_get(r, "role"), role, sizeof(role));
		esc(stat_get(r, "state"), state, sizeof(state));
		printf("%s{%s,role=\"%s\",state=\"%s\"} 1\n", f->name, labels, role, state);
		break;
	}
	default:
		break;
	}
}

/* The process's connections summed (V_SUM, V_DROPS) or counted by state. */
static void proc_sample(const fam *f, const snap *s, const char *pl)
{
	char states[8][32] = { "established" };
	long long count[8] = { 0 }, sum[8] = { 0 };
	int nstates = 1;

	if (f->how == V_PLAIN) {
		printf("%s{%s} %lld\n", f->name, pl, stat_num(&s->r[1], f->field));
		return;
	}
	for (int i = 2; i < s->n; i++) {
		const rec *r = &s->r[i];

		if (strcmp(r->kind, "conn"))
			continue;
		if (f->how == V_STATES) {
			int k = 0;

			while (k < nstates && strcmp(states[k], stat_get(r, f->field)))
				k++;
			if (k == nstates && nstates < 8)
				snprintf(states[nstates++], sizeof(states[0]), "%s", stat_get(r, f->field));
			if (k < nstates)
				count[k]++;
		} else if (f->how == V_DROPS) {
			for (size_t k = 0; k < sizeof(reasons) / sizeof(reasons[0]); k++) {
				char key[32];

				snprintf(key, sizeof(key), "drops_%s", reasons[k]);
				sum[k] += stat_num(r, key);
			}
		} else {
			sum[0] += stat_num(r, f->field);
		}
	}
	if (f->how == V_STATES) {
		for (int k = 0; k < nstates; k++) {
			char st[160];

			esc(states[k], st, sizeof(st));
			printf("%s{%s,state=\"%s\"} %lld\n", f->name, pl, st, count[k]);
		}
	} else if (f->how == V_DROPS) {
		for (size_t k = 0; k < sizeof(reasons) / sizeof(reasons[0]); k++)
			printf("%s{%s,reason=\"%s\"} %lld\n", f->name, pl, reasons[k], sum[k]);
	} else {
		printf("%s{%s} %lld\n", f->name, pl, sum[0]);
	}
}

/* A rail of the process: its connections' rails with the same number and local address. */
typedef struct rail_sum {
	long long index;
	const char *local;
	long long sum, up, down, nrtt;
} rail_sum;

#define MAX_RAIL_SUMS 64

static void rail_sample(const fam *f, const snap *s, const char *pl)
{
	rail_sum a[MAX_RAIL_SUMS];
	int na = 0;

	for (int i = 2; i < s->n; i++) {
		const rec *r = &s->r[i];
		long long idx = stat_num(r, "index"), v = stat_num(r, f->field);
		int k = 0;

		if (strcmp(r->kind, "rail"))
			continue;
		while (k < na && (a[k].index != idx || strcmp(a[k].local, stat_get(r, "local"))))
			k++;
		if (k == na) {
			if (na == MAX_RAIL_SUMS)
				continue;
			a[na++] = (rail_sum){ .index = idx, .local = stat_get(r, "local") };
		}
		if (f->how == V_STATES) {
			if (!strcmp(stat_get(r, f->field), "up"))
				a[k].up++;
			else
				a[k].down++;
		} else if (f->how == V_US) {
			if (v > 0) {
				a[k].sum += v;
				a[k].nrtt++;
			}
		} else {
			a[k].sum += v;
		}
	}
	for (int k = 0; k < na; k++) {
		char l[160], labels[768];

		esc(a[k].local, l, sizeof(l));
		snprintf(labels, sizeof(labels), "%s,rail=\"%lld\",rail_local=\"%s\"", pl,
			 a[k].index + 1, l);
		if (f->how == V_STATES) {
			printf("%s{%s,state=\"up\"} %lld\n", f->name, labels, a[k].up);
			printf("%s{%s,state=\"down\"} %lld\n", f->name, labels, a[k].down);
		} else if (f->how == V_US) {
			if (a[k].nrtt)
				printf("%s{%s} %.6f\n", f->name, labels, a[k].sum / 1e6 / a[k].nrtt);
		} else {
			printf("%s{%s} %lld\n", f->name, labels, a[k].sum);
		}
	}
}

/* The listeners, connections or connections' rails of one process, one sample each. */
static void each_sample(const fam *f, const snap *s, const char *pl)
{
	char cl[1024] = "", labels[1536];

	for (int i = 2; i < s->n; i++) {
		const rec *r = &s->r[i];

		if (!strcmp(r->kind, "conn")) {
			char c[400];

			conn_labels(r, c, sizeof(c));
			snprintf(cl, sizeof(cl), "%s,%s", pl, c);
			if (f->at == AT_CONN)
				sample(f, cl, r);
		} else if (!strcmp(r->kind, "listener") && f->at == AT_LISTENER) {
			snprintf(labels, sizeof(labels), "%s,port=\"%lld\"", pl, stat_num(r, "port"));
			sample(f, labels, r);
		} else if (!strcmp(r->kind, "rail") && f->at == AT_CONN_RAIL && *cl) {
			char rl[256];

			rail_labels(r, rl, sizeof(rl));
			snprintf(labels, sizeof(labels), "%s,%s", cl, rl);
			sample(f, labels, r);
		}
	}
}

void stat_print_prometheus(const snap *all, int n, int conns)
{
	for (size_t i = 0; i < sizeof(fams) / sizeof(fams[0]); i++) {
		const fam *f = &fams[i];

		if (!conns && (f->at == AT_CONN || f->at == AT_CONN_RAIL))
			continue;
		printf("# HELP %s %s.\n# TYPE %s %s\n", f->name, f->help, f->name, f->type);
		for (int p = 0; p < n; p++) {
			char pl[512];

			proc_labels(&all[p], pl, sizeof(pl));
			if (f->at == AT_PROC)
				proc_sample(f, &all[p], pl);
			else if (f->at == AT_RAIL)
				rail_sample(f, &all[p], pl);
			else
				each_sample(f, &all[p], pl);
		}
	}
}
