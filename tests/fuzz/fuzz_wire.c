/*
 * fuzz_wire.c - libFuzzer target: the datagram parser (rn_wire.c).
 *
 * The input is one datagram.  rn_wire_decode must never read outside it;
 * when it accepts, every pointer it returns lies inside the datagram, the
 * SACK words read back in bounds, and rn_wire_encode of the decoded fields
 * gives back the same bytes exactly (the format has no slack: a decoder
 * that accepts two encodings of one packet would show here).  The payload,
 * and the input itself, also go through rn_wire_read_hello with and
 * without a cookie: on success its fields are in range and
 * rn_wire_write_hello gives back the bytes it read.
 */
#include <stdlib.h>
#include <string.h>

#include "fuzz_common.h"
#include "rn_wire.h"

/* Every buffer is exactly as long as its content: ASan sees any overrun. */
static uint8_t *dup_exact(const uint8_t *data, size_t len)
{
	uint8_t *b = malloc(len ? len : 1);

	FZ_CHECK(b, "out of memory");
	memcpy(b, data, len);
	return b;
}

static int inside(const uint8_t *p, size_t n, const uint8_t *buf, size_t len)
{
	return p >= buf && p <= buf + len && n <= (size_t)(buf + len - p);
}

static void check_hello(const uint8_t *buf, size_t len, int with_cookie)
{
	rn_hello h;
	uint8_t *out;
	ssize_t n;
	size_t rails_len = 0;

	if (rn_wire_read_hello(&h, buf, len, with_cookie) != 0)
		return;
	FZ_CHECK(h.id != 0 && h.nrails >= 1 && h.nrails <= RN_MAX_RAILS,
		 "hello accepted with id %#llx and %u rails", (unsigned long long)h.id, h.nrails);
	FZ_CHECK(h.slots >= RN_MIN_SLOTS && h.slots <= RN_MAX_SLOTS && !(h.slots & (h.slots - 1)),
		 "hello accepted with %u slots", h.slots);
	FZ_CHECK(h.max_dgram >= RN_MIN_DGRAM && h.max_dgram <= RN_MAX_DGRAM,
		 "hello accepted with max_dgram %u", h.max_dgram);
	for (unsigned i = 0; i < h.nrails; i++) {
		FZ_CHECK(h.rails[i].v6 ? h.rails[i].ip == 0 && h.rails[i].prefix <= 128
				       : h.rails[i].ip && h.rails[i].prefix <= 32,
			 "hello rail %u accepted as %#x/%u (v6 %u)", i, h.rails[i].ip,
			 h.rails[i].prefix, h.rails[i].v6);
		FZ_CHECK(h.rails[i].port && h.rails[i].prefix >= 1 &&
					 rn_addr_rail_valid(&h.rails[i]),
			 "hello rail %u accepted with port %u, prefix %u", i, h.rails[i].port,
			 h.rails[i].prefix);
		rails_len += rn_wire_rail_len(&h.rails[i]);
	}
	FZ_CHECK(h.raw == buf && h.raw_len == RN_HELLO_FIXED + rails_len,
		 "hello raw part is %zu bytes for %u rails", h.raw_len, h.nrails);
	if (with_cookie) {
		FZ_CHECK(h.cookie == buf + h.raw_len && h.raw_len + RN_COOKIE_LEN == len,
			 "cookie at offset %td of %zu", h.cookie - buf, len);
	} else {
		FZ_CHECK(h.cookie == NULL && h.raw_len <= len, "INIT hello with a cookie");
		for (size_t i = h.raw_len; i < len; i++)
			FZ_CHECK(buf[i] == 0, "INIT hello accepted with padding byte %zu = %u", i, buf[i]);
	}
	/* what was read writes back the same */
	n = (ssize_t)(h.raw_len + (with_cookie ? RN_COOKIE_LEN : 0));
	out = malloc((size_t)n);
	FZ_CHECK(out, "out of memory");
	FZ_CHECK(rn_wire_write_hello(out, (size_t)n, &h, h.cookie) == n, "hello re-encode length");
	FZ_CHECK(memcmp(out, buf, (size_t)n) == 0, "hello does not re-encode to its bytes");
	FZ_CHECK(rn_wire_write_hello(out, (size_t)n - 1, &h, h.cookie) == RN_ERR_NOBUF,
		 "rn_wire_write_hello wrote past its buffer");
	free(out);
}

static void check_packet(const rn_pkt *p, const uint8_t *buf, size_t len)
{
	uint64_t words[RN_MAX_SACK_WORDS];
	int has_ack = (p->flags & RN_F_ACK) != 0;
	rn_hdr h = { .type = p->type, .flags = p->flags, .path = p->path, .dst = p->dst,
		     .seq = p->seq, .ts = p->ts };
	rn_ackblk ab = { .ack = p->ack, .wnd = p->wnd, .ts_echo = p->ts_echo, .ts_rx = p->ts_rx,
			 .echo_path = p->echo_path, .nwords = p->nwords, .words = words };
	uint8_t *out;
	ssize_t n;

	FZ_CHECK(p->type >= 1 && p->type <= RN_PT__MAX && !(p->flags & ~RN_F__ALL),
		 "accepted type %u flags %#x", p->type, p->flags);
	FZ_CHECK(inside(p->payload, p->len, buf, len) && p->payload + p->len == buf + len,
		 "payload of %u bytes outside the datagram", p->len);
	FZ_CHECK(len == rn_wire_size(has_ack, p->nwords, p->len),
		 "datagram of %zu bytes decoded as ack %d, %u words, %u payload", len, has_ack,
		 p->nwords, p->len);
	if (has_ack) {
		FZ_CHECK(p->nwords <= RN_MAX_SACK_WORDS && inside(p->sack, 8u * p->nwords, buf, len),
			 "%u SACK words outside the datagram", p->nwords);
	} else {
		FZ_CHECK(p->nwords == 0, "SACK words without an ACK block");
	}
	for (unsigned i = 0; i < p->nwords; i++) {
		words[i] = rn_wire_sack_word(p, i);
		FZ_CHECK(words[i] == rn_get64(p->sack + 8u * i), "SACK word %u misread", i);
	}
	FZ_CHECK(rn_wire_sack_word(p, p->nwords) == 0 && rn_wire_sack_word(p, UINT32_MAX) == 0,
		 "SACK word past the last one is not 0");
	FZ_CHECK(rn_wire_peek_dst(buf, len) == p->dst, "peek_dst disagrees with decode");

	/* round trip */
	out = malloc(len);
	FZ_CHECK(out, "out of memory");
	n = rn_wire_encode(out, len, &h, has_ack ? &ab : NULL, p->payload, p->len);
	FZ_CHECK(n == (ssize_t)len, "re-encoded to %zd bytes, decoded %zu", n, len);
	FZ_CHECK(memcmp(out, buf, len) == 0, "re-encoding differs from the datagram");
	FZ_CHECK(rn_wire_encode(out, len - 1, &h, has_ack ? &ab : NULL, p->payload, p->len) ==
			 RN_ERR_NOBUF,
		 "rn_wire_encode wrote past its buffer");
	free(out);

	if (p->len) {
		uint8_t *pl = dup_exact(p->payload, p->len);

		check_hello(pl, p->len, 0);
		check_hello(pl, p->len, 1);
		free(pl);
	}
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	uint8_t *buf = dup_exact(data, size);
	rn_pkt p;
	int rc = rn_wire_decode(&p, buf, size);

	FZ_CHECK(rc == 0 || (rc < 0 && -rc - 1 < RN_DROP__COUNT), "rn_wire_decode returned %d", rc);
	if (rc == 0)
		check_packet(&p, buf, size);
	else
		FZ_CHECK(size < RN_HDR_LEN || rn_wire_peek_dst(buf, size) == rn_get64(buf + 4),
			 "peek_dst misread");
	/* the hello parser on its own, without a valid header in front */
	check_hello(buf, size, 0);
	check_hello(buf, size, 1);
	free(buf);
	return 0;
}
