/*
 * rn_knobs.c - environment variables, the configuration file's lines
 * (rn_conf.c) and socket options, from the table of knobs
 * (src/core/rn_knob_list.h).  Every knob's text is read here: the
 * environment's when set and not empty, else the file's.
 */
#include <errno.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include <sodium/utils.h>

#include "ri2n.h"
#include "rn_conf.h"
#include "rn_knobs.h"
#include "rn_log.h"
#include "rn_sys.h"

#define NS(f) offsetof(rn_config, f)
#define KNOB_ROW(NAME, field, kind, def, lo, hi, mca, doc) \
	{ RI2N_##NAME, "RI2N_" #NAME, mca, doc, RN_KNOB_K_##kind, NS(field), def, lo, hi },

const rn_knob rn_knobs[RN_KNOB__COUNT] = { RN_KNOB_LIST(KNOB_ROW) };

const rn_knob *rn_knob_find(int opt)
{
	for (size_t i = 0; i < RN_KNOB__COUNT; i++)
		if (rn_knobs[i].opt == opt)
			return &rn_knobs[i];
	return NULL;
}

int rn_knob_set(rn_config *cfg, int opt, int64_t v)
{
	const rn_knob *k = rn_knob_find(opt);
	rn_config next = *cfg;
	char *field;

	if (!k)
		return -ENOPROTOOPT;
	if (v < k->lo || v > k->hi)
		return -EINVAL;
	field = (char *)&next + k->off;
	switch (k->kind) {
	case RN_KNOB_K_MS:
		*(uint64_t *)(void *)field = (uint64_t)v * 1000000;
		break;
	case RN_KNOB_K_COUNT:
		*(uint32_t *)(void *)field = (uint32_t)v;
		break;
	case RN_KNOB_K_MTU: /* the largest datagram fits an IP packet of that size */
		next.max_dgram = (uint32_t)v - 28 > RN_MAX_DGRAM ? RN_MAX_DGRAM : (uint32_t)v - 28;
		break;
	case RN_KNOB_K_BYTES:
		*(uint32_t *)(void *)field = rn_config_slots((uint64_t)v, next.max_dgram);
		if (k->off == NS(snd_slots) && next.init_cwnd > next.snd_slots)
			next.init_cwnd = next.snd_slots;
		break;
	}
	if (rn_config_check(&next, NULL))
		return -EINVAL; /* valid alone, inconsistent with the rest */
	*cfg = next;
	return 0;
}

int rn_knob_get(const rn_config *cfg, int opt, int64_t *v)
{
	const rn_knob *k = rn_knob_find(opt);
	const char *field;

	if (!k)
		return -ENOPROTOOPT;
	field = (const char *)cfg + k->off;
	switch (k->kind) {
	case RN_KNOB_K_MS:
		*v = (int64_t)(*(const uint64_t *)(const void *)field / 1000000);
		break;
	case RN_KNOB_K_COUNT:
		*v = *(const uint32_t *)(const void *)field;
		break;
	case RN_KNOB_K_MTU:
		*v = cfg->max_dgram + 28;
		break;
	case RN_KNOB_K_BYTES:
		*v = (int64_t)*(const uint32_t *)(const void *)field * (cfg->max_dgram - RN_HDR_LEN);
		break;
	}
	return 0;
}

const char *rn_knob_unit(const rn_knob *k)
{
	switch (k->kind) {
	case RN_KNOB_K_MS: return "ms";
	case RN_KNOB_K_MTU: return "bytes";
	case RN_KNOB_K_BYTES: return "bytes";
	default: return "";
	}
}

/* Knob env's text: the environment's when set and not empty, else the file's. */
/*
 * The RI2N_ variables of the environment the process was configured from
 * (rn_knobs_snapshot), for its forked children: a server may empty its
 * workers' environment (nginx keeps only TZ), and a worker must go on with
 * the rails and knobs its listener was made with.
 */
static char **g_snap;
static pid_t g_snap_pid;

void rn_knobs_snapshot(void)
{
	extern char **environ;
	size_t n = 0, k = 0;

	if (g_snap)
		return; /* taken, here or in a parent */
	for (char **e = environ; e && *e; e++)
		n += strncmp(*e, "RI2N_", 5) == 0;
	g_snap = calloc(n + 1, sizeof(*g_snap));
	if (!g_snap)
		return;
	for (char **e = environ; e && *e && k < n; e++)
		if (strncmp(*e, "RI2N_", 5) == 0 && (g_snap[k] = strdup(*e)))
			k++;
	g_snap_pid = rn_pid();
}

/* env's value: the environment's, else (in a forked child) the parent's snapshot's. */
static const char *env_text(const char *env)
{
	const char *s = getenv(env);
	size_t n = strlen(env);

	if (s || !g_snap || g_snap_pid == rn_pid())
		return s;
	for (char **e = g_snap; *e; e++)
		if (strncmp(*e, env, n) == 0 && (*e)[n] == '=')
			return *e + n + 1;
	return NULL;
}

static const char *knob_text(const char *env)
{
	const char *s = env_text(env);

	return s && *s ? s : rn_conf_get(env, NULL);
}

int rn_knob_origin(const char *env, int *line)
{
	const char *s = env_text(env);

	if (s && *s)
		return RN_FROM_ENV;
	return rn_conf_get(env, line) ? RN_FROM_FILE : RN_FROM_DEFAULT;
}

/* "RI2N_X=v" or "<file>:<line>: RI2N_X = v", for a warning about a bad value. */
static void knob_where(const char *env, const char *s, char *buf, size_t n)
{
	int line = 0;

	if (rn_knob_origin(env, &line) == RN_FROM_FILE)
		snprintf(buf, n, "%s:%d: %s = %s", rn_conf_path(), line, env, s);
	else
		snprintf(buf, n, "%s=%s", env, s);
}

const char *rn_knob_env(int opt)
{
	const rn_knob *k = rn_knob_find(opt);

	return k ? knob_text(k->env) : NULL;
}

#define PROC_OPT_SOL(NAME) RI2N_##NAME /* a row without its enum value does not compile */
#define PROC_OPT_ENV(NAME) 0
#define PROC_ROW(NAME, type, def, lo, hi, sol, shown, doc) \
	{ "RI2N_" #NAME, RN_PROC_T_##type, PROC_OPT_##sol(NAME), def, lo, hi, shown, doc },

const rn_proc_knob rn_proc_knobs[RN_PROC__COUNT] = { RN_PROC_LIST(PROC_ROW) };

const char *rn_proc_text(int which)
{
	return knob_text(rn_proc_knobs[which].env);
}

int rn_proc_int(int which, int64_t *v)
{
	const rn_proc_knob *k = &rn_proc_knobs[which];
	const char *s = rn_proc_text(which);
	char *end;
	long long n;

	*v = k->def;
	if (!s || k->type != RN_PROC_T_INT) /* never a number: never quoted in a warning */
		return 0;
	errno = 0;
	n = strtoll(s, &end, 10);
	if (errno || *end || n < k->lo || n > k->hi) {
		static int warned[RN_PROC__COUNT]; /* once per variable, not per call */
		char where[160];

		if (!__atomic_exchange_n(&warned[which], 1, __ATOMIC_RELAXED)) {
			knob_where(k->env, s, where, sizeof(where));
			rn_warn("%s is not valid (an integer from %lld to %lld); keeping the default",
				where, (long long)k->lo, (long long)k->hi);
		}
		return -1;
	}
	*v = n;
	return 1;
}

int64_t rn_proc_get(int which)
{
	int64_t v;

	rn_proc_int(which, &v);
	return v;
}

void rn_knobs_apply(rn_config *cfg, rn_knob_from *from)
{
	/* in the table's order: MTU first, buffer sizes are counted in packets of that size */
	for (size_t i = 0; i < RN_KNOB__COUNT; i++) {
		const rn_knob *k = &rn_knobs[i];
		const char *s = knob_text(k->env);
		char *end, where[160];
		long long v;
		int line = 0, src = rn_knob_origin(k->env, &line);

		if (from)
			from[i] = (rn_knob_from){ RN_FROM_DEFAULT, 0 };
		if (!s)
			continue;
		errno = 0;
		v = strtoll(s, &end, 10);
		if (errno || *end || rn_knob_set(cfg, k->opt, v) != 0) {
			knob_where(k->env, s, where, sizeof(where));
			rn_warn("%s is not valid (an integer from %lld to %lld that fits the other "
				"settings); keeping the default", where, (long long)k->lo,
				(long long)k->hi);
		} else if (from) {
			from[i] = (rn_knob_from){ src, line };
		}
	}
}

void rn_knobs_from_env(rn_config *cfg)
{
	rn_knobs_apply(cfg, NULL);
}

/* Sets cfg's key from 64 hex digits (what: where they came from, for messages). */
static int key_from_hex(rn_config *cfg, const char *hex, size_t len, const char *what)
{
	rn_config next = *cfg;
	size_t n = 0;
	const char *end = NULL;
	int rc = 0;

	if (len != 2 * RN_KEY_LEN ||
	    sodium_hex2bin(next.key, sizeof(next.key), hex, len, NULL, &n, &end) != 0 ||
	    n != RN_KEY_LEN || end != hex + len) {
		rn_error("%s must hold %d hexadecimal digits (a %d-byte key); refusing to run "
			 "without the key", what, 2 * RN_KEY_LEN, RN_KEY_LEN);
		rc = -EINVAL;
	} else {
		next.keyed = 1;
		if (rn_config_check(&next, NULL)) {
			rn_error("a cluster key needs datagrams of at least %d bytes (RI2N_MTU >= %d)",
				 RN_INIT_LEN + RN_MAC_LEN, RN_INIT_LEN + RN_MAC_LEN + 28);
			rc = -EINVAL;
		} else {
			*cfg = next;
		}
	}
	sodium_memzero(next.key, sizeof(next.key));
	return rc;
}

int rn_knobs_key_from_file(rn_config *cfg, const char *path)
{
	char buf[2 * RN_KEY_LEN + 8];
	size_t n;
	struct stat st;
	FILE *f = fopen(path, "re");
	int rc;

	if (!f) {
		rn_error("cannot read the cluster key file %s: %s", path, strerror(errno));
		return -EINVAL;
	}
	/* as ssh does with its keys: a key others can read or change is no secret */
	if (rn_sys_fstat(fileno(f), &st) < 0 || (st.st_mode & 077) ||
	    (st.st_uid != geteuid() && st.st_uid != 0)) {
		rn_error("the cluster key file %s is readable or writable by other users, or owned "
			 "by another user (mode %03o): refusing it; chmod 600 it", path,
			 (unsigned)(st.st_mode & 0777));
		rn_sys_fclose(f);
		return -EINVAL;
	}
	n = fread(buf, 1, sizeof(buf), f);
	rn_sys_fclose(f);
	while (n > 0 && (buf[n - 1] == '\n' || buf[n - 1] == '\r' || buf[n - 1] == ' '))
		n--; /* one trailing newline is what editors and echo leave */
	rc = key_from_hex(cfg, buf, n, path);
	sodium_memzero(buf, sizeof(buf));
	return rc;
}

int rn_knobs_key_from_env(rn_config *cfg)
{
	/* set but empty is an unusable key too (not rn_proc_text): refused, never ignored */
	const char *key = rn_proc_knobs[RN_PROC_KEY].env;
	const char *key_file = rn_proc_knobs[RN_PROC_KEY_FILE].env;
	const char *s = env_text(key), *file = env_text(key_file);
	int line = 0;

	if (s && file) {
		rn_error("%s and %s are both set; set one", key, key_file);
		return -EINVAL;
	}
	if (!s && !file && rn_conf_key_refused()) { /* the site asked for a key, in the wrong place */
		rn_error("%s sets %s, which belongs in a key file of its own (%s); refusing to run "
			 "without the key", rn_conf_path(), key, key_file);
		return -EINVAL;
	}
	if (!s && !file && (file = rn_conf_get(key_file, &line)) != NULL)
		rn_info("the cluster key file %s is named by %s:%d", file, rn_conf_path(), line);
	if (file)
		return rn_knobs_key_from_file(cfg, file);
	return s ? key_from_hex(cfg, s, strlen(s), key) : 0;
}
