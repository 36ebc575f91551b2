/*
 * fuzz_ops.h - how fuzz_conn and fuzz_listen read their input, the one
 * reference for the targets and for gen_corpus, which writes seed inputs.
 * Changing an encoding makes the committed corpus stale: regenerate it
 * (README.md).
 *
 * Both inputs are a sequence of operations, each an op byte and then its
 * arguments; multi-byte integers are big-endian; an input that ends early
 * reads as zeros.
 */
#ifndef FUZZ_OPS_H
#define FUZZ_OPS_H

/*
 * fuzz_conn: the first byte picks the start (FZC_START_*, low 2 bits), then
 * operations follow.  op byte = op | x << 4 | r << 5 | a << 6, where x is the host
 * acted on or delivered to (0 client, 1 server), r a rail, a the source
 * address choice of fz_from() (0 the real peer rail address).
 */
enum fzc_op {
	/* u8 fix, u16 len (% FZ_MAX_PKT), len bytes: a datagram to x on r from a.
	 * fix: FZC_FIX_* below. */
	FZC_RAW = 0,
	/* u8 idx, u8 m, [u8 cut], (m & 7) x (u16 pos, u8 val): pool datagram idx
	 * mutated (fz_mutate), cut short by `cut` if m & 8, with its destination
	 * id patched in if m & 16; delivered to its host, on the other rail if r,
	 * from address choice a. */
	FZC_MUTATE = 1,
	/* u8 idx: pool datagram idx again, unchanged (r, a as for FZC_MUTATE) */
	FZC_REPLAY = 2,
	/* a well-formed datagram from fields, to x on r from a:
	 * u8 type (1 + t % 11), u8 fl (FZC_CRAFT_*), [u8 path if fl & PATH],
	 * u16 seq delta from the peer's next new seq (signed),
	 * if fl & ACK: u16 ack delta from x's next new seq (signed), u16 wnd
	 *   (edge = ack + (wnd ^ FZ_SLOTS)), u16 ts_echo age us, u16 ts_rx delta,
	 *   u8 echo_path, nwords x u64 SACK words;
	 * payload: the type's fixed length, else u16 len % (mss + 1); its bytes
	 *   from the input, or the pattern at that seq's offset if fl & PATTERN */
	FZC_CRAFT = 3,
	/* u8 v: the clock moves (v + 1) << (3 * (op >> 4)) ns (up to 2^53 ns) */
	FZC_TIME = 4,
	/* u8 m, [u8 c], u8 fates[1 or 2]: rn_conn_write_pkt on x with
	 * writable rails m & 3, up to max = ((m >> 2) & 7) + 1 datagrams, into a
	 * buffer of c bytes if m & 32; datagram i's fate (FZC_FATE_*) is 2 bits
	 * of fates[i / 4] from bit 2 * (i % 4); fates[1] only if max > 4. */
	FZC_FLUSH = 5,
	/* u8 n: x writes (n + 1) * 64 pattern bytes */
	FZC_WRITE = 6,
	/* u8 n: x reads up to (n + 1) * 32 bytes (peek and consume if r) */
	FZC_READ = 7,
	/* rn_conn_on_timer on x when due, or anyway if r */
	FZC_TIMER = 8,
	/* u8 n: (n % 32) + 1 rounds of a clean network; rails in a are cut */
	FZC_PUMP = 9,
	FZC_SHUTDOWN = 10, /* rn_conn_shutdown on x */
	FZC_RAIL_ERROR = 11, /* rn_conn_rail_error on x, rail r */
	FZC_ABORT = 12,    /* rn_conn_abort on x */
	FZC_DELIVER_HELD = 13, /* every held pool datagram, oldest first (newest if r) */
	FZC_REFUSED = 14,  /* rn_conn_refused on x (ignored once established) */
	FZC_CHECK = 15,    /* only the invariants */
	FZC__COUNT = 16,
};

enum {
	FZC_START_ESTABLISHED = 0, /* 1 too: established, data in flight */
	FZC_START_INIT_SENT = 2,   /* the client's INIT held in the pool */
	FZC_START_COOKIE_SENT = 3, /* the client's COOKIE_ECHO held in the pool */

	FZC_FIX_DST = 1,     /* patch x's connection id into bytes 4..11 */
	FZC_FIX_HEADER = 2,  /* version 1, reserved zero, length field to fit */
	FZC_FIX_PATH = 4,    /* path byte = r */

	FZC_CRAFT_ACK = 1,   /* an ACK block */
	FZC_CRAFT_FIN = 2,
	FZC_CRAFT_PATTERN = 4,
	FZC_CRAFT_PATH = 8,  /* an explicit path byte (else r) */
	FZC_CRAFT_WORDS_SHIFT = 4, /* nwords = (fl >> 4) & 3 */

	FZC_FATE_DELIVER = 0,
	FZC_FATE_DROP = 1,
	FZC_FATE_HOLD = 2,   /* kept in the pool, undelivered */
	FZC_FATE_TWICE = 3,  /* delivered twice */
};

/*
 * fuzz_listen: op byte = op | rail << 3 | a << 5 | small << 7; rail 0-1 is a
 * listener rail, 2 and 3 stand for the invalid rails 2 and -1; a is the
 * source address choice (fz_from(0, rail, a)); small: u8 c follows the op
 * byte and the reply buffer is c bytes instead of FZ_CAP.
 */
enum fzl_op {
	FZL_RAW = 0,        /* u16 len (% FZ_MAX_PKT), len bytes */
	FZL_MUT_INIT = 1,   /* u8 n, (n & 7) mutations: the real client's INIT */
	FZL_MUT_ECHO = 2,   /* u8 n, (n & 7) mutations: the real client's COOKIE_ECHO */
	/* u8 i, u8 n, (n & 7) mutations: a COOKIE_ECHO built from cookie i the
	 * listener issued this run and the INIT it answered */
	FZL_ECHO_ISSUED = 3,
	FZL_TIME = 4,       /* u8 shift, u16 v: the clock moves (v + 1) << (shift % 40) ns */
	/* an INIT from fields: u64 id, u32 isn, u8 slots log2, u16 max_dgram,
	 * u8 nrails (% 9), nrails x (u32 ip, u16 port, u8 prefix) */
	FZL_INIT = 5,
	FZL_REPLAY_INIT = 6, /* the real INIT again */
	FZL_REPLAY_ECHO = 7, /* the real COOKIE_ECHO again */
	FZL__COUNT = 8,
};

#endif
