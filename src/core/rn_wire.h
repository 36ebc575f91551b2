/*
 * rn_wire.h - the datagram format (docs/PROTOCOL.md is the reference).
 *
 * Every datagram starts with a 24-byte header; the F_ACK flag adds an ACK
 * block (20 bytes plus 8 per SACK bitmap word); the payload follows and its
 * length must equal what is left of the datagram exactly.  All integers are
 * big-endian.  Decoding never trusts a length it has not checked against the
 * bytes at hand.
 */
#ifndef RN_WIRE_H
#define RN_WIRE_H

#include <stddef.h>
#include <stdint.h>

#include "rn_core.h"

#define RN_WIRE_VERSION 1

enum rn_ptype {
	RN_PT_DATA = 1,        /* stream bytes at a sequence number */
	RN_PT_ACK = 2,         /* only an ACK block */
	RN_PT_INIT = 3,        /* client -> server: open, with client rails */
	RN_PT_INIT_ACK = 4,    /* server -> client: server rails and a cookie */
	RN_PT_COOKIE_ECHO = 5, /* client -> server: cookie back, server allocates */
	RN_PT_COOKIE_ACK = 6,  /* server -> client: established */
	RN_PT_LINK_STATE = 7,  /* rails this side receives on; resent until acked */
	RN_PT_LINK_ACK = 8,    /* acknowledges a LINK_STATE version */
	RN_PT_HEARTBEAT = 9,   /* probe on every rail while one has failed; zero-padded */
	RN_PT_KEEPALIVE = 10,  /* keeps an idle rail's receive count alive; zero-padded */
	RN_PT_RESET = 11,      /* connection aborted */
	RN_PT_SRESET = 12,     /* stateless reset: no connection has the id you used */
	RN_PT_PROBE = 13,      /* size probe: u32 id, zero-padded to the size tried (rn_pmtu.h) */
	RN_PT_PROBE_ACK = 14,  /* answers a PROBE on its rail: u32 id, u32 size received */
	RN_PT_RAILS = 15,      /* the sender's rails now, and (client) its paths; resent until acked */
	RN_PT_RAILS_ACK = 16,  /* acknowledges a RAILS version */
	RN_PT__MAX = 16,
};

enum rn_pflag {
	RN_F_ACK = 0x01, /* an ACK block follows the header */
	RN_F_FIN = 0x02, /* DATA: this sequence number ends the stream */
	/*
	 * DATA: several consecutive packets in one datagram (a rail whose size
	 * holds them, e.g. jumbo frames): the payload is a run of (u16 length,
	 * bytes), one per sequence number from seq on (never the FIN).
	 */
	RN_F_MULTI = 0x04,
	/*
	 * DATA: the redundant twin of a small write's packet, sent on a second
	 * rail right after the first (RI2N_REDUNDANT_BYTES); never with MULTI
	 */
	RN_F_COPY = 0x08,
	/*
	 * DATA with an ACK block: a late answer.  The sender's ACK of the packet
	 * the block echoes went alone at the end of its wait while answering;
	 * this DATA came after it (rn_conn_hold_sample counts the wait).
	 */
	RN_F_LATE = 0x10,
	/*
	 * DATA without an ACK block or FIN: sent between the INIT_ACK and the
	 * COOKIE_ACK, right behind the COOKIE_ECHO.  A listener that does not
	 * know its id (the COOKIE_ECHO was lost or has not arrived) drops it
	 * unanswered: no stateless reset, the client sends it again once
	 * established.
	 */
	RN_F_EARLY = 0x20,
	RN_F__ALL = 0x3f,
};

/* A decoded datagram; pointers refer into the caller's buffer. */
typedef struct rn_pkt {
	uint8_t type, flags, path;
	uint64_t dst;
	uint32_t seq, ts;
	/* ACK block, valid when flags & RN_F_ACK */
	uint32_t ack, wnd;
	uint32_t ts_echo; /* ts of the newest packet the sender of the ACK received... */
	uint32_t ts_rx;   /* ...its arrival time on the ACK sender's clock, us... */
	uint8_t echo_path;/* ...and the rail it came on: a one-way delay sample */
	uint16_t nwords;
	const uint8_t *sack; /* nwords big-endian 64-bit words */
	const uint8_t *payload;
	uint16_t len;
} rn_pkt;

/*
 * Decodes and validates the header, the ACK block and the payload bounds.
 * Returns 0 or -(1 + rn_drop) naming why the datagram is bad.
 */
int rn_wire_decode(rn_pkt *p, const uint8_t *buf, size_t len);

/* SACK word i of a decoded packet (bit b: seq ack + 1 + 64 i + b received). */
uint64_t rn_wire_sack_word(const rn_pkt *p, unsigned i);

/* Header fields of a datagram being written. */
typedef struct rn_hdr {
	uint8_t type, flags, path;
	uint64_t dst;
	uint32_t seq, ts;
} rn_hdr;

/* ACK block being written; words[] are host-order bitmap words. */
typedef struct rn_ackblk {
	uint32_t ack, wnd, ts_echo, ts_rx;
	uint8_t echo_path;
	uint16_t nwords;
	const uint64_t *words;
} rn_ackblk;

/* Size of a datagram with an ACK block of nwords words (or none) and len payload bytes. */
static inline size_t rn_wire_size(int has_ack, unsigned nwords, size_t len)
{
	return RN_HDR_LEN + (has_ack ? RN_ACKBLK_LEN + 8u * nwords : 0) + len;
}

/*
 * Writes header, optional ACK block (ab may be NULL) and payload into buf;
 * a NULL payload writes len zero bytes (the padding of a full-size probe).
 * Returns the datagram length or RN_ERR_NOBUF.
 */
ssize_t rn_wire_encode(uint8_t *buf, size_t cap, const rn_hdr *h,
		       const rn_ackblk *ab, const void *payload, size_t len);

/*
 * With a cluster key, the handshake and stateless datagrams (INIT, INIT_ACK,
 * COOKIE_ECHO, SRESET: sent before or without a connection's keys) end in
 * an RN_MAC_LEN-byte tag: BLAKE2b keyed with the cluster key over everything
 * before it; every other type is sealed under its connection's keys
 * (rn_crypt.h).  The header it covers holds the
 * destination connection id and the sequence number, so a tag is bound to
 * its connection and packet.
 *
 * rn_wire_seal appends the tag to the len-byte datagram in buf (cap bytes);
 * returns the new length or RN_ERR_NOBUF.  rn_wire_open checks a received
 * datagram's tag in constant time; returns the length without it, or
 * RN_ERR_DROP if the tag is missing or wrong.  mode (rn_config_seal_mode)
 * is bound into the tag as BLAKE2b's personalization (none for mode 0), so
 * ends that would seal their connection differently (integrity only, key
 * size) fail here, like ends with another key, not after the handshake.
 */
static inline int rn_wire_cluster_sealed(uint8_t type)
{
	return type == RN_PT_INIT || type == RN_PT_INIT_ACK || type == RN_PT_COOKIE_ECHO ||
	       type == RN_PT_SRESET;
}
ssize_t rn_wire_seal(uint8_t *buf, size_t len, size_t cap, const uint8_t key[RN_KEY_LEN],
		     unsigned mode);
ssize_t rn_wire_open(const uint8_t *buf, size_t len, const uint8_t key[RN_KEY_LEN], unsigned mode);

/*
 * A keyed stateless reset's tag also covers the address of the rail that
 * sent it (the listener's): a listener cannot check the connection keys of
 * the datagram it answers, so anyone may draw a reset from it, but only the
 * host that lost the connection makes one its peer takes (another host's
 * reset for the same id names another address).  Same returns as above.
 */
ssize_t rn_wire_seal_reset(uint8_t *buf, size_t len, size_t cap, const uint8_t key[RN_KEY_LEN],
			   rn_addr sender);
ssize_t rn_wire_open_reset(const uint8_t *buf, size_t len, const uint8_t key[RN_KEY_LEN],
			   rn_addr sender);

/* ---- payloads of control packets ---- */

enum {
	RN_LINK_STATE_LEN = 8, /* u32 version, u8 rx_up mask, 3 zero bytes */
	RN_LINK_ACK_LEN = 4,   /* u32 version */
	RN_RESET_LEN = 4,      /* u16 reason (an rn_err, negated), 2 zero bytes */
	RN_SRESET_LEN = 8,     /* u64 the destination id the unknown datagram named */
	RN_PROBE_LEN = 4,      /* u32 id; zero padding follows */
	RN_PROBE_ACK_LEN = 8,  /* u32 id, u32 size of the probe as received */
	RN_MULTI_HDR = 2,      /* u16 length before each packet of a DATA with RN_F_MULTI */
	RN_RAIL_WIRE_LEN = 8,  /* IPv4 rail: u32 ip, u16 port, u8 prefix, u8 family 0 */
	RN_HELLO_FIXED = 24,   /* handshake parameters before the rail list */
	RN_RAILS_FIXED = 8,    /* RAILS: u32 version, u8 nrails, u8 npaths, 2 zero bytes */
	RN_RAILS_ACK_LEN = 4,  /* u32 version */
	RN_PAIR_WIRE_LEN = 2,  /* RAILS: a path's u8 client rail, u8 server rail */
};

/* Rail entries of either family (docs/PROTOCOL.md, "Rail entries"). */
enum {
	RN_RAIL6_WIRE_LEN = 20, /* IPv6 rail: the same head, family 6, 12 more address bytes */
	RN_RAIL_WIRE_MAX = 20,  /* the longer of the two */
	RN_RAIL_FAMILY_V6 = 6,  /* the last byte of an IPv6 rail's head */
};

/* Handshake parameters: INIT and COOKIE_ECHO (client), INIT_ACK (server). */
typedef struct rn_hello {
	uint64_t id;        /* sender's connection id (nonzero) */
	uint32_t isn;       /* sender's initial sequence number */
	uint32_t slots;     /* sender's receive ring, packets */
	uint32_t max_dgram; /* largest datagram the sender takes */
	uint8_t nrails;
	rn_rail_addr rails[RN_MAX_RAILS];
	const uint8_t *cookie; /* INIT_ACK and COOKIE_ECHO: RN_COOKIE_LEN bytes */
	const uint8_t *raw;    /* decoded from: the encoded parameters... */
	size_t raw_len;        /* ...and their length (the cookie MAC covers them) */
} rn_hello;

/*
 * The bytes rail r takes in a hello or RAILS list: RN_RAIL_WIRE_LEN (IPv4)
 * or RN_RAIL6_WIRE_LEN (IPv6); docs/PROTOCOL.md, "Rail entries".
 */
size_t rn_wire_rail_len(const rn_rail_addr *r);

/* Encodes hello parameters (and the cookie when given) into buf; returns bytes or RN_ERR_NOBUF. */
ssize_t rn_wire_write_hello(uint8_t *buf, size_t cap, const rn_hello *h,
			    const uint8_t *cookie);
/*
 * Decodes hello parameters from a payload; with_cookie says whether a cookie
 * follows.  Trailing zero padding is allowed (INIT).  Returns 0 or -(1 + rn_drop).
 */
int rn_wire_read_hello(rn_hello *h, const uint8_t *buf, size_t len, int with_cookie);

/*
 * RAILS: a live connection's rail list, sent when a rail appears at one end
 * (docs/PROTOCOL.md, "Interface events").  The client numbers the paths:
 * its RAILS lists every path as (client rail, server rail), indices into
 * the two ends' rail lists; the server's lists none (npaths 0).
 */
typedef struct rn_rails_msg {
	uint32_t version;
	uint8_t nrails, npaths;
	rn_rail_addr rails[RN_MAX_RAILS];
	uint8_t pairs[RN_MAX_RAILS][2];
} rn_rails_msg;

/* Encodes a RAILS payload into buf; returns bytes or RN_ERR_NOBUF. */
ssize_t rn_wire_write_rails(uint8_t *buf, size_t cap, const rn_rails_msg *m);
/* Decodes a RAILS payload (exact length, rails as in a hello).  0 or -(1 + rn_drop). */
int rn_wire_read_rails(rn_rails_msg *m, const uint8_t *buf, size_t len);

static inline void rn_put16(uint8_t *p, uint16_t v)
{
	p[0] = (uint8_t)(v >> 8);
	p[1] = (uint8_t)v;
}
static inline void rn_put32(uint8_t *p, uint32_t v)
{
	p[0] = (uint8_t)(v >> 24);
	p[1] = (uint8_t)(v >> 16);
	p[2] = (uint8_t)(v >> 8);
	p[3] = (uint8_t)v;
}
static inline void rn_put64(uint8_t *p, uint64_t v)
{
	rn_put32(p, (uint32_t)(v >> 32));
	rn_put32(p + 4, (uint32_t)v);
}
static inline uint16_t rn_get16(const uint8_t *p)
{
	return (uint16_t)((uint16_t)p[0] << 8 | p[1]);
}
static inline uint32_t rn_get32(const uint8_t *p)
{
	return (uint32_t)p[0] << 24 | (uint32_t)p[1] << 16 | (uint32_t)p[2] << 8 | p[3];
}
static inline uint64_t rn_get64(const uint8_t *p)
{
	return (uint64_t)rn_get32(p) << 32 | rn_get32(p + 4);
}

#endif
