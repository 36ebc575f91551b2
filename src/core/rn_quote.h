/*
 * rn_quote.h - is the datagram an ICMP error quotes one of ours?
 *
 * When a peer process is gone its host answers our datagrams with ICMP port
 * unreachable, and the kernel hands the error back with as much of our
 * datagram as the ICMP quoted (the UDP payload: our header and more).
 * Anyone can send an ICMP message, so one is believed only if what it
 * quotes is a datagram this connection could have sent on that rail lately:
 * our peer's 64-bit connection id (random, never seen off the path), the
 * rail's index, a send time within the last RN_QUOTE_TS_SPAN_US of our
 * clock, a DATA sequence number among the last RN_QUOTE_SEQ_SPAN sent and,
 * keyed, a packet number among the last RN_QUOTE_PN_SPAN used.  Pure: the
 * caller says what it sent; docs/PROTOCOL.md, "A dead peer", says why.
 */
#ifndef RN_QUOTE_H
#define RN_QUOTE_H

#include <stddef.h>
#include <stdint.h>

enum {
	RN_QUOTE_TS_SPAN_US = 2000000, /* the error answers a datagram sent within 2 s */
	RN_QUOTE_SEQ_SPAN = 65536,     /* a window's worth of sequence numbers */
	RN_QUOTE_PN_SPAN = 65536,      /* and of packet numbers (keyed) */
};

/* What this connection sent on one rail, as the check needs it. */
typedef struct rn_quote_ref {
	uint64_t peer_id;    /* the destination id our datagrams carry */
	uint8_t path;        /* the rail index they carry */
	uint32_t now_us;     /* our clock now (rn_now_us): ts is stamped from it */
	uint32_t seq_nxt;    /* the next DATA sequence number to be sent */
	uint8_t keyed;       /* a packet number follows the header */
	uint32_t pn_epoch;   /* keyed: the next packet number (rn_crypt's tx_epoch, tx_count) */
	uint32_t pn_count;
} rn_quote_ref;

/* rn_quote_check's verdicts: 0 is ours, the others name the first check that failed. */
typedef enum rn_quote_verdict {
	RN_QUOTE_OURS = 0,
	RN_QUOTE_SHORT,   /* fewer bytes than the header (and the packet number, keyed) */
	RN_QUOTE_HEADER,  /* version, flags or reserved bytes no datagram of ours has */
	RN_QUOTE_TYPE,    /* not a type an established connection sends */
	RN_QUOTE_ID,      /* another destination id */
	RN_QUOTE_PATH,    /* another rail's index */
	RN_QUOTE_TS,      /* a send time in the future or older than the span */
	RN_QUOTE_SEQ,     /* DATA whose sequence number was not sent lately */
	RN_QUOTE_PN,      /* keyed: a packet number not used lately */
} rn_quote_verdict;

/*
 * The checks that need no connection (length of the header, version, flags,
 * reserved bytes, type): a driver skips its connections for a quote failing
 * them.  RN_QUOTE_OURS if they pass.
 */
rn_quote_verdict rn_quote_shape(const uint8_t *q, size_t len);

/* Checks the len quoted bytes q against ref; returns an rn_quote_verdict. */
rn_quote_verdict rn_quote_check(const rn_quote_ref *ref, const uint8_t *q, size_t len);

#endif
