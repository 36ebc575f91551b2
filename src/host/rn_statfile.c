/*
 * rn_statfile.c - the snapshot files ri2n-stat reads (rn_statfile.h).
 *
 * Format (docs/OPERATIONS.md): one record per line, "kind key=value ...",
 * string values in double quotes.  The directory is trusted only as far as
 * it must be: a real directory (no symlink), owned by us, writable by
 * nobody else; ours with a wider mode is narrowed to 0700 (0755 for root's
 * /run/ri2n, which other users' ri2n-stat reads); anything else is refused.
 */
#ifndef _GNU_SOURCE
#define _GNU_SOURCE
#endif
#include <errno.h>
#include <fcntl.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include "rn_rails.h"
#include "rn_knobs.h"
#include "rn_statfile.h"
#include "rn_sys.h"

int rn_statfile_dir_open(const char *dir, mode_t mode, const char **why)
{
	struct stat st;
	mode_t want;
	int fd;

	*why = NULL;
	if (mkdir(dir, mode ? mode : 0700) < 0 && errno != EEXIST) {
		*why = strerror(errno);
		return -1;
	}
	/* O_NOFOLLOW: a symlink planted in the directory's place fails here */
	fd = open(dir, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
	if (fd < 0) {
		*why = errno == ELOOP || errno == ENOTDIR ? "not a directory (a symlink?)" :
							    strerror(errno);
		return -1;
	}
	if (rn_sys_fstat(fd, &st) < 0 || !S_ISDIR(st.st_mode)) {
		*why = "not a directory";
	} else if (st.st_uid != geteuid()) {
		*why = "owned by another user";
	} else {
		/* mode 0: a directory the user named keeps its mode, minus others' write */
		want = mode ? mode : (st.st_mode & 07777 & ~(mode_t)022);
		if ((st.st_mode & 07777) != want && fchmod(fd, want) < 0)
			*why = "its mode lets others in and cannot be changed";
	}
	if (*why) {
		rn_sys_close(fd);
		return -1;
	}
	return fd;
}

/* /run/user/<uid>/ri2n when the session directory is there and ours, else /tmp/ri2n-<uid>. */
static void default_dir(char *out, size_t cap, mode_t *mode)
{
	char run[64];
	struct stat st;
	uid_t uid = geteuid();

	*mode = 0700;
	if (uid == 0) {
		snprintf(out, cap, RN_RUN_DIR_ROOT);
		*mode = 0755; /* ri2n-stat of other users reads it */
		return;
	}
	snprintf(run, sizeof(run), RN_RUN_DIR_SESSION, (unsigned)uid);
	if (lstat(run, &st) == 0 && S_ISDIR(st.st_mode) && st.st_uid == uid)
		snprintf(out, cap, RN_RUN_DIR_USER, (unsigned)uid);
	else
		snprintf(out, cap, RN_RUN_DIR_TMP, (unsigned)uid);
}

int rn_statfile_dir(char *dir, size_t cap, const char **why)
{
	const char *env = rn_proc_text(RN_PROC_RUN_DIR);
	mode_t mode = 0;

	if (env && *env)
		snprintf(dir, cap, "%s", env);
	else
		default_dir(dir, cap, &mode);
	return rn_statfile_dir_open(dir, mode, why);
}

long rn_statfile_period_ms(void)
{
	return (long)rn_proc_get(RN_PROC_STAT_MS);
}

unsigned long long rn_statfile_proc_start(void)
{
	char buf[1024], *p;
	unsigned long long v = 0;
	FILE *f = fopen("/proc/self/stat", "re");
	size_t n;

	if (!f)
		return 0;
	n = fread(buf, 1, sizeof(buf) - 1, f);
	rn_sys_fclose(f);
	buf[n] = 0;
	p = strrchr(buf, ')'); /* the command may contain spaces */
	if (p && sscanf(p + 2, "%*c %*d %*d %*d %*d %*d %*u %*u %*u %*u %*u %*u %*u %*d %*d %*d "
			       "%*d %*d %*d %llu", &v) != 1)
		v = 0;
	return v;
}

void rn_statfile_write_process(FILE *f, unsigned long long start, uint64_t now_ns,
			       const char *extra)
{
	char cmd[64] = "?";
	struct timespec rt;
	FILE *c = fopen("/proc/self/comm", "re");

	if (c) {
		if (fgets(cmd, sizeof(cmd), c))
			cmd[strcspn(cmd, "\n")] = 0;
		rn_sys_fclose(c);
	}
	clock_gettime(CLOCK_REALTIME, &rt);
	fprintf(f, "ri2n-stat 1\nprocess pid=%d start=%llu cmd=\"%s\" time=%lld mono_ms=%llu%s%s\n",
		(int)getpid(), start, cmd, (long long)rt.tv_sec,
		(unsigned long long)(now_ns / 1000000), extra ? " " : "", extra ? extra : "");
}

static void write_rails(FILE *f, int n, const rn_conn_stats *c, uint64_t now_ns)
{
	char l[RN_ADDR_STRLEN], p[RN_ADDR_STRLEN];

	for (int k = 0; k < c->npaths; k++) {
		const rn_rail_stats *r = &c->rail[k];

		fprintf(f, "rail conn=%d index=%d local=%s remote=%s state=%s rx=%s tx=%s "
			   "tx_packets=%llu rx_packets=%llu tx_bytes=%llu rx_bytes=%llu "
			   "tx_data=%llu rx_data=%llu retransmits=%llu lost=%llu heartbeats=%llu "
			   "keepalives=%llu downs=%u ups=%u cwnd=%u srtt_us=%llu changed_ms_ago=%lld "
			   "dgram=%u mtu_holes=%u small_ok=%u role=%s cause=\"%s\"\n",
			n, k, rn_addr_str(r->local, l, sizeof(l)), rn_addr_str(r->remote, p, sizeof(p)),
			r->rx_up && r->tx_up ? "up" : "down", r->rx_up ? "up" : "down",
			r->tx_up ? "up" : "down", (unsigned long long)r->tx_packets,
			(unsigned long long)r->rx_packets, (unsigned long long)r->tx_bytes,
			(unsigned long long)r->rx_bytes, (unsigned long long)r->tx_data,
			(unsigned long long)r->rx_data, (unsigned long long)r->retransmits,
			(unsigned long long)r->lost, (unsigned long long)r->heartbeats,
			(unsigned long long)r->keepalives, r->down_events, r->up_events, r->cwnd,
			(unsigned long long)(r->srtt_ns / 1000),
			r->last_change_ns ? (long long)((now_ns - r->last_change_ns) / 1000000) : -1LL,
			r->dgram, r->mtu_holes, r->small_ok, r->backup ? "backup" : "primary",
			r->last_change_ns ? rn_cause_name(r->last_cause) : "");
	}
}

void rn_statfile_write_conn(FILE *f, int n, int fd, int server, const char *local,
			    const char *peer, uint64_t age_ns, const rn_conn_stats *c,
			    uint64_t now_ns)
{
	uint64_t other = 0;

	for (int d = 0; d < RN_DROP__COUNT; d++)
		if (d != RN_DROP_MALFORMED && d != RN_DROP_SOURCE && d != RN_DROP_WINDOW &&
		    d != RN_DROP_DUPLICATE && d != RN_DROP_AUTH)
			other += c->drops[d];
	fprintf(f, "conn n=%d fd=%d role=%s local=%s peer=%s state=%s age_ms=%llu error=\"%s\" "
		   "mss=%u app_tx_bytes=%llu app_rx_bytes=%llu tx_packets=%llu rx_packets=%llu "
		   "retransmits=%llu rto=%llu drops_malformed=%llu drops_source=%llu "
		   "drops_window=%llu drops_duplicate=%llu drops_auth=%llu drops_other=%llu keyed=%d "
		   "copies=%llu\n",
		n, fd, server ? "server" : "client", local, peer, rn_state_name(c->state),
		(unsigned long long)(age_ns / 1000000), c->err ? rn_strerror(c->err) : "", c->mss,
		(unsigned long long)c->app_tx_bytes, (unsigned long long)c->app_rx_bytes,
		(unsigned long long)c->tx_packets, (unsigned long long)c->rx_packets,
		(unsigned long long)c->retransmits, (unsigned long long)c->rto_events,
		(unsigned long long)c->drops[RN_DROP_MALFORMED],
		(unsigned long long)c->drops[RN_DROP_SOURCE],
		(unsigned long long)c->drops[RN_DROP_WINDOW],
		(unsigned long long)c->drops[RN_DROP_DUPLICATE],
		(unsigned long long)c->drops[RN_DROP_AUTH], (unsigned long long)other, c->keyed,
		(unsigned long long)c->copies);
	write_rails(f, n, c, now_ns);
}
