/*
 * rn_knob_list.h - every knob of a connection, once.
 *
 * The core takes from this list its configuration's fields, their defaults
 * and their bounds (rn_core.h, rn_config.c); the engine its environment
 * variables and socket options (src/host/rn_knobs.c); the Open MPI BTL its
 * MCA parameters (btl_ri2n/btl_ri2n_params.c); docs/CONFIG.md its table of
 * knobs (tools/ri2n-knobs-doc.c writes it, the config_doc test compares).
 * Nothing here does I/O: the core includes it for numbers only.
 *
 * RN_KNOB_LIST(X), the knobs a user sets, one row each:
 *
 *   X(NAME, field, kind, def, lo, hi, mca, doc)
 *
 *   NAME   environment variable RI2N_<NAME> and socket option RI2N_<NAME> at
 *          level RI2N_SOL (enum ri2n_option in include/ri2n.h)
 *   field  the member of rn_config it sets
 *   kind   what the user's number means, and the field's type:
 *          MS     milliseconds; the field holds nanoseconds (uint64_t)
 *          COUNT  a number, as it is (uint32_t)
 *          MTU    an IP MTU; the field is the largest datagram, MTU - 28
 *                 (IPv4 and UDP headers), at most RN_MAX_DGRAM (uint32_t)
 *          BYTES  a ring in bytes; the field counts packets of
 *                 max_dgram - RN_HDR_LEN, rounded up to a power of two within
 *                 RN_MIN_SLOTS..RN_MAX_SLOTS (uint32_t; rn_config_slots)
 *   def, lo, hi  default and bounds in the user's unit (literal numbers: the
 *          core's sentences quote them)
 *   mca    the MCA parameter's name after "btl_ri2n_"
 *   doc    one line for docs/CONFIG.md and ompi_info
 *
 * Rows are applied in this order: MTU first, because buffer sizes are
 * counted in packets of the MTU's size.
 *
 * RN_CONFIG_LIST(X), the core's own knobs that no user sets (tests and
 * drivers may): X(field, kind, def, lo, hi, doc), kinds US (microseconds,
 * the field holds nanoseconds), MS and COUNT as above.
 */
#ifndef RN_KNOB_LIST_H
#define RN_KNOB_LIST_H

#define RN_KNOB_LIST(X)                                                                      \
	X(MTU, max_dgram, MTU, 1500, 576, 65535, "mtu",                                     \
	  "IP MTU of the rails: datagrams are MTU - 28 bytes (default: the smallest rail "   \
	  "MTU, see below)")                                                                  \
	X(HEARTBEAT_MS, heartbeat_ns, MS, 100, 1, 60000, "heartbeat_ms",                     \
	  "heartbeat period while a rail is unusable; a healed rail is back within about "   \
	  "one period")                                                                       \
	X(KEEPALIVE_MS, keepalive_ns, MS, 100, 1, 60000, "keepalive_ms",                     \
	  "longest silence on an idle working rail")                                         \
	X(RAIL_TIMEOUT_MS, rail_timeout_ns, MS, 350, 2, 600000, "rail_timeout_ms",           \
	  "nothing received on a rail this long: it has failed (must exceed keepalive)")     \
	X(DEAD_PEER_MS, dead_peer_ns, MS, 30000, 3, 86400000, "dead_peer_ms",                \
	  "nothing received on any rail this long: the connection fails (ETIMEDOUT; under "  \
	  "MPI the job aborts); must exceed the rail timeout")                                \
	X(CONNECT_TIMEOUT_MS, connect_timeout_ns, MS, 30000, 1, 86400000,                    \
	  "connect_timeout_ms", "connecting (over every rail in turn) gives up (ETIMEDOUT)") \
	X(FAIL_WINDOW, fail_window, COUNT, 100, 2, 100000, "fail_window",                    \
	  "judge rails every N packets received (the RI2N paper's N)")                        \
	X(FAIL_MIN, fail_min, COUNT, 2, 1, 99999, "fail_min",                                \
	  "a rail that brought fewer than M of N packets has failed (the paper's M); M < N") \
	X(SNDBUF, snd_slots, BYTES, 2965504, 65536, 268435456, "sndbuf",                     \
	  "send ring: bytes written and not yet acknowledged; the most it grows to")         \
	X(RCVBUF, rcv_slots, BYTES, 2965504, 65536, 268435456, "rcvbuf",                     \
	  "receive ring: the window the peer may fill")                                      \
	X(KEY_AUTH_ONLY, auth_only, COUNT, 0, 0, 1, "key_auth_only",                         \
	  "with a cluster key, 1 authenticates every datagram (AES-GMAC) but leaves the "    \
	  "payload in clear, 0 encrypts it (AES-GCM); both ends must agree")                \
	X(KEY_AES256, aes256, COUNT, 0, 0, 1, "key_aes256",                                  \
	  "with a cluster key, 1 seals with AES-256 instead of AES-128 (14 rounds instead "  \
	  "of 10: about 20% more CPU per keyed byte); both ends must agree")                \
	X(REDUNDANT_BYTES, redundant_bytes, COUNT, 0, 0, 65536, "redundant_bytes",           \
	  "each DATA packet of a write whose unsent bytes are at most N goes on two working " \
	  "rails at once (the second is the best other one; none when only one works), for " \
	  "tail latency on lossy rails; 0: off")

#define RN_CONFIG_LIST(X)                                                                    \
	X(ack_every, COUNT, 8, 1, 1024, "ACK at once after this many unacknowledged packets") \
	X(ack_delay_ns, US, 200, 0, 1000000, "...or this long after the first one")          \
	X(ack_delay_pp_ns, US, 40000, 0, 1000000,                                            \
	  "...or this long while answering (request/response): the answer usually carries "  \
	  "the ACK first; the peer's RTO allows for it")                                     \
	X(ack_hold_max_ns, US, 200000, 0, 1000000,                                           \
	  "...growing to twice the latest answer (the turn of a busy event loop), up to "    \
	  "this; both ends count the same late answers")                                     \
	X(rto_min_ns, US, 20000, 100, 60000000, "floor of the retransmission timeout")       \
	X(queue_target_ns, US, 4000, 0, 1000000, "queueing delay a rail may build up")       \
	X(linger_ns, MS, 1000, 0, 86400000,                                                  \
	  "state kept after a clean close, to acknowledge a late FIN again")                 \
	X(init_cwnd, COUNT, 32, 4, 65536,                                                    \
	  "packets a rail may have in flight at the start; at most snd_slots")

/* The C type of a field of each kind. */
#define RN_KNOB_CTYPE_MS uint64_t
#define RN_KNOB_CTYPE_US uint64_t
#define RN_KNOB_CTYPE_COUNT uint32_t
#define RN_KNOB_CTYPE_MTU uint32_t
#define RN_KNOB_CTYPE_BYTES uint32_t

/* Index of each user knob in RN_KNOB_LIST: RN_KNOB_MTU, RN_KNOB_HEARTBEAT_MS, ... */
#define RN_KNOB_INDEX(NAME, field, kind, def, lo, hi, mca, doc) RN_KNOB_##NAME,
enum { RN_KNOB_LIST(RN_KNOB_INDEX) RN_KNOB__COUNT };
#undef RN_KNOB_INDEX

#endif
