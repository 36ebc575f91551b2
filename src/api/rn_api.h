/*
 * rn_api.h - what the LD_PRELOAD shim needs beyond ri2n.h.
 */
#ifndef RN_API_H
#define RN_API_H

#include <sys/socket.h>

#include "rn_hsa.h"

/* ri2n_accept with accept4() flags (SOCK_NONBLOCK, SOCK_CLOEXEC). */
int rn_api_accept(int fd, struct sockaddr *addr, socklen_t *len, int flags);
/*
 * accept on a ri2n listener this process inherited (fork) and does not know
 * (rn_api_accept says ENOTSOCK): a connection the listening process's engine
 * queued.  The connection is this process's own if the listening process
 * hands it over (*owned 1: a ri2n socket, rn_handover.h), else a
 * descriptor that engine serves (plain read/write/poll, while that process
 * lives).  Its peer in *peer (either family).  flags as accept4's.  The
 * descriptor, or -1 with errno (EAGAIN, EINVAL: not a ri2n listener).
 */
#include <netinet/in.h>
int rn_api_accept_inherited(int fd, rn_hsa *peer, int flags, int *owned);
/* In _exit: the connections the program closed are delivered first (all: a taker's, exit's drain). */
void rn_api_drain_quick_exit(void);
/* True if fd is a live ri2n socket. */
int rn_api_is_ri2n(int fd);
/*
 * ri2n-run sees every write: a fast send on a socket made from now on need
 * not look for plain bytes in its descriptor first ...
 */
void rn_api_writes_seen(void);
/* The program changed a descriptor's O_NONBLOCK or timeouts (rn_sock_flags_changed). */
void rn_api_flags_changed(void);
/* ... until fd gets some by a way the shim does not serve (sendfile, splice, stdio). */
void rn_api_note_plain(int fd);
/* ... or every socket of the table may (a child process is made: spawn, vfork, system). */
void rn_api_plain_all(void);
/* fd's bytes waiting in ri2n's buffer go into the descriptor (splice reads it there). */
void rn_api_to_descriptor(int fd);
/*
 * The same for every ri2n socket of this process: the fast path is about to
 * end for good (rn_sandbox.h), from now on every read takes the descriptor.
 */
void rn_api_all_to_descriptor(void);

/*
 * The fast path (ri2n_send/ri2n_recv): *handled is 0 when fd is no ri2n
 * socket (errno EBADF or ENOTSOCK), so an interposer can pass the call on.
 * known: the caller saw every close of this process's descriptors (ri2n-run
 * does), so fd's table entry is taken as it is, without asking the kernel
 * whether fd still is that socket (a getsockopt, 2 of 5 system calls of a
 * small message).
 */
#include <stdint.h>
#include <sys/uio.h>
ssize_t rn_api_send(int fd, int known, const struct iovec *iov, int iovcnt, int flags,
		    int *handled);
ssize_t rn_api_recv(int fd, int known, const struct iovec *iov, int iovcnt, int flags,
		    int *handled);

/*
 * The rail sockets of connected ri2n socket fd (rn_railref.h), for a poll or
 * epoll set the caller waits on; 0 if it has none (not ri2n, not connected).
 * known: the caller sees every close of fd, so ri2n's table is trusted
 * rather than checked against the kernel (rn_api_lookup_known).
 */
#include "rn_railref.h"
int rn_api_rails(int fd, int known, rn_railref *out, int max);
/*
 * epoll_ctl on ri2n socket fd in the epoll set with id ep_id
 * (rn_inline_epoll_note); events 0: DEL.  With out, also its rail sockets
 * as rn_api_rails gives them (one look-up for both): their number.  known:
 * fd is known to be the same open file as at its last look-up (an
 * EPOLL_CTL_MOD or DEL the kernel took: the registration it changed was
 * added, and checked, while fd was that file), so it is not checked again.
 */
int rn_api_epoll_note(int fd, int known, uint64_t ep_id, uint32_t events, uint64_t data, rn_railref *out,
		      int max);

/*
 * ioctl(fd, req, val) for the requests rn_api_queue_ioctl names (FIONREAD,
 * SIOCINQ, SIOCOUTQ, SIOCOUTQNSD) on ri2n socket fd: the bytes queued in its
 * descriptor and in ri2n's buffers, as TCP counts them.  *handled and known
 * as for rn_api_recv.  0, or -1 with errno (EINVAL on a listener).
 */
int rn_api_queue_ioctl(unsigned long req);
int rn_api_ioctl(int fd, int known, unsigned long req, int *val, int *handled);
/* ---- descriptor numbers (the shim follows the program's dup and close) ---- */

#include <netinet/in.h>

/*
 * Moves ri2n socket `fd` to number `to` as dup3(fd, to, flags) would
 * (closing what `to` was), registers it under `to` and closes `fd`.  Only a
 * socket not yet connecting, or listening (a connection is named by its
 * number).  flags: 0 or O_CLOEXEC.  Returns `to`, or -1 with errno
 * (EBADF, EINVAL).  `fd` is the caller's own, just made (ri2n_socket):
 * ri2n's table is trusted for it, not checked against the kernel.
 */
int rn_api_move(int fd, int to, int flags);
/*
 * ri2n_socket for a socket the caller moves at once (rn_api_move, which
 * sets the new number's FD_CLOEXEC): its descriptor stays close-on-exec
 * until then, and is non-blocking (O_NONBLOCK) from the start if nonblock.
 */
int rn_api_socket(int nonblock);
/*
 * ri2n_connect on the socket the caller just moved to fd (rn_api_move),
 * whose file is non-blocking if nonblock is 1: neither is asked of the kernel.
 */
int rn_api_connect(int fd, int nonblock, const struct sockaddr *addr, socklen_t len);
/*
 * Registers `dup`, a duplicate the caller made of ri2n socket fd (dup,
 * dup2, dup3, F_DUPFD), under its own number.  0, or -1 with errno (EINVAL:
 * `dup` is not the same socket).
 */
int rn_api_dup(int fd, int dup);
/*
 * Forgets number fd (about to be closed or reused) without closing it; if the
 * engine knew the socket by that number, it knows it by another registered
 * duplicate from now on.
 */
void rn_api_forget(int fd);
/*
 * rn_api_forget for number fd, already closed (in a signal handler, the
 * work deferred): only if the table still names the socket of device dev
 * and inode ino there (the number may be another socket's by now).
 */
void rn_api_forget_closed(int fd, dev_t dev, ino_t ino);
/*
 * Whether address a (its port ignored) is in the subnet of one of this
 * host's rails of its family, or with `exact` is a rail's own address; a
 * link-local IPv6 address with a scope only matches the rail of that
 * interface; a rail still waiting for its address matches nothing.
 * 0.0.0.0: whether there is a rail; "::": whether there is an IPv6 rail
 * with an address.  Starts the engine.  1, 0, or -errno (no rails).
 */
int rn_api_rail_match(const rn_hsa *a, int exact);

/*
 * setsockopt(fd, SOL_SOCKET, name, ...) for SO_SNDBUF or SO_SNDBUFFORCE on a
 * ri2n socket, keeping a socket not yet connecting unwritable until the
 * handshake ends (a larger buffer is filled with junk too, see ri2n_api.c).
 * 0, or -1 with errno.
 */
int rn_api_set_sndbuf(int fd, int name, const void *val, socklen_t len);


/*
 * ---- what ri2n-run needs of the engine, passed through (the shim calls
 * the engine only here) ----
 */
/* Whether the calling thread is the engine (rn_engine_self): its waits are its own. */
int rn_api_engine_self(void);
/* Whether this thread is making the engine's event base (rn_engine_making). */
int rn_api_engine_making(void);
/* RI2N_BUSY_POLL_US, or RN_BUSY_AUTO (rn_inline_busy_default). */
int rn_api_busy_default(void);
/* The calling thread's poll before a wait (ns), and what the wait was (rn_spin.h). */
int64_t rn_api_spin_budget(int busy_us);
void rn_api_spin_learn(int busy_us, int64_t waited_ns, int caught);
/* A wait on rail sockets begins and ends (rn_inline_watch_begin and _end). */
void rn_api_watch_begin(const rn_railref *r, int n, void **h);
void rn_api_watch_end(void **h, int n, const uint8_t *ready, uint64_t ep_id, rn_ready *out,
		      int max, int *nout);
/* The sockets of epoll set ep_id whose bytes still wait in the core (rn_inline_held). */
int rn_api_held(uint64_t ep_id, rn_ready *out, int max);
/*
 * poll and select: fd's rail sockets as rn_api_rails gives them, and in
 * *sock a reference to its socket (NULL if fd is not ri2n's) for the calls
 * below, dropped with rn_api_poll_put.  known: the caller sees every close
 * of fd, so ri2n's table is trusted as for data calls (rn_api_lookup_known)
 * rather than checked against the kernel.  rn_api_poll_held and
 * rn_api_poll_end: rn_inline_poll_held and rn_inline_poll_end.
 */
int rn_api_poll_rails(int fd, int known, rn_railref *out, int max, void **sock);
int rn_api_poll_held(void *const *socks, int n, uint8_t *in);
void rn_api_poll_end(void **h, int n, const uint8_t *ready, void *const *socks, int ns,
		     uint8_t *in);
void rn_api_poll_put(void *const *socks, int n);
/* fd's socket cookie, 0 with errno if fd is no socket (rn_fd_cookie). */
uint64_t rn_api_fd_cookie(int fd);
/*
 * The identity ri2n recorded for its socket at fd (device, inode and socket
 * cookie of the descriptor's open file), with no system call: 0, or -1 if
 * the table has no socket at fd.  For the caller that just put it there.
 */
int rn_api_ident(int fd, dev_t *dev, ino_t *ino, uint64_t *cookie);
/* Whether the process is (about to be) under a seccomp filter (rn_sandbox_on). */
int rn_api_sandbox_on(void);
/*
 * fd's addresses (either family) if it is a ri2n connection's user end: 0,
 * or -1 (rn_pairname_get).
 */
int rn_api_pairname_get(int fd, rn_hsa *local, rn_hsa *peer);

#endif
