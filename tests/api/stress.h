/*
 * stress.h - what the parts of posix_stress share (posix_stress.c: set-up,
 * watchdog and summary; stress_write.c: the write paths, the signal handler
 * that writes and the forked writers; stress_read.c: the read paths and the
 * check of every byte).
 *
 * The contract under test: a ri2n descriptor behaves like a connected TCP
 * socket, whatever call, thread, signal handler or process writes to it:
 * the same bytes in the same order, never a hang.
 *
 * Each connection carries two streams, one each way.  A stream is a run of
 * records; a record is a header (struct rec) and a payload whose bytes are
 * the test kit's pattern at their stream offset, so the reader checks every
 * byte, every record's sequence number and offset, and names the path that
 * wrote each record.  A stream's writers (two threads, the timer signal's
 * handler while it holds the stream's token, a forked child while its parent
 * waits) take turns under the stream's own lock, so the order is defined.
 *
 * One more connection stays idle till its end records: its readers wait in
 * their reads while the others stream, and are cancelled there
 * (pthread_cancel) and replaced; with no bytes to lose, a cancelled read
 * must leave the connection and every other one working.
 */
#ifndef STRESS_H
#define STRESS_H

#include <pthread.h>
#include <signal.h>
#include <stdatomic.h>
#include <stdint.h>
#include <stdio.h>
#include <sys/types.h>

enum {
	MAX_CONNS = 8,
	MAX_STREAMS = 2 * MAX_CONNS + 2, /* and the idle connection's two */
	WRITERS = 2,                 /* writer threads per stream */
	MAX_PAYLOAD = 256 * 1024,    /* the largest record's payload */
	SIG_PAYLOAD = 64,            /* the largest a signal handler writes */
	DPRINTF_PAYLOAD = 200,       /* the largest dprintf writes (a %c per byte) */
	WLOG_N = 64,                 /* writes remembered per stream */
	RLOG_N = 16,                 /* reads remembered per stream */
	DUP2_BASE = 600,             /* stream s's dup2 target: DUP2_BASE + s */
	DUPFD_MIN = 300,             /* F_DUPFD's lowest number */
	SPAWN_FD = 900,              /* the number a spawned writer finds the socket at */
};

#define REC_MAGIC 0x72693273u /* "ri2s" */

/* A record's header, in host order (both ends are this process). */
struct rec {
	uint32_t magic;
	uint16_t stream;
	uint16_t path; /* enum wpath that wrote it */
	uint32_t seq;
	uint32_t len;  /* payload bytes after the header */
	uint64_t off;  /* stream offset of the header's first byte */
};

/* The ways a record goes out. */
enum wpath {
	W_WRITE, W_WRITEV, W_SEND, W_SENDMSG, W_RI2N_SEND, W_RI2N_WRITEV,
	W_DUP,      /* write(dup(fd)), then close the duplicate */
	W_DUPKEEP,  /* write() through a duplicate kept for the whole run */
	W_DUP2,     /* dup2(fd, DUP2_BASE + s), send, close */
	W_DUPFD,    /* fcntl(F_DUPFD, DUPFD_MIN), writev, close */
	W_STDIO,    /* fdopen(dup(fd)) + fwrite + fflush + fclose */
	W_DPRINTF,  /* dprintf, a %c per byte */
	W_SENDFILE, /* sendfile from a memfd */
	W_SPLICE,   /* splice from a pipe */
	W_SEND_NB,  /* send(MSG_DONTWAIT), poll() for POLLOUT on EAGAIN */
	W_SCM,      /* write() through the number an SCM_RIGHTS message brought back */
	W_LAST_THREAD = W_SCM,                       /* the paths a writer thread draws from */
	W_SIG_WRITE, W_SIG_SEND, W_SIG_WRITEV,       /* the timer signal's handler */
	W_SPAWN,    /* a posix_spawn()ed image of this program (--spawn-write) */
	W_CHILD_WRITE, W_CHILD_SEND, W_CHILD_WRITEV, /* a forked child */
	W_END,      /* the last record (no payload), then shutdown(SHUT_WR) */
	W_N
};

/* The ways a reader takes bytes. */
enum rpath {
	R_READ, R_READV, R_RECV, R_RECVMSG, R_RI2N_RECV, R_RI2N_READV,
	R_WAITALL,      /* recv(MSG_WAITALL) of the rest of a payload */
	R_RI2N_WAITALL, /* ri2n_recv(MSG_WAITALL) of the rest of a payload */
	R_POLL,         /* recv(MSG_DONTWAIT), poll() on EAGAIN */
	R_EPOLL,        /* epoll_wait() for readiness, then read() */
	R_FIONREAD,     /* poll(), ioctl(FIONREAD), read exactly that */
	R_N
};

/* Features a run can leave out (--skip NAME,...), besides path names. */
enum {
	F_SIG = 1,      /* the timer signal's handler writing records */
	F_FORK = 2,     /* forked children writing records */
	F_USR2 = 4,     /* SIGUSR2 (no SA_RESTART) thrown at the threads */
	F_RESTART = 8,  /* EINTR while only SA_RESTART handlers ran is an error */
	F_FIONREAD = 16, /* FIONREAD 0 after POLLIN (not at the end) is an error */
	F_CANCEL = 32    /* reader threads cancelled in a read and replaced */
};

struct wlog {               /* one write, as its writer saw it (atomics: read by others) */
	_Atomic uint64_t off;
	_Atomic uint32_t seq, len, path, who; /* who: writer 0..; 90 handler; 91 child; 92 main */
	_Atomic uint64_t ms;                   /* since the start */
	_Atomic int32_t result;                /* 0 in flight, 1 done, -errno */
};

struct rlog {
	uint64_t off, ms;
	uint32_t path;
	int64_t got;
};

struct stream {
	int id;
	int quiet;            /* the idle connection's: no writer till the end record */
	int tx, rx;           /* written on tx, read on rx (the other end) */
	uint64_t seed;        /* the payload pattern's */
	pthread_mutex_t mu;   /* the writers' turn */
	/* the writer whose turn it is (mu's holder, the handler holding the token, a child) */
	uint32_t seq;
	uint64_t off;
	int keep_dup, memfd, pipe[2], scm[2]; /* scm: a socketpair SCM_RIGHTS goes round */
	off_t mf_pos;         /* where the next sendfile record goes in the memfd */
	_Atomic int token;    /* >0: records the handler owes; 0: none; -1: it failed */
	_Atomic int sig_busy; /* a handler is writing */
	char sig_why[160];    /* the handler's failure (written before token = -1) */
	struct wlog wlog[WLOG_N];
	_Atomic uint32_t wlog_n;
	/* progress and what each side is doing now, for the watchdog */
	_Atomic uint64_t written, verified, stamp_ms;
	_Atomic int w_path, r_path; /* -1: not in a call */
	_Atomic uint64_t w_since, r_since;
	/* the reader's own (only its thread) */
	struct rlog rlog[RLOG_N];
	uint32_t rlog_n;
	_Atomic int end_seen, eof;
};

struct stress {
	int nconns, seconds, hz, rate_kib;
	int nstreams; /* 2 * nconns busy ones, then the idle connection's 2 (quiet) */
	int nwriters; /* WRITERS per busy stream */
	int tcp; /* --tcp: kernel TCP sockets, the reference (fast calls: their POSIX twins) */
	uint64_t seed;
	unsigned skip_w, skip_r, skip_f; /* bit masks: wpath, rpath, F_* */
	struct stream st[MAX_STREAMS];
	_Atomic int stop, failed;
	uint64_t t0_ms;
	_Atomic uint64_t w_bytes[W_N], w_recs[W_N], r_bytes[R_N], r_calls[R_N];
	_Atomic uint64_t eintr_usr2, sig_records, forks, cancels;
	_Atomic uint64_t last_fork_ms;
	pid_t pid; /* the run's own process: a forked child's copy differs (on_timer_signal) */
};

extern struct stress S;
extern const char *const wpath_name[W_N];
extern const char *const rpath_name[R_N];

uint64_t ms_now(void);            /* CLOCK_MONOTONIC */
uint64_t ms_run(void);            /* since the start */
uint32_t rnd(uint64_t *x);        /* a thread's own generator */
void us_sleep(uint64_t us);       /* sleeps us microseconds, through EINTR */

/* The handler of SIGUSR2 (no SA_RESTART) counts here: an EINTR is legitimate
 * only if this thread's count moved during the call. */
extern __thread volatile sig_atomic_t usr2_hits;
/* An EINTR from a call begun when this thread's SIGUSR2 count was `before`:
 * legitimate only if a handler without SA_RESTART ran meanwhile. */
int eintr_legit(sig_atomic_t before);
/* The stream this thread reads (-1: none): limits what the handler writes there. */
extern __thread int my_rx_stream;

/* Fails the run: prints what, the stream's logs and the summary, and exits 1. */
void fail_stream(struct stream *st, uint64_t off, const char *fmt, ...)
	__attribute__((format(printf, 3, 4), noreturn));
/* With POSIX_STRESS_GDB in the environment: every thread's stack of process pid (gdb), to stderr. */
void gdb_stacks(pid_t pid);
/* Prints a stream's write log around off (UINT64_MAX: the last entries). */
void print_wlog(FILE *f, struct stream *st, uint64_t off);

/* stress_write.c */
void *writer_main(void *arg);     /* arg: (struct writer_arg *) */
struct writer_arg { struct stream *st; int who; pthread_t th; };
void on_timer_signal(int sig);    /* SIGUSR1: writes while a stream's token is out */
/* The last record and shutdown(SHUT_WR), from the main thread. */
void write_end(struct stream *st);
/* main() of a spawned writer: argv after --spawn-write; its exit status. */
int spawn_write_main(char **argv);
/* Fills a record (header + payload of len bytes) at the stream's current place. */
size_t rec_build(struct stream *st, uint8_t *buf, uint32_t len, enum wpath p);

/* stress_read.c */
void *reader_main(void *arg);     /* arg: struct stream * */

#endif
