/*
 * rfi.h - libri2n-fi.so, the libfabric provider "ri2n".
 *
 * A driver of the ri2n core and host kit, like the Open MPI BTL: no thread
 * of its own; the application's progress calls (fi_cq_read and the data
 * calls, FI_PROGRESS_MANUAL) read the rail sockets, run the core's timers
 * and move bytes.  Everything ri2n does underneath (striping, failure
 * detection, failover, heal) comes with it.
 *
 * Objects, one file each: rfi_prov.c (entry point, fi_getinfo, fabric),
 * rfi_eq.c (the event queue), rfi_cntr.c (counters), rfi_wait.c (wait objects), rfi_domain.c (domain, memory registration that registers
 * nothing), rfi_av.c (address vector), rfi_cq.c (completion queue),
 * rfi_ep.c (endpoint object, keeper thread), rfi_pass.c (rail sockets,
 * connections, the progress pass),
 * rfi_msg.c (send/recv, tagged, matching, framing on the stream),
 * rfi_ux.c (the unexpected list),
 * rfi_hello.c (whose an inbound stream is, streams giving way to newer ones),
 * rfi_name.c (endpoint names), rfi_stat.c (the snapshot ri2n-stat reads).
 *
 * FI_EP_RDM over ri2n streams: an endpoint has one UDP socket per rail and
 * one ri2n listener.  The first message to a peer opens a connection to it;
 * messages to that peer go in order on that stream (FI_ORDER_SAS), each as
 * a 16-byte header and its payload.  Its replies come on the peer's own
 * connection to us, which opens with a hello naming the peer (its rails),
 * so a receive knows its source (FI_SOURCE, FI_DIRECTED_RECV).  One
 * connection per direction: nobody has to decide who connects.
 *
 * Send completions mean the payload is in ri2n's send ring (the buffer may
 * be reused, "inject complete"): ri2n then delivers it across rail failures;
 * only the death of the whole connection (every rail silent past the
 * dead-peer timeout, or a reset) loses it, and that is reported on the
 * peer's later operations and on receives matched to its stream.
 *
 * Threading: one lock per domain around every call (FI_THREAD_SAFE).  A
 * "keeper" thread per endpoint runs the pass when the application has not
 * called in for a while: a program that waits elsewhere (fi_pingpong on its
 * control socket, MPI computing) still gets its queued bytes sent, its
 * peers' data acknowledged and its rails kept alive.
 */
#ifndef RFI_H
#define RFI_H

#include <pthread.h>
#include <stdint.h>
#include <sys/uio.h>

#include <rdma/fabric.h>
#include <rdma/fi_cm.h>
#include <rdma/fi_domain.h>
#include <rdma/fi_endpoint.h>
#include <rdma/fi_eq.h>
#include <rdma/fi_errno.h>
#include <rdma/fi_tagged.h>
#include <rdma/providers/fi_prov.h>

#include "rfi_knob_list.h"
#include "rn_core.h"
#include "rn_hsock.h"
#include "rn_hconn.h"
#include "rn_hfollow.h"
#include "rn_hkeep.h"
#include "rn_hmon.h"
#include "rn_hpass.h"
#include "rn_hpoll.h"
#include "rn_htab.h"
#include "rn_rails.h"

#define RFI_PROV_NAME "ri2n"
#define RFI_FABRIC_NAME "ri2n"
#define RFI_VERSION FI_VERSION(1, 0)
#define RFI_API FI_VERSION(1, 17)

#define RFI_CAPS (FI_MSG | FI_TAGGED | FI_SEND | FI_RECV | FI_SOURCE | FI_DIRECTED_RECV | \
		  FI_REMOTE_CQ_DATA | FI_LOCAL_COMM | FI_REMOTE_COMM)
/*
 * Completion levels fi_getinfo refuses as a default: a send completes once in
 * ri2n's send ring (inject complete).  On a single send (fi_pingpong's last
 * message) they are taken as that.
 */
#define RFI_LATER_COMPLETIONS (FI_TRANSMIT_COMPLETE | FI_DELIVERY_COMPLETE | FI_COMMIT_COMPLETE)
#define RFI_TAG_FORMAT UINT64_C(0xaaaaaaaaaaaaaaaa) /* FI_TAG_GENERIC: 64 bits, all for the user */

/* All the provider's limits in one place. */
enum {
	RFI_HDR_LEN = 16,           /* stream frame header: rfi_msg.c */
	RFI_IOV_MAX = 8,            /* iov entries per operation */
	RFI_QUEUE_SIZE = 4096,      /* tx/rx queue depth advertised */
	RFI_CQ_SIZE = 65536,        /* CQ entries when the application names none */
	RFI_MAX_MSG = 1 << 30,      /* largest message, bytes */
	RFI_NAME_LEN = 4 + 7 * RN_MAX_RAILS, /* endpoint name (<= FI_NAME_MAX): rfi_name.c */
	RFI_CQ_DATA_SIZE = 8,       /* bytes of remote CQ data a message may carry */
	RFI_HDR_MAX = 2 * RFI_HDR_LEN + 8, /* a data frame, its 8 bytes and the message's header */
};

/* ---- knobs (rfi_prov.c): FI_RI2N_* through fi_param, read once (rfi_knob_list.h) ---- */
#define RFI_KNOB_CTYPE_INT uint64_t
#define RFI_KNOB_CTYPE_TEXT const char *
#define RFI_KNOB_FIELD(name, field, type, def, hi, scale, shown, doc) RFI_KNOB_CTYPE_##type field;
typedef struct rfi_knobs {
	RFI_KNOB_LIST(RFI_KNOB_FIELD)
} rfi_knobs;
#undef RFI_KNOB_FIELD

extern struct fi_provider rfi_prov;
extern rfi_knobs rfi_k;

/* The entry point libfabric calls when it loads libri2n-fi.so (FI_EXT_INI, rfi_prov.c). */
struct fi_provider *fi_prov_ini(void);

/* The clock every call uses (CLOCK_MONOTONIC ns); tests may point it at a fake one. */
extern uint64_t (*rfi_clock)(void);

/* ---- names (rfi_name.c) ---- */
typedef struct rfi_name {
	int n;                      /* rails */
	rn_rail_addr rail[RN_MAX_RAILS];
} rfi_name;

/* Whether a name's rails fit in its wire form (IPv6 addresses take room): 1 or 0. */
int rfi_name_fits(const rfi_name *nm);
/* Writes the RFI_NAME_LEN-byte wire form of a name (one that fits). */
void rfi_name_write(const rfi_name *nm, uint8_t out[RFI_NAME_LEN]);
/* Reads one; 0, or -FI_EINVAL if it is not an ri2n name. */
int rfi_name_read(rfi_name *nm, const uint8_t *in, size_t len);
/* The same for a source address (fi_info's src_addr): port 0 means any. */
int rfi_name_read_src(rfi_name *nm, const uint8_t *in, size_t len);
/* "ri2n://198.18.1.1:4000/24,198.18.2.1:4001/24" */
void rfi_name_str(const rfi_name *nm, char *buf, size_t len);
/* Same rails, same ports. */
int rfi_name_eq(const rfi_name *a, const rfi_name *b);

/* ---- fabric, domain ---- */
typedef struct rfi_fabric {
	struct fid_fabric f;
} rfi_fabric;

typedef struct rfi_domain {
	struct fid_domain d;
	rfi_fabric *fab;
	pthread_mutex_t lock;       /* every call into the domain's objects */
	int refs;                   /* objects opened on it */
	uint32_t api;               /* the application's FI_VERSION */
} rfi_domain;

int rfi_domain_open(struct fid_fabric *f, struct fi_info *info, struct fid_domain **d,
		    void *ctx);

/* ---- address vector (rfi_av.c) ---- */
typedef struct rfi_av {
	struct fid_av av;
	rfi_domain *dom;
	rfi_name *names;            /* fi_addr_t i is names[i] */
	uint8_t *used;
	size_t n, cap;
	uint64_t gen;               /* bumps on every insert / remove: source caches check it */
	int refs;                   /* endpoints bound */
} rfi_av;

int rfi_av_open(struct fid_domain *d, struct fi_av_attr *attr, struct fid_av **av, void *ctx);
/* The name behind fi_addr, or NULL. */
const rfi_name *rfi_av_get(const rfi_av *av, fi_addr_t a);
/* The fi_addr_t of a name, or FI_ADDR_NOTAVAIL. */
fi_addr_t rfi_av_find(const rfi_av *av, const rfi_name *nm);

/* ---- wait objects (rfi_wait.c); every call but init/fini under the domain lock ---- */
typedef struct rfi_ep rfi_ep;

typedef struct rfi_wait {
	enum fi_wait_obj obj;       /* FI_WAIT_NONE, FI_WAIT_YIELD or FI_WAIT_FD */
	int efd;                    /* eventfd: something came, or a signal; -1: none */
	int pfd;                    /* epoll set of efd and the endpoints' rails (FI_GETWAIT) */
	int armed;                  /* efd written since it was last drained */
	int sleepers;               /* threads between their look and their wake-up */
	int given;                  /* FI_GETWAIT handed pfd out: every arrival wakes it */
	int wakeup;                 /* a signal: the next blocking read returns at once */
} rfi_wait;

/* The application's clock (blocking calls' timeouts), whatever clock the core is given. */
uint64_t rfi_mono_ns(void);
/* FI_WAIT_UNSPEC is FI_WAIT_FD.  0, -FI_ENOSYS (a kind not offered) or -FI_ENOMEM. */
int rfi_wait_init(rfi_wait *w, enum fi_wait_obj obj);
void rfi_wait_fini(rfi_wait *w);
/* An endpoint bound (add) or unbound: its rails join / leave the epoll set. */
void rfi_wait_ep(rfi_wait *w, rfi_ep *ep, int add);
/* Something came: wake whoever waits. */
void rfi_wait_notify(rfi_wait *w);
/* fi_cq_signal: wake the sleeper, or the next one.  0 or -FI_ENOSYS (no wait object). */
int rfi_wait_signal(rfi_wait *w);
/* Nothing waiting any more: the fd stops being readable. */
void rfi_wait_drain(rfi_wait *w);
/* Sleeps, the domain lock let go, until a notify, a datagram on eps' rails, a timer or left_ns. */
void rfi_wait_sleep(rfi_wait *w, rfi_domain *dom, rfi_ep **eps, int neps, uint64_t left_ns);
/* FI_GETWAIT, FI_GETWAITOBJ (ready: something waits already); else -FI_ENOSYS. */
int rfi_wait_control(rfi_wait *w, int cmd, void *arg, int ready);

/* ---- completion queue (rfi_cq.c) ---- */
typedef struct rfi_cqerr {
	struct rfi_cqerr *next;
	struct fi_cq_err_entry e;
} rfi_cqerr;

typedef struct rfi_cq {
	struct fid_cq cq;
	rfi_domain *dom;
	enum fi_cq_format format;
	struct fi_cq_tagged_entry *ring;
	fi_addr_t *src;
	size_t cap, head, count;
	rfi_cqerr *err, *err_tail;  /* error completions, in order */
	uint64_t overruns;          /* completions lost to a full ring (never with FI_RM_ENABLED use) */
	rfi_ep **eps;               /* endpoints bound: a read progresses them */
	int neps;
	rfi_wait wait;
} rfi_cq;

int rfi_cq_open(struct fid_domain *d, struct fi_cq_attr *attr, struct fid_cq **cq, void *ctx);
/* Queues a completion; 0, or -FI_EAGAIN when the ring is full (counted). */
int rfi_cq_push(rfi_cq *cq, const struct fi_cq_tagged_entry *e, fi_addr_t src);
/* Queues an error completion (err: positive FI_E* code). */
void rfi_cq_push_err(rfi_cq *cq, const struct fi_cq_tagged_entry *e, int err, size_t olen,
		     int prov_errno);
/* Adds / removes an endpoint that reads of the CQ drive. */
int rfi_cq_attach(rfi_cq *cq, rfi_ep *ep);
void rfi_cq_detach(rfi_cq *cq, rfi_ep *ep);
/* Copies n entries in the CQ's format (exposed for tests). */
ssize_t rfi_cq_take(rfi_cq *cq, void *buf, size_t count, fi_addr_t *src);
/* fi_trywait: 0 if every CQ and EQ of fids is empty (their fds may be waited on). */
int rfi_trywait(struct fid_fabric *f, struct fid **fids, int count);

/* ---- counters (rfi_cntr.c) ---- */
typedef struct rfi_cntr {
	struct fid_cntr cntr;
	rfi_domain *dom;
	uint64_t value, err;
	rfi_ep **eps;               /* endpoints bound: a read or wait progresses them */
	int neps;
	rfi_wait wait;
} rfi_cntr;

int rfi_cntr_open(struct fid_domain *d, struct fi_cntr_attr *attr, struct fid_cntr **c,
		  void *ctx);
/* An operation completed (failed: in error); domain lock held. */
void rfi_cntr_inc(rfi_cntr *c, int failed);
/* Adds / removes an endpoint that reads of the counter drive. */
int rfi_cntr_attach(rfi_cntr *c, rfi_ep *ep);
void rfi_cntr_detach(rfi_cntr *c, rfi_ep *ep);

/* ---- event queue (rfi_eq.c) ---- */
int rfi_eq_open(struct fid_fabric *fab, struct fi_eq_attr *attr, struct fid_eq **eq, void *ctx);
/* -FI_EAGAIN if the EQ holds an event, else 0 (fi_trywait). */
int rfi_eq_trywait(struct fid_eq *eq);

/* ---- operations and the endpoint (rfi_ep.c, rfi_msg.c) ---- */
enum rfi_kind { RFI_MSG = 2, RFI_TAG = 3, RFI_HELLO = 1, RFI_DATA = 4 /* the next one's CQ data */ };
#define RFI_KIND_FLAGS(k) ((k) == RFI_TAG ? FI_TAGGED : FI_MSG)
/*
 * An operation that reports nothing on the CQ: fi_inject / fi_tinject (FI_INJECT
 * as a flag only frees the buffer at return; the completion still comes) and a
 * message FI_PEEK | FI_DISCARD drops once it is whole.  A bit no FI_* op flag uses.
 */
#define RFI_SILENT (1ULL << 62)

typedef struct rfi_op {
	struct rfi_op *next;
	void *context;
	uint64_t flags;             /* FI_COMPLETION, FI_INJECT, ... of the call */
	uint64_t tag, ignore;
	fi_addr_t addr;             /* send: destination; recv: source wanted or FI_ADDR_UNSPEC */
	int kind;                   /* RFI_MSG / RFI_TAG */
	struct iovec iov[RFI_IOV_MAX];
	size_t niov, len;           /* total bytes */
	size_t done;                /* send: bytes of header+payload in the stream; recv: bytes in */
	uint64_t cq_data;           /* FI_REMOTE_CQ_DATA: sent with it, or came with the message */
	uint8_t has_data;
	size_t hlen;                /* send: bytes of hdr */
	uint8_t hdr[RFI_HDR_MAX];
	uint8_t *copy;              /* inject: the payload's copy */
} rfi_op;

/* A message that came before its receive. */
typedef struct rfi_unexp {
	struct rfi_unexp *next;
	struct rfi_link *from;      /* NULL once complete or the link died */
	struct rfi_link *owner;     /* the link it came on, while that lives (its cap) */
	rfi_name src;
	fi_addr_t src_addr;
	uint64_t src_gen;
	int kind;
	uint64_t tag;
	uint64_t cq_data;           /* FI_REMOTE_CQ_DATA it came with (has_data) */
	uint8_t has_data;
	size_t len, have;
	int err;                    /* its stream died before the whole message came */
	rfi_op *claimed;            /* a receive matched it before it was whole */
	void *claim_ctx;            /* FI_PEEK | FI_CLAIM: kept for the receive with this context */
	uint8_t *data;
} rfi_unexp;

typedef struct rfi_peer rfi_peer;

/* One ri2n connection: to a peer (we connected: outbound) or from one (accepted). */
typedef struct rfi_link {
	rn_hconn h;                 /* the kit's part (first): conn, id, list, dead, dirty */
	rfi_ep *ep;
	rfi_peer *peer;             /* outbound: whose; inbound: NULL */
	uint8_t hello_done, eof;
	uint8_t retired;            /* gave way to a newer stream (rfi_hello.c): RFI_RETIRED_* */
	struct rfi_link *after;     /* inbound: a retired link of its name, read before it */
	/* inbound: the stream's receive side */
	int have_name;
	rfi_name src;
	fi_addr_t src_addr;         /* cached AV lookup... */
	uint64_t src_gen;           /* ...for this AV generation */
	uint8_t hdr[RFI_HDR_LEN];
	uint8_t hello[RFI_NAME_LEN];
	uint8_t data[8];            /* a data frame's CQ data, for the next message */
	uint8_t has_data;
	size_t hdr_have;
	size_t left;                /* payload bytes of the current message still to come */
	size_t mlen;                /* its whole length */
	rfi_op *into;               /* ...going into this receive */
	rfi_unexp *ux;              /* ...or into this buffer */
	int skip;                   /* ...or into nothing (RFI_HELLO, RFI_DATA: a frame's payload) */
	int skip_kind;
	uint64_t ux_ns;             /* when the unexpected one last got bytes (its stall) */
	size_t ux_held;             /* bytes of its messages in the unexpected list */
} rfi_link;

/* rfi_link.retired */
enum {
	RFI_RETIRED_IN = 1,         /* inbound, superseded: drains to its peer's end */
	RFI_RETIRED_DONE = 2,       /* inbound, superseded and ended */
	RFI_RETIRED_OUT = 3,        /* outbound, ended by its peer: no longer its peer's link */
};

/* A destination we send to. */
struct rfi_peer {
	fi_addr_t addr;
	rfi_name name;
	rfi_link *link;             /* the outbound connection, or NULL */
	int attempt;                /* connect attempts made (rails tried in turn) */
	uint64_t attempt_end_ns, give_up_ns;
	rfi_op *q, *q_tail;         /* sends not yet wholly in the stream */
	size_t queued;
	int err;                    /* last connection's death (positive FI_E*) for the log */
};

struct rfi_ep {
	struct fid_ep ep;
	rfi_domain *dom;
	rfi_av *av;
	rfi_cq *txcq, *rxcq;
	rfi_cntr *txcntr, *rxcntr;     /* FI_SEND / FI_RECV counters bound, or NULL */
	uint64_t tx_flags, rx_flags;   /* FI_SELECTIVE_COMPLETION from the bind */
	uint64_t tx_op_flags, rx_op_flags;
	uint64_t caps;
	int enabled;
	int in_pass;
	int closing;                   /* linger: our streams end, none gives way */
	uint64_t last_pass_ns;         /* the keeper steps in when this gets old */
	rn_hkeep keep;                 /* the keeper thread (rfi_ep.c) */
	rfi_name name;
	rn_rail_addr bind[RN_MAX_RAILS]; /* ports asked for (src_addr), 0: any */
	rn_rail_info rails[RN_MAX_RAILS];
	int nrails;
	rn_config cfg;
	rn_env env;
	rn_listener lis;
	int have_lis;
	rn_hset io;
	rn_hfollow follow;             /* the rails' links and addresses, from the kernel (host kit) */
	rn_hpoll_rails open;           /* how io's sockets are opened: a waiting rail's too */
	rn_hgrow grow;                 /* rails without an address at start, opened when one comes */
	rn_hrxbuf rx;
	uint32_t rx_more;
	rn_hdisp disp;
	rn_hpoll_links lk;             /* the sockets' errors to links (io's arg) */
	rn_htab idtab;
	rn_hmon mon;                   /* rail health per peer, dead peers (host kit) */
	uint64_t core_now;
	rn_hconns links;               /* every connection (host kit) */
	rn_hpass pass;                 /* the pass's skeleton and hooks (host kit) */
	rfi_peer **peers;              /* by fi_addr_t */
	size_t npeers;
	rfi_op *posted[4], *posted_tail[4]; /* receives by kind (RFI_MSG, RFI_TAG) */
	rfi_unexp *ux, *ux_tail;
	size_t ux_bytes;
	rfi_op *free_ops;
	/* the snapshot for ri2n-stat (rfi_stat.c) */
	int stat_fd;                   /* its directory; -1: not publishing */
	int stat_pid;                  /* the process that opened it */
	char stat_name[48];            /* <pid>.fi<n>.stat */
	unsigned long long stat_start; /* the process's start time */
	uint64_t stat_period_ns, stat_next_ns; /* next_ns 0: due at the next pass */
	/* counters (FI_LOG / RI2N_LOG=info at close) */
	uint64_t msgs_out, msgs_in, bytes_out, bytes_in, unexpected, conn_failures, rail_events;
	uint64_t hellos_refused;        /* hellos not from their name's rails */
	uint64_t superseded;            /* inbound links a newer one in their name retired */
};

/* The endpoint's links, newest first (a link's first member is its rn_hconn). */
static inline rfi_link *rfi_links(const rfi_ep *ep)
{
	return (rfi_link *)ep->links.head;
}

static inline rfi_link *rfi_link_next(const rfi_link *l)
{
	return (rfi_link *)l->h.next;
}

int rfi_ep_open(struct fid_domain *d, struct fi_info *info, struct fid_ep **ep, void *ctx);

/* rfi_pass.c */
/* Opens one UDP socket per rail and the listener; ep->name gets their addresses.  0 or <0. */
int rfi_ep_io_open(rfi_ep *ep, char *err, size_t errlen);
/* Frees the links marked dead. */
void rfi_links_reap(rfi_ep *ep);
/* One protocol pass: receive, timers, deliver, send, flush (domain lock held). */
void rfi_ep_pass(rfi_ep *ep);
/* The current time for a call into the core: never below one given before. */
uint64_t rfi_ep_now(rfi_ep *ep);
/* The peer behind fi_addr, created on first use; NULL if the AV does not know it. */
rfi_peer *rfi_peer_get(rfi_ep *ep, fi_addr_t a);
/* Starts (or restarts) the peer's outbound connection; 0 or -FI_E*. */
int rfi_peer_connect(rfi_ep *ep, rfi_peer *p, uint64_t now);

rfi_op *rfi_op_new(rfi_ep *ep);
void rfi_op_free(rfi_ep *ep, rfi_op *op);

/* rfi_msg.c */
extern struct fi_ops_msg rfi_msg_ops;
extern struct fi_ops_tagged rfi_tagged_ops;
/* Moves the peer's queued sends into its stream; completes the ones in whole. */
void rfi_peer_push(rfi_ep *ep, rfi_peer *p, uint64_t now);
/* Fails every queued send of the peer with err (positive FI_E*). */
void rfi_peer_fail(rfi_ep *ep, rfi_peer *p, int err);
/* Reads what an inbound link's stream has: frames to receives or the unexpected list. */
void rfi_link_deliver(rfi_link *l, uint64_t now);
/* An inbound link died: its message in flight fails. */
void rfi_link_lost(rfi_link *l, int err);
/* Drops l's unexpected message if its bytes stopped coming (resets l); every pass. */
void rfi_link_stall_check(rfi_link *l, uint64_t now);
/* A receive's end: its bytes are in; err (positive) or truncation make it an error. */
void rfi_recv_complete(rfi_ep *ep, rfi_op *op, size_t mlen, uint64_t tag, fi_addr_t src,
		       int err, int prov_err);
/* Copies bytes at offset `at` of a message into the receive's buffers (what fits). */
void rfi_op_put(rfi_op *op, size_t at, const uint8_t *d, size_t n);
/* Whether receive op takes a message of this kind, tag and source. */
int rfi_op_matches(const rfi_op *op, int kind, uint64_t tag, fi_addr_t src);

/* rfi_ux.c: the unexpected list */
/* A new entry, at the list's end, for l's message now starting; NULL: out of memory. */
rfi_unexp *rfi_ux_new(rfi_link *l, int kind, uint64_t tag, size_t len, uint64_t now);
/* A whole (or dead) entry goes to the receive that took it; both are freed. */
void rfi_ux_deliver(rfi_ep *ep, rfi_unexp *u, rfi_op *op);
/* l's entry will never be whole: its receive fails with err, or it is dropped. */
void rfi_ux_cut(rfi_link *l, int err);
/* l is being freed: its messages in the unexpected list stop counting against it. */
void rfi_link_forget(rfi_link *l);
/*
 * A new receive meets the list: the first entry it matches in arrival order
 * (claim: the one a peek claimed for its context) is taken, or only reported
 * (FI_PEEK).  1 if op is used up (freed or bound to an entry), 0 if none matched.
 */
int rfi_ux_take(rfi_ep *ep, rfi_op *op, int claim);
/* Frees every entry and the receives that claimed them (the endpoint closes). */
void rfi_ux_free_all(rfi_ep *ep);
/*
 * rfi_hello.c: names inbound link l by the hello it opened with, if the
 * connection comes from that name's rails; a live link with that name
 * already is retired (l is read after it).  0, -FI_EINVAL (not a name) or
 * -FI_EACCES (refused, counted).
 */
int rfi_link_bind(rfi_link *l, const uint8_t *hello, size_t len);
/* Outbound l gives way: no longer its peer's link, ends after its bytes. */
void rfi_link_retire_out(rfi_link *l, uint64_t now);
/* Retired inbound l ended (its peer's end, or dead): the links after it go on. */
void rfi_link_retired_end(rfi_link *l, uint64_t now);
/* Writes the hello on a new outbound connection once it is up. */
void rfi_link_hello(rfi_link *l, uint64_t now);
/* Fails every posted receive (the endpoint closes). */
void rfi_ep_cancel_all(rfi_ep *ep);
ssize_t rfi_ep_cancel(fid_t fid, void *context);
/* Positive FI_E* for a fatal rn_err. */
int rfi_err_from_rn(int rn);

/* rfi_stat.c: the snapshot ri2n-stat reads */
/* Finds the directory (RI2N_RUN_DIR, ...) and names the file; at enable. */
void rfi_stat_open(rfi_ep *ep);
/* Writes the snapshot when due (RI2N_STAT_MS, or at once after a rail event); end of a pass. */
void rfi_stat_pass(rfi_ep *ep, uint64_t now);
/* Removes the file; at close. */
void rfi_stat_close(rfi_ep *ep);

/* ---- shared stubs (rfi_prov.c) ---- */
int rfi_no_bind(struct fid *f, struct fid *b, uint64_t flags);
int rfi_no_control(struct fid *f, int cmd, void *arg);
int rfi_no_ops_open(struct fid *f, const char *name, uint64_t flags, void **ops, void *ctx);
/* fi_info describing what the provider offers (rfi_prov.c) for this set of rails. */
struct fi_info *rfi_info_new(uint32_t version, const struct fi_info *hints);
/*
 * Fills fi's src_addr / dest_addr from fi_getinfo's node and service
 * (rfi_addr.c): with FI_SOURCE or no node, this host's rails bound to the
 * service's port; otherwise the node's rail and the service's port as the
 * destination (a node without a service: none).  0, or -FI_ENODATA for a
 * source node that is no rail of ours, a node on none of our subnets, an
 * unknown host name or a service that is not a port number.
 */
int rfi_addr_fill(struct fi_info *fi, const rn_rail_info *rails, int nrails, const char *node,
		  const char *service, uint64_t flags);

#endif
