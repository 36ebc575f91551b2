/*
 * rn_crypt.c - AES-256-GCM per datagram, HKDF key schedule, epochs and the
 * replay window (rn_crypt.h says what and why).
 *
 * OpenSSL allocates inside rn_aead_init (its implementation only) and
 * rn_hkdf, which run when a connection is set up and once per epoch
 * (RN_REKEY_PACKETS datagrams or RN_REKEY_NS), and ipsec-mb once per process
 * (imb_usable); sealing and opening a datagram allocate nothing.
 */
#include <string.h>

#include <openssl/core_names.h>
#include <openssl/evp.h>
#include <openssl/kdf.h>
#include <sodium/utils.h>
#ifdef RN_HAVE_IPSEC_MB
#include <intel-ipsec-mb.h>
#endif

#include "rn_core.h"
#include "rn_crypt.h"
#include "rn_wire.h"

#define BAD(reason) (-(1 + (int)(reason)))

/* ---- the AEAD ---- */

/*
 * ipsec-mb: its manager finds the CPU's best code once (VAES and VPCLMULQDQ
 * on AVX-512 machines, AVX2 or SSE otherwise); we keep the three functions
 * and free the manager (200 KB of multi-buffer state we do not use).  The
 * direct GCM functions take no manager and keep no state of their own.
 * Racing first calls compute the same values; the atomics keep that defined.
 */
#ifdef RN_HAVE_IPSEC_MB
_Static_assert(sizeof(struct gcm_key_data) <= RN_AEAD_IMB_LEN, "RN_AEAD_IMB_LEN too small");

/* [0] AES-128, [1] AES-256 */
static aes_gcm_pre_t g_imb_pre[2];
static aes_gcm_enc_dec_t g_imb_enc[2], g_imb_dec[2];
static int g_imb_state; /* 0 not looked yet, 1 usable, -1 not */

static int imb_usable(void)
{
	int st = __atomic_load_n(&g_imb_state, __ATOMIC_ACQUIRE);
	IMB_MGR *m;
	IMB_ARCH arch = IMB_ARCH_NONE;

	if (st)
		return st > 0;
	m = alloc_mb_mgr(0);
	st = -1;
	if (m) {
		init_mb_mgr_auto(m, &arch);
		if (arch >= IMB_ARCH_SSE && (m->features & IMB_FEATURE_AESNI) && m->gcm128_pre &&
		    m->gcm128_enc && m->gcm128_dec && m->gcm256_pre && m->gcm256_enc &&
		    m->gcm256_dec) {
			__atomic_store_n(&g_imb_pre[0], m->gcm128_pre, __ATOMIC_RELAXED);
			__atomic_store_n(&g_imb_enc[0], m->gcm128_enc, __ATOMIC_RELAXED);
			__atomic_store_n(&g_imb_dec[0], m->gcm128_dec, __ATOMIC_RELAXED);
			__atomic_store_n(&g_imb_pre[1], m->gcm256_pre, __ATOMIC_RELAXED);
			__atomic_store_n(&g_imb_enc[1], m->gcm256_enc, __ATOMIC_RELAXED);
			__atomic_store_n(&g_imb_dec[1], m->gcm256_dec, __ATOMIC_RELAXED);
			st = 1;
		}
		free_mb_mgr(m);
	}
	__atomic_store_n(&g_imb_state, st, __ATOMIC_RELEASE);
	return st > 0;
}
#else
static int imb_usable(void)
{
	return 0;
}
#endif

static rn_aead_impl g_prefer = RN_AEAD_AUTO;

rn_aead_impl rn_aead_default(void)
{
	rn_aead_impl p = __atomic_load_n(&g_prefer, __ATOMIC_RELAXED);

	if (p != RN_AEAD_AUTO)
		return p;
	return imb_usable() ? RN_AEAD_IMB : RN_AEAD_OPENSSL;
}

int rn_aead_prefer(rn_aead_impl impl)
{
	if (impl == RN_AEAD_IMB && !imb_usable())
		return -1;
	__atomic_store_n(&g_prefer, impl, __ATOMIC_RELAXED);
	return 0;
}

int rn_aead_init(rn_aead *a, const uint8_t *key, size_t key_len, int enc, rn_aead_impl impl)
{
	memset(a, 0, sizeof(*a));
	if (key_len != RN_AEAD_KEY128_LEN && key_len != RN_AEAD_KEY_LEN)
		return -1;
	if (impl == RN_AEAD_AUTO)
		impl = rn_aead_default();
	if (impl == RN_AEAD_IMB && (!imb_usable() || ((uintptr_t)a->imb_key & 15)))
		return -1; /* the second: an allocator that does not align as malloc does */
	a->key_len = (uint8_t)key_len;
	if (impl == RN_AEAD_OPENSSL) {
		EVP_CIPHER_CTX *ctx = EVP_CIPHER_CTX_new();
		const EVP_CIPHER *aes = key_len == RN_AEAD_KEY_LEN ? EVP_aes_256_gcm()
								    : EVP_aes_128_gcm();

		if (!ctx || EVP_CipherInit_ex(ctx, aes, NULL, key, NULL, enc) != 1) {
			EVP_CIPHER_CTX_free(ctx);
			return -1;
		}
		a->evp = ctx;
	}
	a->impl = (uint8_t)impl;
	return impl == RN_AEAD_IMB ? rn_aead_rekey(a, key, enc) : 0;
}

/* ipsec-mb's functions for a's key length: [0] AES-128, [1] AES-256 */
#define IMB_BITS(a) ((a)->key_len == RN_AEAD_KEY_LEN)

int rn_aead_rekey(rn_aead *a, const uint8_t *key, int enc)
{
#ifdef RN_HAVE_IPSEC_MB
	if (a->impl == RN_AEAD_IMB) {
		__atomic_load_n(&g_imb_pre[IMB_BITS(a)], __ATOMIC_RELAXED)(
			key, (struct gcm_key_data *)a->imb_key);
		return 0;
	}
#endif
	return EVP_CipherInit_ex(a->evp, NULL, NULL, key, NULL, enc) == 1 ? 0 : -1;
}

void rn_aead_free(rn_aead *a)
{
	EVP_CIPHER_CTX_free(a->evp); /* cleanses the key schedule */
	sodium_memzero(a, sizeof(*a));
}

#ifdef RN_HAVE_IPSEC_MB
/*
 * One call per datagram, no dispatch layer: 113 ns for 1416 bytes and 32 of
 * AAD on the bench machine (VAES), against 378 through EVP.  A dummy
 * address stands for NULL buffers of 0 bytes, so that no parameter check of
 * the library (its SAFE_PARAM builds) can trip on them.
 * The context holds the GHASH state and the last keystream block, never the
 * key; it lives on the stack of one call.
 */
static void imb_gcm(aes_gcm_enc_dec_t fn, const rn_aead *a, const uint8_t *nonce,
		    const uint8_t *aad, size_t aad_len, const uint8_t *in, size_t len, uint8_t *out,
		    uint8_t *tag)
{
	struct gcm_context_data ctx;
	uint8_t none[16];

	fn((const struct gcm_key_data *)a->imb_key, &ctx, out ? out : none, in ? in : none, len,
	   nonce, aad ? aad : none, aad_len, tag, RN_AEAD_TAG_LEN);
}
#endif

/*
 * OpenSSL, per datagram: the _ex2 init and the tag as an OSSL_PARAM are
 * OpenSSL 3's direct paths (EVP_EncryptInit_ex and the GCM ctrl go through
 * conversion layers): 6% less time per 1448-byte datagram, 25 of about 400 ns.
 */
int rn_aead_seal(rn_aead *a, const uint8_t nonce[RN_AEAD_NONCE_LEN], const uint8_t *aad,
		 size_t aad_len, const uint8_t *in, size_t len, uint8_t *out,
		 uint8_t tag[RN_AEAD_TAG_LEN])
{
	EVP_CIPHER_CTX *ctx = a->evp;
	OSSL_PARAM p[2] = { OSSL_PARAM_construct_octet_string(OSSL_CIPHER_PARAM_AEAD_TAG, tag,
							      RN_AEAD_TAG_LEN),
			    OSSL_PARAM_construct_end() };
	int n;

#ifdef RN_HAVE_IPSEC_MB
	if (a->impl == RN_AEAD_IMB) {
		imb_gcm(__atomic_load_n(&g_imb_enc[IMB_BITS(a)], __ATOMIC_RELAXED), a, nonce, aad,
			aad_len, in, len, out, tag);
		return 0;
	}
#endif
	if (EVP_EncryptInit_ex2(ctx, NULL, NULL, nonce, NULL) != 1 ||
	    EVP_EncryptUpdate(ctx, NULL, &n, aad, (int)aad_len) != 1 ||
	    (len && EVP_EncryptUpdate(ctx, out, &n, in, (int)len) != 1) ||
	    EVP_EncryptFinal_ex(ctx, out + len, &n) != 1 || EVP_CIPHER_CTX_get_params(ctx, p) != 1)
		return -1;
	return 0;
}

#ifdef RN_HAVE_IPSEC_MB
/*
 * 1 if two tags are equal, in constant time: every byte is looked at
 * whatever differs.  Two 8-byte words instead of sodium_memcmp's byte loop
 * through volatile pointers, which took 2% of a keyed receiver's time
 * (13 ns a datagram).
 */
static int tag_equal(const uint8_t *x, const uint8_t *y)
{
	uint64_t x0, x1, y0, y1;

	memcpy(&x0, x, 8);
	memcpy(&x1, x + 8, 8);
	memcpy(&y0, y, 8);
	memcpy(&y1, y + 8, 8);
	return ((x0 ^ y0) | (x1 ^ y1)) == 0;
}
#endif

int rn_aead_open(rn_aead *a, const uint8_t nonce[RN_AEAD_NONCE_LEN], const uint8_t *aad,
		 size_t aad_len, const uint8_t *in, size_t len, uint8_t *out,
		 const uint8_t tag[RN_AEAD_TAG_LEN])
{
	EVP_CIPHER_CTX *ctx = a->evp;
	OSSL_PARAM p[2] = { OSSL_PARAM_construct_octet_string(OSSL_CIPHER_PARAM_AEAD_TAG,
							      (void *)tag, RN_AEAD_TAG_LEN),
			    OSSL_PARAM_construct_end() };
	int n;

#ifdef RN_HAVE_IPSEC_MB
	if (a->impl == RN_AEAD_IMB) {
		uint8_t want[RN_AEAD_TAG_LEN];

		imb_gcm(__atomic_load_n(&g_imb_dec[IMB_BITS(a)], __ATOMIC_RELAXED), a, nonce, aad,
			aad_len, in, len, out, want);
		return tag_equal(want, tag) ? 0 : -1;
	}
#endif
	if (EVP_DecryptInit_ex2(ctx, NULL, NULL, nonce, NULL) != 1 ||
	    EVP_DecryptUpdate(ctx, NULL, &n, aad, (int)aad_len) != 1 ||
	    (len && EVP_DecryptUpdate(ctx, out, &n, in, (int)len) != 1) ||
	    EVP_CIPHER_CTX_set_params(ctx, p) != 1 || EVP_DecryptFinal_ex(ctx, out + len, &n) != 1)
		return -1;
	return 0;
}

int rn_hkdf(uint8_t *out, size_t out_len, const uint8_t *ikm, size_t ikm_len,
	    const uint8_t *salt, size_t salt_len, const uint8_t *info, size_t info_len)
{
	EVP_KDF *kdf = EVP_KDF_fetch(NULL, "HKDF", NULL);
	EVP_KDF_CTX *kctx = kdf ? EVP_KDF_CTX_new(kdf) : NULL;
	int mode = salt ? EVP_KDF_HKDF_MODE_EXTRACT_AND_EXPAND : EVP_KDF_HKDF_MODE_EXPAND_ONLY;
	OSSL_PARAM params[6], *p = params;
	int rc = -1;

	*p++ = OSSL_PARAM_construct_utf8_string(OSSL_KDF_PARAM_DIGEST, (char *)"SHA256", 0);
	*p++ = OSSL_PARAM_construct_int(OSSL_KDF_PARAM_MODE, &mode);
	*p++ = OSSL_PARAM_construct_octet_string(OSSL_KDF_PARAM_KEY, (void *)ikm, ikm_len);
	*p++ = OSSL_PARAM_construct_octet_string(OSSL_KDF_PARAM_INFO, (void *)info, info_len);
	if (salt)
		*p++ = OSSL_PARAM_construct_octet_string(OSSL_KDF_PARAM_SALT, (void *)salt,
							 salt_len);
	*p = OSSL_PARAM_construct_end();
	if (kctx && EVP_KDF_derive(kctx, out, out_len, params) == 1)
		rc = 0;
	EVP_KDF_CTX_free(kctx);
	EVP_KDF_free(kdf);
	return rc;
}

/* ---- the key schedule ---- */

/* The key of one epoch of a direction: HKDF-Expand(secret, "ri2n key" epoch), key_len bytes. */
static int epoch_key(uint8_t *key, size_t key_len, const uint8_t secret[RN_AEAD_KEY_LEN],
		     uint32_t epoch)
{
	uint8_t info[12] = "ri2n key";

	rn_put32(info + 8, epoch);
	return rn_hkdf(key, key_len, secret, RN_AEAD_KEY_LEN, NULL, 0, info, sizeof(info));
}

/* Puts the key of `epoch` of secret into aead (initialised first if it is not); 0 or -1. */
static int set_epoch(const rn_crypt *cr, rn_aead *aead, const uint8_t secret[RN_AEAD_KEY_LEN],
		     uint32_t epoch, int enc)
{
	uint8_t key[RN_AEAD_KEY_LEN];
	int rc = epoch_key(key, cr->key_len, secret, epoch);

	if (rc == 0 && aead->impl)
		rc = rn_aead_rekey(aead, key, enc);
	else if (rc == 0)
		rc = rn_aead_init(aead, key, cr->key_len, enc, RN_AEAD_AUTO);
	sodium_memzero(key, sizeof(key));
	return rc;
}

int rn_crypt_init(rn_crypt *cr, const uint8_t cluster_key[RN_AEAD_KEY_LEN], int is_client,
		  uint64_t client_id, uint64_t server_id, uint32_t client_isn,
		  uint32_t server_isn, unsigned mode, uint64_t now_ns)
{
	/*
	 * The mode is in the labels: ends that disagree on it derive different
	 * keys.  [auth only][AES-256]
	 */
	static const char *const labels[2][2][2] = {
		{ { "ri2n v1 aes128 aead c2s", "ri2n v1 aes128 aead s2c" },
		  { "ri2n v1 aead c2s", "ri2n v1 aead s2c" } },
		{ { "ri2n v1 aes128 auth c2s", "ri2n v1 aes128 auth s2c" },
		  { "ri2n v1 auth c2s", "ri2n v1 auth s2c" } },
	};
	int auth_only = (mode & RN_CRYPT_AUTH_ONLY) != 0, aes256 = (mode & RN_CRYPT_AES256) != 0;
	const char *c2s = labels[auth_only][aes256][0], *s2c = labels[auth_only][aes256][1];
	uint8_t salt[24];
	int rc;

	memset(cr, 0, sizeof(*cr));
	cr->auth_only = (uint8_t)auth_only;
	cr->key_len = aes256 ? RN_AEAD_KEY_LEN : RN_AEAD_KEY128_LEN;
	cr->rekey_packets = RN_REKEY_PACKETS;
	cr->rekey_ns = RN_REKEY_NS;
	cr->tx_epoch_ns = now_ns;
	rn_put64(salt, client_id);
	rn_put64(salt + 8, server_id);
	rn_put32(salt + 16, client_isn);
	rn_put32(salt + 20, server_isn);
	rc = rn_hkdf(is_client ? cr->tx_secret : cr->rx_secret, RN_AEAD_KEY_LEN, cluster_key,
		     RN_AEAD_KEY_LEN, salt, sizeof(salt), (const uint8_t *)c2s, strlen(c2s));
	rc |= rn_hkdf(is_client ? cr->rx_secret : cr->tx_secret, RN_AEAD_KEY_LEN, cluster_key,
		      RN_AEAD_KEY_LEN, salt, sizeof(salt), (const uint8_t *)s2c, strlen(s2c));
	rc |= rn_hkdf(cr->tx_iv, RN_AEAD_NONCE_LEN, cr->tx_secret, RN_AEAD_KEY_LEN, NULL, 0,
		      (const uint8_t *)"ri2n iv", 7);
	rc |= rn_hkdf(cr->rx_iv, RN_AEAD_NONCE_LEN, cr->rx_secret, RN_AEAD_KEY_LEN, NULL, 0,
		      (const uint8_t *)"ri2n iv", 7);
	if (rc == 0)
		rc = set_epoch(cr, &cr->tx, cr->tx_secret, 0, 1);
	if (rc == 0)
		rc = set_epoch(cr, &cr->rx[0].aead, cr->rx_secret, 0, 0);
	if (rc != 0) {
		rn_crypt_free(cr);
		return RN_ERR_NOMEM;
	}
	cr->rx[0].ready = 1;
	return 0;
}

int rn_crypt_counts_get(const rn_crypt *cr, rn_crypt_counts *out)
{
	if (cr->tx_epoch != 0 || cr->rx_epoch != 0 || !cr->rx[0].ready || cr->rx[0].epoch != 0)
		return RN_ERR_STATE;
	out->tx_count = cr->tx_count;
	out->tx_epoch_ns = cr->tx_epoch_ns;
	out->rx_top = cr->rx[0].top;
	memcpy(out->seen, cr->rx[0].seen, sizeof(out->seen));
	return 0;
}

void rn_crypt_counts_set(rn_crypt *cr, const rn_crypt_counts *in)
{
	cr->tx_count = in->tx_count;
	cr->tx_epoch_ns = in->tx_epoch_ns;
	cr->rx[0].top = in->rx_top;
	memcpy(cr->rx[0].seen, in->seen, sizeof(cr->rx[0].seen));
}

void rn_crypt_free(rn_crypt *cr)
{
	rn_aead_free(&cr->tx);
	for (int i = 0; i < 3; i++)
		rn_aead_free(&cr->rx[i].aead);
	sodium_memzero(cr, sizeof(*cr));
}

/* ---- datagrams ---- */

/*
 * The nonce of packet number (epoch, counter): the direction's IV XOR
 * (4 zero bytes, epoch, counter).  As in TLS 1.3, the secret IV keeps an
 * attacker from testing one guessed key against many connections at once
 * (the nonces of all of them would otherwise be the same small numbers).
 */
static void make_nonce(uint8_t nonce[RN_AEAD_NONCE_LEN], const uint8_t iv[RN_AEAD_NONCE_LEN],
		       uint32_t epoch, uint32_t counter)
{
	uint8_t pn[RN_PN_LEN];

	rn_put32(pn, epoch);
	rn_put32(pn + 4, counter);
	memcpy(nonce, iv, 4);
	for (int i = 0; i < RN_PN_LEN; i++)
		nonce[4 + i] = iv[4 + i] ^ pn[i];
}

ssize_t rn_crypt_seal(rn_crypt *cr, uint64_t now_ns, uint8_t *buf, size_t len, size_t cap)
{
	uint8_t nonce[RN_AEAD_NONCE_LEN], *body = buf + RN_HDR_LEN + RN_PN_LEN;
	size_t blen;
	int rc;

	if (len < RN_HDR_LEN || cap < RN_AEAD_OVERHEAD || len > cap - RN_AEAD_OVERHEAD)
		return RN_ERR_NOBUF;
	if (cr->tx_count >= cr->rekey_packets || now_ns - cr->tx_epoch_ns >= cr->rekey_ns) {
		if (cr->tx_epoch == UINT32_MAX)
			return RN_ERR_STATE;
		if (set_epoch(cr, &cr->tx, cr->tx_secret, cr->tx_epoch + 1, 1) != 0)
			return RN_ERR_NOMEM;
		cr->tx_epoch++;
		cr->tx_count = 0;
		cr->tx_epoch_ns = now_ns;
		cr->tx_rekeys++;
	}
	/* the header moves in front of the packet number; the body stays put */
	memmove(buf, buf + RN_PN_LEN, RN_HDR_LEN);
	rn_put32(buf + RN_HDR_LEN, cr->tx_epoch);
	rn_put32(buf + RN_HDR_LEN + 4, cr->tx_count);
	/* from the values, not read back: an 8-byte load of two 4-byte stores stalls */
	make_nonce(nonce, cr->tx_iv, cr->tx_epoch, cr->tx_count);
	blen = len - RN_HDR_LEN;
	if (cr->auth_only)
		rc = rn_aead_seal(&cr->tx, nonce, buf, RN_HDR_LEN + RN_PN_LEN + blen, NULL, 0,
				  body + blen, body + blen);
	else
		rc = rn_aead_seal(&cr->tx, nonce, buf, RN_HDR_LEN + RN_PN_LEN, body, blen, body,
				  body + blen);
	if (rc != 0)
		return RN_ERR_NOMEM;
	cr->tx_count++;
	return (ssize_t)(len + RN_AEAD_OVERHEAD);
}

/* The slot for epoch e if we keep it (the newest, the one before, the one after), or NULL. */
static rn_crypt_rx *rx_slot(rn_crypt *cr, uint32_t e)
{
	rn_crypt_rx *s = &cr->rx[e % 3];

	if (e != cr->rx_epoch && e != cr->rx_epoch + 1 && !(cr->rx_epoch > 0 && e == cr->rx_epoch - 1))
		return NULL;
	if (s->ready && s->epoch == e)
		return s;
	/* first datagram of that epoch: its key, an empty window */
	s->ready = 0;
	if (set_epoch(cr, &s->aead, cr->rx_secret, e, 0) != 0)
		return NULL;
	s->epoch = e;
	s->top = 0;
	memset(s->seen, 0, sizeof(s->seen));
	s->ready = 1;
	return s;
}

/* 1 if counter n may be new under s: above the window's floor and not seen. */
static int rx_fresh(const rn_crypt_rx *s, uint32_t n)
{
	if (n >= s->top)
		return 1;
	if (s->top - n > RN_CRYPT_WINDOW)
		return 0;
	return !(s->seen[(n / 64) % (RN_CRYPT_WINDOW / 64)] >> (n % 64) & 1);
}

static void rx_mark(rn_crypt_rx *s, uint32_t n)
{
	if (n >= s->top) {
		if (n - s->top >= RN_CRYPT_WINDOW)
			memset(s->seen, 0, sizeof(s->seen));
		else
			for (uint32_t i = s->top; i != n; i++)
				s->seen[(i / 64) % (RN_CRYPT_WINDOW / 64)] &= ~(UINT64_C(1) << (i % 64));
		s->top = n + 1;
	}
	s->seen[(n / 64) % (RN_CRYPT_WINDOW / 64)] |= UINT64_C(1) << (n % 64);
}

ssize_t rn_crypt_open(rn_crypt *cr, const uint8_t *pkt, size_t len, uint8_t *out, size_t cap)
{
	uint8_t nonce[RN_AEAD_NONCE_LEN];
	const uint8_t *body = pkt + RN_HDR_LEN + RN_PN_LEN, *tag;
	size_t blen;
	uint32_t e, n;
	rn_crypt_rx *s;
	int rc;

	if (len < RN_HDR_LEN + RN_AEAD_OVERHEAD)
		return BAD(RN_DROP_MALFORMED);
	blen = len - RN_HDR_LEN - RN_AEAD_OVERHEAD;
	if (cap < RN_HDR_LEN + blen)
		return BAD(RN_DROP_MALFORMED);
	tag = body + blen;
	e = rn_get32(pkt + RN_HDR_LEN);
	n = rn_get32(pkt + RN_HDR_LEN + 4);
	s = rx_slot(cr, e);
	if (!s)
		return BAD(RN_DROP_AUTH);
	if (!rx_fresh(s, n))
		return BAD(RN_DROP_REPLAY);
	make_nonce(nonce, cr->rx_iv, e, n);
	if (cr->auth_only) {
		rc = rn_aead_open(&s->aead, nonce, pkt, RN_HDR_LEN + RN_PN_LEN + blen, NULL, 0,
				  out, tag);
		if (rc == 0)
			memcpy(out + RN_HDR_LEN, body, blen);
	} else {
		rc = rn_aead_open(&s->aead, nonce, pkt, RN_HDR_LEN + RN_PN_LEN, body, blen,
				  out + RN_HDR_LEN, tag);
	}
	if (rc != 0)
		return BAD(RN_DROP_AUTH);
	rx_mark(s, n);
	if (e == cr->rx_epoch + 1) {
		cr->rx_epoch = e;
		cr->rx_rekeys++;
	}
	memcpy(out, pkt, RN_HDR_LEN);
	return (ssize_t)(RN_HDR_LEN + blen);
}
