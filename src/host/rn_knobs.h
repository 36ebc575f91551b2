/*
 * rn_knobs.h - every user-settable knob of a connection (one row of
 * RN_KNOB_LIST, src/core/rn_knob_list.h): its RI2N_* environment variable,
 * its RI2N_SOL socket option, its MCA name, its unit and its bounds.  The
 * environment sets a process's defaults; options change one socket.
 */
#ifndef RN_KNOBS_H
#define RN_KNOBS_H

#include <stdint.h>

#include "rn_core.h"

/* What the user's number of a knob means (the kinds of rn_knob_list.h). */
enum rn_knob_kind { RN_KNOB_K_MS, RN_KNOB_K_COUNT, RN_KNOB_K_MTU, RN_KNOB_K_BYTES };

/* One row of RN_KNOB_LIST. */
typedef struct rn_knob {
	int opt;                 /* enum ri2n_option */
	const char *env;         /* "RI2N_<NAME>" */
	const char *mca;         /* the BTL's parameter after "btl_ri2n_" */
	const char *doc;         /* one line */
	enum rn_knob_kind kind;
	size_t off;              /* its field in rn_config */
	int64_t def, lo, hi;     /* in the user's unit */
} rn_knob;

/* Every knob, in the order they must be applied (RN_KNOB_MTU first). */
extern const rn_knob rn_knobs[RN_KNOB__COUNT];

/* The row of socket option `opt`, or NULL. */
const rn_knob *rn_knob_find(int opt);
/* The unit of a knob's number: "ms", "bytes" or "" (a count). */
const char *rn_knob_unit(const rn_knob *k);
/*
 * The knob's text: its environment variable when set and not empty, else
 * the configuration file's line (rn_conf.h), else NULL.
 */
const char *rn_knob_env(int opt);

/* Where a knob's value comes from (ri2n-info prints it). */
enum { RN_FROM_DEFAULT, RN_FROM_FILE, RN_FROM_ENV };
typedef struct rn_knob_from {
	int from; /* RN_FROM_* */
	int line; /* the file's line, RN_FROM_FILE */
} rn_knob_from;

/*
 * Where the text of knob `env` ("RI2N_MTU", a row of either table) comes
 * from: RN_FROM_ENV, RN_FROM_FILE (*line its line; may be NULL) or
 * RN_FROM_DEFAULT (none).  Says nothing of whether the text is valid.
 */
int rn_knob_origin(const char *env, int *line);
/*
 * Keeps the environment's RI2N_ variables as they are now, once per process
 * image: a forked child whose environment lost one (nginx empties its
 * workers') reads the parent's value from then on.  The engine takes it
 * when it first configures.
 */
void rn_knobs_snapshot(void);
/*
 * RN_PROC_LIST(X): the knobs of a process, environment variables the core
 * never sees (some also a socket option the API applies), one row each:
 *
 *   X(NAME, type, def, lo, hi, sol, shown, doc)
 *
 *   NAME   the variable RI2N_<NAME>
 *   type   INT: a whole number within lo..hi, def when unset;
 *          TEXT: a string the code that reads it parses (def, lo, hi unused);
 *          SECRET: TEXT that is never printed nor logged (the key)
 *   sol    SOL: also the socket option RI2N_<NAME> at level RI2N_SOL (enum
 *          ri2n_option in include/ri2n.h), which changes one socket; ENV: not
 *   shown  the default as docs/CONFIG.md states it
 *   doc    one line for docs/CONFIG.md
 */
#define RN_PROC_LIST(X)                                                                     \
	X(RAILS, TEXT, 0, 0, 0, ENV, "every up, non-loopback IPv4 interface, one per subnet", \
	  "the rails, in order: interface names or addresses, comma separated "             \
	  "(`r1,r2`, `10.1.0.5,10.2.0.5`); each must be up and have an IPv4 address or an " \
	  "IPv6 one (`2001:db8:1::5`, link-local `fe80::5%eth1`, which the default never " \
	  "takes; a listed interface without one is used once it gets one); rails "          \
	  "listed in one subnet have their sockets pinned to their interfaces "             \
	  "(docs/CONFIG.md, \"Rails\"); `r3:backup` makes a backup rail, which carries data " \
	  "only while no other rail works. BTL: `btl_ri2n_if_include`")                     \
	X(LOG, TEXT, 0, 0, 0, ENV, "`warn`",                                                \
	  "what goes to stderr: `debug`, `info`, `warn`, `error`, `off`. Warnings are one " \
	  "line per event (a rail down or up, with the connection, the rail's addresses and " \
	  "the cause; a connection failing), never one per packet. BTL: `btl_ri2n_log`")    \
	X(CPU, TEXT, 0, 0, 0, ENV,                                                          \
	  "near the rails' NICs if hwloc knows, else the scheduler's choice",               \
	  "CPU number the engine thread is pinned to")                                      \
	X(GSO, INT, 1, 0, 1, ENV, "1 if the kernel has UDP GSO",                            \
	  "`0` sends datagrams one by one (for comparison). BTL: `btl_ri2n_gso`")           \
	X(GRO, INT, 1, 0, 1, ENV, "1 if the kernel has UDP GRO",                            \
	  "`0` receives datagrams one by one (for comparison). BTL: `btl_ri2n_gro`")        \
	/* 256 MiB: 21 peers with both rings grown whole, or hundreds at a fraction of that */ \
	X(RING_MEM_MB, INT, 256, 0, 2147483647, ENV, "256",                                 \
	  "Open MPI BTL only (`btl_ri2n_ring_mem_mb`): ceiling on the memory of all of a "  \
	  "rank's rings, MiB (0: none). Each peer's rings are held to an equal share of it; " \
	  "growth past it is refused with a warning (slower, nothing lost). docs/MPI.md")   \
	X(MAX_CONNS, INT, 0, 0, 2147483647, ENV, "half the descriptor limit, less 64",      \
	  "accepted connections the process holds at once (each has two descriptors and "   \
	  "its rings before `ri2n_accept`); past it a handshake is refused at once (the "   \
	  "client's connect fails with `ECONNREFUSED`), counted as `refused` on the "       \
	  "listener in `ri2n-stat`, logged at most once a second, and the next "            \
	  "`ri2n_accept` fails with `EMFILE` (`ENOBUFS` when memory ran out); 0: the default") \
	X(HANDOVER, INT, 1, 0, 1, ENV, "1",                                                 \
	  "a process that accepts on a listening socket it inherited (a prefork worker), "  \
	  "or a forked child at its first read or write of a connection its parent "        \
	  "accepted, takes the connection over from the process that listens and drives "   \
	  "it itself, if it is fresh; `0`: the listening process's engine serves it "       \
	  "through the descriptor (docs/PROTOCOL.md, \"Handing a connection over\")")      \
	X(EARLY_DATA, INT, 1, 0, 1, ENV, "1",                                               \
	  "bytes a client writes once its connect returned go out at once, behind the "     \
	  "handshake's last datagram, as TCP's do; `0`: they wait a round trip for the "    \
	  "server's COOKIE_ACK (a server of a version before early data drops them, and "   \
	  "they go again after a retransmission timeout). docs/PROTOCOL.md, \"Early data\"") \
	X(STAT_MS, INT, 250, 0, 3600000, ENV, "250",                                        \
	  "how often the process publishes its state for `ri2n-stat`, ms (0: never); see "  \
	  "OPERATIONS.md")                                                                  \
	X(RUN_DIR, TEXT, 0, 0, 0, ENV,                                                      \
	  "`/run/ri2n` (root), `/run/user/<uid>/ri2n` when that session directory exists, " \
	  "else `/tmp/ri2n-<uid>`",                                                         \
	  "where those snapshots go (a real directory of this user, not writable by "       \
	  "others: see OPERATIONS.md)")                                                     \
	X(EXIT_LINGER_MS, INT, 30000, 0, 86400000, ENV, "30000",                            \
	  "at exit, how long to wait (ms) for connections to deliver what the application " \
	  "wrote (the engine thread dies with the process). A connection that has just "    \
	  "closed also keeps its process for its linger (1 s), to acknowledge the peer's "  \
	  "FIN again if the first ACK was lost (TCP's TIME_WAIT, which the kernel does for " \
	  "TCP); without it the peer would wait out its dead-peer timeout")                 \
	X(KEY, SECRET, 0, 0, 0, SOL, "none",                                                \
	  "the cluster key, 64 hexadecimal digits (32 bytes): every datagram is encrypted " \
	  "and authenticated (AES-128-GCM, or AES-256 with RI2N_KEY_AES256, under keys "   \
	  "derived for its connection) and peers "                                         \
	  "without the same key cannot connect (see PROTOCOL.md, \"Authentication and "     \
	  "encryption\"). The option takes the 32 key bytes themselves (not an int), or "   \
	  "length 0 for none; reading it gives an int, 1 if a key is set; the key itself "  \
	  "can never be read back")                                                         \
	X(KEY_FILE, TEXT, 0, 0, 0, ENV, "none",                                             \
	  "the key read from a file holding the 64 hex digits (a trailing newline is fine), " \
	  "so it stays out of process listings and environments; not with `RI2N_KEY`. BTL: " \
	  "`btl_ri2n_key_file`")                                                            \
	/* 1 s at most: RN_BUSY_POLL_MAX_US (rn_inline.h), which also reads `auto` as -1 */ \
	X(BUSY_POLL_US, INT, -1, -1, 1000000, SOL, "-1 (`auto`)",                           \
	  "how long a waiting thread polls the rails before it sleeps, like "               \
	  "`SO_BUSY_POLL`: in `ri2n_recv`/`ri2n_send`, under ri2n-run in "                  \
	  "`read`/`recv`/`poll`/`epoll_wait`/`select`. -1 (`auto` in the environment): "    \
	  "adaptive per thread, 0..400 us as its recent waits show pays (docs/API.md, "     \
	  "\"The fast path\"); 0: never; N: always N us, and then the engine thread too "   \
	  "polls N us between its events (faster plain `read`/`write`, a core kept busy). " \
	  "The option may be set at any time, also once connected")                       \
	X(PLAIN_FAST, INT, 1, 0, 1, ENV, "1",                                               \
	  "a program linked with libri2n.so: `read`/`write`/`recv`/`send`/`readv`/"         \
	  "`writev`/`recvfrom`/`sendto`/`recvmsg`/`sendmsg` on a ri2n descriptor take the " \
	  "fast path, as `ri2n_recv`/`ri2n_send` do (libri2n defines them before libc's; "  \
	  "other descriptors pass on). 0: they reach the descriptor and ri2n's engine "     \
	  "thread, as raw system calls, stdio and a static libri2n.a always do; also for a " \
	  "program that writes to one connection both through libri2n and with raw system " \
	  "calls, `io_uring` or `aio_write` (every fast send then first looks for such "     \
	  "bytes, to keep the order: docs/API.md)")

#define RN_PROC_INDEX(NAME, type, def, lo, hi, sol, shown, doc) RN_PROC_##NAME,
enum { RN_PROC_LIST(RN_PROC_INDEX) RN_PROC__COUNT };
#undef RN_PROC_INDEX

/*
 * The variable of process knob `which` (RN_PROC_*), "RI2N_<NAME>", or NULL.
 * Inline, so that a program that reads the variables without linking the
 * library (ri2n-stat) takes the names from the table too.
 */
static inline const char *rn_proc_name(int which)
{
#define RN_PROC_NAME_CASE(NAME, type, def, lo, hi, sol, shown, doc) \
	case RN_PROC_##NAME: return "RI2N_" #NAME;
	switch (which) {
	RN_PROC_LIST(RN_PROC_NAME_CASE)
	}
#undef RN_PROC_NAME_CASE
	return NULL;
}

/*
 * RI2N_RUN_DIR unset, the directory of the snapshots for ri2n-stat
 * (rn_statfile.c writes there, ri2n-stat looks in each): root's; a user's
 * under the session directory when that is theirs; else one in /tmp.  The
 * %u is the user id.
 */
#define RN_RUN_DIR_ROOT "/run/ri2n"
#define RN_RUN_DIR_SESSION "/run/user/%u"
#define RN_RUN_DIR_USER RN_RUN_DIR_SESSION "/ri2n"
#define RN_RUN_DIR_TMP "/tmp/ri2n-%u"

/* One row of RN_PROC_LIST. */
enum rn_proc_type { RN_PROC_T_TEXT, RN_PROC_T_INT, RN_PROC_T_SECRET };

typedef struct rn_proc_knob {
	const char *env;     /* "RI2N_<NAME>" */
	enum rn_proc_type type;
	int opt;             /* its enum ri2n_option (sol SOL), else 0 */
	int64_t def, lo, hi;
	const char *shown, *doc;
} rn_proc_knob;

extern const rn_proc_knob rn_proc_knobs[RN_PROC__COUNT];

/*
 * Process knob `which` (RN_PROC_*) as set in the environment, else in the
 * configuration file, NULL when neither sets it (an empty variable is
 * unset).  A SECRET one's text is never printed nor logged.
 */
const char *rn_proc_text(int which);
/*
 * Process knob `which`, a number (type INT): *v is its value, or its default
 * when the variable is unset or the row is no INT (returns 0) or not a
 * number within its bounds (returns -1, after a warning that names it, once
 * a process); 1 when set.
 */
int rn_proc_int(int which, int64_t *v);
/* The same, only the value. */
int64_t rn_proc_get(int which);

/* Applies socket option `opt` (enum ri2n_option) = v; 0 or -EINVAL / -ENOPROTOOPT. */
int rn_knob_set(rn_config *cfg, int opt, int64_t v);
/* Reads option `opt` into *v; 0 or -ENOPROTOOPT. */
int rn_knob_get(const rn_config *cfg, int opt, int64_t *v);
/*
 * Applies every connection knob the environment or the configuration file
 * sets; warns about bad ones (naming the variable, or the file and line) and
 * keeps the default.  from (may be NULL): RN_KNOB__COUNT rows, where each
 * value applied came from.
 */
void rn_knobs_apply(rn_config *cfg, rn_knob_from *from);
/* The same, without the rows. */
void rn_knobs_from_env(rn_config *cfg);
/*
 * Applies the cluster key from RI2N_KEY (64 hex digits) or RI2N_KEY_FILE (a
 * file holding them), if one is set; with neither in the environment, from
 * the key file the configuration file names (a configuration file that
 * sets RI2N_KEY itself is refused, -EINVAL).  A bad key is an error, never ignored:
 * running without the key the user asked for would be silently insecure.
 * Returns 0 or -EINVAL (logged, never with the key).
 */
int rn_knobs_key_from_env(rn_config *cfg);
/* The same from a file given by path (the BTL's btl_ri2n_key_file). */
int rn_knobs_key_from_file(rn_config *cfg, const char *path);

#endif
