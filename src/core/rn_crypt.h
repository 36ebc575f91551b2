/*
 * rn_crypt.h - a connection's datagram protection under the cluster key.
 *
 * With a cluster key, every datagram of an established connection is sealed
 * with AES-128-GCM (AES-256-GCM with RN_CRYPT_AES256, RI2N_KEY_AES256):
 * Intel's ipsec-mb library where the build has it and the CPU has AES-NI
 * (its VAES and VPCLMULQDQ code seals a 1.4 KB datagram in about 95 ns with
 * AES-128, 115 with AES-256; OpenSSL 3.0's EVP in about 350 and 380),
 * OpenSSL 3's EVP otherwise.
 * Both compute the same AEAD, so ends built either way talk to each other;
 * docs/PROTOCOL.md, "Keys", gives the measurements behind the choice.  On
 * the wire:
 *
 *   header (24 bytes, clear) | packet number (8, clear) | body | tag (16)
 *
 * The header and the packet number are authenticated; the body (ACK block
 * and payload) is encrypted, or only authenticated in the integrity-only mode
 * (RI2N_KEY_AUTH_ONLY: AES-GMAC, more than twice as cheap, payload in clear).
 *
 * Keys.  Both ends derive the connection's secret with HKDF-SHA256 from the
 * cluster key and the handshake's randomness (both connection ids and both
 * initial sequence numbers, drawn by each end's rng), then one traffic
 * secret per direction.  The key of each epoch is expanded from its
 * direction's secret and the epoch number; the direction's IV, XORed into
 * every nonce as in TLS 1.3, from the secret alone.  The packet number is the epoch
 * (32 bits) and a counter within it (32 bits); the sender moves to the next
 * epoch after RN_REKEY_PACKETS datagrams or RN_REKEY_NS, whichever comes
 * first, so a (key, nonce) pair is never used twice: not across
 * connections or restarts (new randomness, new secret), nor directions
 * (their own secrets), nor rails and retransmissions (one counter per
 * direction, every datagram takes the next value).
 *
 * The receiver keeps the keys of the newest epoch it authenticated, the one
 * before (late datagrams) and the one after (the sender's next rekey), each
 * with a replay window of RN_CRYPT_WINDOW packet numbers.
 */
#ifndef RN_CRYPT_H
#define RN_CRYPT_H

#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>

enum {
	RN_AEAD_KEY_LEN = 32,   /* secrets, and the largest AES key (AES-256) */
	RN_AEAD_KEY128_LEN = 16, /* AES-128, the default (rn_crypt_init's modes) */
	RN_AEAD_NONCE_LEN = 12, /* 4 zero bytes and the packet number */
	RN_AEAD_TAG_LEN = 16,
	RN_PN_LEN = 8,          /* packet number on the wire: epoch, counter */
	RN_AEAD_OVERHEAD = RN_PN_LEN + RN_AEAD_TAG_LEN,
	RN_CRYPT_WINDOW = 8192, /* packet numbers of reordering the replay window allows */
	RN_AEAD_IMB_LEN = 1024, /* room for ipsec-mb's key schedule (1008 bytes in 1.3) */
};

/* Which implementation an rn_aead uses. */
typedef enum rn_aead_impl {
	RN_AEAD_AUTO = 0, /* ipsec-mb if built in and the CPU has AES-NI, else OpenSSL */
	RN_AEAD_OPENSSL,
	RN_AEAD_IMB,      /* ipsec-mb; rn_aead_init fails where it is not available */
} rn_aead_impl;

/*
 * One AES-GCM key, ready to seal or open, embedded in its owner (the
 * core allocates nothing itself; the owner's memory 16-byte aligned, as
 * malloc's is): ipsec-mb's expanded key and GHASH powers
 * in imb_key, or an OpenSSL context in evp.  impl is 0 until initialised.
 */
typedef struct rn_aead {
	/* 16-byte aligned: ipsec-mb's AES-128 key expansion stores it with movdqa */
	_Alignas(16) uint8_t imb_key[RN_AEAD_IMB_LEN];
	void *evp;
	uint8_t impl;
	uint8_t key_len; /* RN_AEAD_KEY128_LEN or RN_AEAD_KEY_LEN */
} rn_aead;

/*
 * 2^21 datagrams per key: RFC 9001 (6.6) bounds AES-GCM at 2^23 packets of
 * up to 2^10 blocks each for a 2^-57 confidentiality advantage; our
 * datagrams may be 2^12 blocks (64 KiB), hence 4 times fewer.  At 1 million
 * datagrams a second that is a rekey every 2 s: one HKDF and one key
 * schedule, about 10 us.
 */
#define RN_REKEY_PACKETS (UINT32_C(1) << 21)
/* 120 s: an idle connection's key does not live for ever either (WireGuard's period). */
#define RN_REKEY_NS UINT64_C(120000000000)

/* Keys of one receive epoch and the packet numbers seen under it. */
typedef struct rn_crypt_rx {
	rn_aead aead;        /* the epoch's key */
	uint32_t epoch;
	uint8_t ready;       /* aead holds the key of epoch */
	uint32_t top;        /* 1 + the highest counter accepted; 0: none yet */
	uint64_t seen[RN_CRYPT_WINDOW / 64]; /* bit c % WINDOW: counter c accepted */
} rn_crypt_rx;

typedef struct rn_crypt {
	uint8_t tx_secret[RN_AEAD_KEY_LEN]; /* this direction's traffic secret */
	uint8_t rx_secret[RN_AEAD_KEY_LEN]; /* the peer's */
	uint8_t tx_iv[RN_AEAD_NONCE_LEN];   /* XORed into each nonce (TLS 1.3's per-key IV) */
	uint8_t rx_iv[RN_AEAD_NONCE_LEN];
	rn_aead tx;                         /* the send epoch's key */
	uint32_t tx_epoch, tx_count;        /* next packet number: (tx_epoch, tx_count) */
	uint64_t tx_epoch_ns;               /* when the send epoch began */
	rn_crypt_rx rx[3];                  /* epoch e lives in rx[e % 3] */
	uint32_t rx_epoch;                  /* newest epoch a datagram authenticated in */
	uint8_t auth_only;                  /* body authenticated, not encrypted */
	uint8_t key_len;                    /* AES key: RN_AEAD_KEY128_LEN or RN_AEAD_KEY_LEN */
	uint32_t rekey_packets;             /* RN_REKEY_PACKETS (tests lower them) */
	uint64_t rekey_ns;                  /* RN_REKEY_NS */
	uint64_t tx_rekeys, rx_rekeys;      /* epochs begun each way */
} rn_crypt;

/*
 * A connection's packet numbers while both directions are in their first
 * epoch: what another process needs to go on with the same keys (a
 * connection handed over, rn_conn_move.c), never reusing a nonce and
 * refusing what was accepted here.
 */
typedef struct rn_crypt_counts {
	uint32_t tx_count;
	uint64_t tx_epoch_ns;
	uint32_t rx_top;
	uint64_t seen[RN_CRYPT_WINDOW / 64];
} rn_crypt_counts;

/* 0 with *out filled, or RN_ERR_STATE once either direction rekeyed. */
int rn_crypt_counts_get(const rn_crypt *cr, rn_crypt_counts *out);
/* Sets them on keys just derived by rn_crypt_init from the same handshake. */
void rn_crypt_counts_set(rn_crypt *cr, const rn_crypt_counts *in);

/* rn_crypt_init's modes; both ends must choose the same (they are mixed into the keys). */
enum {
	RN_CRYPT_AUTH_ONLY = 1, /* AES-GMAC: the body authenticated, not encrypted */
	RN_CRYPT_AES256 = 2,    /* AES-256 instead of AES-128 (RI2N_KEY_AES256) */
};

/*
 * Derives a connection's keys from the cluster key and the handshake's
 * randomness: the client's and the server's connection ids and initial
 * sequence numbers (the same four values at both ends; is_client says which
 * direction is ours).  mode: RN_CRYPT_* flags, mixed into the keys (ends that
 * disagree cannot talk).  Returns 0 or RN_ERR_NOMEM (OpenSSL could not make
 * its contexts; nothing is left allocated).
 */
int rn_crypt_init(rn_crypt *cr, const uint8_t cluster_key[RN_AEAD_KEY_LEN], int is_client,
		  uint64_t client_id, uint64_t server_id, uint32_t client_isn,
		  uint32_t server_isn, unsigned mode, uint64_t now_ns);

/* Frees the contexts and wipes every secret and key. */
void rn_crypt_free(rn_crypt *cr);

/*
 * Seals one datagram.  On entry buf + RN_PN_LEN holds the plain datagram
 * (header, body) of len bytes; cap is buf's size.  On return buf holds the
 * header, the packet number, the sealed body and the tag.  Moves to the
 * next epoch first when this one is used up (RN_REKEY_PACKETS, RN_REKEY_NS).
 * Returns the sealed length, RN_ERR_NOBUF, or RN_ERR_STATE when even the
 * epochs ran out (2^53 datagrams: never in practice).
 */
ssize_t rn_crypt_seal(rn_crypt *cr, uint64_t now_ns, uint8_t *buf, size_t len, size_t cap);

/*
 * Opens a sealed datagram of len bytes into out (cap bytes): the header
 * followed by the plain body.  Returns the plain length, or -(1 + rn_drop):
 * RN_DROP_MALFORMED (too short), RN_DROP_AUTH (forged, mangled, another
 * key, an epoch not kept), RN_DROP_REPLAY (a packet number seen before or
 * older than the window).  Nothing changes unless the datagram is genuine.
 */
ssize_t rn_crypt_open(rn_crypt *cr, const uint8_t *pkt, size_t len, uint8_t *out, size_t cap);

/*
 * The AEAD itself, as rn_crypt uses it (public for known-answer tests).
 * rn_aead_init readies a under key of key_len bytes (16: AES-128, 32:
 * AES-256), for sealing (enc 1) or opening, with impl (RN_AEAD_AUTO:
 * rn_aead_default()); 0, or -1 when that implementation is not available,
 * key_len is neither, or OpenSSL fails (nothing is then left to free).
 * rn_aead_rekey puts another key of the same length into a ready a.  rn_aead_free wipes the key
 * and frees OpenSSL's context; a zeroed or freed a may be freed again.
 * rn_aead_seal writes len bytes of ciphertext of in to out (they may be the
 * same) and the tag; rn_aead_open checks the tag (in constant time) and
 * writes the plaintext.  in == NULL with len 0 authenticates aad only.  Both
 * return 0, or -1 (open: the tag is wrong; out is then undefined).
 */
int rn_aead_init(rn_aead *a, const uint8_t *key, size_t key_len, int enc, rn_aead_impl impl);
int rn_aead_rekey(rn_aead *a, const uint8_t *key, int enc);
void rn_aead_free(rn_aead *a);
int rn_aead_seal(rn_aead *a, const uint8_t nonce[RN_AEAD_NONCE_LEN], const uint8_t *aad,
		 size_t aad_len, const uint8_t *in, size_t len, uint8_t *out,
		 uint8_t tag[RN_AEAD_TAG_LEN]);
int rn_aead_open(rn_aead *a, const uint8_t nonce[RN_AEAD_NONCE_LEN], const uint8_t *aad,
		 size_t aad_len, const uint8_t *in, size_t len, uint8_t *out,
		 const uint8_t tag[RN_AEAD_TAG_LEN]);

/*
 * What RN_AEAD_AUTO picks in this process (RN_AEAD_IMB or RN_AEAD_OPENSSL;
 * ipsec-mb looks at the CPU once, on the first call).  rn_aead_prefer(impl)
 * makes AUTO pick impl from now on (RN_AEAD_AUTO restores the choice by CPU;
 * tests run rn_crypt under both); it returns -1, changing nothing, if impl is
 * not available.
 */
rn_aead_impl rn_aead_default(void);
int rn_aead_prefer(rn_aead_impl impl);

/* HKDF-SHA256 (RFC 5869); salt NULL: expand only, ikm being the pseudorandom key. 0 or -1. */
int rn_hkdf(uint8_t *out, size_t out_len, const uint8_t *ikm, size_t ikm_len,
	    const uint8_t *salt, size_t salt_len, const uint8_t *info, size_t info_len);

#endif
