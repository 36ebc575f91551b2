/*
 * conns.h - what ri2n-conns' client (ri2n-conns.c) and server (conns_srv.c)
 * share: the options, measuring a process, the control connection's lines
 * (conns_util.c).  See the top of ri2n-conns.c for the program.
 */
#ifndef CONNS_H
#define CONNS_H

#include <stddef.h>
#include <stdint.h>
#include <stdio.h>

#define HELLO_LEN 8
#define CHUNK (64 << 10)
#define CTL_WAIT_S 120.0  /* the server's longest wait for what the client announced */

/* The command line (ri2n-conns.c). */
struct conns_opt {
	int port, conns, busy, batch, fd_limited, probes;
	double idle_s, rest_s, hole_wait_s;
	uint64_t bytes;
	const char *host, *bind, *csv_path, *hole_cmd;
	FILE *csv;
};
extern struct conns_opt opt;

/* A process's memory, descriptors and CPU at one moment. */
typedef struct memstat {
	uint64_t rss_kb, pss_kb, anon_kb;
	int fds;
	double cpu_s, t;
	int conns; /* connections open then, when it is a base (the client's holds its first) */
} memstat;

/* CLOCK_REALTIME seconds: ri2n's log lines carry the time of day. */
double wall_s(void);
/* Fills *m for this process now. */
void measure(memstat *m);
/*
 * One phase's line (and CSV row) for role, from its measurement, the base
 * (no connection yet), the previous one (for CPU) and, for "busy", the idle
 * one.  Writes it into out (the server sends it to the client).
 */
void mem_line(char *out, size_t cap, const char *role, const char *phase, int conns, int busy,
	      const memstat *m, const memstat *base, const memstat *prev, const memstat *idle);
/* "key=value" out of a line: the number (0 if absent), or the word into out. */
double line_field(const char *line, const char *key);
void line_word(const char *line, const char *key, char *out, size_t cap);
/* Prints a mem line, and writes its CSV row with --csv. */
void report(const char *line);
/* Raises RLIMIT_NOFILE towards want descriptors; returns the soft limit now in force. */
long raise_nofile(long want);
/* The control connection (plain TCP): one line out; one line in (-1 at end or error). */
int ctl_send(int fd, const char *line);
int ctl_recv(int fd, char *buf, size_t cap);

/* The server (conns_srv.c): serves until the client says QUIT; the exit status. */
int conns_serve(void);

#endif
