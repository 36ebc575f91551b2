/*
 * rn_shim.h - the LD_PRELOAD interposer behind ri2n-run (libri2n-run.so).
 *
 * A program's IPv4 TCP socket stays a real TCP socket until the program
 * calls connect() or listen() on it; then, if the policy says so
 * (rn_shim_policy.c), the shim creates a ri2n socket, binds and configures
 * it as the program configured the TCP socket, and moves it onto the
 * program's descriptor number (rn_api_move), replacing the TCP socket.
 * From there poll/epoll/shutdown are the kernel's own (the descriptor is
 * ri2n's socketpair end); read/write/send/recv and their variants take
 * ri2n's fast path (rn_shim_io.c), where the calling thread drives the
 * connection itself; the socket calls are answered here (rn_shim_sock.c,
 * rn_shim_opt.c) from ri2n and from what the shim remembers per descriptor
 * number (rn_shim_tab.c).
 *
 * AF_INET6 sockets take part for IPv6 as AF_INET ones do for IPv4 (a
 * connect to an address in an IPv6 rail's subnet, a listener on "::" or on
 * an IPv6 rail's address) and carry IPv4 too: a listener bound to "::" (not
 * IPV6_V6ONLY) or to a v4-mapped address, a connect to a v4-mapped address.
 * IPv4 connections show as v4-mapped sockaddr_in6 on such sockets.  The
 * shim keeps addresses as ri2n takes them (rn_hsa): IPv4, or IPv6 proper.
 */
#ifndef RN_SHIM_H
#define RN_SHIM_H

#include <netinet/in.h>
#include <stdint.h>
#include <sys/socket.h>
#include <sys/types.h>
#include <sys/uio.h>
#include <poll.h>
#include <signal.h>
#include <sys/epoll.h>
#include <stdarg.h>
#include <stdio.h>
#include <sys/select.h>

#include "rn_datacalls.h"
#include "rn_hsa.h"

/* ---- the real calls (rn_shim_real.c) ---- */

typedef struct rn_shim_real {
	int (*socket)(int, int, int);
	int (*bind)(int, const struct sockaddr *, socklen_t);
	int (*listen)(int, int);
	int (*accept)(int, struct sockaddr *, socklen_t *);
	int (*accept4)(int, struct sockaddr *, socklen_t *, int);
	int (*connect)(int, const struct sockaddr *, socklen_t);
	int (*getsockname)(int, struct sockaddr *, socklen_t *);
	int (*getpeername)(int, struct sockaddr *, socklen_t *);
	int (*setsockopt)(int, int, int, const void *, socklen_t);
	int (*getsockopt)(int, int, int, void *, socklen_t *);
	int (*close)(int);
	int (*close_range)(unsigned int, unsigned int, int);
	int (*dup)(int);
	int (*dup2)(int, int);
	int (*dup3)(int, int, int);
	int (*fcntl)(int, int, ...);
	int (*fcntl64)(int, int, ...);
	rn_datacalls_real io; /* read ... sendmsg and the marking writers (rn_datacalls.c) */
	int (*epoll_create)(int);
	int (*epoll_create1)(int);
	int (*epoll_ctl)(int, int, int, struct epoll_event *);
	int (*epoll_pwait)(int, struct epoll_event *, int, int, const sigset_t *);
	int (*ppoll)(struct pollfd *, nfds_t, const struct timespec *, const sigset_t *);
	int (*select)(int, fd_set *, fd_set *, fd_set *, struct timeval *);
	int (*pselect)(int, fd_set *, fd_set *, fd_set *, const struct timespec *, const sigset_t *);
	int (*fclose)(FILE *);
	void (*closefrom)(int);
	int (*pipe2)(int *, int);
	int (*timerfd_create)(int, int);
	int (*eventfd)(unsigned int, int);
} rn_shim_real;

/* The next definitions after ours (libc's), resolved on first use. */
const rn_shim_real *rn_shim_real_get(void);
#define RN_REAL (rn_shim_real_get())

/* ---- what the shim remembers per descriptor number (rn_shim_tab.c) ---- */

enum rn_shim_kind {
	RN_SHIM_NONE,  /* not ours: every call passes through */
	RN_SHIM_TCP,   /* a TCP socket that may still become ri2n at connect/listen */
	RN_SHIM_RI2N,  /* a ri2n socket: listening, connecting or connected */
};

#define RN_SHIM_MAXOPT 12 /* options remembered per socket */
#define RN_SHIM_MAXEP 4   /* epoll sets a TCP socket's registrations are carried into */

/*
 * An epoll registration of a TCP socket not converted yet: conversion
 * replaces the open file behind the number, which drops it from every epoll
 * set, so the shim adds it again, with the same events and data.
 */
typedef struct rn_shim_epreg {
	int epfd;        /* the epoll descriptor the program registered through */
	uint64_t ep_id;  /* the shim's id of that set (rn_shim_ep_id): it must still be that one */
	uint32_t events;
	uint64_t data;
} rn_shim_epreg;

/* An option the program set: replayed at conversion, or answered by getsockopt. */
typedef struct rn_shim_opt {
	int level, name;
	socklen_t len;
	unsigned char val[16];
} rn_shim_opt;

typedef struct rn_shim_ent {
	int kind;              /* rn_shim_kind */
	int family;            /* AF_INET or AF_INET6: how IPv4 addresses are shown */
	int listening;         /* a ri2n listener */
	dev_t dev;
	ino_t ino;             /* the open file at this number (tells a reused number) */
	uint64_t cookie;       /* the same, checked on every lookup (rn_api_fd_cookie) */
	int have_local, have_peer;
	rn_hsa local, peer; /* last known: they also answer in a forked child */
	int nopt;
	rn_shim_opt opt[RN_SHIM_MAXOPT];
	int nep, ep_lost;      /* TCP: registrations to carry; ep_lost: more than fit */
	rn_shim_epreg ep[RN_SHIM_MAXEP];
	int shared;            /* TCP: dup'ed, other numbers hold the same socket */
	int retired_fd;        /* closed in a signal handler: its number (rn_shim_tab_retire) */
	struct rn_shim_ent *retired_next;
} rn_shim_ent;

/*
 * Copies the entry of fd into *e if there is one and fd still is the same
 * open file (else the stale entry is dropped).  1 if found, 0 if not.
 * Keeps errno.
 */
int rn_shim_tab_get(int fd, rn_shim_ent *e);
/*
 * The kind of fd's entry (RN_SHIM_NONE if none) as the table has it, not
 * checked against the open file and without the owner check: for calls that
 * only note something for fd (epoll_ctl), where ri2n's own look-up checks
 * the socket anyway and a stale entry costs nothing but a note.  Keeps errno.
 */
int rn_shim_tab_kind(int fd);
/*
 * Whether the shim's table can be taken as it is for the data calls, poll
 * and select: the shim sees every close (close, close_range, closefrom,
 * fclose, dup2/dup3 onto a number), so a number in its table still is the
 * socket it noted.  RI2N_RUN_CHECK_FDS=1 has each of them check with the
 * kernel instead, for programs that close descriptors with raw system calls
 * or io_uring.
 */
int rn_shim_sees_closes(void);
/*
 * Whether this process owns the table (fork() hands it to the child; a
 * vfork()ed child, sharing the parent's memory, does not own it).  While not,
 * the shim passes every call through and the calls below do nothing.
 */
int rn_shim_tab_mine(void);
/* Whether fd has an entry, without checking it (async-signal-safe, lock-free). */
int rn_shim_tab_has(int fd);
/* Stores *e as fd's entry, stamped with fd's device and inode.  Keeps errno. */
void rn_shim_tab_set(int fd, const rn_shim_ent *e);
/* The same for a number that holds a ri2n socket ri2n's table knows: its identity is taken from there. */
void rn_shim_tab_set_ri2n(int fd, const rn_shim_ent *e);
/*
 * fd is being closed in a signal handler: takes its entry out of the table
 * without a lock or free (async-signal-safe); the rest of the work (ri2n's
 * side, the free) waits for rn_shim_tab_drain.
 */
void rn_shim_tab_retire(int fd);
/*
 * Finishes the work of retired entries; outside a signal handler only.  The
 * tab calls and the waits call it; cheap when there is none.
 */
void rn_shim_tab_drain(void);
/* Drops fd's entry; returns the kind it had (RN_SHIM_NONE if none).  Keeps errno. */
int rn_shim_tab_drop(int fd);
/* Remembers an option set on fd (replacing an earlier value). */
void rn_shim_tab_note_opt(int fd, int level, int name, const void *val, socklen_t len);
/* Remembers fd's local (peer == 0) or peer address. */
void rn_shim_tab_note_addr(int fd, int peer, const rn_hsa *a);
/*
 * Remembers (EPOLL_CTL_ADD, MOD) or forgets (DEL) the registration of TCP
 * socket fd in the epoll set epfd (id ep_id).
 */
void rn_shim_tab_note_ep(int fd, int op, int epfd, uint64_t ep_id, const struct epoll_event *ev);
/* Marks fd's entry as one of several numbers of the same socket. */
void rn_shim_tab_note_shared(int fd);
/*
 * The other numbers whose entry is the same open socket as fd's entry e
 * (its duplicates), up to max in out[]; their count.
 */
int rn_shim_tab_others(int fd, const rn_shim_ent *e, int *out, int max);
/* The remembered option, or NULL. */
const rn_shim_opt *rn_shim_ent_opt(const rn_shim_ent *e, int level, int name);

/* ---- waits (rn_shim_poll.c) ---- */

/*
 * epoll_ctl as the program's interposed call does it (the rail sockets and
 * ri2n's held bytes follow the registration): for registrations the shim
 * carries across a conversion.
 */
int rn_shim_epoll_ctl(int epfd, int op, int fd, struct epoll_event *ev);
/*
 * The shim's id of the epoll set under number epfd (made on first use, new
 * when epoll_create gives the number again; never reused).  Every epoll
 * instance has the same inode: this is what tells them apart.
 */
uint64_t rn_shim_ep_id(int epfd);
/*
 * Number fd (or every number in [first, last]) is closed or replaced: if it
 * was an epoll set's, the shim's record of that set under it goes (with the
 * set's private set once no number names it).  Cheap while there is none.
 */
void rn_shim_ep_forget(int fd);
void rn_shim_ep_forget_range(unsigned int first, unsigned int last);
/* nfd was made a duplicate of old: if old is an epoll set, nfd names the same record. */
void rn_shim_ep_dup(int old, int nfd);

#define RN_SHIM_MAX_POLL 64 /* poll and select sets larger than this wait as before */
/*
 * poll as the program's interposed call does it (ri2n descriptors' rail
 * sockets join the wait): for select and pselect.  timeout: ms, -1 none.
 */
int rn_shim_poll_wait(struct pollfd *fds, nfds_t nfds, int timeout, const sigset_t *ss);
/* A timespec timeout in ms, rounded up; -1 for NULL. */
int rn_shim_ts_ms(const struct timespec *ts);

/* ---- signals: rn_sigcalls.c, rn_sig.h (rn_sig_in_handler) ---- */

/* Whether this is ri2n's engine thread (rn_shim_sock.c). */
int rn_shim_engine_thread(void);

/* ---- which sockets become ri2n (rn_shim_policy.c) ---- */

/*
 * Whether a connect to dst (from a socket bound to `bound`, or NULL) goes
 * over ri2n; if not, *why says why.  Starts ri2n's engine to learn the rails.
 */
int rn_shim_policy_connect(const rn_hsa *dst, const rn_hsa *bound, const char **why);
/*
 * Whether a listener bound to `local` (port 0: not bound) becomes ri2n.
 * An AF_INET6 "::" (an IPV6_V6ONLY listener's) needs an IPv6 rail; 0.0.0.0
 * any rail.
 */
int rn_shim_policy_listen(const rn_hsa *local, const char **why);
/* RI2N_RUN_VERBOSE: one line per decision on stderr. */
int rn_shim_verbose(void);
void rn_shim_log(const char *fmt, ...) __attribute__((format(printf, 1, 2)));

/* ---- addresses (rn_shim_addr.c) ---- */

/*
 * ri2n's view of a socket address: AF_INET as is; AF_INET6 "::" as 0.0.0.0
 * (every rail of either family) and ::ffff:a.b.c.d as a.b.c.d; any other
 * AF_INET6 address as is (its scope kept for a link-local one only).  0, or
 * -1 (another family, or too short).
 */
int rn_shim_addr_get(const struct sockaddr *a, socklen_t len, rn_hsa *out);
/*
 * Writes `in` as a socket of `family` shows it (IPv4 v4-mapped for
 * AF_INET6; IPv6 as sockaddr_in6, but on an AF_INET socket with room for a
 * sockaddr_in only as 0.0.0.0 and the port), truncated as the kernel does.
 */
void rn_shim_addr_put(int family, const rn_hsa *in, struct sockaddr *a, socklen_t *len);
/* "198.18.1.2:5201", "[2001:2:0:1::2]:5201", "[fe80::1%3]:5201" */
const char *rn_shim_addr_str(const rn_hsa *a, char *buf, size_t len);
/* 127/8 or ::1 */
int rn_shim_addr_is_loopback(const rn_hsa *a);
/* 0.0.0.0 or :: */
int rn_shim_addr_is_any(const rn_hsa *a);
/* The port, network order. */
in_port_t rn_shim_addr_port(const rn_hsa *a);

/* ---- options (rn_shim_opt.c, rn_shim_tcpinfo.c) ---- */

/* setsockopt / getsockopt on a ri2n socket. */
int rn_shim_opt_set(int fd, const rn_shim_ent *e, int level, int name, const void *val,
		    socklen_t len);
int rn_shim_opt_get(int fd, const rn_shim_ent *e, int level, int name, void *val, socklen_t *len);
/* Replays on a new ri2n socket the options the program set on its TCP socket. */
void rn_shim_opt_replay(int fd, const rn_shim_ent *e);
/* TCP_INFO for a ri2n socket, filled from ri2n_stats(). */
int rn_shim_tcpinfo(int fd, const rn_shim_ent *e, void *val, socklen_t *len);

#endif
