/*
 * rn_accept.c - the engine's listeners: handshakes a listener completes
 * become connections (a socketpair, a stream, a record for ri2n_accept),
 * within the process's budget of accepted connections.
 */
#define _GNU_SOURCE
#include <errno.h>
#include <event2/event.h>
#include <stdio.h>
#include <fcntl.h>
#include <poll.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/resource.h>
#include <sys/ioctl.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <unistd.h>

#include <sodium/utils.h>

#include "rn_knobs.h"
#include "rn_events.h"
#include "rn_handover.h"
#include "rn_inline.h"
#include "rn_log.h"
#include "rn_pairname.h"
#include "rn_stream.h"
#include "rn_stream_int.h"
#include "rn_sys.h"


/*
 * The process's budget of accepted connections.  Each holds two descriptors
 * (its socketpair) and rings that grow with use, all made before the
 * application calls ri2n_accept, so a flood of completed handshakes must
 * meet a limit: RI2N_MAX_CONNS, else half of the descriptors the process may
 * open, after 64 left to the application.  Past it a handshake is refused
 * at once (the client's connect fails with ECONNREFUSED), counted on the
 * listener, logged (at most once a second), and the next ri2n_accept fails
 * with EMFILE; so does a socketpair the kernel refuses.  A connection gives
 * its share back when the engine closes its end (close_user_end): lingering
 * after a clean close it holds no descriptor and no ring.
 */
static long g_conns;           /* (atomic) accepted connections holding their descriptors */
static long g_conn_cap = -1;
static uint64_t g_refuse_logged_ns;

static long conn_cap(void)
{
	int64_t v;
	struct rlimit rl;

	if (g_conn_cap >= 0)
		return g_conn_cap;
	v = rn_proc_get(RN_PROC_MAX_CONNS); /* 0: from the descriptor limit */
	if (v > 0)
		g_conn_cap = (long)v;
	else if (getrlimit(RLIMIT_NOFILE, &rl) == 0 && rl.rlim_cur != RLIM_INFINITY)
		g_conn_cap = rl.rlim_cur > 128 ? (long)(rl.rlim_cur - 64) / 2 : 32;
	else
		g_conn_cap = 1L << 20;
	return g_conn_cap;
}

/* Takes one connection from the budget; -1 when none is left. */
int rn_stream_budget_take(void)
{
	if (__atomic_add_fetch(&g_conns, 1, __ATOMIC_RELAXED) > conn_cap()) {
		__atomic_sub_fetch(&g_conns, 1, __ATOMIC_RELAXED);
		return -1;
	}
	return 0;
}

void rn_stream_budget_give(rn_stream *st)
{
	if (st->budgeted)
		__atomic_sub_fetch(&g_conns, 1, __ATOMIC_RELAXED);
	st->budgeted = 0;
}

/* A handshake this process cannot take: the client hears it, the application too. */
void rn_stream_refuse(rn_port *p, const rn_accept_params *ap, int err, uint64_t now)
{
	rn_sock *ls = p->lsock;
	uint8_t reply[128];
	size_t n = rn_listener_refuse(p->lis, now, ap, reply, sizeof(reply));
	int wake;

	if (n)
		rn_port_send_now(p, ap->local_rail, ap->from, reply, n);
	p->refused++;
	if (now - g_refuse_logged_ns >= UINT64_C(1000000000) || !g_refuse_logged_ns) {
		g_refuse_logged_ns = now;
		rn_warn("refusing connections on port %u: %s (%ld accepted connections alive, "
			"the most is %ld: RI2N_MAX_CONNS or the descriptor limit); %llu refused so far",
			p->number, strerror(err), __atomic_load_n(&g_conns, __ATOMIC_RELAXED),
			conn_cap(), (unsigned long long)p->refused);
	}
	pthread_mutex_lock(&ls->mu);
	wake = ls->acc_err == 0;
	if (wake)
		ls->acc_err = err;
	pthread_mutex_unlock(&ls->mu);
	/* a record, as for a connection: the listening descriptor polls readable */
	if (wake) {
		rn_accept_rec rec = { .tag = 'e', .err = err };

		if (rn_sys_send(ls->eng_fd, &rec, sizeof(rec), MSG_DONTWAIT | MSG_NOSIGNAL) < 0)
			rn_debug("accept error record not written: %s", strerror(errno));
	}
}


/* ---- listening ---- */

static int make_pair(rn_sock *s)
{
	int sv[2];
	struct stat sb;

	if (socketpair(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0, sv) < 0)
		return -errno;
	/*
	 * A is ri2n's until ri2n_accept hands it to the program, and kept among
	 * ri2n's numbers meanwhile: the program's own next socket() or open()
	 * gets the number it would without ri2n, and accept the lowest free
	 * when it is called (rn_stream_accept_fd).  Moved first thing: until
	 * then the pair holds the program's two lowest free numbers, and an
	 * open() in another thread gets the one above (the kernel makes no
	 * socketpair at or above a floor: the window is A's move, two calls).
	 */
	sv[0] = rn_fd_own_high_cloexec(sv[0]);
	sv[1] = rn_fd_own_high_cloexec(sv[1]);
	if (rn_sys_fstat(sv[0], &sb) < 0 || rn_sys_fcntl(sv[1], F_SETFL, O_NONBLOCK) < 0) {
		int e = errno;

		rn_fd_close(sv[0]);
		rn_fd_close(sv[1]);
		return -e;
	}
	s->user_fd = sv[0];
	s->eng_fd = sv[1];
	s->dev = sb.st_dev;
	s->ino = sb.st_ino;
	s->cookie = rn_fd_cookie(sv[0]);
	rn_stream_pair_buf(sv[1]);
	return 0;
}

/* Tells the listener's user end of connection ns: an rn_accept_rec with ns's descriptor A. */
static int send_accept_rec(int eng_fd, const rn_sock *ns)
{
	rn_accept_rec rec = { .tag = 'a', .peer = ns->peer };

	rn_handover_fill(&rec.from, ns);
	struct iovec iov = { &rec, sizeof(rec) };
	union {
		struct cmsghdr h;
		char buf[CMSG_SPACE(sizeof(int))];
	} u;
	struct msghdr m = { .msg_iov = &iov, .msg_iovlen = 1, .msg_control = u.buf,
			    .msg_controllen = sizeof(u.buf) };
	struct cmsghdr *c = CMSG_FIRSTHDR(&m);

	memset(&u, 0, sizeof(u));
	c->cmsg_level = SOL_SOCKET;
	c->cmsg_type = SCM_RIGHTS;
	c->cmsg_len = CMSG_LEN(sizeof(int));
	memcpy(CMSG_DATA(c), &ns->user_fd, sizeof(int));
	return rn_sys_sendmsg(eng_fd, &m, MSG_DONTWAIT | MSG_NOSIGNAL) == (ssize_t)sizeof(rec) ? 0 : -1;
}

/*
 * Connections whose accept record was read, counted from what is still
 * unread on the listener's descriptor (records are read in order): the ones
 * no longer in the queue of the listening process went to a process that
 * inherited the listener (a prefork worker), which holds its own copy of
 * end A now; the engine lets go of its copy.  Otherwise they would fill the
 * backlog of a listening process that never accepts.
 */
void rn_stream_prune_taken(rn_sock *ls)
{
	rn_sock *gone = NULL, **tail = &gone;
	int ufd = __atomic_load_n(&ls->user_fd, __ATOMIC_RELAXED), unread = 0;
	struct stat sb;

	/* raw: the number is the program's; it must still be the listener */
	if (ufd < 0 || rn_sys_fstat(ufd, &sb) < 0 || sb.st_ino != ls->ino ||
	    sb.st_dev != ls->dev)
		return;
	/* counted under the mutex an accept in this process reads its record under */
	pthread_mutex_lock(&ls->mu);
	if (rn_sys_ioctl(ufd, FIONREAD, &unread) < 0) {
		pthread_mutex_unlock(&ls->mu);
		return;
	}
	unread /= (int)sizeof(rn_accept_rec);
	while (ls->accq_len > unread && ls->accq_head) {
		rn_sock *ns = ls->accq_head;

		ls->accq_head = ns->acc_next;
		if (!ls->accq_head)
			ls->accq_tail = NULL;
		ls->accq_len--;
		ns->acc_next = NULL;
		__atomic_store_n(&ns->queued, 0, __ATOMIC_RELAXED);
		*tail = ns;
		tail = &ns->acc_next;
	}
	pthread_mutex_unlock(&ls->mu);
	while (gone) {
		rn_sock *next = gone->acc_next;

		gone->acc_next = NULL;
		rn_fd_disown(gone->user_fd);
		rn_sys_close(gone->user_fd); /* raw: not the program's close */
		rn_sock_unref(gone);
		gone = next;
	}
}

void rn_stream_unqueue(rn_sock *ls, rn_sock *ns)
{
	rn_sock **pp;
	int found = 0;

	pthread_mutex_lock(&ls->mu);
	for (pp = &ls->accq_head; *pp; pp = &(*pp)->acc_next) {
		if (*pp != ns)
			continue;
		*pp = ns->acc_next;
		if (ls->accq_tail == ns) {
			ls->accq_tail = NULL;
			for (rn_sock *q = ls->accq_head; q; q = q->acc_next)
				ls->accq_tail = q;
		}
		ls->accq_len--;
		ns->acc_next = NULL;
		__atomic_store_n(&ns->queued, 0, __ATOMIC_RELAXED);
		found = 1;
		break;
	}
	pthread_mutex_unlock(&ls->mu);
	if (!found)
		return;
	rn_fd_disown(ns->user_fd);
	rn_sys_close(ns->user_fd); /* raw: the taker holds its own copy */
	rn_sock_unref(ns);
}

static int queue_len_full(rn_sock *ls)
{
	int full;

	pthread_mutex_lock(&ls->mu);
	full = ls->accq_len >= ls->backlog;
	pthread_mutex_unlock(&ls->mu);
	return full;
}

/*
 * Whether the listening socket's accept queue has no room (backlog).  Asked
 * for every INIT and COOKIE_ECHO: the records prefork workers took are
 * counted out (system calls) only when the queue looks full.
 */
static int queue_full(rn_sock *ls)
{
	if (!queue_len_full(ls))
		return 0;
	rn_stream_prune_taken(ls);
	return queue_len_full(ls);
}

/* Returns 0, or -1 when the connection could not be made (the client will retry). */
static int accept_conn(rn_port *p, const rn_accept_params *ap, uint64_t now)
{
	rn_sock *ls = p->lsock, *ns;
	rn_env env = *rn_engine_env();
	rn_conn *c;
	rn_stream *st;
	int rc;

	if (queue_full(ls)) {
		/* the client resends its COOKIE_ECHO; it may fit later */
		p->drops_backlog++;
		return -1;
	}
	if (rn_stream_budget_take()) {
		rn_stream_refuse(p, ap, EMFILE, now);
		return 0; /* answered: not to be forgotten */
	}
	ns = rn_sock_new();
	rc = ns ? make_pair(ns) : -ENOMEM;
	if (rc) {
		if (ns)
			rn_sock_unref(ns);
		__atomic_sub_fetch(&g_conns, 1, __ATOMIC_RELAXED);
		rn_stream_refuse(p, ap, rc == -ENOMEM || rc == -ENOBUFS ? ENOBUFS : EMFILE, now);
		return 0;
	}
	ns->cfg = ap->cfg;
	env.on_event = rn_stream_on_core_event;
	env.owns = rn_host_owns;
	env.user = NULL;
	if (rn_conn_accept(&c, ap, &env, now)) {
		rn_fd_close(ns->user_fd);
		rn_fd_close(ns->eng_fd);
		rn_sock_unref(ns);
		__atomic_sub_fetch(&g_conns, 1, __ATOMIC_RELAXED);
		rn_stream_refuse(p, ap, ENOBUFS, now);
		return 0;
	}
	st = rn_stream_new(c, p, ns);
	if (!st) {
		rn_conn_del(c);
		rn_fd_close(ns->user_fd);
		rn_fd_close(ns->eng_fd);
		rn_sock_unref(ns);
		__atomic_sub_fetch(&g_conns, 1, __ATOMIC_RELAXED);
		rn_stream_refuse(p, ap, ENOBUFS, now);
		return 0;
	}
	st->budgeted = 1;
	rn_conn_set_user(c, st);
	st->connected = 1;
	st->server = 1;
	ns->stream = st;
	ns->take_port = p->number;
	ns->take_mask = p->mask;
	ns->take_id = st->id;
	__atomic_store_n(&ns->kind, RN_SK_CONNECTED, __ATOMIC_RELEASE);
	ns->peer = rn_stream_sin(ap->from);
	ns->local = rn_stream_sin(rn_addr_of_rail(&p->addrs[ap->local_rail]));
	/*
	 * Serviced after the batch, not flushed now: early DATA right behind
	 * this COOKIE_ECHO is in it, and the COOKIE_ACK then waits for the
	 * answer to carry it (rn_conn_send.c), a datagram fewer.
	 */
	rn_engine_dirty(st);
	rn_pairname_set(ns->eng_fd, &ns->local, &ns->peer); /* for a process it is handed to */
	rn_sock_ref(ns); /* one for the engine (the stream), one for the accept queue */
	pthread_mutex_lock(&ls->mu);
	if (ls->accq_tail)
		ls->accq_tail->acc_next = ns;
	else
		ls->accq_head = ns;
	ls->accq_tail = ns;
	ls->accq_len++;
	__atomic_store_n(&ns->queued, 1, __ATOMIC_RELAXED);
	pthread_mutex_unlock(&ls->mu);
	/*
	 * One record per waiting connection, carrying its end A: the listening
	 * descriptor polls readable, and whichever process reads the record
	 * (the listener's, or a prefork worker that inherited it) holds the
	 * connection.  The engine keeps its copy of A until the record is read
	 * (rn_api_accept, prune_taken).
	 */
	if (send_accept_rec(ls->eng_fd, ns) < 0)
		rn_debug("accept record not written: %s", strerror(errno));
	rn_info("accepted connection from %s", st->name);
	rn_stream_post(st, RI2N_EVENT_CONNECTED, -1, 0, "accepted");
	rn_engine_dirty(st);
	return 0;
}

int rn_stream_accept_fd(rn_sock *ns, int cloexec)
{
	int from = ns->user_fd, held = rn_host_held_here();
	int to = rn_sys_fcntl(from, cloexec ? F_DUPFD_CLOEXEC : F_DUPFD, 0);

	if (to < 0 || to > from) { /* nothing lower is free: A keeps its number */
		if (to >= 0)
			rn_sys_close(to);
		rn_fd_disown(from);
		if (!cloexec)
			rn_sys_fcntl(from, F_SETFD, 0);
		return from;
	}
	/*
	 * The engine reads user_fd under the host lock (events, a reset through
	 * A): it sees the old number with its events queued under it, or the
	 * new one.  In a handler that interrupted this thread's own hold of the
	 * lock, the engine waits for that hold to end anyway.
	 */
	if (!held)
		rn_host_lock();
	__atomic_store_n(&ns->user_fd, to, __ATOMIC_RELAXED);
	rn_events_renumber(ns->cookie, from, to);
	if (!held)
		rn_host_unlock();
	rn_fd_close(from);
	return to;
}

/* Keyed listener: INITs under another cluster key (or none) are refused unanswered; say so. */
static void warn_bad_key(rn_listener *l, uint64_t now)
{
	rn_addr from;
	uint64_t n = rn_listener_take_bad_key(l, now, &from);
	char a[RN_ADDR_STRLEN];

	if (n)
		rn_warn("refused %llu connection attempt(s), the last from %s: the client's "
			"cluster key differs from this listener's, or it has none (RI2N_KEY / "
			"RI2N_KEY_FILE)", (unsigned long long)n, rn_addrport_str(from, a, sizeof(a)));
}

void rn_stream_listen_input(rn_port *p, int idx, rn_addr from, const uint8_t *d, size_t len,
			    uint64_t now)
{
	uint8_t reply[512];
	size_t rlen;
	rn_accept_params ap;
	int rc;

	/*
	 * A full queue answers no INIT, as TCP answers no SYN then: the client's
	 * connect, which returns at the answer, waits for room (it resends).
	 */
	if (rn_wire_peek_opens(d, len) && queue_full(p->lsock)) {
		p->drops_backlog++;
		return;
	}
	rc = rn_listener_recv(p->lis, now, idx, from, d, len, reply, sizeof(reply), &rlen, &ap);
	rn_engine_churn();

	if (rc == RN_LISTEN_REPLY)
		rn_port_send_now(p, idx, from, reply, rlen);
	else if (rc == RN_LISTEN_ACCEPT && accept_conn(p, &ap, now))
		rn_listener_forget(p->lis, &ap); /* its COOKIE_ECHO may come again */
	if (rc == RN_LISTEN_ACCEPT)
		sodium_memzero(ap.cfg.key, sizeof(ap.cfg.key)); /* a copy of the key */
	warn_bad_key(p->lis, now);
}

/* Aborts the connections queued on a listening socket nobody will accept. */
void rn_stream_drop_accept_queue(rn_sock *ls)
{
	rn_stream_prune_taken(ls); /* those went to other processes: they live */
	for (;;) {
		rn_sock *ns;

		pthread_mutex_lock(&ls->mu);
		ns = ls->accq_head;
		if (ns) {
			ls->accq_head = ns->acc_next;
			if (!ls->accq_head)
				ls->accq_tail = NULL;
			ls->accq_len--;
			__atomic_store_n(&ns->queued, 0, __ATOMIC_RELAXED);
		}
		pthread_mutex_unlock(&ls->mu);
		if (!ns)
			return;
		if (ns->stream) {
			rn_conn_abort(ns->stream->conn, rn_now_ns());
			rn_engine_dirty(ns->stream);
		}
		rn_fd_close(ns->user_fd);
		rn_sock_unref(ns);
	}
}

/* The user closed a socket the engine watches (not connected yet, or listening). */
