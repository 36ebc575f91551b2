/*
 * ri2n_opt.c - socket options (ri2n's knobs, SO_*, TCP_* that TCP programs
 * set) and ri2n_stats.
 */
#define _GNU_SOURCE
#include <errno.h>
#include <fcntl.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <poll.h>
#include <pthread.h>
#include <signal.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <stdio.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <sys/uio.h>
#include <limits.h>
#include <time.h>
#include <unistd.h>

#include <sodium/utils.h>

#include "ri2n.h"
#include "rn_api.h"
#include "rn_log.h"
#include "rn_engine.h"
#include "rn_events.h"
#include "rn_inline.h"
#include "rn_knobs.h"
#include "rn_stream.h"
#include "rn_api_int.h"
#include "rn_pairname.h"
#include "rn_sandbox.h"
#include "rn_sys.h"

static int get_int(const void *val, socklen_t len, int64_t *v)
{
	if (!val || len < (socklen_t)sizeof(int))
		return EINVAL;
	*v = *(const int *)val;
	return 0;
}

/* RI2N_KEY: 32 bytes set the socket's key, 0 bytes remove it.  Under s->mu. */
static int set_key(rn_sock *s, const void *val, socklen_t len)
{
	rn_config next = s->cfg;

	if (s->kind != RN_SK_NEW)
		return EISCONN;
	if (len == 0) {
		next.keyed = 0;
	} else if (!val || len != RN_KEY_LEN) {
		return EINVAL;
	} else {
		next.keyed = 1;
		memcpy(next.key, val, RN_KEY_LEN);
	}
	if (!next.keyed)
		sodium_memzero(next.key, sizeof(next.key));
	if (rn_config_check(&next, NULL)) {
		sodium_memzero(next.key, sizeof(next.key));
		return EINVAL; /* e.g. rails too small for the tag */
	}
	s->cfg = next;
	sodium_memzero(next.key, sizeof(next.key));
	return 0;
}

/*
 * SO_LINGER: {0, *} a graceful close (the default); {1, 0} an abortive one,
 * the peer gets a RESET (rn_stream.c, user_closed); {1, N > 0} would make
 * close() block until the bytes are delivered, which ri2n's close cannot
 * (they go in the background): EOPNOTSUPP rather than a silent difference.
 */
static int set_linger(rn_sock *s, const void *val, socklen_t len)
{
	struct linger l;

	if (!val || len < (socklen_t)sizeof(l))
		return EINVAL;
	memcpy(&l, val, sizeof(l));
	if (l.l_onoff && l.l_linger > 0)
		return EOPNOTSUPP;
	__atomic_store_n(&s->abort_close, l.l_onoff != 0, __ATOMIC_RELAXED);
	return 0;
}

/*
 * TCP_USER_TIMEOUT (ms; 0: the default) is ri2n's dead-peer timeout
 * (RI2N_DEAD_PEER_MS), fixed when the connection is set up: EISCONN after,
 * unless it is the value the connection has (an accepted socket inherits the
 * listener's).  Under s->mu.
 */
static int set_user_timeout(rn_sock *s, const void *val, socklen_t len)
{
	int64_t v, cur = 0;
	int err = get_int(val, len, &v);

	if (err)
		return err;
	if (v < 0)
		return EINVAL;
	if (v == 0)
		v = rn_engine_config()->dead_peer_ns / 1000000;
	if (v < 3)
		v = 3; /* ri2n's least */
	rn_knob_get(&s->cfg, RI2N_DEAD_PEER_MS, &cur);
	if (v == cur)
		return 0;
	if (s->kind != RN_SK_NEW)
		return EISCONN;
	return -rn_knob_set(&s->cfg, RI2N_DEAD_PEER_MS, v);
}

int ri2n_setsockopt(int fd, int level, int name, const void *val, socklen_t len)
{
	int err, rc = 0;
	rn_sock *s = rn_api_lookup(fd, &err);
	int64_t v = 0;

	if (!s)
		return rn_api_fail(err);
	if (level == RI2N_SOL && name == RI2N_KEY) {
		pthread_mutex_lock(&s->mu);
		err = set_key(s, val, len);
		pthread_mutex_unlock(&s->mu);
	} else if (level == RI2N_SOL && name == RI2N_BUSY_POLL_US) {
		/* the waiting side's choice, not the protocol's: also once connected */
		err = get_int(val, len, &v);
		if (!err && (v < RN_BUSY_AUTO || v > RN_BUSY_POLL_MAX_US))
			err = EINVAL;
		if (!err)
			__atomic_store_n(&s->busy_us, (int)v, __ATOMIC_RELAXED);
	} else if (level == RI2N_SOL) {
		err = get_int(val, len, &v);
		pthread_mutex_lock(&s->mu);
		if (!err && s->kind != RN_SK_NEW)
			err = EISCONN; /* the connection was set up with the old value */
		if (!err && name == RI2N_MTU && v - 28 > (int64_t)rn_engine_config()->max_dgram) {
			/*
			 * The process's sockets and buffers are sized for its rails' MTU:
			 * a larger datagram could be neither written nor received.
			 */
			rn_warn("RI2N_MTU %lld refused: above this process's %u (the rails' MTU, or "
				"RI2N_MTU in the environment)", (long long)v,
				rn_engine_config()->max_dgram + 28);
			err = EINVAL;
		}
		if (!err) {
			rc = rn_knob_set(&s->cfg, name, v);
			err = rc ? -rc : 0;
		}
		pthread_mutex_unlock(&s->mu);
	} else if (level == SOL_SOCKET && name == SO_LINGER) {
		err = set_linger(s, val, len);
	} else if (level == IPPROTO_TCP && name == TCP_USER_TIMEOUT) {
		pthread_mutex_lock(&s->mu);
		err = set_user_timeout(s, val, len);
		pthread_mutex_unlock(&s->mu);
	} else if ((level == SOL_SOCKET && (name == SO_KEEPALIVE || name == SO_REUSEADDR ||
					    name == SO_REUSEPORT)) ||
		   (level == IPPROTO_TCP && (name == TCP_NODELAY || name == TCP_QUICKACK))) {
		err = val ? 0 : EINVAL; /* ri2n keeps rails alive and never delays writes */
	} else if (level == SOL_SOCKET && (name == SO_SNDBUF || name == SO_SNDBUFFORCE)) {
		/* a bigger send buffer must still be full until connected */
		rn_sock_unref(s);
		return rn_api_set_sndbuf(fd, name, val, len);
	} else if (level == SOL_SOCKET && (name == SO_RCVBUF || name == SO_RCVLOWAT ||
					   name == SO_SNDTIMEO || name == SO_RCVTIMEO)) {
		err = rn_sys_setsockopt(fd, level, name, val, len) < 0 ? errno : 0; /* the user's end */
	} else {
		err = ENOPROTOOPT;
	}
	rn_sock_unref(s);
	return err ? rn_api_fail(err) : 0;
}

static int put_int(void *val, socklen_t *len, int v)
{
	if (!val || !len || *len < (socklen_t)sizeof(int))
		return EINVAL;
	*(int *)val = v;
	*len = sizeof(int);
	return 0;
}

/*
 * A ri2n connection another process owns (its descriptor came across fork,
 * exec or SCM_RIGHTS, rn_pairname.c): SO_TYPE, and SO_ERROR as the
 * descriptor has it; the rest of its state is in the owner's engine.
 */
static int getsockopt_handed(int fd, int level, int name, void *val, socklen_t *len, int err)
{
	if (err != ENOTSOCK || rn_sandbox_on() || rn_pairname_get(fd, NULL, NULL) < 0)
		return rn_api_fail(err);
	if (level == SOL_SOCKET && name == SO_TYPE)
		err = put_int(val, len, SOCK_STREAM);
	else if (level == SOL_SOCKET && name == SO_ERROR)
		err = rn_sys_getsockopt(fd, level, name, val, len) < 0 ? errno : 0;
	else
		err = ENOTSOCK;
	return err ? rn_api_fail(err) : 0;
}

int ri2n_getsockopt(int fd, int level, int name, void *val, socklen_t *len)
{
	int err;
	rn_sock *s = rn_api_lookup(fd, &err);
	int64_t v = 0;

	if (!s)
		return getsockopt_handed(fd, level, name, val, len, err);
	if (level == SOL_SOCKET && name == SO_ERROR) {
		pthread_mutex_lock(&s->mu);
		err = put_int(val, len, s->so_error);
		if (!err)
			s->so_error = 0; /* reported once, as the kernel does */
		pthread_mutex_unlock(&s->mu);
	} else if (level == SOL_SOCKET && name == SO_TYPE) {
		err = put_int(val, len, SOCK_STREAM);
	} else if (level == IPPROTO_TCP && name == TCP_NODELAY) {
		err = put_int(val, len, 1);
	} else if (level == IPPROTO_TCP && name == TCP_USER_TIMEOUT) {
		pthread_mutex_lock(&s->mu);
		err = rn_knob_get(&s->cfg, RI2N_DEAD_PEER_MS, &v);
		pthread_mutex_unlock(&s->mu);
		err = err ? -err : put_int(val, len, (int)v);
	} else if (level == SOL_SOCKET && name == SO_LINGER) {
		struct linger l = { __atomic_load_n(&s->abort_close, __ATOMIC_RELAXED), 0 };

		err = 0;
		if (!val || !len || *len < (socklen_t)sizeof(l)) {
			err = EINVAL;
		} else {
			memcpy(val, &l, sizeof(l));
			*len = sizeof(l);
		}
	} else if (level == SOL_SOCKET && (name == SO_SNDBUF || name == SO_RCVBUF)) {
		pthread_mutex_lock(&s->mu);
		v = name == SO_SNDBUF ? s->sndbuf : 0; /* A waits small until connected: its size then */
		pthread_mutex_unlock(&s->mu);
		if (v)
			err = put_int(val, len, (int)v);
		else
			err = rn_sys_getsockopt(fd, level, name, val, len) < 0 ? errno : 0;
	} else if (level == RI2N_SOL && name == RI2N_KEY) {
		pthread_mutex_lock(&s->mu);
		err = put_int(val, len, s->cfg.keyed);
		pthread_mutex_unlock(&s->mu);
	} else if (level == RI2N_SOL && name == RI2N_BUSY_POLL_US) {
		err = put_int(val, len, __atomic_load_n(&s->busy_us, __ATOMIC_RELAXED));
	} else if (level == RI2N_SOL) {
		pthread_mutex_lock(&s->mu);
		err = rn_knob_get(&s->cfg, name, &v);
		pthread_mutex_unlock(&s->mu);
		err = err ? -err : put_int(val, len, (int)v);
	} else {
		err = ENOPROTOOPT;
	}
	rn_sock_unref(s);
	return err ? rn_api_fail(err) : 0;
}

/* An address into the IPv4 field or the IPv6 one (rail6[]), as its family is. */
static void put_sa(struct sockaddr_in *v4, struct sockaddr_in6 *v6, rn_addr a)
{
	if (a.v6) {
		*v6 = (struct sockaddr_in6){ .sin6_family = AF_INET6, .sin6_port = htons(a.port),
					     .sin6_scope_id = a.scope };
		memcpy(&v6->sin6_addr, a.ip6, sizeof(a.ip6));
		return;
	}
	*v4 = (struct sockaddr_in){ .sin_family = AF_INET, .sin_port = htons(a.port),
				    .sin_addr.s_addr = htonl(a.ip) };
}

static void rail_stats(struct ri2n_rail_stats *o, struct ri2n_rail_addr6 *o6,
		       const rn_rail_stats *r)
{
	memset(o, 0, sizeof(*o));
	put_sa(&o->local, &o6->local, r->local);
	put_sa(&o->remote, &o6->remote, r->remote);
	o->rx_up = r->rx_up;
	o->tx_up = r->tx_up;
	o->up = r->rx_up && r->tx_up;
	o->last_change_ns = r->last_change_ns;
	o->last_cause = rn_cause_name(r->last_cause);
	o->down_events = r->down_events;
	o->up_events = r->up_events;
	o->tx_packets = r->tx_packets;
	o->tx_bytes = r->tx_bytes;
	o->rx_packets = r->rx_packets;
	o->rx_bytes = r->rx_bytes;
	o->tx_data = r->tx_data;
	o->rx_data = r->rx_data;
	o->retransmits = r->retransmits;
	o->lost = r->lost;
	o->heartbeats = r->heartbeats;
	o->keepalives = r->keepalives;
	o->cwnd = r->cwnd;
	o->inflight = r->inflight;
	o->srtt_ns = r->srtt_ns;
	o->dgram = r->dgram;
	o->mtu_holes = r->mtu_holes;
	o->small_ok = r->small_ok;
}

/*
 * ri2n.h's ri2n_stats() is a macro that passes sizeof: the definitions below
 * are the symbols behind it and behind 0.1.0's two-argument call.
 */
#undef ri2n_stats
_Static_assert(sizeof(struct ri2n_stats) >= RI2N_STATS_SIZE_V1,
	       "ri2n_stats grows at its end only");

/* The connection's counters in our (newest) struct. */
static void fill_stats(struct ri2n_stats *out, const rn_conn_stats *cs)
{
	memset(out, 0, sizeof(*out));
	out->state = rn_state_name(cs->state);
	out->error = rn_errno(cs->err);
	out->established_ns = cs->established_ns;
	out->app_tx_bytes = cs->app_tx_bytes;
	out->app_rx_bytes = cs->app_rx_bytes;
	out->tx_packets = cs->tx_packets;
	out->rx_packets = cs->rx_packets;
	out->retransmits = cs->retransmits;
	out->rto_events = cs->rto_events;
	out->dup_data = cs->dup_data;
	out->drops_malformed = cs->drops[RN_DROP_MALFORMED];
	out->drops_source = cs->drops[RN_DROP_SOURCE];
	out->drops_window = cs->drops[RN_DROP_WINDOW];
	out->drops_duplicate = cs->drops[RN_DROP_DUPLICATE];
	for (int d = 0; d < RN_DROP__COUNT; d++)
		if (d != RN_DROP_MALFORMED && d != RN_DROP_SOURCE && d != RN_DROP_WINDOW &&
		    d != RN_DROP_DUPLICATE)
			out->drops_other += cs->drops[d];
	out->mss = cs->mss;
	out->nrails = cs->npaths;
	for (int k = 0; k < cs->npaths && k < RI2N_MAX_RAILS; k++)
		rail_stats(&out->rail[k], &out->rail6[k], &cs->rail[k]);
	out->copies = cs->copies;
}

int ri2n_stats_sz(int fd, struct ri2n_stats *out, size_t size)
{
	int err, rc;
	rn_sock *s = rn_api_lookup(fd, &err);
	rn_conn_stats cs;
	struct ri2n_stats full;

	if (!s)
		return rn_api_fail(err);
	if (!out || size < RI2N_STATS_SIZE_V1) {
		rn_sock_unref(s);
		return rn_api_fail(EINVAL);
	}
	rc = rn_engine_call(RN_CMD_STATS, s, &cs);
	rn_sock_unref(s);
	if (rc)
		return rn_api_fail(-rc);
	fill_stats(&full, &cs);
	rn_api_copy_out(out, size, &full, sizeof(full));
	return 0;
}

int ri2n_stats(int fd, struct ri2n_stats *out)
{
	return ri2n_stats_sz(fd, out, RI2N_STATS_SIZE_V1);
}
