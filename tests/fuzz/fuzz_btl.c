/*
 * fuzz_btl.c - libFuzzer target: what the Open MPI BTL reads from the
 * network besides ri2n's datagrams (btl_ri2n/btl_ri2n_wire.c): stream
 * frames, fed in pieces of any size, and nudge datagrams.
 *
 * Input: byte 0 picks the mode.
 *   - nudge (bit 0 set; bit 1: with a cluster key): the rest is a datagram.
 *     A nudge read back is written again from its fields and must give the
 *     same bytes; with a key an untagged or wrongly tagged one is refused.
 *   - stream: byte 1 bit 0 says whether we connected (fragments allowed at
 *     once) or accepted (a hello first); then pieces, each a length byte and
 *     that many bytes, handed to rbtl_rx_step as rn_conn_peek would.
 * Invariants of the stream mode, against a plain parser of the whole
 * stream at once: the same frames in the same order with the same bytes;
 * a hello only first on an accepted stream, fragments only after it, tags
 * below the active-message table, no frame past 64 MiB; a malformed header
 * found at the same frame; every byte consumed before it; and a stream
 * that has not said who it is never gets more than the first gather buffer.
 */
#include <stdlib.h>
#include <string.h>

#include "btl_ri2n_wire.h"
#include "fuzz_common.h"

enum { MAX_FRAMES = 4096 };

typedef struct seen {
	uint8_t tag, type;
	size_t len;
	uint64_t sum;
} seen;

typedef struct bctx {
	rbtl_rx rx;
	seen got[MAX_FRAMES];
	int ngot;
	int bad_hello;
} bctx;

static uint64_t sum_of(const uint8_t *d, size_t n)
{
	uint64_t h = 1469598103934665603u;

	for (size_t i = 0; i < n; i++)
		h = (h ^ d[i]) * 1099511628211u;
	return h ^ n;
}

static void on_frame(void *arg, uint8_t tag, uint8_t type, uint8_t *d, size_t len)
{
	bctx *x = arg;
	uint32_t j, v;

	FZ_CHECK(type == RI2N_FT_HELLO || type == RI2N_FT_FRAG, "frame of type %u handed over", type);
	if (type == RI2N_FT_HELLO) {
		FZ_CHECK(!x->rx.bound && len == RI2N_HELLO_LEN, "hello of %zu bytes on a %s stream",
			 len, x->rx.bound ? "bound" : "new");
		/* as the BTL does: a good hello binds the stream, a bad one ends it */
		if (rbtl_wire_hello_read(d, len, &j, &v) == 0)
			x->rx.bound = 1;
		else
			x->bad_hello = 1;
	} else {
		FZ_CHECK(x->rx.bound, "a fragment before the hello");
		FZ_CHECK(tag < RI2N_TAG_LIMIT, "tag %u handed over", tag);
		FZ_CHECK(len <= RI2N_MAX_FRAME, "a %zu-byte frame", len);
	}
	if (x->ngot < MAX_FRAMES)
		x->got[x->ngot] = (seen){ tag, type, len, sum_of(d, len) };
	x->ngot++;
}

/* The plain parser: the frames of the whole stream, and whether it goes bad where it stops. */
static int reference(const uint8_t *s, size_t n, int bound, seen *out, int *nout, int *bad)
{
	size_t off = 0;

	*nout = 0;
	*bad = 0;
	while (n - off >= RI2N_HDR_LEN) {
		uint32_t len = (uint32_t)s[off] << 24 | (uint32_t)s[off + 1] << 16 |
			       (uint32_t)s[off + 2] << 8 | s[off + 3];
		uint8_t tag = s[off + 4], type = s[off + 5];
		int hello_ok;

		if (s[off + 6] || s[off + 7] ||
		    (type == RI2N_FT_HELLO && (bound || len != RI2N_HELLO_LEN)) ||
		    (type == RI2N_FT_FRAG && (!bound || tag >= RI2N_TAG_LIMIT || len > RI2N_MAX_FRAME)) ||
		    (type != RI2N_FT_HELLO && type != RI2N_FT_FRAG)) {
			*bad = 1;
			return 0;
		}
		if (n - off - RI2N_HDR_LEN < len)
			return 0; /* incomplete: nothing more */
		if (*nout < MAX_FRAMES)
			out[*nout] = (seen){ tag, type, len, sum_of(s + off + RI2N_HDR_LEN, len) };
		(*nout)++;
		off += RI2N_HDR_LEN + len;
		if (type == RI2N_FT_HELLO) {
			hello_ok = s[off - 12] == 0x52 && s[off - 11] == 0x32 && s[off - 10] == 0x4e &&
				   s[off - 9] == 0x42;
			if (!hello_ok)
				return 1; /* the BTL resets the stream */
			bound = 1;
		}
	}
	return 0;
}

static void run_nudge(const uint8_t *d, size_t n, int keyed)
{
	static const uint8_t key[RN_KEY_LEN] = { 7, 1, 2, 3 };
	uint8_t again[64];
	uint32_t j, v;

	if (rbtl_wire_nudge_read(d, n, keyed ? key : NULL, &j, &v) != 0)
		return;
	FZ_CHECK(rbtl_wire_is_nudge(d, n), "a nudge read that is not shaped like one");
	FZ_CHECK(rbtl_wire_nudge_write(again, sizeof(again), j, v, keyed ? key : NULL) == n &&
			 memcmp(again, d, n) == 0,
		 "a nudge read is not what writing its fields gives (%zu bytes)", n);
	/* a tagged nudge with one bit of its name changed is refused */
	if (keyed) {
		memcpy(again, d, n);
		again[15] ^= 1;
		FZ_CHECK(rbtl_wire_nudge_read(again, n, key, &j, &v) != 0, "a forged nudge accepted");
	}
}

static void run_stream(const uint8_t *data, size_t size)
{
	static bctx x;
	static uint8_t whole[1 << 16];
	static seen ref[MAX_FRAMES];
	size_t off = 1, total = 0;
	int nref, bad, ref_stop, failed = 0;
	int start_bound;

	if (size < 1)
		return;
	start_bound = data[0] & 1;
	memset(&x, 0, sizeof(x));
	x.rx.bound = (uint8_t)start_bound;
	/* after a refusal or a bad hello the BTL resets the stream: nothing more is fed */
	while (off < size && !failed && !x.bad_hello) {
		size_t len = data[off++], pos = 0;
		uint8_t piece[256];

		if (len > size - off)
			len = size - off;
		if (total + len > sizeof(whole))
			break;
		memcpy(piece, data + off, len);
		memcpy(whole + total, data + off, len);
		off += len;
		total += len;
		while (pos < len && !x.bad_hello) {
			const char *why;
			ssize_t used = rbtl_rx_step(&x.rx, piece + pos, len - pos, on_frame, &x, &why);

			if (used < 0) {
				FZ_CHECK(why != NULL, "an error without a reason");
				failed = 1;
				break;
			}
			FZ_CHECK(used > 0 && (size_t)used <= len - pos, "step used %zd of %zu", used,
				 len - pos);
			pos += (size_t)used;
			if (!x.rx.bound)
				FZ_CHECK(x.rx.cap <= RI2N_RX_MIN_BUF,
					 "%zu bytes for a stream that has not said who it is", x.rx.cap);
		}
	}
	ref_stop = reference(whole, total, start_bound, ref, &nref, &bad);
	if (failed)
		FZ_CHECK(bad, "the stream was refused, the plain parser finds it fine");
	else if (!x.bad_hello && !ref_stop)
		FZ_CHECK(!bad, "a malformed header was not refused");
	FZ_CHECK(x.ngot == nref, "%d frames handed over, the plain parser finds %d", x.ngot, nref);
	for (int i = 0; i < nref && i < MAX_FRAMES; i++)
		FZ_CHECK(x.got[i].tag == ref[i].tag && x.got[i].type == ref[i].type &&
				 x.got[i].len == ref[i].len && x.got[i].sum == ref[i].sum,
			 "frame %d differs from the plain parser's", i);
	rbtl_rx_free(&x.rx);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	if (size < 1)
		return 0;
	if (data[0] & 1)
		run_nudge(data + 1, size - 1, (data[0] & 2) != 0);
	else
		run_stream(data + 1, size - 1);
	return 0;
}
