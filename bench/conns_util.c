/*
 * conns_util.c - ri2n-conns: measuring a process (memory, descriptors, CPU),
 * its lines and CSV rows, the descriptor limit, and the control connection's
 * lines (conns.h).
 */
#define _GNU_SOURCE
#include <dirent.h>
#include <errno.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <time.h>
#include <unistd.h>

#include "bench_common.h"
#include "conns.h"

double wall_s(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_REALTIME, &ts);
	return (double)ts.tv_sec + (double)ts.tv_nsec / 1e9;
}

/* ---- measuring ourselves ---- */

static double cpu_now(void)
{
	struct rusage ru;

	getrusage(RUSAGE_SELF, &ru);
	return (double)ru.ru_utime.tv_sec + (double)ru.ru_utime.tv_usec / 1e6 +
	       (double)ru.ru_stime.tv_sec + (double)ru.ru_stime.tv_usec / 1e6;
}

void measure(memstat *m)
{
	FILE *f = fopen("/proc/self/smaps_rollup", "r");
	char line[256];
	DIR *d;

	memset(m, 0, sizeof(*m));
	if (f) {
		while (fgets(line, sizeof(line), f)) {
			unsigned long long v;

			if (sscanf(line, "Rss: %llu", &v) == 1)
				m->rss_kb = v;
			else if (sscanf(line, "Pss: %llu", &v) == 1)
				m->pss_kb = v;
			else if (sscanf(line, "Anonymous: %llu", &v) == 1)
				m->anon_kb = v;
		}
		fclose(f);
	}
	d = opendir("/proc/self/fd");
	if (d) {
		struct dirent *e;

		while ((e = readdir(d)))
			if (e->d_name[0] != '.')
				m->fds++;
		closedir(d);
		m->fds--; /* the directory's own descriptor */
	}
	m->cpu_s = cpu_now();
	m->t = kit_now_s();
}

/*
 * One phase's line (and CSV row) for role, from its measurement, the base
 * (no connection yet), the previous one (for CPU) and, for "busy", the idle
 * one.  Writes it into out (the server sends it to the client).
 */
void mem_line(char *out, size_t cap, const char *role, const char *phase, int conns, int busy,
	      const memstat *m, const memstat *base, const memstat *prev, const memstat *idle)
{
	double secs = m->t - prev->t, cpu = secs > 0 ? 100 * (m->cpu_s - prev->cpu_s) / secs : 0;
	double pss_pc = 0, rss_pc = 0, fds_pc = 0;

	int n = conns - base->conns; /* the connections the growth since the base is for */

	if (n > 0) {
		pss_pc = ((double)m->pss_kb - (double)base->pss_kb) * 1024 / n;
		rss_pc = ((double)m->rss_kb - (double)base->rss_kb) * 1024 / n;
		fds_pc = (double)(m->fds - base->fds) / n;
	}
	if (idle && busy > 0 && n > 0) {
		/* a busy connection: an idle one's share plus its part of the growth since */
		double idle_pss = ((double)idle->pss_kb - (double)base->pss_kb) * 1024 / n;
		double idle_rss = ((double)idle->rss_kb - (double)base->rss_kb) * 1024 / n;

		pss_pc = idle_pss + ((double)m->pss_kb - (double)idle->pss_kb) * 1024 / busy;
		rss_pc = idle_rss + ((double)m->rss_kb - (double)idle->rss_kb) * 1024 / busy;
	}
	snprintf(out, cap,
		 "conns mem role=%s phase=%s conns=%d busy=%d rss_kb=%" PRIu64 " pss_kb=%" PRIu64
		 " anon_kb=%" PRIu64 " fds=%d cpu_pct=%.1f secs=%.2f pss_per_conn=%.0f"
		 " rss_per_conn=%.0f fds_per_conn=%.2f",
		 role, phase, conns, busy, m->rss_kb, m->pss_kb, m->anon_kb, m->fds, cpu, secs,
		 pss_pc, rss_pc, fds_pc);
}

/* "key=value" out of a mem line; 0 if absent. */
double line_field(const char *line, const char *key)
{
	char pat[48];
	const char *p;

	snprintf(pat, sizeof(pat), " %s=", key);
	p = strstr(line, pat);
	return p ? strtod(p + strlen(pat), NULL) : 0;
}

void line_word(const char *line, const char *key, char *out, size_t cap)
{
	char pat[48];
	const char *p;
	size_t n = 0;

	snprintf(pat, sizeof(pat), " %s=", key);
	p = strstr(line, pat);
	if (p)
		for (p += strlen(pat); *p && *p != ' ' && *p != '\n' && n + 1 < cap; p++)
			out[n++] = *p;
	out[n] = 0;
}

void report(const char *line)
{
	char role[16], phase[16];

	printf("%s\n", line);
	fflush(stdout);
	if (!opt.csv)
		return;
	line_word(line, "role", role, sizeof(role));
	line_word(line, "phase", phase, sizeof(phase));
	fprintf(opt.csv, "%s,%s,%.0f,%.0f,%.0f,%.0f,%.0f,%.0f,%.1f,%.2f,%.0f,%.0f,%.2f\n", role,
		phase, line_field(line, "conns"), line_field(line, "busy"),
		line_field(line, "rss_kb"), line_field(line, "pss_kb"),
		line_field(line, "anon_kb"), line_field(line, "fds"), line_field(line, "cpu_pct"),
		line_field(line, "secs"), line_field(line, "pss_per_conn"),
		line_field(line, "rss_per_conn"), line_field(line, "fds_per_conn"));
	fflush(opt.csv);
}

/*
 * Raises RLIMIT_NOFILE towards `want` descriptors (root may raise the hard
 * limit, up to fs.nr_open, if it has CAP_SYS_RESOURCE; a container often
 * lacks it).  Returns the soft limit now in force.
 */
long raise_nofile(long want)
{
	struct rlimit rl;

	if (getrlimit(RLIMIT_NOFILE, &rl) < 0)
		return 1024;
	if (rl.rlim_cur >= (rlim_t)want)
		return (long)rl.rlim_cur;
	if (rl.rlim_max < (rlim_t)want) {
		struct rlimit up = { (rlim_t)want, (rlim_t)want };

		if (setrlimit(RLIMIT_NOFILE, &up) == 0)
			return want;
		fprintf(stderr, "ri2n-conns: cannot raise RLIMIT_NOFILE to %ld (%s): the hard "
			"limit %llu stays\n", want, strerror(errno), (unsigned long long)rl.rlim_max);
	}
	rl.rlim_cur = rl.rlim_max < (rlim_t)want ? rl.rlim_max : (rlim_t)want;
	setrlimit(RLIMIT_NOFILE, &rl);
	getrlimit(RLIMIT_NOFILE, &rl);
	return (long)rl.rlim_cur;
}

/* ---- the control connection (plain TCP, one line each way) ---- */

int ctl_send(int fd, const char *line)
{
	char buf[512];
	int n = snprintf(buf, sizeof(buf), "%s\n", line);

	return bench_write_all(fd, buf, (size_t)n, 0);
}

/* Reads one line (without its newline) into buf; -1 at end or error. */
int ctl_recv(int fd, char *buf, size_t cap)
{
	size_t n = 0;

	while (n + 1 < cap) {
		char c;
		ssize_t r = read(fd, &c, 1);

		if (r < 0 && errno == EINTR)
			continue;
		if (r <= 0)
			return -1;
		if (c == '\n')
			break;
		buf[n++] = c;
	}
	buf[n] = 0;
	return 0;
}
