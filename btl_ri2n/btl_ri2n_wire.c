/*
 * btl_ri2n_wire.c - stream frames and nudges (btl_ri2n_wire.h).
 */
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>

#include <sodium/crypto_generichash_blake2b.h>
#include <sodium/utils.h>

#include "btl_ri2n_wire.h"
#include "rn_wire.h"

static uint32_t get32(const uint8_t *p)
{
	return (uint32_t)p[0] << 24 | (uint32_t)p[1] << 16 | (uint32_t)p[2] << 8 | p[3];
}

static void put32(uint8_t *p, uint32_t v)
{
	p[0] = (uint8_t)(v >> 24);
	p[1] = (uint8_t)(v >> 16);
	p[2] = (uint8_t)(v >> 8);
	p[3] = (uint8_t)v;
}

const char *rbtl_wire_check_hdr(const uint8_t h[RI2N_HDR_LEN], int bound)
{
	uint32_t len = get32(h);

	if (h[6] || h[7])
		return "reserved header bytes set";
	switch (h[5]) {
	case RI2N_FT_HELLO:
		if (bound)
			return "a second hello";
		return len == RI2N_HELLO_LEN ? NULL : "a hello of the wrong length";
	case RI2N_FT_FRAG:
		if (!bound)
			return "data before the hello";
		if (h[4] >= RI2N_TAG_LIMIT)
			return "a tag past the active-message table";
		return len <= RI2N_MAX_FRAME ? NULL : "a frame longer than 64 MiB";
	default:
		return "a frame of unknown type";
	}
}

/* Starts gathering the frame whose checked header is h; -1 without memory. */
static int begin_copy(rbtl_rx *rx, const uint8_t *h)
{
	size_t len = get32(h);

	if (len > rx->cap) {
		/*
		 * A mapping of its own (64 KiB at least, nothing to keep from the last
		 * frame): when an idle link frees it, its pages go back to the system
		 * rather than stay in malloc's heap
		 */
		size_t cap = len < RI2N_RX_MIN_BUF ? RI2N_RX_MIN_BUF : len;
		void *b = mmap(NULL, cap, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);

		if (b == MAP_FAILED)
			return -1;
		rbtl_rx_free(rx);
		rx->buf = b;
		rx->cap = cap;
	}
	rx->tag = h[4];
	rx->type = h[5];
	rx->need = len;
	rx->len = 0;
	rx->hdr_have = RI2N_HDR_LEN; /* in the body now */
	return 0;
}

ssize_t rbtl_rx_step(rbtl_rx *rx, uint8_t *d, size_t n, rbtl_frame_fn fn, void *arg,
		     const char **why)
{
	size_t k;

	*why = NULL;
	if (n == 0)
		return 0;
	if (rx->hdr_have == 0 && n >= RI2N_HDR_LEN) {
		size_t len = get32(d);

		if ((*why = rbtl_wire_check_hdr(d, rx->bound)) != NULL)
			return -1;
		if (n - RI2N_HDR_LEN >= len) { /* whole here: no copy */
			fn(arg, d[4], d[5], d + RI2N_HDR_LEN, len);
			return (ssize_t)(RI2N_HDR_LEN + len);
		}
		if (begin_copy(rx, d)) {
			*why = "no memory for a frame";
			return -1;
		}
		return RI2N_HDR_LEN;
	}
	if (rx->hdr_have < RI2N_HDR_LEN) { /* a header split over packets */
		k = RI2N_HDR_LEN - rx->hdr_have < n ? RI2N_HDR_LEN - rx->hdr_have : n;
		memcpy(rx->hdr + rx->hdr_have, d, k);
		rx->hdr_have += (uint32_t)k;
		if (rx->hdr_have < RI2N_HDR_LEN)
			return (ssize_t)k;
		if ((*why = rbtl_wire_check_hdr(rx->hdr, rx->bound)) != NULL)
			return -1;
		if (begin_copy(rx, rx->hdr)) {
			*why = "no memory for a frame";
			return -1;
		}
	} else { /* the body of a split frame */
		k = rx->need - rx->len < n ? rx->need - rx->len : n;
		memcpy(rx->buf + rx->len, d, k);
		rx->len += k;
	}
	if (rx->hdr_have == RI2N_HDR_LEN && rx->len == rx->need) {
		rx->hdr_have = 0;
		fn(arg, rx->tag, rx->type, rx->buf, rx->need);
	}
	return (ssize_t)k;
}

void rbtl_rx_free(rbtl_rx *rx)
{
	if (rx->buf)
		munmap(rx->buf, rx->cap);
	rx->buf = NULL;
	rx->cap = 0;
}

int rbtl_wire_hello_read(const uint8_t *d, size_t len, uint32_t *jobid, uint32_t *vpid)
{
	if (len != RI2N_HELLO_LEN || get32(d) != RI2N_MAGIC)
		return -1;
	*jobid = get32(d + 4);
	*vpid = get32(d + 8);
	return 0;
}

int rbtl_wire_is_nudge(const uint8_t *d, size_t len)
{
	/* ri2n's own datagrams start with version 1, never with the magic */
	return (len == RI2N_NUDGE_LEN || len == RI2N_NUDGE_LEN + RI2N_NUDGE_TAG_LEN) &&
	       get32(d) == RI2N_MAGIC;
}

size_t rbtl_wire_nudge_write(uint8_t *b, size_t cap, uint32_t jobid, uint32_t vpid,
			     const uint8_t *key)
{
	size_t need = RI2N_NUDGE_LEN + (key ? RI2N_NUDGE_TAG_LEN : 0);

	if (cap < need)
		return 0;
	memset(b, 0, RI2N_NUDGE_LEN);
	put32(b, RI2N_MAGIC);
	b[4] = 1; /* type: connect to me */
	put32(b + 8, jobid);
	put32(b + 12, vpid);
	if (key) /* keyed BLAKE2b, as rn_wire_seal tags datagrams */
		crypto_generichash_blake2b(b + RI2N_NUDGE_LEN, RI2N_NUDGE_TAG_LEN, b, RI2N_NUDGE_LEN,
					   key, RN_KEY_LEN);
	return need;
}

int rbtl_wire_nudge_read(const uint8_t *d, size_t len, const uint8_t *key, uint32_t *jobid,
			 uint32_t *vpid)
{
	if (!rbtl_wire_is_nudge(d, len))
		return -1;
	if (key) {
		uint8_t tag[RI2N_NUDGE_TAG_LEN];

		if (len != RI2N_NUDGE_LEN + RI2N_NUDGE_TAG_LEN)
			return -1;
		crypto_generichash_blake2b(tag, sizeof(tag), d, RI2N_NUDGE_LEN, key, RN_KEY_LEN);
		if (sodium_memcmp(tag, d + RI2N_NUDGE_LEN, sizeof(tag)) != 0)
			return -1;
	} else if (len != RI2N_NUDGE_LEN) {
		return -1;
	}
	if (d[4] != 1 || d[5] || d[6] || d[7])
		return -1;
	*jobid = get32(d + 8);
	*vpid = get32(d + 12);
	return 0;
}
