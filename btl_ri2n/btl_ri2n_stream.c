/*
 * btl_ri2n_stream.c - BTL fragments on an ri2n byte stream, and the
 * protocol pass that progress runs.
 *
 * Framing: every fragment is an 8-byte header (u32 payload length, u8 tag,
 * u8 type, u16 0) and its payload.  On send the header and the segments go
 * into the core's send ring with no copy before it; a fragment the ring
 * cannot take whole waits in the endpoint's queue with its offset.  On
 * receive a frame that lies whole inside the slice rn_conn_peek returns is
 * handed to the PML's callback right there in the receive ring (small
 * messages, the latency case); a frame split over packets is gathered into
 * the link's buffer first.
 */
#include "opal_config.h"

#include <arpa/inet.h>
#include <stdio.h>
#include <string.h>

#include "opal/util/output.h"

#include "btl_ri2n.h"
#include "btl_ri2n_frag.h"
#include "rn_log.h"

/* ---- sending ---- */

/* Appends bytes; returns how many the ring took, or a fatal code. */
static ssize_t put(rbtl_link *l, const void *p, size_t n, uint64_t now)
{
	return n ? rn_conn_write(l->h.conn, now, p, n) : 0;
}

int rbtl_stream_write_frag(rbtl_link *l, mca_btl_ri2n_frag_t *f, uint64_t now)
{
	const void *piece[3] = { f->hdr, f->segments[0].seg_addr.pval,
				 f->segments[1].seg_addr.pval };
	size_t len[3] = { RI2N_HDR_LEN, f->segments[0].seg_len,
			  f->base.des_segment_count > 1 ? f->segments[1].seg_len : 0 };
	size_t pos = f->done;

	for (int i = 0; i < 3; i++) {
		ssize_t w;

		if (pos >= len[i]) {
			pos -= len[i];
			continue;
		}
		w = put(l, (const uint8_t *)piece[i] + pos, len[i] - pos, now);
		if (w < 0)
			return (int)w;
		f->done += (size_t)w;
		if ((size_t)w < len[i] - pos)
			return 0; /* the ring is full: the rest when ACKs free it */
		pos = 0;
	}
	l->mod->frames_out++;
	l->mod->bytes_out += f->done - RI2N_HDR_LEN;
	return 1;
}

int rbtl_stream_push(mca_btl_ri2n_endpoint_t *ep, uint64_t now)
{
	mca_btl_ri2n_module_t *m = ep->mod;
	int n = 0;

	while (ep->state == RI2N_EP_OPEN && ep->link && !opal_list_is_empty(&ep->sendq)) {
		mca_btl_ri2n_frag_t *f = (mca_btl_ri2n_frag_t *)opal_list_get_first(&ep->sendq);

		if (rbtl_stream_write_frag(ep->link, f, now) != 1)
			break;
		opal_list_remove_first(&ep->sendq);
		ep->queued_frags--;
		/* the callback may send again on this endpoint: f is off the queue, so a
		 * new fragment goes behind the ones still queued, or straight in */
		if (f->base.des_flags & MCA_BTL_DES_SEND_ALWAYS_CALLBACK) {
			int depth = rbtl_release(m);

			rbtl_frag_complete(m, f, OPAL_SUCCESS);
			rbtl_reacquire(m, depth);
		} else {
			rbtl_frag_complete(m, f, OPAL_SUCCESS);
		}
		n++;
	}
	return n;
}

void rbtl_stream_hello(rbtl_link *l, uint64_t now)
{
	mca_btl_ri2n_module_t *m = l->mod;
	uint8_t b[RI2N_HDR_LEN + RI2N_HELLO_LEN] = { 0 };
	uint32_t v;

	if (l->hello_done || !l->initiator || rn_conn_state(l->h.conn) != RN_ST_ESTABLISHED ||
	    rn_conn_write_space(l->h.conn) < sizeof(b))
		return;
	v = htonl(RI2N_HELLO_LEN);
	memcpy(b, &v, 4);
	b[5] = RI2N_FT_HELLO;
	v = htonl(RI2N_MAGIC);
	memcpy(b + 8, &v, 4);
	v = htonl(m->me.jobid);
	memcpy(b + 12, &v, 4);
	v = htonl(m->me.vpid);
	memcpy(b + 16, &v, 4);
	if (put(l, b, sizeof(b), now) != (ssize_t)sizeof(b))
		return;
	l->hello_done = 1;
	if (l->ep && l->ep->link == l && l->ep->state == RI2N_EP_CONNECTING) {
		l->ep->state = RI2N_EP_OPEN;
		l->ep->was_open = 1;
	}
}

/* ---- receiving ---- */

static void bad_stream(rbtl_link *l, const char *why, uint64_t now)
{
	rn_error("btl_ri2n: %s: %s; resetting the connection", l->ep ? l->ep->desc : "peer", why);
	rn_conn_abort(l->h.conn, now);
}

static void on_hello(rbtl_link *l, const uint8_t *d, size_t len, uint64_t now)
{
	opal_process_name_t name;

	/* the header was checked (btl_ri2n_wire.c): an acceptor's first frame, 12 bytes */
	if (rbtl_wire_hello_read(d, len, &name.jobid, &name.vpid)) {
		bad_stream(l, "malformed hello", now);
		return;
	}
	if (rbtl_ep_bind(l->mod, l, name, now) != 0)
		bad_stream(l, "a hello from a process that should not connect to us", now);
}

typedef struct frame_ctx {
	rbtl_link *l;
	uint64_t now;
} frame_ctx;

/* One frame, its header checked: the hello, or a fragment for the PML. */
static void on_frame(void *arg, uint8_t tag, uint8_t type, uint8_t *d, size_t len)
{
	frame_ctx *x = arg;
	rbtl_link *l = x->l;
	mca_btl_ri2n_module_t *m = l->mod;
	mca_btl_base_segment_t seg;
	int depth;

	if (type == RI2N_FT_HELLO) {
		on_hello(l, d, len, x->now);
		return;
	}
	m->frames_in++;
	m->bytes_in += len;
	/* tag < MCA_BTL_TAG_MAX: checked */
	if (!mca_btl_base_active_message_trigger[tag].cbfunc) {
		rn_warn("btl_ri2n: fragment with tag %u and no receiver: dropped", tag);
		return;
	}
	seg.seg_addr.pval = d;
	seg.seg_len = len;
	depth = rbtl_release(m);
	rbtl_compat_deliver(&m->super, l->ep, tag, &seg, 1);
	rbtl_reacquire(m, depth);
}

int rbtl_stream_deliver(rbtl_link *l, uint64_t now)
{
	int frames = 0;
	uint64_t before = l->mod->frames_in;

	while (!l->h.dead) {
		const uint8_t *d;
		ssize_t n = rn_conn_peek(l->h.conn, &d), used;

		if (n == 0) {
			l->eof = 1; /* the peer is finalizing: its stream ended cleanly */
			if (l->ep && l->ep->link == l && l->ep->state == RI2N_EP_OPEN)
				l->ep->state = RI2N_EP_CLOSED;
			break;
		}
		if (n < 0)
			break; /* nothing yet, or dead (rbtl_link_check says what to do) */
		{
			frame_ctx x = { l, now };
			uint32_t had = l->rx.hdr_have;
			const char *why;

			used = rbtl_rx_step(&l->rx, (uint8_t *)d, (size_t)n, on_frame, &x, &why);
			if (used < 0) {
				bad_stream(l, why, now);
				break;
			}
			if (had == 0 && l->rx.hdr_have == 0)
				l->mod->frames_zero_copy++;
			else if (had == RI2N_HDR_LEN && l->rx.hdr_have == 0)
				l->mod->frames_copied++;
		}
		/* after the callback: the bytes stayed in the ring while the PML read them */
		rn_conn_consume(l->h.conn, now, (size_t)used);
	}
	frames = (int)(l->mod->frames_in - before);
	if (frames)
		l->last_in_ns = now;
	return frames;
}

/* ---- the pass ---- */

/* An accepted link that has not said who it is (rn_hpoll_accept). */
static int unbound_link(const void *v)
{
	const rbtl_link *l = v;

	return !l->initiator && !l->ep && !l->h.dead;
}

/* A connection the listener accepted becomes a link (rn_hpoll_accept). */
static void *accept_link(void *arg, const rn_accept_params *ap, uint64_t now)
{
	mca_btl_ri2n_module_t *m = arg;
	rbtl_link *l = NULL;
	rn_conn *c;
	int ok;

	m->mem_setup++; /* granted whatever the ceiling (rbtl_core_alloc) */
	ok = rn_conn_accept(&c, ap, &m->env, now) == 0;
	m->mem_setup--;
	if (ok && (l = rbtl_link_new(m, c, now)) != NULL)
		l->h.dirty = 1; /* COOKIE_ACK to send */
	else if (ok)
		rn_conn_del(c);
	return l;
}

/* Connection attempts the listener refused for another cluster key: a warning naming the last. */
static void warn_bad_key(mca_btl_ri2n_module_t *m, uint64_t now)
{
	rn_addr bad;
	uint64_t n = rn_listener_take_bad_key(&m->lis, now, &bad);
	char a[RN_ADDR_STRLEN];

	if (n && rn_addrport_str(bad, a, sizeof(a)))
		rn_warn("btl_ri2n: refused %llu connection attempt(s), the last from %s: the "
			"rank's cluster key differs from this one's, or it has none "
			"(btl_ri2n_key_file, RI2N_KEY_FILE, RI2N_KEY)", (unsigned long long)n, a);
}

int rbtl_stream_unbound(void *arg, int rail, rn_addr from, const uint8_t *d, size_t len,
			uint64_t now)
{
	mca_btl_ri2n_module_t *m = arg;
	const rn_hpoll_accept acc = { .max_unbound = RN_HPOLL_MAX_UNBOUND, .unbound = unbound_link,
				      .on_accept = accept_link, .arg = m };

	if (rbtl_wire_is_nudge(d, len)) {
		rbtl_ep_on_nudge(m, rail, from, d, len, now);
		return 0;
	}
	if (m->finalizing)
		return 0;
	m->unbound_refused += (uint64_t)rn_hpoll_listen(&m->lis, &m->io, &m->idtab, &acc, rail,
							from, d, len, now);
	if (m->lis.bad_key_inits)
		warn_bad_key(m, now);
	return 0;
}

/* The pass's argument: the module, and whether MPI's progress runs it (not the keeper). */
typedef struct pass_arg {
	mca_btl_ri2n_module_t *m;
	int main;
} pass_arg;

static uint64_t pass_now(void *arg) { return rbtl_core_now(((pass_arg *)arg)->m); }

static void pass_timers(void *arg, uint64_t now)
{
	pass_arg *a = arg;

	rbtl_ep_timers(a->m, now, a->main);
}

/* No hello in RN_HPASS_UNBOUND_NS: the kit resets the link, we count and say so. */
static void unbound_late(void *arg, rn_hconn *h, uint64_t now)
{
	rbtl_link *l = (rbtl_link *)h;

	(void)now;
	((pass_arg *)arg)->m->unbound_expired++;
	rn_error("btl_ri2n: %s: no hello within 10 s of the handshake; resetting the connection",
		 l->ep ? l->ep->desc : "peer");
}

/* Idle with its timers due: the gather buffer goes, as the core's rings shrink. */
static void link_check(void *arg, rn_hconn *h, uint64_t now)
{
	rbtl_link *l = (rbtl_link *)h;

	(void)arg;
	if (h->expiry_ns <= now && l->rx.buf && l->rx.hdr_have != RI2N_HDR_LEN &&
	    now - l->last_in_ns >= RI2N_RX_IDLE_NS)
		rbtl_rx_free(&l->rx); /* no frame half read */
}

/* Fragments queued on the endpoint: only MPI's progress pushes them. */
static int link_busy(void *arg, rn_hconn *h)
{
	rbtl_link *l = (rbtl_link *)h;

	return ((pass_arg *)arg)->main && l->ep && !opal_list_is_empty(&l->ep->sendq);
}

static int link_serve(void *arg, rn_hconn *h, uint64_t now)
{
	rbtl_link *l = (rbtl_link *)h;
	int main = ((pass_arg *)arg)->main, n = 0;

	/* only a pass that delivers is done with the input: after the keeper's,
	 * MPI's next poll must still hand the frames over */
	if (main) {
		h->dirty = 0;
		n = rbtl_stream_deliver(l, now);
	}
	rbtl_stream_hello(l, now);
	if (main && l->ep && l->ep->link == l)
		n += rbtl_stream_push(l->ep, now);
	return n;
}

static void link_settle(void *arg, rn_hconn *h, uint64_t now)
{
	(void)arg;
	rbtl_link_check((rbtl_link *)h, now);
}

static void pass_after(void *arg, uint64_t now) { rbtl_mem_warn(((pass_arg *)arg)->m, now); }

static const rn_hpass_ops pass_ops = {
	.now = pass_now, .timers = pass_timers, .unbound = unbound_link,
	.on_unbound_late = unbound_late, .check = link_check, .busy = link_busy,
	.serve = link_serve, .settle = link_settle, .after = pass_after,
};

void rbtl_stream_pass_init(mca_btl_ri2n_module_t *m)
{
	m->pass = (rn_hpass){ .links = &m->links, .rx = &m->rx, .disp = &m->disp,
			      .follow = &m->follow, .grow = &m->grow, .core_now = &m->core_now,
			      .rx_more = &m->rx_more, .ops = &pass_ops };
}

/*
 * MPI spins on progress: one poll() looks at every rail and only sockets
 * with data are read, so an idle loop turns fast and a lone message costs
 * two syscalls; when the last pass left data behind, no poll (rn_hpass).
 */
int rbtl_stream_pass(mca_btl_ri2n_module_t *m, uint64_t now, int main)
{
	pass_arg a = { m, main };

	return rn_hpass_run(&m->pass, &a, now);
}

/* ---- summary ---- */

void rbtl_print_summary(mca_btl_ri2n_module_t *m)
{
	opal_output(0, "btl_ri2n %s: frames out %llu (%llu bytes), in %llu (%llu bytes; %llu in place, "
		    "%llu gathered), rail events %llu", OPAL_NAME_PRINT(m->me),
		    (unsigned long long)m->frames_out, (unsigned long long)m->bytes_out,
		    (unsigned long long)m->frames_in, (unsigned long long)m->bytes_in,
		    (unsigned long long)m->frames_zero_copy, (unsigned long long)m->frames_copied,
		    (unsigned long long)m->rail_events);
	opal_output(0, "btl_ri2n %s: rail monitors: %llu links joined %llu; %llu port "
		    "unreachable(s) taken", OPAL_NAME_PRINT(m->me), (unsigned long long)m->mon.joined,
		    (unsigned long long)m->mon.made, (unsigned long long)m->mon.unreach);
	opal_output(0, "btl_ri2n %s: core memory %zu KiB now, %zu KiB at most, ceiling %zu KiB "
		    "(0: none), %llu growth(s) refused; rings of a peer up to %u + %u packets",
		    OPAL_NAME_PRINT(m->me), m->mem_used / 1024, m->mem_peak / 1024,
		    m->mem_max / 1024, (unsigned long long)m->mem_refused, m->cfg.snd_slots,
		    m->cfg.rcv_slots);
	opal_output(0, "btl_ri2n %s: descriptors allocated: %zu with %zu-byte buffers, %zu with "
		    "%zu-byte buffers, %zu on the user's data", OPAL_NAME_PRINT(m->me),
		    mca_btl_ri2n_component.frags_eager.fl_num_allocated,
		    (size_t)m->super.btl_eager_limit,
		    mca_btl_ri2n_component.frags_max.fl_num_allocated,
		    (size_t)m->super.btl_max_send_size,
		    mca_btl_ri2n_component.frags_user.fl_num_allocated);
	if (m->nudges_refused || m->hellos_refused || m->unbound_refused || m->unbound_expired)
		opal_output(0, "btl_ri2n %s: refused %llu nudges, %llu hellos, %llu accepts over "
			    "%d links without a hello; %llu links reset for no hello in time",
			    OPAL_NAME_PRINT(m->me), (unsigned long long)m->nudges_refused,
			    (unsigned long long)m->hellos_refused,
			    (unsigned long long)m->unbound_refused, RN_HPOLL_MAX_UNBOUND,
			    (unsigned long long)m->unbound_expired);
	for (rbtl_link *l = rbtl_links(m); l; l = rbtl_link_next(l)) {
		rn_conn_stats st;

		rn_conn_get_stats(l->h.conn, &st);
		opal_output(0, "btl_ri2n %s -> %s: %s, %s (mss %u, %llu failed authentication), "
			    "retransmits %llu, timeouts %llu, dup %llu; rings %u + %u packets, grew %u, "
			    "shrank %u, %llu dropped for no memory",
			    OPAL_NAME_PRINT(m->me), l->ep ? l->ep->desc : "?", rn_state_name(st.state),
			    st.keyed ? "keyed" : "no key", st.mss,
			    (unsigned long long)st.drops[RN_DROP_AUTH],
			    (unsigned long long)st.retransmits, (unsigned long long)st.rto_events,
			    (unsigned long long)st.dup_data, st.snd_ring, st.rcv_ring, st.ring_grows,
			    st.ring_shrinks, (unsigned long long)st.drops[RN_DROP_NOMEM]);
		for (int k = 0; k < st.npaths; k++) {
			const rn_rail_stats *r = &st.rail[k];
			char a[RN_ADDR_STRLEN], b[RN_ADDR_STRLEN];

			opal_output(0, "btl_ri2n %s -> %s: rail %s (%s -> %s): tx %llu data %llu retx %llu "
				    "lost %llu, rx %llu, down %u up %u, srtt %.1f us, min rtt %.1f us, "
				    "cwnd %u, queue %.1f us",
				    OPAL_NAME_PRINT(m->me), l->ep ? l->ep->desc : "?",
				    rbtl_rail_name(m, r->local_rail),
				    rn_addr_str(r->local, a, sizeof(a)), rn_addr_str(r->remote, b, sizeof(b)),
				    (unsigned long long)r->tx_packets, (unsigned long long)r->tx_data,
				    (unsigned long long)r->retransmits, (unsigned long long)r->lost,
				    (unsigned long long)r->rx_packets, r->down_events, r->up_events,
				    (double)r->srtt_ns / 1e3, (double)r->min_rtt_ns / 1e3, r->cwnd,
				    (double)r->queue_ns / 1e3);
		}
	}
}
