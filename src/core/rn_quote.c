/*
 * rn_quote.c - the check of an ICMP error's quote against what a
 * connection sent (rn_quote.h).
 */
#include "rn_quote.h"

#include "rn_crypt.h"
#include "rn_wire.h"

/* Types an established connection sends on a rail; its RESET is final anyway. */
static int sent_established(uint8_t type)
{
	switch (type) {
	case RN_PT_DATA: case RN_PT_ACK: case RN_PT_LINK_STATE: case RN_PT_LINK_ACK:
	case RN_PT_HEARTBEAT: case RN_PT_KEEPALIVE: case RN_PT_PROBE: case RN_PT_PROBE_ACK:
	case RN_PT_RAILS: case RN_PT_RAILS_ACK:
		return 1;
	default:
		return 0;
	}
}

/* v among the span values before next (wrapping): sent, and lately. */
static int recent(uint32_t v, uint32_t next, uint32_t span)
{
	uint32_t back = next - v;

	return back >= 1 && back <= span;
}

/* Keyed: the packet number (epoch, counter) is one of the last ones used. */
static int pn_recent(const rn_quote_ref *r, const uint8_t *pn)
{
	uint32_t epoch = rn_get32(pn), count = rn_get32(pn + 4);

	if (epoch == r->pn_epoch)
		return recent(count, r->pn_count, RN_QUOTE_PN_SPAN);
	/* the epoch before, while the new one is young: in flight across a rekey */
	return r->pn_epoch > 0 && epoch == r->pn_epoch - 1 && r->pn_count < RN_QUOTE_PN_SPAN;
}

rn_quote_verdict rn_quote_shape(const uint8_t *q, size_t len)
{
	if (len < RN_HDR_LEN)
		return RN_QUOTE_SHORT;
	if (q[0] != RN_WIRE_VERSION || (q[2] & ~RN_F__ALL) || rn_get16(q + 22) != 0)
		return RN_QUOTE_HEADER;
	if (!sent_established(q[1]))
		return RN_QUOTE_TYPE;
	return RN_QUOTE_OURS;
}

rn_quote_verdict rn_quote_check(const rn_quote_ref *r, const uint8_t *q, size_t len)
{
	rn_quote_verdict v = rn_quote_shape(q, len);
	uint32_t ts_age;

	if (v != RN_QUOTE_OURS)
		return v;
	if (r->keyed && len < RN_HDR_LEN + RN_PN_LEN)
		return RN_QUOTE_SHORT;
	if (rn_get64(q + 4) != r->peer_id || r->peer_id == 0)
		return RN_QUOTE_ID;
	if (q[3] != r->path)
		return RN_QUOTE_PATH;
	ts_age = r->now_us - rn_get32(q + 16);
	if (ts_age > RN_QUOTE_TS_SPAN_US)
		return RN_QUOTE_TS;
	if (q[1] == RN_PT_DATA && !recent(rn_get32(q + 12), r->seq_nxt, RN_QUOTE_SEQ_SPAN))
		return RN_QUOTE_SEQ;
	if (r->keyed && !pn_recent(r, q + RN_HDR_LEN))
		return RN_QUOTE_PN;
	return RN_QUOTE_OURS;
}
