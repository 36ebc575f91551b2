/*
 * btl_ri2n.h - the ri2n BTL: Open MPI's byte transfer layer over ri2n.
 *
 * One module, one endpoint per peer process.  Each endpoint rides one ri2n
 * connection (a reliable byte stream that stripes over every rail and fails
 * over inside itself), so Open MPI sees one reliable path per peer.  BTL
 * fragments are framed on the stream with an 8-byte header (length, tag).
 *
 * No engine thread: the component's progress function, which MPI calls
 * whenever it polls, drives the sans-I/O core inline (datagrams in, timers,
 * datagrams out).  A "keeper" thread only steps in when MPI has not polled
 * for a while (a long computation), so ACKs, keepalives and handshakes go on
 * and a busy peer is not taken for dead; it never calls into the PML.
 *
 * Files: _component (MCA glue, progress, keeper), _params (MCA variables),
 * _module (the BTL functions), _endpoint (peers and their connections),
 * _stream (framing, send queue, delivery), _frag.  The UDP rail sockets and
 * the connection table are the host kit's (src/host), shared with the engine.
 */
#ifndef BTL_RI2N_H
#define BTL_RI2N_H

#include "opal_config.h"

#include <pthread.h>
#include <stdint.h>

#include "opal/class/opal_free_list.h"
#include "opal/class/opal_list.h"
#include "opal/mca/btl/base/base.h"
#include "opal/mca/btl/btl.h"
#include "opal/util/proc.h"

#include "btl_ri2n_compat.h"
#include "btl_ri2n_wire.h"
#include "rn_core.h"
#include "rn_hconn.h"
#include "rn_hpass.h"
#include "rn_hfollow.h"
#include "rn_hkeep.h"
#include "rn_hmon.h"
#include "rn_hpoll.h"
#include "rn_hsock.h"
#include "rn_htab.h"
#include "rn_rails.h"

BEGIN_C_DECLS

/* Stream frames and nudges: btl_ri2n_wire.h. */
enum {
	RI2N_BTL_SND_SLOTS = 4096, /* default send ring per peer, packets (~6 MB) */
};
/*
 * A link that delivered no frame this long frees its gather buffer (up to a
 * frame, 256 KiB): the core's rings shrink after 2 s idle (rn_timer.c), and an
 * idle peer should hold only their first size.
 */
#define RI2N_RX_IDLE_NS UINT64_C(2000000000) /* 2 s */

/* Endpoint states. */
enum rbtl_ep_state {
	RI2N_EP_IDLE,       /* no connection and nothing to send */
	RI2N_EP_CONNECTING, /* we connect: handshake under way (maybe a retry) */
	RI2N_EP_WAITING,    /* the peer connects: nudged it, waiting for its hello */
	RI2N_EP_OPEN,       /* stream up (hello written or read) */
	RI2N_EP_CLOSED,     /* the peer closed cleanly, or we finalized */
	RI2N_EP_FAILED,     /* dead; the error callback was called */
};

typedef struct mca_btl_ri2n_frag_t mca_btl_ri2n_frag_t;
typedef struct rbtl_link rbtl_link;

/* One ri2n connection and the receive side of its stream. */
struct rbtl_link {
	rn_hconn h;                           /* the kit's part (first): conn, id, list, dead, dirty */
	struct mca_btl_base_endpoint_t *ep;   /* NULL: accepted, hello not read yet */
	struct mca_btl_ri2n_module_t *mod;
	uint64_t last_in_ns;                  /* last frame delivered: an idle link frees rx.buf */
	uint8_t initiator;  /* we connected */
	uint8_t hello_done; /* initiator: hello written; acceptor: hello read */
	uint8_t eof;        /* the peer finished its stream */
	int rail;           /* initiator: index into ep->peer of the INIT's address */
	rbtl_rx rx;         /* receive framing (btl_ri2n_wire.h) */
};

/* One peer process. */
struct mca_btl_base_endpoint_t {
	opal_process_name_t name;
	opal_proc_t *proc;          /* NULL until the PML adds the peer (add_procs) */
	struct mca_btl_ri2n_module_t *mod;
	struct mca_btl_base_endpoint_t *next; /* the module's list */
	int is_self;                /* this process: delivered in memory */
	int state;                  /* enum rbtl_ep_state */
	int initiator;              /* our name is lower: we connect */
	int was_open;               /* a stream to it was up once: its death is fatal */
	rbtl_link *link;
	rn_addr peer[RN_MAX_RAILS]; /* the peer's rail addresses (modex or nudges) */
	int npeer;
	int next_rail;              /* where the next connect attempt goes */
	uint64_t deadline_ns;       /* connecting / waiting gives up */
	uint64_t nudge_next_ns, nudge_gap_ns;
	opal_list_t sendq;          /* fragments not yet wholly in the stream */
	size_t queued_frags;
	char desc[128];             /* "rank 1 (jobid 0x..., host h)" for messages */
};
typedef struct mca_btl_base_endpoint_t mca_btl_ri2n_endpoint_t;

/* A fatal error to report to the PML once the lock is released. */
typedef struct rbtl_fatal {
	opal_proc_t *proc;
	char msg[1024];
} rbtl_fatal;

#define RI2N_MAX_FATAL 8

typedef struct mca_btl_ri2n_module_t {
	mca_btl_base_module_t super;
	mca_btl_base_module_error_cb_fn_t error_cb;
	pthread_mutex_t lock;       /* recursive: PML callbacks send from inside progress */
	int ready;
	int depth;                  /* lock nesting of the holder */
	int in_progress;            /* guards against progress re-entered from a callback */
	int finalizing;
	rn_config cfg;
	rn_env env;
	rn_rcvpool rcvpool; /* the receive windows' share of the ceiling (btl_ri2n_mem.c) */
	rn_listener lis;
	rn_hset io;                 /* one UDP socket per rail (host kit) */
	rn_hrxbuf rx;               /* their receive batches */
	uint32_t rx_more;           /* sockets left with data by the last receive: no poll */
	rn_hdisp disp;              /* datagrams to links by id, or to the listener */
	rn_hpoll_links lk;          /* the sockets' errors to links (io's arg) */
	rn_rail_info rails[RN_MAX_RAILS];
	int nrails;
	rn_hfollow follow;          /* the rails' links and addresses, from the kernel (host kit) */
	rn_hpoll_rails open;        /* how io's sockets are opened: a waiting rail's too */
	rn_hgrow grow;              /* rails without an address at start, opened when one comes */
	opal_process_name_t me;
	uint32_t job_size;             /* ranks in our job (0: unknown): names past it are strangers */
	mca_btl_ri2n_endpoint_t *eps;  /* every endpoint */
	mca_btl_ri2n_endpoint_t *self_ep;
	rn_hconns links;               /* every connection (host kit) */
	rn_htab idtab;                 /* links by connection id */
	rn_hmon mon;                   /* rail health per peer, dead peers (host kit) */
	rn_hpass pass;                 /* the pass's skeleton and hooks (host kit) */
	uint64_t last_progress_ns;     /* the keeper steps in when this gets old */
	uint64_t core_now;             /* latest time given to the core: time never goes back */
	rbtl_fatal fatal[RI2N_MAX_FATAL];
	int nfatal;
	rn_hkeep keep;                 /* the keeper thread (component) */
	uint8_t scratch[4096];         /* packing small non-contiguous sendi payloads */
	/* counters for the verbose summary at finalize */
	uint64_t frames_in, frames_zero_copy, frames_copied, frames_out, bytes_out, bytes_in;
	uint64_t rail_events;
	/* refused: nudges (bad tag, a stranger's name, an address not in its modex),
	 * hellos (a stranger, a takeover), accepts over RN_HPOLL_MAX_UNBOUND, hello deadlines */
	uint64_t nudges_refused, hellos_refused, unbound_refused, unbound_expired;
	/*
	 * The core's memory (rings and connections), counted by the module's
	 * allocator (btl_ri2n_module.c): bytes held now and at most, the ceiling
	 * (btl_ri2n_ring_mem_mb; 0: none), allocations it refused, and how many of
	 * those the last warning covered.  mem_setup > 0 while a connection is set
	 * up: those allocations are always granted.
	 */
	size_t mem_used, mem_peak, mem_max;
	uint64_t mem_refused, mem_refused_said, mem_warn_next_ns;
	int mem_setup;
} mca_btl_ri2n_module_t;

/* The name of the rail under socket idx (the core's local rail): waiting rails make them differ. */
static inline const char *rbtl_rail_name(const mca_btl_ri2n_module_t *m, int idx)
{
	return idx >= 0 && idx < m->io.n ? m->rails[m->io.s[idx].rail].name : "?";
}

/* The module's links, newest first (a link's first member is its rn_hconn). */
static inline rbtl_link *rbtl_links(const mca_btl_ri2n_module_t *m)
{
	return (rbtl_link *)m->links.head;
}

static inline rbtl_link *rbtl_link_next(const rbtl_link *l)
{
	return (rbtl_link *)l->h.next;
}

/* MCA parameters (btl_ri2n_*), registered in btl_ri2n_params.c. */
typedef struct rbtl_params {
	char *if_include;     /* rails: interfaces or addresses (else RI2N_RAILS, else all) */
	int knob[RN_KNOB__COUNT]; /* the library's knobs, in RN_KNOB_LIST's order and units */
	int attempt_ms;       /* one connect attempt on one rail before trying the next */
	int keeper_ms;        /* keeper period; 0: no keeper thread */
	int gso, gro;         /* UDP segmentation / receive offload */
	int rx_ts;            /* datagrams timed by the kernel's arrival stamp */
	char *log;            /* ri2n log level: debug, info, warn, error, off */
	char *key_file;       /* file holding the cluster key (else RI2N_KEY / RI2N_KEY_FILE) */
	int verbose;          /* print a per-process summary at finalize */
	int ring_mem_mb;      /* ceiling on the core's memory in this process, MiB (0: none) */
	int ring_share;       /* each peer's rings limited to its share of the ceiling (0/1) */
	int free_list_num, free_list_max, free_list_inc;
} rbtl_params;

typedef struct mca_btl_ri2n_component_t {
	mca_btl_base_component_3_0_0_t super;
	rbtl_params p;
	opal_free_list_t frags_eager; /* alloc/prepare_src up to the eager limit */
	opal_free_list_t frags_max;   /* up to the max send size */
	opal_free_list_t frags_user;  /* no buffer: segment 1 points at the user's data */
} mca_btl_ri2n_component_t;

RI2N_COMPONENT_DECLSPEC extern mca_btl_ri2n_component_t mca_btl_ri2n_component;
extern mca_btl_ri2n_module_t mca_btl_ri2n_module;

/* ---- btl_ri2n_params.c ---- */

/* Registers every btl_ri2n_* variable and the module's BTL defaults. */
int rbtl_params_register(mca_btl_ri2n_component_t *c, mca_btl_ri2n_module_t *m);
/* The ri2n configuration: library defaults, RI2N_* variables, then MCA values. */
int rbtl_params_config(const rbtl_params *p, int min_mtu, rn_config *cfg, char *err, size_t len);

/* ---- btl_ri2n_module.c ---- */

/* Sets up the module's sockets, listener and modex; 0 or an OPAL error. */
int rbtl_module_init(mca_btl_ri2n_module_t *m);
/*
 * The rail addresses a process of our job published in the modex: their
 * count (0: a stranger, or no ri2n there).  Never asks about a name outside
 * the job (which PMIx could wait on).
 */
int rbtl_modex_addrs(mca_btl_ri2n_module_t *m, opal_process_name_t name,
		     rn_addr out[RN_MAX_RAILS]);
/* Local completion of a sent fragment: the PML's callback if asked, then the free. */
void rbtl_frag_complete(mca_btl_ri2n_module_t *m, mca_btl_ri2n_frag_t *f, int status);
/* The module's lock (recursive: PML callbacks send from inside progress).
 * The outermost unlock reports fatal errors found meanwhile to the PML. */
void rbtl_lock(mca_btl_ri2n_module_t *m);
int rbtl_trylock(mca_btl_ri2n_module_t *m);
void rbtl_unlock(mca_btl_ri2n_module_t *m);
/*
 * Lets go of the lock around a call into the PML (a PML lock held by another
 * thread that calls btl_send would otherwise deadlock with us); returns the
 * nesting to give rbtl_reacquire.  in_progress stays set meanwhile, so other
 * threads' progress and the keeper keep out of the stream being delivered.
 */
int rbtl_release(mca_btl_ri2n_module_t *m);
void rbtl_reacquire(mca_btl_ri2n_module_t *m, int depth);

/* ---- btl_ri2n_component.c ---- */

/* Stops and joins the keeper thread (finalize). */
void rbtl_keeper_stop(mca_btl_ri2n_module_t *m);

/* ---- btl_ri2n_endpoint.c ---- */

uint64_t rbtl_now_ns(void);
/* The current time for a call into the core (lock held): never below one given before. */
uint64_t rbtl_core_now(mca_btl_ri2n_module_t *m);
/* The endpoint of a peer name, created (with no proc yet) if `create`. */
mca_btl_ri2n_endpoint_t *rbtl_ep_find(mca_btl_ri2n_module_t *m, opal_process_name_t name,
				      int create);
void rbtl_ep_free(mca_btl_ri2n_endpoint_t *ep);
/* Sets ep->desc ("rank 1 on host (name)") from what is known of the peer. */
void rbtl_ep_describe(mca_btl_ri2n_endpoint_t *ep);
/* Makes the endpoint start connecting (or nudge the peer) if it is idle. */
void rbtl_ep_kick(mca_btl_ri2n_endpoint_t *ep, uint64_t now);
/* Connection attempts, nudges and failures due at `now`; `main`: the MPI thread. */
void rbtl_ep_timers(mca_btl_ri2n_module_t *m, uint64_t now, int main);
/* A datagram that is not ri2n's: a nudge from a peer that wants us to connect. */
void rbtl_ep_on_nudge(mca_btl_ri2n_module_t *m, int rail, rn_addr from, const uint8_t *d,
		      size_t len, uint64_t now);
/* A hello named the peer on an accepted link: bind it to the endpoint. */
int rbtl_ep_bind(mca_btl_ri2n_module_t *m, rbtl_link *l, opal_process_name_t name,
		 uint64_t now);
/* Looks at a link's state after the core ran: failures, closes, reconnects. */
void rbtl_link_check(rbtl_link *l, uint64_t now);
/* The module's list of links, empty (rn_hconns: the kit reaps the dead ones). */
void rbtl_links_init(mca_btl_ri2n_module_t *m);
/* A new link for conn; inserted in the module's tables. */
rbtl_link *rbtl_link_new(mca_btl_ri2n_module_t *m, rn_conn *c, uint64_t now);
/* Queues a fatal error for the PML (reported outside the lock). */
void rbtl_fatal_add(mca_btl_ri2n_module_t *m, mca_btl_ri2n_endpoint_t *ep, const char *msg);
/* The rails of a link as "r1 198.18.1.1 -> 198.18.1.2, ..." */
void rbtl_link_rails_str(const rbtl_link *l, char *buf, size_t len);
/* Core events: rail down/up, failures, for the log. */
void rbtl_on_core_event(void *user, const rn_event *ev);

/* ---- btl_ri2n_stream.c ---- */

/* Delivers every complete frame the link has in order (MPI thread only). */
int rbtl_stream_deliver(rbtl_link *l, uint64_t now);
/* Moves queued fragments into the stream; completes them (MPI thread only). */
int rbtl_stream_push(mca_btl_ri2n_endpoint_t *ep, uint64_t now);
/* Writes the initiator's hello once the connection is up. */
void rbtl_stream_hello(rbtl_link *l, uint64_t now);
/* Writes as much of a fragment as fits; 1 when whole, 0 when the ring is full, <0 error. */
int rbtl_stream_write_frag(rbtl_link *l, mca_btl_ri2n_frag_t *f, uint64_t now);
/* A datagram no link has: a nudge, or the listener's (handshakes).  Returns 0. */
int rbtl_stream_unbound(void *arg, int rail, rn_addr from, const uint8_t *d, size_t len,
			uint64_t now);
/* The module's pass on the kit's skeleton (rn_hpass): once its links, sockets and follower are set. */
void rbtl_stream_pass_init(mca_btl_ri2n_module_t *m);
/* One pass of the protocol (rn_hpass_run): receive, timers, deliver, send, flush; events made. */
int rbtl_stream_pass(mca_btl_ri2n_module_t *m, uint64_t now, int main);
/* Warns (at most every 10 s) when the memory ceiling refused ring growth since the last warning. */
void rbtl_mem_warn(mca_btl_ri2n_module_t *m, uint64_t now);
/* The core's allocator (btl_ri2n_mem.c): u is the module. */
void *rbtl_core_alloc(void *u, size_t n);
void rbtl_core_free(void *u, void *ptr);
/* Each peer's rings are held to an equal share of the ceiling (m->cfg). */
void rbtl_share_ceiling(mca_btl_ri2n_module_t *m);
/* The pool the receive windows share: a third of the ceiling (NULL without one). */
rn_rcvpool *rbtl_rcvpool(mca_btl_ri2n_module_t *m);
/* Calls the PML's error callback for queued fatal errors (lock not held). */
void rbtl_report_fatal(mca_btl_ri2n_module_t *m);
/* Per-peer, per-rail counters on Open MPI's output (btl_ri2n_verbose). */
void rbtl_print_summary(mca_btl_ri2n_module_t *m);

END_C_DECLS

#endif
