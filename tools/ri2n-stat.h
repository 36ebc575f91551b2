/*
 * ri2n-stat.h - the snapshot records ri2n-stat reads, shared by its printers.
 *
 * A snapshot (docs/OPERATIONS.md) is one record per line, "kind key=value
 * ...": a "ri2n-stat 1" line, a "process" line, then listeners, and each
 * connection followed by its rails.
 */
#ifndef RI2N_STAT_H
#define RI2N_STAT_H

#define MAXF 64  /* fields per record */

/* One "kind key=value ..." line. */
typedef struct rec {
	char kind[16];
	int n;
	char key[MAXF][32];
	char val[MAXF][128];
} rec;

/* A snapshot file read whole: r[0] the version line, r[1] the process. */
typedef struct snap {
	rec *r;
	int n;
} snap;

/* A field's value, "" when the record has none. */
const char *stat_get(const rec *r, const char *k);

/* A field read as a number, 0 when absent. */
long long stat_num(const rec *r, const char *k);

/* Prints the snapshots in Prometheus' text format; conns adds per-connection series. */
void stat_print_prometheus(const snap *all, int n, int conns);

#endif
