/*
 * btl_ri2n_wire.h - what the BTL reads from the network besides ri2n's own
 * datagrams: the frames on a stream and the nudge datagrams.  Pure code (no
 * Open MPI), so the fuzz target (tests/fuzz/fuzz_btl.c) runs the same
 * parsers as the BTL.
 *
 * Frame: u32 payload length (big-endian), u8 tag, u8 type, u16 0, then the
 * payload.  A stream accepted from the listener belongs to nobody until its
 * hello (type HELLO, 12 bytes: magic, jobid, vpid) is read: before that the
 * only frame taken is a hello, after it never one.  Every header is checked
 * before anything is allocated for its payload, so a peer that has not said
 * who it is cannot make us allocate more than a hello.
 *
 * Nudge: u32 magic, u8 type 1, 3 zero bytes, u32 jobid, u32 vpid (16 bytes);
 * with a cluster key a 16-byte tag under it follows (keyed BLAKE2b, as on
 * ri2n's datagrams).
 */
#ifndef BTL_RI2N_WIRE_H
#define BTL_RI2N_WIRE_H

#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>

enum {
	RI2N_HDR_LEN = 8,
	RI2N_FT_FRAG = 1,     /* a BTL fragment for the callback of its tag */
	RI2N_FT_HELLO = 2,    /* the connecting process's name, first on every stream */
	RI2N_HELLO_LEN = 12,  /* magic, jobid, vpid */
	RI2N_MAX_FRAME = 64 << 20, /* longer frames are a protocol error */
	RI2N_TAG_LIMIT = 255, /* tags index Open MPI's active-message table (MCA_BTL_TAG_MAX) */
	RI2N_NUDGE_LEN = 16,
	RI2N_NUDGE_TAG_LEN = 16,
	RI2N_RX_MIN_BUF = 65536, /* first gather buffer of a stream */
};

#define RI2N_MAGIC 0x52324e42u /* "R2NB": modex blobs, hellos and nudges */

/* A frame handed over: its payload stays valid until the callback returns. */
typedef void (*rbtl_frame_fn)(void *arg, uint8_t tag, uint8_t type, uint8_t *d, size_t len);

/* The receive side of one stream's framing. */
typedef struct rbtl_rx {
	uint8_t hdr[RI2N_HDR_LEN]; /* a header split over packets */
	uint32_t hdr_have;         /* RI2N_HDR_LEN: in a body */
	uint8_t *buf;              /* a frame gathered whole */
	size_t cap, len, need;
	uint8_t tag, type;
	uint8_t bound;             /* fragments allowed: we connected, or the hello was read */
} rbtl_rx;

/*
 * Checks a frame header against the stream's state.  Returns NULL, or a
 * sentence saying what is wrong (unknown type, reserved bits, a tag past the
 * table, a length no frame of that type has, data before the hello).
 */
const char *rbtl_wire_check_hdr(const uint8_t h[RI2N_HDR_LEN], int bound);

/*
 * Uses some of the n in-order bytes at d: a whole frame in place (no copy),
 * or a piece of a split one.  fn gets each frame; it may set rx->bound.
 * Returns the bytes consumed (> 0 when n > 0), or -1 with *why set when the
 * stream is malformed or no memory is left for a frame.
 */
ssize_t rbtl_rx_step(rbtl_rx *rx, uint8_t *d, size_t n, rbtl_frame_fn fn, void *arg,
		     const char **why);

/* Frees the gather buffer. */
void rbtl_rx_free(rbtl_rx *rx);

/* Reads a hello's payload; 0, or -1 if it is not one. */
int rbtl_wire_hello_read(const uint8_t *d, size_t len, uint32_t *jobid, uint32_t *vpid);

/* True if the datagram is shaped like a nudge (magic, 16 or 32 bytes), not a ri2n datagram. */
int rbtl_wire_is_nudge(const uint8_t *d, size_t len);

/* Writes a nudge (tagged under key when key is not NULL); returns its length, 0 if cap is short. */
size_t rbtl_wire_nudge_write(uint8_t *b, size_t cap, uint32_t jobid, uint32_t vpid,
			     const uint8_t *key);

/*
 * Reads a nudge: 0 and the name, or -1 if it is malformed, or untagged or
 * wrongly tagged when key is not NULL (an untagged nudge is refused then).
 */
int rbtl_wire_nudge_read(const uint8_t *d, size_t len, const uint8_t *key, uint32_t *jobid,
			 uint32_t *vpid);

#endif
