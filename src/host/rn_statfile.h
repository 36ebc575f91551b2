/*
 * rn_statfile.h - the snapshot files ri2n-stat reads: where they go and how
 * a connection and its rails read in them (docs/OPERATIONS.md).  Shared by
 * every driver that publishes: the engine (rn_publish.c) and the libfabric
 * provider (ofi/rfi_stat.c), so ri2n-stat reads them all the same way.
 */
#ifndef RN_STATFILE_H
#define RN_STATFILE_H

#include <stdint.h>
#include <stdio.h>
#include <sys/types.h>

#include "rn_core.h"

/*
 * Opens (creating it with `mode` if missing) the directory the snapshots go
 * to, and checks it can be trusted: a directory, not a symlink, owned by
 * this user; its mode is set to `mode` (0: the mode it has, without write
 * for group and others).  Returns the directory's descriptor (O_CLOEXEC),
 * or -1 with *why saying what is wrong.
 */
int rn_statfile_dir_open(const char *dir, mode_t mode, const char **why);

/*
 * The directory this process publishes to: RI2N_RUN_DIR, else /run/ri2n for
 * root, else /run/user/<uid>/ri2n when the session directory is ours, else
 * /tmp/ri2n-<uid>; opened as rn_statfile_dir_open does.  dir gets its path.
 * Returns the descriptor or -1 with *why.
 */
int rn_statfile_dir(char *dir, size_t cap, const char **why);

/* RI2N_STAT_MS: how often to publish, ms (250 when unset; <= 0: never). */
long rn_statfile_period_ms(void);

/* This process's start time (/proc/self/stat field 22): ri2n-stat tells a reused pid by it. */
unsigned long long rn_statfile_proc_start(void);

/* The "ri2n-stat 1" and "process" lines; extra (may be NULL) is appended to the latter. */
void rn_statfile_write_process(FILE *f, unsigned long long start, uint64_t now_ns,
			       const char *extra);

/*
 * A "conn" line (number n, descriptor fd or -1, local and peer "ip:port",
 * its age) and one "rail" line per rail of c.
 */
void rn_statfile_write_conn(FILE *f, int n, int fd, int server, const char *local,
			    const char *peer, uint64_t age_ns, const rn_conn_stats *c,
			    uint64_t now_ns);

#endif
