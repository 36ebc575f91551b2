/*
 * rfi_msg.c - messages on ri2n streams: fi_send/fi_recv, the tagged calls,
 * receive matching and the framing.
 *
 * Frame: u8 kind (1 hello, 2 message, 3 tagged, 4 data), u8 0, u16 0, u32
 * payload length, u64 tag (network byte order), then the payload.  A hello
 * opens every outbound stream and carries the sender's name (rfi_name.c).  A
 * data frame carries 8 bytes of remote CQ data (FI_REMOTE_CQ_DATA, u64) for
 * the message right after it.
 *
 * Matching follows the stream: a message's header is matched when it is
 * read, against the posted receives in the order they were posted; with
 * none, the message is buffered in the unexpected list (at most
 * FI_RI2N_UNEXPECTED_MB in all and FI_RI2N_UNEXPECTED_LINK_MB from one
 * stream, whatever the list holds; past it a stream's reading stops until
 * the application posts, and ri2n's window holds its sender back).  A
 * receive posted later looks at the unexpected list first, in arrival
 * order.  An unexpected message whose bytes stop coming for
 * FI_RI2N_UNEXPECTED_STALL_MS, or whose stream dies, is dropped: a header
 * alone holds its room no longer than that.  The list itself: rfi_ux.c.
 */
#include <arpa/inet.h>
#include <endian.h>
#include <stdlib.h>
#include <string.h>

#include "rfi.h"
#include "rn_log.h"

/* ---- frames ---- */

static void hdr_write(uint8_t *h, int kind, size_t len, uint64_t tag)
{
	uint32_t l = htonl((uint32_t)len);
	uint64_t t = htobe64(tag);

	memset(h, 0, RFI_HDR_LEN);
	h[0] = (uint8_t)kind;
	memcpy(h + 4, &l, 4);
	memcpy(h + 8, &t, 8);
}

static int hdr_read(const uint8_t *h, int *kind, size_t *len, uint64_t *tag)
{
	uint32_t l;
	uint64_t t;

	if (h[1] || h[2] || h[3] || h[0] < RFI_HELLO || h[0] > RFI_DATA)
		return -1;
	memcpy(&l, h + 4, 4);
	memcpy(&t, h + 8, 8);
	*kind = h[0];
	*len = ntohl(l);
	*tag = be64toh(t);
	if (*len > RFI_MAX_MSG || (*kind == RFI_HELLO && *len != RFI_NAME_LEN) ||
	    (*kind == RFI_DATA && *len != RFI_CQ_DATA_SIZE))
		return -1;
	return 0;
}

/* ---- completions ---- */

static int wants_completion(const rfi_ep *ep, uint64_t sel, uint64_t flags)
{
	(void)ep;
	return !(flags & RFI_SILENT) && (!sel || (flags & FI_COMPLETION));
}

static void complete_send(rfi_ep *ep, rfi_op *op)
{
	struct fi_cq_tagged_entry e = { .op_context = op->context,
					.flags = FI_SEND | RFI_KIND_FLAGS(op->kind) };

	if (ep->txcntr)
		rfi_cntr_inc(ep->txcntr, 0);
	if (wants_completion(ep, ep->tx_flags, op->flags))
		rfi_cq_push(ep->txcq, &e, FI_ADDR_NOTAVAIL);
}

void rfi_recv_complete(rfi_ep *ep, rfi_op *op, size_t mlen, uint64_t tag, fi_addr_t src,
		       int err, int prov_err)
{
	struct fi_cq_tagged_entry e = {
		.op_context = op->context, .flags = FI_RECV | RFI_KIND_FLAGS(op->kind),
		.len = mlen < op->len ? mlen : op->len,
		.buf = op->niov ? op->iov[0].iov_base : NULL, .tag = tag,
		.data = op->has_data ? op->cq_data : 0,
	};

	if (op->has_data)
		e.flags |= FI_REMOTE_CQ_DATA;
	if (ep->rxcntr && !(op->flags & RFI_SILENT))
		rfi_cntr_inc(ep->rxcntr, err || mlen > op->len);
	if (op->flags & RFI_SILENT)
		; /* dropped by FI_PEEK | FI_DISCARD: reported already */
	else if (err)
		rfi_cq_push_err(ep->rxcq, &e, err, 0, prov_err);
	else if (mlen > op->len)
		rfi_cq_push_err(ep->rxcq, &e, FI_ETRUNC, mlen - op->len, 0);
	else if (wants_completion(ep, ep->rx_flags, op->flags))
		rfi_cq_push(ep->rxcq, &e, src);
	rfi_op_free(ep, op);
}

void rfi_op_put(rfi_op *op, size_t at, const uint8_t *d, size_t n)
{
	for (size_t i = 0; i < op->niov && n; i++) {
		size_t len = op->iov[i].iov_len, k;

		if (at >= len) {
			at -= len;
			continue;
		}
		k = len - at < n ? len - at : n;
		memcpy((uint8_t *)op->iov[i].iov_base + at, d, k);
		d += k;
		n -= k;
		at = 0;
	}
}

/* ---- sources ---- */

static fi_addr_t link_src(rfi_link *l)
{
	rfi_av *av = l->ep->av;

	if (!l->have_name || !av)
		return FI_ADDR_NOTAVAIL;
	if (l->src_gen != av->gen) {
		l->src_addr = rfi_av_find(av, &l->src);
		l->src_gen = av->gen;
	}
	return l->src_addr;
}

int rfi_op_matches(const rfi_op *op, int kind, uint64_t tag, fi_addr_t src)
{
	return op->kind == kind && (op->addr == FI_ADDR_UNSPEC || op->addr == src) &&
	       (kind == RFI_MSG || ((tag ^ op->tag) & ~op->ignore) == 0);
}

/* ---- receiving on an inbound link ---- */

static void bad_stream(rfi_link *l, const char *why, uint64_t now)
{
	rn_warn("ri2n provider: an inbound stream broke the framing (%s); resetting it", why);
	rn_conn_abort(l->h.conn, now);
	l->h.dirty = 1;
}

/* The CQ data a data frame brought goes with the message placed now. */
static void take_data(rfi_link *l, uint8_t *has, uint64_t *data)
{
	uint64_t v;

	*has = l->has_data;
	memcpy(&v, l->data, sizeof(v));
	*data = l->has_data ? be64toh(v) : 0;
	l->has_data = 0;
}

/* The message whose header is in l->hdr goes somewhere; 0 if it must wait for room. */
static int place(rfi_link *l, uint64_t now)
{
	rfi_ep *ep = l->ep;
	int kind;
	size_t len;
	uint64_t tag;
	fi_addr_t src;
	rfi_unexp *u;

	if (rn_conn_state(l->h.conn) == RN_ST_CLOSED)
		return 0; /* reset already (a refused hello): nothing more is read */
	if (hdr_read(l->hdr, &kind, &len, &tag) != 0 || (kind == RFI_HELLO) == l->have_name) {
		bad_stream(l, l->have_name ? "a second hello" : "no hello first", now);
		return 0;
	}
	l->mlen = l->left = len;
	if (kind == RFI_HELLO || kind == RFI_DATA) {
		if (kind == RFI_DATA && l->has_data) {
			bad_stream(l, "two data frames in a row", now);
			return 0;
		}
		l->skip = 1;
		l->skip_kind = kind;
		return 1;
	}
	if (l->after)
		return 0; /* an older stream of its name first (rfi_hello.c) */
	src = link_src(l);
	for (rfi_op *op = ep->posted[kind], *prev = NULL; op; prev = op, op = op->next) {
		if (!rfi_op_matches(op, kind, tag, src))
			continue;
		if (prev)
			prev->next = op->next;
		else
			ep->posted[kind] = op->next;
		if (ep->posted_tail[kind] == op)
			ep->posted_tail[kind] = prev;
		op->next = NULL;
		op->tag = tag;
		op->done = 0;
		take_data(l, &op->has_data, &op->cq_data);
		l->into = op;
		return 1;
	}
	if (ep->ux_bytes + len > rfi_k.unexp_max || l->ux_held + len > rfi_k.unexp_link_max)
		return 0; /* full: this stream waits for the application to post */
	u = rfi_ux_new(l, kind, tag, len, now);
	if (!u) {
		bad_stream(l, "out of memory for an unexpected message", now);
		return 0;
	}
	take_data(l, &u->has_data, &u->cq_data);
	l->ux = u;
	return 1;
}

/* The current message is all in. */
static void finish(rfi_link *l)
{
	rfi_ep *ep = l->ep;

	if (l->skip && l->skip_kind == RFI_DATA) {
		l->skip = 0;
		l->has_data = 1; /* for the next message */
	} else if (l->skip) {
		l->skip = 0;
		if (rfi_link_bind(l, l->hello, RFI_NAME_LEN) != 0)
			bad_stream(l, "a hello not from its name's rails, or malformed", ep->core_now);
	} else if (l->into) {
		rfi_op *op = l->into;

		l->into = NULL;
		ep->msgs_in++;
		ep->bytes_in += l->mlen;
		rfi_recv_complete(ep, op, l->mlen, op->tag, link_src(l), 0, 0);
	} else if (l->ux) {
		rfi_unexp *u = l->ux;

		l->ux = NULL;
		u->from = NULL;
		ep->msgs_in++;
		ep->bytes_in += l->mlen;
		if (u->claimed)
			rfi_ux_deliver(ep, u, u->claimed);
	}
	l->hdr_have = 0;
}

/* Takes up to n payload bytes of the current message; returns how many. */
static size_t sink(rfi_link *l, const uint8_t *d, size_t n)
{
	size_t k = n < l->left ? n : l->left, at = l->mlen - l->left;

	if (l->skip)
		memcpy((l->skip_kind == RFI_DATA ? l->data : l->hello) + at, d, k);
	else if (l->into)
		rfi_op_put(l->into, at, d, k);
	else if (l->ux && k) { /* an empty message has no buffer */
		memcpy(l->ux->data + at, d, k);
		l->ux->have += k;
		l->ux_ns = l->ep->core_now;
	}
	l->left -= k;
	return k;
}

void rfi_link_deliver(rfi_link *l, uint64_t now)
{
	int placed = l->into || l->ux || l->skip;

	while (!l->h.dead) {
		const uint8_t *d;
		ssize_t n = rn_conn_peek(l->h.conn, &d);
		size_t used = 0;

		if (n == 0) {
			l->eof = 1;
			return;
		}
		if (n < 0)
			return;
		while (used < (size_t)n) {
			if (l->hdr_have < RFI_HDR_LEN) {
				size_t k = RFI_HDR_LEN - l->hdr_have;

				k = k < (size_t)n - used ? k : (size_t)n - used;
				memcpy(l->hdr + l->hdr_have, d + used, k);
				l->hdr_have += k;
				used += k;
				continue;
			}
			if (!placed && !(placed = place(l, now)))
				break;
			used += sink(l, d + used, (size_t)n - used);
			if (l->left == 0) {
				finish(l);
				placed = 0;
			}
		}
		/* a zero-length message ends at its header */
		if (l->hdr_have == RFI_HDR_LEN && !placed && used == (size_t)n) {
			if ((placed = place(l, now)) && l->left == 0) {
				finish(l);
				placed = 0;
			}
		}
		rn_conn_consume(l->h.conn, now, used);
		if (used < (size_t)n || rn_conn_state(l->h.conn) == RN_ST_CLOSED)
			return; /* waiting for room, or reset */
	}
}

void rfi_link_lost(rfi_link *l, int err)
{
	rfi_ep *ep = l->ep;

	if (l->into) {
		rfi_recv_complete(ep, l->into, l->mlen, l->into->tag, link_src(l), err,
				  rn_conn_error(l->h.conn));
		l->into = NULL;
	}
	if (l->ux)
		rfi_ux_cut(l, err);
}

void rfi_link_stall_check(rfi_link *l, uint64_t now)
{
	if (!l->ux || now - l->ux_ns < rfi_k.unexp_stall_ns)
		return;
	rfi_ux_cut(l, FI_ETIMEDOUT);
	bad_stream(l, "an unexpected message stopped coming", now);
}

/* ---- sending ---- */

void rfi_link_hello(rfi_link *l, uint64_t now)
{
	uint8_t b[RFI_HDR_LEN + RFI_NAME_LEN];

	if (l->hello_done || rn_conn_state(l->h.conn) != RN_ST_ESTABLISHED ||
	    rn_conn_write_space(l->h.conn) < sizeof(b))
		return;
	hdr_write(b, RFI_HELLO, RFI_NAME_LEN, 0);
	rfi_name_write(&l->ep->name, b + RFI_HDR_LEN);
	if (rn_conn_write(l->h.conn, now, b, sizeof(b)) == (ssize_t)sizeof(b))
		l->hello_done = 1;
}

/* Writes what it can of op; 1 when whole, 0 when the ring is full, <0 dead. */
static int write_op(rfi_link *l, rfi_op *op, uint64_t now)
{
	size_t pos = op->done;
	struct iovec one = { op->copy, op->len };
	const struct iovec *iov = op->copy ? &one : op->iov;
	size_t niov = op->copy ? 1 : op->niov;

	for (size_t i = 0; i <= niov; i++) {
		const uint8_t *p = i == 0 ? op->hdr : iov[i - 1].iov_base;
		size_t len = i == 0 ? op->hlen : iov[i - 1].iov_len;
		ssize_t w;

		if (pos >= len) {
			pos -= len;
			continue;
		}
		w = rn_conn_write(l->h.conn, now, p + pos, len - pos);
		if (w < 0)
			return (int)w;
		op->done += (size_t)w;
		if ((size_t)w < len - pos)
			return 0;
		pos = 0;
	}
	return 1;
}

void rfi_peer_push(rfi_ep *ep, rfi_peer *p, uint64_t now)
{
	while (p->q && p->link && p->link->hello_done) {
		rfi_op *op = p->q;

		if (write_op(p->link, op, now) != 1)
			break;
		p->q = op->next;
		if (!p->q)
			p->q_tail = NULL;
		p->queued--;
		ep->msgs_out++;
		ep->bytes_out += op->len;
		complete_send(ep, op);
		rfi_op_free(ep, op);
	}
}

void rfi_peer_fail(rfi_ep *ep, rfi_peer *p, int err)
{
	while (p->q) {
		rfi_op *op = p->q;
		struct fi_cq_tagged_entry e = { .op_context = op->context,
						.flags = FI_SEND | RFI_KIND_FLAGS(op->kind) };

		p->q = op->next;
		if (ep->txcntr)
			rfi_cntr_inc(ep->txcntr, 1);
		if (!(op->flags & RFI_SILENT) && ep->txcq)
			rfi_cq_push_err(ep->txcq, &e, err, 0, 0);
		rfi_op_free(ep, op);
	}
	p->q_tail = NULL;
	p->queued = 0;
}

static size_t iov_total(const struct iovec *iov, size_t n)
{
	size_t t = 0;

	for (size_t i = 0; i < n; i++)
		t += iov[i].iov_len;
	return t;
}

/* op's header: with FI_REMOTE_CQ_DATA, a data frame first. */
static void frame_op(rfi_op *op, int kind, size_t len, uint64_t tag, uint64_t flags,
		     uint64_t data)
{
	uint64_t v = htobe64(data);

	op->hlen = RFI_HDR_LEN;
	if (flags & FI_REMOTE_CQ_DATA) {
		hdr_write(op->hdr, RFI_DATA, RFI_CQ_DATA_SIZE, 0);
		memcpy(op->hdr + RFI_HDR_LEN, &v, sizeof(v));
		op->hlen += RFI_HDR_LEN + RFI_CQ_DATA_SIZE;
	}
	hdr_write(op->hdr + op->hlen - RFI_HDR_LEN, kind, len, tag);
}

static ssize_t do_send(struct fid_ep *fep, int kind, const struct iovec *iov, size_t niov,
		       fi_addr_t dest, uint64_t tag, void *ctx, uint64_t flags, uint64_t data)
{
	rfi_ep *ep = (rfi_ep *)fep;
	size_t len = iov_total(iov, niov);
	uint64_t now;
	rfi_peer *p;
	rfi_op *op;
	ssize_t rc = 0;

	if (niov > RFI_IOV_MAX || len > RFI_MAX_MSG ||
	    ((flags & (FI_INJECT | RFI_SILENT)) && len > rfi_k.inject_size))
		return niov > RFI_IOV_MAX ? -FI_EINVAL : -FI_EMSGSIZE;
	pthread_mutex_lock(&ep->dom->lock);
	if (!ep->enabled) {
		rc = -FI_EOPBADSTATE;
		goto out;
	}
	p = rfi_peer_get(ep, dest);
	if (!p) {
		rc = -FI_EINVAL;
		goto out;
	}
	if (p->queued >= RFI_QUEUE_SIZE) {
		rfi_ep_pass(ep);
		if (p->queued >= RFI_QUEUE_SIZE) {
			rc = -FI_EAGAIN;
			goto out;
		}
	}
	now = rfi_ep_now(ep);
	op = rfi_op_new(ep);
	if (!op) {
		rc = -FI_EAGAIN;
		goto out;
	}
	op->context = ctx;
	op->flags = flags;
	op->kind = kind;
	op->tag = tag;
	op->addr = dest;
	op->len = len;
	op->niov = niov;
	if (niov)
		memcpy(op->iov, iov, niov * sizeof(*iov));
	frame_op(op, kind, len, tag, flags, data);
	if (p->link && p->link->hello_done && !p->q) {
		/* the fast path: straight into the stream */
		int w = write_op(p->link, op, now);

		if (w == 1) {
			ep->msgs_out++;
			ep->bytes_out += len;
			complete_send(ep, op);
			rfi_op_free(ep, op);
			rn_hconn_flush(&ep->links, &p->link->h, now);
			rn_hset_flush(&ep->io);
			goto out;
		}
	}
	if ((flags & (FI_INJECT | RFI_SILENT)) && len) {
		/* the caller's buffer is free on return: keep what is not in the stream yet */
		op->copy = malloc(len);
		if (!op->copy) {
			rfi_op_free(ep, op);
			rc = -FI_EAGAIN;
			goto out;
		}
		for (size_t i = 0, at = 0; i < niov; at += iov[i].iov_len, i++)
			memcpy(op->copy + at, iov[i].iov_base, iov[i].iov_len);
	}
	if (p->q_tail)
		p->q_tail->next = op;
	else
		p->q = op;
	p->q_tail = op;
	p->queued++;
	if (!p->link && (rc = rfi_peer_connect(ep, p, now)) != 0) {
		rfi_peer_fail(ep, p, -(int)rc);
		rc = 0; /* reported on the CQ */
	}
	if (p->link) {
		rfi_peer_push(ep, p, now);
		rn_hconn_flush(&ep->links, &p->link->h, now);
		rn_hset_flush(&ep->io);
	}
out:
	pthread_mutex_unlock(&ep->dom->lock);
	return rc;
}

/* ---- posting receives ---- */

static ssize_t do_recv(struct fid_ep *fep, int kind, const struct iovec *iov, size_t niov,
		       fi_addr_t src, uint64_t tag, uint64_t ignore, void *ctx, uint64_t flags)
{
	rfi_ep *ep = (rfi_ep *)fep;
	int claim = (flags & FI_CLAIM) && !(flags & FI_PEEK); /* takes what a peek claimed */
	rfi_op *op;
	ssize_t rc = 0;

	if (niov > RFI_IOV_MAX)
		return -FI_EINVAL;
	pthread_mutex_lock(&ep->dom->lock);
	op = ep->enabled ? rfi_op_new(ep) : NULL;
	if (!op) {
		rc = ep->enabled ? -FI_EAGAIN : -FI_EOPBADSTATE;
		goto out;
	}
	op->context = ctx;
	op->flags = flags;
	op->kind = kind;
	op->tag = tag;
	op->ignore = ignore;
	op->addr = (ep->caps & FI_DIRECTED_RECV) ? src : FI_ADDR_UNSPEC;
	op->niov = niov;
	if (niov) /* a peek may name no buffer */
		memcpy(op->iov, iov, niov * sizeof(*iov));
	op->len = iov_total(iov, niov);
	if (rfi_ux_take(ep, op, claim))
		goto out;
	if (claim || (flags & FI_PEEK)) {
		struct fi_cq_tagged_entry e = { .op_context = ctx,
						.flags = FI_RECV | RFI_KIND_FLAGS(kind),
						.tag = tag };

		/* FI_CLAIM: no message was claimed with this context; FI_PEEK: none there */
		if (claim)
			rc = -FI_EINVAL;
		else
			rfi_cq_push_err(ep->rxcq, &e, FI_ENOMSG, 0, 0);
		rfi_op_free(ep, op);
		goto out;
	}
	if (ep->posted_tail[kind])
		ep->posted_tail[kind]->next = op;
	else
		ep->posted[kind] = op;
	ep->posted_tail[kind] = op;
out:
	pthread_mutex_unlock(&ep->dom->lock);
	return rc;
}

ssize_t rfi_ep_cancel(fid_t fid, void *context)
{
	rfi_ep *ep = (rfi_ep *)fid;
	ssize_t rc = -FI_ENOENT;

	pthread_mutex_lock(&ep->dom->lock);
	for (int k = RFI_MSG; k <= RFI_TAG && rc; k++) {
		rfi_op *prev = NULL;

		for (rfi_op *op = ep->posted[k]; op; prev = op, op = op->next) {
			struct fi_cq_tagged_entry e = { .op_context = op->context,
							.flags = FI_RECV | RFI_KIND_FLAGS(k),
							.tag = op->tag };

			if (op->context != context)
				continue;
			if (prev)
				prev->next = op->next;
			else
				ep->posted[k] = op->next;
			if (ep->posted_tail[k] == op)
				ep->posted_tail[k] = prev;
			rfi_cq_push_err(ep->rxcq, &e, FI_ECANCELED, 0, 0);
			rfi_op_free(ep, op);
			rc = 0;
			break;
		}
	}
	pthread_mutex_unlock(&ep->dom->lock);
	return rc;
}

void rfi_ep_cancel_all(rfi_ep *ep)
{
	for (int k = 0; k < 4; k++) {
		while (ep->posted[k]) {
			rfi_op *op = ep->posted[k];

			ep->posted[k] = op->next;
			rfi_op_free(ep, op);
		}
		ep->posted_tail[k] = NULL;
	}
	rfi_ux_free_all(ep);
	for (rfi_link *l = rfi_links(ep); l; l = rfi_link_next(l)) {
		if (l->into)
			rfi_op_free(ep, l->into);
		l->into = NULL;
		l->ux = NULL;
	}
}

/* ---- the libfabric calls ---- */

static ssize_t m_recv(struct fid_ep *e, void *buf, size_t len, void *desc, fi_addr_t src,
		      void *ctx)
{
	struct iovec v = { buf, len };

	(void)desc;
	return do_recv(e, RFI_MSG, &v, 1, src, 0, 0, ctx, ((rfi_ep *)e)->rx_op_flags);
}

static ssize_t m_recvv(struct fid_ep *e, const struct iovec *iov, void **desc, size_t n,
		       fi_addr_t src, void *ctx)
{
	(void)desc;
	return do_recv(e, RFI_MSG, iov, n, src, 0, 0, ctx, ((rfi_ep *)e)->rx_op_flags);
}

static ssize_t m_recvmsg(struct fid_ep *e, const struct fi_msg *m, uint64_t flags)
{
	return do_recv(e, RFI_MSG, m->msg_iov, m->iov_count, m->addr, 0, 0, m->context, flags);
}

static ssize_t m_send(struct fid_ep *e, const void *buf, size_t len, void *desc, fi_addr_t dest,
		      void *ctx)
{
	struct iovec v = { (void *)buf, len };

	(void)desc;
	return do_send(e, RFI_MSG, &v, 1, dest, 0, ctx, ((rfi_ep *)e)->tx_op_flags, 0);
}

static ssize_t m_sendv(struct fid_ep *e, const struct iovec *iov, void **desc, size_t n,
		       fi_addr_t dest, void *ctx)
{
	(void)desc;
	return do_send(e, RFI_MSG, iov, n, dest, 0, ctx, ((rfi_ep *)e)->tx_op_flags, 0);
}

static ssize_t m_sendmsg(struct fid_ep *e, const struct fi_msg *m, uint64_t flags)
{
	return do_send(e, RFI_MSG, m->msg_iov, m->iov_count, m->addr, 0, m->context, flags, m->data);
}

static ssize_t m_inject(struct fid_ep *e, const void *buf, size_t len, fi_addr_t dest)
{
	struct iovec v = { (void *)buf, len };

	return do_send(e, RFI_MSG, &v, 1, dest, 0, NULL, FI_INJECT | RFI_SILENT, 0);
}

static ssize_t m_senddata(struct fid_ep *e, const void *buf, size_t len, void *desc,
			  uint64_t data, fi_addr_t dest, void *ctx)
{
	struct iovec v = { (void *)buf, len };

	(void)desc;
	return do_send(e, RFI_MSG, &v, 1, dest, 0, ctx,
		       ((rfi_ep *)e)->tx_op_flags | FI_REMOTE_CQ_DATA, data);
}

static ssize_t m_injectdata(struct fid_ep *e, const void *buf, size_t len, uint64_t data,
			    fi_addr_t dest)
{
	struct iovec v = { (void *)buf, len };

	return do_send(e, RFI_MSG, &v, 1, dest, 0, NULL,
		       FI_INJECT | RFI_SILENT | FI_REMOTE_CQ_DATA, data);
}

struct fi_ops_msg rfi_msg_ops = {
	.size = sizeof(struct fi_ops_msg), .recv = m_recv, .recvv = m_recvv,
	.recvmsg = m_recvmsg, .send = m_send, .sendv = m_sendv, .sendmsg = m_sendmsg,
	.inject = m_inject, .senddata = m_senddata, .injectdata = m_injectdata,
};

static ssize_t t_recv(struct fid_ep *e, void *buf, size_t len, void *desc, fi_addr_t src,
		      uint64_t tag, uint64_t ignore, void *ctx)
{
	struct iovec v = { buf, len };

	(void)desc;
	return do_recv(e, RFI_TAG, &v, 1, src, tag, ignore, ctx, ((rfi_ep *)e)->rx_op_flags);
}

static ssize_t t_recvv(struct fid_ep *e, const struct iovec *iov, void **desc, size_t n,
		       fi_addr_t src, uint64_t tag, uint64_t ignore, void *ctx)
{
	(void)desc;
	return do_recv(e, RFI_TAG, iov, n, src, tag, ignore, ctx, ((rfi_ep *)e)->rx_op_flags);
}

static ssize_t t_recvmsg(struct fid_ep *e, const struct fi_msg_tagged *m, uint64_t flags)
{
	return do_recv(e, RFI_TAG, m->msg_iov, m->iov_count, m->addr, m->tag, m->ignore,
		       m->context, flags);
}

static ssize_t t_send(struct fid_ep *e, const void *buf, size_t len, void *desc, fi_addr_t dest,
		      uint64_t tag, void *ctx)
{
	struct iovec v = { (void *)buf, len };

	(void)desc;
	return do_send(e, RFI_TAG, &v, 1, dest, tag, ctx, ((rfi_ep *)e)->tx_op_flags, 0);
}

static ssize_t t_sendv(struct fid_ep *e, const struct iovec *iov, void **desc, size_t n,
		       fi_addr_t dest, uint64_t tag, void *ctx)
{
	(void)desc;
	return do_send(e, RFI_TAG, iov, n, dest, tag, ctx, ((rfi_ep *)e)->tx_op_flags, 0);
}

static ssize_t t_sendmsg(struct fid_ep *e, const struct fi_msg_tagged *m, uint64_t flags)
{
	return do_send(e, RFI_TAG, m->msg_iov, m->iov_count, m->addr, m->tag, m->context, flags,
		       m->data);
}

static ssize_t t_inject(struct fid_ep *e, const void *buf, size_t len, fi_addr_t dest,
			uint64_t tag)
{
	struct iovec v = { (void *)buf, len };

	return do_send(e, RFI_TAG, &v, 1, dest, tag, NULL, FI_INJECT | RFI_SILENT, 0);
}

static ssize_t t_senddata(struct fid_ep *e, const void *buf, size_t len, void *desc,
			  uint64_t data, fi_addr_t dest, uint64_t tag, void *ctx)
{
	struct iovec v = { (void *)buf, len };

	(void)desc;
	return do_send(e, RFI_TAG, &v, 1, dest, tag, ctx,
		       ((rfi_ep *)e)->tx_op_flags | FI_REMOTE_CQ_DATA, data);
}

static ssize_t t_injectdata(struct fid_ep *e, const void *buf, size_t len, uint64_t data,
			    fi_addr_t dest, uint64_t tag)
{
	struct iovec v = { (void *)buf, len };

	return do_send(e, RFI_TAG, &v, 1, dest, tag, NULL,
		       FI_INJECT | RFI_SILENT | FI_REMOTE_CQ_DATA, data);
}

struct fi_ops_tagged rfi_tagged_ops = {
	.size = sizeof(struct fi_ops_tagged), .recv = t_recv, .recvv = t_recvv,
	.recvmsg = t_recvmsg, .send = t_send, .sendv = t_sendv, .sendmsg = t_sendmsg,
	.inject = t_inject, .senddata = t_senddata, .injectdata = t_injectdata,
};
