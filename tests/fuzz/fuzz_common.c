/*
 * fuzz_common.c - small helpers of the fuzz targets (see fuzz_common.h);
 * the deterministic pair is in fuzz_pair.c (setup, datagrams in and out)
 * and fuzz_drive.c (the application, timers, a clean network).
 */
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "fuzz_common.h"

void fz_fail(const char *file, int line, const char *cond, const char *fmt, ...)
{
	va_list ap;

	fprintf(stderr, "\n%s:%d: invariant failed: %s\n  ", file, line, cond);
	va_start(ap, fmt);
	vfprintf(stderr, fmt, ap);
	va_end(ap);
	fprintf(stderr, "\n");
	abort();
}

/* ---- small helpers ---- */

int fz_known(const char *id)
{
	const char *v = getenv("RI2N_FUZZ_SKIP_KNOWN");

	return v && (strcmp(v, "all") == 0 || strstr(v, id) != NULL);
}

uint64_t fz_rng_next(void *user)
{
	uint64_t *s = user;
	uint64_t z = (*s += UINT64_C(0x9e3779b97f4a7c15));

	z = (z ^ (z >> 30)) * UINT64_C(0xbf58476d1ce4e5b9);
	z = (z ^ (z >> 27)) * UINT64_C(0x94d049bb133111eb);
	return z ^ (z >> 31);
}

static void *mem_alloc(void *user, size_t size)
{
	fz_mem *m = user;
	void *ptr;

	FZ_CHECK(!m->forbid, "%s called the allocator (%zu bytes)", m->who, size);
	m->calls++;
	ptr = calloc(1, size);
	if (ptr)
		m->live++;
	return ptr;
}

static void mem_free(void *user, void *ptr)
{
	fz_mem *m = user;

	FZ_CHECK(!m->forbid, "%s called free", m->who);
	if (!ptr)
		return;
	FZ_CHECK(m->live > 0, "%s freed more than it allocated", m->who);
	m->live--;
	free(ptr);
}

rn_mem fz_mem_of(fz_mem *m)
{
	return (rn_mem){ .alloc = mem_alloc, .free = mem_free, .user = m };
}

uint8_t fz_u8(fz_in *in)
{
	if (in->n == 0)
		return 0;
	in->n--;
	return *in->p++;
}

uint16_t fz_u16(fz_in *in)
{
	uint16_t hi = fz_u8(in);

	return (uint16_t)(hi << 8 | fz_u8(in));
}

uint32_t fz_u32(fz_in *in)
{
	uint32_t hi = fz_u16(in);

	return hi << 16 | fz_u16(in);
}

uint64_t fz_u64(fz_in *in)
{
	uint64_t hi = fz_u32(in);

	return hi << 32 | fz_u32(in);
}

size_t fz_bytes(fz_in *in, uint8_t *out, size_t n)
{
	if (n > in->n)
		n = in->n;
	memcpy(out, in->p, n);
	in->p += n;
	in->n -= n;
	return n;
}

rn_rail_addr fz_rail(int host, int r)
{
	return (rn_rail_addr){
		.ip = (198u << 24) | (18u << 16) | ((uint32_t)(r + 1) << 8) | (uint32_t)(host + 1),
		.port = (uint16_t)(host ? FZ_SERVER_PORT : FZ_CLIENT_PORT + r),
		.prefix = 24,
	};
}

rn_addr fz_addr(int host, int r)
{
	rn_rail_addr a = fz_rail(host, r);

	return (rn_addr){ .ip = a.ip, .port = a.port };
}

rn_addr fz_from(int from, int r, int choice)
{
	rn_addr a = fz_addr(from, r);

	switch (choice & 3) {
	case 0:
		return a;
	case 1:
		return fz_addr(from, 1 - r);
	case 2:
		a.port++;
		return a;
	default:
		return (rn_addr){ .ip = (203u << 24) | (113u << 8) | 9u,
				  .port = 4242 }; /* 203.0.113.9 */
	}
}

int fz_addr_eq(rn_addr a, rn_addr b)
{
	return a.ip == b.ip && a.port == b.port;
}

void fz_config(rn_config *cfg)
{
	rn_config_default(cfg);
	cfg->max_dgram = FZ_DGRAM;
	cfg->snd_slots = FZ_SLOTS;
	cfg->rcv_slots = FZ_SLOTS;
}

size_t fz_mutate(fz_in *in, uint8_t *pkt, size_t len, unsigned count)
{
	if (len == 0)
		return 0;
	for (unsigned i = 0; i < count; i++) {
		uint16_t pos = fz_u16(in);
		uint8_t val = fz_u8(in);
		size_t at = (size_t)(pos & 0x7fff) % len;

		if (pos & 0x8000)
			pkt[at] = val;
		else
			pkt[at] ^= val;
	}
	return len;
}

/* A code that ends a connection (rn_core.h: at or below RN_ERR__FATAL). */
int fz_is_fatal(int err)
{
	return err <= RN_ERR__FATAL;
}
