/*
 * rn_conf.c - the system configuration file (rn_conf.h): read once per
 * process, through the one door (rn_sys.h), checked line by line against
 * the tables of knobs (rn_knobs.h), its bad lines reported once.
 *
 * Trust: the file sets what every ri2n process of the machine does, so it
 * is used only when it is a regular file owned by root or by the user the
 * process runs as, and writable by neither its group nor others (as sshd's
 * StrictModes and sudo ask of theirs).  Otherwise it is reported and
 * ignored, never fatal: a process then runs on the environment and defaults.
 */
#include <errno.h>
#include <fcntl.h>
#include <pthread.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <sys/stat.h>
#include <unistd.h>

#include "rfi_knob_list.h"
#include "rn_conf.h"
#include "rn_knobs.h"
#include "rn_log.h"
#include "rn_sys.h"

/*
 * The libfabric provider's parameters (src/host/rfi_knob_list.h), FI_RI2N_<NAME>:
 * its name in lower case, whether a number, and its largest.
 */
typedef struct ofi_row {
	const char *name;
	int is_int, hi;
} ofi_row;
#define OFI_IS_INT 1
#define OFI_IS_TEXT 0
#define OFI_ROW(name, field, type, def, hi, scale, shown, doc) { #name, OFI_IS_##type, hi },
static const ofi_row ofi_rows[] = { RFI_KNOB_LIST(OFI_ROW) };
#undef OFI_ROW
#define OFI_N ((int)(sizeof(ofi_rows) / sizeof(*ofi_rows)))
#define OFI_PREFIX "FI_RI2N_"

/* Every knob the file may name: the connection's, the process's, the provider's. */
#define CONF_N (RN_KNOB__COUNT + RN_PROC__COUNT + OFI_N)
#define CONF_OFI (RN_KNOB__COUNT + RN_PROC__COUNT) /* the provider's first */
#define CONF_MSGS 8 /* lines reported; past them, how many more */

static struct {
	int loaded;             /* atomic: the rest is written before it is 1 */
	int key_refused;
	int nset;               /* knobs the file sets: none, no lookup */
	char path[256];
	char state[160];
	char *val[CONF_N];
	int line[CONF_N];
	char msg[CONF_MSGS][320];
	int nmsg, more;
} g;
static pthread_mutex_t g_mu = PTHREAD_MUTEX_INITIALIZER;

static int conf_index(const char *env)
{
	size_t np = strlen(OFI_PREFIX);

	for (int i = 0; i < RN_KNOB__COUNT; i++)
		if (strcmp(rn_knobs[i].env, env) == 0)
			return i;
	for (int i = 0; i < RN_PROC__COUNT; i++)
		if (strcmp(rn_proc_knobs[i].env, env) == 0)
			return RN_KNOB__COUNT + i;
	if (strncmp(env, OFI_PREFIX, np) != 0 || strpbrk(env, "abcdefghijklmnopqrstuvwxyz"))
		return -1; /* upper case only, as libfabric's variables */
	for (int i = 0; i < OFI_N; i++)
		if (strcasecmp(ofi_rows[i].name, env + np) == 0)
			return CONF_OFI + i;
	return -1;
}

/* A whole decimal number within lo..hi. */
static int is_int_in(const char *s, int64_t lo, int64_t hi)
{
	char *end;
	long long v;

	errno = 0;
	v = strtoll(s, &end, 10);
	return !errno && end != s && !*end && v >= lo && v <= hi;
}

/* "not an integer from lo to hi" in why, returned; NULL when s is one. */
static const char *int_why(const char *s, int64_t lo, int64_t hi, char *why)
{
	if (is_int_in(s, lo, hi))
		return NULL;
	snprintf(why, RN_CONF_WHY, "%s is not an integer from %lld to %lld", s, (long long)lo,
		 (long long)hi);
	return why;
}

/* Why value s of knob i is refused (in why or a constant), NULL when the knob takes it. */
static const char *check_value(int i, const char *s, char *why)
{
	static const char *const levels[] = { "debug", "info", "warn", "error", "off" };
	const rn_proc_knob *p;

	if (!*s)
		return "no value";
	if (i >= CONF_OFI)
		return ofi_rows[i - CONF_OFI].is_int ? int_why(s, 0, ofi_rows[i - CONF_OFI].hi, why)
						      : NULL;
	if (i < RN_KNOB__COUNT)
		return int_why(s, rn_knobs[i].lo, rn_knobs[i].hi, why);
	p = &rn_proc_knobs[i - RN_KNOB__COUNT];
	switch (p->type) {
	case RN_PROC_T_SECRET: /* the value, a key, is never quoted */
		return "a key is never set here but in a file of its own, named by RI2N_KEY_FILE";
	case RN_PROC_T_INT:
		if (i - RN_KNOB__COUNT == RN_PROC_BUSY_POLL_US && strcmp(s, "auto") == 0)
			return NULL;
		return int_why(s, p->lo, p->hi, why);
	case RN_PROC_T_TEXT:
		if (i - RN_KNOB__COUNT != RN_PROC_LOG)
			return NULL; /* its reader parses and reports it */
		for (size_t l = 0; l < sizeof(levels) / sizeof(*levels); l++)
			if (strcmp(s, levels[l]) == 0)
				return NULL;
		return "not one of debug, info, warn, error, off";
	}
	return NULL;
}

static char *trim(char *s)
{
	char *e;

	while (*s == ' ' || *s == '\t')
		s++;
	e = s + strlen(s);
	while (e > s && (e[-1] == ' ' || e[-1] == '\t' || e[-1] == '\r'))
		*--e = '\0';
	return s;
}

enum rn_conf_line rn_conf_parse_line(char *line, const char **name, const char **value,
				     const char **why, char *buf)
{
	char *eq, *hash = strchr(line, '#'), *n, *v;
	size_t len;
	int i;

	*name = *value = *why = NULL;
	if (hash)
		*hash = '\0'; /* no value contains '#' */
	line = trim(line);
	if (!*line)
		return RN_CONF_BLANK;
	eq = strchr(line, '=');
	if (!eq) {
		*why = "not NAME = value";
		return RN_CONF_BAD;
	}
	*eq = '\0';
	n = trim(line);
	v = trim(eq + 1);
	len = strlen(v);
	if (len >= 2 && v[0] == '"' && v[len - 1] == '"') { /* "r1,r2" as a shell would take it */
		v[len - 1] = '\0';
		v = trim(v + 1);
	}
	*name = n;
	*value = v;
	if (!*n || strspn(n, "ABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789_") != strlen(n)) {
		*why = "not NAME = value";
		return RN_CONF_BAD;
	}
	i = conf_index(n);
	*why = i < 0 ? "unknown knob" : check_value(i, v, buf);
	return *why ? RN_CONF_BAD : RN_CONF_SET;
}

__attribute__((format(printf, 1, 2))) static void note(const char *fmt, ...)
{
	va_list ap;

	if (g.nmsg == CONF_MSGS) {
		g.more++;
		return;
	}
	va_start(ap, fmt);
	vsnprintf(g.msg[g.nmsg++], sizeof(g.msg[0]), fmt, ap);
	va_end(ap);
}

static void parse_all(char *buf)
{
	int n = 0;

	for (char *next, *l = buf; l; l = next) {
		const char *name, *value, *why;
		char whybuf[RN_CONF_WHY];
		int i;

		next = strchr(l, '\n');
		if (next)
			*next++ = '\0';
		n++;
		switch (rn_conf_parse_line(l, &name, &value, &why, whybuf)) {
		case RN_CONF_BLANK:
			continue;
		case RN_CONF_BAD:
			if (name && strcmp(name, rn_proc_knobs[RN_PROC_KEY].env) == 0) {
				g.key_refused = 1; /* rn_knobs_key_from_env refuses to run */
				note("%s:%d: %s: %s", g.path, n, name, why);
				continue;
			}
			note("%s:%d: %.64s%s%s; line ignored (the default or the environment's "
			     "value stands)", g.path, n, name ? name : "", name ? ": " : "", why);
			continue;
		case RN_CONF_SET:
			i = conf_index(name);
			if (g.val[i])
				note("%s:%d: %s set again; this line wins", g.path, n, name);
			g.nset += !g.val[i];
			free(g.val[i]);
			g.val[i] = strdup(value);
			g.line[i] = n;
		}
	}
}

/* Why the open file fd cannot be trusted, or NULL. */
static const char *distrust(int fd)
{
	struct stat st;

	if (rn_sys_fstat(fd, &st) < 0)
		return "cannot stat it";
	if (!S_ISREG(st.st_mode))
		return "not a regular file";
	if (st.st_uid != 0 && st.st_uid != geteuid())
		return "owned by another user than root or this one";
	if (st.st_mode & 022)
		return "writable by its group or others (chmod go-w it)";
	if (st.st_size > RN_CONF_MAX_BYTES)
		return "larger than 64 KiB";
	return NULL;
}

static void load(void)
{
	const char *p = getenv("RI2N_CONF"), *bad;
	char *buf;
	ssize_t r;
	size_t len = 0;
	int fd;

	snprintf(g.state, sizeof(g.state), "read");
	if (p && (!*p || strcmp(p, "/dev/null") == 0)) {
		snprintf(g.state, sizeof(g.state), "none");
		return;
	}
	snprintf(g.path, sizeof(g.path), "%s", p ? p : RN_CONF_PATH);
	fd = rn_sys_open(g.path, O_RDONLY | O_CLOEXEC | O_NOCTTY);
	if (fd < 0) {
		int e = errno;

		if (e == ENOENT && !p) { /* no file installed: nothing to say */
			snprintf(g.state, sizeof(g.state), "not present");
			return;
		}
		snprintf(g.state, sizeof(g.state), "ignored: %s", strerror(e));
		note("cannot read the configuration file %s: %s; running without it", g.path,
		     strerror(e));
		return;
	}
	bad = distrust(fd);
	buf = bad ? NULL : malloc(RN_CONF_MAX_BYTES + 1);
	if (!bad && !buf)
		bad = "out of memory";
	while (!bad && (r = rn_sys_read(fd, buf + len, RN_CONF_MAX_BYTES - len)) != 0) {
		if (r < 0 && errno != EINTR)
			bad = strerror(errno);
		else if (r > 0)
			len += (size_t)r;
		if (len == RN_CONF_MAX_BYTES)
			bad = "larger than 64 KiB";
	}
	rn_sys_close(fd);
	if (bad) {
		snprintf(g.state, sizeof(g.state), "ignored: %s", bad);
		note("the configuration file %s is %s; running without it", g.path, bad);
	} else {
		buf[len] = '\0';
		parse_all(buf);
	}
	free(buf);
}

/* Reads the file on the first call of the process; then reports, outside the lock. */
static void ensure_loaded(void)
{
	int first = 0;

	if (__atomic_load_n(&g.loaded, __ATOMIC_ACQUIRE))
		return;
	pthread_mutex_lock(&g_mu);
	if (!g.loaded) {
		load();
		__atomic_store_n(&g.loaded, 1, __ATOMIC_RELEASE);
		first = 1;
	}
	pthread_mutex_unlock(&g_mu);
	if (!first)
		return;
	for (int i = 0; i < g.nmsg; i++)
		rn_warn("%s", g.msg[i]);
	if (g.more)
		rn_warn("%s: %d more lines ignored", g.path, g.more);
}

const char *rn_conf_get(const char *env, int *line)
{
	int i;

	ensure_loaded();
	if (!g.nset) /* no file, the usual case: as cheap as before there was one */
		return NULL;
	i = conf_index(env);
	if (i < 0 || !g.val[i])
		return NULL;
	if (line)
		*line = g.line[i];
	return g.val[i];
}

const char *rn_conf_path(void)
{
	ensure_loaded();
	return g.path;
}

const char *rn_conf_state(void)
{
	ensure_loaded();
	return g.state;
}

int rn_conf_key_refused(void)
{
	ensure_loaded();
	return g.key_refused;
}

void rn_conf_reset(void)
{
	for (int i = 0; i < CONF_N; i++)
		free(g.val[i]);
	memset(&g, 0, sizeof(g));
}
