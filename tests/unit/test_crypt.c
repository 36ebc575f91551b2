/*
 * test_crypt.c - datagram protection under the cluster key: known answers
 * through ri2n's own wrapper (the AEAD, the key schedule, a sealed datagram),
 * packet numbers that never repeat (rails, retransmissions, connections,
 * restarts, rekeys), rekeying by count and by literal timestamps, the replay
 * window, and every forgery refused without changing anything.
 */
#define _GNU_SOURCE /* memmem */
#include <stdio.h>
#include <string.h>

#include "unit_common.h"

#include "rn_conn.h"
#include "rn_crypt.h"
#include "rn_wire.h"
#include "unit_net.h"

static void unhex(uint8_t *out, const char *hex)
{
	for (size_t i = 0; hex[2 * i]; i++) {
		unsigned v;

		assert_int_equal(sscanf(hex + 2 * i, "%2x", &v), 1);
		out[i] = (uint8_t)v;
	}
}

/* ---- known answers ---- */

/* The implementations this build and CPU have: OpenSSL always, ipsec-mb where it is built in. */
static int impls(rn_aead_impl out[2])
{
	rn_aead probe;
	uint8_t key[32] = { 0 };
	int n = 0;

	out[n++] = RN_AEAD_OPENSSL;
	if (rn_aead_init(&probe, key, 32, 1, RN_AEAD_IMB) == 0) {
		out[n++] = RN_AEAD_IMB;
		rn_aead_free(&probe);
	}
	return n;
}

/*
 * McGrew and Viega's GCM test cases 4 (AES-128) and 16 (AES-256): 96-bit IV,
 * 20 bytes of AAD, 60 of plaintext; through each implementation.
 */
static const struct gcm_case {
	size_t key_len;
	const char *key, *ct, *tag;
} GCM_CASES[] = {
	{ 16, "feffe9928665731c6d6a8f9467308308",
	  "42831ec2217774244b7221b784d0d49ce3aa212f2c02a4e035c17e2329aca12e"
	  "21d514b25466931c7d8f6a5aac84aa051ba30b396a0aac973d58e091",
	  "5bc94fbc3221a5db94fae95ae7121a47" },
	{ 32, "feffe9928665731c6d6a8f9467308308feffe9928665731c6d6a8f9467308308",
	  "522dc1f099567d07f47f37a32a84427d643a8cdcbfe5c0c97598a2bd2555d1aa"
	  "8cb08e48590dbb3da7b08b1056828838c5f61e6393ba7a0abcc9f662",
	  "76fc6ece0f4e1768cddf8853bb2d551b" },
};

static void gcm_case(const struct gcm_case *tc, rn_aead_impl impl)
{
	uint8_t key[32], iv[12], aad[20], pt[60], ct[60], want[60], tag[16], want_tag[16], back[60];
	rn_aead enc, dec;

	unhex(key, tc->key);
	unhex(iv, "cafebabefacedbaddecaf888");
	unhex(pt, "d9313225f88406e5a55909c5aff5269a86a7a9531534f7da2e4c303d8a318a72"
		  "1c3c0c95956809532fcf0e2449a6b525b16aedf5aa0de657ba637b39");
	unhex(want, tc->ct);
	unhex(want_tag, tc->tag);
	unhex(aad, "feedfacedeadbeeffeedfacedeadbeefabaddad2");
	assert_int_equal(rn_aead_init(&enc, key, tc->key_len, 1, impl), 0);
	assert_int_equal(rn_aead_init(&dec, key, tc->key_len, 0, impl), 0);
	assert_int_equal(enc.impl, impl);
	assert_int_equal(rn_aead_seal(&enc, iv, aad, sizeof(aad), pt, sizeof(pt), ct, tag), 0);
	assert_memory_equal(ct, want, sizeof(ct));
	assert_memory_equal(tag, want_tag, sizeof(tag));
	assert_int_equal(rn_aead_open(&dec, iv, aad, sizeof(aad), ct, sizeof(ct), back, tag), 0);
	assert_memory_equal(back, pt, sizeof(pt));
	/* one bit anywhere: refused (the tag compare looks at all 16 bytes) */
	ct[59] ^= 1;
	assert_int_equal(rn_aead_open(&dec, iv, aad, sizeof(aad), ct, sizeof(ct), back, tag), -1);
	ct[59] ^= 1;
	aad[0] ^= 1;
	assert_int_equal(rn_aead_open(&dec, iv, aad, sizeof(aad), ct, sizeof(ct), back, tag), -1);
	aad[0] ^= 1;
	for (int b = 0; b < 16; b++) {
		tag[b] ^= 0x80;
		assert_int_equal(rn_aead_open(&dec, iv, aad, sizeof(aad), ct, sizeof(ct), back, tag),
				 -1);
		tag[b] ^= 0x80;
	}
	rn_aead_free(&enc);
	rn_aead_free(&dec);
	/* freed: the key schedule is wiped */
	for (size_t b = 0; b < sizeof(enc.imb_key); b++)
		assert_int_equal(enc.imb_key[b], 0);
	assert_null(enc.evp);
}

static void test_crypt_gcm_vector(void **state)
{
	rn_aead_impl im[2];
	int ni = impls(im);
	rn_aead bad;
	uint8_t key[32] = { 0 };

	(void)state;
	for (int i = 0; i < ni; i++)
		for (size_t c = 0; c < sizeof(GCM_CASES) / sizeof(GCM_CASES[0]); c++)
			gcm_case(&GCM_CASES[c], im[i]);
	/* AES-192 is not one of ours */
	assert_int_equal(rn_aead_init(&bad, key, 24, 1, RN_AEAD_AUTO), -1);
	if (ni < 2)
		print_message("ipsec-mb not built in or no AES-NI: OpenSSL only\n");
}

static uint64_t xs_next(uint64_t *x)
{
	*x ^= *x << 13;
	*x ^= *x >> 7;
	*x ^= *x << 17;
	return *x;
}

/*
 * ipsec-mb and OpenSSL compute the same AEAD (ends built either way talk to
 * each other): for every body length 0..1500 and some up to 64 KiB, AAD of
 * 0..64 bytes or the whole datagram (the integrity-only mode), in place or
 * not, each seals what the other opens, byte for byte and tag for tag; a
 * changed bit in the body, the AAD or the tag is refused by both, and so is
 * another key.
 */
static void impls_agree(size_t klen)
{
	static uint8_t pt[65536], aad[1600], c1[65536], c2[65536], back[65536];
	uint8_t key[32], key2[32], nonce[12], t1[16], t2[16];
	rn_aead ie, id, oe, od, wrong;
	uint64_t x = 0x9e3779b97f4a7c15u;

	for (size_t i = 0; i < sizeof(pt); i++)
		pt[i] = (uint8_t)xs_next(&x);
	for (size_t i = 0; i < sizeof(aad); i++)
		aad[i] = (uint8_t)xs_next(&x);
	for (int i = 0; i < 32; i++) {
		key[i] = (uint8_t)xs_next(&x);
		key2[i] = key[i] ^ (i == (int)klen - 1); /* the last byte of the key */
	}
	assert_int_equal(rn_aead_init(&ie, key, klen, 1, RN_AEAD_IMB), 0);
	assert_int_equal(rn_aead_init(&id, key, klen, 0, RN_AEAD_IMB), 0);
	assert_int_equal(rn_aead_init(&oe, key, klen, 1, RN_AEAD_OPENSSL), 0);
	assert_int_equal(rn_aead_init(&od, key, klen, 0, RN_AEAD_OPENSSL), 0);
	assert_int_equal(rn_aead_init(&wrong, key2, klen, 0, RN_AEAD_IMB), 0);
	for (size_t len = 0; len <= 65536; len += len < 1500 ? 1 : 4093) {
		size_t al = len % 5 == 4 ? 24 + len : len % 65; /* whole datagram as AAD: integrity only */
		const uint8_t *a = al > sizeof(aad) ? pt : aad;
		const uint8_t *in = al > sizeof(aad) ? NULL : pt;
		size_t n = in ? len : 0;

		if (al > sizeof(aad) && al > sizeof(pt))
			continue;
		for (int i = 0; i < 12; i++)
			nonce[i] = (uint8_t)xs_next(&x);
		assert_int_equal(rn_aead_seal(&ie, nonce, a, al, in, n, c1, t1), 0);
		memcpy(c2, pt, n); /* OpenSSL in place */
		assert_int_equal(rn_aead_seal(&oe, nonce, a, al, in ? c2 : NULL, n, c2, t2), 0);
		assert_memory_equal(t1, t2, 16);
		if (n)
			assert_memory_equal(c1, c2, n);
		/* each opens the other's, ipsec-mb in place */
		assert_int_equal(rn_aead_open(&od, nonce, a, al, in ? c1 : NULL, n, back, t1), 0);
		if (n)
			assert_memory_equal(back, pt, n);
		assert_int_equal(rn_aead_open(&id, nonce, a, al, in ? c2 : NULL, n, c2, t2), 0);
		if (n)
			assert_memory_equal(c2, pt, n);
		assert_int_equal(rn_aead_open(&wrong, nonce, a, al, in ? c1 : NULL, n, back, t1), -1);
		/* one bit of the ciphertext, the AAD or the tag */
		if (n) {
			c1[len / 2] ^= 4;
			assert_int_equal(rn_aead_open(&id, nonce, a, al, c1, n, back, t1), -1);
			assert_int_equal(rn_aead_open(&od, nonce, a, al, c1, n, back, t1), -1);
			c1[len / 2] ^= 4;
		}
		if (al && a == aad) {
			aad[al - 1] ^= 1;
			assert_int_equal(rn_aead_open(&id, nonce, a, al, in ? c1 : NULL, n, back, t1), -1);
			assert_int_equal(rn_aead_open(&od, nonce, a, al, in ? c1 : NULL, n, back, t1), -1);
			aad[al - 1] ^= 1;
		}
		t1[len % 16] ^= 0x10;
		assert_int_equal(rn_aead_open(&id, nonce, a, al, in ? c1 : NULL, n, back, t1), -1);
		assert_int_equal(rn_aead_open(&od, nonce, a, al, in ? c1 : NULL, n, back, t1), -1);
	}
	/* a rekeyed ipsec-mb context is the new key's */
	assert_int_equal(rn_aead_rekey(&ie, key2, 1), 0);
	nonce[0] ^= 1;
	assert_int_equal(rn_aead_seal(&ie, nonce, aad, 32, pt, 1416, c1, t1), 0);
	assert_int_equal(rn_aead_open(&wrong, nonce, aad, 32, c1, 1416, back, t1), 0);
	assert_memory_equal(back, pt, 1416);
	assert_int_equal(rn_aead_open(&id, nonce, aad, 32, c1, 1416, back, t1), -1);
	rn_aead_free(&ie);
	rn_aead_free(&id);
	rn_aead_free(&oe);
	rn_aead_free(&od);
	rn_aead_free(&wrong);
}

static void test_crypt_impls_agree(void **state)
{
	rn_aead_impl im[2];

	(void)state;
	if (impls(im) < 2)
		skip();
	impls_agree(RN_AEAD_KEY128_LEN);
	impls_agree(RN_AEAD_KEY_LEN);
}

/*
 * The key schedule and sealed datagrams, computed independently (Python's
 * cryptography: HKDF-SHA256 and AESGCM) from cluster key 00..1f, client id
 * 0x0102030405060708, server id 0x1112131415161718, ISNs 0x21222324 and
 * 0x31323334; header bytes 00..17, body "ri2n known answer"; for AES-128
 * (the default) and AES-256 (RN_CRYPT_AES256).
 */
static const struct kat {
	unsigned mode;
	const char *c2s, *s2c, *iv_c2s;
	const char *dgram0, *dgram1; /* epoch 0 counter 0; epoch 1 counter 5 */
} KATS[] = {
	{ 0, "d0a4e1bb0aa465611bdea3f083e62f232867fbf810b52414758b6d5bc0b0ae9f",
	  "4cb0388026cc70534beee04a9de7aef133aafd2c347f243f1ba520b08394c87c",
	  "191bf64d5bc2a8c29e47d0ee",
	  "000102030405060708090a0b0c0d0e0f1011121314151617" "0000000000000000"
	  "132d5a1e035d7c918b00852d163d2e9d967bd83343b161c3ff585777e79e62bb33",
	  "000102030405060708090a0b0c0d0e0f1011121314151617" "0000000100000005"
	  "4f612f7cad58b1a619429e33590e6fa78fa0a3d02fcb9c02f75e5bfc4b32d9ba7d" },
	{ RN_CRYPT_AES256, "e3bc31bc89e4c20a31b8b2473d45d969ee5cf1cd3a5197e919a4f1f2c4d045f2",
	  "b58ecdf6c9f4f887d5b83406b38adbd1a0b8d4bbbdf8f64afdbacadaf5a7734c",
	  "a9ecbb87ee7c03cc6ffd1cb1",
	  "000102030405060708090a0b0c0d0e0f1011121314151617" "0000000000000000"
	  "da27b7c09ea2b427d65d63ee9a4c367bfae07cdc4ebbc2e6538fcb1e194d2ee6c7",
	  "000102030405060708090a0b0c0d0e0f1011121314151617" "0000000100000005"
	  "81ba4c2738e5505f604711944017800f58afc6d938782dd76f039d0722305c755f" },
};

static void kat_init_mode(rn_crypt *cr, int is_client, unsigned mode)
{
	uint8_t key[32];

	for (int i = 0; i < 32; i++)
		key[i] = (uint8_t)i;
	assert_int_equal(rn_crypt_init(cr, key, is_client, UINT64_C(0x0102030405060708),
				       UINT64_C(0x1112131415161718), 0x21222324, 0x31323334, mode,
				       0),
			 0);
	assert_int_equal(cr->tx.impl, rn_aead_default()); /* the group's implementation */
	assert_int_equal(cr->rx[0].aead.impl, rn_aead_default());
}

static void kat_init(rn_crypt *cr, int is_client)
{
	kat_init_mode(cr, is_client, 0);
}

/* Seals body under cr at now: header bytes 00..17 */
static ssize_t seal_body(rn_crypt *cr, uint64_t now, uint8_t *buf, size_t cap, const void *body,
			 size_t len)
{
	for (int i = 0; i < RN_HDR_LEN; i++)
		buf[RN_PN_LEN + i] = (uint8_t)i;
	memcpy(buf + RN_PN_LEN + RN_HDR_LEN, body, len);
	return rn_crypt_seal(cr, now, buf, RN_HDR_LEN + len, cap);
}

static void schedule_vector(const struct kat *k)
{
	rn_crypt cl, sv;
	uint8_t want[128], buf[128], out[128];
	ssize_t n;

	kat_init_mode(&cl, 1, k->mode);
	kat_init_mode(&sv, 0, k->mode);
	assert_int_equal(cl.tx.key_len, k->mode & RN_CRYPT_AES256 ? 32 : 16);
	unhex(want, k->c2s);
	assert_memory_equal(cl.tx_secret, want, 32);
	assert_memory_equal(sv.rx_secret, want, 32);
	unhex(want, k->s2c);
	assert_memory_equal(cl.rx_secret, want, 32);
	assert_memory_equal(sv.tx_secret, want, 32);
	unhex(want, k->iv_c2s);
	assert_memory_equal(cl.tx_iv, want, 12);
	assert_memory_equal(sv.rx_iv, want, 12);

	n = seal_body(&cl, 0, buf, sizeof(buf), "ri2n known answer", 17);
	assert_int_equal(n, (ssize_t)strlen(k->dgram0) / 2);
	unhex(want, k->dgram0);
	assert_memory_equal(buf, want, (size_t)n);
	assert_int_equal(rn_crypt_open(&sv, buf, (size_t)n, out, sizeof(out)), RN_HDR_LEN + 17);
	assert_memory_equal(out + RN_HDR_LEN, "ri2n known answer", 17);

	/* epoch 1, counter 5 (the sender's state set by hand) */
	cl.tx_count = cl.rekey_packets;
	n = seal_body(&cl, 1, buf, sizeof(buf), "ri2n known answer", 17);
	assert_int_equal(cl.tx_epoch, 1);
	cl.tx_count = 5;
	n = seal_body(&cl, 1, buf, sizeof(buf), "ri2n known answer", 17);
	unhex(want, k->dgram1);
	assert_memory_equal(buf, want, (size_t)n);
	assert_int_equal(rn_crypt_open(&sv, buf, (size_t)n, out, sizeof(out)), RN_HDR_LEN + 17);
	rn_crypt_free(&cl);
	rn_crypt_free(&sv);
}

static void test_crypt_schedule_vector(void **state)
{
	(void)state;
	for (size_t i = 0; i < sizeof(KATS) / sizeof(KATS[0]); i++)
		schedule_vector(&KATS[i]);
}

/* ---- packet numbers, rekeying, replay ---- */

/* Sealing n datagrams never repeats a packet number, and each opens once. */
static void test_crypt_rekey_by_count(void **state)
{
	rn_crypt cl, sv;
	uint8_t buf[128], out[128], last[8] = { 0 };
	ssize_t n;

	(void)state;
	kat_init(&cl, 1);
	kat_init(&sv, 0);
	cl.rekey_packets = 100;
	for (int i = 0; i < 1000; i++) {
		n = seal_body(&cl, 0, buf, sizeof(buf), &i, sizeof(i));
		assert_true(n > 0);
		/* strictly increasing (epoch, counter): never one twice */
		if (i)
			assert_true(memcmp(buf + RN_HDR_LEN, last, 8) > 0);
		memcpy(last, buf + RN_HDR_LEN, 8);
		assert_int_equal(rn_crypt_open(&sv, buf, (size_t)n, out, sizeof(out)),
				 RN_HDR_LEN + (ssize_t)sizeof(i));
		assert_memory_equal(out + RN_HDR_LEN, &i, sizeof(i));
		/* a second copy: a replay */
		assert_int_equal(rn_crypt_open(&sv, buf, (size_t)n, out, sizeof(out)),
				 -(1 + RN_DROP_REPLAY));
	}
	assert_int_equal(cl.tx_epoch, 9);
	assert_int_equal(cl.tx_rekeys, 9);
	assert_int_equal(sv.rx_epoch, 9);
	rn_crypt_free(&cl);
	rn_crypt_free(&sv);
}

/* Rekeying by time, at literal timestamps; late datagrams of the epoch before still open. */
static void test_crypt_rekey_by_time(void **state)
{
	const uint64_t S = UINT64_C(1000000000);
	rn_crypt cl, sv;
	uint8_t a[128], b[128], c[128], d[128], out[128];
	ssize_t na, nb, nc, nd;

	(void)state;
	kat_init(&cl, 1);
	kat_init(&sv, 0);
	na = seal_body(&cl, 0, a, sizeof(a), "a", 1);
	nb = seal_body(&cl, 119 * S, b, sizeof(b), "b", 1);
	assert_int_equal(cl.tx_epoch, 0);
	nc = seal_body(&cl, 120 * S, c, sizeof(c), "c", 1); /* RN_REKEY_NS after the start */
	assert_int_equal(cl.tx_epoch, 1);
	assert_int_equal(rn_get32(c + RN_HDR_LEN), 1);
	assert_int_equal(rn_get32(c + RN_HDR_LEN + 4), 0);
	nd = seal_body(&cl, 239 * S, d, sizeof(d), "d", 1);
	assert_int_equal(cl.tx_epoch, 1);
	/* the new epoch first, then the old one's late datagrams */
	assert_int_equal(rn_crypt_open(&sv, c, (size_t)nc, out, sizeof(out)), RN_HDR_LEN + 1);
	assert_int_equal(sv.rx_epoch, 1);
	assert_int_equal(rn_crypt_open(&sv, a, (size_t)na, out, sizeof(out)), RN_HDR_LEN + 1);
	assert_int_equal(rn_crypt_open(&sv, b, (size_t)nb, out, sizeof(out)), RN_HDR_LEN + 1);
	assert_int_equal(rn_crypt_open(&sv, d, (size_t)nd, out, sizeof(out)), RN_HDR_LEN + 1);
	/* epoch 2 begins at 240 s; then epoch 0's datagrams are too old to keep a key for */
	nd = seal_body(&cl, 240 * S, d, sizeof(d), "e", 1);
	assert_int_equal(cl.tx_epoch, 2);
	assert_int_equal(rn_crypt_open(&sv, d, (size_t)nd, out, sizeof(out)), RN_HDR_LEN + 1);
	assert_int_equal(rn_crypt_open(&sv, a, (size_t)na, out, sizeof(out)), -(1 + RN_DROP_AUTH));
	/* an epoch two ahead (nobody sealed it) is refused before any key is made for it */
	rn_put32(d + RN_HDR_LEN, 4);
	assert_int_equal(rn_crypt_open(&sv, d, (size_t)nd, out, sizeof(out)), -(1 + RN_DROP_AUTH));
	assert_int_equal(sv.rx_epoch, 2);
	rn_crypt_free(&cl);
	rn_crypt_free(&sv);
}

/* Reordering within the window opens; older than the window is a replay. */
static void test_crypt_window(void **state)
{
	rn_crypt cl, sv;
	static uint8_t saved[RN_CRYPT_WINDOW + 2][64];
	ssize_t len[RN_CRYPT_WINDOW + 2];
	uint8_t out[64];

	(void)state;
	kat_init(&cl, 1);
	kat_init(&sv, 0);
	for (int i = 0; i < RN_CRYPT_WINDOW + 2; i++)
		len[i] = seal_body(&cl, 0, saved[i], sizeof(saved[i]), "x", 1);
	/* newest first (top = WINDOW + 2), then the rest backwards down to the window's edge */
	assert_int_equal(rn_crypt_open(&sv, saved[RN_CRYPT_WINDOW + 1], (size_t)len[RN_CRYPT_WINDOW + 1],
				       out, sizeof(out)), RN_HDR_LEN + 1);
	for (int i = RN_CRYPT_WINDOW; i >= 2; i--)
		assert_int_equal(rn_crypt_open(&sv, saved[i], (size_t)len[i], out, sizeof(out)),
				 RN_HDR_LEN + 1);
	/* counters 1 and 0 are more than WINDOW behind: refused as replays, unopened */
	for (int i = 1; i >= 0; i--)
		assert_int_equal(rn_crypt_open(&sv, saved[i], (size_t)len[i], out, sizeof(out)),
				 -(1 + RN_DROP_REPLAY));
	/* and every one opened is refused a second time */
	for (int i = 2; i < RN_CRYPT_WINDOW + 2; i += 997)
		assert_int_equal(rn_crypt_open(&sv, saved[i], (size_t)len[i], out, sizeof(out)),
				 -(1 + RN_DROP_REPLAY));
	rn_crypt_free(&cl);
	rn_crypt_free(&sv);
}

/* Every byte of a sealed datagram is covered; a forgery changes nothing (the real one still opens). */
static void test_crypt_forgery(void **state)
{
	rn_crypt cl, sv, other;
	uint8_t buf[128], bad[128], out[128], key[32];
	ssize_t n;

	(void)state;
	kat_init(&cl, 1);
	kat_init(&sv, 0);
	n = seal_body(&cl, 0, buf, sizeof(buf), "payload!", 8);
	for (ssize_t i = 0; i < n; i++) {
		memcpy(bad, buf, (size_t)n);
		bad[i] ^= 0x40;
		assert_true(rn_crypt_open(&sv, bad, (size_t)n, out, sizeof(out)) < 0);
	}
	assert_int_equal(rn_crypt_open(&sv, buf, (size_t)n - 1, out, sizeof(out)), -(1 + RN_DROP_AUTH));
	assert_int_equal(rn_crypt_open(&sv, buf, 30, out, sizeof(out)), -(1 + RN_DROP_MALFORMED));
	/* the payload is not on the wire in clear */
	assert_null(memmem(buf, (size_t)n, "payload!", 8));
	/* another connection (other ids) under the same cluster key: refused */
	for (int i = 0; i < 32; i++)
		key[i] = (uint8_t)i;
	assert_int_equal(rn_crypt_init(&other, key, 0, UINT64_C(0x0102030405060708),
				       UINT64_C(0x1112131415161719), 0x21222324, 0x31323334, 0, 0),
			 0);
	assert_int_equal(rn_crypt_open(&other, buf, (size_t)n, out, sizeof(out)), -(1 + RN_DROP_AUTH));
	/* the integrity-only mode derives other keys: ends that disagree cannot talk */
	rn_crypt_free(&other);
	assert_int_equal(rn_crypt_init(&other, key, 0, UINT64_C(0x0102030405060708),
				       UINT64_C(0x1112131415161718), 0x21222324, 0x31323334, 1, 0),
			 0);
	assert_int_equal(rn_crypt_open(&other, buf, (size_t)n, out, sizeof(out)), -(1 + RN_DROP_AUTH));
	rn_crypt_free(&other);
	/* so does AES-256 (RI2N_KEY_AES256 at one end only) */
	assert_int_equal(rn_crypt_init(&other, key, 0, UINT64_C(0x0102030405060708),
				       UINT64_C(0x1112131415161718), 0x21222324, 0x31323334,
				       RN_CRYPT_AES256, 0),
			 0);
	assert_int_equal(rn_crypt_open(&other, buf, (size_t)n, out, sizeof(out)), -(1 + RN_DROP_AUTH));
	rn_crypt_free(&other);
	/* after all that, the genuine datagram opens */
	assert_int_equal(rn_crypt_open(&sv, buf, (size_t)n, out, sizeof(out)), RN_HDR_LEN + 8);
	assert_memory_equal(out + RN_HDR_LEN, "payload!", 8);
	rn_crypt_free(&cl);
	rn_crypt_free(&sv);
}

/* Integrity only: the payload travels in clear, and is still covered by the tag. */
static void test_crypt_auth_only(void **state)
{
	rn_crypt cl, sv;
	uint8_t buf[128], out[128], key[32];
	ssize_t n;

	(void)state;
	for (int i = 0; i < 32; i++)
		key[i] = (uint8_t)i;
	assert_int_equal(rn_crypt_init(&cl, key, 1, 1, 2, 3, 4, 1, 0), 0);
	assert_int_equal(rn_crypt_init(&sv, key, 0, 1, 2, 3, 4, 1, 0), 0);
	n = seal_body(&cl, 0, buf, sizeof(buf), "payload!", 8);
	assert_non_null(memmem(buf, (size_t)n, "payload!", 8));
	buf[RN_HDR_LEN + RN_PN_LEN] ^= 1;
	assert_int_equal(rn_crypt_open(&sv, buf, (size_t)n, out, sizeof(out)), -(1 + RN_DROP_AUTH));
	buf[RN_HDR_LEN + RN_PN_LEN] ^= 1;
	assert_int_equal(rn_crypt_open(&sv, buf, (size_t)n, out, sizeof(out)), RN_HDR_LEN + 8);
	assert_memory_equal(out + RN_HDR_LEN, "payload!", 8);
	rn_crypt_free(&cl);
	rn_crypt_free(&sv);
}

/* ---- through two connections ---- */

/* Every sealed datagram's (side, packet number); every 10th DATA dropped. */
typedef struct tap {
	uint64_t pn[1 << 16];
	size_t n;
	unsigned data;
} tap;

static int tap_filter(un_net *n, const un_rec *r, void *arg)
{
	tap *t = arg;

	(void)n;
	if (!r->sealed)
		return 0;
	assert_true(t->n < sizeof(t->pn) / sizeof(*t->pn));
	t->pn[t->n++] = (uint64_t)r->from << 63 | r->pn;
	return r->type == RN_PT_DATA && ++t->data % 10 == 0;
}

static int cmp_u64(const void *a, const void *b)
{
	uint64_t x = *(const uint64_t *)a, y = *(const uint64_t *)b;

	return x < y ? -1 : x > y;
}

/*
 * Two keyed connections over 2 rails, a stream each way with every 10th
 * DATA datagram lost: every datagram on the wire carries a packet number no
 * other of its direction had (both rails, retransmissions included), every
 * byte arrives; the second connection (a restart: new randomness) has other
 * keys, so its packet numbers, which start again at 0, meet other keys.
 */
static void test_crypt_conn_nonces(void **state)
{
	static tap t;
	uint8_t first_secret[RN_AEAD_KEY_LEN];

	(void)state;
	for (int round = 0; round < 2; round++) {
		un_net *n = un_new(2);
		uint64_t te;
		const uint64_t bytes = 3000000;

		memset(&t, 0, sizeof(t));
		for (int s = 0; s < 2; s++) {
			n->side[s].cfg.keyed = 1;
			memset(n->side[s].cfg.key, 0x5a, RN_KEY_LEN);
			n->side[s].rng.state += (uint64_t)round * 7919;
		}
		te = un_handshake(n, UT_T0);
		n->filter = tap_filter;
		n->filter_arg = &t;
		for (int s = 0; s < 2; s++) {
			n->side[s].to_send = bytes;
			n->side[s].reading = 1;
			n->side[s].shut_when_done = 1;
		}
		un_run(n, te + 5 * UT_S);
		for (int s = 0; s < 2; s++) {
			rn_conn_stats st;

			assert_int_equal(n->side[s].recvd, bytes);
			assert_int_equal(n->side[s].mismatches, 0);
			rn_conn_get_stats(n->side[s].c, &st);
			assert_true(st.retransmits > 0);
			assert_int_equal(st.drops[RN_DROP_AUTH], 0);
		}
		assert_true(t.n > 4000);
		qsort(t.pn, t.n, sizeof(*t.pn), cmp_u64);
		for (size_t i = 1; i < t.n; i++)
			assert_true(t.pn[i] != t.pn[i - 1]);
		if (round == 0)
			memcpy(first_secret, n->side[UN_CLIENT].c->cr->tx_secret, RN_AEAD_KEY_LEN);
		else
			assert_memory_not_equal(first_secret, n->side[UN_CLIENT].c->cr->tx_secret,
						RN_AEAD_KEY_LEN);
		un_del(n);
	}
}

static int use_openssl(void **state)
{
	(void)state;
	return rn_aead_prefer(RN_AEAD_OPENSSL);
}

static int use_imb(void **state)
{
	rn_aead_impl im[2];

	(void)state;
	if (impls(im) < 2) {
		print_message("ipsec-mb not built in or no AES-NI: its group is skipped\n");
		return -1;
	}
	return rn_aead_prefer(RN_AEAD_IMB);
}

static int use_auto(void **state)
{
	(void)state;
	return rn_aead_prefer(RN_AEAD_AUTO);
}

int main(void)
{
	const struct CMUnitTest aead[] = {
		cmocka_unit_test(test_crypt_gcm_vector),
		cmocka_unit_test(test_crypt_impls_agree),
	};
	/* rn_crypt under each implementation: the same known answers and behaviour */
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_crypt_schedule_vector),
		cmocka_unit_test(test_crypt_rekey_by_count),
		cmocka_unit_test(test_crypt_rekey_by_time),
		cmocka_unit_test(test_crypt_window),
		cmocka_unit_test(test_crypt_forgery),
		cmocka_unit_test(test_crypt_auth_only),
		cmocka_unit_test(test_crypt_conn_nonces),
	};
	rn_aead_impl im[2];
	int fails = cmocka_run_group_tests_name("aead", aead, NULL, NULL);

	fails += cmocka_run_group_tests_name("crypt_openssl", tests, use_openssl, use_auto);
	if (impls(im) == 2)
		fails += cmocka_run_group_tests_name("crypt_ipsec_mb", tests, use_imb, use_auto);
	return fails;
}
