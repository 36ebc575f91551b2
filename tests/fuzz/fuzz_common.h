/*
 * fuzz_common.h - what the fuzz targets and the corpus generator share.
 *
 *   - FZ_CHECK: an invariant of the core; a failure prints why and aborts,
 *     so libFuzzer keeps the input (assert() is compiled out in release);
 *   - a seeded rng, a counting allocator, a reader of fuzz input;
 *   - the byte pattern each end of a pair streams to the other;
 *   - a deterministic client/server pair over 2 rails, driven by hand with
 *     a virtual clock: the same constants give the same connection ids,
 *     sequence numbers and cookies every time, so datagrams captured by
 *     gen_corpus are valid in the fuzz targets.
 *
 * Everything the pair does to a connection goes through the fz_* calls
 * below, and each of them checks the invariants listed in fuzz_pair.c.
 */
#ifndef FUZZ_COMMON_H
#define FUZZ_COMMON_H

#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>

#include "ri2n_kit.h"
#include "rn_core.h"

/* The libFuzzer entry point every target defines (replay_main.c calls it). */
int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

void fz_fail(const char *file, int line, const char *cond, const char *fmt, ...)
	__attribute__((noreturn, format(printf, 4, 5)));

#define FZ_CHECK(cond, ...)                                                \
	do {                                                               \
		if (!(cond))                                               \
			fz_fail(__FILE__, __LINE__, #cond, __VA_ARGS__);   \
	} while (0)

enum {
	FZ_RAILS = 2,      /* rails on each host */
	FZ_DGRAM = 320,    /* max_dgram of both ends: small rings, short inputs */
	FZ_SLOTS = 128,    /* send and receive rings, packets: two SACK words */
	FZ_CAP = 2048,     /* buffer given to rn_conn_write_pkt / rn_listener_recv */
	FZ_MAX_PKT = 1024, /* largest datagram a fuzz op injects */
	FZ_POOL = 32,      /* datagrams the pair keeps for replay and mutation */
	FZ_SEQMAP = 4096,  /* DATA packets remembered per direction */
	FZ_MAX_IDS = 1024, /* server ids remembered (more: not checked) */
	FZ_SERVER_PORT = 7000,
	FZ_CLIENT_PORT = 40000, /* + rail index */
};

/* 1000 s: clear of 0, which some fields of the core use as "unset". */
#define FZ_T0 UINT64_C(1000000000000)
/* Clock steps of the pair itself (handshake, pump rounds). */
#define FZ_STEP_NS UINT64_C(100000) /* 100 us */
/*
 * fz_drain's bounds: the dead-peer timeout (30 s) of simulated time, at most
 * 20000 steps.  Over a clean network keepalives keep the peer alive, so a
 * stream stuck longer than that would be a silent hang.
 */
#ifndef FZ_DRAIN_NS /* -DFZ_DRAIN_NS=... to see how long a stall lasts */
#define FZ_DRAIN_NS UINT64_C(30000000000)
#endif
#define FZ_DRAIN_ROUNDS 20000
/* Times never go past this: 2^62 ns is 146 years. */
#define FZ_TIME_MAX (UINT64_C(1) << 62)

/* Seeds of the hosts' rngs and of the pattern each host writes. */
#define FZ_SEED_CLIENT UINT64_C(0x636c69656e74) /* "client" */
#define FZ_SEED_SERVER UINT64_C(0x736572766572) /* "server" */
#define FZ_PATTERN_CLIENT UINT64_C(0xc11e)
#define FZ_PATTERN_SERVER UINT64_C(0x5e77)

/* ---- small helpers ---- */

/*
 * True when the environment says to step over a known, open core bug
 * (RI2N_FUZZ_SKIP_KNOWN=id,id... or all), so a long run can look past it;
 * the ids and their reproducers are in tests/fuzz/crashes/open/.
 */
int fz_known(const char *id);

/* splitmix64 over the state pointed to by `user` (a uint64_t). */
uint64_t fz_rng_next(void *user);

/* An allocator that counts what is live; `forbid` makes any call a failure. */
typedef struct fz_mem {
	long live;  /* allocations not yet freed */
	long calls; /* alloc calls so far */
	int forbid;
	const char *who; /* names the owner in a failure message */
} fz_mem;

rn_mem fz_mem_of(fz_mem *m);

/* Fuzz input read front to back; reads past the end return zeros. */
typedef struct fz_in {
	const uint8_t *p;
	size_t n;
} fz_in;

uint8_t fz_u8(fz_in *in);
uint16_t fz_u16(fz_in *in);
uint32_t fz_u32(fz_in *in);
uint64_t fz_u64(fz_in *in);
/* Copies up to n bytes; returns how many there were. */
size_t fz_bytes(fz_in *in, uint8_t *out, size_t n);

/* Streams carry the test kit's pattern (tools/kit/ri2n_kit.h): kit_pattern_fill, kit_pattern_check. */

/* A code that ends a connection (rn_core.h: at or below RN_ERR__FATAL). */
int fz_is_fatal(int err);

/* Rail r of host h (0 client, 1 server): 198.18.(r+1).(h+1)/24. */
rn_rail_addr fz_rail(int host, int r);
rn_addr fz_addr(int host, int r);
/*
 * The source address of a datagram host `from` sends on rail r, as the
 * fuzzer chooses it: 0 the real one, 1 the host's other rail, 2 the real IP
 * with another port, 3 a stranger.
 */
rn_addr fz_from(int from, int r, int choice);
int fz_addr_eq(rn_addr a, rn_addr b);

/* The configuration of both ends: defaults, small rings and datagrams. */
void fz_config(rn_config *cfg);

/* Mutates a datagram: count x (u16 pos, u8 val), xor (or set, top bit of pos). */
size_t fz_mutate(fz_in *in, uint8_t *pkt, size_t len, unsigned count);

/* ---- the pair ---- */

/* A datagram the pair sent, kept for replay and mutation. */
typedef struct fz_pkt {
	int to;       /* host it is addressed to */
	int rail;     /* rail index on both hosts (rails pair by index) */
	int held;     /* not delivered yet */
	size_t len;
	uint8_t data[FZ_DGRAM];
} fz_pkt;

/* A DATA packet as first sent: where its bytes are in the stream. */
typedef struct fz_sent {
	uint64_t off;
	uint16_t len;
	uint8_t fin;
} fz_sent;

typedef struct fz_pair fz_pair;

typedef struct fz_host {
	fz_pair *pair;
	int id;      /* 0 client, 1 server */
	rn_conn *conn;
	uint64_t rng;
	int state;   /* last state seen: states only move forward */
	/* the application: a pattern stream each way */
	uint64_t tx_seed;  /* pattern this host writes */
	uint64_t written;  /* stream bytes rn_conn_write took */
	uint64_t shut_at;  /* `written` when the shutdown was accepted */
	int shut;
	uint64_t recvd;    /* bytes read and checked */
	int eof;
	int tainted;       /* a forged DATA was accepted: the content is the fuzzer's */
	/* DATA this host sent, indexed by seq - seq_base */
	int seq_known;
	uint32_t seq_base, nsent;
	uint64_t sent_off; /* stream offset of the next new DATA */
	fz_sent sent[FZ_SEQMAP];
} fz_host;

typedef void (*fz_tap)(void *arg, const fz_pair *p, int host, const uint8_t *pkt, size_t len,
		       int rail);

struct fz_pair {
	fz_host h[2];
	rn_listener lis;
	fz_mem mem;
	rn_config cfg;
	uint64_t now;
	fz_pkt pool[FZ_POOL];
	unsigned npool, pool_next;
	int nevents;
	int forged_hs; /* the client took a forged INIT_ACK: addresses are unchecked */
	int forged_any; /* a datagram the pair never sent got past the address checks */
	uint64_t drain_ns; /* how long fz_drain took */
	uint64_t ids[FZ_MAX_IDS]; /* server ids the listener gave out (INIT_ACK) */
	unsigned nids;
	uint64_t acc[FZ_MAX_IDS]; /* ids of the server connections accepted */
	unsigned nacc;
	uint64_t client_dst; /* id the client addressed last */
	uint64_t client_ids[8]; /* every id the client has had (a handshake restart draws one) */
	int nclient_ids;
	fz_tap tap; /* sees every datagram the pair sends (gen_corpus) */
	void *tap_arg;
};

/* How far fz_pair_open_at takes the handshake. */
enum fz_stage {
	FZ_STAGE_INIT_SENT,   /* client INIT written, held; no server connection */
	FZ_STAGE_COOKIE_SENT, /* INIT_ACK delivered, COOKIE_ECHO written, held */
	FZ_STAGE_ESTABLISHED, /* both ends established */
};

/*
 * Connects a client (host 0) to a server (host 1) through the listener,
 * deterministically, as far as `stage`; the handshake datagrams are in the
 * pool.  Fails the run if a step does not happen.  fz_pair_open goes all
 * the way.
 */
void fz_pair_open_at(fz_pair *p, int stage);
void fz_pair_open(fz_pair *p);
/* Frees both connections and checks every allocation was returned. */
void fz_pair_close(fz_pair *p);

/*
 * One datagram from rn_conn_write_pkt, given cap bytes of room (exactly:
 * an overrun is caught), with every output invariant checked and DATA
 * recorded.  The datagram is added to the pool, held, and *out points at
 * it until the next pool write.  Returns its length, 0 or RN_ERR_NOBUF.
 */
ssize_t fz_write_pkt(fz_pair *p, int host, uint32_t writable, size_t cap, fz_pkt **out);

/*
 * Feeds a datagram to host `to` on rail `rail` from `from`.  `genuine` says
 * the pair wrote it unchanged; a forged DATA that is accepted taints the
 * stream (the check of read bytes stops, the rest go on).
 */
int fz_deliver(fz_pair *p, int to, int rail, rn_addr from, const uint8_t *pkt, size_t len,
	       int genuine);
/* A pool datagram to its own destination, on its rail, from its real source. */
int fz_deliver_pkt(fz_pair *p, const fz_pkt *k);

/* The application writes n more pattern bytes / reads and checks up to n. */
void fz_app_write(fz_pair *p, int host, size_t n);
void fz_app_read(fz_pair *p, int host, size_t n, int peek);
/* rn_conn_shutdown, remembering where the stream ends. */
void fz_app_shutdown(fz_pair *p, int host);

/*
 * rn_conn_on_timer if due (or if forced), then checks the expiry: if it is
 * not after now, something must be owed; sending it (all rails writable,
 * delivered), with at most two more on_timer calls at the same time, must
 * put the expiry after now.  RI2N_FUZZ_STRICT_EXPIRY=1 in the environment
 * allows no second call.
 */
void fz_timer(fz_pair *p, int host, int force);

/* Sends up to max datagrams host has on `writable` rails, delivered; returns how many. */
unsigned fz_flush(fz_pair *p, int host, uint32_t writable, unsigned max);

/* `rounds` steps of a clean network (drop_rails: rails that lose everything). */
void fz_pump(fz_pair *p, int rounds, uint32_t drop_rails);

/* Advances the clock (saturating at FZ_TIME_MAX). */
void fz_advance(fz_pair *p, uint64_t dt_ns);

/*
 * Liveness: unless a connection died or a forged datagram was accepted
 * (which may, say, acknowledge data that never arrived), a clean network
 * (every rail writable, nothing lost, timers run) must deliver every byte
 * written and every FIN within FZ_DRAIN_NS of simulated time (drain_ns
 * says how long it took).
 */
void fz_drain(fz_pair *p);

/* Invariants checked after every operation. */
void fz_pair_check(fz_pair *p);

/* The next new DATA sequence number of host's stream (0 before any). */
uint32_t fz_next_seq(const fz_pair *p, int host);

#endif
