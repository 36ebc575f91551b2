/*
 * xfer.h - what the verified-transfer program's files share (ri2n-xfer.c:
 * options, the two ends and their protocol; xfer_meter.c: what it prints).
 *
 * One program, two names: `ri2n-xfer`, the operator's tool, and
 * `ri2n-stream`, the bench's (a link to the same binary).  They move bytes
 * the same way and differ only in defaults (port, block) and in the lines
 * and CSV columns they print, which tests/netns and bench/run.sh read.
 */
#ifndef XFER_H
#define XFER_H

#include <netinet/in.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdint.h>
#include <stdio.h>

#include "ri2n.h"

/* How the program speaks: chosen by the name it was run under. */
enum xfer_style { XS_XFER, XS_STREAM };

typedef struct xfer_opt {
	int style, transport, port, once, interval_ms, quiet, nrails, duplex;
	int verify;            /* 0: --no-verify, a constant buffer nothing checks */
	double seconds, fault_at, heal_at;
	uint64_t bytes, seed;
	size_t block;
	const char *prog, *bind, *csv_path, *fault_cmd, *heal_cmd, *file, *out;
	FILE *csv;
	pthread_mutex_t mu;    /* one line at a time on stdout, stderr and the CSV */
} xfer_opt;

extern xfer_opt opt;

#define XFER_MAX_SUBFLOWS 16

/* One TCP subflow (or the TCP connection) as last seen. */
typedef struct xfer_subflow {
	struct sockaddr_in local, remote;
	uint64_t bytes, segs;
	int seen;
} xfer_subflow;

/*
 * The meter of one direction of a connection: a thread of its own prints a
 * line (and a CSV row) every interval on a fixed schedule, so a stall shows
 * as empty intervals rather than one long one.
 */
typedef struct xfer_meter {
	const char *role;
	int fd, sender, mptcp;
	int events;               /* prints ri2n's rail events (one meter a connection) */
	int unchecked;            /* --no-verify: the bytes are not checked */
	double t0, last_t;
	_Atomic uint64_t bytes;   /* moved so far, written by the data thread */
	uint64_t last_bytes;
	int nrails;
	uint64_t last_rb[RI2N_MAX_RAILS], last_rp[RI2N_MAX_RAILS], last_tx[RI2N_MAX_RAILS];
	xfer_subflow sf[XFER_MAX_SUBFLOWS];
	int nsf;
	_Atomic int stop;
	pthread_t thr;
} xfer_meter;

/* Starts m's thread; t0 is the transfer's start (CLOCK_MONOTONIC seconds). */
void xfer_meter_start(xfer_meter *m, const char *role, int fd, int sender, int events, double t0);
/* Stops the thread and prints the last, partial interval. */
void xfer_meter_stop(xfer_meter *m);
/* Prints the rail events ri2n reported to this process (ri2n_read_event). */
void xfer_events(const xfer_meter *m);
/* The transport as printed: "ri2n", "tcp" or "mptcp". */
const char *xfer_proto(const xfer_meter *m);
/*
 * The verdict line on stdout; then, for ri2n-xfer, one line per rail with its
 * counters.  why: NULL when every byte arrived and was verified.
 */
void xfer_done(const xfer_meter *m, uint64_t bytes, double secs, uint64_t bad, const char *why);
/* Opens the CSV (--csv) with the style's header; 0 or -1 with a message. */
int xfer_csv_open(void);
/* The SIGURG handler that wakes a meter's thread (it does nothing). */
void xfer_signals(void);

#endif
