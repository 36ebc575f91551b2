/*
 * fuzz_crypt.c - libFuzzer target: opening a sealed datagram (rn_crypt.c).
 *
 * The input is one datagram offered to the server end of a keyed pair whose
 * keys are fixed (the known-answer values of test_crypt.c: cluster key
 * 00..1f, client id 0x0102030405060708, server id 0x1112131415161718, ISNs
 * 0x21222324 and 0x31323334), so the corpus can hold genuine datagrams for
 * the fuzzer to mutate.  rn_crypt_open must never read or write outside the
 * datagram and an output buffer of exactly the plain size; whatever it
 * accepts must be what the client end seals for that plain datagram at that
 * packet number, byte for byte (anything else is a forgery that passed);
 * and the same input a second time must be refused as a replay.
 */
#include <stdlib.h>
#include <string.h>

#include "fuzz_common.h"
#include "rn_crypt.h"
#include "rn_wire.h"

static void kat_init(rn_crypt *cr, int is_client)
{
	uint8_t key[RN_AEAD_KEY_LEN];

	for (int i = 0; i < RN_AEAD_KEY_LEN; i++)
		key[i] = (uint8_t)i;
	FZ_CHECK(rn_crypt_init(cr, key, is_client, UINT64_C(0x0102030405060708),
			       UINT64_C(0x1112131415161718), 0x21222324, 0x31323334, 0, 0) == 0,
		 "rn_crypt_init failed");
}

/* What the client seals for `plain` (header, body) at packet number (e, n); its length. */
static ssize_t reseal(const uint8_t *plain, size_t len, uint32_t e, uint32_t n, uint8_t *out,
		      size_t cap)
{
	rn_crypt cl;
	ssize_t r;

	kat_init(&cl, 1);
	if (e == 1) { /* the epoch after: force the rekey, then place the counter */
		cl.tx_count = cl.rekey_packets;
		memcpy(out + RN_PN_LEN, plain, len);
		FZ_CHECK(rn_crypt_seal(&cl, 0, out, len, cap) > 0, "rekeying seal failed");
	}
	FZ_CHECK(cl.tx_epoch == e, "epoch %u accepted by a fresh receiver", e);
	cl.tx_count = n;
	memcpy(out + RN_PN_LEN, plain, len);
	r = rn_crypt_seal(&cl, 0, out, len, cap);
	rn_crypt_free(&cl);
	return r;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	rn_crypt sv;
	uint8_t *in, *out, *again;
	size_t cap = size > RN_AEAD_OVERHEAD ? size - RN_AEAD_OVERHEAD : 1;
	ssize_t n;

	if (size > 70000)
		return 0;
	/* exact sizes: ASan sees any overrun */
	in = malloc(size ? size : 1);
	out = malloc(cap);
	again = malloc(size + RN_AEAD_OVERHEAD);
	FZ_CHECK(in && out && again, "out of memory");
	memcpy(in, data, size);
	kat_init(&sv, 0);
	n = rn_crypt_open(&sv, in, size, out, cap);
	FZ_CHECK(n < 0 || (size_t)n == size - RN_AEAD_OVERHEAD, "opened to %zd of %zu bytes", n, size);
	FZ_CHECK(n >= 0 || n == -(1 + RN_DROP_MALFORMED) || n == -(1 + RN_DROP_AUTH) ||
			 n == -(1 + RN_DROP_REPLAY),
		 "open returned %zd", n);
	if (n >= 0) {
		uint32_t e = rn_get32(in + RN_HDR_LEN), c = rn_get32(in + RN_HDR_LEN + 4);
		ssize_t m = reseal(out, (size_t)n, e, c, again, size + RN_AEAD_OVERHEAD);

		FZ_CHECK(m == (ssize_t)size && memcmp(again, in, size) == 0,
			 "accepted a datagram the key holder never sealed (epoch %u counter %u)", e, c);
		FZ_CHECK(rn_crypt_open(&sv, in, size, out, cap) == -(1 + RN_DROP_REPLAY),
			 "the same datagram opened twice");
	}
	rn_crypt_free(&sv);
	free(in);
	free(out);
	free(again);
	return 0;
}
