/*
 * rn_host_lock.h - what every driver of ri2n's protocol state shares, below
 * the engine thread: the host lock, the socket objects API threads and
 * drivers share (rn_sock), the table of descriptors ri2n owns (let go of in
 * a forked child) and the clocks handed to the core.  The engine thread
 * (rn_engine.h) and the inline driver (rn_inline.h) build on it; the one
 * call up is rn_sock_new's, for the inline driver's busy-poll default.
 */
#ifndef RN_HOST_LOCK_H
#define RN_HOST_LOCK_H

#include <netinet/in.h>
#include <pthread.h>
#include <stdint.h>
#include <sys/types.h>

#include "rn_core.h"
#include "rn_hsa.h"
#include "rn_tls.h"

struct rn_port;
struct rn_stream;

enum rn_sock_kind {
	RN_SK_NEW,        /* created, maybe bound */
	RN_SK_LISTEN,
	RN_SK_CONNECTING,
	RN_SK_CONNECTED,
	RN_SK_DEAD,       /* connect failed or connection ended */
};

typedef struct rn_sock {
	pthread_mutex_t mu;
	pthread_cond_t cv;
	int refs;                  /* (atomic) the fd table's, the engine's, callers' */
	int tab_nums;              /* the fd table's numbers for it (the table's lock, rn_api_tab.c) */
	int user_fd, eng_fd;       /* A and B of the socketpair */
	dev_t dev;
	ino_t ino;                 /* A's identity: tells it from a reused fd number */
	uint64_t cookie;           /* the same, cheaper to check (rn_fd_cookie) */
	int kind;                  /* (mu; stored atomically, read without it by fast calls) rn_sock_kind */
	int so_error;              /* (mu) errno for SO_ERROR; reset when read */
	int dead_error;            /* (mu) errno the connection ended with, 0 if clean */
	rn_config cfg;             /* knobs, fixed at connect/listen */
	int bound;                 /* (mu) bind() done */
	rn_hsa local, peer;        /* (mu) AF_INET or AF_INET6; local family 0: not bound */
	size_t junk;               /* bytes in A's way until connected (see rn_api.c) */
	int connect_nb;            /* the connect returns at once: the caller waits for it in its own poll */
	int sndbuf;                /* (mu) A's send buffer size to give back once connected or
				    * listening (A waits at the smallest, see ri2n_api.c); 0: none */
	int busy_us;               /* (atomic) RI2N_BUSY_POLL_US: inline waits poll this long first */
	int closed;                /* (atomic) the user closed its last number: fast calls end */
	int abort_close;           /* (atomic) SO_LINGER {1, 0}: the user's close resets */
	/*
	 * (atomic) Bytes may reach A by a plain write (a -lri2n program's write,
	 * a send the fast path passes on, a forked child, sendfile): a fast send
	 * first takes what is there, to keep the order.  0 only under ri2n-run,
	 * which sees every write, until one of those happens (sticky).
	 */
	int plain_writes;
	/*
	 * (atomic) One-shot: a signal handler wrote into A past the fast path
	 * (rn_api_sig_sweep); the next fast send takes A's bytes first.
	 */
	int desc_first;
	/*
	 * (host lock) Under ri2n-run: the epoll set (by the shim's id for it) the socket was
	 * last added to, with the events and data it was added with; lets an
	 * inline epoll wait report its bytes without the socketpair.
	 */
	uint64_t ep_id, ep_data;
	uint32_t ep_events;

	/* listening sockets: handshakes completed, waiting for ri2n_accept (mu) */
	struct rn_sock *accq_head, *accq_tail, *acc_next;
	int accq_len, backlog;
	int acc_err;               /* a connection refused (budget, descriptors): ri2n_accept says it once */
	int queued;                /* (atomic) in its listener's accept queue */
	/*
	 * (atomic) Another process may hold the descriptor (a fork or spawn
	 * since, or sent over SCM_RIGHTS: whatever marks plain_writes): a
	 * listener's accept records may be read there, so the engine counts
	 * them (rn_stream_prune_taken).  Sticky.
	 */
	int shared;
	/*
	 * (atomic) What a blocking receive asks of the descriptor when it finds
	 * nothing, remembered (rn_inline_fd_nonblock, rn_inline_sock_rcvtimeo):
	 * the generation of rn_sock_flags_changed it was read at, shifted left
	 * once, with O_NONBLOCK in bit 0; for SO_RCVTIMEO the generation it was
	 * found unset at.  Trusted only where the program's every fcntl, ioctl
	 * and setsockopt is seen (ri2n-run) and no other process holds the
	 * descriptor (shared 0).
	 */
	uint64_t nonblock_memo, rcvtimeo_none_memo;
	/*
	 * ri2n_accept's turnstile: one thread of the process sleeps on the
	 * listener's descriptor (acc_sleeper, under mu); the others wait their
	 * turn on the futex word acc_turn, woken one at a time.  Else every
	 * thread asleep in accept would wake for each connection.
	 */
	int acc_sleeper, acc_waiters; /* (mu) */
	int acc_turn;              /* (atomic) futex word: bumped when the turn passes */
	uint64_t acc_idle_wakes;   /* (atomic) sleeper woken by a record and found none */

	/*
	 * An accepted connection: where a process it is handed to asks for it
	 * (rn_handover.h); port 0: nowhere (not accepted, or taken over here).
	 */
	uint16_t take_port;
	uint32_t take_mask;
	uint64_t take_id;
	int in_app;                /* (atomic) accepted by this process's program (ri2n_accept) */

	/* engine thread only */
	struct rn_port *port;
	struct rn_stream *stream;
	rn_conn_stats *final;      /* the connection's counters when it ended (ri2n_stats) */
	struct event *watch_ev;    /* not connected: watches B for the user's close */
} rn_sock;

rn_sock *rn_sock_new(void);
/*
 * From now on every write to a new socket's descriptor comes through the
 * fast path unless the socket is marked (rn_sock.plain_writes): ri2n-run
 * says so at load.
 */
void rn_sock_writes_seen(void);
/*
 * Whether the program's every write, fcntl, ioctl and setsockopt is seen
 * (ri2n-run, first in the lookup order: rn_sock_writes_seen was called).
 */
int rn_sock_calls_seen(void);
/*
 * The program changed a descriptor's O_NONBLOCK, SO_RCVTIMEO or SO_SNDTIMEO
 * (fcntl F_SETFL, ioctl FIONBIO, setsockopt): what sockets remember of them
 * is forgotten.  Called after the change is made.
 */
void rn_sock_flags_changed(void);
/* The generation rn_sock_flags_changed counts (from 1). */
uint32_t rn_sock_flags_gen(void);
void rn_sock_ref(rn_sock *s);
void rn_sock_unref(rn_sock *s);

/*
 * The host lock.  Every driver holds it while it touches protocol state
 * (ports, streams, the core's connections): the engine thread around each
 * of its callbacks, an application thread while it drives a connection
 * inline (rn_inline.c).  Never held across a blocking call.
 */
void rn_host_lock(void);
void rn_host_unlock(void);
/* The same, marking the calling thread as an inline driver (rn_host_inline). */
void rn_host_enter_inline(void);
/* rn_host_enter_inline if the lock is free now: 1, else 0 (not taken). */
int rn_host_try_inline(void);
void rn_host_leave_inline(void);
/*
 * True in an application thread driving the core inline.  Such a thread
 * never calls libevent (not thread-safe here): what needs the event loop
 * (arming an event, freeing one) is left for the engine, woken by
 * rn_host_kick().
 */
int rn_host_inline(void);

/*
 * Owner checks, compiled into debug builds (without NDEBUG: the sanitizer
 * builds of tests/run.sh).  A function documented "(host lock)" asserts
 * that its thread holds the lock (RN_OWNS_HOST); libevent is only called
 * through rn_ev.h, which asserts that the thread is not driving inline.
 */
int rn_host_owned(void);
/* rn_host_owned as the core's owner check (rn_env.owns) of the engine's connections. */
int rn_host_owns(void *user);
/*
 * Async-signal-safe, for a signal handler asking of the frame it
 * interrupted: whether the calling thread holds the host lock (or may: in
 * the instructions around the take and the release it counts as held).
 */
int rn_host_held_here(void);
/* The same question of any glibc mutex the thread was in the middle of taking. */
int rn_host_mutex_mine(pthread_mutex_t *m);
/*
 * Async-signal-safe: wakes every thread asleep on the host lock, for a
 * signal handler about to wait on the engine (see rn_engine.c).
 */
void rn_host_poke(void);
#ifdef NDEBUG
#define RN_OWNS_HOST() ((void)0)
#define RN_NOT_INLINE() ((void)0)
#else
#include <assert.h>
#define RN_OWNS_HOST() assert(rn_host_owned())
#define RN_NOT_INLINE() assert(!rn_host_inline())
#endif

/* ---- clocks and descriptors ---- */

uint64_t rn_now_ns(void);
/*
 * now, or the latest time already given to the core if that is later: a
 * time taken before a read of the rails may be older than the arrival times
 * the read gave the core, and the core's clock never goes back (a timer
 * call with such a time took every connection the read fed for 2^64 ns
 * silent: dead-peer timeout at once).
 */
uint64_t rn_core_time(uint64_t now);
struct timespec;
/*
 * The time a datagram reached the kernel (SO_TIMESTAMPNS, CLOCK_REALTIME;
 * rt_minus_mono converts), as a CLOCK_MONOTONIC time for the core, kept
 * between the last time the core was given and now.
 */
uint64_t rn_arrival_ns(const struct timespec *rt, int64_t rt_minus_mono, uint64_t now);
/*
 * The socket's cookie (SO_COOKIE: unique for the system's lifetime), which
 * tells a socket from another one given the same number after a close, in
 * half the time of fstat (280 ns against 570 here); 0 with errno (EBADF,
 * ENOTSOCK) for a number that is not a socket.  Never through a shim.
 */
uint64_t rn_fd_cookie(int fd);
/* Records a descriptor as the engine's (a forked child closes them all)... */
void rn_fd_own(int fd);
/* ...and closes one, or hands one over to the user. */
void rn_fd_close(int fd);
void rn_fd_disown(int fd);
/*
 * rn_fd_own for a descriptor ri2n keeps to itself, first moved out of the
 * program's numbers (rn_sys_fd_high): the number to use from now on.
 * The _cloexec one for a descriptor made close-on-exec (a system call less).
 */
int rn_fd_own_high(int fd);
int rn_fd_own_high_cloexec(int fd);

/*
 * Around fork() (the engine's pthread_atfork handlers, which keep the order
 * of their locks: host lock, the engine's queue, the descriptor table).
 * rn_host_fork_hold takes the host lock as the forking thread's own;
 * rn_host_fork_release gives it back, in the parent and the child alike.
 */
void rn_host_fork_hold(void);
void rn_host_fork_release(void);
/*
 * The descriptor table's lock, held across fork(); in the child
 * rn_fd_fork_child first closes every descriptor the table owns.
 */
void rn_fd_fork_hold(void);
void rn_fd_fork_release(void);
void rn_fd_fork_child(void);
/*
 * How often the calling thread took the host lock (rn_host_lock): the
 * engine's busy poll tells by it whether a look found work.
 */
unsigned long rn_host_lock_count(void);

#endif
