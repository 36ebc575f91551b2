/*
 * rfi_ux.c - the unexpected list: messages that came before their receive,
 * in arrival order, each buffered whole (rfi_msg.c decides what goes in,
 * within FI_RI2N_UNEXPECTED_MB and FI_RI2N_UNEXPECTED_LINK_MB).
 *
 * An entry is still coming in while `from` names its link; a receive that
 * matches it then (`claimed`) completes when the last byte comes or the
 * stream dies.  A peek reports an entry and leaves it (FI_CLAIM keeps it
 * for the receive with the peek's context; FI_DISCARD drops it once whole).
 */
#include <stdlib.h>

#include "rfi.h"

/* The source of u for this AV generation (the AV may have changed since it came). */
static fi_addr_t ux_src(rfi_ep *ep, rfi_unexp *u)
{
	if (!ep->av || u->src.n == 0)
		return FI_ADDR_NOTAVAIL;
	if (u->src_gen != ep->av->gen) {
		u->src_addr = rfi_av_find(ep->av, &u->src);
		u->src_gen = ep->av->gen;
	}
	return u->src_addr;
}

static void ux_unlink(rfi_ep *ep, rfi_unexp *u)
{
	rfi_unexp **pp = &ep->ux, *prev = NULL;

	while (*pp && *pp != u)
		prev = *pp, pp = &(*pp)->next;
	if (!*pp)
		return;
	*pp = u->next;
	if (ep->ux_tail == u)
		ep->ux_tail = prev;
}

static void ux_free(rfi_ep *ep, rfi_unexp *u)
{
	ep->ux_bytes -= u->len;
	if (u->owner)
		u->owner->ux_held -= u->len;
	free(u->data);
	free(u);
}

rfi_unexp *rfi_ux_new(rfi_link *l, int kind, uint64_t tag, size_t len, uint64_t now)
{
	rfi_ep *ep = l->ep;
	rfi_unexp *u = calloc(1, sizeof(*u));

	if (!u || (len && !(u->data = malloc(len)))) {
		free(u);
		return NULL;
	}
	u->from = u->owner = l;
	l->ux_held += len;
	l->ux_ns = now;
	u->src = l->src;
	u->src_gen = UINT64_MAX;
	u->kind = kind;
	u->tag = tag;
	u->len = len;
	ep->ux_bytes += len;
	ep->unexpected++;
	if (ep->ux_tail)
		ep->ux_tail->next = u;
	else
		ep->ux = u;
	ep->ux_tail = u;
	return u;
}

void rfi_ux_deliver(rfi_ep *ep, rfi_unexp *u, rfi_op *op)
{
	ux_unlink(ep, u);
	op->has_data = u->has_data;
	op->cq_data = u->cq_data;
	if (!u->err && !(op->flags & FI_DISCARD))
		rfi_op_put(op, 0, u->data, u->len);
	rfi_recv_complete(ep, op, (op->flags & FI_DISCARD) ? 0 : u->len, u->tag, ux_src(ep, u),
			  u->err, 0);
	ux_free(ep, u);
}

void rfi_ux_cut(rfi_link *l, int err)
{
	rfi_unexp *u = l->ux;

	l->ux = NULL;
	u->from = NULL;
	u->err = err;
	if (u->claimed) {
		rfi_ux_deliver(l->ep, u, u->claimed);
	} else {
		/* never whole, never matched: no receive will want it */
		ux_unlink(l->ep, u);
		ux_free(l->ep, u);
	}
}

void rfi_link_forget(rfi_link *l)
{
	for (rfi_unexp *u = l->ep->ux; u; u = u->next)
		if (u->owner == l)
			u->owner = NULL;
	l->ux_held = 0;
}

int rfi_ux_take(rfi_ep *ep, rfi_op *op, int claim)
{
	for (rfi_unexp *u = ep->ux; u; u = u->next) {
		if (u->claimed || (!claim && !rfi_op_matches(op, u->kind, u->tag, ux_src(ep, u))))
			continue;
		/* a message claimed by a peek is only for the receive with its context */
		if (claim ? u->claim_ctx != op->context : u->claim_ctx != NULL)
			continue;
		if (op->flags & FI_PEEK) {
			/* report it, leave it (FI_CLAIM: keep it for the context's later receive) */
			struct fi_cq_tagged_entry e = { .op_context = op->context,
							.flags = FI_RECV | RFI_KIND_FLAGS(op->kind),
							.len = u->len, .tag = u->tag,
							.data = u->cq_data };

			if (u->has_data)
				e.flags |= FI_REMOTE_CQ_DATA;
			if (op->flags & FI_CLAIM)
				u->claim_ctx = op->context;
			rfi_cq_push(ep->rxcq, &e, ux_src(ep, u));
			if (op->flags & FI_DISCARD) {
				/* and drop it: now, or when the rest of it has come */
				op->flags |= RFI_SILENT;
				op->niov = 0;
				if (u->from)
					u->claimed = op;
				else
					rfi_ux_deliver(ep, u, op);
				return 1;
			}
			rfi_op_free(ep, op);
		} else if (u->from) {
			u->claimed = op; /* still coming in: completes when whole */
		} else {
			rfi_ux_deliver(ep, u, op);
		}
		return 1;
	}
	return 0;
}

void rfi_ux_free_all(rfi_ep *ep)
{
	while (ep->ux) {
		rfi_unexp *u = ep->ux;

		ep->ux = u->next;
		if (u->claimed)
			rfi_op_free(ep, u->claimed);
		ux_free(ep, u);
	}
	ep->ux_tail = NULL;
}
