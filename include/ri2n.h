/*
 * ri2n.h - reliable byte streams over several Ethernet rails.
 *
 * A ri2n connection looks like a connected TCP socket: create it with
 * ri2n_socket(), then ri2n_connect() to any one rail address of the peer, or
 * ri2n_bind() + ri2n_listen() + ri2n_accept().  The descriptor returned is a
 * real file descriptor (one end of a socketpair whose other end the ri2n
 * engine thread owns), so read/write/readv/writev/send/recv, poll/select/epoll,
 * fcntl(O_NONBLOCK), shutdown and close all work on it unchanged.  libri2n.so
 * defines read, write and the other data calls itself: on a ri2n descriptor
 * they take the fast path (ri2n_recv/ri2n_send), on any other they are
 * libc's; RI2N_PLAIN_FAST=0 sends them through the descriptor instead.
 *
 * Underneath, the stream is striped over every rail the two hosts share
 * (rails are matched by subnet), a failed or silently black-holed rail is
 * detected within milliseconds and left out, and taken back when it heals.
 *
 * Errors: every call returns -1 and sets errno as the BSD call would.  A
 * connection that dies abnormally (peer silent past the dead-peer timeout,
 * reset) makes read() fail with the reason, as TCP's does (ETIMEDOUT,
 * ECONNRESET; through the descriptor always ECONNRESET) after the data
 * received before (write() fails with EPIPE, as with TCP);
 * ri2n_getsockopt(SO_ERROR) tells the precise reason (ETIMEDOUT, ECONNRESET,
 * ECONNREFUSED).  It is never a clean end of file and never a hang.
 *
 * Configuration: every knob below is an RI2N_* environment variable (read
 * once, when the engine starts) and a socket option at level RI2N_SOL, set
 * before connect/listen; docs/CONFIG.md lists them with their defaults.
 *
 * Threads: any thread may call any function; one engine thread per process
 * runs the timers and every connection no application thread is driving
 * (a thread in ri2n_send/ri2n_recv drives its own, see "the fast path").
 * After fork() the child starts its own engine on
 * first use; descriptors it inherited keep working (served by the parent's
 * engine while the parent lives).
 */
#ifndef RI2N_H
#define RI2N_H

#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>
#include <netinet/in.h>
#include <sys/socket.h>

#ifdef __cplusplus
extern "C" {
#endif

#define RI2N_API __attribute__((visibility("default")))

/* A new, unconnected ri2n socket (a descriptor), or -1 with errno. */
RI2N_API int ri2n_socket(void);

/*
 * Binds to an address and port (struct sockaddr_in or sockaddr_in6).
 * INADDR_ANY or in6addr_any binds every rail; a rail's address binds that
 * rail only.  Port 0 picks one free on every rail.  EADDRINUSE,
 * EADDRNOTAVAIL (not a rail address), EAFNOSUPPORT (another family), EINVAL
 * (len short of the family's struct).
 */
RI2N_API int ri2n_bind(int fd, const struct sockaddr *addr, socklen_t len);

/* Accepts connections, at most `backlog` waiting (<= 0: a default of 128). */
RI2N_API int ri2n_listen(int fd, int backlog);

/*
 * A connected descriptor for the next handshake completed on a listening
 * socket; blocks unless the listening descriptor is O_NONBLOCK (EAGAIN).
 * addr/len (may be NULL) receive the peer's address the handshake came from.
 */
RI2N_API int ri2n_accept(int fd, struct sockaddr *addr, socklen_t *len);

/*
 * Connects to `addr` (sockaddr_in or sockaddr_in6), any one rail address of
 * the peer.  Blocks until
 * established unless the descriptor is O_NONBLOCK: then EINPROGRESS, the
 * descriptor becomes writable when the handshake ends, and SO_ERROR says how.
 * ECONNREFUSED, ETIMEDOUT, ENETUNREACH (no local rail in the peer's subnet).
 */
RI2N_API int ri2n_connect(int fd, const struct sockaddr *addr, socklen_t len);

/* Closes a ri2n descriptor; plain close() works too. */
RI2N_API int ri2n_close(int fd);

/*
 * The local / peer address (the rail the handshake ran on): a sockaddr_in,
 * or a sockaddr_in6 for an IPv6 rail (*len says which).  Also on a
 * connected descriptor another process made and handed over (fork, exec,
 * SCM_RIGHTS: docs/API.md, "Handed to another process").
 */
RI2N_API int ri2n_getsockname(int fd, struct sockaddr *addr, socklen_t *len);
RI2N_API int ri2n_getpeername(int fd, struct sockaddr *addr, socklen_t *len);

/*
 * ri2n's own options, at level RI2N_SOL.  Each is also the environment
 * variable of its name; docs/CONFIG.md describes them (meaning, unit,
 * default, range), its tables written from the code's.  Values are int,
 * except RI2N_KEY, set with the 32 key bytes (0 bytes: none) and read back
 * as an int (1: a key is set; the key itself never).
 */
#define RI2N_SOL 0x7232

enum ri2n_option {
	RI2N_HEARTBEAT_MS = 1,
	RI2N_KEEPALIVE_MS,
	RI2N_RAIL_TIMEOUT_MS,
	RI2N_DEAD_PEER_MS,
	RI2N_CONNECT_TIMEOUT_MS,
	RI2N_FAIL_WINDOW,
	RI2N_FAIL_MIN,
	RI2N_MTU,
	RI2N_SNDBUF,
	RI2N_RCVBUF,
	RI2N_KEY,
	RI2N_BUSY_POLL_US,
	RI2N_KEY_AUTH_ONLY,
	RI2N_KEY_AES256,
	RI2N_REDUNDANT_BYTES,
};

/*
 * Sets an option.  level RI2N_SOL: the options above, before connect/listen
 * (EISCONN after).  level SOL_SOCKET / IPPROTO_TCP: SO_KEEPALIVE,
 * SO_REUSEADDR, TCP_NODELAY are accepted and ignored (ri2n keeps rails
 * alive itself and never delays small writes).  Others: ENOPROTOOPT.
 */
RI2N_API int ri2n_setsockopt(int fd, int level, int name, const void *val, socklen_t len);
/* Reads an option: the RI2N_SOL ones, SO_ERROR (pending error, then 0), SO_TYPE. */
RI2N_API int ri2n_getsockopt(int fd, int level, int name, void *val, socklen_t *len);

#define RI2N_MAX_RAILS 8

/* One rail of a connection, as ri2n_stats() reports it. */
struct ri2n_rail_stats {
	struct sockaddr_in local, remote;
	int up;                   /* usable both ways */
	int rx_up, tx_up;         /* this side receives / sends on it */
	uint64_t last_change_ns;  /* CLOCK_MONOTONIC time of the last change, 0: never */
	const char *last_cause;   /* why it last changed, a short phrase */
	uint32_t down_events, up_events;
	uint64_t tx_packets, tx_bytes, rx_packets, rx_bytes;
	uint64_t tx_data, rx_data; /* DATA packets (the rest: ACKs, probes) */
	uint64_t retransmits;     /* DATA packets resent on this rail */
	uint64_t lost;            /* DATA packets sent here and declared lost */
	uint64_t heartbeats, keepalives;
	uint32_t cwnd, inflight;  /* packets */
	uint64_t srtt_ns;
	uint32_t dgram;           /* full datagram size on this rail, bytes (UDP payload) */
	uint32_t mtu_holes;       /* times it failed as an MTU black hole (large datagrams lost) */
	uint32_t small_ok;        /* largest datagram that still arrived then, bytes */
};

/* A connection's counters; drops are counted by reason. */
struct ri2n_stats {
	const char *state;        /* "established", "closed", ... */
	int error;                /* errno of a dead connection, else 0 */
	uint64_t established_ns;
	uint64_t app_tx_bytes, app_rx_bytes;
	uint64_t tx_packets, rx_packets, retransmits, rto_events, dup_data;
	uint64_t drops_malformed, drops_source, drops_window, drops_duplicate, drops_other;
	uint32_t mss;             /* stream bytes per packet */
	int nrails;
	struct ri2n_rail_stats rail[RI2N_MAX_RAILS];
	/* 0.1.0's struct ends here (RI2N_STATS_SIZE_V1); later fields follow */
	uint64_t copies;          /* DATA packets also sent on a second rail (RI2N_REDUNDANT_BYTES) */
	/*
	 * An IPv6 rail's two ends (rail[i].local and .remote are then zeroed);
	 * sin6_family is 0 for an IPv4 rail.
	 */
	struct ri2n_rail_addr6 {
		struct sockaddr_in6 local, remote;
	} rail6[RI2N_MAX_RAILS];
};

/* ---- the fast path ---- */

/*
 * send/recv/writev/readv for a ri2n descriptor, done by the calling thread:
 * a send puts its bytes through the protocol and onto the rails itself; a
 * receive takes bytes straight from the protocol's buffer and, when none
 * are there, waits on the rails' sockets itself, so the reply wakes exactly
 * this thread.  Same arguments, returns and errors as send(2)/recv(2)/
 * writev(2)/readv(2) on a TCP socket (blocking unless O_NONBLOCK or
 * MSG_DONTWAIT; SO_RCVTIMEO/SO_SNDTIMEO honoured; a blocking send returns
 * when every byte is taken).  flags: MSG_DONTWAIT, MSG_NOSIGNAL, MSG_MORE
 * (ignored: ri2n never delays), MSG_WAITALL; other flags (MSG_PEEK...) are
 * served by the descriptor itself, correctly but without the gain.
 *
 * Mixing with plain read/write/poll on the same descriptor is allowed and
 * keeps the byte order; bytes a fast call leaves unread are handed to the
 * descriptor for plain readers.  ENOTSOCK if fd is not a ri2n socket.
 */
RI2N_API ssize_t ri2n_send(int fd, const void *buf, size_t len, int flags);
RI2N_API ssize_t ri2n_recv(int fd, void *buf, size_t len, int flags);
struct iovec;
RI2N_API ssize_t ri2n_writev(int fd, const struct iovec *iov, int iovcnt);
RI2N_API ssize_t ri2n_readv(int fd, const struct iovec *iov, int iovcnt);

/*
 * Fills *st for a connected descriptor.  ENOTCONN before the handshake.
 *
 * The struct grows at its end from one version to the next, so the call
 * takes the caller's sizeof(struct ri2n_stats): ri2n_stats(fd, st) is a
 * macro for ri2n_stats_sz(fd, st, sizeof(struct ri2n_stats)).  A program
 * built against an older ri2n.h gets the fields it knows and nothing is
 * written past its struct; one built against a newer ri2n.h than the library
 * gets its extra fields zeroed.  EINVAL if size is below the first
 * version's struct (0.1.0: RI2N_STATS_SIZE_V1 bytes) or st is NULL.
 */
RI2N_API int ri2n_stats_sz(int fd, struct ri2n_stats *st, size_t size);
/* The 0.1.0 entry point, for programs built before ri2n_stats_sz: the 0.1.0 struct. */
RI2N_API int ri2n_stats(int fd, struct ri2n_stats *st);
#define ri2n_stats(fd, st) ri2n_stats_sz((fd), (st), sizeof(struct ri2n_stats))
/* The size of 0.1.0's struct ri2n_stats: the end of rail[]. */
#define RI2N_STATS_SIZE_V1 (offsetof(struct ri2n_stats, rail) + \
			    RI2N_MAX_RAILS * sizeof(struct ri2n_rail_stats))

/* ---- events ---- */

enum ri2n_event_type {
	RI2N_EVENT_CONNECTED = 1, /* connect: answered (it returns); accept: established */
	RI2N_EVENT_RAIL_DOWN,     /* a rail stopped carrying traffic (one way or both) */
	RI2N_EVENT_RAIL_UP,       /* a rail works both ways again */
	RI2N_EVENT_CLOSED,        /* a connection ended cleanly */
	RI2N_EVENT_FAILED,        /* a connection died: error says why */
};

/* Something that happened to a connection, as ri2n_read_event() returns it. */
struct ri2n_event {
	int type;                 /* enum ri2n_event_type */
	int fd;                   /* the connection's descriptor as the application got it */
	int rail;                 /* the rail of a rail event, else -1 */
	int error;                /* RI2N_EVENT_FAILED: ETIMEDOUT, ECONNRESET, ECONNREFUSED */
	uint64_t time_ns;         /* CLOCK_MONOTONIC time it happened */
	struct sockaddr_in peer;  /* the peer (the address connected to, or the one accepted from) */
	struct sockaddr_in local_rail, remote_rail; /* rail events: the rail's two ends */
	char cause[48];           /* why, a short phrase ("receive count below threshold") */
	uint64_t missed;          /* events dropped before this one (the queue holds 1024) */
	/* 0.1.0's struct ends here (RI2N_EVENT_SIZE_V1); later fields follow */
	/*
	 * The same addresses when they are IPv6 (peer, local_rail and
	 * remote_rail are then zeroed); sin6_family 0 when they are IPv4.
	 */
	struct sockaddr_in6 peer6, local_rail6, remote_rail6;
};

/*
 * A descriptor that polls readable while events are waiting (for poll/epoll
 * loops); ri2n keeps the last 1024 events of the process whether or not
 * anyone reads them.  -1 with errno on failure.  Do not read or close it.
 */
RI2N_API int ri2n_event_fd(void);
/*
 * Takes the oldest waiting event: 1 with *ev filled, 0 if there is none.
 * As with ri2n_stats, the struct grows at its end: ri2n_read_event(ev) is a
 * macro for ri2n_read_event_sz(ev, sizeof(struct ri2n_event)); an older
 * caller gets the fields it knows, a newer one its extra fields zeroed.
 * -1 with EINVAL if size is below 0.1.0's struct (RI2N_EVENT_SIZE_V1) or ev
 * is NULL; no event is taken then.
 */
RI2N_API int ri2n_read_event_sz(struct ri2n_event *ev, size_t size);
/* The 0.1.0 entry point, for programs built before ri2n_read_event_sz. */
RI2N_API int ri2n_read_event(struct ri2n_event *ev);
#define ri2n_read_event(ev) ri2n_read_event_sz((ev), sizeof(struct ri2n_event))
/* The size of 0.1.0's struct ri2n_event: the end of missed. */
#define RI2N_EVENT_SIZE_V1 (offsetof(struct ri2n_event, missed) + sizeof(uint64_t))

/* ---- logging ---- */

enum ri2n_log_level { RI2N_LOG_DEBUG, RI2N_LOG_INFO, RI2N_LOG_WARN, RI2N_LOG_ERROR, RI2N_LOG_OFF };

/*
 * Chooses what is logged (default RI2N_LOG_WARN, or RI2N_LOG in the
 * environment) and where: hook(level, line, arg) for every line, from the
 * thread that logs (often the engine thread: keep it short), or stderr
 * when hook is NULL.  Lines are one per event, never one per packet.
 */
RI2N_API void ri2n_set_log(int level, void (*hook)(int level, const char *line, void *arg),
			   void *arg);

/* The library version, "MAJOR.MINOR.PATCH". */
RI2N_API const char *ri2n_version(void);

#ifdef __cplusplus
}
#endif

#endif
