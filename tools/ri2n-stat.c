/*
 * ri2n-stat - what every ri2n process on this machine is doing.
 *
 *   ri2n-stat [--json | --prometheus[=conns]] [--watch] [--pid N] [--dir DIR]
 *
 * Reads the snapshots ri2n processes publish (every 250 ms, see
 * docs/OPERATIONS.md) from /run/ri2n, /run/user/<uid>/ri2n, /tmp/ri2n-<uid>
 * and $RI2N_RUN_DIR (each only if it is a directory of this user or root
 * that nobody else may write),
 * skips those of processes that are gone, and prints each process, its
 * listeners and connections, and per rail: addresses, state, counters, and
 * the last state change with its cause (rails numbered from 1, as the test
 * bed's r1, r2; the snapshot's and JSON's "index" count from 0).  --json
 * prints the same as JSON; --prometheus the counters in Prometheus' text
 * format (ri2n-stat-prom.c);
 * --watch redraws the table every second.  It only reads files: the
 * processes it looks at are not disturbed.
 */
#define _GNU_SOURCE
#include <dirent.h>
#include <sys/stat.h>
#include <errno.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "rn_knobs.h" /* the variable's name and defaults only: no link */
#include "ri2n-stat.h"

static int parse_line(char *line, rec *r)
{
	char *p = line;

	memset(r, 0, sizeof(*r));
	if (sscanf(p, "%15s", r->kind) != 1)
		return -1;
	p += strlen(r->kind);
	while (*p && r->n < MAXF) {
		char *eq, *v;
		size_t kl;

		while (*p == ' ')
			p++;
		if (!*p || *p == '\n')
			break;
		eq = strchr(p, '=');
		if (!eq)
			break;
		kl = (size_t)(eq - p) < sizeof(r->key[0]) ? (size_t)(eq - p) : sizeof(r->key[0]) - 1;
		memcpy(r->key[r->n], p, kl);
		v = eq + 1;
		if (*v == '"') {
			char *end = strchr(v + 1, '"');

			if (!end)
				break;
			snprintf(r->val[r->n], sizeof(r->val[0]), "%.*s", (int)(end - v - 1), v + 1);
			p = end + 1;
		} else {
			size_t vl = strcspn(v, " \n");

			snprintf(r->val[r->n], sizeof(r->val[0]), "%.*s", (int)vl, v);
			p = v + vl;
		}
		r->n++;
	}
	return 0;
}

const char *stat_get(const rec *r, const char *k)
{
	for (int i = 0; i < r->n; i++)
		if (strcmp(r->key[i], k) == 0)
			return r->val[i];
	return "";
}

long long stat_num(const rec *r, const char *k)
{
	return strtoll(stat_get(r, k), NULL, 10);
}

/* the short names the printers below use */
#define get stat_get
#define num stat_num

/* Is the process alive, and the same one that wrote the file? */
static int alive(int pid, const char *start)
{
	char path[64], buf[1024], *p;
	unsigned long long v = 0;
	FILE *f;
	size_t n;

	snprintf(path, sizeof(path), "/proc/%d/stat", pid);
	f = fopen(path, "re");
	if (!f)
		return 0;
	n = fread(buf, 1, sizeof(buf) - 1, f);
	fclose(f);
	buf[n] = 0;
	p = strrchr(buf, ')');
	if (p && (p[2] == 'Z' || p[2] == 'X'))
		return 0; /* exited, not yet reaped */
	if (!p || sscanf(p + 2, "%*c %*d %*d %*d %*d %*d %*u %*u %*u %*u %*u %*u %*u %*d %*d "
				"%*d %*d %*d %*d %llu", &v) != 1)
		return 1;
	return strtoull(start, NULL, 10) == v || !*start || strcmp(start, "0") == 0;
}

static int load(const char *path, snap *s, int want_pid)
{
	FILE *f = fopen(path, "re");
	char line[4096];
	int cap = 0;

	s->r = NULL;
	s->n = 0;
	if (!f)
		return -1;
	while (fgets(line, sizeof(line), f)) {
		rec r;

		if (parse_line(line, &r) < 0)
			continue;
		if (s->n == cap) { /* doubling: a snapshot of 9,000 connections has 27,000 lines */
			rec *m = realloc(s->r, sizeof(rec) * (size_t)(cap = cap ? 2 * cap : 16));

			if (!m)
				break;
			s->r = m;
		}
		s->r[s->n++] = r;
	}
	fclose(f);
	if (s->n >= 2 && !strcmp(s->r[1].kind, "process") &&
	    !alive((int)num(&s->r[1], "pid"), get(&s->r[1], "start")))
		unlink(path); /* left by a process killed before it could remove it */
	if (s->n < 2 || strcmp(s->r[0].kind, "ri2n-stat") != 0 ||
	    strcmp(s->r[1].kind, "process") != 0 ||
	    !alive((int)num(&s->r[1], "pid"), get(&s->r[1], "start")) ||
	    (want_pid && num(&s->r[1], "pid") != want_pid)) {
		free(s->r);
		s->r = NULL;
		s->n = 0;
		return -1;
	}
	return 0;
}

static void human(double v, char *out, size_t len)
{
	const char *u[] = { "", "K", "M", "G", "T" };
	int i = 0;

	while (v >= 1000 && i < 4) {
		v /= 1000;
		i++;
	}
	snprintf(out, len, i ? "%.1f%s" : "%.0f%s", v, u[i]);
}

static void print_table(const snap *s)
{
	const rec *p = &s->r[1];

	printf("process %s (%s)", get(p, "pid"), get(p, "cmd"));
	if (*get(p, "driver")) /* not the engine: the libfabric provider's endpoint */
		printf(" %s endpoint %s", get(p, "driver"), get(p, "endpoint"));
	printf("\n");
	for (int i = 2; i < s->n; i++) {
		const rec *r = &s->r[i];
		char a[16], b[16], c[16], d[16];

		if (!strcmp(r->kind, "listener")) {
			printf("  listening on port %s over %s rails: %s waiting, %s handshakes, %s accepted,"
			       " %s dropped\n", get(r, "port"), get(r, "rails"), get(r, "queued"),
			       get(r, "inits"), get(r, "accepts"), get(r, "drops"));
		} else if (!strcmp(r->kind, "conn")) {
			human((double)num(r, "app_tx_bytes"), a, sizeof(a));
			human((double)num(r, "app_rx_bytes"), b, sizeof(b));
			printf("  %s %s -> %s  %s%s%s  age %.1f s  sent %sB  received %sB  "
			       "retransmits %s  drops %lld", get(r, "role"), get(r, "local"),
			       get(r, "peer"), get(r, "state"), *get(r, "error") ? ": " : "",
			       get(r, "error"), num(r, "age_ms") / 1000.0, a, b, get(r, "retransmits"),
			       num(r, "drops_malformed") + num(r, "drops_source") + num(r, "drops_window") +
				       num(r, "drops_duplicate") + num(r, "drops_auth") + num(r, "drops_other"));
			/* only where RI2N_REDUNDANT_BYTES sent some: other lines stay as they were */
			if (num(r, "copies") > 0)
				printf("  copies %lld", num(r, "copies"));
			printf("\n");
			printf("    %-4s %-15s %-15s %-5s %9s %9s %8s %8s %6s %5s  %s\n", "rail", "local",
			       "remote", "state", "tx pkts", "rx pkts", "tx B", "rx B", "retx", "lost",
			       "last change");
		} else if (!strcmp(r->kind, "rail")) {
			char since[48] = "never", l[96], m[96];

			/* an IPv6 rail's ends in brackets, as the connection's names are */
			snprintf(l, sizeof(l), strchr(get(r, "local"), ':') ? "[%s]" : "%s",
				 get(r, "local"));
			snprintf(m, sizeof(m), strchr(get(r, "remote"), ':') ? "[%s]" : "%s",
				 get(r, "remote"));
			human((double)num(r, "tx_packets"), a, sizeof(a));
			human((double)num(r, "rx_packets"), b, sizeof(b));
			human((double)num(r, "tx_bytes"), c, sizeof(c));
			human((double)num(r, "rx_bytes"), d, sizeof(d));
			if (num(r, "changed_ms_ago") >= 0)
				snprintf(since, sizeof(since), "%.1f s ago: %s",
					 num(r, "changed_ms_ago") / 1000.0, get(r, "cause"));
			printf("    %-4lld %-15s %-15s %-5s %9s %9s %8s %8s %6s %5s  %s%s\n", num(r, "index") + 1,
			       l, m, get(r, "state"), a, b, c, d,
			       get(r, "retransmits"), get(r, "lost"), since,
			       strcmp(get(r, "role"), "backup") ? "" : " (backup: data only while no other rail works)");
			if (num(r, "mtu_holes") > 0)
				printf("         MTU black holes: %lld (datagrams of %s bytes lost, up to %s "
				       "got through)\n", num(r, "mtu_holes"), get(r, "dgram"),
				       get(r, "small_ok"));
		}
	}
}

static void json_str(const char *s)
{
	putchar('"');
	for (; *s; s++) {
		if (*s == '"' || *s == '\\')
			putchar('\\');
		if ((unsigned char)*s >= 0x20)
			putchar(*s);
	}
	putchar('"');
}

/* Prints the fields of a record as JSON members; numbers stay numbers. */
static void json_fields(const rec *r, const char *skip)
{
	int first = 1;

	for (int i = 0; i < r->n; i++) {
		char *end;

		if (skip && strstr(skip, r->key[i]))
			continue;
		printf("%s\"%s\":", first ? "" : ",", r->key[i]);
		first = 0;
		strtoll(r->val[i], &end, 10);
		if (*r->val[i] && !*end)
			printf("%s", r->val[i]);
		else
			json_str(r->val[i]);
	}
}

static void print_json(snap *all, int n)
{
	printf("{\"processes\":[");
	for (int f = 0; f < n; f++) {
		const snap *s = &all[f];
		int conn_open = 0, first_conn = 1, first_lis = 1;

		printf("%s{", f ? "," : "");
		json_fields(&s->r[1], NULL);
		printf(",\"listeners\":[");
		for (int i = 2; i < s->n; i++) {
			if (strcmp(s->r[i].kind, "listener"))
				continue;
			printf("%s{", first_lis ? "" : ",");
			json_fields(&s->r[i], NULL);
			printf("}");
			first_lis = 0;
		}
		printf("],\"connections\":[");
		for (int i = 2; i < s->n; i++) {
			const rec *r = &s->r[i];

			if (!strcmp(r->kind, "conn")) {
				if (conn_open)
					printf("]}");
				printf("%s{", first_conn ? "" : ",");
				json_fields(r, "n");
				printf(",\"rails\":[");
				conn_open = 1;
				first_conn = 0;
			} else if (!strcmp(r->kind, "rail") && conn_open) {
				printf("%s{", strcmp(get(r, "index"), "0") ? "," : "");
				json_fields(r, "conn");
				printf("}");
			}
		}
		if (conn_open)
			printf("]}");
		printf("]}");
	}
	printf("]}\n");
}

#ifndef RI2N_VERSION
#define RI2N_VERSION "unknown"
#endif

static void print_usage(FILE *f)
{
	fprintf(f, "usage: ri2n-stat [--json | --prometheus[=conns]] [--watch] [--pid N] [--dir DIR]\n"
		   "       ri2n-stat --help | --version\n");
}

static void usage(void)
{
	print_usage(stderr);
	exit(2);
}

/* Every live snapshot in the directories to look at. */
static int collect(snap *out, int max, const char *only_dir, int want_pid)
{
	char tmpdir[64], userdir[64], *dirs[4];
	int nd = 0, n = 0;

	if (only_dir) {
		dirs[nd++] = (char *)only_dir;
	} else {
		/* RI2N_RUN_DIR as the library reads it: the environment, else ri2n.conf */
		const char *env = rn_proc_text(RN_PROC_RUN_DIR);

		/* where the library writes when RI2N_RUN_DIR is unset, for any user */
		snprintf(tmpdir, sizeof(tmpdir), RN_RUN_DIR_TMP, (unsigned)geteuid());
		snprintf(userdir, sizeof(userdir), RN_RUN_DIR_USER, (unsigned)geteuid());
		dirs[nd++] = RN_RUN_DIR_ROOT;
		dirs[nd++] = userdir;
		dirs[nd++] = tmpdir;
		if (env && *env)
			dirs[nd++] = (char *)env;
	}
	for (int d = 0; d < nd; d++) {
		DIR *dir;
		struct dirent *e;
		struct stat st;

		/* a directory another user planted (or a symlink) would show forged state */
		if (!only_dir && (lstat(dirs[d], &st) < 0 || !S_ISDIR(st.st_mode) ||
				  (st.st_uid != geteuid() && st.st_uid != 0) || (st.st_mode & 022)))
			continue;
		dir = opendir(dirs[d]);
		if (!dir)
			continue;
		while ((e = readdir(dir)) && n < max) {
			char path[512];
			size_t l = strlen(e->d_name);

			if (l > 9 && strcmp(e->d_name + l - 9, ".stat.tmp") == 0) {
				/* a snapshot its process was killed while writing: the name starts with its pid */
				int owner = atoi(e->d_name);

				if (owner > 0 && kill(owner, 0) < 0 && errno == ESRCH &&
				    snprintf(path, sizeof(path), "%s/%s", dirs[d], e->d_name) <
					    (int)sizeof(path))
					unlink(path);
				continue;
			}
			if (l < 6 || strcmp(e->d_name + l - 5, ".stat") != 0)
				continue;
			/* PID.stat: another process's snapshot is not read for nothing */
			if (want_pid && atoi(e->d_name) != want_pid)
				continue;
			snprintf(path, sizeof(path), "%s/%s", dirs[d], e->d_name);
			if (load(path, &out[n], want_pid) == 0)
				n++;
		}
		closedir(dir);
	}
	return n;
}

int main(int argc, char **argv)
{
	int json = 0, watch = 0, pid = 0, prom = 0;
	const char *dir = NULL;
	static snap snaps[256];

	for (int i = 1; i < argc; i++) {
		if (!strcmp(argv[i], "--json"))
			json = 1;
		else if (!strcmp(argv[i], "--prometheus"))
			prom = 1;
		else if (!strcmp(argv[i], "--prometheus=conns"))
			prom = 2;
		else if (!strcmp(argv[i], "--watch"))
			watch = 1;
		else if (!strcmp(argv[i], "--pid") && i + 1 < argc)
			pid = atoi(argv[++i]);
		else if (!strcmp(argv[i], "--dir") && i + 1 < argc)
			dir = argv[++i];
		else if (!strcmp(argv[i], "--help")) {
			print_usage(stdout);
			return 0;
		} else if (!strcmp(argv[i], "--version")) {
			printf("ri2n-stat %s\n", RI2N_VERSION);
			return 0;
		} else
			usage();
	}
	for (;;) {
		int n = collect(snaps, 256, dir, pid);

		if (watch && !json && !prom)
			printf("\033[H\033[2J");
		if (prom) {
			stat_print_prometheus(snaps, n, prom == 2);
		} else if (json) {
			print_json(snaps, n);
		} else {
			if (n == 0)
				printf("no ri2n process%s\n", pid ? " with that pid" : " is running");
			for (int i = 0; i < n; i++)
				print_table(&snaps[i]);
		}
		for (int i = 0; i < n; i++)
			free(snaps[i].r);
		fflush(stdout);
		if (!watch)
			return 0;
		sleep(1);
	}
}
