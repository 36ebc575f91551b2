/*
 * rn_log.c - ri2n's log (rn_log.h).  ri2n_set_log, the public call that
 * redirects it, lives here too: the BTL calls it as well as libri2n's users.
 */
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/syscall.h>
#include <time.h>
#include <unistd.h>

#include "ri2n.h"
#include "rn_knobs.h"
#include "rn_log.h"
#include "rn_sys.h"

static int g_level = RN_LOG_WARN;
static void (*g_hook)(int, const char *, void *);
static void *g_hook_arg;
static int g_set_by_api; /* ri2n_set_log wins over RI2N_LOG */

void ri2n_set_log(int level, void (*hook)(int level, const char *line, void *arg), void *arg)
{
	if (level < RN_LOG_DEBUG)
		level = RN_LOG_DEBUG;
	if (level > RN_LOG_OFF)
		level = RN_LOG_OFF;
	g_level = level;
	g_hook_arg = arg;
	g_hook = hook;
	g_set_by_api = 1;
}

void rn_log_init(void)
{
	static const char *const names[] = { "debug", "info", "warn", "error", "off" };
	const char *v = rn_proc_text(RN_PROC_LOG);

	if (!v || g_set_by_api)
		return;
	for (int i = 0; i <= RN_LOG_OFF; i++) {
		if (strcmp(v, names[i]) == 0) {
			g_level = i;
			return;
		}
	}
	fprintf(stderr, "ri2n[%d]: RI2N_LOG=%s is not one of debug, info, warn, error, off; "
			"using warn\n", (int)getpid(), v);
}

int rn_log_enabled(int level)
{
	return level >= g_level;
}

void rn_log(int level, const char *fmt, ...)
{
	static const char *const tags[] = { "debug", "info", "warning", "error" };
	char line[512];
	struct timespec ts;
	va_list ap;
	int n;

	if (level < g_level || level >= RN_LOG_OFF)
		return;
	struct tm tm;

	clock_gettime(CLOCK_REALTIME, &ts);
	localtime_r(&ts.tv_sec, &tm);
	n = snprintf(line, sizeof(line), "%02d:%02d:%02d.%03ld ri2n[%d] %s: ", tm.tm_hour,
		     tm.tm_min, tm.tm_sec, ts.tv_nsec / 1000000, (int)getpid(), tags[level]);
	va_start(ap, fmt);
	vsnprintf(line + n, sizeof(line) - (size_t)n, fmt, ap);
	va_end(ap);
	if (g_hook) {
		g_hook(level, line, g_hook_arg);
		return;
	}
	/*
	 * One write per line, so lines of several threads do not interleave.
	 * Raw: a program that closed stderr may have a ri2n socket as 2, and
	 * libri2n's own write would drive it under the lock we may hold.
	 */
	n = (int)strlen(line);
	if (n < (int)sizeof(line) - 1)
		line[n++] = '\n';
	if (rn_sys_write(2, line, (size_t)n) < 0) {
		/* nowhere left to report it */
	}
}
