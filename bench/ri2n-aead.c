/*
 * ri2n-aead - the cost of sealing and opening one datagram with each AES-GCM
 * implementation and key size ri2n can use (rn_crypt.h), through ri2n's own
 * wrapper.
 *
 *   ri2n-aead [--sizes N,N,...] [--count N]
 *
 * For each body size (default 64, 256, 1024, 1416, 8192, 65000: 1416 is the
 * body of a full datagram on a 1500-byte rail) and each implementation
 * (OpenSSL's EVP; Intel's ipsec-mb where built in and the CPU has AES-NI)
 * and key size (AES-128, ri2n's default, and AES-256) it prints the
 * nanoseconds per seal (32 bytes of header authenticated, the body encrypted
 * in place), per open, and per integrity-only seal (AES-GMAC over header and
 * body), and the seal's GB/s:
 *
 *   impl bits size seal_ns open_ns gmac_ns seal_gbps
 *
 * The times are the thread's CPU time (CLOCK_THREAD_CPUTIME_ID), so time
 * the machine gives other work does not count; its caches and memory
 * bandwidth are still shared: compare figures of one run.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "rn_crypt.h"

static double now_s(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_THREAD_CPUTIME_ID, &ts);
	return (double)ts.tv_sec + (double)ts.tv_nsec * 1e-9;
}

/* ns per call of one of: 0 seal, 1 open, 2 integrity-only seal */
static double per_call(rn_aead *enc, rn_aead *dec, int what, uint8_t *buf, size_t len, long count)
{
	uint8_t nonce[RN_AEAD_NONCE_LEN] = { 0 }, tag[RN_AEAD_TAG_LEN], hdr[32] = { 1 };
	double t0;
	int bad = 0;

	/* open needs a genuine datagram: seal one, then open it again and again */
	if (what == 1 && rn_aead_seal(enc, nonce, hdr, sizeof(hdr), buf, len, buf, tag) != 0)
		return -1;
	t0 = now_s();
	for (long i = 0; i < count; i++) {
		if (what == 0) {
			nonce[11] = (uint8_t)i;
			nonce[10] = (uint8_t)(i >> 8);
			bad |= rn_aead_seal(enc, nonce, hdr, sizeof(hdr), buf, len, buf, tag);
		} else if (what == 1) {
			bad |= rn_aead_open(dec, nonce, hdr, sizeof(hdr), buf, len, buf + len, tag);
		} else {
			nonce[11] = (uint8_t)i;
			bad |= rn_aead_seal(enc, nonce, buf, len + sizeof(hdr), NULL, 0, NULL, tag);
		}
	}
	return bad ? -1 : (now_s() - t0) / (double)count * 1e9;
}

int main(int argc, char **argv)
{
	const char *sizes = "64,256,1024,1416,8192,65000";
	long count = 200000;
	static uint8_t buf[2 * 65536 + 64];
	uint8_t key[RN_AEAD_KEY_LEN];
	const rn_aead_impl impls[] = { RN_AEAD_OPENSSL, RN_AEAD_IMB };
	const char *names[] = { "openssl", "ipsec-mb" };

	for (int i = 1; i < argc; i++) {
		if (!strcmp(argv[i], "--sizes") && i + 1 < argc) {
			sizes = argv[++i];
		} else if (!strcmp(argv[i], "--count") && i + 1 < argc) {
			count = atol(argv[++i]);
		} else {
			fprintf(stderr, "usage: ri2n-aead [--sizes N,N,...] [--count N]\n");
			return 2;
		}
	}
	for (size_t i = 0; i < sizeof(key); i++)
		key[i] = (uint8_t)(i * 37 + 11);
	memset(buf, 0x5a, sizeof(buf));
	printf("impl bits size seal_ns open_ns gmac_ns seal_gbps\n");
	for (int mk = 0; mk < 4; mk++) {
		int m = mk / 2;
		size_t klen = mk % 2 ? RN_AEAD_KEY_LEN : RN_AEAD_KEY128_LEN;
		rn_aead enc, dec;

		if (rn_aead_init(&enc, key, klen, 1, impls[m]) != 0) {
			if (klen == RN_AEAD_KEY128_LEN)
				printf("%s not available (not built in, or no AES-NI)\n", names[m]);
			continue;
		}
		if (rn_aead_init(&dec, key, klen, 0, impls[m]) != 0) {
			rn_aead_free(&enc);
			continue;
		}
		for (const char *p = sizes; *p;) {
			size_t len = strtoul(p, (char **)&p, 10);
			long n = len > 8192 ? count / 16 : count;
			double s, o, g;

			if (*p == ',')
				p++;
			if (len == 0 || len > 65536)
				continue;
			per_call(&enc, &dec, 0, buf, len, n / 10); /* warm up */
			s = per_call(&enc, &dec, 0, buf, len, n);
			o = per_call(&enc, &dec, 1, buf, len, n);
			g = per_call(&enc, &dec, 2, buf, len, n);
			printf("%s %zu %zu %.1f %.1f %.1f %.2f\n", names[m], klen * 8, len, s, o, g,
			       s > 0 ? (double)len / s : 0);
		}
		rn_aead_free(&enc);
		rn_aead_free(&dec);
	}
	return 0;
}
