/*
 * rn_knobs.c - environment variables and socket options, from one table.
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

enum kind { K_MS, K_COUNT, K_MTU, K_BUF_SND, K_BUF_RCV };

typedef struct knob {
	int opt;
	const char *env;
	enum kind kind;
	size_t off; /* field in rn_config: uint64_t ns for K_MS, uint32_t otherwise */
	int64_t min, max;
} knob;

#define NS(f) offsetof(rn_config, f)

static const knob knobs[] = {
	{ RI2N_HEARTBEAT_MS, "RI2N_HEARTBEAT_MS", K_MS, NS(heartbeat_ns), 1, 60000 },
	{ RI2N_KEEPALIVE_MS, "RI2N_KEEPALIVE_MS", K_MS, NS(keepalive_ns), 1, 60000 },
	{ RI2N_RAIL_TIMEOUT_MS, "RI2N_RAIL_TIMEOUT_MS", K_MS, NS(rail_timeout_ns), 2, 600000 },
	{ RI2N_DEAD_PEER_MS, "RI2N_DEAD_PEER_MS", K_MS, NS(dead_peer_ns), 3, 86400000 },
	{ RI2N_CONNECT_TIMEOUT_MS, "RI2N_CONNECT_TIMEOUT_MS", K_MS, NS(connect_timeout_ns), 1,
	  86400000 },
	{ RI2N_FAIL_WINDOW, "RI2N_FAIL_WINDOW", K_COUNT, NS(fail_window), 2, 100000 },
	{ RI2N_FAIL_MIN, "RI2N_FAIL_MIN", K_COUNT, NS(fail_min), 1, 99999 },
	{ RI2N_MTU, "RI2N_MTU", K_MTU, NS(max_dgram), 576, 65535 },
	{ RI2N_SNDBUF, "RI2N_SNDBUF", K_BUF_SND, NS(snd_slots), 65536, 256 << 20 },
	{ RI2N_RCVBUF, "RI2N_RCVBUF", K_BUF_RCV, NS(rcv_slots), 65536, 256 << 20 },
	{ RI2N_KEY_AUTH_ONLY, "RI2N_KEY_AUTH_ONLY", K_COUNT, NS(auth_only), 0, 1 },
};

static const knob *find(int opt)
{
	for (size_t i = 0; i < sizeof(knobs) / sizeof(*knobs); i++)
		if (knobs[i].opt == opt)
			return &knobs[i];
	return NULL;
}

/* Packets of the ring that hold `bytes`: a power of two within the core's limits. */
static uint32_t slots_for(int64_t bytes, uint32_t max_dgram)
{
	uint32_t mss = max_dgram - RN_HDR_LEN, want = (uint32_t)((bytes + mss - 1) / mss), s = RN_MIN_SLOTS;

	while (s < want && s < RN_MAX_SLOTS)
		s <<= 1;
	return s;
}

int rn_knob_set(rn_config *cfg, int opt, int64_t v)
{
	const knob *k = find(opt);
	rn_config next = *cfg;
	char *field;

	if (!k)
		return -ENOPROTOOPT;
	if (v < k->min || v > k->max)
		return -EINVAL;
	field = (char *)&next + k->off;
	switch (k->kind) {
	case K_MS:
		*(uint64_t *)field = (uint64_t)v * 1000000;
		break;
	case K_COUNT:
		*(uint32_t *)field = (uint32_t)v;
		break;
	case K_MTU: /* the largest datagram fits an IP packet of that size */
		next.max_dgram = (uint32_t)v - 28 > RN_MAX_DGRAM ? RN_MAX_DGRAM : (uint32_t)v - 28;
		break;
	case K_BUF_SND:
		next.snd_slots = slots_for(v, next.max_dgram);
		if (next.init_cwnd > next.snd_slots)
			next.init_cwnd = next.snd_slots;
		break;
	case K_BUF_RCV:
		next.rcv_slots = slots_for(v, next.max_dgram);
		break;
	}
	if (rn_config_check(&next, NULL))
		return -EINVAL; /* valid alone, inconsistent with the rest */
	*cfg = next;
	return 0;
}

int rn_knob_get(const rn_config *cfg, int opt, int64_t *v)
{
	const knob *k = find(opt);
	const char *field;

	if (!k)
		return -ENOPROTOOPT;
	field = (const char *)cfg + k->off;
	switch (k->kind) {
	case K_MS:
		*v = (int64_t)(*(const uint64_t *)field / 1000000);
		break;
	case K_COUNT:
		*v = *(const uint32_t *)field;
		break;
	case K_MTU:
		*v = cfg->max_dgram + 28;
		break;
	case K_BUF_SND:
		*v = (int64_t)cfg->snd_slots * (cfg->max_dgram - RN_HDR_LEN);
		break;
	case K_BUF_RCV:
		*v = (int64_t)cfg->rcv_slots * (cfg->max_dgram - RN_HDR_LEN);
		break;
	}
	return 0;
}

void rn_knobs_from_env(rn_config *cfg)
{
	/* MTU first: buffer sizes are counted in packets of that size */
	static const int order[] = { RI2N_MTU, RI2N_HEARTBEAT_MS, RI2N_KEEPALIVE_MS,
				     RI2N_RAIL_TIMEOUT_MS, RI2N_DEAD_PEER_MS,
				     RI2N_CONNECT_TIMEOUT_MS, RI2N_FAIL_WINDOW, RI2N_FAIL_MIN,
				     RI2N_SNDBUF, RI2N_RCVBUF, RI2N_KEY_AUTH_ONLY };

	for (size_t i = 0; i < sizeof(order) / sizeof(*order); i++) {
		const knob *k = find(order[i]);
		const char *s = getenv(k->env);
		char *end;
		long long v;

		if (!s || !*s)
			continue;
		errno = 0;
		v = strtoll(s, &end, 10);
		if (errno || *end || rn_knob_set(cfg, k->opt, v) != 0)
			rn_warn("%s=%s is not valid (an integer from %lld to %lld that fits the other "
				"settings); keeping the default", k->env, s, (long long)k->min,
				(long long)k->max);
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
	if (fstat(fileno(f), &st) < 0 || (st.st_mode & 077) ||
	    (st.st_uid != geteuid() && st.st_uid != 0)) {
		rn_error("the cluster key file %s is readable or writable by other users, or owned "
			 "by another user (mode %03o): refusing it; chmod 600 it", path,
			 (unsigned)(st.st_mode & 0777));
		fclose(f);
		return -EINVAL;
	}
	n = fread(buf, 1, sizeof(buf), f);
	fclose(f);
	while (n > 0 && (buf[n - 1] == '\n' || buf[n - 1] == '\r' || buf[n - 1] == ' '))
		n--; /* one trailing newline is what editors and echo leave */
	rc = key_from_hex(cfg, buf, n, path);
	sodium_memzero(buf, sizeof(buf));
	return rc;
}

int rn_knobs_key_from_env(rn_config *cfg)
{
	const char *s = getenv("RI2N_KEY"), *file = getenv("RI2N_KEY_FILE");

	if (s && file) {
		rn_error("RI2N_KEY and RI2N_KEY_FILE are both set; set one");
		return -EINVAL;
	}
	if (file)
		return rn_knobs_key_from_file(cfg, file);
	return s ? key_from_hex(cfg, s, strlen(s), "RI2N_KEY") : 0;
}
