/*
 * rn_knobs.c - environment variables and socket options, from the table of
 * knobs (src/core/rn_knob_list.h).
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

const char *rn_knob_env(int opt)
{
	const rn_knob *k = rn_knob_find(opt);
	const char *s = k ? getenv(k->env) : NULL;

	return s && *s ? s : NULL;
}

#define PROC_OPT_SOL(NAME) RI2N_##NAME /* a row without its enum value does not compile */
#define PROC_OPT_ENV(NAME) 0
#define PROC_ROW(NAME, type, def, lo, hi, sol, shown, doc) \
	{ "RI2N_" #NAME, RN_PROC_T_##type, PROC_OPT_##sol(NAME), def, lo, hi, shown, doc },

const rn_proc_knob rn_proc_knobs[RN_PROC__COUNT] = { RN_PROC_LIST(PROC_ROW) };

const char *rn_proc_text(int which)
{
	const char *s = getenv(rn_proc_knobs[which].env);

	return s && *s ? s : NULL;
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

		if (!__atomic_exchange_n(&warned[which], 1, __ATOMIC_RELAXED))
			rn_warn("%s=%s is not valid (an integer from %lld to %lld); keeping the default",
				k->env, s, (long long)k->lo, (long long)k->hi);
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

void rn_knobs_from_env(rn_config *cfg)
{
	/* in the table's order: MTU first, buffer sizes are counted in packets of that size */
	for (size_t i = 0; i < RN_KNOB__COUNT; i++) {
		const rn_knob *k = &rn_knobs[i];
		const char *s = rn_knob_env(k->opt);
		char *end;
		long long v;

		if (!s)
			continue;
		errno = 0;
		v = strtoll(s, &end, 10);
		if (errno || *end || rn_knob_set(cfg, k->opt, v) != 0)
			rn_warn("%s=%s is not valid (an integer from %lld to %lld that fits the other "
				"settings); keeping the default", k->env, s, (long long)k->lo,
				(long long)k->hi);
	}
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
	const char *s = getenv(key), *file = getenv(key_file);

	if (s && file) {
		rn_error("%s and %s are both set; set one", key, key_file);
		return -EINVAL;
	}
	if (file)
		return rn_knobs_key_from_file(cfg, file);
	return s ? key_from_hex(cfg, s, strlen(s), key) : 0;
}
